"""The test peers themselves: the private Samba answers smbclient, honours
per-test smb.conf lines, and the proxy is transparent until told to corrupt
a signature (which smbclient then rejects). No daemon involved."""

import os
import subprocess

from lib.fileops import make_random_file, sha256
from lib.samba import port_accepts
from lib.smbproxy import (SMB2_FLAGS_SIGNED, SMB2_NEGOTIATE, SMB2_READ, SMB2_SESSION_SETUP,
                          STATUS_PENDING)


def test_smbclient_lists_share(samba):
    assert samba.host == "127.0.0.1"
    r = samba.smbclient("ls")
    assert "blocks of size" in r.stdout
    # the share is a tmpfs of its own
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", samba.share_path],
                        capture_output=True, text=True).stdout.strip()
    assert fs == "tmpfs"


def test_smbclient_put_get(samba, tmp_path):
    src = make_random_file(str(tmp_path / "src"), 4)
    samba.smbclient(f"put {src} f; get f {tmp_path}/back")
    assert sha256(src) == sha256(str(tmp_path / "back"))
    assert sha256(os.path.join(samba.share_path, "f")) == sha256(src)


def test_wrong_password_rejected_by_samba(samba):
    r = subprocess.run(["smbclient", f"//127.0.0.1/{samba.share}", "-p", str(samba.port),
                        "-U", f"{samba.user}%wrong", "-s", "/dev/null", "-c", "ls"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "NT_STATUS_LOGON_FAILURE" in r.stdout + r.stderr


def test_extra_conf_lines_and_stop(samba_factory):
    srv = samba_factory(extra_global=["server signing = mandatory",
                                      "server max protocol = SMB3_00"])
    conf = open(srv.conf_path).read()
    assert "server signing = mandatory" in conf
    r = subprocess.run(["testparm", "-s", "--parameter-name", "server signing", srv.conf_path],
                       capture_output=True, text=True)
    assert r.stdout.strip().lower() in ("mandatory", "required")
    srv.smbclient("ls", extra_args=["-m", "SMB3"])
    port, share = srv.port, srv.share_path
    srv.stop()
    assert not port_accepts(port)
    assert subprocess.run(["findmnt", share], capture_output=True).returncode != 0


def test_proxy_transparent_and_signed(samba_factory, proxy_factory, tmp_path):
    srv = samba_factory(extra_global=["server signing = mandatory"])
    px = proxy_factory(srv)
    src = make_random_file(str(tmp_path / "src"), 8)
    srv.smbclient(f"put {src} f; get f {tmp_path}/back", port=px.port)
    assert sha256(src) == sha256(str(tmp_path / "back"))
    assert px.connections >= 1
    assert px.dialects, "proxy saw no NEGOTIATE response"
    late = [r for r in px.responses if r[0] not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP)
            and r[2] != STATUS_PENDING]  # interim responses are never signed
    assert late and all(f & SMB2_FLAGS_SIGNED for _, f, _ in late)
    assert px.responses_for(SMB2_READ)


def test_proxy_corruption_detected_by_smbclient(samba_factory, proxy_factory, tmp_path):
    srv = samba_factory(extra_global=["server signing = mandatory"])
    px = proxy_factory(srv)
    src = make_random_file(str(tmp_path / "src"), 1)
    srv.smbclient(f"put {src} f", port=px.port)
    px.corrupt_next_signature(SMB2_READ)
    r = srv.smbclient(f"get f {tmp_path}/back", port=px.port, check=False)
    assert px.corrupted == 1
    assert r.returncode != 0
    assert "signature" in (r.stdout + r.stderr).lower()
