/* tests/fuzz/proto/fuzz_proto_common.h — shared bits of the codec fuzzers. */
#ifndef SMBRDMA_FUZZ_PROTO_COMMON_H
#define SMBRDMA_FUZZ_PROTO_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/proto/smb2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An exact-size heap copy of [p, p+n) (libFuzzer's own buffer is one too,
 * but other drivers, e.g. a replay with a bigger buffer, may not give one),
 * so ASan flags any read past the end.  NULL only when out of memory. */
static inline uint8_t *fuzz_dup(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (c && n)
		memcpy(c, p, n);
	return c;
}

/* A decoder's output pointers must lie inside the input. */
static inline void fuzz_in(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	if (!p)
		return;
	if (p < base || (size_t)(p - base) > len || n > len - (size_t)(p - base))
		abort();
}

/* Touches every byte of [p, p+n) so ASan notices a bad range. */
static inline uint8_t fuzz_touch(const uint8_t *p, size_t n)
{
	uint8_t x = 0;
	for (size_t i = 0; p && i < n; i++)
		x ^= p[i];
	return x;
}

/* A decoded name: s is a NUL-terminated string inside [buf, buf + cap)
 * (cap at most 65536) that converts back to UTF-16; its size with the NUL
 * is added to *sum. */
static inline void fuzz_check_str(const char *s, const char *buf, size_t cap, size_t *sum)
{
	static uint8_t u16[2 * 65536];
	if (!s || s < buf || s >= buf + cap || cap > 65536)
		abort();
	size_t n = strnlen(s, (size_t)(buf + cap - s));
	if (n == (size_t)(buf + cap - s))
		abort();
	if (smb_utf8_to_utf16le(s, n, u16, sizeof(u16), false) < 0)
		abort();
	*sum += n + 1;
}

/* Walks a directory buffer with every class the iterator knows. */
static inline void fuzz_dirents(const uint8_t *b, uint32_t len)
{
	static const uint8_t classes[] = {1, 2, 3, 37, 38};
	char name[1024];
	for (size_t c = 0; c < sizeof(classes); c++) {
		uint32_t off = 0, prev = 0;
		struct smb2_dirent e;
		int rc, steps = 0;
		while ((rc = smb2_dirent_next(classes[c], b, len, &off, &e)) == 1) {
			fuzz_in(e.name16, e.name16_len, b, len);
			(void)smb_utf16le_to_utf8(e.name16, e.name16_len, name, sizeof(name));
			if (off <= prev && steps > 0)
				abort(); /* must always advance */
			prev = off;
			if (++steps > (int)len)
				abort();
		}
	}
}

/* Runs every info-class decoder on a QUERY_INFO buffer. */
static inline void fuzz_infos(const uint8_t *b, size_t len)
{
	struct smb2_file_basic_info bi;
	struct smb2_file_standard_info si;
	struct smb2_file_all_info ai;
	struct smb2_file_network_open_info ni;
	struct smb2_fs_full_size_info fi;
	uint64_t ino;
	(void)smb2_file_basic_info_decode(b, len, &bi);
	(void)smb2_file_standard_info_decode(b, len, &si);
	(void)smb2_file_internal_info_decode(b, len, &ino);
	(void)smb2_file_all_info_decode(b, len, &ai);
	(void)smb2_file_network_open_info_decode(b, len, &ni);
	(void)smb2_fs_full_size_info_decode(b, len, &fi);
}

/* Walks a create-context chain both ways. */
static inline void fuzz_create_ctxs(const uint8_t *chain, uint32_t len)
{
	uint32_t off = 0;
	char name[5];
	const uint8_t *data, *rn, *fd;
	uint32_t dlen, fdl;
	uint16_t rnl;
	int steps = 0;
	bool dh2q_seen = false;
	while (smb2_create_ctx_next(chain, len, &off, name, &data, &dlen) == 1) {
		fuzz_in(data, dlen, chain, len);
		fuzz_touch(data, dlen);
		if (++steps > (int)len)
			abort();
		/* smb2_create_ctx_find() gives the first context of a tag */
		if (strcmp(name, "DH2Q") == 0 && !dh2q_seen) {
			dh2q_seen = true;
			if (smb2_create_ctx_find(chain, len, "DH2Q", &fd, &fdl) != 1 ||
			    fd != data || fdl != dlen)
				abort();
		}
	}
	if (!dh2q_seen && smb2_create_ctx_find(chain, len, "DH2Q", &fd, &fdl) != 0)
		abort();
	off = 0;
	while (smb2_create_ctx_next_raw(chain, len, &off, &rn, &rnl, &data, &dlen) == 1) {
		fuzz_in(rn, rnl, chain, len);
		fuzz_in(data, dlen, chain, len);
	}
}

/* If msg decodes as a CREATE response, each of its create contexts named
 * name (4 chars) goes to check(data, len), as client/ops.c walks them; then
 * the whole input goes to check too, as a context's data. */
static inline void fuzz_each_create_ctx(const uint8_t *msg, size_t size, const char *name,
                                        void (*check)(const uint8_t *d, uint32_t n))
{
	struct smb2_create_rsp cr;
	if (smb2_create_rsp_decode(msg, size, &cr) == 0) {
		uint32_t off = 0;
		char got[5];
		const uint8_t *d;
		uint32_t dlen;
		while (smb2_create_ctx_next(cr.contexts, cr.contexts_len, &off, got, &d, &dlen) ==
		       1)
			if (strcmp(got, name) == 0)
				check(d, dlen);
	}
	if (size <= UINT32_MAX)
		check(msg, (uint32_t)size);
}

#endif
