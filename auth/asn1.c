/* auth/asn1.c — DER reader and writer (see asn1.h for the contract). */
#include "auth/asn1.h"

#include <errno.h>
#include <string.h>

static int rd_fail(struct asn1_rd *r)
{
	r->err = -EBADMSG;
	return r->err;
}

/* Parse the tag and length at r->p without consuming; on success
 * *hdrlen is the header size and *len the content size, both within bounds. */
static int parse_header(const struct asn1_rd *r, uint8_t *tag, size_t *hdrlen, size_t *len)
{
	const uint8_t *p = r->p;
	size_t avail, n;

	if (r->err || p >= r->end)
		return -EBADMSG;
	avail = (size_t)(r->end - p);
	if (avail < 2)
		return -EBADMSG;
	if ((p[0] & 0x1f) == 0x1f) /* high-tag-number form: not in SPNEGO */
		return -EBADMSG;
	*tag = p[0];
	if (p[1] < 0x80) {
		n = p[1];
		*hdrlen = 2;
	} else {
		size_t nbytes = p[1] & 0x7f;

		/* 0x80 is the indefinite form, which DER forbids. */
		if (nbytes == 0 || nbytes > 4 || avail < 2 + nbytes)
			return -EBADMSG;
		n = 0;
		for (size_t i = 0; i < nbytes; i++)
			n = (n << 8) | p[2 + i];
		*hdrlen = 2 + nbytes;
	}
	if (n > avail - *hdrlen)
		return -EBADMSG;
	*len = n;
	return 0;
}

int asn1_peek_tag(const struct asn1_rd *r)
{
	if (r->err || r->p >= r->end)
		return -1;
	return r->p[0];
}

int asn1_read(struct asn1_rd *r, uint8_t *tag, struct asn1_rd *content)
{
	size_t hdrlen, len;

	if (parse_header(r, tag, &hdrlen, &len))
		return rd_fail(r);
	content->p = r->p + hdrlen;
	content->end = content->p + len;
	content->err = 0;
	r->p = content->end;
	return 0;
}

int asn1_expect_raw(struct asn1_rd *r, uint8_t tag, struct asn1_rd *content, const uint8_t **raw,
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

int asn1_expect(struct asn1_rd *r, uint8_t tag, struct asn1_rd *content)
{
	return asn1_expect_raw(r, tag, content, NULL, NULL);
}

int asn1_optional(struct asn1_rd *r, uint8_t tag, struct asn1_rd *content)
{
	if (r->err)
		return r->err;
	if (asn1_peek_tag(r) != tag)
		return 0;
	return asn1_expect(r, tag, content) ? r->err : 1;
}

int asn1_read_small_uint(struct asn1_rd *r, uint8_t tag, int32_t *val)
{
	struct asn1_rd c;
	size_t n;
	uint32_t v = 0;

	if (asn1_expect(r, tag, &c))
		return r->err;
	n = (size_t)(c.end - c.p);
	/* Non-negative and at most 31 bits: a leading 0x00 is allowed for
	 * values with the top bit set. */
	if (n == 0 || n > 5 || (c.p[0] & 0x80))
		return rd_fail(r);
	if (n == 5 && c.p[0] != 0)
		return rd_fail(r);
	for (size_t i = 0; i < n; i++)
		v = (v << 8) | c.p[i];
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
