#!/usr/bin/python3
"""create + stat + unlink of N files in DIR, one after the other (each file
is created, stat'ed and unlinked before the next); prints JSON with files/s.
Run as its own process by bench/run-bench so a hung mount cannot hang the
bench.

An unlink that fails with EBUSY is retried (1 ms apart, for up to 10 s) and
counted in "unlink_retries": smbnetfs closes its SMB handle only when FUSE's
RELEASE arrives, after close(2) has returned, and Samba refuses to delete a
file still open without FILE_SHARE_DELETE. The retries' time is in the
figure."""
import errno
import json
import os
import sys
import time


def unlink(path):
    """os.unlink, retrying EBUSY; returns the number of retries."""
    deadline = time.monotonic() + 10
    retries = 0
    while True:
        try:
            os.unlink(path)
            return retries
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        retries += 1
        time.sleep(0.001)


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    retries = 0
    t0 = time.perf_counter()
    for i in range(n):
        p = os.path.join(d, f"f{i:06d}")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.close(fd)
        os.stat(p)
        retries += unlink(p)
    dt = time.perf_counter() - t0
    os.rmdir(d)
    print(json.dumps({"files": n, "seconds": dt, "files_per_s": n / dt,
                      "unlink_retries": retries}))


if __name__ == "__main__":
    main()
