"""Issue 21: directory handles kept under their directory lease
(handlecache, fuse/ops_dir.c), against Samba 4.22.

A directory handle the kernel releases while its lease still holds R and H
is kept open (parked) for the next opendir of the directory, as cifs.ko
keeps its cached directories: that opendir costs no CREATE, and the kernel
keeps the listing it cached, so a second listing makes no SMB request at
all.  What must not change: a change by another client breaks the lease,
the kept handle is closed and the next listing is fresh; this mount's own
changes are seen at once; rmdir of a directory whose handle was kept, and
the rename of a directory with kept handles under it, work at once (the
server keeps a directory delete-pending while a handle is open, and
refuses to move a directory with open handles under it); nohandlecache
keeps nothing.

A name under a directory held so is answered from what the listing stored,
with no LOOKUP, past actimeo: Samba 4.22 breaks the directory lease on a
create, unlink or rename in it and on a write to, or new times of, a file
in it, by another client or by this one (as cifs.ko assumes,
cifs_dentry_needs_reval()).

Shown to fail without the pieces they test, with local patches that were
not committed: with smbfs_rename() and smbfs_rmdir() not closing the kept
handles first, test_rename_over_kept_handles failed with EACCES.  A break
is handled twice over: the kept handle is closed after the ack
(smbfs_dirs_lease_lost), and a handle whose lease a break touched is
neither taken back nor trusted (lease_current()); with either one left out
the tests pass, with both, test_change_on_b_closes_kept_handle and
test_change_on_b_to_a_file_is_seen failed (old listing, old size and
mtime).  Without the ParentLeaseKey on an unlink's open, the unlink broke
this mount's own lease (an OPLOCK_BREAK ack per directory, then a LOOKUP
for every name left: rm -rf of 20 files made 38 CREATEs, 24 with it).
test_rmdir_of_kept_directory still passed then: Samba breaks this mount's
own lease on the child when the rmdir moves it out of sight, and the break
closes the kept handle; it stays as a guard.
"""

import os
import subprocess
import time

import pytest

from lib.fileops import ctl_stats, request_counts
from lib.fileops import lease_stats as stats
from lib.mount import timeout_scale
from lib.sessioninfo import smbstatus


def requests(m):
    """SMB2 messages (a compound counts once) mount m has sent, over all
    channels."""
    return request_counts(m)[0]


def dir_opens(srv, rel):
    st = smbstatus(srv)
    f = st.get("open_files", {}).get(os.path.join(srv.share_path, rel))
    return list(f["opens"].values()) if f else []


def wait_until(cond, what, timeout=20):
    deadline = time.monotonic() + timeout * timeout_scale()
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def make_tree(m, d, files=("a", "b", "c")):
    os.makedirs(os.path.join(m.path, d))
    for n in files:
        with open(os.path.join(m.path, d, n), "w") as f:
            f.write(n)


def settle(m):
    """Wait until m's request count stands still (breaks, closes)."""
    last = requests(m)
    for _ in range(50):
        time.sleep(0.1)
        now = requests(m)
        if now == last:
            return now
        last = now
    return last


def test_second_listing_makes_no_request(samba, mount_factory):
    """handlecache, the default: a directory listed once is listed again
    from the kept handle and the kernel's cache: no SMB request, the same names; its handle stays open
    on the server after the close, with its R|H lease.  (actimeo=60: the
    names' entries do not expire meanwhile, which would cost LOOKUPs; the
    first listing and stat replace the mtime this mount set itself when it
    made the files with the server's, as in test_dir_leases.)"""
    a = mount_factory(samba, options=["actimeo=60"])
    make_tree(a, "d")
    for _ in range(2):
        assert sorted(os.listdir(os.path.join(a.path, "d"))) == ["a", "b", "c"]
        os.stat(os.path.join(a.path, "d"))
    opens = dir_opens(samba, "d")
    assert [o["caching"]["text"] for o in opens] == ["RH"], \
        f"the released handle of d is not kept with its lease: {opens}"
    before = settle(a)
    for _ in range(3):
        assert sorted(os.listdir(os.path.join(a.path, "d"))) == ["a", "b", "c"]
    os.stat(os.path.join(a.path, "d"))
    assert requests(a) == before, "a listing from the kept handle went to the server"
    assert stats(a)["lease_breaks"] == 0


def test_own_change_is_listed(samba, mount_factory):
    """This mount's own create and unlink in a kept directory show in its
    next listing at once."""
    a = mount_factory(samba)
    make_tree(a, "d")
    p = os.path.join(a.path, "d")
    assert sorted(os.listdir(p)) == ["a", "b", "c"]
    open(os.path.join(p, "new"), "w").close()
    assert sorted(os.listdir(p)) == ["a", "b", "c", "new"]
    os.unlink(os.path.join(p, "a"))
    assert sorted(os.listdir(p)) == ["b", "c", "new"]
    assert sorted(os.listdir(os.path.join(samba.share_path, "d"))) == ["b", "c", "new"]


@pytest.mark.parametrize("op", ["create", "unlink"])
def test_change_on_b_closes_kept_handle(op, samba, mount_factory):
    """B's change in a directory whose handle A keeps breaks A's lease: A
    closes the kept handle and its next listing has B's change."""
    a = mount_factory(samba, options=["actimeo=60"])
    b = mount_factory(samba)
    make_tree(a, "d")
    p = os.path.join(a.path, "d")
    for _ in range(2):
        assert sorted(os.listdir(p)) == ["a", "b", "c"]
    assert len(dir_opens(samba, "d")) == 1
    acks = stats(a)["lease_break_acks"]
    if op == "create":
        open(os.path.join(b.path, "d", "new"), "w").close()
        want = ["a", "b", "c", "new"]
    else:
        os.unlink(os.path.join(b.path, "d", "a"))
        want = ["b", "c"]
    wait_until(lambda: stats(a)["lease_break_acks"] > acks, "A did not acknowledge the break")
    wait_until(lambda: not dir_opens(samba, "d"), "A's kept handle of d stayed open")
    assert sorted(os.listdir(p)) == want


def test_rmdir_of_kept_directory(samba, mount_factory):
    """rmdir of a directory whose handle is kept, then of its parent: both
    gone on the server at once (a handle left open would keep the child
    delete-pending, and the parent not empty)."""
    a = mount_factory(samba)
    os.makedirs(os.path.join(a.path, "d", "sub"))
    assert os.listdir(os.path.join(a.path, "d", "sub")) == []
    assert os.listdir(os.path.join(a.path, "d")) == ["sub"]
    assert len(dir_opens(samba, "d/sub")) == 1
    os.rmdir(os.path.join(a.path, "d", "sub"))
    os.rmdir(os.path.join(a.path, "d"))
    assert not os.path.exists(os.path.join(samba.share_path, "d"))
    os.mkdir(os.path.join(a.path, "d"))  # the name is free again


def test_rename_over_kept_handles(samba, mount_factory):
    """A directory with kept handles under it (and its own) moves at once,
    and what is under it lists under the new name."""
    a = mount_factory(samba)
    make_tree(a, "d/sub")
    assert os.listdir(os.path.join(a.path, "d")) == ["sub"]
    assert sorted(os.listdir(os.path.join(a.path, "d", "sub"))) == ["a", "b", "c"]
    assert dir_opens(samba, "d/sub") and dir_opens(samba, "d")
    os.rename(os.path.join(a.path, "d"), os.path.join(a.path, "e"))
    assert sorted(os.listdir(os.path.join(a.path, "e", "sub"))) == ["a", "b", "c"]
    assert sorted(os.listdir(os.path.join(samba.share_path, "e", "sub"))) == ["a", "b", "c"]
    # and a file rename leaves the kept handles alone
    assert dir_opens(samba, "e/sub")
    os.rename(os.path.join(a.path, "e", "sub", "a"), os.path.join(a.path, "e", "sub", "z"))
    assert sorted(os.listdir(os.path.join(a.path, "e", "sub"))) == ["b", "c", "z"]


@pytest.mark.alone  # drop_caches: every mount would look its names up again
def test_forgotten_directory_closes_kept_handle(samba, mount_factory):
    """When the kernel forgets a directory's inode (and its cached listing)
    the handle kept for it is closed."""
    a = mount_factory(samba)
    make_tree(a, "d")
    assert sorted(os.listdir(os.path.join(a.path, "d"))) == ["a", "b", "c"]
    assert dir_opens(samba, "d")

    def forgotten():
        subprocess.run(["sh", "-c", "sync; echo 2 > /proc/sys/vm/drop_caches"], check=True)
        return not dir_opens(samba, "d")
    wait_until(forgotten, "the kept handle of d stayed open after the kernel forgot d")


def test_nohandlecache_keeps_nothing(samba, mount_factory):
    """With nohandlecache a released directory handle is closed, and every
    listing asks the server."""
    a = mount_factory(samba, options=["nohandlecache"])
    make_tree(a, "d")
    p = os.path.join(a.path, "d")
    assert sorted(os.listdir(p)) == ["a", "b", "c"]
    wait_until(lambda: not dir_opens(samba, "d"), "nohandlecache kept the handle of d")
    before = settle(a)
    assert sorted(os.listdir(p)) == ["a", "b", "c"]
    assert requests(a) > before


def test_max_cached_dirs_keeps_the_newest(samba, mount_factory):
    """max_cached_dirs=1: the handle kept for one directory is closed when
    another's is kept."""
    a = mount_factory(samba, options=["max_cached_dirs=1"])
    make_tree(a, "d")
    make_tree(a, "e")
    assert sorted(os.listdir(os.path.join(a.path, "d"))) == ["a", "b", "c"]
    assert dir_opens(samba, "d")
    assert sorted(os.listdir(os.path.join(a.path, "e"))) == ["a", "b", "c"]
    assert dir_opens(samba, "e")
    wait_until(lambda: not dir_opens(samba, "d"), "max_cached_dirs=1 kept two handles")


def test_names_under_kept_directory_need_no_lookup(samba, mount_factory):
    """Past actimeo, the names of a directory held under its lease are
    stat'ed with no request: what the listing stored of them is what the
    server has until a break says otherwise (as cifs.ko trusts a dentry
    under a cached directory)."""
    a = mount_factory(samba)  # actimeo=1
    make_tree(a, "d")
    p = os.path.join(a.path, "d")
    for _ in range(2):
        # the share's root too: the walk to d's names looks up d in it
        assert os.listdir(a.path) == ["d"]
        os.stat(a.path)
        assert sorted(os.listdir(p)) == ["a", "b", "c"]
        os.stat(p)
    time.sleep(1.5)  # every entry and attribute the kernel has expired
    sizes = {n: os.stat(os.path.join(p, n)).st_size for n in ("a", "b", "c")}
    before = settle(a)
    time.sleep(1.5)
    for _ in range(2):
        assert sorted(os.listdir(p)) == ["a", "b", "c"]
        assert {n: os.stat(os.path.join(p, n)).st_size for n in ("a", "b", "c")} == sizes
    assert requests(a) == before, "a stat under the kept directory's lease went to the server"


@pytest.mark.parametrize("change", ["append", "overwrite", "utime"])
def test_change_on_b_to_a_file_is_seen(change, samba, mount_factory):
    """B's write to, or new times of, a file in a directory A keeps: Samba
    breaks A's directory lease, and A's stat, past actimeo, has B's
    change (not what A's listing stored)."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    make_tree(a, "d")
    p = os.path.join(a.path, "d")
    for _ in range(2):
        assert sorted(os.listdir(p)) == ["a", "b", "c"]
        os.stat(p)
    old = os.stat(os.path.join(p, "a"))
    acks = stats(a)["lease_break_acks"]
    q = os.path.join(b.path, "d", "a")
    if change == "append":
        with open(q, "a") as f:
            f.write("more")
    elif change == "overwrite":
        time.sleep(0.05)  # a new mtime
        with open(q, "r+") as f:
            f.write("z")
    else:
        os.utime(q, (1000000, 1000000))
    wait_until(lambda: stats(a)["lease_break_acks"] > acks, "A's directory lease was not broken")
    time.sleep(1.5)  # past actimeo: only the break can explain a fresh stat
    now = os.stat(os.path.join(p, "a"))
    server = os.stat(os.path.join(samba.share_path, "d", "a"))
    # SMB carries times in 100 ns units: the server's, cut to them
    assert (now.st_size, now.st_mtime_ns) == (server.st_size, server.st_mtime_ns // 100 * 100)
    assert (now.st_size, now.st_mtime_ns) != (old.st_size, old.st_mtime_ns)


def test_own_unlink_keeps_own_lease(samba, mount_factory):
    """An unlink names the lease of its directory (ParentLeaseKey): Samba
    does not break this mount's own lease for it, so the names left are
    still answered with no LOOKUP (rm -rf: one request per file); another
    client's listing has the file gone at once, and this mount's too."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    make_tree(a, "d", files=[f"f{i}" for i in range(10)])
    p = os.path.join(a.path, "d")
    for _ in range(2):
        assert len(os.listdir(p)) == 10
        os.stat(p)
    before, breaks, (_, cmds) = settle(a), stats(a)["lease_breaks"], request_counts(a)
    for i in range(5):
        os.unlink(os.path.join(p, f"f{i}"))
    assert stats(a)["lease_breaks"] == breaks, "A's own unlink broke A's directory lease"
    assert sorted(os.listdir(p)) == [f"f{i}" for i in range(5, 10)]
    assert sorted(os.listdir(os.path.join(b.path, "d"))) == [f"f{i}" for i in range(5, 10)]
    for i in range(5):
        assert not os.path.exists(os.path.join(p, f"f{i}"))
    # five unlinks, each one compound; the listing after them and the
    # negative lookups may ask the server, nothing else does
    now, after = request_counts(a)
    assert now - before <= 5 + 3 + 5, \
        (now - before, {k: v - cmds.get(k, 0) for k, v in after.items() if v != cmds.get(k)})


def test_own_write_to_existing_file_keeps_own_lease(samba, mount_factory):
    """An open of a file that exists names its directory's lease as the
    parent's too (ParentLeaseKey): appending to it, truncating it and
    setting its times through this mount leave this mount's directory
    lease alone, and the next listing needs no request; another client
    sees the change."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    make_tree(a, "d", files=("x", "y"))
    p = os.path.join(a.path, "d")
    for _ in range(2):
        assert sorted(os.listdir(p)) == ["x", "y"]
    settle(a)
    breaks = stats(a)["lease_breaks"]
    with open(os.path.join(p, "x"), "a") as f:
        f.write(" more")
    os.truncate(os.path.join(p, "y"), 0)
    os.utime(os.path.join(p, "y"), ns=(10**18, 10**18))
    settle(a)
    assert stats(a)["lease_breaks"] == breaks, "A's own write broke A's directory lease"
    before = settle(a)
    assert sorted(os.listdir(p)) == ["x", "y"]
    assert requests(a) - before == 0
    with open(os.path.join(b.path, "d", "x")) as f:
        assert f.read() == "x more"
    assert os.path.getsize(os.path.join(b.path, "d", "y")) == 0


def test_missing_names_of_a_listed_directory_need_no_request(samba, mount_factory):
    """A directory listed whole under its lease answers a LOOKUP of a name
    it lacks with no request (tar x, cp -r, compilers' include searches);
    a name that differs only in case goes to the server (Samba matches
    names without regard to case) and is found; another client's new
    file breaks the lease first and is found at once."""
    a = mount_factory(samba, options=["actimeo=60"])
    b = mount_factory(samba)
    make_tree(a, "d", files=("Foo", "bar"))
    p = os.path.join(a.path, "d")
    for _ in range(2):
        assert sorted(os.listdir(p)) == ["Foo", "bar"]
        os.stat(p)
    before = settle(a)
    for n in ("nope", "missing.h", "x" * 200):
        assert not os.path.exists(os.path.join(p, n))
    assert requests(a) == before, "a LOOKUP of a missing name went to the server"
    # the same name in another case is the server's to decide
    assert os.stat(os.path.join(p, "foo")).st_size == 3
    assert requests(a) > before
    with open(os.path.join(b.path, "d", "nope"), "w") as f:
        f.write("from b")
    wait_until(lambda: os.path.exists(os.path.join(p, "nope")),
               "another client's new file is not found after the break")
    with open(os.path.join(p, "nope")) as f:
        assert f.read() == "from b"


def test_new_directory_knows_it_is_empty(samba, mount_factory):
    """A directory this mount makes is kept open under a lease of its own,
    known empty: LOOKUPs of the names made in it next need no request, so
    making a file there is one CREATE, and the CLOSEs of several go out
    together; what is made is found in any case; another client's file
    made in it is found too."""
    a = mount_factory(samba, options=["actimeo=60"])
    b = mount_factory(samba)
    p = os.path.join(a.path, "new")
    os.mkdir(p)
    assert [o["caching"]["text"] for o in dir_opens(samba, "new")] == ["RH"]
    before = settle(a)
    for i in range(12):
        fd = os.open(os.path.join(p, f"f{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
    spent = settle(a) - before
    # 12 CREATEs; their CLOSEs at most 6 to a request; no LOOKUP
    assert spent <= 12 + 4, spent
    cmds = ctl_stats(a)["channels"][0]["commands"]
    assert cmds.get("CLOSE", 0) >= 12
    # our own names, in any case, are found: none is answered "missing"
    assert os.path.exists(os.path.join(p, "F3"))
    assert os.path.exists(os.path.join(p, "f11"))
    assert sorted(os.listdir(os.path.join(b.path, "new"))) == sorted(f"f{i}" for i in range(12))
    with open(os.path.join(b.path, "new", "late"), "w") as f:
        f.write("b")
    wait_until(lambda: os.path.exists(os.path.join(p, "late")),
               "another client's file in a new directory is not found")
    assert sorted(os.listdir(p)) == sorted([f"f{i}" for i in range(12)] + ["late"])


def test_non_ascii_name_makes_a_listing_answer_nothing(samba, mount_factory):
    """A listing holding a name with a byte over 0x7f answers no LOOKUP
    itself (Unicode case folding may map such a name onto an ASCII one,
    as U+017F onto "s"): a missing name then goes to the server."""
    a = mount_factory(samba, options=["actimeo=60"])
    make_tree(a, "u", files=("\u017f", "plain"))
    p = os.path.join(a.path, "u")
    for _ in range(2):
        assert sorted(os.listdir(p)) == sorted(["\u017f", "plain"])
        os.stat(p)
    before = settle(a)
    assert not os.path.exists(os.path.join(p, "t"))
    assert requests(a) > before, "a missing name was answered from an unsure listing"


def test_unlink_and_rmdir_right_after_close(samba, mount_factory):
    """A CLOSE put off to go with others goes first when the file is
    unlinked or renamed over, so nothing is found open: rm -rf right
    after tar x leaves no hidden name, and the directory goes."""
    a = mount_factory(samba)
    p = os.path.join(a.path, "t")
    os.mkdir(p)
    for i in range(5):
        with open(os.path.join(p, f"g{i}"), "w") as f:
            f.write("x" * i)
    with open(os.path.join(p, "src"), "w") as f:
        f.write("new")
    os.rename(os.path.join(p, "src"), os.path.join(p, "g0"))
    with open(os.path.join(p, "g0")) as f:
        assert f.read() == "new"
    srv = os.path.join(samba.share_path, "t")
    for i in range(5):
        os.unlink(os.path.join(p, f"g{i}"))
        # removed, not hidden as a file still open
        assert sorted(os.listdir(srv)) == [f"g{k}" for k in range(i + 1, 5)]
    os.rmdir(p)
    assert not os.path.exists(os.path.join(samba.share_path, "t"))
    assert [n for n in os.listdir(samba.share_path) if n.startswith(".smbrdma-gone")] == []


def test_ls_lR_past_actimeo_makes_no_request(samba, mount_factory):
    """ls -lR of a tree below the share's root, again after the attributes
    expired (actimeo=1): nothing opendirs the root, yet the kernel asks for
    its attributes and looks the tree's name up again.  A stat of the root
    keeps its handle under a lease, as cifs.ko keeps its root handle, so
    those are answered without the server, and the listings come from the
    kept handles: no request at all."""
    for d, names in (("t", ()), ("t/d1", ("a", "b")), ("t/d2", ("c",))):
        os.makedirs(os.path.join(samba.share_path, d), exist_ok=True)
        for n in names:
            with open(os.path.join(samba.share_path, d, n), "w") as f:
                f.write(n)
    a = mount_factory(samba, options=["actimeo=1"])
    ls = ["ls", "-lR", os.path.join(a.path, "t")]
    first = subprocess.run(ls, capture_output=True, text=True, check=True).stdout
    assert [o["caching"]["text"] for o in dir_opens(samba, ".")] == ["RH"], \
        "the share root's handle is not kept with its lease"
    before = settle(a)
    time.sleep(1.5)  # past actimeo: the kernel asks again
    again = subprocess.run(ls, capture_output=True, text=True, check=True).stdout
    assert again == first
    assert requests(a) == before, "ls -lR past actimeo went to the server"
    assert stats(a)["lease_breaks"] == 0
