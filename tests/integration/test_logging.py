"""Issue "For the people who mount it", acceptance line 3: the daemon logs
to syslog (the journal takes /dev/log too) when it daemonizes and to stderr
with -f; `-o debug` and -d raise the level to debug, -v to info; every error
line names the cause and the object (server, share, path), never a bare
errno.

syslog(3) writes datagrams to /dev/log. To see them on any machine, with or
without journald or rsyslog, and without taking the machine's /dev/log
away from it, each mount runs in a private mount namespace where /dev is
an overlay of the real one (so /dev/fuse and /dev/null stay) with this
test's datagram socket bind-mounted on /dev/log.
"""

import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from lib.mount import clean_leftovers, daemon_binary, format_options, pids_for_mountpoint

# glibc's syslog(3) line: <PRI>Mmm dd hh:mm:ss IDENT[PID]: MESSAGE
SYSLOG_RE = re.compile(r"<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d ([^\[]+)\[(\d+)\]: (.*)", re.S)
# common/log.c's stderr line: hh:mm:ss.mmm smbrdma LEVEL: MESSAGE
STDERR_RE = re.compile(r"\d\d:\d\d:\d\d\.\d{3} smbrdma (error|warning|notice|info|debug): (.*)")
LEVELS = {3: "error", 4: "warning", 5: "notice", 6: "info", 7: "debug"}
LOG_DAEMON = 3
STRERRORS = {os.strerror(n) for n in range(1, 134)}

# Inside the namespace: /dev becomes an overlay of itself and $1, our
# socket, is bind-mounted on /dev/log ($2: a directory for the overlay).
NS_SETUP = r"""
set -eu
mkdir -p "$2/upper" "$2/work"
mount -t overlay smbrdma-test-dev -o "lowerdir=/dev,upperdir=$2/upper,workdir=$2/work" /dev
rm -f /dev/log; touch /dev/log; mount --bind "$1" /dev/log
shift 2
"""
# Then run the mount command in the background (with -f it stays), wait
# for the mount, write a file through it, unmount, and exit with the
# command's status; 3 if it never mounted.
NS_MOUNT_CYCLE = r"""
mnt=$1 out=$2; shift 2
"$@" > "$out" 2>&1 &
pid=$!
i=0
until findmnt -n "$mnt" > /dev/null; do
    i=$((i + 1))
    if [ $i -gt 600 ] || ! kill -0 $pid 2> /dev/null; then break; fi
    sleep 0.1
done
if ! findmnt -n "$mnt" > /dev/null; then
    rc=0; wait $pid || rc=$?
    echo "not mounted; the command exited with $rc"; exit 3
fi
echo logged > "$mnt/logged"
umount "$mnt"
rc=0; wait $pid || rc=$?
exit $rc
"""


class SyslogCatcher:
    """A datagram socket standing in for /dev/log, drained by a thread as a
    syslog daemon would (a full queue would block the daemon's syslog());
    messages() parses what came: [(level, facility, ident, pid, message)]."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.settimeout(0.1)
        self.datagrams = []
        self.running = True
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while self.running:
            try:
                self.datagrams.append(self.sock.recv(65536).decode(errors="replace"))
            except socket.timeout:
                pass

    def messages(self):
        out = []
        for data in list(self.datagrams):
            m = SYSLOG_RE.fullmatch(data.rstrip("\n"))
            assert m, f"not a syslog(3) datagram: {data!r}"
            pri = int(m.group(1))
            out.append((LEVELS.get(pri & 7, str(pri & 7)), pri >> 3, m.group(2),
                        int(m.group(3)), m.group(4)))
        return out

    def close(self):
        time.sleep(0.2)  # the last datagrams in flight
        self.running = False
        self.thread.join()
        self.sock.close()


def _stderr_lines(text):
    """[(level, message)] of the daemon's stderr; anything else is kept as
    (None, line) (libfuse's own output, sanitizer reports)."""
    out = []
    for line in text.splitlines():
        m = STDERR_RE.fullmatch(line)
        out.append((m.group(1), m.group(2)) if m else (None, line))
    return out


def _in_syslog_ns(tmp_path, script, args, mnt, scale):
    """Run `sh -c NS_SETUP+script` with args in a namespace whose /dev/log is
    ours; afterwards no daemon may stay. Returns (CompletedProcess, [syslog
    messages])."""
    catcher = SyslogCatcher(str(tmp_path / "devlog.sock"))
    try:
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            NS_SETUP + script, "sh", catcher.path,
                            str(tmp_path / "dev-overlay")] + list(args),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=90 * scale)
        # after an unmount, the "unmounted" line comes as the daemon exits
        deadline = time.monotonic() + 15 * scale
        while pids_for_mountpoint(mnt) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        left = clean_leftovers(mnt)
        catcher.close()
    assert not left, f"left behind: {left}"
    return r, catcher.messages()


def _mount_in_ns(srv, tmp_path, options=(), flags=(), scale=1.0):
    """Mount, write, unmount in the namespace; returns (status, the
    namespace script's output, the command's terminal output, [syslog
    messages], mount point)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    out = tmp_path / "terminal.out"
    argv = [daemon_binary(), srv.unc, str(mnt), "-o",
            format_options(srv.user, srv.password, options)] + list(flags)
    r, msgs = _in_syslog_ns(tmp_path, NS_MOUNT_CYCLE, [str(mnt), str(out)] + argv, str(mnt),
                            scale)
    terminal = out.read_text() if out.exists() else ""
    assert r.returncode != 3, f"{r.stdout}{r.stderr}\n--- terminal ---\n{terminal}"
    return r.returncode, r.stdout + r.stderr, terminal, msgs, str(mnt)


def _assert_no_secret(srv, *texts):
    for t in texts:
        assert srv.password not in str(t), "the password was logged"


@pytest.fixture
def ns_ok(fuse_required):
    assert os.access(daemon_binary(), os.X_OK), f"{daemon_binary()} not built"


@pytest.mark.parametrize("options,flags,level", [
    pytest.param((), (), "notice", id="default"),
    pytest.param((), ("-v",), "info", id="verbose"),
    pytest.param(("debug",), (), "debug", id="o-debug"),
])
def test_daemonized_logs_to_syslog(samba, ns_ok, tmp_path, scale, options, flags, level):
    rc, ns_out, terminal, msgs, mnt = _mount_in_ns(samba, tmp_path, options, flags,
                                                   scale=scale)
    assert rc == 0, f"mount command exited {rc}:\n{ns_out}\n{terminal}\n{msgs}"
    assert terminal == "", f"a daemonizing mount printed:\n{terminal}"
    assert open(os.path.join(samba.share_path, "logged")).read() == "logged\n"
    assert msgs, "nothing reached /dev/log"
    assert {(facility, ident) for _, facility, ident, _, _ in msgs} == \
        {(LOG_DAEMON, "mount.smbrdma")}, msgs
    text = [(lvl, t) for lvl, _, _, _, t in msgs]
    src = f"//127.0.0.1/{samba.share}"
    assert ("notice", f"mounted {src} on {mnt}") in text, text
    assert ("notice", f"unmounted {src} from {mnt}") in text, text
    seen = {lvl for lvl, _ in text}
    order = ["error", "warning", "notice", "info", "debug"]
    assert not seen - set(order[:order.index(level) + 1]), f"above {level}: {text}"
    if level in ("info", "debug"):
        assert any(lvl == "info" and t.startswith(f"connecting to {src} port {samba.port}")
                   for lvl, t in text), text
    if level == "debug":
        assert any(lvl == "debug" and "mount options: " in t and "password=***" in t
                   for lvl, t in text), text
    _assert_no_secret(samba, msgs)


@pytest.mark.parametrize("options,flags,level", [
    pytest.param((), ("-f",), "notice", id="f"),
    pytest.param(("debug",), ("-f",), "debug", id="f-o-debug"),
    pytest.param((), ("-d",), "debug", id="d"),
])
def test_foreground_logs_to_stderr(samba, ns_ok, tmp_path, scale, options, flags, level):
    rc, ns_out, terminal, msgs, mnt = _mount_in_ns(samba, tmp_path, options, flags,
                                                   scale=scale)
    assert rc == 0, f"daemon exited {rc}:\n{ns_out}\n{terminal}"
    assert msgs == [], f"a foreground daemon wrote to syslog: {msgs}"
    lines = _stderr_lines(terminal)
    src = f"//127.0.0.1/{samba.share}"
    assert ("notice", f"mounted {src} on {mnt}") in lines, terminal
    assert ("notice", f"unmounted {src} from {mnt}") in lines, terminal
    levels = {lvl for lvl, _ in lines}
    if level == "notice":
        assert levels <= {"error", "warning", "notice"}, terminal
    else:
        assert "debug" in levels and "info" in levels, terminal
    if flags == ("-d",):
        # libfuse's own request trace comes through the same logger
        assert any(lvl == "debug" and t.startswith("unique: ") for lvl, t in lines), terminal
    _assert_no_secret(samba, terminal)


def _names_object(msg, objects):
    return any(o in msg for o in objects)


def test_failed_daemonized_mount_reaches_syslog(samba, ns_ok, tmp_path, scale):
    """The error reaches both the terminal and syslog, naming share and server."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r, msgs = _in_syslog_ns(tmp_path, 'exec "$@"',
                            [daemon_binary(), f"//127.0.0.1:{samba.port}/nosuchshare", str(mnt),
                             "-o", format_options(samba.user, samba.password)], str(mnt), scale)
    assert r.returncode == 1, r.stdout + r.stderr
    want = ("could not mount //127.0.0.1/nosuchshare: share 'nosuchshare' does not exist "
            "on 127.0.0.1")
    assert (r.stdout + r.stderr).startswith(f"mount error: {want}"), r.stdout + r.stderr
    errors = [t for lvl, _, _, _, t in msgs if lvl == "error"]
    assert any(t.startswith(want) for t in errors), msgs


def test_error_lines_name_cause_and_object(samba, mount_factory, scale):
    """A server that stops answering: the request fails with ETIMEDOUT, and
    every warning and error line logged names the server, share or mount
    point and says more than an errno string."""
    m = mount_factory(samba, options=["timeout=2", "debug"])
    os.killpg(samba.proc.pid, signal.SIGSTOP)
    try:
        r = subprocess.run(["stat", os.path.join(m.path, "x")], capture_output=True,
                           text=True, timeout=60 * scale)
    finally:
        os.killpg(samba.proc.pid, signal.SIGCONT)
    assert r.returncode != 0 and os.strerror(110) in r.stderr, r.stderr
    os.listdir(m.path)  # the server answers again: the mount works on
    log = _stderr_lines(m.log_text())
    bad = [(lvl, t) for lvl, t in log if lvl in ("error", "warning")]
    objects = ("127.0.0.1", f"//127.0.0.1/{samba.share}", m.path)
    assert any(lvl == "error" and f"127.0.0.1 port {samba.port}" in t and "no answer" in t
               for lvl, t in bad), m.log_text()
    for lvl, t in bad:
        assert _names_object(t, objects), f"{lvl} line names no server/share/path: {t}"
        tail = t.rsplit(": ", 1)[-1]
        assert t.strip() not in STRERRORS and not re.fullmatch(r"-?\d+", tail), \
            f"bare errno: {t}"
