/* auth/spnego.c — SPNEGO NegTokenInit(2)/NegTokenResp codec on auth/asn1.c. */
#include "auth/spnego.h"

#include <errno.h>
#include <string.h>

#include "auth/asn1.h"
#include "common/cursor.h"

const uint8_t spnego_oid_spnego[6] = {0x2b, 0x06, 0x01, 0x05, 0x05, 0x02};
const uint8_t spnego_oid_ntlmssp[10] = {0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a};
const uint8_t spnego_oid_krb5[9] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02};
const uint8_t spnego_oid_ms_krb5[9] = {0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02};

/* [n] EXPLICIT wrapper around exactly one TLV with tag @inner. */
static int read_explicit(struct smb_rd *wrapper, uint8_t inner, struct smb_rd *content,
                         const uint8_t **raw, size_t *rawlen)
{
	if (asn1_expect_raw(wrapper, inner, content, raw, rawlen))
		return -EBADMSG;
	if (smb_rd_left(wrapper))
		return -EBADMSG;
	return 0;
}

int spnego_mech_list_find(const uint8_t *mech_types, size_t len, const uint8_t *oid, size_t oidlen,
                          int *index)
{
	struct smb_rd r, seq, o;
	int i = 0, found = 0;

	smb_rd_init(&r, mech_types, len);
	if (asn1_expect(&r, ASN1_SEQUENCE, &seq) || smb_rd_left(&r))
		return -EBADMSG;
	while (smb_rd_left(&seq)) {
		if (asn1_expect(&seq, ASN1_OID, &o))
			return -EBADMSG;
		if (!found && oid && smb_rd_left(&o) == oidlen && memcmp(o.p, oid, oidlen) == 0) {
			found = 1;
			if (index)
				*index = i;
		}
		i++;
	}
	return seq.err ? -EBADMSG : found;
}

int spnego_decode_init(const uint8_t *buf, size_t len, struct spnego_init *out)
{
	struct smb_rd r, gss, oid, tok, seq, f, v;
	const uint8_t *raw;
	size_t rawlen;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return -EBADMSG;
	smb_rd_init(&r, buf, len);
	if (asn1_peek_tag(&r) == ASN1_APPLICATION(0)) {
		if (asn1_expect(&r, ASN1_APPLICATION(0), &gss) || smb_rd_left(&r))
			return -EBADMSG;
		if (asn1_expect(&gss, ASN1_OID, &oid))
			return -EBADMSG;
		if (smb_rd_left(&oid) != sizeof(spnego_oid_spnego) ||
		    memcmp(oid.p, spnego_oid_spnego, sizeof(spnego_oid_spnego)) != 0)
			return -EBADMSG;
		r = gss;
	}
	if (asn1_expect(&r, ASN1_CONTEXT(0), &tok) || smb_rd_left(&r))
		return -EBADMSG;
	if (read_explicit(&tok, ASN1_SEQUENCE, &seq, NULL, NULL))
		return -EBADMSG;

	/* [0] mechTypes: keep the exact DER of the list for mechListMIC. */
	if (asn1_expect(&seq, ASN1_CONTEXT(0), &f) ||
	    read_explicit(&f, ASN1_SEQUENCE, &v, &raw, &rawlen))
		return -EBADMSG;
	if (spnego_mech_list_find(raw, rawlen, NULL, 0, NULL) < 0)
		return -EBADMSG;
	out->mech_types = raw;
	out->mech_types_len = rawlen;

	/* [1] reqFlags: ignored (a BIT STRING). */
	rc = asn1_optional(&seq, ASN1_CONTEXT(1), &f);
	if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_BIT_STRING, &v, NULL, NULL)))
		return -EBADMSG;
	/* [2] mechToken */
	rc = asn1_optional(&seq, ASN1_CONTEXT(2), &f);
	if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_OCTET_STRING, &v, NULL, NULL)))
		return -EBADMSG;
	if (rc == 1) {
		out->mech_token = v.p;
		out->mech_token_len = smb_rd_left(&v);
	}
	/* [3] is mechListMIC in RFC 4178's NegTokenInit and negHints (a
	 * SEQUENCE) in [MS-SPNG]'s NegTokenInit2; [4] is NegTokenInit2's MIC. */
	rc = asn1_optional(&seq, ASN1_CONTEXT(3), &f);
	if (rc < 0)
		return -EBADMSG;
	if (rc == 1) {
		if (asn1_peek_tag(&f) == ASN1_OCTET_STRING) {
			if (read_explicit(&f, ASN1_OCTET_STRING, &v, NULL, NULL))
				return -EBADMSG;
			out->mech_list_mic = v.p;
			out->mech_list_mic_len = smb_rd_left(&v);
		} else if (read_explicit(&f, ASN1_SEQUENCE, &v, NULL, NULL)) {
			return -EBADMSG;
		}
	}
	if (!out->mech_list_mic) {
		rc = asn1_optional(&seq, ASN1_CONTEXT(4), &f);
		if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_OCTET_STRING, &v, NULL, NULL)))
			return -EBADMSG;
		if (rc == 1) {
			out->mech_list_mic = v.p;
			out->mech_list_mic_len = smb_rd_left(&v);
		}
	}
	if (smb_rd_left(&seq) || seq.err)
		return -EBADMSG;
	return 0;
}

int spnego_decode_resp(const uint8_t *buf, size_t len, struct spnego_resp *out)
{
	struct smb_rd r, tok, seq, f, v;
	int32_t state;
	int rc;

	memset(out, 0, sizeof(*out));
	out->neg_state = SPNEGO_NEG_STATE_ABSENT;
	if (!buf)
		return -EBADMSG;
	smb_rd_init(&r, buf, len);
	if (asn1_expect(&r, ASN1_CONTEXT(1), &tok) || smb_rd_left(&r))
		return -EBADMSG;
	if (read_explicit(&tok, ASN1_SEQUENCE, &seq, NULL, NULL))
		return -EBADMSG;

	rc = asn1_optional(&seq, ASN1_CONTEXT(0), &f);
	if (rc < 0)
		return -EBADMSG;
	if (rc == 1) {
		if (asn1_read_small_uint(&f, ASN1_ENUMERATED, &state) || smb_rd_left(&f))
			return -EBADMSG;
		if (state > SPNEGO_REQUEST_MIC)
			return -EBADMSG;
		out->neg_state = state;
	}
	rc = asn1_optional(&seq, ASN1_CONTEXT(1), &f);
	if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_OID, &v, NULL, NULL)))
		return -EBADMSG;
	if (rc == 1) {
		out->supported_mech = v.p;
		out->supported_mech_len = smb_rd_left(&v);
	}
	rc = asn1_optional(&seq, ASN1_CONTEXT(2), &f);
	if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_OCTET_STRING, &v, NULL, NULL)))
		return -EBADMSG;
	if (rc == 1) {
		out->response_token = v.p;
		out->response_token_len = smb_rd_left(&v);
	}
	rc = asn1_optional(&seq, ASN1_CONTEXT(3), &f);
	if (rc < 0 || (rc == 1 && read_explicit(&f, ASN1_OCTET_STRING, &v, NULL, NULL)))
		return -EBADMSG;
	if (rc == 1) {
		out->mech_list_mic = v.p;
		out->mech_list_mic_len = smb_rd_left(&v);
	}
	if (smb_rd_left(&seq) || seq.err)
		return -EBADMSG;
	return 0;
}

static ssize_t wr_done(const struct asn1_wr *w)
{
	return w->err ? w->err : (ssize_t)w->len;
}

ssize_t spnego_encode_mech_types(uint8_t *buf, size_t cap, const uint8_t *const *oids,
                                 const size_t *oidlens, int count)
{
	struct asn1_wr w;
	size_t seq;

	asn1_wr_init(&w, buf, cap);
	seq = asn1_begin(&w, ASN1_SEQUENCE);
	for (int i = 0; i < count; i++)
		asn1_put(&w, ASN1_OID, oids[i], oidlens[i]);
	asn1_end(&w, seq);
	return wr_done(&w);
}

ssize_t spnego_encode_init(uint8_t *buf, size_t cap, const uint8_t *mech_types,
                           size_t mech_types_len, const uint8_t *token, size_t token_len)
{
	struct asn1_wr w;
	size_t app, init, seq, f;

	asn1_wr_init(&w, buf, cap);
	app = asn1_begin(&w, ASN1_APPLICATION(0));
	asn1_put(&w, ASN1_OID, spnego_oid_spnego, sizeof(spnego_oid_spnego));
	init = asn1_begin(&w, ASN1_CONTEXT(0));
	seq = asn1_begin(&w, ASN1_SEQUENCE);
	f = asn1_begin(&w, ASN1_CONTEXT(0));
	asn1_put_raw(&w, mech_types, mech_types_len);
	asn1_end(&w, f);
	if (token) {
		f = asn1_begin(&w, ASN1_CONTEXT(2));
		asn1_put(&w, ASN1_OCTET_STRING, token, token_len);
		asn1_end(&w, f);
	}
	asn1_end(&w, seq);
	asn1_end(&w, init);
	asn1_end(&w, app);
	return wr_done(&w);
}

ssize_t spnego_encode_resp(uint8_t *buf, size_t cap, int neg_state, const uint8_t *mech,
                           size_t mech_len, const uint8_t *token, size_t token_len,
                           const uint8_t *mic, size_t mic_len)
{
	struct asn1_wr w;
	size_t resp, seq, f;

	asn1_wr_init(&w, buf, cap);
	resp = asn1_begin(&w, ASN1_CONTEXT(1));
	seq = asn1_begin(&w, ASN1_SEQUENCE);
	if (neg_state != SPNEGO_NEG_STATE_ABSENT) {
		f = asn1_begin(&w, ASN1_CONTEXT(0));
		asn1_put_enum(&w, (uint8_t)neg_state);
		asn1_end(&w, f);
	}
	if (mech) {
		f = asn1_begin(&w, ASN1_CONTEXT(1));
		asn1_put(&w, ASN1_OID, mech, mech_len);
		asn1_end(&w, f);
	}
	if (token) {
		f = asn1_begin(&w, ASN1_CONTEXT(2));
		asn1_put(&w, ASN1_OCTET_STRING, token, token_len);
		asn1_end(&w, f);
	}
	if (mic) {
		f = asn1_begin(&w, ASN1_CONTEXT(3));
		asn1_put(&w, ASN1_OCTET_STRING, mic, mic_len);
		asn1_end(&w, f);
	}
	asn1_end(&w, seq);
	asn1_end(&w, resp);
	return wr_done(&w);
}
