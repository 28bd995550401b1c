"""A scripted, hostile SMB2 server for tests: 127.0.0.1:<random port>.

It speaks enough SMB 2.0.2 .. 3.1.1 over Direct TCP ([MS-SMB2] 2.1) for a
mount to come up and for ls, cat, dd and friends to work on a small
in-memory file system: NEGOTIATE (3.1.1: SHA-512 preauth integrity and a
signing capabilities context), SESSION_SETUP through SPNEGO-wrapped NTLMSSP
(a real CHALLENGE; the AUTHENTICATE is checked against the password when
the user is known, and the session key derived, so sessions can be signed),
TREE_CONNECT, CREATE (durable v2 handles granted under a batch oplock, and
reconnected), CLOSE, FLUSH, READ, WRITE, QUERY_INFO, SET_INFO,
QUERY_DIRECTORY, ECHO, LOCK, IOCTL (FSCTL_VALIDATE_NEGOTIATE_INFO answered;
everything else STATUS_NOT_SUPPORTED), LOGOFF, TREE_DISCONNECT, and
compounded (related) requests.  DFS, when asked for (srv.dfs_root,
srv.dfs_links, srv.referral): the share a DFS root, PATH_NOT_COVERED below
its links, IPC$ a pipe share answering FSCTL_DFS_GET_REFERRALS.

Then it misbehaves on cue.  A hook says "when the Nth request of command X
(that matches a predicate) arrives, do Y":

    srv = HostileServer().start()
    h = srv.on(SMB2_READ, truncate(64 + 10))          # next READ: PDU cut short
    srv.on(SMB2_QUERY_DIRECTORY, patch(body_u32(4, 1 << 20)), nth=2)
    srv.on(SMB2_NEGOTIATE, garbage(b"HTTP/1.0 400 Bad\\r\\n\\r\\n"), times=None)
    ... mount //127.0.0.1:<srv.port>/share and poke it ...
    assert h.fired == 1
    srv.stop()

Actions (see the functions below): truncate, truncate_frame, patch,
frame_edit, credits, message_id, command, response_flags, duplicate,
duplicate_pdu, stray, drop, pending, sync_pending, bad_signature, unsigned,
stop_mid_pdu, garbage, next_command, close, lost_reply, delay.  srv.grant sets the
credit policy for every response (an int, or fn(request) -> int; None:
what the client asked for, at least 1).  Counts are per server (across
connections, so a client that reconnects does not reset them); times=None
repeats the action for every later match.  A client that reconnects finds
a server that behaves, unless a hook says otherwise.

What the server saw is kept for assertions: srv.requests (Request records,
every PDU of every connection), srv.connections, and srv.violations: the
client broke a rule a server checks ([MS-SMB2] 3.3.5.2.3: a MessageId
outside the credit window, or used twice).

The server runs an asyncio loop on a thread of its own; everything above is
safe to call from the test's thread.
"""

import asyncio
import collections
import dataclasses
import hashlib
import hmac
import os
import socket
import struct
import threading
import time
from typing import Callable, Optional

HOST = "127.0.0.1"

# ---- [MS-SMB2] constants ------------------------------------------------------

from lib.smb2const import (  # noqa: F401 (re-exported to the tests)
    COMMAND_NAMES, SMB2_CANCEL, SMB2_CHANGE_NOTIFY, SMB2_CLOSE, SMB2_CREATE, SMB2_ECHO,
    SMB2_FLUSH, SMB2_HEADER_LEN, SMB2_IOCTL, SMB2_LOCK, SMB2_LOGOFF, SMB2_MAGIC,
    SMB2_NEGOTIATE, SMB2_OPLOCK_BREAK, SMB2_QUERY_DIRECTORY, SMB2_QUERY_INFO, SMB2_READ,
    SMB2_SESSION_SETUP, SMB2_SET_INFO, SMB2_TRANSFORM_MAGIC, SMB2_TREE_CONNECT,
    SMB2_TREE_DISCONNECT, SMB2_WRITE)

HDR = SMB2_HEADER_LEN

FLAGS_SERVER_TO_REDIR = 0x1
FLAGS_ASYNC = 0x2
FLAGS_RELATED = 0x4
FLAGS_SIGNED = 0x8
FLAGS_REPLAY = 0x20000000   # SMB2_FLAGS_REPLAY_OPERATION ([MS-SMB2] 2.2.1.2)

STATUS_SUCCESS = 0x00000000
STATUS_PENDING = 0x00000103
STATUS_BUFFER_OVERFLOW = 0x80000005
STATUS_NO_MORE_FILES = 0x80000006
STATUS_INVALID_INFO_CLASS = 0xC0000003
STATUS_INVALID_HANDLE = 0xC0000008
STATUS_INVALID_PARAMETER = 0xC000000D
STATUS_INVALID_DEVICE_REQUEST = 0xC0000010
STATUS_END_OF_FILE = 0xC0000011
STATUS_MORE_PROCESSING_REQUIRED = 0xC0000016
STATUS_ACCESS_DENIED = 0xC0000022
STATUS_BUFFER_TOO_SMALL = 0xC0000023
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034
STATUS_OBJECT_NAME_COLLISION = 0xC0000035
STATUS_RANGE_NOT_LOCKED = 0xC000007E
STATUS_LOCK_NOT_GRANTED = 0xC0000055
LOCKFLAG_UNLOCK = 0x4
STATUS_OBJECT_PATH_NOT_FOUND = 0xC000003A
STATUS_LOGON_FAILURE = 0xC000006D
STATUS_FILE_IS_A_DIRECTORY = 0xC00000BA
STATUS_NOT_SUPPORTED = 0xC00000BB
STATUS_BAD_NETWORK_NAME = 0xC00000CC
STATUS_DIRECTORY_NOT_EMPTY = 0xC0000101
STATUS_NOT_A_DIRECTORY = 0xC0000103
STATUS_FILE_CLOSED = 0xC0000128
STATUS_USER_SESSION_DELETED = 0xC0000203
STATUS_NETWORK_NAME_DELETED = 0xC00000C9
STATUS_OBJECT_NAME_INVALID = 0xC0000033
STATUS_PATH_NOT_COVERED = 0xC0000257

DIALECTS = (0x0202, 0x0210, 0x0300, 0x0302, 0x0311)

NEG_SIGNING_ENABLED = 0x1
NEG_SIGNING_REQUIRED = 0x2
CAP_LARGE_MTU = 0x4
CAP_MULTI_CHANNEL = 0x8

SESSION_FLAG_IS_GUEST = 0x1
SESSION_FLAG_IS_NULL = 0x2

PREAUTH_INTEGRITY_CAPABILITIES = 0x0001
SIGNING_CAPABILITIES = 0x0008
SIGNING_HMAC_SHA256 = 0
SIGNING_AES_CMAC = 1

FSCTL_VALIDATE_NEGOTIATE_INFO = 0x00140204
FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x001401FC
FSCTL_DFS_GET_REFERRALS = 0x00060194

SHARE_TYPE_DISK = 0x01
SHARE_TYPE_PIPE = 0x02
SHAREFLAG_DFS = 0x1
SHAREFLAG_DFS_ROOT = 0x2
SHARE_CAP_DFS = 0x8

BREAK_MESSAGE_ID = 0xFFFFFFFFFFFFFFFF
LEASE_BREAK_ACK_REQUIRED = 0x1

FILE_SUPERSEDE, FILE_OPEN, FILE_CREATE, FILE_OPEN_IF, FILE_OVERWRITE, FILE_OVERWRITE_IF = range(6)
FILE_DIRECTORY_FILE = 0x1
FILE_NON_DIRECTORY_FILE = 0x40
FILE_DELETE_ON_CLOSE = 0x1000
FILE_ATTRIBUTE_DIRECTORY = 0x10
FILE_ATTRIBUTE_ARCHIVE = 0x20
FILE_ATTRIBUTE_NORMAL = 0x80
OPLOCK_LEVEL_BATCH = 0x09

INFO_FILE = 1
INFO_FILESYSTEM = 2
FileDirectoryInformation = 1
FileBasicInformation = 4
FileStandardInformation = 5
FileInternalInformation = 6
FileRenameInformation = 10
FileDispositionInformation = 13
FileAllInformation = 18
FileAllocationInformation = 19
FileEndOfFileInformation = 20
FileNetworkOpenInformation = 34
FileIdBothDirectoryInformation = 37
FileFsVolumeInformation = 1
FileFsSizeInformation = 3
FileFsAttributeInformation = 5
FileFsFullSizeInformation = 7

RELATED_FID = (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)

NTLMSSP_SIG = b"NTLMSSP\x00"
OID_SPNEGO = bytes.fromhex("2b0601050502")
OID_NTLMSSP = bytes.fromhex("2b0601040182370202 0a".replace(" ", ""))

NT_EPOCH = 116444736000000000


def nt_now():
    return NT_EPOCH + int(time.time() * 10_000_000)


# ---- crypto: what NTLMv2 and SMB signing need --------------------------------

def _rol(x, n):
    x &= 0xFFFFFFFF
    return ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


def md4(data):
    """RFC 1320 MD4 (hashlib's is gone with OpenSSL 3); for the NT hash only."""
    msg = bytearray(data)
    bits = len(data) * 8
    msg.append(0x80)
    while len(msg) % 64 != 56:
        msg.append(0)
    msg += struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF)
    h = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476]
    rounds = (
        (lambda x, y, z: (x & y) | (~x & z), 0, tuple(range(16)), (3, 7, 11, 19)),
        (lambda x, y, z: (x & y) | (x & z) | (y & z), 0x5A827999,
         (0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), (3, 5, 9, 13)),
        (lambda x, y, z: x ^ y ^ z, 0x6ED9EBA1,
         (0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15), (3, 9, 11, 15)),
    )
    for blk in range(0, len(msg), 64):
        x = struct.unpack_from("<16I", msg, blk)
        v = list(h)
        for f, k, order, shifts in rounds:
            for i in range(16):
                a, b, c, d = (-i) % 4, (1 - i) % 4, (2 - i) % 4, (3 - i) % 4
                v[a] = _rol(v[a] + f(v[b], v[c], v[d]) + x[order[i]] + k, shifts[i % 4])
        h = [(h[i] + v[i]) & 0xFFFFFFFF for i in range(4)]
    return struct.pack("<4I", *h)


def hmac_md5(key, data):
    return hmac.new(key, data, hashlib.md5).digest()


def kdf(key, label, context, nbytes=16):
    """[MS-SMB2] 3.1.4.2: SP800-108 counter mode, HMAC-SHA256, one block."""
    return hmac.new(key, struct.pack(">I", 1) + label + b"\x00" + context +
                    struct.pack(">I", nbytes * 8), hashlib.sha256).digest()[:nbytes]


def aes_cmac(key, data):
    from cryptography.hazmat.primitives import cmac
    from cryptography.hazmat.primitives.ciphers import algorithms
    c = cmac.CMAC(algorithms.AES(key))
    c.update(data)
    return c.finalize()


def utf16(s):
    return s.encode("utf-16-le")


# ---- DER, just enough for SPNEGO ----------------------------------------------

def der(tag, content):
    n = len(content)
    if n < 0x80:
        ln = bytes([n])
    elif n < 0x100:
        ln = bytes([0x81, n])
    elif n < 0x10000:
        ln = bytes([0x82, n >> 8, n & 0xFF])
    else:
        ln = bytes([0x83, n >> 16, (n >> 8) & 0xFF, n & 0xFF])
    return bytes([tag]) + ln + content


def der_walk(buf):
    """Yield (tag, value) of the TLVs in buf, depth first, constructed ones
    (bit 0x20) opened.  Stops quietly at anything malformed."""
    i = 0
    while i + 2 <= len(buf):
        tag, ln = buf[i], buf[i + 1]
        i += 2
        if ln & 0x80:
            k = ln & 0x7F
            if k == 0 or k > 3 or i + k > len(buf):
                return
            ln = int.from_bytes(buf[i:i + k], "big")
            i += k
        if i + ln > len(buf):
            return
        val = buf[i:i + ln]
        yield tag, val
        if tag & 0x20:
            yield from der_walk(val)
        i += ln


def spnego_find_ntlmssp(blob):
    for tag, val in der_walk(blob):
        if tag == 0x04 and val.startswith(NTLMSSP_SIG):
            return val
    return blob if blob.startswith(NTLMSSP_SIG) else None


def spnego_neg_token_init():
    """The NegTokenInit2 a server puts in its NEGOTIATE response: NTLMSSP only."""
    mech_types = der(0x30, der(0x06, OID_NTLMSSP))
    init = der(0x30, der(0xA0, mech_types))
    return der(0x60, der(0x06, OID_SPNEGO) + der(0xA0, init))


def spnego_resp(state, token=None, mech=True):
    """NegTokenResp: negState (0 accept-completed, 1 accept-incomplete,
    2 reject), supportedMech, responseToken."""
    parts = der(0xA0, der(0x0A, bytes([state])))
    if mech:
        parts += der(0xA1, der(0x06, OID_NTLMSSP))
    if token is not None:
        parts += der(0xA2, der(0x04, token))
    return der(0xA1, der(0x30, parts))


# ---- the in-memory file system ------------------------------------------------

class Node:
    _ids = 1000

    def __init__(self, is_dir, data=b""):
        Node._ids += 1
        self.file_id = Node._ids
        self.is_dir = is_dir
        self.data = bytearray(data)
        t = nt_now()
        self.ctime = self.atime = self.mtime = self.chtime = t
        self.attrs = FILE_ATTRIBUTE_DIRECTORY if is_dir else FILE_ATTRIBUTE_ARCHIVE

    @property
    def size(self):
        return 0 if self.is_dir else len(self.data)

    @property
    def alloc(self):
        return (self.size + 4095) // 4096 * 4096

    def basic(self):
        return struct.pack("<QQQQII", self.ctime, self.atime, self.mtime, self.chtime,
                           self.attrs, 0)

    def standard(self, delete_pending=False):
        return struct.pack("<QQIBBH", self.alloc, self.size, 1, int(delete_pending),
                           int(self.is_dir), 0)

    def network_open(self):
        return struct.pack("<QQQQQQII", self.ctime, self.atime, self.mtime, self.chtime,
                           self.alloc, self.size, self.attrs, 0)


class Open:
    def __init__(self, fid, path, node, create_guid=None, durable=False,
                 delete_on_close=False):
        self.fid = fid
        self.path = path
        self.node = node
        self.create_guid = create_guid
        self.durable = durable
        self.delete_on_close = delete_on_close
        self.dir_pos = None  # QUERY_DIRECTORY cursor; None: not started
        self.action = 1      # CreateAction of the create that made it
        self.locks = []      # (offset, length) byte ranges it holds
        self.lock_seqs = {}  # LockSequence bucket -> number of the last lock done


# ---- requests and responses --------------------------------------------------

@dataclasses.dataclass
class Request:
    """One request PDU as received.  path: the file it is about, when the
    server knows (CREATE's name, or the open its FileId names)."""
    conn: int
    command: int
    message_id: int
    flags: int
    credit_charge: int
    credits: int
    session_id: int
    tree_id: int
    raw: bytes
    path: Optional[str] = None
    info_class: Optional[int] = None
    ctl_code: Optional[int] = None

    @property
    def body(self):
        return self.raw[HDR:]

    @property
    def name(self):
        return COMMAND_NAMES.get(self.command, f"0x{self.command:04x}")


@dataclasses.dataclass
class Rsp:
    """One response PDU before encoding; hooks edit these."""
    command: int
    status: int
    message_id: int
    body: bytes
    session_id: int = 0
    tree_id: int = 0
    credits: Optional[int] = None     # None: srv.grant decides
    flags: int = 0                    # beyond SERVER_TO_REDIR (and ASYNC with async_id)
    async_id: Optional[int] = None
    credit_charge: int = 0
    place: str = "chain"              # "before": own frame first; "after": own frame last
    sign: Optional[bool] = None       # None: when the session signs
    corrupt_signature: bool = False
    cut: Optional[int] = None         # keep only this many bytes of the PDU
    patches: list = dataclasses.field(default_factory=list)   # fn(bytearray), pre-signing
    raw: Optional[bytes] = None       # send these bytes as the PDU, untouched
    next_command: Optional[int] = None  # force the header's NextCommand (after signing)
    on_sent: Optional[Callable[[bytes], None]] = None
    request_signed: bool = False      # a signed request gets a signed answer


def error_body():
    """[MS-SMB2] 2.2.2 ERROR Response: StructureSize 9, no contexts, one byte."""
    return struct.pack("<HBBI", 9, 0, 0, 0) + b"\x00"


def encode_header(r: Rsp, next_command=0):
    flags = FLAGS_SERVER_TO_REDIR | r.flags
    if r.async_id is not None:
        flags |= FLAGS_ASYNC
        tail = struct.pack("<Q", r.async_id)
    else:
        tail = struct.pack("<II", 0xFEFF, r.tree_id)
    credits = r.credits if r.credits is not None else 1
    return (struct.pack("<4sHHIHHIIQ", SMB2_MAGIC, HDR, r.credit_charge, r.status, r.command,
                        credits & 0xFFFF, flags, next_command, r.message_id & (2**64 - 1))
            + tail + struct.pack("<Q", r.session_id) + b"\x00" * 16)


# ---- hooks and actions ---------------------------------------------------------

class Action:
    """What a hook does.  pdu(conn, req, rsps) edits the list of responses
    to the matching request (it may empty it, add to it, or mark them);
    frame(conn, ops) edits what goes on the wire for the whole frame that
    answered it: a list of ("send", bytes) / ("sleep", s) / ("close",) /
    ("silence",) operations, the answer's own frame being the first "send"
    whose bytes are the chain (conn.main_frame)."""
    name = "action"

    def pdu(self, conn, req, rsps):
        return rsps

    def frame(self, conn, ops):
        return ops

    def __repr__(self):
        return self.name


class _Simple(Action):
    def __init__(self, name, pdu=None, frame=None):
        self.name = name
        self._pdu = pdu
        self._frame = frame

    def pdu(self, conn, req, rsps):
        return self._pdu(conn, req, rsps) if self._pdu else rsps

    def frame(self, conn, ops):
        return self._frame(conn, ops) if self._frame else ops


def _each(fn):
    def f(conn, req, rsps):
        for r in rsps:
            fn(r)
        return rsps
    return f


def netbios(payload, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">I", n & 0x00FFFFFF) + payload


def _main_index(conn, ops):
    for i, op in enumerate(ops):
        if op[0] == "send" and op[1] is conn.main_frame:
            return i
    return None


def truncate(keep):
    """Cut this response PDU to `keep` bytes (header included); the frame
    length and any compound chain around it stay consistent."""
    return _Simple(f"truncate({keep})", pdu=_each(lambda r: setattr(r, "cut", keep)))


def truncate_frame(keep, length="consistent"):
    """Send only `keep` bytes of the answer's frame.  length: what the
    Direct TCP length field says: "consistent" (keep), "longer" (the
    uncut length: the stream then owes bytes it never sends) or "shorter"
    (all bytes are sent, the length says keep: the tail is read as the next
    frame)."""
    def f(conn, ops):
        i = _main_index(conn, ops)
        if i is None:
            return ops
        payload = ops[i][1]
        if length == "consistent":
            wire = netbios(payload[:keep])
        elif length == "longer":
            wire = netbios(payload[:keep], len(payload))
        elif length == "shorter":
            wire = netbios(payload, keep)
        else:
            raise ValueError(length)
        return ops[:i] + [("raw", wire)] + ops[i + 1:]
    return _Simple(f"truncate_frame({keep}, {length})", frame=f)


def patch(fn, name="patch"):
    """fn(pdu: bytearray) edits the encoded response PDU (before signing)."""
    return _Simple(name, pdu=_each(lambda r: r.patches.append(fn)))


def body_u8(off, value):
    def f(b):
        b[HDR + off] = value & 0xFF
    return f


def body_u16(off, value):
    def f(b):
        struct.pack_into("<H", b, HDR + off, value & 0xFFFF)
    return f


def body_u32(off, value):
    def f(b):
        struct.pack_into("<I", b, HDR + off, value & 0xFFFFFFFF)
    return f


def credits(n):
    """This response grants n credits (CreditResponse)."""
    return _Simple(f"credits({n})", pdu=_each(lambda r: setattr(r, "credits", n)))


def message_id(fn):
    """Rewrite the response's MessageId: fn(old) -> new (an int is a delta)."""
    f = fn if callable(fn) else (lambda old: old + fn)
    return _Simple("message_id", pdu=_each(lambda r: setattr(r, "message_id", f(r.message_id))))


def command(cmd):
    """Rewrite the response's Command."""
    return _Simple(f"command(0x{cmd:x})", pdu=_each(lambda r: setattr(r, "command", cmd)))


def response_flags(set_bits=0, clear_bits=0):
    """Set/clear header Flags bits (clearing SERVER_TO_REDIR needs raw)."""
    def f(r):
        r.flags = (r.flags | set_bits) & ~clear_bits
        if clear_bits & FLAGS_SERVER_TO_REDIR:
            r.patches.append(lambda b: struct.pack_into(
                "<I", b, 16, struct.unpack_from("<I", b, 16)[0] & ~FLAGS_SERVER_TO_REDIR))
    return _Simple("flags", pdu=_each(f))


def duplicate(n=1):
    """Send the answer's frame n more times."""
    def f(conn, ops):
        i = _main_index(conn, ops)
        if i is None:
            return ops
        return ops[:i + 1] + [("send", ops[i][1])] * n + ops[i + 1:]
    return _Simple(f"duplicate({n})", frame=f)


def stray(fn=lambda mid: mid + 100000, place="before"):
    """Also send a copy of the response under another MessageId (fn(old) ->
    new), on a frame of its own before (or after) the real answer."""
    def f(conn, req, rsps):
        copies = []
        for r in rsps:
            c = dataclasses.replace(r, place=place, patches=list(r.patches), on_sent=None)
            c.message_id = fn(r.message_id)
            copies.append(c)
        return copies + rsps if place == "before" else rsps + copies
    return _Simple("stray", pdu=f)


def duplicate_pdu(place="before"):
    """Send this PDU's response twice: once on a frame of its own (before or
    after the real answer), once where it belongs (in its compound)."""
    def f(conn, req, rsps):
        copies = [dataclasses.replace(r, place=place, patches=list(r.patches), on_sent=None)
                  for r in rsps]
        return copies + rsps if place == "before" else rsps + copies
    return _Simple(f"duplicate_pdu({place})", pdu=f)


def drop():
    """No response at all."""
    return _Simple("drop", pdu=lambda conn, req, rsps: [])


def pending(final_after=None, repeat=None, credits=None, sign=False, corrupt=False):
    """An interim STATUS_PENDING (async) response; the final one never
    comes (final_after=None) or comes final_after seconds later.  repeat:
    send the interim response again every `repeat` seconds (for as long as
    the connection lives).  credits: what the interim answer grants (None:
    1); sign: sign it (servers do not, [MS-SMB2] 3.3.4.1.1), corrupt: with a
    bad signature."""
    def f(conn, req, rsps):
        out = []
        for r in rsps:
            aid = conn.server._next_async_id()
            interim = Rsp(r.command, STATUS_PENDING, r.message_id, error_body(),
                          session_id=r.session_id, async_id=aid, place="before",
                          sign=sign or corrupt, corrupt_signature=corrupt, credits=credits)
            out.append(interim)
            if repeat:
                again = dataclasses.replace(interim, place="after")
                again.delay = repeat
                again.repeat = repeat
                out.append(again)
            if final_after is not None:
                r.async_id = aid
                r.place = "after"
                r.delay = final_after
                out.append(r)
        return out
    name = "pending" if final_after is None else f"pending({final_after})"
    return _Simple(name + (f" every {repeat}s" if repeat else ""), pdu=f)


def lease_break(key=None, current=0x7, new=0x0, flags=LEASE_BREAK_ACK_REQUIRED, credits=0,
                sign=False, corrupt=False):
    """Before the answer, a lease break notification ([MS-SMB2] 2.2.23.2)
    for lease key `key` (16 bytes; None: a random one) from `current` to
    `new` (R=1, H=2, W=4), granting `credits`; unsigned unless sign (a
    server signs none, [MS-SMB2] 3.2.5.1.3), or with a bad signature."""
    def f(conn, req, rsps):
        k = key if key is not None else os.urandom(16)
        body = struct.pack("<HHI16sIIIII", 44, 1, flags, k, current, new, 0, 0, 0)
        note = Rsp(SMB2_OPLOCK_BREAK, STATUS_SUCCESS, BREAK_MESSAGE_ID, body,
                   session_id=0, place="before", credits=credits, sign=sign or corrupt,
                   corrupt_signature=corrupt)
        if sign or corrupt:
            note.session_id = req.session_id  # the key to sign with; sent as 0
            note.patches.append(lambda pdu: struct.pack_into("<Q", pdu, 40, 0))
        return [note] + rsps
    return _Simple("lease_break" + (" (signed)" if sign else "")
                   + (" (bad signature)" if corrupt else ""), pdu=f)


def sync_pending():
    """A final-looking (synchronous) response whose status is STATUS_PENDING."""
    def f(r):
        r.status = STATUS_PENDING
        r.body = error_body()
    return _Simple("sync_pending", pdu=_each(f))


def bad_signature():
    """Sign the response, then flip bits of its signature."""
    return _Simple("bad_signature", pdu=_each(lambda r: setattr(r, "corrupt_signature", True)))


def unsigned():
    """Send the response unsigned on a signed session."""
    return _Simple("unsigned", pdu=_each(lambda r: setattr(r, "sign", False)))


def stop_mid_pdu(then="silence", after=0.0, keep=None):
    """Send the first half (or `keep` bytes) of the answer's frame, its
    length field saying the whole; then "silence" (the connection stays
    open and nothing more is sent or answered on it) or "close" (after
    `after` seconds of silence)."""
    def f(conn, ops):
        i = _main_index(conn, ops)
        if i is None:
            return ops
        payload = ops[i][1]
        k = keep if keep is not None else max(1, len(payload) // 2)
        tail = [("silence",)]
        if then == "close":
            tail = [("silence",), ("sleep", after), ("close",)]
        return ops[:i] + [("raw", netbios(payload[:k], len(payload)))] + tail
    return _Simple(f"stop_mid_pdu({then})", frame=f)


def garbage(data):
    """Replace the answer's frame with these raw bytes (no framing added)."""
    def f(conn, ops):
        i = _main_index(conn, ops)
        if i is None:
            return [("raw", data)] + ops
        return ops[:i] + [("raw", data)] + ops[i + 1:]
    return _Simple("garbage", frame=f)


def frame_edit(fn, name="frame_edit"):
    """fn(payload: bytearray) edits the answer's whole message (the compound
    chain, signed, before the Direct TCP length is put in front)."""
    def f(conn, ops):
        i = _main_index(conn, ops)
        if i is None:
            return ops
        b = bytearray(ops[i][1])
        fn(b)
        return ops[:i] + [("raw", netbios(bytes(b)))] + ops[i + 1:]
    return _Simple(name, frame=f)


def next_command(value):
    """Force this PDU's NextCommand field (use inside a compound answer)."""
    return _Simple(f"next_command({value})",
                   pdu=_each(lambda r: setattr(r, "next_command", value)))


def close(reset=False):
    """Close the connection instead of answering (reset: with a RST)."""
    def f(conn, ops):
        return [("reset",) if reset else ("close",)]
    return _Simple("close", frame=f)


def lost_reply(reset=False):
    """Carry the request out, then close the connection without sending its
    answer: the client cannot tell whether it was done, and sends it again
    (a replay).  (Every request of the frame is executed before any action
    edits what goes out, so this is close() under the name the tests of
    replays mean.)"""
    a = close(reset)
    a.name = "lost_reply"
    return a


def delay(seconds):
    """Answer after `seconds`."""
    def f(conn, ops):
        return [("sleep", seconds)] + ops
    return _Simple(f"delay({seconds})", frame=f)


class Hook:
    def __init__(self, command, action, nth=1, times=1, when=None):
        self.command = command
        self.action = action
        self.nth = nth
        self.times = times
        self.when = when
        self.seen = 0
        self.fired = 0
        self.requests = []   # the requests it fired on
        self.event = threading.Event()

    def matches(self, req):
        if self.command is not None and req.command != self.command:
            return False
        if self.when is not None and not self.when(req):
            return False
        self.seen += 1
        if self.seen < self.nth:
            return False
        if self.times is not None and self.seen >= self.nth + self.times:
            return False
        return True

    def wait(self, timeout):
        """True once the hook has fired."""
        return self.event.wait(timeout)

    def __repr__(self):
        c = "any" if self.command is None else COMMAND_NAMES.get(self.command, self.command)
        return f"Hook({c} #{self.nth}, {self.action!r}, fired {self.fired})"


# ---- sessions and connections -------------------------------------------------

class Session:
    def __init__(self, sid, preauth):
        self.id = sid
        self.preauth = preauth
        self.state = "new"        # new -> challenged -> valid
        self.challenge = os.urandom(8)
        self.user = ""
        self.guest = False
        self.key = None           # Session.SessionKey (16)
        self.signing_key = None
        self.signing = False      # every response signed
        self.trees = set()


class Conn:
    def __init__(self, server, reader, writer, number):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.number = number
        self.dialect = None
        self.client_security_mode = 0
        self.client_caps = 0
        self.client_guid = b""
        self.preauth = bytes(64)
        self.sessions = {}
        self.silenced = False
        self.closed = False
        self.main_frame = None
        # credit window ([MS-SMB2] 3.3.1.1): MessageIds granted, and used
        self.granted = 1
        self.used = set()
        self.async_tasks = set()

    @property
    def signing_alg(self):
        if self.dialect == 0x0311:
            return self.server.signing_alg
        return SIGNING_AES_CMAC if self.dialect >= 0x0300 else SIGNING_HMAC_SHA256

    # -- the wire ------------------------------------------------------------

    async def run(self):
        try:
            while not self.closed:
                hdr = await self.reader.readexactly(4)
                n = struct.unpack(">I", hdr)[0] & 0x00FFFFFF
                payload = await self.reader.readexactly(n) if n else b""
                if self.silenced:
                    continue
                await self.frame(payload)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            for t in list(self.async_tasks):
                t.cancel()
            self._close()

    def _close(self, reset=False):
        if self.closed:
            return
        self.closed = True
        try:
            if reset:
                sock = self.writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
            self.writer.close()
        except (OSError, RuntimeError):
            pass

    async def execute(self, ops):
        for op in ops:
            if self.closed:
                return
            kind = op[0]
            if kind == "send":
                self.writer.write(netbios(op[1]))
            elif kind == "raw":
                self.writer.write(op[1])
            elif kind == "sleep":
                try:
                    await self.writer.drain()
                except (ConnectionError, OSError):
                    self._close()
                    return
                await asyncio.sleep(op[1])
                continue
            elif kind == "silence":
                self.silenced = True
            elif kind == "close":
                try:
                    await self.writer.drain()
                except (ConnectionError, OSError):
                    pass
                self._close()
                return
            elif kind == "reset":
                self._close(reset=True)
                return
            try:
                await self.writer.drain()
            except (ConnectionError, OSError):
                self._close()
                return

    # -- one frame in, its answer out ----------------------------------------

    async def frame(self, payload):
        srv = self.server
        if payload[:4] == SMB2_TRANSFORM_MAGIC:
            srv._note(f"conn {self.number}: an encrypted message; this server does not "
                      f"decrypt: ignored")
            return
        if payload[:4] != SMB2_MAGIC or len(payload) < HDR:
            srv._note(f"conn {self.number}: a {len(payload)}-byte message that is not "
                      f"SMB2: ignored")
            return
        pdus = []
        off = 0
        while True:
            nxt = struct.unpack_from("<I", payload, off + 20)[0] if off + 24 <= len(payload) \
                else 0
            end = off + nxt if nxt else len(payload)
            if end > len(payload) or (nxt and nxt < HDR):
                srv._note(f"conn {self.number}: bad NextCommand {nxt} in a request chain")
                end = len(payload)
                nxt = 0
            pdus.append(payload[off:end])
            if not nxt:
                break
            off = end
            if off + HDR > len(payload):
                break
        rsps = []
        frame_actions = []
        last_fid = None
        last_status = STATUS_SUCCESS
        for raw in pdus:
            req = self.parse(raw)
            if req is None:
                continue
            related = bool(req.flags & FLAGS_RELATED)
            # credits and MessageIds, as a server checks them
            self.check_window(req)
            ctx = {"related": related, "last_fid": last_fid, "last_status": last_status}
            self.annotate(req, ctx)
            actions = srv._hooks_for(req)
            srv._record(req)
            if req.command == SMB2_CANCEL:
                continue  # no response; pending ones stay pending
            out = self.dispatch(req, ctx)
            if req.command == SMB2_CREATE:
                last_fid = ctx.get("fid")
            last_status = out.status
            out.credit_charge = req.credit_charge
            out.request_signed = bool(req.flags & FLAGS_SIGNED)
            if out.credits is None:
                out.credits = srv._grant(req)
            rs = [out]
            for a in actions:
                rs = a.pdu(self, req, rs)
                frame_actions.append(a)
            rsps.extend(rs)
        chain = [r for r in rsps if r.place == "chain"]
        ops = [("send", self.encode_chain([r])) for r in rsps if r.place == "before"]
        self.main_frame = self.encode_chain(chain) if chain else None
        if self.main_frame is not None:
            ops.append(("send", self.main_frame))
        late = [r for r in rsps if r.place == "after"]
        for r in late:
            if getattr(r, "delay", None) is not None:
                self._later(r)
            else:
                ops.append(("send", self.encode_chain([r])))
        for a in frame_actions:
            ops = a.frame(self, ops)
        await self.execute(ops)

    def _later(self, r):
        async def send_later():
            while True:
                await asyncio.sleep(r.delay)
                if self.closed or self.silenced:
                    return
                await self.execute([("send", self.encode_chain([r]))])
                if not getattr(r, "repeat", None):
                    return
        t = asyncio.ensure_future(send_later())
        self.async_tasks.add(t)
        t.add_done_callback(self.async_tasks.discard)

    def check_window(self, req):
        if req.command == SMB2_CANCEL:
            return
        charge = max(1, req.credit_charge)
        ids = range(req.message_id, req.message_id + charge)
        if req.message_id + charge > self.granted:
            self.server._violation(
                f"conn {self.number}: {req.name} MessageId {req.message_id} (charge {charge}) "
                f"beyond the {self.granted} MessageIds granted")
        if any(i in self.used for i in ids):
            self.server._violation(
                f"conn {self.number}: {req.name} MessageId {req.message_id} used before")
        self.used.update(ids)

    def encode_chain(self, rsps):
        """The responses as one message (a compound when more than one)."""
        out = bytearray()
        for i, r in enumerate(rsps):
            last = i == len(rsps) - 1
            if r.raw is not None:
                pdu = bytearray(r.raw)
            else:
                pdu = bytearray(encode_header(r) + r.body)
                for fn in r.patches:
                    fn(pdu)
            if r.cut is not None:
                del pdu[r.cut:]
            if not last:
                pdu += b"\x00" * (-len(pdu) % 8)
                if len(pdu) >= 24 and r.raw is None:
                    struct.pack_into("<I", pdu, 20, len(pdu))
            if r.raw is None and len(pdu) >= HDR:
                self.sign(r, pdu)
            if r.next_command is not None and len(pdu) >= 24:
                struct.pack_into("<I", pdu, 20, r.next_command)
            if len(pdu) >= 16:
                self.granted += struct.unpack_from("<H", pdu, 14)[0]
            if r.on_sent:
                r.on_sent(bytes(pdu))
            out += pdu
        return bytes(out)

    def sign(self, r, pdu):
        sess = self.sessions.get(r.session_id)
        if r.sign is False or sess is None or sess.signing_key is None:
            want = False
        elif r.sign is True:
            want = True
        else:
            # interim responses are not signed ([MS-SMB2] 3.3.4.1.1); the
            # final SESSION_SETUP is whenever there is a key (3.3.5.5.3)
            want = ((sess.signing or r.request_signed) and r.status != STATUS_PENDING) or (
                r.command == SMB2_SESSION_SETUP and r.status == STATUS_SUCCESS)
        if not want and not r.corrupt_signature:
            return
        key = sess.signing_key if sess and sess.signing_key else bytes(16)
        flags = struct.unpack_from("<I", pdu, 16)[0] | FLAGS_SIGNED
        struct.pack_into("<I", pdu, 16, flags)
        pdu[48:64] = bytes(16)
        if self.signing_alg == SIGNING_AES_CMAC:
            sig = aes_cmac(key, bytes(pdu))
        else:
            sig = hmac.new(key, bytes(pdu), hashlib.sha256).digest()[:16]
        if r.corrupt_signature:
            sig = bytes(b ^ 0xA5 for b in sig)
        pdu[48:64] = sig

    # -- parsing -------------------------------------------------------------

    def parse(self, raw):
        if len(raw) < HDR or raw[:4] != SMB2_MAGIC:
            return None
        (charge, _status, cmd, creds, flags, _next, mid) = struct.unpack_from("<HIHHIIQ", raw, 6)
        if flags & FLAGS_ASYNC:
            tree = 0
        else:
            tree = struct.unpack_from("<I", raw, 36)[0]
        sid = struct.unpack_from("<Q", raw, 40)[0]
        return Request(self.number, cmd, mid, flags, charge, creds, sid, tree, bytes(raw))

    def annotate(self, req, ctx):
        """Fill req.path / info_class / ctl_code for hook predicates."""
        b = req.body
        try:
            if req.command == SMB2_CREATE:
                noff, nlen = struct.unpack_from("<HH", b, 44)
                req.path = norm(req.raw[noff:noff + nlen].decode("utf-16-le", "replace"))
            elif req.command == SMB2_IOCTL:
                req.ctl_code = struct.unpack_from("<I", b, 4)[0]
            if req.command == SMB2_QUERY_INFO:
                req.info_class = b[3]
            if req.command == SMB2_QUERY_DIRECTORY:
                req.info_class = b[2]
            fid = self.req_fid(req, ctx)
            if fid is not None and req.command != SMB2_CREATE:
                op = self.server.opens.get(fid)
                req.path = op.path if op else None
        except (struct.error, IndexError):
            pass

    def req_fid(self, req, ctx):
        off = {SMB2_CLOSE: 8, SMB2_FLUSH: 8, SMB2_LOCK: 8, SMB2_IOCTL: 8,
               SMB2_QUERY_DIRECTORY: 8, SMB2_CHANGE_NOTIFY: 8, SMB2_READ: 16,
               SMB2_WRITE: 16, SMB2_SET_INFO: 16, SMB2_QUERY_INFO: 24}.get(req.command)
        if off is None or len(req.body) < off + 16:
            return None
        fid = struct.unpack_from("<QQ", req.body, off)
        if fid == RELATED_FID and ctx.get("related"):
            return ctx.get("last_fid")
        return fid

    # -- the commands --------------------------------------------------------

    def rsp(self, req, status, body=None):
        return Rsp(req.command, status, req.message_id,
                   error_body() if body is None else body,
                   session_id=req.session_id, tree_id=req.tree_id)

    def dispatch(self, req, ctx):
        handler = {
            SMB2_NEGOTIATE: self.negotiate, SMB2_SESSION_SETUP: self.session_setup,
            SMB2_LOGOFF: self.logoff, SMB2_TREE_CONNECT: self.tree_connect,
            SMB2_TREE_DISCONNECT: self.tree_disconnect, SMB2_CREATE: self.create,
            SMB2_CLOSE: self.close_file, SMB2_FLUSH: self.flush, SMB2_READ: self.read,
            SMB2_WRITE: self.write, SMB2_LOCK: self.lock, SMB2_IOCTL: self.ioctl,
            SMB2_ECHO: self.echo, SMB2_QUERY_DIRECTORY: self.query_directory,
            SMB2_QUERY_INFO: self.query_info, SMB2_SET_INFO: self.set_info,
        }.get(req.command)
        if handler is None:
            return self.rsp(req, STATUS_NOT_SUPPORTED)
        if req.command not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP, SMB2_ECHO) \
                and self.dialect is None:
            return self.rsp(req, STATUS_INVALID_PARAMETER)
        if req.command not in (SMB2_NEGOTIATE, SMB2_SESSION_SETUP, SMB2_ECHO):
            sess = self.sessions.get(req.session_id)
            if sess is None or sess.state != "valid":
                return self.rsp(req, STATUS_USER_SESSION_DELETED)
            if req.command not in (SMB2_LOGOFF, SMB2_TREE_CONNECT) \
                    and req.tree_id not in sess.trees:
                return self.rsp(req, STATUS_NETWORK_NAME_DELETED)
        if ctx.get("related") and ctx.get("last_status") != STATUS_SUCCESS \
                and req.command != SMB2_CREATE and ctx.get("last_fid") is None:
            # [MS-SMB2] 3.3.5.2.7.2: a related request after a failed one
            return self.rsp(req, ctx["last_status"])
        try:
            return handler(req, ctx)
        except (struct.error, IndexError, UnicodeDecodeError) as e:
            self.server._note(f"conn {self.number}: malformed {req.name} request: {e}")
            return self.rsp(req, STATUS_INVALID_PARAMETER)

    def negotiate(self, req, ctx):
        srv = self.server
        b = req.body
        count, secmode, _, caps = struct.unpack_from("<HHHI", b, 2)
        self.client_security_mode = secmode
        self.client_caps = caps
        self.client_guid = b[12:28]
        offered = list(struct.unpack_from(f"<{count}H", b, 36))
        choice = [d for d in offered if d in srv.dialects]
        if not choice:
            return self.rsp(req, STATUS_NOT_SUPPORTED)
        dialect = max(choice)
        self.dialect = dialect
        sec = spnego_neg_token_init() if srv.send_neg_token_init else b""
        mode = NEG_SIGNING_ENABLED | (NEG_SIGNING_REQUIRED if srv.require_signing else 0)
        fixed = struct.pack("<HHHH16sIIIIQQHHI", 65, mode, dialect, 0, srv.guid,
                            self.server_caps(),
                            srv.max_transact, srv.max_read, srv.max_write, nt_now(),
                            0, HDR + 64, len(sec), 0)
        body = bytearray(fixed + sec)
        if dialect == 0x0311:
            ctxs = []
            salt = os.urandom(32)
            ctxs.append((PREAUTH_INTEGRITY_CAPABILITIES, struct.pack("<HHH", 1, 32, 1) + salt))
            ctxs.append((SIGNING_CAPABILITIES, struct.pack("<HH", 1, srv.signing_alg)))
            while len(body) % 8:
                body.append(0)
            ctx_off = HDR + len(body)
            for i, (t, data) in enumerate(ctxs):
                if i:
                    while len(body) % 8:
                        body.append(0)
                body += struct.pack("<HHI", t, len(data), 0) + data
            struct.pack_into("<H", body, 6, len(ctxs))
            struct.pack_into("<I", body, 60, ctx_off)
        r = self.rsp(req, STATUS_SUCCESS, bytes(body))
        r.session_id = 0
        if dialect == 0x0311:
            self.preauth = hashlib.sha512(bytes(64) + req.raw).digest()

            def sent(pdu):
                self.preauth = hashlib.sha512(self.preauth + pdu).digest()
            r.on_sent = sent
        return r

    def session_setup(self, req, ctx):
        srv = self.server
        if self.dialect is None:
            return self.rsp(req, STATUS_INVALID_PARAMETER)
        b = req.body
        flags, secmode = b[2], b[3]
        off, ln = struct.unpack_from("<HH", b, 12)
        blob = req.raw[off:off + ln]
        sess = self.sessions.get(req.session_id)
        if sess is None or sess.state == "valid":
            if req.session_id and sess is None and flags & 0x01:
                return self.rsp(req, STATUS_USER_SESSION_DELETED)
            sid = srv._next_session_id()
            sess = Session(sid, self.preauth)
            self.sessions[sid] = sess
        if self.dialect == 0x0311:
            sess.preauth = hashlib.sha512(sess.preauth + req.raw).digest()
        token = spnego_find_ntlmssp(blob) if blob else None
        if sess.state == "new":
            if token is None or struct.unpack_from("<I", token, 8)[0] != 1:
                return self._ss_fail(req, sess, STATUS_LOGON_FAILURE, "no NTLMSSP NEGOTIATE")
            challenge = self.ntlm_challenge(sess)
            sess.state = "challenged"
            body = struct.pack("<HHHH", 9, 0, HDR + 8, 0)
            tok = spnego_resp(1, challenge)
            body = body[:6] + struct.pack("<H", len(tok)) + tok
            r = self.rsp(req, STATUS_MORE_PROCESSING_REQUIRED, body)
            r.session_id = sess.id
            if self.dialect == 0x0311:
                def sent(pdu, sess=sess):
                    sess.preauth = hashlib.sha512(sess.preauth + pdu).digest()
                r.on_sent = sent
            return r
        # challenged: the AUTHENTICATE
        if token is None or len(token) < 64 or struct.unpack_from("<I", token, 8)[0] != 3:
            return self._ss_fail(req, sess, STATUS_LOGON_FAILURE, "no NTLMSSP AUTHENTICATE")

        def field(o):
            ln_, _, off_ = struct.unpack_from("<HHI", token, o)
            return token[off_:off_ + ln_]
        nt = field(20)
        domain = field(28).decode("utf-16-le", "replace")
        user = field(36).decode("utf-16-le", "replace")
        sess.user = user
        session_flags = 0
        if not user and len(nt) == 0:
            sess.guest = True
            session_flags = SESSION_FLAG_IS_NULL if srv.null_sessions else SESSION_FLAG_IS_GUEST
        elif srv.impostor:
            # knows no password: waves every user through as itself,
            # with no key (so it can sign nothing)
            pass
        elif srv.password is not None and user.lower() == srv.user.lower() and len(nt) > 16:
            nthash = md4(utf16(srv.password))
            owf = hmac_md5(nthash, utf16(user.upper() + domain))
            proof = hmac_md5(owf, sess.challenge + nt[16:])
            if proof != nt[:16] and srv.bad_password_guest:
                sess.guest = True
                session_flags = SESSION_FLAG_IS_GUEST
            elif proof != nt[:16]:
                return self._ss_fail(req, sess, STATUS_LOGON_FAILURE, "wrong password")
            else:
                sess.key = hmac_md5(owf, proof)
        elif srv.guest_ok:
            sess.guest = True
            session_flags = SESSION_FLAG_IS_GUEST
        else:
            return self._ss_fail(req, sess, STATUS_LOGON_FAILURE, f"unknown user {user!r}")
        sess.state = "valid"
        if srv.session_flags is not None:
            session_flags = srv.session_flags
        if sess.key is not None:
            if self.dialect == 0x0311:
                sess.signing_key = kdf(sess.key, b"SMBSigningKey\x00", sess.preauth)
            elif self.dialect >= 0x0300:
                sess.signing_key = kdf(sess.key, b"SMB2AESCMAC\x00", b"SmbSign\x00")
            else:
                sess.signing_key = sess.key
            sess.signing = bool(srv.require_signing or secmode & NEG_SIGNING_REQUIRED)
        tok = spnego_resp(0, mech=False)
        body = struct.pack("<HHHH", 9, session_flags, HDR + 8, len(tok)) + tok
        r = self.rsp(req, STATUS_SUCCESS, body)
        r.session_id = sess.id
        srv._note(f"conn {self.number}: session 0x{sess.id:x} for {user!r} "
                  f"({'guest' if sess.guest else 'user'}, signing "
                  f"{'on' if sess.signing else 'off'})")
        return r

    def _ss_fail(self, req, sess, status, why):
        self.server._note(f"conn {self.number}: SESSION_SETUP refused: {why}")
        self.sessions.pop(sess.id, None)
        r = self.rsp(req, status)
        r.session_id = sess.id
        return r

    def ntlm_challenge(self, sess):
        name = utf16("HOSTILE")
        ti = (struct.pack("<HH", 2, len(name)) + name + struct.pack("<HH", 1, len(name)) + name
              + struct.pack("<HH", 0, 0))
        flags = (0x00000001 | 0x00000004 | 0x00000010 | 0x00000200 | 0x00008000 | 0x00010000
                 | 0x00080000 | 0x00800000 | 0x02000000 | 0x20000000 | 0x80000000)
        payload_off = 56
        msg = (NTLMSSP_SIG + struct.pack("<I", 2)
               + struct.pack("<HHI", len(name), len(name), payload_off)
               + struct.pack("<I", flags) + sess.challenge + bytes(8)
               + struct.pack("<HHI", len(ti), len(ti), payload_off + len(name))
               + bytes([6, 1]) + struct.pack("<H", 7601) + bytes([0, 0, 0, 15]))
        return msg + name + ti

    def logoff(self, req, ctx):
        self.sessions.pop(req.session_id, None)
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))

    def tree_connect(self, req, ctx):
        srv = self.server
        b = req.body
        off, ln = struct.unpack_from("<HH", b, 4)
        path = req.raw[off:off + ln].decode("utf-16-le", "replace")
        share = path.rstrip("\\").split("\\")[-1]
        ipc = share.upper() == "IPC$" and srv.referral is not None
        if share.lower() != srv.share.lower() and not ipc:
            return self.rsp(req, STATUS_BAD_NETWORK_NAME)
        tid = srv._next_tree_id()
        self.sessions[req.session_id].trees.add(tid)
        if ipc:
            kind, flags, caps = SHARE_TYPE_PIPE, 0, 0
        elif srv.dfs_root:
            kind, flags, caps = SHARE_TYPE_DISK, SHAREFLAG_DFS | SHAREFLAG_DFS_ROOT, SHARE_CAP_DFS
        else:
            kind, flags, caps = SHARE_TYPE_DISK, 0, 0
        body = struct.pack("<HBBIII", 16, kind, 0, flags, caps, 0x001F01FF)
        r = self.rsp(req, STATUS_SUCCESS, body)
        r.tree_id = tid
        return r

    def tree_disconnect(self, req, ctx):
        self.sessions[req.session_id].trees.discard(req.tree_id)
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))

    def echo(self, req, ctx):
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))

    def create(self, req, ctx):
        srv = self.server
        b = req.body
        oplock = b[3]
        access, attrs, share, disp, opts, noff, nlen, coff, clen = \
            struct.unpack_from("<IIIIIHHII", b, 24)
        path = norm(req.raw[noff:noff + nlen].decode("utf-16-le"))
        if any(not p or path.lower() == p.lower() or path.lower().startswith(p.lower() + "/")
               for p in map(norm, srv.dfs_links)):
            return self.rsp(req, STATUS_PATH_NOT_COVERED)
        contexts = parse_create_contexts(req.raw[coff:coff + clen]) if clen else {}
        ctx["fid"] = None
        if "DH2C" in contexts and len(contexts["DH2C"]) >= 32:
            persistent, volatile = struct.unpack_from("<QQ", contexts["DH2C"], 0)
            guid = contexts["DH2C"][16:32]
            op = srv.opens.get((persistent, volatile))
            if op is None or not op.durable or op.create_guid != guid:
                return self.rsp(req, STATUS_OBJECT_NAME_NOT_FOUND)
            ctx["fid"] = op.fid
            return self.create_rsp(req, op, 1, OPLOCK_LEVEL_BATCH,
                                   [(b"DH2Q", struct.pack("<II", 60000, 0))])
        guid = contexts.get("DH2Q", b"\x00" * 32)[16:32] if "DH2Q" in contexts else None
        if guid is not None and req.flags & FLAGS_REPLAY:
            # [MS-SMB2] 3.3.5.9.10: a replayed create whose CreateGuid names
            # an open still held (durable, so replay-eligible) gets that
            # open back instead of being carried out a second time
            op = next((o for o in srv.opens.values() if o.durable and o.create_guid == guid),
                      None)
            if op is not None:
                srv.replayed_creates += 1
                ctx["fid"] = op.fid
                return self.create_rsp(req, op, op.action, OPLOCK_LEVEL_BATCH,
                                       [(b"DH2Q", struct.pack("<II", 60000, 0))])
        parent = path.rpartition("/")[0]
        node = srv.fs.get(path)
        if path and (parent not in srv.fs or not srv.fs[parent].is_dir):
            return self.rsp(req, STATUS_OBJECT_PATH_NOT_FOUND)
        action = 1
        if node is None:
            if disp in (FILE_OPEN, FILE_OVERWRITE):
                return self.rsp(req, STATUS_OBJECT_NAME_NOT_FOUND)
            if srv.read_only:
                return self.rsp(req, STATUS_ACCESS_DENIED)
            node = Node(bool(opts & FILE_DIRECTORY_FILE))
            srv.fs[path] = node
            action = 2
        else:
            if disp == FILE_CREATE:
                return self.rsp(req, STATUS_OBJECT_NAME_COLLISION)
            if opts & FILE_DIRECTORY_FILE and not node.is_dir:
                return self.rsp(req, STATUS_NOT_A_DIRECTORY)
            if opts & FILE_NON_DIRECTORY_FILE and node.is_dir:
                return self.rsp(req, STATUS_FILE_IS_A_DIRECTORY)
            if disp in (FILE_SUPERSEDE, FILE_OVERWRITE, FILE_OVERWRITE_IF) and not node.is_dir:
                node.data = bytearray()
                node.mtime = nt_now()
                action = 0 if disp == FILE_SUPERSEDE else 3
        fid = srv._next_fid()
        durable = guid is not None and srv.durable and oplock == OPLOCK_LEVEL_BATCH
        op = Open(fid, path, node, guid, durable, bool(opts & FILE_DELETE_ON_CLOSE))
        op.action = action
        srv.opens[fid] = op
        ctx["fid"] = fid
        rctx = [(b"DH2Q", struct.pack("<II", 60000, 0))] if durable else []
        return self.create_rsp(req, op, action, OPLOCK_LEVEL_BATCH if durable else 0, rctx)

    def create_rsp(self, req, op, action, oplock, contexts):
        n = op.node
        blob = encode_create_contexts(contexts)
        coff = HDR + 88 if blob else 0
        body = struct.pack("<HBBIQQQQQQIIQQII", 89, oplock, 0, action, n.ctime, n.atime,
                           n.mtime, n.chtime, n.alloc, n.size, n.attrs, 0, op.fid[0],
                           op.fid[1], coff, len(blob)) + (blob or b"\x00")
        return self.rsp(req, STATUS_SUCCESS, body)

    def open_for(self, req, ctx):
        return self.server.opens.get(self.req_fid(req, ctx))

    def close_file(self, req, ctx):
        srv = self.server
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        flags = struct.unpack_from("<H", req.body, 2)[0]
        del srv.opens[op.fid]
        n = op.node
        if op.delete_on_close:
            srv._delete(op.path)
        if flags & 1:
            tail = struct.pack("<QQQQQQI", n.ctime, n.atime, n.mtime, n.chtime, n.alloc,
                               n.size, n.attrs)
        else:
            tail = bytes(52)
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HHI", 60, flags & 1, 0) + tail)

    def flush(self, req, ctx):
        if self.open_for(req, ctx) is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))

    def lock(self, req, ctx):
        """Byte-range locks kept per open: an unlock of a range the open
        does not hold is STATUS_RANGE_NOT_LOCKED, a lock overlapping one
        any open holds STATUS_LOCK_NOT_GRANTED ([MS-SMB2] 3.3.5.14; shared
        locks are taken as exclusive); LockSequence replays on durable
        handles are known."""
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        count, seq = struct.unpack_from("<HI", req.body, 2)
        # [MS-SMB2] 3.3.5.14: on a durable handle, a LockSequence whose
        # bucket (1..64) holds its number is a replay of a lock that was
        # done: success, nothing locked again
        bucket, number = seq >> 4, seq & 0xF
        if not (op.durable and 1 <= bucket <= 64):
            bucket = None
        elif op.lock_seqs.get(bucket) == number:
            self.server.replayed_locks += 1
            return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))
        else:
            op.lock_seqs.pop(bucket, None)
        for i in range(count):
            off, length, flags = struct.unpack_from("<QQI", req.body, 24 + 24 * i)
            if flags & LOCKFLAG_UNLOCK:
                if (off, length) not in op.locks:
                    return self.rsp(req, STATUS_RANGE_NOT_LOCKED)
                op.locks.remove((off, length))
                continue
            held = [r for o in self.server.opens.values() if o.node is op.node
                    for r in o.locks]
            if any(o < off + length and off < o + n for o, n in held):
                return self.rsp(req, STATUS_LOCK_NOT_GRANTED)
            op.locks.append((off, length))
        if bucket is not None:
            op.lock_seqs[bucket] = number
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HH", 4, 0))

    def read(self, req, ctx):
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        if op.node.is_dir:
            return self.rsp(req, STATUS_INVALID_DEVICE_REQUEST)
        length, offset = struct.unpack_from("<IQ", req.body, 4)
        data = bytes(op.node.data[offset:offset + length])
        if not data and length:
            return self.rsp(req, STATUS_END_OF_FILE)
        body = struct.pack("<HBBIII", 17, HDR + 16, 0, len(data), 0, 0) + (data or b"\x00")
        return self.rsp(req, STATUS_SUCCESS, body)

    def write(self, req, ctx):
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        if self.server.read_only:
            return self.rsp(req, STATUS_ACCESS_DENIED)
        doff, length, offset = struct.unpack_from("<HIQ", req.body, 2)
        data = req.raw[doff:doff + length]
        node = op.node
        if len(node.data) < offset:
            node.data += bytes(offset - len(node.data))
        node.data[offset:offset + len(data)] = data
        node.mtime = nt_now()
        return self.rsp(req, STATUS_SUCCESS, struct.pack("<HHIIHH", 17, 0, len(data), 0, 0, 0))

    def ioctl(self, req, ctx):
        srv = self.server
        code = struct.unpack_from("<I", req.body, 4)[0]
        if code == FSCTL_VALIDATE_NEGOTIATE_INFO:
            mode = NEG_SIGNING_ENABLED | (NEG_SIGNING_REQUIRED if srv.require_signing else 0)
            out = struct.pack("<I16sHH", self.server_caps(), srv.guid, mode, self.dialect)
            body = struct.pack("<HHIQQIIIIII", 49, 0, code, RELATED_FID[0], RELATED_FID[1],
                               HDR + 48, 0, HDR + 48, len(out), 0, 0) + out
            return self.rsp(req, STATUS_SUCCESS, body)
        if code == FSCTL_QUERY_NETWORK_INTERFACE_INFO and srv.interfaces is not None:
            out = encode_interfaces(srv.interfaces)
            body = struct.pack("<HHIQQIIIIII", 49, 0, code, RELATED_FID[0], RELATED_FID[1],
                               HDR + 48, 0, HDR + 48, len(out), 0, 0) + out
            return self.rsp(req, STATUS_SUCCESS, body)
        if code == FSCTL_DFS_GET_REFERRALS and srv.referral is not None:
            # [MS-DFSC] 2.2.2 REQ_GET_DFS_REFERRAL: MaxReferralLevel, then
            # RequestFileName (UTF-16, NUL-terminated)
            ioff, ilen = struct.unpack_from("<II", req.body, 24)
            inp = req.raw[ioff:ioff + ilen]
            name = inp[2:].decode("utf-16-le", "replace").split("\x00")[0]
            with srv._lock:
                srv.referrals.append(name)
            out = srv.referral(name)
            if isinstance(out, int):
                return self.rsp(req, out)
            body = struct.pack("<HHIQQIIIIII", 49, 0, code, RELATED_FID[0], RELATED_FID[1],
                               HDR + 48, 0, HDR + 48, len(out), 0, 0) + out
            return self.rsp(req, STATUS_SUCCESS, body)
        return self.rsp(req, STATUS_NOT_SUPPORTED)

    def server_caps(self):
        caps = CAP_LARGE_MTU if self.dialect >= 0x0210 else 0
        if self.server.interfaces is not None and self.dialect >= 0x0300:
            caps |= CAP_MULTI_CHANNEL
        return caps

    def query_info(self, req, ctx):
        srv = self.server
        b = req.body
        itype, cls = b[2], b[3]
        outlen = struct.unpack_from("<I", b, 4)[0]
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        n = op.node
        if itype == INFO_FILE:
            name = utf16("\\" + op.path.replace("/", "\\"))
            if cls == FileAllInformation:
                buf = (n.basic() + n.standard(op.delete_on_close)
                       + struct.pack("<QIIQIII", n.file_id, 0, 0x001F01FF, 0, 0, 0, len(name))
                       + name)
            elif cls == FileBasicInformation:
                buf = n.basic()
            elif cls == FileStandardInformation:
                buf = n.standard()
            elif cls == FileInternalInformation:
                buf = struct.pack("<Q", n.file_id)
            elif cls == FileNetworkOpenInformation:
                buf = n.network_open()
            else:
                return self.rsp(req, STATUS_INVALID_INFO_CLASS)
        elif itype == INFO_FILESYSTEM:
            units = srv.fs_units
            if cls == FileFsFullSizeInformation:
                buf = struct.pack("<QQQII", units, units // 2, units // 2, 8, 512)
            elif cls == FileFsSizeInformation:
                buf = struct.pack("<QQII", units, units // 2, 8, 512)
            elif cls == FileFsAttributeInformation:
                fsname = utf16("HOSTILEFS")
                buf = struct.pack("<IiI", 0x3, 255, len(fsname)) + fsname
            elif cls == FileFsVolumeInformation:
                label = utf16("hostile")
                buf = struct.pack("<QIIBB", nt_now(), 0x1234, len(label), 0, 0) + label
            else:
                return self.rsp(req, STATUS_INVALID_INFO_CLASS)
        else:
            return self.rsp(req, STATUS_NOT_SUPPORTED)
        status = STATUS_SUCCESS
        if len(buf) > outlen:
            buf = buf[:outlen]
            status = STATUS_BUFFER_OVERFLOW
        body = struct.pack("<HHI", 9, HDR + 8, len(buf)) + (buf or b"\x00")
        return self.rsp(req, status, body)

    def query_directory(self, req, ctx):
        srv = self.server
        b = req.body
        cls, flags = b[2], b[3]
        outlen = struct.unpack_from("<I", b, 28)[0]
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        if not op.node.is_dir:
            return self.rsp(req, STATUS_INVALID_PARAMETER)
        if cls != FileIdBothDirectoryInformation:
            return self.rsp(req, STATUS_INVALID_INFO_CLASS)
        if flags & 0x01 or flags & 0x10 or op.dir_pos is None:
            op.dir_pos = 0
        names = [(".", op.node), ("..", srv.fs.get(op.path.rpartition("/")[0], op.node))]
        names += srv._children(op.path)
        out = bytearray()
        last_start = None
        count = 0
        while op.dir_pos < len(names):
            nm, node = names[op.dir_pos]
            ent = dirent_id_both(nm, node)
            pad = -len(out) % 8
            if len(out) + pad + len(ent) > outlen:
                break
            out += b"\x00" * pad
            if last_start is not None:
                struct.pack_into("<I", out, last_start, len(out) - last_start)
            last_start = len(out)
            out += ent
            op.dir_pos += 1
            count += 1
            if flags & 0x02:
                break
        if count == 0:
            if op.dir_pos >= len(names):
                return self.rsp(req, STATUS_NO_MORE_FILES)
            return self.rsp(req, STATUS_BUFFER_TOO_SMALL)
        body = struct.pack("<HHI", 9, HDR + 8, len(out)) + bytes(out)
        return self.rsp(req, STATUS_SUCCESS, body)

    def set_info(self, req, ctx):
        srv = self.server
        b = req.body
        itype, cls = b[2], b[3]
        blen, boff = struct.unpack_from("<IH", b, 4)
        buf = req.raw[boff:boff + blen]
        op = self.open_for(req, ctx)
        if op is None:
            return self.rsp(req, STATUS_FILE_CLOSED)
        if srv.read_only:
            return self.rsp(req, STATUS_ACCESS_DENIED)
        n = op.node
        ok = self.rsp(req, STATUS_SUCCESS, struct.pack("<H", 2))
        if itype != INFO_FILE:
            return self.rsp(req, STATUS_NOT_SUPPORTED)
        if cls in (FileEndOfFileInformation, FileAllocationInformation):
            size = struct.unpack_from("<Q", buf, 0)[0]
            if cls == FileEndOfFileInformation and not n.is_dir:
                if size < len(n.data):
                    del n.data[size:]
                else:
                    n.data += bytes(size - len(n.data))
                n.mtime = nt_now()
            return ok
        if cls == FileBasicInformation:
            times = struct.unpack_from("<QQQQI", buf, 0)
            for attr, v in zip(("ctime", "atime", "mtime", "chtime"), times[:4]):
                if v not in (0, 0xFFFFFFFFFFFFFFFF):
                    setattr(n, attr, v)
            if times[4]:
                n.attrs = times[4] | (FILE_ATTRIBUTE_DIRECTORY if n.is_dir else 0)
            return ok
        if cls == FileDispositionInformation:
            if buf[0] and n.is_dir and srv._children(op.path):
                return self.rsp(req, STATUS_DIRECTORY_NOT_EMPTY)
            op.delete_on_close = bool(buf[0])
            return ok
        if cls == FileRenameInformation:
            replace = buf[0]
            nlen = struct.unpack_from("<I", buf, 16)[0]
            target = norm(buf[20:20 + nlen].decode("utf-16-le"))
            if target in srv.fs and not replace:
                return self.rsp(req, STATUS_OBJECT_NAME_COLLISION)
            srv._rename(op.path, target)
            op.path = target
            return ok
        return self.rsp(req, STATUS_INVALID_INFO_CLASS)


def norm(name):
    return name.replace("\\", "/").strip("/")


def parse_create_contexts(chain):
    """{name: data} of a create context chain ([MS-SMB2] 2.2.13.2)."""
    out = {}
    off = 0
    while off + 16 <= len(chain):
        nxt, noff, nlen, _, doff, dlen = struct.unpack_from("<IHHHHI", chain, off)
        name = chain[off + noff:off + noff + nlen].decode("latin-1")
        out[name] = chain[off + doff:off + doff + dlen] if dlen else b""
        if not nxt:
            break
        off += nxt
    return out


def encode_create_contexts(contexts):
    out = bytearray()
    last = None
    for name, data in contexts:
        while len(out) % 8:
            out.append(0)
        if last is not None:
            struct.pack_into("<I", out, last, len(out) - last)
        last = len(out)
        doff = (16 + len(name) + 7) & ~7
        ent = bytearray(struct.pack("<IHHHHI", 0, 16, len(name), 0, doff if data else 0,
                                    len(data)) + name)
        ent += b"\x00" * (doff - len(ent))
        ent += data
        out += ent
    return bytes(out)


NETIF_CAP_RSS = 0x1
NETIF_CAP_RDMA = 0x2


def encode_interfaces(ifaces):
    """NETWORK_INTERFACE_INFO entries ([MS-SMB2] 2.2.32.5), IPv4 only:
    (address, link speed in bit/s[, NETIF_CAP_* bits])."""
    out = bytearray()
    for i, (addr, speed, *caps) in enumerate(ifaces):
        sa = struct.pack("<HH4s", 2, 0, socket.inet_aton(addr)) + bytes(120)
        last = i == len(ifaces) - 1
        out += struct.pack("<IIII", 0 if last else 152, i + 1, caps[0] if caps else 0, 0)
        out += struct.pack("<Q", speed)
        out += sa
    return bytes(out)


DFS_HDR_STORAGE_SERVERS = 0x2


def dfs_referral(path, targets, consumed=None, ttl=300, count=None, header_flags=None,
                 path_consumed=None, bad_offset=False, no_nul=False, version=3):
    """RESP_GET_DFS_REFERRAL ([MS-DFSC] 2.2.4) answering a request for
    `path` ("\\host\\share\\link\\rest", as srv.referral gets it): one V3
    entry (2.2.5.3, 34 bytes, NameListReferral 0) per target
    ("\\server\\share"), in order, then their strings (DFSPath and
    DFSAlternatePath the link, NetworkAddress the target, UTF-16 with a NUL),
    every offset right.  consumed: the link, a prefix of path as a string
    (default: its first three components, a link right below the share);
    PathConsumed is its UTF-16 size.  The knobs that break it:
      path_consumed: PathConsumed as this number instead (odd, longer than
        the path, ending inside a component...);
      count: NumberOfReferrals as this (more than the entries sent);
      bad_offset: the last entry's NetworkAddressOffset past the end;
      no_nul: the last string (the last NetworkAddress) without its NUL;
      version: VersionNumber of the entries (3 or 4: the same layout)."""
    if consumed is None:
        consumed = "\\".join(path.split("\\")[:4])
    assert path.lower().startswith(consumed.lower()), (path, consumed)
    pc = len(utf16(consumed)) if path_consumed is None else path_consumed
    flags = DFS_HDR_STORAGE_SERVERS if header_flags is None else header_flags
    n = len(targets)
    fixed = 34
    strings = bytearray()
    entries = bytearray()
    link_off = None
    for i, t in enumerate(targets):
        here = 8 + fixed * i                      # where entry i starts
        strs_at = 8 + fixed * n                   # where the strings start
        if link_off is None:
            link_off = strs_at + len(strings)
            strings += utf16(consumed) + b"\x00\x00"
        addr_off = strs_at + len(strings)
        last = i == n - 1
        strings += utf16(t) + (b"" if last and no_nul else b"\x00\x00")
        net = addr_off - here
        if last and bad_offset:
            net = 8 + fixed * n + 4096 - here
        entries += struct.pack("<HHHHIHHH16s", version, fixed, 0, 0, ttl, link_off - here,
                               link_off - here, net, bytes(16))
    return (struct.pack("<HHI", pc, n if count is None else count, flags) + bytes(entries)
            + bytes(strings))


def dirent_id_both(name, node):
    """[MS-FSCC] 2.4.17 FileIdBothDirectoryInformation, NextEntryOffset 0."""
    nm = utf16(name)
    return (struct.pack("<IIQQQQQQIIIBB24sHQ", 0, 0, node.ctime, node.atime, node.mtime,
                        node.chtime, node.size, node.alloc, node.attrs, len(nm), 0, 0, 0,
                        b"\x00" * 24, 0, node.file_id) + nm)


DEFAULT_FILES = {
    "hello.txt": b"hello from the hostile server\n",
    "big.bin": bytes((i * 7 + (i >> 8)) & 0xFF for i in range(1 << 20)),
    "dir1/inner.txt": b"inner\n",
}


class HostileServer:
    """See the module docstring.  Keyword arguments:
      share, user, password: what TREE_CONNECT and SESSION_SETUP accept
        (password=None: any password for `user`);
      guest_ok: unknown users (and anonymous ones) become guests;
      require_signing: SecurityMode says SIGNING_REQUIRED; sessions sign;
      dialects: those the server may choose (the highest offered wins);
      signing_alg: for 3.1.1 (AES-CMAC or HMAC-SHA256);
      durable: grant durable v2 handles asked for under a batch oplock;
      files: {path: bytes} of the share (directories made as needed).
    Attributes to set before a mount (issue 18's impostors):
      impostor: accept any user's AUTHENTICATE without checking it, as a
        plain user session with no key (a server that does not know the
        password: it cannot sign);
      bad_password_guest: a wrong password for `user` gives a guest session
        (Samba's `map to guest = Bad Password`);
      session_flags: SessionFlags of every final SESSION_SETUP answer
        (e.g. SESSION_FLAG_IS_GUEST after a password that verified);
      interfaces: [(ipv4, link_speed_bps[, NETIF_CAP_*])] answered to
        FSCTL_QUERY_NETWORK_INTERFACE_INFO (and MULTI_CHANNEL offered);
        None: the FSCTL is not supported;
      dfs_root: TREE_CONNECT of the share says ShareFlags DFS | DFS_ROOT and
        Capabilities DFS;
      dfs_links: share-relative paths ("a" or "a/b"): a CREATE of one of
        them or of anything below answers STATUS_PATH_NOT_COVERED ("": of
        anything at all, the share's root included);
      referral: fn(RequestFileName as sent, e.g. "\\127.0.0.1\\share\\a\\x")
        -> the RESP_GET_DFS_REFERRAL bytes FSCTL_DFS_GET_REFERRALS answers,
        or an NTSTATUS (an int) to fail it with; not None also makes IPC$ a
        share (of type pipe) TREE_CONNECT accepts.  srv.referrals: the
        paths asked for.
    host, port: where to listen (port 0: any free one); a second server
    on another 127.0.0.x address and the same port is another server to a
    client that keeps the port (a DFS target)."""

    def __init__(self, share="share", user="hostile", password="hostile-pw", guest_ok=True,
                 require_signing=False, dialects=DIALECTS, signing_alg=SIGNING_AES_CMAC,
                 durable=True, files=None, read_only=False, max_io=1 << 20, host=HOST,
                 port=0):
        self.host = host
        self.port = None
        self._want_port = port
        self.share = share
        self.user = user
        self.password = password
        self.guest_ok = guest_ok
        self.null_sessions = False
        self.impostor = False
        self.bad_password_guest = False
        self.session_flags = None
        self.interfaces = None
        self.dfs_root = False
        self.dfs_links = ()
        self.referral = None
        self.referrals = []
        self.require_signing = require_signing
        self.dialects = tuple(dialects)
        self.signing_alg = signing_alg
        self.durable = durable
        self.read_only = read_only
        self.send_neg_token_init = True
        self.max_transact = self.max_read = self.max_write = max_io
        self.fs_units = 1 << 20
        self.guid = os.urandom(16)
        self.fs = {"": Node(True)}
        for path, data in (DEFAULT_FILES if files is None else files).items():
            self.add_file(path, data)
        self.opens = {}
        # credit policy: what each response grants; default: what was asked
        # (at least 1), like Samba up to its limit
        self.grant = None
        self.requests = []
        self.connections = 0
        self.replayed_creates = 0   # creates answered from the CreateGuid (3.3.5.9.10)
        self.replayed_locks = 0     # locks answered from the LockSequence (3.3.5.14)
        self.violations = []
        self.notes = []
        self.hooks = []
        self._lock = threading.Lock()
        self._loop = None
        self._thread = None
        self._server = None
        self._conns = []
        self._ids = {"session": 0x1000, "tree": 0, "fid": 0, "async": 0}
        self._started = threading.Event()

    # -- file system ------------------------------------------------------------

    def add_file(self, path, data=b""):
        path = norm(path)
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            self.fs.setdefault(d, Node(True))
        self.fs[path] = Node(False, data)

    def add_dir(self, path):
        path = norm(path)
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            self.fs.setdefault("/".join(parts[:i]), Node(True))

    def file_data(self, path):
        n = self.fs.get(norm(path))
        return None if n is None else bytes(n.data)

    def _children(self, path):
        pre = path + "/" if path else ""
        return sorted((p[len(pre):], n) for p, n in self.fs.items()
                      if p and p.startswith(pre) and "/" not in p[len(pre):])

    def _delete(self, path):
        self.fs.pop(path, None)

    def _rename(self, src, dst):
        moved = {p: n for p, n in self.fs.items() if p == src or p.startswith(src + "/")}
        for p in moved:
            del self.fs[p]
        for p, n in moved.items():
            self.fs[dst + p[len(src):]] = n
        for op in self.opens.values():
            if op.path == src or op.path.startswith(src + "/"):
                op.path = dst + op.path[len(src):]

    # -- hooks ------------------------------------------------------------------

    def on(self, command, action, nth=1, times=1, when=None):
        """Arm a hook; returns it (h.fired, h.wait(t), h.requests)."""
        h = Hook(command, action, nth, times, when)
        with self._lock:
            self.hooks.append(h)
        return h

    def clear_hooks(self):
        with self._lock:
            self.hooks.clear()

    def _hooks_for(self, req):
        with self._lock:
            fired = [h for h in self.hooks if h.matches(req)]
            for h in fired:
                h.fired += 1
                h.requests.append(req)
        for h in fired:
            self._note(f"conn {req.conn}: {req.name} MessageId {req.message_id}: {h.action!r}")
            h.event.set()
        return [h.action for h in fired]

    # -- bookkeeping -------------------------------------------------------------

    def _grant(self, req):
        g = self.grant
        if g is None:
            return max(1, req.credits)
        return g(req) if callable(g) else int(g)

    def _record(self, req):
        with self._lock:
            self.requests.append(req)

    def _violation(self, text):
        with self._lock:
            self.violations.append(text)

    def _note(self, text):
        with self._lock:
            self.notes.append(f"{time.monotonic():.3f} {text}")

    def _next_session_id(self):
        self._ids["session"] += 0x10001
        return self._ids["session"]

    def _next_tree_id(self):
        self._ids["tree"] += 1
        return self._ids["tree"]

    def _next_fid(self):
        self._ids["fid"] += 1
        return (0x100 + self._ids["fid"], 0x200 + self._ids["fid"])

    def _next_async_id(self):
        self._ids["async"] += 1
        return 0xA5000 + self._ids["async"]

    def requests_of(self, command):
        with self._lock:
            return [r for r in self.requests if r.command == command]

    def summary(self):
        with self._lock:
            c = collections.Counter(r.name for r in self.requests)
            return (f"hostile server {self.host}:{self.port}: {self.connections} connections, "
                    f"requests {dict(c)}, hooks {self.hooks}\n" + "\n".join(self.notes[-40:]))

    # -- lifecycle ---------------------------------------------------------------

    def start(self):
        self._thread = threading.Thread(target=self._run, name="hostile-smb", daemon=True)
        self._thread.start()
        if not self._started.wait(10) or self.port is None:
            raise RuntimeError("hostile server did not start")
        return self

    def _run(self):
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)

        async def up():
            self._server = await asyncio.start_server(self._on_conn, self.host,
                                                      self._want_port)
            self.port = self._server.sockets[0].getsockname()[1]
            self._started.set()
        try:
            loop.run_until_complete(up())
            loop.run_forever()
        finally:
            self._started.set()
            pending_tasks = asyncio.all_tasks(loop)
            for t in pending_tasks:
                t.cancel()
            loop.run_until_complete(asyncio.gather(*pending_tasks, return_exceptions=True))
            loop.close()

    async def _on_conn(self, reader, writer):
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self.connections += 1
            n = self.connections
        conn = Conn(self, reader, writer, n)
        self._conns.append(conn)
        self._note(f"conn {n}: accepted")
        await conn.run()
        self._note(f"conn {n}: closed")

    def close_connections(self, reset=False):
        """Drop every client connection now (the listener stays)."""
        def f():
            for c in self._conns:
                c._close(reset)
        if self._loop:
            self._loop.call_soon_threadsafe(f)

    def stop(self):
        if not self._loop:
            return

        def f():
            if self._server:
                self._server.close()
            for c in self._conns:
                c._close()
            self._loop.stop()
        try:
            self._loop.call_soon_threadsafe(f)
        except RuntimeError:
            pass
        if self._thread:
            self._thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    import sys
    s = HostileServer().start()
    print(f"hostile SMB2 server on 127.0.0.1:{s.port} share 'share' "
          f"user {s.user!r} password {s.password!r}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print(s.summary(), file=sys.stderr)
        s.stop()
