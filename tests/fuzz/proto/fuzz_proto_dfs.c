/* Fuzz: RESP_GET_DFS_REFERRAL ([MS-DFSC] 2.2.4, client/proto/dfs.h), the
 * output of FSCTL_DFS_GET_REFERRALS, decoded as the answer to three request
 * paths (a long ASCII one, so most PathConsumed values are in range; one
 * with a two-byte and a four-byte character; and "", a domain referral),
 * each with roomy, small and no output space.  Checks: the verdict is one the
 * header documents and does not depend on the room given (only 0 becomes
 * -E2BIG); every string comes back NUL-terminated, valid UTF-8, inside the
 * caller's string buffer, and the strings add up to str_len; each entry has
 * the strings of its form and no others; PathConsumed maps onto a prefix of
 * the path; every target address goes through dfs_target_split().  Output
 * arrays are exact-size heap blocks, so ASan flags a write
 * past the caller's room. */
#include <errno.h>

#include "client/proto/dfs.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

#define BIG_MAX    512
#define BIG_STRS   65536
#define SMALL_MAX  1
#define SMALL_STRS 24

static void check_ok(const struct dfs_referral_rsp *r, const struct dfs_referral *o,
                     const char *buf, size_t cap)
{
	size_t sum = 0;
	if (r->version < 1 || r->version > 4 || r->str_len == 0 || r->str_len > cap ||
	    buf[r->str_len - 1] != '\0')
		abort();
	for (size_t i = 0; i < r->count; i++) {
		const struct dfs_referral *e = &o[i];
		if (e->version != r->version)
			abort();
		if ((e->name_list && e->version < 3) || (e->target_set_boundary && e->version != 4))
			abort();
		if (e->version == 1) {
			if (e->dfs_path || e->dfs_alt_path || e->special_name ||
			    e->expanded_names || e->ttl != 0 || e->entry_flags != 0)
				abort();
			fuzz_check_str(e->network_address, buf, cap, &sum);
		} else if (!e->name_list) {
			if (e->special_name || e->expanded_names || e->expanded_count)
				abort();
			fuzz_check_str(e->dfs_path, buf, cap, &sum);
			fuzz_check_str(e->dfs_alt_path, buf, cap, &sum);
			fuzz_check_str(e->network_address, buf, cap, &sum);
		} else {
			if (e->dfs_path || e->dfs_alt_path || e->network_address ||
			    !e->expanded_names != !e->expanded_count)
				abort();
			fuzz_check_str(e->special_name, buf, cap, &sum);
			const char *n = e->expanded_names;
			for (uint16_t k = 0; k < e->expanded_count; k++) {
				fuzz_check_str(n, buf, cap, &sum);
				n += strlen(n) + 1;
			}
		}
	}
	/* every string the answer names is there once, nothing else */
	if (sum != r->str_len)
		abort();
}

/* dfs_target_split() on a decoded address: 0 or -EINVAL, and on 0 three
 * pieces inside the buffer, none with a backslash, server and share not
 * empty, the path without '/' at either end. */
static void check_split(const char *addr)
{
	size_t cap = strlen(addr) + 3;
	char *buf = malloc(cap);
	const char *sv, *sh, *p;
	if (!buf)
		return;
	int r = dfs_target_split(addr, buf, cap, &sv, &sh, &p);
	if (r != 0 && r != -EINVAL)
		abort();
	if (r == 0) {
		const char *pieces[] = {sv, sh, p};
		for (int i = 0; i < 3; i++) {
			if (pieces[i] < buf || pieces[i] >= buf + cap ||
			    strnlen(pieces[i], (size_t)(buf + cap - pieces[i])) ==
			        (size_t)(buf + cap - pieces[i]) ||
			    strchr(pieces[i], '\\'))
				abort();
		}
		size_t pl = strlen(p);
		if (!*sv || !*sh || (pl && (p[0] == '/' || p[pl - 1] == '/')))
			abort();
	}
	free(buf);
}

static void one_path(const uint8_t *m, size_t size, const char *path)
{
	struct dfs_referral *big = malloc(BIG_MAX * sizeof(*big));
	struct dfs_referral *small = malloc(SMALL_MAX * sizeof(*small));
	char *bs = malloc(BIG_STRS), *ss = malloc(SMALL_STRS);
	if (!big || !small || !bs || !ss)
		goto out;
	struct dfs_referral_rsp rb, rs, rn;
	int b = dfs_referral_rsp_decode(m, size, path, &rb, big, BIG_MAX, bs, BIG_STRS);
	int s = dfs_referral_rsp_decode(m, size, path, &rs, small, SMALL_MAX, ss, SMALL_STRS);
	int n = dfs_referral_rsp_decode(m, size, path, &rn, NULL, 0, NULL, 0);
	if (b != 0 && b != -EBADMSG && b != -ENOENT && b != -E2BIG)
		abort();
	/* the room changes nothing but 0 into -E2BIG */
	if (b == -EBADMSG || b == -ENOENT) {
		if (s != b || n != b)
			abort();
	} else {
		if (n != -E2BIG || (b == -E2BIG && s != -E2BIG) || (s != 0 && s != -E2BIG))
			abort();
	}
	if (b == 0 || b == -E2BIG || b == -ENOENT) {
		if (rb.count != rs.count || rb.count != rn.count || rb.str_len != rs.str_len ||
		    rb.str_len != rn.str_len || rb.path_consumed != rn.path_consumed ||
		    rb.header_flags != rn.header_flags || rb.version != rn.version)
			abort();
		/* PathConsumed: even, and a prefix of the path that many UTF-16
		 * bytes long */
		size_t pl = strlen(path);
		if (rb.path_consumed16 % 2 || rb.path_consumed > pl ||
		    rb.path_consumed16 / 2 > rb.path_consumed)
			abort();
		uint8_t u16[2 * 600];
		ssize_t w = smb_utf8_to_utf16le(path, rb.path_consumed, u16, sizeof(u16), true);
		if (w != rb.path_consumed16)
			abort();
		/* NumberOfReferrals entries of 8 bytes or more after the header */
		if (b != -ENOENT && (rb.count == 0 || (size_t)rb.count * 8 > size - 8))
			abort();
		if (b == -ENOENT && rb.count != 0)
			abort();
	}
	if (b == 0) {
		check_ok(&rb, big, bs, BIG_STRS);
		/* each target's address goes through the splitter the client
		 * uses (dfs_target_split), in a buffer of exactly the room it
		 * documents */
		for (size_t i = 0; i < rb.count; i++)
			if (big[i].network_address)
				check_split(big[i].network_address);
	}
	if (s == 0)
		check_ok(&rs, small, ss, SMALL_STRS);
out:
	free(big);
	free(small);
	free(bs);
	free(ss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char ascii[513];
	if (!ascii[0]) {
		/* "\srv\dfs\link\ddd...": 512 bytes, any even PathConsumed up
		 * to 1024 lands on it */
		memset(ascii, 'd', sizeof(ascii) - 1);
		memcpy(ascii, "\\srv\\dfs\\link\\", 14);
	}
	/* "\srv\dfs\lïnk😀\x": 13 units, a surrogate pair, 2 units */
	static const char nonascii[] = "\\srv\\dfs\\l\xc3\xafnk\xf0\x9f\x98\x80\\x";
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;
	one_path(m, size, ascii);
	one_path(m, size, nonascii);
	one_path(m, size, "");

	/* the request for each path: MaxReferralLevel, the path, a NUL */
	uint8_t req[4 + 2 * 600];
	if (dfs_referral_req_encode(req, sizeof(req), ascii) != 4 + 2 * 512 ||
	    dfs_referral_req_encode(req, sizeof(req), nonascii) != 4 + 2 * 17 ||
	    dfs_referral_req_encode(req, sizeof(req), "") != 4)
		abort();
	free(m);
	return 0;
}
