"""The FUSE daemons bench/run-bench compares mount.smbrdma with, and the
per-process figures it takes from every daemon.

    d = SmbnetfsMount(srv, workdir)     # or PassthroughMount(binary, backing, workdir)
    d.start()          # returns when d.path (the directory to run jobs in) is usable
    t0 = tree_cpu_s(d.pid)
    ... fio on d.path ...
    cpu = tree_cpu_s(d.pid) - t0; peak = tree_vmhwm_kib(d.pid)
    d.stop()           # unmount, reap; returns a list of what went wrong

Each object owns its mountpoint, its process (run in the foreground under our
Popen, in a session of its own so stop() can kill what it forked) and, for
smbnetfs, a private HOME holding its configuration; stop() removes them.
Not thread-safe: one measurement at a time, from the bench's one thread.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))

from lib.mount import is_mounted, unmount  # noqa: E402


def _proc_stats():
    """{pid: fields after the comm field of /proc/PID/stat} of every process."""
    stats = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        stats[int(d)] = s[s.rindex(")") + 2:].split()
    return stats


def process_tree(pid):
    """pid and every live descendant."""
    stats = _proc_stats()
    kids = {}
    for p, f in stats.items():
        kids.setdefault(int(f[1]), []).append(p)
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            tree.append(p)
            todo += kids.get(p, [])
    return tree, stats


def tree_cpu_s(pid):
    """CPU seconds (user + system, every thread) of pid and its live
    descendants, plus what the children they reaped used (cutime +
    cstime): smbnetfs forks one process per SMB context."""
    tree, stats = process_tree(pid)
    tick = os.sysconf("SC_CLK_TCK")
    # fields after comm: [0] state [1] ppid ... [11] utime [12] stime
    # [13] cutime [14] cstime (proc(5) fields 14-17)
    return sum(sum(int(x) for x in stats[p][11:15]) for p in tree) / tick


def tree_vmhwm_kib(pid):
    """The sum of VmHWM (peak resident set) over pid and its live
    descendants, in KiB; one process for mount.smbrdma and passthrough-fs."""
    total = 0
    for p in process_tree(pid)[0]:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class FuseProcess:
    """A FUSE daemon run with -f; subclasses give argv, env and the path
    inside the mount where the jobs run."""

    name = "fuse"

    def __init__(self, workdir, timeout=30):
        self.workdir = workdir
        self.timeout = timeout
        self.mnt = None
        self.proc = None
        self.log_path = None

    def argv(self):
        raise NotImplementedError

    def env(self):
        return None

    @property
    def path(self):
        return self.mnt

    @property
    def pid(self):
        return self.proc.pid

    def ready(self):
        return is_mounted(self.mnt)

    def start(self):
        self.mnt = tempfile.mkdtemp(prefix=f"bench-{self.name}-", dir=self.workdir)
        self.log_path = self.mnt + ".log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), env=self.env(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self.ready():
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = (f"exited with {self.proc.returncode}" if self.proc.poll() is not None
                       else f"not ready after {self.timeout} s")
                self.stop()
                raise RuntimeError(f"{self.name} {why}: {self.log_tail()}")
            time.sleep(0.1)

    def log_tail(self, n=1500):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def stop(self):
        problems = []
        if self.mnt is None:
            return problems
        problems += unmount(self.mnt)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                problems.append(f"{self.name} still running 15 s after unmount; killed")
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # and what it forked
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
            self.proc = None
        try:
            os.rmdir(self.mnt)
        except OSError as e:
            problems.append(f"{self.name}: mountpoint left: {e}")
        self.mnt = None
        return problems


class PassthroughMount(FuseProcess):
    """bench/passthrough-fs over `backing` (a tmpfs directory)."""

    name = "passthrough"

    def __init__(self, binary, backing, workdir):
        super().__init__(workdir)
        self.binary = binary
        self.backing = backing

    def argv(self):
        return [self.binary, self.backing, self.mnt, "-f", "-o", "allow_other"]


class SmbnetfsMount(FuseProcess):
    """smbnetfs (libsmbclient under FUSE 2) on the share of `srv`.

    smbnetfs mounts the whole network as MNT/HOST/SHARE and reads its
    configuration from ~/.smb: it gets a private HOME whose .smb/smbnetfs.conf
    (mode 0600, or smbnetfs ignores its auth line) names the host and the
    credentials and turns network browsing off. libsmbclient (Samba 4.17)
    always dials port 445 (then 139): no smb.conf line or smbnetfs option
    moves it, so the Samba it talks to must listen on 445 -- run-bench runs
    everything in a private network namespace for that. big_writes, or FUSE
    2 sends writes of one page."""

    name = "smbnetfs"

    def __init__(self, srv, workdir):
        super().__init__(workdir)
        self.srv = srv
        self.home = None

    def env(self):
        return dict(os.environ, HOME=self.home)

    def argv(self):
        return ["smbnetfs", self.mnt, "-f", "-o",
                f"config={self.home}/.smb/smbnetfs.conf,big_writes,allow_other"]

    @property
    def path(self):
        return os.path.join(self.mnt, self.srv.host, self.srv.share)

    def ready(self):
        # the first look at HOST/SHARE makes smbnetfs connect and log on
        return is_mounted(self.mnt) and os.path.isdir(self.path)

    def start(self):
        self.home = tempfile.mkdtemp(prefix="bench-smbnetfs-home-", dir=self.workdir)
        os.makedirs(os.path.join(self.home, ".smb"))
        conf = os.path.join(self.home, ".smb", "smbnetfs.conf")
        with open(conf, "w") as f:
            f.write(f'auth "{self.srv.user}" "{self.srv.password}"\n'
                    f'host "{self.srv.host}" visible=true\n'
                    'smb_query_browsers "false"\n'
                    'use_libsecret "false"\n'
                    'stat_workaround_depth "0"\n'
                    'local_charset "utf-8"\n')
        os.chmod(conf, 0o600)
        # an empty smb.conf: nothing from /etc/samba reaches libsmbclient
        open(os.path.join(self.home, ".smb", "smb.conf"), "w").close()
        return super().start()

    def stop(self):
        problems = super().stop()
        if self.home:
            subprocess.run(["rm", "-rf", self.home], capture_output=True)
            self.home = None
        return problems
