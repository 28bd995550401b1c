#!/usr/bin/env python3
"""Writes the seed corpora for the codec fuzzers (and the DER reader's) into
tests/fuzz/corpus/.

The seeds are small, plausible server responses built field by field from
[MS-SMB2] / [MS-FSCC] / [MS-DFSC] / [C706] / [MS-SWN] / X.690; rerun this after changing it and commit the
output.  It only writes the files it names: regression seeds (crashers kept
after a fix) and the captured tokens in the auth_* corpora stay as they are.
"""
import hashlib
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'corpus')


def hdr(cmd, status=0, next_cmd=0, mid=1, flags=1, tree=1, sess=0x1000000001):
    return (b'\xfeSMB' + struct.pack('<HHIHHIIQIIQ', 64, 1, status, cmd, 32, flags,
                                     next_cmd, mid, 0xfeff, tree, sess) + bytes(16))


def utf16(s):
    return s.encode('utf-16-le')


def pad8(b):
    return b + bytes(-len(b) % 8)


NEG_CTXS = [
    (1, struct.pack('<HHH', 1, 32, 1) + bytes(range(32))),
    (2, struct.pack('<HH', 1, 2)),
    (8, struct.pack('<HH', 1, 1)),
    (0x100, bytes.fromhex('93ad25509cb411e7b42383de968bcd7c')),
]
# and the ones we do not judge: COMPRESSION, NETNAME, TRANSPORT, RDMA_TRANSFORM
NEG_CTXS_MORE = NEG_CTXS + [
    (3, struct.pack('<HHI', 1, 0, 0) + struct.pack('<H', 2)),
    (5, utf16('server')),
    (6, struct.pack('<I', 1)),
    (7, struct.pack('<HHI', 1, 0, 0) + struct.pack('<H', 1)),
]


def negotiate(dialect=0x0311, items=None):
    blob = bytes.fromhex('604806062b0601050502a03e303ca00e300c060a2b06010401823702020a')
    ctxs = b''
    if dialect == 0x0311:
        items = items or NEG_CTXS
        for i, (t, d) in enumerate(items):
            c = struct.pack('<HHI', t, len(d), 0) + d
            ctxs += pad8(c) if i < len(items) - 1 else c
    sec_off = 64 + 64
    ctx_off = (sec_off + len(blob) + 7) & ~7
    body = struct.pack('<HHHH', 65, 1, dialect, len(items) if ctxs else 0) + bytes(range(16))
    body += struct.pack('<IIIIQQHHI', 0x2f, 0x800000, 0x800000, 0x800000,
                        133000000000000000, 0, sec_off, len(blob), ctx_off if ctxs else 0)
    msg = hdr(0) + body + blob
    if ctxs:
        msg = pad8(msg) + ctxs
    return msg


def session(status, blob, flags=0):
    return hdr(1, status) + struct.pack('<HHHH', 9, flags, 72 if blob else 0, len(blob)) + blob


def create(ctxs):
    chain = b''
    for i, (name, data) in enumerate(ctxs):
        c = struct.pack('<IHHHHI', 0, 16, len(name), 0, 24 if data else 0, len(data))
        c = pad8(c + name) + data
        if i < len(ctxs) - 1:
            c = pad8(c)
            c = struct.pack('<I', len(c)) + c[4:]
        chain += c
    body = struct.pack('<HBBI', 89, 0, 0, 1) + struct.pack('<QQQQQQ', 1, 2, 3, 4, 4096, 5)
    body += struct.pack('<II', 0x20, 0) + struct.pack('<QQ', 0x11, 0x22)
    body += struct.pack('<II', 152 if chain else 0, len(chain))
    return hdr(5) + body + chain


def close_rsp():
    return hdr(6) + struct.pack('<HHI', 60, 1, 0) + struct.pack('<QQQQQQI', 1, 2, 3, 4, 4096, 5,
                                                                0x20)


def read_rsp(data):
    return hdr(8) + struct.pack('<HBBIII', 17, 80, 0, len(data), 0, 0) + data


def transform(plain, size_delta=0, flags=1, sess=0x1000000001):
    nonce = bytes(range(1, 12)) + bytes(5)
    return (b'\xfdSMB' + bytes(range(16)) + nonce +
            struct.pack('<IHHQ', len(plain) + size_delta, 0, flags, sess) + plain)


def write_rsp(n):
    return hdr(9) + struct.pack('<HHIIHH', 17, 0, n, 0, 0, 0)


def ioctl_rsp(out, ctl=0x140204):
    return (hdr(11) + struct.pack('<HHI', 49, 0, ctl) + b'\xff' * 16 +
            struct.pack('<IIIIII', 112, 0, 112, len(out), 0, 0) + out)


FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x001401FC


def query_info_rsp(buf):
    return hdr(16) + struct.pack('<HHI', 9, 72, len(buf)) + buf


def file_all_info():
    b = struct.pack('<QQQQII', 1, 2, 3, 4, 0x10, 0)
    b += struct.pack('<QQIBBH', 4096, 0, 2, 0, 1, 0)
    b += struct.pack('<QIIQII', 0x123456789, 0, 0x1f01ff, 0, 0, 0)
    name = utf16('\\dir')
    return b + struct.pack('<I', len(name)) + name


def dirent_idboth(name, fid, last):
    n = utf16(name)
    e = struct.pack('<IIQQQQQQII', 0, 0, 1, 2, 3, 4, 10, 4096, 0x20, len(n))
    e += struct.pack('<IBB', 0, 0, 0) + bytes(24) + struct.pack('<HQ', 0, fid) + n
    if not last:
        e = pad8(e)
        e = struct.pack('<I', len(e)) + e[4:]
    return e


# Where FileName starts, and what sits between NameLength and it, per class
# ([MS-FSCC] 2.4.10, 2.4.14, 2.4.8, 2.4.17, 2.4.18).
def dirent(cls, name, fid, last, short=''):
    n = utf16(name)
    e = struct.pack('<IIQQQQQQII', 0, 0, 1, 2, 3, 4, 10, 4096, 0x20, len(n))
    sn = utf16(short)[:24]
    if cls == 1:
        pass
    elif cls == 2:
        e += struct.pack('<I', 0)
    elif cls == 3:
        e += struct.pack('<IBB', 0, len(sn), 0) + sn + bytes(24 - len(sn))
    elif cls == 37:
        e += struct.pack('<IBB', 0, len(sn), 0) + sn + bytes(24 - len(sn)) + struct.pack('<HQ', 0, fid)
    elif cls == 38:
        e += struct.pack('<IIQ', 0, 0, fid)
    e += n
    if not last:
        e = pad8(e)
        e = struct.pack('<I', len(e)) + e[4:]
    return e


def dir_buf(cls, names):
    return b''.join(dirent(cls, nm, i + 1, i == len(names) - 1, nm.upper()[:12])
                    for i, nm in enumerate(names))


def query_dir_rsp():
    buf = dirent_idboth('.', 1, False) + dirent_idboth('..', 2, False) + \
        dirent_idboth('file.txt', 3, True)
    return hdr(14) + struct.pack('<HHI', 9, 72, len(buf)) + buf


def file_basic_info():
    return struct.pack('<QQQQII', 1, 2, 3, 4, 0x10, 0)


def file_standard_info():
    return struct.pack('<QQIBBH', 4096, 10, 1, 0, 0, 0)


def file_network_open_info():
    return struct.pack('<QQQQQQII', 1, 2, 3, 4, 4096, 10, 0x20, 0)


def fs_full_size_info():
    return struct.pack('<QQQII', 100, 50, 49, 8, 512)


def trivial_rsp(cmd, ss=4):
    return hdr(cmd) + struct.pack('<HH', ss, 0)[:max(ss & ~1, 2)]


def tree_connect_rsp(share_type=1, flags=0x30, caps=0, access=0x1f01ff):
    return hdr(3) + struct.pack('<HBBIII', 16, share_type, 0, flags, caps, access)


def der(tag, content):
    n = len(content)
    if n < 0x80:
        ln = bytes([n])
    else:
        b = n.to_bytes((n.bit_length() + 7) // 8, 'big')
        ln = bytes([0x80 | len(b)]) + b
    return bytes([tag]) + ln + content


def oid(dotted):
    parts = [int(x) for x in dotted.split('.')]
    out = bytes([40 * parts[0] + parts[1]])
    for v in parts[2:]:
        enc = [v & 0x7f]
        v >>= 7
        while v:
            enc.insert(0, 0x80 | (v & 0x7f))
            v >>= 7
        out += bytes(enc)
    return der(0x06, out)


OID_SPNEGO = oid('1.3.6.1.5.5.2')
OID_NTLM = oid('1.3.6.1.4.1.311.2.2.10')
OID_KRB5 = oid('1.2.840.113554.1.2.2')
OID_MSKRB5 = oid('1.2.840.48018.1.2.2')


def error_rsp(cmd, status, data=b''):
    return hdr(cmd, status) + struct.pack('<HBBI', 9, 0, 0, len(data)) + (data or b'\0')


def compound(*msgs):
    out = b''
    for i, m in enumerate(msgs):
        if i < len(msgs) - 1:
            m = pad8(m)
            m = m[:20] + struct.pack('<I', len(m)) + m[24:]
        out += m
    return out


def v4(addr, port=0):
    """SOCKADDR_STORAGE for an IPv4 address ([MS-SMB2] 2.2.32.5.1.1): the
    family little-endian, the rest in network order."""
    return (struct.pack('<H', 0x0002) + struct.pack('>H', port) +
            bytes(int(x) for x in addr.split('.')) + bytes(120))


def v6(addr, scope=0, port=0):
    import ipaddress
    return (struct.pack('<H', 0x0017) + struct.pack('>HI', port, 0) +
            ipaddress.IPv6Address(addr).packed + struct.pack('>I', scope) + bytes(100))


def netif_chain(entries, stride=152):
    """NETWORK_INTERFACE_INFO entries (ifindex, capability, speed, sockaddr),
    each stride bytes apart (152, or more: entries are 8-byte aligned and a
    server may pad)."""
    out = b''
    for i, (idx, cap, speed, sa) in enumerate(entries):
        nxt = stride if i + 1 < len(entries) else 0
        e = struct.pack('<IIIIQ', nxt, idx, cap, 0, speed) + sa
        out += e + (bytes(stride - len(e)) if nxt else b'')
    return out


def ea(name, value, last):
    """One FILE_FULL_EA_INFORMATION entry (padded to 4 unless last)."""
    e = struct.pack('<IBBH', 0, 0, len(name), len(value)) + name + b'\0' + value
    if not last:
        e += bytes(-len(e) % 4)
        e = struct.pack('<I', len(e)) + e[4:]
    return e


def fsctl_seeds():
    target = '../a/b'.encode('utf-16-le')
    link = b'dir/target'
    mf = b'XSym\n%04d\n' % len(link) + hashlib.md5(link).hexdigest().encode() + b'\n' + \
        link + b'\n'
    return {
        'ea_chain': ea(b'user.a', b'\x01\x02\x03', False) + ea(b'DOSATTRIB', b'x' * 20, False) +
        ea(b'z', b'', True),
        'ea_one': ea(b'user.comment', b'hello world', True),
        'ranges': struct.pack('<QQQQ', 0, 4096, 65536, 8192),
        'resume_key': bytes(range(24)) + struct.pack('<I', 0),
        'copychunk_rsp': struct.pack('<III', 2, 12, (1 << 20) + 12),
        'symlink': struct.pack('<IHH', 0xA000000C, 12 + 2 * len(target), 0) +
        struct.pack('<HHHHI', 0, len(target), len(target), len(target), 1) + target + target,
        'mfsymlink': mf + b' ' * (1067 - len(mf)),
        'lock_rsp': hdr(10) + struct.pack('<HH', 4, 0),
    }


def unix_sid(kind, uid):
    return struct.pack('<BB', 1, 2) + (22).to_bytes(6, 'big') + struct.pack('<II', kind, uid)


def posix_info(attrs, ino, mode, uid=1001, gid=1002, nlink=1, tag=0, dev=0):
    # SMB2_FILE_POSIX_INFORMATION as ksmbd sends it (SMB3 POSIX extensions)
    return (struct.pack('<QQQQQQIQII', 1, 2, 3, 4, 5, 4096, attrs, ino, dev, 0) +
            struct.pack('<III', nlink, tag, mode) + unix_sid(1, uid) + unix_sid(2, gid))


def posix_dirent(name, attrs, ino, last):
    n = utf16(name)
    e = struct.pack('<II', 0, 0) + posix_info(attrs, ino, 0o755) + struct.pack('<I', len(n)) + n
    e = pad8(e)
    return struct.pack('<I', 0 if last else len(e)) + e[4:]


def posix_seeds(mxac):
    guid = bytes.fromhex('93ad25509cb411e7b42383de968bcd7c')
    domain = (struct.pack('<BB', 1, 5) + (5).to_bytes(6, 'big') +
              struct.pack('<IIIII', 21, 1, 2, 3, 1001))
    ctx = struct.pack('<III', 2, 7, 0o640) + domain + unix_sid(2, 1002)
    return {
        'create_posix': create([mxac, (guid, ctx)]),
        'info_file': posix_info(0x20, 0x1234, 0o640, nlink=2),
        'info_fifo': posix_info(0x420, 0x1235, 0o600, tag=0x80000024),
        'dirents': (posix_dirent('.', 0x10, 1, False) + posix_dirent('file', 0x20, 2, False) +
                    posix_dirent('dir', 0x10, 3, True)),
        'sid_domain': domain,
    }


def dfs_entry_fixed(ver, flags):
    """The fixed part of a referral entry ([MS-DFSC] 2.2.5.1-2.2.5.4): v1 8
    (ShareName inline), v2 22, v3/v4 34, or 18 with NameListReferral."""
    if ver == 1:
        return 8
    if ver == 2:
        return 22
    return 18 if flags & 0x2 else 34


def dfs_referral(consumed, hflags, entries):
    """RESP_GET_DFS_REFERRAL ([MS-DFSC] 2.2.4): the header, the entries back
    to back (each as dict: ver, type, flags, ttl, and path/alt/net, or
    special/names with NameListReferral 0x2; pad extends the fixed part),
    then the strings, each offset counted from its own entry."""
    out = bytearray(struct.pack('<HHI', consumed, len(entries), hflags))
    starts = []
    for e in entries:
        ver, flags = e['ver'], e.get('flags', 0)
        starts.append(len(out))
        ent = bytearray(struct.pack('<HHHH', ver, 0, e.get('type', 0), flags))
        if ver == 1:
            ent += utf16(e['net']) + b'\0\0'
        elif ver == 2:
            ent += struct.pack('<II', 0, e.get('ttl', 0)) + bytes(6)
        else:
            ent += struct.pack('<I', e.get('ttl', 0)) + bytes(dfs_entry_fixed(ver, flags) - 12)
        ent += bytes(e.get('pad', 0))
        struct.pack_into('<H', ent, 2, len(ent))
        out += ent
    for e, at in zip(entries, starts):
        ver, flags = e['ver'], e.get('flags', 0)
        if ver == 1:
            continue
        if ver >= 3 and flags & 0x2:
            struct.pack_into('<H', out, at + 12, len(out) - at)
            out += utf16(e['special']) + b'\0\0'
            names = e.get('names', [])
            struct.pack_into('<HH', out, at + 14, len(names), len(out) - at)
            for n in names:
                out += utf16(n) + b'\0\0'
            continue
        slot = 16 if ver == 2 else 12
        for k, key in enumerate(('path', 'alt', 'net')):
            struct.pack_into('<H', out, at + slot + 2 * k, len(out) - at)
            out += utf16(e[key]) + b'\0\0'
    return bytes(out)


def dfs_seeds():
    """Answers to FSCTL_DFS_GET_REFERRALS.  fuzz_proto_dfs decodes each as
    the answer to "\\srv\\dfs\\link\\ddd..." (any even PathConsumed up
    to 1024 fits), to "\\srv\\dfs\\l\u00efnk\U0001F600\\x", and to ""."""
    R, S, T = 0x1, 0x2, 0x4
    root = '\\srv\\dfs'
    link = '\\srv\\dfs\\l\u00efnk\U0001F600'
    return {
        # a stand-alone root, two targets in one target set
        'v4_root': dfs_referral(2 * len(root), R | S, [
            dict(ver=4, type=1, flags=0x4, ttl=300, path=root, alt=root, net='\\fs1\\dfs'),
            dict(ver=4, type=1, ttl=300, path=root, alt=root, net='\\fs2\\dfs')]),
        # two target sets of a link
        'v4_link_sets': dfs_referral(2 * len('\\srv\\dfs\\link'), S | T, [
            dict(ver=4, flags=0x4, ttl=1800, path='\\srv\\dfs\\link',
                 alt='\\srv\\dfs\\link', net='\\fs1\\share\\a'),
            dict(ver=4, flags=0x4, ttl=1800, path='\\srv\\dfs\\link',
                 alt='\\srv\\dfs\\link', net='\\fs2\\share\\a'),
            dict(ver=4, ttl=1800, path='\\srv\\dfs\\link', alt='\\srv\\dfs\\link',
                 net='\\fs3\\share\\a')]),
        # a link under a non-ASCII path (PathConsumed: 15 units)
        'v3_link_nonascii': dfs_referral(2 * 15, S, [
            dict(ver=3, ttl=1800, path=link, alt=link, net='\\fs3\\share\\sub')]),
        # a domain referral: domain names, no DCs, one entry padded
        'v3_domain': dfs_referral(0, 0, [
            dict(ver=3, flags=0x2, ttl=600, special='CORP'),
            dict(ver=3, flags=0x2, ttl=600, special='corp.example.com', pad=16)]),
        # a DC referral: one entry, the DCs back to back
        'v3_dc': dfs_referral(0, 0, [
            dict(ver=3, flags=0x2, ttl=600, special='\\corp.example.com',
                 names=['\\dc1.corp.example.com', '\\dc2.corp.example.com'])]),
        'v2': dfs_referral(2 * len('\\srv\\dfs\\link'), S, [
            dict(ver=2, ttl=900, path='\\srv\\dfs\\link', alt='\\srv\\dfs\\link',
                 net='\\fs1\\a')]),
        'v1': dfs_referral(2 * len(root), R, [
            dict(ver=1, type=1, net='\\fs1\\dfs'), dict(ver=1, type=1, net='\\fs2\\dfs')]),
        'no_referrals': struct.pack('<HHI', 0, 0, 0),
    }

# ccd8c074-d0e5-4a40-92b4-d074faa6ba28 (witness) and 8a885d04-1ceb-11c9-9fe8-08002b104860
# (NDR) as they go on the wire: the first three fields little-endian
WITNESS_UUID = bytes.fromhex('74c0d8cce5d0404a92b4d074faa6ba28')
NDR_UUID = bytes.fromhex('045d888aeb1cc9119fe808002b104860')


def rpc_pdu(ptype, body, call_id=1, flags=3, auth=None):
    """A connection-oriented PDU ([C706] 12.6.3.1): version 5.0, little-endian
    drep, frag_length and auth_length filled in; auth = (type, level,
    context, token) adds the sec_trailer after padding the body to 16."""
    trailer = b''
    if auth:
        pad = -len(body) % 16
        body += bytes(pad)
        trailer = struct.pack('<BBBBI', auth[0], auth[1], pad, 0, auth[2]) + auth[3]
    n = 16 + len(body) + len(trailer)
    return (struct.pack('<BBBB4sHHI', 5, 0, ptype, flags, b'\x10\0\0\0', n,
                        len(auth[3]) if auth else 0, call_id) + body + trailer)


def rpc_response(stub, call_id=1, flags=3, auth=None):
    return rpc_pdu(2, struct.pack('<IHBB', len(stub), 0, 0, 0) + stub, call_id, flags, auth)


def bind_ack(port, results, ptype=12):
    """bind_ack / alter_context_resp: max frags, assoc group, sec_addr (the
    port as a string and its NUL), pad to 4, the results."""
    sec = port + b'\0'
    body = struct.pack('<HHIH', 4280, 4280, 0x53f0, len(sec)) + sec
    body += bytes(-(16 + len(body)) % 4)
    body += struct.pack('<B3x', len(results))
    for result, reason, uuid, ver in results:
        body += struct.pack('<HH', result, reason) + uuid + struct.pack('<I', ver)
    return rpc_pdu(ptype, body)


def tower(port, ip, uuid=WITNESS_UUID, major=1, minor=1, prot=0x07):
    """An ncacn_ip_tcp tower ([C706] appendix L): interface, NDR, 0x0b,
    TCP port (big-endian), IPv4 address."""
    def floor(lhs, rhs):
        return struct.pack('<H', len(lhs)) + lhs + struct.pack('<H', len(rhs)) + rhs
    return (struct.pack('<H', 5) +
            floor(b'\x0d' + uuid + struct.pack('<H', major), struct.pack('<H', minor)) +
            floor(b'\x0d' + NDR_UUID + struct.pack('<H', 2), struct.pack('<H', 0)) +
            floor(b'\x0b', struct.pack('<H', 0)) +
            floor(bytes([prot]), struct.pack('>H', port)) +
            floor(b'\x09', bytes(ip)))


def epm_map_rsp(towers, status=0, max_towers=4):
    """ept_map's [out]s: entry_handle, num_towers, the conformant varying
    array of full pointers, each twr_t (max_count, tower_length, octets,
    padding to 4), status."""
    out = bytes(20) + struct.pack('<IIII', len(towers), max_towers, 0, len(towers))
    out += b''.join(struct.pack('<I', 3 + i) for i in range(len(towers)))
    for t in towers:
        out += struct.pack('<II', len(t), len(t)) + t
        out += bytes(-len(out) % 4)
    return out + struct.pack('<I', status)


def dcerpc_seeds():
    """fuzz_proto_dcerpc reads each input as a PDU stream, as an ept_map
    answer's stub and as a tower."""
    stub = bytes(range(40))
    return {
        'bind_ack': bind_ack(b'49667', [(0, 0, NDR_UUID, 2), (2, 2, bytes(16), 0)]),
        'alter_resp_auth': rpc_pdu(15, bind_ack(b'', [(0, 0, NDR_UUID, 2)])[16:],
                                   auth=(9, 6, 1, bytes(range(16)))),
        'bind_nak': rpc_pdu(13, struct.pack('<HBBB', 4, 1, 5, 0)),
        'response': rpc_response(stub),
        'response_auth': rpc_response(stub[:5], auth=(10, 6, 0, bytes(16))),
        'fault': rpc_pdu(3, struct.pack('<IHBBII', 0, 0, 0, 0, 0x1c010002, 0)),
        'fault_auth': rpc_pdu(3, struct.pack('<IHBBII', 0, 0, 0, 0, 5, 0),
                              auth=(10, 5, 0x53524d42, bytes(range(16)))),
        'request_object_auth': rpc_pdu(0, struct.pack('<IHH', 5, 0, 3) + bytes(range(16)) +
                                       stub[:5], flags=0x83,
                                       auth=(10, 6, 0x53524d42, bytes(16))),
        'auth3': rpc_pdu(16, bytes(4), auth=(10, 5, 1, b'NTLMSSP\0\3\0\0\0')),
        'fragments': (rpc_response(stub[:16], flags=1) + rpc_response(stub[16:32], flags=0) +
                      rpc_response(stub[32:], flags=2)),
        'epm_map': epm_map_rsp([tower(0, [10, 0, 0, 5], prot=0x0f),
                                tower(49667, [10, 0, 0, 5])]),
        'epm_not_registered': epm_map_rsp([], 0x16c9a0d6),
        'tower': tower(49667, [192, 168, 1, 20]),
    }


def witness_iface(name, version, state, ipv4, ipv6, flags):
    """WITNESS_INTERFACE_INFO ([MS-SWN] 2.2.2.5): 260 WCHARs, Version, State,
    2 bytes of NDR padding, IPV4 (network order), IPV6, Flags: 552 bytes."""
    n = utf16(name) + b'\0\0'
    return (n + bytes(520 - len(n)) + struct.pack('<IH2x', version, state) + bytes(ipv4) +
            bytes(ipv6) + struct.pack('<I', flags))


def witness_notify(mtype, messages, werror=0):
    """RESP_ASYNC_NOTIFY ([MS-SWN] 2.2.2.4) behind its unique pointer: the
    MessageBuffer a conformant array of Length bytes, then the WERROR."""
    buf = b''.join(messages)
    out = struct.pack('<IIIII', 0x20000, mtype, len(buf), len(messages), 0x20004)
    out += struct.pack('<I', len(buf)) + buf
    return out + bytes(-len(out) % 4) + struct.pack('<I', werror)


def resource_change(change, name):
    n = utf16(name) + b'\0\0'
    return struct.pack('<II', 8 + len(n), change) + n


def ipaddr_list(addrs):
    """IPADDR_INFO_LIST: Length (of the whole list), Reserved,
    IPAddrInstances, then Flags, IPV4, IPV6 (network order)."""
    out = struct.pack('<III', 12 + 24 * len(addrs), 0, len(addrs))
    for flags, v4, v6 in addrs:
        out += struct.pack('<I', flags) + bytes(v4) + bytes(v6)
    return out


def witness_seeds():
    """fuzz_proto_witness reads each input as the stub of every answer, and
    cuts RegisterEx's names from it."""
    v6 = bytes.fromhex('fd000000000000000000000000000002')
    ifaces = (witness_iface('clu\u00e9ster', 0x00020000, 1, [192, 168, 1, 10], bytes(16), 1) +
              witness_iface('node2', 0x00010001, 0xff, bytes(4), v6, 6))
    online = [(0x9, [10, 0, 0, 1], bytes(16)), (0xa, [0, 0, 0, 0], v6)]
    return {
        'interface_list': struct.pack('<IIII', 0x20000, 2, 0x20004, 2) + ifaces + bytes(4),
        'interface_list_null': struct.pack('<II', 0, 0x103),
        'register': bytes(range(20)) + bytes(4),
        'unregister': struct.pack('<I', 0x490),
        'resource_change': witness_notify(1, [resource_change(0xff, '\\\\srv\\share'),
                                              resource_change(1, 'fs\U0001F600')]),
        'client_move': witness_notify(2, [ipaddr_list(online)]),
        'share_move': witness_notify(3, [ipaddr_list(online[:1]), ipaddr_list([])]),
        'ip_change': witness_notify(4, [ipaddr_list([(0x11, [10, 0, 0, 1], bytes(16))])]),
        'notify_null': struct.pack('<II', 0, 0x5aa),
        'names': b'srv\0data\0192.168.1.10\0client-\xc3\xa9',
    }


def main(only=None):
    mxac = (b'MxAc', struct.pack('<II', 0, 0x1f01ff))
    qfid = (b'QFid', bytes(range(32)))
    lease = (b'RqLs', bytes(16) + struct.pack('<IIQ', 7, 0, 0))
    seeds = {
        'proto_hdr': {
            'create_qinfo_close': compound(create([mxac]), query_info_rsp(file_all_info()),
                                           close_rsp()),
            'negotiate': negotiate(),
            'error_pending': error_rsp(14, 0x103),
            'read': read_rsp(b'hello'),
            'querydir': query_dir_rsp(),
        },
        'proto_negotiate': {'smb311': negotiate(), 'smb302': negotiate(0x0302),
                            'smb311_more_ctxs': negotiate(items=NEG_CTXS_MORE)},
        'proto_session': {
            'more_processing': session(0xC0000016, bytes.fromhex('a181b53081b2a0030a0101')),
            'final': session(0, b'', 1),
        },
        'proto_create': {
            'mxac_qfid': create([mxac, qfid]),
            'lease': create([lease]),
            'plain': create([]),
        },
        'proto_io': {
            'read': read_rsp(b'0123456789abcdef'),
            'write': write_rsp(65536),
            'close': close_rsp(),
            'ioctl': ioctl_rsp(struct.pack('<I', 0x2f) + bytes(16) + struct.pack('<HH', 1, 0x311)),
            'qinfo_all': query_info_rsp(file_all_info()),
            'qinfo_fsfull': query_info_rsp(struct.pack('<QQQII', 100, 50, 49, 8, 512)),
            'querydir': query_dir_rsp(),
        },
        'proto_error': {
            'not_found': error_rsp(5, 0xC0000034),
            'too_small': error_rsp(16, 0xC0000023, struct.pack('<I', 40)),
            'symlink': error_rsp(5, 0x8000002D, struct.pack('<II', 32, 0) + bytes(24)),
        },
        'proto_netif': {
            'v4_v6': netif_chain([(1, 0x3, 10**10, v4('10.77.1.1')),
                                  (2, 0x1, 10**9, v6('fd00::1', 3))]),
            'one_v4': netif_chain([(7, 0x1, 10**9, v4('127.0.0.1'))]),
            'unknown_family': netif_chain([(1, 0, 0, struct.pack('<H', 0x1234) + bytes(126)),
                                           (2, 0x2, 25 * 10**9, v4('10.99.1.1'))]),
            # what the netns fixture's Samba advertises for four links
            'four_links': netif_chain([(10 + i, 0x1, 10**9, v4(f'10.77.{i}.1'))
                                       for i in range(1, 5)]),
            'padded_ports': netif_chain([(1, 0x1, 10**9, v4('192.0.2.1', 445)),
                                         (1, 0x1, 10**9, v6('fe80::1', 2, 5445))], stride=160),
        },
        'proto_transform': {
            # TRANSFORM_HEADER + (fake) ciphertext of one READ response
            'one_pdu': transform(hdr(8, sess=0x1000000001) + bytes(17)),
            'compound': transform(hdr(5, next_cmd=96) + bytes(32) + hdr(6) + bytes(60)),
            'short_size': transform(hdr(4) + bytes(4), size_delta=-1),
            'bad_flags': transform(hdr(4) + bytes(4), flags=2),
        },
        'proto_utf16': {
            'ascii': utf16('file.txt'),
            'bmp_astral': utf16('\u00e9t\u00e9 \u20ac \U0001F600'),
            'nul_pad': utf16('share') + bytes(4),
        },
    }
    dir_names = ['.', '..', 'file.txt', 'Sous-répertoire', '\U0001F600.bin']
    seeds['proto_dirents'] = {
        f'class{c}': bytes([c]) + dir_buf(c, dir_names) for c in (1, 2, 3, 37, 38)}
    seeds['proto_dirents']['unknown_class'] = bytes([12]) + dir_buf(37, dir_names[:2])
    seeds['proto_dirents']['one_entry'] = bytes([37]) + dir_buf(37, ['x'])
    seeds['proto_info'] = {
        'basic': file_basic_info(),
        'standard': file_standard_info(),
        'internal': struct.pack('<Q', 0x123456789),
        'all': file_all_info(),
        'network_open': file_network_open_info(),
        'fs_full_size': fs_full_size_info(),
        'rsp_all': query_info_rsp(file_all_info()),
        'rsp_basic': query_info_rsp(file_basic_info()),
        'rsp_network_open': query_info_rsp(file_network_open_info()),
        'rsp_empty': query_info_rsp(b''),
    }
    netifs = netif_chain([(1, 0x3, 10**10, v4('10.77.1.1')), (2, 0x1, 10**9, v6('fd00::1', 3))])
    seeds['proto_small'] = {
        'tree_connect_disk': tree_connect_rsp(),
        'tree_connect_ipc': tree_connect_rsp(2, 0, 0, 0x1f00a9),
        'tree_disconnect': trivial_rsp(4),
        'logoff': trivial_rsp(2),
        'flush': trivial_rsp(7),
        'echo': trivial_rsp(13),
        'set_info': trivial_rsp(17, 2),
        'write': write_rsp(4096),
        'close': close_rsp(),
        'error_too_small': error_rsp(16, 0xC0000023, struct.pack('<I', 40)),
        'ioctl_validate': ioctl_rsp(struct.pack('<I', 0x2f) + bytes(16) +
                                    struct.pack('<HH', 1, 0x302)),
        'ioctl_netif': ioctl_rsp(netifs, FSCTL_QUERY_NETWORK_INTERFACE_INFO),
        'ioctl_netif_empty': ioctl_rsp(b'', FSCTL_QUERY_NETWORK_INTERFACE_INFO),
    }
    mech_types = der(0x30, OID_MSKRB5 + OID_KRB5 + OID_NTLM)
    hints = der(0xa3, der(0x30, der(0xa0, der(0x1b, b'not_defined_in_RFC4178@please_ignore'))))
    challenge = b'NTLMSSP\0' + struct.pack('<I', 2) + bytes(300)
    nested = b'\x05\x00'
    for _ in range(20):
        nested = der(0x30, nested)
    seeds['auth_asn1'] = {
        'negtokeninit2': der(0x60, OID_SPNEGO + der(0xa0, der(0x30, der(0xa0, mech_types) + hints))),
        'negtokenresp': der(0xa1, der(0x30, der(0xa0, der(0x0a, b'\x01')) +
                                      der(0xa1, OID_NTLM) + der(0xa2, der(0x04, challenge)))),
        'nested20': nested,
        'long_forms': (b'\x04\x84\x00\x00\x00\x03abc' + b'\x02\x05\x00\xff\xff\xff\xff' +
                       b'\x0a\x82\x00\x01\x02' + der(0x03, b'\x00\x80')),
        'integers': der(0x30, der(0x02, b'\x7f\xff\xff\xff') + der(0x02, b'\x00') +
                        der(0x0a, b'\x00\x80')),
    }
    dh2q = (b'DH2Q', struct.pack('<II', 60000, 0))
    seeds['proto_durable'] = {
        'oplock_break': hdr(18, mid=0xffffffffffffffff, sess=0) +
        struct.pack('<HBBIQQ', 24, 1, 0, 0, 0x11, 0x22),
        'lease_break': hdr(18, mid=0xffffffffffffffff, sess=0) +
        struct.pack('<HHII', 44, 1, 1, 0) + bytes(16) + struct.pack('<IIIII', 7, 1, 0, 0, 0),
        'create_dh2q': create([dh2q]),
        'create_mxac_dh2q_lease': create([mxac, dh2q, lease]),
    }
    key = bytes(range(1, 17))
    rqls_v2 = (b'RqLs', key + struct.pack('<IIQ', 7, 0, 0) + bytes(16) + struct.pack('<HH', 3, 0))
    seeds['proto_lease'] = {
        'lease_break_ack_required': hdr(18, mid=0xffffffffffffffff, sess=0) +
        struct.pack('<HHI', 44, 4, 1) + key + struct.pack('<IIIII', 7, 1, 0, 0, 0),
        'lease_break_r_to_none': hdr(18, mid=0xffffffffffffffff, sess=0) +
        struct.pack('<HHI', 44, 5, 0) + key + struct.pack('<IIIII', 1, 0, 0, 0, 0),
        'lease_break_rsp': hdr(18, mid=9) + struct.pack('<HHI', 36, 0, 0) + key +
        struct.pack('<IQ', 1, 0),
        'create_rqls_v1': create([lease]),
        'create_rqls_v2_dh2q': create([mxac, rqls_v2, dh2q]),
    }
    seeds['proto_fsctl'] = fsctl_seeds()
    seeds['proto_posix'] = posix_seeds(mxac)
    seeds['proto_dfs'] = dfs_seeds()
    seeds['proto_dcerpc'] = dcerpc_seeds()
    seeds['proto_witness'] = witness_seeds()
    for target, files in seeds.items():
        if only and target not in only:
            continue
        d = os.path.join(ROOT, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), 'wb') as f:
                f.write(data)
    return 0


if __name__ == '__main__':
    # mkseeds.py [TARGET...]: only those corpora (e.g. proto_dfs); all without
    sys.exit(main(sys.argv[1:]))
