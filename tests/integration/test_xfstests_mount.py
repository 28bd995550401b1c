"""What xfstests' FSTYP=fuse needs of the mount (tests/xfstests/ runs the
suite itself, by hand: it is too long for CI):

  - `mount -t fuse.smbrdma DEV DIR -o ...` (FUSE_SUBTYP=.smbrdma) goes
    through mount.fuse3, which runs the program `smbrdma` (installed as a
    symlink to mount.smbrdma) and must start the daemon;
  - with nosubtype, `df -T -P` shows the type as exactly `fuse` and the
    source as exactly the device string (findmnt -S DEV finds it);
  - statfs reports the share's real size;
  - `umount DEV` unmounts, and the daemon goes away.
"""

import os
import subprocess
import time

from lib.mount import clean_leftovers, daemon_binary, is_mounted, pids_for_mountpoint

INSTALLED_LINK = "/sbin/smbrdma"


def df_tp(path):
    """(source, type, 1K-blocks) of path as `df -T -P` prints them, the
    command xfstests' _fs_type and _df_device read."""
    out = subprocess.run(["df", "-T", "-P", path], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    fields = out[1].split()
    return fields[0], fields[1], int(fields[2])


def check_xfstests_view(samba, dev, mnt, scale):
    assert df_tp(mnt)[:2] == (dev, "fuse")
    r = subprocess.run(["findmnt", "-rncv", "-S", dev, "-o", "SOURCE,TARGET"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == f"{dev} {mnt}"
    # statfs: the share's tmpfs, as the server reports it
    mine, theirs = os.statvfs(mnt), os.statvfs(samba.share_path)
    assert mine.f_blocks * mine.f_frsize == theirs.f_blocks * theirs.f_frsize
    assert abs(mine.f_bavail * mine.f_frsize - theirs.f_bavail * theirs.f_frsize) < 1 << 20
    with open(os.path.join(mnt, "probe"), "w") as f:
        f.write("xfstests\n")
    with open(os.path.join(samba.share_path, "probe")) as f:
        assert f.read() == "xfstests\n"
    # umount by the device string, as xfstests' _test_unmount does
    u = subprocess.run(["umount", dev], capture_output=True, text=True, timeout=30 * scale)
    assert u.returncode == 0, u.stderr
    assert not is_mounted(mnt)
    deadline = time.monotonic() + 15 * scale
    while pids_for_mountpoint(mnt) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pids_for_mountpoint(mnt), "daemon left after umount DEV"


def test_nosubtype_source_statfs_and_umount_by_device(samba, tmp_path, fuse_required, scale):
    dev = f"//127.0.0.1/{samba.share}"
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    opts = f"port={samba.port},username={samba.user},password={samba.password},nosubtype"
    r = subprocess.run([daemon_binary(), dev, mnt, "-o", opts], capture_output=True, text=True,
                       timeout=30 * scale)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        check_xfstests_view(samba, dev, mnt, scale)
    finally:
        clean_leftovers(mnt)


def test_without_nosubtype_the_type_names_us(samba, mount_factory):
    m = mount_factory(samba)
    assert df_tp(m.path)[1] == "fuse.smbrdma"


def test_mount_fuse3_runs_the_smbrdma_program(samba, tmp_path, fuse_required, scale):
    """mount.fuse3 (what mount(8) runs for type fuse.smbrdma) finds
    `smbrdma` on PATH and hands it SOURCE MOUNTPOINT -o OPTIONS (adding
    dev,suid); here PATH leads to the build under test."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(daemon_binary(), bindir / "smbrdma")
    dev = f"//127.0.0.1/{samba.share}"
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    opts = f"port={samba.port},username={samba.user},password={samba.password},nosubtype"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/sbin:/usr/bin')}")
    r = subprocess.run(["mount.fuse3", dev, mnt, "-t", "fuse.smbrdma", "-o", opts],
                       capture_output=True, text=True, timeout=30 * scale, env=env)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        check_xfstests_view(samba, dev, mnt, scale)
    finally:
        clean_leftovers(mnt)


def test_mount_t_fuse_smbrdma_installed(samba, tmp_path, installed_helper, scale):
    """The whole path xfstests takes: mount(8) -> mount.fuse3 -> the
    installed /sbin/smbrdma (meson install puts it there, beside the
    helper the installed_helper fixture makes sure of)."""
    assert os.path.exists(INSTALLED_LINK), \
        f"{INSTALLED_LINK} is not installed (meson install puts it beside {installed_helper})"
    dev = f"//127.0.0.1/{samba.share}"
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    opts = f"port={samba.port},username={samba.user},password={samba.password},nosubtype"
    r = subprocess.run(["mount", "-t", "fuse.smbrdma", dev, mnt, "-o", opts],
                       capture_output=True, text=True, timeout=30 * scale)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        check_xfstests_view(samba, dev, mnt, scale)
    finally:
        clean_leftovers(mnt)
