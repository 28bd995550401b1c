"""DFS namespaces ([MS-DFSC]) in the lab of tests/lib/dfslab.py: one network
namespace, server A (10.88.0.1) a DFS root "dfsroot" with
    link1 -> \\\\10.88.0.2\\data (B), then \\\\10.88.0.3\\data (C)
    link2 -> \\\\10.88.0.3\\data2 (C)
and ordinary entries (rootfile.txt, rootdir/). Each target share holds a
share-id.txt naming it ("B 10.88.0.2 data\\n").

test_dfs_lab_* check the lab itself with smbclient, which follows DFS
referrals (and tries a link's targets in order): they pass without the
client. test_dfs_client_* mount the root with mount.smbrdma (run in the
namespace) and check what a DFS-aware client must do: links are directories
whose contents are the target share's, I/O below a link reaches the target
server, a rename between two servers fails with EXDEV, and when link1's first
target dies the client moves to the second with no error to a writer. They
fail with a client that does not follow referrals."""

import errno
import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

import lib.dfslab
import lib.mount
from lib.mount import is_mounted
from lib.dfslab import ADDRS, PREFIX, ROOT_FILES, SHARE_ID, DfsLab, netns_list
from lib.fileops import make_random_file, read_bytes, sha256, write_bytes

# the lab's fixture, for pytest to find here (an assignment, not an import
# that pyflakes would call unused)
dfslab_factory = lib.dfslab.dfslab_factory
ROOT_NAMES = sorted(["link1", "link2"] + [p for p in ROOT_FILES if "/" not in p])


def _smb_names(out):
    """Names in an smbclient `ls` listing (the name column: everything
    before the attribute letters and size)."""
    names = []
    for ln in out.splitlines():
        m = re.match(r"^  (.+?)\s+[A-Za-z]*\s+\d+\s+\w{3} \w{3} +\d+ [\d:]+ \d{4}$", ln)
        if m and m.group(1) not in (".", ".."):
            names.append(m.group(1))
    return sorted(names)


def _ours():
    return [ns for ns in netns_list() if ns.startswith(f"{PREFIX}{os.getpid()}-")]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# the lab itself ------------------------------------------------------------

def test_dfs_lab_smbclient(dfslab_factory, tmp_path):
    lab = dfslab_factory()
    b_data, c_data = lab.link_dirs("link1")
    (c_data2,) = lab.link_dirs("link2")
    assert lab.share_dir("B", "data") == b_data and lab.share_dir("C", "data") == c_data
    assert len({b_data, c_data, c_data2, lab.root_dir}) == 4

    # the namespace: only lo, the three addresses, one smbd on each, no way out
    addrs = lab.ns_cmd(["ip", "-4", "-br", "addr"]).stdout
    assert addrs.split()[0] == "lo" and len(addrs.splitlines()) == 1, addrs
    for a in ADDRS:
        assert f"{a}/32" in addrs, addrs
    listening = sorted(re.findall(r"(\S+):445\s", lab.ns_cmd(["ss", "-Hltn"]).stdout))
    assert listening == ADDRS
    assert "default" not in lab.ns_cmd(["ip", "-4", "route", "show", "table", "all"]).stdout
    r = lab.ns_cmd(["ip", "route", "get", "8.8.8.8"], check=False)
    assert r.returncode != 0 and "unreachable" in r.stderr, r
    # and the host cannot reach the lab's addresses
    r = subprocess.run(["ip", "route", "get", ADDRS[0]], capture_output=True, text=True)
    assert "dev lo" not in r.stdout, r.stdout

    # the root: its own entries and the links (Samba shows a link as a
    # directory with a reparse point, "Dr")
    r = lab.smbclient("ls")
    assert _smb_names(r.stdout) == ROOT_NAMES, r.stdout
    for link in ("link1", "link2"):
        assert re.search(rf"^  {link}\s+DR?r?\s", r.stdout, re.M | re.I), r.stdout
        assert os.readlink(os.path.join(lab.root_dir, link)) == lab.msdfs_target(link)
    assert lab.msdfs_target("link1") == "msdfs:10.88.0.2\\data,10.88.0.3\\data"
    assert lab.msdfs_target("link2") == "msdfs:10.88.0.3\\data2"

    # through the links: the target shares' contents and their connections
    r = lab.smbclient("ls link1\\*")
    assert _smb_names(r.stdout) == [SHARE_ID], r.stdout
    r = lab.smbclient("cd link1; showconnect")
    assert r.stdout.split()[0] == "//10.88.0.2/data", r.stdout
    r = lab.smbclient("cd link2; showconnect")
    assert r.stdout.split()[0] == "//10.88.0.3/data2", r.stdout
    lab.smbclient(f"get link1\\{SHARE_ID} {tmp_path}/id1; get link2\\{SHARE_ID} {tmp_path}/id2;"
                  f" get rootfile.txt {tmp_path}/rf")
    assert read_bytes(f"{tmp_path}/id1") == b"B 10.88.0.2 data\n"
    assert read_bytes(f"{tmp_path}/id2") == b"C 10.88.0.3 data2\n"
    assert read_bytes(f"{tmp_path}/rf") == ROOT_FILES["rootfile.txt"]

    # a put through a link lands on the target server's disk, and nowhere else
    src = make_random_file(str(tmp_path / "src"), 1)
    lab.smbclient(f"put {src} link1\\f1; put {src} link2\\g2; mkdir link1\\d1;"
                  f" get link1\\f1 {tmp_path}/f1back; get link2\\g2 {tmp_path}/g2back")
    assert sha256(os.path.join(b_data, "f1")) == sha256(src)
    assert os.path.isdir(os.path.join(b_data, "d1"))
    assert sha256(os.path.join(c_data2, "g2")) == sha256(src)
    assert sha256(f"{tmp_path}/f1back") == sha256(src) == sha256(f"{tmp_path}/g2back")
    assert sorted(os.listdir(c_data)) == [SHARE_ID]
    assert sorted(os.listdir(lab.root_dir)) == ROOT_NAMES
    r = lab.smbclient("ls link1\\*")
    assert _smb_names(r.stdout) == sorted(os.listdir(b_data)), r.stdout

    # link1's second target: with B down, smbclient follows the referral to C
    b_pid = lab.server(1).proc.pid
    lab.stop_server(1)
    assert not _alive(b_pid)
    assert "10.88.0.2:445" not in lab.ns_cmd(["ss", "-Hltn"]).stdout
    r = lab.smbclient("cd link1; showconnect; ls")
    assert "//10.88.0.3/data" in r.stdout.split(), r.stdout + r.stderr
    assert _smb_names(r.stdout) == [SHARE_ID], r.stdout
    lab.smbclient(f"put {src} link1\\while-b-down")
    assert sha256(os.path.join(c_data, "while-b-down")) == sha256(src)
    assert not os.path.exists(os.path.join(b_data, "while-b-down"))
    # and back on B once it is up again, with B's share as it was
    lab.start_server(1)
    r = lab.smbclient("cd link1; showconnect; ls")
    assert r.stdout.split()[0] == "//10.88.0.2/data", r.stdout
    assert _smb_names(r.stdout) == sorted([SHARE_ID, "d1", "f1"]), r.stdout
    d = lab.describe()
    assert d["ns"] == lab.ns and [s["addr"] for s in d["servers"]] == ADDRS
    assert d["links"]["link1"]["dirs"] == [b_data, c_data]


def test_dfs_lab_teardown_and_stale_cleanup(tmp_path):
    """close() leaves nothing; nor does a lab whose process was SIGKILLed,
    once the next lab starts."""
    if os.geteuid() != 0:
        pytest.skip("not root: the DFS lab needs root")
    lab = DfsLab()
    with lab:
        ns = lab.ns
        pids = [s.proc.pid for s in lab.servers]
        dirs = [s.dir for s in lab.servers]
        mps = [s.share_path for s in lab.servers] + lab.link_dirs("link2")
        helper = lab.ns_popen(["sleep", "600"])
        assert ns in netns_list() and all(is_mounted(p) for p in mps)
    assert ns not in netns_list()
    assert not any(_alive(p) for p in pids) and helper.poll() is not None
    assert not any(is_mounted(p) for p in mps) and not any(os.path.exists(d) for d in dirs)

    # a lab in a process that dies without closing it
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    holder = subprocess.Popen([sys.executable, "-m", "lib.dfslab"], cwd=tests,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        import json
        line = holder.stdout.readline()
        assert line, "python3 -m lib.dfslab printed nothing"
        desc = json.loads(line)
        assert desc["ns"].startswith(f"{PREFIX}{holder.pid}-")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    stale_pids = [s["pid"] for s in desc["servers"]]
    stale_mps = [p for s in desc["servers"] for p in s["shares"].values()]
    assert desc["ns"] in netns_list() and all(_alive(p) for p in stale_pids)
    assert all(is_mounted(p) for p in stale_mps)
    with DfsLab() as lab2:
        assert desc["ns"] not in netns_list()
        assert not any(_alive(p) for p in stale_pids)
        assert not any(is_mounted(p) for p in stale_mps)
        assert not any(os.path.exists(s["dir"]) for s in desc["servers"])
        assert lab2.smbclient("ls link1\\*").returncode == 0
    assert _ours() == []


# the client ----------------------------------------------------------------

@pytest.fixture
def dfs(dfslab_factory, fuse_required):
    """(lab, mount of //10.88.0.1/dfsroot made inside the lab's namespace)."""
    lab = dfslab_factory()
    return lab, lab.mount()


def test_dfs_client_root_lists_links_as_directories(dfs):
    lab, m = dfs
    assert sorted(os.listdir(m.path)) == ROOT_NAMES
    for link in ("link1", "link2"):
        st = os.stat(os.path.join(m.path, link))
        assert stat.S_ISDIR(st.st_mode), (link, oct(st.st_mode))
    assert read_bytes(os.path.join(m.path, "rootfile.txt")) == ROOT_FILES["rootfile.txt"]
    assert read_bytes(os.path.join(m.path, "rootdir", "inner.txt")) == \
        ROOT_FILES["rootdir/inner.txt"]
    # a link's directory is the target share's root
    assert read_bytes(os.path.join(m.path, "link1", SHARE_ID)) == b"B 10.88.0.2 data\n"
    assert read_bytes(os.path.join(m.path, "link2", SHARE_ID)) == b"C 10.88.0.3 data2\n"


def test_dfs_client_writes_land_on_the_target_servers(dfs, tmp_path):
    lab, m = dfs
    b_data, c_data = lab.link_dirs("link1")
    (c_data2,) = lab.link_dirs("link2")
    src = make_random_file(str(tmp_path / "src"), 3)
    data = read_bytes(src)
    f = os.path.join(m.path, "link1", "f")
    g = os.path.join(m.path, "link2", "g")
    write_bytes(f, data)
    write_bytes(g, data[::-1])
    os.mkdir(os.path.join(m.path, "link1", "dir"))
    write_bytes(os.path.join(m.path, "link1", "dir", "inner"), b"inner")
    assert read_bytes(f) == data
    assert read_bytes(g) == data[::-1]
    assert os.stat(f).st_size == len(data)
    # on the servers' disks: f and dir on B only, g on C's data2 only
    assert read_bytes(os.path.join(b_data, "f")) == data
    assert read_bytes(os.path.join(b_data, "dir", "inner")) == b"inner"
    assert read_bytes(os.path.join(c_data2, "g")) == data[::-1]
    assert sorted(os.listdir(c_data)) == [SHARE_ID]
    assert sorted(os.listdir(c_data2)) == sorted([SHARE_ID, "g"])
    assert sorted(os.listdir(lab.root_dir)) == ROOT_NAMES
    # two servers' files are two files, even when their numbers are alike
    assert os.stat(os.path.join(m.path, "link1", SHARE_ID)).st_ino != \
        os.stat(os.path.join(m.path, "link2", SHARE_ID)).st_ino
    # appended and overwritten in place, then seen on B
    write_bytes(f, b"tail", mode="ab")
    with open(f, "r+b") as fh:
        fh.seek(10)
        fh.write(b"XYZ")
    want = data[:10] + b"XYZ" + data[13:] + b"tail"
    assert read_bytes(f) == want
    assert read_bytes(os.path.join(b_data, "f")) == want


def test_dfs_client_listdir_of_link_is_the_target_share(dfs):
    lab, m = dfs
    b_data = lab.link_dirs("link1")[0]
    for i in range(5):
        p = os.path.join(b_data, f"on-disk-{i}")
        write_bytes(p, b"x" * i)
        lab.server(1).chown_to_user(p)
    os.mkdir(os.path.join(b_data, "subdir"))
    write_bytes(os.path.join(m.path, "link1", "via-mount"), b"m")
    assert sorted(os.listdir(os.path.join(m.path, "link1"))) == sorted(os.listdir(b_data))
    assert "via-mount" in os.listdir(b_data)
    assert os.stat(os.path.join(m.path, "link1", "on-disk-3")).st_size == 3
    assert sorted(os.listdir(os.path.join(m.path, "link2"))) == \
        sorted(os.listdir(lab.link_dirs("link2")[0]))


def test_dfs_client_missing_names_are_enoent(dfs):
    lab, m = dfs
    for rel in ("link1/nope", "link2/nope", "link1/nodir/nope", "link3", "link3/x",
                "rootdir/nope"):
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(m.path, rel))
    with pytest.raises(FileNotFoundError):
        open(os.path.join(m.path, "link1", "nope"), "rb")
    # and the link itself still works after those
    assert os.path.isdir(os.path.join(m.path, "link1"))
    assert SHARE_ID in os.listdir(os.path.join(m.path, "link1"))


def test_dfs_client_rename_within_a_link(dfs):
    lab, m = dfs
    b_data = lab.link_dirs("link1")[0]
    l1 = os.path.join(m.path, "link1")
    write_bytes(os.path.join(l1, "a"), b"contents of a")
    os.mkdir(os.path.join(l1, "sub"))
    os.rename(os.path.join(l1, "a"), os.path.join(l1, "b"))
    assert not os.path.exists(os.path.join(l1, "a"))
    assert read_bytes(os.path.join(l1, "b")) == b"contents of a"
    assert not os.path.exists(os.path.join(b_data, "a"))
    assert read_bytes(os.path.join(b_data, "b")) == b"contents of a"
    os.rename(os.path.join(l1, "b"), os.path.join(l1, "sub", "c"))
    assert read_bytes(os.path.join(b_data, "sub", "c")) == b"contents of a"
    os.rename(os.path.join(l1, "sub"), os.path.join(l1, "sub2"))
    assert sorted(os.listdir(l1)) == sorted([SHARE_ID, "sub2"]) == sorted(os.listdir(b_data))
    assert read_bytes(os.path.join(l1, "sub2", "c")) == b"contents of a"


def test_dfs_client_rename_across_servers_is_exdev(dfs, tmp_path):
    lab, m = dfs
    b_data = lab.link_dirs("link1")[0]
    c_data2 = lab.link_dirs("link2")[0]
    src = make_random_file(str(tmp_path / "src"), 1)
    x1 = os.path.join(m.path, "link1", "x")
    x2 = os.path.join(m.path, "link2", "x")
    write_bytes(x1, read_bytes(src))
    for frm, to in ((x1, x2), (x1, os.path.join(m.path, "rootdir", "x")),
                    (os.path.join(m.path, "rootfile.txt"), os.path.join(m.path, "link1", "r"))):
        with pytest.raises(OSError) as e:
            os.rename(frm, to)
        assert e.value.errno == errno.EXDEV, (frm, to, e.value)
    assert sha256(x1) == sha256(src) and not os.path.exists(x2)
    assert sorted(os.listdir(c_data2)) == [SHARE_ID]
    # so mv copies and unlinks: x moves from B to C's data2
    r = subprocess.run(["mv", x1, x2], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(x1) and not os.path.exists(os.path.join(b_data, "x"))
    assert sha256(x2) == sha256(src) == sha256(os.path.join(c_data2, "x"))


# the writer of the failover test: whole files of SIZE bytes, one after the
# other, each created, written, fsynced, closed, then opened again and read
# back; one line per event in the progress file (line-buffered):
#   start K T | done K T | error K STEP ERRNO MESSAGE
WRITER = textwrap.dedent("""
    import hashlib, os, sys, time
    d, progress, stop, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    def content(k):
        h = hashlib.sha256(b"dfs-failover-%d" % k).digest()
        return (h * (size // len(h) + 1))[:size]
    log = open(progress, "a", buffering=1)
    k = 0
    while not os.path.exists(stop):
        p = os.path.join(d, "w%05d" % k)
        log.write("start %d %.3f\\n" % (k, time.monotonic()))
        step, fd = "open", None
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            step = "write"
            data, off = content(k), 0
            while off < size:
                off += os.write(fd, data[off:])
            step = "fsync"
            os.fsync(fd)
            step = "close"
            fd, f = None, fd
            os.close(f)
            step = "reopen"
            with open(p, "rb") as fh:
                step = "read"
                back = fh.read()
            if back != data:
                log.write("error %d verify 0 read %d bytes, not the %d written\\n"
                          % (k, len(back), size))
            else:
                log.write("done %d %.3f\\n" % (k, time.monotonic()))
        except OSError as e:
            log.write("error %d %s %s %s\\n" % (k, step, e.errno, e.strerror))
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        k += 1
        time.sleep(0.02)
""")
FILE_SIZE = 256 * 1024


def _content(k):
    import hashlib
    h = hashlib.sha256(b"dfs-failover-%d" % k).digest()
    return (h * (FILE_SIZE // len(h) + 1))[:FILE_SIZE]


def _progress(path):
    started, done, errors = [], [], []
    try:
        with open(path) as f:
            for ln in f:
                w = ln.split()
                if len(w) >= 2 and ln.endswith("\n"):
                    {"start": started, "done": done, "error": errors}[w[0]].append(
                        int(w[1]) if w[0] != "error" else ln.strip())
    except FileNotFoundError:
        pass
    return started, done, errors


def _wait(cond, timeout, what, writer, progress, tolerated=()):
    """Until cond(); fails at once on a writer's error (other than on the
    files in tolerated), if the writer exits, or after timeout s."""
    deadline = time.monotonic() + timeout
    while not cond():
        errors = [e for e in _progress(progress)[2] if int(e.split()[1]) not in tolerated]
        assert not errors, f"the writer got errors before {what}:\n" + "\n".join(errors[:5])
        assert writer.poll() is None, f"the writer exited ({writer.returncode}) before {what}"
        assert time.monotonic() < deadline, \
            f"{what}: not within {timeout} s; progress:\n" + open(progress).read()[-3000:]
        time.sleep(0.05)


def test_dfs_client_failover_to_the_second_target(dfs, tmp_path):
    """A writer of whole files under link1 runs while B, link1's first
    target, is killed: the client moves to C, link1's second target, and the
    writer goes on with no error. B's and C's "data" are different
    directories (no replication), so
     - every file the writer had finished when the kill began is on B's
       disk, intact;
     - every file it started after the kill is on C's disk, intact, and not
       on B's, and none of them got an error;
     - the file(s) in flight across the kill (one, seldom two) may fail or
       be lost: a handle open on B cannot move to C with its data. What
       happened to them is printed; if the writer verified one, it is on B
       or on C, intact.
    Afterwards link1 shows C's share (its share-id.txt, its listing)."""
    lab, m = dfs
    b_data, c_data = lab.link_dirs("link1")
    l1 = os.path.join(m.path, "link1")
    progress, stop = str(tmp_path / "progress"), str(tmp_path / "stop")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, l1, progress, stop,
                               str(FILE_SIZE)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        _wait(lambda: len(_progress(progress)[1]) >= 10, 20, "10 files written on B",
              writer, progress)
        done_on_b = set(_progress(progress)[1])
        t_kill = time.monotonic()
        lab.stop_server(1)
        started, _, _ = _progress(progress)
        last_before = max(started)
        window = [k for k in range(last_before + 1) if k not in done_on_b]
        _wait(lambda: len([k for k in _progress(progress)[1] if k > last_before]) >= 20,
              40, "20 files written after B was killed", writer, progress, window)
        t_moved = time.monotonic() - t_kill
        write_bytes(stop, b"")
        out, _ = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            write_bytes(stop, b"")
            try:
                writer.wait(timeout=15)
            except subprocess.TimeoutExpired:
                writer.kill()
                writer.wait(timeout=10)
    assert writer.returncode == 0, out
    started, done, errors = _progress(progress)
    print(f"B killed after {len(done_on_b)} files; in flight across the kill: {window}; "
          f"20 more files {t_moved:.1f} s after the kill; {len(done)} files in all")
    window_errors = [e for e in errors if int(e.split()[1]) in window]
    if window_errors:
        print("in flight across the kill:", window_errors)
    assert [e for e in errors if int(e.split()[1]) not in window] == [], errors
    after = [k for k in done if k > last_before]
    assert after == list(range(last_before + 1, last_before + 1 + len(after)))
    for k in done_on_b:
        assert read_bytes(os.path.join(b_data, "w%05d" % k)) == _content(k), k
    for k in window:
        name = "w%05d" % k
        where = [d for d in (b_data, c_data) if os.path.exists(os.path.join(d, name))
                 and read_bytes(os.path.join(d, name)) == _content(k)]
        print(f"w{k:05d} (in flight): {'done' if k in done else 'not done'}, intact on "
              f"{['B' if d == b_data else 'C' for d in where] or 'neither'}")
        if k in done:
            assert where, f"{name} was verified by the writer but is on neither disk"
    for k in after:
        name = "w%05d" % k
        assert read_bytes(os.path.join(c_data, name)) == _content(k), k
        assert not os.path.exists(os.path.join(b_data, name)), k
    # link1 is C's data now, through the mount as well
    assert read_bytes(os.path.join(l1, SHARE_ID)) == b"C 10.88.0.3 data\n"
    assert sorted(os.listdir(l1)) == sorted(os.listdir(c_data))
    for k in after[-3:]:
        assert read_bytes(os.path.join(l1, "w%05d" % k)) == _content(k), k


# 10 s: B is killed 2.5 s in (the move to C takes some 15 ms), and fio goes
# round its 64 MiB file on C for the rest; higher for a soak (it was 20 s).
FIO_RUNTIME = int(os.environ.get("SMBRDMA_DFS_FIO_RUNTIME", "10"))


def test_dfs_client_failover_of_replicas_under_verified_fio(dfslab_factory, fuse_required,
                                                             need_fio):
    """A link whose two targets hold the same files (B and C serve one
    directory, as replicas or a cluster file system do) carries a verified
    fio write; B, the target in use, is killed mid-run. The client moves to
    C, reopens the file there by its path and sends again what was in
    flight: fio sees no error and its verify (every block read back) passes,
    and the link now shows C with one move."""
    lab = dfslab_factory(links={"rep": [(1, "rep"), (2, "rep")]}, replicated={"rep"})
    m = lab.mount()
    f = os.path.join(m.path, "rep", "v.bin")
    fio = subprocess.Popen(
        ["fio", "--name=dfs", f"--filename={f}", "--rw=write", "--size=64M", "--bs=256k",
         "--direct=1", "--ioengine=libaio", "--iodepth=8", "--verify=crc32c",
         "--verify_fatal=1", "--verify_state_save=0", "--time_based",
         f"--runtime={FIO_RUNTIME}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(min(5, FIO_RUNTIME / 4))
        assert fio.poll() is None, fio.communicate()[0][-3000:]
        t_kill = time.monotonic()
        lab.stop_server(1)
        out, _ = fio.communicate(timeout=FIO_RUNTIME + 180)
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait(timeout=30)
    assert fio.returncode == 0, out[-3000:]
    # fio verifies as it goes round the file (the write phase takes the
    # whole runtime): the reads are its verify
    assert " err= 0" in out and "READ: bw=" in out, out[-3000:]
    log = m.log_text()
    moved = [ln for ln in log.splitlines() if "moving to" in ln]
    assert moved and "\\\\10.88.0.3\\rep" in moved[0], log[-3000:]
    counts = [tuple(int(x) for x in mm) for mm in
              re.findall(r"(\d+) handles reopened durably, (\d+) by path, (\d+) lost", log)]
    assert counts and all(lost == 0 for _, _, lost in counts), (counts, log[-3000:])
    r = subprocess.run([os.path.join(lib.mount.build_dir(), "tools", "smbrdmactl"), "dfs",
                        m.path, "--json"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    links = {x["path"]: x for x in json.loads(r.stdout)["dfs_links"]}
    assert links["rep"]["current"] == "\\\\10.88.0.3\\rep", links
    assert links["rep"]["moves"] == 1, links
    assert os.path.getsize(os.path.join(lab.share_dir(2, "rep"), "v.bin")) == 64 << 20
    print(f"B killed {time.monotonic() - t_kill:.1f} s before fio ended; the move: {moved[0]}")
