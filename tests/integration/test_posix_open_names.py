"""POSIX names of open files: an unlinked open file's name is gone at once
(the data stays readable and writable through the descriptor), the name
can be created again, and a rename may replace an open file; nothing is
left on the share once the last descriptor closes.  (The server alone
would keep a delete-pending name and refuse both.)"""

import os
import time

import pytest


def leftovers(samba):
    return [n for n in os.listdir(samba.share_path) if n.startswith(".smbrdma-gone-")]


def gone_after_release(samba):
    """The kernel releases a file after close(2) returns: wait for the
    daemon's CLOSE to reach the server, then nothing may be left."""
    deadline = time.monotonic() + 10
    while leftovers(samba) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not leftovers(samba)


def test_unlink_open_file(samba, mount_factory):
    m = mount_factory(samba)
    p = os.path.join(m.path, "u.txt")
    with open(p, "w") as f:
        f.write("old data")
    fd = os.open(p, os.O_RDWR)
    try:
        os.unlink(p)
        assert "u.txt" not in os.listdir(m.path)
        assert not os.path.exists(p)
        assert os.pread(fd, 100, 0) == b"old data"
        os.pwrite(fd, b"OLD", 0)
        assert os.pread(fd, 100, 0) == b"OLD data"
        assert os.fstat(fd).st_size == 8
        with open(p, "w") as f:  # the name is free again
            f.write("new file")
        with open(p) as f:
            assert f.read() == "new file"
        assert leftovers(samba), "the open file should still be on the share, hidden"
        assert sorted(os.listdir(m.path)) == ["u.txt"]  # hidden names are not listed
    finally:
        os.close(fd)
    assert gone_after_release(samba), leftovers(samba)
    with open(os.path.join(samba.share_path, "u.txt")) as f:
        assert f.read() == "new file"


def test_rename_over_an_open_file(samba, mount_factory):
    m = mount_factory(samba)
    a, b = os.path.join(m.path, "a.txt"), os.path.join(m.path, "b.txt")
    with open(a, "w") as f:
        f.write("AAA")
    with open(b, "w") as f:
        f.write("BBB")
    fd = os.open(b, os.O_RDONLY)
    try:
        os.rename(a, b)
        with open(b) as f:
            assert f.read() == "AAA"
        assert not os.path.exists(a)
        assert os.pread(fd, 10, 0) == b"BBB"  # the replaced file, still open
    finally:
        os.close(fd)
    assert gone_after_release(samba), leftovers(samba)
    assert sorted(os.listdir(samba.share_path)) == ["b.txt"]


@pytest.mark.parametrize("posix", [False, True], ids=["noposix", "posix"])
def test_unlinked_hard_links_of_open_files(samba_factory, mount_factory, posix):
    """Hard links (issue 22): a name of a file some descriptor holds open is
    unlinked, through the name it was opened by or another; the other name
    keeps the data; once every descriptor is closed no hidden name is left,
    whichever names went and in which order.  Also with the SMB3 POSIX
    extensions (Samba 4.22), where an unlink is the server's own."""
    samba = samba_factory(posix=posix)
    m = mount_factory(samba, options=["posix"] if posix else [])
    f, g = os.path.join(m.path, "f"), os.path.join(m.path, "g")
    cases = {
        "opened name": (["f"], ["f"], ["g"]),
        "other name": (["f"], ["g"], ["f"]),
        "both names": (["f"], ["f", "g"], []),
        "each name open": (["f", "g"], ["g", "f"], []),
    }
    for what, (opened, unlinked, kept) in cases.items():
        with open(f, "wb") as fh:
            fh.write(b"0123456789")
        os.link(f, g)
        fds = []
        try:
            for n in opened:
                fds.append(os.open(os.path.join(m.path, n), os.O_RDWR))
            for n in unlinked:
                os.unlink(os.path.join(m.path, n))
            assert sorted(os.listdir(m.path)) == kept, what
            for fd in fds:
                assert os.pread(fd, 10, 0) == b"0123456789", what
            os.pwrite(fds[0], b"AB", 0)
        finally:
            for fd in fds:
                os.close(fd)
        assert gone_after_release(samba), (what, leftovers(samba))
        assert sorted(os.listdir(samba.share_path)) == kept, what
        for n in kept:
            with open(os.path.join(m.path, n), "rb") as fh:
                assert fh.read() == b"AB23456789", what
            os.unlink(os.path.join(m.path, n))


@pytest.mark.parametrize("posix", [False, True], ids=["noposix", "posix"])
def test_each_hard_link_name_open_at_once(samba_factory, mount_factory, posix):
    """Both names of a hard-linked file open at once, each by its own name
    (actimeo=0: every open looks its name up, so each open is sent by the
    name it was given).  With posix the two names are one inode, whose
    lease key the second open asks for while the first name's open holds
    it; Samba refuses a lease key under another name of the same file
    (STATUS_INVALID_PARAMETER), which reached open(2) as EINVAL until the
    open was sent again under a key of its own."""
    samba = samba_factory(posix=posix)
    m = mount_factory(samba, options=["actimeo=0"] + (["posix"] if posix else []))
    f, g = os.path.join(m.path, "f"), os.path.join(m.path, "g")
    for first, second in (("f", "g"), ("g", "f")):
        with open(f, "wb") as fh:
            fh.write(b"0123456789")
        os.link(f, g)
        fds = []
        try:
            fds.append(os.open(os.path.join(m.path, first), os.O_RDWR))
            fds.append(os.open(os.path.join(m.path, second), os.O_RDWR))
            os.pwrite(fds[1], b"XY", 0)
            os.fsync(fds[1])
            assert os.pread(fds[0], 10, 0) == b"XY23456789"
        finally:
            for fd in fds:
                os.close(fd)
        with open(os.path.join(samba.share_path, first), "rb") as fh:
            assert fh.read() == b"XY23456789"
        os.unlink(f)
        os.unlink(g)
    assert gone_after_release(samba), leftovers(samba)
