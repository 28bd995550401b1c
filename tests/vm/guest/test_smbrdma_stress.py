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

fio's JSON output is left in the run's output directory (fio-*.json).
"""

import json
import os

import pytest

from vmlab import mount_smbrdma, rdma_totals, run, stats, umount

RUNTIME = int(os.environ.get("SMBRDMA_STRESS_SECONDS", "60"))
SMALL_RUNTIME = 10
THRESHOLD = 4096  # rdma_threshold's default: I/O of this size or less goes inline


def _fio(lab, name, filename, args, runtime):
    """fio, time-based, with crc32c verification; returns its JSON job."""
    out = os.path.join(lab.out, f"fio-{name}.json")
    cmd = ["fio", f"--name={name}", f"--filename={filename}", "--rw=randrw", "--rwmixread=50",
           "--direct=1", "--ioengine=libaio", "--iodepth=4", "--verify=crc32c",
           "--verify_backlog=16", "--verify_fatal=1", "--time_based", f"--runtime={runtime}",
           "--randrepeat=0", "--output-format=json", f"--output={out}"] + args
    r = run(cmd, check=False, timeout=runtime + 300)
    try:
        with open(out) as f:
            text = f.read()
        # fio may print notes before the JSON document
        job = json.loads(text[text.index("{"):])["jobs"][0]
    except (OSError, ValueError) as e:
        job = {"error": f"no JSON output ({e})"}
    assert r.returncode == 0 and job.get("error") == 0, \
        f"fio {name} failed (rc {r.returncode}, job error {job.get('error')}):\n" \
        f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
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
