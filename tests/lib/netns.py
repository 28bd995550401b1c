"""Multichannel host lab: a server and a client network namespace joined by
N veth links, each optionally shaped with tc, and a private Samba (lib.samba)
running in the server namespace with multichannel on. Needs root.

    with NetnsLab(links=2, rate="200mbit") as lab:
        lab.server_addrs            # ["10.77.1.1", "10.77.2.1"]
        lab.client_addrs            # ["10.77.1.2", "10.77.2.2"]
        lab.samba                   # SambaServer: .host .port .share .user .password
        lab.smbclient("ls", host=lab.server_addrs[1])
        lab.client_cmd(["ip", "-br", "addr"])       # in the client namespace
        lab.client_popen(["mount.smbrdma", ...])     # a long-running one
        lab.set_link(2, up=False)                    # cut link 2 (client end)
        lab.shape(1, rate="100mbit")                 # re-shape link 1 (both ends)

In pytest, import the fixture into a test module and call it:

    from lib.netns import netns_factory  # noqa: F401
    def test_x(netns_factory):
        lab = netns_factory(links=4, rate="500mbit")

Topology. Link i (1-based) is a veth pair: its server end (lab.links[i-1].
server_if, in namespace lab.server_ns) has 10.77.<i>.1/24 and its client end
(.client_if, in lab.client_ns) 10.77.<i>.2/24. The veths are created directly
inside the two namespaces; nothing is added to the host's namespace, neither
namespace has a default route or any other device but lo, so traffic to or
from them cannot leave (DNS is not set up; use addresses). With rate= a link
gets `tc qdisc add dev X root tbf rate R burst B latency L` on both ends, so
reads (server to client) and writes are shaped alike.

Commands. client_cmd()/client_popen() run argv under
`nsenter --net=/run/netns/<client_ns>`: only the network namespace changes.
(`ip netns exec` would also unshare the mount namespace and remount /sys, so
a FUSE mount made by the command would be invisible to the test.)
server_cmd() does the same in the server namespace; Samba's smbd runs that way
too (lib.samba's wrapper= hook), with its share on a tmpfs in the host's mount
namespace, so lab.samba.share_path is readable from the test.

What Samba advertises. smb.conf gets `server multi channel support = yes`,
`bind interfaces only = yes`, port 445, and one `interfaces` entry per link,
"10.77.<i>.1;speed=<speed>,capability=<cap>" (capability RSS by default; a
link spec may say "RSS,RDMA", "RDMA" or "" for none). smbd matches each
address to the kernel interface holding it, probed once at startup (so the
veths are up and addressed before smbd starts; an address it cannot find is
dropped with a level-2 log line), and answers FSCTL_QUERY_NETWORK_INTERFACE_INFO
with one NETWORK_INTERFACE_INFO per matched address, in REVERSE order of the
list (Samba prepends each interface it adds: link N comes first):
  - IfIndex: the server-end veth's ifindex inside the server namespace (what
    `ip -n <server_ns> link` shows), unless the entry sets if_index=;
  - Capability: exactly the listed capability= values ORed (RSS 0x1, RDMA 0x2);
    without capability= Samba uses what it probed: RSS if ETHTOOL_GRXRINGS
    reports more than one RX ring (a veth reports none), else 0;
  - LinkSpeed: speed= in bits/s (tc shaping does not change it); without it,
    ethtool's speed (a veth says 10000 Mb/s), 1 Gb/s if ethtool has none, 0 if
    the device had no carrier at startup, and an interface of speed 0 is left
    out of the reply altogether (speed=0 in the entry counts as not given);
  - SockAddr: family 0x0002 with the link's server address, port 0.
(Checked against Samba 4.17 with mount.smbrdma's debug log: three links listed
1, 2, 3 came back as 10.77.3.1, .2.1, .1.1 with IfIndex 4, 3, 2.) RDMA is only
a label here: Samba 4.17 has no SMB Direct, so a client that believes it finds
nothing listening on 5445 and must fall back to TCP.
Nothing else is listed: not lo, not the client's addresses. With multichannel
off (`server multi channel support = no`) the FSCTL fails with
STATUS_INVALID_DEVICE_REQUEST (STATUS_FS_DRIVER_REQUIRED on IPC$).

Teardown (close(), the context manager's exit, the pytest fixture's finalizer,
and atexit for anything left) stops smbd, kills by pid whatever still runs in
either namespace (`ip netns pids`: smbd helpers, a leftover client), deletes
both namespaces (which deletes their veths) and checks they are gone. A new
lab also removes namespaces left by a lab whose process died (names carry the
creating pid). Kill a FUSE daemon that is still mounted and its mount point is
left dead: unmount before the lab goes (the mount fixtures do).

Run as a script (python3 -m lib.netns from tests/ [--links N] [--rate R]) it
brings a lab up, prints one JSON line describing it and holds it until stdin
closes or SIGTERM, like lib.samba.
"""

import atexit
import json
import os
import re
import signal
import subprocess
import sys
import time

from lib.samba import SambaServer

PREFIX = "smbrdma-mc"
NETNS_DIR = "/run/netns"
DEFAULT_RATE_BURST = "256kb"
DEFAULT_LATENCY = "50ms"
_live = []
_counter = [0]


class NetnsError(RuntimeError):
    pass


def _run(argv, check=True, timeout=60, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def rate_bits(rate):
    """tc rate ("200mbit", "1gbit", "500kbit", "10mbps", 123) -> bits/s."""
    if isinstance(rate, (int, float)):
        return int(rate)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)(bit|bps)?\s*", rate.lower())
    if not m:
        raise ValueError(f"cannot read tc rate {rate!r}")
    n = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
    return int(n * 8 if m.group(3) == "bps" else n)


def netns_list():
    """Names in `ip netns list` (the first word of each line)."""
    r = _run(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]


def _pids_in(ns):
    r = _run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def _kill_all_in(ns, grace=3.0):
    """SIGTERM, then SIGKILL, every process inside netns ns, by pid."""
    pids = _pids_in(ns)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            pids = _pids_in(ns)
            if not pids:
                return
            time.sleep(0.05)


def _delete_ns(ns):
    _kill_all_in(ns)
    _run(["ip", "netns", "del", ns], check=False)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_stale():
    """Delete lab namespaces whose creating process is gone."""
    for ns in netns_list():
        m = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\d+-(srv|cli)", ns)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _delete_ns(ns)


class Link:
    """One veth link. rate None = unshaped. speed/capability are what Samba
    advertises for it (bits/s; "RSS", "RDMA", "RSS,RDMA" or "")."""

    def __init__(self, index, tag, rate=None, burst=None, latency=None,
                 speed=1_000_000_000, capability="RSS"):
        self.index = index
        self.server_addr = f"10.77.{index}.1"
        self.client_addr = f"10.77.{index}.2"
        # veths live only inside the lab's namespaces; unique anyway (<= 15 chars)
        self.server_if = f"mc{tag}s{index}"
        self.client_if = f"mc{tag}c{index}"
        self.rate = rate
        self.burst = burst
        self.latency = latency
        self.speed = int(speed)
        self.capability = capability

    @property
    def rate_bps(self):
        return rate_bits(self.rate) if self.rate else None

    def samba_interface(self):
        caps = [c.strip() for c in (self.capability or "").split(",") if c.strip()]
        extra = [f"speed={self.speed}"] + [f"capability={c}" for c in caps]
        return f"{self.server_addr};" + ",".join(extra)

    def describe(self):
        return {"index": self.index, "server_addr": self.server_addr,
                "client_addr": self.client_addr, "server_if": self.server_if,
                "client_if": self.client_if, "rate": self.rate, "speed": self.speed,
                "capability": self.capability}


class NetnsLab:
    """links: a count (1-8) or a list of dicts of Link keywords (rate, burst,
    latency, speed, capability). rate/burst/latency/speed/capability given
    here are the defaults for every link. samba=False skips Samba;
    extra_global/extra_share and any other keyword go to SambaServer."""

    def __init__(self, links=2, rate=None, burst=None, latency=None, speed=1_000_000_000,
                 capability="RSS", samba=True, extra_global=(), **samba_kw):
        specs = [{} for _ in range(links)] if isinstance(links, int) else list(links)
        if not 1 <= len(specs) <= 8:
            raise ValueError("a lab has 1 to 8 links")
        _counter[0] += 1
        self.id = f"{os.getpid()}-{_counter[0]}"
        self.server_ns = f"{PREFIX}{self.id}-srv"
        self.client_ns = f"{PREFIX}{self.id}-cli"
        tag = f"{os.getpid() % 10000:04d}{_counter[0] % 100:02d}"
        defaults = {"rate": rate, "burst": burst, "latency": latency, "speed": speed,
                    "capability": capability}
        self.links = [Link(i + 1, tag, **{**defaults, **spec}) for i, spec in enumerate(specs)]
        self.want_samba = samba
        self.extra_global = list(extra_global)
        self.samba_kw = samba_kw
        self.samba = None
        self._created = []
        self._procs = []

    # addresses and prefixes ------------------------------------------
    @property
    def server_addrs(self):
        return [ln.server_addr for ln in self.links]

    @property
    def client_addrs(self):
        return [ln.client_addr for ln in self.links]

    @property
    def client_prefix(self):
        """argv prefix that runs a command in the client namespace."""
        return ["nsenter", f"--net={NETNS_DIR}/{self.client_ns}"]

    @property
    def server_prefix(self):
        return ["nsenter", f"--net={NETNS_DIR}/{self.server_ns}"]

    def link(self, i):
        return self.links[i - 1]

    # lifecycle -------------------------------------------------------
    def start(self):
        if os.geteuid() != 0:
            raise NetnsError("the netns lab needs root (ip netns, tc, smbd)")
        remove_stale()
        _live.append(self)
        try:
            for ns in (self.server_ns, self.client_ns):
                _run(["ip", "netns", "add", ns])
                self._created.append(ns)
                _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            for ln in self.links:
                _run(["ip", "link", "add", ln.server_if, "netns", self.server_ns, "type", "veth",
                      "peer", "name", ln.client_if, "netns", self.client_ns])
                for ns, dev, addr in ((self.server_ns, ln.server_if, ln.server_addr),
                                      (self.client_ns, ln.client_if, ln.client_addr)):
                    _run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
                    _run(["ip", "-n", ns, "link", "set", dev, "up"])
                if ln.rate:
                    self.shape(ln.index, ln.rate, ln.burst, ln.latency)
            self._wait_links_up()
            if self.want_samba:
                self.samba = SambaServer(
                    extra_global=["server multi channel support = yes"] + self.extra_global,
                    host=self.links[0].server_addr, port=445,
                    interfaces=[ln.samba_interface() for ln in self.links],
                    wrapper=self.server_prefix, client_wrapper=self.client_prefix,
                    **self.samba_kw)
                self.samba.start()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_links_up(self, timeout=10):
        """Until every client end reaches its server end: a TCP connect to a
        closed port there is refused (a reply came back over the link) rather
        than timing out."""
        probe = ("import socket,sys\n"
                 "s = socket.socket()\n"
                 "s.settimeout(1)\n"
                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, sys.argv[1].encode())\n"
                 "try: s.connect((sys.argv[2], 9))\n"
                 "except ConnectionRefusedError: sys.exit(0)\n"
                 "except OSError as e: sys.exit(str(e))\n")
        deadline = time.monotonic() + timeout
        for ln in self.links:
            while True:
                r = self.client_cmd([sys.executable, "-c", probe, ln.client_if, ln.server_addr],
                                    check=False, timeout=10)
                if r.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise NetnsError(f"link {ln.index} ({ln.client_addr} -> {ln.server_addr}) "
                                     f"does not carry traffic: {r.stdout}{r.stderr}")
                time.sleep(0.1)

    def close(self):
        """Idempotent; safe after a partial start."""
        errors = []
        for p in self._procs:
            if p.poll() is None:
                try:
                    p.kill()
                except ProcessLookupError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    errors.append(f"pid {p.pid} did not die")
        self._procs = []
        if self.samba is not None:
            try:
                self.samba.stop()
            except Exception as e:  # keep tearing down
                errors.append(f"samba stop: {e}")
            self.samba = None
        for ns in reversed(self._created):
            _delete_ns(ns)
        left = [ns for ns in self._created if ns in netns_list()]
        self._created = []
        if self in _live:
            _live.remove(self)
        if left:
            errors.append(f"namespaces still there: {left}")
        if errors:
            raise NetnsError("; ".join(errors))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # running things --------------------------------------------------
    def client_cmd(self, argv, check=True, timeout=120, **kw):
        """Run argv in the client namespace (network namespace only); returns
        the CompletedProcess (text, stdout/stderr captured)."""
        return _run(self.client_prefix + list(argv), check=check, timeout=timeout, **kw)

    def server_cmd(self, argv, check=True, timeout=120, **kw):
        return _run(self.server_prefix + list(argv), check=check, timeout=timeout, **kw)

    def client_popen(self, argv, **kw):
        """Popen argv in the client namespace; killed at close() if still running."""
        p = subprocess.Popen(self.client_prefix + list(argv), **kw)
        self._procs.append(p)
        return p

    def smbclient(self, command, host=None, **kw):
        """smbclient -c COMMAND from the client namespace to host (default:
        link 1's server address)."""
        if self.samba is None:
            raise NetnsError("this lab runs no Samba")
        return self.samba.smbclient(command, host=host, **kw)

    # links -----------------------------------------------------------
    def shape(self, i, rate, burst=None, latency=None):
        """(Re)shape link i on both ends: tbf rate R burst B latency L."""
        ln = self.link(i)
        ln.rate, ln.burst, ln.latency = rate, burst, latency
        for ns, dev in ((self.server_ns, ln.server_if), (self.client_ns, ln.client_if)):
            _run(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", str(rate),
                  "burst", burst or DEFAULT_RATE_BURST, "latency", latency or DEFAULT_LATENCY])

    def unshape(self, i):
        ln = self.link(i)
        ln.rate = ln.burst = ln.latency = None
        for ns, dev in ((self.server_ns, ln.server_if), (self.client_ns, ln.client_if)):
            _run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)

    def set_link(self, i, up, end="client"):
        """ip link set up/down on link i's client end (or "server", "both")."""
        ln = self.link(i)
        ends = {"client": [(self.client_ns, ln.client_if)],
                "server": [(self.server_ns, ln.server_if)]}
        ends["both"] = ends["client"] + ends["server"]
        for ns, dev in ends[end]:
            _run(["ip", "-n", ns, "link", "set", dev, "up" if up else "down"])

    def describe(self):
        d = {"server_ns": self.server_ns, "client_ns": self.client_ns,
             "client_prefix": self.client_prefix, "links": [ln.describe() for ln in self.links]}
        if self.samba is not None:
            d["samba"] = self.samba.describe()
        return d


@atexit.register
def _close_all():
    for lab in list(_live):
        try:
            lab.close()
        except Exception as e:
            sys.stderr.write(f"netns lab {lab.id}: {e}\n")


try:
    import pytest
except ImportError:  # the script mode needs no pytest
    pytest = None

if pytest is not None:
    @pytest.fixture
    def netns_factory(request):
        """make(links=2, rate=None, ..., extra_global=[...]) -> a started
        NetnsLab, closed after the test (Samba's log tail is printed if the
        test failed). Skips only if not root."""
        if os.geteuid() != 0:
            pytest.skip("not root: the netns lab needs root (ip netns, tc, smbd)")
        labs = []

        def make(**kw):
            lab = NetnsLab(**kw)
            labs.append(lab)
            return lab.start()

        yield make
        rep = getattr(request.node, "rep_call", None)
        problems = []
        for lab in reversed(labs):
            if rep is not None and rep.failed and lab.samba is not None:
                sys.stderr.write(f"--- smbd log tail ({lab.samba.log_path}) ---\n"
                                 f"{lab.samba.log_tail()}\n")
            try:
                lab.close()
            except NetnsError as e:
                problems.append(str(e))
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def main(argv):
    """Bring a lab up, print it as one JSON line, hold it until stdin reaches
    EOF or SIGTERM/SIGINT."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--links", type=int, default=2)
    ap.add_argument("--rate", help="tc tbf rate for every link, e.g. 200mbit")
    ap.add_argument("--speed", type=int, default=1_000_000_000,
                    help="advertised link speed, bits/s")
    ap.add_argument("--capability", default="RSS")
    ap.add_argument("--global", dest="glob", action="append", default=[])
    a = ap.parse_args(argv)

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    lab = NetnsLab(links=a.links, rate=a.rate, speed=a.speed, capability=a.capability,
                   extra_global=a.glob)
    lab.start()
    try:
        print(json.dumps(lab.describe()), flush=True)
        while sys.stdin.read(1):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        lab.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
