"""Issue 21, write-behind: a buffered write(2) under a lease with W is
answered once its WRITE is sent (fuse/wb.h), so `cp` pipelines.  What it
must never do is lose data: another client that opens the file sees every
byte (the lease break waits for the writes in flight), a WRITE that fails
after its write(2) returned is reported by close(2) or fsync(2), and a
connection that dies with writes in flight either replays them after the
reconnect or tells the writer; so do small writes still gathered when
the connection dies.

The daemon logs at unmount how many writes it answered early; each test
checks that write-behind really ran (else it would prove nothing)."""

import errno
import os
import re
import signal
import threading
import time

import pytest

from test_reconnect import DURABLE, _reconnects, _serving_pids
from lib.fileops import request_counts
from test_smbrdmactl import ctl_json

MIB = 1 << 20


def _mount(mount_factory, srv, tmp_path, name, options=()):
    """A mount whose log outlives it (the count is logged at unmount)."""
    d = tmp_path / f"log-{name}"
    d.mkdir()
    return mount_factory(srv, options=list(options), log_dir=str(d))


def _answered_early(m):
    """Stop the mount and return the count it logged."""
    m.stop()
    found = re.findall(r"(\d+) writes were answered before they reached the server",
                       m.log_text())
    assert found, m.log_text()[-2000:]
    return int(found[-1])


def test_other_client_sees_every_byte(samba, mount_factory, tmp_path):
    """A writes 32 MiB in 1 MiB buffered writes and keeps the file open;
    B opens it at once (breaking A's W): B reads all of it, byte for byte,
    since A's acknowledgement of the break waited for its WRITEs."""
    a = _mount(mount_factory, samba, tmp_path, "a")
    b = mount_factory(samba)
    data = os.urandom(32 * MIB)
    fd = os.open(os.path.join(a.path, "f.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, len(data), MIB):
            assert os.pwrite(fd, data[off:off + MIB], off) == MIB
        # no fsync, no close: the writes may still be on their way
        with open(os.path.join(b.path, "f.bin"), "rb") as f:
            assert f.read() == data
        assert os.fstat(fd).st_size == len(data)
    finally:
        os.close(fd)
    with open(os.path.join(samba.share_path, "f.bin"), "rb") as f:
        assert f.read() == data
    assert _answered_early(a) > 0


def test_stat_and_overwrite_while_writes_in_flight(samba, mount_factory, tmp_path):
    """The size the writer sees never falls back while its writes are on
    their way (a stat asks the server, which does not have them yet), and
    an overwrite of a range still in flight lands after it."""
    m = _mount(mount_factory, samba, tmp_path, "m")
    p = os.path.join(m.path, "g.bin")
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(16):
            os.pwrite(fd, bytes([i]) * MIB, i * MIB)
            assert os.stat(p).st_size == (i + 1) * MIB
        os.pwrite(fd, b"Z" * 100, 15 * MIB)  # over a write likely in flight
        os.pwrite(fd, b"end", os.fstat(fd).st_size)  # O_APPEND-like: from st_size
        os.fsync(fd)
    finally:
        os.close(fd)
    with open(os.path.join(samba.share_path, "g.bin"), "rb") as f:
        got = f.read()
    assert len(got) == 16 * MIB + 3
    assert got[15 * MIB:15 * MIB + 100] == b"Z" * 100
    assert got[15 * MIB + 100:16 * MIB] == bytes([15]) * (MIB - 100)
    assert got[:MIB] == b"\0" * MIB and got[-3:] == b"end"
    assert _answered_early(m) > 0


def test_disk_full_is_reported(samba_factory, mount_factory, tmp_path):
    """A share with a few MiB less room than is written behind: the WRITEs
    that fail were answered already, so the error reaches the writer by
    close(2) (or a later write), never silently.  (No fsync: Samba's FLUSH
    fails on a full share by itself.)"""
    srv = samba_factory(tmpfs_size="24m")
    m = _mount(mount_factory, srv, tmp_path, "m")
    st = os.statvfs(srv.share_path)
    size = (st.f_bavail * st.f_frsize // MIB + 3) * MIB
    fd = os.open(os.path.join(m.path, "full.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
    err = None
    try:
        for off in range(0, size, MIB):
            n = os.pwrite(fd, b"x" * MIB, off)
            if n != MIB:  # the kernel split it and a part failed
                err = ("short write", n)
                break
    except OSError as e:
        err = ("write", e)
    finally:
        try:
            os.close(fd)
        except OSError as e:
            err = err or ("close", e)
    print("the writer was told:", err)
    assert err is not None, "40 MiB written to a 24 MiB share and nobody was told"
    assert err[0] == "short write" or err[1].errno in (errno.ENOSPC, errno.EIO, errno.EFBIG), err
    assert _answered_early(m) > 0


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "by-path"])
def test_connection_dies_with_writes_in_flight(samba_factory, mount_factory, durable, tmp_path):
    """smbd is stopped while a writer streams buffered writes, so the
    writes answered early pile up unanswered by the server until the
    writer blocks (the table is full); then that smbd is killed.  After
    the reconnect the file on the server is exactly what was written, or
    the writer got an error: never a silent hole."""
    srv = samba_factory(extra_global=DURABLE if durable else [])
    m = _mount(mount_factory, srv, tmp_path, "m", options=["timeout=30"])
    data = os.urandom(64 * MIB)
    p = os.path.join(m.path, "cut.bin")
    done = {"bytes": 0, "error": None}

    def writer():
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for off in range(0, len(data), MIB):
                    os.pwrite(fd, data[off:off + MIB], off)
                    done["bytes"] = off + MIB
            finally:
                os.close(fd)
        except OSError as e:
            done["error"] = e

    # the smbd serving the mount, found before the writer starts (ss takes
    # long enough for the writer to finish meanwhile)
    pids = _serving_pids(srv)
    t = threading.Thread(target=writer)
    t.start()
    while done["bytes"] < 8 * MIB and t.is_alive():
        time.sleep(0.005)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        # the writer fills the table and blocks, in a write held for room
        # or in close(2) waiting for the writes in flight: either way the
        # server owes answers to writes answered early
        last, still = -1, 0
        while still < 10 and t.is_alive():
            time.sleep(0.1)
            still = still + 1 if done["bytes"] == last else 0
            last = done["bytes"]
        assert t.is_alive(), done
        blocked_at = done["bytes"]
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    t.join(timeout=120)
    assert not t.is_alive()
    assert _reconnects(m) >= 1
    if done["error"] is None:
        with open(os.path.join(srv.share_path, "cut.bin"), "rb") as f:
            assert f.read() == data
    else:
        print("the writer was told:", done["error"])
    assert _answered_early(m) * MIB >= blocked_at - 2 * MIB


def _writes(m):
    st = ctl_json("stats", m.path)
    return sum(ch["commands"].get("WRITE", 0) for ch in st["channels"])


def test_small_writes_are_gathered(samba, mount_factory, tmp_path):
    """tar writes in 10 KiB records: 1 MiB of them goes out as a couple of
    WRITEs, not a hundred, and lands whole."""
    m = _mount(mount_factory, samba, tmp_path, "m")
    data = os.urandom(MIB + 5000)
    w0 = _writes(m)
    with open(os.path.join(m.path, "t.bin"), "wb", buffering=0) as f:
        for off in range(0, len(data), 10240):
            f.write(data[off:off + 10240])
    n = _writes(m) - w0
    assert 1 <= n <= 4, f"{n} WRITEs for {len(data) // 10240 + 1} writes of 10 KiB"
    with open(os.path.join(samba.share_path, "t.bin"), "rb") as f:
        assert f.read() == data
    assert _answered_early(m) > 0


def test_gathered_writes_reach_other_readers(samba, mount_factory, tmp_path):
    """Small writes still gathered (the file stays open) reach: another
    mount's open (the break), a read on this mount that misses the page
    cache (a partial page: the READ waits for them), and, left alone, the
    server within a few seconds."""
    a = _mount(mount_factory, samba, tmp_path, "a")
    b = mount_factory(samba)
    fd = os.open(os.path.join(a.path, "s.txt"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"first ")
        os.write(fd, b"second ")
        with open(os.path.join(b.path, "s.txt"), "rb") as f:
            assert f.read() == b"first second "
        os.write(fd, b"third")
        with open(os.path.join(a.path, "s.txt"), "rb") as f:
            assert f.read() == b"first second third"
        os.write(fd, b" fourth")
        srv = os.path.join(samba.share_path, "s.txt")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(srv, "rb") as f:
                if f.read() == b"first second third fourth":
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("a gathered write never left on its own")
    finally:
        os.close(fd)
    assert _answered_early(a) > 0


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "by-path"])
def test_gathered_writes_outlive_a_killed_connection(samba_factory, mount_factory, durable,
                                                     tmp_path):
    """Small writes the mount holds gathered, not yet sent, when the file
    is closed: smbd is stopped first, so the WRITE close(2) sends is not
    answered, and then killed.  After the reconnect the server has every
    byte write(2) accepted, or close(2) reports an error: never a file
    that silently ends early."""
    srv = samba_factory(extra_global=DURABLE if durable else [])
    m = _mount(mount_factory, srv, tmp_path, "m", options=["timeout=30"])
    data = os.urandom(64 * 1024 + 100)
    srv_file = os.path.join(srv.share_path, "g.bin")
    fd = os.open(os.path.join(m.path, "g.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    pids = _serving_pids(srv)  # first: ss is slow, and a gathered write waits 1 s at most
    for off in range(0, len(data), 1000):
        os.write(fd, data[off:off + 1000])
    # the server has not got the last writes: they are gathered
    held = os.path.getsize(srv_file) < len(data)
    done = {}

    def closer():
        try:
            os.close(fd)
            done["error"] = None
        except OSError as e:
            done["error"] = e

    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    t = threading.Thread(target=closer)
    try:
        t.start()
        t.join(timeout=0.5)
        blocked = t.is_alive()  # close(2) waits for the gathered WRITE
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
    t.join(timeout=60)
    assert not t.is_alive()
    assert held and blocked, (held, blocked, "the test proves nothing")
    assert _reconnects(m) >= 1
    if done["error"] is None:
        with open(srv_file, "rb") as f:
            assert f.read() == data
    else:
        print("close(2) reported:", done["error"])
    assert _answered_early(m) > 0


def _settled_counts(m):
    """request_counts() once they stand still (a CLOSE follows close(2))."""
    last = request_counts(m)
    for _ in range(50):
        time.sleep(0.1)
        now = request_counts(m)
        if now == last:
            break
        last = now
    return last


def _delta(before, after):
    cmds = {k: v - before[1].get(k, 0) for k, v in after[1].items()}
    return after[0] - before[0], {k: v for k, v in cmds.items() if v}


T1 = 1_500_000_000 * 10**9 + 1234500  # a multiple of SMB's 100 ns
T2 = 1_600_000_000 * 10**9


def test_times_ride_with_the_gathered_write(samba, mount_factory):
    """tar and cp -p write a small file, then set its times on the open
    descriptor: the times go to the server with the gathered WRITE, in one
    compound on the handle (no open by path), and every client sees them
    after close(2)."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    p = os.path.join(a.path, "t.txt")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        before = _settled_counts(a)
        assert os.write(fd, b"hello, times") == 12
        os.utime(fd, ns=(T2, T1))
        assert os.fstat(fd).st_mtime_ns == T1
        assert os.fstat(fd).st_size == 12
    finally:
        os.close(fd)
    reqs, cmds = _delta(before, _settled_counts(a))
    # WRITE + SET_INFO in one message, then the CLOSE: no CREATE by path
    assert cmds == {"WRITE": 1, "SET_INFO": 1, "CLOSE": 1}, cmds
    assert reqs == 2, (reqs, cmds)
    srv = os.path.join(samba.share_path, "t.txt")
    with open(srv, "rb") as f:
        assert f.read() == b"hello, times"
    assert os.stat(srv).st_mtime_ns == T1
    assert os.stat(os.path.join(b.path, "t.txt")).st_mtime_ns == T1
    assert os.stat(p).st_mtime_ns == T1


def test_write_after_times_is_not_lost(samba, mount_factory):
    """A write after the times were set on a gathered write is a new
    gathered write (the times stay between the two): every byte lands."""
    m = mount_factory(samba)
    p = os.path.join(m.path, "w.txt")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"one ")
        os.utime(fd, ns=(T1, T1))
        os.write(fd, b"two")
    finally:
        os.close(fd)
    with open(os.path.join(samba.share_path, "w.txt"), "rb") as f:
        assert f.read() == b"one two"
    assert os.path.getsize(p) == 7


def test_setattr_by_name_uses_our_open_handle(samba, mount_factory):
    """utime() and truncate() by name while this mount holds the file open
    for writing go through that handle (as cifs.ko does): one SET_INFO,
    no open and close by path, and no break of our own lease on the
    directory."""
    m = mount_factory(samba)
    p = os.path.join(m.path, "n.txt")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"0123456789")
        os.fsync(fd)  # nothing gathered left
        before = _settled_counts(m)
        os.truncate(p, 4)
        os.utime(p, ns=(T1, T1))
        reqs, cmds = _delta(before, _settled_counts(m))
        assert cmds.get("CREATE", 0) == 0 and cmds.get("CLOSE", 0) == 0, cmds
        assert cmds.get("SET_INFO") == 2, cmds
        assert cmds.get("OPLOCK_BREAK", 0) == 0, cmds
    finally:
        os.close(fd)
    srv = os.path.join(samba.share_path, "n.txt")
    with open(srv, "rb") as f:
        assert f.read() == b"0123"
    assert os.stat(srv).st_mtime_ns == T1


def test_mtime_a_stat_showed_is_kept(samba, mount_factory):
    """git checks a file out with write, fstat, close, and keeps the mtime
    fstat showed in its index.  Samba shows the file's old mtime while it
    is open and moves it to the time of the CLOSE (which waits a few ms to
    go with others): the CLOSE must keep the shown time, or a git status
    on a fresh mount finds files changed and reads them all again.  The
    SET_INFO that keeps it rides with the gathered write at close(2), or,
    when the write went before the stat (an fsync), in the CLOSEs'
    compound; a write after the stat lets the server decide again."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    shown = {}
    before = _settled_counts(a)
    for i in range(5):  # the last three: SET_INFO + CLOSE pairs, two compounds
        fd = os.open(os.path.join(a.path, f"g{i}.c"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            assert os.write(fd, b"int x;\n" * (i + 1)) == 7 * (i + 1)
            if i >= 2:
                os.fsync(fd)
            shown[i] = os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
    reqs, cmds = _delta(before, _settled_counts(a))
    assert cmds.get("SET_INFO") == 5, cmds
    # per file a LOOKUP, the CREATE, the WRITE, the fstat; three FLUSHes;
    # three for the CLOSEs (two alone, three pairs)
    assert reqs <= 5 * 4 + 3 + 3, (reqs, cmds)
    for i in range(5):
        assert os.stat(os.path.join(samba.share_path, f"g{i}.c")).st_mtime_ns == shown[i], i
        assert os.stat(os.path.join(b.path, f"g{i}.c")).st_mtime_ns == shown[i], i
        assert os.stat(os.path.join(a.path, f"g{i}.c")).st_mtime_ns == shown[i], i

    # written after the stat: no time kept, the server's stands
    p = os.path.join(a.path, "later.c")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"a")
        os.fstat(fd)
        before = _settled_counts(a)
        os.write(fd, b"b")
    finally:
        os.close(fd)
    reqs, cmds = _delta(before, _settled_counts(a))
    assert cmds.get("SET_INFO", 0) == 0, cmds
    with open(os.path.join(samba.share_path, "later.c"), "rb") as f:
        assert f.read() == b"ab"
    # SMB carries times in 100 ns units
    srv_mtime = os.stat(os.path.join(samba.share_path, "later.c")).st_mtime_ns
    assert os.stat(p).st_mtime_ns // 100 == srv_mtime // 100
