"""Two handles to one file against ksmbd (issue 19): what ksmbd 6.1 could not serve.

ksmbd as Debian 12 builds it (6.1.192) crashes on any second open of an open file
("list_add corruption" in smb2_open, tests/vm/README.md), so these tests need the 6.12 guest
kernel and skip themselves on 6.1.  Two mounts (two daemons, two SMB sessions) of the share
``posix`` (tests/vm/lib/guest-init), once with the SMB3 POSIX extensions and once without,
hold handles to the same files: fcntl(2) record locks and flock(2) between them and between
processes of one mount, O_APPEND and O_TRUNC from several handles, unlink of and rename over
an open file.  Every test works in a directory of its own and checks the server's side of
the share.  The host runs the same kinds of tests against Samba (tests/integration/
test_fcntl_locks.py, test_posix_locks.py, test_posix_misc.py, test_posix_open_names.py).
With the POSIX extensions ksmbd 6.12 counts the delete-pending name of an open file whose
names are gone (st_nlink would read 1); the daemon knows it deleted the file's only name and
says 0 (fuse/inode.h smb_inode_mark_last_name_deleted), which the unlink and rename-over tests
check on both mounts' kinds.
"""

import errno
import fcntl
import functools
import os
import sys
import threading
import time

import pytest

from test_posix_ksmbd import _mount
from vmlab import KERNEL_61, umount

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lib import locks  # noqa: E402
from lib.fileops import read_bytes as read, write_bytes as write  # noqa: E402
from lib.locks import getlk, try_flock  # noqa: E402

# a TCG guest: the lock holder gets a minute to exit
Holder = functools.partial(locks.Holder, stop_timeout=60)
can_lock = functools.partial(locks.can_lock, stop_timeout=60)

pytestmark = pytest.mark.skipif(
    KERNEL_61, reason="ksmbd 6.1.192 crashes on a second open of an open file (tests/vm/README.md)")

SHARE = os.environ.get("SMBRDMA_VM_POSIX_SHARE", "posix")
HIDDEN = ".smbrdma-gone-"  # fuse/smbfs.h: where an unlinked open file waits for its close

# The daemon shows st_nlink 0 for an open file whose names are gone.  Without the POSIX
# extensions ksmbd's count (FileStandardInformation, FileAllInformation) already leaves out the
# name of a file that is to be deleted at its last close; with them its count (the SMB2 POSIX
# information's HardLinks, smb2pdu.c find_file_posix_info) is the inode's i_nlink, that name
# included, and the daemon, which deleted the file's only name, corrects it (fuse/ops_node.c
# inode_stat).  Before it did, the two tests below were xfails naming ksmbd's count.

@pytest.fixture(scope="module", params=["posix", "noposix"])
def mounts(request, lab, tmp_path_factory):
    """(first mount, second mount, the share's directory on the server), both mounts with
    the POSIX extensions or both without."""
    srv = os.environ.get("SMBRDMA_VM_POSIX_SHARE_PATH")
    assert srv and os.path.isdir(srv), "guest-init made no POSIX share"
    top = tmp_path_factory.mktemp(f"handles-{request.param}")
    mnts = []
    try:
        for n in ("a", "b"):
            mnt = top / n
            mnt.mkdir()
            _mount(lab, mnt, f"{request.param},actimeo=0")
            mnts.append(mnt)
        yield str(mnts[0]), str(mnts[1]), srv
    finally:
        for mnt in mnts:
            umount(mnt)


@pytest.fixture
def posix(request):
    """Whether this test's mounts use the SMB3 POSIX extensions."""
    return request.node.callspec.params["mounts"] == "posix"


def check_nlink_gone(fd):
    """The open file fd, whose names are all gone, reads st_nlink 0 (with and without the
    POSIX extensions)."""
    n = os.fstat(fd).st_nlink
    assert n == 0, f"st_nlink {n} for an open file whose only name was deleted"


@pytest.fixture
def d(mounts, request):
    """This test's directory, made through the first mount: (path on the first mount, on the
    second, on the server); a 100-byte file "f" in it."""
    a, b, srv = mounts
    name = "h-" + request.node.name.replace("[", "-").replace("]", "")
    os.mkdir(os.path.join(a, name))
    write(os.path.join(a, name, "f"), b"0123456789" * 10)
    return os.path.join(a, name), os.path.join(b, name), os.path.join(srv, name)


def hidden_gone(srv_dir):
    """The kernel releases a file after close(2) has returned: wait for the daemon's CLOSE,
    which removes the hidden name, to reach the server."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if not any(n.startswith(HIDDEN) for n in os.listdir(srv_dir)):
            return True
        time.sleep(0.1)
    return False


def test_second_open_of_an_open_file(d):
    """What crashed ksmbd 6.1: a second open of a file that has an open handle, by the same
    session and by another; all three handles see each other's writes."""
    a, b, s = d
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


def test_fcntl_write_lock_keeps_the_other_client_out_of_its_range_only(d):
    a, b, _ = d
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    other = os.path.join(b, "f")
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)  # bytes 0-9
        assert not can_lock(other, "w", 5, 1)
        assert not can_lock(other, "r", 9, 5)
        assert can_lock(other, "w", 10, 10)  # next to it
        # advisory: the other client reads and writes the locked bytes
        g = os.open(other, os.O_RDWR)
        try:
            assert os.pread(g, 4, 0) == b"0123"
            assert os.pwrite(g, b"AB", 2) == 2
        finally:
            os.close(g)
        fcntl.lockf(fd, fcntl.LOCK_UN, 10, 0)
        assert can_lock(other, "w", 0, 10)
        # to the end of the file (len 0), far beyond its data
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 1 << 40)
        assert not can_lock(other, "w", 1 << 50, 1)
        assert can_lock(other, "w", 0, 1 << 40)
    finally:
        os.close(fd)
    # the close released everything
    assert can_lock(other, "w", 0, 0)


def test_fcntl_read_locks_share_and_a_refused_upgrade_keeps_the_read_lock(d):
    a, b, _ = d
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    other = os.path.join(b, "f")
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 100, 0)
        h = Holder(other, "r", 50, 10)
        try:
            assert h.locked  # read locks share across clients
            assert not can_lock(other, "w", 0, 1)
            with pytest.raises(OSError) as e:  # collides with the other's 50-59
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
            assert e.value.errno in (errno.EAGAIN, errno.EACCES)
            # ... and the read lock is still held
            assert not can_lock(other, "w", 0, 1)
            assert not can_lock(other, "w", 99, 1)
        finally:
            h.stop()
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)  # now the upgrade goes through
        assert not can_lock(other, "r", 50, 1)
        fcntl.lockf(fd, fcntl.LOCK_UN, 20, 40)  # unlock the middle: both ends stay locked
        assert can_lock(other, "w", 40, 20)
        assert not can_lock(other, "r", 39, 1)
        assert not can_lock(other, "r", 60, 1)
    finally:
        os.close(fd)


def test_fcntl_getlk_sees_the_other_client(d):
    a, b, _ = d
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    g = os.open(os.path.join(b, "f"), os.O_RDWR)
    try:
        assert getlk(g, "w", 0, 0)[0] == fcntl.F_UNLCK
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 100)
        t, _, _, pid = getlk(g, "r", 0, 0)
        assert t == fcntl.F_WRLCK and pid == 0  # the server does not say whose
        assert getlk(g, "w", 0, 100)[0] == fcntl.F_UNLCK
        fcntl.lockf(fd, fcntl.LOCK_SH, 100, 100)  # downgrade
        assert getlk(g, "r", 150, 1)[0] == fcntl.F_UNLCK
        assert getlk(g, "w", 150, 1)[0] == fcntl.F_RDLCK
    finally:
        os.close(fd)
        os.close(g)


def test_fcntl_processes_of_one_mount_follow_posix(d):
    a, b, _ = d
    path = os.path.join(a, "f")
    h = Holder(path, "w", 0, 10)
    fd = os.open(path, os.O_RDWR)
    try:
        assert h.locked
        # another owner on the same mount is kept out, and F_GETLK names it
        with pytest.raises(OSError):
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 5)
        assert getlk(fd, "w", 0, 0) == (fcntl.F_WRLCK, 0, 10, h.pid)
        # our own locks never conflict with each other, over two descriptors
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 10)
        fd2 = os.open(path, os.O_RDWR)
        fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 20)  # bytes 20-24
        assert not can_lock(os.path.join(b, "f"), "w", 15, 1)
        # POSIX: closing any descriptor of the file drops all our locks on it
        os.close(fd2)
        assert can_lock(os.path.join(b, "f"), "w", 10, 20)
        assert not can_lock(os.path.join(b, "f"), "w", 0, 10)  # the holder's
    finally:
        h.stop()
        os.close(fd)
    # the holder's exit released its lock on the server
    assert can_lock(os.path.join(b, "f"), "w", 0, 0)


def test_fcntl_setlkw_waits_for_the_other_client(d):
    a, b, _ = d
    h = Holder(os.path.join(b, "f"), "w", 0, 10)
    fd = os.open(os.path.join(a, "f"), os.O_RDWR)
    got = threading.Event()

    def waiter():
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 5)  # F_SETLKW
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


def test_flock_exclusive_and_shared_across_mounts(d):
    a, b, _ = d
    fa = os.open(os.path.join(a, "f"), os.O_RDWR)
    fb = os.open(os.path.join(b, "f"), os.O_RDWR)
    try:
        fcntl.flock(fa, fcntl.LOCK_EX)
        assert not try_flock(fb, fcntl.LOCK_EX)
        assert not try_flock(fb, fcntl.LOCK_SH)
        # advisory: the other client still reads and writes
        assert os.pread(fb, 10, 0) == b"0123456789"
        assert os.pwrite(fb, b"AB", 0) == 2
        fcntl.flock(fa, fcntl.LOCK_UN)
        assert try_flock(fb, fcntl.LOCK_EX)
        fcntl.flock(fb, fcntl.LOCK_UN)
        # shared locks coexist, and keep an exclusive one out
        fcntl.flock(fa, fcntl.LOCK_SH)
        assert try_flock(fb, fcntl.LOCK_SH)
        assert not try_flock(fb, fcntl.LOCK_EX)
        fcntl.flock(fa, fcntl.LOCK_UN)
        assert try_flock(fb, fcntl.LOCK_EX)
    finally:
        os.close(fa)
        os.close(fb)


def test_flock_blocking_waits_and_close_releases(d):
    a, b, _ = d
    fa = os.open(os.path.join(a, "f"), os.O_RDWR)
    fa2 = os.open(os.path.join(a, "f"), os.O_RDWR)
    fb = os.open(os.path.join(b, "f"), os.O_RDWR)
    got = []
    try:
        fcntl.flock(fa, fcntl.LOCK_EX)
        # two opens on one mount are two holders, as on a local disk
        assert not try_flock(fa2, fcntl.LOCK_EX)

        def waiter():
            t0 = time.monotonic()
            fcntl.flock(fb, fcntl.LOCK_EX)
            got.append(time.monotonic() - t0)
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        time.sleep(2.0)
        assert not got, "the other client's flock did not wait"
        os.close(fa)  # the lock goes with the CLOSE, a little after close(2) returns
        fa = None
        t.join(60)
        assert got and got[0] >= 1.9, got
    finally:
        for fd in (fa, fa2, fb):
            if fd is not None:
                os.close(fd)


def test_o_append_across_handles_and_mounts(d):
    """Each O_APPEND write lands at the end as the server has it, when two handles of one
    mount and a second mount take turns (close-to-open)."""
    a, b, s = d
    pa, pb = os.path.join(a, "log"), os.path.join(b, "log")
    write(pa, b"A1.")
    f1 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    f2 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(f1, b"A2.")
        os.write(f2, b"A3.")
        os.lseek(f1, 0, os.SEEK_SET)  # O_APPEND ignores the offset
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


def test_o_trunc_with_another_handle_open(d):
    """O_TRUNC empties the file for a handle already open on it, on this mount and on the
    other one, and on the server."""
    a, b, s = d
    pa, pb = os.path.join(a, "t"), os.path.join(b, "t")
    write(pa, b"x" * 10000)
    held = os.open(pa, os.O_RDONLY)
    other = os.open(pb, os.O_RDONLY)
    try:
        assert len(os.read(other, 20000)) == 10000
        os.close(os.open(pa, os.O_WRONLY | os.O_TRUNC))
        assert os.fstat(held).st_size == 0
        assert os.pread(held, 100, 0) == b""
        assert os.path.getsize(os.path.join(s, "t")) == 0
        assert os.fstat(other).st_size == 0
        assert os.stat(pb).st_size == 0
    finally:
        os.close(held)
        os.close(other)
    write(pb, b"0123456789")
    write(pa, b"ab")
    assert read(pb) == b"ab" and read(os.path.join(s, "t")) == b"ab"


def test_unlink_open_file(d, posix):
    """The name goes at once, the data stays readable and writable through the descriptor
    (which reads st_nlink 0), the name can be made again, and nothing is left on the server
    after the close."""
    a, b, s = d
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
        check_nlink_gone(fd)
        write(p, b"new file")  # the name is free again
        assert read(os.path.join(b, "u.txt")) == b"new file"
        assert sorted(os.listdir(b)) == ["f", "u.txt"]  # hidden names are not listed
    finally:
        os.close(fd)
    assert hidden_gone(s), os.listdir(s)
    assert sorted(os.listdir(s)) == ["f", "u.txt"]
    assert read(os.path.join(s, "u.txt")) == b"new file"


def test_rename_over_an_open_file(d, posix):
    """A rename may replace an open file: the new content is seen by name on both mounts,
    the replaced one through the descriptor, which reads st_nlink 0; nothing is left on the
    server after the close."""
    a, b, s = d
    pa, pb = os.path.join(a, "a.txt"), os.path.join(a, "b.txt")
    write(pa, b"AAA")
    write(pb, b"BBB")
    fd = os.open(pb, os.O_RDONLY)
    try:
        os.rename(pa, pb)
        assert read(pb) == b"AAA" and read(os.path.join(b, "b.txt")) == b"AAA"
        assert not os.path.exists(pa)
        assert os.pread(fd, 10, 0) == b"BBB"  # the replaced file, still open
        check_nlink_gone(fd)
    finally:
        os.close(fd)
    assert hidden_gone(s), os.listdir(s)
    assert sorted(os.listdir(s)) == ["b.txt", "f"]
    assert read(os.path.join(s, "b.txt")) == b"AAA"
