"""`mount -t smbrdma` finds the installed helper (/sbin/mount.smbrdma, put
there by `meson install`; .ci/run installs it)."""

import os
import subprocess

import pytest

from lib.mount import INSTALLED, is_mounted, mount_entry, pids_for_mountpoint, unmount


def test_mount_t_smbrdma(samba, tmp_path, fuse_required, scale):
    if not os.access(INSTALLED, os.X_OK):
        # .ci/run installs it, so in CI a missing helper is a failure.
        assert not os.environ.get("CI"), f"{INSTALLED} is not installed (.ci/run installs it)"
        pytest.skip(f"{INSTALLED} not installed (run `meson install -C build`; .ci/run does)")
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    opts = f"port={samba.port},username={samba.user},password={samba.password}"
    r = subprocess.run(["mount", "-t", "smbrdma", f"//127.0.0.1/{samba.share}", mnt, "-o", opts],
                       capture_output=True, text=True, timeout=30 * scale)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert is_mounted(mnt)
        assert mount_entry(mnt)["fstype"].startswith("fuse")
        with open(os.path.join(mnt, "hello"), "w") as f:
            f.write("hi\n")
        assert open(os.path.join(samba.share_path, "hello")).read() == "hi\n"
        u = subprocess.run(["umount", mnt], capture_output=True, text=True, timeout=30 * scale)
        assert u.returncode == 0, u.stderr
    finally:
        unmount(mnt)
    assert not is_mounted(mnt)
    for _ in range(100):
        if not pids_for_mountpoint(mnt):
            break
        import time
        time.sleep(0.1)
    assert not pids_for_mountpoint(mnt), "daemon left after umount"
