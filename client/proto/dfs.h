/* client/proto/dfs.h — DFS referrals: the request a client sends to learn
 * where a DFS path really lives, and the server's answer.
 *
 * Layouts: [MS-DFSC] 2.2.2 REQ_GET_DFS_REFERRAL (MaxReferralLevel,
 * RequestFileName), 2.2.4 RESP_GET_DFS_REFERRAL (PathConsumed,
 * NumberOfReferrals, ReferralHeaderFlags, the referral entries, the string
 * buffer), 2.2.5.1 DFS_REFERRAL_V1, 2.2.5.2 DFS_REFERRAL_V2, 2.2.5.3
 * DFS_REFERRAL_V3 with 2.2.5.3.1 (NameListReferral 0: DFS path, alternate
 * path, network address) and 2.2.5.3.2 (NameListReferral 1: a domain name
 * and the DC names of a domain or DC referral), 2.2.5.4 DFS_REFERRAL_V4
 * (V3 plus TargetSetBoundary).  The request is the input, the answer the
 * output, of an IOCTL FSCTL_DFS_GET_REFERRALS ([MS-SMB2] 2.2.31, 3.2.4.20.3)
 * on the IPC$ share, FileId all ones.
 *
 * Contract: the rules of client/proto/smb2.h (sans-I/O, no allocation).  The
 * decoder checks every count, Size, offset and string against the buffer
 * and reads nothing outside it; a malformed answer is -EBADMSG.  Decoded
 * strings are UTF-8 copies in the caller's string buffer: nothing points into
 * the answer afterwards.
 */
#ifndef SMBRDMA_PROTO_DFS_H
#define SMBRDMA_PROTO_DFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The IOCTL's CtlCode ([MS-SMB2] 2.2.31). */
#define FSCTL_DFS_GET_REFERRALS 0x00060194u

/* The highest referral version we understand and ask for (MaxReferralLevel). */
#define DFS_REFERRAL_LEVEL 4

/* REQ_GET_DFS_REFERRAL for path: MaxReferralLevel 4, then path in UTF-16LE
 * and a NUL.  path is UTF-8 and NUL-terminated, in the form that goes on the
 * wire: one leading backslash and backslash separators, "\server\share" or
 * "\server\share\dir\file" ("\domain" for a DC referral, "" for a domain
 * referral).  A '/' is taken for a '\' and sent as one.  Returns the bytes
 * written (4 + 2 * UTF-16 units), -ENOSPC when cap is too small, -EINVAL for
 * invalid UTF-8, a non-empty path that does not start with exactly one
 * separator, or one longer than PathConsumed can count (32767 UTF-16 units). */
ssize_t dfs_referral_req_encode(uint8_t *b, size_t cap, const char *path);

/* ReferralHeaderFlags (2.2.4) */
#define DFS_HDR_REFERRAL_SERVERS 0x00000001u /* R: every target is a DFS root */
#define DFS_HDR_STORAGE_SERVERS  0x00000002u /* S: every target holds the data */
#define DFS_HDR_TARGET_FAILBACK  0x00000004u /* T: fail back to the first targets */
/* ServerType (2.2.5.1-2.2.5.3) */
#define DFS_SERVER_NON_ROOT 0x0000 /* link targets */
#define DFS_SERVER_ROOT     0x0001 /* root targets */
/* ReferralEntryFlags (2.2.5.3, 2.2.5.4) */
#define DFS_ENTRY_NAME_LIST_REFERRAL  0x0002 /* v3/v4: domain or DC referral */
#define DFS_ENTRY_TARGET_SET_BOUNDARY 0x0004 /* v4: first target of a target set */

/* One referral entry.  The strings are NUL-terminated UTF-8 in the caller's
 * string buffer; a string the entry's form does not have is NULL. */
struct dfs_referral {
	uint16_t version;         /* VersionNumber, 1..4, the same in every entry */
	uint16_t server_type;     /* DFS_SERVER_ROOT / DFS_SERVER_NON_ROOT, as sent */
	uint16_t entry_flags;     /* ReferralEntryFlags as sent (v3, v4; 0 for v1, v2) */
	bool name_list;           /* v3/v4 with NameListReferral: the second form */
	bool target_set_boundary; /* v4 only: TargetSetBoundary */
	uint32_t ttl;             /* TimeToLive in seconds (0 for v1, which has none) */
	/* v2, and v3/v4 without NameListReferral: the DFS root or link
	 * (DFSPath, DFSAlternatePath) and the target (NetworkAddress); v1:
	 * only network_address, its ShareName. */
	const char *dfs_path;
	const char *dfs_alt_path;
	const char *network_address;
	/* v3/v4 with NameListReferral: SpecialName (a domain) and
	 * NumberOfExpandedNames names (its DCs; none in a domain referral),
	 * back to back from expanded_names: each starts after the previous
	 * one's NUL.  expanded_names is NULL when there are none. */
	const char *special_name;
	uint16_t expanded_count;
	const char *expanded_names;
};

/* The referral header and what the entries needed. */
struct dfs_referral_rsp {
	/* PathConsumed as sent: bytes of the UTF-16 request path the referral
	 * covers (the leading backslash included). */
	uint16_t path_consumed16;
	/* The same prefix in bytes of the UTF-8 request path given to the
	 * decoder: path[0, path_consumed) is what the referral resolved. */
	size_t path_consumed;
	uint32_t header_flags; /* ReferralHeaderFlags (DFS_HDR_*), all 32 bits as sent */
	uint16_t count;        /* NumberOfReferrals */
	uint16_t version;      /* the entries' VersionNumber (0 when count is 0) */
	size_t str_len; /* bytes the entries' strings take in the string buffer, NULs included */
};

/* Decode RESP_GET_DFS_REFERRAL (b, len: the IOCTL's output) as the answer
 * to a request made for path (the UTF-8 path given to
 * dfs_referral_req_encode()).  Entries go to out[0..max), their strings to
 * strbuf (strcap bytes); rsp gets the header.
 *
 * The whole answer is checked before anything is trusted: the header fits;
 * PathConsumed is even, no longer than path's UTF-16 form (a '/' in path
 * counts as the '\' it went as) and does not end inside a surrogate pair;
 * NumberOfReferrals entries follow the header one after the other, each by
 * its Size, and each lies wholly inside len; every entry has the first
 * one's VersionNumber, which is 1..4, and a Size at least its version's
 * fixed part (v1 10 with a NUL, v2 22, v3/v4 34, or 18 with
 * NameListReferral); every string offset (from the start of its entry, any
 * alignment) lands at or after the end of that fixed part and inside len,
 * and every string, or each of the NumberOfExpandedNames names, ends with a
 * UTF-16 NUL before len (v1's ShareName before the end of its entry) and is
 * valid UTF-16.  ExpandedNameOffset is not read when there are no names.
 * Bytes no entry or string covers (Padding) are ignored.
 *
 * Returns:
 *   0        rsp, out[0..rsp->count) and their strings are set;
 *   -ENOENT  a well-formed answer with no referral (the spec's "no suitable
 *            target": STATUS_OBJECT_PATH_NOT_FOUND); rsp is set;
 *   -E2BIG   well-formed, but more entries than max or more string bytes than
 *            strcap: rsp->count and rsp->str_len say what a retry needs
 *            (out and strbuf hold partial, unusable results);
 *   -EBADMSG malformed, as above (rsp, out and strbuf unspecified);
 *   -EINVAL  path or rsp is NULL, path is not valid UTF-8, or out / strbuf
 *            is NULL with a non-zero capacity.
 * out may be NULL when max is 0, strbuf when strcap is 0 (a sizing call:
 * -E2BIG, or -ENOENT, tells what to allocate). */
int dfs_referral_rsp_decode(const uint8_t *b, size_t len, const char *path,
                            struct dfs_referral_rsp *rsp, struct dfs_referral *out, size_t max,
                            char *strbuf, size_t strcap);

/* A referral's NetworkAddress, "\server\share" or "\server\share\path",
 * split into NUL-terminated pieces in buf (cap bytes; the address's length
 * plus 3 always suffices): *server and *share as sent, *path the rest with
 * '/' for each backslash and no separator at either end ("" when there is
 * none).  0, or -EINVAL when addr is not in that form (no single leading
 * backslash, an empty server or share, an empty component in the path, a
 * '/' anywhere),
 * -ENOSPC when buf is too small. */
int dfs_target_split(const char *addr, char *buf, size_t cap, const char **server,
                     const char **share, const char **path);

#endif
