"""SMB 3.1.1 over QUIC (transport=quic, quic_port=, cafile=, certfile=,
keyfile=, transport=auto) against the private Samba through the QUIC-to-TCP
relay of tests/quic/ (lib/quic.py): Samba speaks no QUIC, so the relay
terminates QUIC + TLS 1.3 with a certificate made for the test and forwards
the stream over TCP. Certificates are made per test in a temp dir: a CA, a
server certificate for "localhost" from it, a self-signed one, a client one.

The mounts name the server "localhost" (what the certificate must carry)
and connect to 127.0.0.1 (ip=).
"""

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from lib.fileops import make_random_file, sha256
from lib.mount import MountFailed, SmbrdmaMount, daemon_binary, timeout_scale
from lib.netns import netns_factory  # noqa: F401
from lib.quic import QuicRelay, make_certs
from lib.samba import free_port
from lib.sessioninfo import client_report, ctl_binary, encrypted, only_session, signed

BIG_MIB = 128


@pytest.fixture
def certs(tmp_path):
    d = tmp_path / "certs"
    d.mkdir()
    return make_certs(str(d))


@pytest.fixture
def relay_factory(tmp_path):
    relays = []

    def make(cert, key, forward, **kw):
        r = QuicRelay(cert, key, forward, log_path=str(tmp_path / f"relay{len(relays)}.log"),
                      **kw)
        relays.append(r)
        return r.start()

    yield make
    for r in relays:
        r.stop()


def quic_opts(relay, certs, *extra):
    return ["transport=quic", f"quic_port={relay.port}", f"cafile={certs.ca}",
            "ip=127.0.0.1", *extra]


def mount_quic(mount_factory, samba, relay, certs, *extra, unc_host="localhost"):
    return mount_factory(samba, options=quic_opts(relay, certs, *extra),
                         unc=f"//{unc_host}/{samba.share}")


def channel_kinds(m):
    return [ch["transport"] for ch in client_report(m.path)["channels"]]


def failed_mount(samba, options, unc_host="localhost", timeout=30):
    """Mount that must fail: returns the daemon's log."""
    m = SmbrdmaMount(f"//{unc_host}/{samba.share}", samba.user, samba.password,
                     options=options, timeout=timeout)
    with pytest.raises(MountFailed) as e:
        m.start()
        m.stop(check=False)
    return str(e.value)


# ---- the transport ----------------------------------------------------------------


def test_quic_128mib_round_trip(samba, certs, relay_factory, mount_factory, tmp_path):
    """128 MiB in and out over transport=quic through the relay: identical
    sha256 on the mount, on the server's disk and back; the channel is QUIC."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    m = mount_quic(mount_factory, samba, relay, certs)
    assert channel_kinds(m) == ["quic"]
    src = make_random_file(str(tmp_path / "src.bin"), BIG_MIB)
    want = sha256(src)
    t = 600 * timeout_scale()
    subprocess.run(["cp", src, os.path.join(m.path, "big.bin")], check=True, timeout=t)
    assert sha256(os.path.join(samba.share_path, "big.bin")) == want
    back = str(tmp_path / "back.bin")
    subprocess.run(["cp", os.path.join(m.path, "big.bin"), back], check=True, timeout=t)
    assert sha256(back) == want


def test_quic_directory_operations(samba, certs, relay_factory, mount_factory):
    """mkdir, create, list, rename, stat, unlink, rmdir over QUIC, each seen
    on the server's disk."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    m = mount_quic(mount_factory, samba, relay, certs)
    d = os.path.join(m.path, "dir")
    os.mkdir(d)
    for i in range(20):
        with open(os.path.join(d, f"f{i}.txt"), "w") as f:
            f.write("x" * i)
    assert sorted(os.listdir(d)) == sorted(f"f{i}.txt" for i in range(20))
    os.rename(os.path.join(d, "f3.txt"), os.path.join(d, "three.txt"))
    assert os.stat(os.path.join(d, "three.txt")).st_size == 3
    assert os.path.exists(os.path.join(samba.share_path, "dir", "three.txt"))
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)
    assert not os.path.exists(os.path.join(samba.share_path, "dir"))


@pytest.mark.parametrize("option", ["sign", "seal"])
def test_quic_signed_and_sealed_sessions(samba, certs, relay_factory, mount_factory, tmp_path,
                                         option):
    """SMB signing and SMB encryption on top of QUIC: both ends say the
    session is signed (sign) or encrypted (seal), and data round-trips."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    m = mount_quic(mount_factory, samba, relay, certs, option)
    rep = client_report(m.path)
    assert [ch["transport"] for ch in rep["channels"]] == ["quic"]
    data = os.urandom(3 << 20)
    with open(os.path.join(m.path, "f.bin"), "wb") as f:
        f.write(data)
    with open(os.path.join(m.path, "f.bin"), "rb") as f:
        assert f.read() == data
    sess, tcons = only_session(samba, until=signed if option == "sign" else encrypted)
    if option == "sign":
        assert rep["signing"] is True
        assert sess["signing"]["degree"] != "none", sess
    else:
        assert rep["encryption"] is True
        # the session's own set-up goes before encryption starts: "partial"
        assert sess["encryption"]["degree"] in ("partial", "full"), sess
        assert tcons and all(t["encryption"]["degree"] == "full" for t in tcons), tcons


# ---- certificates ------------------------------------------------------------------


def test_quic_self_signed_certificate_refused(samba, certs, relay_factory, mount_factory):
    """A self-signed server certificate is refused, with the reason from
    GnuTLS's verification status, against both the test CA (cafile=) and the
    system trust store; cafile= naming that certificate makes it work."""
    relay = relay_factory(certs.self_pem, certs.self_key, (samba.host, samba.port))
    log = failed_mount(samba, quic_opts(relay, certs))
    assert "certificate for 'localhost' was refused" in log, log
    assert "NOT trusted" in log and "issuer is unknown" in log, log
    assert "TLS certificate of localhost" in log, log
    opts = [o for o in quic_opts(relay, certs) if not o.startswith("cafile=")]
    log = failed_mount(samba, opts)
    assert "system trust store" in log and "NOT trusted" in log, log
    m = mount_factory(samba, options=opts + [f"cafile={certs.self_pem}"],
                      unc=f"//localhost/{samba.share}")
    assert channel_kinds(m) == ["quic"]


def test_quic_name_mismatch_refused(samba, certs, relay_factory):
    """The certificate is valid for "localhost": a mount that names the
    server 127.0.0.1 is refused because the name does not match."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    log = failed_mount(samba, quic_opts(relay, certs), unc_host="127.0.0.1")
    assert "certificate for '127.0.0.1' was refused" in log, log
    assert "does not match" in log, log


def test_quic_client_certificate(samba, certs, relay_factory, mount_factory):
    """A relay that demands a client certificate from the test CA: without
    certfile= the handshake is refused (the server's alert is named); with
    certfile= and keyfile= the mount works."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port),
                          client_ca=certs.ca)
    log = failed_mount(samba, quic_opts(relay, certs))
    assert "localhost closed the connection with TLS alert" in log, log
    m = mount_quic(mount_factory, samba, relay, certs, f"certfile={certs.cli_pem}",
                   f"keyfile={certs.cli_key}")
    assert channel_kinds(m) == ["quic"]


def test_quic_mount_names_its_udp_port(samba, certs, relay_factory, mount_factory):
    """A transport=quic mount names the UDP port it connects to, not the
    TCP default: in the "connecting to" log line and in smbrdmactl debug
    (the text and the JSON "port")."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    m = mount_factory(samba, options=quic_opts(relay, certs),
                      unc=f"//localhost/{samba.share}", extra_args=["-v"])
    line = [ln for ln in m.log_text().splitlines() if "connecting to //localhost/" in ln]
    assert line and f" udp port {relay.port} (quic) as " in line[0], line
    rep = client_report(m.path)
    assert (rep["port"], rep["quic_port"]) == (relay.port, relay.port), rep
    text = subprocess.run([ctl_binary(), "debug", m.path], capture_output=True, text=True,
                          timeout=30 * timeout_scale(), check=True).stdout
    assert f"server    localhost udp port {relay.port} (quic), share " in text, text


# ---- transport=auto ----------------------------------------------------------------


def auto_mount_writes(mount_factory, samba, certs, tcp_port, quic_port, want, name):
    """A transport=auto mount whose first channel is `want` ("tcp" or
    "quic") and that writes a file the server then holds."""
    m = mount_factory(samba, options=["transport=auto", f"port={tcp_port}",
                                      f"quic_port={quic_port}", f"cafile={certs.ca}",
                                      "ip=127.0.0.1"],
                      unc=f"//localhost/{samba.share}", extra_args=["-v"])
    assert channel_kinds(m) == [want]
    assert f"connected over {want.upper()} first" in m.log_text()
    # Both ports named, whichever won.
    assert f" port {tcp_port} or udp port {quic_port} (quic) as " in m.log_text()
    rep = client_report(m.path)
    assert (rep["port"], rep["quic_port"]) == (tcp_port, quic_port), rep
    with open(os.path.join(m.path, name), "w") as f:
        f.write(f"over {want}")
    with open(os.path.join(samba.share_path, name)) as f:
        assert f.read() == f"over {want}"
    return m


@pytest.mark.parametrize("how", ["refused", "dropped"])
def test_auto_uses_quic_when_tcp_is_blocked(samba, certs, relay_factory, mount_factory, how):
    """transport=auto with the TCP port blocked: refused (nothing listens)
    or dropped (a listener whose accept queue is full: the kernel drops the
    SYNs and connect() hangs, as behind a firewall).  The QUIC contestant
    wins (quic_port= the relay's) and the mount works while TCP still waits."""
    relay = relay_factory(certs.srv_pem, certs.srv_key, (samba.host, samba.port))
    with contextlib.ExitStack() as stack:
        if how == "dropped":
            lsn = stack.enter_context(socket.socket())
            lsn.bind(("127.0.0.1", 0))
            lsn.listen(0)
            filler = [stack.enter_context(socket.socket()) for _ in range(2)]
            for f in filler:
                f.setblocking(False)
                f.connect_ex(lsn.getsockname())
            tcp_port = lsn.getsockname()[1]
        else:
            tcp_port = free_port()
        auto_mount_writes(mount_factory, samba, certs, tcp_port, relay.port, "quic", "a.txt")


def test_auto_uses_tcp_when_quic_is_blocked(samba, certs, mount_factory):
    """transport=auto with no relay (nothing on the UDP port): the TCP
    contestant wins and the mount works."""
    auto_mount_writes(mount_factory, samba, certs, samba.port, free_port(), "tcp", "b.txt")


# ---- loss --------------------------------------------------------------------------


def drop_everything(ns, dev):
    """Every packet leaving dev is lost: netem loss 100%, or, on a kernel
    without sch_netem, a pfifo queue of length 0 (which drops all it is
    given)."""
    r = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "netem", "loss",
                        "100%"], capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "pfifo", "limit",
                        "0"], check=True)


def test_quic_path_cut_mid_copy(netns_factory, certs, tmp_path, capsys):  # noqa: F811
    """The relay and Samba in a server namespace, the mount in a client
    namespace; mid-copy the link drops every packet (netem loss 100%, see
    drop_everything) for 3 s.  The copy either completes with the right bytes or fails with an
    error; it never hangs, and the mount answers afterwards."""
    if not shutil.which("tc"):
        pytest.skip("no tc (iproute2) on this machine: cannot cut the link")
    lab = netns_factory(links=1)
    srv = lab.samba
    addr = lab.server_addrs[0]
    relay = QuicRelay(certs.srv_pem, certs.srv_key, (addr, srv.port), host=addr, port=4433,
                      wrapper=lab.server_prefix, log_path=str(tmp_path / "relay.log")).start()
    wrapper = tmp_path / "mount-in-ns"
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(lab.client_prefix) +
                       f" {daemon_binary()} \"$@\"\n")
    wrapper.chmod(0o755)
    m = SmbrdmaMount(f"//localhost/{srv.share}", srv.user, srv.password,
                     options=["transport=quic", "quic_port=4433", f"cafile={certs.ca}",
                              f"ip={addr}"], binary=str(wrapper))
    m.start()
    try:
        src = make_random_file(str(tmp_path / "src.bin"), 64)
        dst = os.path.join(m.path, "cut.bin")
        cp = subprocess.Popen(["cp", src, dst], stderr=subprocess.PIPE)
        time.sleep(0.5)
        link = lab.link(1)
        ends = ((lab.client_ns, link.client_if), (lab.server_ns, link.server_if))
        for ns, dev in ends:
            drop_everything(ns, dev)
        t_cut = time.monotonic()
        # The cut holds: not even a TCP connection gets through now.
        probe = subprocess.run(lab.client_prefix + [
            "python3", "-c", f"import socket; socket.create_connection(('{addr}', {srv.port}), 1)"],
            capture_output=True)
        assert probe.returncode != 0, "the link still carries packets during the cut"
        time.sleep(max(0.0, 3 - (time.monotonic() - t_cut)))
        for ns, dev in ends:
            subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], check=True)
        try:
            _, err = cp.communicate(timeout=240 * timeout_scale())
        except subprocess.TimeoutExpired:
            cp.kill()
            pytest.fail(f"cp still running 240 s after the link came back; "
                        f"log:\n{m.log_text()[-3000:]}")
        # Either outcome is correct; the run's output says which one it saw
        # (past pytest's capture, so it shows when the test passes too).
        if cp.returncode == 0:
            assert sha256(os.path.join(srv.share_path, "cut.bin")) == sha256(src)
            outcome = "the copy completed, with the right bytes"
        else:
            assert err, "cp failed without saying why"
            outcome = f"the copy failed cleanly: {err.decode(errors='replace').strip()}"
        with capsys.disabled():
            print(f"\npath cut: {outcome}")
        # The mount still answers (a new connection if the old one died).
        done = threading.Event()
        out = {}

        def probe():
            try:
                with open(os.path.join(m.path, "after.txt"), "w") as f:
                    f.write("alive")
                out["ok"] = True
            except OSError as e:
                out["err"] = e
            done.set()

        threading.Thread(target=probe, daemon=True).start()
        assert done.wait(120 * timeout_scale()), "the mount hangs after the cut"
        assert out.get("ok"), f"the mount fails after the cut: {out.get('err')}; " \
                              f"log:\n{m.log_text()[-3000:]}"
    finally:
        m.stop(check=True)
        relay.stop()
