"""Issue 5 in the guest: one session to ksmbd carrying SMB Direct and TCP
channels at once (rxe0 on veth0, siw0 on veth1, and veth2 with no RDMA
device, which ksmbd advertises as TCP-only), and failover from the RDMA
channels to the TCP one when the RDMA link goes down mid-write."""

import hashlib
import json
import os
import subprocess
import threading
import time

import pytest

from vmlab import run, sha256_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _build():
    b = os.environ.get("SMBRDMA_BUILD", os.path.join(ROOT, "build"))
    return b if os.path.isabs(b) else os.path.join(ROOT, b)


def _stats(mnt):
    r = subprocess.run([os.path.join(_build(), "tools", "smbrdmactl"), "stats", str(mnt),
                        "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _mount(lab, mnt, log, opts, addr):
    with open(log, "ab") as lf:
        r = subprocess.run([os.path.join(_build(), "fuse", "mount.smbrdma"), lab.unc(addr),
                            str(mnt), "-o",
                            f"username={lab.user},password={lab.password},{opts}"],
                           stdout=lf, stderr=subprocess.STDOUT, timeout=180)
    assert r.returncode == 0, open(log).read()[-3000:]


def _umount(mnt):
    for _ in range(50):
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.fixture
def tcp_addr(lab):
    addr = os.environ.get("SMBRDMA_VM_TCP_ADDR")
    if not addr:
        pytest.fail("the guest has no TCP-only link (tests/vm/lib/guest-init sets "
                    "SMBRDMA_VM_TCP_ADDR)")
    return addr


def test_rdma_and_tcp_channels_in_one_session(lab, tcp_addr, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = os.path.join(lab.out, "mount-mc-mixed.log")
    _mount(lab, mnt, log, "rdma,max_channels=3,debug", lab.rxe_addr)
    try:
        st = _stats(mnt)
        print(json.dumps(st["channels"], indent=1))
        kinds = {c["transport"] for c in st["channels"] if c["state"] == "up"}
        assert kinds == {"rdma", "tcp"}, st
        assert any(c["remote"].startswith(tcp_addr + ":") and c["transport"] == "tcp"
                   for c in st["channels"]), st
        src = tmp_path / "src.bin"
        with open(src, "wb") as f:
            f.write(os.urandom(64 << 20))
        run(["dd", f"if={src}", f"of={mnt}/mixed.bin", "bs=1M", "oflag=direct"], timeout=600)
        back = tmp_path / "back.bin"
        run(["dd", f"if={mnt}/mixed.bin", f"of={back}", "bs=1M", "iflag=direct"], timeout=600)
        want = sha256_file(src)
        assert sha256_file(back) == want
        assert sha256_file(os.path.join(lab.share_path, "mixed.bin")) == want
        st = _stats(mnt)
        rdma_moved = sum(c["rdma_read_bytes"] + c["rdma_write_bytes"]
                         for c in st["channels"] if c["transport"] == "rdma")
        # bulk prefers the RDMA channels
        assert rdma_moved >= 2 * (64 << 20) * 0.95, st
    finally:
        _umount(mnt)


def test_rdma_link_down_fails_over_to_tcp(lab, tcp_addr, tmp_path):
    """The session is set up over TCP (ksmbd 6.1 ends a session whose first
    channel dies), then binds SMB Direct channels to the RDMA interfaces,
    which take the bulk I/O until their link goes down."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = os.path.join(lab.out, "mount-mc-failover.log")
    _mount(lab, mnt, log, "max_channels=3,debug", tcp_addr)
    st = _stats(mnt)
    print(json.dumps(st["channels"], indent=1))
    assert [c["transport"] for c in st["channels"]].count("rdma") >= 1, st
    src = tmp_path / "src.bin"
    with open(src, "wb") as f:
        f.write(os.urandom(96 << 20))
    result = {}

    def writer():
        p = subprocess.run(["dd", f"if={src}", f"of={mnt}/fo.bin", "bs=1M", "oflag=direct"],
                           capture_output=True, text=True, timeout=600)
        result["rc"], result["err"] = p.returncode, p.stderr

    t = threading.Thread(target=writer)
    try:
        t.start()
        time.sleep(2)
        # veth0 and veth1 are one pair: both RDMA links go; veth2 stays.
        run(["ip", "link", "set", lab.rxe_netdev, "down"])
        t.join(600)
        assert not t.is_alive(), "the write hung after the RDMA link went down"
        assert result["rc"] == 0, result["err"]
        st = _stats(mnt)
        print(json.dumps(st["channels"], indent=1))
        assert sha256_file(os.path.join(lab.share_path, "fo.bin")) == sha256_file(src)
        assert any(c["transport"] == "tcp" and c["state"] == "up" for c in st["channels"]), st
        assert sum(c["failovers"] for c in st["channels"]) > 0, st
        assert sum(c["rdma_read_bytes"] for c in st["channels"]) > 0, st
        # and the mount keeps working over what is left
        with open(mnt / "after.txt", "w") as f:
            f.write("after failover")
        assert open(os.path.join(lab.share_path, "after.txt")).read() == "after failover"
    finally:
        run(["ip", "link", "set", lab.rxe_netdev, "up"], check=False)
        run(["ip", "link", "set", lab.siw_netdev, "up"], check=False)
        _umount(mnt)
