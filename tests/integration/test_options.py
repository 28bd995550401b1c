"""mount.cifs's options, as mount.smbrdma(8) documents them.

Each option is accepted, and a test shows its effect, or its error on a bad
value: here for the options taken from mount.cifs (cache=, rsize=/wsize=,
forceuid..., ip=/addr=, nosharesock, soft/hard, noperm/perm) and for those
no other test showed (uid=..., ro/rw, actimeo=, guest, domain=, debug, -d,
the kernel's and mount(8)'s flags ...).  test_every_documented_option_has_a_test
reads the option list of the man page and fails for an option that no test
function exercises (COVERAGE below), so the page cannot grow an option
without a test; test_every_documented_option_is_accepted runs the command
with each one.
"""

import contextlib
import errno
import math
import os
import re
import shlex
import signal
import stat
import subprocess
import threading
import time

import pytest

from lib.mount import (REPO, SmbrdmaMount, daemon_binary, is_mounted, mount_entry,
                       mount_options, run_mount_command, timeout_scale)
from test_credentials import mounts  # noqa: F401  (a fixture)
from test_multichannel import MC_GLOBAL
from test_reconnect import _smbd_pids
from test_smbrdmactl import ctl_json
from lib.sessioninfo import smbstatus

MAN = os.path.join(REPO, "man", "mount.smbrdma.8")
MIB = 1 << 20

# ---- the man page's options, and the test that shows each -------------------------

# option (as the man page spells it, without '=') -> "file::function", a
# test that exercises it: its name appears in the function.
THIS = "tests/integration/test_options.py"
COVERAGE = {
    # command-line flags (OPTIONS)
    "-o": f"{THIS}::test_command_line_flags",
    "-f": f"{THIS}::test_debug_levels",
    "-d": f"{THIS}::test_debug_levels",
    "-s": f"{THIS}::test_command_line_flags",
    "-v": f"{THIS}::test_debug_levels",
    "-n": f"{THIS}::test_command_line_flags",
    "-h": f"{THIS}::test_command_line_flags",
    "--help": f"{THIS}::test_command_line_flags",
    "-V": f"{THIS}::test_command_line_flags",
    "--version": f"{THIS}::test_command_line_flags",
    # mount options (MOUNT OPTIONS)
    "username": "tests/integration/test_credentials.py::test_username_with_password",
    "user": f"{THIS}::test_domain_and_the_aliases",
    "password": "tests/integration/test_credentials.py::test_password_option",
    "pass": f"{THIS}::test_domain_and_the_aliases",
    "domain": f"{THIS}::test_domain_and_the_aliases",
    "dom": f"{THIS}::test_domain_and_the_aliases",
    "workgroup": f"{THIS}::test_domain_and_the_aliases",
    "credentials": "tests/integration/test_credentials.py::test_credentials_file",
    "cred": "tests/integration/test_credentials.py::test_credentials_file_missing",
    "sec": f"{THIS}::test_sec",
    "mfsymlinks": "tests/integration/test_posix_links.py::test_symlink_readlink_and_follow",
    "nomfsymlinks": "tests/integration/test_posix_links.py::test_without_mfsymlinks",
    "brl": "tests/integration/test_fcntl_locks.py::test_nobrl_keeps_posix_locks_in_the_mount",
    "nobrl": "tests/integration/test_fcntl_locks.py::test_nobrl_keeps_posix_locks_in_the_mount",
    # with the extensions on: tests/vm/guest/test_posix_ksmbd.py against ksmbd
    "posix": f"{THIS}::test_posix_fallback_without_server_support",
    "noposix": f"{THIS}::test_posix_fallback_without_server_support",
    "unix": f"{THIS}::test_posix_fallback_without_server_support",
    "nounix": f"{THIS}::test_posix_fallback_without_server_support",
    "keytab": "tests/integration/test_krb5.py::test_keytab_without_the_user",
    "guest": f"{THIS}::test_guest",
    "sign": "tests/integration/test_signing.py::test_sign_option_signs_anyway",
    "seal": "tests/integration/test_encryption.py::test_seal_encrypts_when_server_allows",
    "port": "tests/integration/test_errors.py::test_port_option",
    "ip": f"{THIS}::test_ip_and_addr",
    "addr": f"{THIS}::test_ip_and_addr",
    "nosharesock": f"{THIS}::test_nosharesock",
    "nosubtype": "tests/integration/test_xfstests_mount.py::"
                 "test_nosubtype_source_statfs_and_umount_by_device",
    "vers": "tests/integration/test_versions.py::test_version_on_the_wire",
    "uid": f"{THIS}::test_uid_gid_file_mode_dir_mode",
    "gid": f"{THIS}::test_uid_gid_file_mode_dir_mode",
    "forceuid": f"{THIS}::test_forceuid_forcegid",
    "noforceuid": f"{THIS}::test_forceuid_forcegid",
    "forcegid": f"{THIS}::test_forceuid_forcegid",
    "noforcegid": f"{THIS}::test_forceuid_forcegid",
    "file_mode": f"{THIS}::test_uid_gid_file_mode_dir_mode",
    "dir_mode": f"{THIS}::test_uid_gid_file_mode_dir_mode",
    "noperm": f"{THIS}::test_noperm_and_perm",
    "perm": f"{THIS}::test_noperm_and_perm",
    "ro": f"{THIS}::test_ro_and_rw",
    "rw": f"{THIS}::test_ro_and_rw",
    "actimeo": f"{THIS}::test_actimeo",
    "cache": f"{THIS}::test_cache",
    "rsize": f"{THIS}::test_rsize_wsize",
    "wsize": f"{THIS}::test_rsize_wsize",
    "rasize": f"{THIS}::test_rasize",
    # the RDMA paths themselves run in the QEMU guest (tests/vm/guest/)
    "rdma": f"{THIS}::test_rdma_and_rdma_threshold",
    "rdma_threshold": f"{THIS}::test_rdma_and_rdma_threshold",
    "rdma_channels": f"{THIS}::test_rdma_and_rdma_threshold",
    "nolease": f"{THIS}::test_nolease",
    "nodfs": "tests/integration/test_dfs_links.py::test_nodfs_reports_the_link_as_remote",
    "witness": "tests/integration/test_witness.py::test_witness_registers_and_follows_a_planned_move",
    "io_uring": "tests/integration/test_fuse_ring.py::test_a_mount_that_asked_for_the_ring_never_falls_back",
    "noio_uring": "tests/integration/test_fuse_ring.py::test_noio_uring_keeps_to_dev_fuse",
    "io_uring_depth": "tests/integration/test_fuse_ring.py::test_io_uring_depth",
    "handlecache": "tests/integration/test_handle_cache.py::test_second_listing_makes_no_request",
    "nohandlecache": "tests/integration/test_handle_cache.py::test_nohandlecache_keeps_nothing",
    "max_cached_dirs":
        "tests/integration/test_handle_cache.py::test_max_cached_dirs_keeps_the_newest",
    "daemon_user": "tests/integration/test_privileges.py::test_daemon_user_option",
    "transport": "tests/integration/test_quic.py::test_auto_uses_tcp_when_quic_is_blocked",
    "quic_port": "tests/integration/test_quic.py::test_auto_uses_quic_when_tcp_is_blocked",
    "cafile": "tests/integration/test_quic.py::test_quic_self_signed_certificate_refused",
    "certfile": "tests/integration/test_quic.py::test_quic_client_certificate",
    "keyfile": "tests/integration/test_quic.py::test_quic_client_certificate",
    "timeout": "tests/integration/test_reconnect.py::test_stopped_server_times_out_then_recovers",
    "soft": f"{THIS}::test_soft_and_hard",
    "hard": f"{THIS}::test_soft_and_hard",
    "echo_interval":
        "tests/integration/test_reconnect.py::test_stopped_server_times_out_then_recovers",
    "multichannel": f"{THIS}::test_multichannel_and_nomultichannel",
    "nomultichannel": f"{THIS}::test_multichannel_and_nomultichannel",
    "max_channels": "tests/integration/test_multichannel.py::test_three_channels_share_the_io",
    "interfaces":
        "tests/integration/test_multichannel_links.py::test_interfaces_option_restricts_local_links",
    "debug": f"{THIS}::test_debug_levels",
    **{flag: f"{THIS}::test_kernel_flags" for flag in
       ("nosuid", "suid", "nodev", "dev", "noexec", "exec", "sync", "async", "dirsync",
        "atime", "noatime")},
    **{flag: f"{THIS}::test_mount8_and_fstab_options" for flag in
       ("defaults", "auto", "noauto", "nofail", "_netdev", "users", "nouser", "owner",
        "group", "relatime", "x-", "comment")},
}

# A value for each option that takes one, for test_every_documented_option_is_accepted.
SAMPLE = {"username": "u", "user": "u", "password": "p", "pass": "p", "domain": "D",
          "dom": "D", "workgroup": "W", "sec": "ntlmssp", "port": "445", "ip": "127.0.0.1",
          "addr": "::1", "vers": "3", "uid": "0", "gid": "0", "file_mode": "0600",
          "dir_mode": "0700", "actimeo": "5", "cache": "loose", "rsize": "65536",
          "wsize": "65536", "rdma_threshold": "8192", "rdma_channels": "2", "timeout": "30",
          "echo_interval": "10", "max_channels": "2", "max_cached_dirs": "16", "io_uring_depth": "4", "interfaces": "lo", "comment": "x", "transport": "quic",
          "quic_port": "4433", "cafile": "/etc/hostname", "certfile": "/etc/hostname",
          "keyfile": "/etc/hostname", "daemon_user": "nobody", "rasize": "4194304"}


def _macro_bold(line):
    """The words a man(7) font macro line sets in bold: .B all, .BI/.BR the
    1st, 3rd... argument, .IB/.RB the 2nd, 4th..."""
    parts = line.split(None, 1)
    macro, rest = parts[0], parts[1] if len(parts) > 1 else ""
    args = shlex.split(rest.replace("\\", "\\\\"), posix=True)
    if macro == ".B":
        bold = args
    elif macro in (".BI", ".BR"):
        bold = args[0::2]
    elif macro in (".IB", ".RB"):
        bold = args[1::2]
    else:
        bold = []
    words = []
    for b in bold:
        b = b.replace("\\-", "-").replace("\\c", "").replace("\\&", "")
        words += b.replace(",", " ").split()
    return words


def man_options():
    """{"-o": False, ..., "cache": True, "nosuid": False, "x-": ...}: every
    option the OPTIONS and MOUNT OPTIONS sections of the man page name in
    a paragraph tag, and whether it takes a value ('=')."""
    lines = open(MAN).read().splitlines()
    found, section, depth, in_tag = {}, None, 0, False
    for line in lines:
        if line.startswith(".SH"):
            section = line[4:].strip().strip('"')
            depth = 0
            continue
        if section not in ("OPTIONS", "MOUNT OPTIONS"):
            continue
        if line.startswith(".RS"):
            depth += 1
        elif line.startswith(".RE"):
            depth -= 1
        elif line.startswith((".TP", ".TQ")):
            in_tag = depth == 0
        elif in_tag:
            for w in _macro_bold(line):
                if section == "OPTIONS" and re.fullmatch(r"--?[A-Za-z]+", w):
                    found[w] = False
                elif section == "MOUNT OPTIONS" and re.fullmatch(r"[a-z_][a-z0-9_]*-?=?", w):
                    found[w.rstrip("=")] = w.endswith("=")
            # a tag goes on over lines that end in \c
            in_tag = line.endswith("\\c")
    return found


def _function_text(path, name):
    """The source of test function `name` in `path` (Python or C), or None."""
    text = open(os.path.join(REPO, path)).read()
    if path.endswith(".py"):
        m = re.search(rf"^(@.*\n)*def {re.escape(name)}\(.*?(?=^\S)", text + "\nEND",
                      re.M | re.S)
    else:
        m = re.search(rf"^static void {re.escape(name)}\(void\)\n\{{.*?^\}}", text, re.M | re.S)
        if m and f"RUN({name});" not in text:
            return None
    return m.group(0) if m else None


def test_every_documented_option_has_a_test():
    opts = man_options()
    for must in ("-o", "-d", "username", "cache", "rsize", "hard", "noperm", "ip",
                 "nosharesock", "forceuid", "nosuid", "x-"):
        assert must in opts, f"the man page parser lost {must!r}: {sorted(opts)}"
    missing = sorted(set(opts) - set(COVERAGE))
    assert not missing, f"options in mount.smbrdma(8) with no test in COVERAGE: {missing}"
    stale = sorted(set(COVERAGE) - set(opts))
    assert not stale, f"COVERAGE names options mount.smbrdma(8) does not document: {stale}"
    for opt, where in COVERAGE.items():
        path, func = where.split("::")
        text = _function_text(path, func)
        assert text is not None, f"{opt}: no test function {func} in {path}"
        word = re.escape(opt) if opt.startswith("-") else rf"(?<![A-Za-z0-9_]){re.escape(opt)}"
        assert re.search(word + (r"(?![A-Za-z])" if opt.startswith("-") else ""), text), \
            f"{opt}: {path}::{func} does not mention it"


def test_every_documented_option_is_accepted(tmp_path):
    """Each mount option of the man page, alone, gets past option parsing:
    the command then fails on the mount point, which does not exist (no
    server, no FUSE needed).  An unknown option names itself."""
    creds = tmp_path / "creds"
    creds.write_text("username=u\npassword=p\n")
    keytab = tmp_path / "keytab"
    keytab.write_bytes(b"\x05\x02")
    sample = dict(SAMPLE, credentials=str(creds), cred=str(creds), keytab=str(keytab))
    missing_mp = str(tmp_path / "no-such-dir")
    opts = {k: v for k, v in man_options().items() if not k.startswith("-")}
    assert len(opts) > 60, opts
    for opt, takes_value in sorted(opts.items()):
        if opt == "x-":
            o = "x-systemd.automount"
        else:
            o = f"{opt}={sample[opt]}" if takes_value else opt
        r = subprocess.run([daemon_binary(), "//127.0.0.1/share", missing_mp, "-o", o],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, (o, r.stderr)
        assert "mount point" in r.stderr and "no-such-dir" in r.stderr, \
            f"-o {o} was not accepted: {r.stderr}"
    r = subprocess.run([daemon_binary(), "//127.0.0.1/share", missing_mp, "-o", "ro,frobnicate"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "unknown mount option 'frobnicate'" in r.stderr, r.stderr


# ---- helpers -----------------------------------------------------------------------


def _bad_value(tmp_path, options, needle):
    """The command refuses these options with a message holding needle
    (naming the option), before it connects anywhere."""
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    r, _ = run_mount_command("//127.0.0.1/share", str(mnt), "u", "p", options=options,
                             timeout=30)
    assert r.returncode == 1, f"{options}: exit {r.returncode}: {r.stdout}{r.stderr}"
    assert needle in r.stderr, f"{options}: {r.stderr}"
    assert r.stderr.startswith("mount error: "), r.stderr
    assert not is_mounted(str(mnt))


def _server_file(srv, name, data):
    path = os.path.join(srv.share_path, name)
    with open(path, "wb") as f:
        f.write(data)
    srv.chown_to_user(path)
    return path


def _requests(m, command=None):
    """SMB requests the mount sent: all of them, or those of one command."""
    chans = ctl_json("stats", m.path)["channels"]
    if command is None:
        return sum(c["requests"] for c in chans)
    return sum(c["commands"].get(command, 0) for c in chans)


# ---- options from mount.cifs ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "none", "loose"])
def test_cache(samba, mount_factory, tmp_path, mode):
    """A file changes on the server behind the mount's back, keeping its
    size and modification time, so only the cache mode decides what the
    mount shows: strict keeps pages while a file is open and drops them at
    the next open; none never keeps them; loose keeps them across opens.
    Attributes: none asks the server each time, the others keep them for
    actimeo=."""
    m = mount_factory(samba, options=[f"cache={mode}", "actimeo=60"])
    attrs = _server_file(samba, "attrs.txt", b"1234")
    assert os.stat(os.path.join(m.path, "attrs.txt")).st_size == 4
    with open(attrs, "ab") as f:
        f.write(b"5678")
    size = os.stat(os.path.join(m.path, "attrs.txt")).st_size
    assert size == (8 if mode == "none" else 4), (mode, size)
    server = _server_file(samba, "c.txt", b"A" * 4096)
    path = os.path.join(m.path, "c.txt")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.pread(fd, 4096, 0) == b"A" * 4096
        st = os.stat(server)
        with open(server, "r+b") as f:
            f.write(b"B" * 4096)
        os.utime(server, ns=(st.st_atime_ns, st.st_mtime_ns))
        same_open = os.pread(fd, 4096, 0)
    finally:
        os.close(fd)
    with open(path, "rb") as f:
        reopened = f.read()
    want = {"strict": (b"A", b"B"), "none": (b"B", b"B"), "loose": (b"A", b"A")}[mode]
    assert (same_open[:1], reopened[:1]) == want, (mode, same_open[:1], reopened[:1])
    _bad_value(tmp_path, ["cache=singleclient"], "mount option 'cache'")


def test_rsize_wsize(samba, mount_factory, tmp_path):
    """rsize=/wsize= bound each READ/WRITE: smbrdmactl shows the sizes (70000
    rounded down to 69632), and a 1 MiB write and read take that many more
    requests than on a mount without them."""
    data = os.urandom(MIB)

    # READs and WRITEs only: a CLOSE put off by the handle cache lands in
    # whichever count is read after it, so the totals would race it.
    def write_then_read(m, name):
        w0 = _requests(m, "WRITE")
        with open(os.path.join(m.path, name), "wb") as f:
            f.write(data)  # one write(2) of 1 MiB
        w1 = _requests(m, "WRITE")
        r0 = _requests(m, "READ")
        with open(os.path.join(m.path, name), "rb") as f:  # the open drops the cache
            assert f.read() == data
        return w1 - w0, _requests(m, "READ") - r0

    small = mount_factory(samba, options=["rsize=70000", "wsize=131072"])
    dbg = ctl_json("debug", small.path)
    assert (dbg["max_read"], dbg["max_write"]) == (69632, 131072), dbg
    writes, reads = write_then_read(small, "small.bin")
    plain = mount_factory(samba)
    dbg = ctl_json("debug", plain.path)
    assert dbg["max_read"] >= MIB and dbg["max_write"] >= MIB, dbg
    pwrites, preads = write_then_read(plain, "plain.bin")
    print(f"requests for 1 MiB: rsize/wsize mount write {writes} read {reads}; "
          f"plain mount write {pwrites} read {preads}")
    assert writes >= MIB // 131072 and reads >= math.ceil(MIB / 69632), (writes, reads)
    assert writes - pwrites >= MIB // 131072 - 1 and reads - preads >= MIB // 69632 - 1
    for bad in ("rsize=0", "wsize=0", "rsize=64k", "wsize=-1", "rsize=4294967296"):
        _bad_value(tmp_path, [bad], f"mount option '{bad.split('=')[0]}'")


def _read_ahead_kb(m):
    """The mount's bdi read-ahead, read from sysfs after a first request
    (a daemon that kept root raises it at the first op after INIT)."""
    os.listdir(m.path)
    st = os.stat(m.path)
    with open(f"/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/read_ahead_kb") as f:
        return int(f.read())


def test_rasize(samba, mount_factory, tmp_path):
    """rasize= sets the mount's read-ahead (read_ahead_kb of its bdi), 2 MiB
    by default; raised by the root monitor for a daemon that gave up root,
    and by the daemon itself when it kept root (daemon_user=root); rounded
    down to 4 KiB; a bad value is refused."""
    assert _read_ahead_kb(mount_factory(samba)) == 2048
    assert _read_ahead_kb(mount_factory(samba, options=["rasize=4194304"])) == 4096
    assert _read_ahead_kb(mount_factory(samba, options=["rasize=70000"])) == 68
    assert _read_ahead_kb(mount_factory(samba, options=["rasize=8388608",
                                                         "daemon_user=root"])) == 8192
    for bad in ("rasize=0", "rasize=2M", "rasize=-1", "rasize=4294967296"):
        _bad_value(tmp_path, [bad], "mount option 'rasize'")


@pytest.mark.parametrize("flag", ["posix", "noposix", "unix", "nounix", None])
def test_posix_fallback_without_server_support(samba, mount_factory, tmp_path, flag):
    """The default private Samba offers no SMB3 POSIX extensions (4.17 has
    none; 4.22 only with smb3 unix extensions = yes): whether the mount offers
    them (posix/unix) or not (noposix/nounix, the default), it keeps the
    documented fallback: uid=/gid=/file_mode=/dir_mode= for every file
    whatever mode it was made with, chmod only toggles READONLY, another
    owner is EPERM, a FIFO is EPERM, and the daemon's log says which."""
    m = mount_factory(samba, options=["uid=4321", "gid=4322", "file_mode=0640",
                                      "dir_mode=0710"] + ([flag] if flag else []))
    f = os.path.join(m.path, "f")
    fd = os.open(f, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    os.mkdir(os.path.join(m.path, "d"), 0o700)
    st = os.stat(f)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o640), st
    assert stat.S_ISREG(st.st_mode)
    st = os.stat(os.path.join(m.path, "d"))
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 4322, 0o710), st
    os.chmod(f, 0o444)  # no write bit: READONLY
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o440
    os.chmod(f, 0o755)  # the mode is file_mode again, not 0755
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640
    with pytest.raises(PermissionError):
        os.chown(f, 1, -1)
    with pytest.raises(PermissionError):
        os.mkfifo(os.path.join(m.path, "fifo"))
    # the server's file id is still the inode number, stable across lookups
    assert os.stat(f).st_ino == os.stat(f).st_ino != os.stat(os.path.join(m.path, "d")).st_ino
    log = m.log_text()
    tail = "owner uid=4321 gid=4322, file_mode=0640 dir_mode=0710"
    if flag in ("noposix", "nounix", None):
        assert f"noposix: {tail}" in log, log[-2000:]
    else:  # the line also says what the server would need
        assert "posix: the server lacks the SMB3 POSIX extensions" in log, log[-2000:]
        assert f"): {tail}" in log, log[-2000:]
    assert "FIFO" in log and "(EPERM)" in log, log[-2000:]


@pytest.mark.parametrize("flags", [["forceuid", "forcegid"], ["noforceuid", "noforcegid"]])
def test_forceuid_forcegid(samba, mount_factory, tmp_path, flags):
    """Without POSIX extensions the owner shown is always uid=/gid=, with
    forceuid/forcegid or with noforceuid/noforcegid; given a value they fail."""
    m = mount_factory(samba, options=["uid=4321", "gid=4322"] + flags)
    with open(os.path.join(m.path, "f"), "w") as f:
        f.write("x")
    os.mkdir(os.path.join(m.path, "d"))
    for name in ("f", "d", ""):
        st = os.stat(os.path.join(m.path, name))
        assert (st.st_uid, st.st_gid) == (4321, 4322), (flags, name, st)
    for flag in flags:
        _bad_value(tmp_path, [f"{flag}=1"], f"mount option '{flag}' takes no value")


def test_ip_and_addr(samba, mount_factory, tmp_path):
    """A source whose host name does not resolve mounts with ip= (and addr=)
    naming the server's address; the source stays the name.  Without ip=
    the name does not resolve (tried in an empty network namespace, so no
    DNS query leaves the machine); a name as ip= is refused."""
    unc = f"//no-such-host.invalid:{samba.port}/{samba.share}"
    for opt in ("ip=127.0.0.1", "addr=127.0.0.1"):
        m = mount_factory(samba, unc=unc, options=[opt, "debug"])
        name = opt.split("=")[0] + ".txt"
        with open(os.path.join(m.path, name), "w") as f:
            f.write(opt)
        with open(os.path.join(samba.share_path, name)) as f:
            assert f.read() == opt
        assert mount_entry(m.path)["source"] == f"//no-such-host.invalid/{samba.share}"
        assert f"no-such-host.invalid (127.0.0.1) port {samba.port}" in m.log_text()
        m.stop()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["unshare", "-n", daemon_binary(), unc, str(mnt), "-o",
                        f"username={samba.user},password={samba.password}"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60 * timeout_scale())
    assert r.returncode == 1, r.stderr
    assert "cannot resolve host name 'no-such-host.invalid'" in r.stderr, r.stderr
    _bad_value(tmp_path, ["ip=no-such-host.invalid"], "mount option 'ip'")
    _bad_value(tmp_path, ["addr=300.1.2.3"], "mount option 'addr'")


def test_nosharesock(samba, mount_factory):
    """Two mounts of one server, one with nosharesock: each has its own
    connection (its own daemon and local port) either way."""
    a = mount_factory(samba)
    b = mount_factory(samba, options=["nosharesock"])
    la = ctl_json("stats", a.path)["channels"][0]["local"]
    lb = ctl_json("stats", b.path)["channels"][0]["local"]
    assert la != lb, (la, lb)
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( dport = :{samba.port} )"],
                         capture_output=True, text=True, check=True).stdout
    pids = {int(p) for line in out.splitlines() if "mount.smbrdma" in line
            for p in re.findall(r"pid=(\d+)", line)}
    assert pids == {a.proc.pid, b.proc.pid}, out
    for m in (a, b):
        os.listdir(m.path)


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_soft_and_hard(samba, mount_factory, scale, mode):
    """smbd stops (SIGSTOP).  soft: a call fails with ETIMEDOUT after about
    timeout=.  hard: the call waits past timeout=, past the keepalive that
    declares the connection dead and past the 20 s a soft mount waits for a
    reconnect, and completes once smbd goes on (SIGCONT)."""
    timeout = 2
    m = mount_factory(samba, options=[mode, f"timeout={timeout}", "echo_interval=2"])
    os.stat(m.path)
    # made on the server, never looked up through the mount, in a directory
    # it never listed (a whole listing under a lease would know the name is
    # missing: Samba breaks no lease for a file made behind its back): the
    # call must go to the server
    _server_file(samba, "late.txt", b"hello")
    result = {}

    def look():
        t0 = time.monotonic()
        try:
            result["size"] = os.stat(os.path.join(m.path, "late.txt")).st_size
        except OSError as e:
            result["errno"] = e.errno
        result["took"] = time.monotonic() - t0

    pids = _smbd_pids(samba)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        t = threading.Thread(target=look, daemon=True)
        t.start()
        if mode == "soft":
            t.join(timeout * 2 + 10 * scale)
            assert not t.is_alive(), "a soft mount's call did not fail"
            assert result.get("errno") == errno.ETIMEDOUT, result
            assert timeout - 0.5 <= result["took"] <= timeout * 2 + 5 * scale, result
        else:
            t.join(25)
            assert t.is_alive(), f"a hard mount's call ended: {result}"
            assert "requests wait for one to come back (hard)" in m.log_text(), \
                m.log_text()[-3000:]
    finally:
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGCONT)
    t.join(60 * scale)
    assert not t.is_alive(), "the call still waits after SIGCONT"
    if mode == "hard":
        assert result.get("size") == 5, result
        assert "reconnected" in m.log_text(), m.log_text()[-3000:]
        print(f"hard: the call took {result['took']:.1f} s and succeeded")


@pytest.mark.parametrize("perm", ["perm", "noperm"])
def test_noperm_and_perm(samba, mount_factory, tmp_path, perm):
    """A file mode 0600 owned by root: user nobody may not read it with perm
    (the kernel checks the mode bits); with noperm the kernel checks
    nothing and the server, which lets the mount's account read, decides."""
    m = mount_factory(samba, options=[perm, "uid=0", "gid=0", "file_mode=0600"])
    path = os.path.join(m.path, "root-only.txt")
    with open(path, "w") as f:
        f.write("secret\n")
    assert os.stat(path).st_mode & 0o777 == 0o600
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "cat", path], capture_output=True, text=True, timeout=30)
    if perm == "perm":
        assert r.returncode != 0 and "Permission denied" in r.stderr, (r.stdout, r.stderr)
    else:
        assert r.returncode == 0 and r.stdout == "secret\n", r.stderr
    _bad_value(tmp_path, [f"{perm}=1"], f"mount option '{perm}' takes no value")


# ---- options no other test showed -------------------------------------------------


def test_uid_gid_file_mode_dir_mode(samba, mount_factory, tmp_path):
    m = mount_factory(samba, options=["uid=1234", "gid=5678", "file_mode=0640",
                                      "dir_mode=0710"])
    with open(os.path.join(m.path, "f"), "w") as f:
        f.write("x")
    os.mkdir(os.path.join(m.path, "d"))
    st = os.stat(os.path.join(m.path, "f"))
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 5678, 0o640)
    st = os.stat(os.path.join(m.path, "d"))
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 5678, 0o710)
    for bad, name in (("uid=no-such-user-xyzzy", "uid"), ("gid=-1", "gid"),
                      ("file_mode=0999", "file_mode"), ("dir_mode=x", "dir_mode")):
        _bad_value(tmp_path, [bad], f"mount option '{name}'")


def test_ro_and_rw(samba, mount_factory, tmp_path):
    _server_file(samba, "there.txt", b"old")
    m = mount_factory(samba, options=["ro"])
    assert "ro" in mount_options(m.path)
    with pytest.raises(OSError) as e:
        open(os.path.join(m.path, "new.txt"), "w")
    assert e.value.errno == errno.EROFS
    with pytest.raises(OSError) as e:
        open(os.path.join(m.path, "there.txt"), "r+")
    assert e.value.errno == errno.EROFS
    with open(os.path.join(m.path, "there.txt")) as f:
        assert f.read() == "old"
    m.stop()
    m = mount_factory(samba, options=["ro", "rw"])
    assert "rw" in mount_options(m.path)
    with open(os.path.join(m.path, "there.txt"), "w") as f:
        f.write("new")
    with open(os.path.join(samba.share_path, "there.txt")) as f:
        assert f.read() == "new"
    _bad_value(tmp_path, ["ro=1"], "'ro'")


@pytest.mark.parametrize("actimeo", [0, 60])
def test_actimeo(samba, mount_factory, tmp_path, actimeo):
    """A size changed on the server shows at once with actimeo=0, and not
    within actimeo=60."""
    server = _server_file(samba, "a.txt", b"1234")
    m = mount_factory(samba, options=[f"actimeo={actimeo}"])
    path = os.path.join(m.path, "a.txt")
    assert os.stat(path).st_size == 4
    with open(server, "ab") as f:
        f.write(b"5678")
    assert os.stat(path).st_size == (8 if actimeo == 0 else 4)
    _bad_value(tmp_path, ["actimeo=-1"], "mount option 'actimeo'")


def test_guest(samba_factory, mounts, tmp_path):  # noqa: F811
    """guest: no user name, no password, the server's guest account; a
    server that takes no guests fails the mount."""
    srv = samba_factory(extra_global=["map to guest = bad user", "restrict anonymous = 0"],
                        extra_share=["guest ok = yes", "valid users ="])
    m = mounts(srv, None, None, options=["guest", "debug"])
    names = os.listdir(m.path)
    assert isinstance(names, list)
    assert "password from guest" in m.log_text(), m.log_text()[-2000:]
    strict = samba_factory()  # map to guest = never, valid users = the test user
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r, _ = run_mount_command(strict.unc, str(mnt), None, None, options=["guest"], timeout=60)
    assert r.returncode == 1 and "mount error:" in r.stderr, r.stderr
    _bad_value(tmp_path, ["guest=yes"], "mount option 'guest' takes no value")


def test_domain_and_the_aliases(samba, mounts, tmp_path):  # noqa: F811
    """domain= (and dom=, workgroup=) reaches the logon; user=/pass= are
    username=/password=."""
    for opts in ([f"username={samba.user}", f"password={samba.password}", "domain=SMBRDMA"],
                 [f"user={samba.user}", f"pass={samba.password}", "dom=SMBRDMA"],
                 [f"user={samba.user}", f"pass={samba.password}", "workgroup=SMBRDMA"]):
        m = mounts(samba, None, None, options=opts + ["debug"])
        os.listdir(m.path)
        assert f"as '{samba.user}' domain SMBRDMA" in m.log_text(), (opts, m.log_text()[-2000:])
        m.stop()
    _bad_value(tmp_path, ["credentials="], "mount option 'credentials'")


def test_sec(samba, mount_factory, tmp_path):
    """sec=ntlmsspi signs every message, which this Samba does not ask for;
    mount.cifs's sec=ntlmv2 is refused with the list of what works."""
    m = mount_factory(samba, options=["sec=ntlmsspi"])
    assert ctl_json("debug", m.path)["signing"] is True
    m.stop()
    m = mount_factory(samba, options=["sec=ntlmssp"])
    assert ctl_json("debug", m.path)["signing"] is False
    _bad_value(tmp_path, ["sec=ntlmv2"], "use ntlmssp, ntlmsspi, krb5, krb5i or none")


def test_rdma_and_rdma_threshold(samba, mount_factory, tmp_path):
    """rdma over loopback, where no RDMA device (or no SMB Direct server)
    is: a clear failure, no mount left.  rdma_threshold's and rdma_channels'
    effects need RDMA: tests/vm/guest/test_smbrdma_stress.py and
    test_smbrdma_mount.py::test_rdma_channels_two_queue_pairs show them in the
    QEMU guest; here their bad values, and rdma_channels on a TCP mount,
    which opens no channel more."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r, secs = run_mount_command(samba.unc, str(mnt), samba.user, samba.password,
                                options=["rdma", "rdma_threshold=65536"], timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"RDMA|SMB Direct", r.stderr), r.stderr
    assert not is_mounted(str(mnt))
    print(f"rdma: failed in {secs:.1f} s: {r.stderr.strip()}")
    for bad in ("rdma_threshold=", "rdma_threshold=4k", "rdma_threshold=2147483648"):
        _bad_value(tmp_path, [bad], "mount option 'rdma_threshold'")
    _bad_value(tmp_path, ["rdma=1"], "mount option 'rdma' takes no value")
    for bad in ("rdma_channels=", "rdma_channels=0", "rdma_channels=9", "rdma_channels=two"):
        _bad_value(tmp_path, [bad], "mount option 'rdma_channels'")
    m = mount_factory(samba, options=["rdma_channels=2"])
    time.sleep(1)
    st = ctl_json("stats", m.path)
    assert [c["transport"] for c in st["channels"]] == ["tcp"], st


def test_multichannel_and_nomultichannel(samba_factory, mount_factory, scale):
    srv = samba_factory(extra_global=MC_GLOBAL)

    def channels(m, want):
        deadline = time.monotonic() + 10 * scale
        while True:
            n = len(ctl_json("stats", m.path)["channels"])
            if n == want or time.monotonic() > deadline:
                return n
            time.sleep(0.2)

    m = mount_factory(srv, options=["multichannel"])
    assert channels(m, 2) == 2  # max_channels defaults to 2
    m.stop()
    m = mount_factory(srv, options=["multichannel", "nomultichannel"])
    time.sleep(1)
    assert channels(m, 1) == 1


def test_debug_levels(samba, mount_factory):
    """-f logs notices; -v also informational lines; -o debug also debug
    lines; -d also every FUSE request."""
    info, debug, fuse = "connecting to", "mount options:", "opcode: LOOKUP"
    want = {"-f": (False, False, False), "-v": (True, False, False),
            "debug": (True, True, False), "-d": (True, True, True)}
    for how, expect in want.items():
        if how == "debug":
            m = mount_factory(samba, options=["debug"])
        else:
            m = mount_factory(samba, extra_args=[] if how == "-f" else [how])
        assert m.cmd.count("-f") == 1  # the fixture runs every mount with -f
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(m.path, "no-such-name"))
        time.sleep(0.2)
        log = m.log_text()
        assert "mounted //" in log, log[-2000:]
        got = (info in log, debug in log, fuse in log)
        assert got == expect, (how, got, log[-2000:])
        m.stop()


def test_kernel_flags(samba, mount_factory):
    """The kernel's flags reach the mount, and a later flag undoes an
    earlier one: noexec stops a script, exec lets it run."""
    opts = ["nosuid", "nodev", "noexec", "sync", "dirsync", "noatime"]
    m = mount_factory(samba, options=opts + ["file_mode=0755"])
    have = mount_options(m.path)
    assert set(opts) <= have, have
    script = os.path.join(m.path, "s.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    with pytest.raises(PermissionError):
        subprocess.run([script], timeout=30)
    m.stop()
    undo = ["noexec", "exec", "nosuid", "suid", "nodev", "dev", "sync", "async", "dirsync",
            "noatime", "atime"]
    m = mount_factory(samba, options=undo + ["file_mode=0755"])
    have = mount_options(m.path)
    assert not {"noexec", "nosuid", "nodev", "sync", "noatime"} & have, have
    assert "dirsync" in have, have
    r = subprocess.run([os.path.join(m.path, "s.sh")], capture_output=True, text=True,
                       timeout=30)
    assert r.stdout == "ran\n", r


def test_mount8_and_fstab_options(samba, mount_factory, tmp_path):
    """What mount(8), fstab and systemd put among the options is accepted
    and means nothing to the mount."""
    ignored = ["defaults", "auto", "noauto", "nofail", "_netdev", "user", "users", "nouser",
               "owner", "group", "relatime", "x-systemd.automount", "x-gvfs-show",
               "comment=systemd.automount"]
    m = mount_factory(samba, options=ignored)
    with open(os.path.join(m.path, "f"), "w") as f:
        f.write("x")
    assert os.path.exists(os.path.join(samba.share_path, "f"))
    _bad_value(tmp_path, ["_netdev=1"], "mount option '_netdev' takes no value")


def test_command_line_flags(samba, mount_factory, tmp_path):
    """-h/--help and -V/--version answer and exit 0; -n is accepted; -s
    lets an unknown option (passed with -o) through, which fails without
    it, naming the option."""
    for flag in ("-h", "--help"):
        r = subprocess.run([daemon_binary(), flag], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.startswith("usage: mount.smbrdma"), r
        assert "cache=" in r.stdout and "hard" in r.stdout, r.stdout
    for flag in ("-V", "--version"):
        r = subprocess.run([daemon_binary(), flag], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and re.match(r"mount\.smbrdma \S+\n$", r.stdout), r
    m = mount_factory(samba, extra_args=["-n"])
    os.listdir(m.path)
    m.stop()
    m = mount_factory(samba, options=["frobnicate=1", "noperm"], extra_args=["-s"])
    assert "-o" in m.cmd
    os.listdir(m.path)
    m.stop()
    _bad_value(tmp_path, ["frobnicate=1"], "unknown mount option 'frobnicate'")


def test_man_page_renders_cleanly():
    """`man -l man/mount.smbrdma.8` renders with groff -wall quiet."""
    r = subprocess.run(["groff", "-wall", "-man", "-Tutf8", MAN], capture_output=True,
                       text=True, env=dict(os.environ, LC_ALL="C.UTF-8"))
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    text = re.sub(r".\x08", "", r.stdout)  # overstrike (bold, underline) off
    assert "mfsymlinks" in text and "rsize" in text


def test_nolease(samba, mount_factory):
    """By default an open holds a lease (Samba grants RWH); with nolease the
    same open asks for none and gets neither lease nor oplock, and the data
    still round-trips.  smbstatus --json of the private Samba says which."""
    for opts, want, data in (([], "LEASE(RWH)", b"leased"),
                             (["nolease"], "NONE", b"not leased")):
        m = mount_factory(samba, options=opts)
        name = f"lease-{len(opts)}.txt"
        p = os.path.join(m.path, name)
        with open(p, "wb") as f:
            f.write(data)
        fd = os.open(p, os.O_RDONLY)
        try:
            files = smbstatus(samba).get("open_files", {})
            opens = [o for f in files.values() if f.get("filename") == name
                     for o in f.get("opens", {}).values()]
            assert opens, f"smbstatus lists no open of {name}: {files}"
            # Samba 4.17 prints an empty "oplock" object for an open without one
            got = {o["oplock"].get("text", "NONE") for o in opens}
            assert got == {want}, f"{opts}: {got}"
            assert os.read(fd, 100) == data
        finally:
            os.close(fd)
        with open(os.path.join(samba.share_path, name), "rb") as f:
            assert f.read() == data
        m.stop()
