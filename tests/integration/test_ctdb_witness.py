"""The CTDB cluster serves the Witness protocol ([MS-SWN]), checked with
Samba's own client (rpcclient) from the client namespace.

tests/lib/ctdb.py with witness=True runs samba-dcerpcd on its own on every
node (`rpc start on demand helpers = no`), so rpcd_witness answers on TCP:
the endpoint mapper on 135 of every node and public address, the witness
interface on a dynamic port it names.

- GetInterfaceList through every public and node address lists the public
  addresses and the node addresses (`rpcd witness:include node ips = yes`),
  all available, in the group named after the cluster's netbios name; the
  WITNESS_IF flag ('*' in rpcclient's list) marks exactly the addresses that
  are not on the node answering. A bind without integrity is refused.
- RegisterEx (NetName = the group name, IpAddress = the public address,
  ShareName = the share) on the other node's address, then AsyncNotify:
  nothing comes while nothing happens; `net witness client-move
  --witness-new-ip=<public>` on a node gives CLIENT_MOVE at once (the
  registration stays: the address named is the registered one); `ctdb moveip`
  gives RESOURCE_CHANGE (unavailable, then available) once CTDB has moved the
  address -- after the SMB connections to it were cut (tests/lib/ctdb.py's
  docstring has the measured order).
"""

import os
import re
import select
import subprocess
import time

import pytest

import lib.ctdb

# alone (tests/pytest.ini): the CTDB cluster's subnet and /etc/ctdb, and timed takeovers
pytestmark = pytest.mark.alone

ctdb_factory = lib.ctdb.ctdb_factory


def _iface_list(cl, addr, sign=True):
    """rpcclient GetInterfaceList through addr: [(witness_if, state, group,
    address)], or the CompletedProcess when it failed."""
    r = cl.client_cmd(["rpcclient", "-U", f"{cl.user}%{cl.password}", "-s", "/dev/null",
                       f"ncacn_ip_tcp:{addr}" + ("[sign]" if sign else ""),
                       "-c", "GetInterfaceList"], check=False, timeout=60)
    if r.returncode != 0:
        return r
    return [(m.group(1) == "*", m.group(2), m.group(3), m.group(4)) for m in
            re.finditer(r"^([* ])([+\-?X]) (\S+) (\S+) V2$", r.stdout, re.M)]


class Rpcclient:
    """One rpcclient process in the client namespace, fed commands on stdin
    (witness context handles live only as long as its connection)."""

    def __init__(self, cl, addr):
        self.p = cl.client_popen(["stdbuf", "-oL", "rpcclient", "-U",
                                  f"{cl.user}%{cl.password}", "-s", "/dev/null",
                                  f"ncacn_ip_tcp:{addr}[sign]"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
        self.buf = b""
        self.seen = []

    def send(self, line):
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def line(self, timeout):
        """The next output line (time it arrived, text), or None after
        timeout. Reads the pipe unbuffered (select on a buffered reader would
        miss lines already in its buffer)."""
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError(f"rpcclient exited ({self.p.wait()}): {self.seen}")
                self.buf += chunk
        ln, self.buf = self.buf.split(b"\n", 1)
        self.seen.append(ln.decode(errors="replace"))
        return time.monotonic(), self.seen[-1]

    def notification(self, timeout):
        """(time, header, [message lines]) of the AsyncNotify answer that
        comes within timeout, or None: rpcclient prints "<Type> with N
        messages", then a line per message ("<ip> -> Unavailable" for a
        RESOURCE_CHANGE, "Flags 0x... <ip> Online ..." for each address of
        a CLIENT_MOVE or SHARE_MOVE)."""
        got = self.line(timeout)
        if got is None:
            return None
        msgs = []
        while (ln := self.line(0.5)) is not None:
            if ln[1].strip():
                msgs.append(ln[1].strip())
        return got[0], got[1], msgs

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=10)


def test_witness_interface_list_and_notifications(ctdb_factory):
    cl = ctdb_factory(nodes=2, publics=2, witness=True)
    # rpcd_witness's group (ServerGlobalName) is the DNS host name: with no
    # realm the netbios name lib.samba gives every node, in lower case
    group = "smbrdmatest"
    node_addrs = [nd.addr for nd in cl.nodes]
    # one public address per node (CTDB spreads them; a node that became
    # healthy last may get its share a moment after wait_healthy)
    deadline = time.monotonic() + 30
    while sorted((ips := cl.ips()).values()) != [0, 1] or \
            any(cl.holders_on_wire(a) != [p] for a, p in ips.items()):
        assert time.monotonic() < deadline, ips
        time.sleep(0.2)

    # GetInterfaceList, through every public and node address
    for addr in cl.public_addrs + node_addrs:
        lst = _iface_list(cl, addr)
        assert isinstance(lst, list), f"GetInterfaceList via {addr}: {lst.stdout}{lst.stderr}"
        assert sorted(a for _, _, _, a in lst) == sorted(cl.public_addrs + node_addrs), lst
        assert all(st == "+" and g == group for _, st, g, _ in lst), lst
        here = ips.get(addr, node_addrs.index(addr) if addr in node_addrs else None)
        on_node = {a: ips.get(a, node_addrs.index(a) if a in node_addrs else None)
                   for _, _, _, a in lst}
        assert {a for wif, _, _, a in lst if wif} == \
            {a for a, p in on_node.items() if p != here}, (addr, here, lst)
    r = _iface_list(cl, cl.public_addrs[0], sign=False)
    assert not isinstance(r, list) and "ACCESS_DENIED" in r.stdout + r.stderr, r

    # RegisterEx for the first public address, on the other node's address
    A = cl.public_addrs[0]
    h = ips[A]
    o = 1 - h
    rc = Rpcclient(cl, cl.nodes[o].addr)
    try:
        rc.send(f"RegisterEx -n {group} -i {A} -s {cl.share} -t 120")
        got = rc.line(30)
        assert got and re.fullmatch(r"[0-9a-f]+:[0-9a-f-]{36}", got[1]), rc.seen
        handle = got[1]
        uuid = handle.split(":")[1]
        listed = cl.nodes[h].net(["witness", "list"]).stdout
        assert re.search(rf"^{uuid}\s+{group}\s+{cl.share}\s+{re.escape(A)}\s", listed, re.M), \
            listed

        # nothing while nothing happens
        rc.send(f"AsyncNotify {handle}")
        assert rc.line(2) is None, rc.seen

        # net witness client-move (here on the node holding the address)
        t0 = time.monotonic()
        cl.nodes[h].net(["witness", "client-move", f"--witness-registration={uuid}",
                         f"--witness-new-ip={A}"])
        got = rc.notification(10)
        # 0x9: IPv4 | ONLINE (rpcclient 4.22 prints "Offline" for the ONLINE
        # bit too)
        assert got and got[1:] == ("Client move with 1 messages",
                                   [f"Flags 0x00000009 {A} Online Offline"]), rc.seen
        print(f"client-move: CLIENT_MOVE after {got[0] - t0:.3f} s")

        # ctdb moveip: RESOURCE_CHANGE once the address has moved
        rc.send(f"AsyncNotify {handle}")
        assert rc.line(1) is None, rc.seen
        t0 = time.monotonic()
        cl.moveip(A, o)
        got = rc.notification(15)
        assert got and got[1:] == ("Resource change with 1 messages",
                                   [f"{A} -> Unavailable"]), rc.seen
        assert cl.holder(A) == o and cl.holders_on_wire(A) == [o], (cl.ips(), rc.seen)
        print(f"moveip: RESOURCE_CHANGE after {got[0] - t0:.3f} s")
        # the second half (available again) is queued behind it
        rc.send(f"AsyncNotify {handle}")
        got = rc.notification(5)
        assert got and got[1:] == ("Resource change with 1 messages",
                                   [f"{A} -> Available"]), rc.seen
        # after an "unavailable" rpcd_witness drops the registration in 5 s
        # (so that a client registers again, as Windows does): a pending
        # AsyncNotify fails with ERROR_NOT_FOUND
        t1 = time.monotonic()
        rc.send(f"AsyncNotify {handle}")
        got = rc.notification(15)
        assert got and "WERR_NOT_FOUND" in " ".join([got[1]] + got[2]), rc.seen
        print(f"registration dropped {got[0] - t1:.3f} s after the last notification")
    finally:
        rc.close()
