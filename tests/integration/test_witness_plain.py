"""`witness` against a server with no Service Witness: a plain (not
clustered) Samba, whose RPC services are started on demand for named pipes
only, so nothing listens on the endpoint mapper's TCP port.

The mount works as without the option; the witness client says in
smbrdmactl stats why it has no registration ("waiting to retry", the
connection to port 135 refused), logs that once, not at every retry, and
the unmount ends its thread (the daemon exits).  This runs in the ASan pass
too: the witness thread's start, its DCE/RPC client's failure path and its
stop, under the sanitizers.  The registration and the moves themselves are
tests/integration/test_witness.py's, against a CTDB cluster.
"""

import os
import time

from lib.fileops import ctl_stats


def test_witness_without_a_witness_server(samba, mount_factory):
    m = mount_factory(samba, options=["witness"])
    p = os.path.join(m.path, "plain.txt")
    with open(p, "w") as f:
        f.write("a mount with witness, on a server without one\n")
    with open(p) as f:
        assert f.read() == "a mount with witness, on a server without one\n"
    deadline = time.monotonic() + 30
    while True:
        w = ctl_stats(m)["witness"]
        if w["error"]:
            break
        assert time.monotonic() < deadline, w
        time.sleep(0.2)
    print(f"witness on a plain Samba: {w['state']}: {w['error']}")
    assert w["on"] and w["state"] in ("waiting to retry", "asking the interface list"), w
    assert "135" in w["error"] or "refused" in w["error"].lower(), w
    assert w["events"] == 0 and w["moves"] == 0, w
    # the first retries (1, 2, 4 s) fail the same way: logged once
    time.sleep(4)
    log = m.log_text()
    warned = [ln for ln in log.splitlines() if "witness:" in ln and "warning" in ln]
    assert len(warned) == 1, warned
