"""Count results for tests/run-all: `summarize.py meson BUILDDIR` reads meson's
testlog.json, `summarize.py junit FILE.xml` reads pytest's JUnit XML. Prints
"PASSED FAILED SKIPPED XFAILED" on one line (XFAILED: expected failures,
pytest's xfail and meson's should_fail, counted apart from the skips and
not among the passes); a missing or unreadable file counts as
one failure (the step did not produce results)."""

import json
import sys
import xml.etree.ElementTree as ET


def meson(builddir):
    p = f"{builddir}/meson-logs/testlog.json"
    passed = failed = skipped = xfailed = 0
    try:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                res = json.loads(line).get("result", "")
                if res == "OK":
                    passed += 1
                elif res == "EXPECTEDFAIL":
                    xfailed += 1
                elif res == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    except FileNotFoundError:
        pass  # no unit tests registered yet: nothing ran
    except (OSError, ValueError):
        failed += 1
    return passed, failed, skipped, xfailed


def junit(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return 0, 1, 0, 0
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    # a test that fails and then errors in teardown appears twice: one
    # verdict per test, the worst of its entries
    verdict = {}
    rank = {"passed": 0, "xfailed": 1, "skipped": 1, "failed": 2}
    for s in suites:
        for tc in s.iter("testcase"):
            tags = {c.tag for c in tc}
            skip = tc.find("skipped")
            v = ("failed" if tags & {"failure", "error"} else
                 "xfailed" if skip is not None and skip.get("type") == "pytest.xfail" else
                 "skipped" if skip is not None else "passed")
            key = (tc.get("classname"), tc.get("name"))
            if rank[v] >= rank[verdict.get(key, "passed")]:
                verdict[key] = v
    vs = list(verdict.values())
    if not vs and suites and int(suites[0].get("errors", 0)):
        return 0, 1, 0, 0  # collection error: no testcases at all
    return vs.count("passed"), vs.count("failed"), vs.count("skipped"), vs.count("xfailed")


if __name__ == "__main__":
    kind, arg = sys.argv[1], sys.argv[2]
    print(*(meson(arg) if kind == "meson" else junit(arg)))
