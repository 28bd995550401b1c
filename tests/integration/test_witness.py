"""`witness`: the mount registers with a CTDB cluster's Service Witness
([MS-SWN], Samba's rpcd_witness) and follows what it is told.

tests/lib/ctdb.py starts two nodes with one public address each and
witness=True (samba-dcerpcd on its own on every node, so rpcd_witness
answers on TCP); mount.smbrdma mounts the first public address from the
client namespace with `witness`.

- Registration: smbrdmactl channels shows the witness registered, on the
  other node's address (a WITNESS_IF interface: not the node serving the
  mount), for the mount's address; Samba's `net witness list` on a node
  lists the registration (the group, the share, our address).
- A planned move: `net witness client-move --witness-new-ip=<the other
  public address>` in the middle of a loop of verified, fsync'ed writes.
  The CLIENT_MOVE moves the session to the other node's address: the
  writer sees no error, the data verifies, and no request failed or was
  sent twice -- every channel's failovers and replays are 0 and the
  witness counted no request in flight at the cut (drain_replays 0); the
  requests issued meanwhile were held and sent after the move (held).  The
  time from the command to the move and the writes' longest stall are
  printed.  It registers again for the new address, and `net witness
  share-move` (SHARE_MOVE: the registration names the share) takes it back
  the same way.
- `ctdb moveip` of the mount's address under the same writer: CTDB
  releases the address (resetting its connections) before it takes it up
  on the other node, and rpcd_witness says so only after the takeover run
  (tests/lib/ctdb.py's docstring has the measured order), so no client
  can move first: the mount reconnects as without witness, the writer
  sees no error, and the RESOURCE_CHANGE is counted.  The requests replayed
  and the stall are printed.
"""

import os
import re
import time

import pytest

import lib.ctdb
from lib.fileops import ctl_stats
from test_ctdb import Writer, _bad_blocks, _mount, _reopen_counts, _stall

# alone (tests/pytest.ini): the CTDB cluster's subnet and /etc/ctdb, and timed takeovers
pytestmark = pytest.mark.alone

ctdb_factory = lib.ctdb.ctdb_factory


def _wait_registered(m, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        st = ctl_stats(m)
        w = st["witness"]
        if w["state"] == "registered":
            return st
        assert time.monotonic() < deadline, f"witness not registered after {timeout}s: {w}\n" \
            + m.log_text()[-3000:]
        time.sleep(0.2)


def _verify(cl, w, name):
    _, bad = _bad_blocks(cl.share_path, w, name)
    assert not bad, f"blocks with wrong content: {bad[:20]}"


def _registration(cl, node, addr):
    """The uuid of the registration for addr that `net witness list` on node
    shows."""
    listed = cl.nodes[node].net(["witness", "list"]).stdout
    reg = re.search(rf"^([0-9a-f-]{{36}})\s+\S+\s+{cl.share}\s+{re.escape(addr)}\s", listed,
                    re.M)
    assert reg, listed
    return reg.group(1)


def _move(cl, m, node, how, uuid, to, moves):
    """`net witness <how> --witness-new-ip=to` on node for registration
    uuid; waits until the mount counts `moves` moves and every live channel
    goes to `to`.  Returns the seconds that took."""
    t0 = time.monotonic()
    cl.nodes[node].net(["witness", how, f"--witness-registration={uuid}",
                        f"--witness-new-ip={to}"])
    while True:
        st = ctl_stats(m)
        remotes = [c["remote"] for c in st["channels"] if c["state"] == "up"]
        if st["witness"]["moves"] >= moves and remotes and \
                all(r.startswith(to + ":") for r in remotes):
            return time.monotonic() - t0
        assert time.monotonic() < t0 + 30, (st["witness"], st["channels"])
        time.sleep(0.05)


def _start_writer(m, name, seconds):
    w = Writer(os.path.join(m.path, name), seconds=seconds)
    w.start()
    deadline = time.monotonic() + 20
    while len(w.done) < 20:
        assert time.monotonic() < deadline and not w.errors, (len(w.done), w.errors)
        time.sleep(0.05)
    return w


def test_witness_registers_and_follows_a_planned_move(ctdb_factory, mount_factory):
    cl = ctdb_factory(nodes=2, publics=2, witness=True)
    ips = cl.ips()
    A, B = cl.public_addrs
    h = ips[A]
    assert ips[B] == 1 - h, ips
    m = _mount(cl, mount_factory, options=["witness"])
    st = _wait_registered(m)
    wi = st["witness"]
    assert wi["on"] and wi["registered"] == A, wi
    # the witness is another node: its node address or the public one it holds
    assert wi["server"] in (cl.nodes[1 - h].addr, B), (wi, cl.describe())
    uuid = _registration(cl, h, A)

    w = _start_writer(m, "w.bin", 20)
    t0 = time.monotonic()
    moved_s = _move(cl, m, h, "client-move", uuid, B, 1)
    w.join(timeout=120)
    assert not w.is_alive(), "the writer hangs"
    st = ctl_stats(m)
    wi = st["witness"]
    stall, resumed = _stall(w, t0)
    fo = sum(c["failovers"] for c in st["channels"])
    rp = sum(c["replays"] for c in st["channels"])
    print(f"client-move {A} -> {B}: session up at {B} {moved_s:.2f} s after the command; "
          f"writes stalled {stall:.2f} s; held {wi['held']}, in flight at the cut "
          f"{wi['drain_replays']}, failovers {fo}, replays {rp}; {len(w.done)} blocks; "
          f"last event {wi['last_event']!r}")
    log = m.log_text()
    print("daemon log, move lines:",
          [ln for ln in log.splitlines() if re.search(r"witness|move|reconnect|reopen", ln)][-10:])
    assert not w.errors, w.errors
    assert wi["moves"] == 1 and wi["last_event"].startswith("CLIENT_MOVE"), wi
    assert wi["drain_replays"] == 0, wi
    assert fo == 0 and rp == 0, st["channels"]
    assert [t for _, t in w.done if t > t0 + moved_s], "no write completed after the move"
    counts = _reopen_counts(log)
    assert counts and all(lost == 0 for _, _, lost in counts), counts
    _verify(cl, w, "w.bin")
    # it registers again, for the new address
    st = _wait_registered(m, timeout=30)
    assert st["witness"]["registered"] == B, st["witness"]

    # and a SHARE_MOVE (the registration names the share) takes it back
    h2 = cl.ips()[B]
    uuid = _registration(cl, h2, B)
    w = _start_writer(m, "s.bin", 10)
    _move(cl, m, h2, "share-move", uuid, A, 2)
    w.join(timeout=120)
    assert not w.is_alive(), "the writer hangs"
    st = ctl_stats(m)
    wi = st["witness"]
    print(f"share-move {B} -> {A}: held {wi['held']}, in flight at the cut "
          f"{wi['drain_replays']}; last event {wi['last_event']!r}")
    assert not w.errors, w.errors
    assert wi["moves"] == 2 and wi["last_event"].startswith("SHARE_MOVE"), wi
    assert wi["drain_replays"] == 0, wi
    assert sum(c["failovers"] + c["replays"] for c in st["channels"]) == 0, st["channels"]
    _verify(cl, w, "s.bin")


def test_witness_during_moveip_counts_the_event(ctdb_factory, mount_factory):
    cl = ctdb_factory(nodes=2, publics=2, witness=True)
    A = cl.public_addrs[0]
    m = _mount(cl, mount_factory, options=["witness"])
    _wait_registered(m)
    w = _start_writer(m, "m.bin", 20)
    old = cl.holder(A)
    t0 = time.monotonic()
    cl.moveip(A, 1 - old)
    deadline = t0 + 30
    while ctl_stats(m)["witness"]["events"] < 1:
        assert time.monotonic() < deadline, ctl_stats(m)["witness"]
        time.sleep(0.05)
    event_s = time.monotonic() - t0
    w.join(timeout=120)
    assert not w.is_alive(), "the writer hangs"
    st = ctl_stats(m)
    wi = st["witness"]
    stall, resumed = _stall(w, t0)
    rp = sum(c["replays"] for c in st["channels"])
    fo = sum(c["failovers"] for c in st["channels"])
    print(f"moveip {A} node {old} -> {1 - old}: witness event seen {event_s:.2f} s after the "
          f"command ({wi['last_event']!r}); writes stalled {stall:.2f} s; failovers {fo}, "
          f"replays {rp}; {len(w.done)} blocks")
    assert not w.errors, w.errors
    assert wi["events"] >= 1 and "RESOURCE_CHANGE" in wi["last_event"], wi
    _verify(cl, w, "m.bin")
