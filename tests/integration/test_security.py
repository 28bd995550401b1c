"""Secure by default (issue 18): nobody in the network path, and no server,
gets more than it was granted.

Against the scripted hostile server (tests/lib/hostile_server.py), which
plays what an impostor or a tampering path can do, and against a real
Samba where a real server can show the same:

- a server that answers the AUTHENTICATE with IS_GUEST or IS_NULL while the
  user gave a password is refused (it proved nothing: no key, so nothing
  after it could be checked), whether the password was right or wrong,
  at 3.1.1, 3.0 and 2.1; Samba's `map to guest = Bad Password` gives
  "logon failure", never a guest mount;
- on every 3.x dialect the final SESSION_SETUP answer must be signed with
  the key both sides derive: a server that does not know the password
  cannot, and is refused;
- SMB 2.0.2 and 2.1 are offered only when vers= names them (a 2.1-only
  server is refused by default);
- on a signed session, a break or an interim answer whose signature does
  not verify changes nothing, and an unsigned one (the spec exempts both
  from signing) grants no credits beyond what the request asked for;
- the interface list that steers multichannel is believed only when its
  answer verifies.

Each test fails on the code before issue 18: there the mount came up, the
forged break was acknowledged, the credits were taken, the channel was
opened.
"""

import os
import re
import socket
import struct
import threading
import time

import pytest

from lib.fileops import ctl_stats
from lib.hostile_server import (
    DEFAULT_FILES, SESSION_FLAG_IS_GUEST, SESSION_FLAG_IS_NULL, SMB2_IOCTL, SMB2_NEGOTIATE,
    SMB2_OPLOCK_BREAK, SMB2_READ, SMB2_SESSION_SETUP, SMB2_TREE_CONNECT,
    FSCTL_QUERY_NETWORK_INTERFACE_INFO,
    NETIF_CAP_RDMA, lease_break, pending, unsigned)
from lib.mount import SmbrdmaMount, is_mounted, pids_for_mountpoint, run_mount_command
from lib.quic import QuicRelay, make_certs

from test_hostile import HELLO, OPTS, VICTIM, hostile_factory, scaled  # noqa: F401 (fixture)


@pytest.fixture
def mnt(tmp_path, fuse_required):
    d = tmp_path / "mnt"
    d.mkdir()
    return str(d)


def mount_fails(srv, d, options=(), password=None, limit=15):
    """The mount command fails within limit seconds and leaves nothing;
    returns what it printed."""
    unc = f"//127.0.0.1:{srv.port}/{srv.share}"
    r, secs = run_mount_command(unc, d, srv.user, password or srv.password,
                                options=list(options), foreground=True,
                                timeout=scaled(limit) + 30)
    out = r.stdout + r.stderr
    assert r.returncode == 1, f"exit status {r.returncode} (want 1: refused):\n{out}"
    assert secs < scaled(limit), f"took {secs:.1f}s:\n{out}"
    assert not is_mounted(d), "a refused mount left a mount behind"
    time.sleep(0.2)
    assert not pids_for_mountpoint(d), "a refused mount left a daemon behind"
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
        assert marker not in out, out
    return out


def final_setup(req):
    """The AUTHENTICATE round of SESSION_SETUP (the first has SessionId 0)."""
    return req.command != SMB2_SESSION_SETUP or req.session_id != 0


VERS = [pytest.param([], id="default-3.1.1"), pytest.param(["vers=3.0"], id="3.0"),
        pytest.param(["vers=2.1"], id="2.1")]


# ---- impostors at session setup --------------------------------------------------

@pytest.mark.parametrize("vers", VERS)
def test_guest_after_wrong_password(hostile_factory, mnt, vers):
    """The server maps a bad password to guest (as Samba's `map to guest =
    Bad Password` does, and as an impostor who cannot check it must):
    refused as a logon failure, not mounted as guest."""
    srv = hostile_factory()
    srv.bad_password_guest = True
    out = mount_fails(srv, mnt, OPTS + vers, password="not-the-password")
    assert re.search(r"mount error: .*logon failure: 127\.0\.0\.1 accepted user 'hostile' only "
                     r"as a guest", out), out
    assert "-o guest" in out, out
    assert not srv.requests_of(SMB2_TREE_CONNECT), "it went on to TREE_CONNECT as a guest"


@pytest.mark.parametrize("flag,what", [(SESSION_FLAG_IS_GUEST, "a guest"),
                                       (SESSION_FLAG_IS_NULL, "an anonymous session")],
                         ids=["guest", "null"])
@pytest.mark.parametrize("vers", VERS)
def test_guest_flag_after_right_password(hostile_factory, mnt, vers, flag, what):
    """A server that checked the password but answers IS_GUEST / IS_NULL
    derives no key on its side ([MS-SMB2] 3.3.5.5.3): refused too."""
    srv = hostile_factory()
    srv.session_flags = flag
    out = mount_fails(srv, mnt, OPTS + vers)
    assert f"only as {what}" in out, out


def test_guest_asked_for(hostile_factory):
    """-o guest (no password): a guest session is what was asked for."""
    srv = hostile_factory()
    m = SmbrdmaMount(f"//127.0.0.1:{srv.port}/{srv.share}", None, None,
                     options=OPTS + ["guest"]).start()
    try:
        with open(os.path.join(m.path, "hello.txt"), "rb") as f:
            assert f.read() == DEFAULT_FILES["hello.txt"]
    finally:
        m.stop(check=True)


@pytest.mark.parametrize("vers", VERS[:2])
def test_impostor_cannot_sign_final_session_setup(hostile_factory, mnt, vers):
    """An impostor that waves the user through as a plain user session
    (no guest flag) cannot sign the final SESSION_SETUP answer: on 3.x
    that is refused, whatever signing the server asks for later."""
    srv = hostile_factory()
    srv.impostor = True
    out = mount_fails(srv, mnt, OPTS + vers)
    assert "did not sign the final SESSION_SETUP response" in out, out
    assert not srv.requests_of(SMB2_TREE_CONNECT), "it went on to TREE_CONNECT"


def test_unsigned_final_session_setup_stripped(hostile_factory, mnt):
    """The real server's signature stripped from the final answer in the
    path: refused (3.1.1, signing not required by either side)."""
    srv = hostile_factory()
    srv.on(SMB2_SESSION_SETUP, unsigned(), when=final_setup, times=None)
    out = mount_fails(srv, mnt, OPTS)
    assert "did not sign the final SESSION_SETUP response" in out, out


def test_impostor_at_2_1_is_unprotected_and_says_so(hostile_factory, mount_factory):
    """SMB 2.1 has no proof to ask for: vers=2.1 is the user's choice, and
    the log says what it gives up."""
    srv = hostile_factory()
    srv.impostor = True
    m = mount_factory(srv, options=OPTS + ["vers=2.1"])
    assert os.listdir(m.path)
    assert re.search(r"offering SMB 2\.1 \(vers=\): its negotiation is not protected",
                     m.log_text()), m.log_text()[-2000:]


# ---- the dialect floor -----------------------------------------------------------

def _offered(srv):
    req = srv.requests_of(SMB2_NEGOTIATE)[0]
    count = struct.unpack_from("<H", req.body, 2)[0]
    return list(struct.unpack_from(f"<{count}H", req.body, 36))


def test_default_offers_smb3_only(hostile_factory, mnt):
    """A server that speaks only 2.0.2/2.1 is refused by default, and no 2.x
    dialect was offered."""
    srv = hostile_factory(dialects=(0x0202, 0x0210))
    out = mount_fails(srv, mnt, OPTS)
    assert re.search(r"refused every dialect offered \(3\.0.*3\.1\.1\)", out), out
    assert _offered(srv) == [0x0300, 0x0302, 0x0311]


def test_vers_2_1_when_named(hostile_factory, mount_factory):
    srv = hostile_factory(dialects=(0x0202, 0x0210))
    m = mount_factory(srv, options=OPTS + ["vers=2.1"])
    with open(os.path.join(m.path, "hello.txt"), "rb") as f:
        assert f.read() == DEFAULT_FILES["hello.txt"]
    assert _offered(srv) == [0x0210]
    assert "not protected against tampering" in m.log_text()


# ---- signed sessions: breaks and interim answers ----------------------------------

def credits_now(m):
    return ctl_stats(m)["channels"][0]["credits"]


def read_victim(m):
    fd = os.open(os.path.join(m.path, VICTIM), os.O_RDONLY | os.O_DIRECT)
    try:
        import mmap
        buf = mmap.mmap(-1, 4096)
        n = os.readv(fd, [buf])
        return bytes(buf[:n])
    finally:
        os.close(fd)


def is_victim_read(req):
    return req.command == SMB2_READ and req.path == VICTIM


def break_acks(srv):
    return [r for r in srv.requests_of(SMB2_OPLOCK_BREAK)]


@pytest.mark.parametrize("kind", ["break-bad-signature", "break-unsigned",
                                  "interim-bad-signature", "interim-unsigned"])
def test_signed_session_unverified_grants_nothing(hostile_factory, mount_factory, kind):
    """`sign`: a lease break or an interim answer with a signature that does
    not verify is ignored (no acknowledgment, no credits); an unsigned one,
    which [MS-SMB2] 3.2.5.1.3 exempts from signing, is honoured only as
    far as anyone in the path could do anyway: a break lowers caching
    (and is acknowledged, signed), credits go no further than the request
    asked.  A grant of 1000 credits must not reach the client's window."""
    srv = hostile_factory()
    m = mount_factory(srv, options=OPTS + ["sign"])
    assert read_victim(m) == HELLO
    before = credits_now(m)
    action = {
        "break-bad-signature": lease_break(credits=1000, corrupt=True),
        "break-unsigned": lease_break(credits=1000),
        "interim-bad-signature": pending(final_after=0.3, credits=1000, corrupt=True),
        "interim-unsigned": pending(final_after=0.3, credits=1000),
    }[kind]
    h = srv.on(SMB2_READ, action, when=is_victim_read)
    assert read_victim(m) == HELLO
    assert h.fired == 1
    time.sleep(0.5)
    after = credits_now(m)
    assert after < before + 200, f"credits went from {before} to {after}"
    log = m.log_text()
    if kind == "break-bad-signature":
        assert "bad signature on break notification" in log, log[-2000:]
        time.sleep(1)
        assert not break_acks(srv), "a forged break was acknowledged"
    elif kind == "break-unsigned":
        deadline = time.monotonic() + scaled(5)
        while not break_acks(srv) and time.monotonic() < deadline:
            time.sleep(0.1)
        acks = break_acks(srv)
        assert acks and all(a.flags & 0x8 for a in acks), "the acknowledgment must be signed"
    elif kind == "interim-bad-signature":
        assert "bad signature on interim response" in log, log[-2000:]
    assert not srv.violations, srv.violations


# ---- multichannel: the interface list --------------------------------------------

class Listener:
    """Counts connections to addr:port (and closes them at once)."""

    def __init__(self, addr, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted += 1
            c.close()

    def close(self):
        self.stop = True
        self.t.join(2)
        self.sock.close()


def is_iface_query(req):
    return req.command == SMB2_IOCTL and req.ctl_code == FSCTL_QUERY_NETWORK_INTERFACE_INFO


@pytest.mark.parametrize("tamper", [False, True], ids=["signed-list", "unsigned-list"])
def test_interface_list_must_verify(hostile_factory, mount_factory, tamper):
    """The server's interface list names 127.0.0.2: the client connects
    there only when the list's answer verifies (the request is signed even
    without `sign`, so the real server signs its answer).  An unsigned
    answer, as the path can forge it, opens no channel."""
    srv = hostile_factory()
    srv.interfaces = [("127.0.0.2", 10_000_000_000)]
    lst = Listener("127.0.0.2", srv.port)
    try:
        if tamper:
            srv.on(SMB2_IOCTL, unsigned(), when=is_iface_query, times=None)
        m = mount_factory(srv, options=OPTS + ["multichannel"])
        queries = lambda: [r for r in srv.requests_of(SMB2_IOCTL) if is_iface_query(r)]
        deadline = time.monotonic() + scaled(10)
        while not queries() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert queries(), "no interface list was asked for"
        assert all(q.flags & 0x8 for q in queries()), "the interface query went unsigned"
        time.sleep(scaled(2))
        if tamper:
            assert lst.accepted == 0, "a channel went where an unsigned list said"
            assert re.search(r"IOCTL response .* is not signed on a signed session",
                             m.log_text()), m.log_text()[-2000:]
        else:
            deadline = time.monotonic() + scaled(10)
            while lst.accepted == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert lst.accepted > 0, "the verified list was not followed (the test is blind)"
        assert os.listdir(m.path)
    finally:
        lst.close()


def test_quic_mount_binds_no_cleartext_rdma(hostile_factory, mount_factory, tmp_path):
    """A mount that came over QUIC (TLS) does not move to SMB Direct, which
    carries SMB in the clear, unless the session is sealed: the server's
    list names an RDMA interface, and no SMB Direct channel is tried."""
    srv = hostile_factory(dialects=(0x0311,))
    srv.interfaces = [("127.0.0.2", 40_000_000_000, NETIF_CAP_RDMA)]
    d = tmp_path / "certs"
    d.mkdir()
    certs = make_certs(str(d))
    relay = QuicRelay(certs.srv_pem, certs.srv_key, ("127.0.0.1", srv.port),
                      log_path=str(tmp_path / "relay.log")).start()
    try:
        m = mount_factory(srv, unc=f"//localhost/{srv.share}",
                          options=OPTS + ["transport=quic", f"quic_port={relay.port}",
                                          f"cafile={certs.ca}", "ip=127.0.0.1",
                                          "multichannel", "debug"])
        deadline = time.monotonic() + scaled(10)
        rx = re.compile(r"no SMB Direct channels: the mount came over QUIC")
        while not rx.search(m.log_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        log = m.log_text()
        assert rx.search(log), log[-2000:]
        assert "no SMB Direct channel to" not in log, log[-2000:]
        assert os.listdir(m.path)
        m.stop(check=True)
    finally:
        relay.stop()


# ---- a real Samba ------------------------------------------------------------------

def test_samba_map_to_guest_bad_password(samba_factory, mnt, mount_factory):
    """Samba with `map to guest = Bad Password` and a guest-ok share: a wrong
    password is a logon failure, never a guest mount; the right one mounts
    as the user."""
    srv = samba_factory(extra_global=["map to guest = Bad Password", "restrict anonymous = 0"],
                        extra_share=["guest ok = yes", "valid users ="])
    r, _ = run_mount_command(srv.unc, mnt, srv.user, "wrong-" + srv.password, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert re.search(r"mount error: .*logon failure: .* only as a guest", out), out
    assert not is_mounted(mnt)
    m = mount_factory(srv)
    with open(os.path.join(m.path, "ok.txt"), "w") as f:
        f.write("user\n")
    assert os.path.exists(os.path.join(srv.share_path, "ok.txt"))
