"""Two mounts (two daemons, two sessions) of one share: what one writes the
other sees - after close under cache=strict, at once under cache=none - and
a lease break (or, from a server that does not lease, an oplock break) on
one drops the other's cached pages and attributes.  Attribute caching is
long (actimeo=60) on the reading side, so nothing but the break can explain
a fresh read; the daemons' lease counters (smbrdmactl stats) say which
mechanism it was."""

import os
import time

import pytest

from lib.fileops import lease_stats, read_fd, wait_for_lease_breaks, wait_until


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


@pytest.mark.parametrize("grant", ["lease", "oplock"])
def test_break_drops_the_other_mounts_cache(grant, samba_factory, mount_factory):
    srv = samba_factory(extra_global=[] if grant == "lease" else ["smb2 leases = no"])
    a = mount_factory(srv)
    b = mount_factory(srv, options=["actimeo=60", "debug"])
    pa, pb = os.path.join(a.path, "held.txt"), os.path.join(b.path, "held.txt")
    with open(pa, "wb") as f:
        f.write(b"first version")
    fb = os.open(pb, os.O_RDONLY)  # B holds it open, its pages cached
    try:
        assert read_fd(fb) == b"first version"
        assert read_fd(fb) == b"first version"
        before = lease_stats(b)
        # A opens it: the server breaks B's lease or oplock; A writes (same
        # size: only the data tells)
        with open(pa, "r+b") as f:
            f.write(b"SECOND")
        if grant == "lease":
            # Samba breaks R|W|H to R|H at A's open (A waits for B's
            # acknowledgment) and R|H to none at A's write (A does not).
            # A's CLOSE of its first handle may still be on its way when B
            # opens (closes go out in batches): B then gets R|H only, and
            # the one break is A's write's.  (B's lease on the share's
            # root, from its stat of it, was broken by A's create before:
            # Samba waits for that acknowledgment.)
            assert before["leases_granted"] >= 1, before
            wait_for_lease_breaks(b, before["lease_breaks"] + 1)
        else:
            # a level II oplock is broken to none at A's write, and the
            # server does not wait for B (no acknowledgment): A's close(2)
            # may return while the break is still on its way to B
            wait_until(lambda: read_fd(fb) == b"SECONDversion", 20, "B sees A's write")
        assert read_fd(fb) == b"SECONDversion"
        if grant == "oplock":
            after = lease_stats(b)
            assert after == {"leases_granted": 0, "lease_breaks": 0,
                             "lease_break_acks": 0}, after
        # A keeps it open and appends: B, left without read caching,
        # caches nothing of it any more (an oplock goes from level II to
        # none: a break that takes no acknowledgment)
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
    # every acknowledgment B sent was accepted (one of a break from level
    # II to none draws STATUS_INVALID_OPLOCK_PROTOCOL, logged as this)
    assert "break acknowledgment:" not in b.log_text()


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
