"""bench/run-bench --quick (random I/O jobs 1 s each, --runtime 1: the
figures need no more) completes against the private Samba with every
peer (mount.smbrdma, smbrdma-bench, smbnetfs, smbclient, the FUSE
passthrough, tmpfs) and writes JSON and text that parse: a figure per peer
and job, CPU per GiB, the daemon's peak memory, the ratios and the
acceptance lines, and beside them the SVGs of bench/plot (issue 25) that
render to a picture. No timing assertions: whether a line is MET is not
checked, only that it carries a figure. The same for bench/run-workloads
(issue 21) and bench/quic-vs-tcp."""

import glob
import json
import os
import subprocess
import sys

import pytest

from lib.mount import REPO, ring_unavailable_reason
from test_bench_plot import need_tools, render_check

# alone (tests/pytest.ini): the benchmarks set enable_uring and drop caches
pytestmark = pytest.mark.alone

# the figure of each job, and the peers that run it (see bench/run-bench)
JOBS = {"seq_write": "mib_s", "seq_read": "mib_s", "seq_write_qd8": "mib_s",
        "seq_read_qd8": "mib_s", "randread_qd1": "iops", "randread_qd16": "iops",
        "randwrite_qd16": "iops", "metadata": "files_per_s"}
FIO_PEERS = ("smbrdma", "smbnetfs", "passthrough", "tmpfs")
# with FUSE over io_uring (bench/run-bench leaves it out, saying why, elsewhere)
RING = () if ring_unavailable_reason() else ("smbrdma-ring",)


def quick_run(tmp_path, scale, tool, *args, suffix=""):
    """bench/TOOL --quick ARGS --out TMP must exit 0 and write one results
    file *SUFFIX.json with no errors; returns it parsed, and its .txt."""
    out = tmp_path / "results"
    # the daemon is chosen as for every test: $SMBRDMA_BIN / $SMBRDMA_BUILD
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", tool), "--quick", *args,
                        "--out", str(out)],
                       capture_output=True, text=True, timeout=600 * scale)
    assert r.returncode == 0, f"{tool} --quick exited {r.returncode}:\n{r.stdout}{r.stderr}"
    files = glob.glob(str(out / f"*{suffix}.json"))
    assert len(files) == 1, files
    res = json.load(open(files[0]))
    assert res["quick"] is True and not res["errors"], res["errors"]
    assert res["machine"]["nproc"] and res["commit"]
    with open(files[0][:-len(".json")] + ".txt") as f:
        return res, f.read()


def test_bench_quick(tmp_path, fuse_required, root_required, scale):
    res, text = quick_run(tmp_path, scale, "run-bench", "--runtime", "1")
    peers = res["peers"]
    for job, fig in JOBS.items():
        for peer in FIO_PEERS + RING + ("library",):
            v = peers[peer][job]
            assert v[fig] > 0, (peer, job, v)
            key = "cpu_us_per_file" if job == "metadata" else "cpu_s_per_gib"
            assert v[key] >= 0, (peer, job, v)
        for peer in ("smbrdma", "smbnetfs", "passthrough") + RING:
            assert peers[peer][job]["daemon_vmhwm_kib"] > 0, (peer, job)
    for job in ("seq_write", "seq_read"):
        assert peers["smbclient"][job]["mib_s"] > 0 and \
            peers["smbclient"][job]["cpu_s_per_gib"] > 0
    # the Samba's CPU per file under each SMB peer's metadata job
    for peer in ("smbrdma", "library", "smbnetfs") + RING:
        assert peers[peer]["metadata"]["server_cpu_us_per_file"] > 0, peer
    # one run per peer and job in one round
    assert len(res["runs"]) == len(JOBS) * (len(FIO_PEERS) + len(RING) + 1) + 2
    if RING:
        # the ring against /dev/fuse: a ratio and a CPU ratio per job, and
        # issue 24's acceptance lines
        for job in JOBS:
            rv = res["ring_vs_dev"][job]
            assert rv["ring/dev"] > 0 and len(rv["paired"]) == 1, rv
            # a CPU ratio wherever both sides' CPU registered (a 16 MiB job
            # can end within one clock tick and one of fio's samples)
            cpu = [peers[p][job][rv["cpu_key"]] for p in ("smbrdma", "smbrdma-ring")]
            if all(cpu):
                assert rv["cpu_dev/ring"] == pytest.approx(cpu[0] / cpu[1]), (rv, cpu)
            else:
                assert rv["cpu_dev/ring"] is None, (rv, cpu)
        assert "FUSE over io_uring (smbrdma-ring)" in text
    else:
        assert "smbrdma-ring" in res["skipped_peers"]
    assert res["daemon_peak_kib_4k_qd16"] > 0
    for job in JOBS:
        ratios = res["ratios"][job]
        assert ratios["smbrdma/smbnetfs"] > 0 and ratios["smbrdma/passthrough"] > 0, ratios
        assert ratios["library/FUSE"] > 0 and ratios["library/smbnetfs"] > 0, ratios
        assert (ratios["smbrdma/smbclient"] is None) == (not job.startswith("seq")), ratios
    assert len(res["acceptance"]) >= 7
    for line in res["acceptance"]:
        assert line["value"] is not None and line["met"] in (True, False), line
    assert "smbnetfs" in text and "passthrough" in text and "acceptance" in text
    assert text.count(" MET") + text.count(" SHORT") == len(res["acceptance"]), text
    # fio's completion-latency percentiles of every fio job
    for job in JOBS:
        if job != "metadata":
            for peer in FIO_PEERS + RING:
                pct = peers[peer][job]["clat_pct_us"]
                assert sorted(pct) == ["50", "90", "99", "99.9", "99.99"], (peer, job, pct)
                assert 0 < pct["50"] <= pct["99"] <= pct["99.99"], (peer, job, pct)
    # the plots beside the results: bars per job and peer, the latency percentiles
    need_tools()
    stem = glob.glob(str(tmp_path / "results" / "*.json"))[0][:-len(".json")]
    render_check(stem + ".svg", tmp_path, list(peers) + ["seq write 1M qd1", "create+stat+unlink"])
    render_check(stem + "-latency.svg", tmp_path, list(FIO_PEERS + RING) + ["library", "p99.9"])


def test_bench_quic_vs_tcp_quick(tmp_path, fuse_required, root_required, scale):
    """bench/quic-vs-tcp --quick runs both paths through the relay and
    writes JSON that parses, with a QUIC/TCP ratio per job. No timing
    assertions."""
    res, text = quick_run(tmp_path, scale, "quic-vs-tcp", suffix="-quic")
    for k in ("seq_write", "seq_read"):
        assert res["tcp"][k]["mib_s"] > 0 and res["quic"][k]["mib_s"] > 0, k
        assert res["ratio_quic_over_tcp"][k] > 0, k
    assert text


# bench/run-workloads: every workload, and those whose requests must reach
# the server whatever a cache keeps (a warm run may rightly send none)
WORKLOADS = ("cp_in", "cp_out_cold", "fio_write_qd8", "fio_read_qd8", "tar_x", "tar_c",
             "ls_lR_cold", "ls_lR_warm", "du", "rm_rf", "git_clone", "git_status_cold",
             "git_status_warm")
WARM = ("ls_lR_warm", "git_status_warm")


def test_workloads_quick(tmp_path, fuse_required, root_required, need_fio, scale):
    """bench/run-workloads --quick on mount.smbrdma and tmpfs: every workload
    has a time on both, smbrdma's SMB request counts (from smbrdmactl) and
    per-entry figures are there, the ratios and the acceptance lines of issue
    21 carry figures (the baseline's is n/a without --baseline). Whether a
    line is MET is not checked."""
    res, text = quick_run(tmp_path, scale, "run-workloads", "--peers", "smbrdma,tmpfs",
                          suffix="-workloads-quick")
    assert not res["skipped"] and not res["cannot"], (res["skipped"], res["cannot"])
    assert res["samba"]["version"]
    tree = res["params"]["tree"]
    assert tree["entries"] == 300 == tree["files"] + tree["directories"], tree
    assert sorted(res["peers"]) == ["smbrdma", "tmpfs"]
    for wl in WORKLOADS:
        for peer in ("smbrdma", "tmpfs"):
            assert res["peers"][peer][wl]["seconds"] > 0, (peer, wl)
        assert "requests" not in res["peers"]["tmpfs"][wl], wl
        v = res["peers"]["smbrdma"][wl]
        assert v["requests"] >= (0 if wl in WARM else 1), (wl, v)
        per = v.get("requests_per_entry", v.get("requests_per_mib"))
        assert per is not None and per >= 0, (wl, v)
        assert res["ratios"][wl]["smbrdma/tmpfs"] > 0, wl
        assert res["ratios"][wl]["smbrdma/smbnetfs"] is None, wl
    for wl in ("cp_in", "cp_out_cold", "fio_write_qd8", "fio_read_qd8"):
        assert res["peers"]["smbrdma"][wl]["mib_s"] > 0, wl
    # what cold tar c, ls -lR and du read is the tree tar x made
    assert res["peers"]["smbrdma"]["tar_c"]["archive_bytes"] > tree["bytes"]
    assert res["peers"]["smbrdma"]["du"]["kib"] > 0
    assert res["peers"]["smbrdma"]["git_status_cold"]["changed"] == 0
    assert len(res["runs"]) == 2 * len(WORKLOADS)
    assert len(res["acceptance"]) == 6, res["acceptance"]
    for ln in res["acceptance"]:
        if "baseline" in ln["what"]:
            assert ln["value"] is None and ln["met"] is None, ln
        else:
            assert ln["value"] is not None and ln["met"] in (True, False), ln
    assert "acceptance (issue 21)" in text and "tar x" in text and "smbrdma" in text
    assert text.count(" MET") + text.count(" SHORT") == 5, text
    need_tools()
    svg = glob.glob(str(tmp_path / "results" / "*-workloads-quick.svg"))
    assert len(svg) == 1, svg
    render_check(svg[0], tmp_path, ["smbrdma", "tmpfs", "tar x", "git clone"])
