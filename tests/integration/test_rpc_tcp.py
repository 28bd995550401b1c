"""client/rpc_tcp.c (DCE/RPC over TCP with NTLMSSP) against Samba's samba-dcerpcd.

samba-dcerpcd serves TCP endpoints only when it runs standalone ("rpc start
on demand helpers = no", started beside smbd with --libexec-rpcds); its
endpoint mapper needs port 135, so root.  Everything binds one loopback
address of its own (127.77.13.x), never anything else.

tests/rpc_tcp_probe (see its header) asks the endpoint mapper for lsarpc's
port, then asks again three times over a connection bound with NTLMSSP at
the level under test: each answer is signed (5) or sealed (6) by Samba and
checked by the client, each request checked by Samba.  Then it binds to
lsarpc at that level and calls LsarOpenPolicy2 and LsarLookupSids on
S-1-5-32-544.  Samba's LSA server refuses every call that does not come over
a named pipe or ncalrpc (DCERPC_FAULT_ACCESS_DENIED, once the request has
passed the auth checks and been dispatched): the test then checks in
Samba's log that the call reached lsarpc's OpenPolicy2 under our NTLMSSP
session with the protection asked for.  A wrong password must fail at the
first call with a clear message, and Samba must log the failed logon.
"""

import os
import re
import signal
import subprocess
import time

import pytest

from lib.mount import build_dir, timeout_scale
from lib.samba import SambaServer, SambaError, port_accepts

DCERPCD = "/usr/libexec/samba/samba-dcerpcd"
ADDRS = [f"127.77.13.{i}" for i in range(5, 25)]


def probe_path():
    path = os.path.join(build_dir(), "tests", "rpc_tcp_probe")
    assert os.access(path, os.X_OK), f"{path} not built"
    return path


@pytest.fixture(scope="module")
def dcerpcd():
    if os.geteuid() != 0:
        pytest.skip("samba-dcerpcd's endpoint mapper needs port 135: run as root")
    # samba is a package the project installs (tools/install-deps), not a
    # machine feature: its absence fails the test rather than skipping it
    assert os.access(DCERPCD, os.X_OK), \
        f"{DCERPCD} is not installed (Debian package samba; tools/install-deps installs it)"
    addr = next((a for a in ADDRS if not port_accepts(135, a)), None)
    if addr is None:
        pytest.skip("port 135 is taken on every candidate loopback address")
    srv = SambaServer(host=addr, interfaces=[f"{addr}/8"], log_level=5,
                      extra_global=["rpc start on demand helpers = no"])
    srv.start()
    proc = None
    try:
        out = open(os.path.join(srv.dir, "log", "dcerpcd.stdout"), "wb")
        # its own session: stop() below kills the group; lib.samba also
        # kills whatever names our smb.conf on its command line
        proc = subprocess.Popen([DCERPCD, "-s", srv.conf_path, "--foreground",
                                 "--libexec-rpcds", "--debug-stdout", "--no-process-group"],
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + 30 * timeout_scale()
        while not port_accepts(135, addr):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SambaError(f"samba-dcerpcd not listening on {addr}:135:\n"
                                 + srv.log_tail())
            time.sleep(0.1)
        srv.dcerpcd = proc
        yield srv
    finally:
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        srv.stop()


def samba_log(srv):
    """The log file of smb.conf, which the rpcd_* workers write ("" until
    the first one has)."""
    try:
        with open(os.path.join(srv.dir, "log", "smbd.log"), "r", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def run_probe(srv, level, password=None):
    """Runs the probe; returns (CompletedProcess, what Samba logged meanwhile)."""
    before = len(samba_log(srv))
    r = subprocess.run([probe_path(), srv.host, srv.user,
                        srv.password if password is None else password, str(level)],
                       capture_output=True, text=True, timeout=60 * timeout_scale())
    time.sleep(0.3)  # the workers' last lines
    return r, samba_log(srv)[before:]


@pytest.mark.parametrize("level,protection", [(5, "SIGN"), (6, "SEAL")])
def test_ntlmssp_levels(dcerpcd, level, protection):
    r, log = run_probe(dcerpcd, level)
    out = r.stdout.splitlines()
    assert r.returncode in (0, 3), r.stdout + r.stderr
    m = re.fullmatch(r"port (\d+)", out[0])
    assert m, r.stdout
    port = int(m.group(1))
    assert 1024 <= port < 65536
    # three authenticated ept_map calls on one connection agree with the
    # unauthenticated one
    assert out[1:4] == [f"epm-auth port {port}"] * 3, r.stdout + r.stderr
    # Samba bound the epm connection and the lsarpc one under our NTLMSSP
    # session with the protection asked for
    authz = [x for x in log.splitlines() if '"type": "Authorization"' in x
             and '"authType": "NTLMSSP"' in x]
    assert any(f'"localAddress": "ipv4:{dcerpcd.host}:135"' in x
               and f'"transportProtection": "{protection}"' in x for x in authz), log[-4000:]
    assert any(f'"localAddress": "ipv4:{dcerpcd.host}:{port}"' in x
               and f'"transportProtection": "{protection}"' in x
               and f'"account": "{dcerpcd.user}"' in x for x in authz), log[-4000:]
    if r.returncode == 0:
        assert out[4:] == ["name BUILTIN\\Administrators"] * 2, r.stdout
    else:
        # Samba's LSA refuses TCP: the call got past the signature (or
        # seal) check and was dispatched to OpenPolicy2 (opnum 0x2c), which
        # faulted; the connection was not dropped for a bad signature
        assert out[4:] == ["lsa-fault 0x00000005"], r.stdout + r.stderr
        assert "dcerpc fault in call lsarpc:2c - DCERPC_FAULT_ACCESS_DENIED" in log, log[-4000:]


def test_no_auth_endpoint_mapper(dcerpcd):
    r, _ = run_probe(dcerpcd, 0)
    out = r.stdout.splitlines()
    assert r.returncode == 3, r.stdout + r.stderr
    port = int(out[0].split()[1])
    assert out[1:4] == [f"epm-auth port {port}"] * 3
    assert out[4] == "lsa-fault 0x00000005"


@pytest.mark.parametrize("level", [5, 6])
def test_wrong_password(dcerpcd, level):
    r, log = run_probe(dcerpcd, level, password="not-" + dcerpcd.password)
    assert r.returncode == 1, r.stdout + r.stderr
    # the unauthenticated ept_map still works; the first authenticated call
    # fails with a clear error, nothing crashes or hangs
    assert r.stdout.startswith("port "), r.stdout
    assert "epm-auth" not in r.stdout
    err = r.stderr.strip()
    assert err.startswith("error: ept_map (authenticated): "), err
    assert ("fault 0x00000005 (access denied: authentication failed?)" in err
            or "the server closed the connection" in err), err
    assert "NT_STATUS_WRONG_PASSWORD" in log, log[-4000:]
