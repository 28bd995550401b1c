"""A source tree through mount.smbrdma against ksmbd, as a person moves one: `tar x` into the
share, every byte and mtime checked through the mount and on the server's own side, `ls -lR`,
then `rm -rf`; over TCP and over soft-RoCE.

What it guards is the metadata path under ksmbd's leases: with `smb2 leases = yes` (newer
ksmbd-tools' default, and the lab's unless SMBRDMA_VM_KSMBD_LEASES=no) ksmbd grants and
breaks directory leases while tar works, and a handle kept under one is closed at its break
while a stat may still be asking by it (tar failed 2-3 creates in 200 with EBADF that way:
the stat of the directory in the path walk of the open).  And that the directory leases stay:
ksmbd breaks them at the close of any file written below under a v2 lease, whatever its
ParentLeaseKey; the daemon notices the first such break and asks v1 leases for files, which
ksmbd leaves alone.  With leases off the same tree goes through oplocks.
"""

import hashlib
import os
import random
import shutil
import subprocess

import pytest

from vmlab import mount_smbrdma, run, stats, umount

ENTRIES = 240


def _make_tree(root, entries, seed=21):
    """Nested directories (up to 4 deep) of files of 0-24 KiB; deterministic."""
    rng = random.Random(seed)
    dirs = [root]
    os.makedirs(root)
    made = 0
    while made < entries:
        parent = rng.choice(dirs)
        if rng.random() < 0.18 and parent.count(os.sep) - root.count(os.sep) < 4:
            d = os.path.join(parent, f"d{made}")
            os.mkdir(d)
            dirs.append(d)
        else:
            with open(os.path.join(parent, f"f{made}.c"), "wb") as f:
                f.write(rng.randbytes(rng.choice([0, 100, 1500, 4096, 9000, 24 * 1024])))
        made += 1
    # fixed mtimes, older than now, that tar must restore
    for i, (dirpath, _dirs, files) in enumerate(os.walk(root)):
        for name in files:
            os.utime(os.path.join(dirpath, name), (1_700_000_000 + i, 1_700_000_000 + i))
    return made


def _listing(root):
    """{relative path: (kind, size, mtime, sha of content)} of a tree."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirs:
            out[os.path.join(rel, d)] = ("d",)
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            with open(p, "rb") as f:
                data = f.read()
            out[os.path.join(rel, name)] = ("f", st.st_size, int(st.st_mtime),
                                             hashlib.sha256(data).hexdigest())
    return out


@pytest.mark.parametrize("kind", ["tcp", "rxe"])
def test_tar_x_ls_rm_of_a_tree(lab, kind, tmp_path, mountpoint):
    src = tmp_path / "src"
    made = _make_tree(str(src / "tree"), ENTRIES)
    tarball = tmp_path / "tree.tar"
    run(["tar", "-cf", str(tarball), "-C", str(src), "tree"])
    want = _listing(str(src / "tree"))
    assert len(want) == made

    log = os.path.join(lab.out, f"mount-trees-{kind}.log")
    top = f"trees-{kind}"
    server_side = os.path.join(lab.share_path, top)
    shutil.rmtree(server_side, ignore_errors=True)  # what an earlier failing run left
    mount_smbrdma(lab, lab.rxe_addr, mountpoint, kind == "rxe", log)
    try:
        (mountpoint / top).mkdir()
        r = subprocess.run(["tar", "-xf", str(tarball), "--no-same-owner",
                            "--no-same-permissions"], cwd=mountpoint / top,
                           capture_output=True, text=True, timeout=600)
        st = stats(mountpoint)
        print(f"ksmbd leases {lab.ksmbd_leases}, {kind}: leases granted "
              f"{st.get('leases_granted')}, breaks {st.get('lease_breaks')}")
        assert r.returncode == 0, f"tar x through the mount failed: {r.stderr[-3000:]}"
        if lab.ksmbd_leases == "yes":
            # ksmbd breaks a directory's leases at the close of any file written under a v2
            # lease, our own ParentLeaseKey notwithstanding: one break per directory, and
            # every later lookup in it asked the server.  The daemon sees the first such
            # break and asks v1 leases for files from then on (client/lease.c, files_v1).
            assert st.get("lease_breaks", 0) <= 5, \
                f"{st.get('lease_breaks')} lease breaks in tar x: directory leases lost again?"
        # through the mount, and on the server's own filesystem
        got = _listing(str(mountpoint / top / "tree"))
        assert got == want, sorted(set(got.items()) ^ set(want.items()))[:10]
        on_server = _listing(os.path.join(server_side, "tree"))
        assert on_server == want, sorted(set(on_server.items()) ^ set(want.items()))[:10]

        r = subprocess.run(["ls", "-lR", str(mountpoint / top)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        # every entry, and the tree itself
        assert sum(1 for line in r.stdout.splitlines() if line.startswith(("-", "d"))) == made + 1

        run(["rm", "-rf", str(mountpoint / top / "tree")], timeout=600)
        assert os.listdir(mountpoint / top) == []
        assert os.listdir(server_side) == []
        os.rmdir(mountpoint / top)
        assert not os.path.exists(server_side)
    finally:
        umount(mountpoint)
