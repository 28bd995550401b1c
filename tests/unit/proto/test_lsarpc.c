/* tests/unit/proto/test_lsarpc.c — the DCE/RPC PDUs of a SID lookup on the LSA
 * pipe (client/proto/lsarpc.h): bind, LsarOpenPolicy2, LsarLookupSids, as
 * Samba sends them. */
#include <errno.h>

#include "client/proto/lsarpc.h"
#include "client/proto/smb2.h"
#include "tests/unit/check.h"
#include "tests/unit/proto/rpc_build.h"

/* A conformant varying UTF-16 string (the deferred Buffer of an
 * RPC_UNICODE_STRING), ASCII only here. */
static void put_string(struct smb_wr *w, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	smb_wr_u32(w, n);
	smb_wr_u32(w, 0);
	smb_wr_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		smb_wr_u16(w, (uint8_t)s[i]);
	smb_wr_align(w, 4);
}

static void sid_domain_user(struct smb2_sid *s, uint32_t rid)
{
	*s = (struct smb2_sid){.revision = 1,
	                       .nsub = 5,
	                       .authority = 5,
	                       .sub = {21, 1465332954, 877157682, 62009959, rid}};
}

static void test_bind(void)
{
	uint8_t b[128];
	ssize_t n = lsarpc_bind_encode(b, sizeof(b), 7);
	CHECK_EQ(n, 72);
	CHECK(b[0] == 5 && b[2] == 11 && b[3] == 3 && b[4] == 0x10);
	CHECK_EQ(smb_le16(b + 8), 72);
	CHECK_EQ(smb_le32(b + 12), 7);
	const uint8_t lsa[16] = {0x78, 0x57, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab,
	                         0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab};
	CHECK(memcmp(b + 32, lsa, 16) == 0);
	CHECK_EQ(smb_le32(b + 68), 2); /* NDR 2.0 */
	CHECK_EQ(lsarpc_bind_encode(b, 40, 7), -ENOSPC);

	/* bind_ack: max frags, assoc group, port "\PIPE\lsass" (12 with NUL),
	 * pad, one result: acceptance */
	uint8_t a[128];
	struct smb_wr w;
	smb_wr_init(&w, a, sizeof(a));
	put_hdr(&w, 12, 3, 7);
	smb_wr_u16(&w, 4280);
	smb_wr_u16(&w, 4280);
	smb_wr_u32(&w, 0x1234);
	smb_wr_u16(&w, 12);
	smb_wr_bytes(&w, "\\PIPE\\lsass", 12);
	smb_wr_align(&w, 4);
	smb_wr_u8(&w, 1);
	smb_wr_zero(&w, 3);
	smb_wr_u16(&w, 0); /* result: acceptance */
	smb_wr_u16(&w, 0);
	smb_wr_zero(&w, 20);
	size_t al = end_pdu(&w);
	CHECK_EQ(lsarpc_bind_ack_decode(a, al, 7), 0);
	CHECK_EQ(lsarpc_bind_ack_decode(a, al, 8), -EBADMSG); /* another call */
	for (size_t l = 0; l < al - 22; l++)
		CHECK_EQ(lsarpc_bind_ack_decode(a, l, 7), -EBADMSG);
	smb_put_le16(a + al - 24, 2); /* provider rejection */
	CHECK_EQ(lsarpc_bind_ack_decode(a, al, 7), -EPROTO);
	a[2] = 13; /* bind_nak */
	CHECK_EQ(lsarpc_bind_ack_decode(a, al, 7), -EPROTO);
	a[2] = 12;
	a[3] = 1; /* first fragment only */
	CHECK_EQ(lsarpc_bind_ack_decode(a, al, 7), -EBADMSG);
}

static void test_open_policy(void)
{
	uint8_t b[128];
	ssize_t n = lsarpc_open_policy2_encode(b, sizeof(b), 2);
	CHECK_EQ(n, 24 + 4 + 24 + 4);
	CHECK(b[2] == 0 && smb_le16(b + 22) == 44);   /* request, opnum 44 */
	CHECK_EQ(smb_le32(b + 16), (uint32_t)n - 24); /* alloc_hint */
	CHECK_EQ(smb_le32(b + 28), 24);               /* ObjectAttributes.Length */
	CHECK_EQ(smb_le32(b + 52), 0x800);            /* POLICY_LOOKUP_NAMES */

	uint8_t r[64], h[LSARPC_HANDLE_LEN];
	struct smb_wr w;
	smb_wr_init(&w, r, sizeof(r));
	put_response_head(&w, 2, 3, 2, 0, 0);
	for (int i = 0; i < LSARPC_HANDLE_LEN; i++)
		smb_wr_u8(&w, (uint8_t)(i + 1));
	smb_wr_u32(&w, 0);
	size_t rl = end_pdu(&w);
	uint32_t st = 1;
	CHECK_EQ(lsarpc_open_policy2_decode(r, rl, 2, h, &st), 0);
	CHECK(st == 0 && h[0] == 1 && h[19] == 20);
	for (size_t l = 0; l < rl; l++)
		CHECK(lsarpc_open_policy2_decode(r, l, 2, h, &st) == -EBADMSG);
	/* a fault: nca_s_op_rng_error */
	smb_wr_init(&w, r, sizeof(r));
	put_hdr(&w, 3, 3, 2);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 0x1c010002);
	rl = end_pdu(&w);
	CHECK_EQ(lsarpc_open_policy2_decode(r, rl, 2, h, &st), -EREMOTEIO);
	CHECK_EQ(st, 0x1c010002);

	CHECK_EQ(lsarpc_close_encode(b, sizeof(b), 9, h), 24 + 20);
	CHECK_EQ(smb_le16(b + 22), 0);
}

static void test_lookup_request(void)
{
	uint8_t b[LSARPC_MAX_FRAG], h[LSARPC_HANDLE_LEN] = {0};
	struct smb2_sid s[2];
	sid_domain_user(&s[0], 1000);
	sid_domain_user(&s[1], 513);
	ssize_t n = lsarpc_lookup_sids_encode(b, sizeof(b), 3, h, s, 2);
	/* handle, Entries, ptr, conformance, 2 ptrs, 2 x (count + 28), names,
	 * level + pad, mapped count */
	CHECK_EQ(n, 24 + 20 + 4 + 4 + 4 + 8 + 2 * 32 + 8 + 4 + 4);
	CHECK_EQ(smb_le16(b + 22), 15);
	const uint8_t *p = b + 24 + 20;
	CHECK(smb_le32(p) == 2 && smb_le32(p + 4) != 0 && smb_le32(p + 8) == 2);
	p += 20;
	CHECK_EQ(smb_le32(p), 5);      /* SubAuthorityCount conformance */
	CHECK(p[4] == 1 && p[5] == 5); /* revision, count */
	CHECK_EQ(p[11], 5);            /* authority 5, big-endian */
	CHECK_EQ(smb_le32(p + 8 + 4 * 4 + 4), 1000);
	CHECK_EQ(smb_le16(b + n - 8), 1); /* LsapLookupWksta */
	CHECK_EQ(lsarpc_lookup_sids_encode(b, sizeof(b), 3, h, s, 0), -EINVAL);
	struct smb2_sid many[LSARPC_MAX_SIDS + 1];
	for (int i = 0; i <= LSARPC_MAX_SIDS; i++)
		sid_domain_user(&many[i], (uint32_t)i);
	CHECK_EQ(lsarpc_lookup_sids_encode(b, sizeof(b), 3, h, many, LSARPC_MAX_SIDS + 1), -E2BIG);
	CHECK(lsarpc_lookup_sids_encode(b, sizeof(b), 3, h, many, LSARPC_MAX_SIDS) > 0);
}

/* The answer to a lookup of two SIDs: a user of domain 0, and one the
 * server has no name of (type Unknown, no domain). */
static size_t put_lookup_answer(uint8_t *b, size_t cap, uint32_t call_id)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	put_response_head(&w, 2, 3, call_id, 0, 0);
	/* ReferencedDomains -> { 1, -> [1] { Name, Sid }, 32 } */
	smb_wr_u32(&w, 0x20000);
	smb_wr_u32(&w, 1);
	smb_wr_u32(&w, 0x20004);
	smb_wr_u32(&w, 32);
	smb_wr_u32(&w, 1);  /* conformance */
	smb_wr_u16(&w, 22); /* "SMBRDMATEST" */
	smb_wr_u16(&w, 24);
	smb_wr_u32(&w, 0x20008);
	smb_wr_u32(&w, 0x2000c);
	put_string(&w, "SMBRDMATEST");
	smb_wr_u32(&w, 4); /* the domain's SID: S-1-5-21-a-b-c */
	const uint8_t sid[8] = {1, 4, 0, 0, 0, 0, 0, 5};
	smb_wr_bytes(&w, sid, 8);
	smb_wr_u32(&w, 21);
	smb_wr_u32(&w, 1465332954);
	smb_wr_u32(&w, 877157682);
	smb_wr_u32(&w, 62009959);
	/* TranslatedNames { 2, -> [2] { Use, Name, DomainIndex } } */
	smb_wr_u32(&w, 2);
	smb_wr_u32(&w, 0x20010);
	smb_wr_u32(&w, 2);
	smb_wr_u16(&w, 1); /* SidTypeUser */
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 22); /* "smbrdmatest" */
	smb_wr_u16(&w, 22);
	smb_wr_u32(&w, 0x20014);
	smb_wr_u32(&w, 0);
	smb_wr_u16(&w, 8); /* SidTypeUnknown */
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 6); /* "513" */
	smb_wr_u16(&w, 6);
	smb_wr_u32(&w, 0x20018);
	smb_wr_u32(&w, 0xffffffff);
	put_string(&w, "smbrdmatest");
	put_string(&w, "513");
	smb_wr_u32(&w, 1);          /* MappedCount */
	smb_wr_u32(&w, 0x00000107); /* STATUS_SOME_NOT_MAPPED */
	return end_pdu(&w);
}

static void test_lookup_answer(void)
{
	uint8_t b[512];
	size_t n = put_lookup_answer(b, sizeof(b), 4);
	struct lsarpc_name out[2];
	uint32_t st = 0;
	CHECK_EQ(lsarpc_lookup_sids_decode(b, n, 4, out, 2, &st), 0);
	CHECK_EQ(st, 0x107);
	CHECK_EQ(out[0].type, 1);
	CHECK(strcmp(out[0].name, "smbrdmatest") == 0);
	CHECK(strcmp(out[0].domain, "SMBRDMATEST") == 0);
	CHECK_EQ(out[1].type, 8);
	CHECK(strcmp(out[1].name, "513") == 0 && out[1].domain[0] == '\0');
	/* another count than asked, another call, every cut */
	CHECK_EQ(lsarpc_lookup_sids_decode(b, n, 4, out, 1, &st), -EBADMSG);
	CHECK_EQ(lsarpc_lookup_sids_decode(b, n, 5, out, 2, &st), -EBADMSG);
	for (size_t l = 0; l < n; l++)
		CHECK(lsarpc_lookup_sids_decode(b, l, 4, out, 2, &st) == -EBADMSG);
	/* a string whose ActualCount is short of its Length */
	uint8_t c[512];
	memcpy(c, b, n);
	size_t at = 24 + 4 * 4 + 4 + 12 + 8; /* the domain name's ActualCount */
	CHECK_EQ(smb_le32(c + at), 11);
	smb_put_le32(c + at, 10);
	CHECK_EQ(lsarpc_lookup_sids_decode(c, n, 4, out, 2, &st), -EBADMSG);
	/* a SID whose count disagrees with its conformance */
	memcpy(c, b, n);
	at = 24 + 4 * 4 + 4 + 12 + 12 + 24;
	CHECK_EQ(smb_le32(c + at), 4);
	smb_put_le32(c + at, 5);
	CHECK_EQ(lsarpc_lookup_sids_decode(c, n, 4, out, 2, &st), -EBADMSG);
	/* more domains than the cap */
	memcpy(c, b, n);
	smb_put_le32(c + 24 + 4, LSARPC_MAX_SIDS + 1);
	CHECK_EQ(lsarpc_lookup_sids_decode(c, n, 4, out, 2, &st), -EBADMSG);
}

/* The stub-only calls: the same bytes the PDU encoders put after their
 * 24-byte header, the same answers from the PDU decoders' stubs. */
static void test_stubs(void)
{
	uint8_t b[LSARPC_MAX_FRAG], st_b[LSARPC_MAX_FRAG], h[LSARPC_HANDLE_LEN];
	for (int i = 0; i < LSARPC_HANDLE_LEN; i++)
		h[i] = (uint8_t)(0x40 + i);
	ssize_t n = lsarpc_open_policy2_encode(b, sizeof(b), 2);
	CHECK_EQ(lsarpc_open_policy2_stub_encode(st_b, sizeof(st_b)), n - 24);
	CHECK_MEM(st_b, b + 24, (size_t)n - 24);
	CHECK_EQ(lsarpc_open_policy2_stub_encode(st_b, 10), -ENOSPC);
	n = lsarpc_close_encode(b, sizeof(b), 2, h);
	CHECK_EQ(lsarpc_close_stub_encode(st_b, sizeof(st_b), h), n - 24);
	CHECK_MEM(st_b, b + 24, (size_t)n - 24);
	struct smb2_sid s[3];
	sid_domain_user(&s[0], 1000);
	sid_domain_user(&s[1], 513);
	sid_domain_user(&s[2], 512);
	n = lsarpc_lookup_sids_encode(b, sizeof(b), 3, h, s, 3);
	CHECK_EQ(lsarpc_lookup_sids_stub_encode(st_b, sizeof(st_b), h, s, 3), n - 24);
	CHECK_MEM(st_b, b + 24, (size_t)n - 24);
	CHECK_EQ(lsarpc_lookup_sids_stub_encode(st_b, sizeof(st_b), h, s, 0), -EINVAL);
	CHECK_EQ(lsarpc_lookup_sids_stub_encode(st_b, 40, h, s, 3), -ENOSPC);

	uint8_t hh[LSARPC_HANDLE_LEN];
	uint32_t st = 1;
	uint8_t op[24];
	memcpy(op, h, 20);
	smb_put_le32(op + 20, 0xc0000022);
	CHECK_EQ(lsarpc_open_policy2_stub_decode(op, 24, hh, &st), 0);
	CHECK_MEM(hh, h, 20);
	CHECK_EQ(st, 0xc0000022);
	CHECK_EQ(lsarpc_open_policy2_stub_decode(op, 23, hh, &st), -EBADMSG);

	size_t an = put_lookup_answer(b, sizeof(b), 4);
	struct lsarpc_name out[2];
	CHECK_EQ(lsarpc_lookup_sids_stub_decode(b + 24, an - 24, out, 2, &st), 0);
	CHECK_EQ(st, 0x107);
	CHECK(strcmp(out[0].name, "smbrdmatest") == 0);
	CHECK(strcmp(out[0].domain, "SMBRDMATEST") == 0);
	for (size_t l = 0; l < an - 24; l++)
		CHECK(lsarpc_lookup_sids_stub_decode(b + 24, l, out, 2, &st) == -EBADMSG);
	CHECK_EQ(lsarpc_lookup_sids_stub_decode(b + 24, an - 24, out, 3, &st), -EBADMSG);
}

int main(void)
{
	RUN(test_bind);
	RUN(test_open_policy);
	RUN(test_lookup_request);
	RUN(test_lookup_answer);
	RUN(test_stubs);
	return check_report();
}
