"""Names from a hostile server (tests/lib/hostile_server.py) against the real daemon.

Issue 18: "Names from the server: an entry holding `/`, an empty name, or
`.`/`..` again makes the whole listing fail and leaks lookups; a listing
that never ends grows without bound.  Drop such entries with one log line;
cap a listing."

The server's QUERY_DIRECTORY answers are rewritten (the Listing action
below) to carry the entries a test wants, names given as raw UTF-16 so that
broken ones can be sent.  What must hold (fuse/dir_names.h has the rules):
  - `ls` of a directory with bad entries works and shows the good ones only;
    the daemon logs one line for the listing that names what it dropped
    (entries whose names do not decode, a NUL inside included, are dropped
    by the engine, which says so);
  - a listing that never ends fails with EFBIG, within a bounded time and
    memory, once past the cap (fuse/dir_names.h DIR_LISTING_MAX_ENTRIES),
    and one that sends the same entries forever fails with EIO;
  - the daemon keeps serving, and the mount unmounts cleanly with no
    sanitizer report (the mount_factory teardown checks that).
"""

import errno
import os
import re
import struct
import subprocess
import threading
import time

import pytest

from lib.hostile_server import (
    DEFAULT_FILES, FILE_ATTRIBUTE_ARCHIVE, HDR, STATUS_SUCCESS,
    SMB2_QUERY_DIRECTORY, Action, HostileServer, dirent_id_both, nt_now)
from lib.mount import build_sanitizer
from test_hostile import is_path, run_op, scaled, wait_log

OPTS = ["timeout=5", "actimeo=0"]
BAD_DIR = "bad"
GOOD = ["good1.txt", "good2.txt", "sub"]
CAP = 1 << 20              # fuse/dir_names.h DIR_LISTING_MAX_ENTRIES
LOG_LINE = r'dropped from the listing of "/{}"'


# ---- QUERY_DIRECTORY answers of our choosing -------------------------------------

def raw_entry(name16, file_id, attrs=FILE_ATTRIBUTE_ARCHIVE):
    """[MS-FSCC] 2.4.17 FileIdBothDirectoryInformation with a name given as
    raw UTF-16LE bytes (anything at all), NextEntryOffset 0."""
    t = nt_now()
    return struct.pack("<IIQQQQQQIIIBB24sHQ", 0, 0, t, t, t, t, 0, 0, attrs, len(name16), 0, 0,
                       0, b"\x00" * 24, 0, file_id) + name16


def chain(entries):
    """Entries (bytes) chained by NextEntryOffset, each 8-aligned."""
    out = bytearray()
    last = None
    for ent in entries:
        out += b"\x00" * (-len(out) % 8)
        if last is not None:
            struct.pack_into("<I", out, last, len(out) - last)
        last = len(out)
        out += ent
    return bytes(out)


class Listing(Action):
    """Rewrite QUERY_DIRECTORY answers: fn(req) -> the entry buffer to send.
    Only successful answers are rewritten (the listing then ends as the
    server would have it), or, with endless=True, every answer is made a
    success: the listing never ends."""

    def __init__(self, fn, endless=False, name="listing"):
        self.fn = fn
        self.endless = endless
        self.name = name

    def pdu(self, conn, req, rsps):
        for r in rsps:
            if r.command != SMB2_QUERY_DIRECTORY:
                continue
            if r.status != STATUS_SUCCESS and not self.endless:
                continue
            buf = self.fn(req)
            r.status = STATUS_SUCCESS
            r.body = struct.pack("<HHI", 9, HDR + 8, len(buf)) + buf
        return rsps


def u16(s):
    return s.encode("utf-16-le")


def hostile_entries(srv):
    """What the bad directory lists: the good entries among all the bad
    kinds, each bad kind after a good one so that nothing depends on its
    place in the buffer."""
    node = lambda n: srv.fs[f"{BAD_DIR}/{n}"]  # noqa: E731
    d = srv.fs[BAD_DIR]
    good = {n: dirent_id_both(n, node(n)) for n in GOOD}
    ids = iter(range(900000, 901000))
    bad = lambda name16: raw_entry(name16, next(ids))  # noqa: E731
    return [
        dirent_id_both(".", d), dirent_id_both("..", srv.fs[""]),
        good["good1.txt"],
        bad(u16("a/b")),                                  # holds '/'
        bad(b""),                                         # empty
        bad(u16(".")), bad(u16("..")),                    # "." and ".." again
        good["good2.txt"],
        good["good2.txt"],                                # listed twice
        bad(u16("nul") + b"\x00\x00" + u16("inside")),    # a NUL inside
        bad(u16("x") + b"\x00\xd8" + u16("y")),           # unpaired high surrogate
        bad(u16("x") + b"\x00\xdc"),                      # unpaired low surrogate
        bad(u16("L" * 256)),                              # 256 bytes > NAME_MAX
        bad(u16("\u65e5" * 86)),                          # 86 characters, 258 bytes
        bad(u16("back\\slash")),                          # the SMB separator
        good["sub"],
    ]


# ---- fixtures and helpers --------------------------------------------------------

@pytest.fixture
def srv():
    files = dict(DEFAULT_FILES)
    files.update({f"{BAD_DIR}/good1.txt": b"one\n", f"{BAD_DIR}/good2.txt": b"two\n",
                  f"{BAD_DIR}/sub/inner.txt": b"inner\n", "endless/seed.txt": b"",
                  "same/seed.txt": b""})
    s = HostileServer(files=files).start()
    yield s
    s.stop()


def assert_serving(m):
    assert m.alive(), f"the daemon died; log:\n{m.log_text()[-3000:]}"
    names, err, _ = run_op(lambda: sorted(os.listdir(m.path)), scaled(20))
    assert err is None, f"listing the root fails afterwards: {err}"
    assert "hello.txt" in names
    with open(os.path.join(m.path, "hello.txt"), "rb") as f:
        assert f.read() == DEFAULT_FILES["hello.txt"]


def peak_rss_mib(m):
    with open(f"/proc/{m.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


# ---- bad names -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["listdir", "ls-l"])
def test_bad_names_dropped(srv, mount_factory, how):
    """The listing works and shows the good entries only; each of them can
    be reached; one log line names what was dropped; listing again does not
    change that."""
    h = srv.on(SMB2_QUERY_DIRECTORY, Listing(lambda req: chain(hostile_entries(srv))),
               when=is_path(BAD_DIR), times=None)
    m = mount_factory(srv, options=OPTS)
    path = os.path.join(m.path, BAD_DIR)
    if how == "listdir":
        names, err, _ = run_op(lambda: sorted(os.listdir(path)), scaled(20))
        assert err is None, f"listing {BAD_DIR} fails: {err}; log:\n{m.log_text()[-3000:]}"
    else:
        # readdir, then a lookup and stat of every entry (the kernel turns
        # to readdirplus for the next listing)
        r, err, _ = run_op(lambda: subprocess.run(["ls", "-la", path], capture_output=True,
                                                  text=True, timeout=scaled(20)), scaled(25))
        assert err is None and r.returncode == 0, (r.stderr if r else err,
                                                   m.log_text()[-3000:])
        names = sorted(line.split()[-1] for line in r.stdout.splitlines()[1:])
        names = [n for n in names if n not in (".", "..")]
    assert names == GOOD, names
    assert h.fired >= 1
    for n in GOOD:
        os.stat(os.path.join(path, n))
    with open(os.path.join(path, "good2.txt"), "rb") as f:
        assert f.read() == b"two\n"
    assert sorted(os.listdir(os.path.join(path, "sub"))) == ["inner.txt"]

    log = wait_log(m, LOG_LINE.format(BAD_DIR))
    lines = [ln for ln in log.splitlines() if re.search(LOG_LINE.format(BAD_DIR), ln)]
    # one listing so far (ls -l may have rewound it once: at most one line each)
    assert 1 <= len(lines) <= 2, lines
    line = lines[0]
    for want in ('8 entries', '"a/b" (holding \'/\')', '"" (empty)', '"." (a second . or ..)',
                 '".." (a second . or ..)', '"good2.txt" (listed twice)',
                 '(longer than NAME_MAX)', 'and 2 more'):
        assert want in line, f"{want!r} not in {line!r}"
    # the engine drops what does not decode (a NUL inside, lone surrogates)
    assert re.search(r"not valid UTF-16", log), log[-3000:]

    # listing again (a fresh open, the server rewritten again) still works
    before = len(lines)
    names, err, _ = run_op(lambda: sorted(os.listdir(path)), scaled(20))
    assert err is None and names == GOOD, (names, err)
    log = wait_log(m, LOG_LINE.format(BAD_DIR))
    lines = [ln for ln in log.splitlines() if re.search(LOG_LINE.format(BAD_DIR), ln)]
    assert len(lines) == before + 1, lines

    # a name that was dropped cannot be reached either
    for bad in ("back\\slash", "L" * 256):
        _, err, _ = run_op(lambda: os.stat(os.path.join(path, bad)), scaled(10))
        assert err is not None and err.errno in (errno.ENOENT, errno.EINVAL,
                                                 errno.ENAMETOOLONG), err
    assert_serving(m)


def test_bad_names_in_every_reply_rate_limited(srv, mount_factory):
    """Bad entries in every listing of a tree being walked: a line per
    listing, but no more than the rate limit lets through."""
    for i in range(15):
        srv.add_file(f"tree/d{i:02d}/ok.txt", b"")
    bad = [raw_entry(u16("a/b"), 800000), raw_entry(b"", 800001)]

    def listing(req):
        node = srv.fs[req.path]
        kids = [dirent_id_both(n, k) for n, k in srv._children(req.path)]
        return chain([dirent_id_both(".", node), dirent_id_both("..", srv.fs[""])] + kids + bad)

    srv.on(SMB2_QUERY_DIRECTORY, Listing(listing),
           when=lambda r: (r.path or "").startswith("tree/d"), times=None)
    m = mount_factory(srv, options=OPTS)
    for i in range(15):
        names, err, _ = run_op(lambda: os.listdir(os.path.join(m.path, f"tree/d{i:02d}")),
                               scaled(20))
        assert err is None and names == ["ok.txt"], (names, err)
    time.sleep(0.5)
    lines = [ln for ln in m.log_text().splitlines() if 'dropped from the listing of "/tree/d'
             in ln]
    assert len(lines) == 10, lines   # LOG_BURST in fuse/ops_dir.c
    assert_serving(m)


# ---- listings that never end -----------------------------------------------------

def endless(outlen_min=4096):
    """Every answer carries as many fresh entries as the request's
    OutputBufferLength holds: a directory without end."""
    state = {"n": 0}
    lock = threading.Lock()

    def fn(req):
        outlen = max(outlen_min, struct.unpack_from("<I", req.body, 28)[0])
        per = outlen // 120          # 104 fixed + 16 bytes of name, 8-aligned
        with lock:
            first = state["n"]
            state["n"] += per
        t = nt_now()
        parts = []
        for k in range(first, first + per):
            name = u16(f"e{k:07d}")
            nxt = 120 if k != first + per - 1 else 0
            parts.append(struct.pack("<IIQQQQQQIIIBB24sHQ", nxt, 0, t, t, t, t, 0, 0,
                                     FILE_ATTRIBUTE_ARCHIVE, len(name), 0, 0, 0,
                                     b"\x00" * 24, 0, 5_000_000 + k) + name)
        return b"".join(parts)
    fn.state = state
    return fn


def test_endless_listing_capped(srv, mount_factory):
    """Every QUERY_DIRECTORY answers more entries: the listing fails with
    EFBIG once past the cap, in bounded time and memory, with a log line;
    the daemon keeps serving and unmounts cleanly."""
    gen = endless()
    h = srv.on(SMB2_QUERY_DIRECTORY, Listing(gen, endless=True, name="endless"),
               when=is_path("endless"), times=None)
    m = mount_factory(srv, options=OPTS)
    path = os.path.join(m.path, "endless")
    count = {"n": 0}

    def walk():
        # scandir rather than listdir: no list of a million names here
        with os.scandir(path) as it:
            for _ in it:
                count["n"] += 1

    _, err, secs = run_op(walk, scaled(300))
    assert err is not None, (f"an endless listing ended after {count['n']} entries "
                             f"({gen.state['n']} sent)")
    assert err.errno == errno.EFBIG, f"{err} after {secs:.0f}s, {count['n']} entries"
    assert count["n"] <= CAP, count
    assert CAP <= gen.state["n"] <= CAP + 2000, gen.state   # stopped asking at the cap
    print(f"\nendless listing: EFBIG after {secs:.1f}s, {count['n']} entries read, "
          f"{gen.state['n']} sent, daemon peak RSS {peak_rss_mib(m):.0f} MiB")
    wait_log(m, r'listing of "/endless" goes past 1048576 entries; failing it with EFBIG')
    # memory: the buffer holds at most the cap (~150 MiB); under ASan, its
    # redzones and quarantine (256 MiB) come on top
    limit = 1536 if build_sanitizer() != "none" else 768
    assert peak_rss_mib(m) < limit, f"daemon peak RSS {peak_rss_mib(m):.0f} MiB"
    # nothing more is asked once the listing failed
    fired = h.fired
    time.sleep(1)
    assert h.fired == fired
    assert_serving(m)


def test_same_entries_forever(srv, mount_factory):
    """The server ignores the cursor and sends the same page for ever: the
    listing makes no progress and fails with EIO, quickly, having kept one
    copy of each name."""
    node = srv.fs["same/seed.txt"]
    page = chain([dirent_id_both(f"s{i:03d}", node) for i in range(100)])
    h = srv.on(SMB2_QUERY_DIRECTORY, Listing(lambda req: page, endless=True),
               when=is_path("same"), times=None)
    m = mount_factory(srv, options=OPTS)
    _, err, secs = run_op(lambda: os.listdir(os.path.join(m.path, "same")), scaled(60))
    assert err is not None and err.errno == errno.EIO, (err, h.fired)
    assert h.fired <= 64 + 2, h.fired      # MAX_EMPTY_REPLIES in fuse/ops_dir.c
    wait_log(m, r"makes no progress")
    wait_log(m, LOG_LINE.format("same") + r'.*"s000" \(listed twice\)')
    assert_serving(m)
