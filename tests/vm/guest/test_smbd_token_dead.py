"""A token is dead after its I/O: the server cannot reuse it (rxe and siw).

ksmbd cannot be made to reuse an rkey, so a hostile SMB Direct peer does it:
tests/unit/smbd/token_peer_server.c listens on the device's address (port 5446 and up; ksmbd
has 445/5445) and test_smbd_token_dead.c connects to it over our transport. The client lets the
peer RDMA-Read one token and RDMA-Write another, puts each after the peer's DONE (on rxe with
dialect 3.1.1 the peer answers by Send-with-Invalidate, with dialect 3.0 the client invalidates
locally; siw has per-I/O registrations), gets a fresh token over the same buffer, and asks the
peer to retry: the fresh token must work and the old one must be refused -- which fails the QP,
so each case is its own connection. On siw the kernel log shows the client's TERMINATE (invalid
STag); any new kernel WARNING fails the case.

The "region" cases retry with the registration cache's own key for the buffer's region instead
of a used token (--old region): regions are registered without remote access (no standing
exposure), so that key must be refused too, though no I/O ever named it. On siw a region is not
registered at all (siw serves RDMA Reads from any valid STag, whatever its access rights), so
the retry there uses key 0 and the client's line says so. Build first on the host: meson setup build && ninja -C
build.
"""

import os
import queue
import subprocess
import threading
import time

import pytest

from vmlab import run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("SMBRDMA_BUILD_DIR", os.environ.get("SMBRDMA_BUILD", os.path.join(ROOT, "build")))
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)
BIN = os.path.join(BUILD, "tests", "unit", "smbd")
CLIENT = os.path.join(BIN, "test_smbd_token_dead")
PEER = os.path.join(BIN, "token_peer_server")

# (device, mode, retry): on rxe the two invalidation modes, on siw the mode makes no difference
# (no memory windows: every token is a per-I/O registration), so only the direction varies.
# Mode "region": dialect 3.1.1 (as "remote"), the retried key being the region's own.
CASES = [
    ("rxe", "remote", "read"),
    ("rxe", "remote", "write"),
    ("rxe", "local", "read"),
    ("rxe", "local", "write"),
    ("siw", "remote", "read"),
    ("siw", "remote", "write"),
    ("rxe", "region", "read"),
    ("rxe", "region", "write"),
    ("siw", "region", "read"),
    ("siw", "region", "write"),
]


def _reader(stream, lines):
    for line in stream:
        lines.put(line)
    lines.put(None)


def _run_case(addr, port, mode, retry, expect_mw):
    for exe in (CLIENT, PEER):
        if not os.access(exe, os.X_OK):
            pytest.fail(f"{exe} is missing: build it on the host first (ninja -C {BUILD})")
    dmesg_before = len(run(["dmesg"], check=False).stdout.splitlines())
    t0 = time.monotonic()
    peer = subprocess.Popen([PEER, addr, str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    threading.Thread(target=_reader, args=(peer.stdout, lines), daemon=True).start()
    peer_out = []
    try:
        deadline = time.monotonic() + 20
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                pytest.fail("peer exited before listening:\n" + "".join(peer_out))
            peer_out.append(line)
            if line.startswith("listening on"):
                break
        env = dict(os.environ, SMBRDMA_TEST_EXPECT_MW=expect_mw)
        args = ["--mode", "remote", "--old", "region"] if mode == "region" else ["--mode", mode]
        client = subprocess.run([CLIENT, *args, "--retry", retry, addr, str(port)],
                                capture_output=True, text=True, timeout=60, env=env)
        peer_rc = peer.wait(timeout=40)
    except (queue.Empty, subprocess.TimeoutExpired):
        peer.kill()
        peer.wait()
        raise
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
    while True:
        line = lines.get(timeout=5)
        if line is None:
            break
        peer_out.append(line)
    elapsed = time.monotonic() - t0
    kernel = "\n".join(run(["dmesg"], check=False).stdout.splitlines()[dmesg_before:])
    if kernel:
        print(f"--- new kernel messages ---\n{kernel}")
    peer_text = "".join(peer_out)
    print(f"--- peer (exit {peer_rc}) ---\n{peer_text}")
    print(f"--- client (exit {client.returncode}) ---\n{client.stdout}\n{client.stderr[-4000:]}")
    print(f"--- {elapsed:.1f} s ---")
    return peer_rc, peer_text, client.returncode, client.stdout, kernel


@pytest.mark.parametrize("device,mode,retry", CASES, ids=["-".join(c) for c in CASES])
def test_token_dead_after_io(lab, device, mode, retry):
    addr = lab.rxe_addr if device == "rxe" else lab.siw_addr
    port = 5446 + CASES.index((device, mode, retry))
    peer_rc, peer_out, client_rc, client_out, kernel = _run_case(
        addr, port, mode, retry, "1" if device == "rxe" else "0")

    # The peer used both live tokens, then the fresh one, and the old one was refused.
    assert "RDMA read of 65536 B with rkey" in peer_out and "pattern checked" in peer_out
    assert "RDMA write of 65536 B with rkey" in peer_out
    assert "fresh rkey 0x" in peer_out and "B ok" in peer_out
    assert "still works" not in peer_out and "still works" not in client_out
    assert "refused" in peer_out, peer_out
    assert peer_rc == 0, f"peer exited {peer_rc}"

    region = mode == "region"
    if region and device == "rxe":
        assert "the peer retries with the lkey, which no descriptor carried" in client_out
    elif region:  # no windows: the region is not registered, there is no key to try
        assert "not registered (no memory windows on this device)" in client_out
    if device == "rxe" and mode in ("remote", "region"):
        assert "answered DONE by Send-with-Invalidate" in peer_out
        assert "invalidated remote 2 local 0, Send-with-Invalidate received 2" in client_out
    elif device == "rxe":
        assert "Send-with-Invalidate of rkey" not in peer_out
        assert "invalidated remote 0 local 2, Send-with-Invalidate received 0" in client_out
    else:
        assert "Send-with-Invalidate of rkey" not in peer_out
        assert "mw bound 0," in client_out and "per-I/O MRs 3," in client_out
        # The client's siw refused the stale STag with a TERMINATE: invalid STag (code 0) in
        # RDMAP (layer 0, type 1: remote protection) for a read, DDP (layer 1, type 1: tagged
        # buffer) for a write.
        layer = 0 if retry == "read" else 1
        assert f"siw: got TERMINATE. layer {layer}, type 1, code 0" in kernel, kernel
    if device == "rxe" and retry == "read":
        assert "remote access error" in peer_out  # rxe NAKs the read: IBV_WC_REM_ACCESS_ERR
    if device == "rxe" and not region:
        assert ": same index, new key byte" in client_out  # the same window, rebound
    if retry == "write":
        assert "0 B of the old-token write" in client_out
    assert "connection died after the retry" in client_out
    # e.g. rxe's "__rxe_cleanup" warning when a QP is destroyed while a bound window holds it
    assert "WARNING" not in kernel, kernel
    assert client_rc == 0, f"client exited {client_rc}"
    assert client_out.rstrip().endswith("ok")
