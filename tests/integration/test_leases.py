"""Issue 6, caching by leases, beyond what test_coherence.py shows (a break
drops the other mount's cache): a writer's lease break is acknowledged
once its data is on the server, and the opens of one inode share one
lease.  The daemons' lease counters (smbrdmactl stats --json:
leases_granted, lease_breaks, lease_break_acks) show that a lease was the
mechanism."""

import os

from lib.fileops import lease_stats as stats
from lib.fileops import read_fd, wait_for_lease_breaks


def test_lease_break_acknowledged_after_the_writer_flushed(samba, mount_factory):
    """A holds the file open for writing under a R|W|H lease; B's open
    breaks W (and A acknowledges, after its cache is settled): B sees all
    A wrote, and what A writes while B holds it open too."""
    a = mount_factory(samba)
    b = mount_factory(samba, options=["actimeo=60"])
    pa, pb = os.path.join(a.path, "written.txt"), os.path.join(b.path, "written.txt")
    fa = os.open(pa, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fa, b"A" * 5000)
        assert read_fd(fa) == b"A" * 5000  # A reads its own file from the cache
        s = stats(a)
        assert s["leases_granted"] >= 1 and s["lease_breaks"] == 0, s
        with open(pb, "rb") as f:
            assert f.read() == b"A" * 5000
        s = stats(a)
        assert s["lease_breaks"] >= 1, s
        assert s["lease_break_acks"] >= 1, s  # the server wanted it and took it
        # both hold it now: A's writes still reach B
        fb = os.open(pb, os.O_RDONLY)
        try:
            assert read_fd(fb) == b"A" * 5000
            seen = stats(b)["lease_breaks"]
            os.pwrite(fa, b"B" * 10, 0)
            # the write breaks B's read caching; the server does not wait
            # for that, so neither can the test
            wait_for_lease_breaks(b, seen + 1)
            assert read_fd(fb) == b"B" * 10 + b"A" * 4990
        finally:
            os.close(fb)
    finally:
        os.close(fa)


def test_opens_of_one_inode_share_the_lease(samba, mount_factory):
    """Two opens of one file on one mount carry one lease key: the second
    (even for writing) breaks nothing, and the first keeps its cache."""
    m = mount_factory(samba, options=["actimeo=60"])
    p = os.path.join(m.path, "shared.txt")
    with open(p, "wb") as f:
        f.write(b"0123456789")
    base = stats(m)
    f1 = os.open(p, os.O_RDONLY)
    try:
        assert read_fd(f1) == b"0123456789"
        f2 = os.open(p, os.O_RDWR)
        try:
            os.pwrite(f2, b"ab", 0)
            assert read_fd(f1) == b"ab23456789"
        finally:
            os.close(f2)
    finally:
        os.close(f1)
    s = stats(m)
    assert s["leases_granted"] >= base["leases_granted"] + 2, (base, s)
    assert s["lease_breaks"] == base["lease_breaks"], (base, s)
