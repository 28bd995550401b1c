"""One inode per server file, and link counts the kernel sees at once.

Every name of a server file is one FUSE inode (the daemon keys its table by
the server's file id), so link(2) answers with the inode the kernel already
has and its new link count: the old name shows it at once, not after the
attribute cache expires (xfstests generic/002).  The mount caches
attributes for a minute (actimeo=60), so a count the daemon did not send
with the op itself would show up stale here.  A file or directory replaced
by a rename while open reads st_nlink 0 through its descriptor, and
leaves no hidden name behind once closed (generic/035).
"""

import os
import time

import pytest

# alone (tests/pytest.ini): drop_caches (drop_dentries), which makes every mount look its names up again
pytestmark = pytest.mark.alone


@pytest.fixture
def m(samba, mount_factory):
    return mount_factory(samba, options=["actimeo=60"])


def hidden_gone(share_dir):
    """The kernel releases a descriptor after close(2) returns: wait for
    the daemon's CLOSE, which deletes the hidden name, to reach the
    server; then no hidden name may be left in share_dir."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not any(n.startswith(".smbrdma-gone-") for n in os.listdir(share_dir)):
            return True
        time.sleep(0.05)
    return False


def drop_dentries(path):
    """Make the kernel forget the names it holds (not the open inode), so
    that the next stat of each is a LOOKUP."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def nlinks(*paths):
    return [os.stat(p).st_nlink for p in paths]


def test_link_counts_follow_link_and_unlink(samba, m):
    a = os.path.join(m.path, "a")
    os.mkdir(os.path.join(m.path, "d"))
    with open(a, "w") as f:
        f.write("one file\n")
    assert os.stat(a).st_nlink == 1
    names = [a] + [os.path.join(m.path, n) for n in ("b", "d/c", "d/e")]
    for i, n in enumerate(names[1:], start=2):
        os.link(a, n)
        # every name, the old ones included, shows the new count
        assert nlinks(*names[:i]) == [i] * i
    ino = os.stat(a).st_ino
    assert {os.stat(n).st_ino for n in names} == {ino}
    # the server agrees
    assert os.stat(os.path.join(samba.share_path, "d", "c")).st_nlink == 4
    # data written through one name is read through another
    with open(names[2], "a") as f:
        f.write("through c\n")
    with open(names[3]) as f:
        assert f.read() == "one file\nthrough c\n"
    # rename of one name leaves the others working
    moved = os.path.join(m.path, "moved")
    os.rename(names[1], moved)
    names[1] = moved
    assert nlinks(*names) == [4] * 4
    # unlink one by one: the rest count down and stay readable
    while names:
        gone = names.pop(0)
        os.unlink(gone)
        assert not os.path.exists(gone)
        assert nlinks(*names) == [len(names)] * len(names)
        for n in names:
            with open(n) as f:
                assert f.read() == "one file\nthrough c\n"
    assert sorted(os.listdir(m.path)) == ["d"]
    assert os.listdir(os.path.join(m.path, "d")) == []


def test_ls_listing_keeps_link_count(samba, m):
    """A directory listing (readdirplus) carries no link count; it must not
    reset the count the kernel had to 1."""
    a = os.path.join(m.path, "a")
    open(a, "w").close()
    os.link(a, os.path.join(m.path, "b"))
    assert sorted(os.listdir(m.path)) == ["a", "b"]
    with os.scandir(m.path) as it:
        for e in it:
            assert e.stat().st_nlink == 2, e.name
    assert nlinks(a, os.path.join(m.path, "b")) == [2, 2]


def test_rename_over_open_file(samba, m):
    """The replaced file reads st_nlink 0 through its descriptor (contents
    and leftovers: test_posix_open_names.py)."""
    names = [os.path.join(m.path, n) for n in ("file1", "file2")]
    for n in names:
        open(n, "w").close()
    fd = os.open(names[1], os.O_RDONLY)
    try:
        os.rename(*names)
        assert os.fstat(fd).st_nlink == 0
        assert nlinks(names[1]) == [1]
    finally:
        os.close(fd)


def test_rename_over_open_directory(samba, m):
    top = os.path.join(m.path, "top")
    d1, d2 = os.path.join(top, "dir1"), os.path.join(top, "dir2")
    os.makedirs(d1)
    os.mkdir(d2)
    open(os.path.join(d1, "inside"), "w").close()
    fd = os.open(d2, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rename(d1, d2)
        assert os.fstat(fd).st_nlink == 0
        assert os.listdir(d2) == ["inside"]
    finally:
        os.close(fd)
    # nothing hidden is left behind: the parent can go
    assert hidden_gone(os.path.join(samba.share_path, "top"))
    os.unlink(os.path.join(d2, "inside"))
    os.rmdir(d2)
    assert os.listdir(os.path.join(samba.share_path, "top")) == []
    os.rmdir(top)



def test_rmdir_open_directory(samba, m):
    """rmdir of a directory open here: the name goes at once (the server
    alone would keep it, delete-pending, until the descriptor closes)."""
    d = os.path.join(m.path, "d")
    os.mkdir(d)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rmdir(d)
        assert os.fstat(fd).st_nlink == 0
        assert os.listdir(m.path) == []
        os.mkdir(d)  # the name is free again
        os.rmdir(d)
    finally:
        os.close(fd)
    assert hidden_gone(samba.share_path)
    assert os.listdir(samba.share_path) == []


def test_unlink_open_file_with_two_names(samba, m):
    """An open file with two names: unlinking one leaves st_nlink 1 through
    the descriptor, unlinking the other 0.  The daemon says 0 itself once
    it deleted a file's only name (servers differ on whether a
    delete-pending name counts), never while another name is left."""
    a, b = os.path.join(m.path, "a"), os.path.join(m.path, "b")
    with open(a, "w") as f:
        f.write("two names\n")
    os.link(a, b)
    fd = os.open(a, os.O_RDONLY)
    try:
        assert os.fstat(fd).st_nlink == 2
        os.unlink(a)
        assert os.fstat(fd).st_nlink == 1
        assert os.stat(b).st_nlink == 1
        os.unlink(b)
        assert os.fstat(fd).st_nlink == 0
        assert os.pread(fd, 100, 0) == b"two names\n"
    finally:
        os.close(fd)
    assert hidden_gone(samba.share_path), os.listdir(samba.share_path)
    assert os.listdir(samba.share_path) == []


def test_counts_while_a_deleted_name_is_hidden(samba, m):
    """While the file is open here its unlinked name stays on the server,
    hidden and delete-pending, and Samba counts it when asked by another
    name: the counts the kernel sees leave it out, through a lookup of a
    name the kernel had forgotten and after a link(2) made meanwhile."""
    a, b, c = (os.path.join(m.path, n) for n in ("a", "b", "c"))
    with open(a, "w") as f:
        f.write("three names\n")
    # opened by its only name: Samba deletes a delete-pending name at the
    # last close of a handle opened by that name (not of any other)
    fd = os.open(a, os.O_RDONLY)
    os.link(a, b)
    try:
        os.unlink(a)
        # the server has b and the hidden name
        assert os.stat(os.path.join(samba.share_path, "b")).st_nlink == 2
        drop_dentries(m.path)
        assert os.stat(b).st_nlink == 1
        os.link(b, c)
        assert nlinks(b, c) == [2, 2]
        assert os.fstat(fd).st_nlink == 2
        drop_dentries(m.path)
        assert nlinks(b, c) == [2, 2]
    finally:
        os.close(fd)
    assert hidden_gone(samba.share_path), os.listdir(samba.share_path)
    # the hidden name is gone: the server's counts are the truth again
    drop_dentries(m.path)
    assert nlinks(b, c) == [2, 2]
