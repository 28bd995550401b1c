"""The multichannel host lab itself (tests/lib/netns.py): two namespaces joined
by veth links, Samba in the server one answering on every link address, tc
shaping in effect, nothing reaching outside, nothing left behind - also when
the test using it fails. No daemon involved: smbclient is the client.

Samba's FSCTL_QUERY_NETWORK_INTERFACE_INFO answer is not checked here
(smbclient has no command for it); the multichannel tests check it through the
client engine. lib/netns.py's docstring says what Samba advertises."""

import os
import re
import subprocess
import time

import pytest

from lib.fileops import MIB, make_random_file, sha256
from lib.netns import PREFIX, NetnsError, NetnsLab, netns_factory, netns_list  # noqa: F401

GET_MIB = 20


def _ours():
    return [ns for ns in netns_list() if ns.startswith(f"{PREFIX}{os.getpid()}-")]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead enough (its parent reaps it)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _mounted(path):
    return subprocess.run(["findmnt", path], capture_output=True).returncode == 0


@pytest.fixture(autouse=True)
def no_leftovers():
    """Every test starts and ends with none of this process's lab namespaces."""
    assert _ours() == []
    yield
    assert _ours() == [], "a lab namespace outlived its test"


def test_two_links_each_serves_the_share(netns_factory, tmp_path):
    lab = netns_factory(links=2)
    assert lab.server_addrs == ["10.77.1.1", "10.77.2.1"]
    assert lab.client_addrs == ["10.77.1.2", "10.77.2.2"]
    srv = lab.samba
    assert (srv.host, srv.port) == ("10.77.1.1", 445)
    src = make_random_file(str(tmp_path / "src"), 1)
    lab.smbclient(f"put {src} f", host=lab.server_addrs[1])
    for addr in lab.server_addrs:
        r = lab.smbclient(f"ls; get f {tmp_path}/back-{addr}", host=addr)
        assert "blocks of size" in r.stdout and " f " in r.stdout, r.stdout
        assert sha256(f"{tmp_path}/back-{addr}") == sha256(src)
    # smbd listens on exactly the link addresses, inside the server namespace
    ss = lab.server_cmd(["ss", "-Hltn"]).stdout
    listening = sorted(re.findall(r"(\S+):445\s", ss))
    assert listening == sorted(lab.server_addrs), ss
    conf = open(srv.conf_path).read()
    assert "server multi channel support = yes" in conf
    assert ('interfaces = "10.77.1.1;speed=1000000000,capability=RSS" '
            '"10.77.2.1;speed=1000000000,capability=RSS"') in conf
    # the host's namespace cannot reach the lab, nor has it any of its veths
    host_links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert not any(ln.server_if in host_links or ln.client_if in host_links for ln in lab.links)


def test_traffic_stays_inside(netns_factory):
    lab = netns_factory(links=2, samba=False)
    for run in (lab.client_cmd, lab.server_cmd):
        routes = run(["ip", "-4", "route", "show", "table", "all"]).stdout
        assert "default" not in routes, routes
        assert not run(["ip", "-6", "route", "show", "default"]).stdout.strip()
        # only lo and the lab's veths
        devs = {ln.split()[0].split("@")[0] for ln in run(["ip", "-br", "link"]).stdout
                .splitlines()}
        assert devs <= {"lo"} | {x for ln in lab.links for x in (ln.server_if, ln.client_if)}
        r = run(["ip", "route", "get", "8.8.8.8"], check=False)
        assert r.returncode != 0 and "unreachable" in r.stderr, r


def test_four_links_speeds_and_shaping_configured(netns_factory):
    specs = [{"rate": "100mbit", "speed": 100_000_000},
             {"rate": "200mbit", "speed": 200_000_000, "capability": "RSS,RDMA"},
             {"speed": 10_000_000_000, "capability": ""},
             {"rate": "1gbit", "burst": "512kb", "latency": "20ms"}]
    lab = netns_factory(links=specs)
    conf = open(lab.samba.conf_path).read()
    assert ('interfaces = "10.77.1.1;speed=100000000,capability=RSS" '
            '"10.77.2.1;speed=200000000,capability=RSS,capability=RDMA" '
            '"10.77.3.1;speed=10000000000" '
            '"10.77.4.1;speed=1000000000,capability=RSS"') in conf, conf
    want = {1: "100Mbit", 2: "200Mbit", 3: None, 4: "1Gbit"}
    for ln in lab.links:
        for run, dev in ((lab.server_cmd, ln.server_if), (lab.client_cmd, ln.client_if)):
            q = run(["tc", "qdisc", "show", "dev", dev]).stdout
            if want[ln.index]:
                assert "tbf" in q and f"rate {want[ln.index]}" in q, q
            else:
                assert "tbf" not in q, q
        lab.smbclient("ls", host=ln.server_addr)


def _smbclient_rate(out):
    """bits/s from smbclient's "(N KiloBytes/sec)" (KiB/s) after a get."""
    m = re.search(r"\(([0-9.]+) KiloBytes/sec\)", out)
    assert m, out
    return float(m.group(1)) * 1024 * 8


def test_shaping_is_in_effect(netns_factory):
    rate = "200mbit"
    lab = netns_factory(links=2, rate=rate)
    shaped_bps = lab.link(1).rate_bps
    src = os.path.join(lab.samba.share_path, "big")
    make_random_file(src, GET_MIB)
    lab.samba.chown_to_user(src)
    floor_s = GET_MIB * MIB * 8 / shaped_bps  # the least time the rate allows
    measured = {}
    for ln in lab.links:
        t = time.monotonic()
        r = lab.smbclient("get big /dev/null", host=ln.server_addr)
        wall = time.monotonic() - t
        bps = _smbclient_rate(r.stdout + r.stderr)
        measured[ln.index] = bps
        print(f"link {ln.index} at {rate}: {GET_MIB} MiB in {wall:.2f} s wall, smbclient says "
              f"{bps / 1e6:.0f} Mbit/s (floor {floor_s:.2f} s)")
        # a property check, not a speed target: well under twice the rate
        assert bps < 2 * shaped_bps, (ln.index, bps)
        assert wall > floor_s / 2, (ln.index, wall)
    # and the shaping is what holds it back: unshaped, the same get is faster
    lab.unshape(2)
    r = lab.smbclient("get big /dev/null", host=lab.link(2).server_addr)
    free_bps = _smbclient_rate(r.stdout + r.stderr)
    print(f"link 2 unshaped: {free_bps / 1e6:.0f} Mbit/s")
    assert free_bps > measured[2], (free_bps, measured)


def test_teardown_after_an_exception():
    with pytest.raises(RuntimeError, match="boom"):
        with NetnsLab(links=2) as lab:
            names = [lab.server_ns, lab.client_ns]
            pid, share = lab.samba.proc.pid, lab.samba.share_path
            helper = lab.client_popen(["sleep", "600"])
            assert set(names) <= set(netns_list())
            raise RuntimeError("boom")
    assert not set(names) & set(netns_list())
    assert not _alive(pid), "smbd outlived the lab"
    assert helper.poll() is not None
    assert not _mounted(share)


@pytest.mark.parametrize("where", ["tc", "samba"])
def test_teardown_after_a_failed_start(where):
    # the namespaces and veths exist by then; a bad rate fails in tc, a bad
    # tmpfs size fails while Samba sets up
    kw = {"rate": "fast"} if where == "tc" else {"tmpfs_size": "nonsense"}
    lab = NetnsLab(links=2, **kw)
    try:
        with pytest.raises(Exception) as e:
            lab.start()
        if where == "tc":
            assert isinstance(e.value, NetnsError) and "tc" in str(e.value), e.value
        else:
            assert isinstance(e.value, subprocess.CalledProcessError), e.value
        assert lab.server_ns not in netns_list() and lab.client_ns not in netns_list()
    finally:
        lab.close()


def test_stale_lab_of_a_dead_process_is_removed(netns_factory):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{PREFIX}{dead.pid}-1-srv"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        netns_factory(links=1, samba=False)
        assert stale not in netns_list()
    finally:
        subprocess.run(["ip", "netns", "del", stale], capture_output=True)


def test_process_in_lab_killed_at_close(netns_factory):
    lab = netns_factory(links=1, samba=False)
    # not through client_popen: a process the lab does not know of
    p = subprocess.Popen(lab.client_prefix + ["sleep", "600"])
    time.sleep(0.2)
    lab.close()
    assert p.wait(timeout=10) != 0
