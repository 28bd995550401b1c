"""A private Samba smbd for tests and benchmarks.

Owns one temp dir holding smb.conf, every Samba state/lock/cache/pid dir,
its logs, and the share, which is a tmpfs mounted just for this server.
smbd listens on 127.0.0.1 only, on a free port. Needs root (tmpfs mount,
useradd, smbd).

    with SambaServer(extra_global=["server signing = mandatory"]) as srv:
        srv.smbclient("ls")
        srv.port, srv.share_path, srv.user, srv.password

posix=True turns on the SMB3 POSIX extensions (POSIX_GLOBAL) and makes the
main share one that lets a POSIX client's modes and names through
(POSIX_SHARE); ensure_group() and add_user() make the accounts a test of
owners needs.

A test may move it elsewhere: host= (the address smbd binds and clients
use), interfaces= (the smb.conf interfaces list, one entry per element,
quoted where needed so "10.77.1.1;speed=...,capability=RSS" stays one),
wrapper= (an argv prefix smbd and the readiness probe run under, e.g.
["nsenter", "--net=/run/netns/NS"]) and client_wrapper= (the same for
smbclient()). extra_shares= adds shares beside the main one, {name: [smb.conf
lines]}, each on a directory of its own under the temp dir owned by the
user, e.g. {"locked": ["invalid users = smbrdmatest"]} for a share the test
user may not open. tests/lib/netns.py uses them to run Samba in a network
namespace.

Run as a script (python3 -m lib.samba from tests/) it starts a server, prints
one JSON line describing it, and keeps it up until stdin closes or SIGTERM:
the benchmark and tools/demo use that.
"""

import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
DEFAULT_USER = "smbrdmatest"
DEFAULT_PASSWORD = "Sm8rdma-test-pw"
SMBD = os.environ.get("SMBRDMA_SMBD", "/usr/sbin/smbd")


# The SMB3 POSIX extensions (Samba 4.22, "smb3 unix extensions"): a
# parameter of [global] and of each share.  The negotiate context is
# answered only when [global] has it (smb2_negprot.c), and each share's own
# value decides whether its CREATEs take the POSIX create context
# (smb2_create.c): "smb3 unix extensions = no" in a share turns them off
# there again.
POSIX_GLOBAL = ["smb3 unix extensions = yes"]
# A share that keeps what a POSIX client asks for: the mode in the POSIX
# create context is masked with "create mask" / "directory mask"
# (open.c, apply_conf_file_mask), and 4.22 lists a name Windows rejects
# ("a:b", "x.", "a\\b") as its 8.3 mangle unless "mangled names = no",
# also to a POSIX handle (smb2_trans2.c; 4.23 no longer does).
POSIX_SHARE = ["create mask = 07777", "directory mask = 07777", "mangled names = no"]


class SambaError(RuntimeError):
    pass


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_accepts(port, host=HOST, timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def run_shadow(argv):
    """useradd/usermod/groupadd/userdel, retried while another process holds
    the lock of /etc/passwd or /etc/group (exit status 10: tests running
    beside this one add users too); the last try's CompletedProcess."""
    for _ in range(50):
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 10:
            break
        time.sleep(0.2)
    return r


def ensure_user(user, password=None):
    """Create the unix account Samba maps the SMB user to (no home, no
    login shell), if it does not exist yet."""
    try:
        pwd.getpwnam(user)
        return
    except KeyError:
        pass
    r = run_shadow(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", user])
    try:
        pwd.getpwnam(user)  # made, here or by a test running beside this one
    except KeyError:
        raise SambaError(f"useradd {user} failed ({r.returncode}): {r.stderr}") from None


def ensure_group(group, members=()):
    """Create the unix group if it does not exist and put members (unix
    accounts) in it; returns its gid.  Samba reads a user's groups when the
    user logs on."""
    try:
        grp.getgrnam(group)
    except KeyError:
        r = run_shadow(["groupadd", group])
        if r.returncode != 0:  # another test run may have made it meanwhile
            try:
                grp.getgrnam(group)
            except KeyError:
                raise SambaError(f"groupadd {group} failed: {r.stderr}") from None
    for user in members:
        if user not in grp.getgrnam(group).gr_mem:
            r = run_shadow(["usermod", "-aG", group, user])
            if r.returncode != 0:
                raise SambaError(f"usermod -aG {group} {user} failed ({r.returncode}): "
                                 f"{r.stderr}")
    return grp.getgrnam(group).gr_gid


def _tail(path, n=40):
    try:
        with open(path, "r", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"(cannot read {path}: {e})"


def _pids_naming(text):
    """PIDs whose command line contains text."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def _conf_list_item(item):
    """One element of an smb.conf list: quoted if it holds a list separator
    (',', ';' or blank), as in "10.77.1.1;speed=1000000000,capability=RSS"."""
    return f'"{item}"' if any(c in item for c in ",; \t") else item


class SambaServer:
    def __init__(self, extra_global=(), extra_share=(), user=DEFAULT_USER,
                 password=DEFAULT_PASSWORD, share="share", tmpfs_size="1536m",
                 port=None, log_level=None, host=HOST, interfaces=None, wrapper=(),
                 client_wrapper=(), extra_shares=None, posix=False):
        self.extra_global = (POSIX_GLOBAL if posix else []) + list(extra_global)
        self.extra_share = (POSIX_SHARE if posix else []) + list(extra_share)
        self.user = user
        self.password = password
        self.share = share
        self.tmpfs_size = tmpfs_size
        self.port = port
        # SMBRDMA_SAMBA_LOG_LEVEL=5 (or 10) to see why Samba dropped a client
        self.log_level = log_level if log_level is not None else \
            int(os.environ.get("SMBRDMA_SAMBA_LOG_LEVEL", "1"))
        self.host = host
        self.interfaces = list(interfaces) if interfaces else ["127.0.0.1/8"]
        self.wrapper = list(wrapper)
        self.client_wrapper = list(client_wrapper)
        self.extra_shares = {k: list(v) for k, v in (extra_shares or {}).items()}
        self.dir = None
        self.proc = None
        self._tmpfs_mounted = False

    # paths -----------------------------------------------------------
    @property
    def conf_path(self):
        return os.path.join(self.dir, "smb.conf")

    @property
    def share_path(self):
        return os.path.join(self.dir, "share")

    def extra_share_path(self, name):
        return os.path.join(self.dir, "shares", name)

    @property
    def log_path(self):
        return os.path.join(self.dir, "log", "smbd.stdout")

    @property
    def unc(self):
        """UNC for mount.smbrdma, with the port: //127.0.0.1:PORT/share."""
        return f"//{self.host}:{self.port}/{self.share}"

    def describe(self):
        return {"host": self.host, "port": self.port, "share": self.share,
                "unc": self.unc, "user": self.user, "password": self.password,
                "share_path": self.share_path, "conf": self.conf_path,
                "log": self.log_path, "dir": self.dir,
                "pid": self.proc.pid if self.proc else None}

    # lifecycle -------------------------------------------------------
    def _write_conf(self):
        d = self.dir
        g = [
            "server role = standalone server",
            "workgroup = SMBRDMA",
            "netbios name = SMBRDMATEST",
            "bind interfaces only = yes",
            "interfaces = " + " ".join(_conf_list_item(i) for i in self.interfaces),
            f"smb ports = {self.port}",
            "disable netbios = yes",
            f"private dir = {d}/private",
            f"lock directory = {d}/lock",
            f"state directory = {d}/state",
            f"cache directory = {d}/cache",
            f"pid directory = {d}/pid",
            f"ncalrpc dir = {d}/ncalrpc",
            f"binddns dir = {d}/binddns",
            f"usershare path = {d}/usershares",
            f"log file = {d}/log/smbd.log",
            "max log size = 0",
            f"log level = {self.log_level}",
            "load printers = no",
            "printing = bsd",
            "printcap name = /dev/null",
            "disable spoolss = yes",
            "server min protocol = SMB2_02",
            "passdb backend = tdbsam",
            "map to guest = never",
            "restrict anonymous = 2",
        ] + self.extra_global
        s = [
            f"path = {self.share_path}",
            "read only = no",
            "browseable = yes",
            f"valid users = {self.user}",
            "create mask = 0644",
            "directory mask = 0755",
        ] + self.extra_share
        text = "[global]\n" + "".join(f"\t{x}\n" for x in g)
        text += f"\n[{self.share}]\n" + "".join(f"\t{x}\n" for x in s)
        for name, lines in self.extra_shares.items():
            opts = [f"path = {self.extra_share_path(name)}", "read only = no"] + lines
            text += f"\n[{name}]\n" + "".join(f"\t{x}\n" for x in opts)
        with open(self.conf_path, "w") as f:
            f.write(text)

    def start(self, timeout=30):
        if os.geteuid() != 0:
            raise SambaError("the private Samba needs root (tmpfs mount, useradd, smbd)")
        if not os.access(SMBD, os.X_OK):
            raise SambaError(f"{SMBD} not found: run tools/install-deps")
        self.dir = tempfile.mkdtemp(prefix="smbrdma-samba-")
        os.chmod(self.dir, 0o755)
        for sub in ("private", "lock", "state", "cache", "pid", "ncalrpc",
                    "binddns", "usershares", "log", "share"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.chmod(os.path.join(self.dir, "private"), 0o700)
        try:
            subprocess.run(["mount", "-t", "tmpfs", "-o",
                            f"size={self.tmpfs_size},mode=0755",
                            "smbrdma-share", self.share_path],
                           check=True, capture_output=True, text=True)
            self._tmpfs_mounted = True
            ensure_user(self.user)
            pw = pwd.getpwnam(self.user)
            os.chown(self.share_path, pw.pw_uid, pw.pw_gid)
            for name in self.extra_shares:
                os.makedirs(self.extra_share_path(name))
                os.chown(self.extra_share_path(name), pw.pw_uid, pw.pw_gid)
            if self.port is None:
                # a wrapped smbd (another namespace) has ports of its own
                self.port = 445 if self.wrapper else free_port()
            self._write_conf()
            tp = subprocess.run(["testparm", "-s", self.conf_path],
                                capture_output=True, text=True)
            if tp.returncode != 0:
                raise SambaError(f"testparm rejects {self.conf_path}:\n{tp.stderr}")
            sp = subprocess.run(["smbpasswd", "-c", self.conf_path, "-a", "-s", self.user],
                                input=f"{self.password}\n{self.password}\n",
                                capture_output=True, text=True)
            if sp.returncode != 0:
                raise SambaError(f"smbpasswd failed: {sp.stdout}{sp.stderr}")
            self._spawn(timeout, "wb")
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, timeout, log_mode):
        log = open(self.log_path, log_mode)
        # Own session (so the forked per-connection children share our
        # process group and die with it); --no-process-group keeps smbd
        # from leaving it.
        self.proc = subprocess.Popen(
            self.wrapper + [SMBD, "-s", self.conf_path, "--foreground",
                            "--no-process-group", "--debug-stdout"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while not self.listening():
            if self.proc.poll() is not None:
                raise SambaError(f"smbd exited with {self.proc.returncode} before "
                                 f"listening on {self.port}:\n{_tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise SambaError(f"smbd not listening on {self.host}:{self.port} after "
                                 f"{timeout}s:\n{_tail(self.log_path)}")
            time.sleep(0.1)

    def kill_daemon(self):
        """SIGKILL every smbd of this server (the listener and each
        client's): connections reset, the port refuses; the share and the
        configuration stay for restart_daemon()."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def restart_daemon(self, timeout=30):
        """smbd again after kill_daemon(), on the same port and share."""
        self._spawn(timeout, "ab")

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            # children may outlive the parent: kill the whole group
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
            # samba-dcerpcd and its rpcd_* helpers, which smbd starts when a
            # client opens a named pipe (the LSA lookups of the SID map),
            # leave the group for a session of their own: find them by our
            # smb.conf on their command line
            for pid in _pids_naming(self.conf_path):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._tmpfs_mounted:
            r = subprocess.run(["umount", self.share_path], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", self.share_path], capture_output=True)
            self._tmpfs_mounted = False
        if self.dir and os.environ.get("SMBRDMA_KEEP_SAMBA_DIR") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # helpers ---------------------------------------------------------
    def listening(self):
        """Does smbd accept connections on host:port (seen from where it runs)?"""
        if not self.wrapper:
            return port_accepts(self.port, self.host)
        probe = ("import socket,sys\n"
                 "try: socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.5).close()\n"
                 "except OSError: sys.exit(1)\n")
        r = subprocess.run(self.wrapper + [sys.executable, "-c", probe, self.host,
                                           str(self.port)], capture_output=True)
        return r.returncode == 0

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n=40):
        return _tail(self.log_path, n)

    def smbclient(self, command, port=None, timeout=120, extra_args=(), check=True, host=None):
        """Run smbclient -c COMMAND against the share (optionally through
        another port, e.g. a proxy's, or another of the server's addresses),
        under client_wrapper. Returns the CompletedProcess."""
        args = self.client_wrapper + [
            "smbclient", f"//{host or self.host}/{self.share}", "-p", str(port or self.port),
            "-U", f"{self.user}%{self.password}", "-s", "/dev/null",
            "-c", command] + list(extra_args)
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise SambaError(f"{' '.join(args[:len(self.client_wrapper) + 4])} ... "
                             f"-c {command!r} failed "
                             f"({r.returncode}):\n{r.stdout}{r.stderr}")
        return r

    def add_user(self, user, password):
        """Another SMB account (and its unix account) on this server."""
        ensure_user(user)
        sp = subprocess.run(["smbpasswd", "-c", self.conf_path, "-a", "-s", user],
                            input=f"{password}\n{password}\n", capture_output=True, text=True)
        if sp.returncode != 0:
            raise SambaError(f"smbpasswd failed: {sp.stdout}{sp.stderr}")

    def chown_to_user(self, path):
        pw = pwd.getpwnam(self.user)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def main(argv):
    """Start a server, print its description as one JSON line, hold it until
    stdin reaches EOF or we get SIGTERM/SIGINT."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--global", dest="glob", action="append", default=[],
                    help="extra [global] line, e.g. 'server signing = mandatory'")
    ap.add_argument("--share-opt", action="append", default=[])
    ap.add_argument("--tmpfs-size", default="1536m")
    ap.add_argument("--port", type=int)
    a = ap.parse_args(argv)
    srv = SambaServer(extra_global=a.glob, extra_share=a.share_opt,
                      tmpfs_size=a.tmpfs_size, port=a.port)
    def on_term(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    srv.start()
    try:
        print(json.dumps(srv.describe()), flush=True)
        while sys.stdin.read(1):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
