"""A fault-injecting SMB2 proxy for tests: 127.0.0.1:<port> -> 127.0.0.1:<upstream>.

It forwards bytes both ways, framing each direction by the Direct TCP 4-byte
length ([MS-SMB2] 2.1: one zero byte, 24-bit big-endian length) and walking
the SMB2 headers in each frame (compound chains via NextCommand). It records
what it saw and, when armed, corrupts the 16-byte signature of the next
signed final response to a given command.

    with SmbProxy(upstream_port) as px:
        px.corrupt_next_signature(SMB2_READ)
        ... read through a mount that connects to px.port ...
        assert px.corrupted == 1

Encrypted frames (transform header, 0xFD 'SMB') are forwarded untouched.
"""

import socket
import struct
import threading

HOST = "127.0.0.1"

SMB2_MAGIC = b"\xfeSMB"
SMB2_TRANSFORM_MAGIC = b"\xfdSMB"
SMB2_HEADER_LEN = 64
SMB2_FLAGS_SERVER_TO_REDIR = 0x1
SMB2_FLAGS_ASYNC_COMMAND = 0x2
SMB2_FLAGS_SIGNED = 0x8
STATUS_PENDING = 0x00000103

SMB2_NEGOTIATE = 0
SMB2_SESSION_SETUP = 1
SMB2_LOGOFF = 2
SMB2_TREE_CONNECT = 3
SMB2_TREE_DISCONNECT = 4
SMB2_CREATE = 5
SMB2_CLOSE = 6
SMB2_FLUSH = 7
SMB2_READ = 8
SMB2_WRITE = 9
SMB2_QUERY_DIRECTORY = 14
SMB2_QUERY_INFO = 16
SMB2_SET_INFO = 17


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
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
        self.requests = []        # (command, flags) for every request seen
        self.connections = 0
        self.dialects = []        # DialectRevision of each NEGOTIATE response
        self._listener = None
        self._threads = []
        self._socks = []
        self._stopping = False
        self.corrupted_event = threading.Event()

    # control ---------------------------------------------------------
    def corrupt_next_signature(self, command):
        """Arm: flip the signature of the next signed, final (not
        STATUS_PENDING) response to `command`."""
        with self._lock:
            self._armed.append(command)
            self.corrupted_event.clear()

    def disarm(self):
        with self._lock:
            self._armed.clear()

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
                self._socks += [client, server]
            for src, dst, to_client in ((client, server, False), (server, client, True)):
                t = threading.Thread(target=self._pump, args=(src, dst, to_client),
                                     name="smbproxy-pump", daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src, dst, to_client):
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
                    payload = self._on_response(payload)
                else:
                    self._on_request(payload)
                dst.sendall(hdr + payload)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _on_request(self, payload):
        with self._lock:
            for _, cmd, flags, _, _ in parse_headers(payload):
                self.requests.append((cmd, flags))

    def _on_response(self, payload):
        if payload[:4] != SMB2_MAGIC:
            return payload
        buf = None
        with self._lock:
            for off, cmd, flags, status, mid in parse_headers(payload):
                self.responses.append((cmd, flags, status))
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
