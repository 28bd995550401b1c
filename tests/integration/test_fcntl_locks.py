"""POSIX fcntl(2) record locks across clients: two mounts (two daemons, two
SMB sessions) of one Samba share contend for byte ranges through the
server; processes of one mount follow the POSIX rules among themselves
(owners, read locks shared, conversions, a close releases the process's
locks); F_GETLK reports a lock of the other client; F_SETLKW waits; the
locks are advisory (I/O is never refused); with nobrl they stay in one
mount's kernel."""

import errno
import fcntl
import os
import threading

import pytest

from lib.locks import Holder, can_lock, getlk


def test_write_lock_keeps_the_other_client_out_of_its_range_only(two_mounts):
    m1, m2 = two_mounts
    fd = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    other = os.path.join(m2.path, "f")
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
        assert not can_lock(other, "w", (1 << 50), 1)
        assert can_lock(other, "w", 0, 1 << 40)
    finally:
        os.close(fd)
    # the close released everything
    assert can_lock(other, "w", 0, 0)


def test_read_locks_share_and_a_refused_upgrade_keeps_the_read_lock(two_mounts):
    m1, m2 = two_mounts
    fd = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    other = os.path.join(m2.path, "f")
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 100, 0)
        h = Holder(other, "r", 50, 10)
        try:
            assert h.locked  # read locks share across clients
            assert not can_lock(other, "w", 0, 1)
            # upgrading 0-99 to a write lock collides with the other's 50-59
            with pytest.raises(OSError) as e:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
            assert e.value.errno in (errno.EAGAIN, errno.EACCES)
            # ... and the read lock is still held (retaken after the refusal)
            assert not can_lock(other, "w", 0, 1)
            assert not can_lock(other, "w", 99, 1)
            # a write lock on part of it, outside the other's range: the
            # rest stays read-locked
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
            g = os.open(other, os.O_RDONLY)
            try:
                assert getlk(g, "r", 0, 10)[0] == fcntl.F_WRLCK
            finally:
                os.close(g)
        finally:
            h.stop()
        # now the upgrade goes through
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
        assert not can_lock(other, "r", 50, 1)
        # unlock the middle: both ends stay locked
        fcntl.lockf(fd, fcntl.LOCK_UN, 20, 40)
        assert can_lock(other, "w", 40, 20)
        assert not can_lock(other, "r", 39, 1)
        assert not can_lock(other, "r", 60, 1)
    finally:
        os.close(fd)


def test_getlk_sees_the_other_client(two_mounts):
    m1, m2 = two_mounts
    fd = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    g = os.open(os.path.join(m2.path, "f"), os.O_RDWR)
    try:
        assert getlk(g, "w", 0, 0)[0] == fcntl.F_UNLCK
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 100)
        t, start, length, pid = getlk(g, "r", 0, 0)
        assert t == fcntl.F_WRLCK
        assert pid == 0  # the server does not say whose
        assert getlk(g, "w", 0, 100)[0] == fcntl.F_UNLCK
        fcntl.lockf(fd, fcntl.LOCK_SH, 100, 100)  # downgrade
        assert getlk(g, "r", 150, 1)[0] == fcntl.F_UNLCK
        assert getlk(g, "w", 150, 1)[0] == fcntl.F_RDLCK
        # the probes left nothing behind: m1 can take it all back
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
        assert getlk(g, "r", 0, 1)[0] == fcntl.F_WRLCK
    finally:
        os.close(fd)
        os.close(g)


def test_processes_of_one_mount_follow_posix(two_mounts):
    m1, m2 = two_mounts
    path = os.path.join(m1.path, "f")
    h = Holder(path, "w", 0, 10)
    fd = os.open(path, os.O_RDWR)
    try:
        assert h.locked
        # another owner on the same mount is kept out, and F_GETLK names it
        with pytest.raises(OSError):
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 5)
        t, start, length, pid = getlk(fd, "w", 0, 0)
        assert (t, start, length, pid) == (fcntl.F_WRLCK, 0, 10, h.pid)
        # our own locks never conflict with each other, over two descriptors
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 10)
        fd2 = os.open(path, os.O_RDWR)
        fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 20)  # bytes 20-24
        assert not can_lock(os.path.join(m2.path, "f"), "w", 15, 1)
        # POSIX: closing any descriptor of the file drops all our locks on it
        os.close(fd2)
        assert can_lock(os.path.join(m2.path, "f"), "w", 10, 20)
        assert not can_lock(os.path.join(m2.path, "f"), "w", 0, 10)  # the holder's
    finally:
        h.stop()
        os.close(fd)
    # the holder's exit released its lock on the server
    assert can_lock(os.path.join(m2.path, "f"), "w", 0, 0)


def test_killed_holder_releases(two_mounts):
    m1, m2 = two_mounts
    h = Holder(os.path.join(m1.path, "f"), "w", 0, 0)
    assert h.locked
    assert not can_lock(os.path.join(m2.path, "f"), "r", 5, 1)
    h.p.kill()
    h.p.wait(timeout=30)
    assert can_lock(os.path.join(m2.path, "f"), "w", 0, 0)


def test_setlkw_waits_for_the_other_client(two_mounts):
    m1, m2 = two_mounts
    h = Holder(os.path.join(m2.path, "f"), "w", 0, 10)
    fd = os.open(os.path.join(m1.path, "f"), os.O_RDWR)
    got = threading.Event()

    def waiter():
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 5)  # F_SETLKW
        got.set()

    try:
        assert h.locked
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        assert not got.wait(1.0), "F_SETLKW did not wait for the other client's lock"
        h.stop()
        assert got.wait(30), "F_SETLKW was not granted after the other client let go"
        t.join(5)
        assert not can_lock(os.path.join(m2.path, "f"), "w", 5, 1)
    finally:
        h.stop()
        os.close(fd)


def test_nobrl_keeps_posix_locks_in_the_mount(samba, mount_factory):
    m1 = mount_factory(samba, options=["nobrl"])
    m2 = mount_factory(samba, options=["brl"])  # the default, said
    m3 = mount_factory(samba)
    path = os.path.join(m1.path, "g")
    with open(path, "wb") as f:
        f.write(b"x" * 10)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
        # the kernel keeps it among this mount's processes ...
        assert not can_lock(path, "w", 0, 1)
        # ... and the server never hears of it
        assert can_lock(os.path.join(m2.path, "g"), "w", 0, 0)
    finally:
        os.close(fd)
    # brl: a lock on m2 keeps m3 out, and not m1's processes
    h = Holder(os.path.join(m2.path, "g"), "w", 0, 0)
    try:
        assert h.locked
        assert not can_lock(os.path.join(m3.path, "g"), "r", 0, 1)
        assert can_lock(path, "w", 0, 0)
    finally:
        h.stop()
