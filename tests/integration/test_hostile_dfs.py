"""DFS referrals from a hostile server (tests/lib/hostile_server.py) against the real daemon.

The mount's share is a DFS root (srv.dfs_root): a CREATE of the link
LINK or of anything below it answers STATUS_PATH_NOT_COVERED; the client
then asks IPC$ for a referral (FSCTL_DFS_GET_REFERRALS), and the answer is
the test's (srv.referral, built with dfs_referral()).  What must hold
(client/dfs_ns.h, client/proto/dfs.h):
  - a malformed referral (string offset past the end, more referrals
    counted than sent, PathConsumed odd or longer than the path, a string
    with no NUL): the call fails with EBADMSG, the log says "DFS referral
    for ...: malformed answer";
  - PathConsumed ending inside a component: EBADMSG, "ending inside a
    name: malformed"; PathConsumed of the share only: EREMOTE, "covers only
    the share";
  - a referral whose only target is the namespace's root share: EBADMSG,
    "points back into the namespace";
  - the referral IOCTL failing: EREMOTE, "the path is not followed";
  - a target where nothing listens: its error (ECONNREFUSED);
  - a target that answers PATH_NOT_COVERED too (and one that refers back
    to the root, round and round): bounded, EREMOTE;
and, after each, a path outside the link still works, and the daemon has
not crashed (the mount_factory teardown checks that).

Targets: the client connects to a target on the mount's port, so a
target that answers is a second HostileServer on another loopback address
(127.0.0.2) and the root's port; one that does not is an address of
127.0.0.0/8 where nothing listens on that port (127.0.0.77: nothing binds
it here).  No names to resolve: every server is an address.
"""

import errno
import os
import re
import socket

import pytest

from lib.hostile_server import (
    DEFAULT_FILES, STATUS_OBJECT_PATH_NOT_FOUND, HostileServer, dfs_referral)
from test_hostile import errname, run_op, scaled, wait_log

OPTS = ["timeout=5", "actimeo=0"]
ROOT = "127.0.0.1"
OTHER = "127.0.0.2"        # a second server, on the root's port
NOBODY = "127.0.0.77"      # nothing listens there
LINK = "link"
HELLO = DEFAULT_FILES["hello.txt"]
INSIDE = b"inside the link's target\n"
LIMIT = 30                 # seconds a failing call may take (a referral, a connect)


# ---- fixtures and helpers ----------------------------------------------------------

@pytest.fixture
def servers():
    """make(**kw) -> a started HostileServer; all stopped after the test
    (after the mounts: ask for this fixture before mount_factory)."""
    made = []

    def make(**kw):
        s = HostileServer(**kw).start()
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def dfs_root(servers, referral):
    """The mount's server: a DFS root with the link LINK; referral(path) ->
    the answer's bytes or an NTSTATUS."""
    srv = servers()
    srv.dfs_root = True
    srv.dfs_links = (LINK,)
    srv.referral = referral
    return srv


def target(servers, root, share="target", host=OTHER):
    """A second server on the root's port at another address."""
    return servers(host=host, port=root.port, share=share, files={"inside.txt": INSIDE})


def mount(mount_factory, srv):
    """-v: the links followed are logged at LOG_INFO."""
    return mount_factory(srv, options=OPTS, extra_args=["-v"])


def refer(targets, **knobs):
    """srv.referral answering every path with these targets (and knobs)."""
    return lambda path: dfs_referral(path, targets, **knobs)


def unc(host, share, *rest):
    return "\\" + "\\".join((host, share) + rest)


def nothing_listens(port):
    s = socket.socket()
    try:
        return s.connect_ex((NOBODY, port)) == errno.ECONNREFUSED
    finally:
        s.close()


def expect_errno(m, rel, want, op=os.stat):
    """op(MOUNT/rel) must fail with errno want, within LIMIT seconds."""
    res, err, secs = run_op(lambda: op(os.path.join(m.path, rel)), scaled(LIMIT))
    got = err.errno if err is not None else None
    assert got == want, (f"{op.__name__}({rel}): {errname(got)} after {secs:.1f}s "
                         f"(result {res!r}), want {errname(want)}; log tail:\n"
                         f"{m.log_text()[-2500:]}")


def assert_serving(m):
    """The mount still serves what is not below the link."""
    res, err, _ = run_op(lambda: open(os.path.join(m.path, "hello.txt"), "rb").read(),
                         scaled(LIMIT))
    assert err is None and res == HELLO, f"hello.txt after the failure: {err or res!r}"
    res, err, _ = run_op(lambda: os.listdir(m.path), scaled(LIMIT))
    assert err is None and "hello.txt" in res, f"ls of the root: {err or res!r}"


def check_bad(servers, mount_factory, referral, want, log_rx):
    """The whole scenario: a mount, stat and ls below the link fail with
    want, the log says log_rx, the referral was asked for, the rest works."""
    srv = dfs_root(servers, referral)
    m = mount(mount_factory, srv)
    assert_serving(m)
    expect_errno(m, f"{LINK}/inside.txt", want)
    expect_errno(m, LINK, want, op=os.listdir)
    text = wait_log(m, log_rx)
    print("log:", re.search(f".*(?:{log_rx}).*", text).group(0))
    assert srv.referrals, "the client never asked for a referral"
    assert all(p.lower().startswith(unc(ROOT, "share", LINK).lower()) for p in srv.referrals), \
        srv.referrals
    assert_serving(m)
    return srv, m


MALFORMED = r"DFS referral for \\127\.0\.0\.1\\share\\link\S*: malformed answer"


# ---- the good answers: what the bad ones are measured against -----------------------

@pytest.mark.parametrize("version", [3, 4])
def test_good_referral_reaches_the_target(servers, mount_factory, version):
    """A well-formed referral to a second server: the link's files are
    that server's (this is what proves dfs_referral() builds what the
    client decodes, so that the failures below are the knobs' doing)."""
    srv = dfs_root(servers, None)
    tgt = target(servers, srv)
    srv.referral = refer([unc(OTHER, "target")], version=version)
    m = mount(mount_factory, srv)
    res, err, _ = run_op(lambda: os.listdir(os.path.join(m.path, LINK)), scaled(LIMIT))
    assert err is None and "inside.txt" in res, f"ls link: {err or res!r}\n{m.log_text()[-2500:]}"
    with open(os.path.join(m.path, LINK, "inside.txt"), "rb") as f:
        assert f.read() == INSIDE
    wait_log(m, r"DFS link link -> \\\\127\.0\.0\.2\\target \(target 1 of 1\)")
    assert tgt.connections >= 1
    assert_serving(m)


def test_unreachable_first_target_falls_over_to_the_second(servers, mount_factory):
    """Targets in the server's order: the first where nothing listens, the
    second a server: the link works through the second."""
    srv = dfs_root(servers, None)
    target(servers, srv)
    assert nothing_listens(srv.port), f"something listens on {NOBODY}:{srv.port}"
    srv.referral = refer([unc(NOBODY, "share"), unc(OTHER, "target")])
    m = mount(mount_factory, srv)
    res, err, _ = run_op(lambda: os.listdir(os.path.join(m.path, LINK)), scaled(LIMIT))
    assert err is None and "inside.txt" in res, f"ls link: {err or res!r}\n{m.log_text()[-2500:]}"
    wait_log(m, r"DFS link link: target \\\\127\.0\.0\.77\\share: ")
    wait_log(m, r"DFS link link -> \\\\127\.0\.0\.2\\target \(target 2 of 2\)")
    assert_serving(m)


# ---- malformed referrals: EBADMSG ------------------------------------------------------

@pytest.mark.parametrize("knobs", [
    pytest.param({"bad_offset": True}, id="string-offset-past-end"),
    pytest.param({"count": 8}, id="count-beyond-entries"),
    pytest.param({"no_nul": True}, id="string-without-nul"),
    pytest.param({"path_consumed": 2 * len(unc(ROOT, "share", LINK)) - 1}, id="consumed-odd"),
    pytest.param({"path_consumed": 2 * len(unc(ROOT, "share", LINK, "inside.txt")) + 2},
                 id="consumed-too-long"),
])
def test_malformed_referral(servers, mount_factory, knobs):
    check_bad(servers, mount_factory, refer([unc(OTHER, "target")], **knobs),
              errno.EBADMSG, MALFORMED)


def test_consumed_ends_mid_component(servers, mount_factory):
    """PathConsumed "\\127.0.0.1\\share\\li": not a whole component."""
    check_bad(servers, mount_factory,
              refer([unc(OTHER, "target")], consumed=unc(ROOT, "share", "li")),
              errno.EBADMSG,
              r"DFS referral for \S+ covers \d+ bytes, ending inside a name: malformed")


def test_consumed_only_the_root(servers, mount_factory):
    """PathConsumed "\\127.0.0.1\\share": no link below the root covers the
    path after all: its PATH_NOT_COVERED stands."""
    check_bad(servers, mount_factory,
              refer([unc(OTHER, "target")], consumed=unc(ROOT, "share")),
              errno.EREMOTE,
              r"DFS referral for \S+ covers only the share \(\d+ bytes\): no link below the root")


def test_target_points_back_into_the_namespace(servers, mount_factory):
    """The only target is the root share itself (same address and share)."""
    check_bad(servers, mount_factory, refer([unc(ROOT, "share")]), errno.EBADMSG,
              r"target \\\\127\.0\.0\.1\\share points back into the namespace")


def test_referral_error_status(servers, mount_factory):
    """FSCTL_DFS_GET_REFERRALS fails (Samba's answer for a link with no
    target): the PATH_NOT_COVERED stands."""
    check_bad(servers, mount_factory, lambda path: STATUS_OBJECT_PATH_NOT_FOUND,
              errno.EREMOTE,
              r"DFS referral for \S+: STATUS_OBJECT_PATH_NOT_FOUND: the path is not followed")


def test_target_does_not_answer(servers, mount_factory):
    """The only target is an address where nothing listens on the port."""
    srv = dfs_root(servers, refer([unc(NOBODY, "share")]))
    assert nothing_listens(srv.port), f"something listens on {NOBODY}:{srv.port}"
    m = mount(mount_factory, srv)
    expect_errno(m, f"{LINK}/inside.txt", errno.ECONNREFUSED)
    expect_errno(m, LINK, errno.ECONNREFUSED, op=os.listdir)
    text = wait_log(m, r"DFS link link: target \\\\127\.0\.0\.77\\share: ")
    print("\n".join(ln for ln in text.splitlines() if "DFS" in ln))
    assert srv.referrals
    assert_serving(m)


# ---- PATH_NOT_COVERED for ever: bounded, EREMOTE ------------------------------------------

def test_target_answers_path_not_covered_too(servers, mount_factory):
    """The referral is good, but its target (not a DFS share) answers
    PATH_NOT_COVERED to everything: EREMOTE, without asking again and
    again."""
    srv = dfs_root(servers, None)
    tgt = target(servers, srv)
    tgt.dfs_links = ("",)
    srv.referral = refer([unc(OTHER, "target")])
    m = mount(mount_factory, srv)
    expect_errno(m, f"{LINK}/inside.txt", errno.EREMOTE)
    expect_errno(m, LINK, errno.EREMOTE, op=os.listdir)
    text = wait_log(m, r"DFS link link -> \\\\127\.0\.0\.2\\target")
    print("\n".join(ln for ln in text.splitlines() if "DFS" in ln or "NOT_COVERED" in ln))
    assert 1 <= len(srv.referrals) <= 8, srv.referrals
    assert_serving(m)


def test_referrals_round_and_round(servers, mount_factory):
    """Two DFS roots whose links refer to each other: \\127.0.0.1\\share\\link
    -> \\127.0.0.2\\target\\sub, whose link sub -> \\127.0.0.1\\share\\link
    again.  The client must give up after a few referrals (EREMOTE), not
    follow the circle for ever.  (The servers stop answering referrals
    after STOP of them so that a client that does not stop cannot take the
    machine down with it; the assertion on the count still fails then.)"""
    STOP = 40
    srv = dfs_root(servers, None)
    tgt = target(servers, srv)
    tgt.dfs_root = True
    tgt.dfs_links = ("sub",)

    def capped(targets):
        def f(path):
            if len(srv.referrals) + len(tgt.referrals) > STOP:
                return STATUS_OBJECT_PATH_NOT_FOUND
            return dfs_referral(path, targets)
        return f
    srv.referral = capped([unc(OTHER, "target", "sub")])
    tgt.referral = capped([unc(ROOT, "share", LINK)])
    m = mount(mount_factory, srv)
    res, err, secs = run_op(lambda: os.stat(os.path.join(m.path, LINK, "inside.txt")),
                            scaled(LIMIT * 2))
    asked = len(srv.referrals) + len(tgt.referrals)
    got = err.errno if err is not None else None
    assert asked <= 8, (f"{asked} referrals asked ({srv.referrals[:3]}... / "
                        f"{tgt.referrals[:3]}...): the client follows the circle; the call "
                        f"ended with {errname(got)} after {secs:.1f}s; log tail:\n"
                        f"{m.log_text()[-2500:]}")
    assert got == errno.EREMOTE, f"{errname(got)} after {secs:.1f}s\n{m.log_text()[-2500:]}"
    assert_serving(m)
