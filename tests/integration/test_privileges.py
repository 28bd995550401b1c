"""Issue 18, least privilege: mount.smbrdma becomes an unprivileged user
with no capabilities before its first connection (no byte from the server
is parsed as root), cannot regain any through execve(), and is not
dumpable; a privileged helper it forked first keeps uid 0 with
CAP_SYS_ADMIN, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH alone, to mount,
raise the read-ahead, make the control socket file and unmount.

What /proc/<daemon>/status and /proc/<helper>/status say after the mount,
for a foreground and a daemonizing mount, and that a reconnect
(`smbrdmactl reconnect`: new connection, new session) and file I/O still
work as that user, over QUIC too (whose CA, certificate and key files,
root's and in a private directory, the engine reads again for the new
connection from the copies the daemon kept). The helper unmounts when the daemon ends on a signal
and when it dies without a word (SIGKILL), and removes the control socket
file the daemon can no longer remove; it never outlives the daemon.
"""

import os
import pwd
import re
import signal
import subprocess
import time

import pytest

from lib.mount import SmbrdmaMount, fuse_abort, is_mounted, mount_entry, timeout_scale, unmount
from lib.samba import run_shadow
from test_credentials import daemon_pid
from test_quic import certs, mount_quic, relay_factory  # noqa: F401 (fixtures)
from test_reconnect import DURABLE, _reconnects
from test_smbrdmactl import ctl_json

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SYS_ADMIN = 1, 2, 21
HELPER_CAPS = 1 << CAP_SYS_ADMIN | 1 << CAP_DAC_OVERRIDE | 1 << CAP_DAC_READ_SEARCH
MODES = [pytest.param(True, id="foreground"), pytest.param(False, id="daemonizing")]


def daemon_user():
    """The system user smbrdma if it exists, else nobody (privs.h)."""
    for name in ("smbrdma", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    pytest.fail("neither smbrdma nor nobody exists on this machine")


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace").strip()


def socket_file(m):
    return f"/run/smbrdma/{mount_entry(m.path)['dev']}.sock"


def wait_until(cond, what, secs=15):
    deadline = time.monotonic() + secs * timeout_scale()
    while not cond():
        assert time.monotonic() < deadline, f"{what} after {secs * timeout_scale():.0f}s"
        time.sleep(0.1)


def check_unprivileged(pid):
    """Every thread: the daemon's user, no capability, no_new_privs; the
    process not dumpable (/proc/PID then belongs to root)."""
    user = daemon_user()
    ids = f"{user.pw_uid}\t{user.pw_uid}\t{user.pw_uid}\t{user.pw_uid}"
    gids = f"{user.pw_gid}\t{user.pw_gid}\t{user.pw_gid}\t{user.pw_gid}"
    tids = os.listdir(f"/proc/{pid}/task")
    assert len(tids) > 1, "the daemon has one thread: the engine's loop is missing"
    for tid in tids:
        st = proc_status(f"{pid}/task/{tid}")
        what = f"daemon {pid} thread {tid}"
        assert st["Uid"] == ids, f"{what}: Uid {st['Uid']!r}, want {user.pw_name}'s {ids!r}"
        assert st["Gid"] == gids, f"{what}: Gid {st['Gid']!r}, want {gids!r}"
        assert "0" not in st["Groups"].split(), f"{what}: in group 0: {st['Groups']!r}"
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(st[cap], 16) == 0, f"{what}: {cap} {st[cap]}"
        assert st["NoNewPrivs"] == "1", f"{what}: NoNewPrivs {st['NoNewPrivs']}"
    # Not dumpable: the kernel hands its /proc/PID files to root, and its
    # own user may not read its environment (nor its memory, nor ptrace it).
    assert os.stat(f"/proc/{pid}/status").st_uid == 0, "the daemon is dumpable"
    r = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                        "--clear-groups", "cat", f"/proc/{pid}/environ"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Permission denied" in r.stderr, \
        f"{user.pw_name} reads the daemon's environ: {r.returncode} {r.stderr!r}"


def helper_of(pid, mountpoint):
    """The daemon's one child: the privileged helper, uid 0 with
    HELPER_CAPS alone, sealed and not dumpable, and without the mount
    point on its command line (pgrep -f finds the daemon alone)."""
    kids = children(pid)
    assert len(kids) == 1, f"daemon {pid} has children {kids}, want one helper"
    helper = kids[0]
    st = proc_status(helper)
    assert st["Uid"].split()[0] == "0", st["Uid"]
    assert int(st["CapEff"], 16) == HELPER_CAPS, f"helper CapEff {st['CapEff']}"
    assert int(st["CapPrm"], 16) == HELPER_CAPS, f"helper CapPrm {st['CapPrm']}"
    assert os.stat(f"/proc/{helper}/status").st_uid == 0  # not dumpable either
    assert int(st["CapBnd"], 16) == 0, f"helper CapBnd {st['CapBnd']}"
    assert st["NoNewPrivs"] == "1"
    title = cmdline(helper)
    assert mountpoint not in title and "password" not in title, title
    assert title.startswith("mount.smbrdma [priv]"), title
    return helper


def check_io(srv, m, name, data):
    with open(os.path.join(m.path, name), "wb") as f:
        f.write(data)
    with open(os.path.join(m.path, name), "rb") as f:
        assert f.read() == data
    with open(os.path.join(srv.share_path, name), "rb") as f:
        assert f.read() == data


@pytest.mark.parametrize("foreground", MODES)
def test_daemon_unprivileged_after_mount(samba_factory, mount_factory, foreground):
    srv = samba_factory(extra_global=DURABLE)
    m = mount_factory(srv, foreground=foreground, extra_args=["-v"])
    os.listdir(m.path)  # served: the drop came before the first request
    pid = daemon_pid(m)
    check_unprivileged(pid)
    helper_of(pid, m.path)
    assert os.stat(socket_file(m)).st_uid == 0
    check_io(srv, m, "before.bin", os.urandom(300_000))

    # A new connection and session, made by the unprivileged daemon, with
    # a file held open across it.
    fd = os.open(os.path.join(m.path, "held.txt"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"one", 0)
        out = ctl_json("reconnect", m.path)
        assert out["channels_dropped"] == 1, out
        os.pwrite(fd, b"two", 3)
        assert os.pread(fd, 6, 0) == b"onetwo"
    finally:
        os.close(fd)
    assert _reconnects(m) == 1
    check_io(srv, m, "after.bin", os.urandom(300_000))
    check_unprivileged(pid)
    if foreground:  # the user before the server's first answer
        log = m.log_text()
        ran_as = log.find(f"running as user {daemon_user().pw_name}")
        negotiated = log.find("negotiated SMB")
        assert 0 <= ran_as < negotiated, log[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_helper_unmounts_when_the_daemon_ends(samba, fuse_required, sig):
    """The daemon ends without being unmounted: cleanly on SIGTERM (it asks
    the helper), or killed (the helper sees its socket close). Either way
    the mount and the socket file go, and so does the helper."""
    m = SmbrdmaMount(srv_unc(samba), samba.user, samba.password).start()
    try:
        os.listdir(m.path)
        pid = m.proc.pid
        helper = helper_of(pid, m.path)
        sock = socket_file(m)
        assert os.path.exists(sock)
        os.kill(pid, sig)
        rc = m.proc.wait(timeout=20 * timeout_scale())
        assert rc == (0 if sig == signal.SIGTERM else -sig), f"exit status {rc}"
        if sig == signal.SIGTERM:  # the daemon waited for the helper
            assert not is_mounted(m.path), "SIGTERM left the mount"
            assert not os.path.exists(f"/proc/{helper}") or \
                proc_status(helper).get("State", "").startswith("Z"), "helper still runs"
        wait_until(lambda: not is_mounted(m.path), "the mount is still there")
        wait_until(lambda: not os.path.exists(sock), f"{sock} is still there")
        wait_until(lambda: not os.path.exists(f"/proc/{helper}") or
                   proc_status(helper).get("State", "").startswith("Z"),
                   f"helper {helper} still runs")
        log = m.log_text()
        assert not re.search(r"AddressSanitizer|LeakSanitizer|runtime error:", log), log
    finally:
        if is_mounted(m.path):
            fuse_abort(m.path)
            unmount(m.path)
        m.stop(check=False)  # the daemon's end was this test's doing


def srv_unc(srv):
    return f"//{srv.host}:{srv.port}/{srv.share}"


def shadow_tool(argv):
    """useradd/userdel (lib.samba.run_shadow: retried while another process
    holds /etc/passwd's lock), which must succeed."""
    r = run_shadow(argv)
    assert r.returncode == 0, f"{' '.join(argv)}: {r.returncode} {r.stderr}"


@pytest.mark.alone  # adds the user smbrdma, whom every other daemon would then run as
def test_dedicated_user_is_preferred(samba, mount_factory):
    """With a system user smbrdma the daemon runs as that user, not nobody."""
    made = False
    try:
        pwd.getpwnam("smbrdma")
    except KeyError:
        shadow_tool(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                     "--shell", "/usr/sbin/nologin", "--user-group", "smbrdma"])
        made = True
    try:
        m = mount_factory(samba)
        os.listdir(m.path)
        st = proc_status(m.proc.pid)
        want = pwd.getpwnam("smbrdma")
        assert st["Uid"].split()[0] == str(want.pw_uid), st["Uid"]
        assert st["Gid"].split()[0] == str(want.pw_gid), st["Gid"]
        check_io(samba, m, "as-smbrdma.txt", b"served by the smbrdma user\n")
        m.stop(check=True)
    finally:
        if made:
            shadow_tool(["userdel", "smbrdma"])


def test_quic_reconnect_unprivileged(samba, certs, relay_factory, mount_factory):  # noqa: F811
    relay = relay_factory(certs.srv_pem, certs.srv_key, ("127.0.0.1", samba.port))
    m = mount_quic(mount_factory, samba, relay, certs, f"certfile={certs.cli_pem}",
                   f"keyfile={certs.cli_key}")
    assert os.stat(os.path.dirname(certs.cli_key)).st_uid == 0
    check_io(samba, m, "quic-before.txt", b"over QUIC\n")
    check_unprivileged(daemon_pid(m))
    out = ctl_json("reconnect", m.path)
    assert out["channels_dropped"] == 1, out
    check_io(samba, m, "quic-after.txt", b"over QUIC again\n")
    assert _reconnects(m) == 1


def test_daemon_user_option(samba, mount_factory):
    """daemon_user= names the user (here by number: nobody's); daemon_user=root
    keeps root and every capability and forks no helper (debugging)."""
    nobody = pwd.getpwnam("nobody")
    m = mount_factory(samba, options=[f"daemon_user={nobody.pw_uid}"])
    check_io(samba, m, "by-number.txt", b"served by uid %d\n" % nobody.pw_uid)
    st = proc_status(m.proc.pid)
    assert st["Uid"].split()[0] == str(nobody.pw_uid), st["Uid"]
    assert int(st["CapEff"], 16) == 0, st["CapEff"]
    m.stop(check=True)
    m = mount_factory(samba, options=["daemon_user=root"])
    check_io(samba, m, "as-root.txt", b"served by root\n")
    st = proc_status(m.proc.pid)
    assert st["Uid"].split()[0] == "0", st["Uid"]
    assert int(st["CapEff"], 16) != 0, "daemon_user=root dropped the capabilities"
    assert not children(m.proc.pid), "daemon_user=root forked a helper"
    m.stop(check=True)


def test_old_helper_leaves_a_new_mount_on_the_same_path(samba, fuse_required):
    """`umount X; mount.smbrdma ... X` while the first daemon is still
    going down: the kernel gives the new FUSE mount the device number the
    old one just freed (0:N), so the old helper, checking the device alone,
    unmounted the new mount (tools/demo lost its remount this way, in one
    run out of two).  The old helper is stopped across the umount and the
    new mount, so the old daemon's request to unmount waits for it and
    runs after the new mount, every time."""
    m = SmbrdmaMount(srv_unc(samba), samba.user, samba.password).start()
    second = False
    try:
        pid = m.proc.pid
        helper = helper_of(pid, m.path)
        old_dev = mount_entry(m.path)["dev"]
        os.kill(helper, signal.SIGSTOP)
        try:
            u = subprocess.run(["umount", m.path], capture_output=True, text=True,
                               timeout=30 * timeout_scale())
            assert u.returncode == 0, u.stderr
            opts = f"username={samba.user},password={samba.password}"
            r = subprocess.run([m.binary, srv_unc(samba), m.path, "-o", opts],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=30 * timeout_scale())
            assert r.returncode == 0, r.stdout + r.stderr
            second = True
            new_dev = mount_entry(m.path)["dev"]
        finally:
            os.kill(helper, signal.SIGCONT)
        rc = m.proc.wait(timeout=20 * timeout_scale())
        assert rc == 0, f"the first daemon exited with {rc}:\n{m.log_text()[-3000:]}"
        wait_until(lambda: not os.path.exists(f"/proc/{helper}") or
                   proc_status(helper).get("State", "").startswith("Z"),
                   f"helper {helper} still runs")
        assert is_mounted(m.path), \
            f"the first mount's helper unmounted the second mount (devices {old_dev}, " \
            f"{new_dev}):\n{m.log_text()[-3000:]}"
        assert mount_entry(m.path)["dev"] == new_dev
        with open(os.path.join(m.path, "after"), "wb") as f:
            f.write(b"second mount\n")
        with open(os.path.join(samba.share_path, "after"), "rb") as f:
            assert f.read() == b"second mount\n"
        # and the second mount's control socket is its own, answering
        assert os.path.exists(f"/run/smbrdma/{new_dev}.sock")
    finally:
        if second:
            unmount(m.path)
        m.stop(check=False)
