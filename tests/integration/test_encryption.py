"""SMB3 encryption (the encryption issue's acceptance lines).

- Each cipher (AES-128-CCM, AES-128-GCM, AES-256-CCM, AES-256-GCM) in turn:
  Samba is left only that one (`server smb3 encryption algorithms`) and
  demands encryption (`server smb encrypt = required`); a file of
  ENC_MIB MiB round-trips with the same sha256 (written through the mount,
  checked on the share's disk, read back with O_DIRECT so the bytes cross
  the wire again rather than come from the page cache); the client's report
  and smbstatus name that cipher; and the proxy, recording every byte both
  ways, never sees the marker the file is full of.
- The control for that check: the same content through an unencrypted
  mount does show the marker on the wire, both ways; and so does Samba's
  own smbclient without encryption, while smbclient with encryption does
  not (the wire check is sound independently of the client under test).
- A share that alone demands encryption is encrypted without `seal`.
- `seal` encrypts against a server that merely allows it, and fails the
  mount, saying so, against one that cannot encrypt (encryption off, or
  SMB 2.1, which has none, whether the server or vers= limits the dialect).

Spellings, from smb.conf(5) of Samba 4.17: `server smb3 encryption
algorithms = AES-128-CCM` etc. (testparm accepts any word there, and a list
with no cipher Samba knows leaves it unable to encrypt, so every test reads
the cipher back from smbstatus); `server smb encrypt` = off | if_required
| desired | required, global or per share (`smb encrypt` is its synonym).
A share's `smb encrypt = required` works only while the global setting
lets encryption be negotiated (default if_required); with the global
setting off smb.conf(5) says the share is refused to everyone.
"""

import collections
import os
import subprocess
import sys

import pytest

from conftest import BIG_MIB, SMALL_MIB, env_int
from lib.fileops import MIB
from lib.mount import is_mounted, pids_for_mountpoint, run_mount_command, timeout_scale
from lib.sessioninfo import CIPHERS, client_report, encrypted, only_session, use_the_tree
from lib.smbproxy import (C2S, COMMAND_NAMES, DIRECTIONS, S2C, SMB2_CLOSE, SMB2_CREATE,
                          SMB2_FLUSH, SMB2_NEGOTIATE, SMB2_QUERY_DIRECTORY, SMB2_QUERY_INFO,
                          SMB2_READ, SMB2_SESSION_SETUP, SMB2_SET_INFO,
                          SMB2_SHAREFLAG_ENCRYPT_DATA, SMB2_TREE_CONNECT, SMB2_WRITE)

# The file each cipher moves: 128 MiB, less when the run lowers the big size
# (tests/run-all under ASan).
ENC_MIB = env_int("SMBRDMA_TEST_ENC_MIB", min(128, BIG_MIB))
SMALL_ENC_MIB = min(8, SMALL_MIB)

# 32 bytes that random data never holds; written at every 4 KiB of the file.
MARKER = b"<<smbrdma plaintext marker 7Qz>>"
MARKER_EVERY = 4096
# commands that carry file names, data or attributes
FILE_COMMANDS = (SMB2_CREATE, SMB2_CLOSE, SMB2_FLUSH, SMB2_READ, SMB2_WRITE,
                 SMB2_QUERY_DIRECTORY, SMB2_QUERY_INFO, SMB2_SET_INFO)


def _enc_server(samba_factory, cipher):
    """A Samba that demands encryption and knows only cipher."""
    return samba_factory(extra_global=["server smb encrypt = required",
                                       f"server smb3 encryption algorithms = {cipher}"])


# The bulk I/O runs in a child (a hung FUSE request fails the test on a
# timeout instead of hanging the run). The content is a function of (seed,
# MiB index): random bytes with MARKER at every 4 KiB. "write" writes it and
# fsyncs; "read" reads a file with O_DIRECT through a page-aligned buffer;
# both print the sha256 and byte count of what they moved.
IO_SCRIPT = r"""
import hashlib, mmap, os, random, sys
MIB = 1 << 20
mode, path = sys.argv[1], sys.argv[2]
h = hashlib.sha256()
total = 0
if mode == "write":
    mib, seed, marker, every = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].encode(), \
        int(sys.argv[6])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(mib):
        chunk = bytearray(random.Random(seed * 100003 + i).randbytes(MIB))
        for off in range(0, MIB, every):
            chunk[off:off + len(marker)] = marker
        h.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
        total += MIB
    os.fsync(fd)
    os.close(fd)
else:
    buf = mmap.mmap(-1, 4 * MIB)
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if mode == "read" else 0))
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        h.update(memoryview(buf)[:n])
        total += n
    os.close(fd)
print(h.hexdigest(), total)
"""


def _io(*args, timeout=600):
    r = subprocess.run([sys.executable, "-c", IO_SCRIPT, *map(str, args)], capture_output=True,
                       text=True, timeout=timeout * timeout_scale())
    assert r.returncode == 0, f"{args[0]} {args[1]} failed ({r.returncode}):\n{r.stderr}"
    digest, total = r.stdout.split()
    return digest, int(total)


def round_trip(m, srv, mib, name="f.bin", seed=1):
    """Write mib MiB of marker content through mount m, check the server's
    copy on disk, read it back with O_DIRECT; returns the number of markers
    in the file. Asserts the three sha256 agree."""
    path = os.path.join(m.path, name)
    want, n = _io("write", path, mib, seed, MARKER.decode(), MARKER_EVERY)
    assert n == mib * MIB
    on_disk, n = _io("plain", os.path.join(srv.share_path, name))
    assert n == mib * MIB, f"server's copy is {n} bytes, want {mib * MIB}"
    assert on_disk == want, "server's copy differs from what was written"
    back, n = _io("read", path)
    assert n == mib * MIB, f"read back {n} bytes, want {mib * MIB}"
    assert back == want, "file read back (O_DIRECT) differs from what was written"
    return mib * MIB // MARKER_EVERY


def check_ciphertext_only(px, payload_bytes, plain_ok=(SMB2_NEGOTIATE, SMB2_SESSION_SETUP)):
    """The recording proxy px carried at least payload_bytes each way, none
    of it the marker; every plain (not encrypted) SMB2 message was one of
    plain_ok; client nonces never repeat within a session."""
    for d in DIRECTIONS:
        assert px.wire_bytes[d] >= payload_bytes, \
            f"only {px.wire_bytes[d]} bytes {d}: the file did not cross the wire\n{px.summary()}"
        assert px.marker_count(MARKER, d) == 0, \
            f"plaintext marker seen {px.marker_count(MARKER, d)} times {d}\n{px.summary()}"
        assert px.frames[d]["encrypted"] > 0, f"no encrypted frame {d}\n{px.summary()}"
    plain = [x for x in px.messages if x.command not in plain_ok]
    assert not plain, ("plain SMB2 messages after the session setup: "
                       + ", ".join(f"{x.direction} {COMMAND_NAMES.get(x.command, x.command)}"
                                   for x in plain[:10]) + f"\n{px.summary()}")
    # [MS-SMB2] 3.1.4.3: a nonce is never reused with the same key
    nonces = collections.Counter((t.session_id, t.nonce) for t in px.transforms
                                 if t.direction == C2S)
    reused = [k for k, n in nonces.items() if n > 1]
    assert not reused, f"client reused {len(reused)} nonce(s), e.g. {reused[0][1].hex()}"
    # every transform header names the session the client set up
    sessions = {x.session_id for x in px.messages
                if x.command == SMB2_SESSION_SETUP and x.direction == S2C and x.status == 0}
    strays = {t.session_id for t in px.transforms} - sessions
    assert not strays, f"transform headers name unknown sessions {strays} (set up: {sessions})"


def check_encryption_reports(srv, m, cipher, session_degree="full"):
    """The client's report and smbstatus agree the traffic is encrypted with
    cipher. (smbstatus calls a session "full" only when encryption is
    required of it; one the client chose to encrypt is "partial", its session
    setup being in the clear; the tree connect is "full" either way.)"""
    rep = client_report(m.path)
    assert rep.get("encryption") is True, f"client report: encryption {rep.get('encryption')!r}"
    assert rep.get("cipher") == cipher, f"client report: cipher {rep.get('cipher')!r}, " \
                                        f"want {cipher!r}"
    use_the_tree(m)
    sess, tcons = only_session(srv, until=encrypted)
    assert sess["encryption"]["cipher"] == cipher, \
        f"smbstatus: session encrypted with {sess['encryption']}, want {cipher}"
    assert sess["encryption"]["degree"] in (session_degree, "full"), sess["encryption"]
    assert tcons, "smbstatus lists no tree connect to the share"
    for t in tcons:
        assert t["encryption"]["degree"] == "full", f"smbstatus tree connect: {t['encryption']}"


@pytest.mark.big
@pytest.mark.parametrize("cipher", CIPHERS)
def test_cipher_round_trip(samba_factory, mount_factory, proxy_factory, cipher):
    srv = _enc_server(samba_factory, cipher)
    px = proxy_factory(srv).record(markers=[MARKER])
    m = mount_factory(srv, port=px.port)
    check_encryption_reports(srv, m, cipher)
    round_trip(m, srv, ENC_MIB)
    check_ciphertext_only(px, ENC_MIB * MIB)


@pytest.mark.big
def test_plaintext_control_mount(samba, mount_factory, proxy_factory):
    """The same check fails on an unencrypted mount of the same content: the
    marker crosses the wire in full both ways (the write, and the O_DIRECT
    read back)."""
    px = proxy_factory(samba).record(markers=[MARKER])
    m = mount_factory(samba, port=px.port)
    rep = client_report(m.path)
    assert rep.get("encryption") is False, rep
    assert rep.get("cipher", "none") == "none", rep
    markers = round_trip(m, samba, ENC_MIB)
    for d in DIRECTIONS:
        assert px.marker_count(MARKER, d) >= markers, \
            f"{d}: {px.marker_count(MARKER, d)} markers on the wire, the file holds {markers}"
        assert px.frames[d]["encrypted"] == 0, px.summary()
    sess, _ = only_session(samba)
    assert sess["encryption"]["degree"] == "none", sess


@pytest.mark.parametrize("protection", ["encrypt", "off"])
def test_wire_check_with_smbclient(samba, proxy_factory, tmp_path, protection):
    """The wire check itself, against Samba's own client: with
    --client-protection=encrypt nothing of the file shows, without it the
    marker does."""
    px = proxy_factory(samba).record(markers=[MARKER])
    src = tmp_path / "src"
    chunk = bytearray(os.urandom(MIB))
    for off in range(0, MIB, MARKER_EVERY):
        chunk[off:off + len(MARKER)] = MARKER
    src.write_bytes(bytes(chunk) * 2)
    samba.smbclient(f"put {src} f; get f {tmp_path}/back", port=px.port,
                    extra_args=[f"--client-protection={protection}"])
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
    markers = 2 * MIB // MARKER_EVERY
    if protection == "encrypt":
        check_ciphertext_only(px, 2 * MIB)
    else:
        for d in DIRECTIONS:
            assert px.marker_count(MARKER, d) >= markers, px.summary()


@pytest.mark.parametrize("vers,dialect_name", [("3.0", "SMB3_00"), ("3.02", "SMB3_02")],
                         ids=["3.0", "3.02"])
def test_smb30_encrypts_with_aes_128_ccm(samba_factory, mount_factory, proxy_factory, vers,
                                         dialect_name):
    """3.0 and 3.0.2 have one cipher, AES-128-CCM, and their own key
    derivation; the server demands encryption."""
    srv = samba_factory(extra_global=["server smb encrypt = required"])
    px = proxy_factory(srv).record(markers=[MARKER])
    m = mount_factory(srv, options=[f"vers={vers}"], port=px.port)
    check_encryption_reports(srv, m, "AES-128-CCM")
    assert only_session(srv)[0]["session_dialect"] == dialect_name
    round_trip(m, srv, SMALL_ENC_MIB)
    check_ciphertext_only(px, SMALL_ENC_MIB * MIB)


def test_share_that_demands_encryption(samba_factory, mount_factory, proxy_factory):
    """Only the share says `smb encrypt = required`; the mount has no `seal`.
    The client encrypts everything on that tree connect."""
    srv = samba_factory(extra_share=["smb encrypt = required"])
    px = proxy_factory(srv).record(markers=[MARKER])
    m = mount_factory(srv, port=px.port)
    rep = client_report(m.path)
    assert rep.get("encryption") is True, f"client report: encryption {rep.get('encryption')!r}"
    use_the_tree(m)
    sess, tcons = only_session(srv, until=encrypted)
    assert rep.get("cipher") == sess["encryption"]["cipher"] and rep["cipher"] in CIPHERS, \
        f"client says cipher {rep.get('cipher')!r}, smbstatus {sess['encryption']}"
    assert tcons and all(t["encryption"]["degree"] == "full" for t in tcons), tcons
    round_trip(m, srv, SMALL_ENC_MIB)
    # the server flagged the share (so the configuration took), and nothing
    # on that tree connect went in the clear after its TREE_CONNECT response
    flagged = [x for x in px.messages_for(SMB2_TREE_CONNECT, S2C)
               if x.status == 0 and x.share_flags is not None
               and x.share_flags & SMB2_SHAREFLAG_ENCRYPT_DATA]
    assert flagged, f"no TREE_CONNECT response carried SMB2_SHAREFLAG_ENCRYPT_DATA\n" \
                    f"{px.summary()}"
    trees = {x.tree_id for x in flagged}
    leaks = [x for x in px.messages
             if x.tree_id in trees and not (x.command == SMB2_TREE_CONNECT and x.direction == S2C)]
    assert not leaks, ("plain messages on the encrypted tree connect: "
                       + ", ".join(f"{x.direction} {COMMAND_NAMES.get(x.command, x.command)}"
                                   for x in leaks[:10]))
    # what else went in the clear (another tree connect, say) carries no
    # file names, data or attributes
    check_ciphertext_only(px, SMALL_ENC_MIB * MIB,
                          plain_ok=tuple(c for c in COMMAND_NAMES if c not in FILE_COMMANDS))


def test_seal_encrypts_when_server_allows(samba, mount_factory, proxy_factory):
    """`seal` against a server that allows but does not demand encryption
    (the default, if_required): everything after the session setup is
    encrypted."""
    px = proxy_factory(samba).record(markers=[MARKER])
    m = mount_factory(samba, options=["seal"], port=px.port)
    rep = client_report(m.path)
    assert rep.get("encryption") is True, f"client report: encryption {rep.get('encryption')!r}"
    assert rep.get("cipher") in CIPHERS, rep.get("cipher")
    check_encryption_reports(samba, m, rep["cipher"], session_degree="partial")
    round_trip(m, samba, SMALL_ENC_MIB)
    check_ciphertext_only(px, SMALL_ENC_MIB * MIB)


MODES = [pytest.param(False, id="daemonizing"), pytest.param(True, id="foreground")]
# why the session cannot be encrypted: (extra [global] lines, mount options,
# what the control mount without `seal` needs: a 2.1-only server is refused
# by default, SMB 2 being offered only when vers= names it)
NO_ENCRYPTION = {
    "server-off": (["server smb encrypt = off"], [], []),
    "server-smb2.1": (["server max protocol = SMB2_10"], [], ["vers=2.1"]),
    "vers=2.1": ([], ["vers=2.1"], []),
}


@pytest.mark.parametrize("foreground", MODES)
@pytest.mark.parametrize("why", list(NO_ENCRYPTION))
def test_seal_fails_without_server_encryption(samba_factory, mount_factory, tmp_path, why,
                                              foreground):
    conf, opts, control = NO_ENCRYPTION[why]
    srv = samba_factory(extra_global=conf)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r, secs = run_mount_command(srv.unc, mnt, srv.user, srv.password, options=opts + ["seal"],
                                foreground=foreground, timeout=30, cwd=cwd)
    out = r.stdout + r.stderr
    assert r.returncode > 0, f"exit status {r.returncode} with `seal` ({why}):\n{out}"
    assert r.returncode < 128, f"exit status {r.returncode} looks like a signal:\n{out}"
    assert secs < 15 * timeout_scale(), f"took {secs:.1f}s to fail"
    assert "encrypt" in out.lower(), f"the message does not mention encryption:\n{out}"
    assert not is_mounted(str(mnt)), "failed mount left a mount behind"
    assert not pids_for_mountpoint(str(mnt)), "failed mount left a daemon behind"
    assert not [f for f in os.listdir(cwd) if f.startswith("core")], "core dump written"
    for marker in ("AddressSanitizer", "runtime error:", "Segmentation fault"):
        assert marker not in out, out
    # the control: without `seal` the same mount works, so `seal` failed it
    m = mount_factory(srv, options=opts + control)
    assert client_report(m.path).get("encryption") is False
