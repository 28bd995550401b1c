"""A server that RDMA-Writes less than it announces gets no stale bytes back (rxe, siw).

ksmbd writes exactly the DataRemaining it announces in a READ response, so the server here is
scripted: tests/lib/hostile_server.py (an SMB2 server over Direct TCP) behind
relay_peer_server (tests/unit/smbd), an SMB Direct front that relays SMB2 messages untouched
and does the RDMA Writes the script orders. The client is libsmbrdma (ctypes), over the rxe
or siw device, reading 64 KiB (above rdma_threshold: by RDMA) at a time:

  1. a.bin, whole: the server RDMA-Writes all 64 KiB it announces (an earlier I/O whose bytes
     are left in the client's buffer);
  2. b.bin: the server RDMA-Writes 16 KiB and announces 64 KiB. The client must return b's
     16 KiB and then zeros (or fail the read), never a.bin's bytes. Through the engine's
     registered pool (an unregistered caller buffer) and through a caller buffer registered
     with smbrdma_register (the server writes into it in place).
  3. c.bin: the server announces 68 KiB for the 64 KiB granted: the read fails with EIO.
"""

import ctypes
import mmap
import os
import struct
import subprocess
import sys
import threading

import pytest

from vmlab import build_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from lib.hostile_server import HDR, SMB2_READ, Action, HostileServer  # noqa: E402

IO = 65536
SHORT = 16384
OVER = IO + 4096
CHANNEL_NONE, CHANNEL_RDMA_V1_INVALIDATE = 0, 2
ORDER_MARK, ORDER_WRITE, ORDER_INV_NEXT = 0xFE, 1, 2


def pattern(seed, n):
    return bytes((i * 131 + (i >> 8) * 7 + seed) & 0xFF for i in range(n))


FILES = {"a.bin": pattern(0x11, IO), "b.bin": pattern(0x5A, IO), "c.bin": pattern(0x77, IO)}


def order(op, desc, data=b""):
    """A relay order (relay_peer_server.c): 0xFE, 3-byte length, op, descriptor, data."""
    body = bytes([op]) + desc + data
    return bytes([ORDER_MARK]) + len(body).to_bytes(3, "big") + body


class RdmaRead(Action):
    """READs with an RDMA channel answered the way ksmbd answers them (DataLength 0,
    DataRemaining = bytes written), the data RDMA-Written by the relay: all of it for a.bin,
    SHORT bytes of it for b.bin, and an announcement larger than the grant for c.bin."""
    name = "rdma_read"

    def __init__(self):
        self.orders = []
        self.seen = []  # (path, channel, granted, written, announced)

    def pdu(self, conn, req, rsps):
        b = req.body
        length, offset = struct.unpack_from("<IQ", b, 4)
        # [MS-SMB2] 2.2.19: MinimumCount at 32, Channel at 36, ReadChannelInfoOffset/Length
        # at 44/46
        channel = struct.unpack_from("<I", b, 36)[0]
        info_off, info_len = struct.unpack_from("<HH", b, 44)
        if channel == CHANNEL_NONE or info_len != 16:
            self.seen.append((req.path, channel, length, 0, None))
            return rsps
        desc = req.raw[info_off:info_off + 16]
        granted = struct.unpack_from("<I", desc, 12)[0]
        data = FILES[req.path][offset:offset + length]
        written, announced = len(data), len(data)
        if req.path == "b.bin":
            written = SHORT
        elif req.path == "c.bin":
            announced = OVER
        self.orders.append(order(ORDER_WRITE, desc, data[:written]))
        if channel == CHANNEL_RDMA_V1_INVALIDATE:
            self.orders.append(order(ORDER_INV_NEXT, desc))
        for r in rsps:
            r.body = struct.pack("<HBBIII", 17, HDR + 16, 0, 0, announced, 0) + b"\x00"
        self.seen.append((req.path, channel, granted, written, announced))
        return rsps

    def frame(self, conn, ops):
        out = [("raw", o) for o in self.orders] + ops
        self.orders = []
        return out


class Params(ctypes.Structure):
    """struct smbrdma_params (lib/smbrdma.h)."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("server", ctypes.c_char_p),
                ("share", ctypes.c_char_p), ("port", ctypes.c_uint),
                ("user", ctypes.c_char_p), ("password", ctypes.c_char_p),
                ("domain", ctypes.c_char_p), ("sec", ctypes.c_int),
                ("keytab", ctypes.c_char_p), ("flags", ctypes.c_uint),
                ("max_channels", ctypes.c_uint), ("rdma_threshold", ctypes.c_uint),
                ("timeout_ms", ctypes.c_uint), ("min_dialect", ctypes.c_uint16),
                ("max_dialect", ctypes.c_uint16), ("interfaces", ctypes.c_char_p)]


class Info(ctypes.Structure):
    """struct smbrdma_info (lib/smbrdma.h)."""
    _fields_ = [("dialect", ctypes.c_uint16), ("signing", ctypes.c_bool),
                ("encryption", ctypes.c_bool), ("channels", ctypes.c_uint),
                ("rdma_channels", ctypes.c_uint), ("max_read", ctypes.c_uint32),
                ("max_write", ctypes.c_uint32), ("rdma_bytes", ctypes.c_uint64),
                ("inline_bytes", ctypes.c_uint64), ("copied_bytes", ctypes.c_uint64),
                ("requests", ctypes.c_uint64)]


def libsmbrdma():
    path = os.path.join(build_dir(), "lib", "libsmbrdma.so")
    assert os.path.exists(path), f"{path} is missing: build the project on the host first"
    lib = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    lib.smbrdma_params_init_.argtypes = [ctypes.POINTER(Params), ctypes.c_size_t]
    lib.smbrdma_connect.argtypes = [ctypes.POINTER(Params), ctypes.POINTER(vp), ctypes.c_char_p,
                                    ctypes.c_size_t]
    lib.smbrdma_disconnect.argtypes = [vp]
    lib.smbrdma_open.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp)]
    lib.smbrdma_close.argtypes = [vp]
    lib.smbrdma_pread.argtypes = [vp, vp, ctypes.c_size_t, ctypes.c_uint64]
    lib.smbrdma_pread.restype = ctypes.c_ssize_t
    lib.smbrdma_register.argtypes = [vp, vp, ctypes.c_size_t]
    lib.smbrdma_get_info.argtypes = [vp, ctypes.POINTER(Info)]
    return lib


def relay_binary():
    path = os.path.join(build_dir(), "tests", "unit", "smbd", "relay_peer_server")
    assert os.access(path, os.X_OK), f"{path} is missing: build the project on the host first"
    return path


def start_relay(addr, port, srv):
    p = subprocess.Popen([relay_binary(), addr, str(port), "127.0.0.1", str(srv.port)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    listening = threading.Event()

    def reader():
        for line in p.stdout:
            lines.append(line)
            if line.startswith("listening on"):
                listening.set()
        listening.set()
    threading.Thread(target=reader, daemon=True).start()
    assert listening.wait(20) and any(ln.startswith("listening on") for ln in lines), \
        "relay did not listen:\n" + "".join(lines)
    return p, lines


def pread(lib, f, addr, off=0):
    return lib.smbrdma_pread(f, addr, IO, off)


def same(x, y):
    """Byte strings equal (a bool: pytest's diff of two 48 KiB strings takes minutes)."""
    return x == y


def check_short(name, res, got):
    """The short read's verdict: an error, or b.bin's SHORT bytes and then zeros."""
    a, b = FILES["a.bin"], FILES["b.bin"]
    if res < 0:
        print(f"{name}: short RDMA write failed the read ({os.strerror(-res)})")
        return
    assert res == IO, f"{name}: read returned {res}"
    tail = got[SHORT:]
    stale = sum(1 for i in range(SHORT, IO) if got[i] == a[i] != b[i] and a[i])
    unwritten = sum(1 for i in range(SHORT, IO) if got[i] == b[i] != a[i] and b[i])
    print(f"{name}: of the {IO - SHORT} B the server did not write, {tail.count(0)} are zero, "
          f"{stale} are a.bin's (an earlier read), {unwritten} are b.bin's (never sent)")
    assert same(tail, bytes(IO - SHORT)), f"{name}: stale bytes returned"
    assert same(got[:SHORT], b[:SHORT]), f"{name}: the bytes the server did write are wrong"
    print(f"{name}: {SHORT} B written of {IO} announced: those, then zeros")


@pytest.mark.parametrize("device", ["rxe", "siw"])
def test_short_rdma_write_returns_no_stale_bytes(lab, device):
    addr = lab.rxe_addr if device == "rxe" else lab.siw_addr
    port = 5460 if device == "rxe" else 5461
    srv = HostileServer(files=FILES).start()
    action = RdmaRead()
    srv.on(SMB2_READ, action, times=None)
    relay, relay_out = start_relay(addr, port, srv)
    lib = libsmbrdma()
    s = ctypes.c_void_p()
    m = mmap.mmap(-1, IO)  # registered below: mapped until after the disconnect
    try:
        p = Params()
        lib.smbrdma_params_init_(ctypes.byref(p), ctypes.sizeof(p))
        p.server, p.share, p.port = addr.encode(), srv.share.encode(), port
        p.user, p.password = srv.user.encode(), srv.password.encode()
        p.flags = 1  # SMBRDMA_F_RDMA
        p.timeout_ms = 20000
        err = ctypes.create_string_buffer(512)
        rc = lib.smbrdma_connect(ctypes.byref(p), ctypes.byref(s), err, len(err))
        assert rc == 0, f"connect over {device}: {rc} {err.value.decode()}\n" + "".join(relay_out)

        files = {}
        for name in FILES:
            f = ctypes.c_void_p()
            assert lib.smbrdma_open(s, name.encode(), os.O_RDONLY, ctypes.byref(f)) == 0, name
            files[name] = f

        # Through the engine's pool: the caller's buffer is not registered.
        plain = ctypes.create_string_buffer(IO)
        assert pread(lib, files["a.bin"], ctypes.addressof(plain)) == IO
        assert same(plain.raw, FILES["a.bin"])
        res = pread(lib, files["b.bin"], ctypes.addressof(plain))
        check_short("pool", res, plain.raw)

        # In place: a registered caller buffer that held a.bin's bytes.
        view = ctypes.c_char.from_buffer(m)
        buf = ctypes.addressof(view)
        assert lib.smbrdma_register(s, buf, IO) == 0
        assert pread(lib, files["a.bin"], buf) == IO
        assert same(m[:], FILES["a.bin"])
        res = pread(lib, files["b.bin"], buf)
        check_short("registered buffer", res, m[:])

        # More announced than granted: refused.
        res = pread(lib, files["c.bin"], ctypes.addressof(plain))
        assert res == -5, f"announcing {OVER} B for {IO} granted gave {res}, not -EIO"

        info = Info()
        lib.smbrdma_get_info(s, ctypes.byref(info))
        print(f"session: dialect 0x{info.dialect:04x}, rdma bytes {info.rdma_bytes}, "
              f"inline {info.inline_bytes}")
        rdma = [x for x in action.seen if x[1] != CHANNEL_NONE]
        assert len(rdma) == 5 and all(x[2] == IO for x in rdma), action.seen
        for f in files.values():
            lib.smbrdma_close(f)
        del view
    finally:
        print("READs seen (path, channel, granted, written, announced):", action.seen)
        if s.value:
            lib.smbrdma_disconnect(s)
        try:
            relay.wait(timeout=30)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait()
        srv.stop()
        print("--- relay ---\n" + "".join(relay_out))
    out = "".join(relay_out)
    assert f"RDMA write of {SHORT} B of the {IO} granted" in out, out
    assert f"RDMA write of {IO} B of the {IO} granted" in out, out
