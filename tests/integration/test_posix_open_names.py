"""POSIX names of open files: an unlinked open file's name is gone at once
(the data stays readable and writable through the descriptor), the name
can be created again, and a rename may replace an open file; nothing is
left on the share once the last descriptor closes.  (The server alone
would keep a delete-pending name and refuse both.)"""

import os
import time


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
