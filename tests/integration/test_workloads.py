"""Issue 6 acceptance: real tools on the mount.  git clone of a local
repository onto it (fsck clean, status clean, checkout of another commit
matching that commit's tree), and make of a small C project (build, run,
an up-to-date second make, a rebuild after a header changes, make clean).
The tar round trip is in test_posix_links.py."""

import os
import shutil
import subprocess

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def run(args, cwd=None, check=True, timeout=300):
    env = dict(os.environ, **GIT_ENV)
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check:
        assert r.returncode == 0, f"{' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def tree_of(root):
    """{relative path: ('l', target) | ('f', bytes)} below root, without .git."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("l", os.readlink(p))
            else:
                with open(p, "rb") as f:
                    out[rel] = ("f", f.read())
    return out


@pytest.fixture
def m(samba, mount_factory):
    return mount_factory(samba, options=["mfsymlinks"])


def make_repo(path):
    """A repository with two commits: files in subdirectories, an
    executable, a symlink, a binary blob, a rename and a deletion."""
    run(["git", "init", "-q", "-b", "main", str(path)])
    g = lambda *a: run(["git", "-C", str(path)] + list(a))  # noqa: E731
    os.makedirs(path / "src" / "deep")
    (path / "README").write_text("first\n")
    (path / "src" / "a.c").write_text("int a(void) { return 1; }\n")
    (path / "src" / "deep" / "b.txt").write_text("b\n" * 1000)
    (path / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(path / "run.sh", 0o755)
    os.symlink("src/a.c", path / "link")
    (path / "blob.bin").write_bytes(os.urandom(200000))
    g("add", "-A")
    g("commit", "-q", "-m", "one")
    (path / "README").write_text("second\n")
    os.rename(path / "src" / "a.c", path / "src" / "a2.c")
    os.unlink(path / "link")
    os.symlink("src/a2.c", path / "link")
    os.unlink(path / "blob.bin")
    (path / "new.txt").write_text("new\n")
    g("add", "-A")
    g("commit", "-q", "-m", "two")
    return path


def test_git_clone_fsck_status_checkout(m, tmp_path):
    src = make_repo(tmp_path / "repo")
    dst = os.path.join(m.path, "clone")
    run(["git", "clone", "-q", "--no-hardlinks", str(src), dst])
    run(["git", "-C", dst, "fsck", "--full", "--strict"])
    assert run(["git", "-C", dst, "status", "--porcelain"]).stdout == ""
    assert tree_of(dst) == tree_of(str(src))
    # the first commit: files come back, others go, the symlink changes
    run(["git", "-C", dst, "checkout", "-q", "HEAD~1"])
    assert run(["git", "-C", dst, "status", "--porcelain"]).stdout == ""
    ref = tmp_path / "ref"
    run(["git", "clone", "-q", str(src), str(ref)])
    run(["git", "-C", str(ref), "checkout", "-q", "HEAD~1"])
    assert tree_of(dst) == tree_of(str(ref))
    assert os.readlink(os.path.join(dst, "link")) == "src/a.c"
    assert not os.path.exists(os.path.join(dst, "new.txt"))
    # back, a commit made on the mount, and fsck once more
    run(["git", "-C", dst, "checkout", "-q", "main"])
    with open(os.path.join(dst, "made-here.txt"), "w") as f:
        f.write("on the mount\n")
    run(["git", "-C", dst, "add", "made-here.txt"])
    run(["git", "-C", dst, "commit", "-q", "-m", "three"])
    run(["git", "-C", dst, "fsck", "--full", "--strict"])
    assert run(["git", "-C", dst, "status", "--porcelain"]).stdout == ""
    assert run(["git", "-C", dst, "log", "--format=%s"]).stdout.split() == ["three", "two", "one"]


MAKEFILE = """\
CFLAGS = -O0 -Wall
OBJS = main.o util.o calc.o
prog: $(OBJS)
\t$(CC) -o $@ $(OBJS)
main.o: main.c util.h calc.h
util.o: util.c util.h
calc.o: calc.c calc.h util.h
clean:
\trm -f prog $(OBJS)
.PHONY: clean
"""

SOURCES = {
    "util.h": "#define SCALE 3\nint twice(int x);\n",
    "calc.h": "int calc(int x);\n",
    "util.c": '#include "util.h"\nint twice(int x) { return 2 * x; }\n',
    "calc.c": '#include "calc.h"\n#include "util.h"\nint calc(int x) { return twice(x) * SCALE; }\n',
    "main.c": '#include <stdio.h>\n#include "util.h"\n#include "calc.h"\n'
              'int main(void) { printf("%d %d\\n", calc(7), SCALE); return 0; }\n',
}


def compiled(out):
    """The objects a make run compiled, from its echoed commands."""
    return sorted(w for line in out.splitlines() if " -c " in line or line.startswith("cc ")
                  for w in line.split() if w.endswith(".c"))


def test_make_a_small_c_project(samba, mount_factory):
    # Without the POSIX extensions every file has file_mode, so the built
    # program is executable only with x bits there (cifs.ko's default 0755).
    m = mount_factory(samba, options=["file_mode=0755"])
    cc = shutil.which("cc")
    assert cc, "no C compiler (.ci/run installs gcc)"
    proj = os.path.join(m.path, "proj")
    os.mkdir(proj)
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write(MAKEFILE)
    for name, text in SOURCES.items():
        with open(os.path.join(proj, name), "w") as f:
            f.write(text)
    out = run(["make", "-C", proj]).stdout
    assert compiled(out) == ["calc.c", "main.c", "util.c"]
    assert run([os.path.join(proj, "prog")]).stdout == "42 3\n"
    # nothing to do the second time
    second = run(["make", "-C", proj]).stdout
    assert "is up to date" in second and compiled(second) == []
    assert run(["make", "-q", "-C", proj], check=False).returncode == 0
    # a header every object depends on but util.c: main.o and calc.o again
    with open(os.path.join(proj, "calc.h"), "a") as f:
        f.write("/* touched */\n")
    out = run(["make", "-C", proj]).stdout
    assert compiled(out) == ["calc.c", "main.c"]
    # util.h changed: everything, and the binary sees the new value
    with open(os.path.join(proj, "util.h"), "w") as f:
        f.write("#define SCALE 5\nint twice(int x);\n")
    out = run(["make", "-C", proj]).stdout
    assert compiled(out) == ["calc.c", "main.c", "util.c"]
    assert run([os.path.join(proj, "prog")]).stdout == "70 5\n"
    # touch(1) alone is a change too
    run(["touch", os.path.join(proj, "util.c")])
    assert compiled(run(["make", "-C", proj]).stdout) == ["util.c"]
    run(["make", "-C", proj, "clean"])
    assert sorted(os.listdir(proj)) == sorted(["Makefile"] + list(SOURCES))
