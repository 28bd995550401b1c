"""The guest lab is what the other guest tests expect: RDMA devices, ksmbd, /dev/fuse."""

import os
import re
import socket
import stat

from vmlab import run


def test_lab_init_reported_no_errors(lab):
    assert lab.errors == "", f"guest init: {lab.errors}"


def test_no_network_card(lab):
    # Isolation: the only interfaces are loopback and the lab's own veth pairs (the second,
    # veth2/veth3, has no RDMA device: the TCP-only link of the multichannel tests).
    links = set(os.listdir("/sys/class/net"))
    assert links == {"lo", lab.rxe_netdev, lab.siw_netdev, "veth2", "veth3"}, links
    out = run(["ip", "-o", "-4", "addr", "show", "dev", "veth2"]).stdout
    assert f"inet {os.environ['SMBRDMA_VM_TCP_ADDR']}/24" in out, out


def test_veth_pair_addresses_and_mtu(lab):
    for dev, addr in ((lab.rxe_netdev, lab.rxe_addr), (lab.siw_netdev, lab.siw_addr)):
        out = run(["ip", "-o", "-4", "addr", "show", "dev", dev]).stdout
        assert f"inet {addr}/24" in out, out
        with open(f"/sys/class/net/{dev}/mtu") as f:
            assert int(f.read()) == 9000


def test_rdma_links(lab):
    out = run(["rdma", "link", "show"]).stdout
    for dev, netdev in ((lab.rxe_dev, lab.rxe_netdev), (lab.siw_dev, lab.siw_netdev)):
        m = re.search(rf"^link {dev}/1 state (\S+) .*netdev {netdev}\b", out, re.M)
        assert m, f"{dev} on {netdev} missing:\n{out}"
        assert m.group(1) == "ACTIVE", out


def test_verbs_devices_visible_to_userspace(lab):
    # ibv_devices goes through libibverbs and the rxe/siw providers from ibverbs-providers
    out = run(["ibv_devices"]).stdout
    names = {line.split()[0] for line in out.splitlines()[2:] if line.strip()}
    assert {lab.rxe_dev, lab.siw_dev} <= names, out
    info = run(["ibv_devinfo", "-d", lab.siw_dev]).stdout
    assert "transport:\t\t\tiWARP" in info, info
    info = run(["ibv_devinfo", "-d", lab.rxe_dev]).stdout
    assert "transport:\t\t\tInfiniBand" in info and "link_layer:\t\tEthernet" in info, info


def test_ksmbd_listens_on_tcp_445(lab):
    out = run(["ss", "-Hltn", "sport = :445"]).stdout
    assert out.strip(), "nothing listens on TCP 445"
    for addr in (lab.rxe_addr, lab.siw_addr):
        with socket.create_connection((addr, 445), timeout=10):
            pass


def test_ksmbd_listens_for_smb_direct(lab):
    # With an iWARP device present, ksmbd's one rdma_cm listener is on 5445 (cifs.ko and our
    # client try 5445 first, then 445); it covers both devices.
    assert lab.smbdirect_port == 5445
    out = run(["rdma", "resource", "show", "cm_id"]).stdout
    for dev in (lab.rxe_dev, lab.siw_dev):
        assert re.search(rf"^link {dev}/\S* .*state LISTEN .*comm \[ksmbd\] "
                         rf"src-addr 0\.0\.0\.0:{lab.smbdirect_port}\b", out, re.M), out


def test_rebuilt_modules_are_loaded(lab):
    for mod in ("ksmbd", "cifs", "siw"):
        path = run(["modinfo", "-F", "filename", mod]).stdout.strip()
        assert "/updates/smbrdma/" in path, f"{mod}: {path}"
        assert os.path.isdir(f"/sys/module/{mod}"), f"{mod} not loaded"


def test_dev_fuse(lab):
    st = os.stat("/dev/fuse")
    assert stat.S_ISCHR(st.st_mode)
    with open("/proc/filesystems") as f:
        assert re.search(r"\bfuse$", f.read(), re.M)
    fd = os.open("/dev/fuse", os.O_RDWR)
    os.close(fd)


def test_share_is_tmpfs(lab):
    out = run(["findmnt", "-n", "-o", "FSTYPE", lab.share_path]).stdout.strip()
    assert out == "tmpfs"
