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
import time

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


def only_session(srv, until=None, timeout=10):
    """(session, [tcons of srv's share in that session]) of the one
    authenticated session on srv; fails if there is not exactly one.

    A session's cipher shows "-" until smbd has stored that it processed an
    encrypted request (see use_the_tree()), and smbd may store it after its
    reply.  until(sess, tcons), if given, is what the caller expects:
    smbstatus is asked again (within timeout seconds) until it holds, and
    the last answer is returned for the caller's own assertions."""
    deadline = time.monotonic() + timeout * timeout_scale()
    while True:
        st = smbstatus(srv)
        sessions = [s for s in st.get("sessions", {}).values() if s.get("username") == srv.user]
        assert len(sessions) == 1, f"want one session of {srv.user}, smbstatus says:\n" \
                                   f"{json.dumps(st.get('sessions'), indent=1)}"
        sess = sessions[0]
        tcons = [t for t in st.get("tcons", {}).values()
                 if t.get("session_id") == sess["session_id"] and t.get("service") == srv.share]
        if until is None or until(sess, tcons) or time.monotonic() > deadline:
            return sess, tcons
        time.sleep(0.1)


def use_the_tree(m):
    """Send requests on mount m's tree connect (a file made and removed):
    smbd marks a session encrypted or signed in what smbstatus reads only
    once it has processed such a request, and a fresh mount may have sent
    none yet (the kernel had what it asked for)."""
    p = os.path.join(m.path, f".smbstatus-probe-{os.getpid()}")
    with open(p, "wb") as f:
        f.write(b"x")
    os.unlink(p)


def encrypted(sess, tcons):
    """for only_session(until=): smbd has stored the session's cipher, and
    the tree connect's."""
    return sess["encryption"]["cipher"] != "-" and bool(tcons) and \
        all(t["encryption"]["degree"] != "none" for t in tcons)


def signed(sess, tcons):
    """for only_session(until=): smbd has stored the session's signing."""
    return sess["signing"]["cipher"] != "-" and bool(tcons) and \
        all(t["signing"]["degree"] != "none" for t in tcons)
