"""Operations and open handles with the SMB3 POSIX extensions against Samba 4.22 (issue 19).

test_posix_samba.py covers what the extensions change in metadata; this module runs what the
guest's ksmbd tests run on a POSIX mount (tests/vm/guest/test_posix_ops_ksmbd.py and
test_posix_handles_ksmbd.py), here on a private Samba with `smb3 unix extensions = yes` and
every CREATE a POSIX one: extended attributes, fallocate, SEEK_DATA/SEEK_HOLE,
copy_file_range, access, O_EXCL and O_TRUNC; and, what ksmbd 6.1 could not serve, two handles
to one file from one mount and from two (two daemons, two sessions, both `posix`): a second
open, fcntl(2) record locks and flock(2) between them, O_APPEND from several handles, unlink
of and rename over an open file (the POSIX semantics the mount keeps with a hidden name).
Every test works in a directory of its own and checks the server's side of the share.
"""

import errno
import fcntl
import functools
import os
import threading
import time

import pytest

from lib import locks
from lib.fileops import fallocate
from lib.fileops import read_bytes as read, write_bytes as write
from lib.locks import getlk, try_flock

FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
SEEK_DATA, SEEK_HOLE = 3, 4
# as in the guest's twin of these tests: the lock holder gets a minute to exit
Holder = functools.partial(locks.Holder, stop_timeout=60)
can_lock = functools.partial(locks.can_lock, stop_timeout=60)
MIB = 1 << 20
HIDDEN = ".smbrdma-gone-"  # fuse/smbfs.h: where an unlinked open file waits for its close

@pytest.fixture
def srv(samba_factory):
    return samba_factory(posix=True)


@pytest.fixture
def mounts(srv, mount_factory):
    """Two POSIX mounts of the share; a directory with a 100-byte file "f" in it:
    (its path on the first mount, on the second, on the server)."""
    a = mount_factory(srv, options=["posix", "actimeo=0"])
    b = mount_factory(srv, options=["posix", "actimeo=0"])
    for m in (a, b):
        assert "SMB3 POSIX extensions in use" in m.log_text()
    os.mkdir(os.path.join(a.path, "d"))
    write(os.path.join(a.path, "d", "f"), b"0123456789" * 10)
    return (os.path.join(a.path, "d"), os.path.join(b.path, "d"),
            os.path.join(srv.share_path, "d"))


def hidden_gone(srv_dir):
    """The kernel releases a file after close(2) returns: wait for the daemon's CLOSE."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if not any(n.startswith(HIDDEN) for n in os.listdir(srv_dir)):
            return True
        time.sleep(0.1)
    return False


# ---- operations (test_posix_ops_ksmbd.py) ----------------------------------------------


def test_xattrs(mounts):
    """user.* attributes are SMB EAs, which Samba keeps as user.* xattrs of the file on its
    share (this host's tmpfs holds them)."""
    a, _, s = mounts
    f = os.path.join(a, "xa")
    write(f, b"x")
    os.setxattr(os.path.join(s, "xa"), "user.probe", b"1")  # the share holds user xattrs
    os.removexattr(os.path.join(s, "xa"), "user.probe")
    os.setxattr(f, "user.smbrdma", b"value")
    assert os.getxattr(os.path.join(s, "xa"), "user.smbrdma") == b"value"
    assert os.getxattr(f, "user.smbrdma") == b"value"
    assert "user.smbrdma" in os.listxattr(f)
    os.removexattr(f, "user.smbrdma")
    assert "user.smbrdma" not in os.listxattr(os.path.join(s, "xa"))
    assert "user.smbrdma" not in os.listxattr(f)


def test_fallocate_and_punch_hole(mounts):
    a, _, s = mounts
    f = os.path.join(a, "fa")
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.posix_fallocate(fd, 0, 4 * MIB)
        assert os.fstat(fd).st_size == 4 * MIB
        os.pwrite(fd, b"\xaa" * (4 * MIB), 0)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MIB, MIB)
        assert os.pread(fd, 16, MIB + 4096) == bytes(16)
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 * MIB, MIB)
        assert os.fstat(fd).st_size == 4 * MIB
    finally:
        os.close(fd)
    data = read(os.path.join(s, "fa"))
    assert len(data) == 4 * MIB
    assert data[:MIB] == b"\xaa" * MIB and data[MIB:2 * MIB] == bytes(MIB)
    assert data[2 * MIB:] == b"\xaa" * (2 * MIB)


def test_seek_data_and_hole(mounts):
    a, _, s = mounts
    fd = os.open(os.path.join(a, "sparse"), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"x" * 65536, 0)
        os.pwrite(fd, b"y" * 65536, 8 * MIB)
        os.fsync(fd)
        assert os.stat(os.path.join(s, "sparse")).st_blocks * 512 < 4 * MIB
        hole = os.lseek(fd, 0, SEEK_HOLE)
        assert 65536 <= hole <= 8 * MIB, hole
        data = os.lseek(fd, hole, SEEK_DATA)
        assert hole < data <= 8 * MIB, (hole, data)
        assert os.lseek(fd, 8 * MIB + 100, SEEK_HOLE) == 8 * MIB + 65536
        for whence in (SEEK_DATA, SEEK_HOLE):
            with pytest.raises(OSError) as e:
                os.lseek(fd, 8 * MIB + 65536, whence)
            assert e.value.errno == errno.ENXIO
    finally:
        os.close(fd)


def test_copy_file_range(mounts):
    a, _, s = mounts
    payload = os.urandom(3 * MIB + 123)
    write(os.path.join(a, "src"), payload)
    fi = os.open(os.path.join(a, "src"), os.O_RDONLY)
    fo = os.open(os.path.join(a, "dst"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        done = 0
        while done < len(payload):
            n = os.copy_file_range(fi, fo, len(payload) - done, done, done)
            assert n > 0
            done += n
    finally:
        os.close(fi)
        os.close(fo)
    assert read(os.path.join(s, "dst")) == payload


def test_access_and_fsyncdir(mounts):
    a, _, _ = mounts
    f = os.path.join(a, "acc")
    open(f, "w").close()
    os.chmod(f, 0o644)
    assert os.access(f, os.R_OK | os.W_OK) and not os.access(f, os.X_OK)
    os.chmod(f, 0o755)
    assert os.access(f, os.X_OK)
    assert not os.access(os.path.join(a, "missing"), os.F_OK)
    fd = os.open(a, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_o_excl_and_o_trunc(mounts):
    a, _, s = mounts
    p = os.path.join(a, "flags")
    os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    with pytest.raises(FileExistsError):
        os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    write(p, b"0123456789", "ab")
    write(p, b"abc", "ab")
    assert read(os.path.join(s, "flags")) == b"0123456789abc"
    os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))
    assert os.stat(os.path.join(s, "flags")).st_size == 0 and os.stat(p).st_size == 0


def test_the_posix_sequence_matches_a_local_disk(mounts, tmp_path):
    """mkdir, renames (over a file, of a directory), unlink, rmdir, the refusals, truncate
    both ways, O_TRUNC, appends, touch -d and ls -l give what they give on a local disk
    (test_basic.py runs the same on a mount without posix)."""
    from lib.fileops import compare_with_local
    a, _, _ = mounts
    local = tmp_path / "local"
    local.mkdir()
    os.mkdir(os.path.join(a, "seq"))
    assert compare_with_local(os.path.join(a, "seq"), str(local)) == []


# ---- two handles (test_posix_handles_ksmbd.py) ----------------------------------------


def test_second_open_of_an_open_file(mounts):
    a, b, s = mounts
    f1 = os.open(os.path.join(a, "f"), os.O_RDWR)
    try:
        f2 = os.open(os.path.join(a, "f"), os.O_RDWR)
        f3 = os.open(os.path.join(b, "f"), os.O_RDWR)
        try:
            os.pwrite(f1, b"AA", 0)
            os.fsync(f1)
            assert os.pread(f2, 4, 0) == b"AA23"
            os.pwrite(f3, b"BB", 2)
            os.fsync(f3)
            assert os.pread(f1, 6, 0) == b"AABB45"
        finally:
            os.close(f2)
            os.close(f3)
    finally:
        os.close(f1)
    assert read(os.path.join(s, "f"))[:6] == b"AABB45"


def test_fcntl_locks_between_mounts(mounts):
    a, b, _ = mounts
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    other = os.path.join(b, "f")
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
        assert not can_lock(other, "w", 5, 1)
        assert not can_lock(other, "r", 9, 5)
        assert can_lock(other, "w", 10, 10)
        g = os.open(other, os.O_RDWR)  # advisory: the other client reads and writes
        try:
            assert os.pread(g, 4, 0) == b"0123"
            assert os.pwrite(g, b"AB", 2) == 2
            t, _, _, pid = getlk(g, "r", 0, 0)
            assert t == fcntl.F_WRLCK and pid == 0
        finally:
            os.close(g)
        fcntl.lockf(fd, fcntl.LOCK_UN, 10, 0)
        assert can_lock(other, "w", 0, 10)
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 100, 0)
        h = Holder(other, "r", 50, 10)
        try:
            assert h.locked  # read locks share across clients
            with pytest.raises(OSError) as e:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
            assert e.value.errno in (errno.EAGAIN, errno.EACCES)
            assert not can_lock(other, "w", 99, 1)  # the read lock is still held
        finally:
            h.stop()
    finally:
        os.close(fd)
    assert can_lock(other, "w", 0, 0)


def test_fcntl_setlkw_waits_for_the_other_mount(mounts):
    a, b, _ = mounts
    h = Holder(os.path.join(b, "f"), "w", 0, 10)
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    got = threading.Event()

    def waiter():
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 5)
        got.set()

    try:
        assert h.locked
        threading.Thread(target=waiter, daemon=True).start()
        assert not got.wait(2.0), "F_SETLKW did not wait for the other client's lock"
        h.stop()
        assert got.wait(60), "F_SETLKW was not granted after the other client let go"
        assert not can_lock(os.path.join(b, "f"), "w", 5, 1)
    finally:
        h.stop()
        os.close(fd)


def test_flock_across_mounts_and_handles(mounts):
    a, b, _ = mounts
    fa = os.open(os.path.join(a, "f"), os.O_RDWR)
    fa2 = os.open(os.path.join(a, "f"), os.O_RDWR)
    fb = os.open(os.path.join(b, "f"), os.O_RDWR)
    try:
        fcntl.flock(fa, fcntl.LOCK_EX)
        assert not try_flock(fa2, fcntl.LOCK_EX)  # two opens are two holders
        assert not try_flock(fb, fcntl.LOCK_SH)
        assert os.pread(fb, 10, 0) == b"0123456789"  # advisory
        fcntl.flock(fa, fcntl.LOCK_UN)
        assert try_flock(fb, fcntl.LOCK_EX)
        fcntl.flock(fb, fcntl.LOCK_UN)
        fcntl.flock(fa, fcntl.LOCK_SH)
        assert try_flock(fb, fcntl.LOCK_SH)
        assert not try_flock(fa2, fcntl.LOCK_EX)
    finally:
        for fd in (fa, fa2, fb):
            os.close(fd)


def test_o_append_across_handles_and_mounts(mounts):
    a, b, s = mounts
    pa, pb = os.path.join(a, "log"), os.path.join(b, "log")
    write(pa, b"A1.")
    f1 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    f2 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(f1, b"A2.")
        os.write(f2, b"A3.")
        os.lseek(f1, 0, os.SEEK_SET)
        os.write(f1, b"A4.")
    finally:
        os.close(f1)
        os.close(f2)
    write(pb, b"B1.", "ab")
    write(pa, b"A5.", "ab")
    write(pb, b"B2.", "ab")
    want = b"A1.A2.A3.A4.B1.A5.B2."
    assert read(os.path.join(s, "log")) == want
    assert read(pa) == want and read(pb) == want


def test_o_trunc_with_another_handle_open(mounts):
    a, b, s = mounts
    pa, pb = os.path.join(a, "t"), os.path.join(b, "t")
    write(pa, b"x" * 10000)
    held = os.open(pa, os.O_RDONLY)
    other = os.open(pb, os.O_RDONLY)
    try:
        assert len(os.read(other, 20000)) == 10000
        os.close(os.open(pa, os.O_WRONLY | os.O_TRUNC))
        assert os.fstat(held).st_size == 0 and os.pread(held, 100, 0) == b""
        assert os.path.getsize(os.path.join(s, "t")) == 0
        assert os.fstat(other).st_size == 0 and os.stat(pb).st_size == 0
    finally:
        os.close(held)
        os.close(other)


def test_unlink_open_file(mounts):
    """The name goes at once, the data stays readable and writable through the descriptor,
    the name can be made again, and nothing is left on the server after the close."""
    a, b, s = mounts
    p = os.path.join(a, "u.txt")
    write(p, b"old data")
    fd = os.open(p, os.O_RDWR)
    try:
        os.unlink(p)
        assert sorted(os.listdir(a)) == ["f"]
        assert not os.path.exists(p) and not os.path.exists(os.path.join(b, "u.txt"))
        assert os.pread(fd, 100, 0) == b"old data"
        os.pwrite(fd, b"OLD", 0)
        assert os.pread(fd, 100, 0) == b"OLD data"
        assert os.fstat(fd).st_size == 8
        write(p, b"new file")
        assert read(os.path.join(b, "u.txt")) == b"new file"
        assert sorted(os.listdir(b)) == ["f", "u.txt"]
    finally:
        os.close(fd)
    assert hidden_gone(s), os.listdir(s)
    assert sorted(os.listdir(s)) == ["f", "u.txt"]
    assert read(os.path.join(s, "u.txt")) == b"new file"


def test_rename_over_an_open_file(mounts):
    """A rename may replace an open file (Samba, like Windows, refuses to replace a file with
    an open handle; the mount moves it to a hidden name first): the new content by name on
    both mounts, the old one through the descriptor, st_nlink 0; nothing left after close."""
    a, b, s = mounts
    pa, pb = os.path.join(a, "a.txt"), os.path.join(a, "b.txt")
    write(pa, b"AAA")
    write(pb, b"BBB")
    fd = os.open(pb, os.O_RDONLY)
    other = os.open(os.path.join(b, "b.txt"), os.O_RDONLY)
    try:
        os.rename(pa, pb)
        assert read(pb) == b"AAA" and read(os.path.join(b, "b.txt")) == b"AAA"
        assert not os.path.exists(pa)
        assert os.pread(fd, 10, 0) == b"BBB"
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)
        os.close(other)
    assert hidden_gone(s), os.listdir(s)
    assert sorted(os.listdir(s)) == ["b.txt", "f"]
    assert read(os.path.join(s, "b.txt")) == b"AAA"


def test_reconnect_keeps_the_posix_handles_and_owners(samba_factory, mount_factory):
    """smbrdmactl reconnect: an open descriptor keeps working, opened again by path as a
    POSIX handle (no durable handle is asked for under the extensions: a durable reconnect
    may carry no POSIX create context, [MS-SMB2] 3.3.5.9.12, and Samba 4.22 gives back a
    handle without POSIX semantics otherwise); the POSIX information still comes, and owners
    still map (the SID lookup connects to IPC$ again in the new session)."""
    import pwd
    import re
    from lib.samba import DEFAULT_USER
    from test_smbrdmactl import ctl_json
    # with "posix locking = no", where Samba would grant a durable handle (test_reconnect.py)
    srv = samba_factory(posix=True, extra_global=["posix locking = no"])
    m = mount_factory(srv, options=["posix", "actimeo=0"])
    uid = pwd.getpwnam(DEFAULT_USER).pw_uid
    path = os.path.join(m.path, "c.bin")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o640)
    try:
        os.pwrite(fd, b"one", 0)
        assert os.stat(path).st_uid == uid
        assert ctl_json("reconnect", m.path)["channels_dropped"] == 1
        os.pwrite(fd, b"two", 3)
        assert os.pread(fd, 6, 0) == b"onetwo"
        st = os.fstat(fd)
        assert (st.st_uid, oct(st.st_mode)) == (uid, oct(0o100640))
    finally:
        os.close(fd)
    assert read(os.path.join(srv.share_path, "c.bin")) == b"onetwo"
    os.mkdir(os.path.join(m.path, "after"), 0o700)
    st = os.stat(os.path.join(m.path, "after"))
    sst = os.stat(os.path.join(srv.share_path, "after"))
    assert (st.st_uid, st.st_gid, st.st_mode) == (sst.st_uid, sst.st_gid, sst.st_mode) and \
        st.st_uid == uid
    assert re.search(r"0 handles reopened durably, 1 by path, 0 lost", m.log_text()), \
        m.log_text()[-3000:]


@pytest.mark.parametrize("strict", ["no", "yes"])
def test_rename_of_a_directory_with_an_open_file(samba_factory, mount_factory, strict):
    """A directory moves while a file in it is open, on this mount and on the other one, and
    the descriptors go on writing into the moved file: Samba 4.22 lets POSIX handles do so,
    `strict rename` or not (Windows refuses to rename a directory with open files below)."""
    srv = samba_factory(posix=True, extra_share=[f"strict rename = {strict}"])
    a = mount_factory(srv, options=["posix", "actimeo=0"])
    b = mount_factory(srv, options=["posix", "actimeo=0"])
    os.mkdir(os.path.join(a.path, "d"))
    write(os.path.join(a.path, "d", "f"), b"0123456789")
    fa = os.open(os.path.join(a.path, "d", "f"), os.O_RDWR)
    fb = os.open(os.path.join(b.path, "d", "f"), os.O_RDWR)
    try:
        os.rename(os.path.join(a.path, "d"), os.path.join(a.path, "e"))
        assert os.listdir(srv.share_path) == ["e"]
        os.pwrite(fa, b"A", 0)
        os.fsync(fa)
        os.pwrite(fb, b"B", 1)
        os.fsync(fb)
    finally:
        os.close(fa)
        os.close(fb)
    assert read(os.path.join(srv.share_path, "e", "f")) == b"AB23456789"
    assert read(os.path.join(b.path, "e", "f")) == b"AB23456789"
