"""Issue "For the people who mount it", acceptance line 2: ten wrong inputs
(bad UNC, unknown host, wrong port, wrong password, unknown share, no
permission on the share, missing credentials file, unreadable credentials
file, bad option value, mount point not a directory) each give one line
"mount error: ..." naming the cause and the object, and exit non-zero;
none leaves a mount or a daemon behind. Each runs daemonizing and with -f.

Choices made here:
- unknown host: a name under the reserved .invalid TLD (RFC 6761), looked up
  in a private network and mount namespace (unshare -n -m) whose
  /etc/resolv.conf names 127.0.0.1, where this test answers every query with
  NXDOMAIN. No DNS query can leave the machine, and the test sees that the
  daemon really asked for the name.
- unreadable credentials file: root reads a mode-000 file (CAP_DAC_OVERRIDE),
  so the faithful case is a user who cannot read it: the same mount command
  run as `nobody` (setpriv), which the daemon supports (non-root mounts go
  through fusermount3), on a mount point that user owns. The credentials
  file being a directory, which root cannot read as a file either, is a
  second variant run as root.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from lib.mount import clean_leftovers, daemon_binary, format_options, timeout_scale
from lib.samba import free_port

MODES = [pytest.param(False, id="daemonizing"), pytest.param(True, id="foreground")]
INVALID_HOST = "no-such-host.smbrdma.invalid"

# Run inside `unshare --net --mount`: loopback up, our resolv.conf, a DNS
# server on 127.0.0.1:53 answering NXDOMAIN to everything; then the command.
# Prints {"rc", "out", "queries", "mounted"} as JSON.
DNS_JAIL = r"""
import json, socket, subprocess, sys, threading
resolv, mnt, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 53))
queries = []
def serve():
    while True:
        q, peer = sock.recvfrom(4096)
        i, labels = 12, []
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
            i += 1 + q[i]
        if len(q) < i + 5:
            continue
        queries.append(".".join(labels))
        flags = 0x8183 | (q[2] & 0x01) << 8  # response, RD as asked, RA, NXDOMAIN
        sock.sendto(q[:2] + flags.to_bytes(2, "big") + q[4:6] + bytes(6) + q[12:i + 5], peer)
threading.Thread(target=serve, daemon=True).start()
r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
with open("/proc/self/mountinfo") as f:
    mounted = any(line.split()[4] == mnt for line in f)
print(json.dumps({"rc": r.returncode, "out": r.stdout + r.stderr, "queries": queries,
                  "mounted": mounted}))
"""


def _mount_argv(unc, mnt, options, foreground):
    assert os.access(daemon_binary(), os.X_OK), f"{daemon_binary()} not built"
    argv = [daemon_binary(), unc, mnt, "-o", format_options(None, None, options)]
    return argv + (["-f"] if foreground else [])


def _run(argv, cwd):
    t = 30 * timeout_scale()
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=t, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{argv[0]} still running after {t:.0f}s (it should have "
                             f"failed): {e.stdout}{e.stderr}") from None
    return r.returncode, r.stdout + r.stderr


def _check(rc, out, mnt, names, cwd):
    """One 'mount error:' line naming every string in `names`, a non-zero
    exit that is not a signal, nothing left behind, no core dump."""
    left = clean_leftovers(mnt)
    lines = out.strip().splitlines()
    assert 0 < rc < 128, f"exit status {rc}:\n{out}"
    assert len(lines) == 1 and lines[0].startswith("mount error: "), \
        f"not one 'mount error:' line:\n{out}"
    for name in names:
        assert name.lower() in lines[0].lower(), f"message does not name {name!r}: {lines[0]}"
    assert not left, f"left behind: {left}"
    assert not [f for f in os.listdir(cwd) if f.startswith("core")], "core dump written"
    print(f"\n{lines[0]}")


@pytest.fixture
def where(tmp_path, fuse_required):
    """(mount point, the command's cwd, where a core dump would land)."""
    dirs = [str(tmp_path / "mnt"), str(tmp_path / "cwd")]
    for d in dirs:
        os.mkdir(d)
    yield dirs
    clean_leftovers(dirs[0])  # after a test that failed before _check()


def _creds(path, srv):
    with open(path, "w") as f:
        f.write(f"username={srv.user}\npassword={srv.password}\n")
    os.chmod(path, 0o600)
    return str(path)


@pytest.mark.parametrize("foreground", MODES)
def test_bad_unc(samba, where, foreground):
    mnt, cwd = where
    unc = f"127.0.0.1:{samba.port}/{samba.share}"  # no leading //
    rc, out = _run(_mount_argv(unc, mnt, [f"username={samba.user}",
                                          f"password={samba.password}"], foreground), cwd)
    _check(rc, out, mnt, [unc, "expected //HOST"], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_unknown_host(where, tmp_path, foreground):
    mnt, cwd = where
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions attempts:1 timeout:2\n")
    argv = _mount_argv(f"//{INVALID_HOST}/share", mnt, ["username=u", "password=p"],
                       foreground)
    rc, out = _run(["unshare", "--net", "--mount", "--propagation", "private",
                    sys.executable, "-c", DNS_JAIL, str(resolv), mnt] + argv, cwd)
    assert rc == 0, f"the namespace helper failed ({rc}):\n{out}"
    res = json.loads(out)
    assert INVALID_HOST in res["queries"], f"the name was not looked up in DNS: {res}"
    assert not res["mounted"], "a mount was left in the namespace"
    _check(res["rc"], res["out"], mnt, [INVALID_HOST, "cannot resolve"], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_wrong_port(samba, where, foreground):
    mnt, cwd = where
    port = free_port()
    rc, out = _run(_mount_argv(f"//127.0.0.1:{port}/{samba.share}", mnt,
                               [f"username={samba.user}", f"password={samba.password}"],
                               foreground), cwd)
    _check(rc, out, mnt, ["connection refused", f"127.0.0.1 port {port}"], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_wrong_password(samba, where, foreground):
    mnt, cwd = where
    rc, out = _run(_mount_argv(samba.unc, mnt, [f"username={samba.user}", "password=wrong"],
                               foreground), cwd)
    _check(rc, out, mnt, ["logon failure", f"'{samba.user}'", "127.0.0.1"], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_unknown_share(samba, where, foreground):
    mnt, cwd = where
    rc, out = _run(_mount_argv(f"//127.0.0.1:{samba.port}/nosuchshare", mnt,
                               [f"username={samba.user}", f"password={samba.password}"],
                               foreground), cwd)
    _check(rc, out, mnt, ["'nosuchshare' does not exist", "127.0.0.1"], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_no_permission_on_share(samba_factory, where, foreground):
    mnt, cwd = where
    srv = samba_factory(extra_shares={"locked": ["invalid users = smbrdmatest"]})
    rc, out = _run(_mount_argv(f"//127.0.0.1:{srv.port}/locked", mnt,
                               [f"username={srv.user}", f"password={srv.password}"],
                               foreground), cwd)
    _check(rc, out, mnt, ["share 'locked'", "denied", f"user '{srv.user}'"], cwd)
    # the control: the same user opens the share it may use (raises if not)
    srv.smbclient("ls")


@pytest.mark.parametrize("foreground", MODES)
def test_missing_credentials_file(samba, where, tmp_path, foreground):
    mnt, cwd = where
    path = str(tmp_path / "no-such.cred")
    rc, out = _run(_mount_argv(samba.unc, mnt, [f"credentials={path}"], foreground), cwd)
    _check(rc, out, mnt, [f"credentials file {path}", os.strerror(2)], cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_unreadable_credentials_file(samba, foreground):
    """Mode 000, read by a user who is not root (see the module doc)."""
    d = tempfile.mkdtemp(prefix="smbrdma-nobody-")
    try:
        os.chmod(d, 0o755)
        mnt, cwd = os.path.join(d, "mnt"), os.path.join(d, "cwd")
        for sub in (mnt, cwd):
            os.mkdir(sub)
            os.chown(sub, 65534, 65534)
        path = _creds(os.path.join(d, "smbrdma.cred"), samba)
        os.chmod(path, 0o000)
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        rc, out = _run(argv + _mount_argv(samba.unc, mnt, [f"credentials={path}"],
                                          foreground), cwd)
        _check(rc, out, mnt, [f"credentials file {path}", os.strerror(13)], cwd)
        # the control: readable (its owner's, mode 600: no warning either),
        # the same unprivileged command gets past it
        os.chown(path, 65534, 65534)
        os.chmod(path, 0o600)
        rc, out = _run(argv + _mount_argv(f"//127.0.0.1:{free_port()}/share", mnt,
                                          [f"credentials={path}"], foreground), cwd)
        _check(rc, out, mnt, ["connection refused"], cwd)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("foreground", MODES)
def test_credentials_file_is_directory(samba, where, tmp_path, foreground):
    mnt, cwd = where
    path = str(tmp_path / "cred.d")
    os.mkdir(path)
    rc, out = _run(_mount_argv(samba.unc, mnt, [f"credentials={path}"], foreground), cwd)
    _check(rc, out, mnt, [f"credentials file {path}", os.strerror(21)], cwd)


@pytest.mark.parametrize("foreground", MODES)
@pytest.mark.parametrize("option,names", [
    ("vers=9", ["'9'", "'vers'"]),
    ("port=abc", ["'abc'", "'port'"]),
    ("uid=no-such-user", ["'no-such-user'", "'uid'"]),
])
def test_bad_option_value(samba, where, option, names, foreground):
    mnt, cwd = where
    rc, out = _run(_mount_argv(samba.unc, mnt, [f"username={samba.user}",
                                                f"password={samba.password}", option],
                               foreground), cwd)
    _check(rc, out, mnt, ["bad value"] + names, cwd)


@pytest.mark.parametrize("foreground", MODES)
def test_mount_point_not_a_directory(samba, where, tmp_path, foreground):
    _, cwd = where
    target = tmp_path / "a-file"
    target.write_text("not a directory\n")
    rc, out = _run(_mount_argv(samba.unc, str(target), [f"username={samba.user}",
                                                        f"password={samba.password}"],
                               foreground), cwd)
    _check(rc, out, str(target), [f"mount point {target}", "not a directory"], cwd)
    assert target.read_text() == "not a directory\n"
