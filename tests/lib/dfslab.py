"""DFS namespace lab ([MS-DFSC]): one network namespace, three private Sambas
in it, server A a DFS root whose links point at shares of B and C. Needs root.

    with DfsLab() as lab:
        lab.root_unc                   # "//10.88.0.1/dfsroot"
        lab.smbclient("ls link1\\*")   # smbclient in the namespace follows DFS
        lab.link_dirs("link1")         # [B's data dir, C's data dir] on the host
        lab.share_dir(1, "data")       # B's "data" share, a tmpfs on the host
        lab.ns_cmd(["ss", "-Hltn"])    # in the namespace
        lab.ns_popen([...])            # a long-running one, killed at close()
        m = lab.mount()                # mount.smbrdma of the root, in the namespace
        lab.stop_server(1)             # SIGKILL B's smbd (all of it)
        lab.start_server(1)            # and bring it back, same share, same port
        lab.describe()                 # everything above as a dict (JSON-able)

In pytest, import the fixture into a test module and call it:

    from lib.dfslab import dfslab_factory  # noqa: F401
    def test_x(dfslab_factory):
        lab = dfslab_factory()

Topology. One namespace, "smbrdma-dfs-<pid>-<n>" (pid of the creating
process), with only lo, up, carrying 10.88.0.1/32, 10.88.0.2/32 and
10.88.0.3/32 besides 127.0.0.1: no other device, no route out, so nothing
the lab does leaves it (no DNS either: use the addresses). Each address has
its own smbd on port 445 (lib.samba's SambaServer under
`nsenter --net=/run/netns/<ns>`, `bind interfaces only = yes`,
`interfaces = <addr>/32`; Samba accepts lo's /32 addresses as interfaces,
checked: `ss -ltn` in the namespace shows exactly the three listeners).
Servers are numbered 0, 1, 2 (or named "A", "B", "C"):

  0 A 10.88.0.1  [global] host msdfs = yes; share "dfsroot" (its main
                 share, a tmpfs) with msdfs root = yes. In it, besides the
                 ordinary ROOT_FILES (a file "rootfile.txt", a dir "rootdir"
                 with "inner.txt"), one symlink per DFS link, as Samba reads
                 them:  link1 -> msdfs:10.88.0.2\\data,10.88.0.3\\data
                        link2 -> msdfs:10.88.0.3\\data2
                 (targets in that order; DEFAULT_LINKS; links= changes them).
  1 B 10.88.0.2  share "data" (main share, tmpfs)
  2 C 10.88.0.3  share "data" (main share, tmpfs) and "data2" (an extra
                 share on a tmpfs of its own the lab mounts)

Each share of B and C starts with one file, SHARE_ID ("share-id.txt"),
saying which it is ("B 10.88.0.2 data\n", share_id(i, share)): reading
link1/share-id.txt through a client tells which target it is using.

All three have the same user and password (lib.samba's defaults), so a client
that follows a referral logs on to B and C with the credentials it used on A.
B's and C's "data" are two different directories: DFS does not replicate
(keeping a link's targets alike is the administrator's business), so what is
written through link1 lands on whichever target the client is using.
share_dir(i, share) gives the host path of a share (the tmpfs mounts are in
the host's mount namespace: only the network namespace differs), link_dirs()
the host paths of a link's targets in referral order.

Commands. ns_cmd()/ns_popen() run argv under `nsenter --net=/run/netns/<ns>`:
only the network namespace changes (`ip netns exec` would also unshare the
mount namespace, and a FUSE mount made by the command would be invisible to
the test). mount() does that for mount.smbrdma -f (lib.mount's SmbrdmaMount
with the nsenter prefix, NsMount), so m.path is usable from the test.

stop_server(i) SIGKILLs server i's smbd process group (the listener and each
connection's child: connections reset, the port refuses, like a server that
died); start_server(i) starts it again on the same address, port,
configuration and share contents (SambaServer.kill_daemon/restart_daemon).

Teardown (close(), the context manager's exit, the pytest fixture's finalizer,
atexit for anything left) unmounts the lab's mounts, kills the lab's
processes, stops the three smbds, kills by pid whatever still runs in the
namespace (samba-dcerpcd and other helpers), unmounts the tmpfs shares,
removes the servers' temp dirs and deletes the namespace, and checks that it
is gone. A new lab first removes what a lab whose process died left: its
namespaces (name carries the pid) and its servers' tmpfs mounts and temp dirs
(found by the marker `server string = smbrdma-dfs lab <pid>-<n> ...` in their
smb.conf). A lab killed between a server's tmpfs mount and its smb.conf
(a few milliseconds) leaves that tmpfs behind.

Run as a script (python3 -m lib.dfslab from tests/) it brings a lab up,
prints one JSON line describing it and holds it until stdin closes or
SIGTERM, like lib.samba and lib.netns: a client under development can be
pointed at it by hand:
    nsenter --net=/run/netns/<ns> build/fuse/mount.smbrdma //10.88.0.1/dfsroot MNT \\
        -o username=smbrdmatest,password=Sm8rdma-test-pw
"""

import atexit
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import sys

from lib.mount import DaemonProblem, SmbrdmaMount
from lib.netns import _kill_all_in, _pid_alive, netns_list
from lib.samba import DEFAULT_PASSWORD, DEFAULT_USER, SambaServer

PREFIX = "smbrdma-dfs-"
NETNS_DIR = "/run/netns"
ADDRS = ["10.88.0.1", "10.88.0.2", "10.88.0.3"]
NAMES = ["A", "B", "C"]
ROOT_SHARE = "dfsroot"
# link name -> targets in referral order, each (server index, share)
DEFAULT_LINKS = {"link1": [(1, "data"), (2, "data")], "link2": [(2, "data2")]}
# the ordinary entries of the DFS root's directory: path -> contents (None: a dir)
ROOT_FILES = {"rootfile.txt": b"in the dfs root\n", "rootdir": None,
              "rootdir/inner.txt": b"inner file of the dfs root\n"}
# in every share B and C serve: which server and share this is, e.g. "B 10.88.0.2 data\n"
SHARE_ID = "share-id.txt"
MARKER = "smbrdma-dfs lab"
DATA_TMPFS = "smbrdma-dfs-share"
_live = []
_counter = [0]


class DfsLabError(RuntimeError):
    pass


def _run(argv, check=True, timeout=60, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise DfsLabError(f"{' '.join(map(str, argv))} failed ({r.returncode}):\n"
                          f"{r.stdout}{r.stderr}")
    return r


def _mountpoints():
    """Every mount point in /proc/self/mountinfo (unescaped)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            out.append(mp.replace("\\040", " ").replace("\\011", "\t")
                       .replace("\\012", "\n").replace("\\134", "\\"))
    return out


def _umount(path):
    r = subprocess.run(["umount", path], capture_output=True)
    if r.returncode != 0:
        subprocess.run(["umount", "-l", path], capture_output=True)


def _stale_samba_dirs():
    """Temp dirs of lab Sambas (by the marker in their smb.conf) whose
    creating process is gone: {dir: [mount points under it]}."""
    found = {}
    for mp in _mountpoints():
        d = os.path.dirname(mp)
        if os.path.basename(d) == "shares":       # an extra share's tmpfs
            d = os.path.dirname(d)
        if not os.path.basename(d).startswith("smbrdma-samba-"):
            continue
        try:
            with open(os.path.join(d, "smb.conf")) as f:
                m = re.search(r"server string = " + re.escape(MARKER) + r" (\d+)-\d+", f.read())
        except OSError:
            continue
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            found.setdefault(d, []).append(mp)
    return found


def remove_stale():
    """Delete what labs of dead processes left: namespaces (and everything
    running in them), then their Sambas' tmpfs mounts and temp dirs."""
    for ns in netns_list():
        m = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\d+", ns)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _kill_all_in(ns)
            _run(["ip", "netns", "del", ns], check=False)
    for d, mps in _stale_samba_dirs().items():
        for mp in sorted(mps, key=len, reverse=True):
            _umount(mp)
        if not any(mp.startswith(d + "/") for mp in _mountpoints()):
            shutil.rmtree(d, ignore_errors=True)


def _server_index(i):
    if isinstance(i, str):
        return NAMES.index(i.upper())
    if i not in (0, 1, 2):
        raise ValueError(f"server {i!r}: 0, 1, 2 or 'A', 'B', 'C'")
    return i


class NsMount(SmbrdmaMount):
    """lib.mount's SmbrdmaMount whose daemon runs under an argv prefix
    (nsenter --net=...). nsenter execs the daemon: its pid and command line
    are mount.smbrdma's, as SmbrdmaMount.stop() expects."""

    def __init__(self, prefix, *a, **kw):
        super().__init__(*a, **kw)
        self.prefix = list(prefix)

    def _args(self):
        return self.prefix + super()._args()


class DfsLab:
    """links: {name: [(server index, share), ...]} (DEFAULT_LINKS). A share
    named as a target on B or C that is not its main "data" becomes an extra
    share there, on a tmpfs of its own. replicated: names of such extra shares
    that B and C serve from ONE directory (a tmpfs the lab mounts once and
    binds into both), as the replicas of a DFS link's targets or a cluster
    file system would: a file written through one server is there through
    the other. extra_global goes to every server's [global]; log_level to
    every SambaServer."""

    def __init__(self, links=None, extra_global=(), log_level=None, user=DEFAULT_USER,
                 password=DEFAULT_PASSWORD, tmpfs_size="512m", replicated=()):
        self.links = {k: [(_server_index(s), sh) for s, sh in v]
                      for k, v in (links or DEFAULT_LINKS).items()}
        for name, targets in self.links.items():
            if not targets or any(s == 0 for s, _ in targets):
                raise ValueError(f"link {name}: targets must be on B or C: {targets}")
        self.extra_global = list(extra_global)
        self.replicated = set(replicated)
        self._replica_dirs = {}    # share -> the one tmpfs B and C serve it from
        self.log_level = log_level
        self.user = user
        self.password = password
        self.tmpfs_size = tmpfs_size
        _counter[0] += 1
        self.id = f"{os.getpid()}-{_counter[0]}"
        self.ns = f"{PREFIX}{self.id}"
        self.addrs = list(ADDRS)
        self.servers = [None, None, None]
        self._extra_tmpfs = []     # mount points of extra shares' tmpfs
        self._created_ns = False
        self._procs = []
        self.mounts = []

    # names and paths -------------------------------------------------
    @property
    def prefix(self):
        """argv prefix that runs a command in the lab's namespace."""
        return ["nsenter", f"--net={NETNS_DIR}/{self.ns}"]

    @property
    def root_unc(self):
        return f"//{ADDRS[0]}/{ROOT_SHARE}"

    @property
    def root_dir(self):
        """Host path of A's dfsroot share (links are symlinks in it)."""
        return self.servers[0].share_path

    def server(self, i):
        return self.servers[_server_index(i)]

    def _shares_of(self, i):
        """Extra shares server i needs for the links (besides "data")."""
        return sorted({sh for targets in self.links.values() for s, sh in targets
                       if s == i and sh != "data"})

    def share_dir(self, i, share):
        """Host path of `share` on server i (0/1/2 or "A"/"B"/"C")."""
        srv = self.server(i)
        if share == srv.share:
            return srv.share_path
        if share in srv.extra_shares:
            return srv.extra_share_path(share)
        raise KeyError(f"server {NAMES[_server_index(i)]} has no share {share!r}")

    @staticmethod
    def share_id(i, share):
        """The contents of SHARE_ID in server i's share."""
        return f"{NAMES[i]} {ADDRS[i]} {share}\n"

    def link_target_uncs(self, link):
        """\\\\addr\\share of each target, in referral order."""
        return [f"\\\\{ADDRS[s]}\\{sh}" for s, sh in self.links[link]]

    def link_dirs(self, link):
        """Host paths of the link's targets, in referral order."""
        return [self.share_dir(s, sh) for s, sh in self.links[link]]

    def msdfs_target(self, link):
        """What the link's symlink in the root points to."""
        return "msdfs:" + ",".join(f"{ADDRS[s]}\\{sh}" for s, sh in self.links[link])

    # lifecycle -------------------------------------------------------
    def start(self):
        if os.geteuid() != 0:
            raise DfsLabError("the DFS lab needs root (ip netns, tmpfs, smbd)")
        remove_stale()
        _live.append(self)
        try:
            _run(["ip", "netns", "add", self.ns])
            self._created_ns = True
            _run(["ip", "-n", self.ns, "link", "set", "lo", "up"])
            for a in ADDRS:
                _run(["ip", "-n", self.ns, "addr", "add", f"{a}/32", "dev", "lo"])
            for i in range(3):
                self._start_server(i)
            self._populate_root()
        except BaseException:
            self.close()
            raise
        return self

    def _start_server(self, i):
        g = [f"server string = {MARKER} {self.id} server {NAMES[i]}"] + self.extra_global
        kw = {}
        if i == 0:
            g = ["host msdfs = yes"] + g
            kw = {"share": ROOT_SHARE, "extra_share": ["msdfs root = yes"]}
        else:
            kw = {"share": "data", "extra_shares": {sh: [f"valid users = {self.user}"]
                                                     for sh in self._shares_of(i)}}
        srv = SambaServer(extra_global=g, host=ADDRS[i], port=445,
                          interfaces=[f"{ADDRS[i]}/32"], wrapper=self.prefix,
                          client_wrapper=self.prefix, user=self.user, password=self.password,
                          tmpfs_size=self.tmpfs_size, log_level=self.log_level, **kw)
        self.servers[i] = srv
        srv.start()
        # the extra shares on tmpfs too (SambaServer makes them plain dirs);
        # smbd looks at a share's path only when a client connects to it
        for sh in srv.extra_shares:
            p = srv.extra_share_path(sh)
            if sh in self.replicated:
                if sh not in self._replica_dirs:
                    d = tempfile.mkdtemp(prefix=f"smbrdma-dfs-{self.id}-{sh}-")
                    _run(["mount", "-t", "tmpfs", "-o",
                          f"size={self.tmpfs_size},mode=0755", DATA_TMPFS, d])
                    self._extra_tmpfs.insert(0, d)  # unmounted after its binds
                    self._replica_dirs[sh] = d
                    srv.chown_to_user(d)
                _run(["mount", "--bind", self._replica_dirs[sh], p])
            else:
                _run(["mount", "-t", "tmpfs", "-o", f"size={self.tmpfs_size},mode=0755",
                      DATA_TMPFS, p])
            self._extra_tmpfs.append(p)
            srv.chown_to_user(p)
        if i > 0:
            for sh in [srv.share] + [x for x in srv.extra_shares if x not in self.replicated]:
                p = os.path.join(self.share_dir(i, sh), SHARE_ID)
                with open(p, "w") as f:
                    f.write(self.share_id(i, sh))
                srv.chown_to_user(p)

    def _populate_root(self):
        root = self.root_dir
        pw = pwd.getpwnam(self.user)
        for rel, data in ROOT_FILES.items():
            p = os.path.join(root, rel)
            if data is None:
                os.mkdir(p)
            else:
                with open(p, "wb") as f:
                    f.write(data)
            os.chown(p, pw.pw_uid, pw.pw_gid)
        for name in self.links:
            os.symlink(self.msdfs_target(name), os.path.join(root, name))

    def close(self):
        """Idempotent; safe after a partial start."""
        errors = []
        for m in self.mounts:
            if m.path is not None:
                m.stop(check=False)
        self.mounts = []
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
        for srv in self.servers:
            if srv is not None and srv.proc is not None:
                try:
                    os.killpg(srv.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._created_ns:
            _kill_all_in(self.ns)
        for p in reversed(self._extra_tmpfs):
            _umount(p)
        self._extra_tmpfs = []
        for d in self._replica_dirs.values():
            try:
                os.rmdir(d)
            except OSError as e:
                errors.append(f"replica dir {d}: {e}")
        self._replica_dirs = {}
        for srv in self.servers:
            if srv is not None:
                try:
                    srv.stop()
                except Exception as e:  # keep tearing down
                    errors.append(f"samba stop ({srv.host}): {e}")
        self.servers = [None, None, None]
        if self._created_ns:
            _run(["ip", "netns", "del", self.ns], check=False)
            if self.ns in netns_list():
                errors.append(f"namespace {self.ns} still there")
            self._created_ns = False
        if self in _live:
            _live.remove(self)
        if errors:
            raise DfsLabError("; ".join(errors))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # servers ---------------------------------------------------------
    def stop_server(self, i):
        """SIGKILL server i's smbd (listener and connection children); its
        share and configuration stay for start_server(i)."""
        self.server(i).kill_daemon()

    def start_server(self, i, timeout=30):
        """Server i's smbd again after stop_server(i), listening when this returns."""
        self.server(i).restart_daemon(timeout)

    def server_alive(self, i):
        return self.server(i).alive()

    # running things --------------------------------------------------
    def ns_cmd(self, argv, check=True, timeout=120, **kw):
        """Run argv in the namespace (network namespace only); returns the
        CompletedProcess (text, stdout/stderr captured)."""
        return _run(self.prefix + list(argv), check=check, timeout=timeout, **kw)

    def ns_popen(self, argv, **kw):
        """Popen argv in the namespace; killed at close() if still running."""
        p = subprocess.Popen(self.prefix + list(argv), **kw)
        self._procs.append(p)
        return p

    def smbclient(self, command, unc=None, check=True, timeout=120, extra_args=()):
        """smbclient UNC (default the DFS root) -c COMMAND in the namespace,
        as the lab's user; returns the CompletedProcess (raises DfsLabError
        on a non-zero exit with check)."""
        unc = unc or self.root_unc
        argv = ["smbclient", unc, "-U", f"{self.user}%{self.password}", "-s", "/dev/null",
                "-c", command] + list(extra_args)
        r = self.ns_cmd(argv, check=False, timeout=timeout)
        if check and r.returncode != 0:
            raise DfsLabError(f"smbclient {unc} -c {command!r} failed ({r.returncode}):\n"
                              f"{r.stdout}{r.stderr}")
        return r

    def mount(self, unc=None, options=(), user=None, password=None, **kw):
        """mount.smbrdma -f UNC (default the DFS root) in the namespace, as
        the lab's user; returns the live NsMount (MountFailed if it does not
        come up). Unmounted at close(); the pytest fixture checks it."""
        m = NsMount(self.prefix, unc or self.root_unc, user or self.user,
                    password or self.password, options=options, **kw)
        self.mounts.append(m)
        return m.start()

    def log_tails(self, n=30):
        return "".join(f"--- smbd {NAMES[i]} log tail ({srv.log_path}) ---\n"
                       f"{srv.log_tail(n)}\n"
                       for i, srv in enumerate(self.servers) if srv is not None)

    def describe(self):
        d = {"ns": self.ns, "prefix": self.prefix, "root_unc": self.root_unc,
             "user": self.user, "password": self.password, "servers": [], "links": {}}
        for i, srv in enumerate(self.servers):
            if srv is None:
                continue
            shares = {srv.share: srv.share_path}
            shares.update({sh: srv.extra_share_path(sh) for sh in srv.extra_shares})
            d["servers"].append({"name": NAMES[i], "index": i, "addr": ADDRS[i],
                                 "port": srv.port, "shares": shares, "conf": srv.conf_path,
                                 "log": srv.log_path, "dir": srv.dir,
                                 "pid": srv.proc.pid if srv.proc else None,
                                 "alive": srv.alive()})
        for name in self.links:
            d["links"][name] = {"symlink": self.msdfs_target(name),
                                "targets": self.link_target_uncs(name),
                                "dirs": self.link_dirs(name) if self.servers[1] else None}
        return d


@atexit.register
def _close_all():
    for lab in list(_live):
        try:
            lab.close()
        except Exception as e:
            sys.stderr.write(f"dfs lab {lab.id}: {e}\n")


try:
    import pytest
except ImportError:  # the script mode needs no pytest
    pytest = None

if pytest is not None:
    @pytest.fixture
    def dfslab_factory(request):
        """make(**DfsLab keywords) -> a started DfsLab, closed after the
        test: its mounts are unmounted and checked first (a daemon that
        crashed, hung or left something behind fails the test, as with
        mount_factory); the smbd and daemon log tails are printed if the
        test failed. Skips only if not root."""
        if os.geteuid() != 0:
            pytest.skip("not root: the DFS lab needs root (ip netns, tmpfs, smbd)")
        labs = []

        def make(**kw):
            lab = DfsLab(**kw)
            labs.append(lab)
            return lab.start()

        yield make
        rep = getattr(request.node, "rep_call", None)
        failed = rep is not None and rep.failed
        problems = []
        for lab in reversed(labs):
            for m in reversed(lab.mounts):
                if m.path is None:
                    continue
                if failed:
                    sys.stderr.write(f"--- daemon log tail ({m.log_path}) ---\n"
                                     f"{m.log_text()[-4000:]}\n")
                try:
                    m.stop(check=True)
                except DaemonProblem as e:
                    problems.append(str(e))
            if failed:
                sys.stderr.write(lab.log_tails())
            try:
                lab.close()
            except DfsLabError as e:
                problems.append(str(e))
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def main(argv):
    """Bring a lab up, print it as one JSON line, hold it until stdin reaches
    EOF or SIGTERM/SIGINT."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--global", dest="glob", action="append", default=[])
    ap.add_argument("--log-level", type=int)
    a = ap.parse_args(argv)

    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    lab = DfsLab(extra_global=a.glob, log_level=a.log_level)
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
