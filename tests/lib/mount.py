"""Run the daemon under test, mount.smbrdma, on a private temp mountpoint.

Which binary: $SMBRDMA_BIN if set; else $SMBRDMA_BUILD=installed means
/sbin/mount.smbrdma; else <$SMBRDMA_BUILD or <repo>/build>/fuse/mount.smbrdma
(a relative SMBRDMA_BUILD is taken from the repo root).

    m = SmbrdmaMount(srv.unc, srv.user, srv.password, options=["vers=3.0"])
    m.start()          # returns when the mount is live, raises MountFailed if not
    ... use m.path ...
    m.stop()           # unmount, wait for the daemon, raise DaemonProblem if it
                       # crashed, hung, left a process/mount or printed a
                       # sanitizer report

By default the daemon runs in the foreground (-f) under our Popen with stdout
and stderr going to m.log_path, so tests can read its log and see how it
exited. foreground=False runs the plain mount command (it daemonizes and
returns when the mount is live).
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = "/sbin/mount.smbrdma"
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                     "runtime error:")


class MountFailed(RuntimeError):
    pass


class DaemonProblem(AssertionError):
    pass


def timeout_scale():
    try:
        return float(os.environ.get("SMBRDMA_TIMEOUT_SCALE", "1"))
    except ValueError:
        return 1.0


ENABLE_URING = "/sys/module/fuse/parameters/enable_uring"


def fuse_transport():
    """How the suite's mounts take the kernel's requests: "io_uring" (every
    SmbrdmaMount gets the option `io_uring`, which fails the mount rather
    than fall back), "dev" (`noio_uring`: /dev/fuse), or "" (the daemon's
    default). From $SMBRDMA_FUSE_TRANSPORT; tests/run-all sets it per run."""
    t = os.environ.get("SMBRDMA_FUSE_TRANSPORT", "")
    if t not in ("", "io_uring", "dev"):
        raise ValueError(f"SMBRDMA_FUSE_TRANSPORT={t!r}: io_uring, dev or empty")
    return t


def ring_unavailable_reason():
    """None when this kernel can carry FUSE over io_uring (the fuse module
    has enable_uring), else why not."""
    if not os.path.exists(ENABLE_URING):
        return (f"this kernel has no FUSE over io_uring ({ENABLE_URING} is missing: "
                "CONFIG_FUSE_IO_URING, Linux 6.14 or later)")
    return None


def set_enable_uring(on):
    """Set the fuse module's enable_uring; returns the previous value (bool),
    or None when the kernel has no such parameter."""
    if ring_unavailable_reason():
        return None
    with open(ENABLE_URING) as f:
        old = f.read().strip() in ("Y", "1")
    with open(ENABLE_URING, "w") as f:
        f.write("Y" if on else "N")
    return old


def build_dir():
    b = os.environ.get("SMBRDMA_BUILD", "build")
    return b if os.path.isabs(b) else os.path.join(REPO, b)


def build_sanitizer(build=None):
    """The b_sanitize option of a meson build dir ("address,undefined", ...),
    or "none" (also when the build dir cannot be read)."""
    import json
    try:
        with open(os.path.join(build or build_dir(), "meson-info",
                               "intro-buildoptions.json")) as f:
            opts = json.load(f)
    except (OSError, ValueError):
        return "none"
    return next((o["value"] or "none" for o in opts if o["name"] == "b_sanitize"), "none")


def daemon_binary():
    if os.environ.get("SMBRDMA_BIN"):
        return os.environ["SMBRDMA_BIN"]
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        return INSTALLED
    return os.path.join(build_dir(), "fuse", "mount.smbrdma")


def fuse_unavailable_reason():
    """Why this machine cannot mount FUSE at all, or None. The only reasons
    a mount test may skip."""
    if os.geteuid() != 0:
        return "not root: the tests mount tmpfs, start smbd and mount FUSE"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: this machine (container?) cannot mount FUSE"
    return None


def mount_entry(path):
    """The /proc/self/mountinfo fields of the topmost mount on `path`, or None."""
    path = os.path.realpath(path)
    found = None
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                mp = fields[4].replace("\\040", " ").replace("\\011", "\t") \
                              .replace("\\012", "\n").replace("\\134", "\\")
                if mp == path:
                    sep = fields.index("-")
                    found = {"dev": fields[2], "fstype": fields[sep + 1],
                             "source": fields[sep + 2], "options": fields[5],
                             "super_options": fields[sep + 3]}
    except OSError:
        pass
    return found


def mount_options(path):
    """Every option of the topmost mount on `path` as a set: the per-mount
    ones (nosuid, noexec, ...) and the superblock's (sync, dirsync, ...);
    None when nothing is mounted there."""
    ent = mount_entry(path)
    if ent is None:
        return None
    return set(ent["options"].split(",")) | set(ent["super_options"].split(","))


def is_mounted(path):
    return mount_entry(path) is not None


def fuse_abort(path):
    """Abort the FUSE connection behind `path` (unsticks hung requests)."""
    ent = mount_entry(path)
    if not ent or not ent["fstype"].startswith("fuse"):
        return False
    if not os.path.isdir("/sys/fs/fuse/connections") or \
            not os.listdir("/sys/fs/fuse/connections"):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", "/sys/fs/fuse/connections"],
                       capture_output=True)
    minor = ent["dev"].split(":")[1]
    try:
        with open(f"/sys/fs/fuse/connections/{minor}/abort", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def pids_for_mountpoint(path):
    """PIDs of processes whose command line names `path` (the daemon)."""
    r = subprocess.run(["pgrep", "-f", re.escape(path)], capture_output=True, text=True)
    me = os.getpid()
    return [int(p) for p in r.stdout.split() if int(p) != me]


def unmount(path, timeout=20):
    """fusermount3 -u, then umount -l; returns a list of what went wrong."""
    problems = []
    if not is_mounted(path):
        return problems
    r = subprocess.run(["fusermount3", "-u", path], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        problems.append(f"fusermount3 -u {path} failed: {r.stderr.strip()}")
        r = subprocess.run(["umount", path], capture_output=True, text=True, timeout=timeout)
    if is_mounted(path):
        fuse_abort(path)
        subprocess.run(["umount", "-l", path], capture_output=True, timeout=timeout)
        if is_mounted(path):
            problems.append(f"{path} still mounted after umount -l")
    return problems


def thread_backtraces(pid):
    """Every thread's stack of a hung process (gdb, which .ci/run installs),
    for the report of a hang; a line saying why not otherwise."""
    gdb = shutil.which("gdb")
    if not gdb:
        return "(no backtrace: gdb is not installed)"
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "(no backtrace: gdb did not finish in 60 s)"
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("#", "Thread"))]
    return "threads of the hung daemon:\n" + "\n".join(lines[:400])


def clean_leftovers(path):
    """After a mount command that should have failed: unmount and kill what
    it left at path; returns what was found ("mount", "process PID")."""
    leftovers = []
    if is_mounted(path):
        leftovers.append("mount")
        unmount(path)
    for p in pids_for_mountpoint(path):
        leftovers.append(f"process {p}")
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return leftovers


def format_options(user, password, options=()):
    opts = []
    if user is not None:
        opts.append(f"username={user}")
    if password is not None:
        opts.append(f"password={password}")
    opts += list(options)
    return ",".join(opts)


class SmbrdmaMount:
    def __init__(self, unc, user, password, options=(), foreground=True, binary=None,
                 log_dir=None, timeout=None, extra_args=(), wrapper=(),
                 plain_transport=False):
        self.unc = unc
        self.user = user
        self.password = password
        self.options = list(options)
        self.foreground = foreground
        self.binary = binary or daemon_binary()
        self.timeout = (timeout or 20) * timeout_scale()
        self.extra_args = list(extra_args)
        # True: no io_uring/noio_uring from $SMBRDMA_FUSE_TRANSPORT (a test of
        # the daemon's own default)
        self.plain_transport = plain_transport
        # argv prefix the daemon runs under, e.g. ["nsenter", "--net=/run/netns/NS"]
        # (nsenter --net execs the daemon: self.proc is still the daemon itself)
        self.wrapper = list(wrapper)
        self.path = None
        self.proc = None
        self.log_dir = log_dir
        self.log_path = None
        self.mount_output = ""
        self.cmd = None
        self._own_log_dir = False

    def _args(self):
        args = self.wrapper + [self.binary, self.unc, self.path]
        options = list(self.options)
        t = fuse_transport()
        if t and not self.plain_transport and \
                not any(str(x).split("=")[0] in ("io_uring", "noio_uring")
                         for x in options):
            options.append("io_uring" if t == "io_uring" else "noio_uring")
        o = format_options(self.user, self.password, options)
        if o:
            args += ["-o", o]
        if self.foreground:
            args.append("-f")
        return args + self.extra_args

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise MountFailed(f"{self.binary} is not built/installed (set SMBRDMA_BUILD or "
                              f"SMBRDMA_BIN; build with: meson setup build && ninja -C build)")
        self.path = tempfile.mkdtemp(prefix="smbrdma-mnt-")
        if self.log_dir is None:
            # logs of failed mounts are kept: under $SMBRDMA_LOG_DIR if set
            parent = os.environ.get("SMBRDMA_LOG_DIR") or None
            if parent:
                os.makedirs(parent, exist_ok=True)
            self.log_dir = tempfile.mkdtemp(prefix="smbrdma-log-", dir=parent)
            self._own_log_dir = True
        self.log_path = os.path.join(self.log_dir, "mount.smbrdma.log")
        self.cmd = self._args()
        if self.foreground:
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
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
            self._wait_ready(min(deadline, time.monotonic() + 10))
        else:
            try:
                r = subprocess.run(self.cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                   text=True, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.stop(check=False)
                raise MountFailed(f"mount command did not return within {self.timeout:.0f}s")
            self.mount_output = r.stdout + r.stderr
            with open(self.log_path, "a") as f:
                f.write(self.mount_output)
            if r.returncode != 0:
                self.stop(check=False)
                raise MountFailed(f"mount command exited {r.returncode}:\n{self.mount_output}")
            if not is_mounted(self.path):
                self.stop(check=False)
                raise MountFailed("mount command returned 0 but the mount is not live")
        return self

    def _wait_ready(self, until):
        """-f: the mount is live (FUSE INIT done) a moment before the daemon
        has its control socket and logs "mounted ... on"; a test that runs
        smbrdmactl at once would find no socket.  Wait for the line (or a
        warning that there is no socket), as the daemonizing mount command
        does before it returns."""
        while time.monotonic() < until and self.proc.poll() is None:
            text = self.log_text()
            if f"on {self.path}" in text and "mounted " in text or \
                    "no control socket for smbrdmactl" in text:
                return
            time.sleep(0.01)

    def alive(self):
        if self.foreground:
            return self.proc is not None and self.proc.poll() is None
        return bool(pids_for_mountpoint(self.path))

    def log_text(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def stop(self, check=True):
        """Unmount and reap. With check, raise DaemonProblem listing anything
        that went wrong (crash, signal, hang, leftovers, sanitizer report)."""
        if self.path is None:
            return
        problems = []
        if check and is_mounted(self.path) and not self.alive():
            rc = self.proc.returncode if self.proc else "?"
            problems.append(f"daemon died while mounted (exit status {rc})")
        problems += unmount(self.path)
        t = 15 * timeout_scale()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=t)
            except subprocess.TimeoutExpired:
                problems.append(f"daemon still running {t:.0f}s after unmount; killed")
                problems.append(thread_backtraces(self.proc.pid))
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            rc = self.proc.returncode
            if rc < 0:
                problems.append(f"daemon killed by signal {signal.Signals(-rc).name}")
            elif rc != 0:
                problems.append(f"daemon exited with status {rc} after unmount")
        deadline = time.monotonic() + t
        while pids_for_mountpoint(self.path) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = pids_for_mountpoint(self.path)
        if left:
            problems.append(f"daemon process(es) {left} left after unmount; killed")
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        log = self.log_text()
        for marker in SANITIZER_MARKERS:
            if marker in log:
                problems.append(f"sanitizer report in daemon log ({marker!r})")
                break
        if "BUG: " in log:
            problems.append("the daemon logged a BUG: line (an internal inconsistency)")
        if check and problems:
            tail = log[-6000:]
            self._cleanup_dirs(keep_log=True)
            raise DaemonProblem("; ".join(problems) + f"\n--- daemon log ({self.log_path}) ---\n"
                                + tail)
        self._cleanup_dirs(keep_log=bool(problems))

    def _cleanup_dirs(self, keep_log=False):
        if self.path and not is_mounted(self.path):
            try:
                os.rmdir(self.path)
            except OSError:
                pass
        self.path = None
        if self._own_log_dir and not keep_log and os.environ.get("SMBRDMA_KEEP_LOGS") != "1":
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop(check=exc[0] is None)


def run_mount_command(unc, mountpoint, user, password, options=(), foreground=False,
                      binary=None, timeout=30, cwd=None):
    """Run the mount command once and return (CompletedProcess, seconds). For
    tests that expect it to fail."""
    args = [binary or daemon_binary(), unc, mountpoint]
    o = format_options(user, password, options)
    if o:
        args += ["-o", o]
    if foreground:
        args.append("-f")
    t0 = time.monotonic()
    try:
        r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(
            errors="replace")
        raise AssertionError(f"mount command still running after {timeout}s "
                             f"(it should have failed):\n{out}") from None
    return r, time.monotonic() - t0
