"""Writes go out from the FUSE request buffer they came in: no payload copy.

A WRITE on a TCP mount carries its payload straight from the buffer the
daemon read the FUSE request into (smb_write_lent(): sent in place, the
buffer lent until the server answered and the transport let go of it,
client/conn.h payload_lent), so `payload_bytes_copied` (smbrdmactl stats)
does not grow for writes; the bytes on the server are the bytes written,
plain, signed and sealed.  On the FUSE ring (io_uring) the same holds for
writes answered once sent (O_DIRECT); a buffered write answered early is
copied once, for its ring entry goes back to the kernel with the answer.
"""

import mmap
import os

import pytest

from lib.fileops import MIB, sha256, sha256_bytes
from test_smbrdmactl import ctl_json

MODES = [pytest.param([], id="plain"), pytest.param(["seal"], id="sealed")]


def write_file(path, chunks, direct):
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0)
    fd = os.open(path, flags, 0o644)
    try:
        for c in chunks:
            # O_DIRECT wants an aligned buffer: an anonymous mmap is one.
            if direct:
                buf = mmap.mmap(-1, len(c))
                buf.write(c)
                assert os.write(fd, buf) == len(c)
                buf.close()
            else:
                assert os.write(fd, c) == len(c)
        os.fsync(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize("options", MODES)
def test_writes_copy_no_payload(samba, mount_factory, options):
    m = mount_factory(samba, options=options)
    # 1 MiB and odd-sized writes, buffered and O_DIRECT (page multiples).
    chunks = [os.urandom(MIB) for _ in range(6)] + [os.urandom(4096 * 3), os.urandom(65536)]
    want = sha256_bytes(b"".join(chunks))
    odd = [os.urandom(n) for n in (1, 4095, 70001, 300000)]
    ring = ctl_json("debug", m.path)["fuse_transport"] == "io_uring"
    before = ctl_json("stats", m.path)
    write_file(os.path.join(m.path, "buffered.bin"), chunks, direct=False)
    write_file(os.path.join(m.path, "odd.bin"), odd, direct=False)
    mid = ctl_json("stats", m.path)
    write_file(os.path.join(m.path, "direct.bin"), chunks, direct=True)
    after = ctl_json("stats", m.path)
    buffered = sum(map(len, chunks)) + sum(map(len, odd))
    copied_buffered = mid["payload_bytes_copied"] - before["payload_bytes_copied"]
    copied_direct = after["payload_bytes_copied"] - mid["payload_bytes_copied"]
    sent = sum(c["bytes_sent"] for c in after["channels"]) - \
        sum(c["bytes_sent"] for c in before["channels"])
    assert sent > 2 * 6 * MIB, f"only {sent} bytes went out"
    # O_DIRECT writes are answered once sent: their payload leaves from the
    # request buffer, or the FUSE ring entry, it came in
    assert copied_direct == 0, f"{copied_direct} payload bytes copied for O_DIRECT writes"
    if ring:
        # on the FUSE ring a buffered write answered early (write-behind)
        # is copied: its ring entry is handed back to the kernel with the
        # answer (fuse/ring.h); at most once, nothing else
        assert copied_buffered <= buffered, (copied_buffered, buffered)
    else:
        assert copied_buffered == 0, \
            f"{copied_buffered} payload bytes copied for {buffered} written"
    for name, data in (("buffered.bin", want), ("direct.bin", want),
                       ("odd.bin", sha256_bytes(b"".join(odd)))):
        assert sha256(os.path.join(samba.share_path, name)) == data, name
