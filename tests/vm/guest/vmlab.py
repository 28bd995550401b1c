"""Helpers for the tests that run inside the test guest (import them: ``from vmlab import run``)."""

import hashlib
import subprocess


def run(cmd, check=True, timeout=120, **kw):
    """Run a command (list or shell string), capture its output as text."""
    shell = isinstance(cmd, str)
    return subprocess.run(cmd, shell=shell, check=check, timeout=timeout,
                          capture_output=True, text=True, **kw)


def sha256_file(path, bufsize=1 << 20):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(bufsize)
            if not b:
                return h.hexdigest()
            h.update(b)


def dmesg_tail(lines=30):
    try:
        return "\n".join(run(["dmesg"], check=False).stdout.splitlines()[-lines:])
    except Exception as e:  # pragma: no cover - diagnostics only
        return f"(dmesg failed: {e})"
