/* tests/fuzz/auth/fuzz_auth_asn1.c — the DER reader under SPNEGO, on its own:
 * a generic walk of any TLV tree (constructed values opened to depth 16),
 * then each TLV written again with the writer and read back.  Checks: every
 * content cursor lies after its header and inside its parent; the reader
 * moves forward, and an error is sticky and moves nothing; the writer's
 * minimal encoding of a value reads back as the same tag and bytes;
 * asn1_optional agrees with asn1_peek_tag; a raw MechTypeList walk on the
 * whole input never reads out of it. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/asn1.h"
#include "auth/spnego.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *scratch;
static size_t scratch_cap;

/* Writes tag + content with the writer and reads it back. */
static void round_trip(uint8_t tag, const struct smb_rd *c)
{
	size_t n = (size_t)(c->end - c->p);
	struct asn1_wr w;
	struct smb_rd r, back;
	uint8_t got;

	if (scratch_cap < n + 8)
		abort();
	asn1_wr_init(&w, scratch, n + 8);
	asn1_put(&w, tag, c->p, n);
	/* DER: short form below 128, else the fewest length bytes. */
	size_t hdr = n < 0x80 ? 2 : n <= 0xff ? 3 : n <= 0xffff ? 4 : n <= 0xffffff ? 5 : 6;
	if (w.err || w.len != hdr + n)
		abort();
	smb_rd_init(&r, scratch, w.len);
	if (asn1_read(&r, &got, &back) || got != tag || (size_t)(back.end - back.p) != n ||
	    (n && memcmp(back.p, c->p, n) != 0) || smb_rd_left(&r))
		abort();
}

static void walk(struct smb_rd *r, int depth)
{
	const uint8_t *start = r->p, *end = r->end;

	while (smb_rd_left(r)) {
		const uint8_t *before = r->p;
		int peek = asn1_peek_tag(r);
		uint8_t tag;
		struct smb_rd c;

		/* optional() on a tag that is not next takes nothing */
		if (asn1_optional(r, (uint8_t)(peek ^ 0x01), &c) != 0 || r->p != before || r->err)
			abort();
		if (asn1_read(r, &tag, &c)) {
			if (r->err != -EBADMSG || r->p != before || asn1_peek_tag(r) != -1 ||
			    asn1_read(r, &tag, &c) != -EBADMSG)
				abort(); /* sticky, and nothing consumed */
			return;
		}
		if (tag != peek || c.err || c.p < before + 2 || c.p > c.end || c.end != r->p ||
		    r->p > end || before < start)
			abort();
		round_trip(tag, &c);
		if ((tag & 0x20) && depth < 16) {
			walk(&c, depth + 1);
		} else if (tag == ASN1_ENUMERATED || tag == 0x02) {
			struct smb_rd again;
			int32_t v;
			smb_rd_init(&again, before, (size_t)(r->p - before));
			if (asn1_read_small_uint(&again, tag, &v) == 0 && v < 0)
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1); /* exact size for ASan */
	struct smb_rd r;
	int idx;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (scratch_cap < size + 8) {
		free(scratch);
		scratch_cap = size + 8;
		scratch = malloc(scratch_cap);
		if (!scratch)
			abort();
	}
	smb_rd_init(&r, copy, size);
	walk(&r, 0);
	(void)spnego_mech_list_find(copy, size, spnego_oid_ntlmssp, sizeof(spnego_oid_ntlmssp),
	                            &idx);
	free(copy);
	return 0;
}
