"""Past one server: a CTDB cluster that fails over under the mount.

tests/lib/ctdb.py starts a real cluster of two nodes, each a network
namespace with its own ctdbd and a clustered smbd (`clustering = yes`) over
one shared directory, and a public address CTDB gives one node; the client
(mount.smbrdma) runs in a namespace of its own on the same segment.

- The cluster comes up: every node OK in every node's `ctdb status`, the
  public address on exactly one node's interface, smbd's databases attached
  in CTDB; `ctdb moveip` moves the address (reachable from the client on
  its new node), and `ctdb disable` of its node moves it back.
- mount.smbrdma of //PUBLIC/share from the client namespace: files written
  through it are on the shared directory and read back.
- The node holding the address dies (SIGKILL to its ctdbd and smbd, its link
  down) in the middle of a loop of verified writes, each fsync'ed: CTDB moves
  the address to the other node, the mount reconnects there, the writer sees
  no error, and the file holds exactly what was written. Three times: the
  victim is CTDB's leader (the survivor first waits out `leader timeout`,
  5 s) or not, or it loses power (link down before its processes die: no
  reset reaches anyone; CTDB notices by its keepalives, 25 s). The time from the kill to CTDB's takeover, to the address accepting
  from the client and to the writes resuming is printed. The handle comes
  back by path, not durably: the durable handle's record died with the
  node's smbd (Samba answers the durable reconnect with
  STATUS_OBJECT_NAME_NOT_FOUND), which SMB3 allows; only persistent
  handles, which Samba does not offer, would survive a node's death.
- A graceful move (`ctdb moveip`) in the middle of the same write loop:
  the handle is reopened durably on the new node.

Set SMBRDMA_CTDB_MOUNT_OPTS=debug to see in the printed reconnect lines
what the server answered each reopen.
"""

import os
import re
import subprocess
import threading
import time

import pytest

import lib.ctdb

# alone (tests/pytest.ini): the CTDB cluster's subnet and /etc/ctdb, and timed takeovers
pytestmark = pytest.mark.alone

# One cluster for the module (lib.ctdb.SharedCluster): a test gets it
# restored (a disabled node enabled, every node OK, the share empty: 3 s
# instead of a new cluster's 15), or a new one after a test killed a node.
# The fixtures, bound here so pytest finds them.
CTDB_CLUSTER = {"nodes": 2}
ctdb_module_cluster = lib.ctdb.ctdb_module_cluster
ctdb_cluster = lib.ctdb.ctdb_cluster

BLOCK = 64 << 10
RING = 512  # blocks: the writer goes round a 32 MiB file (the shared tmpfs is 512 MiB)


def _block(i):
    """Block i's known content: its index in every 8 bytes."""
    return (i.to_bytes(8, "little")) * (BLOCK // 8)


def _reopen_counts(log):
    """[(durably, by path, lost)] of each "reconnected" line of a daemon log."""
    return [tuple(int(x) for x in mm) for mm in
            re.findall(r"(\d+) handles reopened durably, (\d+) by path, (\d+) lost", log)]


def _bad_blocks(share_path, w, name):
    """The blocks of writer w's file, as the cluster filesystem holds it, that
    differ from the last one written to their slot."""
    with open(os.path.join(share_path, name), "rb") as f:
        got = f.read()
    last = {i % RING: i for i in range(len(w.done))}
    return got, [i for s, i in sorted(last.items())
                 if got[s * BLOCK:(s + 1) * BLOCK] != _block(i)]


def _stall(w, t):
    """(longest time without a completed write from 1 s before t on, when
    writes resumed relative to t). A write answered before t may complete a
    moment after it, so "the first write after t" would say little."""
    ends = [e for _, e in w.done if e > t - 1]
    return max(((b - a, b - t) for a, b in zip(ends, ends[1:])), default=(None, None))


def _mount(cl, mount_factory, options=(), timeout=30):
    class Srv:  # what mount_factory reads of a server
        user, password = cl.user, cl.password
    extra = os.environ.get("SMBRDMA_CTDB_MOUNT_OPTS")  # e.g. debug
    return mount_factory(Srv, unc=cl.unc(), wrapper=cl.client_prefix,
                         options=[f"timeout={timeout}"] + list(options) +
                         (extra.split(",") if extra else []))


def test_cluster_comes_up_healthy(ctdb_cluster):
    cl = ctdb_cluster
    print(f"cluster up in {cl.startup_s:.1f} s")
    for nd in cl.nodes:
        st = cl.status(nd)
        assert st == {0: "OK", 1: "OK"}, cl.status_text(nd)
    addr = cl.public_addrs[0]
    ips = cl.ips()
    assert ips[addr] in (0, 1), ips
    assert cl.holders_on_wire(addr) == [ips[addr]]
    # every smbd is clustered: its databases are CTDB's
    dbs = cl.nodes[0].ctdb(["getdbmap"]).stdout
    for db in ("locking.tdb", "smbXsrv_open_global.tdb", "secrets.tdb"):
        assert db in dbs, dbs
    r = cl.smbclient("ls")
    assert "blocks of size" in r.stdout, r.stdout
    # ctdb moveip: the address goes to the other node and answers there
    other = 1 - ips[addr]
    t0 = time.monotonic()
    cl.moveip(addr, other)
    deadline = time.monotonic() + 30
    while cl.holders_on_wire(addr) != [other] or not cl.reachable(addr):
        assert time.monotonic() < deadline, (cl.ips(), cl.holders_on_wire(addr))
        time.sleep(0.05)
    print(f"moveip to node {other}: reachable after {time.monotonic() - t0:.2f} s")
    assert cl.holder(addr) == other
    assert "blocks of size" in cl.smbclient("ls").stdout
    # ctdb disable: the node gives its address up to the other one
    t0 = time.monotonic()
    cl.disable_node(other)
    while cl.holders_on_wire(addr) != [1 - other] or not cl.reachable(addr):
        assert time.monotonic() < deadline + 30, (cl.ips(), cl.status_text())
        time.sleep(0.05)
    print(f"disable node {other}: address on node {1 - other} after "
          f"{time.monotonic() - t0:.2f} s")
    assert "DISABLED" in cl.status()[other], cl.status_text()
    cl.enable_node(other)
    cl.wait_healthy(timeout=30)


def test_mount_public_address_write_read(ctdb_cluster, mount_factory):
    cl = ctdb_cluster
    m = _mount(cl, mount_factory)
    want = {}
    for i in range(8):
        name = f"f{i}.bin"
        data = os.urandom(BLOCK * (i + 1) + i)
        with open(os.path.join(m.path, name), "wb") as f:
            f.write(data)
        want[name] = data
    os.mkdir(os.path.join(m.path, "d"))
    with open(os.path.join(m.path, "d", "x"), "w") as f:
        f.write("hello\n")
    for name, data in want.items():
        with open(os.path.join(m.path, name), "rb") as f:
            assert f.read() == data
        # the shared directory (the cluster filesystem) has it
        with open(os.path.join(cl.share_path, name), "rb") as f:
            assert f.read() == data
    assert sorted(os.listdir(m.path)) == sorted(list(want) + ["d"])
    with open(os.path.join(cl.share_path, "d", "x")) as f:
        assert f.read() == "hello\n"


class Writer(threading.Thread):
    """Writes block after block of known content to one open file, each
    followed by fsync, round a file of RING blocks (block i, with i in it, at
    slot i % RING); records when each completed and any error."""

    def __init__(self, path, seconds):
        super().__init__(daemon=True)
        self.path = path
        self.seconds = seconds
        self.done = []       # (block index, monotonic time the fsync returned)
        self.errors = []     # (block index, monotonic time, OSError)
        self.stop_at = None

    def run(self):
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
        try:
            self.stop_at = time.monotonic() + self.seconds
            i = 0
            while time.monotonic() < self.stop_at:
                try:
                    os.pwrite(fd, _block(i), (i % RING) * BLOCK)
                    os.fsync(fd)
                except OSError as e:
                    self.errors.append((i, time.monotonic(), e))
                    time.sleep(0.2)
                    continue  # the same block again
                self.done.append((i, time.monotonic()))
                i += 1
        finally:
            try:
                os.close(fd)
            except OSError as e:
                self.errors.append((-1, time.monotonic(), e))


@pytest.mark.parametrize("victim", ["leader", "not-leader", "power-off"])
def test_node_death_during_verified_writes(ctdb_cluster, mount_factory, victim):
    """victim: the node holding the address is CTDB's leader (the survivor
    waits out `leader timeout`, 5 s, and elects itself before it takes the
    address over) or not (the leader takes it over at once); power-off: not
    the leader, and its link goes down before its processes die, so no
    reset reaches the client or the other node (see kill_node)."""
    cl = ctdb_cluster
    addr = cl.public_addrs[0]
    leader = cl.leader()
    want = leader if victim == "leader" else 1 - leader
    want_power_off = victim == "power-off"
    if cl.holder(addr) != want:
        cl.moveip(addr, want)
        deadline = time.monotonic() + 30
        while cl.holders_on_wire(addr) != [want] or not cl.reachable(addr):
            assert time.monotonic() < deadline, (cl.ips(), cl.holders_on_wire(addr))
            time.sleep(0.05)
    # A powered-off node is noticed by CTDB only when its keepalives go
    # unanswered (25 s by default), and the takeover ends near 30 s: the
    # client's request timeout must be longer than that for a write in
    # flight to ride it out (timeout=30 passed with 29.9 s of takeover).
    m = _mount(cl, mount_factory, timeout=60 if want_power_off else 30)
    w = Writer(os.path.join(m.path, "w.bin"), seconds=40)
    w.start()
    deadline = time.monotonic() + 20
    while len(w.done) < 20:
        assert time.monotonic() < deadline and not w.errors, (len(w.done), w.errors)
        time.sleep(0.05)
    victim = cl.holder(addr)
    assert (victim == leader) == (want == leader), (victim, leader, cl.ips())
    tk = cl.kill_node(victim, power_off=want_power_off)
    t_kill = tk["killed_at"]
    # The address answers again: 12 s more of writes are enough to see them
    # resume (asserted below: within 10 s of that) and go on.
    w.stop_at = min(w.stop_at, time.monotonic() + 12)
    assert tk["moved"] == {addr: 1 - victim}, tk
    print(f"node {victim} killed (leader was node {tk['leader_before']}); CTDB: {addr} on "
          f"node {tk['moved'][addr]} after {tk['ctdb_s']:.2f} s, accepting from the client "
          f"after {tk['reachable_s']:.2f} s")
    w.join(timeout=120)
    assert not w.is_alive(), "the writer hangs (a write or fsync did not return in 120 s)"
    after = [t for _, t in w.done if t > t_kill]
    stall, resumed = _stall(w, t_kill)
    log = m.log_text()
    print(f"writes: {len(w.done)} blocks; stalled {stall:.2f} s, resumed {resumed:.2f} s "
          f"after the kill; errors: {[(i, round(t - t_kill, 2), str(e)) for i, t, e in w.errors]}")
    print("daemon log, reconnect lines:",
          [ln for ln in log.splitlines() if re.search(r"reconnect|reopen|lost", ln)][-8:])
    assert resumed is not None and resumed < tk["reachable_s"] + 10, (resumed, tk)
    assert not w.errors, [(i, round(t - t_kill, 2), str(e)) for i, t, e in w.errors]
    assert after, "no write completed after the kill"
    counts = _reopen_counts(log)
    assert counts and sum(d + p for d, p, _ in counts) >= 1, log[-3000:]
    assert all(lost == 0 for _, _, lost in counts), counts
    # Observed (Samba 4.22, CTDB): the handle comes back by path, not
    # durably. The survivor answers the durable v2 reconnect with
    # STATUS_OBJECT_NAME_NOT_FOUND (its smbd log: "smb2srv_open_recreate_fn:
    # smbXsrv_open_global_verify_record for ... failed: NT_STATUS_NOT_FOUND"):
    # the handle's record went with the dead node: `ctdb catdb
    # smbXsrv_open_global.tdb` listed it (dmaster: the node about to die)
    # before the kill and listed no record after the takeover -- the
    # recovery of a volatile database keeps only what live nodes hold. The
    # client opens the file again by name. Only persistent handles
    # (continuous availability, which Samba does not offer) survive that.
    print(f"handles reopened (durably, by path, lost): {counts}")
    n = len(w.done)
    # what the cluster filesystem holds is exactly what was written
    # (slot s holds the last block written there)
    got, bad = _bad_blocks(cl.share_path, w, "w.bin")
    assert len(got) == min(n, RING) * BLOCK, (len(got), n)
    assert not bad, f"blocks with wrong content: {bad[:20]}"
    # and the mount keeps working on the surviving node: a new file
    p = os.path.join(m.path, "after.txt")
    with open(p, "w") as f:
        f.write("after\n")
    with open(os.path.join(cl.share_path, "after.txt")) as f:
        assert f.read() == "after\n"
    assert subprocess.run(["ls", m.path], capture_output=True).returncode == 0


def test_moveip_during_verified_writes_reopens_durably(ctdb_cluster, mount_factory):
    """A graceful move (`ctdb moveip`, as `ctdb disable` or a node shutting
    down does it): the old node's 10.interface kills the address's TCP
    connections and smbd there ends its session with the durable handle
    kept in CTDB; the client reconnects to the new node and reopens the
    handle durably. The writer sees no error and the data verifies."""
    cl = ctdb_cluster
    addr = cl.public_addrs[0]
    m = _mount(cl, mount_factory)
    w = Writer(os.path.join(m.path, "w.bin"), seconds=20)
    w.start()
    deadline = time.monotonic() + 20
    while len(w.done) < 20:
        assert time.monotonic() < deadline and not w.errors, (len(w.done), w.errors)
        time.sleep(0.05)
    old = cl.holder(addr)
    t0 = time.monotonic()
    cl.moveip(addr, 1 - old)
    while cl.holders_on_wire(addr) != [1 - old] or not cl.reachable(addr):
        assert time.monotonic() < t0 + 30, (cl.ips(), cl.holders_on_wire(addr))
        time.sleep(0.05)
    moved_s = time.monotonic() - t0
    w.stop_at = min(w.stop_at, time.monotonic() + 8)
    w.join(timeout=120)
    assert not w.is_alive(), "the writer hangs (a write or fsync did not return in 120 s)"
    after = [t for _, t in w.done if t > t0]
    log = m.log_text()
    stall, resumed = _stall(w, t0)
    print(f"moveip {addr} node {old} -> {1 - old}: on the new node and accepting after "
          f"{moved_s:.2f} s; writes stalled {stall:.2f} s, resumed {resumed:.2f} s after "
          f"the move began; {len(w.done)} blocks; errors {w.errors}")
    print("daemon log, reconnect lines:",
          [ln for ln in log.splitlines() if re.search(r"reconnect|reopen|durabl|lost", ln)][-8:])
    assert not w.errors, w.errors
    assert after, "no write completed after the move"
    counts = _reopen_counts(log)
    assert counts, log[-3000:]
    assert all(lost == 0 for _, _, lost in counts), counts
    _, bad = _bad_blocks(cl.share_path, w, "w.bin")
    assert not bad, f"blocks with wrong content: {bad[:20]}"
    assert sum(d for d, _, _ in counts) >= 1, f"not reopened durably: {counts}"
