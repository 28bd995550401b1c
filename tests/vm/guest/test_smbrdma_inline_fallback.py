"""No RDMA token, no RDMA: a per-I/O registration that fails sends the I/O inline (rxe, siw).

The SMB Direct transport never offers a server the key of a long-lived registration: an I/O
gets a memory window bound over its bytes (rxe) or a registration of exactly its bytes (siw),
and when neither can be had the I/O goes as an ordinary SMB Direct data message instead. The
test knob SMBRDMA_TEST_IO_REG_FAIL=1 (smbd/smbd_offload.h; test-only: it can take offload
away, never grant access) makes every per-I/O registration and window bind of the daemon fail.
Through such a mount a random file is written and read back with O_DIRECT 1 MiB I/O (above
rdma_threshold, so every I/O is meant for RDMA) and its sha256 checked on ksmbd's tmpfs and
on the way back; `smbrdmactl stats --json` must then show no byte moved by RDMA, no window
bound, the payload carried inline, and the I/Os counted per channel in
offload_fallback_inline; the daemon says so once per channel in its log.
"""

import os
import time

import pytest

from vmlab import (mount_smbrdma, rdma_totals, run, sha256_file, stats, umount,
                   write_random_file)

MiB = 1 << 20
SIZE = 16 * MiB
SYSLOG = "/run/smbrdma-vm/syslog.log"  # mount.smbrdma logs there once daemonized
WARNING = "no per-I/O RDMA token"


def _syslog_size():
    try:
        return os.path.getsize(SYSLOG)
    except FileNotFoundError:
        return 0


def _syslog_since(offset, want=None, wait=5.0):
    """The syslog text after offset; waits up to `wait` s for `want` (syslogd lags)."""
    end = time.monotonic() + wait
    while True:
        try:
            with open(SYSLOG, errors="replace") as f:
                f.seek(offset)
                text = f.read()
        except FileNotFoundError:
            text = ""
        if want is None or want in text or time.monotonic() > end:
            return text
        time.sleep(0.2)


def _dd(src, dst, direct):
    """dd with 1 MiB blocks, O_DIRECT on the mount's side (direct: "iflag" or "oflag")."""
    run(["dd", f"if={src}", f"of={dst}", "bs=1M", f"{direct}=direct", "status=none"],
        timeout=600)


@pytest.mark.parametrize("kind", ["rxe", "siw"])
def test_failed_registration_goes_inline(lab, kind, tmp_path, monkeypatch):
    addr = lab.rxe_addr if kind == "rxe" else lab.siw_addr
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = os.path.join(lab.out, f"mount-fallback-{kind}.log")
    src = tmp_path / "src.bin"
    back = tmp_path / "back.bin"
    name = f"fallback-{kind}.bin"
    server_copy = os.path.join(lab.share_path, name)
    want = write_random_file(src, SIZE)
    since = _syslog_size()
    monkeypatch.setenv("SMBRDMA_TEST_IO_REG_FAIL", "1")
    mount_smbrdma(lab, addr, mnt, True, log)
    try:
        _dd(src, mnt / name, "oflag")
        assert sha256_file(server_copy) == want, "the server holds different bytes"
        _dd(mnt / name, back, "iflag")
        assert sha256_file(back) == want, "read back different bytes"
        st = stats(mnt)
        print(f"{kind}, every per-I/O registration failing: {st}")
        ch = rdma_totals(st)  # two SMB Direct channels by default
        assert ch["up"] >= 1 and ch["rdma"] == len(st["channels"]), st
        # Nothing by RDMA, nothing over a region's key: everything inline.
        assert ch["rdma_read_bytes"] == 0 and ch["rdma_write_bytes"] == 0, st
        assert ch["mw_bound"] == 0, st
        assert ch["bytes_sent"] >= SIZE and ch["bytes_received"] >= SIZE, st
        # One count per 1 MiB I/O meant for RDMA (writes and reads: 2 * SIZE / 1 MiB).
        assert ch["offload_fallback_inline"] >= 2 * SIZE // MiB, st
        text = _syslog_since(since, WARNING)
        lines = [ln for ln in text.splitlines() if WARNING in ln]
        print("\n".join(lines))
        assert len(lines) == ch["rdma"], \
            f"expected the fallback logged once on each of {ch['rdma']} channels:\n{text}"
        assert "SMBRDMA_TEST_IO_REG_FAIL is set" in text, text
    finally:
        umount(mnt)
        for f in (src, back, server_copy):
            if os.path.exists(f):
                os.unlink(f)
