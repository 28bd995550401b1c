"""File-level checks shared by the integration tests. Bulk I/O runs in child
processes (cp, sha256sum) with timeouts so a hung FUSE request fails the
test instead of hanging the run."""

import ctypes
import errno
import hashlib
import os
import stat
import subprocess
import sys
import time

from .mount import build_dir, timeout_scale

MIB = 1 << 20


def read_bytes(path):
    """The whole file."""
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data, mode="wb"):
    """data into path (mode "ab" appends)."""
    with open(path, mode) as f:
        f.write(data)


def fallocate(fd, mode, off, length):
    """fallocate(2) on fd with mode (FALLOC_FL_* bits), which os.posix_fallocate cannot
    pass; OSError on failure."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def sh(args, timeout=120, check=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True,
                       timeout=timeout * timeout_scale(), **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {r.returncode}:\n"
                             f"{r.stdout}{r.stderr}")
    return r


def read_fd(fd):
    """All of an open file, read from offset 0 through the fd (its cache)."""
    os.lseek(fd, 0, os.SEEK_SET)
    out = b""
    while True:
        b = os.read(fd, 65536)
        if not b:
            return out
        out += b


def ctl_stats(m):
    """smbrdmactl stats --json of mount m, parsed."""
    import json
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        ctl = "/sbin/smbrdmactl"
    else:
        ctl = os.path.join(build_dir(), "tools", "smbrdmactl")
    r = subprocess.run([ctl, "stats", m.path, "--json"], capture_output=True, text=True,
                       timeout=30 * timeout_scale())
    assert r.returncode == 0, f"smbrdmactl stats failed: {r.stderr}"
    return json.loads(r.stdout)


def request_counts(m):
    """(SMB2 messages, {command: count}) mount m has sent, all channels (a
    compound is one message and one count per command in it)."""
    chans = ctl_stats(m)["channels"]
    cmds = {}
    for ch in chans:
        for k, v in ch.get("commands", {}).items():
            cmds[k] = cmds.get(k, 0) + v
    return sum(ch["requests"] for ch in chans), cmds


def lease_stats(m):
    """The lease counters of mount m (smbrdmactl stats --json)."""
    s = ctl_stats(m)
    return {k: s[k] for k in ("leases_granted", "lease_breaks", "lease_break_acks")}


def wait_until(cond, timeout=20, what="a condition"):
    """Poll cond() every 50 ms until it is true; fails the test after
    timeout seconds (scaled)."""
    deadline = time.monotonic() + timeout * timeout_scale()
    while not cond():
        assert time.monotonic() < deadline, f"{what} not met after {timeout} s"
        time.sleep(0.05)


def wait_for_lease_breaks(m, n, timeout=20):
    """Wait until mount m has seen n lease breaks (a break of another
    client's read caching is not waited for by the server: the writer's
    call returns while the notification is on its way).  Returns the
    stats; fails the test after timeout seconds (scaled)."""
    deadline = time.monotonic() + timeout * timeout_scale()
    while True:
        s = lease_stats(m)
        if s["lease_breaks"] >= n:
            return s
        assert time.monotonic() < deadline, f"{n} lease breaks awaited, stats: {s}"
        time.sleep(0.05)


def make_random_file(path, mib):
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(MIB))
    return path


def sha256(path, timeout=300):
    return sh(["sha256sum", path], timeout=timeout).stdout.split()[0]


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def roundtrip_in(src, mnt, name, timeout=600):
    """cp src into the mount; return the destination path."""
    dst = os.path.join(mnt, name)
    t0 = time.monotonic()
    sh(["cp", src, dst], timeout=timeout)
    fsync_path(dst, timeout=timeout)
    return dst, time.monotonic() - t0


FSYNC = "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.fsync(fd); os.close(fd)"


def fsync_path(path, timeout=120):
    """fsync through a write handle, in a child process (may block on I/O)."""
    sh([sys.executable, "-c", FSYNC, path], timeout=timeout)


def roundtrip_out(path, out, timeout=600):
    t0 = time.monotonic()
    sh(["cp", path, out], timeout=timeout)
    return out, time.monotonic() - t0


def attempt(fn, *args):
    """'ok' or the errno name of the OSError fn raised."""
    try:
        fn(*args)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def tree(root):
    """Sorted (relpath, type, size, sha256) of everything under root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for d in dirnames:
            out.append((os.path.relpath(os.path.join(dirpath, d), root), "d", None, None))
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            kind = "f" if stat.S_ISREG(st.st_mode) else "?"
            out.append((os.path.relpath(p, root), kind, st.st_size,
                        sha256_bytes(read_file(p)) if kind == "f" else None))
    return sorted(out)


def ls_l(path):
    """`ls -l` of a directory, as (type char, size, name) per entry (owner,
    mode bits and times differ between a mount and a local dir)."""
    r = sh(["ls", "-l", "--time-style=+%s", path], timeout=60)
    rows = []
    for line in r.stdout.splitlines():
        parts = line.split(None, 6)
        if len(parts) < 7 or line.startswith("total"):
            continue
        mode, _, _, _, size, _, name = parts
        rows.append((mode[0], int(size) if mode[0] == "-" else None, name))
    return sorted(rows)


TOUCH_DATE = "2001-02-03 04:05:06"


def posix_sequence(root, data_seed=b"smbrdma"):
    """Do mkdir/rename/unlink/rmdir/truncate/touch/stat/ls -l under root and
    return what was observed. Run on a mount and on a local dir: the two
    results must be equal."""
    obs = []
    j = lambda *p: os.path.join(root, *p)  # noqa: E731
    blob = (hashlib.sha256(data_seed).digest() * 200)[:6000]

    os.mkdir(j("a"))
    os.mkdir(j("a", "b"))
    write_file(j("a", "f1"), b"hello")
    write_file(j("g"), b"world!!")
    obs.append(("tree after create", tree(root)))

    os.rename(j("g"), j("a", "g"))                  # file into another dir
    os.rename(j("a", "f1"), j("a", "f1r"))          # file rename, same dir
    write_file(j("h"), b"overwriter")
    os.rename(j("h"), j("a", "g"))                  # over an existing file
    os.rename(j("a"), j("c"))                       # directory with contents
    obs.append(("tree after renames", tree(root)))
    obs.append(("content of replaced", read_file(j("c", "g"))))

    obs.append(("rmdir non-empty", attempt(os.rmdir, j("c"))))
    obs.append(("mkdir existing", attempt(os.mkdir, j("c"))))
    obs.append(("unlink missing", attempt(os.unlink, j("nosuch"))))
    obs.append(("stat missing", attempt(os.stat, j("c", "nosuch"))))
    obs.append(("rmdir a file", attempt(os.rmdir, j("c", "f1r"))))
    obs.append(("rename missing", attempt(os.rename, j("nosuch"), j("x"))))
    obs.append(("old name gone", attempt(os.stat, j("a"))))

    # truncate: grow (zero fill), shrink, via syscall and via truncate(1)
    write_file(j("c", "t"), blob[:1000])
    os.truncate(j("c", "t"), 5000)
    obs.append(("grown", os.stat(j("c", "t")).st_size, read_file(j("c", "t"))))
    os.truncate(j("c", "t"), 10)
    obs.append(("shrunk", os.stat(j("c", "t")).st_size, read_file(j("c", "t"))))
    sh(["truncate", "-s", "3000", j("c", "t")])
    obs.append(("truncate(1) grow", os.stat(j("c", "t")).st_size, read_file(j("c", "t"))))
    with open(j("c", "t"), "r+b") as f:          # ftruncate on an open handle
        f.truncate(7)
        f.seek(0)
        obs.append(("ftruncate", f.read()))
    with open(j("c", "t"), "wb") as f:           # O_TRUNC
        f.write(b"x")
    obs.append(("O_TRUNC", read_file(j("c", "t"))))

    # positional writes and appends
    write_file(j("c", "p"), blob)
    with open(j("c", "p"), "r+b") as f:
        f.seek(4096)
        f.write(b"PATCH")
    with open(j("c", "p"), "ab") as f:
        f.write(b"TAIL")
    obs.append(("pwrite+append", sha256_bytes(read_file(j("c", "p")))))

    # stat: type, size, mtime
    now = time.time()
    st = os.stat(j("c", "p"))
    obs.append(("stat file", stat.S_ISREG(st.st_mode), stat.S_ISDIR(st.st_mode), st.st_size))
    obs.append(("mtime is recent", abs(st.st_mtime - now) < 120))
    st = os.stat(j("c"))
    obs.append(("stat dir", stat.S_ISREG(st.st_mode), stat.S_ISDIR(st.st_mode)))
    sh(["touch", "-d", TOUCH_DATE, j("c", "f1r")])
    want = int(sh(["date", "-d", TOUCH_DATE, "+%s"]).stdout)
    st = os.stat(j("c", "f1r"))
    obs.append(("touch -d mtime", int(st.st_mtime) == want, int(st.st_mtime) - want))
    sh(["touch", "-d", TOUCH_DATE, j("c", "b")])
    obs.append(("touch -d dir mtime", int(os.stat(j("c", "b")).st_mtime) == want))
    obs.append(("ls -l", ls_l(j("c"))))
    r = sh(["ls", "-l", "--time-style=+%Y-%m-%d %H:%M:%S", j("c", "f1r")])
    obs.append(("ls -l shows touched date", TOUCH_DATE in r.stdout))
    obs.append(("listdir", sorted(os.listdir(j("c")))))

    # tear down
    for f in ("f1r", "g", "t", "p"):
        os.unlink(j("c", f))
    os.rmdir(j("c", "b"))
    os.rmdir(j("c"))
    obs.append(("tree at end", tree(root)))
    return obs


def compare_with_local(mnt_root, local_root):
    """Run posix_sequence on both and return a list of differences."""
    got = posix_sequence(mnt_root)
    want = posix_sequence(local_root)
    diffs = []
    for g, w in zip(got, want):
        if g != w:
            diffs.append(f"{w[0]}: mount gave {g[1:]!r}, local disk gave {w[1:]!r}")
    if len(got) != len(want):
        diffs.append(f"observation count differs: {len(got)} vs {len(want)}")
    return diffs


def short_file_test(mnt, tmpdir, mib, share_path=None):
    """mib MiB round trip + mkdir/rename/unlink; returns a list of problems."""
    problems = []
    src = make_random_file(os.path.join(tmpdir, f"src{mib}.bin"), mib)
    want = sha256(src)
    os.mkdir(os.path.join(mnt, "dir"))
    dst, _ = roundtrip_in(src, os.path.join(mnt, "dir"), "f.bin")
    if os.stat(dst).st_size != mib * MIB:
        problems.append(f"size on mount {os.stat(dst).st_size} != {mib * MIB}")
    if share_path:
        srv_copy = os.path.join(share_path, "dir", "f.bin")
        if sha256(srv_copy) != want:
            problems.append("server's copy differs from the source")
    os.rename(dst, os.path.join(mnt, "dir", "g.bin"))
    os.rename(os.path.join(mnt, "dir"), os.path.join(mnt, "dir2"))
    out, _ = roundtrip_out(os.path.join(mnt, "dir2", "g.bin"), os.path.join(tmpdir, "out.bin"))
    if sha256(out) != want:
        problems.append("file read back differs from the source")
    os.unlink(os.path.join(mnt, "dir2", "g.bin"))
    os.rmdir(os.path.join(mnt, "dir2"))
    if os.listdir(mnt):
        problems.append(f"mount not empty at end: {os.listdir(mnt)}")
    if share_path and os.listdir(share_path):
        problems.append(f"share not empty at end: {os.listdir(share_path)}")
    return problems
