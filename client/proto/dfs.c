/* client/proto/dfs.c — DFS referral request and answer ([MS-DFSC] 2.2.2,
 * 2.2.4, 2.2.5; see dfs.h for the layouts and the contract). */
#include "client/proto/dfs.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "client/proto/smb2.h"

/* PathConsumed(2) NumberOfReferrals(2) ReferralHeaderFlags(4) */
#define HDR_LEN 8
/* Every entry starts VersionNumber(2) Size(2) ServerType(2)
 * ReferralEntryFlags(2); what follows, to the end of the fixed part: */
#define V1_FIXED 8 /* ShareName, inline up to Size */
/* Proximity(4) TimeToLive(4) DFSPathOffset(2) DFSAlternatePathOffset(2)
 * NetworkAddressOffset(2) */
#define V2_FIXED 22
/* TimeToLive(4) DFSPathOffset(2) DFSAlternatePathOffset(2)
 * NetworkAddressOffset(2) ServiceSiteGuid(16) */
#define V3_FIXED 34
/* TimeToLive(4) SpecialNameOffset(2) NumberOfExpandedNames(2)
 * ExpandedNameOffset(2), then 0 or 16 bytes of padding */
#define V3_NAMES_FIXED 18

/* The longest request path PathConsumed (16 bits) can count, in bytes of
 * UTF-16. */
#define PATH16_MAX 0xFFFEu

/* ---- the request ------------------------------------------------------------- */

ssize_t dfs_referral_req_encode(uint8_t *b, size_t cap, const char *path)
{
	if (!path)
		return -EINVAL;
	size_t n = strlen(path);
	/* "" (a domain referral) or one leading separator, not two */
	if (n > 0 && ((path[0] != '\\' && path[0] != '/') || path[1] == '\\' || path[1] == '/'))
		return -EINVAL;
	if (!b || cap < 4)
		return -ENOSPC;
	ssize_t w = smb_utf8_to_utf16le(path, n, b + 2, cap - 4, true);
	if (w < 0)
		return w;
	if ((size_t)w > PATH16_MAX)
		return -EINVAL;
	smb_put_le16(b, DFS_REFERRAL_LEVEL);
	smb_put_le16(b + 2 + w, 0);
	return w + 4;
}

/* ---- the answer -------------------------------------------------------------- */

/* The caller's string buffer: strings go in one after the other while they
 * fit; len counts what all of them need. */
struct strs {
	char *buf;
	size_t cap;
	size_t len;
	bool full; /* one did not fit: nothing more is written */
};

/* Where the request path's first consumed16 bytes of UTF-16 end in its
 * UTF-8: each code point is converted alone (the same conversion the
 * encoder made), so the walk can only stop between code points.  The whole
 * path is walked, so an invalid one is -EINVAL whatever consumed16 says.
 * -EBADMSG when no code point boundary lies at consumed16: odd, inside a
 * surrogate pair, or past the path's end. */
static int consumed_utf8(const char *path, uint16_t consumed16, size_t *consumed8)
{
	size_t i = 0, u16 = 0;
	bool found = consumed16 == 0;

	*consumed8 = 0;
	while (path[i]) {
		uint8_t c = (uint8_t)path[i], unit[4];
		size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
		/* the sequence must not run into the NUL; the helper judges the rest */
		if (strnlen(path + i, n) < n)
			return -EINVAL;
		ssize_t w = smb_utf8_to_utf16le(path + i, n, unit, sizeof(unit), true);
		if (w < 0)
			return -EINVAL;
		i += n;
		u16 += (size_t)w;
		if (u16 == consumed16) {
			*consumed8 = i;
			found = true;
		}
	}
	return found ? 0 : -EBADMSG;
}

/* The NUL-terminated UTF-16LE string at b[off, end): its UTF-8 copy goes to
 * s (*out; NULL when it does not fit) and *next is the offset just past its
 * NUL.  -EBADMSG when off is past end, no NUL unit comes before end (an odd
 * last byte cannot be one), or a surrogate is unpaired. */
static int take_str(const uint8_t *b, size_t off, size_t end, struct strs *s, const char **out,
                    size_t *next)
{
	size_t z = off;

	if (off > end)
		return -EBADMSG;
	while (end - z >= 2 && smb_le16(b + z) != 0)
		z += 2;
	if (end - z < 2)
		return -EBADMSG;
	ssize_t len8 = smb_utf16le_utf8_len(b + off, z - off);
	if (len8 < 0)
		return -EBADMSG;
	size_t u8 = (size_t)len8;
	*next = z + 2;
	*out = NULL;
	if (u8 + 1 > SIZE_MAX - s->len)
		return -EBADMSG;
	if (!s->full && u8 + 1 <= s->cap - s->len) {
		ssize_t w = smb_utf16le_to_utf8(b + off, z - off, s->buf + s->len, s->cap - s->len);
		if (w != (ssize_t)u8)
			return -EBADMSG; /* the check above and the helper disagree */
		*out = s->buf + s->len;
	} else {
		s->full = true;
	}
	s->len += u8 + 1;
	return 0;
}

/* The string an entry's 16-bit offset names: from the entry's start (eoff),
 * past its fixed part (fixed), ending inside the answer (len). */
static int take_at(const uint8_t *b, size_t len, size_t eoff, size_t fixed, uint16_t o,
                   struct strs *s, const char **out)
{
	size_t next;
	if (o < fixed)
		return -EBADMSG;
	return take_str(b, eoff + o, len, s, out, &next);
}

/* DFSPath, DFSAlternatePath, NetworkAddress: their offsets at e + at. */
static int take_paths(const uint8_t *b, size_t len, size_t eoff, size_t fixed, size_t at,
                      struct strs *s, struct dfs_referral *r)
{
	const uint8_t *e = b + eoff;
	int rc = take_at(b, len, eoff, fixed, smb_le16(e + at), s, &r->dfs_path);
	if (!rc)
		rc = take_at(b, len, eoff, fixed, smb_le16(e + at + 2), s, &r->dfs_alt_path);
	if (!rc)
		rc = take_at(b, len, eoff, fixed, smb_le16(e + at + 4), s, &r->network_address);
	return rc;
}

/* The NameListReferral form (2.2.5.3.2): SpecialName, then
 * NumberOfExpandedNames strings back to back from ExpandedNameOffset. */
static int take_names(const uint8_t *b, size_t len, size_t eoff, struct strs *s,
                      struct dfs_referral *r)
{
	const uint8_t *e = b + eoff;
	int rc = take_at(b, len, eoff, V3_NAMES_FIXED, smb_le16(e + 12), s, &r->special_name);
	if (rc)
		return rc;
	r->expanded_count = smb_le16(e + 14);
	if (r->expanded_count == 0)
		return 0; /* a domain referral: ExpandedNameOffset means nothing */
	uint16_t o = smb_le16(e + 16);
	if (o < V3_NAMES_FIXED)
		return -EBADMSG;
	size_t at = eoff + o;
	for (uint16_t k = 0; k < r->expanded_count; k++) {
		const char *name;
		rc = take_str(b, at, len, s, &name, &at);
		if (rc)
			return rc;
		if (k == 0)
			r->expanded_names = name;
	}
	return 0;
}

/* One entry of size bytes at b[eoff] (inside len), r->version already set. */
static int entry_decode(const uint8_t *b, size_t len, size_t eoff, size_t size, struct strs *s,
                        struct dfs_referral *r)
{
	const uint8_t *e = b + eoff;
	size_t next;

	if (size < V1_FIXED)
		return -EBADMSG;
	r->server_type = smb_le16(e + 4);
	uint16_t flags = smb_le16(e + 6); /* v1, v2: MUST be ignored */
	switch (r->version) {
	case 1:
		/* ShareName sits in the entry itself */
		return take_str(b, eoff + V1_FIXED, eoff + size, s, &r->network_address, &next);
	case 2:
		if (size < V2_FIXED)
			return -EBADMSG;
		r->ttl = smb_le32(e + 12);
		return take_paths(b, len, eoff, V2_FIXED, 16, s, r);
	default: /* 3, 4 */
		r->entry_flags = flags;
		r->name_list = (flags & DFS_ENTRY_NAME_LIST_REFERRAL) != 0;
		r->target_set_boundary =
		    r->version == 4 && (flags & DFS_ENTRY_TARGET_SET_BOUNDARY) != 0;
		if (size < (r->name_list ? V3_NAMES_FIXED : V3_FIXED))
			return -EBADMSG;
		r->ttl = smb_le32(e + 8);
		if (r->name_list)
			return take_names(b, len, eoff, s, r);
		return take_paths(b, len, eoff, V3_FIXED, 12, s, r);
	}
}

int dfs_referral_rsp_decode(const uint8_t *b, size_t len, const char *path,
                            struct dfs_referral_rsp *rsp, struct dfs_referral *out, size_t max,
                            char *strbuf, size_t strcap)
{
	if (!path || !rsp || (!out && max) || (!strbuf && strcap))
		return -EINVAL;
	memset(rsp, 0, sizeof(*rsp));
	/* An invalid path is the caller's mistake whatever the answer holds. */
	uint16_t consumed16 = b && len >= 2 ? smb_le16(b) : 0;
	int rc = consumed_utf8(path, consumed16, &rsp->path_consumed);
	if (rc == -EINVAL)
		return rc;
	if (!b || len < HDR_LEN || rc)
		return -EBADMSG;
	rsp->path_consumed16 = consumed16;
	rsp->count = smb_le16(b + 2);
	rsp->header_flags = smb_le32(b + 4);
	if (rsp->count == 0)
		return -ENOENT;

	struct strs s = {.buf = strbuf, .cap = strcap};
	size_t off = HDR_LEN;
	for (size_t i = 0; i < rsp->count; i++) {
		/* off <= len: the header fit, and each entry's Size did */
		if (len - off < 4)
			return -EBADMSG;
		uint16_t version = smb_le16(b + off);
		uint16_t size = smb_le16(b + off + 2);
		if (i == 0) {
			if (version < 1 || version > 4)
				return -EBADMSG;
			rsp->version = version;
		} else if (version != rsp->version) {
			return -EBADMSG;
		}
		if (size > len - off)
			return -EBADMSG;
		struct dfs_referral r = {.version = version};
		rc = entry_decode(b, len, off, size, &s, &r);
		if (rc)
			return rc;
		if (i < max)
			out[i] = r;
		off += size; /* size >= 8: forward, and at most to len */
	}
	rsp->str_len = s.len;
	if (rsp->count > max || s.full)
		return -E2BIG;
	return 0;
}

int dfs_target_split(const char *addr, char *buf, size_t cap, const char **server,
                     const char **share, const char **path)
{
	/* '/' is no separator in an SMB path and no character of a Windows
	 * name: kept, it would turn into one below (a server's "a/.." would
	 * reach the path as two components). */
	if (!addr || addr[0] != '\\' || addr[1] == '\\' || !addr[1] || strchr(addr, '/'))
		return -EINVAL;
	size_t n = strlen(addr);
	if (cap < n + 3)
		return -ENOSPC;
	/* server\0share\0path\0, the path's separators as '/' */
	const char *s = addr + 1, *e = strchr(s, '\\');
	if (!e || e == s || !e[1] || e[1] == '\\')
		return -EINVAL;
	const char *sh = e + 1, *e2 = strchr(sh, '\\');
	size_t sl = (size_t)(e - s), shl = e2 ? (size_t)(e2 - sh) : strlen(sh);
	const char *rest = e2 ? e2 + 1 : "";
	size_t rl = strlen(rest);
	while (rl && rest[rl - 1] == '\\')
		rl--; /* "\\srv\\share\\" names the share's root */
	for (size_t i = 0; i < rl; i++)
		if (rest[i] == '\\' && (i == 0 || rest[i - 1] == '\\'))
			return -EINVAL;
	char *o = buf;
	memcpy(o, s, sl);
	o[sl] = '\0';
	*server = o;
	o += sl + 1;
	memcpy(o, sh, shl);
	o[shl] = '\0';
	*share = o;
	o += shl + 1;
	for (size_t i = 0; i < rl; i++)
		o[i] = rest[i] == '\\' ? '/' : rest[i];
	o[rl] = '\0';
	*path = o;
	return 0;
}
