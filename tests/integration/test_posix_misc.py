"""POSIX details the other tests leave out, each checked against the private
Samba and its disk: O_EXCL, O_APPEND and O_TRUNC across handles and mounts,
inode numbers that are the server's file ids, nlink and st_blocks, access(2)
on a noperm mount (the server decides), and the inode-flag ioctls
(lsattr/chattr).  test_basic.py's posix_sequence already covers a plain
O_TRUNC and an append on one handle; test_posix_links.py the nlink of hard
links."""

import errno
import fcntl
import os
import struct
import subprocess

import pytest

from lib.fileops import read_bytes as read, write_bytes as write

FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x10
FS_COMPR_FL = 0x4


@pytest.fixture
def m(samba, mount_factory):
    return mount_factory(samba, options=["actimeo=0"])


def test_o_excl(samba, m):
    """O_CREAT|O_EXCL creates a new file once; an existing one, also one
    made on the server behind the mount's back after the mount looked the
    name up and found nothing, fails with EEXIST and is left as it was."""
    p = os.path.join(m.path, "x")
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b"first")
    os.close(fd)
    with pytest.raises(FileExistsError):
        os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    assert read(os.path.join(samba.share_path, "x")) == b"first"

    late = os.path.join(m.path, "late")
    assert not os.path.exists(late)  # the kernel now knows the name is absent
    write(os.path.join(samba.share_path, "late"), b"server's")
    samba.chown_to_user(os.path.join(samba.share_path, "late"))
    with pytest.raises(FileExistsError):
        os.open(late, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    assert read(os.path.join(samba.share_path, "late")) == b"server's"

    os.mkdir(os.path.join(m.path, "d"))
    with pytest.raises(FileExistsError):
        os.open(os.path.join(m.path, "d"), os.O_CREAT | os.O_EXCL | os.O_RDONLY, 0o644)


def test_o_append_across_handles_and_mounts(samba, mount_factory):
    """Each O_APPEND write lands at the end as the server has it, when two
    handles of one mount and a second mount take turns (close-to-open)."""
    a = mount_factory(samba)
    b = mount_factory(samba)
    pa, pb = os.path.join(a.path, "log"), os.path.join(b.path, "log")
    write(pa, b"A1.")
    f1 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    f2 = os.open(pa, os.O_WRONLY | os.O_APPEND)
    os.write(f1, b"A2.")
    os.write(f2, b"A3.")
    os.lseek(f1, 0, os.SEEK_SET)  # O_APPEND ignores the offset
    os.write(f1, b"A4.")
    os.close(f1)
    os.close(f2)
    write(pb, b"B1.", "ab")
    write(pa, b"A5.", "ab")
    write(pb, b"B2.", "ab")
    want = b"A1.A2.A3.A4.B1.A5.B2."
    assert read(os.path.join(samba.share_path, "log")) == want
    assert read(pa) == want and read(pb) == want


def test_o_trunc_with_another_handle_open(samba, mount_factory):
    """O_TRUNC empties the file for a handle already open on it, on this
    mount and on another one, and on the server's disk."""
    a = mount_factory(samba, options=["actimeo=0"])
    b = mount_factory(samba, options=["actimeo=0"])
    pa, pb = os.path.join(a.path, "t"), os.path.join(b.path, "t")
    write(pa, b"x" * 10000)
    held = os.open(pa, os.O_RDONLY)
    other = os.open(pb, os.O_RDONLY)
    try:
        assert len(os.read(other, 20000)) == 10000
        fd = os.open(pa, os.O_WRONLY | os.O_TRUNC)
        os.close(fd)
        assert os.fstat(held).st_size == 0
        assert os.pread(held, 100, 0) == b""
        assert os.path.getsize(os.path.join(samba.share_path, "t")) == 0
        assert os.fstat(other).st_size == 0
        assert os.stat(pb).st_size == 0
    finally:
        os.close(held)
        os.close(other)
    # O_TRUNC of a file that another mount wrote: the new content only
    write(pb, b"0123456789")
    write(pa, b"ab")
    assert read(pb) == b"ab" and read(os.path.join(samba.share_path, "t")) == b"ab"


def test_inode_numbers_are_the_servers_file_ids(samba, mount_factory):
    """st_ino is the file id the server reports (Samba's is the inode
    number on its disk), the same in readdir, after a rename and on a
    later mount; distinct files have distinct numbers."""
    m1 = mount_factory(samba, options=["actimeo=0"])
    os.makedirs(os.path.join(m1.path, "d", "e"))
    for n in ("f", "d/g", "d/e/h"):
        write(os.path.join(m1.path, n), n.encode())
    names = ["", "d", "d/e", "f", "d/g", "d/e/h"]
    disk = {n: os.stat(os.path.join(samba.share_path, n)).st_ino for n in names}
    first = {n: os.stat(os.path.join(m1.path, n)).st_ino for n in names}
    assert first == disk
    assert len(set(first.values())) == len(names)
    with os.scandir(os.path.join(m1.path, "d")) as it:
        listed = {e.name: e.inode() for e in it}
    assert listed == {"e": disk["d/e"], "g": disk["d/g"]}
    os.rename(os.path.join(m1.path, "d", "g"), os.path.join(m1.path, "d", "e", "g2"))
    assert os.stat(os.path.join(m1.path, "d", "e", "g2")).st_ino == disk["d/g"]
    m1.stop()
    m2 = mount_factory(samba)
    assert os.stat(os.path.join(m2.path, "d", "e", "g2")).st_ino == disk["d/g"]
    assert {n: os.stat(os.path.join(m2.path, n)).st_ino
            for n in names if n != "d/g"} == {n: v for n, v in disk.items() if n != "d/g"}


def test_nlink_and_blocks(samba, m):
    """st_blocks is the server's allocation (a sparse file is not charged
    for its holes), so du(1) agrees with the server's disk; a file has
    nlink 1; a directory has 1, the "not counted" value btrfs also gives
    (Samba reports no subdirectory count), which find(1) takes as such."""
    p = os.path.join(m.path, "dense")
    write(p, os.urandom(300000))
    sparse = os.path.join(m.path, "sparse")
    write(sparse, b"head")
    os.truncate(sparse, 1 << 30)
    for n in ("dense", "sparse"):
        mine = os.stat(os.path.join(m.path, n))
        theirs = os.stat(os.path.join(samba.share_path, n))
        assert mine.st_blocks == theirs.st_blocks, n
        assert mine.st_nlink == 1
    assert os.stat(p).st_blocks * 512 >= 300000
    assert os.stat(sparse).st_blocks * 512 < 1 << 20
    du = subprocess.run(["du", "-k", sparse], capture_output=True, text=True, check=True)
    du_disk = subprocess.run(["du", "-k", os.path.join(samba.share_path, "sparse")],
                             capture_output=True, text=True, check=True)
    assert du.stdout.split()[0] == du_disk.stdout.split()[0]
    os.makedirs(os.path.join(m.path, "a", "b", "c"))
    write(os.path.join(m.path, "a", "b", "c", "leaf"), b"1")
    write(os.path.join(m.path, "a", "b", "mid"), b"2")
    assert os.stat(os.path.join(m.path, "a", "b")).st_nlink == 1
    found = subprocess.run(["find", os.path.join(m.path, "a"), "-type", "f"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert sorted(os.path.relpath(f, m.path) for f in found) == ["a/b/c/leaf", "a/b/mid"]


def test_access_on_a_noperm_mount_asks_the_server(samba, mount_factory):
    """With noperm the kernel checks no mode bits and asks the file system:
    access(2) opens the file with the access asked for, so the answer is
    the server's.  (Without the access op the kernel says yes to all.)"""
    m = mount_factory(samba, options=["noperm", "actimeo=0"])
    p = os.path.join(m.path, "f")
    write(p, b"data")
    disk = os.path.join(samba.share_path, "f")
    os.chmod(disk, 0o644)
    assert os.access(p, os.F_OK) and os.access(p, os.R_OK | os.W_OK)
    os.chmod(disk, 0o444)
    assert os.access(p, os.R_OK)
    assert not os.access(p, os.W_OK)
    os.chmod(disk, 0)
    assert not os.access(p, os.R_OK)
    assert os.access(p, os.F_OK)
    os.chmod(disk, 0o644)
    assert os.access(p, os.R_OK | os.W_OK)
    assert not os.access(os.path.join(m.path, "missing"), os.F_OK)


def test_inode_flag_ioctls(samba, m):
    """lsattr works on files and directories (flags 0: nothing the share
    holds maps to an inode flag), chattr that changes nothing succeeds, and
    flags SMB cannot hold are refused with EOPNOTSUPP; other ioctls are
    ENOTTY."""
    p = os.path.join(m.path, "f")
    write(p, b"x")
    os.mkdir(os.path.join(m.path, "d"))
    r = subprocess.run(["lsattr", "-d", p, os.path.join(m.path, "d")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert all(line.split()[0].strip("-") == "" for line in r.stdout.splitlines())
    fd = os.open(p, os.O_RDONLY)
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 4))[0]
        assert flags == 0
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", 0))
        for bad in (FS_IMMUTABLE_FL, FS_COMPR_FL):
            with pytest.raises(OSError) as e:
                fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", bad))
            assert e.value.errno == errno.EOPNOTSUPP
        with pytest.raises(OSError) as e:
            fcntl.ioctl(fd, 0x80086680, b"\0" * 8)  # an unknown 'f' command
        assert e.value.errno == errno.ENOTTY
    finally:
        os.close(fd)
    r = subprocess.run(["chattr", "-i", p], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["chattr", "+i", p], capture_output=True, text=True)
    assert r.returncode != 0 and "not supported" in r.stderr
    write(p, b"still writable")
    assert read(os.path.join(samba.share_path, "f")) == b"still writable"
