"""Issue 20: READ payload over TCP lands without a copy in the engine.

A 12 MiB file is read through a TCP mount of the test Samba with O_DIRECT
(1 MiB reads) and through the page cache; its bytes are checked, and
smbrdmactl stats must show no READ payload copied (payload_bytes_copied,
which counts every copy of READ payload, the transport's read-ahead
included).  Signed and sealed mounts read the same bytes with no copy
either: a signature is checked over the header and the payload where it
landed, and a sealed answer is decrypted in place in its message (FUSE
lends no buffer; the copy a sealed read into a lent buffer makes is
counted, see docs/ARCHITECTURE.md).  The same through smaller READs
(rsize=64 KiB): the kernel's odd small reads (under 16 KiB) may be copied
out of the transport's read-ahead, by design, and counted.  On the FUSE
ring a READ does lend a buffer (its ring entry), so a sealed read copies
its payload there once, counted."""

import mmap
import os

import pytest

from lib.fileops import MIB, make_random_file
from test_smbrdmactl import ctl_json

SIZE = 12 * MIB


def read_direct(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        out = bytearray()
        buf = mmap.mmap(-1, MIB)
        while True:
            n = os.readv(fd, [buf])
            if n <= 0:
                break
            out += buf[:n]
        return bytes(out)
    finally:
        os.close(fd)


def read_buffered(path):
    with open(path, "rb") as f:
        return f.read()


def copied(m):
    return ctl_json("stats", m.path)["payload_bytes_copied"]


@pytest.mark.parametrize("options", [[], ["sign"], ["seal"], ["rsize=65536"],
                                     ["rsize=65536", "sign"], ["rsize=65536", "seal"]],
                         ids=["plain", "sign", "seal", "rsize", "rsize-sign", "rsize-seal"])
def test_tcp_read_copies_nothing(samba, mount_factory, tmp_path, options):
    src = make_random_file(str(tmp_path / "src.bin"), SIZE // MIB)
    with open(src, "rb") as f:
        data = f.read()
    with open(os.path.join(samba.share_path, "big.bin"), "wb") as f:
        f.write(data)
    m = mount_factory(samba, options=options)
    p = os.path.join(m.path, "big.bin")
    # On the FUSE ring (io_uring) a READ lends its ring entry, where a
    # sealed answer's payload, decrypted in its message, is copied once
    # (counted); /dev/fuse lends no buffer, so nothing is copied there.
    lent_sealed = "seal" in options and \
        ctl_json("debug", m.path)["fuse_transport"] == "io_uring"
    c0 = copied(m)
    assert read_direct(p) == data
    c1 = copied(m)
    assert read_buffered(p) == data
    c2 = copied(m)
    if lent_sealed:
        assert c1 - c0 <= SIZE, f"O_DIRECT reads copied {c1 - c0} bytes (more than once)"
    else:
        assert c1 - c0 == 0, f"O_DIRECT reads copied {c1 - c0} bytes"
    small = 64 * 1024 if any(o.startswith("rsize") for o in options) else 0
    if lent_sealed:
        small += SIZE
    assert c2 - c1 <= small, f"buffered reads copied {c2 - c1} bytes"
