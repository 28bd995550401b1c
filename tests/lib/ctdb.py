"""A CTDB cluster on one machine: N nodes, each a network namespace with
its own ctdbd and a clustered smbd (`clustering = yes`), one shared
directory as the cluster filesystem, public addresses that CTDB moves
between the nodes, and a client namespace to mount them from. Needs root.

    with CtdbCluster(nodes=2) as cl:
        cl.public_addrs              # ["10.78.0.101"]
        cl.holder("10.78.0.101")     # pnn of the node CTDB put it on (ctdb ip)
        cl.share_path                # the shared directory every smbd serves
        cl.client_prefix             # nsenter argv prefix into the client namespace
        t = cl.kill_node(cl.holder(ip))   # dies; returns the takeover times
        cl.disable_node(1); cl.enable_node(1); cl.moveip(ip, 0)
        cl.nodes[0].net(["witness", "list"])   # Samba's net on node 0

    CtdbCluster(witness=True): the nodes serve [MS-SWN] Witness (below).

In pytest: `from lib.ctdb import ctdb_factory  # noqa: F401`, then
`cl = ctdb_factory(nodes=2)`: a cluster for the test. Or one cluster for a
module's tests: bind ctdb_module_cluster and ctdb_cluster, set CTDB_CLUSTER =
{...} (the keyword arguments), and take `ctdb_cluster`: it is restore()d
before each test but the first (a disabled node enabled, all healthy, the
share empty; about 3 s), or replaced by a new one after a test killed a
node.

Topology. One L2 segment, 10.78.0.0/24: a hub namespace holds a bridge
(br0); every node namespace and the client namespace has one veth, named
pub0 on its own side, whose other end is a port of br0. Node i (pnn i,
0-based) has 10.78.0.<11+i>/24 on its pub0 (its line in CTDB's nodes file:
the address ctdbd binds and the other ctdbds reach it on); the client has
10.78.0.200/24. Public addresses 10.78.0.<101+j>/24, "pub0" in every node's
public_addresses: CTDB's 10.interface event script adds one to the pub0 of
the node it assigns it to (`ip addr add`, run by the ctdbd of that
namespace) and deletes it when the address moves; ctdbd sends gratuitous
ARPs from the new node, so the client (on the same bridge) follows. No
namespace has a route off the segment, and nothing is added to the host's
namespace.

How each ctdbd finds its own files. ctdbd, its event daemon, the event
scripts and the ctdb tool they call use the compiled-in /etc/ctdb (ctdb.conf,
nodes, public_addresses, ctdb.tunables, functions, events/), /run/ctdb (the
socket, pid files) and /var/lib/ctdb (databases, the scripts' state), which
the node namespaces would share (they share the host's mount namespace). So
each ctdbd runs in a mount namespace of its own (`unshare --mount
--propagation private`, the host's mounts copied, nothing propagating back)
in which <dir>/node.<i>/{etc,run,var} are bind-mounted over those three,
then enters its network namespace (nsenter --net) and execs `ctdbd
--interactive`. /run/ctdb is created empty on the host when absent, as a
mount point. The test runs the ctdb tool for a node in that ctdbd's mount
and network namespaces (nsenter -t PID -m -n); each smbd stays in the
host's mount namespace with `ctdbd socket = <dir>/node.<i>/run/ctdbd.socket`,
and ctdb.conf names the database directories by their host paths, which a
Samba client opens itself. (Samba's ctdb/tests/local_daemons.sh does this with
CTDB_TEST_MODE=yes and CTDB_BASE instead; test mode also turns off ctdbd's
check of which public addresses are really on an interface and its
gratuitous ARPs after a takeover, so with the real 10.interface a node
re-ran "takeip" for an address it had and was banned, and a client would
keep the dead node's MAC. Hence real mode in mount namespaces.)

Event scripts: only 00.ctdb (its state directory) and 10.interface (the
public addresses, and the link monitoring of pub0 with ethtool) are
enabled, as symlinks in etc/events/legacy to the packaged ones in
/usr/share/ctdb/events/legacy; functions and notify.sh are copied from the
host's /etc/ctdb. 50.samba is not: it would start the machine's smbd
service; each node's smbd is started here instead, once the cluster is
healthy, as 50.samba's "startup" would. iptables is not installed, so
10.interface's releaseip (a graceful move: disable, moveip) logs that it
could not block the address for the moment it releases it; it still kills
the address's TCP connections (ctdb_killtcp) and deletes it.

Cluster filesystem: a tmpfs mounted at <dir>/shared, visible to every node
(same mount namespace). The share of every smbd is <dir>/shared/share, and
CTDB's cluster (recovery) lock is the file <dir>/shared/.ctdb/reclock, taken
with fcntl by ctdb_mutex_fcntl_helper -- which works on a tmpfs within one
kernel exactly as on a cluster filesystem.

Samba on each node: a lib.samba SambaServer (ClusterSmbd) with its own
private/lock/state dirs in <dir>/node.<i>/samba, `clustering = yes`,
`ctdbd socket =` that node's socket, and `bind interfaces only = no` so smbd
accepts on whichever public address CTDB gives its node later. The
clustered databases (locking, brlock, smbXsrv_open_global, ...) live in
CTDB, and so do the persistent ones: secrets.tdb and passdb.tdb (tdbsam),
where smbpasswd puts the test user (run against each node's smb.conf).
With durable=True (the default) the share has `posix locking = no`, the setting under which Samba grants
durable handles (tests/integration/test_reconnect.py); Samba keeps them in
smbXsrv_open_global, a clustered database, so another node can look them up
-- after a graceful move; when the node dies the record goes with it
(tests/integration/test_ctdb.py).

Killing a node (kill_node): SIGKILL to every process in its namespace
(ctdbd, its event daemon and helpers, smbd and its children), then pub0 is
set down, so the public addresses it held are gone from the segment as
they would be with the machine (ctdbd is not there to delete them). The
other ctdbds see their connections to it close at once; the leader (after
an election if it was the leader) runs a recovery and a takeover run that
reassigns the addresses. kill_node() returns how long that took, as CTDB
reports it (`ctdb ip` on a surviving node) and as the client sees it (a
TCP connection from the client namespace to <address>:445 accepted).
kill_node(power_off=True) sets the link down first (see its docstring).

Witness (witness=True). smb.conf gets `rpc start on demand helpers = no`
and `rpcd witness:include node ips = yes` (witness_node_ips=False: no), and
each node runs samba-dcerpcd --libexec-rpcds on its own (start_dcerpcd: the
node's network namespace, the host's mount namespace, smbd's smb.conf), so
its endpoint mapper listens on TCP 135 and rpcd_witness (clustering = yes)
on a dynamic port, on every address of the node; smbd uses that
samba-dcerpcd for its pipes too. Nothing else is needed: rpcd_witness asks
ctdbd for the addresses and registers for CTDB_SRVID_IPREALLOCATED itself,
and its registrations (rpcd_witness_registration.tdb) are a clustered
database, so `net witness list/client-move/share-move` on any node reach a
registration held by another node's rpcd_witness. Binds need [sign] or
[seal] (else ACCESS_DENIED). GetInterfaceList: group "smbrdmatest" (the DNS
host name: netbios name, lower case), every public and node address,
WITNESS_IF on exactly those not on the answering node. Measured (Samba/CTDB
4.22.6, 2 nodes, RegisterEx NetName=smbrdmatest IpAddress=<public>
ShareName=share on the other node's address; t from the command's start):
  - ctdb moveip, ctdb disable, node killed: RESOURCE_CHANGE <public>
    UNAVAILABLE, at once followed by AVAILABLE, only after the takeover run
    (IPREALLOCATED), i.e. AFTER the SMB connection to the address was cut:
    moveip cut 0.05-0.08 s, notify 0.24-0.29 s (4 runs); disable cut 1.00 s,
    notify 1.15 s; kill cut 0.03 s (the kernel's reset), notify 1.64 s;
    power off: the new node's tickle resets the connection at 29.61 s,
    notify 29.64 s. Both nodes' rpcd_witness notify. 5 s after an
    UNAVAILABLE (or a move naming another address) rpcd_witness drops the
    registration: the next AsyncNotify fails WERR_NOT_FOUND.
  - `net witness client-move|share-move --witness-new-ip=IP` or
    `--witness-new-node=PNN` (nothing moves): CLIENT_MOVE (SHARE_MOVE) in
    0.05-0.08 s with the addresses (IPv4|ONLINE) named or on that node;
    registration dropped 5 s later unless the list is the registered IP.
  - A witness connection to the public address itself is cut when the
    address is released (moveip 0.06 s), before any notification: use a
    WITNESS_IF address (another node's node address).
  - A registration expires 30 s (+ RegisterEx's timeout) after the last
    AsyncNotify began: with timeout 0 a pending AsyncNotify fails
    WERR_NOT_FOUND after 30 s.
  - FSCTL_QUERY_NETWORK_INTERFACE_INFO of a node's smbd lists the public
    addresses it holds at that moment and its node address (4.22.6; newer
    Samba source skips CTDB public addresses there).

Teardown (close(), the context manager, the pytest fixture, atexit) stops
each smbd, asks each ctdbd to shut down (`ctdb shutdown`; ctdb.conf's
`shutdown failover timeout = 2` instead of 10: a node going down cleanly
waits that long for its addresses to move, which at teardown nobody
needs), kills by pid whatever still runs in the namespaces, deletes them, unmounts the tmpfs and
removes the directory, and raises if a namespace, the mount or a process
of the cluster is left. A new cluster also removes namespaces left by one
whose process died (names carry the creating pid).
"""

import atexit
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from lib.netns import NETNS_DIR, NetnsError, _delete_ns, _kill_all_in, _pid_alive, _pids_in, \
    _run, netns_list
from lib.samba import SambaError, SambaServer

PREFIX = "smbrdma-ctdb"
SUBNET = "10.78.0"
CLIENT_ADDR = f"{SUBNET}.200"
IFACE = "pub0"
CTDBD = "/usr/sbin/ctdbd"
CTDB = "/usr/bin/ctdb"
CTDB_DATADIR = "/usr/share/ctdb"
CTDB_ETC = "/etc/ctdb"
FCNTL_HELPER = "/usr/libexec/ctdb/ctdb_mutex_fcntl_helper"
DCERPCD = "/usr/libexec/samba/samba-dcerpcd"
RPCD_WITNESS = "/usr/libexec/samba/rpcd_witness"
# smb.conf lines of a witness cluster (see the docstring): smbd leaves the RPC
# services to the samba-dcerpcd started here, which then also listens on TCP
WITNESS_GLOBAL = ["rpc start on demand helpers = no"]
EVENT_SCRIPTS = ("00.ctdb", "10.interface")
# A (re)starting node waits RerecoveryTimeout + 3 s after the cluster's last
# recovery before its startup event (ctdb_wait_until_recovered), and a node
# joining causes recoveries: 10 s by default made a cluster start take 25 s
# and a node's restart 22-30 s; with 1, 16 s and about 12 s.
LAB_TUNABLES = {"RerecoveryTimeout": 1}
DURABLE = ["posix locking = no"]  # Samba grants durable handles only then
_live = []
_counter = [0]


class CtdbError(RuntimeError):
    pass


def unavailable_reason():
    """Why this machine cannot run the cluster, or None. A missing package
    is not such a reason (tools/install-deps installs ctdb): see missing()."""
    if os.geteuid() != 0:
        return "not root: the CTDB cluster needs root (ip netns, tmpfs, ctdbd, smbd)"
    if not os.path.isdir("/proc/self/ns") or not os.path.exists("/proc/self/ns/net"):
        return "no network namespaces in this kernel"
    return None


def missing():
    """The files of the ctdb package the cluster uses that are not there.

    iptables is one: ctdb's 10.interface blocks a public address with it
    while the address is released, so that a client cannot reconnect to the
    old node in that window.  Without it ("flock: failed to execute
    iptables") a client's reconnect could land on the releasing node, stay
    half-open after the address was deleted ("Killed 0/1"), and stall its
    request for the full 30 s timeout (2 of 14 ctdb moveip runs did)."""
    return [p for p in (CTDBD, CTDB, CTDB_ETC + "/functions", CTDB_ETC + "/notify.sh", FCNTL_HELPER,
                        shutil.which("ethtool") or "ethtool", shutil.which("iptables") or "iptables")
            if not os.path.exists(p)] + \
        [s for s in EVENT_SCRIPTS
         if not os.path.exists(f"{CTDB_DATADIR}/events/legacy/{s}.script")]


def remove_stale():
    """Delete cluster namespaces whose creating process is gone."""
    for ns in netns_list():
        m = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\d+-\w+", ns)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _delete_ns(ns)


def _tail(path, n=40):
    try:
        with open(path, "r", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"(cannot read {path}: {e})"


class ClusterSmbd(SambaServer):
    """One node's smbd: SambaServer's configuration, process handling and
    probes, with the share on the cluster's shared directory (no tmpfs of
    its own) and clustering on."""

    def __init__(self, node, shared_share, durable=True, extra_global=(), extra_share=(),
                 **kw):
        self.node = node
        self._shared_share = shared_share
        glob = ["clustering = yes", f"ctdbd socket = {node.socket}",
                "bind interfaces only = no"] + list(extra_global)
        super().__init__(extra_global=glob,
                         extra_share=(DURABLE if durable else []) + list(extra_share),
                         host=node.addr, port=445, interfaces=[IFACE],
                         wrapper=node.prefix, **kw)

    @property
    def share_path(self):
        return self._shared_share

    def start(self, timeout=60):
        self.dir = os.path.join(self.node.base, "samba")
        for sub in ("private", "lock", "state", "cache", "pid", "ncalrpc",
                    "binddns", "usershares", "log"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.join(self.dir, "private"), 0o700)
        try:
            self._write_conf()
            tp = subprocess.run(["testparm", "-s", self.conf_path], capture_output=True,
                                text=True)
            if tp.returncode != 0:
                raise SambaError(f"testparm rejects {self.conf_path}:\n{tp.stderr}")
            # With clustering = yes passdb.tdb (like secrets.tdb) is a
            # persistent CTDB database, so the user added here is every
            # node's; each node does it anyway (the same password again),
            # which also checks that its configuration reaches its ctdbd.
            sp = subprocess.run(self.wrapper + ["smbpasswd", "-c", self.conf_path, "-a", "-s",
                                                self.user],
                                input=f"{self.password}\n{self.password}\n",
                                capture_output=True, text=True, timeout=60)
            if sp.returncode != 0:
                raise SambaError(f"node {self.node.pnn}: smbpasswd failed: "
                                 f"{sp.stdout}{sp.stderr}")
            self._spawn(timeout, "wb")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        super().stop()  # no tmpfs of its own; removes self.dir (node.<i>/samba)


class Node:
    def __init__(self, cluster, pnn):
        self.cluster = cluster
        self.pnn = pnn
        self.addr = f"{SUBNET}.{11 + pnn}"
        self.ns = f"{PREFIX}{cluster.id}-n{pnn}"
        self.hub_if = f"c{cluster.tag}n{pnn}"
        self.base = os.path.join(cluster.dir, f"node.{pnn}")
        self.ctdbd = None
        self.smbd = None
        self.dcerpcd = None
        self.dead = False

    @property
    def prefix(self):
        return ["nsenter", f"--net={NETNS_DIR}/{self.ns}"]

    @property
    def socket(self):
        return os.path.join(self.base, "run", "ctdbd.socket")

    @property
    def log_path(self):
        return os.path.join(self.base, "ctdbd.log")

    def ctdb(self, args, check=True, timeout=30):
        """The ctdb tool against this node's ctdbd: run inside ctdbd's own
        mount and network namespaces (nsenter -t PID -m -n), where its
        /etc/ctdb and /run/ctdb are (the tool reads the socket path and the
        nodes file from there, and honours no CTDB_SOCKET outside test mode)."""
        if self.ctdbd is None or self.ctdbd.poll() is not None:
            raise CtdbError(f"node {self.pnn}: ctdbd is not running")
        r = subprocess.run(["nsenter", "-t", str(self.ctdbd.pid), "-m", "-n", CTDB] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise CtdbError(f"node {self.pnn}: ctdb {' '.join(args)} failed ({r.returncode}):\n"
                            f"{r.stdout}{r.stderr}")
        return r

    def setup(self, nodes_text, public_text, reclock, tunables):
        etc = os.path.join(self.base, "etc")
        for sub in ("run", "var/volatile", "var/persistent", "var/state", "var/scripts",
                    "etc/events/legacy"):
            os.makedirs(os.path.join(self.base, sub), exist_ok=True)
        with open(os.path.join(etc, "nodes"), "w") as f:
            f.write(nodes_text)
        with open(os.path.join(etc, "public_addresses"), "w") as f:
            f.write(public_text)
        if tunables:
            with open(os.path.join(etc, "ctdb.tunables"), "w") as f:
                f.write("".join(f"{k}={v}\n" for k, v in tunables.items()))
        # The databases by their host paths (the same inside ctdbd's mount
        # namespace): ctdbd tells a Samba client (smbd, smbpasswd) the path of
        # a persistent database such as secrets.tdb and the client opens the
        # file itself, from the host's mount namespace.
        with open(os.path.join(etc, "ctdb.conf"), "w") as f:
            f.write(f"""[logging]
\tlocation = file:/var/lib/ctdb/log.ctdb
\tlog level = NOTICE
[cluster]
\tcluster lock = !{FCNTL_HELPER} {reclock}
\tnode address = {self.addr}
[database]
\tvolatile database directory = {self.base}/var/volatile
\tpersistent database directory = {self.base}/var/persistent
\tstate database directory = {self.base}/var/state
[failover]
\tshutdown failover timeout = 2
[legacy]
\trealtime scheduling = false
""")
        for name in ("functions", "notify.sh"):
            shutil.copy2(os.path.join(CTDB_ETC, name), os.path.join(etc, name))
        for sc in EVENT_SCRIPTS:
            os.symlink(f"{CTDB_DATADIR}/events/legacy/{sc}.script",
                       os.path.join(etc, "events", "legacy", f"{sc}.script"))

    def start_ctdbd(self):
        log = open(self.log_path, "ab")
        b = self.base
        # The FUSE mounts the host had when this namespace was made (a test
        # running beside this one) are copied into it; unmounted here, or
        # their daemons would never see them go when the host unmounts them.
        script = ("awk '$3 ~ /^fuse/ {print $2}' /proc/self/mounts | "
                  "while read -r m; do umount -l \"$m\" 2>/dev/null; done; "
                  f"mount --bind {b}/etc /etc/ctdb && mount --bind {b}/run /run/ctdb && "
                  f"mount --bind {b}/var /var/lib/ctdb && "
                  f'exec nsenter --net={NETNS_DIR}/{self.ns} {CTDBD} --interactive')
        env = {k: v for k, v in os.environ.items() if not k.startswith("CTDB_")}
        # --interactive: no fork (every exec above keeps the pid, so the Popen
        # is ctdbd itself) and the log on stderr; its own session, so its
        # children (eventd, helpers, scripts) share its process group.
        self.ctdbd = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--",
                                       "sh", "-c", script], env=env,
                                      stdin=subprocess.PIPE, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def log_tail(self, n=30):
        return _tail(self.log_path, n)

    @property
    def dcerpcd_log_path(self):
        return os.path.join(self.base, "dcerpcd.log")

    def start_dcerpcd(self, timeout=30):
        """samba-dcerpcd on its own (not started on demand by smbd), with
        every rpcd_* helper, in this node's network namespace and the host's
        mount namespace like the node's smbd, on the same smb.conf: the
        endpoint mapper on TCP 135 and each interface on a dynamic port, on
        every address of the namespace (bind interfaces only = no), and the
        ncalrpc sockets smbd uses for its named pipes. Waits until the
        endpoint mapper accepts on the node address."""
        log = open(self.dcerpcd_log_path, "ab")
        self.dcerpcd = subprocess.Popen(
            self.prefix + [DCERPCD, "--libexec-rpcds", "-s", self.smbd.conf_path,
                           "--foreground", "--no-process-group", "--debug-stdout"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        probe = ("import socket,sys\n"
                 "try: socket.create_connection((sys.argv[1], 135), 0.5).close()\n"
                 "except OSError: sys.exit(1)\n")
        while subprocess.run(self.prefix + [sys.executable, "-c", probe, self.addr],
                             capture_output=True).returncode != 0:
            if self.dcerpcd.poll() is not None:
                raise CtdbError(f"node {self.pnn}: samba-dcerpcd exited "
                                f"({self.dcerpcd.returncode}):\n"
                                f"{_tail(self.dcerpcd_log_path)}")
            if time.monotonic() > deadline:
                raise CtdbError(f"node {self.pnn}: samba-dcerpcd not listening on "
                                f"{self.addr}:135 after {timeout}s:\n"
                                f"{_tail(self.dcerpcd_log_path)}")
            time.sleep(0.1)

    def stop_dcerpcd(self):
        """SIGTERM, then SIGKILL, to samba-dcerpcd's session (its rpcd_*
        helpers are its children there)."""
        p, self.dcerpcd = self.dcerpcd, None
        if p is None:
            return
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue

    def net(self, args, check=True, timeout=60):
        """Samba's net tool on this node's smb.conf, in its network namespace
        (it reaches ctdbd and the node's daemons by unix sockets)."""
        r = subprocess.run(self.prefix + ["net", "-s", self.smbd.conf_path] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise CtdbError(f"node {self.pnn}: net {' '.join(args)} failed ({r.returncode}):\n"
                            f"{r.stdout}{r.stderr}")
        return r

    def addrs_on_iface(self):
        """IPv4 addresses on this node's pub0, as the kernel has them."""
        r = _run(self.prefix + ["ip", "-4", "-o", "addr", "show", "dev", IFACE], check=False)
        return re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", r.stdout)


class CtdbCluster:
    """nodes: 2 or 3 ctdbd+smbd nodes; publics: how many public addresses.
    durable: the share grants durable handles (posix locking = no).
    smbd_global/smbd_share: more smb.conf lines for every node. tunables:
    {name: value} for ctdb.tunables (CTDB's defaults otherwise, but for
    LAB_TUNABLES). witness:
    samba-dcerpcd on every node serving Witness on TCP (see above);
    witness_node_ips: its interface list includes the node addresses."""

    def __init__(self, nodes=2, publics=1, durable=True, smbd_global=(), smbd_share=(),
                 tunables=None, log_level=None, witness=False, witness_node_ips=True):
        if not 2 <= nodes <= 3:
            raise ValueError("a cluster has 2 or 3 nodes")
        if not 1 <= publics <= 4:
            raise ValueError("1 to 4 public addresses")
        _counter[0] += 1
        self.id = f"{os.getpid()}-{_counter[0]}"
        self.tag = f"{os.getpid() % 10000:04d}{_counter[0] % 10}"
        self.hub_ns = f"{PREFIX}{self.id}-hub"
        self.client_ns = f"{PREFIX}{self.id}-cli"
        self.public_addrs = [f"{SUBNET}.{101 + j}" for j in range(publics)]
        self.durable = durable
        self.witness = witness
        self.smbd_global = list(smbd_global)
        if witness:
            self.smbd_global += WITNESS_GLOBAL + \
                [f"rpcd witness:include node ips = {'yes' if witness_node_ips else 'no'}"]
        self.smbd_share = list(smbd_share)
        self.tunables = {**LAB_TUNABLES, **(tunables or {})}
        self.log_level = log_level
        self.n = nodes
        self.dir = None
        self.nodes = []
        self._created = []
        self._tmpfs = False
        self.startup_s = None

    # paths and prefixes ----------------------------------------------
    @property
    def shared(self):
        return os.path.join(self.dir, "shared")

    @property
    def share_path(self):
        return os.path.join(self.shared, "share")

    @property
    def reclock(self):
        return os.path.join(self.shared, ".ctdb", "reclock")

    @property
    def client_prefix(self):
        return ["nsenter", f"--net={NETNS_DIR}/{self.client_ns}"]

    @property
    def user(self):
        return self.nodes[0].smbd.user

    @property
    def password(self):
        return self.nodes[0].smbd.password

    @property
    def share(self):
        return self.nodes[0].smbd.share

    def unc(self, addr=None):
        return f"//{addr or self.public_addrs[0]}/{self.share}"

    def live_nodes(self):
        return [nd for nd in self.nodes if not nd.dead]

    # lifecycle -------------------------------------------------------
    def start(self, timeout=90):
        reason = unavailable_reason()
        if reason:
            raise CtdbError(reason)
        gone = missing()
        if gone:
            raise CtdbError(f"not installed: {gone} (run tools/install-deps)")
        remove_stale()
        _live.append(self)
        t0 = time.monotonic()
        try:
            self.dir = tempfile.mkdtemp(prefix="smbrdma-ctdb-")
            os.chmod(self.dir, 0o755)
            os.makedirs(self.shared)
            _run(["mount", "-t", "tmpfs", "-o", "size=512m,mode=0755", "smbrdma-ctdb",
                  self.shared])
            self._tmpfs = True
            os.makedirs(os.path.dirname(self.reclock))
            os.makedirs(self.share_path)
            self.nodes = [Node(self, i) for i in range(self.n)]
            self._net()
            nodes_text = "".join(f"{nd.addr}\n" for nd in self.nodes)
            public_text = "".join(f"{a}/24 {IFACE}\n" for a in self.public_addrs)
            os.makedirs("/run/ctdb", exist_ok=True)  # a mount point (see above)
            for nd in self.nodes:
                nd.setup(nodes_text, public_text, self.reclock, self.tunables)
            for nd in self.nodes:
                nd.start_ctdbd()
            self.wait_healthy(timeout=max(10, timeout - (time.monotonic() - t0)))
            for nd in self.nodes:
                self._start_samba(nd)
            u = pwd.getpwnam(self.nodes[0].smbd.user)
            os.chown(self.share_path, u.pw_uid, u.pw_gid)
            for a in self.public_addrs:
                self._wait_reachable(a, time.monotonic() + 30)
        except BaseException:
            try:
                self.close()
            except CtdbError as e:
                sys.stderr.write(f"ctdb cluster teardown after a failed start: {e}\n")
            raise
        self.startup_s = time.monotonic() - t0
        return self

    def _start_samba(self, nd):
        nd.smbd = ClusterSmbd(nd, self.share_path, durable=self.durable,
                              extra_global=self.smbd_global, extra_share=self.smbd_share,
                              client_wrapper=self.client_prefix, log_level=self.log_level)
        nd.smbd.start()
        if self.witness:
            nd.start_dcerpcd()

    def restore(self, timeout=90):
        """Back to the state start() leaves, for the next test on the same
        cluster: disabled nodes enabled, every node OK and every public
        address hosted and answering, the share empty. Returns the seconds it
        took. Not after kill_node(): a cluster with a dead node is replaced
        (SharedCluster). Restarting the dead node's ctdbd and smbd took 12-15 s
        against 15-16 s for a new cluster (+2-3 s to close the old one), but
        in one of four runs the next `ctdb moveip` off the surviving node
        then killed 0 of the address's 1 TCP connections (10.interface) and
        the address answered the client only after 31 s."""
        t0 = time.monotonic()
        if any(nd.dead for nd in self.nodes):
            raise CtdbError("a node is dead: restore() does not restart nodes")
        st = self.status()
        for nd in self.nodes:
            if "DISABLED" in st.get(nd.pnn, ""):
                self.enable_node(nd.pnn)
        self.wait_healthy(timeout=timeout)
        for nd in self.nodes:
            if nd.smbd is None or not nd.smbd.alive():
                raise CtdbError(f"node {nd.pnn}: smbd is not running")
        for a in self.public_addrs:
            self._wait_reachable(a, time.monotonic() + 30)
        for name in os.listdir(self.share_path):
            p = os.path.join(self.share_path, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        return time.monotonic() - t0

    def _net(self):
        for ns in [self.hub_ns, self.client_ns] + [nd.ns for nd in self.nodes]:
            _run(["ip", "netns", "add", ns])
            self._created.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "-n", self.hub_ns, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.hub_ns, "link", "set", "br0", "up"])
        ends = [(nd.ns, nd.hub_if, nd.addr) for nd in self.nodes] + \
            [(self.client_ns, f"c{self.tag}cl", CLIENT_ADDR)]
        for ns, hub_if, addr in ends:
            _run(["ip", "link", "add", IFACE, "netns", ns, "type", "veth", "peer", "name",
                  hub_if, "netns", self.hub_ns])
            _run(["ip", "-n", self.hub_ns, "link", "set", hub_if, "master", "br0"])
            _run(["ip", "-n", self.hub_ns, "link", "set", hub_if, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", IFACE])
            _run(["ip", "-n", ns, "link", "set", IFACE, "up"])

    def close(self):
        """Idempotent; safe after a partial start. Raises CtdbError listing
        what was left behind."""
        errors = []
        for nd in self.nodes:
            nd.stop_dcerpcd()
            if nd.smbd is not None:
                try:
                    nd.smbd.stop()
                except Exception as e:
                    errors.append(f"node {nd.pnn} smbd stop: {e}")
                nd.smbd = None
        for nd in self.nodes:
            if nd.ctdbd is not None and nd.ctdbd.poll() is None:
                try:
                    nd.ctdb(["shutdown"], check=False, timeout=30)
                except (subprocess.TimeoutExpired, CtdbError) as e:
                    errors.append(f"node {nd.pnn}: ctdb shutdown: {e}")
        for nd in self.nodes:
            if nd.ctdbd is None:
                continue
            try:
                nd.ctdbd.wait(timeout=15)
            except subprocess.TimeoutExpired:
                errors.append(f"node {nd.pnn}: ctdbd did not shut down in 15 s; killed")
            try:
                os.killpg(nd.ctdbd.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                nd.ctdbd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                errors.append(f"node {nd.pnn}: ctdbd pid {nd.ctdbd.pid} survives SIGKILL")
            if nd.ctdbd.stdin:
                nd.ctdbd.stdin.close()
            nd.ctdbd = None
        for ns in reversed(self._created):
            _delete_ns(ns)
        left = [ns for ns in self._created if ns in netns_list()]
        if left:
            errors.append(f"namespaces still there: {left}")
        self._created = []
        if self.dir:
            stray = self._stray_processes()
            for pid in stray:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if stray:
                errors.append(f"processes of the cluster outlived it (killed): {stray}")
        if self._tmpfs:
            r = subprocess.run(["umount", self.shared], capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"umount {self.shared}: {r.stderr.strip()}; lazy unmount")
                subprocess.run(["umount", "-l", self.shared], capture_output=True)
            self._tmpfs = False
        if self.dir and os.environ.get("SMBRDMA_KEEP_CTDB_DIR") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
        if self in _live:
            _live.remove(self)
        if errors:
            raise CtdbError("; ".join(errors))

    def _stray_processes(self):
        """PIDs whose command line names this cluster's dir (the unshare
        wrapper, smbd -s <conf>, a helper)."""
        found = []
        me = os.getpid()
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) == me:
                continue
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if self.dir.encode() in cmd:
                found.append(int(p))
        return found

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # state -----------------------------------------------------------
    def any_live(self):
        for nd in self.live_nodes():
            if nd.ctdbd is not None and nd.ctdbd.poll() is None:
                return nd
        raise CtdbError("no live node")

    def status(self, node=None):
        """`ctdb status` of node (default: a live one): {pnn: flags} where
        flags is CTDB's word list, e.g. "OK", "DISCONNECTED|UNHEALTHY|INACTIVE"."""
        nd = node or self.any_live()
        r = nd.ctdb(["status"], check=False)
        out = {}
        for m in re.finditer(r"^pnn:(\d+)\s+\S+\s+(\S+)", r.stdout, re.M):
            out[int(m.group(1))] = m.group(2)
        return out

    def status_text(self, node=None):
        nd = node or self.any_live()
        return nd.ctdb(["status"], check=False).stdout

    def ips(self, node=None):
        """`ctdb -X ip` of node (default: a live one): {address: pnn}, -1
        for an address no node hosts."""
        nd = node or self.any_live()
        r = nd.ctdb(["-X", "ip"], check=False)
        out = {}
        for ln in r.stdout.splitlines():
            f = ln.strip("|").split("|")
            if len(f) >= 2 and re.fullmatch(r"[\d.]+", f[0]) and re.fullmatch(r"-?\d+", f[1]):
                out[f[0]] = int(f[1])
        return out

    def leader(self, node=None):
        """pnn of the cluster's leader (`ctdb leader`), None if unknown."""
        nd = node or self.any_live()
        r = nd.ctdb(["leader"], check=False)
        return int(r.stdout.strip()) if r.stdout.strip().isdigit() else None

    def holder(self, addr):
        """pnn of the node CTDB says hosts addr (-1: none)."""
        return self.ips().get(addr, -1)

    def holders_on_wire(self, addr):
        """pnns whose pub0 actually has addr (the kernel's view)."""
        return [nd.pnn for nd in self.live_nodes() if addr in nd.addrs_on_iface()]

    def wait_healthy(self, timeout=60):
        """Until every live node says OK in every live node's `ctdb status`
        and every public address is hosted by a live node (in CTDB's view
        and on that node's interface)."""
        deadline = time.monotonic() + timeout
        live = {nd.pnn for nd in self.live_nodes()}
        last = ""
        while True:
            for nd in self.live_nodes():
                if nd.ctdbd is not None and nd.ctdbd.poll() is not None:
                    raise CtdbError(f"node {nd.pnn}: ctdbd exited ({nd.ctdbd.returncode}):\n"
                                    f"{nd.log_tail()}")
            ok = True
            try:
                for nd in self.live_nodes():
                    st = self.status(nd)
                    if any(st.get(p) != "OK" for p in live):
                        ok = False
                        last = self.status_text(nd)
                        break
                if ok:
                    ips = self.ips()
                    if any(ips.get(a, -1) not in live for a in self.public_addrs) or \
                            any(self.holders_on_wire(a) != [ips[a]] for a in self.public_addrs):
                        ok = False
                        last = f"ctdb ip: {ips}; on the wire: " + \
                            str({a: self.holders_on_wire(a) for a in self.public_addrs})
            except subprocess.TimeoutExpired as e:
                ok, last = False, str(e)
            if ok:
                return
            if time.monotonic() > deadline:
                raise CtdbError(f"cluster not healthy after {timeout:.0f}s:\n{last}\n" +
                                "\n".join(f"--- node {nd.pnn} log ---\n{nd.log_tail()}"
                                          for nd in self.nodes))
            time.sleep(0.25)

    # reaching it from the client -------------------------------------
    def client_cmd(self, argv, check=True, timeout=120, **kw):
        return _run(self.client_prefix + list(argv), check=check, timeout=timeout, **kw)

    def client_popen(self, argv, **kw):
        return subprocess.Popen(self.client_prefix + list(argv), **kw)

    def reachable(self, addr, port=445, timeout=0.5):
        """Does a TCP connection from the client namespace to addr:port get
        accepted?"""
        probe = ("import socket,sys\n"
                 "try: socket.create_connection((sys.argv[1], int(sys.argv[2])), "
                 "float(sys.argv[3])).close()\n"
                 "except OSError: sys.exit(1)\n")
        r = subprocess.run(self.client_prefix + [sys.executable, "-c", probe, addr, str(port),
                                                 str(timeout)], capture_output=True)
        return r.returncode == 0

    def _wait_reachable(self, addr, deadline):
        while not self.reachable(addr):
            if time.monotonic() > deadline:
                raise CtdbError(f"{addr}:445 not reachable from the client namespace "
                                f"(ctdb ip: {self.ips()})")
            time.sleep(0.05)

    def smbclient(self, command, addr=None, check=True, timeout=60):
        """smbclient -c COMMAND from the client namespace to addr (default:
        the first public address)."""
        nd = self.nodes[0]
        return nd.smbd.smbclient(command, host=addr or self.public_addrs[0], check=check,
                                 timeout=timeout)

    # failures --------------------------------------------------------
    def kill_node(self, pnn, timeout=60, power_off=False):
        """Node pnn dies: SIGKILL to all its processes, then its link goes
        down (its kernel still resets the TCP connections of the killed
        processes: the client and the other ctdbds see it at once).
        power_off=True: the link goes down first, as when the machine loses
        power: nothing reaches anyone, the other ctdbds notice only when
        their keepalives go unanswered (KeepaliveInterval x KeepaliveLimit,
        5 s x 5 by default), and the client only through its own timeouts or
        the tickle ACKs the new node sends for the connections smbd
        registered with CTDB. Waits until every public address it held is hosted by another
        node (CTDB's view and the interface) and accepts TCP from the
        client. Returns {"killed_at": monotonic time, "moved": {addr: new
        pnn}, "leader_before": the leader (recovery master) at the kill,
        "ctdb_s": kill -> `ctdb ip` shows them all elsewhere, "reachable_s":
        kill -> each accepts from the client (the largest)}. When the node
        was the leader the survivors first wait out `leader timeout` (5 s)
        and elect another."""
        nd = self.nodes[pnn]
        held = [a for a, p in self.ips().items() if p == pnn]
        leader = self.leader()
        t0 = time.monotonic()
        if power_off:
            _run(nd.prefix + ["ip", "link", "set", IFACE, "down"])
        for proc in (nd.ctdbd, nd.smbd.proc if nd.smbd else None, nd.dcerpcd):
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        _kill_all_in(nd.ns, grace=5)
        if _pids_in(nd.ns):
            raise CtdbError(f"node {pnn}: processes survive SIGKILL: {_pids_in(nd.ns)}")
        if not power_off:
            _run(nd.prefix + ["ip", "link", "set", IFACE, "down"])
        nd.dead = True
        for proc in (nd.ctdbd, nd.smbd.proc if nd.smbd else None, nd.dcerpcd):
            if proc is not None:
                proc.wait(timeout=10)
        res = {"killed_at": t0, "held": held, "leader_before": leader, "moved": {},
               "ctdb_s": None, "reachable_s": None}
        deadline = t0 + timeout
        live = {x.pnn for x in self.live_nodes()}
        while True:
            ips = self.ips()
            if all(ips.get(a, -1) in live for a in held):
                res["ctdb_s"] = time.monotonic() - t0
                res["moved"] = {a: ips[a] for a in held}
                break
            if time.monotonic() > deadline:
                raise CtdbError(f"addresses {held} of node {pnn} not taken over in "
                                f"{timeout}s: ctdb ip {ips}\n{self.status_text()}")
            time.sleep(0.05)
        for a in held:
            self._wait_reachable(a, deadline)
        res["reachable_s"] = time.monotonic() - t0
        return res

    def disable_node(self, pnn):
        """`ctdb disable` on node pnn: it stays in the cluster but gives up
        its public addresses."""
        self.nodes[pnn].ctdb(["disable"])

    def enable_node(self, pnn):
        self.nodes[pnn].ctdb(["enable"])

    def moveip(self, addr, pnn):
        """`ctdb moveip addr pnn`: move a public address to node pnn."""
        self.any_live().ctdb(["moveip", addr, str(pnn)])

    def describe(self):
        return {"nodes": [{"pnn": nd.pnn, "ns": nd.ns, "addr": nd.addr, "base": nd.base,
                           "dead": nd.dead} for nd in self.nodes],
                "client_ns": self.client_ns, "client_addr": CLIENT_ADDR,
                "public_addrs": self.public_addrs, "share_path": self.share_path,
                "dir": self.dir}


@atexit.register
def _close_all():
    for cl in list(_live):
        try:
            cl.close()
        except Exception as e:
            sys.stderr.write(f"ctdb cluster {cl.id}: {e}\n")


try:
    import pytest
except ImportError:
    pytest = None

def _print_logs(cl):
    for nd in cl.nodes:
        sys.stderr.write(f"--- node {nd.pnn} ctdb log tail ({nd.log_path}) ---\n"
                         f"{nd.log_tail()}\n")
        if nd.smbd is not None:
            sys.stderr.write(f"--- node {nd.pnn} smbd log tail ---\n{nd.smbd.log_tail()}\n")


class SharedCluster:
    """One cluster for the tests of a module (ctdb_module_cluster): started
    by the first test that asks, restore()d for each later one; after a test
    that killed a node, or when the restore fails, the cluster is closed and
    a new one started."""

    def __init__(self, kw):
        self.kw = dict(kw)
        self.cl = None
        self.restores = []   # seconds each restore took
        self.starts = 0

    def get(self):
        if self.cl is not None and any(nd.dead for nd in self.cl.nodes):
            cl, self.cl = self.cl, None   # see CtdbCluster.restore()
            cl.close()
        if self.cl is not None:
            try:
                self.restores.append(self.cl.restore())
                return self.cl
            except (CtdbError, SambaError, NetnsError, subprocess.SubprocessError,
                    OSError) as e:
                sys.stderr.write(f"ctdb cluster {self.cl.id}: restore failed ({e}); "
                                 f"starting a new cluster\n")
                _print_logs(self.cl)
                cl, self.cl = self.cl, None
                cl.close()
        self.starts += 1
        self.cl = CtdbCluster(**self.kw).start()
        return self.cl

    def close(self):
        cl, self.cl = self.cl, None
        if cl is not None:
            cl.close()


def _check_machine():
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    gone = missing()
    assert not gone, f"not installed: {gone} (tools/install-deps installs ctdb, ethtool)"


if pytest is not None:
    @pytest.fixture
    def ctdb_factory(request):
        """make(nodes=2, publics=1, ...) -> a started, healthy CtdbCluster,
        closed after the test (each node's ctdb and smbd log tails are
        printed if the test failed). Skips only when the machine cannot run
        it (not root, no network namespaces); a missing ctdb package fails."""
        _check_machine()
        clusters = []

        def make(**kw):
            cl = CtdbCluster(**kw)
            clusters.append(cl)
            return cl.start()

        yield make
        rep = getattr(request.node, "rep_call", None)
        problems = []
        for cl in reversed(clusters):
            if rep is not None and rep.failed:
                _print_logs(cl)
            try:
                cl.close()
            except (CtdbError, NetnsError) as e:
                problems.append(str(e))
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)

    @pytest.fixture(scope="module")
    def ctdb_module_cluster(request):
        """A SharedCluster of CtdbCluster(**CTDB_CLUSTER) (a dict the test
        module defines; defaults otherwise), closed after the module's last
        test. Tests take it through ctdb_cluster."""
        _check_machine()
        sh = SharedCluster(getattr(request.module, "CTDB_CLUSTER", {}))
        yield sh
        try:
            sh.close()
        except (CtdbError, NetnsError) as e:
            pytest.fail(str(e), pytrace=False)
        if sh.restores:
            sys.stderr.write(f"ctdb module cluster: {sh.starts} start(s), restores took "
                             f"{', '.join(f'{t:.1f}' for t in sh.restores)} s\n")

    @pytest.fixture
    def ctdb_cluster(ctdb_module_cluster, request):
        """The module's cluster, healthy with every node alive and the share
        empty (SharedCluster.get); its logs are printed if the test failed."""
        cl = ctdb_module_cluster.get()
        yield cl
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            _print_logs(cl)


def main(argv):
    """Bring a cluster up, print it as JSON, hold it until stdin closes."""
    import argparse
    import json
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--publics", type=int, default=1)
    a = ap.parse_args(argv)

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    cl = CtdbCluster(nodes=a.nodes, publics=a.publics).start()
    try:
        print(json.dumps({**cl.describe(), "startup_s": round(cl.startup_s, 2),
                          "ips": cl.ips()}), flush=True)
        while sys.stdin.read(1):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
