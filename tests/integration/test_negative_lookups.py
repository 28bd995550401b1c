"""A name the server just said is missing (fuse/negcache.h).

`git checkout` and `tar x` stat a name and then create it with
open(O_CREAT|O_EXCL); the kernel looks a missing name up again for an
exclusive create, so each new file cost two lookups, each a round trip where
no directory listing is held under a lease (ksmbd breaks a directory's lease
at the close of every file written in it).  The daemon now answers the
second from the first for up to min(actimeo, 1 s), unless it made a name
meanwhile or a break came; the create itself always goes to the server.

The directory here is made behind Samba's back (in the share's directory on
the server), so the mount holds no lease on it and every lookup in it would
be a round trip: the CREATE counts of `smbrdmactl stats` show which ones
went.
"""

import errno
import os
import time

from lib.fileops import ctl_stats


def _server_dir(samba):
    """A directory made on the server's own filesystem, writable by the
    share's user: no lease of the mount's covers it."""
    d = os.path.join(samba.share_path, "d")
    os.mkdir(d)
    os.chmod(d, 0o777)
    return d


def _creates(m):
    return sum(c["commands"].get("CREATE", 0) for c in ctl_stats(m)["channels"])


def _missing(path):
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ENOENT
    return False


def test_second_lookup_of_a_missing_name_is_answered(samba, mount_factory):
    _server_dir(samba)
    m = mount_factory(samba)
    d = os.path.join(m.path, "d")
    assert os.path.isdir(d)
    base = _creates(m)
    assert _missing(os.path.join(d, "f1"))
    asked = _creates(m)
    assert asked > base, "the first lookup of a missing name asks the server"
    # an exclusive create looks the name up again: answered here; the
    # CREATE itself goes (FILE_CREATE: the server decides)
    fd = os.open(os.path.join(d, "f1"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"x")
    os.close(fd)
    assert _creates(m) == asked + 1, ctl_stats(m)["channels"]
    assert os.path.getsize(os.path.join(d, "f1")) == 1


def test_missing_answers_end_with_a_change_or_their_time(samba, mount_factory):
    _server_dir(samba)
    m = mount_factory(samba)
    d = os.path.join(m.path, "d")
    assert os.path.isdir(d)
    # a name this mount makes forgets every answer: a stat of "g" that
    # followed one of "g" now asks again
    assert _missing(os.path.join(d, "g"))
    with open(os.path.join(d, "h"), "wb"):
        pass
    before = _creates(m)
    assert _missing(os.path.join(d, "g"))
    assert _creates(m) == before + 1
    # a name made behind the mount's back (no lease of ours broken) shows
    # within a second, as with cifs.ko's negative dentries
    assert _missing(os.path.join(d, "late"))
    with open(os.path.join(samba.share_path, "d", "late"), "wb"):
        pass
    deadline = time.monotonic() + 1.5
    while _missing(os.path.join(d, "late")):
        assert time.monotonic() < deadline, "a missing answer outlived its second"
        time.sleep(0.05)


def test_actimeo_0_keeps_no_missing_answer(samba, mount_factory):
    _server_dir(samba)
    m = mount_factory(samba, options=["actimeo=0"])
    d = os.path.join(m.path, "d")
    assert os.path.isdir(d)
    before = _creates(m)
    assert _missing(os.path.join(d, "x"))
    first = _creates(m) - before
    assert _missing(os.path.join(d, "x"))
    assert _creates(m) - before == 2 * first and first > 0
