"""SMB over QUIC for tests: throwaway certificates and the QUIC-to-TCP relay.

No SMB server here speaks QUIC, so the tests put tests/quic/relay.c (built
as <build>/tests/quic/smbquic-relay, never installed) in front of Samba: it
terminates QUIC + TLS 1.3 with a test certificate and forwards the stream
over TCP. It is test infrastructure, the only server-side code in the
project.

    certs = make_certs(tmpdir)       # CA, a server cert for "localhost"
                                     # signed by it, a self-signed one
    with QuicRelay(certs.srv_pem, certs.srv_key, forward=("127.0.0.1", srv.port)) as r:
        r.port                       # UDP port on 127.0.0.1
    QuicRelay(..., mode="tcp")       # a plain TCP forwarder on the same hop

A relay may run in a network namespace: wrapper=["nsenter", "--net=..."],
host= the address it listens on there.
"""

import os
import subprocess
from types import SimpleNamespace

from lib.mount import build_dir
from lib.samba import free_port


def relay_binary():
    return os.path.join(build_dir(), "tests", "quic", "smbquic-relay")


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certs(d, name="localhost"):
    """Write into directory d: ca.pem/ca.key (a CA), srv.pem/srv.key (for
    DNS name `name`, issued by the CA), self.pem/self.key (self-signed for
    the same name), cli.pem/cli.key (a client certificate from the CA).
    Returns their paths."""
    p = lambda n: os.path.join(d, n)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.pem"),
             "-subj", "/CN=smbrdma test CA", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for stem, cn, ext in (("srv", name, f"subjectAltName=DNS:{name}\nextendedKeyUsage=serverAuth\n"),
                          ("cli", "smbrdma test client", "extendedKeyUsage=clientAuth\n")):
        with open(p(stem + ".ext"), "w") as f:
            f.write(ext)
        _openssl("req", *ec, "-keyout", p(stem + ".key"), "-out", p(stem + ".csr"),
                 "-subj", f"/CN={cn}")
        _openssl("x509", "-req", "-in", p(stem + ".csr"), "-CA", p("ca.pem"), "-CAkey",
                 p("ca.key"), "-CAcreateserial", "-out", p(stem + ".pem"), "-days", "2",
                 "-extfile", p(stem + ".ext"))
    _openssl("req", "-x509", *ec, "-keyout", p("self.key"), "-out", p("self.pem"),
             "-subj", f"/CN={name}", "-days", "2", "-addext", f"subjectAltName=DNS:{name}")
    return SimpleNamespace(ca=p("ca.pem"), srv_pem=p("srv.pem"), srv_key=p("srv.key"),
                           self_pem=p("self.pem"), self_key=p("self.key"),
                           cli_pem=p("cli.pem"), cli_key=p("cli.key"))


class QuicRelay:
    def __init__(self, cert, key, forward, mode="quic", host="127.0.0.1", port=None,
                 client_ca=None, wrapper=(), log_path=None):
        self.cert, self.key, self.forward = cert, key, forward
        self.mode, self.host, self.port = mode, host, port
        self.client_ca, self.wrapper = client_ca, list(wrapper)
        self.log_path = log_path
        self.proc = None

    def start(self):
        binary = relay_binary()
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{binary} is not built (meson needs ngtcp2 + GnuTLS: "
                               "tools/install-deps installs ngtcp2 1.11)")
        if self.port is None:
            self.port = free_port()  # free for TCP; the relay's UDP port is as likely free
        argv = self.wrapper + [binary, "--mode", self.mode, "--listen",
                               f"{self.host}:{self.port}",
                               "--forward", f"{self.forward[0]}:{self.forward[1]}"]
        if self.mode == "quic":
            argv += ["--cert", self.cert, "--key", self.key]
            if self.client_ca:
                argv += ["--client-ca", self.client_ca]
        err = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                                     stdin=subprocess.DEVNULL)
        if self.log_path:
            err.close()
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.stop()
            raise RuntimeError(f"relay did not start: {argv}")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
