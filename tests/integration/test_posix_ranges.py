"""copy_file_range (server-side copy), fallocate (punch hole, zero range,
plain) and lseek SEEK_DATA / SEEK_HOLE on the mount, against the private
Samba, checked on the share's disk (whose tmpfs keeps holes)."""

import errno
import hashlib
import os

from lib.fileops import fallocate
from test_smbrdmactl import ctl_json

MIB = 1 << 20


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_copy_file_range_is_done_by_the_server(samba, mount_factory):
    m = mount_factory(samba)
    data = os.urandom(20 * MIB + 12345)  # more than one 16-chunk request, a tail
    src, dst = os.path.join(m.path, "src.bin"), os.path.join(m.path, "dst.bin")
    with open(src, "wb") as f:
        f.write(data)
    sent0 = sum(c["bytes_sent"] for c in ctl_json("stats", m.path)["channels"])
    fi, fo = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        copied = 0
        while copied < len(data):
            n = os.copy_file_range(fi, fo, len(data) - copied, copied, copied)
            assert n > 0, n
            copied += n
        # at the end: 0, not an error
        assert os.copy_file_range(fi, fo, 100, len(data), len(data)) == 0
        # into the middle of the same file, from an offset
        assert os.copy_file_range(fi, fo, MIB, 3 * MIB, 5 * MIB) == MIB
    finally:
        os.close(fi)
        os.close(fo)
    want = bytearray(data)
    want[5 * MIB:6 * MIB] = data[3 * MIB:4 * MIB]
    assert sha(os.path.join(samba.share_path, "dst.bin")) == hashlib.sha256(want).hexdigest()
    # the data did not pass through the client: far fewer bytes sent than copied
    sent = sum(c["bytes_sent"] for c in ctl_json("stats", m.path)["channels"]) - sent0
    assert sent < MIB, f"{sent} bytes sent for a {len(data) + MIB}-byte server-side copy"
    with open(dst, "rb") as f:
        assert f.read() == bytes(want)


def test_fallocate_punch_zero_and_extend(samba, mount_factory):
    m = mount_factory(samba, options=["actimeo=0"])
    p = os.path.join(m.path, "f.bin")
    data = os.urandom(4 * MIB)
    with open(p, "wb") as f:
        f.write(data)
    fd = os.open(p, os.O_RDWR)
    try:
        punch = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE

        def falloc(mode, off, length):
            fallocate(fd, mode, off, length)
        falloc(punch, MIB, MIB)
        falloc(0x10, 3 * MIB, 4096)           # FALLOC_FL_ZERO_RANGE
        falloc(0, 0, 6 * MIB)                 # plain: extends the size
        falloc(0x01, 0, 8 * MIB)              # KEEP_SIZE: no change of size
        try:
            falloc(0x02, 0, 4096)             # PUNCH_HOLE without KEEP_SIZE
            raise AssertionError("punch without keep-size worked")
        except OSError as e:
            assert e.errno == errno.EOPNOTSUPP
    finally:
        os.close(fd)
    want = bytearray(data)
    want[MIB:2 * MIB] = bytes(MIB)
    want[3 * MIB:3 * MIB + 4096] = bytes(4096)
    want += bytes(2 * MIB)
    disk = os.path.join(samba.share_path, "f.bin")
    assert os.path.getsize(disk) == 6 * MIB
    with open(disk, "rb") as f:
        assert f.read() == bytes(want)
    with open(p, "rb") as f:
        assert f.read() == bytes(want)
    # the punched MiB is a hole on the server's disk
    assert os.stat(disk).st_blocks * 512 <= 5 * MIB + 64 * 1024


def test_seek_data_and_hole(samba, mount_factory):
    """Samba reports holes of sparse files (Windows semantics: a file not
    marked sparse is all data), so the holes are punched through the mount,
    which marks the file sparse: data at [0, 4k) and [3M, 3M+4k)."""
    m = mount_factory(samba)
    p = os.path.join(m.path, "sparse.bin")
    with open(p, "wb") as f:
        f.write(os.urandom(5 * MIB))
    fd = os.open(p, os.O_RDWR)
    try:
        fallocate(fd, 0x03, 4096, 3 * MIB - 4096)
        fallocate(fd, 0x03, 3 * MIB + 4096, 2 * MIB - 4096)
        assert os.lseek(fd, 0, os.SEEK_DATA) == 0
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        assert 4096 <= hole <= MIB, hole
        assert os.lseek(fd, hole, os.SEEK_DATA) == 3 * MIB
        h2 = os.lseek(fd, 3 * MIB, os.SEEK_HOLE)
        assert 3 * MIB + 4096 <= h2 <= 4 * MIB, h2
        # the tail is a hole up to the end; no data past it
        assert os.lseek(fd, 4 * MIB + 10, os.SEEK_HOLE) == 4 * MIB + 10
        for off in (4 * MIB, 5 * MIB, 6 * MIB):
            try:
                os.lseek(fd, off, os.SEEK_DATA)
                raise AssertionError(f"SEEK_DATA from {off} found data")
            except OSError as e:
                assert e.errno == errno.ENXIO
        assert os.lseek(fd, 0, os.SEEK_END) == 5 * MIB
    finally:
        os.close(fd)
    # and a file never made sparse is all data, as on Windows
    q = os.path.join(m.path, "dense.bin")
    with open(q, "wb") as f:
        f.write(bytes(MIB))
    fd = os.open(q, os.O_RDONLY)
    try:
        assert os.lseek(fd, 10, os.SEEK_DATA) == 10
        assert os.lseek(fd, 10, os.SEEK_HOLE) == MIB
    finally:
        os.close(fd)
