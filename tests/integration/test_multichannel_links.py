"""Issue 5 on real links: a client and a server network namespace joined by
shaped veth links (tests/lib/netns.py), Samba in the server namespace,
smbrdma in the client namespace with one channel per link.  A link goes
down in the middle of a verified fio write: nothing fails, the rate comes
back on the remaining link within 2 s, the replays show in the stats, and
the channel rejoins when the link returns.  Then every link goes down for
10 s: the I/O waits and completes once a channel is bound again.

(Throughput aggregation over 2 and 4 links is measured by bench/mc-links,
not asserted here.)"""

import json
import os
import subprocess
import time


import lib.netns
from lib.mount import build_dir
from lib.netns import rate_bits

# the lab fixture, bound here so pytest finds it
netns_factory = lib.netns.netns_factory

RATE = "200mbit"
# 21 s: 3.5 s on two links, 7 s on one (the rate from 2 s to 5 s after the
# cut is measured), the rest on two again; higher for a soak (it was 30 s).
RUNTIME = int(os.environ.get("SMBRDMA_MC_FIO_RUNTIME", "21"))
# test_all_links_down_for_10s: 5 s on two links, 10 s on none, 5 s on two again
ALL_DOWN_RUNTIME = int(os.environ.get("SMBRDMA_MC_ALL_DOWN_RUNTIME", "20"))


def _mount(lab, mnt, opts):
    daemon = os.path.join(build_dir(), "fuse", "mount.smbrdma")
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        daemon = "/sbin/mount.smbrdma"
    lab.client_cmd([daemon, f"//{lab.server_addrs[0]}/{lab.samba.share}", str(mnt), "-o",
                    f"username={lab.samba.user},password={lab.samba.password},{opts}"])


def _stats(mnt):
    tool = os.path.join(build_dir(), "tools", "smbrdmactl")
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        tool = "/sbin/smbrdmactl"
    r = subprocess.run([tool, "stats", str(mnt), "--json"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _up(st):
    return sum(c["state"] == "up" for c in st["channels"])


def _fio(lab, mnt, tmp_path, runtime):
    """A verified sequential write, bandwidth logged every 250 ms.  The file
    is sized first: FUSE turns asynchronous direct writes that extend a file
    into synchronous ones, which would leave one request in flight."""
    lab.client_cmd(["truncate", "-s", "1G", f"{mnt}/f"])
    return lab.client_popen(
        ["fio", "--name=mc", f"--filename={mnt}/f", "--rw=write", "--bs=1M", "--direct=1",
         "--ioengine=libaio", "--iodepth=8", "--size=1G", "--time_based",
         f"--runtime={runtime}", "--verify=crc32c", "--verify_fatal=1",
         "--verify_state_save=0", f"--write_bw_log={tmp_path}/mc", "--log_avg_msec=250"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _bw_between(tmp_path, t0, t1):
    """Mean write bandwidth (MiB/s) logged between t0 and t1 s after fio began."""
    vals = []
    with open(f"{tmp_path}/mc_bw.1.log") as f:
        for line in f:
            ms, kib = (int(x.strip()) for x in line.split(",")[:2])
            if t0 * 1000 <= ms < t1 * 1000:
                vals.append(kib / 1024)
    return sum(vals) / len(vals) if vals else 0.0


def test_link_down_mid_write_fails_over_and_rejoins(netns_factory, need_fio, tmp_path):
    lab = netns_factory(links=2, rate=RATE, speed=rate_bits(RATE), capability="")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount(lab, mnt, "max_channels=2")
    try:
        assert _up(_stats(mnt)) == 2
        one_link = rate_bits(RATE) / 8 / 2**20
        fio = _fio(lab, mnt, tmp_path, RUNTIME)
        t_start = time.monotonic()
        t_down = RUNTIME / 6
        time.sleep(t_down)
        lab.set_link(2, up=False)
        t_down = time.monotonic() - t_start
        time.sleep(RUNTIME / 3)
        st_down = _stats(mnt)
        lab.set_link(2, up=True)
        rejoined = False
        for _ in range(100):
            if _up(_stats(mnt)) >= 2:
                rejoined = True
                break
            time.sleep(0.1)
        out, _ = fio.communicate(timeout=RUNTIME * 4 + 120)
        assert fio.returncode == 0 and "err= 0" in out, out
        before = _bw_between(tmp_path, 1, t_down - 0.5)
        after = _bw_between(tmp_path, t_down + 2, t_down + 5)
        print(f"write MiB/s: two links {before:.1f}, from 2 s after the cut {after:.1f} "
              f"(one link {one_link:.1f})")
        assert after >= 0.7 * one_link, (before, after)
        replays = sum(c["replays"] for c in st_down["channels"])
        print(json.dumps(st_down["channels"], indent=1))
        assert replays > 0 or sum(c["failovers"] for c in st_down["channels"]) > 0, st_down
        assert _up(st_down) == 1, st_down
        assert rejoined, _stats(mnt)
    finally:
        subprocess.run(["umount", str(mnt)], timeout=60)


def test_all_links_down_for_10s(netns_factory, need_fio, tmp_path):
    lab = netns_factory(links=2, rate=RATE, speed=rate_bits(RATE), capability="")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount(lab, mnt, "max_channels=2")
    try:
        fio = _fio(lab, mnt, tmp_path, ALL_DOWN_RUNTIME)
        time.sleep(5)
        lab.set_link(1, up=False)
        lab.set_link(2, up=False)
        time.sleep(10)
        lab.set_link(1, up=True)
        lab.set_link(2, up=True)
        out, _ = fio.communicate(timeout=300)
        # The I/O waited for a channel and completed; the data verifies.
        assert fio.returncode == 0 and "err= 0" in out, out
        st = _stats(mnt)
        print(json.dumps(st["channels"], indent=1))
        assert _up(st) >= 1, st
        assert sum(c["replays"] for c in st["channels"]) > 0, st
    finally:
        subprocess.run(["umount", str(mnt)], timeout=60)


def test_interfaces_option_restricts_local_links(netns_factory, tmp_path):
    lab = netns_factory(links=2, capability="")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    only1 = lab.link(1).client_if
    _mount(lab, mnt, f"max_channels=2,interfaces={only1}")
    try:
        st = _stats(mnt)
        assert _up(st) == 1, st  # link 2 leaves through another interface
    finally:
        subprocess.run(["umount", str(mnt)], timeout=60)
    _mount(lab, mnt, f"max_channels=2,interfaces={only1}:{lab.link(2).client_if}")
    try:
        st = _stats(mnt)
        assert _up(st) == 2, st
        assert {c["remote"].split(":")[0] for c in st["channels"]} == set(lab.server_addrs), st
    finally:
        subprocess.run(["umount", str(mnt)], timeout=60)
