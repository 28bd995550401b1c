"""Symbolic links (mfsymlinks), hard links and extended attributes (user.*)
on the mount, against the private Samba, checked on the server's disk too;
and the tar round trip of a tree holding all three.

Debian 12's Samba cannot hold reparse-point symlinks, so symlinks are
Minshall+French files (option mfsymlinks, as with cifs.ko): a 1067-byte
file starting "XSym" on the share.  EAs land as user.* xattrs on the
share's files.
"""

import errno
import hashlib
import os
import shutil
import stat
import subprocess

import pytest

HARD = "hard.bin"


def mfsym_on_disk(path, target):
    with open(path, "rb") as f:
        data = f.read()
    md5 = hashlib.md5(target.encode()).hexdigest().encode()
    head = b"XSym\n%04d\n" % len(target) + md5 + b"\n" + target.encode()
    return len(data) == 1067 and data.startswith(head)


@pytest.fixture
def m(samba, mount_factory):
    return mount_factory(samba, options=["mfsymlinks", "actimeo=0"])


def test_symlink_readlink_and_follow(samba, m):
    """With mfsymlinks (the fixture's mount option): links made, read,
    followed, listed as links, stored as mfsymlink files."""
    os.mkdir(os.path.join(m.path, "dir"))
    with open(os.path.join(m.path, "dir", "file.txt"), "w") as f:
        f.write("through the link\n")
    os.symlink("dir/file.txt", os.path.join(m.path, "l1"))
    os.symlink("dir", os.path.join(m.path, "ldir"))
    os.symlink("/absolute/nowhere", os.path.join(m.path, "dangling"))
    st = os.lstat(os.path.join(m.path, "l1"))
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("dir/file.txt")
    assert os.readlink(os.path.join(m.path, "l1")) == "dir/file.txt"
    assert os.readlink(os.path.join(m.path, "dangling")) == "/absolute/nowhere"
    with open(os.path.join(m.path, "l1")) as f:
        assert f.read() == "through the link\n"
    assert os.listdir(os.path.join(m.path, "ldir")) == ["file.txt"]
    assert not os.path.exists(os.path.join(m.path, "dangling"))
    # ls -l sees the links as links (readdirplus must not call them files)
    out = subprocess.run(["ls", "-l", m.path], capture_output=True, text=True,
                         check=True).stdout
    assert any(line.startswith("l") and "l1 -> dir/file.txt" in line
               for line in out.splitlines()), out
    # what Samba holds: mfsymlink files
    assert mfsym_on_disk(os.path.join(samba.share_path, "l1"), "dir/file.txt")
    assert mfsym_on_disk(os.path.join(samba.share_path, "ldir"), "dir")
    # existing name, rename, unlink
    with pytest.raises(FileExistsError):
        os.symlink("x", os.path.join(m.path, "l1"))
    os.rename(os.path.join(m.path, "l1"), os.path.join(m.path, "l2"))
    assert os.readlink(os.path.join(m.path, "l2")) == "dir/file.txt"
    os.unlink(os.path.join(m.path, "l2"))
    assert not os.path.lexists(os.path.join(m.path, "l2"))
    assert os.path.exists(os.path.join(m.path, "dir", "file.txt"))


def test_an_ordinary_1067_byte_file_stays_a_file(samba, m):
    data = b"XSym\n0004\n" + b"0" * 32 + b"\nabcd\n"  # wrong MD5: not a link
    data += b" " * (1067 - len(data))
    with open(os.path.join(samba.share_path, "fake"), "wb") as f:
        f.write(data)
    os.chown(os.path.join(samba.share_path, "fake"),
             os.stat(samba.share_path).st_uid, os.stat(samba.share_path).st_gid)
    st = os.lstat(os.path.join(m.path, "fake"))
    assert stat.S_ISREG(st.st_mode) and st.st_size == 1067
    with open(os.path.join(m.path, "fake"), "rb") as f:
        assert f.read() == data


def test_without_mfsymlinks(samba, mount_factory):
    m = mount_factory(samba, options=["nomfsymlinks"])
    with pytest.raises(PermissionError):
        os.symlink("target", os.path.join(m.path, "nolink"))
    # a link made with mfsymlinks is a plain 1067-byte file here
    m2 = mount_factory(samba, options=["mfsymlinks"])
    os.symlink("target", os.path.join(m2.path, "made"))
    st = os.lstat(os.path.join(m.path, "made"))
    assert stat.S_ISREG(st.st_mode) and st.st_size == 1067


def test_hard_links(samba, m):
    a = os.path.join(m.path, HARD)
    with open(a, "wb") as f:
        f.write(b"one")
    os.link(a, os.path.join(m.path, "hard2.bin"))
    s1, s2 = os.stat(a), os.stat(os.path.join(m.path, "hard2.bin"))
    assert s1.st_nlink == 2 and s2.st_nlink == 2 and s1.st_ino == s2.st_ino
    with open(os.path.join(m.path, "hard2.bin"), "ab") as f:
        f.write(b" two")
    with open(a, "rb") as f:
        assert f.read() == b"one two"
    d1, d2 = (os.stat(os.path.join(samba.share_path, n)) for n in (HARD, "hard2.bin"))
    assert d1.st_ino == d2.st_ino and d1.st_nlink == 2
    with pytest.raises(FileExistsError):
        os.link(a, os.path.join(m.path, "hard2.bin"))
    os.mkdir(os.path.join(m.path, "d"))
    with pytest.raises(OSError):
        os.link(os.path.join(m.path, "d"), os.path.join(m.path, "dlink"))
    os.unlink(a)
    assert os.stat(os.path.join(m.path, "hard2.bin")).st_nlink == 1


def test_xattrs(samba, m):
    p = os.path.join(m.path, "x.txt")
    with open(p, "w") as f:
        f.write("x")
    os.setxattr(p, "user.comment", b"hello")
    os.setxattr(p, "user.bin", bytes(range(256)))
    assert os.getxattr(p, "user.comment") == b"hello"
    assert os.getxattr(p, "user.bin") == bytes(range(256))
    assert sorted(os.listxattr(p)) == ["user.bin", "user.comment"]
    # on the share's file
    disk = os.path.join(samba.share_path, "x.txt")
    assert os.getxattr(disk, "user.comment") == b"hello"
    # flags
    with pytest.raises(FileExistsError):
        os.setxattr(p, "user.comment", b"again", os.XATTR_CREATE)
    with pytest.raises(OSError) as e:
        os.setxattr(p, "user.none", b"v", os.XATTR_REPLACE)
    assert e.value.errno == errno.ENODATA
    os.setxattr(p, "user.comment", b"replaced", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.comment") == b"replaced"
    # missing, remove, other namespaces
    with pytest.raises(OSError) as e:
        os.getxattr(p, "user.missing")
    assert e.value.errno == errno.ENODATA
    os.removexattr(p, "user.bin")
    assert os.listxattr(p) == ["user.comment"]
    with pytest.raises(OSError) as e:
        os.removexattr(p, "user.bin")
    assert e.value.errno == errno.ENODATA
    for ns in ("trusted.x", "security.x"):
        with pytest.raises(OSError) as e:
            os.setxattr(p, ns, b"v")
        assert e.value.errno in (errno.EOPNOTSUPP, errno.EPERM), (ns, e.value)
    # directories carry EAs too
    os.mkdir(os.path.join(m.path, "xd"))
    os.setxattr(os.path.join(m.path, "xd"), "user.d", b"dir")
    assert os.getxattr(os.path.join(m.path, "xd"), "user.d") == b"dir"


def _tree(root):
    os.makedirs(os.path.join(root, "a", "b"))
    with open(os.path.join(root, "a", "f.txt"), "w") as f:
        f.write("file f\n" * 100)
    with open(os.path.join(root, "a", "b", "g.bin"), "wb") as f:
        f.write(os.urandom(300000))
    os.link(os.path.join(root, "a", "f.txt"), os.path.join(root, "a", "b", "f-hard.txt"))
    os.symlink("../f.txt", os.path.join(root, "a", "b", "f-sym"))
    os.symlink("b", os.path.join(root, "a", "b-sym"))
    os.setxattr(os.path.join(root, "a", "f.txt"), "user.origin", b"tar test")
    os.setxattr(os.path.join(root, "a", "b", "g.bin"), "user.kind", b"random")


def _manifest(root):
    """(path, type, link target or content hash, xattrs, link group) per entry."""
    out, inodes = [], {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", os.readlink(p), (), None))
                continue
            xa = tuple(sorted((k, os.getxattr(p, k)) for k in os.listxattr(p)
                              if k.startswith("user.")))
            if stat.S_ISDIR(st.st_mode):
                out.append((rel, "d", None, xa, None))
            else:
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                group = inodes.setdefault(st.st_ino, rel) if st.st_nlink > 1 else None
                out.append((rel, "f", h, xa, group))
    return out


def test_xattr_size_limit(samba, m):
    """The largest value one SMB EA entry carries round-trips; one byte
    more, and 64 KiB (what xfstests generic/020 tries on fuse), is E2BIG:
    EaValueLength is 16 bits, and Samba 4.17 takes no FILE_FULL_EA entry
    (8 + name + NUL + value bytes) above 64 KiB."""
    p = os.path.join(m.path, "big")
    open(p, "w").close()
    name = "long_attr"
    biggest = 65536 - 8 - len(name) - 1
    value = bytes(range(256)) * (biggest // 256) + b"x" * (biggest % 256)
    os.setxattr(p, "user." + name, value)
    assert os.getxattr(p, "user." + name) == value
    assert os.getxattr(os.path.join(samba.share_path, "big"), "user." + name) == value
    for size in (biggest + 1, 65535, 65536):
        with pytest.raises(OSError) as e:
            os.setxattr(p, "user." + name, b"\0" * size)
        assert e.value.errno == errno.E2BIG, size
    assert os.getxattr(p, "user." + name) == value


def test_tar_round_trip_with_links_and_xattrs(m, tmp_path):
    src = tmp_path / "src"
    _tree(str(src))
    want = _manifest(str(src))
    assert any(e[1] == "l" for e in want) and any(e[4] for e in want)
    tar = shutil.which("tar")
    assert tar, "tar is not installed"
    # tar x onto the mount
    subprocess.run(f"{tar} --xattrs --xattrs-include='user.*' -C {src} -cf - a | "
                   f"{tar} --xattrs --xattrs-include='user.*' -C {m.path} -xf -",
                   shell=True, check=True)
    assert _manifest(m.path) == want
    # tar c from the mount
    back = tmp_path / "back"
    back.mkdir()
    subprocess.run(f"{tar} --xattrs --xattrs-include='user.*' -C {m.path} -cf - a | "
                   f"{tar} --xattrs --xattrs-include='user.*' -C {back} -xf -",
                   shell=True, check=True)
    assert _manifest(str(back)) == want
