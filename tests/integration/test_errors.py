"""Issue 2, acceptance line 3: wrong password -> non-zero exit within 5 s
naming the logon failure; server down -> "connection refused"; no core dump,
no leftover mount or daemon in either case."""

import os
import signal

import pytest

from lib.mount import (clean_leftovers, daemon_binary, is_mounted, pids_for_mountpoint,
                       run_mount_command)
from lib.samba import free_port, port_accepts

MODES = [pytest.param(False, id="daemonizing"), pytest.param(True, id="foreground")]


def _check_clean_failure(r, secs, mnt, cwd, limit):
    out = r.stdout + r.stderr
    assert r.returncode > 0, (f"exit status {r.returncode} "
                              f"({'signal ' + signal.Signals(-r.returncode).name if r.returncode < 0 else 'success?'}):\n{out}")
    assert r.returncode < 128, f"exit status {r.returncode} looks like a signal:\n{out}"
    assert secs < limit, f"took {secs:.1f}s (limit {limit}s)"
    assert not is_mounted(mnt), "failed mount left a mount behind"
    assert not pids_for_mountpoint(mnt), "failed mount left a daemon behind"
    assert not [f for f in os.listdir(cwd) if f.startswith("core")], "core dump written"
    for marker in ("AddressSanitizer", "runtime error:", "Segmentation fault"):
        assert marker not in out, out
    return out


@pytest.fixture
def mnt(tmp_path, fuse_required):
    d = tmp_path / "mnt"
    d.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert os.access(daemon_binary(), os.X_OK), f"{daemon_binary()} not built"
    yield str(d), str(cwd)
    # a mount that should have failed but did not: clean it up, loudly
    leftovers = clean_leftovers(str(d))
    assert not leftovers, f"left behind: {leftovers}"


@pytest.mark.parametrize("foreground", MODES)
def test_wrong_password(samba, mnt, foreground):
    d, cwd = mnt
    r, secs = run_mount_command(samba.unc, d, samba.user, "not-the-password",
                                foreground=foreground, timeout=15, cwd=cwd)
    out = _check_clean_failure(r, secs, d, cwd, limit=5)
    assert "logon failure" in out.lower(), f"message does not name the logon failure:\n{out}"


@pytest.mark.parametrize("foreground", MODES)
def test_unknown_user(samba, mnt, foreground):
    d, cwd = mnt
    r, secs = run_mount_command(samba.unc, d, "nosuchuser", "x", foreground=foreground,
                                timeout=15, cwd=cwd)
    out = _check_clean_failure(r, secs, d, cwd, limit=5)
    assert "logon failure" in out.lower(), out


@pytest.mark.parametrize("foreground", MODES)
def test_server_down(mnt, foreground):
    d, cwd = mnt
    port = free_port()
    assert not port_accepts(port)
    r, secs = run_mount_command(f"//127.0.0.1:{port}/share", d, "u", "p",
                                foreground=foreground, timeout=15, cwd=cwd)
    out = _check_clean_failure(r, secs, d, cwd, limit=5)
    assert "connection refused" in out.lower(), f"no 'connection refused' in:\n{out}"


def test_port_option(samba, mount_factory):
    """port= works as well as //HOST:PORT/."""
    m = mount_factory(samba, unc=f"//127.0.0.1/{samba.share}", options=[f"port={samba.port}"])
    with open(os.path.join(m.path, "f"), "wb") as f:
        f.write(b"via port=")
    assert open(os.path.join(samba.share_path, "f"), "rb").read() == b"via port="


def test_bad_share_name(samba, mnt):
    d, cwd = mnt
    r, secs = run_mount_command(f"//127.0.0.1:{samba.port}/nosuchshare", d, samba.user,
                                samba.password, timeout=30, cwd=cwd)
    out = _check_clean_failure(r, secs, d, cwd, limit=10)
    assert "mount error" in out.lower(), out
