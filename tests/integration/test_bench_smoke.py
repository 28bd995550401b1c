"""bench/run-bench --quick completes against the private Samba through the
mount and writes JSON that parses. No timing assertions."""

import glob
import json
import os
import subprocess
import sys

from lib.mount import REPO


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
    for k in ("seq_write", "seq_read", "randread_qd1", "randread_qd16", "metadata"):
        assert k in res["smbrdma"], k
    assert {"put_mib_s", "get_mib_s"} <= set(res["smbclient"])
    assert res["machine"]["nproc"] and res["commit"]
    assert glob.glob(str(out / "*.txt"))


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
