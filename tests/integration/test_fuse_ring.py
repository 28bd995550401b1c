"""FUSE over io_uring (fuse/ring.h): the kernel's requests taken from per-CPU
rings instead of read(2) on /dev/fuse.

These tests run on a kernel that has the fuse module's enable_uring (Linux
6.14 and later with CONFIG_FUSE_IO_URING) and skip, saying so, on one that
has not. The rest of the suite runs on the ring too when tests/run-all sets
SMBRDMA_FUSE_TRANSPORT=io_uring (its ASan+UBSan pass); these check what only
the ring has: that requests really come through it on every queue, that a
mount which asked for it never falls back in silence, and that the daemon
dying or the mount going away with requests in flight on every queue
leaves nothing hanging."""

import os
import signal
import subprocess
import time

import pytest

from lib.mount import MountFailed, is_mounted, ring_unavailable_reason, set_enable_uring
from lib.sessioninfo import client_report

# alone (tests/pytest.ini): turns the fuse module's enable_uring off and on
pytestmark = pytest.mark.alone


@pytest.fixture
def ring_kernel(root_required):
    why = ring_unavailable_reason()
    if why:
        pytest.skip(why)
    old = set_enable_uring(True)
    yield
    set_enable_uring(old)


def _cpus():
    return sorted(os.sched_getaffinity(0))


def _ring(m):
    r = client_report(m.path)
    return r["fuse_transport"], r["fuse_ring"]


def _fuse_connections():
    try:
        return set(os.listdir("/sys/fs/fuse/connections"))
    except OSError:
        return set()


def _writers(path, cpus, seconds=120):
    """One writer per CPU, pinned there (the kernel picks the ring queue by
    the CPU of the task that makes the request): each rewrites a file of its
    own in 256 KiB writes with an fsync every MiB, and stats it, until
    killed or its mount goes away."""
    code = ("import os, sys, time\n"
            "p = sys.argv[1]; end = time.monotonic() + float(sys.argv[2])\n"
            "buf = os.urandom(256 << 10)\n"
            "while time.monotonic() < end:\n"
            "    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\n"
            "    for i in range(16):\n"
            "        os.write(fd, buf)\n"
            "        if i % 4 == 3:\n"
            "            os.fsync(fd)\n"
            "    os.close(fd)\n"
            "    os.stat(p)\n")
    return [subprocess.Popen(["taskset", "-c", str(c), "/usr/bin/python3", "-c", code,
                              f"{path}/w{c}", str(seconds)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for c in cpus]


def _wait_every_queue_busy(m, cpus, timeout=30):
    """Until every queue a writer runs on has carried requests; the counts."""
    deadline = time.monotonic() + timeout
    while True:
        transport, ring = _ring(m)
        assert transport == "io_uring", ring
        q = ring["queue_requests"]
        if all(q[c] > 20 for c in cpus if c < len(q)):
            return q
        assert time.monotonic() < deadline, f"queues never all busy: {q}"
        time.sleep(0.2)


def _reap(procs, timeout=30):
    """Every writer gone within timeout (none hangs on the dead mount)."""
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail(f"writer {p.pid} still blocked {timeout} s after the mount went away")


def test_requests_come_through_the_ring_on_every_queue(samba, mount_factory, ring_kernel):
    m = mount_factory(samba, options=["io_uring"])
    cpus = _cpus()
    procs = _writers(m.path, cpus, seconds=4)
    _reap(procs, timeout=60)
    for p in procs:
        assert p.returncode == 0, p.stderr.read().decode()
    # data and metadata through the ring, read back whole
    data = os.urandom(3 << 20)
    with open(f"{m.path}/big", "wb") as f:
        f.write(data)
    with open(f"{m.path}/big", "rb") as f:
        assert f.read() == data
    assert sorted(os.listdir(m.path)) == sorted(["big"] + [f"w{c}" for c in cpus])
    transport, ring = _ring(m)
    assert transport == "io_uring"
    assert ring["state"] == "running"
    assert ring["queues"] >= len(cpus)
    assert ring["errors"] == 0
    q = ring["queue_requests"]
    assert all(q[c] > 0 for c in cpus), f"a CPU's queue carried nothing: {q}"
    assert ring["requests"] == sum(q) and ring["requests"] > 100
    # every ring request was answered on the ring; /dev/fuse answered only
    # what came through it (INIT and the like)
    assert ring["commits"] == ring["requests"], ring
    assert "FUSE requests through io_uring" in m.log_text()


def test_noio_uring_keeps_to_dev_fuse(samba, mount_factory, ring_kernel):
    m = mount_factory(samba, options=["noio_uring"])
    with open(f"{m.path}/f", "w") as f:
        f.write("x")
    transport, ring = _ring(m)
    assert transport == "/dev/fuse"
    assert ring["why_not"] == "noio_uring"
    assert ring["requests"] == 0
    assert "FUSE requests through /dev/fuse (noio_uring)" in m.log_text()


def test_a_mount_that_asked_for_the_ring_never_falls_back(samba, mount_factory, ring_kernel):
    """`io_uring` where the kernel does not offer it: the mount fails and
    says why. Without the option the same kernel gets /dev/fuse, and the
    log and smbrdmactl say why."""
    set_enable_uring(False)
    with pytest.raises(MountFailed) as e:
        mount_factory(samba, options=["io_uring"])
    assert "io_uring: the fuse module's enable_uring is N" in str(e.value)
    m = mount_factory(samba, plain_transport=True)
    with open(f"{m.path}/f", "w") as f:
        f.write("x")
    transport, ring = _ring(m)
    assert transport == "/dev/fuse"
    assert "enable_uring is N" in ring["why_not"]
    assert "FUSE requests through /dev/fuse (the fuse module's enable_uring is N" in \
        m.log_text()


def test_default_takes_the_ring_where_offered(samba, mount_factory, ring_kernel):
    m = mount_factory(samba, plain_transport=True)
    with open(f"{m.path}/f", "w") as f:
        f.write("x")
    transport, ring = _ring(m)
    assert transport == "io_uring", ring
    assert ring["requests"] > 0


def test_io_uring_depth(samba, mount_factory, ring_kernel):
    """io_uring_depth=1: one entry per queue; many callers at once queue in
    the kernel behind it, and all are answered."""
    m = mount_factory(samba, options=["io_uring", "io_uring_depth=1"])
    data = {i: os.urandom(200_000 + i) for i in range(12)}
    for i, d in data.items():
        with open(f"{m.path}/f{i}", "wb") as f:
            f.write(d)
    code = ("import sys\n"
            "for p in sys.argv[1:]:\n"
            "    sys.stdout.write(str(len(open(p, 'rb').read())) + ' ')\n")
    procs = [subprocess.Popen(["/usr/bin/python3", "-c", code] +
                              [f"{m.path}/f{i}" for i in data], stdout=subprocess.PIPE)
             for _ in range(8)]
    want = " ".join(str(len(d)) for d in data.values()) + " "
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.decode() == want
    transport, ring = _ring(m)
    assert transport == "io_uring"
    assert ring["depth"] == 1 and ring["errors"] == 0


def _busy(samba, mount_factory):
    """A ring mount with a writer on every CPU, once every queue carries
    requests: (mount, writers, the FUSE connections there were before)."""
    before = _fuse_connections()
    m = mount_factory(samba, options=["io_uring"])
    cpus = _cpus()
    procs = _writers(m.path, cpus)
    try:
        _wait_every_queue_busy(m, cpus)
    except BaseException:
        for p in procs:
            p.kill()
        raise
    return m, procs, before


def _no_connection_left(before, what):
    deadline = time.monotonic() + 20
    while _fuse_connections() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_fuse_connections() - before), f"a FUSE connection outlived {what}"


def test_kill_9_with_requests_in_flight_on_every_queue(samba, mount_factory, ring_kernel):
    m, procs, before = _busy(samba, mount_factory)
    path = m.path
    try:
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait(timeout=30)
        # the writers get an error (ENOTCONN) instead of hanging
        _reap(procs)
        assert all(p.returncode != 0 for p in procs)
    finally:
        for p in procs:
            p.kill()
    # the mount is left to be unmounted, as after any dead daemon; after
    # that no FUSE connection of ours remains
    m.stop(check=False)
    assert not is_mounted(path)
    _no_connection_left(before, "its daemon")


def test_unmount_with_requests_in_flight_on_every_queue(samba, mount_factory, ring_kernel):
    """A lazy unmount while every queue has requests in flight: the
    writers' files keep the connection until they are killed, then the
    daemon sees the end, stops its ring and exits cleanly (status 0, no
    sanitizer report, nothing left: the fixture's checks)."""
    m, procs, before = _busy(samba, mount_factory)
    try:
        subprocess.run(["umount", "-l", m.path], check=True, timeout=30)
        time.sleep(0.5)
        for p in procs:
            p.send_signal(signal.SIGKILL)
        _reap(procs)
    finally:
        for p in procs:
            p.kill()
    m.proc.wait(timeout=30)
    assert m.proc.returncode == 0, m.log_text()[-3000:]
    m.stop(check=True)
    _no_connection_left(before, "the unmount")
