"""mount.smbrdma against ksmbd inside the guest: over TCP, and with -o rdma over
soft-RoCE (rxe) and soft-iWARP (siw).

A 32 MiB random file is written through the mount, checked on the server's
side (ksmbd's tmpfs), and read back through a fresh mount, so the bytes really
cross the transport; directory operations run on the same mount.  The daemon
is the one built on the host (SMBRDMA_BUILD, default build/).
"""

import json
import os
import secrets
import subprocess
import time

import pytest

from vmlab import run, sha256_file

SIZE = 32 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _daemon():
    build = os.environ.get("SMBRDMA_BUILD", os.path.join(ROOT, "build"))
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    path = os.path.join(build, "fuse", "mount.smbrdma")
    assert os.access(path, os.X_OK), f"{path} is missing: build the project on the host first"
    return path


def _mount(lab, addr, mnt, rdma, log):
    opts = f"username={lab.user},password={lab.password}"
    if rdma:
        opts += ",rdma"
    with open(log, "ab") as lf:
        r = subprocess.run([_daemon(), lab.unc(addr), str(mnt), "-o", opts], stdout=lf,
                           stderr=subprocess.STDOUT, timeout=180)
    assert r.returncode == 0, f"mount.smbrdma -o {'rdma,' if rdma else ''}... failed: " + \
        open(log).read()[-2000:]


def _stats(mnt):
    """smbrdmactl stats --json of a live mount (the tool built beside the daemon)."""
    tool = os.path.join(os.path.dirname(os.path.dirname(_daemon())), "tools", "smbrdmactl")
    r = subprocess.run([tool, "stats", str(mnt), "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _check_offload(st, direction, size):
    """Over RDMA the payload moves by RDMA, not inline: >= 95% of the bytes."""
    ch = st["channels"][0]
    assert ch["transport"] == "rdma", st
    moved = ch["rdma_read_bytes"] if direction == "write" else ch["rdma_write_bytes"]
    inline = ch["bytes_sent"] if direction == "write" else ch["bytes_received"]
    assert moved >= size, f"only {moved} of {size} payload bytes moved by RDMA: {st}"
    assert moved / (moved + inline) >= 0.95, st


def _umount(mnt):
    for _ in range(50):
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.mark.parametrize("kind", ["tcp", "rxe", "siw"])
def test_roundtrip(lab, kind, tmp_path):
    addr = lab.siw_addr if kind == "siw" else lab.rxe_addr
    rdma = kind != "tcp"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = os.path.join(lab.out, f"mount-{kind}.log")
    src = tmp_path / "src.bin"
    with open(src, "wb") as f:
        f.write(secrets.token_bytes(SIZE))
    want = sha256_file(src)

    _mount(lab, addr, mnt, rdma, log)
    try:
        run(["cp", str(src), str(mnt / f"{kind}.bin")], timeout=600)
        if rdma:
            _check_offload(_stats(mnt), "write", SIZE)
        (mnt / "d1").mkdir()
        os.rename(mnt / "d1", mnt / "d2")
        # Names are checked with stat, not a listing: ksmbd in this lab (6.1
        # with ksmbd-tools 3.4.7) lists only "." and ".." to every client,
        # smbclient and cifs.ko included.
        assert os.stat(mnt / f"{kind}.bin").st_size == SIZE
        assert os.path.isdir(mnt / "d2") and not os.path.exists(mnt / "d1")
        os.rmdir(mnt / "d2")
        assert not os.path.exists(mnt / "d2")
    finally:
        _umount(mnt)
    server_copy = os.path.join(lab.share_path, f"{kind}.bin")
    assert sha256_file(server_copy) == want, "the server holds different bytes"

    _mount(lab, addr, mnt, rdma, log)
    try:
        back = tmp_path / "back.bin"
        run(["cp", str(mnt / f"{kind}.bin"), str(back)], timeout=600)
        assert sha256_file(back) == want, "read back different bytes"
        if rdma:
            st = _stats(mnt)
            _check_offload(st, "read", SIZE)
            # reads land in registered buffers and go to FUSE from there
            assert st["payload_bytes_copied"] == 0, st
        os.unlink(mnt / f"{kind}.bin")
    finally:
        _umount(mnt)


def test_rdma_mount_without_device_path_fails_clearly(lab, tmp_path):
    """-o rdma to an address no RDMA device reaches (loopback) fails with a
    message saying so, and leaves no mount behind."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([_daemon(), f"//127.0.0.1/{lab.share}", str(mnt), "-o",
                        f"rdma,username={lab.user},password={lab.password}"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode != 0
    assert "rdma" in r.stderr.lower(), r.stderr
    assert not os.path.ismount(mnt)
