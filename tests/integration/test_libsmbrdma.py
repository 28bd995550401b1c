"""libsmbrdma (lib/smbrdma.h) and smbrdma-bench against the private Samba.

The API test program (tests/libsmbrdma/apitest.c) makes every call of the
public header and checks its result; what it wrote is compared here with
what Samba stored.  smbrdma-bench runs short jobs whose JSON must parse and
whose data must be on the server's disk; its --verify must catch a byte
changed behind its back.  Speed is not asserted here (bench/ measures it).
"""

import json
import os
import re
import shutil
import struct
import subprocess

from lib.mount import build_dir, build_sanitizer, timeout_scale

MASK = (1 << 64) - 1
SEED = 0x5EED  # tools/smbrdma-bench.c pattern_seed


def mix64(x):
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    x ^= x >> 33
    return x


def pattern(off, length):
    """What smbrdma-bench writes at file offset off (off a multiple of 8)."""
    words = (mix64((off + i) ^ SEED) for i in range(0, length, 8))
    return b"".join(struct.pack("<Q", w) for w in words)[:length]


def tool(*parts):
    path = os.path.join(build_dir(), *parts)
    assert os.access(path, os.X_OK), f"{path} not built"
    return path


def bench(samba, name, *args, expect=0):
    cmd = [tool("tools", "smbrdma-bench"), f"//127.0.0.1:{samba.port}/{samba.share}/{name}",
           f"--user={samba.user}", f"--password={samba.password}", "--json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120 * timeout_scale())
    assert r.returncode == expect, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout), r.stderr


def check_report(rep, rw, bs, depth):
    assert rep["tool"] == "smbrdma-bench" and rep["rw"] == rw
    assert rep["bs"] == bs and rep["iodepth"] == depth
    assert rep["session"]["dialect"] == "0x0311" and rep["session"]["channels"] == 1
    assert rep["errors"] == 0 and rep["mismatches"] == 0, rep
    for d in ("read", "write"):
        lat = rep[d]["lat_us"]
        assert set(lat) == {"min", "mean", "p50", "p99", "p99.9", "max"}
        if rep[d]["ios"]:
            assert rep[d]["bytes"] == rep[d]["ios"] * bs
            assert rep[d]["iops"] > 0 and rep[d]["mib_s"] > 0
            assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    assert rep["cpu_s"] >= 0 and rep["cpu_s_per_gib"] >= 0


def test_api_against_samba(samba):
    r = subprocess.run([tool("tests", "apitest"), "127.0.0.1", str(samba.port), samba.share,
                        samba.user, samba.password],
                       capture_output=True, text=True, timeout=120 * timeout_scale())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failed" in r.stdout, r.stdout
    want = bytes((i * 7 + 3) & 0xFF for i in range(1 << 20))
    with open(os.path.join(samba.share_path, "keep.bin"), "rb") as f:
        assert f.read() == want
    assert not os.path.exists(os.path.join(samba.share_path, "d"))


def test_bench_sequential_write_lands_on_disk(samba):
    rep, _ = bench(samba, "seq.dat", "--rw=write", "--bs=1m", "--iodepth=4", "--size=16m",
                   "--verify", "--keep")
    check_report(rep, "write", 1 << 20, 4)
    assert rep["write"]["ios"] == 16 and rep["read"]["ios"] == 0
    with open(os.path.join(samba.share_path, "seq.dat"), "rb") as f:
        data = f.read()
    assert len(data) == 16 << 20
    for off in (0, 5 << 20, (16 << 20) - 4096):
        assert data[off:off + 4096] == pattern(off, 4096), f"offset {off}"


def test_bench_random_mixed_with_verify(samba):
    rep, _ = bench(samba, "mixed.dat", "--rw=randrw", "--rwmixread=70", "--bs=4k",
                   "--iodepth=16", "--numjobs=2", "--size=4m", "--runtime=2", "--time_based",
                   "--verify")
    check_report(rep, "randrw", 4096, 16)
    assert rep["read"]["ios"] > 0 and rep["write"]["ios"] > 0
    assert rep["numjobs"] == 2
    # write jobs clean up after themselves unless --keep
    assert not [n for n in os.listdir(samba.share_path) if n.startswith("mixed.dat")]


def test_bench_verify_catches_a_changed_byte(samba):
    bench(samba, "v.dat", "--rw=write", "--bs=64k", "--size=1m", "--verify", "--keep")
    path = os.path.join(samba.share_path, "v.dat")
    with open(path, "r+b") as f:
        f.seek(300000)
        b = f.read(1)
        f.seek(300000)
        f.write(bytes([b[0] ^ 0x40]))
    rep, err = bench(samba, "v.dat", "--rw=read", "--bs=64k", "--size=1m", "--verify",
                     expect=1)
    assert rep["mismatches"] == 1 and rep["read"]["ios"] == 16, rep
    assert "verify failed" in err


def test_bench_meta_job(samba):
    """--meta: N files created, stat'ed and unlinked in a directory that is
    gone afterwards; a name already there fails the O_EXCL create with a
    clear error and exit 1."""
    rep, _ = bench(samba, "metad", "--meta=50")
    m = rep["meta"]
    assert m["files"] == 50 and m["files_per_s"] > 0 and m["cpu_s"] >= 0, rep
    for step in ("create", "stat", "unlink"):
        lat = m[f"{step}_us"]
        assert 0 < lat["p50"] <= lat["p99"] and lat["mean"] > 0, (step, lat)
    assert rep["error"] == "" and not os.path.exists(os.path.join(samba.share_path, "metad"))
    d = os.path.join(samba.share_path, "metae")
    os.mkdir(d)
    open(os.path.join(d, "f000003"), "w").close()
    samba.chown_to_user(d)
    rep, err = bench(samba, "metae", "--meta=10", expect=1)
    assert rep["meta"]["files"] == 3 and rep["error"] == "File exists", rep
    assert "create metae/f000003: File exists" in err, err
    # the three before it were unlinked; the one that was there stays
    assert os.listdir(d) == ["f000003"]
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "man", "smbrdma-bench.1")) as f:
        text = f.read().replace("\\-", "-")
    missing = [k for k in set(rep) | set(m) if k not in text]
    assert not missing, f"smbrdma-bench(1) does not name: {missing}"


def test_bench_bad_arguments(samba):
    for args, msg in ((["--rw=sideways"], "--rw=sideways"), (["--bs=0"], "--bs"),
                      (["--size=3k", "--bs=2k"], "multiple of --bs")):
        r = subprocess.run([tool("tools", "smbrdma-bench"), "//127.0.0.1/x/y", *args],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
    r = subprocess.run([tool("tools", "smbrdma-bench"), f"//127.0.0.1:{samba.port}/"
                        f"{samba.share}/x", f"--user={samba.user}", "--password=wrong"],
                       capture_output=True, text=True, timeout=60 * timeout_scale())
    assert r.returncode == 1 and "logon failure" in r.stderr, r.stderr


def test_pkg_config_builds_a_program(tmp_path):
    """A program built with `pkg-config --cflags --libs smbrdma` (the
    build tree's uninstalled .pc) links and runs against the library."""
    for prog in ("pkg-config", "cc"):
        assert shutil.which(prog), f"{prog} is not installed (.ci/run installs it)"
    src = tmp_path / "v.c"
    src.write_text('#include <smbrdma.h>\n#include <stdio.h>\n'
                   'int main(void) { struct smbrdma_params p; smbrdma_params_init(&p);\n'
                   '  printf("%s %zu\\n", smbrdma_version(), p.struct_size); return 0; }\n')
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(build_dir(), "meson-uninstalled"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "smbrdma-uninstalled"],
                           capture_output=True, text=True, env=env, check=True).stdout.split()
    sanitize = build_sanitizer()
    if sanitize != "none":  # the library needs its sanitizer runtime loaded first
        flags.append(f"-fsanitize={sanitize}")
    subprocess.run(["cc", "-o", str(tmp_path / "v"), str(src), *flags], check=True)
    out = subprocess.run([str(tmp_path / "v")], capture_output=True, text=True, check=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(build_dir(),
                                                                           "lib"))).stdout
    assert out.split()[0] == "0.1.0" and int(out.split()[1]) > 64


def test_man_pages_render_and_name_every_report_key(samba):
    man_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "man")
    for page in ("libsmbrdma.3", "smbrdma-bench.1"):
        r = subprocess.run(["groff", "-wall", "-man", "-Tutf8", os.path.join(man_dir, page)],
                           capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr.strip(), (page, r.stderr)
    with open(os.path.join(man_dir, "smbrdma-bench.1")) as f:
        text = f.read().replace("\\-", "-")
    rep, _ = bench(samba, "k.dat", "--rw=randread", "--size=64k", "--runtime=0.2")
    keys = set(rep) | set(rep["session"]) | set(rep["read"]) | set(rep["read"]["lat_us"]) | \
        set(rep["bytes"])
    missing = sorted(k for k in keys if k not in text)
    assert not missing, f"smbrdma-bench(1) does not name: {missing}"
    # and every function of the header is in libsmbrdma(3)
    with open(os.path.join(man_dir, "..", "lib", "smbrdma.h")) as f:
        funcs = set(re.findall(r"\b(smbrdma_[a-z_]+)\(", f.read())) - {"smbrdma_params_init_"}
    with open(os.path.join(man_dir, "libsmbrdma.3")) as f:
        page = f.read()
    assert not sorted(fn for fn in funcs if fn not in page)
