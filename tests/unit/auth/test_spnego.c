/* tests/unit/auth/test_spnego.c — SPNEGO codec and the smb_auth_step() flow.
 *
 * Real tokens come from the SMB 3.1.1 exchange printed in Microsoft's Open
 * Specifications blog post "SMB 2 and SMB 3 security in Windows 10: the
 * anatomy of signing and cryptographic keys" (Windows client and server).
 * The flow test plays the server itself, re-deriving every key from the
 * password, so both directions of the MIC checks are exercised.
 */
#include <errno.h>
#include <stdlib.h>

#include <talloc.h>

#include "auth/asn1.h"
#include "auth/auth.h"
#include "auth/auth_test.h"
#include "auth/ntlmssp.h"
#include "auth/spnego.h"
#include "common/crypto.h"
#include "common/cursor.h"
#include "tests/unit/check.h"

static uint8_t tmp[4096];

static size_t hex(const char *h, uint8_t *out)
{
	return check_hex(h, out, 4096);
}

/* Server NEGOTIATE response blob: NegTokenInit2 offering NEGOEX and NTLMSSP. */
static const char *win_neg_blob =
    "6082013c06062b0601050502a08201303082012ca01a3018060a2b06010401823702021e060a2b0601040182370202"
    "0aa282010c048201084e45474f45585453010000000000000060000000700000007c7cc0fd06d6362d02dde1cf343b"
    "fe292900f49750b4aa97934d9c4296b26e51fd370471b235e15a50dae15bd5489c8700000000000000006000000001"
    "00000000000000000000005c33530deaf90d4db2ec4ae3786ec3084e45474f45585453030000000100000040000000"
    "980000007c7cc0fd06d6362d02dde1cf343bfe295c33530deaf90d4db2ec4ae3786ec30840000000580000003056a0"
    "5430523027802530233121301f06035504031318546f6b656e205369676e696e67205075626c6963204b6579302780"
    "2530233121301f06035504031318546f6b656e205369676e696e67205075626c6963204b6579";
/* Client's first SESSION_SETUP blob: NegTokenInit with NTLMSSP NEGOTIATE. */
static const char *win_init = "604806062B0601050502A03E303CA00E300C060A2B06010401823702020AA22A"
                              "04284E544C4D5353500001000000978208E20000000000000000000000000000"
                              "0000060380250000000F";
/* Server's CHALLENGE in a NegTokenResp (accept-incomplete, NTLMSSP). */
static const char *win_challenge =
    "A181B03081ADA0030A0101A10C060A2B06010401823702020AA2819704819"
    "44E544C4D53535000020000000C000C003800000015828AE20D1D8BA31179D008"
    "000000000000000050005000440000000A0092270000000F5300550054003300"
    "3100310002000C0053005500540033003100310001000C005300550054003300"
    "3100310004000C0053005500540033003100310003000C005300550054003300"
    "3100310007000800A1A1F5ADCBAED00100000000";
/* Server's final token: accept-completed with mechListMIC. */
static const char *win_final = "A11B3019A0030A0100A3120410010000003B453CDC3524164200000000";
/* Client's AUTHENTICATE NegTokenResp (negState, responseToken, mechListMIC). */
static const char *win_auth = "A18201CB308201C7A0030A0101A28201AA048201A64E544C4D53535000030000"
                              "001800180090000000EE00EE00A80000000C000C00580000001A001A00640000"
                              "00120012007E0000001000100096010000158288E2060380250000000FECAC77"
                              "A5F385A8BF9C38C706EEEDDCD3530055005400330031003100610064006D0069"
                              "006E006900730074007200610074006F00720044005200490056004500520033"
                              "003100310000000000000000000000000000000000000000000000000063078E"
                              "B639FE03E20A231C3AE3BF23080101000000000000A1A1F5ADCBAED001BC4AD0"
                              "5F223CC90F0000000002000C0053005500540033003100310001000C00530055"
                              "00540033003100310004000C0053005500540033003100310003000C00530055"
                              "00540033003100310007000800A1A1F5ADCBAED0010600040002000000080030"
                              "0030000000000000000000000000300000B61FEFCAA857EA57BF1EDCEBF8974B"
                              "8E0EBA5A6DFD9D07A31D11B548F8C9D0CC0A0010000000000000000000000000"
                              "00000000000900160063006900660073002F0053005500540033003100310000"
                              "00000000000000000000003B9BDFF38F5EE8F9663F11A0F4C03A78A312041001"
                              "00000063775A9A5FD97F0600000000";

static void test_windows_tokens(void)
{
	uint8_t buf[1024], out[1024];
	struct spnego_init init;
	struct spnego_resp resp;
	struct ntlmssp_challenge c;
	size_t n;
	int idx = -1;
	ssize_t m;

	/* the server's NegTokenInit2: NEGOEX first, NTLMSSP second */
	n = hex(win_neg_blob, buf);
	CHECK_EQ(n, 320);
	CHECK_EQ(spnego_decode_init(buf, n, &init), 0);
	CHECK_EQ(spnego_mech_list_find(init.mech_types, init.mech_types_len, spnego_oid_ntlmssp,
	                               sizeof(spnego_oid_ntlmssp), &idx),
	         1);
	CHECK_EQ(idx, 1);
	CHECK_EQ(spnego_mech_list_find(init.mech_types, init.mech_types_len, spnego_oid_krb5,
	                               sizeof(spnego_oid_krb5), NULL),
	         0);
	CHECK(init.mech_token != NULL);
	CHECK_EQ(init.mech_token_len, 0x108);

	/* the client's NegTokenInit: decodes, and our encoder makes the same bytes */
	n = hex(win_init, buf);
	CHECK_EQ(spnego_decode_init(buf, n, &init), 0);
	CHECK_EQ(init.mech_token_len, 40);
	CHECK_MEM(init.mech_token, "NTLMSSP\0\1\0\0\0", 12);
	CHECK(init.mech_list_mic == NULL);
	const uint8_t *oids[1] = {spnego_oid_ntlmssp};
	const size_t lens[1] = {sizeof(spnego_oid_ntlmssp)};
	uint8_t mt[32];
	m = spnego_encode_mech_types(mt, sizeof(mt), oids, lens, 1);
	CHECK_EQ(m, 14);
	CHECK_EQ(init.mech_types_len, 14);
	CHECK_MEM(init.mech_types, mt, 14);
	m = spnego_encode_init(out, sizeof(out), mt, 14, init.mech_token, init.mech_token_len);
	CHECK_EQ(m, (ssize_t)n);
	CHECK_MEM(out, buf, n);

	/* CHALLENGE */
	n = hex(win_challenge, buf);
	CHECK_EQ(spnego_decode_resp(buf, n, &resp), 0);
	CHECK_EQ(resp.neg_state, SPNEGO_ACCEPT_INCOMPLETE);
	CHECK_EQ(resp.supported_mech_len, sizeof(spnego_oid_ntlmssp));
	CHECK_MEM(resp.supported_mech, spnego_oid_ntlmssp, sizeof(spnego_oid_ntlmssp));
	CHECK_EQ(resp.response_token_len, 0x94);
	CHECK(resp.mech_list_mic == NULL);
	CHECK_EQ(ntlmssp_challenge_decode(resp.response_token, resp.response_token_len, &c), 0);
	CHECK_EQ(c.flags, 0xe28a8215u);
	CHECK_EQ(c.target_name_len, 12);
	const uint8_t *v;
	uint16_t vl;
	CHECK_EQ(ntlmssp_av_find(c.target_info, c.target_info_len, MSV_AV_TIMESTAMP, &v, &vl), 1);
	CHECK_EQ(vl, 8);
	m = spnego_encode_resp(out, sizeof(out), resp.neg_state, resp.supported_mech,
	                       resp.supported_mech_len, resp.response_token,
	                       resp.response_token_len, NULL, 0);
	CHECK_EQ(m, (ssize_t)n);
	CHECK_MEM(out, buf, n);

	/* AUTHENTICATE (long-form lengths) round trip */
	n = hex(win_auth, buf);
	CHECK_EQ(n, 0x1cf);
	CHECK_EQ(spnego_decode_resp(buf, n, &resp), 0);
	CHECK_EQ(resp.neg_state, SPNEGO_ACCEPT_INCOMPLETE);
	CHECK(resp.supported_mech == NULL);
	CHECK_EQ(resp.response_token_len, 0x1a6);
	CHECK_EQ(resp.mech_list_mic_len, 16);
	m = spnego_encode_resp(out, sizeof(out), resp.neg_state, NULL, 0, resp.response_token,
	                       resp.response_token_len, resp.mech_list_mic, resp.mech_list_mic_len);
	CHECK_EQ(m, (ssize_t)n);
	CHECK_MEM(out, buf, n);

	/* final */
	n = hex(win_final, buf);
	CHECK_EQ(spnego_decode_resp(buf, n, &resp), 0);
	CHECK_EQ(resp.neg_state, SPNEGO_ACCEPT_COMPLETED);
	CHECK(resp.response_token == NULL);
	CHECK_EQ(resp.mech_list_mic_len, 16);
	CHECK_MEM(resp.mech_list_mic, "\1\0\0\0", 4);
}

/* Samba-style NegTokenInit2 built with the writer: negHints in [3]. */
static size_t samba_style_init(uint8_t *buf, size_t cap, bool with_ntlmssp)
{
	struct asn1_wr w;
	size_t app, t, seq, f, s2, h;
	static const char hint[] = "not_defined_in_RFC4178@please_ignore";

	asn1_wr_init(&w, buf, cap);
	app = asn1_begin(&w, ASN1_APPLICATION(0));
	asn1_put(&w, ASN1_OID, spnego_oid_spnego, sizeof(spnego_oid_spnego));
	t = asn1_begin(&w, ASN1_CONTEXT(0));
	seq = asn1_begin(&w, ASN1_SEQUENCE);
	f = asn1_begin(&w, ASN1_CONTEXT(0));
	s2 = asn1_begin(&w, ASN1_SEQUENCE);
	asn1_put(&w, ASN1_OID, spnego_oid_ms_krb5, sizeof(spnego_oid_ms_krb5));
	asn1_put(&w, ASN1_OID, spnego_oid_krb5, sizeof(spnego_oid_krb5));
	if (with_ntlmssp)
		asn1_put(&w, ASN1_OID, spnego_oid_ntlmssp, sizeof(spnego_oid_ntlmssp));
	asn1_end(&w, s2);
	asn1_end(&w, f);
	f = asn1_begin(&w, ASN1_CONTEXT(3));
	s2 = asn1_begin(&w, ASN1_SEQUENCE);
	h = asn1_begin(&w, ASN1_CONTEXT(0));
	asn1_put(&w, ASN1_GEN_STRING, hint, sizeof(hint) - 1);
	asn1_end(&w, h);
	asn1_end(&w, s2);
	asn1_end(&w, f);
	asn1_end(&w, seq);
	asn1_end(&w, t);
	asn1_end(&w, app);
	CHECK_EQ(w.err, 0);
	return w.len;
}

static void test_samba_style_init(void)
{
	uint8_t buf[256];
	struct spnego_init init;
	size_t n = samba_style_init(buf, sizeof(buf), true);

	CHECK_EQ(spnego_decode_init(buf, n, &init), 0);
	CHECK_EQ(spnego_mech_list_find(init.mech_types, init.mech_types_len, spnego_oid_ntlmssp,
	                               sizeof(spnego_oid_ntlmssp), NULL),
	         1);
	CHECK(init.mech_token == NULL);
	CHECK(init.mech_list_mic == NULL);
	/* the same without the GSS wrapper (bare [0]) */
	CHECK_EQ(buf[10], ASN1_CONTEXT(0));
	CHECK_EQ(spnego_decode_init(buf + 10, n - 10, &init), 0);
}

/* Every proper prefix of a valid token must be rejected, never read past. */
static void truncations(const uint8_t *tok, size_t n, bool init)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t *copy = malloc(i ? i : 1);
		struct spnego_init si;
		struct spnego_resp sr;

		memcpy(copy, tok, i);
		if (init)
			CHECK_EQ(spnego_decode_init(copy, i, &si), -EBADMSG);
		else
			CHECK_EQ(spnego_decode_resp(copy, i, &sr), -EBADMSG);
		free(copy);
	}
}

static void test_hostile(void)
{
	uint8_t buf[1024];
	struct spnego_init si;
	struct spnego_resp sr;
	size_t n;

	n = hex(win_neg_blob, buf);
	truncations(buf, n, true);
	n = hex(win_init, buf);
	truncations(buf, n, true);
	n = hex(win_challenge, buf);
	truncations(buf, n, false);
	n = hex(win_auth, buf);
	truncations(buf, n, false);
	n = hex(win_final, buf);
	truncations(buf, n, false);

	/* trailing garbage after the token */
	n = hex(win_final, buf);
	buf[n] = 0;
	CHECK_EQ(spnego_decode_resp(buf, n + 1, &sr), -EBADMSG);
	/* long-form lengths past the end, indefinite, and 5 length bytes */
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x84\x7f\xff\xff\xff\x30\x00", 8, &sr),
	         -EBADMSG);
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x82\x00\x02\x30\x00", 6, &sr), 0);
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x82\x00\x03\x30\x00", 6, &sr), -EBADMSG);
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x80\x30\x00\x00\x00", 6, &sr), -EBADMSG);
	CHECK_EQ(
	    spnego_decode_resp((const uint8_t *)"\xa1\x85\x00\x00\x00\x00\x02\x30\x00", 9, &sr),
	    -EBADMSG);
	/* inner length larger than the outer one */
	CHECK_EQ(
	    spnego_decode_resp((const uint8_t *)"\xa1\x02\x30\x05\xa0\x03\x0a\x01\x01", 9, &sr),
	    -EBADMSG);
	/* wrong tags */
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa0\x02\x30\x00", 4, &sr), -EBADMSG);
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x02\x31\x00", 4, &sr), -EBADMSG);
	CHECK_EQ(
	    spnego_decode_resp((const uint8_t *)"\xa1\x07\x30\x05\xa0\x03\x02\x01\x01", 9, &sr),
	    -EBADMSG);
	CHECK_EQ(spnego_decode_init((const uint8_t *)"\xa1\x02\x30\x00", 4, &si), -EBADMSG);
	/* high tag number form */
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xbf\x01\x02\x30\x00", 5, &sr), -EBADMSG);
	/* negState out of range, negative, too long */
	CHECK_EQ(
	    spnego_decode_resp((const uint8_t *)"\xa1\x07\x30\x05\xa0\x03\x0a\x01\x04", 9, &sr),
	    -EBADMSG);
	CHECK_EQ(
	    spnego_decode_resp((const uint8_t *)"\xa1\x07\x30\x05\xa0\x03\x0a\x01\xff", 9, &sr),
	    -EBADMSG);
	CHECK_EQ(spnego_decode_resp((const uint8_t *)"\xa1\x06\x30\x04\xa0\x02\x0a\x00", 8, &sr),
	         -EBADMSG);
	/* fields out of order */
	CHECK_EQ(spnego_decode_resp(
	             (const uint8_t *)"\xa1\x0c\x30\x0a\xa2\x03\x04\x01\x00\xa0\x03\x0a\x01\x01",
	             14, &sr),
	         -EBADMSG);
	/* two values inside one explicit tag */
	CHECK_EQ(spnego_decode_resp(
	             (const uint8_t *)"\xa1\x0a\x30\x08\xa0\x06\x0a\x01\x01\x0a\x01\x01", 12, &sr),
	         -EBADMSG);
	/* mechTypes holding something other than OIDs */
	CHECK_EQ(spnego_decode_init((const uint8_t *)"\xa0\x08\x30\x06\xa0\x04\x30\x02\x04\x00", 10,
	                            &si),
	         -EBADMSG);
	/* GSS wrapper with another OID */
	CHECK_EQ(spnego_decode_init((const uint8_t *)"\x60\x0b\x06\x03\x2b\x06\x01\xa0\x04\x30"
	                                             "\x02\xa0\x00",
	                            13, &si),
	         -EBADMSG);
	CHECK_EQ(spnego_decode_init(NULL, 0, &si), -EBADMSG);
	CHECK_EQ(spnego_decode_resp(NULL, 0, &sr), -EBADMSG);
	/* the writer reports overflow */
	CHECK_EQ(spnego_encode_resp(buf, 10, SPNEGO_ACCEPT_COMPLETED, NULL, 0, buf, 100, NULL, 0),
	         -ENOSPC);
}

/* DER writer: lengths at the short/long boundaries round-trip. */
static void test_asn1_lengths(void)
{
	static const size_t sizes[] = {0, 1, 127, 128, 255, 256, 65535, 65536, 70000};
	uint8_t *val = calloc(1, 70000), *buf = malloc(70100);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct asn1_wr w;
		struct smb_rd r, c, inner;
		uint8_t tag;
		size_t outer;

		asn1_wr_init(&w, buf, 70100);
		outer = asn1_begin(&w, ASN1_CONTEXT(2));
		asn1_put(&w, ASN1_OCTET_STRING, val, sizes[i]);
		asn1_end(&w, outer);
		CHECK_EQ(w.err, 0);
		smb_rd_init(&r, buf, w.len);
		CHECK_EQ(asn1_read(&r, &tag, &c), 0);
		CHECK_EQ(tag, ASN1_CONTEXT(2));
		CHECK_EQ(smb_rd_left(&r), 0);
		CHECK_EQ(asn1_expect(&c, ASN1_OCTET_STRING, &inner), 0);
		CHECK_EQ(smb_rd_left(&inner), sizes[i]);
		CHECK_EQ(smb_rd_left(&c), 0);
		/* and too small a buffer fails cleanly at every size */
		asn1_wr_init(&w, buf, sizes[i] + 3);
		outer = asn1_begin(&w, ASN1_CONTEXT(2));
		asn1_put(&w, ASN1_OCTET_STRING, val, sizes[i]);
		asn1_end(&w, outer);
		CHECK_EQ(w.err, -ENOSPC);
	}
	free(val);
	free(buf);
}

/* DER reader: which headers it takes, and that a refusal is sticky and
 * consumes nothing. */
static void test_asn1_reader(void)
{
	static const struct {
		const char *der;
		size_t len;
		int rc;        /* of asn1_read */
		size_t hdr, n; /* header and value size when taken */
	} cases[] = {
	    {"\x04\x00", 2, 0, 2, 0},
	    {"\x04\x01\xaa", 3, 0, 2, 1},
	    {"\x04\x81\x01\xaa", 4, 0, 3, 1}, /* long form for a short length: taken */
	    {"\x04\x84\x00\x00\x00\x01\xaa", 7, 0, 6, 1},
	    {"\x04", 1, -EBADMSG, 0, 0},                             /* no length */
	    {"\x04\x02\xaa", 3, -EBADMSG, 0, 0},                     /* value runs past the end */
	    {"\x04\x80\x00\x00", 4, -EBADMSG, 0, 0},                 /* indefinite form */
	    {"\x04\x85\x00\x00\x00\x00\x01\xaa", 8, -EBADMSG, 0, 0}, /* 5 length bytes */
	    {"\x04\x82\x00", 3, -EBADMSG, 0, 0},                     /* length bytes cut short */
	    {"\x04\x84\xff\xff\xff\xff\xaa", 7, -EBADMSG, 0, 0},
	    {"\x1f\x01\x00", 3, -EBADMSG, 0, 0}, /* high-tag-number form */
	    {"\xbf\x01\x00", 3, -EBADMSG, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const uint8_t *der = (const uint8_t *)cases[i].der;
		struct smb_rd r, c;
		uint8_t tag;

		smb_rd_init(&r, der, cases[i].len);
		CHECK_EQ(asn1_peek_tag(&r), der[0]);
		CHECK_EQ(asn1_read(&r, &tag, &c), cases[i].rc);
		if (cases[i].rc == 0) {
			CHECK_EQ(tag, der[0]);
			CHECK(c.p == der + cases[i].hdr);
			CHECK_EQ(smb_rd_left(&c), cases[i].n);
			CHECK_EQ(c.err, 0);
			CHECK(r.p == der + cases[i].hdr + cases[i].n);
			continue;
		}
		CHECK_EQ(r.err, -EBADMSG);
		CHECK(r.p == der);
		CHECK_EQ(asn1_peek_tag(&r), -1);
		CHECK_EQ(asn1_optional(&r, der[0], &c), -EBADMSG);
		CHECK_EQ(asn1_read(&r, &tag, &c), -EBADMSG);
		CHECK(r.p == der);
	}

	/* asn1_optional: absent takes nothing; a wrong tag in expect breaks */
	struct smb_rd r, c;
	smb_rd_init(&r, "\x04\x00", 2);
	CHECK_EQ(asn1_optional(&r, ASN1_OID, &c), 0);
	CHECK_EQ(smb_rd_left(&r), 2);
	CHECK_EQ(asn1_optional(&r, ASN1_OCTET_STRING, &c), 1);
	CHECK_EQ(smb_rd_left(&r), 0);
	CHECK_EQ(asn1_peek_tag(&r), -1);
	smb_rd_init(&r, "\x04\x00", 2);
	CHECK_EQ(asn1_expect(&r, ASN1_OID, &c), -EBADMSG);
	CHECK_EQ(r.err, -EBADMSG);

	/* small unsigned values: 0..INT32_MAX, a leading zero allowed */
	static const struct {
		const char *der;
		size_t len;
		int rc;
		int32_t v;
	} ints[] = {
	    {"\x02\x01\x00", 3, 0, 0},
	    {"\x02\x01\x7f", 3, 0, 127},
	    {"\x02\x02\x00\x80", 4, 0, 128},
	    {"\x02\x04\x7f\xff\xff\xff", 6, 0, INT32_MAX},
	    {"\x02\x05\x00\x7f\xff\xff\xff", 7, 0, INT32_MAX},
	    {"\x02\x05\x00\x80\x00\x00\x00", 7, -EBADMSG, 0}, /* 2^31 */
	    {"\x02\x05\x01\x00\x00\x00\x00", 7, -EBADMSG, 0},
	    {"\x02\x06\x00\x00\x00\x00\x00\x01", 8, -EBADMSG, 0},
	    {"\x02\x01\x80", 3, -EBADMSG, 0}, /* negative */
	    {"\x02\x00", 2, -EBADMSG, 0},
	    {"\x0a\x01\x01", 3, -EBADMSG, 0}, /* not the tag asked for */
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int32_t v = -1;

		smb_rd_init(&r, ints[i].der, ints[i].len);
		CHECK_EQ(asn1_read_small_uint(&r, 0x02, &v), ints[i].rc);
		CHECK_EQ(r.err, ints[i].rc);
		if (ints[i].rc == 0)
			CHECK_EQ(v, ints[i].v);
	}
}

/* ---- the full flow against a server played here ------------------------ */

struct fake_server {
	const char *user, *password, *domain;
	uint8_t negotiate[64];
	size_t negotiate_len;
	uint8_t challenge[256];
	size_t challenge_len;
	uint8_t mech_types[64];
	size_t mech_types_len;
	uint8_t esk[16];
	struct ntlmssp_keys keys;
	bool key_exch;
};

static size_t fake_challenge(struct fake_server *s, bool timestamp)
{
	uint8_t *m = s->challenge;
	size_t n = 56;

	memset(m, 0, sizeof(s->challenge));
	memcpy(m, "NTLMSSP", 8);
	m[8] = 2;
	uint32_t flags = 0xe28a8215u;
	memcpy(m + 20, &flags, 4); /* little-endian host */
	hex("1122334455667788", m + 24);
	n += hex("02000800 4400 4f00 4d00 3100", m + n);
	if (timestamp)
		n += hex("0700 0800 00d0ae03fecbd001", m + n);
	n += hex("0000 0000", m + n);
	m[40] = (uint8_t)(n - 56);
	m[42] = (uint8_t)(n - 56);
	m[44] = 56;
	s->challenge_len = n;
	return n;
}

static int server_check_authenticate(struct fake_server *s, const uint8_t *a, size_t alen,
                                     bool *mic)
{
	uint16_t ntl = (uint16_t)(a[20] | a[21] << 8), kl = (uint16_t)(a[52] | a[53] << 8);
	uint32_t nto = (uint32_t)(a[24] | a[25] << 8), ko = (uint32_t)(a[56] | a[57] << 8);
	uint32_t flags = (uint32_t)(a[60] | a[61] << 8 | a[62] << 16 | (uint32_t)a[63] << 24);
	uint8_t nth[16], owf[16], proof[16], sbk[16], want_mic[16];
	const uint8_t *v;
	uint16_t vl;

	if (nto + ntl > alen || ko + kl > alen || ntl < 48)
		return -1;
	ntlmssp_nt_hash(s->password, nth);
	ntlmssp_ntowfv2(nth, s->user, s->domain, owf);
	struct iovec pin[2] = {{s->challenge + 24, 8}, {(void *)(a + nto + 16), ntl - 16u}};
	smb_hmac_md5(owf, 16, pin, 2, proof);
	if (memcmp(proof, a + nto, 16) != 0)
		return -2;
	struct iovec sin[1] = {{proof, 16}};
	smb_hmac_md5(owf, 16, sin, 1, sbk);
	s->key_exch = flags & NTLMSSP_NEGOTIATE_KEY_EXCH;
	if (s->key_exch) {
		if (kl != 16)
			return -3;
		smb_rc4(sbk, 16, a + ko, s->esk, 16);
	} else {
		memcpy(s->esk, sbk, 16);
	}
	ntlmssp_derive_keys(s->esk, flags, &s->keys);
	*mic = ntlmssp_av_find(a + nto + 44, ntl - 48u, MSV_AV_FLAGS, &v, &vl) == 1 && vl == 4 &&
	       (v[0] & 2);
	if (*mic) {
		uint8_t *copy = malloc(alen);

		memcpy(copy, a, alen);
		memset(copy + 72, 0, 16);
		struct iovec min[3] = {{s->negotiate, s->negotiate_len},
		                       {s->challenge, s->challenge_len},
		                       {copy, alen}};
		smb_hmac_md5(s->esk, 16, min, 3, want_mic);
		free(copy);
		if (memcmp(want_mic, a + 72, 16) != 0)
			return -4;
	}
	return 0;
}

enum final_kind { FINAL_GOOD_MIC, FINAL_BAD_MIC, FINAL_NO_MIC, FINAL_EMPTY, FINAL_REJECT };

static void run_flow(const uint8_t *neg_blob, size_t neg_blob_len, bool timestamp,
                     enum final_kind fk, int want_final)
{
	struct smb_auth_creds creds = {
	    .user = "bob",
	    .password = "hunter2",
	    .domain = "DOM1",
	    .workstation = "WS",
	    .server_name = "127.0.0.1",
	};
	struct fake_server s = {.user = "bob", .password = "hunter2", .domain = "DOM1"};
	void *mem = talloc_new(NULL);
	struct smb_auth *a;
	const uint8_t *out;
	size_t outlen, keylen;
	uint8_t key[32], buf[1024], mic[16];
	struct spnego_init si;
	struct spnego_resp sr;
	bool client_mic = false;
	ssize_t n;

	CHECK_EQ(smb_auth_ntlmssp_new(mem, &creds, &a), 0);
	CHECK(strcmp(smb_auth_mech_name(a), "NTLMSSP") == 0);
	keylen = sizeof(key);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), -EAGAIN);

	/* 1: NEGOTIATE */
	CHECK_EQ(smb_auth_step(a, neg_blob, neg_blob_len, &out, &outlen), SMB_AUTH_CONTINUE);
	CHECK_EQ(spnego_decode_init(out, outlen, &si), 0);
	CHECK_EQ(spnego_mech_list_find(si.mech_types, si.mech_types_len, spnego_oid_ntlmssp,
	                               sizeof(spnego_oid_ntlmssp), NULL),
	         1);
	CHECK(si.mech_token && si.mech_token_len == NTLMSSP_NEGOTIATE_LEN);
	if (!si.mech_token)
		goto out;
	CHECK_MEM(si.mech_token, "NTLMSSP\0\1\0\0\0", 12);
	memcpy(s.negotiate, si.mech_token, si.mech_token_len);
	s.negotiate_len = si.mech_token_len;
	memcpy(s.mech_types, si.mech_types, si.mech_types_len);
	s.mech_types_len = si.mech_types_len;

	/* 2: CHALLENGE -> AUTHENTICATE */
	fake_challenge(&s, timestamp);
	n = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_INCOMPLETE, spnego_oid_ntlmssp,
	                       sizeof(spnego_oid_ntlmssp), s.challenge, s.challenge_len, NULL, 0);
	CHECK(n > 0);
	CHECK_EQ(smb_auth_step(a, buf, (size_t)n, &out, &outlen), SMB_AUTH_CONTINUE);
	CHECK_EQ(spnego_decode_resp(out, outlen, &sr), 0);
	CHECK(sr.response_token != NULL);
	if (!sr.response_token)
		goto out;
	CHECK_EQ(
	    server_check_authenticate(&s, sr.response_token, sr.response_token_len, &client_mic),
	    0);
	CHECK_EQ(client_mic, timestamp);
	keylen = sizeof(key);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), 0);
	CHECK_EQ(keylen, 16);
	CHECK_MEM(key, s.esk, 16);
	if (timestamp) {
		CHECK_EQ(sr.mech_list_mic_len, 16);
		ntlmssp_mac(s.keys.client_sign, s.keys.client_seal, s.key_exch, 0, s.mech_types,
		            s.mech_types_len, mic);
		CHECK(sr.mech_list_mic && memcmp(sr.mech_list_mic, mic, 16) == 0);
	} else {
		CHECK(sr.mech_list_mic == NULL);
	}

	/* 3: the server's last token */
	ntlmssp_mac(s.keys.server_sign, s.keys.server_seal, s.key_exch, 0, s.mech_types,
	            s.mech_types_len, mic);
	if (fk == FINAL_BAD_MIC)
		mic[5] ^= 1;
	switch (fk) {
	case FINAL_GOOD_MIC:
	case FINAL_BAD_MIC:
		n = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_COMPLETED, NULL, 0, NULL, 0,
		                       mic, 16);
		break;
	case FINAL_NO_MIC:
		n = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_COMPLETED, NULL, 0, NULL, 0,
		                       NULL, 0);
		break;
	case FINAL_REJECT:
		n = spnego_encode_resp(buf, sizeof(buf), SPNEGO_REJECT, NULL, 0, NULL, 0, NULL, 0);
		break;
	default:
		n = 0;
	}
	CHECK(n >= 0);
	CHECK_EQ(smb_auth_step(a, buf, (size_t)n, &out, &outlen), want_final);
	if (want_final == SMB_AUTH_DONE) {
		CHECK_EQ(outlen, 0);
		CHECK(out != NULL);
		keylen = sizeof(key);
		CHECK_EQ(smb_auth_session_key(a, key, &keylen), 0);
	} else {
		keylen = sizeof(key);
		CHECK_EQ(smb_auth_session_key(a, key, &keylen), -EAGAIN);
	}
	/* nothing more after the end */
	CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), -EINVAL);
out:
	smb_auth_free(a);
	talloc_free(mem);
}

static void test_flow(void)
{
	uint8_t negblob[512], samba[256];
	size_t n = hex(win_neg_blob, negblob);
	size_t sn = samba_style_init(samba, sizeof(samba), true);

	run_flow(NULL, 0, true, FINAL_GOOD_MIC, SMB_AUTH_DONE);
	run_flow(negblob, n, true, FINAL_GOOD_MIC, SMB_AUTH_DONE);
	run_flow(samba, sn, true, FINAL_GOOD_MIC, SMB_AUTH_DONE);
	run_flow(samba, sn, true, FINAL_NO_MIC, SMB_AUTH_DONE);
	run_flow(samba, sn, true, FINAL_EMPTY, SMB_AUTH_DONE);
	run_flow(samba, sn, true, FINAL_BAD_MIC, -EACCES);
	run_flow(samba, sn, true, FINAL_REJECT, -EACCES);
	run_flow(samba, sn, false, FINAL_NO_MIC, SMB_AUTH_DONE);
	run_flow(samba, sn, false, FINAL_GOOD_MIC, SMB_AUTH_DONE);
}

static void test_flow_errors(void)
{
	struct smb_auth_creds creds = {.user = "u", .password = "p"};
	struct smb_auth *a;
	const uint8_t *out;
	size_t outlen;
	uint8_t buf[512];
	size_t n;
	ssize_t m;

	/* a server offering Kerberos only */
	n = samba_style_init(buf, sizeof(buf), false);
	CHECK_EQ(smb_auth_ntlmssp_new(NULL, &creds, &a), 0);
	CHECK_EQ(smb_auth_step(a, buf, n, &out, &outlen), -EPROTONOSUPPORT);
	CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), -EINVAL); /* sticky */
	smb_auth_free(a);

	/* garbage first blob */
	CHECK_EQ(smb_auth_ntlmssp_new(NULL, &creds, &a), 0);
	CHECK_EQ(smb_auth_step(a, (const uint8_t *)"\x60\x01", 2, &out, &outlen), -EBADMSG);
	smb_auth_free(a);

	/* reject at the second step; empty and garbage second blobs */
	static const int second_rc[] = {-EACCES, -EBADMSG, -EBADMSG, -EPROTONOSUPPORT, -EBADMSG};
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(smb_auth_ntlmssp_new(NULL, &creds, &a), 0);
		CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), SMB_AUTH_CONTINUE);
		switch (i) {
		case 0:
			m = spnego_encode_resp(buf, sizeof(buf), SPNEGO_REJECT, NULL, 0, NULL, 0,
			                       NULL, 0);
			break;
		case 1:
			m = 0;
			break;
		case 2: /* accept-incomplete without a token */
			m = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_INCOMPLETE,
			                       spnego_oid_ntlmssp, sizeof(spnego_oid_ntlmssp), NULL,
			                       0, NULL, 0);
			break;
		case 3: /* another mechanism chosen */
			m = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_INCOMPLETE,
			                       spnego_oid_krb5, sizeof(spnego_oid_krb5),
			                       (const uint8_t *)"x", 1, NULL, 0);
			break;
		default: /* a token that is not a CHALLENGE */
			m = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_INCOMPLETE, NULL, 0,
			                       (const uint8_t *)"NTLMSSP\0\3\0\0\0", 12, NULL, 0);
		}
		CHECK(m >= 0);
		CHECK_EQ(smb_auth_step(a, buf, (size_t)m, &out, &outlen), second_rc[i]);
		smb_auth_free(a);
	}

	/* bad UTF-8 in the credentials */
	struct smb_auth_creds bad = {.user = "\xff", .password = "p"};
	CHECK_EQ(smb_auth_ntlmssp_new(NULL, &bad, &a), -EINVAL);
	CHECK(a == NULL);
}

/* With fixed randomness the whole exchange is deterministic: the NTLMv2
 * response inside the SPNEGO token matches [MS-NLMP] 4.2.4. */
static void test_flow_known_answer(void)
{
	struct smb_auth_creds creds = {
	    .user = "User", .password = "Password", .domain = "Domain", .workstation = "COMPUTER"};
	struct smb_auth *a;
	const uint8_t *out;
	size_t outlen, keylen = 16;
	uint8_t cc[8], esk[16], chal[128], buf[512], key[16];
	struct spnego_resp sr;
	size_t n = 56;
	ssize_t m;

	memset(cc, 0xaa, 8);
	memset(esk, 0x55, 16);
	memset(chal, 0, sizeof(chal));
	memcpy(chal, "NTLMSSP", 8);
	chal[8] = 2;
	hex("33828ae2 0123456789abcdef", chal + 20);
	n += hex("02000c0044006f006d00610069006e0001000c005300650072007600650072000000 0000",
	         chal + n);
	chal[40] = chal[42] = (uint8_t)(n - 56);
	chal[44] = 56;

	CHECK_EQ(smb_auth_ntlmssp_new(NULL, &creds, &a), 0);
	smb_auth_ntlmssp_fix_randomness(a, cc, esk, 0);
	CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), SMB_AUTH_CONTINUE);
	m = spnego_encode_resp(buf, sizeof(buf), SPNEGO_ACCEPT_INCOMPLETE, spnego_oid_ntlmssp,
	                       sizeof(spnego_oid_ntlmssp), chal, n, NULL, 0);
	CHECK_EQ(smb_auth_step(a, buf, (size_t)m, &out, &outlen), SMB_AUTH_CONTINUE);
	CHECK_EQ(spnego_decode_resp(out, outlen, &sr), 0);
	const uint8_t *t = sr.response_token;
	uint32_t nto = (uint32_t)(t[24] | t[25] << 8), ko = (uint32_t)(t[56] | t[57] << 8);
	hex("68cd0ab851e51c96aabc927bebef6a1c", tmp);
	CHECK_MEM(t + nto, tmp, 16);
	hex("c5dad2544fc9799094ce1ce90bc9d03e", tmp);
	CHECK_MEM(t + ko, tmp, 16);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), 0);
	CHECK_MEM(key, esk, 16);
	CHECK(sr.mech_list_mic == NULL);
	smb_auth_free(a);
}

int main(void)
{
	if (smb_crypto_init()) {
		fprintf(stderr, "crypto init failed\n");
		return 1;
	}
	RUN(test_windows_tokens);
	RUN(test_samba_style_init);
	RUN(test_hostile);
	RUN(test_asn1_lengths);
	RUN(test_asn1_reader);
	RUN(test_flow);
	RUN(test_flow_errors);
	RUN(test_flow_known_answer);
	return check_report();
}
