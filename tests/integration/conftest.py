"""Fixtures for the integration tests: a private Samba per test (factory for
smb.conf variants), the daemon mounted on a temp dir, and the fault-injecting
proxy. See tests/lib/ for the pieces."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from lib.mount import (INSTALLED, DaemonProblem, SmbrdmaMount, build_dir,  # noqa: E402
                       build_sanitizer, daemon_binary, fuse_transport,
                       fuse_unavailable_reason, ring_unavailable_reason, set_enable_uring,
                       timeout_scale)
from lib.samba import SambaServer  # noqa: E402
from lib.smbproxy import SmbProxy  # noqa: E402


def env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


# Sizes: the normal build moves 256 MiB; tests/run-all lowers these under ASan.
BIG_MIB = env_int("SMBRDMA_TEST_BIG_MIB", 256)
SMALL_MIB = env_int("SMBRDMA_TEST_SMALL_MIB", 32)


def _version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout.strip() or r.stderr.strip()).splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "not found"


def pytest_report_header(config):
    """The peers this run talks to (the tests' README keeps the versions the
    suite was last green on)."""
    t = fuse_transport()
    return ["peers: samba " + _version(["/usr/sbin/smbd", "--version"])
            + ", ngtcp2 " + _version(["pkg-config", "--modversion", "libngtcp2"])
            + ", kernel " + os.uname().release,
            "fuse transport: " + {"io_uring": "io_uring (every mount asks for it)",
                                  "dev": "/dev/fuse (noio_uring)"}.get(t, "the default")]


def pytest_configure(config):
    """SMBRDMA_FUSE_TRANSPORT=io_uring: the fuse module's enable_uring is
    set for the run (and put back after, in pytest_unconfigure); a kernel
    without it ends the run with the reason, for every mount would fail.
    =dev: it is cleared, so the mounts that take the default (mount(8),
    fstab) use /dev/fuse too.  Done once, by the process that runs the
    session: with pytest-xdist (tests/run-all's -n 2) the controller, not
    each worker, which would put the old value back while the other worker
    still mounts."""
    if hasattr(config, "workerinput"):
        return
    t = fuse_transport()
    if not t or os.geteuid() != 0:
        return
    why = ring_unavailable_reason()
    if t == "io_uring" and why:
        pytest.exit(f"SMBRDMA_FUSE_TRANSPORT=io_uring: {why}", returncode=4)
    config.smbrdma_enable_uring_was = set_enable_uring(t == "io_uring")


def pytest_unconfigure(config):
    old = getattr(config, "smbrdma_enable_uring_was", None)
    if old is not None:
        set_enable_uring(old)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def _failed(request):
    rep = getattr(request.node, "rep_call", None)
    return rep is not None and rep.failed


@pytest.fixture
def root_required():
    if os.geteuid() != 0:
        pytest.skip("not root: the private Samba needs root (tmpfs mount, useradd, smbd)")


@pytest.fixture
def fuse_required():
    reason = fuse_unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def need_fio():
    """fio is a package the project installs (.ci/run), not a machine
    feature: its absence fails the test rather than skipping it."""
    import shutil
    assert shutil.which("fio"), "fio is not installed (apt-get install fio; .ci/run does)"


@pytest.fixture
def samba_factory(root_required, request):
    """make(extra_global=[...], extra_share=[...]) -> a started SambaServer on
    127.0.0.1:<free port>, stopped after the test."""
    servers = []

    def make(extra_global=(), extra_share=(), **kw):
        srv = SambaServer(extra_global=extra_global, extra_share=extra_share, **kw)
        servers.append(srv)
        return srv.start()

    yield make
    for srv in servers:
        if _failed(request):
            sys.stderr.write(f"--- smbd log tail ({srv.log_path}) ---\n{srv.log_tail()}\n")
        srv.stop()


@pytest.fixture
def samba(samba_factory):
    return samba_factory()


@pytest.fixture
def mount_factory(fuse_required, proxy_factory, request):
    """make(srv, options=[...], foreground=True, port=None, user=None,
    password=None) -> a live SmbrdmaMount. port= points the mount at another
    port (a proxy); unc= overrides the whole //HOST:PORT/SHARE. Teardown unmounts and fails the test if the daemon
    crashed, hung, left anything behind or printed a sanitizer report.
    It asks for proxy_factory only to be torn down before it: a proxy going
    first leaves the mount without a server, and its unmount then waits out
    the requests' timeout= (twice: fusermount3 and umount stat the root)."""
    mounts = []

    def make(srv, options=(), foreground=True, port=None, user=None, password=None,
             unc=None, **kw):
        unc = unc or f"//{srv.host}:{port or srv.port}/{srv.share}"
        m = SmbrdmaMount(unc, user or srv.user, password or srv.password,
                         options=options, foreground=foreground, **kw)
        mounts.append(m)
        return m.start()

    yield make
    problems = []
    for m in reversed(mounts):
        if m.path is None:
            continue
        if _failed(request):
            sys.stderr.write(f"--- daemon log tail ({m.log_path}) ---\n"
                             f"{m.log_text()[-4000:]}\n")
        try:
            m.stop(check=True)
        except DaemonProblem as e:
            problems.append(str(e))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def smb_mount(samba, mount_factory):
    return mount_factory(samba)


@pytest.fixture
def two_mounts(samba, mount_factory):
    """Two mounts (two daemons, two sessions) of one Samba share, with a
    100-byte file "f" on it: the lock tests' clients."""
    m1, m2 = mount_factory(samba), mount_factory(samba)
    with open(os.path.join(m1.path, "f"), "wb") as f:
        f.write(b"0123456789" * 10)
    return m1, m2


@pytest.fixture
def proxy_factory():
    proxies = []

    def make(srv):
        px = SmbProxy(srv.port).start()
        proxies.append(px)
        return px

    yield make
    for px in proxies:
        px.stop()


@pytest.fixture(scope="module")
def addc():
    """A Samba AD DC (realm SMBRDMA.TEST) on a loopback address, with a share
    and a Kerberos test user, shared by the tests of one module (it takes
    ~10-20 s to provision). See tests/lib/addc.py. Missing packages fail
    the test: .ci/run installs them."""
    from lib.addc import ADDCError, SambaADDC, missing_packages
    if os.geteuid() != 0:
        pytest.skip("not root: the AD DC needs root (mount namespaces, samba)")
    missing = missing_packages()
    assert not missing, ("packages for the AD DC are not installed: apt-get install "
                         + " ".join(missing) + " (.ci/run does)")
    dc = SambaADDC()
    try:
        dc.start()
    except ADDCError as e:
        pytest.fail(f"could not start the AD DC: {e}", pytrace=False)
    yield dc
    dc.stop()


@pytest.fixture
def scale():
    return timeout_scale()


@pytest.fixture
def installed_helper(fuse_required):
    """The installed /sbin/mount.smbrdma (and the /sbin/smbrdma link
    mount.fuse3 runs), which mount(8) runs. CI installs it (.ci/run: meson
    install) before the tests. Locally, when it is missing or
    older than the build under test, the build is installed the same way
    (`meson install`); a sanitizer build is never put into /sbin."""
    built, build = daemon_binary(), build_dir()
    if build_sanitizer(build) != "none" and os.access(INSTALLED, os.X_OK):
        # The sanitizer pass tests the installed helper: .ci/run (and a
        # developer) installs the normal build, never this one, so its
        # being newer than /sbin/mount.smbrdma says nothing.
        return INSTALLED
    fresh = os.access(INSTALLED, os.X_OK) and not (
        os.path.exists(built) and os.path.getmtime(built) > os.path.getmtime(INSTALLED))
    if fresh:
        return INSTALLED
    assert not os.environ.get("CI"), f"{INSTALLED} is missing or older than {built} " \
                                     "(.ci/run installs it with meson install)"
    installable = os.path.exists(os.path.join(build, "build.ninja")) and \
        build_sanitizer(build) == "none" and not os.environ.get("SMBRDMA_BIN")
    if not installable:
        if os.access(INSTALLED, os.X_OK):
            print(f"\nnote: {INSTALLED} is older than {built}; testing it as installed")
            return INSTALLED
        # not a machine limit, so not a skip: the helper is simply missing
        pytest.fail(f"{INSTALLED} is not installed and {build} cannot be installed "
                    "(run `meson install -C build`; .ci/run does)", pytrace=False)
    r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"meson install -C {build} failed:\n{r.stdout}{r.stderr}"
    print(f"\ninstalled {build} with meson install: {INSTALLED} was missing or older")
    return INSTALLED
