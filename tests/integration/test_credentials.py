"""Credentials for mount.smbrdma by every route a mount.cifs user knows:
-o credentials=FILE, PASSWD, USER with PASSWD, username=user%password,
password=, PASSWD_FILE, PASSWD_FD, and the prompt on a terminal.

For each route the mount works (a file written through it reaches the
share) and the password shows nowhere: in no /proc/*/cmdline, not in the
daemon's /proc/PID/environ, not in its debug log, not in
/proc/self/mountinfo. Every test has a Samba of its own with a password of
its own, so no other process on the machine can hold the same string.

A wrong password (STATUS_LOGON_FAILURE) is in test_errors.py.
"""

import os
import pty
import secrets
import select
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lib.mount import (DaemonProblem, SmbrdmaMount, daemon_binary,  # noqa: E402
                       is_mounted, pids_for_mountpoint, run_mount_command, timeout_scale,
                       unmount)


def unique_password(extra=""):
    """A password nothing else on the machine holds; `extra` adds
    characters that need care (',' cannot go in username=user%pass)."""
    return f"Cr3d={secrets.token_hex(8)} #x{extra}"


@pytest.fixture
def mounts(fuse_required, request):
    """make(srv, user, password, options, foreground=True) -> a live
    SmbrdmaMount; unlike mount_factory, user and password may be None (not
    on the command line). Stopped (and checked) at teardown."""
    made = []

    def make(srv, user, password, options=(), foreground=True):
        m = SmbrdmaMount(srv.unc, user, password, options=options, foreground=foreground)
        made.append(m)
        return m.start()

    yield make
    problems = []
    for m in reversed(made):
        if m.path is None:
            continue
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            sys.stderr.write(f"--- daemon log tail ({m.log_path}) ---\n"
                             f"{m.log_text()[-4000:]}\n")
        try:
            m.stop(check=True)
        except DaemonProblem as e:
            problems.append(str(e))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def clean_env(monkeypatch):
    """No credential variables from the caller's environment."""
    for name in ("USER", "PASSWD", "PASSWD_FD", "PASSWD_FILE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def daemon_pid(m):
    if m.foreground:
        return m.proc.pid
    pids = pids_for_mountpoint(m.path)
    assert len(pids) == 1, f"expected one daemon for {m.path}, found {pids}"
    return pids[0]


def assert_mount_works(srv, path):
    name = f"cred-{secrets.token_hex(4)}.txt"
    with open(os.path.join(path, name), "w") as f:
        f.write("through the mount\n")
    with open(os.path.join(srv.share_path, name)) as f:
        assert f.read() == "through the mount\n"


def assert_password_nowhere(password, pid=None, log=None):
    needle = password.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        shown = cmdline.replace(b"\0", b" ")
        assert needle not in cmdline, f"password in /proc/{entry}/cmdline: {shown!r}"
    if pid is not None:
        with open(f"/proc/{pid}/environ", "rb") as f:
            assert needle not in f.read(), f"password in the daemon's /proc/{pid}/environ"
    with open("/proc/self/mountinfo", "rb") as f:
        assert needle not in f.read(), "password in /proc/self/mountinfo"
    if log is not None:
        assert password not in log, "password in the daemon's log"


def check_route(srv, m, password, source):
    """The mount works, the password shows nowhere, and the debug log says
    where the password came from."""
    assert_mount_works(srv, m.path)
    log = m.log_text() if m.foreground else None
    assert_password_nowhere(password, daemon_pid(m), log)
    if log is not None:
        assert f"password from {source}" in log, \
            f"the debug log does not say 'password from {source}':\n{log[-3000:]}"


def test_credentials_file(samba_factory, mounts, clean_env, tmp_path):
    pw = unique_password(",a=b")  # a ',' is fine in a file
    srv = samba_factory(password=pw)
    creds = tmp_path / "creds"
    creds.write_text("# mount.cifs format\n"
                     f"  username={srv.user}\n"
                     f"\tpassword={pw}\n"
                     "domain=SMBRDMA\n")
    creds.chmod(0o600)
    m = mounts(srv, None, None, options=[f"credentials={creds}", "debug"])
    check_route(srv, m, pw, "credentials file")
    assert f"as '{srv.user}' domain SMBRDMA" in m.log_text()
    assert "is readable by" not in m.log_text()  # mode 600: nothing to say


@pytest.mark.parametrize("mode,who", [(0o644, "everyone"), (0o640, "its group")])
def test_credentials_file_readable_by_others(samba_factory, mounts, clean_env, tmp_path, mode,
                                             who):
    """As ssh does for a private key: a credentials file others can read
    is used, with a warning that names it, its mode and the fix."""
    pw = unique_password()
    srv = samba_factory(password=pw)
    creds = tmp_path / "creds"
    creds.write_text(f"username={srv.user}\npassword={pw}\n")
    creds.chmod(mode)
    m = mounts(srv, None, None, options=[f"credentials={creds}", "debug"])
    check_route(srv, m, pw, "credentials file")
    text = m.log_text()
    assert f"warning: credentials file {creds} is readable by {who} (mode {mode:04o})" in text, \
        text[-2000:]
    assert text.count("is readable by") == 1, text[-2000:]
    assert f"chmod 600 {creds}" in text


def test_credentials_file_missing(tmp_path, clean_env):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    missing = tmp_path / "no-such-creds"
    r, _ = run_mount_command("//127.0.0.1/share", str(mnt), None, None,
                             options=[f"cred={missing}"], timeout=15)
    assert r.returncode == 1
    assert r.stderr.strip() == \
        f"mount error: credentials file {missing}: No such file or directory", r.stderr
    assert not is_mounted(str(mnt))


@pytest.mark.parametrize("foreground", [True, False], ids=["foreground", "daemon"])
def test_passwd_env(samba_factory, mounts, clean_env, foreground):
    pw = unique_password(",")  # PASSWD needs no ',' escaping
    srv = samba_factory(password=pw)
    clean_env.setenv("PASSWD", pw)
    m = mounts(srv, srv.user, None, options=["debug"], foreground=foreground)
    check_route(srv, m, pw, "PASSWD")


def test_user_and_passwd_env(samba_factory, mounts, clean_env):
    pw = unique_password()
    srv = samba_factory(password=pw)
    clean_env.setenv("USER", srv.user)
    clean_env.setenv("PASSWD", pw)
    m = mounts(srv, None, None, options=["debug"])
    check_route(srv, m, pw, "PASSWD")
    assert f"as '{srv.user}'" in m.log_text()


@pytest.mark.parametrize("foreground", [True, False], ids=["foreground", "daemon"])
def test_username_with_password(samba_factory, mounts, clean_env, foreground):
    pw = unique_password()
    srv = samba_factory(password=pw)
    m = mounts(srv, f"{srv.user}%{pw}", None, options=["debug"], foreground=foreground)
    check_route(srv, m, pw, "username=user%password")
    if foreground:
        assert f"username={srv.user}%***" in m.log_text()


@pytest.mark.parametrize("foreground", [True, False], ids=["foreground", "daemon"])
def test_password_option(samba_factory, mounts, clean_env, foreground):
    """The scrub of argv covers the daemon a background mount forks."""
    pw = unique_password(",")  # written ",," on the command line
    srv = samba_factory(password=pw)
    m = mounts(srv, srv.user, pw.replace(",", ",,"), options=["debug"], foreground=foreground)
    check_route(srv, m, pw, "password=")
    if foreground:
        assert "password=***" in m.log_text()


def test_passwd_file(samba_factory, mounts, clean_env, tmp_path):
    pw = unique_password(",")
    srv = samba_factory(password=pw)
    f = tmp_path / "pw"
    f.write_text(pw + "\nthe second line is not read\n")
    clean_env.setenv("PASSWD_FILE", str(f))
    m = mounts(srv, srv.user, None, options=["debug"])
    check_route(srv, m, pw, "PASSWD_FILE")


class HelperMount:
    """A background mount run by hand (for what SmbrdmaMount cannot pass:
    a descriptor, a terminal); unmounts and reaps the daemon at the end."""

    def __init__(self, tmp_path):
        self.path = str(tmp_path / "mnt")
        os.mkdir(self.path)

    def cleanup(self):
        problems = unmount(self.path)
        deadline = time.monotonic() + 15 * timeout_scale()
        while pids_for_mountpoint(self.path) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = pids_for_mountpoint(self.path)
        for p in left:
            os.kill(p, signal.SIGKILL)
        assert not problems and not left, f"cleanup: {problems}, daemons left: {left}"


@pytest.fixture
def helper_mount(fuse_required, tmp_path):
    h = HelperMount(tmp_path)
    yield h
    h.cleanup()


def test_passwd_fd(samba_factory, helper_mount, clean_env):
    pw = unique_password(",")
    srv = samba_factory(password=pw)
    r_fd, w_fd = os.pipe()
    os.write(w_fd, (pw + "\n").encode())
    os.close(w_fd)
    env = dict(os.environ, PASSWD_FD=str(r_fd))
    try:
        r = subprocess.run([daemon_binary(), srv.unc, helper_mount.path, "-o",
                            f"username={srv.user}"], env=env, pass_fds=(r_fd,),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=30 * timeout_scale())
    finally:
        os.close(r_fd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert_mount_works(srv, helper_mount.path)
    pids = pids_for_mountpoint(helper_mount.path)
    assert len(pids) == 1, pids
    assert_password_nowhere(pw, pids[0])


def run_on_terminal(args, env, answer, timeout):
    """Run args with a new pty as its controlling terminal and stdin; when
    the output shows "Password for ", type answer and Enter. Returns
    (exit status, everything it wrote to the terminal)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execve(args[0], args, env)
        finally:
            os._exit(127)
    out = b""
    typed = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: every end of the terminal is closed
                break
            if not chunk:
                break
            out += chunk
            if not typed and b"Password for " in out:
                os.write(fd, answer.encode() + b"\n")
                typed = True
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"{args[0]} still running after {timeout:.0f}s; "
                                 f"terminal output: {out!r}")
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return status, out.decode(errors="replace")


def test_prompt_on_terminal(samba_factory, helper_mount, clean_env):
    pw = unique_password(",")
    srv = samba_factory(password=pw)
    args = [daemon_binary(), srv.unc, helper_mount.path, "-o", f"username={srv.user}"]
    status, out = run_on_terminal(args, dict(os.environ), pw, 30 * timeout_scale())
    assert f"Password for {srv.user}@{srv.unc}: " in out, out
    assert pw not in out, f"the password was echoed: {out!r}"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"status {status}: {out}"
    assert_mount_works(srv, helper_mount.path)
    pids = pids_for_mountpoint(helper_mount.path)
    assert len(pids) == 1, pids
    assert_password_nowhere(pw, pids[0])


def test_no_prompt_for_guest_or_krb5_or_password(samba_factory, helper_mount, clean_env):
    """With a password given (here: empty), or guest, nothing is asked even
    on a terminal: the mount fails with the server's verdict instead."""
    srv = samba_factory(password=unique_password())
    for opts in (f"username={srv.user},password=", f"username={srv.user},guest"):
        args = [daemon_binary(), srv.unc, helper_mount.path, "-o", opts]
        status, out = run_on_terminal(args, dict(os.environ), "unexpected",
                                      20 * timeout_scale())
        assert "Password for" not in out, f"{opts}: asked for a password: {out}"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1, f"{opts}: {out}"
        assert "mount error:" in out, out
        assert not is_mounted(helper_mount.path)


def test_no_terminal_no_prompt(samba_factory, tmp_path, clean_env, fuse_required):
    """Without a terminal (CI, scripts) and without a password the helper
    does not wait for one: it tries an empty password and fails cleanly."""
    srv = samba_factory(password=unique_password())
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r, secs = run_mount_command(srv.unc, str(mnt), srv.user, None, timeout=20)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Password for" not in r.stdout + r.stderr
    assert "logon failure" in r.stderr.lower(), r.stderr
    assert not is_mounted(str(mnt))
