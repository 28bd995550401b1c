"""Issue 2, acceptance line 2: against `server signing = mandatory` the file
test works, every response is signed, and a response whose signature a proxy
corrupted fails its request with EIO and a log line, not a crash."""

import errno
import os
import subprocess
import sys
import time

import pytest

from conftest import SMALL_MIB
from lib.fileops import short_file_test
from lib.mount import is_mounted
from lib.smbproxy import (SMB2_CREATE, SMB2_FLAGS_SIGNED, SMB2_NEGOTIATE, SMB2_READ,
                          SMB2_SESSION_SETUP, STATUS_PENDING)

SIGNING = ["server signing = mandatory"]


def test_file_test_with_mandatory_signing(samba_factory, mount_factory, tmp_path):
    srv = samba_factory(extra_global=SIGNING)
    m = mount_factory(srv)
    problems = short_file_test(m.path, str(tmp_path), SMALL_MIB, srv.share_path)
    assert not problems, problems


def test_every_response_signed(samba_factory, mount_factory, proxy_factory, tmp_path):
    srv = samba_factory(extra_global=SIGNING)
    px = proxy_factory(srv)
    m = mount_factory(srv, port=px.port)
    problems = short_file_test(m.path, str(tmp_path), 4, srv.share_path)
    assert not problems, problems
    late = [r for r in px.responses
            if r[0] not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP) and r[2] != STATUS_PENDING]
    assert late, "proxy saw no traffic"
    unsigned = [r for r in late if not r[1] & SMB2_FLAGS_SIGNED]
    assert not unsigned, f"unsigned responses under mandatory signing: {unsigned[:5]}"
    # and the client signed its requests
    reqs = [r for r in px.requests if r[0] not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP)]
    assert reqs and all(f & SMB2_FLAGS_SIGNED for _, f in reqs)


READER = r"""
import mmap, os, sys
# O_DIRECT: one READ on the wire per read(2), and its error comes back to us
# (a buffered read would retry a failed readahead page with a second READ).
buf = mmap.mmap(-1, 65536)
try:
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
    n = os.readv(fd, [buf])
    print("ok", n)
except OSError as e:
    print("errno", e.errno)
"""


def _read_direct(path, timeout):
    r = subprocess.run([sys.executable, "-c", READER, path], capture_output=True, text=True,
                       timeout=timeout)
    return r.stdout.strip() + r.stderr.strip()


def _wait_log(m, word, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if word in m.log_text().lower():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("command", [SMB2_READ, SMB2_CREATE], ids=["READ", "CREATE"])
def test_corrupted_signature_gives_eio(samba_factory, mount_factory, proxy_factory, command,
                                       scale):
    srv = samba_factory(extra_global=SIGNING)
    px = proxy_factory(srv)
    m = mount_factory(srv, port=px.port)
    # the victim appears on the server behind the mount's back, so nothing
    # about it is cached in the kernel or the daemon
    data = os.urandom(65536)
    victim = os.path.join(srv.share_path, "victim")
    with open(victim, "wb") as f:
        f.write(data)
    srv.chown_to_user(victim)
    px.corrupt_next_signature(command)
    out = _read_direct(os.path.join(m.path, "victim"), timeout=60 * scale)
    assert px.corrupted == 1, (f"proxy never saw a signed response to command {command} "
                               f"(read gave {out!r})")
    assert out == f"errno {errno.EIO}", f"read through a corrupted signature gave {out!r}"
    assert _wait_log(m, "signature"), ("no daemon log line mentions the signature:\n"
                                       + m.log_text()[-3000:])
    # not a crash: the daemon is alive, the mount answers
    assert m.alive(), "daemon died after a bad signature"
    assert is_mounted(m.path)
    r = subprocess.run(["stat", m.path], capture_output=True, text=True, timeout=30 * scale)
    assert "Transport endpoint is not connected" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
