/* common/cursor.c — bounds-checked reader and writer cursors (cursor.h).
 *
 * The decoders of SMB2, SMB Direct and NTLMSSP read through struct smb_rd:
 * a getter that would cross `end` sets a sticky -EBADMSG and returns 0, so a
 * parser can read a whole fixed structure and test `err` once.  struct
 * smb_wr is the mirror image for encoders, with a sticky -ENOSPC.
 */
#include "common/cursor.h"

#include <errno.h>
#include <string.h>

void smb_rd_init(struct smb_rd *r, const void *buf, size_t len)
{
	r->base = buf;
	r->p = buf;
	/* NULL + 0 is undefined; an empty reader of NULL has end == base. */
	r->end = buf ? (const uint8_t *)buf + len : NULL;
	r->err = (!buf && len) ? -EBADMSG : 0;
}

/* True when n more bytes can be read; otherwise marks the reader broken. */
static bool rd_need(struct smb_rd *r, size_t n)
{
	if (r->err)
		return false;
	if ((size_t)(r->end - r->p) < n) {
		r->err = -EBADMSG;
		return false;
	}
	return true;
}

uint8_t smb_rd_u8(struct smb_rd *r)
{
	if (!rd_need(r, 1))
		return 0;
	return *r->p++;
}

uint16_t smb_rd_u16(struct smb_rd *r)
{
	if (!rd_need(r, 2))
		return 0;
	uint16_t v = smb_le16(r->p);
	r->p += 2;
	return v;
}

uint32_t smb_rd_u32(struct smb_rd *r)
{
	if (!rd_need(r, 4))
		return 0;
	uint32_t v = smb_le32(r->p);
	r->p += 4;
	return v;
}

uint64_t smb_rd_u64(struct smb_rd *r)
{
	if (!rd_need(r, 8))
		return 0;
	uint64_t v = smb_le64(r->p);
	r->p += 8;
	return v;
}

void smb_rd_bytes(struct smb_rd *r, void *out, size_t n)
{
	if (!rd_need(r, n)) {
		if (n)
			memset(out, 0, n);
		return;
	}
	if (n) {
		memcpy(out, r->p, n);
		r->p += n;
	}
}

const uint8_t *smb_rd_ptr(struct smb_rd *r, size_t n)
{
	if (!rd_need(r, n))
		return NULL;
	const uint8_t *old = r->p;
	if (n) /* a NULL reader may be asked for 0 bytes; NULL + 0 is UB */
		r->p += n;
	return old;
}

void smb_rd_skip(struct smb_rd *r, size_t n)
{
	if (n && rd_need(r, n))
		r->p += n;
}

void smb_rd_seek(struct smb_rd *r, size_t off)
{
	if (r->err)
		return;
	if (off > (size_t)(r->end - r->base)) {
		r->err = -EBADMSG;
		return;
	}
	if (r->base)
		r->p = r->base + off;
}

uint16_t smb_rd_u16_at(struct smb_rd *r, size_t off)
{
	smb_rd_seek(r, off);
	return smb_rd_u16(r);
}

uint32_t smb_rd_u32_at(struct smb_rd *r, size_t off)
{
	smb_rd_seek(r, off);
	return smb_rd_u32(r);
}

uint64_t smb_rd_u64_at(struct smb_rd *r, size_t off)
{
	smb_rd_seek(r, off);
	return smb_rd_u64(r);
}

size_t smb_rd_left(const struct smb_rd *r)
{
	if (r->err)
		return 0;
	return (size_t)(r->end - r->p);
}

bool smb_rd_range_ok(const struct smb_rd *r, uint64_t off, uint64_t len)
{
	uint64_t total = (uint64_t)(r->end - r->base);
	return off <= total && len <= total - off;
}

void smb_wr_init(struct smb_wr *w, void *buf, size_t cap)
{
	w->base = buf;
	w->p = buf;
	w->end = buf ? (uint8_t *)buf + cap : NULL;
	w->err = (!buf && cap) ? -EINVAL : 0;
}

/* True when n more bytes fit; otherwise marks the writer full. */
static bool wr_need(struct smb_wr *w, size_t n)
{
	if (w->err)
		return false;
	if ((size_t)(w->end - w->p) < n) {
		w->err = -ENOSPC;
		return false;
	}
	return true;
}

void smb_wr_u8(struct smb_wr *w, uint8_t v)
{
	if (wr_need(w, 1))
		*w->p++ = v;
}

void smb_wr_u16(struct smb_wr *w, uint16_t v)
{
	if (!wr_need(w, 2))
		return;
	smb_put_le16(w->p, v);
	w->p += 2;
}

void smb_wr_u32(struct smb_wr *w, uint32_t v)
{
	if (!wr_need(w, 4))
		return;
	smb_put_le32(w->p, v);
	w->p += 4;
}

void smb_wr_u64(struct smb_wr *w, uint64_t v)
{
	if (!wr_need(w, 8))
		return;
	smb_put_le64(w->p, v);
	w->p += 8;
}

void smb_wr_bytes(struct smb_wr *w, const void *src, size_t n)
{
	if (!n || !wr_need(w, n))
		return;
	memcpy(w->p, src, n);
	w->p += n;
}

void smb_wr_zero(struct smb_wr *w, size_t n)
{
	if (!n || !wr_need(w, n))
		return;
	memset(w->p, 0, n);
	w->p += n;
}

void smb_wr_align(struct smb_wr *w, size_t a)
{
	if (a < 2 || w->err)
		return;
	size_t rem = smb_wr_len(w) % a;
	if (rem)
		smb_wr_zero(w, a - rem);
}

size_t smb_wr_len(const struct smb_wr *w)
{
	return (size_t)(w->p - w->base);
}
