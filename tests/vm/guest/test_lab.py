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
    # 6.x: with an iWARP device present, ksmbd's one rdma_cm listener is on 5445 (cifs.ko and
    # our client try 5445 first, then 445); it covers both devices.  7.x: ksmbd listens through
    # smbdirect.ko (whose threads own the cm_ids), by device kind as Windows does: InfiniBand
    # and RoCE (rxe) on 445 only, iWARP (siw) on 5445 only.
    assert lab.smbdirect_port == 5445
    if int(os.uname().release.split(".")[0]) >= 7:
        comm, want = "smbdirect", {lab.rxe_dev: 445, lab.siw_dev: 5445}
    else:
        comm, want = "ksmbd", {lab.rxe_dev: 5445, lab.siw_dev: 5445}
    assert lab.rxe_smbdirect_port == want[lab.rxe_dev]
    out = run(["rdma", "resource", "show", "cm_id"]).stdout
    for dev, port in want.items():
        assert re.search(rf"^link {dev}/\S* .*state LISTEN .*comm \[{comm}\] "
                         rf"src-addr 0\.0\.0\.0:{port}\b", out, re.M), out


def test_rebuilt_modules_are_loaded(lab):
    mods = ["ksmbd", "cifs", "siw"]
    # from 7.x on SMB Direct is a module of its own (fs/smb/smbdirect), which setup rebuilds
    # too; Debian's 6.x have no such module
    if int(os.uname().release.split(".")[0]) >= 7:
        mods.append("smbdirect")
    for mod in mods:
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


def test_fuse_over_io_uring_enabled_where_the_kernel_has_it(lab):
    # guest-init sets the fuse module's enable_uring where it exists (7.x, CONFIG_FUSE_IO_URING),
    # so mount.smbrdma takes its default path, the ring; 6.1 and 6.12 have no such parameter
    p = "/sys/module/fuse/parameters/enable_uring"
    if not os.path.exists(p):
        assert os.environ.get("SMBRDMA_VM_FUSE_URING", "") == ""
        return
    with open(p) as f:
        assert f.read().strip() == "Y"
    assert os.environ["SMBRDMA_VM_FUSE_URING"] == "Y"
