/* tests/unit/proto/test_dfs.c — DFS referrals (client/proto/dfs.h): the
 * REQ_GET_DFS_REFERRAL encoder and the RESP_GET_DFS_REFERRAL decoder, on
 * answers laid out by hand from [MS-DFSC] 2.2.4 / 2.2.5, and on every way a
 * hostile server can bend them. */
#include <errno.h>
#include <stdbool.h>

#include "client/proto/dfs.h"
#include "client/proto/smb2.h"
#include "tests/unit/check.h"

#define MAXE 8

/* ---- laying out answers --------------------------------------------------- */

/* A string as the server sends it: UTF-16LE and a NUL unit. */
static void put_str(struct smb_wr *w, const char *s)
{
	uint8_t u[512];
	ssize_t n = smb_utf8_to_utf16le(s, strlen(s), u, sizeof(u), false);
	if (n < 0)
		n = 0;
	smb_wr_bytes(w, u, (size_t)n);
	smb_wr_u16(w, 0);
}

/* One referral entry to lay out.  v1: net is the inline ShareName.  v2-v4:
 * path, alt, net go to the string buffer after all entries; with
 * DFS_ENTRY_NAME_LIST_REFERRAL in flags (v3/v4) special and names[] do.
 * pad: bytes added to the fixed part (Size grows by as much). */
struct ent {
	uint16_t ver, server_type, flags;
	uint32_t ttl;
	const char *path, *alt, *net;
	const char *special;
	const char *names[4];
	uint16_t nnames;
	uint16_t pad;
};

static size_t fixed_of(const struct ent *e)
{
	if (e->ver == 2)
		return 22;
	if (e->ver >= 3)
		return (e->flags & DFS_ENTRY_NAME_LIST_REFERRAL) ? 18 : 34;
	return 8;
}

/* The header and n entries, entries back to back, then the strings in entry
 * order; each offset counted from the start of its own entry. */
static size_t build(uint8_t *b, size_t cap, uint16_t consumed, uint32_t hflags, const struct ent *e,
                    uint16_t n)
{
	struct smb_wr w;
	size_t at[MAXE];
	smb_wr_init(&w, b, cap);
	smb_wr_u16(&w, consumed);
	smb_wr_u16(&w, n);
	smb_wr_u32(&w, hflags);
	for (uint16_t i = 0; i < n; i++) {
		at[i] = smb_wr_len(&w);
		smb_wr_u16(&w, e[i].ver);
		smb_wr_u16(&w, 0); /* Size, below */
		smb_wr_u16(&w, e[i].server_type);
		smb_wr_u16(&w, e[i].flags);
		if (e[i].ver == 1) {
			put_str(&w, e[i].net);
		} else if (e[i].ver == 2) {
			smb_wr_u32(&w, 0); /* Proximity */
			smb_wr_u32(&w, e[i].ttl);
			smb_wr_zero(&w, 6); /* the three offsets, below */
		} else {
			smb_wr_u32(&w, e[i].ttl);
			/* three offsets and ServiceSiteGuid, or SpecialNameOffset,
			 * NumberOfExpandedNames, ExpandedNameOffset */
			smb_wr_zero(&w, fixed_of(&e[i]) - 12);
		}
		smb_wr_zero(&w, e[i].pad);
		smb_put_le16(b + at[i] + 2, (uint16_t)(smb_wr_len(&w) - at[i]));
	}
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *p = b + at[i];
		size_t o = at[i];
		if (e[i].ver == 1)
			continue;
		size_t slot = e[i].ver == 2 ? 16 : 12;
		if (e[i].ver >= 3 && (e[i].flags & DFS_ENTRY_NAME_LIST_REFERRAL)) {
			smb_put_le16(p + 12, (uint16_t)(smb_wr_len(&w) - o));
			put_str(&w, e[i].special);
			smb_put_le16(p + 14, e[i].nnames);
			smb_put_le16(p + 16, (uint16_t)(smb_wr_len(&w) - o));
			for (uint16_t k = 0; k < e[i].nnames; k++)
				put_str(&w, e[i].names[k]);
			continue;
		}
		smb_put_le16(p + slot, (uint16_t)(smb_wr_len(&w) - o));
		put_str(&w, e[i].path);
		smb_put_le16(p + slot + 2, (uint16_t)(smb_wr_len(&w) - o));
		put_str(&w, e[i].alt);
		smb_put_le16(p + slot + 4, (uint16_t)(smb_wr_len(&w) - o));
		put_str(&w, e[i].net);
	}
	return w.err ? 0 : smb_wr_len(&w);
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static struct dfs_referral_rsp rsp;
static struct dfs_referral out[MAXE];
static char strs[2048];

static int decode(const uint8_t *b, size_t len, const char *path)
{
	memset(out, 0x5a, sizeof(out));
	return dfs_referral_rsp_decode(b, len, path, &rsp, out, MAXE, strs, sizeof(strs));
}

/* ---- the request ----------------------------------------------------------- */

static void test_request(void)
{
	uint8_t b[128];
	ssize_t n = dfs_referral_req_encode(b, sizeof(b), "\\srv\\dfs\\dir");
	CHECK_EQ(n, 2 + 12 * 2 + 2);
	CHECK_EQ(smb_le16(b), 4); /* MaxReferralLevel */
	const char *want = "\\srv\\dfs\\dir";
	for (size_t i = 0; i < 12; i++)
		CHECK_EQ(smb_le16(b + 2 + 2 * i), (uint8_t)want[i]);
	CHECK_EQ(smb_le16(b + n - 2), 0);

	/* '/' goes as '\'; a non-ASCII name as UTF-16 (é: 1 unit, U+1F600: 2) */
	n = dfs_referral_req_encode(b, sizeof(b), "/srv/d\xc3\xa9\xf0\x9f\x98\x80");
	CHECK_EQ(n, 2 + 2 * (6 + 1 + 2) + 2);
	CHECK_EQ(smb_le16(b + 2), '\\');
	CHECK_EQ(smb_le16(b + 2 + 8), '\\');
	CHECK_EQ(smb_le16(b + 2 + 12), 0xE9);
	CHECK_EQ(smb_le16(b + 2 + 14), 0xD83D);
	CHECK_EQ(smb_le16(b + 2 + 16), 0xDE00);

	/* a domain referral asks for "" */
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), ""), 4);
	CHECK(smb_le16(b) == 4 && smb_le16(b + 2) == 0);

	/* exactly enough room, and one byte less */
	CHECK_EQ(dfs_referral_req_encode(b, 2 + 8 + 2, "\\srv"), 12);
	CHECK_EQ(dfs_referral_req_encode(b, 11, "\\srv"), -ENOSPC);
	CHECK_EQ(dfs_referral_req_encode(b, 3, ""), -ENOSPC);
	CHECK_EQ(dfs_referral_req_encode(NULL, 0, "\\srv"), -ENOSPC);

	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), NULL), -EINVAL);
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), "srv\\share"), -EINVAL);
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), "\\\\srv\\share"), -EINVAL);
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), "//srv/share"), -EINVAL);
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), "\\srv\xff"), -EINVAL);
	CHECK_EQ(dfs_referral_req_encode(b, sizeof(b), "\\srv\xc3"), -EINVAL);

	/* 32767 units is the most PathConsumed can count */
	static char longp[32769];
	static uint8_t big[2 * 32769 + 4];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '\\';
	longp[32767] = '\0';
	CHECK_EQ(dfs_referral_req_encode(big, sizeof(big), longp), 2 + 2 * 32767 + 2);
	longp[32767] = 'a';
	longp[32768] = '\0';
	CHECK_EQ(dfs_referral_req_encode(big, sizeof(big), longp), -EINVAL);
}

/* ---- answers ------------------------------------------------------------------ */

/* A v4 root referral for a stand-alone namespace with two targets (one
 * target set), every byte written out by hand. */
static size_t v4_root(uint8_t *b)
{
	static const char *hex =
	    /* PathConsumed 16 ("\srv\dfs"), 2 referrals, R|S */
	    "1000 0200 03000000"
	    /* entry 0 @8: v4, Size 34, root, TargetSetBoundary, TTL 300,
	     * DFSPath @76-8=68, alternate @68, target @94-8=86, GUID 0 */
	    "0400 2200 0100 0400 2c010000 4400 4400 5600"
	    "00000000000000000000000000000000"
	    /* entry 1 @42: v4, Size 34, root, no flags, TTL 300,
	     * DFSPath @76-42=34, alternate @34, target @112-42=70 */
	    "0400 2200 0100 0000 2c010000 2200 2200 4600"
	    "00000000000000000000000000000000"
	    /* @76 "\srv\dfs" NUL */
	    "5c00 7300 7200 7600 5c00 6400 6600 7300 0000"
	    /* @94 "\fs1\dfs" NUL */
	    "5c00 6600 7300 3100 5c00 6400 6600 7300 0000"
	    /* @112 "\fs2\dfs" NUL */
	    "5c00 6600 7300 3200 5c00 6400 6600 7300 0000";
	return check_hex(hex, b, 256);
}

static void test_v4_root(void)
{
	uint8_t b[256];
	size_t n = v4_root(b);
	CHECK_EQ(n, 130);
	CHECK_EQ(decode(b, n, "\\srv\\dfs\\dir\\file"), 0);
	CHECK_EQ(rsp.path_consumed16, 16);
	CHECK_EQ(rsp.path_consumed, 8); /* "\srv\dfs" */
	CHECK_EQ(rsp.count, 2);
	CHECK_EQ(rsp.version, 4);
	CHECK_EQ(rsp.header_flags, DFS_HDR_REFERRAL_SERVERS | DFS_HDR_STORAGE_SERVERS);
	CHECK_EQ(rsp.str_len, 3 * 9 * 2);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(out[i].version, 4);
		CHECK_EQ(out[i].server_type, DFS_SERVER_ROOT);
		CHECK_EQ(out[i].ttl, 300);
		CHECK(!out[i].name_list);
		CHECK(streq(out[i].dfs_path, "\\srv\\dfs"));
		CHECK(streq(out[i].dfs_alt_path, "\\srv\\dfs"));
		CHECK(out[i].special_name == NULL && out[i].expanded_names == NULL);
		CHECK_EQ(out[i].expanded_count, 0);
		/* the strings are in the caller's buffer */
		CHECK(out[i].network_address >= strs &&
		      out[i].network_address < strs + sizeof(strs));
	}
	CHECK(out[0].target_set_boundary && !out[1].target_set_boundary);
	CHECK_EQ(out[0].entry_flags, DFS_ENTRY_TARGET_SET_BOUNDARY);
	CHECK(streq(out[0].network_address, "\\fs1\\dfs"));
	CHECK(streq(out[1].network_address, "\\fs2\\dfs"));

	/* the same answer read as v3: TargetSetBoundary is v4's alone */
	b[8] = 3;
	b[42] = 3;
	CHECK_EQ(decode(b, n, "\\srv\\dfs"), 0);
	CHECK(!out[0].target_set_boundary && out[0].entry_flags == DFS_ENTRY_TARGET_SET_BOUNDARY);
	CHECK_EQ(rsp.path_consumed, 8);
	b[8] = 4;
	b[42] = 4;

	/* every cut of it: the last string loses its NUL, or an entry its
	 * end, or the header its fields */
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(decode(b, l, "\\srv\\dfs\\dir\\file"), -EBADMSG);
	/* trailing padding is no one's business */
	uint8_t p[256];
	memcpy(p, b, n);
	memset(p + n, 0xee, 16);
	CHECK_EQ(decode(p, n + 16, "\\srv\\dfs"), 0);
}

/* A v3 link referral: a path under a link, non-ASCII, so PathConsumed in
 * UTF-16 and the prefix in UTF-8 differ. */
static void test_v3_link(void)
{
	/* "\srv\dfs\lïnk😀" then "\x\y": 13 BMP units + a surrogate pair */
	const char *req = "\\srv\\dfs\\l\xc3\xafnk\xf0\x9f\x98\x80\\x\\y";
	const char *link = "\\srv\\dfs\\l\xc3\xafnk\xf0\x9f\x98\x80";
	struct ent e = {.ver = 3,
	                .server_type = DFS_SERVER_NON_ROOT,
	                .ttl = 1800,
	                .path = link,
	                .alt = link,
	                .net = "\\fs3\\share\\sub"};
	uint8_t b[512];
	size_t n = build(b, sizeof(b), (13 + 2) * 2, DFS_HDR_STORAGE_SERVERS, &e, 1);
	CHECK(n > 0);
	CHECK_EQ(decode(b, n, req), 0);
	CHECK_EQ(rsp.path_consumed16, 30);
	CHECK_EQ(rsp.path_consumed, strlen(link)); /* 18 bytes of UTF-8 */
	CHECK_EQ(rsp.path_consumed, 18);
	CHECK_EQ(rsp.count, 1);
	CHECK_EQ(rsp.version, 3);
	CHECK_EQ(rsp.header_flags, DFS_HDR_STORAGE_SERVERS);
	CHECK_EQ(out[0].server_type, DFS_SERVER_NON_ROOT);
	CHECK_EQ(out[0].ttl, 1800);
	CHECK(!out[0].name_list && !out[0].target_set_boundary);
	CHECK(streq(out[0].dfs_path, link));
	CHECK(streq(out[0].dfs_alt_path, link));
	CHECK(streq(out[0].network_address, "\\fs3\\share\\sub"));
	CHECK_EQ(rsp.str_len, 2 * (strlen(link) + 1) + strlen("\\fs3\\share\\sub") + 1);
	/* '/' in the request path counts as the '\' it was sent as */
	CHECK_EQ(decode(b, n, "/srv/dfs/l\xc3\xafnk\xf0\x9f\x98\x80/x/y"), 0);
	CHECK_EQ(rsp.path_consumed, 18);

	/* PathConsumed: the whole path is fine, past it is not, nor odd, nor
	 * the middle of the surrogate pair */
	smb_put_le16(b, 2 * 19);
	CHECK_EQ(decode(b, n, req), 0);
	CHECK_EQ(rsp.path_consumed, strlen(req));
	smb_put_le16(b, 2 * 20);
	CHECK_EQ(decode(b, n, req), -EBADMSG);
	CHECK_EQ(decode(b, n, ""), -EBADMSG);
	smb_put_le16(b, 29);
	CHECK_EQ(decode(b, n, req), -EBADMSG);
	smb_put_le16(b, 28); /* after the high surrogate */
	CHECK_EQ(decode(b, n, req), -EBADMSG);
	smb_put_le16(b, 26); /* before it */
	CHECK_EQ(decode(b, n, req), 0);
	CHECK_EQ(rsp.path_consumed, 14);
	smb_put_le16(b, 0);
	CHECK_EQ(decode(b, n, req), 0);
	CHECK_EQ(rsp.path_consumed, 0);
}

/* A domain referral (request ""): v3 NameListReferral entries, one domain
 * name each, no DCs; the second with the 16 bytes of padding a server may
 * add. */
static void test_v3_domain(void)
{
	struct ent e[2] = {
	    {.ver = 3, .flags = DFS_ENTRY_NAME_LIST_REFERRAL, .ttl = 600, .special = "CORP"},
	    {.ver = 3,
	     .flags = DFS_ENTRY_NAME_LIST_REFERRAL,
	     .ttl = 600,
	     .special = "corp.example.com",
	     .pad = 16},
	};
	uint8_t b[512];
	size_t n = build(b, sizeof(b), 0, 0, e, 2);
	CHECK_EQ(smb_le16(b + 8 + 2), 18);
	CHECK_EQ(smb_le16(b + 8 + 18 + 2), 34);
	CHECK_EQ(decode(b, n, ""), 0);
	CHECK_EQ(rsp.count, 2);
	CHECK_EQ(rsp.path_consumed, 0);
	CHECK(out[0].name_list && out[1].name_list);
	CHECK(streq(out[0].special_name, "CORP"));
	CHECK(streq(out[1].special_name, "corp.example.com"));
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(out[i].ttl, 600);
		CHECK_EQ(out[i].expanded_count, 0);
		CHECK(out[i].expanded_names == NULL);
		CHECK(out[i].dfs_path == NULL && out[i].dfs_alt_path == NULL &&
		      out[i].network_address == NULL);
	}
	/* with no names, ExpandedNameOffset is not looked at */
	smb_put_le16(b + 8 + 16, 0xffff);
	CHECK_EQ(decode(b, n, ""), 0);
	/* a Size that covers only the common part */
	smb_put_le16(b + 8 + 2, 17);
	CHECK_EQ(decode(b, n, ""), -EBADMSG);
	smb_put_le16(b + 8 + 2, 18);
	/* the same entry without NameListReferral would need 34 bytes */
	smb_put_le16(b + 8 + 6, 0);
	CHECK_EQ(decode(b, n, ""), -EBADMSG);
	smb_put_le16(b + 8 + 6, DFS_ENTRY_NAME_LIST_REFERRAL);
	/* SpecialNameOffset into the fixed part */
	smb_put_le16(b + 8 + 12, 16);
	CHECK_EQ(decode(b, n, ""), -EBADMSG);
}

/* A DC referral (request "\domain"): one v3 NameListReferral entry, the
 * domain and its DCs back to back. */
static void test_v3_dc(void)
{
	struct ent e = {
	    .ver = 3,
	    .flags = DFS_ENTRY_NAME_LIST_REFERRAL,
	    .ttl = 600,
	    .special = "\\corp.example.com",
	    .names = {"\\dc1.corp.example.com", "\\dc2.corp.example.com", "\\dc3.corp.example.com"},
	    .nnames = 3};
	uint8_t b[512];
	size_t n = build(b, sizeof(b), 0, 0, &e, 1);
	CHECK_EQ(decode(b, n, "\\corp.example.com"), 0);
	CHECK(out[0].name_list);
	CHECK(streq(out[0].special_name, "\\corp.example.com"));
	CHECK_EQ(out[0].expanded_count, 3);
	const char *dc = out[0].expanded_names;
	CHECK(streq(dc, "\\dc1.corp.example.com"));
	dc += strlen(dc) + 1;
	CHECK(streq(dc, "\\dc2.corp.example.com"));
	dc += strlen(dc) + 1;
	CHECK(streq(dc, "\\dc3.corp.example.com"));
	CHECK_EQ(rsp.str_len, 18 + 3 * 22);
	CHECK(out[0].expanded_names + 3 * 22 == strs + rsp.str_len);
	/* a name more than the answer holds */
	smb_put_le16(b + 8 + 14, 4);
	CHECK_EQ(decode(b, n, "\\corp.example.com"), -EBADMSG);
	smb_put_le16(b + 8 + 14, 65535);
	CHECK_EQ(decode(b, n, "\\corp.example.com"), -EBADMSG);
	smb_put_le16(b + 8 + 14, 3);
	/* ExpandedNameOffset into the fixed part, or past the end */
	uint16_t eo = smb_le16(b + 8 + 16);
	smb_put_le16(b + 8 + 16, 2);
	CHECK_EQ(decode(b, n, "\\corp.example.com"), -EBADMSG);
	smb_put_le16(b + 8 + 16, (uint16_t)(n - 8));
	CHECK_EQ(decode(b, n, "\\corp.example.com"), -EBADMSG);
	smb_put_le16(b + 8 + 16, eo);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(decode(b, l, "\\corp.example.com"), -EBADMSG);
}

/* v1 (ShareName inline) and v2 (Proximity, TTL, three offsets). */
static void test_v1_v2(void)
{
	struct ent e1[2] = {
	    {.ver = 1, .server_type = DFS_SERVER_ROOT, .flags = 0x7, .net = "\\fs1\\share"},
	    {.ver = 1, .server_type = DFS_SERVER_ROOT, .net = "\\fs2\\share", .pad = 6},
	};
	uint8_t b[512];
	size_t n = build(b, sizeof(b), 2 * 10, DFS_HDR_REFERRAL_SERVERS, e1, 2);
	CHECK_EQ(smb_le16(b + 8 + 2), 8 + 22);
	CHECK_EQ(decode(b, n, "\\srv\\share\\a"), 0);
	CHECK_EQ(rsp.version, 1);
	CHECK_EQ(rsp.path_consumed, 10);
	CHECK_EQ(rsp.str_len, 2 * 11);
	CHECK(streq(out[0].network_address, "\\fs1\\share"));
	CHECK(streq(out[1].network_address, "\\fs2\\share"));
	/* v1 has no TTL, no paths, and its flags are ignored */
	CHECK(out[0].ttl == 0 && out[0].entry_flags == 0 && !out[0].name_list);
	CHECK(out[0].dfs_path == NULL && out[0].dfs_alt_path == NULL);
	CHECK_EQ(out[0].server_type, DFS_SERVER_ROOT);
	/* ShareName's NUL must be inside the entry: a Size that cuts it off,
	 * though the next bytes of the answer would end it */
	smb_put_le16(b + 8 + 2, 8 + 20);
	CHECK_EQ(decode(b, n, "\\srv\\share\\a"), -EBADMSG);
	smb_put_le16(b + 8 + 2, 9);
	CHECK_EQ(decode(b, n, "\\srv\\share\\a"), -EBADMSG);
	smb_put_le16(b + 8 + 2, 7);
	CHECK_EQ(decode(b, n, "\\srv\\share\\a"), -EBADMSG);
	smb_put_le16(b + 8 + 2, 8 + 22);
	for (size_t l = 0; l < n; l++) /* the padding is inside the last Size */
		CHECK_EQ(decode(b, l, "\\srv\\share\\a"), -EBADMSG);

	struct ent e2[2] = {
	    {.ver = 2,
	     .ttl = 900,
	     .path = "\\srv\\dfs\\lnk",
	     .alt = "\\SRV\\DFS\\LNK",
	     .net = "\\fs1\\a"},
	    {.ver = 2,
	     .ttl = 900,
	     .path = "\\srv\\dfs\\lnk",
	     .alt = "\\SRV\\DFS\\LNK",
	     .net = "\\fs2\\b"},
	};
	n = build(b, sizeof(b), 2 * 12, DFS_HDR_STORAGE_SERVERS, e2, 2);
	CHECK_EQ(smb_le16(b + 8 + 2), 22);
	smb_put_le32(b + 8 + 8, 0x12345678); /* Proximity: ignored */
	CHECK_EQ(decode(b, n, "\\srv\\dfs\\lnk\\f"), 0);
	CHECK_EQ(rsp.version, 2);
	CHECK_EQ(rsp.path_consumed, 12);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(out[i].ttl, 900);
		CHECK(streq(out[i].dfs_path, "\\srv\\dfs\\lnk"));
		CHECK(streq(out[i].dfs_alt_path, "\\SRV\\DFS\\LNK"));
		CHECK(!out[i].name_list && !out[i].target_set_boundary);
	}
	CHECK(streq(out[0].network_address, "\\fs1\\a"));
	CHECK(streq(out[1].network_address, "\\fs2\\b"));
	/* a Size one short of the fixed part */
	smb_put_le16(b + 8 + 2, 21);
	CHECK_EQ(decode(b, n, "\\srv\\dfs\\lnk\\f"), -EBADMSG);
	smb_put_le16(b + 8 + 2, 22);
	/* an offset into the fixed part */
	smb_put_le16(b + 8 + 20, 21);
	CHECK_EQ(decode(b, n, "\\srv\\dfs\\lnk\\f"), -EBADMSG);
}

/* The caller's room: too few entries, too few string bytes, a sizing call. */
static void test_capacity(void)
{
	uint8_t b[256];
	size_t n = v4_root(b);
	struct dfs_referral_rsp r;
	struct dfs_referral o[2];
	char s[64];
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, o, 2, s, 54), 0);
	CHECK_EQ(r.str_len, 54);
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, o, 2, s, 53), -E2BIG);
	CHECK(r.count == 2 && r.str_len == 54);
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, o, 1, s, sizeof(s)), -E2BIG);
	CHECK(r.count == 2 && r.str_len == 54 && r.version == 4);
	CHECK(streq(o[0].network_address, "\\fs1\\dfs"));
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, NULL, 0, NULL, 0), -E2BIG);
	CHECK(r.count == 2 && r.str_len == 54 && r.path_consumed == 8);
	/* a sizing call still judges the whole answer */
	CHECK_EQ(dfs_referral_rsp_decode(b, n - 1, "\\srv\\dfs", &r, NULL, 0, NULL, 0), -EBADMSG);

	CHECK_EQ(dfs_referral_rsp_decode(b, n, NULL, &r, o, 2, s, sizeof(s)), -EINVAL);
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", NULL, o, 2, s, sizeof(s)), -EINVAL);
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, NULL, 2, s, sizeof(s)), -EINVAL);
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs", &r, o, 2, NULL, 4), -EINVAL);
	/* an invalid path is -EINVAL whatever the answer */
	CHECK_EQ(dfs_referral_rsp_decode(b, n, "\\srv\\dfs\xc0\xaf", &r, o, 2, s, sizeof(s)),
	         -EINVAL);
	CHECK_EQ(dfs_referral_rsp_decode(b, 3, "\\srv\xe2\x82", &r, o, 2, s, sizeof(s)), -EINVAL);
	CHECK_EQ(dfs_referral_rsp_decode(NULL, 0, "\\srv\\dfs", &r, o, 2, s, sizeof(s)), -EBADMSG);
}

/* What a hostile server can send, on the v4 answer above. */
static void test_hostile(void)
{
	uint8_t b[256], m[256];
	size_t n = v4_root(b);
	const char *req = "\\srv\\dfs\\dir\\file";
#define MUT(stmt, want)                            \
	do {                                       \
		memcpy(m, b, n);                   \
		stmt;                              \
		CHECK_EQ(decode(m, n, req), want); \
	} while (0)

	MUT((void)0, 0);
	/* no referral at all */
	MUT(smb_put_le16(m + 2, 0), -ENOENT);
	CHECK(rsp.count == 0 && rsp.path_consumed == 8);
	CHECK_EQ(decode(b, 8, req), -EBADMSG); /* the header alone is still 2 */
	memcpy(m, b, 8);
	smb_put_le16(m + 2, 0);
	CHECK_EQ(decode(m, 8, req), -ENOENT);
	/* more referrals than follow */
	MUT(smb_put_le16(m + 2, 3), -EBADMSG);
	MUT(smb_put_le16(m + 2, 65535), -EBADMSG);
	/* versions: unknown, or mixed */
	MUT(smb_put_le16(m + 8, 0), -EBADMSG);
	MUT(smb_put_le16(m + 8, 5), -EBADMSG);
	MUT((smb_put_le16(m + 8, 0xffff), smb_put_le16(m + 42, 0xffff)), -EBADMSG);
	MUT(smb_put_le16(m + 42, 3), -EBADMSG);
	/* Size: short of the fixed part, zero, past the end */
	MUT(smb_put_le16(m + 10, 33), -EBADMSG);
	MUT(smb_put_le16(m + 10, 0), -EBADMSG);
	MUT(smb_put_le16(m + 44, (uint16_t)(n - 42 + 1)), -EBADMSG);
	MUT(smb_put_le16(m + 44, 0xffff), -EBADMSG);
	/* a larger Size that still fits moves the next entry: entry 1 is then
	 * read at 8 + 36 = 44, whose "Version" is entry 1's Size (34) */
	MUT(smb_put_le16(m + 10, 36), -EBADMSG);
	/* string offsets: into the fixed part, past the end, at the very end */
	MUT(smb_put_le16(m + 8 + 12, 33), -EBADMSG);
	MUT(smb_put_le16(m + 8 + 14, 0), -EBADMSG);
	MUT(smb_put_le16(m + 8 + 16, 0xffff), -EBADMSG);
	MUT(smb_put_le16(m + 42 + 16, (uint16_t)(n - 42)), -EBADMSG);
	MUT(smb_put_le16(m + 42 + 16, (uint16_t)(n - 42 - 1)), -EBADMSG); /* 1 byte */
	MUT(smb_put_le16(m + 42 + 16, (uint16_t)(n - 42 - 2)), 0);        /* "" */
	CHECK(streq(out[1].network_address, ""));
	/* an odd offset is read where it lands (no alignment rule): here the
	 * high byte of 's' and the low byte of the NUL make a NUL */
	MUT(smb_put_le16(m + 42 + 16, (uint16_t)(n - 42 - 3)), 0);
	CHECK(streq(out[1].network_address, ""));
	/* a string without its NUL: the last one runs to the end */
	MUT(smb_put_le16(m + n - 2, 'x'), -EBADMSG);
	/* unpaired surrogates, high at the end or low alone */
	MUT(smb_put_le16(m + n - 4, 0xD800), -EBADMSG);
	MUT(smb_put_le16(m + n - 4, 0xDC00), -EBADMSG);
	MUT((smb_put_le16(m + 76, 0xD83D), smb_put_le16(m + 78, 'a')), -EBADMSG);
	/* a good pair is fine, and is 4 bytes of UTF-8 */
	MUT((smb_put_le16(m + n - 6, 0xD83D), smb_put_le16(m + n - 4, 0xDE00)), 0);
	CHECK(streq(out[1].network_address, "\\fs2\\d\xf0\x9f\x98\x80"));
	/* PathConsumed: past the request path, odd */
	MUT(smb_put_le16(m, 2 * 18), -EBADMSG);
	MUT(smb_put_le16(m, 0xffff), -EBADMSG);
	MUT(smb_put_le16(m, 15), -EBADMSG);
	MUT(smb_put_le16(m, 2 * 17), 0);
	CHECK_EQ(rsp.path_consumed, 17);
	/* ReferralHeaderFlags and ServerType as sent, unknown bits too */
	MUT((smb_put_le32(m + 4, 0xfffffff8u), smb_put_le16(m + 12, 7)), 0);
	CHECK(rsp.header_flags == 0xfffffff8u && out[0].server_type == 7);
#undef MUT
}

/* Every one-byte change of the answers, and every length: under ASan this
 * proves nothing is read outside; here it proves the verdicts are only the
 * documented ones, and a success leaves NUL-terminated strings in strs. */
static void check_all_bytes(uint8_t *b, size_t n, const char *req)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t keep = b[i];
		for (int v = 0; v < 256; v += 17) {
			b[i] = (uint8_t)v;
			int rc = decode(b, n, req);
			CHECK(rc == 0 || rc == -EBADMSG || rc == -ENOENT || rc == -E2BIG);
			if (rc == 0)
				CHECK(rsp.str_len <= sizeof(strs) && strs[rsp.str_len - 1] == '\0');
		}
		b[i] = keep;
	}
}

static void test_mutations(void)
{
	uint8_t b[512];
	size_t n = v4_root(b);
	check_all_bytes(b, n, "\\srv\\dfs\\dir\\file");
	struct ent dc = {.ver = 3,
	                 .flags = DFS_ENTRY_NAME_LIST_REFERRAL,
	                 .special = "\\corp",
	                 .names = {"\\dc1", "\\dc2"},
	                 .nnames = 2};
	n = build(b, sizeof(b), 0, 0, &dc, 1);
	check_all_bytes(b, n, "\\corp");
	struct ent v1 = {.ver = 1, .net = "\\fs\\x"};
	n = build(b, sizeof(b), 2, 0, &v1, 1);
	check_all_bytes(b, n, "\\srv");
}

/* dfs_target_split(): the pieces of a NetworkAddress, and what is no
 * address at all. */
static void split_ok(const char *addr, const char *server, const char *share, const char *path)
{
	char buf[128];
	const char *sv = NULL, *sh = NULL, *p = NULL;
	CHECK_EQ(dfs_target_split(addr, buf, strlen(addr) + 3, &sv, &sh, &p), 0);
	CHECK(sv && strcmp(sv, server) == 0);
	CHECK(sh && strcmp(sh, share) == 0);
	CHECK(p && strcmp(p, path) == 0);
	/* the room it documents is the room it asks for */
	CHECK_EQ(dfs_target_split(addr, buf, strlen(addr) + 2, &sv, &sh, &p), -ENOSPC);
}

static void test_target_split(void)
{
	split_ok("\\srv\\share", "srv", "share", "");
	split_ok("\\srv\\share\\", "srv", "share", "");
	split_ok("\\10.0.0.1\\data\\a\\b", "10.0.0.1", "data", "a/b");
	split_ok("\\srv\\share\\dir\\", "srv", "share", "dir");
	split_ok("\\h\xc3\xa9\\s\xe2\x82\xac\\\xf0\x9f\x98\x80", "h\xc3\xa9", "s\xe2\x82\xac",
	         "\xf0\x9f\x98\x80");
	const char *bad[] = {"",
	                     "srv\\share",
	                     "\\\\srv\\share",
	                     "\\srv",
	                     "\\srv\\",
	                     "\\\\",
	                     "\\srv\\\\x",
	                     "\\\\share",
	                     "\\s\\sh\\\\x",
	                     "\\s\\sh\\a\\\\b",
	                     "/srv/share",
	                     "\\srv\\share\\su/",
	                     "\\srv\\sh/are",
	                     "\\srv\\share\\a/..\\b"};
	char buf[64];
	const char *sv, *sh, *p;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(dfs_target_split(bad[i], buf, sizeof(buf), &sv, &sh, &p), -EINVAL);
	CHECK_EQ(dfs_target_split(NULL, buf, sizeof(buf), &sv, &sh, &p), -EINVAL);
	CHECK_EQ(dfs_target_split("\\srv\\share\\x", buf, 4, &sv, &sh, &p), -ENOSPC);
}

int main(void)
{
	RUN(test_target_split);
	RUN(test_request);
	RUN(test_v4_root);
	RUN(test_v3_link);
	RUN(test_v3_domain);
	RUN(test_v3_dc);
	RUN(test_v1_v2);
	RUN(test_capacity);
	RUN(test_hostile);
	RUN(test_mutations);
	return check_report();
}
