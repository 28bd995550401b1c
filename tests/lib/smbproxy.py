"""A fault-injecting SMB2 proxy for tests: 127.0.0.1:<port> -> 127.0.0.1:<upstream>.

It forwards bytes both ways, framing each direction by the Direct TCP 4-byte
length ([MS-SMB2] 2.1: one zero byte, 24-bit big-endian length) and walking
the SMB2 headers in each frame (compound chains via NextCommand). It records
what it saw and, when armed, corrupts the 16-byte signature of the next
signed final response to a given command, or (lose_reply) lets a chosen
request through and closes both connections instead of forwarding its
final answer: a reply lost after the server carried the request out.

    with SmbProxy(upstream_port) as px:
        px.corrupt_next_signature(SMB2_READ)
        ... read through a mount that connects to px.port ...
        assert px.corrupted == 1

Encrypted frames (transform header, 0xFD 'SMB', [MS-SMB2] 2.2.41) are
forwarded untouched.

Recording mode (px.record(), before the client connects) also keeps, per
direction ("c2s" client to server, "s2c" server to client):
  - wire_bytes: every byte forwarded, Direct TCP length fields included;
  - frames: how many frames were plain SMB2, encrypted (transform) or other;
  - marker_counts: occurrences of each marker in the raw byte stream, counted
    as the bytes pass (a marker split across frames or recv() calls is still
    found; overlapping occurrences all count), so 128 MiB volumes cost no
    memory;
  - messages: one Message per SMB2 header in a plain frame (command, flags,
    status, ids, and the IOCTL CtlCode or TREE_CONNECT ShareFlags);
  - transforms: one Transform per encrypted frame (session id, nonce, size);
  - optionally all bytes: in memory (keep=True, px.captured[direction]) or
    appended to files dump_dir/conn<N>-<direction>.bin.
"""

import collections
import os
import socket
import struct
import threading

from lib.smb2const import (  # noqa: F401 (re-exported to the tests)
    SMB2_MAGIC, SMB2_TRANSFORM_MAGIC, SMB2_HEADER_LEN, SMB2_FLAGS_SERVER_TO_REDIR,
    SMB2_FLAGS_ASYNC_COMMAND, SMB2_FLAGS_SIGNED, STATUS_PENDING, SMB2_NEGOTIATE,
    SMB2_SESSION_SETUP, SMB2_LOGOFF, SMB2_TREE_CONNECT, SMB2_TREE_DISCONNECT, SMB2_CREATE,
    SMB2_CLOSE, SMB2_FLUSH, SMB2_READ, SMB2_WRITE, SMB2_LOCK, SMB2_IOCTL, SMB2_CANCEL,
    SMB2_ECHO, SMB2_QUERY_DIRECTORY, SMB2_CHANGE_NOTIFY, SMB2_QUERY_INFO, SMB2_SET_INFO,
    SMB2_OPLOCK_BREAK, COMMAND_NAMES)

HOST = "127.0.0.1"

FSCTL_VALIDATE_NEGOTIATE_INFO = 0x00140204
SMB2_SHAREFLAG_ENCRYPT_DATA = 0x00008000
SMB2_TRANSFORM_HEADER_LEN = 52

C2S = "c2s"   # client to server: requests
S2C = "s2c"   # server to client: responses
DIRECTIONS = (C2S, S2C)

# One SMB2 header of a plain (not encrypted) frame. ctl_code: the IOCTL
# request's or response's CtlCode, else None. share_flags: a TREE_CONNECT
# response's ShareFlags, else None.
Message = collections.namedtuple(
    "Message", "direction command flags status message_id session_id tree_id "
               "ctl_code share_flags")

# One encrypted frame ([MS-SMB2] 2.2.41 SMB2 TRANSFORM_HEADER).
Transform = collections.namedtuple(
    "Transform", "direction session_id nonce original_size flags frame_len")


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            return None
        got += k
    return bytes(buf)


def parse_headers(payload):
    """Yield (offset, command, flags, status, message_id) for each SMB2 header
    in one Direct TCP payload (a compound chain). Stops at anything that does
    not look like an SMB2 header."""
    off = 0
    while off + SMB2_HEADER_LEN <= len(payload) and payload[off:off + 4] == SMB2_MAGIC:
        status, command = struct.unpack_from("<IH", payload, off + 8)
        flags, next_cmd, message_id = struct.unpack_from("<IIQ", payload, off + 16)
        yield off, command, flags, status, message_id
        if next_cmd == 0 or next_cmd % 8 or off + next_cmd >= len(payload):
            break
        off += next_cmd


def parse_messages(payload, direction):
    """A Message for each SMB2 header in one plain Direct TCP payload."""
    out = []
    for off, cmd, flags, status, mid in parse_headers(payload):
        session_id = struct.unpack_from("<Q", payload, off + 40)[0]
        # sync header: Reserved(4) TreeId(4) at 32; async: AsyncId(8) at 32
        tree_id = None if flags & SMB2_FLAGS_ASYNC_COMMAND else \
            struct.unpack_from("<I", payload, off + 36)[0]
        body = off + SMB2_HEADER_LEN
        ctl_code = share_flags = None
        # IOCTL request and response both start StructureSize(2) Reserved(2)
        # CtlCode(4) ([MS-SMB2] 2.2.31, 2.2.32); an error response does not
        if cmd == SMB2_IOCTL and body + 8 <= len(payload) and \
                struct.unpack_from("<H", payload, body)[0] in (57, 49):
            ctl_code = struct.unpack_from("<I", payload, body + 4)[0]
        # TREE_CONNECT response: StructureSize(2)=16 ShareType(1) Reserved(1)
        # ShareFlags(4) ([MS-SMB2] 2.2.10)
        if (cmd == SMB2_TREE_CONNECT and direction == S2C and body + 8 <= len(payload)
                and struct.unpack_from("<H", payload, body)[0] == 16):
            share_flags = struct.unpack_from("<I", payload, body + 4)[0]
        out.append(Message(direction, cmd, flags, status, mid, session_id, tree_id,
                           ctl_code, share_flags))
    return out


def parse_transform(payload, direction):
    """The Transform of one encrypted Direct TCP payload, or None if short."""
    if len(payload) < SMB2_TRANSFORM_HEADER_LEN:
        return None
    nonce = payload[20:36]
    original_size, _, flags, session_id = struct.unpack_from("<IHHQ", payload, 36)
    return Transform(direction, session_id, nonce, original_size, flags, len(payload))


class MarkerCounter:
    """Counts occurrences of one marker in a byte stream fed in pieces. The
    last len(marker)-1 bytes carry over to the next piece, so an occurrence
    split between pieces is found once; an occurrence can never lie wholly in
    the carry, so none is counted twice."""

    def __init__(self, marker):
        self.marker = bytes(marker)
        self.count = 0
        self._carry = b""

    def feed(self, data):
        """Count the occurrences that end in data; returns how many."""
        m = self.marker
        buf = self._carry + data if self._carry else data
        new = 0
        i = buf.find(m)
        while i >= 0:
            new += 1
            i = buf.find(m, i + 1)
        keep = len(m) - 1
        self._carry = bytes(buf[len(buf) - keep:]) if keep else b""
        self.count += new
        return new


class SmbProxy:
    def __init__(self, upstream_port, upstream_host=HOST, port=0):
        self.upstream = (upstream_host, upstream_port)
        self._want_port = port
        self.port = None
        self._lock = threading.Lock()
        self._armed = []          # commands whose next signed response we corrupt
        self.corrupted = 0        # how many signatures we corrupted
        self.corrupted_events = []  # (command, message_id)
        self.responses = []       # (command, flags, status) for every response seen
        # (command, flags, status) of every oplock or lease break notification:
        # MessageId 0xFFFFFFFFFFFFFFFF, answers no request, and is sent
        # unsigned ([MS-SMB2] 3.3.4.6, 3.3.4.7; the client checks no signature
        # on it, 3.2.5.1.3): not in responses
        self.notifications = []
        self.requests = []        # (command, flags) for every request seen
        self._lose = []           # lose_reply() predicates still armed
        self._losing = set()      # (connection, MessageId) whose answer is lost
        self.lost = 0             # answers lost so
        self.connections = 0
        self.dialects = []        # DialectRevision of each NEGOTIATE response
        self._listener = None
        self._threads = []
        self._socks = []
        self._stopping = False
        self.corrupted_event = threading.Event()
        # recording (see record())
        self.recording = False
        self.markers = ()
        self.marker_counts = {}   # marker -> {direction: count}
        self.wire_bytes = {d: 0 for d in DIRECTIONS}
        self.frames = {d: {"plain": 0, "encrypted": 0, "other": 0} for d in DIRECTIONS}
        self.messages = []        # Message per SMB2 header in plain frames
        self.transforms = []      # Transform per encrypted frame
        self.captured = {d: bytearray() for d in DIRECTIONS}
        self._keep = False
        self._dump_dir = None

    # control ---------------------------------------------------------
    def corrupt_next_signature(self, command):
        """Arm: flip the signature of the next signed, final (not
        STATUS_PENDING) response to `command`."""
        with self._lock:
            self._armed.append(command)
            self.corrupted_event.clear()

    def lose_reply(self, when):
        """Arm: the next request PDU for which when(command, payload, off) is
        true (payload: its Direct TCP payload, off: where its header starts)
        goes to the server; its final answer does not come back: both
        connections close instead (px.lost counts it)."""
        with self._lock:
            self._lose.append(when)

    def disarm(self):
        with self._lock:
            self._armed.clear()
            self._lose.clear()

    def record(self, markers=(), keep=False, dump_dir=None):
        """Start recording (call before the client connects: markers are
        counted per connection stream from its first byte). markers: byte
        strings to count in each direction. keep: also hold every byte in
        px.captured[direction] (small volumes only). dump_dir: also append
        each connection's bytes to dump_dir/conn<N>-<direction>.bin."""
        with self._lock:
            self.markers = tuple(bytes(m) for m in markers)
            self.marker_counts = {m: {d: 0 for d in DIRECTIONS} for m in self.markers}
            self._keep = keep
            self._dump_dir = dump_dir
            if dump_dir:
                os.makedirs(dump_dir, exist_ok=True)
            self.recording = True
        return self

    def marker_count(self, marker, direction=None):
        """Occurrences of marker seen so far, in one direction or both."""
        with self._lock:
            c = self.marker_counts[bytes(marker)]
            return c[direction] if direction else sum(c.values())

    def messages_for(self, command, direction=None):
        with self._lock:
            return [m for m in self.messages if m.command == command
                    and (direction is None or m.direction == direction)]

    def summary(self):
        """One line per direction, for assertion messages."""
        with self._lock:
            lines = []
            for d in DIRECTIONS:
                cmds = collections.Counter(COMMAND_NAMES.get(m.command, str(m.command))
                                           for m in self.messages if m.direction == d)
                lines.append(f"{d}: {self.wire_bytes[d]} bytes, frames {self.frames[d]}, "
                             f"plain commands {dict(cmds)}")
            return "\n".join(lines)

    def responses_for(self, command):
        with self._lock:
            return [r for r in self.responses if r[0] == command]

    # lifecycle -------------------------------------------------------
    def start(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((HOST, self._want_port))
        ls.listen(16)
        self.port = ls.getsockname()[1]
        self._listener = ls
        t = threading.Thread(target=self._accept_loop, name="smbproxy-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stopping = True
        if self._listener:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._lock:
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # plumbing --------------------------------------------------------
    def _accept_loop(self):
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections += 1
                conn_no = self.connections
                self._socks += [client, server]
            for src, dst, to_client in ((client, server, False), (server, client, True)):
                t = threading.Thread(target=self._pump, args=(src, dst, to_client, conn_no),
                                     name="smbproxy-pump", daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src, dst, to_client, conn_no):
        direction = S2C if to_client else C2S
        counters = None   # this stream's MarkerCounters, made when recording starts
        dump = None
        try:
            while True:
                hdr = _recv_exact(src, 4)
                if hdr is None:
                    break
                length = struct.unpack(">I", hdr)[0] & 0x00FFFFFF
                payload = _recv_exact(src, length) if length else b""
                if payload is None:
                    break
                if to_client:
                    payload = self._on_response(payload, conn_no)
                    if payload is None:
                        break   # lose_reply(): the finally closes both sides
                else:
                    self._on_request(payload, conn_no)
                if self.recording:
                    if counters is None:
                        counters = [MarkerCounter(m) for m in self.markers]
                        if self._dump_dir:
                            dump = open(os.path.join(self._dump_dir,
                                                     f"conn{conn_no}-{direction}.bin"), "ab")
                    self._record(direction, hdr, payload, counters, dump)
                dst.sendall(hdr + payload)
        except OSError:
            pass
        finally:
            if dump is not None:
                dump.close()
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _record(self, direction, hdr, payload, counters, dump):
        """Account one frame (hdr: its Direct TCP length field) as forwarded."""
        found = [c.feed(hdr) + c.feed(payload) for c in counters]
        if dump is not None:
            dump.write(hdr)
            dump.write(payload)
        magic = payload[:4]
        msgs = parse_messages(payload, direction) if magic == SMB2_MAGIC else ()
        tf = parse_transform(payload, direction) if magic == SMB2_TRANSFORM_MAGIC else None
        with self._lock:
            self.wire_bytes[direction] += len(hdr) + len(payload)
            kind = "plain" if magic == SMB2_MAGIC else \
                "encrypted" if magic == SMB2_TRANSFORM_MAGIC else "other"
            self.frames[direction][kind] += 1
            self.messages.extend(msgs)
            if tf is not None:
                self.transforms.append(tf)
            # counters are per stream; the totals are per direction
            for c, n in zip(counters, found):
                self.marker_counts[c.marker][direction] += n
            if self._keep:
                self.captured[direction] += hdr
                self.captured[direction] += payload

    def _on_request(self, payload, conn_no):
        with self._lock:
            for off, cmd, flags, _, mid in parse_headers(payload):
                self.requests.append((cmd, flags))
                for when in self._lose:
                    if when(cmd, payload, off):
                        self._lose.remove(when)
                        self._losing.add((conn_no, mid))
                        break

    def _on_response(self, payload, conn_no):
        if payload[:4] != SMB2_MAGIC:
            return payload
        buf = None
        with self._lock:
            for off, cmd, flags, status, mid in parse_headers(payload):
                if mid == 0xFFFFFFFFFFFFFFFF:
                    self.notifications.append((cmd, flags, status))
                    continue
                self.responses.append((cmd, flags, status))
                if (conn_no, mid) in self._losing and status != STATUS_PENDING:
                    self._losing.discard((conn_no, mid))
                    self.lost += 1
                    return None
                if cmd == SMB2_NEGOTIATE and status == 0 and off + 70 <= len(payload):
                    self.dialects.append(struct.unpack_from("<H", payload, off + 68)[0])
                if (cmd in self._armed and flags & SMB2_FLAGS_SERVER_TO_REDIR
                        and flags & SMB2_FLAGS_SIGNED and status != STATUS_PENDING):
                    self._armed.remove(cmd)
                    if buf is None:
                        buf = bytearray(payload)
                    sig = off + 48
                    for i in range(sig, sig + 16):
                        buf[i] ^= 0xA5
                    self.corrupted += 1
                    self.corrupted_events.append((cmd, mid))
                    self.corrupted_event.set()
        return bytes(buf) if buf is not None else payload


if __name__ == "__main__":
    import sys
    import time
    up = int(sys.argv[1])
    with SmbProxy(up, port=int(sys.argv[2]) if len(sys.argv) > 2 else 0) as px:
        print(f"proxy 127.0.0.1:{px.port} -> 127.0.0.1:{up}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
