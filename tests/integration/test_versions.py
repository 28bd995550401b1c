"""Issue 2, acceptance line 4: vers=2.1, 3.0 and 3.1.1 each mount and pass
the file test, and really negotiate that dialect (checked with Samba's
smbstatus and, through the proxy, on the wire)."""

import subprocess

import pytest

from conftest import SMALL_MIB
from lib.fileops import short_file_test

VERSIONS = {"2.1": (0x0210, "SMB2_10"), "3.0": (0x0300, "SMB3_00"),
            "3.1.1": (0x0311, "SMB3_11")}


@pytest.mark.parametrize("vers", list(VERSIONS))
def test_version_file_test(samba, mount_factory, tmp_path, vers):
    m = mount_factory(samba, options=[f"vers={vers}"])
    st = subprocess.run(["smbstatus", "-s", samba.conf_path, "-b"], capture_output=True,
                        text=True, timeout=60)
    assert VERSIONS[vers][1] in st.stdout, f"smbstatus does not show {VERSIONS[vers][1]}:\n" \
                                           f"{st.stdout}{st.stderr}"
    problems = short_file_test(m.path, str(tmp_path), SMALL_MIB, samba.share_path)
    assert not problems, problems


@pytest.mark.parametrize("vers", list(VERSIONS))
def test_version_on_the_wire(samba, mount_factory, proxy_factory, vers):
    px = proxy_factory(samba)
    m = mount_factory(samba, options=[f"vers={vers}"], port=px.port)
    assert px.dialects, "no NEGOTIATE response seen"
    assert px.dialects[-1] == VERSIONS[vers][0], f"negotiated {px.dialects[-1]:#06x}"
    open(f"{m.path}/x", "wb").write(b"x")


def test_default_is_highest(samba, mount_factory, proxy_factory):
    px = proxy_factory(samba)
    mount_factory(samba, port=px.port)
    assert px.dialects and px.dialects[-1] == 0x0311, px.dialects
