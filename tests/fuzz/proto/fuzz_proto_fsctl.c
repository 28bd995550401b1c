/* Fuzz: the decoders of smb2_fsctl.h, each on every input - EA chains,
 * resume key and copychunk response, allocated ranges, the LOCK response,
 * symlink reparse data and mfsymlink files.  Checks: what a decoder hands
 * back lies inside the input, iterators always advance, counts agree with
 * the input's size, and what decodes re-encodes to the same fields. */
#include <errno.h>

#include "client/proto/smb2_fsctl.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

static void eas(const uint8_t *b, size_t len)
{
	uint32_t off = 0, prev = 0;
	struct smb2_ea e;
	int rc, steps = 0;
	while ((rc = smb2_ea_next(b, len, &off, &e)) == 1) {
		fuzz_in((const uint8_t *)e.name, e.name_len, b, len);
		fuzz_in(e.value, e.value_len, b, len);
		if (!e.name_len || !e.name || e.name_len > SMB2_EA_NAME_MAX ||
		    memchr(e.name, '\0', e.name_len))
			abort();
		/* one entry re-encodes to the same bytes, padding aside */
		static uint8_t again[8 + 256 + 65536];
		ssize_t n = smb2_ea_list_encode(again, sizeof(again), &e, 1);
		if (n != (ssize_t)(8 + e.name_len + 1 + e.value_len) ||
		    memcmp(again + 4, b + prev + 4, (size_t)n - 4) != 0)
			abort();
		if (off != UINT32_MAX && off <= prev)
			abort(); /* must advance */
		prev = off;
		if (++steps > (int)len)
			abort();
	}
	if (rc != 0 && rc != -EBADMSG)
		abort();
	/* the whole-chain decoder agrees with the walk: the entries with a
	 * value, inside the input, within SMB2_EA_LIST_MAX */
	static struct smb2_ea list[SMB2_EA_LIST_MAX(65536)];
	size_t max = SMB2_EA_LIST_MAX(len), n = 99;
	if (max > sizeof(list) / sizeof(list[0]))
		return;
	int lrc = smb2_ea_list_decode(b, len, list, max, &n);
	if (lrc != rc || (rc < 0 && n != 0) || n > max || n > (size_t)steps)
		abort();
	for (size_t i = 0; i < n; i++) {
		fuzz_in((const uint8_t *)list[i].name, list[i].name_len, b, len);
		fuzz_in(list[i].value, list[i].value_len, b, len);
		if (!list[i].value_len)
			abort();
	}
}

static void ranges(const uint8_t *b, size_t len)
{
	struct smb2_range r[4];
	size_t n = 99;
	int rc = smb2_ranges_decode(b, len, r, 4, &n);
	if (rc == 0) {
		if (n != len / 16 || len % 16)
			abort();
		for (size_t i = 1; i < n && i < 4; i++)
			if (r[i].off < r[i - 1].off + r[i - 1].len)
				abort();
	} else if (rc != -EBADMSG || n != 0) {
		abort();
	}
}

static void symlink(const uint8_t *b, size_t len)
{
	struct smb2_symlink s;
	int rc = smb2_symlink_reparse_decode(b, len, &s);
	if (rc == 0) {
		fuzz_in(s.subst16, s.subst16_len, b, len);
		fuzz_in(s.print16, s.print16_len, b, len);
		if (!s.subst16_len || s.subst16_len % 2)
			abort();
		static char name[4 * 65536];
		(void)smb_utf16le_to_utf8(s.subst16, s.subst16_len, name, sizeof(name));
	} else if (rc != -EBADMSG && rc != -EOPNOTSUPP) {
		abort();
	}
}

static void mfsymlink(const uint8_t *b, size_t len)
{
	const char *t, *m;
	size_t tl;
	int rc = smb_mfsymlink_decode(b, len, &t, &tl, &m);
	if (rc == 0) {
		fuzz_in((const uint8_t *)t, tl, b, len);
		fuzz_in((const uint8_t *)m, 32, b, len);
		uint8_t again[SMB_MFSYMLINK_SIZE];
		/* re-encoding keeps everything but the padding after the target */
		if (smb_mfsymlink_encode(again, sizeof(again), t, tl, m) != SMB_MFSYMLINK_SIZE ||
		    memcmp(again, b, 43 + tl) != 0)
			abort();
	} else if (rc != -EBADMSG && rc != -EINVAL) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = fuzz_dup(data, size);
	if (!b)
		return 0;
	eas(b, size);
	ranges(b, size);
	symlink(b, size);
	mfsymlink(b, size);
	uint8_t key[SMB2_RESUME_KEY_LEN];
	int rc = smb2_resume_key_decode(b, size, key);
	if ((rc == 0) != (size >= 28))
		abort();
	struct smb2_copychunk_rsp cr;
	rc = smb2_copychunk_rsp_decode(b, size, &cr);
	if ((rc == 0) != (size >= 12))
		abort();
	rc = smb2_lock_rsp_decode(b, size);
	if (rc != 0 && rc != -EBADMSG && rc != -EPROTO)
		abort();
	free(b);
	return 0;
}
