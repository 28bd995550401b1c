"""Shared fixtures for tests that run inside the test guest (tests/vm/run).

The guest init (tests/vm/lib/guest-init) describes the lab in environment variables and in
/run/smbrdma-vm/lab.env; the ``lab`` fixture exposes them. Helpers live in vmlab.py
(``from vmlab import run, sha256_file``). Outside the guest every test here is
skipped, so a plain ``pytest`` on the host does no harm.
"""

import os
import shlex
import subprocess
from dataclasses import dataclass

import pytest

from vmlab import is_mounted

LAB_ENV = "/run/smbrdma-vm/lab.env"


def _read_lab_env():
    env = {}
    try:
        with open(LAB_ENV) as f:
            for line in f:
                line = line.strip()
                if "=" in line and not line.startswith("#"):
                    key, _, value = line.partition("=")
                    parts = shlex.split(value) if value else [""]
                    env[key] = parts[0] if parts else ""
    except FileNotFoundError:
        pass
    env.update({k: v for k, v in os.environ.items() if k.startswith("SMBRDMA_VM_")})
    return env


@dataclass(frozen=True)
class Lab:
    rxe_dev: str       # soft-RoCE device, e.g. rxe0
    rxe_netdev: str    # its veth end
    rxe_addr: str      # IPv4 address on that veth end (ksmbd is reachable there)
    siw_dev: str       # soft-iWARP device, e.g. siw0
    siw_netdev: str
    siw_addr: str
    share: str         # SMB share name served by ksmbd
    share_path: str    # its directory (tmpfs) inside the guest
    user: str
    password: str
    smbdirect_port: int  # ksmbd's SMB Direct listener (5445 when an iWARP device exists)
    rxe_smbdirect_port: int  # the same on rxe: smbdirect_port on 6.x, 445 on 7.x (per device kind)
    out: str           # output directory shared with the host (artifacts survive the VM)
    errors: str        # problems the guest init met while building the lab ('' if none)
    ksmbd_leases: str  # ksmbd's "smb2 leases": yes or no (SMBRDMA_VM_KSMBD_LEASES)

    def unc(self, addr=None):
        return f"//{addr or self.rxe_addr}/{self.share}"


@pytest.fixture(scope="session")
def lab():
    env = _read_lab_env()
    if env.get("SMBRDMA_VM") != "1":
        pytest.skip("not inside the smbrdma test guest (run it with tests/vm/run)")
    return Lab(
        rxe_dev=env["SMBRDMA_VM_RXE_DEV"],
        rxe_netdev=env["SMBRDMA_VM_RXE_NETDEV"],
        rxe_addr=env["SMBRDMA_VM_RXE_ADDR"],
        siw_dev=env["SMBRDMA_VM_SIW_DEV"],
        siw_netdev=env["SMBRDMA_VM_SIW_NETDEV"],
        siw_addr=env["SMBRDMA_VM_SIW_ADDR"],
        share=env["SMBRDMA_VM_SMB_SHARE"],
        share_path=env["SMBRDMA_VM_SMB_SHARE_PATH"],
        user=env["SMBRDMA_VM_SMB_USER"],
        password=env["SMBRDMA_VM_SMB_PASS"],
        smbdirect_port=int(env.get("SMBRDMA_VM_SMBDIRECT_PORT", "445")),
        rxe_smbdirect_port=int(env.get("SMBRDMA_VM_RXE_SMBDIRECT_PORT",
                                       env.get("SMBRDMA_VM_SMBDIRECT_PORT", "445"))),
        out=env.get("SMBRDMA_VM_OUT", "/tmp"),
        errors=env.get("SMBRDMA_VM_LAB_ERRORS", ""),
        ksmbd_leases=env.get("SMBRDMA_VM_KSMBD_LEASES", "yes"),
    )


@pytest.fixture
def mountpoint(tmp_path):
    """An empty directory; whatever is mounted on it is unmounted afterwards."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    yield mnt
    # not os.path.ismount(): it stats the directory, which fails on a dead FUSE mount
    if is_mounted(mnt):
        subprocess.run(["umount", str(mnt)], timeout=60)
        if is_mounted(mnt):
            subprocess.run(["umount", "-l", str(mnt)], timeout=60)


def pytest_collection_modifyitems(session, config, items):
    """Run the lab checks first: when they fail, the rest is explained by them.  Then the
    `rdma link delete rxe0` link-loss test, which leaves a clean new rxe0 but cannot run
    after cifs.ko has used rxe0 (6.1's cifs.ko: its cifsd hangs in smbd_destroy at unmount and
    its rdma_cm id keeps the delete blocked for good).  Tests that take veth0 down go last: in
    the guest kernels (6.12 and 6.1) that leaves rxe0's connection manager deaf (see
    tests/vm/README.md)."""
    here = os.path.dirname(os.path.abspath(__file__))
    linkloss = "test_smbrdma_linkloss.py::test_link_loss_fails_inflight_io_then_new_mount_works"
    rank = {"test_lab.py": 0,
            f"{linkloss}[rdma-link-delete]": 1,
            f"{linkloss}[netdev-down]": 3,
            "test_multichannel_mixed.py::test_rdma_link_down_fails_over_to_tcp": 4}

    def key(item):
        rel = os.path.relpath(str(item.path), here)
        return rank.get(rel, rank.get(f"{rel}::{item.name}", 2))
    items.sort(key=key)
