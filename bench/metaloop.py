#!/usr/bin/python3
"""create + stat + unlink of N files in DIR, one after the other (each file
is created, stat'ed and unlinked before the next); prints JSON with files/s.
Run as its own process by bench/run-bench so a hung mount cannot hang the
bench."""
import json
import os
import sys
import time


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    t0 = time.perf_counter()
    for i in range(n):
        p = os.path.join(d, f"f{i:06d}")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.close(fd)
        os.stat(p)
        os.unlink(p)
    dt = time.perf_counter() - t0
    os.rmdir(d)
    print(json.dumps({"files": n, "seconds": dt, "files_per_s": n / dt}))


if __name__ == "__main__":
    main()
