"""Issue "For the people who mount it", acceptance line 1: an fstab line of
type smbrdma (with _netdev and a credentials= file) mounts with `mount -a`,
and `mount -t smbrdma` mounts; both unmount with `umount`. mount(8) runs
the installed helper, /sbin/mount.smbrdma.

The real /etc/fstab is never touched: the fstab test runs mount(8) in a
private mount namespace (unshare -m) where a one-line temp file is bind-
mounted over /etc/fstab, so `mount -a` reads /etc/fstab exactly as at boot.
The FUSE mount lives in that namespace; the test reads and writes through
it via /proc/PID/root of the namespace's holder process, and checks the
files on the Samba share itself.
"""

import os
import shutil
import subprocess
import time

import pytest

from lib.mount import INSTALLED, pids_for_mountpoint, unmount


@pytest.fixture
def creds(tmp_path, samba):
    path = tmp_path / "smbrdma.cred"
    path.write_text(f"username={samba.user}\npassword={samba.password}\n")
    path.chmod(0o600)
    return str(path)


def _run(argv, scale, what):
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=30 * scale)
    assert r.returncode == 0, f"{what} failed ({r.returncode}):\n{r.stdout}{r.stderr}"
    return r.stdout


def _daemon_exe(mnt):
    pids = pids_for_mountpoint(mnt)
    assert len(pids) == 1, f"expected one daemon for {mnt}, found {pids}"
    return os.path.realpath(f"/proc/{pids[0]}/exe")


def _wait_no_daemon(mnt, scale):
    deadline = time.monotonic() + 15 * scale
    while pids_for_mountpoint(mnt) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pids_for_mountpoint(mnt), f"daemon for {mnt} still running after umount"


class PrivateFstab:
    """A mount namespace whose /etc/fstab is `fstab`, held open by a sleeping
    process; run() runs a command inside it (nsenter -m), path() is a path
    as seen inside it."""

    def __init__(self, fstab):
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" /etc/fstab && echo ready && exec sleep 3600', "sh", fstab],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.wait(timeout=10)
            raise AssertionError(f"private mount namespace failed: {self.proc.stderr.read()}")

    def run(self, argv, **kw):
        return subprocess.run(["nsenter", "-t", str(self.proc.pid), "-m"] + argv,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, **kw)

    def path(self, p):
        return f"/proc/{self.proc.pid}/root{p}"

    def mounted(self, mnt):
        return self.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", mnt], timeout=10).stdout.split()

    def close(self, mnt):
        if self.mounted(mnt):
            self.run(["umount", "-l", mnt], timeout=30)
        self.proc.kill()
        self.proc.wait(timeout=10)


def test_fstab_mount_a(samba, installed_helper, creds, tmp_path, scale):
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    fstab = tmp_path / "fstab"
    line = (f"//127.0.0.1/{samba.share}  {mnt}  smbrdma  "
            f"_netdev,port={samba.port},credentials={creds}  0  0\n")
    fstab.write_text("# fstab of this test's mount namespace\n" + line)
    ns = PrivateFstab(str(fstab))
    try:
        assert open(ns.path("/etc/fstab")).read().endswith(line), "bind over /etc/fstab"
        # _netdev marks it a network file system: skipped when those are
        # excluded, mounted by a plain mount -a
        r = ns.run(["mount", "-a", "-O", "no_netdev"], timeout=30 * scale)
        assert r.returncode == 0, f"mount -a -O no_netdev failed:\n{r.stdout}{r.stderr}"
        assert not ns.mounted(mnt), "mount -a -O no_netdev mounted a _netdev line"
        r = ns.run(["mount", "-a", "-v"], timeout=30 * scale)
        assert r.returncode == 0, f"mount -a failed ({r.returncode}):\n{r.stdout}{r.stderr}"
        assert ns.mounted(mnt) == ["fuse.smbrdma", f"//127.0.0.1/{samba.share}"], \
            f"after mount -a: {ns.mounted(mnt)}; mount said:\n{r.stdout}{r.stderr}"
        assert _daemon_exe(mnt) == os.path.realpath(INSTALLED), "mount -a ran another helper"
        with open(ns.path(mnt) + "/from-fstab", "w") as f:
            f.write("mounted by mount -a\n")
        assert open(os.path.join(samba.share_path, "from-fstab")).read() == \
            "mounted by mount -a\n"
        # a second mount -a knows the line is mounted already
        r = ns.run(["mount", "-a", "-v"], timeout=30 * scale)
        assert r.returncode == 0 and "already mounted" in r.stdout, r.stdout + r.stderr
        assert len(ns.run(["findmnt", "-n", mnt]).stdout.splitlines()) == 1
        r = ns.run(["umount", mnt], timeout=30 * scale)
        assert r.returncode == 0, f"umount failed:\n{r.stderr}"
        assert not ns.mounted(mnt)
        _wait_no_daemon(mnt, scale)
        # mount MOUNTPOINT alone finds the line in /etc/fstab
        r = ns.run(["mount", mnt], timeout=30 * scale)
        assert r.returncode == 0, f"mount {mnt} failed:\n{r.stdout}{r.stderr}"
        assert open(ns.path(mnt) + "/from-fstab").read() == "mounted by mount -a\n"
        r = ns.run(["umount", mnt], timeout=30 * scale)
        assert r.returncode == 0, f"umount failed:\n{r.stderr}"
        _wait_no_daemon(mnt, scale)
    finally:
        ns.close(mnt)


def test_mount_t_smbrdma_credentials(samba, installed_helper, creds, tmp_path, scale):
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    src = f"//127.0.0.1/{samba.share}"
    try:
        _run(["mount", "-t", "smbrdma", src, mnt, "-o",
              f"_netdev,port={samba.port},credentials={creds}"], scale, "mount -t smbrdma")
        out = _run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", mnt], scale, "findmnt")
        assert out.split() == ["fuse.smbrdma", src]
        assert _daemon_exe(mnt) == os.path.realpath(INSTALLED)
        shutil.copyfile(creds, os.path.join(mnt, "copied"))
        assert open(os.path.join(samba.share_path, "copied")).read() == open(creds).read()
        _run(["umount", mnt], scale, "umount")
        assert subprocess.run(["findmnt", mnt], capture_output=True).returncode == 1
        _wait_no_daemon(mnt, scale)
    finally:
        unmount(mnt)
