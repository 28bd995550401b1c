"""fcntl(2) record-lock and flock(2) probes shared by the host's and the guest's lock tests
(tests/integration/test_fcntl_locks.py, test_posix_samba_ops.py,
tests/vm/guest/test_posix_handles_ksmbd.py): another process as another lock owner, F_GETLK,
a non-blocking flock."""

import fcntl
import os
import struct
import subprocess
import sys

# struct flock on x86_64/aarch64: short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid (and padding to 32 bytes)
FLOCK = "hhxxxxqqixxxx"

HOLDER = r"""
import fcntl, os, sys
path, kind, start, length = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fd = os.open(path, os.O_RDWR)
op = {"r": fcntl.LOCK_SH, "w": fcntl.LOCK_EX}[kind]
try:
    fcntl.lockf(fd, op | fcntl.LOCK_NB, length, start)
except OSError as e:
    print("taken", e.errno, flush=True)
    sys.exit(0)
print("locked", os.getpid(), flush=True)
sys.stdin.read()  # hold until the test closes our stdin (or kills us)
"""


class Holder:
    """Another process (another lock owner) asking for an fcntl lock ("r" or "w") on
    [start, start+length) of path and, if it gets it, holding it until stop(), which waits
    up to stop_timeout seconds for it to exit."""

    def __init__(self, path, kind, start, length, stop_timeout=30):
        self.stop_timeout = stop_timeout
        self.p = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), kind, str(start),
                                   str(length)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline().split()
        assert line, "the lock holder died"
        self.locked = line[0] == "locked"
        self.pid = int(line[1]) if self.locked else None

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=self.stop_timeout)


def can_lock(path, kind, start, length, stop_timeout=30):
    """Would another process get this lock now? (it takes it and lets go)"""
    h = Holder(path, kind, start, length, stop_timeout)
    h.stop()
    return h.locked


def getlk(fd, kind, start, length):
    """F_GETLK for a lock of kind on [start, start+length): (l_type, l_start, l_len, l_pid)."""
    t = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK}[kind]
    r = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(FLOCK, t, os.SEEK_SET, start, length, 0))
    l_type, _, l_start, l_len, l_pid = struct.unpack(FLOCK, r)
    return l_type, l_start, l_len, l_pid


def try_flock(fd, op):
    """flock(fd, op) without blocking: True if taken, False if another holds it."""
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
