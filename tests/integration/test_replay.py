"""Replays after a lost reply (issue 20), on the scripted server.

Issue: "every request not marked no_replay is replayed on another channel
(multichannel) or after a reconnect ... rename, unlink and
CREATE(FILE_CREATE) included; after a lost reply, an executed rename
replayed fails with 'not found' and the user sees an error for an operation
that succeeded."  Acceptance: "a lost reply to rename, unlink, create,
write, read, each on a scripted peer."

Each test arms lost_reply() on one operation's request: the hostile server
(tests/lib/hostile_server.py) carries the request out, then closes the
connection without answering.  The client reconnects and sends the request
again, flagged SMB2_FLAGS_REPLAY_OPERATION (3.x).  What the user must see
is what happened on the server: the rename, unlink, rmdir, write, read and
exclusive create (answered from its CreateGuid, [MS-SMB2] 3.3.5.9.10)
succeed.  An exclusive mkdir has no CreateGuid a server could recognise (a
directory is never durable, and the compound closes it at once): its replay
meets the directory it made, and the client cannot tell that from someone
else's, so the user gets EEXIST - and the log says the reply was lost.  The
rules are in client/conn.h (enum smb_replay_class).
"""

import errno
import fcntl
import mmap
import os
import re
import struct
import time

import pytest

from lib.hostile_server import (
    FLAGS_REPLAY, FILE_DIRECTORY_FILE, LOCKFLAG_UNLOCK, FileDispositionInformation,
    FileRenameInformation, SMB2_CREATE, SMB2_LOCK, SMB2_READ, SMB2_SET_INFO, SMB2_WRITE,
    HostileServer, lost_reply)
from lib.mount import timeout_scale

OPTS = ["timeout=10", "actimeo=0"]
LIMIT = 40            # s: a reconnect and the replay fit well within
HELLO = b"hello, replayed world\n"
FILE_CREATE = 2


@pytest.fixture
def srv(request):
    """The scripted server; indirect parameters are HostileServer arguments."""
    s = HostileServer(files={"a.txt": HELLO, "victim.txt": HELLO * 200},
                      **getattr(request, "param", {})).start()
    s.add_dir("emptydir")
    yield s
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(f"--- {s.summary()}")
    s.stop()


@pytest.fixture
def m(srv, mount_factory):
    return mount_factory(srv, options=OPTS)


def set_info(cls, path):
    return lambda r: r.command == SMB2_SET_INFO and r.body[3] == cls and r.path == path


def exclusive_create(path, directory):
    def f(r):
        if r.command != SMB2_CREATE or r.path != path:
            return False
        disp, opts = (int.from_bytes(r.body[o:o + 4], "little") for o in (36, 40))
        return disp == FILE_CREATE and bool(opts & FILE_DIRECTORY_FILE) == directory
    return f


def lose(srv, cmd, when):
    """The next matching request is carried out and its reply lost."""
    return srv.on(cmd, lost_reply(), when=when)


def replays(srv, command, path):
    return [r for r in srv.requests_of(command) if r.flags & FLAGS_REPLAY and r.path == path]


def within(fn):
    """fn() must end in LIMIT seconds (scaled); its result, or the OSError."""
    t0 = time.monotonic()
    try:
        out = fn()
    except OSError as e:
        out = e
    secs = time.monotonic() - t0
    assert secs < LIMIT * timeout_scale(), f"took {secs:.1f}s"
    return out


def check_lost(srv, hook):
    assert hook.fired == 1, f"{hook}: the server never saw the request"
    assert srv.connections >= 2, "no reconnect after the lost reply?"


def test_rename(srv, m):
    h = lose(srv, SMB2_SET_INFO, set_info(FileRenameInformation, "a.txt"))
    out = within(lambda: os.rename(os.path.join(m.path, "a.txt"),
                                   os.path.join(m.path, "b.txt")))
    check_lost(srv, h)
    assert not isinstance(out, OSError), f"rename failed: {out}"
    assert replays(srv, SMB2_CREATE, "a.txt"), "the rename was not replayed"
    assert sorted(os.listdir(m.path)) == ["b.txt", "emptydir", "victim.txt"]
    assert srv.file_data("b.txt") == HELLO
    assert re.search(r"rename \S*a\.txt -> \S*b\.txt: the reply was lost.*carried out",
                     m.log_text()), m.log_text()[-3000:]
    with open(os.path.join(m.path, "b.txt"), "rb") as f:
        assert f.read() == HELLO


@pytest.mark.parametrize("name,remove", [("a.txt", os.unlink), ("emptydir", os.rmdir)],
                         ids=["unlink", "rmdir"])
def test_remove(srv, m, name, remove):
    h = lose(srv, SMB2_SET_INFO, set_info(FileDispositionInformation, name))
    out = within(lambda: remove(os.path.join(m.path, name)))
    check_lost(srv, h)
    assert not isinstance(out, OSError), f"{remove.__name__} failed: {out}"
    assert replays(srv, SMB2_CREATE, name), f"the {remove.__name__} was not replayed"
    assert name not in os.listdir(m.path)
    assert name not in srv.fs


def test_exclusive_create(srv, m):
    """O_CREAT|O_EXCL: the create carries a durable v2 CreateGuid; its
    replay is recognised by the server and answered with the open the
    first one made (3.3.5.9.10), so the file is ours and the open works."""
    h = lose(srv, SMB2_CREATE, exclusive_create("new.txt", False))
    path = os.path.join(m.path, "new.txt")

    def create_and_write():
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            os.write(fd, b"mine")
        finally:
            os.close(fd)

    out = within(create_and_write)
    check_lost(srv, h)
    assert not isinstance(out, OSError), f"the exclusive create failed: {out}"
    assert replays(srv, SMB2_CREATE, "new.txt"), "the create was not replayed"
    assert srv.replayed_creates == 1, "the server did not recognise the replay"
    assert srv.file_data("new.txt") == b"mine"


@pytest.mark.parametrize("srv", [{"durable": False}], indirect=True)
def test_exclusive_create_no_durable_handle(srv, m):
    """The same on a server that grants no durable handle: it keeps no
    CreateGuid to know the replay by (3.3.5.9.10), so the replay meets the
    file the first try made, and the user gets EEXIST (it may be someone
    else's) - with a log line saying the reply was lost."""
    h = lose(srv, SMB2_CREATE, exclusive_create("new.txt", False))
    out = within(lambda: os.close(os.open(os.path.join(m.path, "new.txt"),
                                          os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)))
    check_lost(srv, h)
    assert replays(srv, SMB2_CREATE, "new.txt"), "the create was not replayed"
    assert srv.replayed_creates == 0
    assert isinstance(out, OSError) and out.errno == errno.EEXIST, out
    assert re.search(r"new\.txt.*reply was lost", m.log_text()), m.log_text()[-3000:]


def test_mkdir(srv, m):
    """An exclusive create that no server can recognise when replayed: the
    user gets EEXIST (honest: maybe someone else's), and the log says the
    reply was lost."""
    h = lose(srv, SMB2_CREATE, exclusive_create("newdir", True))
    out = within(lambda: os.mkdir(os.path.join(m.path, "newdir")))
    check_lost(srv, h)
    assert replays(srv, SMB2_CREATE, "newdir"), "the mkdir was not replayed"
    assert isinstance(out, OSError) and out.errno == errno.EEXIST, out
    assert re.search(r"newdir.*reply was lost", m.log_text()), m.log_text()[-3000:]
    assert os.path.isdir(os.path.join(m.path, "newdir"))


def test_write(srv, m):
    data = bytes(range(256)) * 16
    h = lose(srv, SMB2_WRITE, lambda r: r.path == "victim.txt")

    def write():
        fd = os.open(os.path.join(m.path, "victim.txt"), os.O_WRONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, len(data))
            buf[:] = data
            return os.pwritev(fd, [buf], 4096)
        finally:
            os.close(fd)

    out = within(write)
    check_lost(srv, h)
    assert out == len(data), f"write: {out}"
    assert replays(srv, SMB2_WRITE, "victim.txt"), "the write was not replayed"
    want = bytearray(HELLO * 200)
    want[4096:4096 + len(data)] = data
    assert srv.file_data("victim.txt") == bytes(want)


def test_unlock(srv, m):
    """flock(LOCK_UN) whose reply is lost: the replay finds the range
    unlocked by the first try (STATUS_RANGE_NOT_LOCKED): done."""
    fd = os.open(os.path.join(m.path, "victim.txt"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        h = lose(srv, SMB2_LOCK, lambda r: r.path == "victim.txt"
                 and int.from_bytes(r.body[40:44], "little") & LOCKFLAG_UNLOCK)
        out = within(lambda: fcntl.flock(fd, fcntl.LOCK_UN))
        check_lost(srv, h)
        assert not isinstance(out, OSError), f"unlock failed: {out}"
        assert replays(srv, SMB2_LOCK, "victim.txt"), "the unlock was not replayed"
        assert not any(o.locks for o in srv.opens.values())
    finally:
        os.close(fd)


def test_lock(srv, m):
    """flock(LOCK_EX|LOCK_NB) whose reply is lost: the replay would find
    the range locked - by the first try, through the same handle - but it
    carries the first's LockSequence, and the server knows it (3.3.5.14)."""
    fd = os.open(os.path.join(m.path, "victim.txt"), os.O_RDWR)
    try:
        h = lose(srv, SMB2_LOCK, lambda r: r.path == "victim.txt")
        out = within(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
        check_lost(srv, h)
        assert replays(srv, SMB2_LOCK, "victim.txt"), "the lock was not replayed"
        assert not isinstance(out, OSError), f"lock failed: {out}"
        assert srv.replayed_locks == 1, "the server did not know the replay"
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # a new LockSequence number
        assert srv.replayed_locks == 1
    finally:
        os.close(fd)


def test_read(srv, m):
    h = lose(srv, SMB2_READ, lambda r: r.path == "victim.txt")

    def read():
        fd = os.open(os.path.join(m.path, "victim.txt"), os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 8192)
            n = os.preadv(fd, [buf], 0)
            return bytes(buf[:n])
        finally:
            os.close(fd)

    out = within(read)
    check_lost(srv, h)
    assert out == (HELLO * 200)[:8192], f"read: {out!r:.80}"
    assert replays(srv, SMB2_READ, "victim.txt"), "the read was not replayed"


# ---- against Samba, through the proxy (tests/lib/smbproxy.py) ----------------------
#
# The proxy lets the chosen request through and closes both connections
# instead of forwarding its answer: Samba carried it out; the client
# reconnects (a new TCP connection, a new session) and replays it.

def pdu_name(payload, off):
    noff, nlen = struct.unpack_from("<HH", payload, off + 64 + 44)
    return payload[off + noff:off + noff + nlen].decode("utf-16-le", "replace")


def samba_mount(samba, mount_factory, proxy_factory):
    px = proxy_factory(samba)
    return px, mount_factory(samba, options=OPTS, port=px.port)


def test_samba_rename(samba, mount_factory, proxy_factory):
    with open(os.path.join(samba.share_path, "a.txt"), "wb") as f:
        f.write(HELLO)
    px, mnt = samba_mount(samba, mount_factory, proxy_factory)
    px.lose_reply(lambda cmd, p, off: cmd == SMB2_SET_INFO
                  and p[off + 64 + 3] == FileRenameInformation)
    out = within(lambda: os.rename(os.path.join(mnt.path, "a.txt"),
                                   os.path.join(mnt.path, "b.txt")))
    assert px.lost == 1 and px.connections >= 2
    assert not isinstance(out, OSError), f"rename failed: {out}"
    assert any(c == SMB2_CREATE and f & FLAGS_REPLAY for c, f in px.requests)
    assert sorted(os.listdir(samba.share_path)) == ["b.txt"]


def test_samba_exclusive_create(samba, mount_factory, proxy_factory):
    """O_CREAT|O_EXCL through a lost reply, against Samba: the replay
    carries the CreateGuid and the replay flag on the new session; what the
    user sees is whatever Samba makes of it, read by our rules: success if
    Samba answers with the open the first try made (3.3.5.9.10), else
    EEXIST and the log line.  Samba 4.22.6 answers a replay on a new
    connection and session STATUS_OBJECT_NAME_COLLISION (it does not know
    the replay by its CreateGuid there), so: EEXIST."""
    px, mnt = samba_mount(samba, mount_factory, proxy_factory)
    px.lose_reply(lambda cmd, p, off: cmd == SMB2_CREATE and pdu_name(p, off) == "new.txt"
                  and struct.unpack_from("<I", p, off + 64 + 36)[0] == FILE_CREATE)
    path = os.path.join(mnt.path, "new.txt")
    out = within(lambda: os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)))
    assert px.lost == 1 and px.connections >= 2
    replayed = [(c, f) for c, f in px.requests if c == SMB2_CREATE and f & FLAGS_REPLAY]
    assert replayed, "the create was not replayed"
    print(f"Samba's answer to the replayed exclusive create: {out!r}")
    if isinstance(out, OSError):
        assert out.errno == errno.EEXIST, out
        assert re.search(r"new\.txt.*reply was lost", mnt.log_text()), mnt.log_text()[-3000:]
    assert os.path.exists(os.path.join(samba.share_path, "new.txt"))


@pytest.mark.xfail(strict=True, reason="Samba 4.22 refuses the durable reconnect of a handle "
                   "that holds a byte-range lock (vfs_default_durable_reconnect: "
                   "NT_STATUS_NOT_SUPPORTED): reopened by path, the replay meets the lock "
                   "the first try took on the old open")
def test_samba_lock(samba, mount_factory, proxy_factory):
    """flock(LOCK_EX|LOCK_NB) through a lost reply, against Samba: the
    replay carries the first's LockSequence, but after a reconnect it goes
    to a handle opened again by path (EWOULDBLOCK).  On another channel of
    the same session (multichannel) the open is the same and the sequence
    would be known; not tested here."""
    with open(os.path.join(samba.share_path, "l.txt"), "wb") as f:
        f.write(HELLO)
    os.chmod(os.path.join(samba.share_path, "l.txt"), 0o666)
    px, mnt = samba_mount(samba, mount_factory, proxy_factory)
    fd = os.open(os.path.join(mnt.path, "l.txt"), os.O_RDWR)
    try:
        px.lose_reply(lambda cmd, p, off: cmd == SMB2_LOCK)
        out = within(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
        assert px.lost == 1 and px.connections >= 2
        assert not isinstance(out, OSError), f"lock failed: {out}"
    finally:
        os.close(fd)
