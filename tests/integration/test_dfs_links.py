"""DFS links on one real Samba: a share that is a DFS root (msdfs root = yes)
whose links point at other shares of the same server, so the mount follows
them with a client of its own per link (client/dfs_ns.c). The namespace of
several servers, and a link's failover between targets, are in
test_dfs.py (tests/lib/dfslab.py).

Samba answers a CREATE below a link with STATUS_PATH_NOT_COVERED, and a
referral (FSCTL_DFS_GET_REFERRALS on IPC$) names the link's targets; the
referral's server is the name the client used, here 127.0.0.1, and the link
client keeps the mount's port.
"""
import errno
import json
import os
import subprocess

import pytest

from lib.fileops import read_file, write_file
from lib.mount import build_dir

DFS_GLOBAL = ["host msdfs = yes"]
DFS_ROOT = ["msdfs root = yes"]


@pytest.fixture
def dfs_samba(samba_factory):
    """A DFS root share "share" on 127.0.0.1 with two plain shares beside it,
    "one" and "two"; the test makes the links (msdfs: symlinks)."""
    return samba_factory(extra_global=DFS_GLOBAL, extra_share=DFS_ROOT,
                         extra_shares={"one": [f"valid users = {'smbrdmatest'}"],
                                       "two": []})


def make_link(srv, name, *targets):
    """A DFS link in the root share: name -> \\\\127.0.0.1\\<target>, ..."""
    spec = ",".join(f"{srv.host}\\{t}" for t in targets)
    os.symlink(f"msdfs:{spec}", os.path.join(srv.share_path, name))


def ctl(*args):
    return subprocess.run([os.path.join(build_dir(), "tools", "smbrdmactl"), *args],
                          capture_output=True, text=True, timeout=30)


def test_io_rename_and_listing_through_links(dfs_samba, mount_factory):
    srv = dfs_samba
    make_link(srv, "l1", "one")
    make_link(srv, "l2", "two")
    os.makedirs(os.path.join(srv.share_path, "plain"))
    write_file(os.path.join(srv.extra_share_path("one"), "there.txt"), b"in one\n")
    m = mount_factory(srv)

    assert sorted(os.listdir(m.path)) == ["l1", "l2", "plain"]
    assert os.path.isdir(os.path.join(m.path, "l1"))
    assert os.listdir(os.path.join(m.path, "l1")) == ["there.txt"]
    assert read_file(os.path.join(m.path, "l1", "there.txt")) == b"in one\n"

    # written through the links, the data lands in the target shares
    data = os.urandom(3 * 1024 * 1024 + 17)
    write_file(os.path.join(m.path, "l1", "big.bin"), data)
    os.makedirs(os.path.join(m.path, "l2", "d", "e"))
    write_file(os.path.join(m.path, "l2", "d", "e", "f.txt"), b"deep\n")
    with open(os.path.join(srv.extra_share_path("one"), "big.bin"), "rb") as f:
        assert f.read() == data
    assert read_file(os.path.join(srv.extra_share_path("two"), "d", "e", "f.txt")) == b"deep\n"
    assert read_file(os.path.join(m.path, "l1", "big.bin")) == data
    st = os.stat(os.path.join(m.path, "l2", "d", "e", "f.txt"))
    assert st.st_size == 5

    # a rename inside one link's share goes to its server
    os.rename(os.path.join(m.path, "l1", "big.bin"), os.path.join(m.path, "l1", "moved.bin"))
    assert sorted(os.listdir(os.path.join(srv.extra_share_path("one")))) == \
        ["moved.bin", "there.txt"]
    # across two servers' shares it cannot: EXDEV, so mv copies
    for src, dst in (("l1/there.txt", "l2/there.txt"), ("l1/there.txt", "plain/x"),
                     ("plain", "l1/plain")):
        with pytest.raises(OSError) as e:
            os.rename(os.path.join(m.path, src), os.path.join(m.path, dst))
        assert e.value.errno == errno.EXDEV, (src, dst, e.value)
    r = subprocess.run(["mv", os.path.join(m.path, "l1", "there.txt"),
                        os.path.join(m.path, "l2", "there.txt")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert read_file(os.path.join(srv.extra_share_path("two"), "there.txt")) == b"in one\n"
    assert not os.path.exists(os.path.join(srv.extra_share_path("one"), "there.txt"))

    # a name that does not exist below a link is ENOENT, not a DFS error
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(m.path, "l1", "nothing-here"))
    # files of two servers never share an inode number
    inos = {os.stat(os.path.join(m.path, p)).st_ino
            for p in ("l1", "l2", "plain", "l1/moved.bin", "l2/d", "l2/there.txt")}
    assert len(inos) == 6

    # unlink and rmdir below a link
    os.unlink(os.path.join(m.path, "l2", "d", "e", "f.txt"))
    os.rmdir(os.path.join(m.path, "l2", "d", "e"))
    assert os.listdir(os.path.join(srv.extra_share_path("two"), "d")) == []

    out = json.loads(ctl("dfs", m.path, "--json").stdout)
    assert out["dfs"] is True
    links = {x["path"]: x for x in out["dfs_links"]}
    assert set(links) == {"l1", "l2"}, links
    assert links["l1"]["current"] == f"\\\\{srv.host}\\one"
    assert links["l1"]["targets"] == [f"\\\\{srv.host}\\one"]
    assert links["l1"]["moves"] == 0 and links["l1"]["ttl"] > 0
    assert out["dfs_referrals"] >= 2
    text = ctl("dfs", m.path).stdout
    assert "/l2 -> \\\\127.0.0.1\\two" in text, text


def test_nodfs_reports_the_link_as_remote(dfs_samba, mount_factory):
    srv = dfs_samba
    make_link(srv, "l1", "one")
    m = mount_factory(srv, options=["nodfs"])
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(m.path, "l1"))
    assert e.value.errno == errno.EREMOTE
    r = ctl("dfs", m.path)
    assert r.returncode == 0 and "no DFS namespace" in r.stdout, r.stdout


def test_bad_links_give_clear_errors(dfs_samba, mount_factory):
    """Links no client could follow: each fails on its own with an error
    and a log line, and the rest of the namespace keeps working."""
    srv = dfs_samba
    make_link(srv, "gone", "no-such-share")
    # a link back to the namespace's own root: a loop
    make_link(srv, "loop", "share")
    make_link(srv, "good", "one")
    m = mount_factory(srv)
    # Samba either names the missing share in the referral (its TREE_CONNECT
    # then fails: ENOENT) or gives no referral (OBJECT_PATH_NOT_FOUND: the
    # path stays not covered, EREMOTE as with cifs.ko); either is logged
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(m.path, "gone"))
    gone = e.value.errno
    assert gone in (errno.ENOENT, errno.EREMOTE), e.value
    with pytest.raises(OSError) as e:
        os.listdir(os.path.join(m.path, "loop"))
    assert e.value.errno == errno.EBADMSG, e.value
    write_file(os.path.join(m.path, "good", "ok"), b"fine")
    assert read_file(os.path.join(srv.extra_share_path("one"), "ok")) == b"fine"
    log = m.log_text()
    assert ("DFS link gone: target \\\\127.0.0.1\\no-such-share: share 'no-such-share' does "
            "not exist" in log if gone == errno.ENOENT else
            "DFS referral for \\127.0.0.1\\share\\gone: STATUS_OBJECT_PATH_NOT_FOUND" in log), \
        log[-3000:]
    assert "points back into the namespace" in log, log[-3000:]
