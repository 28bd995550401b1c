"""Losing the RDMA link under a live `-o rdma` mount (over rxe).

A writer process loops 1 MiB O_DIRECT writes and read-backs (offloaded: above
rdma_threshold) on the mount; then the link goes away under it, either
  a) `rdma link delete rxe0` (the soft-RoCE device disappears), or
  b) `ip link set veth0 down` (the netdev under rxe0 -- and its veth peer
     veth1, siw0's netdev -- lose carrier).
Checks:
- the in-flight I/O fails with an errno (any), never hangs, within the keepalive window
  plus a margin (FAIL_WITHIN_S; the mount has timeout=15, DEAD_MOUNT_OPTS);
- `smbrdmactl stats --json` of the dead mount answers and its channel is not "up", both at
  once and after the attribute cache (actimeo=1 s) has expired;
- the dead mount unmounts; after the link is restored a new `-o rdma` mount over rxe writes
  and reads back an 8 MiB file (identical sha256, moved by RDMA).

Lab limitation (not the daemon's): in the guest kernels (6.12 and 6.1), after `ip link set
veth0 down` under a live RDMA connection and `up` again, rxe0's connection manager no longer
answers -- new SMB Direct connects from mount.smbrdma time out, and so does rping over
10.99.1.1 (on 6.1 also cifs.ko and ucmatose; reloading ksmbd did not help).  Re-creating rxe0
helps only once ksmbd has let go of its side of the dead connection, which it does not notice
for minutes (`rdma link add` fails with "File exists" meanwhile -- 6.12 logs "rxe_newlink:
already configured on veth0" -- and on 6.1 `ksmbd.control --shutdown` hangs).
Variant b) therefore tries the new mount over rxe0 first and, when that fails, says so on its
output (with rping's verdict) and shows the new mount over siw0 (10.99.2.1 on veth1, the other
end of the veth pair that went down), then tries to re-create rxe0 for what runs after.
In short: one `ip link set veth0 down` test per guest boot, ordered last (conftest.py).

Every subprocess has a timeout and the link is restored in a `finally`; conftest.py orders
this file last all the same.
"""

import errno
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from vmlab import (is_mounted, mount_smbrdma, rdma_totals, recreate_rxe, run, rxe_active,
                   sha256_file, smbrdmactl, stats, umount, write_random_file)

# The daemon's own deadlines (smbd/smbd_conn.c smbd_conn_params_default, client/session.c):
# a silent connection is probed after idle_timeout_ms = 120 s and declared dead when the
# probe is not answered within keepalive_timeout_ms = 5 s; every SMB2 request also fails with
# ETIMEDOUT after 60 s without an answer.  The keepalive window is therefore 125 s; in-flight
# I/O must fail within it, plus a margin for TCG (the guest runs 10-20x slower than the host).
KEEPALIVE_WINDOW_S = 120 + 5
MARGIN_S = 35
FAIL_WITHIN_S = KEEPALIVE_WINDOW_S + MARGIN_S
# The mount whose link goes away waits timeout= for a channel to come back before its
# requests fail with ETIMEDOUT: 15 s, not the default 60, which this test sat out twice per
# boot (once per variant).  The path is the same (every channel down, reconnect attempts
# failing, the wait ending at the requests' deadline); 15 s is still far more than any
# answer takes under TCG before the cut.
DEAD_MOUNT_OPTS = "timeout=15"
SYSLOG = "/run/smbrdma-vm/syslog.log"  # mount.smbrdma logs there once daemonized

# Runs as its own process so that a hang shows as a timeout, not a stuck pytest.
# Prints "ok N T" per 1 MiB write+read, "error ERRNO NAME T" and exits 3 on the first error.
WRITER = r"""
import errno, mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
wbuf = mmap.mmap(-1, 1 << 20)
wbuf.write(os.urandom(1 << 20))
rbuf = mmap.mmap(-1, 1 << 20)
n = 0
while True:
    off = (n % 32) << 20
    try:
        if os.pwrite(fd, wbuf, off) != 1 << 20:
            raise OSError(errno.EIO, "short write")
        if os.preadv(fd, [rbuf], off) != 1 << 20 or rbuf[:] != wbuf[:]:
            print(f"baddata {n} {time.monotonic():.3f}", flush=True)
            sys.exit(4)
    except OSError as e:
        print(f"error {e.errno} {errno.errorcode.get(e.errno, '?')} {time.monotonic():.3f}",
              flush=True)
        sys.exit(3)
    n += 1
    print(f"ok {n} {time.monotonic():.3f}", flush=True)
"""


class Writer:
    def __init__(self, path):
        self.p = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.strip())

    def oks(self):
        return sum(1 for ln in self.lines if ln.startswith("ok "))

    def wait_progress(self, n, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.p.poll() is None and self.oks() < n:
            time.sleep(0.2)
        return self.oks() >= n

    def tail(self, n=3):
        return " | ".join(self.lines[-n:])


def _syslog_size():
    try:
        return os.path.getsize(SYSLOG)
    except OSError:
        return 0


def _daemon_log(since):
    """The daemons' syslog lines since offset `since`."""
    try:
        with open(SYSLOG, errors="replace") as f:
            f.seek(since)
            return "".join(ln for ln in f if "mount.smbrdma" in ln)
    except OSError:
        return ""


def _daemon_pid(mnt, since):
    """The pid of the daemon serving mnt, from its "mounted ... on MNT" syslog line."""
    m = re.search(r"mount\.smbrdma\[(\d+)\]: mounted \S+ on " + re.escape(str(mnt)) + r"$",
                  _daemon_log(since), re.M)
    return int(m.group(1)) if m else None


def _dump(pids, path):
    """State, kernel stacks and gdb backtraces of pids, into path; returns a summary."""
    out, summary = [], []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                state = next(ln for ln in f if ln.startswith("State:")).split(None, 1)[1].strip()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except (OSError, StopIteration):
            continue
        summary.append(f"{comm}[{pid}] {state}")
        out.append(f"==== {comm}[{pid}] {state}")
        for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            try:
                with open(f"/proc/{pid}/task/{tid}/stack") as f:
                    out.append(f"-- thread {tid}\n{f.read()}")
            except OSError:
                pass
        try:
            r = run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                    check=False, timeout=90)
            out.append(r.stdout[-20000:])
        except subprocess.TimeoutExpired:
            out.append("(gdb timed out)")
    with open(path, "w") as f:
        f.write("\n".join(out))
    return "; ".join(summary)


def _fuse_conn(mnt):
    """/sys/fs/fuse/connections/<minor of st_dev> of a live mount (to abort it if it hangs)."""
    return f"/sys/fs/fuse/connections/{os.minor(os.stat(mnt).st_dev)}"


def _abort(conn):
    try:
        with open(os.path.join(conn, "abort"), "w") as f:
            f.write("1")
    except OSError:
        pass


def _wait_rxe_active(lab, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if rxe_active(lab):
            return True
        time.sleep(0.5)
    return False


def _kill_link(lab, how):
    """Start taking the link down; returns the Popen (rdma link delete blocks while a
    process still holds the device)."""
    if how == "rdma-link-delete":
        cmd = ["rdma", "link", "delete", lab.rxe_dev]
    else:
        cmd = ["ip", "link", "set", lab.rxe_netdev, "down"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _restore_link(lab, how):
    if how == "rdma-link-delete":
        if run(["rdma", "link", "show", lab.rxe_dev], check=False, timeout=30).returncode:
            recreate_rxe(lab)
    else:
        run(["ip", "link", "set", lab.rxe_netdev, "up"], timeout=30)
    assert _wait_rxe_active(lab), run(["rdma", "link"], check=False).stdout


def _ksmbd_oops():
    """The guest kernel's oops line if ksmbd crashed in its SMB Direct connection handler,
    else None.  ksmbd 6.1 can dereference a NULL qp in smb_direct_cm_handler when
    `rdma link delete` removes the device while the connection it just lost is being freed
    (the kernel's own DREQ for our connection races the removal of ksmbd's); the `rdma`
    process dies with the oops and rxe0 cannot be added again in that boot."""
    out = run(["dmesg"], check=False, timeout=30).stdout
    bug = next((line for line in out.splitlines() if "BUG:" in line), None)
    if bug and "smb_direct_cm_handler" in out[out.index(bug):]:
        return bug.strip()
    return None


def _rping(lab):
    """rping over rxe0 (no ksmbd, no daemon): does rdma_cm over rxe0 work at all?"""
    srv = subprocess.Popen(["rping", "-s", "-a", lab.rxe_addr, "-p", "7999", "-C", "2"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        r = run(["rping", "-c", "-a", lab.rxe_addr, "-p", "7999", "-C", "2"], check=False,
                timeout=10)
        return "works" if r.returncode == 0 else f"fails too (rc {r.returncode})"
    except subprocess.TimeoutExpired:
        return "times out too"
    finally:
        srv.kill()
        srv.wait(timeout=10)


def _try_mount_at(lab, addr, mnt, log, extra=""):
    try:
        mount_smbrdma(lab, addr, mnt, True, log, extra)
        return None
    except AssertionError as e:
        return str(e).splitlines()[0]


def _try_mount(lab, mnt, log, extra=""):
    return _try_mount_at(lab, lab.rxe_addr, mnt, log, extra)


@pytest.mark.parametrize("how", ["rdma-link-delete", "netdev-down"])
def test_link_loss_fails_inflight_io_then_new_mount_works(lab, how, tmp_path):
    assert rxe_active(lab), "rxe0 is not ACTIVE before the test (an earlier test broke the lab?)"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = os.path.join(lab.out, f"mount-linkloss-{how}.log")
    since = _syslog_size()
    report = []    # what happened, printed as it happens (and in the failure message)
    problems = []  # failed checks; the link is restored and a new mount tried before failing
    killer = writer = conn = None
    t0 = None
    lab_oops = None  # the guest kernel crashed under the device removal (_ksmbd_oops)

    def note(msg):
        at = f"t0+{time.monotonic() - t0:.1f}s " if t0 is not None else ""
        report.append(f"[{how}] {at}{msg}")
        print(report[-1], flush=True)

    try:
        err = _try_mount(lab, mnt, log, DEAD_MOUNT_OPTS)
        if err:  # an earlier test's link-down left rxe0 unusable (see the docstring)
            note(f"LAB: no mount over rxe0 at the start ({err}); rping {_rping(lab)}; "
                 "re-creating rxe0")
            recreate_rxe(lab)
            mount_smbrdma(lab, lab.rxe_addr, mnt, True, log, DEAD_MOUNT_OPTS)
        conn = _fuse_conn(mnt)
        writer = Writer(mnt / "inflight.bin")
        assert writer.wait_progress(3, 120), f"the writer made no progress: {writer.tail()}"
        before = stats(mnt)
        assert rdma_totals(before)["rdma"] == len(before["channels"]), before
        assert rdma_totals(before)["rdma_read_bytes"] > 0, before

        t0 = time.monotonic()
        killer = _kill_link(lab, how)
        note(f"'{' '.join(killer.args)}' started; writer at {writer.oks()} MiB")
        try:
            writer.p.wait(timeout=FAIL_WITHIN_S)
        except subprocess.TimeoutExpired:
            pass
        rc = writer.p.poll()
        note(f"writer rc={rc}; last lines: {writer.tail()}")
        errs = [ln for ln in writer.lines if ln.startswith("error ")]
        if rc is None:
            problems.append(f"in-flight I/O still pending {FAIL_WITHIN_S}s after {how}: a hang")
        elif rc != 3 or not errs:
            problems.append(f"the writer did not fail with an errno: rc={rc} {writer.tail()}")
        else:
            code = int(errs[0].split()[1])
            took = float(errs[0].split()[3]) - t0
            note(f"in-flight I/O failed with {errno.errorcode.get(code, code)} {took:.1f}s "
                 "after the link went away")
            if code == 0 or took > FAIL_WITHIN_S:
                problems.append(f"errno {code} after {took:.1f}s (allowed: {FAIL_WITHIN_S}s)")

        # The dead mount still answers its control socket and says it is not up: at once,
        # and after the attribute cache (actimeo=1 s) has expired.
        for when, delay in (("at once", 0), ("3 s later", 3)):
            time.sleep(delay)
            try:
                r = subprocess.run([smbrdmactl(), "stats", str(mnt), "--json"],
                                   capture_output=True, text=True, timeout=30)
            except subprocess.TimeoutExpired:
                problems.append(f"smbrdmactl stats of the dead mount hung (30 s), {when}")
                continue
            if r.returncode != 0:
                problems.append(f"smbrdmactl stats of the dead mount failed {when}: "
                                f"{r.stderr.strip()}")
                continue
            states = [c["state"] for c in json.loads(r.stdout)["channels"]]
            note(f"smbrdmactl stats of the dead mount {when}: states={states}")
            if "up" in states:
                problems.append(f"a channel of the dead mount says it is up: {r.stdout}")

        if killer.poll() is None:
            try:
                killer.wait(timeout=5)
            except subprocess.TimeoutExpired:
                note(f"'{' '.join(killer.args)}' still waits while the dead mount exists")
    finally:
        if writer and writer.p.poll() is None:
            writer.p.kill()
        # The dead mount goes first: a device being deleted waits for its users.
        if is_mounted(mnt):
            try:
                r = subprocess.run(["umount", str(mnt)], capture_output=True, text=True,
                                   timeout=30)
                note(f"umount of the dead mount: rc={r.returncode} {r.stderr.strip()}")
            except subprocess.TimeoutExpired:
                problems.append("umount of the dead mount hung (30 s); FUSE connection aborted")
            if is_mounted(mnt):
                if conn:
                    _abort(conn)
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)
        if writer:
            try:
                writer.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                problems.append("the writer survived SIGKILL for 30 s (stuck in the kernel)")
        if killer:
            try:
                out, _ = killer.communicate(timeout=30)
                note(f"'{' '.join(killer.args)}' exited {killer.returncode} {out.strip()}")
            except subprocess.TimeoutExpired:
                pid = _daemon_pid(mnt, since)
                alive = pid is not None and os.path.exists(f"/proc/{pid}")
                dump = os.path.join(lab.out, f"linkloss-{how}-stuck.txt")
                problems.append(
                    f"'{' '.join(killer.args)}' still blocked 30 s after the dead mount was "
                    f"unmounted; daemon pid {pid} {'still running' if alive else 'gone'}; "
                    f"{_dump([p for p in (pid, killer.pid) if p], dump)} (stacks in {dump})")
                if alive:
                    os.kill(pid, 9)  # our daemon: let the device go, keep the lab usable
                try:
                    killer.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    problems.append(f"'{' '.join(killer.args)}' still blocked")
        try:
            _restore_link(lab, how)
            note("link restored")
        except AssertionError as e:
            lab_oops = _ksmbd_oops()
            if not lab_oops:
                raise
            note(f"LAB: the link cannot be restored ({str(e).splitlines()[0]}): the guest "
                 f"kernel oopsed in ksmbd: {lab_oops}")
        time.sleep(0.5)  # let the daemon's last lines reach syslog
        print(f"mount.smbrdma in syslog:\n{_daemon_log(since)}")

    if lab_oops:
        # What the client owes was checked above; what is left (a new mount over rxe0)
        # needs the device back, which the crashed kernel cannot give in this boot.
        # tests/vm/ci runs this variant in a boot of its own, so nothing after it suffers.
        assert not problems, "\n".join(problems + report)
        pytest.xfail(f"ksmbd ({os.uname().release}) crashed on the device removal (NULL qp "
                     "in smb_direct_cm_handler), so no new mount over rxe0 can be tried; the "
                     "client's checks passed: " + " | ".join(report))

    # A new mount over the restored link works.
    src = tmp_path / "after.bin"
    want = write_random_file(src, 8 << 20)
    mnt2 = tmp_path / "mnt2"
    mnt2.mkdir()
    addr = lab.rxe_addr
    err = _try_mount(lab, mnt2, log)
    if err and how == "netdev-down":
        # the lab limitation of the docstring: the same veth pair, through siw0 on veth1
        note(f"LAB: a new mount over rxe0 failed ({err}); rping over rxe0 {_rping(lab)}; "
             f"mounting over siw0 ({lab.siw_addr}, veth1: the other end of the pair) instead")
        addr = lab.siw_addr
        err = _try_mount_at(lab, addr, mnt2, log)
    assert not err, "\n".join([f"no new mount after the link came back: {err}"] + problems +
                              report)
    try:
        run(["cp", str(src), str(mnt2 / "after.bin")], timeout=300)
        umount(mnt2)
        mount_smbrdma(lab, addr, mnt2, True, log)
        back = tmp_path / "back.bin"
        run(["cp", str(mnt2 / "after.bin"), str(back)], timeout=300)
        assert sha256_file(back) == want, "read back different bytes after the link came back"
        st = stats(mnt2)
        ch = rdma_totals(st)
        assert ch["up"] >= 1 and ch["rdma"] == len(st["channels"]), st
        assert ch["rdma_write_bytes"] >= 8 << 20, st
        note(f"a new mount over {addr} wrote and read back 8 MiB")
        os.unlink(mnt2 / "after.bin")
    finally:
        umount(mnt2)
        # Not through the mount: after a veth0 down ksmbd 6.1 keeps the dead connection and
        # its open of inflight.bin, and a CREATE of that name from a new session waits on it
        # (apparently an oplock break to the dead peer) and wedges ksmbd for every client,
        # TCP included.
        path = os.path.join(lab.share_path, "inflight.bin")
        if os.path.exists(path):
            os.unlink(path)
        if addr != lab.rxe_addr:  # best effort: leave rxe0 usable for what runs after
            try:
                recreate_rxe(lab, timeout=10)
                note("rxe0 re-created")
            except (AssertionError, subprocess.SubprocessError) as e:
                note(f"LAB: rxe0 could not be re-created: {str(e).splitlines()[0]}")
    assert not problems, "\n".join(problems + report)
