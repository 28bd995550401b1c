"""fio with data verification on `-o rdma` mounts, over rxe and over siw.

test_fio_mixed_verify: 4 KiB and 1 MiB random reads and writes (half each, O_DIRECT, libaio
queue depth 4) on a 64 MiB file for 60 s (SMBRDMA_STRESS_SECONDS), every written block
carrying a crc32c that fio reads back and checks (verify_backlog: each batch of 16 writes is
read back and verified while the workload runs; verify_fatal: the first bad block fails the
run).  1 MiB I/O goes by RDMA, 4 KiB inline (below rdma_threshold=4096), so both paths are
exercised at once.  The test fails on any fio error, including a verify failure.

test_small_io_goes_inline: 512 B to 4 KiB random reads and writes (verified the same way);
`smbrdmactl stats --json` before and after shows the bytes went inline (bytes_sent /
bytes_received grew at least by fio's figures) and nothing moved by RDMA read or write.

test_fio_verify_survives_every_channel_cut (issue 22): the same mixed, verified fio on an
`-o rdma` mount over rxe while `smbrdmactl reconnect` drops every channel twice: the
offloaded READs and WRITEs in flight go out again (inline while no channel lives, parked
with the rest), the daemon builds the session again over SMB Direct, and fio finishes with no
error and every block verified; RDMA moves data again after the reconnect.  (The channels
are cut by the client, not by taking the link away: in these guest kernels rxe0 does not
come back after its netdev went down under a live connection, see test_smbrdma_linkloss.py.)

fio's JSON output is left in the run's output directory (fio-*.json).
"""

import json
import os
import subprocess
import time

import pytest

from vmlab import mount_smbrdma, rdma_totals, run, smbrdmactl, stats, umount

RUNTIME = int(os.environ.get("SMBRDMA_STRESS_SECONDS", "60"))
SMALL_RUNTIME = 10
THRESHOLD = 4096  # rdma_threshold's default: I/O of this size or less goes inline


def _fio_cmd(lab, name, filename, args, runtime):
    out = os.path.join(lab.out, f"fio-{name}.json")
    return out, ["fio", f"--name={name}", f"--filename={filename}", "--rw=randrw",
                 "--rwmixread=50", "--direct=1", "--ioengine=libaio", "--iodepth=4",
                 "--verify=crc32c", "--verify_backlog=16", "--verify_fatal=1", "--time_based",
                 f"--runtime={runtime}", "--randrepeat=0", "--output-format=json",
                 f"--output={out}"] + args


def _fio(lab, name, filename, args, runtime):
    """fio, time-based, with crc32c verification; returns its JSON job."""
    out, cmd = _fio_cmd(lab, name, filename, args, runtime)
    r = run(cmd, check=False, timeout=runtime + 300)
    return _fio_job(name, out, r.returncode, r.stdout, r.stderr)


def _fio_job(name, out, rc, stdout, stderr):
    try:
        with open(out) as f:
            text = f.read()
        # fio may print notes before the JSON document
        job = json.loads(text[text.index("{"):])["jobs"][0]
    except (OSError, ValueError) as e:
        job = {"error": f"no JSON output ({e})"}
    assert rc == 0 and job.get("error") == 0, \
        f"fio {name} failed (rc {rc}, job error {job.get('error')}):\n" \
        f"{stdout[-3000:]}\n{stderr[-3000:]}"
    return job


def _chan(st):
    """The mount's SMB Direct channels (two by default) added up."""
    ch = rdma_totals(st)
    assert ch["up"] >= 1 and ch["rdma"] == len(st["channels"]), st
    return ch


@pytest.mark.parametrize("kind", ["rxe", "siw"])
def test_fio_mixed_verify(lab, kind, mountpoint):
    addr = lab.siw_addr if kind == "siw" else lab.rxe_addr
    mount_smbrdma(lab, addr, mountpoint, True, os.path.join(lab.out, f"mount-stress-{kind}.log"))
    try:
        job = _fio(lab, f"mix-{kind}", mountpoint / "mix.bin",
                   ["--size=64m", "--bssplit=4k/50:1m/50"], RUNTIME)
        rd, wr = job["read"]["io_bytes"], job["write"]["io_bytes"]
        print(f"{kind}: fio read {rd >> 20} MiB ({job['read']['total_ios']} I/Os), "
              f"wrote {wr >> 20} MiB ({job['write']['total_ios']} I/Os) in {RUNTIME} s")
        assert rd > 0 and wr > 0, job
        ch = _chan(stats(mountpoint))
        # 1 MiB I/O went by RDMA both ways, 4 KiB inline
        assert ch["rdma_read_bytes"] > 0 and ch["rdma_write_bytes"] > 0, ch
        os.unlink(mountpoint / "mix.bin")
    finally:
        umount(mountpoint)


@pytest.mark.parametrize("kind", ["rxe", "siw"])
def test_small_io_goes_inline(lab, kind, mountpoint):
    addr = lab.siw_addr if kind == "siw" else lab.rxe_addr
    mount_smbrdma(lab, addr, mountpoint, True, os.path.join(lab.out, f"mount-small-{kind}.log"))
    try:
        f = mountpoint / "small.bin"
        # an existing file of the right size: fio lays nothing out (its buffered
        # layout writes could be merged into large offloaded WRITEs)
        with open(f, "wb") as fh:
            fh.truncate(8 << 20)
        before = _chan(stats(mountpoint))
        job = _fio(lab, f"small-{kind}", f,
                   ["--size=8m", "--fallocate=none",
                    f"--bssplit=512/10:1k/10:2k/10:{THRESHOLD}/70"], SMALL_RUNTIME)
        after = _chan(stats(mountpoint))
        rd, wr = job["read"]["io_bytes"], job["write"]["io_bytes"]
        d = {k: after[k] - before[k] for k in
             ("bytes_sent", "bytes_received", "rdma_read_bytes", "rdma_write_bytes", "requests")}
        print(f"{kind}: fio read {rd} B, wrote {wr} B; stats delta {d}")
        assert rd > 0 and wr > 0, job
        assert d["rdma_read_bytes"] == 0 and d["rdma_write_bytes"] == 0, \
            f"I/O of at most {THRESHOLD} bytes moved by RDMA: {d}"
        assert d["bytes_sent"] >= wr, \
            f"fio wrote {wr} bytes but only {d['bytes_sent']} went inline"
        assert d["bytes_received"] >= rd, \
            f"fio read {rd} bytes but only {d['bytes_received']} came inline"
        os.unlink(f)
    finally:
        umount(mountpoint)


CUT_RUNTIME = int(os.environ.get("SMBRDMA_CUT_SECONDS", "30"))


def test_fio_verify_survives_every_channel_cut(lab, mountpoint):
    log = os.path.join(lab.out, "mount-cut-rxe.log")
    mount_smbrdma(lab, lab.rxe_addr, mountpoint, True, log, extra="timeout=120")
    try:
        out, cmd = _fio_cmd(lab, "cut-rxe", mountpoint / "cut.bin",
                            ["--size=64m", "--bssplit=4k/50:1m/50"], CUT_RUNTIME)
        fio = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cuts = []
        try:
            for _ in range(2):
                time.sleep(CUT_RUNTIME / 4)
                r = run([smbrdmactl(), "reconnect", str(mountpoint)], check=False, timeout=120)
                assert r.returncode == 0, r.stdout + r.stderr
                cuts.append(r.stdout.splitlines()[0] if r.stdout else "")
            stdout, stderr = fio.communicate(timeout=CUT_RUNTIME + 600)
        finally:
            if fio.poll() is None:
                fio.kill()
                fio.wait()
        job = _fio_job("cut-rxe", out, fio.returncode, stdout, stderr)
        st = stats(mountpoint)
        reconnects = sum(c["reconnects"] for c in st["channels"])
        assert reconnects >= 1, st
        # the channels the reconnect built move 1 MiB I/O by RDMA again
        before = _chan(st)
        _fio(lab, "after-cut-rxe", mountpoint / "cut.bin", ["--size=64m", "--bs=1m"],
             SMALL_RUNTIME)
        after = _chan(stats(mountpoint))
        d = {k: after[k] - before[k] for k in ("rdma_read_bytes", "rdma_write_bytes")}
        print(f"rxe: fio read {job['read']['io_bytes'] >> 20} MiB, wrote "
              f"{job['write']['io_bytes'] >> 20} MiB in {CUT_RUNTIME} s across two cuts "
              f"({cuts}), verified; {after['up']} channels up after; RDMA after: {d}")
        assert d["rdma_read_bytes"] > 0 and d["rdma_write_bytes"] > 0, d
        os.unlink(mountpoint / "cut.bin")
    finally:
        umount(mountpoint)
