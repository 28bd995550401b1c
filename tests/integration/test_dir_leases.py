"""Issue 19: directory leases against Samba 4.22 (`smb3 directory leases`,
auto = on without clustering; granted only to a client whose NEGOTIATE
says SMB2_GLOBAL_CAP_DIRECTORY_LEASING).

A directory open carries an R|H lease keyed by the directory (its nodeid
and the mount's ClientGuid); while the lease has R the kernel keeps the
listing across opens (cache_readdir, keep_cache).  Samba breaks R|H to none,
without waiting for the acknowledgment, on every create, rename or unlink
in the directory by another client.  The client then drops the kernel's
listing and attributes of the directory and expires the kernel's entries
for its children (fuse/cache.c), and only then acknowledges.

Mount A caches for a minute (actimeo=60: entries and attributes), and the
tests first show that it does: a file made or removed behind Samba's back
(in the share's directory on the server, which breaks nothing) is not seen
by A.  Only the break can explain A seeing B's change at once.  Samba does
not hold B's call for the acknowledgment, so the tests wait for A's
acknowledgment (lease_break_acks of smbrdmactl stats), which A sends only
once its caches are gone.

Shown to fail without the break handling, with local patches that were
not committed: smbfs_on_lease_break() acknowledging at once and dropping
nothing made each of test_change_on_b_breaks_a_lease[create|rename|unlink]
fail on A's listing (still ghost, keep, old); the listing dropped but the
entries under the directory not expired (fuse/cache.c expire_children()
left out) made them fail on A's stat of "ghost" (create) and of "old"
(rename, unlink), which still succeeded.  Without DIRECTORY_LEASING in the
client's NEGOTIATE (as before issue 19) Samba grants no directory lease:
test_directory_lease_held and the three above failed on the empty lease
of the open.

A's negative lookups: the client answers ENOENT with an error, which the
kernel does not cache, and forgets the missing names it keeps itself for a
moment (fuse/negcache.h) at any break, so a name A looked up before B made
it is asked for again; the tests check that too.

Without a lease (`smb3 directory leases = no`, `smb2 leases = no`, or the
mount option nolease) a directory open has none in smbstatus, nothing of
the listing is kept across opens, and A sees each change of B's at once.
"""

import os
import subprocess
import time
import uuid

import pytest

from lib.fileops import ctl_stats, request_counts
from lib.fileops import lease_stats as stats
from lib.mount import timeout_scale
from lib.sessioninfo import smbstatus


def wait_for_acks(m, n, timeout=20):
    """Wait until mount m has acknowledged n lease breaks (and Samba took
    the acknowledgments); returns the stats."""
    deadline = time.monotonic() + timeout * timeout_scale()
    while True:
        s = stats(m)
        if s["lease_break_acks"] >= n:
            return s
        assert time.monotonic() < deadline, f"{n} acknowledged lease breaks awaited: {s}"
        time.sleep(0.05)


def session_of(srv, m):
    """smbstatus's session of mount m (by the client port of its channel)."""
    port = ctl_stats(m)["channels"][0]["local"].rsplit(":", 1)[1]
    sessions = [s for s in smbstatus(srv).get("sessions", {}).values()
                if s.get("hostname", "").rsplit(":", 1)[-1] == port]
    assert len(sessions) == 1, f"no session of {m.path}'s port {port} in smbstatus"
    return sessions[0]


def dir_opens(srv, name):
    """smbstatus's opens of directory `name` at the top of srv's share."""
    st = smbstatus(srv)
    path = os.path.join(srv.share_path, name)
    f = st.get("open_files", {}).get(path)
    return list(f["opens"].values()) if f else []


def names(m, d):
    return sorted(os.listdir(os.path.join(m.path, d)))


def exists(m, d, name):
    try:
        os.stat(os.path.join(m.path, d, name))
        return True
    except FileNotFoundError:
        return False


def test_directory_lease_held(samba, mount_factory):
    """smbstatus shows A's open of a directory it listed with an R|H lease,
    keyed by that directory and A's ClientGuid; another directory gets
    another key."""
    a = mount_factory(samba)
    for d in ("d", "e"):
        os.mkdir(os.path.join(a.path, d))
    granted = stats(a)["leases_granted"]
    fds = [os.open(os.path.join(a.path, d), os.O_RDONLY | os.O_DIRECTORY) for d in ("d", "e")]
    try:
        assert names(a, "d") == [] and names(a, "e") == []
        sess = session_of(samba, a)
        guid = uuid.UUID(sess["client_guid"]).bytes_le
        keys = []
        for d in ("d", "e"):
            opens = dir_opens(samba, d)
            assert len(opens) == 1, f"one open of {d} awaited: {opens}"
            o = opens[0]
            assert o["server_id"]["pid"] == sess["server_id"]["pid"], (o, sess)
            lease = o.get("lease", {})
            assert lease.get("READ") and lease.get("HANDLE") and not lease.get("WRITE"), \
                f"no R|H lease on the open of {d}: {o}"
            assert o["caching"]["text"] == "RH", o
            key = uuid.UUID(lease["lease_key"]).bytes_le
            assert key[8:] == guid[:8], f"lease key {lease['lease_key']} vs {sess['client_guid']}"
            assert key[:8] != bytes(8), lease
            keys.append(key)
        assert keys[0] != keys[1], "two directories share one lease key"
        s = stats(a)
        assert s["leases_granted"] >= granted + 2 and s["lease_breaks"] == 0, s
    finally:
        for fd in fds:
            os.close(fd)


def test_own_writes_keep_the_directory_lease(samba, mount_factory):
    """Files A writes and closes in a directory it holds a lease on do not
    break that lease: they name it as their parent's (ParentLeaseKey), and
    Samba honours it.  So the daemon keeps asking v2 leases for files (it
    falls back to v1 only for a server that breaks a directory's lease at
    such a close, as ksmbd does: tests/vm/guest/test_trees.py)."""
    a = mount_factory(samba)
    os.mkdir(os.path.join(a.path, "d"))
    fd = os.open(os.path.join(a.path, "d"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert names(a, "d") == []
        for i in range(5):
            with open(os.path.join(a.path, "d", f"f{i}"), "wb") as f:
                f.write(b"x" * 5000)
        assert names(a, "d") == [f"f{i}" for i in range(5)]
        time.sleep(0.5)  # the closes the daemon put off
        s = stats(a)
        assert s["lease_breaks"] == 0, s
        assert "v1 leases" not in a.log_text(), a.log_text()[-2000:]
    finally:
        os.close(fd)


def smb_requests(m):
    """SMB2 messages mount m has sent so far (all channels)."""
    return request_counts(m)[0]


def ls_lR(path):
    r = subprocess.run(["ls", "-lR", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_walked_tree_again_asks_nothing(samba, mount_factory):
    """ls -lR of src/tree a second time, after actimeo, sends no request:
    the kernel looks tree up in src again, which nothing listed, so the
    daemon took src's lease in the background when tree was listed
    (fuse/ops_dir.c parent_lease_take()).  Without it the second walk
    made one request (CREATE+QUERY_INFO+CLOSE of src/tree).  B's rename of
    directory in src then breaks that lease, and A sees it at once.  (B
    cannot rename or remove tree meanwhile: Samba refuses that while any
    client holds handles below it, and A's listed directories are kept
    open for 30 s.)"""
    tree = os.path.join(samba.share_path, "src", "tree")
    for i in range(3):
        os.makedirs(os.path.join(tree, f"d{i}"))
        for j in range(4):
            with open(os.path.join(tree, f"d{i}", f"f{j}"), "wb") as f:
                f.write(b"x" * (j + 1))
    os.chmod(os.path.join(samba.share_path, "src"), 0o777)  # made by root, here
    a = mount_factory(samba)  # actimeo=1: the kernel asks again after a second
    b = mount_factory(samba)
    top = os.path.join(a.path, "src", "tree")
    cold = ls_lR(top)
    # entries named f3 (the mount point's random name may hold "f3" too)
    assert [ln.split()[-1] for ln in cold.splitlines() if ln].count("f3") == 3, cold
    for _ in range(2):
        time.sleep(1.5 * timeout_scale())  # past actimeo
        n0 = smb_requests(a)
        assert ls_lR(top) == cold
        time.sleep(0.3)
        assert smb_requests(a) == n0, "the walk again went to the server"
    assert stats(a)["lease_breaks"] == 0
    # the lease on src is A's, and it breaks: B's new name there is seen
    assert names(a, "src") == ["tree"]
    before = stats(a)
    os.mkdir(os.path.join(b.path, "src", "new"))
    wait_for_acks(a, before["lease_break_acks"] + 1)
    assert names(a, "src") == ["new", "tree"]
    assert os.path.isdir(os.path.join(a.path, "src", "new"))


OPS = {
    "create": lambda p: open(os.path.join(p, "new"), "wb").close(),
    "rename": lambda p: os.rename(os.path.join(p, "old"), os.path.join(p, "new")),
    "unlink": lambda p: os.unlink(os.path.join(p, "old")),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_change_on_b_breaks_a_lease(op, samba, mount_factory):
    """B's create, rename or unlink in a directory A holds a lease on and
    has listed and looked into: A's listing, its entries (the name that
    went, and one removed behind Samba's back) and its negative lookup
    (the name that came) are fresh once A has acknowledged the break."""
    a = mount_factory(samba, options=["actimeo=60", "debug"])
    b = mount_factory(samba)
    d = "d"
    os.mkdir(os.path.join(a.path, d))
    for n in ("keep", "old", "ghost"):
        open(os.path.join(a.path, d, n), "wb").close()
    server_dir = os.path.join(samba.share_path, d)
    fd = os.open(os.path.join(a.path, d), os.O_RDONLY | os.O_DIRECTORY)
    try:
        # A lists it (the kernel keeps the listing: another open, fd,
        # holds the lease with R) and stats names (kept for actimeo).  The
        # kernel keeps a listing only under the directory mtime it was
        # read under, and asks for the attributes after a listing read
        # from the server (atime): list and stat twice, so that the mtime
        # A set itself when it made the files has given way to the
        # server's and the last listing came from the kernel's cache.
        for _ in range(2):
            assert names(a, d) == ["ghost", "keep", "old"]
            os.stat(os.path.join(a.path, d))
        assert names(a, d) == ["ghost", "keep", "old"]
        assert exists(a, d, "old") and exists(a, d, "ghost")
        assert not exists(a, d, "new")  # a negative lookup
        opens = dir_opens(samba, d)
        assert [o["caching"]["text"] for o in opens] == ["RH"], opens
        # A does cache: what changes behind Samba's back (no break) is not
        # seen, neither in the listing nor by a stat
        open(os.path.join(server_dir, "sneaky"), "wb").close()
        os.unlink(os.path.join(server_dir, "ghost"))
        assert names(a, d) == ["ghost", "keep", "old"]
        assert exists(a, d, "ghost")
        before = stats(a)
        assert before["lease_breaks"] == 0, before  # A's own reads broke nothing

        OPS[op](os.path.join(b.path, d))

        after = wait_for_acks(a, before["lease_break_acks"] + 1)
        assert after["lease_breaks"] == before["lease_breaks"] + 1, after
        want = {"create": ["keep", "new", "old", "sneaky"],
                "rename": ["keep", "new", "sneaky"],
                "unlink": ["keep", "sneaky"]}[op]
        assert names(a, d) == want
        assert exists(a, d, "old") == ("old" in want)
        assert exists(a, d, "new") == ("new" in want)
        assert not exists(a, d, "ghost")  # every entry under d went
        assert exists(a, d, "keep")
    finally:
        os.close(fd)
    assert "break acknowledgment:" not in a.log_text()


@pytest.mark.parametrize("setting", ["smb3 directory leases = no", "smb2 leases = no",
                                     "nolease"])
def test_no_directory_lease_listing_coherent(setting, samba_factory, mount_factory):
    """Without a directory lease the open has none, nothing of the listing
    is kept, and A sees each of B's changes at once (no waiting)."""
    mount_opt = setting == "nolease"
    srv = samba_factory(extra_global=[] if mount_opt else [setting])
    a = mount_factory(srv, options=["actimeo=60"] + (["nolease"] if mount_opt else []))
    b = mount_factory(srv)
    d = "d"
    os.mkdir(os.path.join(a.path, d))
    open(os.path.join(a.path, d, "old"), "wb").close()
    fd = os.open(os.path.join(a.path, d), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert names(a, d) == ["old"]
        opens = dir_opens(srv, d)
        assert len(opens) == 1, opens
        assert not opens[0].get("lease") and opens[0]["caching"]["text"] == "", opens[0]
        pb = os.path.join(b.path, d)
        for op, want in (("create", ["new", "old"]), ("unlink", ["new"])):
            OPS[op](pb)
            assert names(a, d) == want, op
            if op == "create":
                os.rename(os.path.join(pb, "new"), os.path.join(pb, "moved"))
                assert names(a, d) == ["moved", "old"], "rename"
                os.rename(os.path.join(pb, "moved"), os.path.join(pb, "new"))
        s = stats(a)
        assert s["lease_breaks"] == 0, s
    finally:
        os.close(fd)
