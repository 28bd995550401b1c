/* Fuzz: the [MS-SWN] witness answers (client/proto/witness.h), the input
 * taken as the stub of each: WitnessrAsyncNotify (RESP_ASYNC_NOTIFY and its
 * MessageBuffer) with roomy, small and no output space,
 * WitnessrGetInterfaceList likewise, WitnessrRegister(Ex) and
 * WitnessrUnRegister; and WitnessrRegisterEx encoded with names cut from
 * the input.  Checks: verdicts are the documented ones and the room changes
 * nothing but 0 into -E2BIG, with the same counts; every name is a
 * NUL-terminated, valid UTF-8 string inside the caller's buffer and the names
 * add up to str_len; each message's addresses lie inside naddrs and follow
 * the previous message's; an encoded name reads back as the UTF-16 it
 * was.  Output arrays are exact-size heap blocks, so ASan flags a write
 * past the caller's room. */
#include <errno.h>

#include "client/proto/witness.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

#define BIG_MSGS   256
#define BIG_ADDRS  512
#define BIG_STRS   65536
#define SMALL_MSGS 1
#define SMALL_STRS 8

static void check_notify(const struct witness_notify *n, const struct witness_msg *msgs,
                         const char *strs, size_t strcap)
{
	size_t sum = 0, next = 0;
	for (uint32_t i = 0; i < n->num; i++) {
		const struct witness_msg *m = &msgs[i];
		if (n->type == WITNESS_NOTIFY_RESOURCE_CHANGE) {
			fuzz_check_str(m->resource_name, strs, strcap, &sum);
			if (m->addr_count)
				abort();
		} else {
			if (m->resource_name || m->addr_first != next ||
			    m->addr_count > n->naddrs - m->addr_first)
				abort();
			next += m->addr_count;
		}
	}
	if (sum != n->str_len || (n->type != WITNESS_NOTIFY_RESOURCE_CHANGE && next != n->naddrs))
		abort();
}

static void notify(const uint8_t *m, size_t size)
{
	struct witness_msg *bm = malloc(BIG_MSGS * sizeof(*bm)), *sm = malloc(sizeof(*sm));
	struct witness_ipaddr *ba = malloc(BIG_ADDRS * sizeof(*ba)), *sa = malloc(sizeof(*sa));
	char *bs = malloc(BIG_STRS), *ss = malloc(SMALL_STRS);
	if (!bm || !sm || !ba || !sa || !bs || !ss)
		goto out;
	struct witness_notify nb, ns, nn;
	int b =
	    witness_async_notify_decode(m, size, &nb, bm, BIG_MSGS, ba, BIG_ADDRS, bs, BIG_STRS);
	int s = witness_async_notify_decode(m, size, &ns, sm, SMALL_MSGS, sa, 1, ss, SMALL_STRS);
	int n = witness_async_notify_decode(m, size, &nn, NULL, 0, NULL, 0, NULL, 0);
	if (b != 0 && b != -EBADMSG && b != -E2BIG)
		abort();
	if (b == -EBADMSG) {
		if (s != b || n != b)
			abort();
		goto out;
	}
	if ((s != 0 && s != -E2BIG) || (b == -E2BIG && s != -E2BIG) ||
	    (n != (nb.num || nb.naddrs || nb.str_len ? -E2BIG : 0)))
		abort();
	if (nb.num != ns.num || nb.num != nn.num || nb.naddrs != nn.naddrs ||
	    nb.str_len != nn.str_len || nb.type != nn.type || nb.werror != nn.werror ||
	    nb.present != nn.present || ns.naddrs != nb.naddrs || ns.str_len != nb.str_len)
		abort();
	if (nb.present ? nb.type < 1 || nb.type > 4 : nb.num != 0)
		abort();
	if (b == 0)
		check_notify(&nb, bm, bs, BIG_STRS);
	if (s == 0)
		check_notify(&ns, sm, ss, SMALL_STRS);
out:
	free(bm);
	free(sm);
	free(ba);
	free(sa);
	free(bs);
	free(ss);
}

static void interfaces(const uint8_t *m, size_t size)
{
	struct witness_interface *big = malloc(8 * sizeof(*big)), *one = malloc(sizeof(*one));
	if (!big || !one)
		goto out;
	uint32_t cb = 0, c1 = 0, cn = 0, wb = 0, w1 = 0, wn = 0;
	int b = witness_get_interface_list_decode(m, size, big, 8, &cb, &wb);
	int o = witness_get_interface_list_decode(m, size, one, 1, &c1, &w1);
	int n = witness_get_interface_list_decode(m, size, NULL, 0, &cn, &wn);
	if (b != 0 && b != -EBADMSG && b != -E2BIG)
		abort();
	if (b == -EBADMSG) {
		if (o != b || n != b)
			abort();
		goto out;
	}
	if (cb != c1 || cb != cn || wb != w1 || wb != wn || b != (cb > 8 ? -E2BIG : 0) ||
	    o != (cb > 1 ? -E2BIG : 0) || n != (cb ? -E2BIG : 0))
		abort();
	/* 552 bytes an entry, and the pointers, counts and WERROR around them */
	if ((uint64_t)cb * 552 + (cb ? 20 : 8) > size)
		abort();
	for (uint32_t i = 0; i < cb && i < 8; i++) {
		size_t sum = 0;
		fuzz_check_str(big[i].group_name, big[i].group_name, sizeof(big[i].group_name),
		               &sum);
	}
out:
	free(big);
	free(one);
}

static void small_answers(const uint8_t *m, size_t size)
{
	uint8_t h[WITNESS_HANDLE_LEN];
	uint32_t werr;
	int rc = witness_register_decode(m, size, h, &werr);
	if (rc != (size == 24 ? 0 : -EBADMSG))
		abort();
	if (rc == 0 && (memcmp(h, m, 20) != 0 || werr != smb_le32(m + 20)))
		abort();
	rc = witness_unregister_decode(m, size, &werr);
	if (rc != (size == 4 ? 0 : -EBADMSG))
		abort();
}

/* A conformant varying string at r: the UTF-16 of want. */
static void check_ndr_string(struct smb_rd *r, const char *want)
{
	static uint8_t u[4096];
	uint32_t ref = smb_rd_u32(r);
	if (!want) {
		if (ref != 0)
			abort();
		return;
	}
	ssize_t n = smb_utf8_to_utf16le(want, strlen(want), u, sizeof(u), false);
	uint32_t max = smb_rd_u32(r), off = smb_rd_u32(r), act = smb_rd_u32(r);
	const uint8_t *s = smb_rd_ptr(r, 2 * (size_t)act);
	size_t at = (size_t)(r->p - r->base);
	smb_rd_skip(r, (4 - at % 4) % 4);
	if (r->err || !ref || n < 0 || max != act || off != 0 || act != (size_t)n / 2 + 1 ||
	    memcmp(s, u, (size_t)n) != 0 || smb_le16(s + n) != 0)
		abort();
}

static void register_ex(const uint8_t *m, size_t size)
{
	/* up to four names from the input, split at '\0': absent ones NULL */
	char names[4][300];
	const char *p[4] = {NULL, NULL, NULL, NULL};
	size_t off = 0;
	for (int k = 0; k < 4 && off < size; k++) {
		size_t l = strnlen((const char *)m + off, size - off);
		if (l >= sizeof(names[k]))
			l = sizeof(names[k]) - 1;
		memcpy(names[k], m + off, l);
		names[k][l] = '\0';
		p[k] = names[k];
		off += l + 1;
	}
	struct witness_register a = {
	    .version = WITNESS_V2,
	    .net_name = p[0],
	    .share_name = p[1],
	    .ip_address = p[2],
	    .client_name = p[3],
	    .flags = 1,
	    .keep_alive_timeout = 77,
	};
	static uint8_t stub[8192];
	ssize_t n = witness_register_ex_encode(stub, sizeof(stub), &a);
	if (n == -EINVAL)
		return; /* a name that is not UTF-8 */
	if (n < 0)
		abort();
	struct smb_rd r;
	smb_rd_init(&r, stub, (size_t)n);
	if (smb_rd_u32(&r) != WITNESS_V2)
		abort();
	for (int k = 0; k < 4; k++)
		check_ndr_string(&r, p[k]);
	if (smb_rd_u32(&r) != 1 || smb_rd_u32(&r) != 77 || r.err || smb_rd_left(&r))
		abort();
	/* any room short of n is -ENOSPC, never a partial success */
	if (n > 0 && witness_register_ex_encode(stub, (size_t)n - 1, &a) != -ENOSPC)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;
	notify(m, size);
	interfaces(m, size);
	small_answers(m, size);
	register_ex(m, size);
	free(m);
	return 0;
}
