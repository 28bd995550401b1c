/* tests/unit/proto/test_dcerpc.c — connection-oriented DCE/RPC PDUs, the NDR
 * string pointer and ept_map (client/proto/dcerpc.h): encoders against bytes
 * laid out by hand from [C706] 12.6 / [MS-RPCE] 2.2.2 and appendix L, decoders
 * on PDUs built the same way, cut at every length and bent every way. */
#include <errno.h>
#include <stdbool.h>

#include "client/proto/dcerpc.h"
#include "client/proto/smb2.h"
#include "tests/unit/check.h"
#include "tests/unit/proto/rpc_build.h"

/* ccd8c074-d0e5-4a40-92b4-d074faa6ba28 (the witness interface) on the wire */
static const uint8_t witness_uuid[16] = {0x74, 0xc0, 0xd8, 0xcc, 0xe5, 0xd0, 0x40, 0x4a,
                                         0x92, 0xb4, 0xd0, 0x74, 0xfa, 0xa6, 0xba, 0x28};
static const uint8_t ndr_uuid[16] = {0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11,
                                     0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48, 0x60};

static struct dcerpc_syntax witness(void)
{
	struct dcerpc_syntax s = {.major = 1, .minor = 1};
	memcpy(s.uuid, witness_uuid, 16);
	return s;
}

static void test_uuid(void)
{
	uint8_t u[16];
	CHECK_EQ(dcerpc_uuid_parse("ccd8c074-d0e5-4a40-92b4-d074faa6ba28", u), 0);
	CHECK_MEM(u, witness_uuid, 16);
	CHECK_EQ(dcerpc_uuid_parse("8A885D04-1CEB-11C9-9FE8-08002B104860", u), 0);
	CHECK_MEM(u, ndr_uuid, 16);
	CHECK_MEM(dcerpc_ndr_syntax.uuid, ndr_uuid, 16);
	CHECK_EQ(dcerpc_uuid_parse("e1af8308-5d1f-11c9-91a4-08002b14a0fa", u), 0);
	CHECK_MEM(u, dcerpc_epm_syntax.uuid, 16);
	CHECK_EQ(dcerpc_uuid_parse("ccd8c074-d0e5-4a40-92b4-d074faa6ba2", u), -EINVAL);
	CHECK_EQ(dcerpc_uuid_parse("ccd8c074+d0e5-4a40-92b4-d074faa6ba28", u), -EINVAL);
	CHECK_EQ(dcerpc_uuid_parse("ccd8c074-d0e5-4a40-92b4-d074faa6ba2g", u), -EINVAL);
	CHECK_EQ(dcerpc_uuid_parse(NULL, u), -EINVAL);
}

/* ---- bind ------------------------------------------------------------------ */

static void test_bind(void)
{
	/* [C706] 12.6.4.3 bind: the header, max_xmit_frag, max_recv_frag,
	 * assoc_group_id, p_context_elem (n 1, 3 reserved), one context: id
	 * 0, one transfer syntax, reserved, abstract syntax witness v1.1,
	 * transfer syntax NDR v2.0 */
	static const uint8_t want[72] = {
	    5,    0,    11,   3,    0x10, 0,    0,    0,    72,   0,    0,    0,
	    1,    0,    0,    0,    0xb8, 0x10, 0xb8, 0x10, 0,    0,    0,    0,
	    1,    0,    0,    0,    0,    0,    1,    0,    0x74, 0xc0, 0xd8, 0xcc,
	    0xe5, 0xd0, 0x40, 0x4a, 0x92, 0xb4, 0xd0, 0x74, 0xfa, 0xa6, 0xba, 0x28,
	    1,    0,    1,    0,    0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11,
	    0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48, 0x60, 2,    0,    0,    0};
	struct dcerpc_ctx ctx = {
	    .abstract = witness(), .transfer = &dcerpc_ndr_syntax, .n_transfer = 1};
	struct dcerpc_bind bind = {
	    .ptype = DCERPC_PTYPE_BIND,
	    .call_id = 1,
	    .max_xmit_frag = 4280,
	    .max_recv_frag = 4280,
	    .ctx = &ctx,
	    .n_ctx = 1,
	};
	uint8_t b[256];
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, NULL), 72);
	CHECK_MEM(b, want, 72);
	for (size_t cap = 0; cap < 72; cap++)
		CHECK_EQ(dcerpc_bind_encode(b, cap, &bind, NULL), -ENOSPC);

	/* the same as alter_context with an NTLM privacy trailer: the body is
	 * 56 bytes (a multiple of 4: no padding), the sec_trailer, the token */
	const uint8_t tok[5] = {'N', 'T', 'L', 'M', 0};
	struct dcerpc_auth auth = {
	    .type = 10, .level = 6, .context_id = 0x01020304, .token = tok, .token_len = 5};
	bind.ptype = DCERPC_PTYPE_ALTER_CONTEXT;
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, &auth), 72 + 8 + 5);
	CHECK_EQ(b[2], DCERPC_PTYPE_ALTER_CONTEXT);
	CHECK_EQ(smb_le16(b + 8), 85);
	CHECK_EQ(smb_le16(b + 10), 5);
	const uint8_t trailer[13] = {10, 6, 0, 0, 4, 3, 2, 1, 'N', 'T', 'L', 'M', 0};
	CHECK_MEM(b + 72, trailer, 13);
	struct dcerpc_pdu pdu;
	CHECK_EQ(dcerpc_pdu_decode(b, 85, &pdu), 85);
	CHECK(pdu.has_auth && pdu.auth.type == 10 && pdu.auth.level == 6 &&
	      pdu.auth.context_id == 0x01020304 && pdu.auth.token == b + 80 &&
	      pdu.auth.token_len == 5 && pdu.body_len == 56);
	for (size_t l = 0; l < 85; l++)
		CHECK_EQ(dcerpc_pdu_decode(b, l, &pdu), -EBADMSG);
	/* the PDU cut with frag_length: the trailer no longer ends it */
	for (uint16_t l = 16; l < 85; l++) {
		uint8_t c[85];
		memcpy(c, b, 85);
		smb_put_le16(c + 8, l);
		ssize_t r = dcerpc_pdu_decode(c, 85, &pdu);
		CHECK(r == -EBADMSG || (r == l && pdu.auth.token + 5 == c + l));
	}

	/* two contexts, the second offering two transfer syntaxes (the bind
	 * time feature negotiation one of [MS-RPCE] 3.3.1.5.3 as a second) */
	struct dcerpc_syntax two[2] = {dcerpc_ndr_syntax,
	                               {.uuid = {0x2c, 0x1c, 0xb7, 0x6c}, .major = 1}};
	struct dcerpc_ctx ctxs[2] = {
	    ctx, {.id = 1, .abstract = witness(), .transfer = two, .n_transfer = 2}};
	bind.ctx = ctxs;
	bind.n_ctx = 2;
	bind.ptype = DCERPC_PTYPE_BIND;
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, NULL), 72 + 4 + 20 * 3);
	CHECK_EQ(b[24], 2);
	CHECK_EQ(smb_le16(b + 72), 1); /* the second context's id */
	CHECK_EQ(b[74], 2);
	bind.n_ctx = 0;
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, NULL), -EINVAL);
	bind.n_ctx = 1;
	ctxs[0].n_transfer = 0;
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, NULL), -EINVAL);
	ctxs[0].n_transfer = 1;
	bind.ptype = DCERPC_PTYPE_REQUEST;
	CHECK_EQ(dcerpc_bind_encode(b, sizeof(b), &bind, NULL), -EINVAL);
}

/* A bind_ack to call 1: max frags 4280/4280, assoc group 0x53f0, sec_addr
 * "49667" with its NUL (6 bytes: 26 + 6 = 32, already aligned), two
 * results: NDR accepted, the second rejected (provider, reason 2). */
static size_t bind_ack(uint8_t *b, size_t cap, uint8_t ptype)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	put_hdr(&w, ptype, 3, 1);
	smb_wr_u16(&w, 4280);
	smb_wr_u16(&w, 4280);
	smb_wr_u32(&w, 0x53f0);
	smb_wr_u16(&w, 6);
	smb_wr_bytes(&w, "49667", 6);
	smb_wr_align(&w, 4);
	smb_wr_u8(&w, 2);
	smb_wr_zero(&w, 3);
	smb_wr_u16(&w, DCERPC_RESULT_ACCEPT);
	smb_wr_u16(&w, 0);
	smb_wr_bytes(&w, ndr_uuid, 16);
	smb_wr_u32(&w, 2);
	smb_wr_u16(&w, DCERPC_RESULT_PROVIDER_REJ);
	smb_wr_u16(&w, 2);
	smb_wr_zero(&w, 20);
	return end_pdu(&w);
}

static int ack_of(const uint8_t *b, size_t len, struct dcerpc_bind_ack *ack,
                  struct dcerpc_result *res, size_t max)
{
	struct dcerpc_pdu pdu;
	ssize_t n = dcerpc_pdu_decode(b, len, &pdu);
	if (n < 0)
		return (int)n;
	return dcerpc_bind_ack_decode(&pdu, ack, res, max);
}

static void test_bind_ack(void)
{
	uint8_t b[128];
	struct dcerpc_bind_ack ack;
	struct dcerpc_result res[2];
	size_t n = bind_ack(b, sizeof(b), DCERPC_PTYPE_BIND_ACK);
	CHECK_EQ(n, 84);
	CHECK_EQ(ack_of(b, n, &ack, res, 2), 0);
	CHECK(ack.max_xmit_frag == 4280 && ack.max_recv_frag == 4280 &&
	      ack.assoc_group_id == 0x53f0);
	CHECK(ack.sec_addr_len == 6 && ack.sec_addr == b + 26 &&
	      memcmp(ack.sec_addr, "49667", 6) == 0);
	CHECK_EQ(ack.n_results, 2);
	CHECK(res[0].result == 0 && res[0].transfer.major == 2 &&
	      memcmp(res[0].transfer.uuid, ndr_uuid, 16) == 0);
	CHECK(res[1].result == 2 && res[1].reason == 2);
	CHECK_EQ(ack_of(b, n, &ack, res, 1), -E2BIG);
	CHECK_EQ(ack.n_results, 2);
	CHECK_EQ(ack_of(b, n, &ack, NULL, 0), -E2BIG);
	/* more bytes after the PDU: the next one */
	CHECK_EQ(ack_of(b, n + 10, &ack, res, 2), 0);
	n = bind_ack(b, sizeof(b), DCERPC_PTYPE_ALTER_CONTEXT_RESP);
	CHECK_EQ(ack_of(b, n, &ack, res, 2), 0);

	/* every truncation: of the buffer, and of the PDU (frag_length too) */
	for (size_t l = 0; l < n; l++) {
		CHECK_EQ(ack_of(b, l, &ack, res, 2), -EBADMSG);
		uint8_t c[128];
		memcpy(c, b, n);
		smb_put_le16(c + 8, (uint16_t)l);
		CHECK_EQ(ack_of(c, n, &ack, res, 2), -EBADMSG);
	}
	/* sec_addr past the PDU */
	smb_put_le16(b + 24, 60);
	CHECK_EQ(ack_of(b, n, &ack, res, 2), -EBADMSG);
	smb_put_le16(b + 24, 0xffff);
	CHECK_EQ(ack_of(b, n, &ack, res, 2), -EBADMSG);
	smb_put_le16(b + 24, 6);
	/* n_results past the PDU */
	b[32] = 3;
	CHECK_EQ(ack_of(b, n, &ack, res, 2), -EBADMSG);
	b[32] = 2;
	/* another type */
	b[2] = DCERPC_PTYPE_RESPONSE;
	CHECK_EQ(ack_of(b, n, &ack, res, 2), -EBADMSG);
}

static void test_bind_nak(void)
{
	uint8_t b[64];
	struct smb_wr w;
	struct dcerpc_pdu pdu;
	uint16_t reason = 0;
	/* provider_reject_reason 4 (protocol version not supported), one
	 * version: 5.0 */
	smb_wr_init(&w, b, sizeof(b));
	put_hdr(&w, DCERPC_PTYPE_BIND_NAK, 3, 1);
	smb_wr_u16(&w, 4);
	smb_wr_u8(&w, 1);
	smb_wr_u8(&w, 5);
	smb_wr_u8(&w, 0);
	size_t n = end_pdu(&w);
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), (ssize_t)n);
	CHECK_EQ(dcerpc_bind_nak_decode(&pdu, &reason), 0);
	CHECK_EQ(reason, 4);
	/* the reason alone */
	smb_put_le16(b + 8, 18);
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), 18);
	CHECK_EQ(dcerpc_bind_nak_decode(&pdu, &reason), 0);
	/* versions cut short, and no reason */
	for (size_t l = DCERPC_HDR_LEN; l < n; l++) {
		if (l == 18)
			continue;
		smb_put_le16(b + 8, (uint16_t)l);
		CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), (ssize_t)l);
		CHECK_EQ(dcerpc_bind_nak_decode(&pdu, &reason), -EBADMSG);
	}
	b[2] = DCERPC_PTYPE_BIND_ACK;
	smb_put_le16(b + 8, (uint16_t)n);
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), (ssize_t)n);
	CHECK_EQ(dcerpc_bind_nak_decode(&pdu, &reason), -EBADMSG);
}

/* ---- the header ------------------------------------------------------------ */

static void test_header(void)
{
	uint8_t b[64];
	struct smb_wr w;
	struct dcerpc_pdu pdu;
	smb_wr_init(&w, b, sizeof(b));
	put_hdr(&w, DCERPC_PTYPE_RESPONSE, 3, 9);
	smb_wr_zero(&w, 12);
	size_t n = end_pdu(&w);
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), 28);
	CHECK(pdu.hdr.ptype == 2 && pdu.hdr.call_id == 9 && pdu.body == b + 16 &&
	      pdu.body_len == 12 && !pdu.has_auth);
	b[1] = 1; /* minor version 1 */
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), 28);
#define BAD(stmt)                                                   \
	do {                                                        \
		uint8_t c_[64];                                     \
		memcpy(c_, b, sizeof(c_));                          \
		uint8_t *m = c_;                                    \
		stmt;                                               \
		CHECK_EQ(dcerpc_pdu_decode(c_, n, &pdu), -EBADMSG); \
	} while (0)
	BAD(m[0] = 4);                /* rpc_vers */
	BAD(m[1] = 2);                /* rpc_vers_minor */
	BAD(m[4] = 0x00);             /* big-endian */
	BAD(m[4] = 0x11);             /* EBCDIC */
	BAD(smb_put_le16(m + 8, 15)); /* shorter than the header */
	BAD(smb_put_le16(m + 8, 29)); /* past the buffer */
	BAD(smb_put_le16(m + 10, 5)); /* auth trailer longer than the body */
	/* an auth trailer of 4 bytes of token in the last 12 bytes: the body
	 * is empty; with pad_length 1 it would reach into the header */
	BAD((smb_put_le16(m + 10, 4), m[18] = 1));
#undef BAD
	smb_put_le16(b + 10, 4);
	CHECK_EQ(dcerpc_pdu_decode(b, n, &pdu), 28);
	CHECK(pdu.has_auth && pdu.body_len == 0 && pdu.auth.token == b + 24);
	CHECK_EQ(dcerpc_pdu_decode(b, 15, &pdu), -EBADMSG);
	CHECK_EQ(dcerpc_pdu_decode(NULL, 0, &pdu), -EBADMSG);
}

/* ---- request, response, fault --------------------------------------------- */

static void test_request(void)
{
	uint8_t b[256];
	const uint8_t stub[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct dcerpc_request req = {
	    .pfc_flags = DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG,
	    .call_id = 3,
	    .ctx_id = 1,
	    .opnum = 4,
	};
	/* [C706] 12.6.4.9: the header, alloc_hint 8, p_cont_id 1, opnum 4, stub */
	static const uint8_t want[32] = {5, 0, 0, 3, 0x10, 0, 0, 0, 32, 0, 0, 0, 3, 0, 0, 0,
	                                 8, 0, 0, 0, 1,    0, 4, 0, 1,  2, 3, 4, 5, 6, 7, 8};
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 8, NULL), 32);
	CHECK_MEM(b, want, 32);
	for (size_t cap = 0; cap < 32; cap++)
		CHECK_EQ(dcerpc_request_encode(b, cap, &req, stub, 8, NULL), -ENOSPC);

	/* an object UUID: the flag, 16 bytes before the stub */
	req.object = witness_uuid;
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 8, NULL), 48);
	CHECK_EQ(b[3], 0x83);
	CHECK_MEM(b + 24, witness_uuid, 16);
	CHECK_MEM(b + 40, stub, 8);
	req.object = NULL;

	/* with a trailer: a 5-byte stub padded by 11 to 16, sec_trailer
	 * (type 9, level 5, pad 11, context 7), a 16-byte token reserved */
	struct dcerpc_auth auth = {.type = 9, .level = 5, .context_id = 7, .token_len = 16};
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 5, &auth), 24 + 16 + 8 + 16);
	CHECK_EQ(smb_le16(b + 8), 64);
	CHECK_EQ(smb_le16(b + 10), 16);
	CHECK_EQ(smb_le32(b + 16), 5); /* alloc_hint: the stub, no padding */
	const uint8_t tr[8] = {9, 5, 11, 0, 7, 0, 0, 0};
	CHECK_MEM(b + 40, tr, 8);
	struct dcerpc_pdu pdu;
	CHECK_EQ(dcerpc_pdu_decode(b, 64, &pdu), 64);
	CHECK(pdu.has_auth && pdu.auth.pad_length == 11 && pdu.body_len == 8 + 5 &&
	      memcmp(pdu.body + 8, stub, 5) == 0);

	/* in place, with max_frag */
	struct smb_wr w;
	req.alloc_hint = 1000; /* kept: the whole of a fragmented stub */
	dcerpc_request_begin(&w, b, sizeof(b), &req);
	smb_wr_u32(&w, 0xdeadbeef);
	CHECK_EQ(dcerpc_request_end(&w, &req, NULL, 28), 28);
	CHECK_EQ(smb_le32(b + 16), 1000);
	dcerpc_request_begin(&w, b, sizeof(b), &req);
	smb_wr_u32(&w, 0xdeadbeef);
	CHECK_EQ(dcerpc_request_end(&w, &req, NULL, 27), -E2BIG);
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, NULL, 1, NULL), -EINVAL);
}

/* ---- AUTH3, the signed and sealed regions -------------------------------- */

static void test_auth3(void)
{
	uint8_t b[64];
	const uint8_t tok[5] = {'N', 'T', 'L', 'M', 3};
	struct dcerpc_auth auth = {
	    .type = 10, .level = 6, .context_id = 0x1234, .token = tok, .token_len = 5};
	/* header (ptype 16, first|last, frag 33, auth 5, call 9), 4 pad bytes,
	 * sec_trailer (10, 6, pad 0, 0, context), the token */
	static const uint8_t want[33] = {5, 0, 16,   3,    0x10, 0, 0,   0,   33,  0,   5,
	                                 0, 9, 0,    0,    0,    0, 0,   0,   0,   10,  6,
	                                 0, 0, 0x34, 0x12, 0,    0, 'N', 'T', 'L', 'M', 3};
	CHECK_EQ(dcerpc_auth3_encode(b, sizeof(b), 9, &auth), 33);
	CHECK_MEM(b, want, 33);
	for (size_t cap = 0; cap < 33; cap++)
		CHECK_EQ(dcerpc_auth3_encode(b, cap, 9, &auth), -ENOSPC);
	CHECK_EQ(dcerpc_auth3_encode(b, sizeof(b), 9, NULL), -EINVAL);
	auth.token = NULL;
	CHECK_EQ(dcerpc_auth3_encode(b, sizeof(b), 9, &auth), -EINVAL);
	struct dcerpc_pdu pdu;
	CHECK_EQ(dcerpc_pdu_decode(want, 33, &pdu), 33);
	CHECK(pdu.has_auth && pdu.body_len == 4 && pdu.auth.token == want + 28);
	/* an AUTH3 has no stub to protect */
	struct dcerpc_auth_span sp;
	CHECK_EQ(dcerpc_auth_span(want, 33, &sp), -EBADMSG);
}

static void test_auth_span(void)
{
	uint8_t b[256];
	const uint8_t stub[21] = {1, 2, 3};
	struct dcerpc_request req = {
	    .pfc_flags = DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG, .call_id = 2, .opnum = 7};
	struct dcerpc_auth auth = {.type = 10, .level = 6, .context_id = 1, .token_len = 16};
	struct dcerpc_auth_span sp;

	/* 21-byte stub + 11 pad, trailer at 56, token at 64..80 */
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 21, &auth), 80);
	CHECK_EQ(dcerpc_auth_span(b, 80, &sp), 0);
	CHECK_EQ(sp.stub_off, 24);
	CHECK_EQ(sp.stub_len, 32);
	CHECK_EQ(sp.signed_len, 64);
	CHECK_EQ(sp.token_off, 64);
	CHECK_EQ(sp.token_len, 16);
	CHECK_EQ(dcerpc_auth_span(b, 79, &sp), -EBADMSG); /* not all there */

	/* an object UUID moves the stub on by 16 */
	req.object = witness_uuid;
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 16, &auth), 80);
	CHECK_EQ(dcerpc_auth_span(b, 80, &sp), 0);
	CHECK_EQ(sp.stub_off, 40);
	CHECK_EQ(sp.stub_len, 16);
	CHECK_EQ(sp.signed_len, 64);
	req.object = NULL;

	/* a response: the same header length; without auth: refused */
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 16, &auth), 64);
	b[2] = DCERPC_PTYPE_RESPONSE;
	CHECK_EQ(dcerpc_auth_span(b, 64, &sp), 0);
	CHECK_EQ(sp.stub_off, 24);
	CHECK_EQ(sp.stub_len, 16);
	b[2] = DCERPC_PTYPE_FAULT;
	CHECK_EQ(dcerpc_auth_span(b, 64, &sp), 0);
	CHECK_EQ(sp.stub_off, 32);
	CHECK_EQ(sp.stub_len, 8);
	b[2] = DCERPC_PTYPE_BIND_ACK;
	CHECK_EQ(dcerpc_auth_span(b, 64, &sp), -EBADMSG);
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, stub, 16, NULL), 40);
	CHECK_EQ(dcerpc_auth_span(b, 40, &sp), -EBADMSG);

	/* a trailer that leaves no room for the request header: an empty
	 * stub, auth_pad_length 0, then claim the body is shorter */
	CHECK_EQ(dcerpc_request_encode(b, sizeof(b), &req, NULL, 0, &auth), 48);
	CHECK_EQ(dcerpc_auth_span(b, 48, &sp), 0);
	CHECK_EQ(sp.stub_len, 0);
	b[2] = DCERPC_PTYPE_FAULT; /* needs 32 bytes of header */
	CHECK_EQ(dcerpc_auth_span(b, 48, &sp), -EBADMSG);
	b[2] = DCERPC_PTYPE_REQUEST;
	b[26] = 4; /* auth_pad_length eats into the header */
	CHECK_EQ(dcerpc_auth_span(b, 48, &sp), -EBADMSG);
}

static size_t response(uint8_t *b, size_t cap, uint8_t ptype, uint8_t flags, uint32_t call_id,
                       const uint8_t *stub, size_t n)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	put_response_head(&w, ptype, flags, call_id, (uint32_t)n, 1);
	smb_wr_bytes(&w, stub, n);
	return end_pdu(&w);
}

static int rsp_of(const uint8_t *b, size_t len, struct dcerpc_response *rsp)
{
	struct dcerpc_pdu pdu;
	ssize_t n = dcerpc_pdu_decode(b, len, &pdu);
	return n < 0 ? (int)n : dcerpc_response_decode(&pdu, rsp);
}

static void test_response(void)
{
	uint8_t b[128];
	struct dcerpc_response rsp;
	const uint8_t stub[6] = {'a', 'b', 'c', 'd', 'e', 'f'};
	size_t n = response(b, sizeof(b), DCERPC_PTYPE_RESPONSE, 3, 5, stub, 6);
	CHECK_EQ(rsp_of(b, n, &rsp), 0);
	CHECK(rsp.call_id == 5 && rsp.ctx_id == 1 && rsp.alloc_hint == 6 && rsp.stub == b + 24 &&
	      rsp.stub_len == 6 && rsp.pfc_flags == 3);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(rsp_of(b, l, &rsp), -EBADMSG);
	smb_put_le16(b + 8, 23); /* shorter than its fixed part */
	CHECK_EQ(rsp_of(b, n, &rsp), -EBADMSG);

	/* a fault: status nca_s_op_rng_error, reserved, nothing more */
	const uint8_t st[8] = {0x02, 0x00, 0x01, 0x1c, 0, 0, 0, 0};
	n = response(b, sizeof(b), DCERPC_PTYPE_FAULT, 3, 5, st, 8);
	CHECK_EQ(rsp_of(b, n, &rsp), -EREMOTEIO);
	CHECK(rsp.status == 0x1c010002 && rsp.stub_len == 0);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(rsp_of(b, l, &rsp), -EBADMSG);
	CHECK_EQ(rsp_of(b, n - 4, &rsp), -EBADMSG); /* the buffer cut */
	smb_put_le16(b + 8, (uint16_t)(n - 4));     /* reserved left out */
	CHECK_EQ(rsp_of(b, n, &rsp), -EREMOTEIO);
	smb_put_le16(b + 8, (uint16_t)(n - 5));
	CHECK_EQ(rsp_of(b, n, &rsp), -EBADMSG);
	b[2] = DCERPC_PTYPE_BIND_ACK;
	CHECK_EQ(rsp_of(b, n, &rsp), -EBADMSG);
}

/* One response fragment to ra: its verdict, or the decoder's. */
static int add_frag(struct dcerpc_reasm *ra, uint8_t flags, uint32_t call_id, const uint8_t *stub,
                    size_t n)
{
	uint8_t b[64];
	struct dcerpc_response rsp;
	size_t l = response(b, sizeof(b), DCERPC_PTYPE_RESPONSE, flags, call_id, stub, n);
	int rc = rsp_of(b, l, &rsp);
	return rc ? rc : dcerpc_reasm_add(ra, &rsp);
}

static void test_reasm(void)
{
	uint8_t out[16];
	struct dcerpc_reasm ra;
	const uint8_t s1[4] = {1, 2, 3, 4}, s2[4] = {5, 6, 7, 8}, s3[2] = {9, 10};
	const uint8_t first = DCERPC_PFC_FIRST_FRAG, last = DCERPC_PFC_LAST_FRAG;
	dcerpc_reasm_init(&ra, out, 10);
	CHECK_EQ(add_frag(&ra, first, 7, s1, 4), 0);
	CHECK_EQ(add_frag(&ra, 0, 7, s2, 4), 0);
	CHECK_EQ(add_frag(&ra, last, 7, s3, 2), 1);
	CHECK_EQ(ra.len, 10);
	const uint8_t all[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	CHECK_MEM(out, all, 10);
	CHECK_EQ(add_frag(&ra, last, 7, s3, 2), -EBADMSG); /* after the last */

	/* a middle fragment first; FIRST twice; another call; too long */
	dcerpc_reasm_init(&ra, out, 10);
	CHECK_EQ(add_frag(&ra, 0, 7, s2, 4), -EBADMSG);
	CHECK_EQ(add_frag(&ra, first, 7, s1, 4), 0);
	CHECK_EQ(add_frag(&ra, first, 7, s1, 4), -EBADMSG);
	CHECK_EQ(add_frag(&ra, 0, 8, s2, 4), -EBADMSG);
	CHECK_EQ(add_frag(&ra, 0, 7, s2, 4), 0);
	CHECK_EQ(add_frag(&ra, 0, 7, s2, 4), -E2BIG);
	/* one whole fragment into no room */
	dcerpc_reasm_init(&ra, NULL, 0);
	CHECK_EQ(add_frag(&ra, first | last, 7, s1, 0), 1);
}

/* ---- NDR --------------------------------------------------------------------- */

static void test_ndr_string(void)
{
	uint8_t b[64];
	struct smb_wr w;
	uint32_t ref = 0x20000;
	smb_wr_init(&w, b, sizeof(b));
	smb_wr_u8(&w, 0xff); /* a misaligned start: 3 bytes of padding */
	ndr_wr_ptr_string(&w, "h\xc3\xa9", &ref);
	ndr_wr_ptr_string(&w, NULL, &ref);
	/* pad, referent id, max_count 3, offset 0, actual_count 3, 'h' 'é'
	 * NUL, 2 of padding; then a NULL pointer */
	static const uint8_t want[32] = {0xff, 0, 0, 0, 0,   0, 2,    0, 3, 0, 0, 0, 0, 0, 0, 0,
	                                 3,    0, 0, 0, 'h', 0, 0xe9, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	CHECK_EQ(w.err, 0);
	CHECK_EQ(smb_wr_len(&w), 32);
	CHECK_MEM(b, want, 32);
	CHECK_EQ(ref, 0x20001);
	for (size_t cap = 0; cap < 28; cap++) {
		smb_wr_init(&w, b, cap);
		smb_wr_u8(&w, 0xff);
		ndr_wr_ptr_string(&w, "h\xc3\xa9", &ref);
		CHECK_EQ(w.err, -ENOSPC);
	}
	smb_wr_init(&w, b, sizeof(b));
	ndr_wr_ptr_string(&w, "\xc3", &ref);
	CHECK_EQ(w.err, -EINVAL);
}

/* ---- the endpoint mapper ------------------------------------------------------- */

/* The five floors of an ncacn_ip_tcp tower for witness v1.1 ([C706]
 * appendix L, [MS-RPCE] 2.2.1.2): floor_count 5; lhs_length 19, 0x0d, the
 * UUID, major 1, rhs_length 2, minor 1; the same for NDR 2.0; lhs 0x0b,
 * rhs minor 0; lhs 0x07, rhs the port big-endian; lhs 0x09, rhs the IPv4
 * address. */
static size_t put_tower(uint8_t *t, uint16_t port, const uint8_t ip[4])
{
	struct smb_wr w;
	smb_wr_init(&w, t, 128);
	smb_wr_u16(&w, 5);
	smb_wr_u16(&w, 19);
	smb_wr_u8(&w, 0x0d);
	smb_wr_bytes(&w, witness_uuid, 16);
	smb_wr_u16(&w, 1);
	smb_wr_u16(&w, 2);
	smb_wr_u16(&w, 1);
	smb_wr_u16(&w, 19);
	smb_wr_u8(&w, 0x0d);
	smb_wr_bytes(&w, ndr_uuid, 16);
	smb_wr_u16(&w, 2);
	smb_wr_u16(&w, 2);
	smb_wr_u16(&w, 0);
	const uint8_t f3[7] = {1, 0, 0x0b, 2, 0, 0, 0};
	smb_wr_bytes(&w, f3, 7);
	const uint8_t f4[7] = {1, 0, 0x07, 2, 0, (uint8_t)(port >> 8), (uint8_t)port};
	smb_wr_bytes(&w, f4, 7);
	const uint8_t f5[5] = {1, 0, 0x09, 4, 0};
	smb_wr_bytes(&w, f5, 5);
	smb_wr_bytes(&w, ip, 4);
	return smb_wr_len(&w);
}

static void test_tower(void)
{
	uint8_t want[128], b[128];
	const uint8_t ip[4] = {192, 168, 1, 20};
	size_t n = put_tower(want, 49667, ip);
	CHECK_EQ(n, 75);
	struct dcerpc_tower t = {.iface = witness(), .transfer = dcerpc_ndr_syntax, .port = 49667};
	memcpy(t.ipv4, ip, 4);
	CHECK_EQ(dcerpc_tower_encode(b, sizeof(b), &t), 75);
	CHECK_MEM(b, want, 75);
	CHECK_EQ(dcerpc_tower_encode(b, 74, &t), -ENOSPC);
	struct dcerpc_tower d;
	CHECK_EQ(dcerpc_tower_decode(b, 75, &d), 0);
	CHECK(memcmp(&d.iface, &t.iface, sizeof(d.iface)) == 0 && d.port == 49667 &&
	      memcmp(d.ipv4, ip, 4) == 0 && d.transfer.major == 2);
	for (size_t l = 0; l < 75; l++)
		CHECK_EQ(dcerpc_tower_decode(b, l, &d), -EBADMSG);
	CHECK_EQ(dcerpc_tower_decode(b, 76, &d), -EBADMSG); /* a byte left over */
	/* ncacn_np: floors 0x0f (SMB pipe) and 0x11 (NetBIOS name) */
	b[61] = 0x0f;
	CHECK_EQ(dcerpc_tower_decode(b, 75, &d), -ENOENT);
	b[61] = 0x07;
	smb_put_le16(b + 0, 4); /* four floors: the last is left over */
	CHECK_EQ(dcerpc_tower_decode(b, 75, &d), -EBADMSG);
	smb_put_le16(b + 0, 5);
	/* floor 3 without its minor version: well-formed, not ncacn_ip_tcp */
	uint8_t c[75];
	memcpy(c, b, 55);
	smb_put_le16(c + 55, 0);
	memcpy(c + 57, b + 59, 16);
	CHECK_EQ(dcerpc_tower_decode(c, 73, &d), -ENOENT);
	smb_put_le16(b + 2, 0); /* lhs_length 0: no protocol id */
	CHECK_EQ(dcerpc_tower_decode(b, 75, &d), -EBADMSG);
}

static void test_epm_map_request(void)
{
	/* ept_map's [in]s, NDR: object (a full pointer, referent 1, the nil
	 * UUID), map_tower (referent 2, then twr_t: max_count 75 before
	 * tower_length 75 and the octets, 1 byte of padding), entry_handle
	 * (20 zero bytes), max_towers 4 */
	uint8_t want[160] = {0};
	size_t o = 0;
	smb_put_le32(want + o, 1);
	o += 4 + 16;
	smb_put_le32(want + o, 2);
	smb_put_le32(want + o + 4, 75);
	smb_put_le32(want + o + 8, 75);
	o += 12;
	const uint8_t any[4] = {0, 0, 0, 0};
	o += put_tower(want + o, 0, any);
	o += 1 + 20;
	smb_put_le32(want + o, 4);
	o += 4;
	CHECK_EQ(o, 132);

	struct dcerpc_syntax w = witness();
	uint8_t b[160];
	CHECK_EQ(dcerpc_epm_map_encode(b, sizeof(b), &w, 4), 132);
	CHECK_MEM(b, want, 132);
	for (size_t cap = 0; cap < 132; cap++)
		CHECK_EQ(dcerpc_epm_map_encode(b, cap, &w, 4), -ENOSPC);
	CHECK_EQ(dcerpc_epm_map_encode(b, sizeof(b), NULL, 4), -EINVAL);

	/* in a request PDU: opnum 3, the stub at 24 */
	uint8_t pdu[200];
	struct dcerpc_request req = {.pfc_flags = 3, .call_id = 2, .opnum = DCERPC_EPM_OPNUM_MAP};
	CHECK_EQ(dcerpc_request_encode(pdu, sizeof(pdu), &req, b, 132, NULL), 156);
	CHECK_EQ(smb_le16(pdu + 22), 3);
	CHECK_MEM(pdu + 24, want, 132);
}

/* ept_map's [out]s: entry_handle, num_towers, towers (max_count,
 * offset, actual_count, the referent ids, then each twr_t: max_count,
 * tower_length, octets, padding to 4), status.  The first tower is
 * ncacn_np, the second the TCP one. */
static size_t epm_map_rsp(uint8_t *b, size_t cap, uint32_t status)
{
	struct smb_wr w;
	uint8_t t[128];
	const uint8_t ip[4] = {10, 0, 0, 5};
	smb_wr_init(&w, b, cap);
	smb_wr_zero(&w, 20);
	smb_wr_u32(&w, 2);
	smb_wr_u32(&w, 4);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 2);
	smb_wr_u32(&w, 3);
	smb_wr_u32(&w, 4);
	size_t n = put_tower(t, 0, ip);
	t[61] = 0x0f; /* an SMB pipe floor: not ours */
	smb_wr_u32(&w, (uint32_t)n);
	smb_wr_u32(&w, (uint32_t)n);
	smb_wr_bytes(&w, t, n);
	smb_wr_align(&w, 4);
	n = put_tower(t, 49667, ip);
	smb_wr_u32(&w, (uint32_t)n);
	smb_wr_u32(&w, (uint32_t)n);
	smb_wr_bytes(&w, t, n);
	smb_wr_align(&w, 4);
	smb_wr_u32(&w, status);
	return smb_wr_len(&w);
}

static void test_epm_map_response(void)
{
	uint8_t b[512];
	struct dcerpc_syntax wit = witness();
	uint16_t port = 0;
	uint8_t ip[4] = {0};
	uint32_t st = 1;
	size_t n = epm_map_rsp(b, sizeof(b), 0);
	CHECK_EQ(n, 20 + 4 + 12 + 8 + 2 * (8 + 76) + 4);
	CHECK_EQ(dcerpc_epm_map_decode(b, n, &wit, &port, ip, &st), 0);
	CHECK_EQ(port, 49667);
	const uint8_t want_ip[4] = {10, 0, 0, 5};
	CHECK_MEM(ip, want_ip, 4);
	CHECK_EQ(st, 0);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(dcerpc_epm_map_decode(b, l, &wit, &port, ip, &st), -EBADMSG);
	CHECK_EQ(dcerpc_epm_map_decode(b, n + 1, &wit, &port, ip, &st), -EBADMSG);
	/* another interface: nothing fits */
	struct dcerpc_syntax other = wit;
	other.uuid[0] ^= 1;
	CHECK_EQ(dcerpc_epm_map_decode(b, n, &other, &port, ip, &st), -ENOENT);

	/* not registered: no towers, the status */
	struct smb_wr w;
	smb_wr_init(&w, b, sizeof(b));
	smb_wr_zero(&w, 20);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 4);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, DCERPC_EPT_NOT_FOUND);
	CHECK_EQ(dcerpc_epm_map_decode(b, smb_wr_len(&w), &wit, &port, ip, &st), -ENOENT);
	CHECK_EQ(st, DCERPC_EPT_NOT_FOUND);

	/* a NULL tower pointer is skipped */
	n = epm_map_rsp(b, sizeof(b), 0);
	uint8_t c[512];
	memcpy(c, b, n);
	smb_put_le32(c + 36, 0);
	memmove(c + 44, c + 44 + 84, n - 44 - 84);
	CHECK_EQ(dcerpc_epm_map_decode(c, n - 84, &wit, &port, ip, &st), 0);

	/* counts and offsets out of range */
#define BAD(off, v)                                                                    \
	do {                                                                           \
		memcpy(c, b, n);                                                       \
		smb_put_le32(c + (off), (v));                                          \
		CHECK_EQ(dcerpc_epm_map_decode(c, n, &wit, &port, ip, &st), -EBADMSG); \
	} while (0)
	BAD(20, 3);           /* num_towers != actual_count */
	BAD(24, 1);           /* max_count < actual_count */
	BAD(28, 1);           /* offset */
	BAD(32, 3);           /* actual_count past the pointers */
	BAD(32, 0xffffffffu); /* and far past */
	BAD(44, 74);          /* max_count != tower_length */
	BAD(48, 0x10000);
	/* tower_length past the stub, or cutting the tower inside its last
	 * floor */
	const uint32_t tl[2] = {0x10000, 74};
	for (int k = 0; k < 2; k++) {
		memcpy(c, b, n);
		smb_put_le32(c + 44, tl[k]);
		smb_put_le32(c + 48, tl[k]);
		CHECK_EQ(dcerpc_epm_map_decode(c, n, &wit, &port, ip, &st), -EBADMSG);
	}
#undef BAD
}

/* Every one-byte change of the ept_map answer: only documented verdicts. */
static void test_mutations(void)
{
	uint8_t b[512];
	struct dcerpc_syntax wit = witness();
	size_t n = epm_map_rsp(b, sizeof(b), 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t keep = b[i];
		for (int v = 0; v < 256; v += 17) {
			uint16_t port;
			uint8_t ip[4];
			uint32_t st;
			b[i] = (uint8_t)v;
			int rc = dcerpc_epm_map_decode(b, n, &wit, &port, ip, &st);
			CHECK(rc == 0 || rc == -EBADMSG || rc == -ENOENT);
		}
		b[i] = keep;
	}
	n = bind_ack(b, sizeof(b), DCERPC_PTYPE_BIND_ACK);
	for (size_t i = 0; i < n; i++) {
		uint8_t keep = b[i];
		for (int v = 0; v < 256; v += 17) {
			struct dcerpc_bind_ack ack;
			struct dcerpc_result res[2];
			b[i] = (uint8_t)v;
			int rc = ack_of(b, n, &ack, res, 2);
			CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
		}
		b[i] = keep;
	}
}

int main(void)
{
	RUN(test_uuid);
	RUN(test_bind);
	RUN(test_bind_ack);
	RUN(test_bind_nak);
	RUN(test_header);
	RUN(test_request);
	RUN(test_auth3);
	RUN(test_auth_span);
	RUN(test_response);
	RUN(test_reasm);
	RUN(test_ndr_string);
	RUN(test_tower);
	RUN(test_epm_map_request);
	RUN(test_epm_map_response);
	RUN(test_mutations);
	return check_report();
}
