"""What each side says a session's signing and encryption are: the client's
own report (smbrdmactl debug --json) and the server's (smbstatus --json of
the test's private Samba).

smbstatus --json (Samba 4.17) lists "sessions" and "tcons", each with
"encryption" and "signing" objects {"cipher": NAME, "degree": DEGREE}:
DEGREE is "full" (every packet of the session or tree connect so far was
signed/encrypted), "partial" (some were) or "none" (then cipher is "-").
Samba names: signing "HMAC-SHA256", "AES-128-CMAC", "AES-128-GMAC";
encryption "AES-128-CCM", "AES-128-GCM", "AES-256-CCM", "AES-256-GCM".
4.17 prints "???" as a tree connect's cipher for the AES-256 ciphers (its
tcon code knows only the 128-bit ones), so tests take the cipher from the
session entry and only the degree from the tcon entry.
"""

import json
import os
import subprocess

from .mount import build_dir, timeout_scale

# smbrdmactl's signing_algorithm -> Samba's name for it
SAMBA_SIGNING_NAME = {"HMAC-SHA256": "HMAC-SHA256", "AES-CMAC": "AES-128-CMAC",
                      "AES-GMAC": "AES-128-GMAC"}
CIPHERS = ("AES-128-CCM", "AES-128-GCM", "AES-256-CCM", "AES-256-GCM")


def ctl_binary():
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        return "/sbin/smbrdmactl"
    return os.path.join(build_dir(), "tools", "smbrdmactl")


def client_report(mountpoint):
    """smbrdmactl debug MOUNTPOINT --json, parsed."""
    r = subprocess.run([ctl_binary(), "debug", mountpoint, "--json"], capture_output=True,
                       text=True, timeout=30 * timeout_scale())
    assert r.returncode == 0, f"smbrdmactl debug {mountpoint} failed: {r.stderr}"
    return json.loads(r.stdout)


def smbstatus(srv):
    """smbstatus --json of the private Samba srv, parsed."""
    r = subprocess.run(["smbstatus", "-s", srv.conf_path, "--json"], capture_output=True,
                       text=True, timeout=60 * timeout_scale())
    assert r.returncode == 0, f"smbstatus failed ({r.returncode}):\n{r.stdout}{r.stderr}"
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise AssertionError(f"smbstatus --json printed no JSON:\n{r.stdout}{r.stderr}") \
            from None


def only_session(srv):
    """(session, [tcons of srv's share in that session]) of the one
    authenticated session on srv; fails if there is not exactly one."""
    st = smbstatus(srv)
    sessions = [s for s in st.get("sessions", {}).values() if s.get("username") == srv.user]
    assert len(sessions) == 1, f"want one session of {srv.user}, smbstatus says:\n" \
                               f"{json.dumps(st.get('sessions'), indent=1)}"
    sess = sessions[0]
    tcons = [t for t in st.get("tcons", {}).values()
             if t.get("session_id") == sess["session_id"] and t.get("service") == srv.share]
    return sess, tcons
