"""Issue 25, packaging (slow: builds the .debs, boots a Debian 12 container).

Three tests, in order, on one container (a module fixture does 1-3):

1. build the packages from the repository's committed tree (git archive
   HEAD) with `dpkg-buildpackage -us -uc -b`, DEB_BUILD_OPTIONS=nocheck
   (meson's unit suite is run by tests/run-all already; debian/rules runs it
   in an ordinary package build).  The .debs are cached under
   /var/cache/smbrdma-tests/debs/<hash of HEAD's tree but tests/, README.md>/, so a
   rerun on the same sources does not build again (SMBRDMA_PKG_REBUILD=1
   forces it);
2. lintian on the .changes: any E: or W: fails; an override in
   debian/*.lintian-overrides must have a comment (its justification) above;
3. a fresh Debian 12 (debootstrap --variant=minbase bookworm with systemd,
   from deb.debian.org; the rootfs tarball is cached under
   /var/cache/smbrdma-tests/) is booted with systemd-nspawn -b (its own PID
   and mount namespaces, the host's network, so the private Samba on
   127.0.0.1 is reachable; /dev/fuse and /dev/autofs bound in);
4. inside: `apt-get install ./smbrdma_*.deb ./libsmbrdma1_*.deb` (the real
   apt; bookworm-backports added for libngtcp2-16), an /etc/fstab line of
   type smbrdma with a credentials= file, `mount /mnt/share`, the daemon
   runs as the system user smbrdma the package created; a 64 MiB copy in
   paced chunks while `smbrdmactl top /mnt/share` runs in tmux, whose pane
   is captured three times: the numbers must move; the file arrives intact
   on the Samba share's directory; `umount`;
5. systemd: the README's fstab line with noauto,x-systemd.automount: the
   automount unit is started, the first access mounts, a file goes through,
   stopping the units unmounts and the daemon exits;
6. `apt-get purge smbrdma libsmbrdma1`: no smbrdma process left in the
   container, the binaries gone.

Cold (no cached rootfs nor .debs) about 10-15 minutes here on 2 loaded
cores (debootstrap 5.5 minutes, the build 2.5-7); warm (both cached) 1m40s.
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from lib.mount import timeout_scale
from lib.samba import SambaServer

# alone (tests/pytest.ini): boots a container and installs packages (minutes of CPU)
pytestmark = pytest.mark.alone

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("SMBRDMA_PKG_CACHE", "/var/cache/smbrdma-tests")
MIRROR = "http://deb.debian.org/debian"
ROOTFS_TAR = os.path.join(CACHE, "bookworm-minbase-systemd.tar.gz")
MNT = "/mnt/share"
COPY_MIB = 64
CHUNK_MIB = 2


def _run(argv, timeout, what, cwd=None, env=None, check=True):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout, cwd=cwd, env=env)
    if check:
        assert r.returncode == 0, \
            f"{what} failed ({r.returncode}):\n{r.stdout[-4000:]}{r.stderr[-4000:]}"
    return r


def _machine_reason():
    """Why this machine cannot run the test, or None."""
    if os.geteuid() != 0:
        return "not root: debootstrap, systemd-nspawn and the private Samba need root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    try:
        socket.create_connection(("deb.debian.org", 80), timeout=10).close()
    except OSError as e:
        return f"deb.debian.org:80 unreachable ({e}): apt cannot fetch the packages' dependencies"
    return None


# -- 1, 2: build and lintian --------------------------------------------------

def _build_debs():
    # The key: HEAD's tree without tests/ and README.md (neither is in a
    # package, and nocheck runs no test), so committing a test or a README
    # edit does not cost a rebuild.
    top = _run(["git", "-C", REPO, "ls-tree", "HEAD"], 30, "git ls-tree").stdout
    key = hashlib.sha256("".join(ln + "\n" for ln in top.splitlines()
                                 if not ln.endswith(("\ttests", "\tREADME.md"))).encode()).hexdigest()[:20]
    out = os.path.join(CACHE, "debs", key)
    changes = os.path.join(out, "smbrdma_changes")
    if os.environ.get("SMBRDMA_PKG_REBUILD") != "1" and os.path.exists(changes):
        return out, open(changes).read().strip()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    work = tempfile.mkdtemp(prefix="smbrdma-pkgbuild-", dir="/var/tmp")
    try:
        src = os.path.join(work, "smbrdma")
        os.mkdir(src)
        archive = subprocess.Popen(["git", "-C", REPO, "archive", "HEAD"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout, check=True)
        assert archive.wait() == 0, "git archive HEAD failed"
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=2",
                   LC_ALL="C.UTF-8")
        _run(["dpkg-buildpackage", "-us", "-uc", "-b"], 3000, "dpkg-buildpackage", cwd=src, env=env)
        name = None
        for f in os.listdir(work):
            if f.endswith((".deb", ".changes", ".buildinfo")):
                shutil.copy2(os.path.join(work, f), out)
                if f.endswith(".changes"):
                    name = f
        assert name, f"dpkg-buildpackage left no .changes in {work}: {os.listdir(work)}"
        with open(changes, "w") as fh:
            fh.write(name + "\n")
        return out, name
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_override_justifications():
    bad = []
    ddir = os.path.join(REPO, "debian")
    for f in sorted(os.listdir(ddir)):
        if not (f.endswith("lintian-overrides")):
            continue
        prev = ""
        for line in open(os.path.join(ddir, f)):
            line = line.strip()
            if line and not line.startswith("#") and not prev.startswith("#"):
                bad.append(f"{f}: {line}")
            if line:
                prev = line
    assert not bad, "lintian overrides without a justifying comment above:\n" + "\n".join(bad)


def _lintian(out, changes):
    _check_override_justifications()
    r = _run(["lintian", "--pedantic", "--allow-root", os.path.join(out, changes)], 600,
             "lintian", check=False)
    tags = [ln for ln in (r.stdout + r.stderr).splitlines() if re.match(r"^[EW]: ", ln)]
    assert not tags, "lintian errors/warnings (fix, or override with a justification):\n" + \
        "\n".join(tags)
    assert r.returncode == 0, f"lintian exited {r.returncode}:\n{r.stdout}{r.stderr}"


# -- 3: the container -----------------------------------------------------------

def _rootfs_tarball():
    if os.path.exists(ROOTFS_TAR):
        return ROOTFS_TAR
    os.makedirs(CACHE, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="debootstrap-", dir=CACHE)
    try:
        root = os.path.join(tmp, "root")
        _run(["debootstrap", "--variant=minbase", "--include=systemd,systemd-sysv,dbus",
              "bookworm", root, MIRROR], 1800, "debootstrap bookworm")
        _run(["tar", "-C", root, "-czf", ROOTFS_TAR + ".part", "."], 600, "tar of the rootfs")
        os.rename(ROOTFS_TAR + ".part", ROOTFS_TAR)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ROOTFS_TAR


class Container:
    """A booted systemd-nspawn container of a fresh rootfs.  run() runs a
    command in all its namespaces (nsenter), as root."""

    def __init__(self, root, binds):
        self.root = root
        argv = ["systemd-nspawn", "-D", root, "--register=no", "--keep-unit", "-b",
                "--console=passive", "--bind=/dev/fuse"]
        # systemd supports .automount units only where /dev/autofs exists
        # ("Operation on or unit type of ... not supported" without it)
        if os.path.exists("/dev/autofs"):
            argv.append("--bind=/dev/autofs")
        argv += [f"--bind-ro={src}:{dst}" for src, dst in binds]
        self.log = open(os.path.join(os.path.dirname(root), "nspawn.log"), "w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.leader = None

    def nspawn_log(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def wait_booted(self, timeout):
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"systemd-nspawn -b exited {self.proc.returncode}: {self.nspawn_log()}"
            if self.leader is None:
                try:
                    kids = open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()
                except OSError:
                    kids = []
                if kids:
                    self.leader = int(kids[0])
            if self.leader is not None:
                r = self.run(["systemctl", "is-system-running"], timeout=30, check=False)
                state = r.stdout.strip()
                if state in ("running", "degraded"):
                    return None
            time.sleep(0.5)
        return f"container did not boot in {timeout} s (state {state!r}): {self.nspawn_log()}"

    def run(self, argv, timeout=60, check=True, what=None):
        return _run(["nsenter", "-t", str(self.leader), "-a"] + argv, timeout,
                    what or " ".join(argv), check=check)

    def sh(self, script, timeout=60, check=True, what=None):
        return self.run(["sh", "-ec", script], timeout=timeout, check=check, what=what or script)

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()   # nspawn asks the container's systemd to power off
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.log.close()


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def _daemon_pids(ct):
    """mount.smbrdma processes in the container's PID namespace."""
    r = ct.sh("for c in /proc/[0-9]*/comm; do read n < $c 2>/dev/null || continue; "
              "[ \"$n\" = mount.smbrdma ] && echo ${c%/comm}; done; true", what="ps")
    return [ln.split("/")[2] for ln in r.stdout.split()]


def _findmnt(ct, mnt):
    return ct.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", mnt], check=False).stdout.split()


def _wait(cond, timeout, step=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def _numbers(text):
    """The numbers of a capture, without dates and clock times (top's
    header has one, which moves by itself)."""
    text = re.sub(r"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d", " ", text)
    return re.findall(r"\d+(?:\.\d+)?", text)


def _top_all_iops(text):
    """top's IOPS of the ALL row (the first number on it), None without one."""
    for ln in text.splitlines():
        if ln.startswith("ALL"):
            nums = _numbers(ln)
            return float(nums[0]) if nums else None
    return None


# -- the tests: one container, three steps in order -----------------------------

class Stage:
    pass


@pytest.fixture(scope="module")
def stage():
    """Build, lintian, a booted fresh Debian 12 with the packages installed
    by apt, and a private Samba; shared by the three tests below, in order."""
    reason = _machine_reason()
    if reason:
        pytest.skip(reason)
    for tool in ("dpkg-buildpackage", "lintian", "debootstrap", "systemd-nspawn", "tmux", "nsenter"):
        # tools/install-deps installs all of them: their absence is a setup error
        assert shutil.which(tool), f"{tool} missing (tools/install-deps installs it)"
    st = Stage()
    st.scale = timeout_scale()
    st.out, changes = _build_debs()
    _lintian(st.out, changes)
    st.debs = sorted(f for f in os.listdir(st.out) if f.endswith(".deb"))
    for p in ("smbrdma_", "libsmbrdma1_", "libsmbrdma-dev_", "smbrdma-bench_"):
        assert any(d.startswith(p) for d in st.debs), f"no {p}*.deb built: {st.debs}"

    tarball = _rootfs_tarball()
    work = tempfile.mkdtemp(prefix="smbrdma-pkgtest-", dir="/var/tmp")
    root = os.path.join(work, "root")
    os.mkdir(root)
    _run(["tar", "-C", root, "-xzf", tarball], 600, "unpack the rootfs")
    st.samba = SambaServer().start()
    ct = st.ct = Container(root, [(st.out, "/debs")])
    try:
        why = ct.wait_booted(120 * st.scale)
        if why and ct.proc.poll() is not None:
            pytest.skip(f"systemd-nspawn cannot boot a container on this machine: {why}")
        assert why is None, why
        yield st
    finally:
        if ct.leader is not None and ct.proc.poll() is None:
            ct.run(["umount", "-l", MNT], check=False)
        ct.stop()
        st.samba.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_package_1_install_fstab_mount_top(stage):
    ct, samba, scale = stage.ct, stage.samba, stage.scale
    # the real apt, resolving the .debs' dependencies
    with open(ct.path("/etc/apt/sources.list.d/bookworm-backports.list"), "w") as f:
        f.write(f"deb {MIRROR} bookworm-backports main\n")
    ct.sh("apt-get -q update", timeout=600, what="apt-get update in the container")
    smb = sorted(d for d in stage.debs if d.startswith("smbrdma_"))[-1]
    lib = sorted(d for d in stage.debs if d.startswith("libsmbrdma1_"))[-1]
    r = ct.sh(f"cd /debs && DEBIAN_FRONTEND=noninteractive apt-get -q install -y "
              f"./{smb} ./{lib}", timeout=900, what="apt-get install ./smbrdma_*.deb")
    for exe in ("/sbin/mount.smbrdma", "/sbin/smbrdmactl", "/sbin/smbrdma"):
        assert os.path.exists(ct.path(exe)), f"{exe} not installed:\n{r.stdout[-3000:]}"
    pw = ct.run(["getent", "passwd", "smbrdma"], check=False).stdout
    assert pw.startswith("smbrdma:"), "postinst did not create the system user smbrdma"
    assert int(pw.split(":")[2]) < 1000, f"smbrdma is not a system user: {pw}"

    # the fstab path
    os.makedirs(ct.path("/etc/smbrdma"), exist_ok=True)
    cred = ct.path("/etc/smbrdma/share.cred")
    with open(cred, "w") as f:
        f.write(f"username={samba.user}\npassword={samba.password}\n")
    os.chmod(cred, 0o600)
    os.makedirs(ct.path(MNT))
    stage.line = (f"//127.0.0.1/{samba.share}  {MNT}  smbrdma  "
                  f"_netdev,port={samba.port},credentials=/etc/smbrdma/share.cred  0  0\n")
    with open(ct.path("/etc/fstab"), "a") as f:
        f.write(stage.line)
    ct.run(["mount", MNT], timeout=60 * scale, what="mount /mnt/share (fstab)")
    assert _findmnt(ct, MNT)[:1] == ["fuse.smbrdma"], _findmnt(ct, MNT)
    # the daemon, as the package's user, and its root monitor (fuse/privs.c)
    owners = sorted(ct.run(["stat", "-c", "%U", f"/proc/{p}"]).stdout.strip()
                    for p in _daemon_pids(ct))
    assert owners == ["root", "smbrdma"], \
        f"mount.smbrdma processes run as {owners}, not [monitor root, daemon smbrdma]"

    # smbrdmactl top in tmux (on the host, entering the container) while a
    # paced copy runs
    have_top = ct.run(["smbrdmactl", "top", MNT, "--count", "1"], check=False).returncode == 0
    if have_top:
        monitor = f"smbrdmactl top {MNT} --interval 0.5"
    else:
        # the package's smbrdmactl has no `top` yet (it is being added on
        # another branch): watch the counters of `stats` the same way
        monitor = f"while :; do clear; smbrdmactl stats {MNT}; sleep 0.5; done"
    src = ct.path("/root/src.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(COPY_MIB << 20))
    tmux = ["tmux", "-L", f"smbrdma-pkg-{os.getpid()}"]
    try:
        _run(tmux + ["new-session", "-d", "-s", "top", "-x", "200", "-y", "60",
                     "nsenter", "-t", str(ct.leader), "-a", "sh", "-c", monitor], 30, "tmux")
        n = COPY_MIB // CHUNK_MIB
        copy = subprocess.Popen(
            ["nsenter", "-t", str(ct.leader), "-a", "sh", "-ec",
             f"for i in $(seq 0 {n - 1}); do dd if=/root/src.bin of={MNT}/big.bin "
             f"bs={CHUNK_MIB}M count=1 skip=$i seek=$i conv=notrunc status=none; "
             f"sleep 0.25; done"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        caps = []
        time.sleep(1.5)
        for _ in range(3):
            caps.append(_run(tmux + ["capture-pane", "-p", "-t", "top"], 30, "capture").stdout)
            time.sleep(1.5)
        assert copy.wait(timeout=300 * scale) == 0, f"copy failed: {copy.stdout.read()}"
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
    shown = "\n----\n".join(caps)
    print(f"smbrdmactl {'top' if have_top else 'stats'} captures:\n{shown}")
    assert all(c.strip() for c in caps), f"smbrdmactl showed nothing:\n{shown}"
    assert len({tuple(_numbers(c)) for c in caps}) > 1, \
        f"the numbers did not move during the copy:\n{shown}"
    assert any(float(x) > 0 for c in caps for x in _numbers(c)), f"all zero:\n{shown}"
    if have_top:
        busy = [_top_all_iops(c) for c in caps]
        assert sum(1 for b in busy if b) >= 2, \
            f"top showed IOPS {busy} in the ALL row during the copy, not twice nonzero:\n{shown}"
    ct.run(["sync", f"{MNT}/big.bin"], timeout=60 * scale)
    server_file = os.path.join(samba.share_path, "big.bin")
    assert os.path.getsize(server_file) == COPY_MIB << 20
    assert _sha256(server_file) == _sha256(src), "the copy arrived changed on the server"
    ct.run(["umount", MNT], timeout=60 * scale)
    assert not _findmnt(ct, MNT), "still mounted after umount"
    assert _wait(lambda: not _daemon_pids(ct), 15 * scale), "daemon left after umount"


# Under an automount the daemon and its root monitor must stay in the mount
# helper's process group until the mount is made (fuse/main.c main()): when
# they setsid() at once, the monitor's fuse_session_mount() stat()s the
# mount point from a new session and waits on the pending automount it is
# making; after 60 s the daemon reported "the privileged helper (pid N) did
# not answer", libfuse "failed to access mountpoint /mnt/share: No such
# device", and the access failed (seen here before that fix).
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_package_2_systemd_automount(stage):
    ct, samba, scale = stage.ct, stage.samba, stage.scale
    assert getattr(stage, "line", None), "test_package_1 did not get to the fstab line"
    with open(ct.path("/etc/fstab"), "w") as f:
        f.write(stage.line.replace("_netdev,", "_netdev,noauto,x-systemd.automount,"))
    ct.run(["systemctl", "daemon-reload"])
    unit = ct.run(["systemd-escape", "-p", "--suffix=automount", MNT]).stdout.strip()
    mount_unit = unit.replace(".automount", ".mount")
    try:
        ct.run(["systemctl", "start", unit], timeout=60 * scale)
        assert _findmnt(ct, MNT)[:1] == ["autofs"], f"automount not armed: {_findmnt(ct, MNT)}"
        assert not _daemon_pids(ct), "mounted before the first access"
        r = ct.sh(f"echo through-automount > {MNT}/auto.txt", timeout=120 * scale, check=False,
                  what="first access through the automount")
        log = ct.run(["journalctl", "-u", mount_unit, "--no-pager", "-n", "20"], check=False).stdout
        assert r.returncode == 0, f"first access through the automount failed:\n{r.stderr}\n{log}"
        assert "fuse.smbrdma" in _findmnt(ct, MNT), f"first access did not mount: {_findmnt(ct, MNT)}"
        assert ct.run(["systemctl", "is-active", mount_unit], check=False).stdout.strip() == "active"
        ct.run(["sync", f"{MNT}/auto.txt"], timeout=60 * scale)
        with open(os.path.join(samba.share_path, "auto.txt")) as f:
            assert f.read() == "through-automount\n"
        ct.run(["systemctl", "stop", unit, mount_unit], timeout=60 * scale)
        assert not _findmnt(ct, MNT), f"still mounted after stopping the units: {_findmnt(ct, MNT)}"
        assert _wait(lambda: not _daemon_pids(ct), 15 * scale), "daemon left after the units stopped"
    finally:
        ct.run(["systemctl", "stop", unit, mount_unit], timeout=60 * scale, check=False)
        with open(ct.path("/etc/fstab"), "w") as f:
            f.write(stage.line)
        ct.run(["systemctl", "daemon-reload"], check=False)
        # a failed mount leaves its daemon and monitor behind (systemd
        # says "remains running after unit stopped"): end them, by PID
        for p in _daemon_pids(ct):
            ct.run(["kill", "-9", p], check=False)
        _wait(lambda: not _daemon_pids(ct), 15 * scale)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_package_3_purge(stage):
    ct = stage.ct
    assert os.path.exists(ct.path("/sbin/mount.smbrdma")), "test_package_1 did not install"
    assert not _findmnt(ct, MNT) or _findmnt(ct, MNT)[:1] == ["autofs"]
    ct.sh("DEBIAN_FRONTEND=noninteractive apt-get -q purge -y smbrdma libsmbrdma1",
          timeout=300, what="apt-get purge")
    for exe in ("/sbin/mount.smbrdma", "/sbin/smbrdmactl", "/sbin/smbrdma",
                "/usr/share/man/man8/mount.smbrdma.8.gz",
                "/usr/lib/x86_64-linux-gnu/libsmbrdma.so.1"):
        assert not os.path.lexists(ct.path(exe)), f"{exe} left after purge"
    assert not _daemon_pids(ct), "a mount.smbrdma process is left after purge"
    st = ct.run(["dpkg-query", "-W", "-f", "${Status}\n", "smbrdma"], check=False).stdout
    assert "installed" not in st.replace("not-installed", ""), st


def prepare():
    """What the test's fixture would make first and keeps in the cache: the
    .debs of HEAD and the Debian 12 rootfs tarball.  tests/run-all runs this
    in the background, niced, during the ASan pass (which leaves this test
    out: it builds its own packages, whatever the build under test), so the
    normal pass finds both cached.  Exit 0 also when the machine cannot run
    the test (the test says why when it skips)."""
    reason = _machine_reason()
    if reason:
        print(f"test_package prepare: nothing to do: {reason}")
        return 0
    t0 = time.monotonic()
    out, changes = _build_debs()
    print(f"test_package prepare: {out}/{changes} ({time.monotonic() - t0:.0f} s)", flush=True)
    t0 = time.monotonic()
    print(f"test_package prepare: {_rootfs_tarball()} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    import sys
    if sys.argv[1:] != ["--prepare"]:
        sys.exit("usage: PYTHONPATH=tests python3 tests/integration/test_package.py --prepare")
    sys.exit(prepare())
