"""flock(2) across clients: two mounts (two daemons, two SMB sessions) of
one Samba share contend for whole-file locks through the server, blocking
and non-blocking, shared and exclusive; the locks never get in the way of
reads and writes (they sit on a byte past any data)."""

import fcntl
import os
import threading
import time

from lib.locks import try_flock as try_lock


def test_exclusive_and_shared_across_mounts(two_mounts):
    m1, m2 = two_mounts
    a = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    b = os.open(os.path.join(m2.path, "f"), os.O_RDWR)
    try:
        fcntl.flock(a, fcntl.LOCK_EX)
        assert not try_lock(b, fcntl.LOCK_EX)
        assert not try_lock(b, fcntl.LOCK_SH)
        # advisory: the other client still reads and writes
        assert os.pread(b, 10, 0) == b"0123456789"
        assert os.pwrite(b, b"AB", 0) == 2
        fcntl.flock(a, fcntl.LOCK_UN)
        assert try_lock(b, fcntl.LOCK_EX)
        fcntl.flock(b, fcntl.LOCK_UN)
        # shared locks coexist, and keep an exclusive one out
        fcntl.flock(a, fcntl.LOCK_SH)
        assert try_lock(b, fcntl.LOCK_SH)
        c = os.open(os.path.join(m2.path, "f"), os.O_RDONLY)
        try:
            assert not try_lock(c, fcntl.LOCK_EX)
        finally:
            os.close(c)
        # a conversion: b shared -> exclusive waits for a's shared lock
        assert not try_lock(b, fcntl.LOCK_EX)
        fcntl.flock(a, fcntl.LOCK_UN)
        assert try_lock(b, fcntl.LOCK_EX)
    finally:
        os.close(a)
        os.close(b)


def test_blocking_flock_waits_for_the_holder(two_mounts):
    m1, m2 = two_mounts
    a = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    b = os.open(os.path.join(m2.path, "f"), os.O_RDWR)
    got = []
    try:
        fcntl.flock(a, fcntl.LOCK_EX)

        def waiter():
            t0 = time.monotonic()
            fcntl.flock(b, fcntl.LOCK_EX)
            got.append(time.monotonic() - t0)
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        time.sleep(1.0)
        assert not got, "the second flock did not wait"
        fcntl.flock(a, fcntl.LOCK_UN)
        t.join(30)
        assert got and got[0] >= 0.9, got
    finally:
        os.close(a)
        os.close(b)


def test_close_releases_and_one_mount_contends_with_itself(two_mounts):
    m1, m2 = two_mounts
    p1 = os.path.join(m1.path, "f")
    a, a2 = os.open(p1, os.O_RDWR), os.open(p1, os.O_RDWR)
    b = os.open(os.path.join(m2.path, "f"), os.O_RDWR)
    try:
        fcntl.flock(a, fcntl.LOCK_EX)
        # two opens on one mount are two holders, as on a local disk
        assert not try_lock(a2, fcntl.LOCK_EX)
        os.close(a)
        a = None
        # FUSE releases a file after close(2) has returned (the flock goes
        # with our CLOSE), so the other client gets it very soon, not at once
        deadline = time.monotonic() + 10
        while not try_lock(b, fcntl.LOCK_EX):
            assert time.monotonic() < deadline, "the lock outlived the close by 10 s"
            time.sleep(0.05)
    finally:
        for fd in (a, a2, b):
            if fd is not None:
                os.close(fd)
