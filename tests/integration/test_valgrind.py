"""Issue 7: the daemon under valgrind (memcheck) for a short run of real work
against the test Samba - a write and read back, directory operations, a
rename, an unlink, and a reconnect after the connection is cut - reports no
invalid access and no definite leak."""

import os
import re
import shutil
import subprocess
import time

import pytest

from lib.mount import daemon_binary

VG_FLAGS = ["--tool=memcheck", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite", "--track-fds=no", "--num-callers=30",
            "--error-exitcode=97", "--child-silent-after-fork=yes"]


def _sanitized(binary):
    """Built with ASan/UBSan?  (valgrind cannot run such a binary.)"""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return "libasan" in r.stdout or "libubsan" in r.stdout


@pytest.fixture
def valgrind():
    vg = shutil.which("valgrind")
    assert vg, "valgrind is not installed (apt-get install valgrind; .ci/run does)"
    if _sanitized(daemon_binary()):
        pytest.skip("valgrind cannot run an ASan/UBSan build; the run on the normal build "
                    "covers this test")
    return vg


def test_daemon_under_valgrind(samba_factory, mount_factory, valgrind, tmp_path):
    srv = samba_factory(extra_global=["posix locking = no"])
    vglog = tmp_path / "valgrind.log"
    wrapper = tmp_path / "mount.smbrdma-vg"
    wrapper.write_text("#!/bin/sh\nexec {} {} --log-file={} {} \"$@\"\n".format(
        valgrind, " ".join(VG_FLAGS), vglog, daemon_binary()))
    wrapper.chmod(0o755)
    # valgrind makes the daemon ~20x slower: generous timeouts
    m = mount_factory(srv, options=["timeout=120"], binary=str(wrapper), timeout=180)
    data = os.urandom(3 << 20)
    with open(os.path.join(m.path, "a.bin"), "wb") as f:
        f.write(data)
    with open(os.path.join(m.path, "a.bin"), "rb") as f:
        assert f.read() == data
    os.mkdir(os.path.join(m.path, "d"))
    os.rename(os.path.join(m.path, "a.bin"), os.path.join(m.path, "d", "b.bin"))
    assert os.listdir(os.path.join(m.path, "d")) == ["b.bin"]
    # a reconnect with an open handle (durable reopen), then more I/O
    fd = os.open(os.path.join(m.path, "d", "b.bin"), os.O_RDWR)
    try:
        subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", str(srv.port)],
                       check=True, capture_output=True)
        os.pwrite(fd, b"after the cut", 0)
        assert os.pread(fd, 13, 0) == b"after the cut"
    finally:
        os.close(fd)
    os.unlink(os.path.join(m.path, "d", "b.bin"))
    os.rmdir(os.path.join(m.path, "d"))
    assert "reconnected" in m.log_text()
    m.stop(check=False)
    rc = m.proc.returncode if m.proc else None
    deadline = time.monotonic() + 60
    while not re.search(r"ERROR SUMMARY", vglog.read_text() if vglog.exists() else ""):
        assert time.monotonic() < deadline, "valgrind wrote no summary"
        time.sleep(0.5)
    text = vglog.read_text()
    print(text[-1500:])
    assert "Memcheck" in text, text[:2000]
    summary = re.findall(r"ERROR SUMMARY: (\d+) errors", text)
    assert summary and summary[-1] == "0", text[-6000:]
    lost = re.findall(r"definitely lost: ([\d,]+) bytes", text)
    assert not lost or all(x == "0" for x in lost), text[-6000:]
    assert rc in (0, None), f"daemon exited {rc}:\n{text[-4000:]}"
