"""bench/run-bench --quick completes against the private Samba with every
peer (mount.smbrdma, smbrdma-bench, smbnetfs, smbclient, the FUSE
passthrough, tmpfs) and writes JSON and text that parse: a figure per peer
and job, CPU per GiB, the daemon's peak memory, the ratios and the
acceptance lines. No timing assertions: whether a line is MET is not
checked, only that it carries a figure."""

import glob
import json
import os
import subprocess
import sys

from lib.mount import REPO

# the figure of each job, and the peers that run it (see bench/run-bench)
JOBS = {"seq_write": "mib_s", "seq_read": "mib_s", "seq_write_qd8": "mib_s",
        "seq_read_qd8": "mib_s", "randread_qd1": "iops", "randread_qd16": "iops",
        "randwrite_qd16": "iops", "metadata": "files_per_s"}
FIO_PEERS = ("smbrdma", "smbnetfs", "passthrough", "tmpfs")


def test_bench_quick(tmp_path, fuse_required, root_required, scale):
    out = tmp_path / "results"
    # the daemon is chosen as for every test: $SMBRDMA_BIN / $SMBRDMA_BUILD
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "run-bench"), "--quick",
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600 * scale)
    assert r.returncode == 0, f"run-bench --quick exited {r.returncode}:\n{r.stdout}{r.stderr}"
    files = glob.glob(str(out / "*.json"))
    assert len(files) == 1, files
    res = json.load(open(files[0]))
    assert res["quick"] is True and not res["errors"], res["errors"]
    assert res["machine"]["nproc"] and res["commit"]
    peers = res["peers"]
    for job, fig in JOBS.items():
        for peer in FIO_PEERS + ("library",):
            v = peers[peer][job]
            assert v[fig] > 0, (peer, job, v)
            key = "cpu_us_per_file" if job == "metadata" else "cpu_s_per_gib"
            assert v[key] >= 0, (peer, job, v)
        for peer in ("smbrdma", "smbnetfs", "passthrough"):
            assert peers[peer][job]["daemon_vmhwm_kib"] > 0, (peer, job)
    for job in ("seq_write", "seq_read"):
        assert peers["smbclient"][job]["mib_s"] > 0 and \
            peers["smbclient"][job]["cpu_s_per_gib"] > 0
    # the Samba's CPU per file under each SMB peer's metadata job
    for peer in ("smbrdma", "library", "smbnetfs"):
        assert peers[peer]["metadata"]["server_cpu_us_per_file"] > 0, peer
    # one run per peer and job in one round
    assert len(res["runs"]) == len(JOBS) * (len(FIO_PEERS) + 1) + 2
    assert res["daemon_peak_kib_4k_qd16"] > 0
    for job in JOBS:
        ratios = res["ratios"][job]
        assert ratios["smbrdma/smbnetfs"] > 0 and ratios["smbrdma/passthrough"] > 0, ratios
        assert ratios["library/FUSE"] > 0 and ratios["library/smbnetfs"] > 0, ratios
        assert (ratios["smbrdma/smbclient"] is None) == (not job.startswith("seq")), ratios
    assert len(res["acceptance"]) >= 7
    for line in res["acceptance"]:
        assert line["value"] is not None and line["met"] in (True, False), line
    text = open(glob.glob(str(out / "*.txt"))[0]).read()
    assert "smbnetfs" in text and "passthrough" in text and "acceptance" in text
    assert text.count(" MET") + text.count(" SHORT") == len(res["acceptance"]), text


def test_bench_quic_vs_tcp_quick(tmp_path, fuse_required, root_required, scale):
    """bench/quic-vs-tcp --quick runs both paths through the relay and
    writes JSON that parses, with a QUIC/TCP ratio per job. No timing
    assertions."""
    out = tmp_path / "results"
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "quic-vs-tcp"), "--quick",
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600 * scale)
    assert r.returncode == 0, f"quic-vs-tcp --quick exited {r.returncode}:\n{r.stdout}{r.stderr}"
    files = glob.glob(str(out / "*-quic.json"))
    assert len(files) == 1, files
    res = json.load(open(files[0]))
    assert res["quick"] is True and not res["errors"], res["errors"]
    for k in ("seq_write", "seq_read"):
        assert res["tcp"][k]["mib_s"] > 0 and res["quic"][k]["mib_s"] > 0, k
        assert res["ratio_quic_over_tcp"][k] > 0, k
    assert res["machine"]["nproc"] and res["commit"]
    assert glob.glob(str(out / "*-quic.txt"))
