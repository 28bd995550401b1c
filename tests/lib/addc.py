"""A throwaway Samba AD DC on a loopback address, for the Kerberos tests.

Owns one temp dir holding the provisioned domain (realm SMBRDMA.TEST, DC
dc1.smbrdma.test), its smb.conf with an extra [share] on a plain directory,
a krb5.conf for clients, the test user's keytab, and the private /etc/hosts,
/etc/resolv.conf and /run/samba that the DC and the clients see. Needs root
and Debian's samba-ad-dc, samba-ad-provision, samba-dsdb-modules, winbind and
krb5-user (.ci/run installs them).

    with SambaADDC() as dc:
        env = dc.client_env(ccache)      # KRB5_CONFIG, KRB5CCNAME
        dc.kinit(ccache)                 # the test user, password on stdin
        dc.unc                           # //dc1.smbrdma.test/share
        dc.client_argv(["mount.smbrdma", ...])
        m = ADDCMount(dc, dc.client_env(ccache), ["sec=krb5"]).start()

Every name lookup stays on loopback:
- samba runs in a private mount namespace (unshare -m) whose /etc/hosts maps
  dc1.smbrdma.test to the DC's address, whose /etc/resolv.conf names only the
  DC's own DNS server, and whose /run/samba is ours (smbd finds winbindd only
  there). Provision copies a `dns forwarder` from the machine's resolv.conf:
  it is deleted, so the DC's DNS never asks outside either.
- clients get KRB5_CONFIG pointing at our krb5.conf (kdc = the DC's address,
  no DNS lookups of KDCs or realms, no reverse or forward canonicalisation),
  and client_argv() runs a command (mount.smbrdma) in a mount namespace of
  its own with the same hosts and resolv.conf, so getaddrinfo() of the DC's
  name is answered from our hosts file.
A FUSE mount made in that namespace must still be seen by the test: mounts
go under mount_root, a bind mount made shared, so the mount propagates back
(the namespace makes the mounts holding /etc/hosts and /etc/resolv.conf
private before covering them, so those never leak out).

The DC binds only its own address (127.0.0.2, or the next free of
127.0.0.3-9 when another DC runs): the other tests' smbd is on 127.0.0.1.
Provision + start take ~10-20 s; stop() kills the whole process tree and
removes the temp dir.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .mount import MountFailed, SmbrdmaMount, daemon_binary, is_mounted, format_options

REALM = "SMBRDMA.TEST"
DOMAIN = "SMBRDMA"
DNS_DOMAIN = "smbrdma.test"
DC_NAME = "dc1"
ADMIN_PASSWORD = "Adm1n-Smbrdma-pw"
USER = "krbuser"
USER_PASSWORD = "Krb-Smbrdma-pw1"
USER_UID = 20001  # its rfc2307 uidNumber: the DC's smbd creates files as this uid
USER_GID = 100
DC_ADDRESSES = [f"127.0.0.{i}" for i in range(2, 10)]
DC_PORTS = (53, 88, 389, 445)
# Debian 12 package that provides each command the fixture runs
COMMANDS = {
    "samba": "samba-ad-dc",
    "samba-tool": "samba-common-bin",
    "smbstatus": "samba",
    "winbindd": "winbind",
    "kinit": "krb5-user",
    "klist": "krb5-user",
    "unshare": "util-linux",
    "findmnt": "util-linux",
}


class ADDCError(RuntimeError):
    pass


def missing_packages():
    """The Debian packages whose commands are missing, or [] (the provision
    templates and dsdb modules are checked by provisioning itself)."""
    missing = set()
    for cmd, pkg in COMMANDS.items():
        if not shutil.which(cmd, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
            missing.add(pkg)
    if not os.path.isdir("/usr/share/samba/setup"):
        missing.add("samba-ad-provision")
    return sorted(missing)


def _listening(ip, port, timeout=0.3):
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def _descendants(pid):
    """PIDs of all descendants of pid (samba forks a tree of helpers)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _tail(path, n=40):
    try:
        with open(path, "r", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"(cannot read {path}: {e})"


def _run(args, what, timeout=120, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                       stdin=kw.pop("stdin", subprocess.DEVNULL), **kw)
    if r.returncode != 0:
        raise ADDCError(f"{what} failed ({r.returncode}): {' '.join(args[:3])} ...\n"
                        f"{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


class SambaADDC:
    def __init__(self, ip=None, log_level=1):
        self.ip = ip
        self.log_level = log_level
        self.realm = REALM
        self.domain = DOMAIN
        self.fqdn = f"{DC_NAME}.{DNS_DOMAIN}"
        self.user = USER
        self.password = USER_PASSWORD
        self.uid = USER_UID
        self.principal = f"{USER}@{REALM}"
        self.share = "share"
        self.dir = None
        self.proc = None
        self._mount_root_bound = False

    # paths -----------------------------------------------------------
    def _p(self, *parts):
        return os.path.join(self.dir, *parts)

    @property
    def conf_path(self):
        return self._p("dc", "etc", "smb.conf")

    @property
    def krb5_conf(self):
        return self._p("krb5.conf")

    @property
    def keytab(self):
        """The test user's keys, exported from the directory."""
        return self._p("krbuser.keytab")

    @property
    def share_path(self):
        return self._p("share")

    @property
    def mount_root(self):
        """Mountpoints for client_argv() mounts go here (see module doc)."""
        return self._p("mnt")

    @property
    def log_path(self):
        return self._p("samba.out")

    @property
    def unc(self):
        return f"//{self.fqdn}/{self.share}"

    # lifecycle -------------------------------------------------------
    def _pick_ip(self):
        for ip in ([self.ip] if self.ip else DC_ADDRESSES):
            if not any(_listening(ip, p) for p in DC_PORTS):
                return ip
        raise ADDCError(f"no free loopback address for the DC: something listens on "
                        f"{DC_PORTS} at each of {self.ip or DC_ADDRESSES}")

    def start(self, timeout=120):
        if os.geteuid() != 0:
            raise ADDCError("the AD DC fixture needs root (mount namespaces, samba)")
        missing = missing_packages()
        if missing:
            raise ADDCError("missing packages for the AD DC (tools/install-deps installs them): "
                            + " ".join(missing))
        self.ip = self._pick_ip()
        self.dir = tempfile.mkdtemp(prefix="smbrdma-addc-")
        os.chmod(self.dir, 0o755)
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout):
        d = self._p("dc")
        for sub in ("run", "run-samba", "ncalrpc", "log"):  # samba makes ntp_signd 0750
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.makedirs(self.share_path)
        os.chmod(self.share_path, 0o777)
        os.makedirs(self.mount_root)
        with open(self._p("hosts"), "w") as f:
            f.write(f"127.0.0.1\tlocalhost\n{self.ip}\t{self.fqdn} {DC_NAME}\n")
        with open(self._p("resolv.conf"), "w") as f:
            f.write(f"nameserver {self.ip}\n")
        self._write_krb5_conf()

        t0 = time.monotonic()
        with open(self._p("provision.log"), "w") as log:
            r = subprocess.run(
                ["samba-tool", "domain", "provision", f"--realm={REALM}",
                 f"--domain={DOMAIN}", "--server-role=dc", "--dns-backend=SAMBA_INTERNAL",
                 "--use-rfc2307", f"--adminpass={ADMIN_PASSWORD}", f"--host-name={DC_NAME}",
                 f"--host-ip={self.ip}", f"--targetdir={d}",
                 f"--option=netbios name={DC_NAME.upper()}",
                 f"--option=interfaces={self.ip}/8", "--option=bind interfaces only=yes",
                 "--option=disable netbios=yes",
                 f"--option=pid directory={d}/run", f"--option=ncalrpc dir={d}/ncalrpc",
                 f"--option=ntp signd socket directory={d}/ntp_signd",
                 f"--option=log file={d}/log/%m.log", "--option=max log size=0"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                timeout=300, env=self._dc_env())
        if r.returncode != 0:
            raise ADDCError(f"samba-tool domain provision failed ({r.returncode}):\n"
                            f"{_tail(self._p('provision.log'))}")
        self.provision_secs = time.monotonic() - t0
        self._edit_conf()

        # The namespace: private /run/samba, /etc/hosts and /etc/resolv.conf
        # (see the module doc), then samba in the foreground.
        script = (f"set -e; mount --bind '{d}/run-samba' /run/samba; "
                  f"mount --bind '{self._p('hosts')}' /etc/hosts; "
                  f"mount --bind '{self._p('resolv.conf')}' /etc/resolv.conf; "
                  f"exec samba -F --no-process-group -s '{self.conf_path}' "
                  "--maximum-runtime=7200")
        os.makedirs("/run/samba", exist_ok=True)
        t0 = time.monotonic()
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env=self._dc_env())
        log.close()
        deadline = time.monotonic() + timeout
        while not all(_listening(self.ip, p) for p in (88, 389, 445)):
            if self.proc.poll() is not None:
                raise ADDCError(f"samba exited with {self.proc.returncode} before listening "
                                f"on {self.ip}:\n{_tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise ADDCError(f"samba not listening on {self.ip}:88/389/445 after "
                                f"{timeout}s:\n{_tail(self.log_path)}")
            time.sleep(0.1)
        self.start_secs = time.monotonic() - t0

        tool = ["samba-tool", "-s", self.conf_path]
        _run(tool[:1] + ["domain", "passwordsettings", "set"] + tool[1:] +
             ["--complexity=off", "--history-length=0", "--min-pwd-age=0", "--max-pwd-age=0"],
             "samba-tool domain passwordsettings set", env=self._dc_env())
        _run(tool[:1] + ["user", "create", USER, USER_PASSWORD] + tool[1:] +
             [f"--nis-domain={DOMAIN}", f"--uid-number={USER_UID}",
              f"--gid-number={USER_GID}", "--unix-home=/nonexistent",
              "--login-shell=/bin/false"], "samba-tool user create", env=self._dc_env())
        _run(tool[:1] + ["domain", "exportkeytab", self.keytab,
                         f"--principal={self.principal}"] + tool[1:],
             "samba-tool domain exportkeytab", env=self._dc_env())
        os.chmod(self.keytab, 0o600)

        # Where the client namespace mounts (see the module doc).
        _run(["mount", "--bind", self.mount_root, self.mount_root], "bind mount_root")
        self._mount_root_bound = True
        _run(["mount", "--make-shared", self.mount_root], "make mount_root shared")

    def _dc_env(self):
        env = dict(os.environ)
        env["KRB5_CONFIG"] = self.krb5_conf
        env.pop("KRB5CCNAME", None)
        return env

    def _write_krb5_conf(self):
        with open(self.krb5_conf, "w") as f:
            f.write(f"""[libdefaults]
	default_realm = {REALM}
	dns_lookup_realm = false
	dns_lookup_kdc = false
	rdns = false
	dns_canonicalize_hostname = false
	udp_preference_limit = 1
[realms]
	{REALM} = {{
		kdc = {self.ip}
		admin_server = {self.ip}
	}}
[domain_realm]
	.{DNS_DOMAIN} = {REALM}
	{DNS_DOMAIN} = {REALM}
""")

    def _edit_conf(self):
        with open(self.conf_path) as f:
            lines = f.read().splitlines()
        out = []
        for line in lines:
            if line.strip().startswith("dns forwarder"):
                continue  # copied from the machine's resolv.conf: keep DNS on loopback
            out.append(line)
            if line.strip() == "[global]":
                out += ["\tprefork children = 1",
                        # auth_audit:5 logs each session authorization with its mechanism
                        f"\tlog level = {self.log_level} auth_audit:5",
                        "\tserver min protocol = SMB2_02",
                        # every cipher, AES-256 first: a sealed session then
                        # needs the whole (32-byte) Kerberos session key
                        "\tserver smb3 encryption algorithms = AES-256-GCM, AES-256-CCM, "
                        "AES-128-GCM, AES-128-CCM"]
        out += ["", f"[{self.share}]", f"\tpath = {self.share_path}", "\tread only = no",
                "\tcreate mask = 0644", "\tdirectory mask = 0755"]
        with open(self.conf_path, "w") as f:
            f.write("\n".join(out) + "\n")

    def stop(self):
        if self.proc is not None:
            root = self.proc.pid
            pids = [root] + _descendants(root)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(root, sig)  # samba keeps our group (--no-process-group)
                except ProcessLookupError:
                    pass
                for p in pids:  # and anything that left it
                    try:
                        os.kill(p, sig)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + (15 if sig == signal.SIGTERM else 5)
                while time.monotonic() < deadline:
                    self.proc.poll()
                    if not any(_alive(p) for p in pids):
                        break
                    time.sleep(0.1)
                else:
                    continue
                break
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        if self._mount_root_bound:
            r = subprocess.run(["umount", self.mount_root], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", self.mount_root], capture_output=True)
            self._mount_root_bound = False
        if self.dir and os.environ.get("SMBRDMA_KEEP_SAMBA_DIR") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # clients ---------------------------------------------------------
    def client_env(self, ccache, base=None):
        """The environment for a Kerberos client of this DC with its
        credential cache at `ccache` (a path or a TYPE:residual name)."""
        env = dict(os.environ if base is None else base)
        env["KRB5_CONFIG"] = self.krb5_conf
        env["KRB5CCNAME"] = ccache if ":" in ccache else f"FILE:{ccache}"
        # no default client keytab: only what a test hands over is used
        env["KRB5_CLIENT_KTNAME"] = f"FILE:{self._p('no-such-client.keytab')}"
        env.pop("KRB5_KTNAME", None)
        return env

    def kinit(self, ccache, lifetime=None, timeout=30):
        """A TGT for the test user in `ccache`, from the password on stdin;
        lifetime e.g. "3s" for one that soon expires."""
        args = ["kinit"] + (["-l", lifetime] if lifetime else []) + [self.principal]
        return _run(args, "kinit", timeout=timeout, input=self.password + "\n", stdin=None,
                    env=self.client_env(ccache))

    def klist(self, ccache):
        r = subprocess.run(["klist", "-c", self.client_env(ccache)["KRB5CCNAME"]],
                           capture_output=True, text=True, timeout=10,
                           env=self.client_env(ccache))
        return r.stdout + r.stderr

    def client_argv(self, argv):
        """argv run in a mount namespace of its own whose /etc/hosts and
        /etc/resolv.conf are the DC's (see the module doc). Mounts it makes
        under mount_root are seen outside."""
        script = ('set -e; for f in /etc/hosts /etc/resolv.conf; do '
                  'mount --make-private "$(findmnt -n -o TARGET -T "$f")"; done; '
                  f"mount --bind '{self._p('hosts')}' /etc/hosts; "
                  f"mount --bind '{self._p('resolv.conf')}' /etc/resolv.conf; "
                  'exec "$@"')
        return ["unshare", "--mount", "--propagation", "unchanged", "sh", "-c", script,
                "sh"] + list(argv)

    def smbstatus_json(self):
        """smbstatus --json of the DC's smbd (sessions and their users)."""
        import json
        r = _run(["smbstatus", "-s", self.conf_path, "--json"], "smbstatus", timeout=30,
                 env=self._dc_env())
        return json.loads(r.stdout)

    def authorizations(self):
        """The DC's smbd's "Successful AuthZ: [SMB2,MECH] user [DOMAIN]\\[USER] ..."
        log lines (auth_audit:5), oldest first."""
        found = []
        logdir = self._p("dc", "log")
        for name in sorted(os.listdir(logdir)):
            path = os.path.join(logdir, name)
            if not os.path.isfile(path):
                continue
            with open(path, errors="replace") as f:
                found += [ln.strip() for ln in f if "Successful AuthZ: [SMB2," in ln]
        return found

    def log_tail(self, n=40):
        if not self.dir:
            return ""
        parts = [f"--- {self.log_path} ---\n{_tail(self.log_path, n)}"]
        logdir = self._p("dc", "log")
        for name in ("smbd.log", "samba.log", "log.samba"):
            p = os.path.join(logdir, name)
            if os.path.exists(p):
                parts.append(f"--- {p} ---\n{_tail(p, n)}")
        return "\n".join(parts)


class ADDCMount(SmbrdmaMount):
    """mount.smbrdma -f of the DC's share, run through dc.client_argv() with
    `env` (KRB5_CONFIG, KRB5CCNAME...), its mountpoint under dc.mount_root.
    Everything else (stop() and its checks) is SmbrdmaMount's."""

    def __init__(self, dc, env, options=(), user=None, unc=None, **kw):
        super().__init__(unc or dc.unc, user, None, options=options, foreground=True, **kw)
        self.dc = dc
        self.env = env

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise MountFailed(f"{self.binary} is not built/installed (set SMBRDMA_BUILD or "
                              f"SMBRDMA_BIN)")
        self.path = tempfile.mkdtemp(prefix="smbrdma-mnt-", dir=self.dc.mount_root)
        parent = os.environ.get("SMBRDMA_LOG_DIR") or None
        if parent:
            os.makedirs(parent, exist_ok=True)
        self.log_dir = tempfile.mkdtemp(prefix="smbrdma-log-", dir=parent)
        self._own_log_dir = True
        self.log_path = os.path.join(self.log_dir, "mount.smbrdma.log")
        self.cmd = self.dc.client_argv(self._args())
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=self.env)
        log.close()
        deadline = time.monotonic() + self.timeout
        while not is_mounted(self.path):
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self.proc = None
                self._cleanup_dirs(keep_log=True)
                raise MountFailed(f"mount.smbrdma -f exited with {rc} before the mount "
                                  f"was live; log:\n{self.log_text()[-4000:]}")
            if time.monotonic() > deadline:
                self.stop(check=False)
                raise MountFailed(f"mount not live after {self.timeout:.0f}s; log:\n"
                                  f"{self.log_text()[-4000:]}")
            time.sleep(0.05)
        return self


def run_dc_mount_command(dc, env, mountpoint, options=(), user=None, foreground=False,
                         unc=None, timeout=30):
    """The mount command once, through dc.client_argv() with `env`; returns
    (CompletedProcess, seconds). For mounts that are expected to fail."""
    args = [daemon_binary(), unc or dc.unc, mountpoint]
    o = format_options(user, None, options)
    if o:
        args += ["-o", o]
    if foreground:
        args.append("-f")
    t0 = time.monotonic()
    try:
        r = subprocess.run(dc.client_argv(args), stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(
            errors="replace")
        raise AssertionError(f"mount command still running after {timeout}s "
                             f"(it should have failed):\n{out}") from None
    return r, time.monotonic() - t0
