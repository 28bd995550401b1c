"""Helpers for the tests that run inside the test guest (import them: ``from vmlab import run``)."""

import hashlib
import os
import subprocess

# The guest runs Debian 12's own 6.1 kernel (KVER=6.1.0-N-amd64) rather than the default 6.12:
# its ksmbd has the limits tests/vm/README.md lists (no second open of an open file, an empty
# share root listing), which tests skip or expect with this.
KERNEL_61 = os.uname().release.startswith("6.1.0-")


def run(cmd, check=True, timeout=120, **kw):
    """Run a command (list or shell string), capture its output as text."""
    shell = isinstance(cmd, str)
    return subprocess.run(cmd, shell=shell, check=check, timeout=timeout,
                          capture_output=True, text=True, **kw)


def sha256_file(path, bufsize=1 << 20):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(bufsize)
            if not b:
                return h.hexdigest()
            h.update(b)


def dmesg_tail(lines=30):
    try:
        return "\n".join(run(["dmesg"], check=False).stdout.splitlines()[-lines:])
    except Exception as e:  # pragma: no cover - diagnostics only
        return f"(dmesg failed: {e})"


# ---- mount.smbrdma and smbrdmactl, as built on the host (SMBRDMA_BUILD, default build/)

import json  # noqa: E402
import time  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def build_dir():
    build = os.environ.get("SMBRDMA_BUILD", os.path.join(ROOT, "build"))
    return build if os.path.isabs(build) else os.path.join(ROOT, build)


def daemon():
    path = os.path.join(build_dir(), "fuse", "mount.smbrdma")
    assert os.access(path, os.X_OK), f"{path} is missing: build the project on the host first"
    return path


def smbrdmactl():
    return os.path.join(build_dir(), "tools", "smbrdmactl")


def mount_smbrdma(lab, addr, mnt, rdma, log, extra="", timeout=180):
    """mount.smbrdma //addr/share mnt [-o rdma]; its output is appended to log."""
    opts = f"username={lab.user},password={lab.password}"
    if rdma:
        opts += ",rdma"
    if extra:
        opts += "," + extra
    with open(log, "ab") as lf:
        r = subprocess.run([daemon(), lab.unc(addr), str(mnt), "-o", opts], stdout=lf,
                           stderr=subprocess.STDOUT, timeout=timeout)
    assert r.returncode == 0, f"mount.smbrdma -o {'rdma,' if rdma else ''}... failed: " + \
        open(log).read()[-2000:]


def ctl_json(command, mnt, timeout=60):
    """smbrdmactl COMMAND MNT --json of a live mount, parsed."""
    r = run([smbrdmactl(), command, str(mnt), "--json"], check=False, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def stats(mnt, timeout=60):
    """smbrdmactl stats MNT --json of a live mount, parsed."""
    return ctl_json("stats", mnt, timeout)


def rdma_totals(st):
    """A mount's SMB Direct channels' counters added up (an rdma mount opens
    rdma_channels= of them to the server's address, two by default), with
    "up": how many of them are up and "rdma": how many there are."""
    chans = [c for c in st["channels"] if c["transport"] == "rdma"]
    tot = {}
    for c in chans:
        for k, v in c.items():
            if isinstance(v, int) and not isinstance(v, bool) and k != "index":
                tot[k] = tot.get(k, 0) + v
    tot["up"] = sum(c["state"] == "up" for c in chans)
    tot["rdma"] = len(chans)
    return tot


def umount(mnt, tries=50):
    """umount, retrying while busy; lazy as a last resort."""
    for _ in range(tries):
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60).returncode == 0:
            return
        time.sleep(0.2)
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=60)


def write_random_file(path, size, chunk=8 << 20):
    """size random bytes into path (chunk by chunk); returns their sha256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            b = os.urandom(min(chunk, left))
            h.update(b)
            f.write(b)
            left -= len(b)
    return h.hexdigest()


def is_mounted(path):
    """Whether path is a mount point, from /proc/self/mountinfo: os.path.ismount() stats the
    directory, which fails on a dead FUSE mount (ECONNABORTED, ENOTCONN) and then says no."""
    path = os.path.realpath(str(path))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            mp = mp.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
                   .replace("\\134", "\\")
            if mp == path:
                return True
    return False


def rxe_active(lab):
    r = run(["rdma", "link", "show", f"{lab.rxe_dev}/1"], check=False, timeout=30)
    return r.returncode == 0 and "state ACTIVE" in r.stdout


def recreate_rxe(lab, timeout=60):
    """Delete the soft-RoCE device (if any) and add it again as tests/vm/lib/guest-init does,
    then wait until its port is ACTIVE.  After `ip link set veth0 down` under a live RDMA
    connection rxe0's connection manager stops answering in the guest kernels, 6.12 and 6.1
    (rping and ucmatose over rxe0 time out too) until the device is re-created -- which works
    only once ksmbd has dropped its side of that connection (until then: "File exists").  In
    6.1 the delete itself blocks for good once cifs.ko has unmounted an rxe mount (its cifsd
    thread hangs in smbd_destroy, holding an rdma_cm id)."""
    if run(["rdma", "link", "show", lab.rxe_dev], check=False, timeout=30).returncode == 0:
        # Not run(): a delete blocked in the kernel (D state) cannot be killed, and
        # subprocess.run() would wait for it forever after its timeout.
        p = subprocess.Popen(["rdma", "link", "delete", lab.rxe_dev], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError(f"rdma link delete {lab.rxe_dev} still blocked after {timeout}s "
                                 "(a kernel user holds the device)") from None
    end = time.monotonic() + timeout
    while True:  # "File exists" while the old device still unregisters
        r = run(["rdma", "link", "add", lab.rxe_dev, "type", "rxe", "netdev", lab.rxe_netdev],
                check=False, timeout=timeout)
        if r.returncode == 0 or time.monotonic() > end:
            break
        time.sleep(1)
    assert r.returncode == 0, f"rdma link add {lab.rxe_dev}: {r.stderr}"
    while not rxe_active(lab):
        assert time.monotonic() < end, run(["rdma", "link"], check=False).stdout
        time.sleep(0.5)

