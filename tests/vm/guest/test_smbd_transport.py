"""The SMB Direct transport (smbd/) against ksmbd, over rxe and over siw.

Runs the host-built meson test binary test_smbd_rdma_peer (tests/unit/smbd) once per device:
connect (5445, then 445), SMB Direct negotiate, an SMB2 NEGOTIATE round trip, then the RDMA
offload tokens on the live QP -- on rxe a type-2 memory window bound and locally invalidated
per I/O (channel RDMA_V1_INVALIDATE), on siw a per-I/O registration (RDMA_V1) -- and shutdown.
Build first on the host (tests/run-all does): meson setup build && ninja -C build.
"""

import os

import pytest

from vmlab import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("SMBRDMA_BUILD_DIR", os.environ.get("SMBRDMA_BUILD", os.path.join(ROOT, "build")))
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
PEER = os.path.join(BUILD, "tests", "unit", "smbd", "test_smbd_rdma_peer")


def _run_peer(addr, expect_mw):
    if not os.access(PEER, os.X_OK):
        pytest.fail(f"{PEER} is missing: build it on the host first (ninja -C {BUILD})")
    env = dict(os.environ, SMBRDMA_TEST_RDMA_ADDR=addr, SMBRDMA_TEST_EXPECT_MW=expect_mw)
    p = run([PEER], check=False, timeout=120, env=env)
    print(p.stdout)
    print(p.stderr[-4000:])
    assert p.returncode == 0, f"test_smbd_rdma_peer against {addr} exited {p.returncode}"
    return p.stdout


@pytest.mark.parametrize("device", ["rxe", "siw"])
def test_smbd_rdma_peer(lab, device):
    addr = lab.rxe_addr if device == "rxe" else lab.siw_addr
    out = _run_peer(addr, "1" if device == "rxe" else "0")
    assert "SMB2 NEGOTIATE: dialect" in out
    if device == "rxe":
        assert "memory windows type 2: yes" in out
        assert "channel 2 " in out  # RDMA_V1_INVALIDATE with dialect 3.0.2
    else:
        assert "memory windows type 2: no" in out
        assert "channel 1 " in out  # RDMA_V1: a per-I/O MR cannot be invalidated remotely
    assert out.rstrip().endswith("ok")
