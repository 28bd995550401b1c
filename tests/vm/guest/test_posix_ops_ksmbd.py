"""The rest of the FUSE surface against ksmbd with the SMB3 POSIX extensions on (issue 6).

test_posix_ksmbd.py covers what the extensions change (modes, owners, inode numbers, links,
special files); this module runs further operations of issue 6 on the same share
(``posix``, a tmpfs in the guest) through the ``posix`` mount of that module, each test in a
directory of its own, and checks the result on the server's side of the share: extended attributes,
fallocate and punch hole, SEEK_DATA/SEEK_HOLE, copy_file_range, access and fsyncdir,
O_EXCL and O_TRUNC.

Not here: anything that opens a file while another handle to it is open (locks between two
handles, O_APPEND from two handles, rename over and unlink of an open file).  Those are in
test_posix_handles_ksmbd.py, which needs the 6.12 guest kernel: ksmbd as Debian 12 builds it
(6.1.192) crashes in smb2_open on any second open ("list_add corruption", kernel BUG at
lib/list_debug.c:27) and answers nothing more.
"""

import errno
import os
import sys

import pytest

from test_posix_ksmbd import posix  # noqa: F401  (the fixture: one posix mount)

# tests/lib (shared with the integration tests) is not on the guest's path by itself
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lib.fileops import fallocate  # noqa: E402

FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
SEEK_DATA, SEEK_HOLE = 3, 4
MIB = 1 << 20


@pytest.fixture
def d(posix, request):
    """This test's directory: (path on the mount, on the server)."""
    a, srv = posix
    name = request.node.name.replace("[", "-").replace("]", "")
    os.mkdir(os.path.join(a, name))
    return os.path.join(a, name), os.path.join(srv, name)


def test_xattrs(d):
    """user.* attributes are SMB extended attributes, which ksmbd keeps as xattrs of the
    file on its share.  The guest's share is a tmpfs, which in Debian 12's kernel holds no
    user.* xattrs: ksmbd refuses the EA, and setxattr says EOPNOTSUPP, as on that tmpfs
    itself.  Where the share can hold them, the value must be seen on the server and
    through the mount."""
    a, s = d
    f = os.path.join(a, "xa")
    with open(f, "w") as fh:
        fh.write("x")
    try:
        os.setxattr(os.path.join(s, "xa"), "user.probe", b"1")
        os.removexattr(os.path.join(s, "xa"), "user.probe")
    except OSError as probe:
        assert probe.errno == errno.EOPNOTSUPP, probe
        with pytest.raises(OSError) as e:
            os.setxattr(f, "user.smbrdma", b"value")
        assert e.value.errno == errno.EOPNOTSUPP, e.value
        assert [x for x in os.listxattr(f) if x.startswith("user.")] == []
        return
    os.setxattr(f, "user.smbrdma", b"value")
    assert os.getxattr(os.path.join(s, "xa"), "user.smbrdma") == b"value"
    assert os.getxattr(f, "user.smbrdma") == b"value"
    assert "user.smbrdma" in os.listxattr(f)
    os.removexattr(f, "user.smbrdma")
    assert "user.smbrdma" not in os.listxattr(os.path.join(s, "xa"))


def test_fallocate_and_punch_hole(d):
    a, s = d
    f = os.path.join(a, "fa")
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.posix_fallocate(fd, 0, 4 * MIB)
        assert os.fstat(fd).st_size == 4 * MIB
        os.pwrite(fd, b"\xaa" * (4 * MIB), 0)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MIB, MIB)
        assert os.pread(fd, 16, MIB + 4096) == bytes(16)
        # allocation past the end with KEEP_SIZE does not change the size
        fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 * MIB, MIB)
        assert os.fstat(fd).st_size == 4 * MIB
    finally:
        os.close(fd)
    with open(os.path.join(s, "fa"), "rb") as sf:
        data = sf.read()
    assert len(data) == 4 * MIB
    assert data[:MIB] == b"\xaa" * MIB and data[MIB:2 * MIB] == bytes(MIB)
    assert data[2 * MIB:] == b"\xaa" * (2 * MIB)


def test_seek_data_and_hole(d):
    """A file with data at 0 and at 8 MiB and a hole between (tmpfs keeps holes)."""
    a, s = d
    f = os.path.join(a, "sparse")
    fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"x" * 65536, 0)
        os.pwrite(fd, b"y" * 65536, 8 * MIB)
        os.fsync(fd)
        st = os.stat(os.path.join(s, "sparse"))
        assert st.st_blocks * 512 < 4 * MIB, "the server's file has no hole to find"
        hole = os.lseek(fd, 0, SEEK_HOLE)
        assert 65536 <= hole <= 8 * MIB, hole
        data = os.lseek(fd, hole, SEEK_DATA)
        assert hole < data <= 8 * MIB, (hole, data)
        # the end of the file is a hole; at or past it there is nothing to find
        assert os.lseek(fd, 8 * MIB + 100, SEEK_HOLE) == 8 * MIB + 65536
        for whence in (SEEK_DATA, SEEK_HOLE):
            with pytest.raises(OSError) as e:
                os.lseek(fd, 8 * MIB + 65536, whence)
            assert e.value.errno == errno.ENXIO
    finally:
        os.close(fd)


def test_copy_file_range(d):
    a, s = d
    payload = os.urandom(3 * MIB + 123)
    with open(os.path.join(a, "src"), "wb") as f:
        f.write(payload)
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
    with open(os.path.join(s, "dst"), "rb") as f:
        assert f.read() == payload


def test_access_and_fsyncdir(d):
    a, _ = d
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


def test_o_excl_and_o_trunc(d):
    """One handle at a time (two: test_posix_handles_ksmbd.py)."""
    a, s = d
    p = os.path.join(a, "flags")
    os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    with pytest.raises(FileExistsError):
        os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    with open(p, "ab") as f:
        f.write(b"0123456789")
    with open(p, "ab") as f:
        f.write(b"abc")
    with open(os.path.join(s, "flags"), "rb") as f:
        assert f.read() == b"0123456789abc"
    os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))
    assert os.stat(os.path.join(s, "flags")).st_size == 0
    assert os.stat(p).st_size == 0
