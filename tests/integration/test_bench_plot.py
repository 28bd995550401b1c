"""bench/plot (issue 25) on committed results of every kind it knows: the
SVGs it writes render to PNG with rsvg-convert, and the PNGs are pictures
(many colours, the peers' bars or lines in colour, not a blank page); the
SVG names every peer and job of the results.  No Samba, no mount: a few
seconds.  bench/run-bench, run-workloads, vm-workloads and vm-compare call
bench/plot and only warn when it fails, so this is the test that fails on
a broken plot.  render_check() is also what test_bench_smoke uses on the
SVG beside a fresh run-bench results file."""

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

import pytest

from lib.mount import REPO

RESULTS = os.path.join(REPO, "bench", "results")
PLOT = os.path.join(REPO, "bench", "plot")


def need_tools():
    for tool in ("gnuplot", "rsvg-convert"):
        # tools/install-deps installs both: their absence is a setup error,
        # not a machine that cannot run the test
        assert shutil.which(tool), \
            f"{tool} not installed (tools/install-deps installs gnuplot-nox and librsvg2-bin)"


def png_pixels(path):
    """(width, height, [(r, g, b), ...]) of an 8-bit RGB or RGBA PNG (what
    rsvg-convert writes), decoded with zlib and PNG's five row filters."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    pixels = []
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        # RGBA over white (rsvg-convert's background is transparent)
        for x in range(0, stride, bpp):
            r, g, b_ = line[x:x + 3]
            al = line[x + 3] if bpp == 4 else 255
            pixels.append(tuple((v * al + 255 * (255 - al)) // 255 for v in (r, g, b_)))
        prev = line
    return w, h, pixels


def render_check(svg, tmp_dir, names=()):
    """svg renders with rsvg-convert to a PNG of non-trivial size, at least
    800x300; rendered again at a third of the size (Python decodes that one
    in a second, not ten), it is a picture: many colours, at least 0.5% of
    its pixels in a saturated colour (bars, lines), at least 1% not white.
    And the SVG holds each of names as a text."""
    png = os.path.join(str(tmp_dir), os.path.basename(svg)[:-4] + ".png")
    small = png[:-4] + "-small.png"
    for args in (["-o", png], ["-z", "0.33", "-o", small]):
        r = subprocess.run(["rsvg-convert", *args, svg], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"rsvg-convert {svg}: {r.stderr}"
    assert os.path.getsize(png) > 10000, (png, os.path.getsize(png))
    with open(png, "rb") as f:
        w, h = struct.unpack(">II", f.read(24)[16:24])
    assert w >= 800 and h >= 300, (png, w, h)
    _, _, px = png_pixels(small)
    colours = set(px)
    saturated = sum(1 for p in px if max(p) - min(p) > 60)
    inked = sum(1 for p in px if p != (255, 255, 255))
    assert len(colours) > 20, (svg, len(colours))
    assert saturated > 0.005 * len(px), (svg, saturated, len(px))
    assert inked > 0.01 * len(px), (svg, inked, len(px))
    with open(svg) as f:
        text = f.read()
    for n in names:
        assert f">{n}<" in text, (svg, n)
    return png


def latest(regex):
    """The newest committed results file whose name matches regex."""
    files = sorted(f for f in os.listdir(RESULTS) if re.fullmatch(regex, f))
    assert files, regex
    return os.path.join(RESULTS, files[-1])


def bench_with_percentiles():
    """The newest committed run-bench results whose fio jobs carry
    clat_pct_us (run-bench records them since issue 25)."""
    for f in sorted(glob.glob(os.path.join(RESULTS, "2*.json")), reverse=True):
        res = json.load(open(f))
        if "bs_seq" in res.get("params", {}) and any(
                "clat_pct_us" in r for d in res["peers"].values() for r in d.values()):
            return f
    pytest.fail("no committed run-bench results with clat_pct_us")


def plot(path, out):
    r = subprocess.run([sys.executable, PLOT, path, "--out-dir", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"bench/plot {path}:\n{r.stdout}{r.stderr}"
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem, r.stdout


BENCH_LABELS = ("seq write 1M qd1", "4k randread qd16", "create+stat+unlink")


@pytest.mark.parametrize("which", ["latest", "all-peers", "percentiles"])
def test_plot_run_bench(tmp_path, which):
    need_tools()
    path = {"latest": lambda: latest(r"\d{8}-\d{6}-[0-9a-f]{7}\.json"),
            # one with smbnetfs, smbclient, passthrough, tmpfs and the @base peers too
            "all-peers": lambda: os.path.join(RESULTS, "20261126-020451-517ceb3.json"),
            "percentiles": bench_with_percentiles}[which]()
    res = json.load(open(path))
    stem, out = plot(path, tmp_path)
    svg, lat = tmp_path / f"{stem}.svg", tmp_path / f"{stem}-latency.svg"
    assert str(svg) in out and str(lat) in out, out
    render_check(str(svg), tmp_path, list(res["peers"]) + list(BENCH_LABELS))
    # smbclient runs no fio: no latency
    render_check(str(lat), tmp_path, [p for p in res["peers"] if p != "smbclient"])
    text = lat.read_text()
    if which == "percentiles":
        assert ">p99.9<" in text and "fio clat percentiles" in text
    elif which == "all-peers":
        # results older than the percentiles: the mean, and the plot says so
        assert "hold no latency percentiles" in text and ">p99.9<" not in text


def test_plot_run_workloads(tmp_path):
    need_tools()
    path = latest(r"\d{8}-\d{6}-[0-9a-f]{7}-workloads\.json")
    res = json.load(open(path))
    stem, _ = plot(path, tmp_path)
    render_check(str(tmp_path / f"{stem}.svg"), tmp_path,
                 list(res["peers"]) + ["tar x", "git clone", "MiB/s"])


def test_plot_vm_workloads(tmp_path):
    need_tools()
    path = latest(r"\d{8}-\d{6}-[0-9a-f]{7}-vm-workloads\.json")
    res = json.load(open(path))
    stem, _ = plot(path, tmp_path)
    render_check(str(tmp_path / f"{stem}.svg"), tmp_path, list(res["results"]) + ["tar x"])


def test_plot_vm_compare(tmp_path):
    need_tools()
    path = latest(r"\d{8}-\d{6}-[0-9a-f]{7}-vm-compare\.txt")
    stem, _ = plot(path, tmp_path)
    render_check(str(tmp_path / f"{stem}.svg"), tmp_path,
                 ["smbrdma rdma", "cifs rdma", "smbrdma tcp", "cifs tcp", "seq read 1M qd8",
                  "4k randread qd16"])


def test_plot_refuses_other_files(tmp_path):
    """A file that is no results of the four kinds: exit 1, no SVG."""
    need_tools()
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"hello": 1}))
    r = subprocess.run([sys.executable, PLOT, str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "not results of" in r.stderr, r
    assert not glob.glob(str(tmp_path / "*.svg"))


def test_committed_svgs_render(tmp_path):
    """Every SVG committed in bench/results renders and is a picture."""
    need_tools()
    svgs = glob.glob(os.path.join(RESULTS, "*.svg"))
    assert svgs, "no SVG committed in bench/results"
    for svg in svgs:
        render_check(svg, tmp_path)
