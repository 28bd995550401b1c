"""Two mounts (two daemons, two sessions) of one share: what one writes the
other sees - after close under cache=strict, at once under cache=none - and
an oplock break on one drops the other's cached pages and attributes.
Attribute caching is long (actimeo=60) on the reading side, so nothing but
the break can explain a fresh read."""

import os
import time


def read_fd(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    out = b""
    while True:
        b = os.read(fd, 65536)
        if not b:
            return out
        out += b


def test_write_seen_by_the_other_mount_after_close(samba, mount_factory):
    a = mount_factory(samba)
    b = mount_factory(samba, options=["actimeo=60"])
    pa, pb = os.path.join(a.path, "c.txt"), os.path.join(b.path, "c.txt")
    for i in range(5):
        data = b"version %d " % i + b"x" * (100 * i)  # the size changes too
        with open(pa, "wb") as f:
            f.write(data)
        with open(pb, "rb") as f:
            assert f.read() == data, i


def test_oplock_break_drops_the_other_mounts_cache(samba, mount_factory):
    a = mount_factory(samba)
    b = mount_factory(samba, options=["actimeo=60"])
    pa, pb = os.path.join(a.path, "held.txt"), os.path.join(b.path, "held.txt")
    with open(pa, "wb") as f:
        f.write(b"first version")
    fb = os.open(pb, os.O_RDONLY)  # B holds it open, its pages cached
    try:
        assert read_fd(fb) == b"first version"
        assert read_fd(fb) == b"first version"
        # A opens it: the server breaks B's oplock; A writes (same size)
        with open(pa, "r+b") as f:
            f.write(b"SECOND")
        assert read_fd(fb) == b"SECONDversion"
        # A keeps it open and appends: B, left without an oplock, caches
        # nothing of it any more
        fa = os.open(pa, os.O_WRONLY | os.O_APPEND)
        try:
            for tail in (b" +one", b" +two"):
                os.write(fa, tail)
                assert read_fd(fb).endswith(tail)
        finally:
            os.close(fa)
        assert read_fd(fb) == b"SECONDversion +one +two"
        assert os.fstat(fb).st_size == len(b"SECONDversion +one +two")
    finally:
        os.close(fb)


def test_cache_none_sees_writes_at_once(samba, mount_factory):
    a = mount_factory(samba, options=["cache=none"])
    b = mount_factory(samba, options=["cache=none"])
    pa, pb = os.path.join(a.path, "n.txt"), os.path.join(b.path, "n.txt")
    with open(pa, "wb") as f:
        f.write(b"0" * 8192)
    fa = os.open(pa, os.O_WRONLY)
    fb = os.open(pb, os.O_RDONLY)
    try:
        for i in range(3):
            stamp = b"%d:%f" % (i, time.time())
            os.pwrite(fa, stamp, 100)  # A does not close
            assert os.pread(fb, len(stamp), 100) == stamp
    finally:
        os.close(fa)
        os.close(fb)
