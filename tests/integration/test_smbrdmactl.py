"""Issues 4 and 9: smbrdmactl stats|channels|debug against a live mount of the
test Samba. The JSON keys checked are read from man/smbrdmactl.8, so the
documentation and the output cannot drift apart."""

import json
import os
import re
import subprocess

from lib.fileops import MIB, make_random_file
from lib.mount import REPO, build_dir

MAN = os.path.join(REPO, "man", "smbrdmactl.8")
COMMANDS = ("stats", "channels", "debug", "reconnect", "dfs")
TYPES = {"string": str, "number": int, "boolean": bool, "array": list, "object": dict}


def ctl_binary():
    if os.environ.get("SMBRDMA_BUILD") == "installed":
        return "/sbin/smbrdmactl"
    return os.path.join(build_dir(), "tools", "smbrdmactl")


def documented_keys():
    """{command: (top-level {key: type}, channel {key: type})} from the man
    page's JSON KEYS section: '.SS' titles say which commands and level,
    '.TP/.B key' entries name a key, the next line starts with its type."""
    lines = open(MAN).read().splitlines()
    keys = {c: ({}, {}) for c in COMMANDS}
    in_keys, level, cmds = False, None, ()
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            in_keys = line.strip() == ".SH JSON KEYS"
            continue
        if not in_keys:
            continue
        if line.startswith(".SS"):
            title = line[4:]
            level = 1 if title.startswith("Channel") else 0
            cmds = COMMANDS if "every command" in title else \
                tuple(c for c in COMMANDS if re.search(rf"\b{c}\b", title))
            assert cmds, f"man page section {title!r} names no command"
            continue
        if line == ".TP" and lines[i + 1].startswith(".B "):
            key = lines[i + 1][3:].strip()
            kind = lines[i + 2].split(":")[0].split(",")[0].strip()
            assert kind in TYPES, f"man page: key {key} has no type ({lines[i + 2]!r})"
            for c in cmds:
                keys[c][level][key] = TYPES[kind]
    return keys


def run_ctl(*args):
    return subprocess.run([ctl_binary(), *args], capture_output=True, text=True, timeout=30)


def ctl_json(cmd, path):
    r = run_ctl(cmd, path, "--json")
    assert r.returncode == 0, f"smbrdmactl {cmd} failed: {r.stderr}"
    return json.loads(r.stdout)


def check_types(obj, want, what):
    missing = sorted(set(want) - set(obj))
    assert not missing, f"{what}: documented keys missing from the output: {missing}"
    undocumented = sorted(set(obj) - set(want))
    assert not undocumented, f"{what}: keys not in smbrdmactl(8): {undocumented}"
    for k, t in want.items():
        v = obj[k]
        ok = isinstance(v, t) and not (t is int and isinstance(v, bool))
        assert ok, f"{what}: {k} should be {t.__name__}, is {v!r}"
        if t is int:
            assert v >= 0, f"{what}: {k} is negative"


def test_man_page_lists_the_required_keys():
    keys = documented_keys()
    top, chan = keys["stats"]
    for k in ("channels", "payload_bytes_copied", "dialect", "signing", "server", "share",
              "mountpoint"):
        assert k in top, k
    for k in ("transport", "local", "remote", "state", "bytes_sent", "bytes_received",
              "rdma_read_bytes", "rdma_write_bytes", "requests", "credits", "send_credits",
              "recv_credits", "mw_bound", "mw_invalidated_remote", "mw_invalidated_local",
              "reconnects"):
        assert k in chan, k
    r = subprocess.run(["groff", "-wall", "-man", "-Tutf8", MAN], capture_output=True,
                       text=True)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def test_stats_json_counts_io(samba, mount_factory, tmp_path):
    m = mount_factory(samba)
    keys = documented_keys()
    src = make_random_file(str(tmp_path / "a.bin"), 4)
    with open(src, "rb") as f:
        data = f.read()
    with open(os.path.join(m.path, "a.bin"), "wb") as f:
        f.write(data)
    before = ctl_json("stats", m.path)
    check_types(before, keys["stats"][0], "stats")
    assert before["mountpoint"] == os.path.realpath(m.path)
    assert before["share"] == samba.share
    assert before["server"] == samba.host
    assert re.fullmatch(r"[23]\.\d(\.\d)?", before["dialect"]), before["dialect"]
    assert len(before["channels"]) >= 1
    for ch in before["channels"]:
        check_types(ch, keys["stats"][1], "stats channel")
        assert ch["transport"] == "tcp"
        assert ch["state"] == "up"
        for k in ("bytes_sent", "bytes_received", "requests"):
            assert ch[k] > 0, k
    # more I/O, through a fresh open so it goes over the wire
    with open(os.path.join(m.path, "b.bin"), "wb") as f:
        f.write(data)
        f.write(os.urandom(MIB))
    after = ctl_json("stats", m.path)
    b, a = before["channels"][0], after["channels"][0]
    assert a["bytes_sent"] > b["bytes_sent"] + 4 * MIB
    assert a["bytes_received"] > b["bytes_received"]
    assert a["requests"] > b["requests"]
    # by command: one CREATE and at least five 1 MiB WRITEs more; a compound
    # counts once per command, so the commands add up to the requests at least
    wrote = a["commands"].get("WRITE", 0) - b["commands"].get("WRITE", 0)
    assert wrote >= 5, (b["commands"], a["commands"])
    assert a["commands"]["CREATE"] > b["commands"]["CREATE"]
    assert set(a["commands"]) >= {"NEGOTIATE", "SESSION_SETUP", "TREE_CONNECT", "CREATE"}
    assert all(v > 0 for v in a["commands"].values())
    assert sum(a["commands"].values()) >= a["requests"]
    os.unlink(src)


def test_channels_debug_and_tables(samba, mount_factory):
    m = mount_factory(samba)
    os.listdir(m.path)
    keys = documented_keys()
    for cmd in ("channels", "debug"):
        out = ctl_json(cmd, m.path)
        check_types(out, keys[cmd][0], cmd)
        for ch in out["channels"]:
            check_types(ch, keys[cmd][1], f"{cmd} channel")
            assert ch["transport"] == "tcp" and ch["state"] == "up"
    dbg = ctl_json("debug", m.path)
    assert dbg["max_read"] > 0 and dbg["share_type"] == "disk"
    for cmd in COMMANDS:
        r = run_ctl(cmd, m.path)
        assert r.returncode == 0, r.stderr
        header = [ln for ln in r.stdout.splitlines() if ln.split()[:3] ==
                  ["CH", "TRANSPORT", "STATE"]]
        assert len(header) == 1, f"no header row in:\n{r.stdout}"
        rows = r.stdout.split(header[0] + "\n", 1)[1].splitlines()
        assert rows and rows[0].split()[1] == "tcp", r.stdout
    # also from a path inside the mount
    os.mkdir(os.path.join(m.path, "sub"))
    assert ctl_json("stats", os.path.join(m.path, "sub"))["mountpoint"] == \
        os.path.realpath(m.path)


def test_socket_file(samba, mount_factory):
    m = mount_factory(samba)
    os.listdir(m.path)
    st = os.stat(m.path)
    sock = f"/run/smbrdma/{os.major(st.st_dev)}:{os.minor(st.st_dev)}.sock"
    assert os.stat(sock).st_mode & 0o777 == 0o600
    assert os.stat("/run/smbrdma").st_mode & 0o777 == 0o755
    m.stop()
    assert not os.path.exists(sock), "control socket left after unmount"


def test_errors():
    r = run_ctl("stats", "/tmp")
    assert r.returncode == 1
    assert "/tmp is not an smbrdma mount" in r.stderr, r.stderr
    r = run_ctl("stats", "/nonexistent-smbrdmactl")
    assert r.returncode == 1 and "No such file" in r.stderr, r.stderr
    assert run_ctl("frobnicate", "/tmp").returncode == 2
    assert run_ctl("stats").returncode == 2
    assert run_ctl("stats", "/tmp", "--bogus").returncode == 2
