/* auth/asn1.h — the smallest DER (X.690) reader and writer SPNEGO needs.
 *
 * Reader: the bounds-checked cursor of common/cursor.h (struct smb_rd); this
 * file only adds the tag-length layer on top of it and does no bounds
 * arithmetic of its own.  asn1_read() takes one TLV off the front and hands
 * back a nested cursor over its contents, so nesting is just more cursors;
 * nothing recurses.  A failure sets the cursor's sticky err (-EBADMSG) and
 * moves nothing; every later call fails too, so callers check err once at
 * the end (smb_rd_left() == 0 tells an empty or broken cursor).  Only
 * single-byte (low-number) tags and definite lengths of up to 4 length bytes
 * are accepted: that is all DER SPNEGO uses.
 *
 * Writer: forward into a caller's buffer.  asn1_begin() writes a tag and
 * reserves a one-byte length; asn1_end() fills it in, moving the contents up
 * when the long form is needed.  Overflow sets the sticky err (-ENOSPC).
 */
#ifndef SMBRDMA_AUTH_ASN1_H
#define SMBRDMA_AUTH_ASN1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/cursor.h"

/* Tags used by SPNEGO (class | constructed | number). */
#define ASN1_ENUMERATED     0x0a
#define ASN1_OCTET_STRING   0x04
#define ASN1_OID            0x06
#define ASN1_BIT_STRING     0x03
#define ASN1_GEN_STRING     0x1b
#define ASN1_SEQUENCE       0x30
#define ASN1_APPLICATION(n) (0x60 | (n)) /* [APPLICATION n] constructed */
#define ASN1_CONTEXT(n)     (0xa0 | (n)) /* [n] constructed (explicit) */

/* Tag of the next TLV, or -1 at the end or after an error. */
int asn1_peek_tag(const struct smb_rd *r);
/* Take the next TLV; *tag gets its tag, *content a fresh cursor over its
 * value (its base is the value's first byte). */
int asn1_read(struct smb_rd *r, uint8_t *tag, struct smb_rd *content);
/* Take the next TLV, which must carry @tag. */
int asn1_expect(struct smb_rd *r, uint8_t tag, struct smb_rd *content);
/* Like asn1_expect, but also give the whole encoding (tag, length, value). */
int asn1_expect_raw(struct smb_rd *r, uint8_t tag, struct smb_rd *content, const uint8_t **raw,
                    size_t *rawlen);
/* Take the next TLV only if it carries @tag: 1 taken, 0 absent (cursor
 * untouched), -EBADMSG on error. */
int asn1_optional(struct smb_rd *r, uint8_t tag, struct smb_rd *content);
/* An ENUMERATED or INTEGER that fits in 0..INT32_MAX. */
int asn1_read_small_uint(struct smb_rd *r, uint8_t tag, int32_t *val);

struct asn1_wr {
	uint8_t *buf;
	size_t cap;
	size_t len;
	int err;
};

static inline void asn1_wr_init(struct asn1_wr *w, uint8_t *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->err = 0;
}

/* Open a constructed (or any) TLV; returns a mark for asn1_end(). */
size_t asn1_begin(struct asn1_wr *w, uint8_t tag);
void asn1_end(struct asn1_wr *w, size_t mark);
/* A whole primitive TLV. */
void asn1_put(struct asn1_wr *w, uint8_t tag, const void *val, size_t len);
/* Bytes already DER-encoded. */
void asn1_put_raw(struct asn1_wr *w, const void *der, size_t len);
void asn1_put_enum(struct asn1_wr *w, uint8_t value);

#endif
