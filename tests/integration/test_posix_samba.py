"""The SMB3 POSIX extensions (`-o posix`) against Samba 4.22 on the host (issue 19).

What the guest's ksmbd tests check (tests/vm/guest/test_posix_ksmbd.py and friends), here
against a private Samba with `smb3 unix extensions = yes` (tests/lib/samba.py, posix=True: a
share without `force user` whose create and directory masks let every mode through and that
lists names Windows rejects as they are).  Every test compares what the mount shows with
os.stat()/os.lstat() of the same file in the share's tmpfs, on this host.  The mounts run as
root with the default uid=0/gid=0, so an owner other than 0 can only have come from the server.

What Samba 4.22 gives, and these tests hold it to:
- modes: a new file or directory gets the mode of the POSIX create context, O_EXCL or not,
  setuid, setgid and sticky bits too (masked by the share's masks only); a chmod sets the
  permission bits and drops setuid, setgid and sticky (smb2_nttrans.c takes 0777 of the
  S-1-5-88-3 ACE);
- owners: Samba sends the owner of its test user's files as the user's SAM SID
  (S-1-5-21-...-RID), which the mount maps by name (an LSA lookup on IPC$, then NSS) to the
  user's uid; ids without an account come as S-1-22-1-<uid> / S-1-22-2-<gid>;
- chown: refused unless the share has `dos filemode = yes` (the owner gets no WRITE_OWNER);
  with it, to the user's own uid and to a group the user is in, nothing else;
- symbolic links, FIFOs, sockets and device nodes made on the server show as such (their type
  in the POSIX mode, a symlink's target and a device's numbers in reparse points); none can be
  made over SMB: a symlink through the mount is an mfsymlink file (with mfsymlinks), mknod of
  anything but a regular file is EPERM;
- names: case-sensitive, '\\', ':', '<', trailing dots and spaces are characters of a name.
The fallbacks: a server or a share without the extensions, and a mount without `posix`.
"""

import grp
import os
import pwd
import stat
import subprocess

import pytest

from lib.samba import DEFAULT_USER, ensure_group

GROUP = "smbrdmapx"  # a group the test user is in (its primary one is "users")
OTHER_USER, OTHER_PASSWORD = "smbrdmapx2", "Sm8rdma-px2-pw"
IN_USE = "SMB3 POSIX extensions in use"


def ids(st):
    return (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


@pytest.fixture
def gid():
    """The gid of GROUP, the test user a member (before Samba reads its groups)."""
    return ensure_group(GROUP, [DEFAULT_USER])


@pytest.fixture
def srv(samba_factory, gid):
    return samba_factory(posix=True)


@pytest.fixture
def m(srv, mount_factory):
    return mount_factory(srv, options=["posix", "actimeo=0"])


@pytest.fixture
def umask0():
    """Modes exactly as asked: the kernel applies the umask before the daemon sees them."""
    old = os.umask(0)
    yield
    os.umask(old)


def both(srv, m, *names):
    return os.path.join(m.path, *names), os.path.join(srv.share_path, *names)


def uid_of(user):
    return pwd.getpwnam(user).pw_uid


def test_extensions_in_use(srv, m):
    assert IN_USE in m.log_text(), m.log_text()[-2000:]


def test_new_files_get_their_mode_and_the_users_owner(srv, m, umask0):
    """O_EXCL or not (Samba takes the mode from the POSIX create context, where ksmbd 6.1
    widens it), mkdir, mknod of a regular file, and setuid/setgid/sticky bits, which the
    share's 07777 masks let through."""
    user = pwd.getpwnam(DEFAULT_USER)
    made = []
    for name, flags, mode in (("excl-0640", os.O_EXCL, 0o640), ("creat-0640", 0, 0o640),
                              ("excl-0604", os.O_EXCL, 0o604), ("suid-4755", os.O_EXCL, 0o4755)):
        f, _ = both(srv, m, name)
        os.close(os.open(f, os.O_CREAT | os.O_WRONLY | flags, mode))
        made.append((name, stat.S_IFREG, mode))
    for name, mode in (("dir-0750", 0o750), ("sticky-1777", 0o1777), ("sgid-2775", 0o2775)):
        os.mkdir(os.path.join(m.path, name), mode)
        # mkdir(2) on Linux keeps the sticky bit of the mode, not setuid or setgid
        made.append((name, stat.S_IFDIR, mode & 0o1777))
    os.mknod(os.path.join(m.path, "mknod-0600"), stat.S_IFREG | 0o600)
    made.append(("mknod-0600", stat.S_IFREG, 0o600))
    for name, kind, mode in made:
        f, sf = both(srv, m, name)
        st, sst = os.stat(f), os.stat(sf)
        assert ids(sst) == (kind, mode, user.pw_uid, user.pw_gid), (name, oct(sst.st_mode))
        assert ids(st) == ids(sst), (name, oct(st.st_mode), st.st_uid, st.st_gid)
        assert st.st_ino == sst.st_ino and st.st_nlink == sst.st_nlink, name


def test_umask_shapes_the_mode(srv, m):
    """The kernel applies the process's umask before the mode reaches the server."""
    old = os.umask(0o027)
    try:
        os.close(os.open(os.path.join(m.path, "u027"), os.O_CREAT | os.O_WRONLY, 0o666))
        os.mkdir(os.path.join(m.path, "d027"), 0o777)
        os.umask(0)
        os.close(os.open(os.path.join(m.path, "u000"), os.O_CREAT | os.O_WRONLY, 0o666))
        os.mkdir(os.path.join(m.path, "d000"), 0o777)
    finally:
        os.umask(old)
    for name, mode in (("u027", 0o640), ("d027", 0o750), ("u000", 0o666), ("d000", 0o777)):
        f, sf = both(srv, m, name)
        assert stat.S_IMODE(os.stat(sf).st_mode) == mode, (name, oct(os.stat(sf).st_mode))
        assert ids(os.stat(f)) == ids(os.stat(sf)), name


def test_chmod(srv, m, umask0):
    """chmod sets the permission bits on the server; setuid, setgid and sticky bits are
    dropped by Samba 4.22 (it applies the mode ACE's 0777 only)."""
    f, sf = both(srv, m, "chmod-me")
    os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o644))
    for mode in (0o604, 0o750, 0o444, 0o000, 0o640, 0o4755, 0o2711):
        os.chmod(f, mode)
        assert stat.S_IMODE(os.stat(sf).st_mode) == mode & 0o777, oct(mode)
        assert ids(os.stat(f)) == ids(os.stat(sf)), oct(mode)
    d, sd = both(srv, m, "chmod-dir")
    os.mkdir(d, 0o755)
    for mode in (0o711, 0o1777, 0o700):
        os.chmod(d, mode)
        assert stat.S_IMODE(os.stat(sd).st_mode) == mode & 0o777, oct(mode)
        assert ids(os.stat(d)) == ids(os.stat(sd)), oct(mode)


def test_owners_and_groups_from_the_server(srv, m, gid):
    """By lookup and in a listing: ids without an account (Unix SIDs), root's, the test
    user's own and its group's, and another Samba user's (its SAM SID, mapped by name)."""
    srv.add_user(OTHER_USER, OTHER_PASSWORD)
    d, sd = both(srv, m, "ids")
    os.mkdir(sd)
    user = pwd.getpwnam(DEFAULT_USER)
    want = {"nobody-ids": (4242, 4343), "root": (0, 0), "user": (user.pw_uid, user.pw_gid),
            "user-group": (user.pw_uid, gid), "other-user": (uid_of(OTHER_USER), gid)}
    for name, (u, g) in want.items():
        with open(os.path.join(sd, name), "w") as fh:
            fh.write(name)
        os.chown(os.path.join(sd, name), u, g)
    for name, (u, g) in want.items():
        st = os.stat(os.path.join(d, name))
        assert (st.st_uid, st.st_gid) == (u, g), (name, st)
    listed = {e.name: e.stat(follow_symlinks=False) for e in os.scandir(d)}
    assert sorted(listed) == sorted(want)
    for name, (u, g) in want.items():
        assert (listed[name].st_uid, listed[name].st_gid) == (u, g), name


def test_chown_is_refused_without_dos_filemode(srv, m, gid):
    """Samba gives the owner no WRITE_OWNER unless the share has `dos filemode = yes`:
    every chown fails with EPERM, also to the owner the file has, and nothing changes."""
    f, sf = both(srv, m, "chown-me")
    os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o644))
    before = os.stat(sf)
    for uid, g in ((-1, gid), (before.st_uid, -1), (0, -1), (-1, 0)):
        with pytest.raises(PermissionError):
            os.chown(f, uid, g)
    after = os.stat(sf)
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert ids(os.stat(f)) == ids(after)


def test_chown_where_samba_allows_it(samba_factory, mount_factory, gid):
    """With `dos filemode = yes`: a group the user is in and the user's own uid are taken,
    another group or owner is refused (EPERM), and the server's file says the same."""
    srv = samba_factory(posix=True, extra_share=["dos filemode = yes"])
    m = mount_factory(srv, options=["posix", "actimeo=0"])
    f, sf = both(srv, m, "chown-me")
    os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o644))
    user = pwd.getpwnam(DEFAULT_USER)
    os.chown(f, -1, gid)
    assert (os.stat(sf).st_uid, os.stat(sf).st_gid) == (user.pw_uid, gid)
    assert ids(os.stat(f)) == ids(os.stat(sf))
    os.chown(f, user.pw_uid, user.pw_gid)
    assert (os.stat(sf).st_uid, os.stat(sf).st_gid) == (user.pw_uid, user.pw_gid)
    assert ids(os.stat(f)) == ids(os.stat(sf))
    for uid, g in ((0, -1), (-1, 0), (4242, -1)):
        with pytest.raises(PermissionError):
            os.chown(f, uid, g)
        assert (os.stat(sf).st_uid, os.stat(sf).st_gid) == (user.pw_uid, user.pw_gid)
    assert ids(os.stat(f)) == ids(os.stat(sf))


def test_hard_links_nlink_and_inode(srv, m):
    f, sf = both(srv, m, "link-a")
    g, sg = both(srv, m, "link-b")
    with open(f, "w") as fh:
        fh.write("linked")
    assert os.stat(f).st_nlink == os.stat(sf).st_nlink == 1
    os.link(f, g)
    st_f, st_g, sst = os.stat(f), os.stat(g), os.stat(sf)
    assert sst.st_nlink == 2 and st_f.st_nlink == 2 and st_g.st_nlink == 2
    assert st_f.st_ino == st_g.st_ino == sst.st_ino == os.stat(sg).st_ino
    os.link(sf, os.path.join(srv.share_path, "link-c"))  # a third, made on the server
    assert os.stat(f).st_nlink == 3 and os.stat(os.path.join(m.path, "link-c")).st_nlink == 3
    os.unlink(g)
    os.unlink(os.path.join(m.path, "link-c"))
    assert os.stat(f).st_nlink == os.stat(sf).st_nlink == 1


def test_st_ino_stable_across_remount_blocks_and_size(srv, m, mount_factory):
    f, sf = both(srv, m, "blocks")
    with open(f, "wb") as fh:
        fh.write(os.urandom(1 << 20) + b"tail")
    os.mkdir(os.path.join(m.path, "dir"))
    st, sst = os.stat(f), os.stat(sf)
    assert st.st_size == sst.st_size == (1 << 20) + 4
    assert st.st_blocks == sst.st_blocks and st.st_blocks >= 2048, (st.st_blocks, sst.st_blocks)
    before = (st.st_ino, os.stat(os.path.join(m.path, "dir")).st_ino)
    assert before == (sst.st_ino, os.stat(os.path.join(srv.share_path, "dir")).st_ino)
    m2 = mount_factory(srv, options=["posix"])
    after = (os.stat(os.path.join(m2.path, "blocks")).st_ino,
             os.stat(os.path.join(m2.path, "dir")).st_ino)
    assert after == before


def test_special_files_made_on_the_server(srv, m):
    """A FIFO, a socket and two device nodes made in the share show with their type, mode,
    owner and device numbers (Samba gives the numbers in an NFS reparse point), by lookup
    and in a listing."""
    import socket
    s = srv.share_path
    os.mkfifo(os.path.join(s, "fifo"), 0o640)
    os.mknod(os.path.join(s, "chr"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.mknod(os.path.join(s, "blk"), stat.S_IFBLK | 0o660, os.makedev(7, 300))
    sk = socket.socket(socket.AF_UNIX)
    try:
        sk.bind(os.path.join(s, "sock"))
        names = ("fifo", "chr", "blk", "sock")
        for name in names:
            st, sst = os.lstat(os.path.join(m.path, name)), os.lstat(os.path.join(s, name))
            assert ids(st) == ids(sst), (name, oct(st.st_mode), oct(sst.st_mode))
            assert st.st_rdev == sst.st_rdev, (name, st.st_rdev, sst.st_rdev)
            assert st.st_ino == sst.st_ino, name
        listed = {e.name: e for e in os.scandir(m.path)}
        assert listed["fifo"].is_file() is False and stat.S_ISFIFO(
            listed["fifo"].stat(follow_symlinks=False).st_mode)
        for name in names:
            st = listed[name].stat(follow_symlinks=False)
            sst = os.lstat(os.path.join(s, name))
            assert ids(st) == ids(sst) and st.st_rdev == sst.st_rdev, name
    finally:
        sk.close()


def test_special_files_cannot_be_made(srv, m):
    """Samba 4.22 takes only permission bits from the POSIX create context: mknod of a FIFO,
    socket or device node is refused with EPERM and a log line, and nothing is made."""
    for name, mode, dev in (("fifo", stat.S_IFIFO | 0o644, 0),
                            ("chr", stat.S_IFCHR | 0o644, os.makedev(1, 3)),
                            ("blk", stat.S_IFBLK | 0o644, os.makedev(7, 0)),
                            ("sock", stat.S_IFSOCK | 0o644, 0)):
        p, sp = both(srv, m, name)
        with pytest.raises(PermissionError):
            os.mknod(p, mode, dev)
        assert not os.path.lexists(sp) and not os.path.lexists(p)
    log = m.log_text()
    for what in ("FIFO", "device node", "socket"):
        assert f"cannot make a {what} over SMB (the POSIX extensions" in log, what


def test_symlinks_made_on_the_server(srv, m):
    """The server's symlinks are symlinks through the mount: type, owner and size as lstat
    says there, the target readlink says there (Samba's symlink reparse point), and the
    kernel follows them.  An absolute target inside the link's own directory comes
    relative: Samba rewrites it so (files.c read_symlink_reparse)."""
    s = srv.share_path
    os.mkdir(os.path.join(s, "sub"))
    with open(os.path.join(s, "sub", "file"), "w") as fh:
        fh.write("through the link")
    links = {"rel": "sub/file", "dangling": "no/such/target", "outside": "/etc/hostname",
             "to-dir": "sub", "dotdot": "../elsewhere"}
    for name, target in links.items():
        os.symlink(target, os.path.join(s, name))
    os.symlink(os.path.join(s, "sub", "file"), os.path.join(s, "sub", "abs-in-dir"))
    for name, target in links.items():
        p, sp = both(srv, m, name)
        st, sst = os.lstat(p), os.lstat(sp)
        assert stat.S_ISLNK(st.st_mode), (name, oct(st.st_mode))
        assert ids(st) == ids(sst) and st.st_size == sst.st_size == len(target), name
        assert os.readlink(p) == os.readlink(sp) == target, name
    assert os.readlink(os.path.join(m.path, "sub", "abs-in-dir")) == "file"
    with open(os.path.join(m.path, "rel")) as fh:
        assert fh.read() == "through the link"
    assert sorted(os.listdir(os.path.join(m.path, "to-dir"))) == ["abs-in-dir", "file"]
    listed = {e.name: e for e in os.scandir(m.path)}
    for name in links:
        assert listed[name].is_symlink(), name
    # the mount removes and renames a link itself, not its target
    os.rename(os.path.join(m.path, "rel"), os.path.join(m.path, "rel2"))
    assert os.readlink(os.path.join(s, "rel2")) == "sub/file"
    os.unlink(os.path.join(m.path, "rel2"))
    assert not os.path.lexists(os.path.join(s, "rel2"))
    assert os.path.exists(os.path.join(s, "sub", "file"))


def test_symlinks_made_through_the_mount(srv, m, mount_factory):
    """Samba 4.22 makes no symlink over SMB (a reparse point it stores is no symlink on its
    disk): with mfsymlinks the mount writes a Minshall+French file, owned by the user as
    the server says; without, symlink(2) is EPERM."""
    mf = mount_factory(srv, options=["posix", "mfsymlinks", "actimeo=0"])
    link, slink = os.path.join(mf.path, "a-link"), os.path.join(srv.share_path, "a-link")
    os.symlink("some/target", link)
    assert os.readlink(link) == "some/target"
    st, sst = os.lstat(link), os.lstat(slink)
    assert stat.S_ISLNK(st.st_mode) and stat.S_ISREG(sst.st_mode) and sst.st_size == 1067
    assert (st.st_uid, st.st_gid) == (sst.st_uid, sst.st_gid) == \
        (uid_of(DEFAULT_USER), pwd.getpwnam(DEFAULT_USER).pw_gid)
    with pytest.raises(PermissionError):
        os.symlink("x", os.path.join(m.path, "no-link"))
    assert not os.path.lexists(os.path.join(srv.share_path, "no-link"))


def test_listing_of_the_share_root(srv, m, umask0):
    """The root lists what the server's root holds (the ksmbd guest's root listed empty),
    "." and ".." once each with "." the root's inode, and each entry with its type, mode,
    owner and inode as the server has them."""
    s = srv.share_path
    with open(os.path.join(s, "made-on-server"), "w") as fh:
        fh.write("x")
    os.mkdir(os.path.join(s, "dir-on-server"), 0o751)
    os.symlink("made-on-server", os.path.join(s, "link-on-server"))
    os.close(os.open(os.path.join(m.path, "made-by-mount"), os.O_CREAT | os.O_WRONLY, 0o600))
    os.mkdir(os.path.join(m.path, "dir-by-mount"), 0o700)
    assert sorted(os.listdir(m.path)) == sorted(os.listdir(s))
    assert len(os.listdir(m.path)) == 5
    out = subprocess.run(["ls", "-1ai", m.path], capture_output=True, text=True, check=True)
    rows = [ln.split(None, 1) for ln in out.stdout.splitlines()]
    names = [r[1] for r in rows]
    assert names.count(".") == 1 and names.count("..") == 1, out.stdout
    assert int(rows[names.index(".")][0]) == os.stat(m.path).st_ino
    for e in os.scandir(m.path):
        sst = os.lstat(os.path.join(s, e.name))
        st = e.stat(follow_symlinks=False)
        assert ids(st) == ids(sst), (e.name, oct(st.st_mode), oct(sst.st_mode))
        assert e.inode() == sst.st_ino, e.name
        assert e.is_dir(follow_symlinks=False) == stat.S_ISDIR(sst.st_mode), e.name
        assert e.is_symlink() == stat.S_ISLNK(sst.st_mode), e.name


WINDOWS_REJECTS = ["back\\slash", "co:lon", "trail.", "trail ", " lead", "lt<gt>", 'q"?*|',
                   "CON", "aux.txt"]


def test_posix_pathnames(srv, m):
    """Names Windows rejects are names: made through the mount they are the same bytes on
    the server, made on the server they list and open through the mount; a directory whose
    name holds '\\' is a directory, not a path."""
    for i, name in enumerate(WINDOWS_REJECTS):
        p, sp = both(srv, m, name)
        with open(p, "w") as fh:
            fh.write(f"mount {i}")
        with open(sp) as fh:
            assert fh.read() == f"mount {i}", name
    sub = os.path.join(srv.share_path, "srv")
    os.mkdir(sub)
    srv.chown_to_user(sub)
    for i, name in enumerate(WINDOWS_REJECTS):
        with open(os.path.join(sub, name), "w") as fh:
            fh.write(f"server {i}")
    assert sorted(os.listdir(os.path.join(m.path, "srv"))) == sorted(WINDOWS_REJECTS)
    for i, name in enumerate(WINDOWS_REJECTS):
        with open(os.path.join(m.path, "srv", name)) as fh:
            assert fh.read() == f"server {i}", name
    d = os.path.join(m.path, "a\\b")
    os.mkdir(d)
    with open(os.path.join(d, "c:d"), "w") as fh:
        fh.write("deep")
    assert os.path.isdir(os.path.join(srv.share_path, "a\\b"))
    assert not os.path.exists(os.path.join(srv.share_path, "a"))
    with open(os.path.join(srv.share_path, "a\\b", "c:d")) as fh:
        assert fh.read() == "deep"
    os.rename(os.path.join(d, "c:d"), os.path.join(m.path, "srv", "e\\f."))
    assert os.path.exists(os.path.join(sub, "e\\f."))


def test_case_sensitive(srv, m):
    for name, data in (("Case", "upper"), ("case", "lower")):
        with open(os.path.join(m.path, name), "w") as fh:
            fh.write(data)
    assert sorted(n for n in os.listdir(srv.share_path) if n.lower() == "case") == \
        ["Case", "case"]
    with open(os.path.join(m.path, "Case")) as fh:
        assert fh.read() == "upper"
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(m.path, "CASE"))
    os.rename(os.path.join(m.path, "case"), os.path.join(m.path, "CASE"))
    assert sorted(n for n in os.listdir(srv.share_path) if n.lower() == "case") == \
        ["CASE", "Case"]
    with open(os.path.join(srv.share_path, "CASE")) as fh:
        assert fh.read() == "lower"


# ---- fallbacks ------------------------------------------------------------------------


def fallback_checks(srv, m):
    """The non-POSIX mapping: uid=/gid=/file_mode=/dir_mode= for every file, the server's
    mode not shown, chmod only of READONLY, chown refused, '\\' not a name's character."""
    f, sf = both(srv, m, "plain")
    with open(f, "w") as fh:
        fh.write("data")
    with open(sf) as fh:
        assert fh.read() == "data"
    os.mkdir(os.path.join(m.path, "dir"))
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o640)
    st = os.stat(os.path.join(m.path, "dir"))
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o750)
    assert os.stat(sf).st_uid == uid_of(DEFAULT_USER)  # the server's owner, not shown
    os.chmod(f, 0o444)
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o440  # READONLY: no write bits
    with pytest.raises(PermissionError):
        os.chown(f, 1, -1)
    with pytest.raises(OSError) as e:
        open(os.path.join(m.path, "back\\slash"), "w").close()
    assert e.value.errno == 22
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(m.path, "PLAIN-NOT-THERE"))


FALLBACK_OPTS = ["uid=4321", "gid=4322", "file_mode=0640", "dir_mode=0750", "actimeo=0"]


def test_posix_against_a_server_without_the_extensions(samba_factory, mount_factory):
    """`posix` against `smb3 unix extensions = no` (Samba's default): the mount says so in
    one line and keeps the non-POSIX mapping."""
    srv = samba_factory()
    m = mount_factory(srv, options=["posix"] + FALLBACK_OPTS)
    log = m.log_text()
    assert "posix: the server lacks the SMB3 POSIX extensions" in log, log[-2000:]
    assert IN_USE not in log
    fallback_checks(srv, m)


def test_posix_against_a_share_without_the_extensions(samba_factory, mount_factory):
    """The server offers the extensions ([global]) but the share turns them off: the mount
    finds out (its root's CREATE gets no POSIX context back), says so and falls back."""
    srv = samba_factory(posix=True, extra_share=["smb3 unix extensions = no"])
    m = mount_factory(srv, options=["posix"] + FALLBACK_OPTS)
    log = m.log_text()
    assert "posix: the server offers the SMB3 POSIX extensions, but not on this share" in log, \
        log[-2000:]
    assert IN_USE not in log
    fallback_checks(srv, m)


def test_a_posix_share_mounted_without_posix(srv, mount_factory):
    """Without `posix` a POSIX-capable share is mounted as today (noposix is the default)."""
    m = mount_factory(srv, options=FALLBACK_OPTS)
    log = m.log_text()
    assert "noposix: owner uid=4321 gid=4322" in log, log[-2000:]
    assert IN_USE not in log
    fallback_checks(srv, m)
