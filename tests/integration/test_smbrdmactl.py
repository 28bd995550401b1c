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


# ---- issue 25: stats --prometheus and top ------------------------------------------

CTL_C = os.path.join(REPO, "fuse", "ctl.c")
PROM_TYPES = ("counter", "gauge", "histogram")
# A sample line of the text exposition format: name, {labels} (values quoted,
# with \\ \" \n escapes), one value.
SAMPLE_RE = re.compile(
    r'([a-zA-Z_:][a-zA-Z0-9_:]*)'
    r'(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
    r'(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*)?\})? '
    r'([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))')


def documented_metrics():
    """{name: (type, [labels])} from the man page's PROMETHEUS METRICS
    section: '.TP/.B name', then 'TYPE; labels a, b, c: meaning'."""
    lines = open(MAN).read().splitlines()
    metrics, inside = {}, False
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            inside = line.strip() == ".SH PROMETHEUS METRICS"
            continue
        if inside and line == ".TP" and lines[i + 1].startswith(".B smbrdma_"):
            name = lines[i + 1][3:].strip()
            m = re.match(r"(\w+); labels ([a-z_, ]+):", lines[i + 2])
            assert m, f"man page: metric {name} has no 'type; labels ...:' ({lines[i + 2]!r})"
            assert m.group(1) in PROM_TYPES, f"man page: {name}: type {m.group(1)}"
            metrics[name] = (m.group(1), [x.strip() for x in m.group(2).split(",")])
    return metrics


def code_metrics():
    """{name: type} from fuse/ctl.c's prom_metrics[] table, the one list the
    daemon prints."""
    src = open(CTL_C).read()
    found = re.findall(r'\{"(smbrdma_\w+)",\s*PROM_(COUNTER|GAUGE|HISTOGRAM)', src)
    return {n: t.lower() for n, t in found}


def prometheus_text(path):
    r = run_ctl("stats", path, "--prometheus")
    assert r.returncode == 0, f"smbrdmactl stats --prometheus failed: {r.stderr}"
    return r.stdout


def check_exposition(text):
    """The text format, strictly: HELP then TYPE before a metric's samples,
    each metric once, every other line a well-formed sample of the metric
    just typed. Returns {name: (type, [sample (name, labels-string, value)])}."""
    out, cur = {}, None
    lines = text.splitlines()
    assert text.endswith("\n") and all(lines), "blank or unterminated line"
    for i, line in enumerate(lines):
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert name not in out, f"{name} twice"
            assert lines[i + 1].startswith(f"# TYPE {name} "), f"no TYPE after HELP {name}"
            assert len(line.split(None, 3)) == 4, f"empty HELP for {name}"
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert kind in PROM_TYPES, line
            out[name] = (kind, [])
            cur = name
            continue
        assert not line.startswith("#"), line
        m = SAMPLE_RE.fullmatch(line)
        assert m, f"not a sample line: {line!r}"
        kind = out[cur][0]
        suffixes = ("_bucket", "_sum", "_count") if kind == "histogram" else ("",)
        assert m.group(1) in [cur + s for s in suffixes], f"{m.group(1)} under TYPE {cur}"
        out[cur][1].append((m.group(1), m.group(2) or "", m.group(3)))
    return out


def parsed_families(text):
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        # tools/install-deps installs it: its absence is a setup error
        raise AssertionError("python3-prometheus-client is not installed (tools/install-deps)")
    fams = {}
    for f in text_string_to_metric_families(text):
        # the parser names a counter's family without its _total
        name = f.name + "_total" if f.type == "counter" else f.name
        fams[name] = f
    return fams


def test_prometheus_metrics_documented_and_in_code():
    doc, code = documented_metrics(), code_metrics()
    assert len(code) >= 20, f"fuse/ctl.c: prom_metrics[] not found ({code})"
    assert set(doc) == set(code), (
        f"in smbrdmactl(8) only: {sorted(set(doc) - set(code))}, "
        f"in fuse/ctl.c only: {sorted(set(code) - set(doc))}")
    for name, (kind, labels) in doc.items():
        assert code[name] == kind, f"{name}: man page says {kind}, code {code[name]}"
        assert name.startswith("smbrdma_")
        assert name.endswith("_total") == (kind == "counter"), f"{name}: counter ⇔ _total"
        assert labels[0] == "mount", name
        if name.startswith("smbrdma_channel_"):
            assert labels[:3] == ["mount", "channel", "transport"], name


def test_stats_prometheus(samba, mount_factory, tmp_path):
    m = mount_factory(samba)
    with open(os.path.join(m.path, "p.bin"), "wb") as f:
        f.write(os.urandom(3 * MIB))
    os.listdir(m.path)
    text = prometheus_text(m.path)
    strict = check_exposition(text)
    fams = parsed_families(text)
    doc = documented_metrics()
    assert set(strict) == set(doc), (
        f"printed, not documented: {sorted(set(strict) - set(doc))}; "
        f"documented, not printed: {sorted(set(doc) - set(strict))}")
    assert set(fams) == set(doc), sorted(set(fams) ^ set(doc))
    mnt = os.path.realpath(m.path)
    for name, (kind, labels) in doc.items():
        f = fams[name]
        assert f.type == kind, f"{name}: printed as {f.type}, documented {kind}"
        assert f.samples, f"{name}: no sample"
        for s in f.samples:
            want = set(labels) | ({"le"} if s.name.endswith("_bucket") else set())
            assert set(s.labels) == want, f"{name}: labels {sorted(s.labels)}, want {want}"
            assert s.labels["mount"] == mnt
            assert s.value >= 0, s
    # the same numbers as --json
    js = ctl_json("stats", m.path)

    def chan(name, ch=0, **kw):
        v = [s.value for s in fams[name].samples
             if s.labels.get("channel") == str(ch) and
             all(s.labels.get(k) == v for k, v in kw.items())]
        assert len(v) == 1, (name, v)
        return v[0]
    j0 = js["channels"][0]
    info = fams["smbrdma_mount_info"].samples[0].labels
    assert (info["server"], info["share"], info["dialect"]) == \
        (samba.host, samba.share, js["dialect"])
    ch_info = fams["smbrdma_channel_info"].samples[0].labels
    assert (ch_info["transport"], ch_info["remote"], ch_info["state"]) == \
        (j0["transport"], j0["remote"], "up")
    assert chan("smbrdma_channel_up") == 1
    # counters only grow between the --prometheus and the --json answer
    for prom, key in (("smbrdma_channel_requests_total", "requests"),
                      ("smbrdma_channel_sent_bytes_total", "bytes_sent"),
                      ("smbrdma_channel_received_bytes_total", "bytes_received")):
        assert 0 < chan(prom) <= j0[key], (prom, chan(prom), j0[key])
    assert chan("smbrdma_channel_sent_bytes_total") > 3 * MIB
    assert chan("smbrdma_channel_commands_total", command="WRITE") >= 3
    # the latency histogram: cumulative, ends in +Inf == _count, some requests
    buckets = [s for s in fams["smbrdma_channel_request_latency_seconds"].samples
               if s.name.endswith("_bucket") and s.labels["channel"] == "0"]
    les = [s.labels["le"] for s in buckets]
    assert les[-1] == "+Inf" and len(les) == 26
    assert [float(x) for x in les[:-1]] == [2 ** k / 1e6 for k in range(25)]
    counts = [s.value for s in buckets]
    assert counts == sorted(counts)
    total = [s.value for s in fams["smbrdma_channel_request_latency_seconds"].samples
             if s.name.endswith("_count") and s.labels["channel"] == "0"][0]
    lsum = [s.value for s in fams["smbrdma_channel_request_latency_seconds"].samples
            if s.name.endswith("_sum") and s.labels["channel"] == "0"][0]
    assert counts[-1] == total >= chan("smbrdma_channel_commands_total", command="WRITE")
    assert 0 < lsum < total * 30, (lsum, total)
    # and in JSON: per bucket, not cumulative; as many as the answers
    assert len(j0["latency_us_buckets"]) == 26
    assert sum(j0["latency_us_buckets"]) >= total
    assert j0["latency_us_sum"] >= lsum * 1e6 - 1
    # --prometheus goes with stats only, and not with --json
    assert run_ctl("channels", m.path, "--prometheus").returncode == 2
    assert run_ctl("stats", m.path, "--prometheus", "--json").returncode == 2


def tmux(*args, check=True):
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=20,
                          check=check)


TOP_HEAD = ["CH", "TRANSPORT", "REMOTE", "IOPS", "RD_MiB/s", "WR_MiB/s", "P50_ms", "P99_ms",
            "CREDITS", "INFLIGHT", "RDMA_MiB/s", "INLINE_MiB/s", "FAILOVERS"]


def top_rows(screen):
    """{CH: {column: cell}} of the last refresh on the screen."""
    lines = screen.splitlines()
    heads = [i for i, ln in enumerate(lines) if ln.split() == TOP_HEAD]
    assert heads, f"no header row on the screen:\n{screen}"
    rows = {}
    for ln in lines[heads[-1] + 1:]:
        cells = ln.split()
        if not cells:
            break
        if cells[0] == "ALL":  # empty transport and remote
            cells = ["ALL", "", ""] + cells[1:]
        assert len(cells) == len(TOP_HEAD), f"row {ln!r}"
        rows[cells[0]] = dict(zip(TOP_HEAD, cells))
    return rows


def copy_loop(mnt, tmp_path, flag):
    """Copies of 32 MiB into mnt, one after the other until end_copy():
    the writing outlasts the captures whatever the machine's speed."""
    stop = tmp_path / "stop-copying"
    p = subprocess.Popen(
        ["sh", "-c", f"while [ ! -e {stop} ]; do dd if=/dev/zero of={mnt}/big bs=1M "
         f"count=32 {flag} status=none || exit 1; done"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    p.stop_file = stop
    return p


def end_copy(p):
    """Let the running dd finish, then the loop; kill both (their process
    group) only if that takes over a minute. A dd killed in the middle of a
    write is left out on purpose: the tests here are about smbrdmactl."""
    import signal
    p.stop_file.touch()
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        raise


def test_top_moves_during_a_copy(samba, mount_factory, tmp_path):
    import shutil
    import time
    # tools/install-deps installs it: its absence is a setup error
    assert shutil.which("tmux"), "tmux is not installed (tools/install-deps)"
    m = mount_factory(samba)
    os.listdir(m.path)
    sess = f"smbrdmactl-top-{os.getpid()}"
    tmux("new-session", "-d", "-s", sess, "-x", "200", "-y", "30",
         f"{ctl_binary()} top {m.path} --interval 0.5; sleep 60")
    copy = None
    try:
        time.sleep(1.5)
        idle = top_rows(tmux("capture-pane", "-p", "-t", sess).stdout)
        assert "0" in idle and "ALL" in idle, idle
        assert idle["0"]["TRANSPORT"] == "tcp"
        copy = copy_loop(m.path, tmp_path, "conv=fsync")
        screens = []
        for _ in range(3):
            time.sleep(1.2)
            assert copy.poll() is None, f"the copy failed: {copy.stderr.read()}"
            screens.append(tmux("capture-pane", "-p", "-t", sess).stdout)
        end_copy(copy)
        assert copy.returncode == 0, copy.stderr.read()
        copy = None
        seen = [top_rows(s) for s in screens]
        for rows in seen:
            ch = rows["0"]
            assert float(ch["WR_MiB/s"]) > 0.5, ch
            assert float(ch["IOPS"]) > 0, ch
            assert float(ch["INLINE_MiB/s"]) >= float(ch["WR_MiB/s"]), ch
            assert ch["P50_ms"] != "-" and float(ch["P99_ms"]) >= float(ch["P50_ms"]), ch
            assert float(rows["ALL"]["WR_MiB/s"]) >= float(ch["WR_MiB/s"]) - 0.01
        # the numbers move from one refresh to the next
        assert len({(r["0"]["IOPS"], r["0"]["WR_MiB/s"]) for r in seen}) >= 2, screens
        assert [ln for ln in screens[-1].splitlines() if ln.strip()][0].startswith(m.path)
    finally:
        if copy:
            end_copy(copy)
        tmux("kill-session", "-t", sess, check=False)


def test_top_plain_and_mount_gone(samba, mount_factory):
    m = mount_factory(samba)
    os.listdir(m.path)
    r = run_ctl("top", m.path, "--interval", "0.2", "--count", "2")
    assert r.returncode == 0, r.stderr
    assert "\033[" not in r.stdout, "screen control codes when not on a terminal"
    frames = [f for f in r.stdout.split("\n\n") if f.strip()]
    assert len(frames) == 2, r.stdout
    for f in frames:
        assert "0" in top_rows(f)
    # the mount disappears under a running top
    p = subprocess.Popen([ctl_binary(), "top", m.path, "--interval", "0.2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    import time
    time.sleep(0.7)
    m.stop()
    out, err = p.communicate(timeout=20)
    assert p.returncode == 1, (p.returncode, err)
    assert "the mount is gone" in err, err
    for bad in (("--interval", "0"), ("--interval", "x"), ("--count", "0"), ("--json",)):
        assert run_ctl("top", "/tmp", *bad).returncode == 2, bad
    assert run_ctl("stats", "/tmp", "--count", "1").returncode == 2


def test_top_and_prometheus_multichannel(samba_factory, mount_factory, tmp_path):
    """Three channels: three rows plus ALL, the sum of theirs; a channel
    label per channel in the Prometheus text."""
    srv = samba_factory(extra_global=[
        "server multi channel support = yes",
        'interfaces = "127.0.0.1;speed=10000000000,capability=RSS"'])
    m = mount_factory(srv, options=["max_channels=3"])
    assert len(ctl_json("stats", m.path)["channels"]) == 3
    fams = parsed_families(prometheus_text(m.path))
    assert {s.labels["channel"] for s in fams["smbrdma_channel_requests_total"].samples} == \
        {"0", "1", "2"}
    copy = copy_loop(m.path, tmp_path, "oflag=direct")
    try:
        r = run_ctl("top", m.path, "--interval", "1", "--count", "1")
    finally:
        end_copy(copy)
    assert copy.returncode == 0, copy.stderr.read()
    assert r.returncode == 0, r.stderr
    rows = top_rows(r.stdout)
    assert set(rows) == {"0", "1", "2", "ALL"}, r.stdout
    for col in ("IOPS", "WR_MiB/s", "INLINE_MiB/s", "CREDITS", "INFLIGHT"):
        parts = sum(float(rows[c][col]) for c in "012")
        # each cell is rounded for display
        assert abs(float(rows["ALL"][col]) - parts) <= 2, (col, r.stdout)
    assert float(rows["ALL"]["WR_MiB/s"]) > 1, r.stdout
    assert sum(float(rows[c]["WR_MiB/s"]) > 0 for c in "012") >= 2, r.stdout
