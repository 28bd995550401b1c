"""Issue 21, write-only opens: a file opened O_WRONLY (cp, tar x, git's new
objects) skips the page cache, so the kernel neither copies each page nor
asks the daemon for security.capability before each write (FUSE never
caches that it is missing); the writes are still written behind under a
W lease.  Other opens of the file on the mount keep reading what it wrote:
the kernel drops the cached pages of a range before a direct write to it.
The daemon relies on that from FUSE 7.39 (Linux 6.6) on, a conservative
bound; before it, every open keeps the page cache."""

import mmap
import os
import re

import pytest

CHUNK = 128 << 10


def _fuse_minor(m):
    found = re.search(r"FUSE 7\.(\d+),", m.log_text())
    assert found, m.log_text()[-2000:]
    return int(found.group(1))


def _ops(m, op):
    return len(re.findall(rf"opcode: {op} ", m.log_text()))


@pytest.fixture
def m(samba, mount_factory):
    mount = mount_factory(samba, options=["debug"], extra_args=["-d"])
    if _fuse_minor(mount) < 39:
        pytest.skip("this kernel's FUSE is older than 7.39 (Linux 6.6): the daemon keeps the "
                    "page cache for write-only opens there, so there is nothing to test")
    return mount


def _write_through(m, name, flags, data):
    fd = os.open(os.path.join(m.path, name), flags | os.O_CREAT, 0o644)
    try:
        before = _ops(m, "GETXATTR")
        for off in range(0, len(data), CHUNK):
            os.pwrite(fd, data[off:off + CHUNK], off)
        return _ops(m, "GETXATTR") - before
    finally:
        os.close(fd)


def test_write_only_writes_ask_nothing_more(samba, m):
    """32 writes of 128 KiB: through O_RDWR the kernel asks for
    security.capability before each (the control: the count is seen);
    through O_WRONLY never.  Both files land whole."""
    data = os.urandom(32 * CHUNK)
    rdwr = _write_through(m, "rw.bin", os.O_RDWR, data)
    wronly = _write_through(m, "wo.bin", os.O_WRONLY, data)
    assert rdwr >= 16, rdwr
    assert wronly == 0, wronly
    for name in ("rw.bin", "wo.bin"):
        with open(os.path.join(samba.share_path, name), "rb") as f:
            assert f.read() == data, name


def test_other_opens_read_what_a_write_only_open_wrote(samba, m):
    """A reader's cached pages do not outlive a write-only open's write to
    their range, while both are open and after; a read-write open maps
    what it wrote."""
    p = os.path.join(m.path, "f")
    with open(p, "wb") as f:
        f.write(b"A" * 100000)
    r = os.open(p, os.O_RDONLY)
    try:
        assert os.pread(r, 100000, 0) == b"A" * 100000  # now cached
        w = os.open(p, os.O_WRONLY)
        try:
            os.pwrite(w, b"B" * 5000, 1000)
            assert os.pread(r, 100000, 0) == b"A" * 1000 + b"B" * 5000 + b"A" * 94000
            os.pwrite(w, b"C" * 10, 200000)
            assert os.fstat(r).st_size == 200010
        finally:
            os.close(w)
        got = os.pread(r, 300000, 0)
        assert len(got) == 200010 and got[1000:6000] == b"B" * 5000
        assert got[6000:200000] == b"A" * 94000 + bytes(100000) and got[-10:] == b"C" * 10
    finally:
        os.close(r)
    w = os.open(p, os.O_WRONLY)
    os.pwrite(w, b"D" * 10, 0)
    os.close(w)
    fd = os.open(p, os.O_RDWR)
    try:
        with mmap.mmap(fd, 0) as mm:
            assert mm[:10] == b"D" * 10
            assert mm[-10:] == b"C" * 10
    finally:
        os.close(fd)
    with open(os.path.join(samba.share_path, "f"), "rb") as f:
        got = f.read()
    assert got[:10] == b"D" * 10 and got[1000:6000] == b"B" * 5000 and got[-10:] == b"C" * 10


def test_append_keeps_the_page_cache(samba, m):
    """O_WRONLY|O_APPEND takes its offset from the size the kernel holds:
    it stays a cached open, and appends land in order."""
    p = os.path.join(m.path, "log")
    for i in range(20):
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"line %d\n" % i)
        os.close(fd)
    want = b"".join(b"line %d\n" % i for i in range(20))
    with open(p, "rb") as f:
        assert f.read() == want
    with open(os.path.join(samba.share_path, "log"), "rb") as f:
        assert f.read() == want
