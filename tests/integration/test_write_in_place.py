"""Writes go out from the FUSE request buffer they came in: no payload copy.

A WRITE on a TCP mount carries its payload straight from the buffer the
daemon read the FUSE request into (smb_write_lent(): sent in place, the
buffer lent until the server answered and the transport let go of it,
client/conn.h payload_lent), so `payload_bytes_copied` (smbrdmactl stats)
does not grow for writes; the bytes on the server are the bytes written,
plain, signed and sealed.
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
    before = ctl_json("stats", m.path)
    write_file(os.path.join(m.path, "buffered.bin"), chunks, direct=False)
    write_file(os.path.join(m.path, "direct.bin"), chunks, direct=True)
    write_file(os.path.join(m.path, "odd.bin"), odd, direct=False)
    after = ctl_json("stats", m.path)
    copied = after["payload_bytes_copied"] - before["payload_bytes_copied"]
    sent = sum(c["bytes_sent"] for c in after["channels"]) - \
        sum(c["bytes_sent"] for c in before["channels"])
    assert sent > 2 * 6 * MIB, f"only {sent} bytes went out"
    assert copied == 0, f"{copied} payload bytes copied for {2 * 6 * MIB} written"
    for name, data in (("buffered.bin", want), ("direct.bin", want),
                       ("odd.bin", sha256_bytes(b"".join(odd)))):
        assert sha256(os.path.join(samba.share_path, name)) == data, name
