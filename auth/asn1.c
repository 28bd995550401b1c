/* auth/asn1.c — DER reader (on common/cursor.h) and writer; see asn1.h. */
#include "auth/asn1.h"

#include <errno.h>
#include <string.h>

/* A DER error: the cursor breaks (sticky) where it stands. */
static int rd_fail(struct smb_rd *r)
{
	r->err = -EBADMSG;
	return r->err;
}

/* Read one tag and length from @h (a copy of the caller's cursor) and take
 * the value off it; h->err says whether that worked. */
static void take_tlv(struct smb_rd *h, uint8_t *tag, struct smb_rd *content)
{
	uint8_t t = smb_rd_u8(h), lb = smb_rd_u8(h);
	size_t n = lb;

	if ((t & 0x1f) == 0x1f) { /* high-tag-number form: not in SPNEGO */
		rd_fail(h);
		return;
	}
	if (lb & 0x80) {
		size_t nbytes = lb & 0x7f;

		/* 0x80 is the indefinite form, which DER forbids. */
		if (nbytes == 0 || nbytes > 4) {
			rd_fail(h);
			return;
		}
		n = 0;
		for (size_t i = 0; i < nbytes; i++)
			n = (n << 8) | smb_rd_u8(h);
	}
	const uint8_t *v = smb_rd_ptr(h, n);
	if (h->err)
		return;
	*tag = t;
	smb_rd_init(content, v, n);
}

int asn1_peek_tag(const struct smb_rd *r)
{
	struct smb_rd t = *r;
	uint8_t tag = smb_rd_u8(&t);

	return t.err ? -1 : tag;
}

int asn1_read(struct smb_rd *r, uint8_t *tag, struct smb_rd *content)
{
	struct smb_rd h = *r;

	/* Read on a copy, so that a bad TLV moves nothing. */
	take_tlv(&h, tag, content);
	if (h.err)
		return rd_fail(r);
	*r = h;
	return 0;
}

int asn1_expect_raw(struct smb_rd *r, uint8_t tag, struct smb_rd *content, const uint8_t **raw,
                    size_t *rawlen)
{
	const uint8_t *start = r->p;
	uint8_t got;

	if (asn1_read(r, &got, content))
		return r->err;
	if (got != tag)
		return rd_fail(r);
	if (raw) {
		*raw = start;
		*rawlen = (size_t)(r->p - start);
	}
	return 0;
}

int asn1_expect(struct smb_rd *r, uint8_t tag, struct smb_rd *content)
{
	return asn1_expect_raw(r, tag, content, NULL, NULL);
}

int asn1_optional(struct smb_rd *r, uint8_t tag, struct smb_rd *content)
{
	if (r->err)
		return r->err;
	if (asn1_peek_tag(r) != tag)
		return 0;
	return asn1_expect(r, tag, content) ? r->err : 1;
}

int asn1_read_small_uint(struct smb_rd *r, uint8_t tag, int32_t *val)
{
	struct smb_rd c;
	size_t n;
	uint32_t v = 0;

	if (asn1_expect(r, tag, &c))
		return r->err;
	n = smb_rd_left(&c);
	if (n == 0 || n > 5)
		return rd_fail(r);
	for (size_t i = 0; i < n; i++) {
		uint8_t b = smb_rd_u8(&c);

		/* Non-negative and at most 31 bits: a leading 0x00 is allowed
		 * for values with the top bit set. */
		if (i == 0 && ((b & 0x80) || (n == 5 && b != 0)))
			return rd_fail(r);
		v = (v << 8) | b;
	}
	if (v > INT32_MAX)
		return rd_fail(r);
	*val = (int32_t)v;
	return 0;
}

/* ---- writer ------------------------------------------------------------- */

static bool wr_room(struct asn1_wr *w, size_t n)
{
	if (w->err)
		return false;
	if (n > w->cap - w->len) {
		w->err = -ENOSPC;
		return false;
	}
	return true;
}

size_t asn1_begin(struct asn1_wr *w, uint8_t tag)
{
	size_t mark = w->len;

	if (wr_room(w, 2)) {
		w->buf[w->len++] = tag;
		w->buf[w->len++] = 0;
	}
	return mark;
}

void asn1_end(struct asn1_wr *w, size_t mark)
{
	size_t content, extra;
	uint8_t *lenp;

	if (w->err)
		return;
	content = w->len - mark - 2;
	lenp = w->buf + mark + 1;
	if (content < 0x80) {
		*lenp = (uint8_t)content;
		return;
	}
	if (content > 0xffffffffu) {
		w->err = -ENOSPC;
		return;
	}
	extra = content <= 0xff ? 1 : content <= 0xffff ? 2 : content <= 0xffffff ? 3 : 4;
	if (!wr_room(w, extra))
		return;
	memmove(lenp + 1 + extra, lenp + 1, content);
	*lenp = (uint8_t)(0x80 | extra);
	for (size_t i = 0; i < extra; i++)
		lenp[1 + i] = (uint8_t)(content >> (8 * (extra - 1 - i)));
	w->len += extra;
}

void asn1_put_raw(struct asn1_wr *w, const void *der, size_t len)
{
	if (len == 0 || !wr_room(w, len))
		return;
	memcpy(w->buf + w->len, der, len);
	w->len += len;
}

void asn1_put(struct asn1_wr *w, uint8_t tag, const void *val, size_t len)
{
	size_t mark = asn1_begin(w, tag);

	asn1_put_raw(w, val, len);
	asn1_end(w, mark);
}

void asn1_put_enum(struct asn1_wr *w, uint8_t value)
{
	if (value & 0x80) {
		uint8_t v[2] = {0, value};

		asn1_put(w, ASN1_ENUMERATED, v, 2);
	} else {
		asn1_put(w, ASN1_ENUMERATED, &value, 1);
	}
}
