"""Issue 7: the connection to the server is lost and comes back.

- The smbd process serving the mount is killed in the middle of a verified
  fio write (and of a verified read): the client reconnects, opens a new
  session, reopens its handles (durable v2 reconnect where Samba granted
  durability - `posix locking = no` - else by path), sends what was in
  flight again, and fio's verify passes.
- The server is stopped (SIGSTOP) for longer than timeout=: calls fail
  with ETIMEDOUT instead of hanging, `ls` of the mount point returns an
  error within the timeout, and after SIGCONT the mount works again.
"""

import errno
import mmap
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from lib.fileops import MIB, make_random_file, sha256
from test_smbrdmactl import check_types, ctl_json, documented_keys

# 12 s holds two kills and the recovery from each (a reconnect takes some
# 10 ms here; under ASan a few times that), with seconds of verified I/O
# after each; set it higher for a soak (the suite ran 60 s, then 30 s, until
# its CI time neared the limit).
RUNTIME = int(os.environ.get("SMBRDMA_RECONNECT_FIO_RUNTIME", "12"))
DURABLE = ["posix locking = no"]  # Samba grants durable handles only then


def _serving_pids(srv):
    """PIDs of the smbd processes holding an established connection on the
    fixture's port (one per client connection)."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( sport = :{srv.port} )"],
                         capture_output=True, text=True, check=True).stdout
    return sorted({int(p) for p in re.findall(r"pid=(\d+)", out)})


def _kill_serving(srv):
    pids = _serving_pids(srv)
    assert pids, "no smbd serves the mount"
    for p in pids:
        os.kill(p, signal.SIGKILL)
    return pids


def _fio(args, runtime=None):
    """runtime: run that long (time_based); None: one pass over --size."""
    timed = ["--time_based", f"--runtime={runtime}"] if runtime else []
    return subprocess.Popen(["fio", "--name=rc", "--direct=1", "--ioengine=libaio",
                             "--iodepth=8", "--bs=256k", "--verify=crc32c", "--verify_fatal=1",
                             "--verify_state_save=0"] + timed + args,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _reconnects(m):
    return sum(c["reconnects"] for c in ctl_json("stats", m.path)["channels"])


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "by-path"])
def test_kill_smbd_during_verified_write(samba_factory, mount_factory, need_fio, durable):
    srv = samba_factory(extra_global=DURABLE if durable else [])
    m = mount_factory(srv, options=["timeout=30"])
    f = os.path.join(m.path, "w.bin")
    subprocess.run(["truncate", "-s", "128M", f], check=True)
    fio = _fio([f"--filename={f}", "--rw=write", "--size=128M"], RUNTIME)
    time.sleep(min(5, RUNTIME / 4))
    killed = _kill_serving(srv)
    time.sleep(min(5, RUNTIME / 4))
    if RUNTIME >= 8:
        killed += _kill_serving(srv)  # and once more, on the new session
    out, _ = fio.communicate(timeout=RUNTIME + 120)
    assert fio.returncode == 0, out[-3000:]
    log = m.log_text()
    assert "reconnected" in log, log[-3000:]
    assert _reconnects(m) >= 1
    counts = [tuple(int(x) for x in mm) for mm in
              re.findall(r"(\d+) handles reopened durably, (\d+) by path, (\d+) lost", log)]
    assert counts, log[-3000:]
    assert all(lost == 0 for _, _, lost in counts), counts
    if not durable:
        assert all(d == 0 for d, _, _ in counts), counts
    # the file on the server is what fio wrote and verified: read it back
    assert os.path.getsize(os.path.join(srv.share_path, "w.bin")) == 128 << 20
    print(f"killed smbd {killed}; reconnect lines:",
          [l for l in log.splitlines() if "reconnect" in l][-4:])


def test_connection_cut_reopens_durably(samba_factory, mount_factory, tmp_path):
    """A cut connection (ss -K: the server's smbd lives on and keeps the
    durable handle for us): the open file descriptor keeps working, through
    a durable v2 reconnect of its handle."""
    srv = samba_factory(extra_global=DURABLE)
    m = mount_factory(srv, options=["timeout=30"])
    path = os.path.join(m.path, "d.bin")
    first, second = os.urandom(1 << 20), os.urandom(1 << 20)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, first, 0)
        os.fsync(fd)
        r = subprocess.run(["ss", "-K", "dst", "127.0.0.1", "dport", "=", str(srv.port)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        os.pwrite(fd, second, 1 << 20)
        os.fsync(fd)
        assert os.pread(fd, 1 << 20, 0) == first
    finally:
        os.close(fd)
    with open(os.path.join(srv.share_path, "d.bin"), "rb") as f:
        assert f.read() == first + second
    log = m.log_text()
    counts = [tuple(int(x) for x in mm) for mm in
              re.findall(r"(\d+) handles reopened durably, (\d+) by path, (\d+) lost", log)]
    assert counts and counts[-1][0] >= 1 and counts[-1][2] == 0, (counts, log[-2000:])
    assert _reconnects(m) >= 1


def test_kill_smbd_during_verified_reads(samba_factory, mount_factory, tmp_path):
    """Reads of a known file, O_DIRECT, back to back for RUNTIME s; smbd is
    killed twice meanwhile; every read returns the file's exact bytes."""
    srv = samba_factory(extra_global=DURABLE)
    m = mount_factory(srv, options=["timeout=30"])
    src = tmp_path / "src.bin"
    make_random_file(src, 32)
    want = sha256(str(src))
    subprocess.run(["cp", str(src), os.path.join(srv.share_path, "r.bin")], check=True)
    f = os.path.join(m.path, "r.bin")
    result = {"reads": 0, "bad": [], "err": None}
    stop = time.monotonic() + RUNTIME

    def reader():
        try:
            while time.monotonic() < stop:
                dd = subprocess.run(f"dd if={f} iflag=direct bs=1M status=none | sha256sum",
                                    shell=True, capture_output=True, text=True, timeout=120)
                got = dd.stdout.split()[0] if dd.stdout else ""
                if dd.returncode != 0 or dd.stderr or got != want:
                    result["bad"].append((dd.returncode, dd.stderr[-300:], got))
                result["reads"] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            result["err"] = repr(e)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(RUNTIME / 3)
    _kill_serving(srv)
    time.sleep(RUNTIME / 3)
    _kill_serving(srv)
    t.join(RUNTIME + 180)
    assert not t.is_alive(), "reads hung"
    assert result["err"] is None, result["err"]
    assert not result["bad"], result["bad"][:3]
    assert result["reads"] >= 3, result
    log = m.log_text()
    assert log.count("reconnected") >= 2, log[-3000:]


def _smbd_pids(srv):
    """The fixture's whole smbd process tree (parent and children)."""
    pids = [srv.proc.pid]
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True,
                         check=True).stdout
    pairs = [tuple(int(x) for x in l.split()) for l in out.splitlines() if l.strip()]
    grew = True
    while grew:
        grew = False
        for pid, ppid in pairs:
            if ppid in pids and pid not in pids:
                pids.append(pid)
                grew = True
    return pids


def _timed(fn):
    t0 = time.monotonic()
    try:
        fn()
        err = 0
    except OSError as e:
        err = e.errno
    return err, time.monotonic() - t0


def _wait_works(m, timeout=60):
    """Poll a listing of m's root until the mount answers again (every
    0.5 s, at most timeout s); fails the test otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return os.listdir(m.path)
        except OSError:
            assert time.monotonic() < deadline, "the mount did not come back"
            time.sleep(0.5)


def test_stopped_server_times_out_then_recovers(samba_factory, mount_factory, tmp_path):
    srv = samba_factory()
    timeout = 5
    m = mount_factory(srv, options=[f"timeout={timeout}", "echo_interval=2"])
    src = tmp_path / "src.bin"
    make_random_file(src, 4)
    with open(src, "rb") as s, open(os.path.join(m.path, "before.bin"), "wb") as d:
        d.write(s.read())
    pids = _smbd_pids(srv)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        time.sleep(1)
        # a stat of a new name must go to the server (no cached entry)
        err, took = _timed(lambda: os.stat(os.path.join(m.path, "nope-1")))
        assert err == errno.ETIMEDOUT, (err, took)
        assert took <= timeout * 2 + 5, took
        r_t0 = time.monotonic()
        r = subprocess.run(["ls", m.path + "/sub-that-is-not-cached"], capture_output=True,
                           text=True, timeout=timeout * 4 + 30)
        took = time.monotonic() - r_t0
        assert r.returncode != 0, r.stdout
        assert took <= timeout * 2 + 5, took
        # stay stopped past the echo: the channel is declared dead meanwhile
        time.sleep(timeout)
    finally:
        for p in pids:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
    _wait_works(m)  # without a remount
    with open(os.path.join(m.path, "after.bin"), "wb") as d, open(src, "rb") as s:
        d.write(s.read())
    assert sha256(os.path.join(srv.share_path, "after.bin")) == sha256(str(src))
    assert sha256(os.path.join(m.path, "before.bin")) == sha256(str(src))


def _direct_pwrite(fd, data, off):
    """One O_DIRECT pwrite of data (a multiple of 4 KiB) at off."""
    buf = mmap.mmap(-1, len(data))
    try:
        buf.write(data)
        return os.pwrite(fd, buf, off)
    finally:
        buf.close()


# Issue 22's figures were smbd away 60 s, timeout=90 waiting it out; 30 s
# (timeout=60) proves the same at half the wait: half again beyond the fixed
# 20 s grace of before, which failed the write at 20 s.  timeout=10 fails
# after about 10 s.  Set it to 60 for the figures.
AWAY = int(os.environ.get("SMBRDMA_SERVER_AWAY_SECONDS", "30"))
BRIEF = 10


def test_server_away_waits_for_timeout(samba_factory, mount_factory, tmp_path):
    """Issue 22: how long calls wait for a reconnect is timeout=, not a
    fixed 20 s.  Every smbd is killed (the port refuses) and comes back
    AWAY s later: a direct write issued meanwhile by a mount with
    timeout=AWAY+30 completes after smbd returns and every byte is on the
    server; another mount's, with timeout=BRIEF, fails with ETIMEDOUT after
    about BRIEF s, a call after that fails at once (ECONNABORTED), and once
    smbd is back that mount works again.  (With the fixed grace the first
    write failed at 20 s with ETIMEDOUT.)  The waiting write runs in a
    process of its own: a thread blocked in a direct write keeps this
    process from forking the new smbd."""
    srv = samba_factory()
    patient = mount_factory(srv, options=[f"timeout={AWAY + 30}", "echo_interval=2"])
    brief = mount_factory(srv, options=[f"timeout={BRIEF}", "echo_interval=2"])
    blocks = [os.urandom(MIB) for _ in range(2)]
    src = tmp_path / "second.bin"
    src.write_bytes(blocks[1])
    target = os.path.join(patient.path, "w.bin")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
    bfd = os.open(os.path.join(brief.path, "b.bin"), os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
    writer = None
    try:
        assert _direct_pwrite(fd, blocks[0], 0) == MIB
        assert _direct_pwrite(bfd, blocks[0], 0) == MIB
        srv.kill_daemon()
        t0 = time.monotonic()
        writer = subprocess.Popen(["dd", f"if={src}", f"of={target}", "bs=1M", "count=1",
                                   "seek=1", "oflag=direct", "conv=notrunc,fsync"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        err, took = _timed(lambda: _direct_pwrite(bfd, blocks[1], MIB))
        assert err == errno.ETIMEDOUT, (err, took)
        assert BRIEF - 2 <= took <= BRIEF * 2 + 5, took
        err, took = _timed(lambda: os.stat(os.path.join(brief.path, "nope")))
        assert err == errno.ECONNABORTED and took < 3, (err, took)  # at once now
        time.sleep(max(0, AWAY - (time.monotonic() - t0)))
        assert writer.poll() is None, f"the patient write ended with smbd away: " \
                                      f"{writer.communicate()[0]}"
        srv.restart_daemon()
        out = writer.communicate(timeout=AWAY + 60)[0]
        took = time.monotonic() - t0
        assert writer.returncode == 0, out
        assert took >= AWAY, took
    finally:
        if srv.proc.poll() is not None:  # a failure with smbd away
            srv.restart_daemon()
        if writer and writer.poll() is None:
            writer.kill()
            writer.wait()
        os.close(fd)
        try:
            os.close(bfd)
        except OSError:
            pass
    with open(os.path.join(srv.share_path, "w.bin"), "rb") as f:
        assert f.read() == blocks[0] + blocks[1]
    _wait_works(brief)
    with open(os.path.join(brief.path, "again.bin"), "wb") as f:
        f.write(blocks[0])
    with open(os.path.join(srv.share_path, "again.bin"), "rb") as f:
        assert f.read() == blocks[0]


def test_smbrdmactl_reconnect(samba_factory, mount_factory):
    """smbrdmactl reconnect drops the channels; an open descriptor keeps
    working through the rebuilt session (durable reconnect)."""
    srv = samba_factory(extra_global=DURABLE)
    m = mount_factory(srv)
    path = os.path.join(m.path, "c.bin")
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.pwrite(fd, b"one", 0)
        out = ctl_json("reconnect", m.path)
        top, chan = documented_keys()["reconnect"]
        check_types(out, top, "reconnect")
        for ch in out["channels"]:
            check_types(ch, chan, "reconnect channel")
        assert out["channels_dropped"] == 1, out
        os.pwrite(fd, b"two", 3)
        assert os.pread(fd, 6, 0) == b"onetwo"
    finally:
        os.close(fd)
    assert open(os.path.join(srv.share_path, "c.bin"), "rb").read() == b"onetwo"
    assert _reconnects(m) == 1
    counts = [tuple(int(x) for x in mm) for mm in
              re.findall(r"(\d+) handles reopened durably, (\d+) by path, (\d+) lost",
                         m.log_text())]
    # the file durably; by path at most the share root's kept handle
    assert len(counts) == 1 and counts[0][0] == 1 and counts[0][1] <= 1 and \
        counts[0][2] == 0, counts
