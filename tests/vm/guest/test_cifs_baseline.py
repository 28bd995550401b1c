"""The kernel SMB client (cifs.ko, rebuilt with SMB Direct) reaches ksmbd over every transport.

This proves the lab end to end before the project's own client is measured against it: a 32 MiB
random file is written through the mount, checked on the server side, and read back through a
fresh mount (so the bytes really cross the transport) with an equal sha256.
"""

import os
import secrets
import subprocess


from vmlab import dmesg_tail, run, sha256_file

SIZE = 32 << 20


def _debugdata():
    try:
        with open("/proc/fs/cifs/DebugData") as f:
            return f.read()
    except OSError:
        return ""


def _mount(lab, addr, mnt, rdma):
    opts = f"vers=3.1.1,username={lab.user},password={lab.password},nosharesock,cache=strict"
    if rdma:
        opts += ",rdma"
    r = run(["mount", "-t", "cifs", lab.unc(addr), str(mnt), "-o", opts], check=False, timeout=120)
    if r.returncode != 0:
        return f"mount -o {opts.replace(lab.password, '***')} failed ({r.returncode}): " \
               f"{r.stderr.strip()}\n{dmesg_tail()}"
    return None


def _roundtrip(lab, addr, mnt, rdma, tmp_path):
    src = tmp_path / "src.bin"
    with open(src, "wb") as f:
        for _ in range(SIZE >> 20):
            f.write(secrets.token_bytes(1 << 20))
    want = sha256_file(src)
    name = f"baseline-{'rdma' if rdma else 'tcp'}-{addr}.bin"

    err = _mount(lab, addr, mnt, rdma)
    if err:
        return err
    dd = run(["dd", f"if={src}", f"of={mnt / name}", "bs=1M", "oflag=direct", "status=none"],
             check=False, timeout=300)
    assert dd.returncode == 0, dd.stderr
    if rdma:
        dbg = _debugdata()
        assert "SMBDirect" in dbg or "RDMA" in dbg, dbg
    subprocess.run(["umount", str(mnt)], check=True, timeout=120)

    # what reached the server
    server_copy = os.path.join(lab.share_path, name)
    assert os.path.getsize(server_copy) == SIZE
    assert sha256_file(server_copy) == want

    # read back through a new mount, so nothing comes from the client's page cache
    err = _mount(lab, addr, mnt, rdma)
    assert err is None, err
    got = sha256_file(mnt / name)
    assert got == want
    os.unlink(mnt / name)
    return None


def test_cifs_rdma_over_rxe(lab, mountpoint, tmp_path):
    err = _roundtrip(lab, lab.rxe_addr, mountpoint, True, tmp_path)
    assert err is None, err


def test_cifs_tcp(lab, mountpoint, tmp_path):
    err = _roundtrip(lab, lab.rxe_addr, mountpoint, False, tmp_path)
    assert err is None, err


def test_cifs_rdma_over_siw(lab, mountpoint, tmp_path):
    err = _roundtrip(lab, lab.siw_addr, mountpoint, True, tmp_path)
    assert err is None, err
