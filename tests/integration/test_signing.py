"""Signing. Issue 2, acceptance line 2: against `server signing = mandatory`
the file test works, every response is signed, and a response whose
signature a proxy corrupted fails its request with EIO and a log line, not a
crash. The encryption issue adds: each signing algorithm is forced in turn
and named alike by the client (smbrdmactl debug) and by Samba (smbstatus),
the corruption check runs under each of them, the `sign` mount option signs
a session the server does not require to be signed, and 3.0/3.0.2 sessions
validate the negotiation (FSCTL_VALIDATE_NEGOTIATE_INFO) on the wire.

Which algorithm: SMB 2.x signs with HMAC-SHA256 and 3.0/3.0.2 with AES-CMAC,
whatever the configuration; for 3.1.1 the server picks from the client's
signing capabilities context, and `server smb3 signing algorithms` (spelled
as in smb.conf(5) of Samba 4.17: AES-128-GMAC, AES-128-CMAC, HMAC-SHA256)
leaves Samba one choice. testparm accepts any word there, so each test also
reads the algorithm back from smbstatus: a misspelling cannot pass."""

import errno
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import SMALL_MIB
from lib.fileops import short_file_test
from lib.mount import is_mounted
from lib.sessioninfo import (SAMBA_SIGNING_NAME, client_report, only_session, signed,
                             use_the_tree)
from lib.smbproxy import (C2S, FSCTL_VALIDATE_NEGOTIATE_INFO, S2C, SMB2_CREATE,
                          SMB2_FLAGS_SIGNED, SMB2_IOCTL, SMB2_NEGOTIATE, SMB2_READ,
                          SMB2_SESSION_SETUP, STATUS_PENDING)

SIGNING = ["server signing = mandatory"]

# id: (mount options, extra [global] lines, smbrdmactl's signing_algorithm,
#      DialectRevision on the wire, smbstatus session_dialect)
ALGORITHMS = {
    "HMAC-SHA256-2.1": (["vers=2.1"], [], "HMAC-SHA256", 0x0210, "SMB2_10"),
    "AES-CMAC-3.0": (["vers=3.0"], [], "AES-CMAC", 0x0300, "SMB3_00"),
    "AES-CMAC-3.0.2": (["vers=3.02"], [], "AES-CMAC", 0x0302, "SMB3_02"),
    "HMAC-SHA256-3.1.1": ([], ["server smb3 signing algorithms = HMAC-SHA256"],
                          "HMAC-SHA256", 0x0311, "SMB3_11"),
    "AES-CMAC-3.1.1": ([], ["server smb3 signing algorithms = AES-128-CMAC"],
                       "AES-CMAC", 0x0311, "SMB3_11"),
    "AES-GMAC-3.1.1": ([], ["server smb3 signing algorithms = AES-128-GMAC"],
                       "AES-GMAC", 0x0311, "SMB3_11"),
}


def _signed_server(samba_factory, alg):
    _, conf, _, _, _ = ALGORITHMS[alg]
    return samba_factory(extra_global=SIGNING + conf)


def check_signing_reports(srv, m, want_alg, want_dialect_name):
    """The client and Samba both say the session is signed with want_alg."""
    rep = client_report(m.path)
    assert rep["signing"] is True, f"client report: signing {rep['signing']!r}"
    assert rep["signing_algorithm"] == want_alg, \
        f"client report: signing_algorithm {rep['signing_algorithm']!r}, want {want_alg!r}"
    use_the_tree(m)
    sess, tcons = only_session(srv, until=signed)
    assert sess["session_dialect"] == want_dialect_name, sess
    assert sess["signing"] == {"cipher": SAMBA_SIGNING_NAME[want_alg], "degree": "full"}, \
        f"smbstatus session signing {sess['signing']}, want {SAMBA_SIGNING_NAME[want_alg]}"
    assert tcons, "smbstatus lists no tree connect to the share"
    for t in tcons:
        assert t["signing"] == {"cipher": SAMBA_SIGNING_NAME[want_alg], "degree": "full"}, \
            f"smbstatus tree connect signing {t['signing']}"


def test_file_test_with_mandatory_signing(samba_factory, mount_factory, tmp_path):
    srv = samba_factory(extra_global=SIGNING)
    m = mount_factory(srv)
    problems = short_file_test(m.path, str(tmp_path), SMALL_MIB, srv.share_path)
    assert not problems, problems


@pytest.mark.parametrize("alg", list(ALGORITHMS))
def test_every_response_signed(samba_factory, mount_factory, proxy_factory, tmp_path, alg):
    opts, _, want_alg, dialect, dialect_name = ALGORITHMS[alg]
    srv = _signed_server(samba_factory, alg)
    px = proxy_factory(srv)
    m = mount_factory(srv, options=opts, port=px.port)
    assert px.dialects and px.dialects[-1] == dialect, \
        f"negotiated {[hex(d) for d in px.dialects]}, want {dialect:#06x}"
    check_signing_reports(srv, m, want_alg, dialect_name)
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


def _wait_log_line(m, pattern, timeout=5):
    """The first daemon log line matching the regex pattern (case-insensitive),
    waiting up to timeout seconds for it; None if none comes."""
    rx = re.compile(pattern, re.IGNORECASE)
    deadline = time.monotonic() + timeout
    while True:
        for line in m.log_text().splitlines():
            if rx.search(line):
                return line
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


COMMAND_NAME = {SMB2_READ: "READ", SMB2_CREATE: "CREATE"}


@pytest.mark.parametrize("alg", list(ALGORITHMS))
@pytest.mark.parametrize("command", [SMB2_READ, SMB2_CREATE], ids=["READ", "CREATE"])
def test_corrupted_signature_gives_eio(samba_factory, mount_factory, proxy_factory, command,
                                       alg, scale):
    opts, _, want_alg, _, _ = ALGORITHMS[alg]
    srv = _signed_server(samba_factory, alg)
    px = proxy_factory(srv)
    m = mount_factory(srv, options=opts, port=px.port)
    rep = client_report(m.path)
    assert rep["signing_algorithm"] == want_alg, rep["signing_algorithm"]
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
    # one line that names both the signature and the command it failed
    name = COMMAND_NAME[command]
    line = _wait_log_line(m, rf"signature.*\b{name}\b|\b{name}\b.*signature")
    assert line, (f"no daemon log line names the bad signature on the {name} response:\n"
                  + m.log_text()[-3000:])
    # not a crash: the daemon is alive, the mount answers
    assert m.alive(), "daemon died after a bad signature"
    assert is_mounted(m.path)
    r = subprocess.run(["stat", m.path], capture_output=True, text=True, timeout=30 * scale)
    assert "Transport endpoint is not connected" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr


def test_sign_option_signs_anyway(samba, mount_factory, proxy_factory, tmp_path):
    """`sign` against a server that does not require signing: the client
    signs every request after the session setup, and both sides say the
    session is signed (Samba: with the algorithm it prefers, AES-128-GMAC)."""
    px = proxy_factory(samba)
    m = mount_factory(samba, options=["sign"], port=px.port)
    check_signing_reports(samba, m, "AES-GMAC", "SMB3_11")
    problems = short_file_test(m.path, str(tmp_path), 1, samba.share_path)
    assert not problems, problems
    reqs = [r for r in px.requests if r[0] not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP)]
    assert reqs, "proxy saw no requests"
    unsigned = [r for r in reqs if not r[1] & SMB2_FLAGS_SIGNED]
    assert not unsigned, f"unsigned requests with `sign`: {unsigned[:5]}"
    late = [r for r in px.responses
            if r[0] not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP) and r[2] != STATUS_PENDING]
    assert late and all(f & SMB2_FLAGS_SIGNED for _, f, _ in late), \
        "Samba did not sign its responses to a signing client"


def test_no_signing_without_sign_option(samba, mount_factory):
    """The control for the test above: neither side asks for signing, so the
    session is not signed and both sides say so."""
    m = mount_factory(samba)
    os.listdir(m.path)
    rep = client_report(m.path)
    assert rep["signing"] is False and rep["signing_algorithm"] == "none", rep
    sess, tcons = only_session(samba)
    assert sess["signing"]["degree"] != "full", sess["signing"]
    assert tcons and all(t["signing"]["degree"] == "none" for t in tcons), tcons


@pytest.mark.parametrize("vers,dialect", [("3.0", 0x0300), ("3.02", 0x0302),
                                          ("3.1.1", 0x0311)], ids=["3.0", "3.02", "3.1.1"])
def test_validate_negotiate(samba_factory, mount_factory, proxy_factory, vers, dialect):
    """3.0 and 3.0.2 with signing: the client sends one signed
    FSCTL_VALIDATE_NEGOTIATE_INFO and Samba answers it with success, signed
    ([MS-SMB2] 3.2.5.5). 3.1.1 protects the negotiation with the preauth
    integrity hash instead and must not send it."""
    srv = samba_factory(extra_global=SIGNING)
    px = proxy_factory(srv).record()
    m = mount_factory(srv, options=[f"vers={vers}"], port=px.port)
    with open(os.path.join(m.path, "after-validate"), "wb") as f:
        f.write(b"x")
    assert px.dialects and px.dialects[-1] == dialect, [hex(d) for d in px.dialects]
    reqs = [x for x in px.messages_for(SMB2_IOCTL, C2S)
            if x.ctl_code == FSCTL_VALIDATE_NEGOTIATE_INFO]
    if dialect == 0x0311:
        assert not reqs, f"VALIDATE_NEGOTIATE_INFO sent on a 3.1.1 session: {reqs}"
        return
    # once per session, or once per tree connect as Samba's own client does
    assert reqs, f"no FSCTL_VALIDATE_NEGOTIATE_INFO request on the wire:\n{px.summary()}"
    for req in reqs:
        assert req.flags & SMB2_FLAGS_SIGNED, f"VALIDATE_NEGOTIATE_INFO request not signed: {req}"
        rsps = [x for x in px.messages_for(SMB2_IOCTL, S2C)
                if x.message_id == req.message_id and x.status != STATUS_PENDING]
        assert len(rsps) == 1, f"no response to the VALIDATE_NEGOTIATE_INFO request {req}"
        rsp = rsps[0]
        assert rsp.status == 0, f"Samba answered VALIDATE_NEGOTIATE_INFO with {rsp.status:#010x}"
        assert rsp.ctl_code == FSCTL_VALIDATE_NEGOTIATE_INFO, rsp
        assert rsp.flags & SMB2_FLAGS_SIGNED, f"VALIDATE_NEGOTIATE_INFO response not signed: {rsp}"
