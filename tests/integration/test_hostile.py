"""A hostile server (tests/lib/hostile_server.py) against the real daemon.

Issue: "A hostile server for tests ... answers chosen requests with truncated
PDUs, lengths and offsets pointing outside the message, huge credit grants,
zero credits, wrong MessageIds, duplicate responses, bad signatures,
STATUS_PENDING that never completes, and a stream that stops mid-PDU. The
client must answer each with an error to the caller (EIO, ETIMEDOUT,
ECONNRESET as fits), a log line naming what was wrong, and no crash, no hang,
no leak."  And: "With default options, a mount attempt against a server that
accepts the connection and never answers gives up with a clear message within
60 s, and one that answers with garbage within 10 s; neither leaves a daemon
or a mount behind."

Every scenario is one test (parametrized where natural).  Per-request
scenarios mount with timeout=3 (requests give up after 3 s) and actimeo=0
(every stat is a request); the syscall on the mount must end with the
expected errno within its time limit, the daemon's log must name the
problem, the daemon must still serve the mount (or the mount must come back
after a reconnect where the connection had to go), and teardown (the
mount_factory fixture) fails the test on a crash, a hang, a leftover daemon
or mount, or any sanitizer report (LeakSanitizer included).  Mount-time
scenarios run the mount command and check it fails in time, with a clear
message, leaving nothing behind.

The server-side check srv.violations (a MessageId outside the credits the
server granted, or used twice) must stay empty wherever the stream stays
well-formed.

Bad signatures are covered here on a session the hostile server signs
(mount option `sign`; the server checks the NTLMv2 response and derives the
keys), and against Samba through the proxy in test_signing.py.
"""

import errno
import mmap
import os
import re
import struct
import subprocess
import threading
import time

import pytest

from lib.hostile_server import (
    DEFAULT_FILES, FLAGS_SERVER_TO_REDIR, HDR, SMB2_CLOSE, SMB2_CREATE, SMB2_NEGOTIATE,
    SMB2_QUERY_DIRECTORY, SMB2_QUERY_INFO, SMB2_READ, SMB2_SESSION_SETUP, SMB2_TREE_CONNECT,
    SMB2_WRITE, HostileServer, bad_signature, body_u8, body_u16, body_u32, command, credits,
    drop, duplicate, duplicate_pdu, frame_edit, garbage, message_id, netbios, next_command,
    patch, pending, response_flags, stop_mid_pdu, stray, sync_pending, truncate, truncate_frame,
    unsigned)
from lib.mount import (clean_leftovers, daemon_binary, fuse_unavailable_reason, is_mounted,
                       pids_for_mountpoint, run_mount_command, timeout_scale)

# alone (tests/pytest.ini): drop_caches (forget_names), which makes every mount look its names up again
pytestmark = pytest.mark.alone

# timeout=: seconds a request may wait.  3 (it was 5): this server answers
# in milliseconds, under ASan too, and the scenarios that wait a request out
# (a dozen and more, each T plus the 1 s tick) wait no longer than needed.
T = 3
OPTS = [f"timeout={T}", "actimeo=0"]    # timeout= is the engine's per-request limit
HELLO = b"hello from the hostile server\n"
# What scenarios break: a file of its own, so that nothing of it is in the
# page cache when the hook fires (assert_serving reads hello.txt).
VICTIM = "victim.txt"


def scaled(s):
    return s * timeout_scale()


# ---- fixtures -------------------------------------------------------------------

@pytest.fixture
def hostile_factory(request):
    servers = []

    def make(**kw):
        kw.setdefault("files", dict(DEFAULT_FILES, **{VICTIM: HELLO}))
        s = HostileServer(**kw).start()
        servers.append(s)
        return s

    yield make
    rep = getattr(request.node, "rep_call", None)
    for s in servers:
        if rep is not None and rep.failed:
            print(f"--- {s.summary()}")
        s.stop()


@pytest.fixture
def hostile(hostile_factory):
    return hostile_factory()


@pytest.fixture
def mnt(tmp_path, fuse_required):
    """A bare mount point for mount commands that must fail."""
    d = tmp_path / "mnt"
    d.mkdir()
    assert os.access(daemon_binary(), os.X_OK), f"{daemon_binary()} not built"
    yield str(d)
    leftovers = clean_leftovers(str(d))
    assert not leftovers, f"left behind: {leftovers}"


# ---- helpers --------------------------------------------------------------------

def run_op(fn, limit):
    """Run fn() on a thread; (result, OSError or None, seconds).  A call still
    blocked after `limit` seconds is a hang: fail (teardown aborts the mount,
    which unblocks it)."""
    box = {}

    def work():
        t0 = time.monotonic()
        try:
            box["result"] = fn()
        except OSError as e:
            box["error"] = e
        box["secs"] = time.monotonic() - t0

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join(limit)
    if th.is_alive():
        pytest.fail(f"the call is still blocked after {limit:.0f}s: the client hangs",
                    pytrace=False)
    return box.get("result"), box.get("error"), box["secs"]


def errname(e):
    return errno.errorcode.get(e, str(e)) if e is not None else "success"


def expect_error(fn, errnos, limit, ok=False):
    """fn() must fail with one of errnos (or, with ok=True, may succeed)
    within limit seconds; returns (result, errno or None, seconds)."""
    result, err, secs = run_op(fn, limit)
    got = err.errno if err is not None else None
    allowed = set(errnos) | ({None} if ok else set())
    assert got in allowed, (f"got {errname(got)} after {secs:.1f}s, want one of "
                            f"{sorted(errname(e) for e in allowed)}")
    return result, got, secs


def wait_log(m, pattern, timeout=20.0):
    """The daemon's log must get a line matching pattern (a regex)."""
    rx = re.compile(pattern, re.I)
    deadline = time.monotonic() + scaled(timeout)
    while True:
        text = m.log_text()
        if rx.search(text):
            return text
        if time.monotonic() > deadline:
            pytest.fail(f"no log line matching {pattern!r}; log tail:\n{text[-3000:]}",
                        pytrace=False)
        time.sleep(0.1)


def read_file(m, name):
    """Buffered read of the whole file (cat).  The kernel may retry a
    failed read-ahead with a second READ, so a hook meant for a buffered
    read must repeat."""
    def f():
        with open(os.path.join(m.path, name), "rb") as fh:
            return fh.read()
    return f


def read_direct(m, name, size=65536):
    """One read(2) with O_DIRECT: exactly one READ request, no page cache,
    no retry by the kernel."""
    def f():
        fd = os.open(os.path.join(m.path, name), os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, size)
            n = os.readv(fd, [buf])
            return bytes(buf[:n])
        finally:
            os.close(fd)
    return f


def op_fn(m, op, path):
    return {"read": read_direct(m, path), "open": read_direct(m, path),
            "cat": read_file(m, path),
            "stat": stat_file(m, path), "list": list_dir(m, path)}[op]


def forget_names():
    """Drop the kernel's unused dentries (and inodes): a name listed before
    (readdirplus gives the kernel entries) would be revalidated, and the
    kernel takes a failed revalidation as "look it up again", so the error
    a scenario makes would never reach the caller."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def stat_file(m, name):
    def op():
        forget_names()
        return os.stat(os.path.join(m.path, name))
    return op


def list_dir(m, name=""):
    return lambda: sorted(os.listdir(os.path.join(m.path, name)))


def assert_serving(m, within=None):
    """The daemon is alive and the mount answers again (within `within`
    seconds: a reconnect may have to come first)."""
    deadline = time.monotonic() + scaled(within or 3 * T + 10)
    last = None
    while True:
        assert m.alive(), f"the daemon died; log:\n{m.log_text()[-3000:]}"
        result, err, _ = run_op(lambda: (sorted(os.listdir(m.path)),
                                         read_file(m, "hello.txt")()), scaled(3 * T + 10))
        if err is None and "hello.txt" in result[0] and result[1] == HELLO:
            return
        last = err or result
        if time.monotonic() > deadline:
            pytest.fail(f"the mount does not work again: {last!r}; log:\n"
                        f"{m.log_text()[-3000:]}", pytrace=False)
        time.sleep(0.3)


def is_path(name):
    return lambda r: r.path == name


def mount(mount_factory, srv, options=()):
    return mount_factory(srv, options=OPTS + list(options))


# ---- per-request scenarios -------------------------------------------------------

# Each: (id, command, predicate path, action, operation, errnos, log regex,
#        may succeed (a dropped connection may come back and the request be
#        replayed), time limit in s)
FAST = 3            # an error found in the reply itself: at once
SLOW = T + 4        # the client's request timeout, its 1 s tick, and slack
CONN_LOST = (errno.EIO, errno.ECONNABORTED, errno.ECONNRESET, errno.ETIMEDOUT)

READ_BODY = 16      # READ response fixed part ([MS-SMB2] 2.2.20)
QRY_BODY = 8        # QUERY_INFO / QUERY_DIRECTORY response fixed part


def _grow(n):
    """A patch that appends n bytes to the PDU (more data than the lengths say)."""
    def f(b):
        b += b"\xAB" * n
    return f


TRUNCATED = [
    # consistent framing: the PDU itself is short
    ("read-body", SMB2_READ, VICTIM, truncate(HDR + 10), "read", (errno.EIO,),
     r"malformed READ response", False, FAST),
    ("read-data", SMB2_READ, VICTIM, truncate(HDR + READ_BODY + 5), "read", (errno.EIO,),
     r"malformed READ response", False, FAST),
    ("cat-body", SMB2_READ, VICTIM, truncate(HDR + 10), "cat", (errno.EIO,),
     r"malformed READ response", False, FAST),
    ("read-header", SMB2_READ, VICTIM, truncate(40), "read", CONN_LOST,
     r"malformed SMB2 header", True, SLOW),
    ("query-info-body", SMB2_QUERY_INFO, VICTIM, truncate(HDR + 6), "stat", (errno.EIO,),
     r"malformed QUERY_INFO response", False, FAST),
    ("query-info-buffer", SMB2_QUERY_INFO, VICTIM, truncate(HDR + QRY_BODY + 20), "stat",
     (errno.EIO,), r"malformed QUERY_INFO response", False, FAST),
    ("query-directory-body", SMB2_QUERY_DIRECTORY, "", truncate(HDR + 5), "list", (errno.EIO,),
     r"malformed QUERY_DIRECTORY response", False, FAST),
    ("query-directory-buffer", SMB2_QUERY_DIRECTORY, "", truncate(HDR + QRY_BODY + 150), "list",
     (errno.EIO,), r"malformed QUERY_DIRECTORY response", False, FAST),
    # the Direct TCP length disagrees with what is sent
    ("frame-length-longer", SMB2_READ, VICTIM,
     truncate_frame(HDR + READ_BODY + 5, "longer"), "read", (errno.ETIMEDOUT,) + CONN_LOST,
     r"no answer in|connection lost|malformed|framing", True, SLOW),
    ("frame-length-longer-query-directory", SMB2_QUERY_DIRECTORY, "",
     truncate_frame(HDR + QRY_BODY + 50, "longer"), "list", (errno.ETIMEDOUT,) + CONN_LOST,
     r"no answer in|connection lost|stopped sending", True, SLOW),
    ("frame-length-shorter", SMB2_READ, VICTIM,
     truncate_frame(HDR + READ_BODY - 4, "shorter"), "read", (errno.EIO,) + CONN_LOST,
     r"malformed READ response|message of \d+ bytes|framing", True, SLOW),
    ("frame-length-shorter-compound", SMB2_QUERY_INFO, VICTIM,
     truncate_frame(100, "shorter"), "stat", (errno.EIO,) + CONN_LOST,
     r"malformed|message of \d+ bytes|framing", True, SLOW),
]

OUTSIDE = [
    ("read-dataoffset-past-end", SMB2_READ, VICTIM, patch(body_u8(2, 0xF0)), "read",
     (errno.EIO,), r"malformed READ response", False, FAST),
    ("read-dataoffset-in-header", SMB2_READ, VICTIM, patch(body_u8(2, 0x10)), "read",
     (errno.EIO,), r"malformed READ response", False, FAST),
    ("read-datalength-huge", SMB2_READ, VICTIM, patch(body_u32(4, 0x7FFFFFF0)), "read",
     (errno.EIO,), r"malformed READ response", False, FAST),
    # more data than was asked for, all of it inside the message
    ("read-datalength-over-request", SMB2_READ, VICTIM,
     [patch(body_u32(4, len(HELLO) + 200000)), patch(_grow(200000))], "read", (errno.EIO,),
     r"READ (response|reply) .*bytes|malformed READ", False, FAST),
    ("query-directory-offset-past-end", SMB2_QUERY_DIRECTORY, "",
     patch(body_u16(2, 0xFFF0)), "list", (errno.EIO,), r"malformed QUERY_DIRECTORY response",
     False, FAST),
    ("query-directory-length-past-end", SMB2_QUERY_DIRECTORY, "",
     patch(body_u32(4, 0x00FFFFFF)), "list", (errno.EIO,),
     r"malformed QUERY_DIRECTORY response", False, FAST),
    ("next-entry-past-end", SMB2_QUERY_DIRECTORY, "",
     patch(body_u32(QRY_BODY, 0x00100000)), "list", (errno.EIO,),
     r"malformed QUERY_DIRECTORY entry list", False, FAST),
    ("next-entry-misaligned", SMB2_QUERY_DIRECTORY, "", patch(body_u32(QRY_BODY, 113)), "list",
     (errno.EIO,), r"malformed QUERY_DIRECTORY entry list", False, FAST),
    ("next-entry-loops-back", SMB2_QUERY_DIRECTORY, "", patch(body_u32(QRY_BODY, 8)), "list",
     (errno.EIO,), r"malformed QUERY_DIRECTORY entry list", False, FAST),
    ("file-name-length-past-end", SMB2_QUERY_DIRECTORY, "",
     patch(body_u32(QRY_BODY + 60, 0x10000)), "list", (errno.EIO,),
     r"malformed QUERY_DIRECTORY entry list", False, FAST),
    ("query-info-offset-past-end", SMB2_QUERY_INFO, VICTIM, patch(body_u16(2, 0xFFF0)),
     "stat", (errno.EIO,), r"malformed QUERY_INFO response", False, FAST),
    ("query-info-length-past-end", SMB2_QUERY_INFO, VICTIM,
     patch(body_u32(4, 0x00FFFFFF)), "stat", (errno.EIO,), r"malformed QUERY_INFO response",
     False, FAST),
    ("query-info-all-info-short", SMB2_QUERY_INFO, VICTIM, patch(body_u32(4, 40)), "stat",
     (errno.EIO,), r"malformed QUERY_INFO response", False, FAST),
    ("create-contexts-past-end", SMB2_CREATE, VICTIM,
     [patch(body_u32(80, HDR + 88)), patch(body_u32(84, 0x1000))], "open", (errno.EIO,),
     r"malformed CREATE response", False, FAST),
    ("create-contexts-offset-in-header", SMB2_CREATE, VICTIM,
     [patch(body_u32(80, 16)), patch(body_u32(84, 32))], "open", (errno.EIO,),
     r"malformed CREATE response", False, FAST),
]

# A CREATE response whose contexts lie inside the message but whose chain is
# bad: the durable-handle parser must not read outside it.  The open may
# fail (EIO) or go on without a durable handle.
CONTEXT_CHAIN = [
    ("next-past-chain", lambda b: _ctx(b, 0, 0x100)),
    ("next-misaligned", lambda b: _ctx(b, 0, 12)),
    ("name-past-chain", lambda b: _ctx(b, 4, 0xFFF0, 2)),
    ("data-past-chain", lambda b: _ctx(b, 10, 0x20, 2)),
    ("data-length-huge", lambda b: _ctx(b, 12, 0x7FFFFFFF)),
]


def _ctx(b, field_off, value, size=4):
    """Patch a field of the first create context of a CREATE response."""
    coff = struct.unpack_from("<I", b, HDR + 80)[0]
    if not coff:
        return
    struct.pack_into("<I" if size == 4 else "<H", b, coff + field_off, value)


IDS = [
    ("never-sent-id", SMB2_READ, VICTIM, message_id(100000), "read", (errno.ETIMEDOUT,),
     r"unknown MessageId", False, SLOW),
    ("never-sent-id-max", SMB2_READ, VICTIM, message_id(lambda m: 2**64 - 1), "read",
     (errno.ETIMEDOUT,), r"unknown MessageId", False, SLOW),
    ("no-response-flag", SMB2_READ, VICTIM,
     response_flags(clear_bits=FLAGS_SERVER_TO_REDIR), "read", (errno.ETIMEDOUT,),
     r"without the response flag", False, SLOW),
    ("unknown-command", SMB2_READ, VICTIM, command(0x0077), "read",
     (errno.EIO, errno.ETIMEDOUT), r"command", False, SLOW),
    ("other-command", SMB2_READ, VICTIM, command(SMB2_WRITE), "read",
     (errno.EIO, errno.ETIMEDOUT), r"WRITE", False, SLOW),
]

PENDING = [
    ("read", SMB2_READ, VICTIM, pending(), "read", (errno.ETIMEDOUT,),
     r"READ request .*no answer in", False, SLOW + T),
    ("query-directory", SMB2_QUERY_DIRECTORY, "", pending(), "list", (errno.ETIMEDOUT,),
     r"QUERY_DIRECTORY request .*no answer in", False, SLOW + T),
    ("compound-stat", SMB2_QUERY_INFO, VICTIM, pending(), "stat", (errno.ETIMEDOUT,),
     r"no answer in", False, SLOW + T),
    # an interim response again and again: the wait must still end (one
    # interim may extend the deadline once, not forever)
    ("repeated-interim", SMB2_READ, VICTIM, pending(repeat=T - 2), "read", (errno.ETIMEDOUT,),
     r"READ request .*no answer in", False, 2 * SLOW + T),
    # a final-looking STATUS_PENDING (no async flag): an error at once, or an
    # interim that never completes; either way the log says PENDING
    ("sync-pending", SMB2_READ, VICTIM, sync_pending(), "read", (errno.EIO, errno.ETIMEDOUT),
     r"PENDING", False, SLOW),
]

STOPS = [
    # the request times out; the stream cannot be framed again, so the
    # connection goes (the stall limit is the connect timeout, 15 s) and
    # comes back
    ("then-silent", SMB2_READ, VICTIM, stop_mid_pdu("silence"), "read",
     (errno.ETIMEDOUT,) + CONN_LOST, r"stopped sending in the middle", True, SLOW),
    ("then-close", SMB2_READ, VICTIM, stop_mid_pdu("close", after=1.0), "read",
     CONN_LOST, r"connection (lost|reset)|lost|reconnect", True, SLOW + T),
    ("header-then-close", SMB2_QUERY_DIRECTORY, "", stop_mid_pdu("close", after=0.5, keep=30),
     "list", CONN_LOST, r"connection (lost|reset)|lost|reconnect", True, SLOW + T),
]

NEXT_COMMAND = [
    ("misaligned", 3), ("shorter-than-header", 8), ("past-end", 0x00FFFFF0),
    ("leaves-partial-header", None),
]


def _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit, options=()):
    m = mount(mount_factory, hostile, options)
    assert_serving(m)
    # hello.txt's CLOSE goes out up to 10 ms after close(2) (closes in
    # batches): let it be answered first, so that the request under test is
    # the only one in flight (a frame that claims more bytes than it has
    # would otherwise take the next answer's bytes as its own, which this
    # unsigned session cannot tell from data)
    time.sleep(0.1)
    if not isinstance(actions, list):
        actions = [actions]
    # cat: every READ of the file answered so (the kernel retries a failed
    # read-ahead); open: every CREATE (the lookup's comes first, and only
    # the open decodes its CREATE response); otherwise the next match only
    times = None if op in ("cat", "open") else 1
    hooks = [hostile.on(cmd, a, when=is_path(path), times=times) for a in actions]
    result, got, secs = expect_error(op_fn(m, op, path), errnos, scaled(limit),
                                     ok=may_succeed)
    assert all(h.fired >= 1 for h in hooks), f"hooks {hooks} (server saw the request?)"
    hostile.clear_hooks()
    wait_log(m, log)
    if got is None:
        # the connection went and came back: the request was replayed
        assert hostile.connections >= 2, "succeeded without a reconnect?"
        if op in ("read", "open", "cat"):
            assert result == HELLO
    assert_serving(m)
    return m, got, secs


def _params(table):
    return [pytest.param(*row[1:], id=row[0]) for row in table]


ARGS = "cmd,path,actions,op,errnos,log,may_succeed,limit"


@pytest.mark.parametrize(ARGS, _params(TRUNCATED))
def test_truncated_response(hostile, mount_factory, cmd, path, actions, op, errnos, log,
                            may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit)


@pytest.mark.parametrize(ARGS, _params(OUTSIDE))
def test_offsets_and_lengths_outside(hostile, mount_factory, cmd, path, actions, op, errnos,
                                     log, may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit)
    assert not hostile.violations, hostile.violations


def test_read_split_piece_malformed(hostile_factory, mount_factory):
    """A read the client splits (the server's MaxReadSize is 64 KiB): one
    piece's answer is malformed; the whole read fails with EIO, once, and
    the other pieces are not lost track of (ASan/LSan watch the join)."""
    srv = hostile_factory(max_io=65536)
    m = mount(mount_factory, srv)
    assert_serving(m)
    h = srv.on(SMB2_READ, truncate(HDR + 10), nth=2, when=is_path("big.bin"))
    expect_error(read_direct(m, "big.bin", 256 << 10), (errno.EIO,), scaled(FAST))
    assert h.fired == 1
    wait_log(m, r"malformed READ response")
    assert read_direct(m, "big.bin", 256 << 10)() == srv.file_data("big.bin")[:256 << 10]
    assert_serving(m)


def test_read_split_piece_too_long(hostile_factory, mount_factory):
    """One piece of a split read carries more bytes than it asked for (its
    DataLength and data agree), and arrives after the piece behind it: the
    extra bytes must not land on the next piece's data.  EIO, or the right
    bytes; never other bytes."""
    srv = hostile_factory(max_io=65536)
    m = mount(mount_factory, srv)
    assert_serving(m)
    extra = 4096
    h1 = srv.on(SMB2_READ, patch(body_u32(4, 65536 + extra)), when=is_path("big.bin"))
    h2 = srv.on(SMB2_READ, patch(_grow(extra)), when=is_path("big.bin"))
    h3 = srv.on(SMB2_READ, pending(final_after=0.5), when=is_path("big.bin"))
    want = srv.file_data("big.bin")[:256 << 10]
    result, got, _ = expect_error(read_direct(m, "big.bin", 256 << 10), (errno.EIO,),
                                  scaled(FAST + 1), ok=True)
    assert h1.fired == h2.fired == h3.fired == 1
    if got is None:
        assert len(result) == len(want)
        bad = [i for i in range(0, len(want), 4096) if result[i:i + 4096] != want[i:i + 4096]]
        assert not bad, (f"the read returned wrong data at offsets {bad[:8]} (the long "
                         f"piece's extra bytes overwrote the next piece)")
    else:
        wait_log(m, r"READ (response|reply) .*bytes|malformed READ")
    assert_serving(m)


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in CONTEXT_CHAIN])
def test_create_context_chain_bad(hostile, mount_factory, fn):
    m = mount(mount_factory, hostile)
    assert_serving(m)
    h = hostile.on(SMB2_CREATE, patch(fn), when=is_path(VICTIM),
                   times=None)
    result, got, _ = expect_error(read_direct(m, VICTIM), (errno.EIO,), scaled(FAST),
                                  ok=True)
    assert h.fired >= 1
    if got is None:
        assert result == HELLO
    else:
        wait_log(m, r"malformed CREATE|create context")
    hostile.clear_hooks()
    assert_serving(m)


@pytest.mark.parametrize(ARGS, _params(IDS))
def test_wrong_message_id(hostile, mount_factory, cmd, path, actions, op, errnos, log,
                          may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit)


@pytest.mark.parametrize("place", ["before", "after"])
def test_stray_message_id_then_real_answer(hostile, mount_factory, place):
    """A response to an id never sent, and the real one: the call works, the
    stray is logged and dropped."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    h = hostile.on(SMB2_READ, stray(place=place), when=is_path(VICTIM))
    result, _, _ = expect_error(read_direct(m, VICTIM), (), scaled(FAST), ok=True)
    assert result == HELLO and h.fired == 1
    wait_log(m, r"unknown MessageId")
    assert not hostile.violations, hostile.violations
    assert_serving(m)


DUPLICATES = [
    ("read", SMB2_READ, VICTIM, duplicate(), "read"),
    ("read-3-more", SMB2_READ, VICTIM, duplicate(3), "read"),
    ("compound-stat", SMB2_QUERY_INFO, VICTIM, duplicate(), "stat"),
    ("query-directory", SMB2_QUERY_DIRECTORY, "", duplicate(), "list"),
    ("compound-member-first", SMB2_CREATE, VICTIM, duplicate_pdu("before"), "stat"),
    ("compound-member-last", SMB2_CLOSE, VICTIM, duplicate_pdu("after"), "stat"),
]


@pytest.mark.parametrize("cmd,path,action,op", [pytest.param(*r[1:], id=r[0])
                                                 for r in DUPLICATES])
def test_duplicate_response(hostile, mount_factory, cmd, path, action, op):
    """The first answer completes the request; the duplicate finds nothing
    (its request is gone, maybe freed) and is logged."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    h = hostile.on(cmd, action, when=is_path(path))
    result, _, _ = expect_error(op_fn(m, op, path), (), scaled(FAST), ok=True)
    assert h.fired == 1
    if op == "read":
        assert result == HELLO
    wait_log(m, r"unknown MessageId")
    assert not hostile.violations, hostile.violations
    assert_serving(m)


@pytest.mark.parametrize(ARGS, _params(PENDING))
def test_pending_never_completes(hostile, mount_factory, cmd, path, actions, op, errnos, log,
                                 may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit)


def test_pending_then_final(hostile, mount_factory):
    """The legitimate case: interim STATUS_PENDING, the answer 2 s later."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    h = hostile.on(SMB2_READ, pending(final_after=2), when=is_path(VICTIM))
    result, _, secs = expect_error(read_direct(m, VICTIM), (), scaled(FAST + 2), ok=True)
    assert result == HELLO and h.fired == 1 and secs >= 1.5


@pytest.mark.parametrize(ARGS, _params(STOPS))
def test_stream_stops_mid_pdu(hostile, mount_factory, cmd, path, actions, op, errnos, log,
                              may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit)


def test_stream_stops_mid_pdu_keepalive_notices(hostile, mount_factory):
    """The stream stops mid-PDU and stays silent: the request times out, and
    the keepalive (echo_interval=2) finds the connection dead, so the mount
    comes back (on a new connection) rather than timing out forever."""
    m = mount(mount_factory, hostile, ["echo_interval=2"])
    assert_serving(m)
    hostile.on(SMB2_READ, stop_mid_pdu("silence"), when=is_path(VICTIM))
    expect_error(read_direct(m, VICTIM), (errno.ETIMEDOUT,) + CONN_LOST, scaled(SLOW),
                 ok=True)
    wait_log(m, r"keepalive|ECHO|no answer")
    assert_serving(m, within=4 * T)
    assert hostile.connections >= 2


@pytest.mark.parametrize("value", [pytest.param(v, id=i) for i, v in NEXT_COMMAND])
def test_compound_bad_next_command(hostile, mount_factory, value):
    """A compound answer (CREATE+QUERY_INFO+CLOSE of a stat) whose first
    NextCommand is wrong: the chain cannot be walked, the connection goes."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    if value is None:
        # points 40 bytes before the end: what follows cannot hold a header
        def f(b):
            struct.pack_into("<I", b, 20, (len(b) - 40) & ~7)
        h = hostile.on(SMB2_CREATE, frame_edit(f), when=is_path(VICTIM))
    else:
        h = hostile.on(SMB2_CREATE, next_command(value), when=is_path(VICTIM))
    expect_error(stat_file(m, VICTIM), CONN_LOST, scaled(SLOW + T), ok=True)
    assert h.fired == 1
    wait_log(m, r"malformed SMB2 header or compound chain")
    assert_serving(m)


def test_compound_chain_ends_early(hostile, mount_factory):
    """NextCommand 0 on the first member: the other two answers are never
    seen; the request times out, the connection stays usable."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    # the CREATE answer claims to be the last; the rest of the frame is then
    # trailing bytes of that one PDU
    h = hostile.on(SMB2_CREATE, next_command(0), when=is_path(VICTIM))
    expect_error(stat_file(m, VICTIM), (errno.ETIMEDOUT, errno.EIO), scaled(SLOW))
    assert h.fired == 1
    wait_log(m, r"no answer in|malformed")
    assert_serving(m)


# ---- credits --------------------------------------------------------------------

def test_huge_credit_grants(hostile, mount_factory, tmp_path):
    """Every response grants 65535 credits: the client keeps what it can use
    (at most 8192) and works normally."""
    hostile.grant = 65535
    m = mount(mount_factory, hostile)
    assert_serving(m)
    data = os.urandom(3 << 20)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    r = subprocess.run(["dd", f"if={src}", f"of={m.path}/dd.bin", "bs=1M"],
                       capture_output=True, text=True, timeout=scaled(60))
    assert r.returncode == 0, r.stderr
    assert hostile.file_data("dd.bin") == data
    assert read_file(m, "dd.bin")() == data
    assert read_file(m, "big.bin")() == hostile.file_data("big.bin")
    assert not hostile.violations, hostile.violations
    assert_serving(m)


def _stat_until_error(m, limit_calls, limit_s):
    """stat until one fails; (errno, seconds of the failing call, calls made)."""
    for i in range(limit_calls):
        _, got, secs = expect_error(stat_file(m, "hello.txt"), (errno.EIO, errno.ETIMEDOUT),
                                    limit_s, ok=True)
        if got is not None:
            return got, secs, i + 1
    return None, 0, limit_calls


def test_zero_credits(hostile, mount_factory):
    """Once the mount is up the server grants nothing: the client spends
    what it holds, then must fail what it cannot send (EIO, a log line
    naming the credits) instead of waiting forever, and never send a
    request without a credit for it."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    hostile.grant = 0
    got, secs, calls = _stat_until_error(m, 3000, scaled(SLOW))
    assert got is not None, f"{calls} stats worked without a credit granted"
    assert got == errno.EIO and secs < scaled(FAST), \
        f"the first call without credits: {errname(got)} after {secs:.1f}s"
    wait_log(m, r"credit")
    # and it stays that way, quickly
    for _ in range(3):
        expect_error(stat_file(m, "hello.txt"), (errno.EIO,), scaled(FAST))
    assert not hostile.violations, hostile.violations
    assert m.alive()


def test_zero_credits_concurrent(hostile, mount_factory):
    """The same with eight callers at once: requests queued for credits when
    the last answer in flight grants none must fail too, not wait."""
    m = mount(mount_factory, hostile)
    assert_serving(m)
    hostile.grant = 0
    results = []

    def worker():
        results.append(_stat_until_error(m, 2000, scaled(SLOW)))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(120))
    assert not any(t.is_alive() for t in threads), "callers still blocked: the client hangs"
    assert all(r[0] is not None for r in results), results
    wait_log(m, r"credit")
    assert not hostile.violations, hostile.violations
    assert m.alive()


# ---- signing --------------------------------------------------------------------

SIGNED = [
    ("read-bad-signature", SMB2_READ, VICTIM, bad_signature(), "read", (errno.EIO,),
     r"bad signature on READ response", False, FAST),
    ("stat-bad-signature", SMB2_QUERY_INFO, VICTIM, bad_signature(), "stat", (errno.EIO,),
     r"bad signature on QUERY_INFO response", False, FAST),
    ("list-bad-signature", SMB2_QUERY_DIRECTORY, "", bad_signature(), "list", (errno.EIO,),
     r"bad signature on QUERY_DIRECTORY response", False, FAST),
    ("read-unsigned", SMB2_READ, VICTIM, unsigned(), "read", (errno.EIO,),
     r"READ response .* is not signed", False, FAST),
]


@pytest.mark.parametrize(ARGS, _params(SIGNED))
def test_bad_signature(hostile, mount_factory, cmd, path, actions, op, errnos, log,
                       may_succeed, limit):
    _run_scenario(hostile, mount_factory, cmd, path, actions, op, errnos, log, may_succeed,
                  limit, options=["sign"])


# ---- mount time -----------------------------------------------------------------

def _mount_fails(srv, d, limit, options=(), foreground=False):
    unc = f"//127.0.0.1:{srv.port}/{srv.share}"
    r, secs = run_mount_command(unc, d, srv.user, srv.password, options=options,
                                foreground=foreground, timeout=limit + scaled(30))
    out = r.stdout + r.stderr
    assert r.returncode > 0, f"exit status {r.returncode}:\n{out}"
    assert r.returncode < 128, f"exit status {r.returncode} looks like a signal:\n{out}"
    assert secs < limit, f"took {secs:.1f}s (limit {limit:.0f}s):\n{out}"
    assert not is_mounted(d), "failed mount left a mount behind"
    time.sleep(0.2)
    assert not pids_for_mountpoint(d), "failed mount left a daemon behind"
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:",
                   "Segmentation fault"):
        assert marker not in out, out
    return out, secs


GARBAGE = [
    ("http", b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
    ("smb1", netbios(b"\xffSMBr" + bytes(60))),
    ("framed-junk", netbios(bytes(range(7, 107)))),
    ("tiny-smb2", netbios(b"\xfeSMB")),
    ("huge-length-junk", b"\x00\xff\xff\xff" + b"<html>" + b"x" * 100),
    ("zero-length", b"\x00\x00\x00\x00" * 4),
]


@pytest.mark.parametrize("foreground", [pytest.param(False, id="daemonizing"),
                                        pytest.param(True, id="foreground")])
@pytest.mark.parametrize("data", [pytest.param(d, id=i) for i, d in GARBAGE])
def test_garbage_reply_to_negotiate(hostile, mnt, data, foreground):
    """Default options; the server answers NEGOTIATE with something that is
    not SMB2 (then keeps the connection open): the mount fails within 10 s,
    naming the problem."""
    hostile.on(SMB2_NEGOTIATE, garbage(data), times=None)
    out, _ = _mount_fails(hostile, mnt, 10, foreground=foreground)
    assert re.search(r"NEGOTIATE", out), out
    assert re.search(r"not SMB2|framing|malformed|message of \d+ bytes|SMB1", out, re.I), out


NEVER = {"negotiate": (SMB2_NEGOTIATE, "NEGOTIATE"),
         "session-setup": (SMB2_SESSION_SETUP, "SESSION_SETUP"),
         "tree-connect": (SMB2_TREE_CONNECT, "TREE_CONNECT")}


@pytest.fixture(scope="module")
def never_answers_runs(tmp_path_factory):
    """The mount attempts of test_never_answers, one per stall, started
    together on first use: each waits out the default set-up timeout (20 s)
    against a server of its own, so one wait serves all three instead of
    three in a row.  {stall: (server, mount point, thread, box)}; the thread
    runs _mount_fails and leaves its result (or the exception) in box."""
    reason = fuse_unavailable_reason()
    if reason:
        pytest.skip(reason)
    assert os.access(daemon_binary(), os.X_OK), f"{daemon_binary()} not built"
    runs = {}
    try:
        for stall, (cmd, _) in NEVER.items():
            srv = HostileServer(files=dict(DEFAULT_FILES, **{VICTIM: HELLO})).start()
            srv.on(cmd, drop(), times=None)
            d = str(tmp_path_factory.mktemp(f"never-{stall}") / "mnt")
            os.mkdir(d)
            box = {}

            def work(srv=srv, d=d, box=box):
                try:
                    box["result"] = _mount_fails(srv, d, 60)
                except BaseException as e:  # noqa: BLE001 - re-raised by the test
                    box["error"] = e

            th = threading.Thread(target=work, daemon=True)
            runs[stall] = (srv, d, th, box)
            th.start()
        yield runs
    finally:
        for srv, d, th, _ in runs.values():
            th.join(60 + scaled(60))
            clean_leftovers(d)
            srv.stop()


@pytest.mark.parametrize("stall", list(NEVER))
def test_never_answers(never_answers_runs, stall):
    """Default options; the server accepts the connection and never answers
    (or stops answering during set-up): the mount gives up within 60 s with
    a clear message.  (The three stalls' mount commands run at once: see
    never_answers_runs.)"""
    srv, d, th, box = never_answers_runs[stall]
    th.join(60 + scaled(60))
    try:
        assert not th.is_alive(), "the mount command's wait did not end"
        if "error" in box:
            raise box["error"]
        out, secs = box["result"]
        assert re.search(NEVER[stall][1], out), out
        assert re.search(r"timed out|no answer|did not answer", out, re.I), out
    except BaseException:
        print(f"--- {srv.summary()}")
        raise
    finally:
        leftovers = clean_leftovers(d)
    assert not leftovers, f"left behind: {leftovers}"


MALFORMED_SETUP = [
    ("negotiate-secbuf-past-end", SMB2_NEGOTIATE, patch(body_u16(58, 0x4000)),
     r"malformed NEGOTIATE response"),
    ("negotiate-secbuf-in-header", SMB2_NEGOTIATE, patch(body_u16(56, 8)),
     r"malformed NEGOTIATE response"),
    ("negotiate-context-offset-past-end", SMB2_NEGOTIATE, patch(body_u32(60, 0x10000)),
     r"malformed NEGOTIATE response"),
    ("negotiate-context-count-huge", SMB2_NEGOTIATE, patch(body_u16(6, 0xFFFF)),
     r"malformed NEGOTIATE response"),
    ("negotiate-truncated", SMB2_NEGOTIATE, truncate(HDR + 30), r"malformed NEGOTIATE response"),
    ("negotiate-zero-credits", SMB2_NEGOTIATE, credits(0), r"credit"),
    ("session-setup-secbuf-past-end", SMB2_SESSION_SETUP, patch(body_u16(6, 0x8000)),
     r"malformed SESSION_SETUP response"),
    ("session-setup-secbuf-offset-past-end", SMB2_SESSION_SETUP, patch(body_u16(4, 0xFF00)),
     r"malformed SESSION_SETUP response"),
    ("session-setup-secbuf-in-header", SMB2_SESSION_SETUP, patch(body_u16(4, 20)),
     r"malformed SESSION_SETUP response"),
    ("session-setup-truncated", SMB2_SESSION_SETUP, truncate(HDR + 4),
     r"malformed SESSION_SETUP response"),
    ("tree-connect-truncated", SMB2_TREE_CONNECT, truncate(HDR + 6),
     r"malformed TREE_CONNECT response"),
]


@pytest.mark.parametrize("cmd,action,msg", [pytest.param(*r[1:], id=r[0])
                                            for r in MALFORMED_SETUP])
def test_malformed_setup_response(hostile, mnt, cmd, action, msg):
    """A broken answer during set-up: no mount, at once, and the daemon's
    log (foreground: its output) names what was wrong."""
    hostile.on(cmd, action, times=None)
    out, _ = _mount_fails(hostile, mnt, 10, foreground=True)
    assert re.search(msg, out, re.I), out


@pytest.mark.parametrize("cmd,msg", [
    pytest.param(SMB2_SESSION_SETUP, r"SESSION_SETUP response .*bad signature",
                 id="session-setup"),
    pytest.param(SMB2_TREE_CONNECT, r"bad signature on TREE_CONNECT response",
                 id="tree-connect"),
])
def test_bad_signature_during_setup(hostile, mnt, cmd, msg):
    """A signed session whose final SESSION_SETUP (or TREE_CONNECT) answer
    carries a bad signature: no mount, and the message says why."""
    hostile.on(cmd, bad_signature(), when=lambda r: r.command != SMB2_SESSION_SETUP
               or r.session_id != 0, times=None)
    out, _ = _mount_fails(hostile, mnt, 10, options=["sign"], foreground=True)
    assert re.search(msg, out, re.I), out


def test_server_sanity(hostile, mount_factory, tmp_path):
    """The hostile server with no hooks is a working server: ls, cat, dd,
    mkdir, rename, rm, statfs, on a signed session too."""
    for opts in ([], ["sign"]):
        m = mount(mount_factory, hostile, opts)
        assert sorted(os.listdir(m.path)) == ["big.bin", "dir1", "hello.txt", VICTIM]
        assert read_file(m, "hello.txt")() == HELLO
        assert read_file(m, "big.bin")() == hostile.file_data("big.bin")
        assert os.listdir(os.path.join(m.path, "dir1")) == ["inner.txt"]
        r = subprocess.run(["dd", "if=/dev/urandom", f"of={m.path}/x.bin", "bs=64k",
                            "count=16"], capture_output=True, text=True, timeout=scaled(60))
        assert r.returncode == 0, r.stderr
        assert read_file(m, "x.bin")() == hostile.file_data("x.bin")
        os.mkdir(os.path.join(m.path, "d"))
        os.rename(os.path.join(m.path, "x.bin"), os.path.join(m.path, "d", "y.bin"))
        os.unlink(os.path.join(m.path, "d", "y.bin"))
        os.rmdir(os.path.join(m.path, "d"))
        assert os.statvfs(m.path).f_blocks > 0
        m.stop()
    assert not hostile.violations, hostile.violations
