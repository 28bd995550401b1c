/* tests/unit/proto/test_fsctl.c — EAs, copychunk, ranges, LOCK, symlinks. */
#include <errno.h>

#include "client/proto/smb2_const.h"
#include "client/proto/smb2_fsctl.h"
#include "tests/unit/check.h"

static void test_ea_round_trip(void)
{
	uint8_t buf[256];
	const uint8_t v1[] = {1, 2, 3}, v2[] = "hello";
	struct smb2_ea in[] = {
	    {.name = "user.a", .name_len = 6, .value = v1, .value_len = 3},
	    {.name = "B", .name_len = 1, .value = v2, .value_len = 5, .flags = 0x80},
	    {.name = "gone", .name_len = 4},
	};
	ssize_t n = smb2_ea_list_encode(buf, sizeof(buf), in, 3);
	/* 8+6+1+3 = 18 -> 20; 8+1+1+5 = 15 -> 16; 8+4+1 = 13 (last: no padding) */
	CHECK_EQ(n, 20 + 16 + 13);
	CHECK_EQ(smb_le32(buf), 20);
	CHECK_EQ(smb_le32(buf + 20), 16);
	CHECK_EQ(smb_le32(buf + 36), 0);
	uint32_t off = 0;
	struct smb2_ea e;
	CHECK_EQ(smb2_ea_next(buf, (size_t)n, &off, &e), 1);
	CHECK(e.name_len == 6 && memcmp(e.name, "user.a", 6) == 0 && e.value_len == 3);
	CHECK_MEM(e.value, v1, 3);
	CHECK_EQ(smb2_ea_next(buf, (size_t)n, &off, &e), 1);
	CHECK(e.name_len == 1 && e.name[0] == 'B' && e.flags == 0x80 && e.value_len == 5);
	CHECK_EQ(smb2_ea_next(buf, (size_t)n, &off, &e), 1);
	CHECK(e.name_len == 4 && e.value_len == 0 && e.value == NULL);
	CHECK_EQ(smb2_ea_next(buf, (size_t)n, &off, &e), 0);
	off = 0;
	CHECK_EQ(smb2_ea_next(buf, 0, &off, &e), 0); /* no EAs at all */
}

static void test_ea_bad(void)
{
	uint8_t buf[64];
	struct smb2_ea e = {.name = "a", .name_len = 1};
	CHECK_EQ(smb2_ea_list_encode(buf, 8, &e, 1), -ENOSPC);
	e.name_len = 0;
	CHECK_EQ(smb2_ea_list_encode(buf, sizeof(buf), &e, 1), -EINVAL);
	e = (struct smb2_ea){.name = "a\0b", .name_len = 3};
	CHECK_EQ(smb2_ea_list_encode(buf, sizeof(buf), &e, 1), -EINVAL);
	CHECK_EQ(smb2_get_ea_encode(buf, sizeof(buf), "user.x", 6), 4 + 1 + 6 + 1);

	e = (struct smb2_ea){
	    .name = "ab", .name_len = 2, .value = (const uint8_t *)"xy", .value_len = 2};
	ssize_t n = smb2_ea_list_encode(buf, sizeof(buf), &e, 1);
	CHECK_EQ(n, 13);
	struct smb2_ea o;
	uint32_t off;
	/* every truncation fails */
	for (size_t l = 1; l < (size_t)n; l++) {
		off = 0;
		CHECK_EQ(smb2_ea_next(buf, l, &off, &o), -EBADMSG);
	}
	/* a name without its NUL */
	buf[10] = 'x';
	off = 0;
	CHECK_EQ(smb2_ea_next(buf, (size_t)n, &off, &o), -EBADMSG);
	buf[10] = 0;
	/* NextEntryOffset: unaligned, not past this entry, past the end */
	uint32_t bad[] = {14, 4, 64};
	for (size_t i = 0; i < 3; i++) {
		smb_put_le32(buf, bad[i]);
		off = 0;
		CHECK_EQ(smb2_ea_next(buf, 16, &off, &o), -EBADMSG);
	}
}

/* The whole-chain decoder the engine hands fuse/ and lib/ lists with. */
static void test_ea_list(void)
{
	uint8_t buf[256];
	const uint8_t v1[] = {1, 2, 3}, v2[] = "hello";
	struct smb2_ea in[] = {
	    {.name = "gone", .name_len = 4},
	    {.name = "user.a", .name_len = 6, .value = v1, .value_len = 3},
	    {.name = "empty", .name_len = 5},
	    {.name = "B", .name_len = 1, .value = v2, .value_len = 5},
	};
	ssize_t n = smb2_ea_list_encode(buf, sizeof(buf), in, 4);
	CHECK(n > 0);
	struct smb2_ea out[SMB2_EA_LIST_MAX(256)];
	size_t count = 99;
	/* only the EAs with a value, in order, pointing into buf */
	CHECK_EQ(smb2_ea_list_decode(buf, (size_t)n, out, 4, &count), 0);
	CHECK_EQ(count, 2);
	CHECK(out[0].name_len == 6 && memcmp(out[0].name, "user.a", 6) == 0);
	CHECK(out[0].name[6] == '\0' && out[0].value_len == 3);
	CHECK_MEM(out[0].value, v1, 3);
	CHECK(out[0].value >= buf && out[0].value + 3 <= buf + n);
	CHECK(out[1].name_len == 1 && out[1].name[0] == 'B' && out[1].value_len == 5);
	/* a short out array: filled up to max, the count still says all */
	CHECK_EQ(smb2_ea_list_decode(buf, (size_t)n, out, 1, &count), 0);
	CHECK_EQ(count, 2);
	CHECK_EQ(smb2_ea_list_decode(buf, (size_t)n, NULL, 0, &count), 0);
	CHECK_EQ(count, 2);
	/* the bound holds for the densest chain: one-letter names, no values */
	struct smb2_ea tiny[20];
	for (size_t i = 0; i < 20; i++)
		tiny[i] = (struct smb2_ea){.name = "x", .name_len = 1};
	n = smb2_ea_list_encode(buf, sizeof(buf), tiny, 20);
	CHECK(n > 0 && (size_t)n == 19 * 12 + 10);
	CHECK(SMB2_EA_LIST_MAX((size_t)n) >= 20);
	CHECK_EQ(smb2_ea_list_decode(buf, (size_t)n, out, 0, &count), 0);
	CHECK_EQ(count, 0);
	/* no EAs: an empty list */
	CHECK_EQ(smb2_ea_list_decode(buf, 0, out, 4, &count), 0);
	CHECK_EQ(count, 0);
	/* malformed anywhere, even after good entries: -EBADMSG, count 0 */
	n = smb2_ea_list_encode(buf, sizeof(buf), in, 4);
	for (size_t l = 1; l < (size_t)n; l++) {
		count = 99;
		int rc = smb2_ea_list_decode(buf, l, out, 4, &count);
		CHECK(rc == -EBADMSG && count == 0);
	}
}

static void test_copychunk(void)
{
	uint8_t key[SMB2_RESUME_KEY_LEN], buf[128];
	for (int i = 0; i < SMB2_RESUME_KEY_LEN; i++)
		key[i] = (uint8_t)i;
	struct smb2_chunk c[2] = {{0, 4096, 1 << 20}, {1 << 20, 4096 + (1 << 20), 12}};
	ssize_t n = smb2_copychunk_encode(buf, sizeof(buf), key, c, 2);
	CHECK_EQ(n, 24 + 8 + 2 * 24);
	CHECK_MEM(buf, key, 24);
	CHECK_EQ(smb_le32(buf + 24), 2);
	CHECK_EQ(smb_le64(buf + 32 + 24), 1 << 20);
	CHECK_EQ(smb_le32(buf + 32 + 24 + 16), 12);
	CHECK_EQ(smb2_copychunk_encode(buf, 40, key, c, 2), -ENOSPC);
	CHECK_EQ(smb2_copychunk_encode(buf, sizeof(buf), key, c, 0), -EINVAL);

	uint8_t out[28] = {0};
	memcpy(out, key, 24);
	uint8_t k2[SMB2_RESUME_KEY_LEN];
	CHECK_EQ(smb2_resume_key_decode(out, 28, k2), 0);
	CHECK_MEM(k2, key, 24);
	CHECK_EQ(smb2_resume_key_decode(out, 27, k2), -EBADMSG);

	uint8_t r[12];
	smb_put_le32(r, 2);
	smb_put_le32(r + 4, 12);
	smb_put_le32(r + 8, (1 << 20) + 12);
	struct smb2_copychunk_rsp cr;
	CHECK_EQ(smb2_copychunk_rsp_decode(r, 12, &cr), 0);
	CHECK(cr.chunks_written == 2 && cr.chunk_bytes_written == 12 &&
	      cr.total_bytes_written == (1 << 20) + 12);
	CHECK_EQ(smb2_copychunk_rsp_decode(r, 11, &cr), -EBADMSG);
}

static void test_ranges(void)
{
	uint8_t buf[64];
	CHECK_EQ(smb2_range_encode(buf, 16, 4096, 8192), 16);
	CHECK_EQ(smb_le64(buf + 8), 8192);
	CHECK_EQ(smb2_zero_data_encode(buf, 16, 4096, 8192), 16);
	CHECK_EQ(smb_le64(buf + 8), 4096 + 8192); /* BeyondFinalZero */
	CHECK_EQ(smb2_zero_data_encode(buf, 16, UINT64_MAX, 2), -EINVAL);

	smb_put_le64(buf, 0);
	smb_put_le64(buf + 8, 4096);
	smb_put_le64(buf + 16, 65536);
	smb_put_le64(buf + 24, 4096);
	struct smb2_range r[1];
	size_t count;
	CHECK_EQ(smb2_ranges_decode(buf, 32, r, 1, &count), 0);
	CHECK(count == 2 && r[0].off == 0 && r[0].len == 4096);
	CHECK_EQ(smb2_ranges_decode(buf, 0, NULL, 0, &count), 0);
	CHECK_EQ(count, 0);
	CHECK_EQ(smb2_ranges_decode(buf, 31, r, 1, &count), -EBADMSG);
	smb_put_le64(buf + 16, 100); /* overlaps the first */
	CHECK_EQ(smb2_ranges_decode(buf, 32, r, 1, &count), -EBADMSG);
	smb_put_le64(buf + 16, UINT64_MAX); /* ends past 2^64 */
	CHECK_EQ(smb2_ranges_decode(buf, 32, r, 1, &count), -EBADMSG);
}

static void test_lock(void)
{
	uint8_t body[128];
	struct smb2_fileid fid = {1, 2};
	struct smb2_lock_elem e[2] = {{0, 100, SMB2_LOCKFLAG_EXCLUSIVE_LOCK},
	                              {200, 10, SMB2_LOCKFLAG_UNLOCK}};
	ssize_t n = smb2_lock_req_encode(body, sizeof(body), fid, 0, e, 2);
	CHECK_EQ(n, 24 + 2 * 24);
	CHECK_EQ(smb_le16(body), 48);
	CHECK_EQ(smb_le16(body + 2), 2);
	CHECK_EQ(smb_le64(body + 8), 1);
	CHECK_EQ(smb_le32(body + 24 + 24 + 16), SMB2_LOCKFLAG_UNLOCK);
	CHECK_EQ(smb2_lock_req_encode(body, sizeof(body), fid, 0, e, 0), -EINVAL);
	uint8_t msg[SMB2_HDR_SIZE + 4] = {0};
	smb_put_le16(msg + SMB2_HDR_SIZE, 4);
	CHECK_EQ(smb2_lock_rsp_decode(msg, sizeof(msg)), 0);
	CHECK_EQ(smb2_lock_rsp_decode(msg, sizeof(msg) - 1), -EBADMSG);
	smb_put_le16(msg + SMB2_HDR_SIZE, 5);
	CHECK_EQ(smb2_lock_rsp_decode(msg, sizeof(msg)), -EPROTO);
}

static void test_symlink_reparse(void)
{
	uint8_t buf[256];
	ssize_t n = smb2_symlink_reparse_encode(buf, sizeof(buf), "../a/b", 6, true);
	CHECK_EQ(n, 20 + 2 * 12);
	struct smb2_symlink s;
	CHECK_EQ(smb2_symlink_reparse_decode(buf, (size_t)n, &s), 0);
	char out[64];
	CHECK(s.relative);
	CHECK_EQ(smb_utf16le_to_utf8(s.subst16, s.subst16_len, out, sizeof(out)), 6);
	CHECK(strcmp(out, "..\\a\\b") == 0);
	CHECK_EQ(s.print16_len, 12);
	for (size_t l = 0; l < (size_t)n; l++)
		CHECK(smb2_symlink_reparse_decode(buf, l, &s) == -EBADMSG);
	smb_put_le32(buf, 0x80000014u); /* IO_REPARSE_TAG_NFS */
	CHECK_EQ(smb2_symlink_reparse_decode(buf, (size_t)n, &s), -EOPNOTSUPP);
	smb_put_le32(buf, IO_REPARSE_TAG_SYMLINK);
	smb_put_le16(buf + 10, 13); /* SubstituteNameLength past the data */
	CHECK_EQ(smb2_symlink_reparse_decode(buf, (size_t)n, &s), -EBADMSG);
	CHECK_EQ(smb2_symlink_reparse_encode(buf, 30, "../a/b", 6, true), -ENOSPC);
}

static void test_nfs_reparse(void)
{
	/* a character device 1,3 as Samba 4.22 describes /dev/null */
	uint8_t b[24];
	smb_put_le32(b, IO_REPARSE_TAG_NFS);
	smb_put_le16(b + 4, 16);
	smb_put_le16(b + 6, 0);
	smb_put_le64(b + 8, NFS_SPECFILE_CHR);
	smb_put_le32(b + 16, 1);
	smb_put_le32(b + 20, 3);
	struct smb2_nfs_reparse r;
	CHECK_EQ(smb2_nfs_reparse_decode(b, sizeof(b), &r), 0);
	CHECK(r.type == NFS_SPECFILE_CHR && r.major == 1 && r.minor == 3);
	for (size_t l = 0; l < sizeof(b); l++)
		CHECK_EQ(smb2_nfs_reparse_decode(b, l, &r), -EBADMSG);
	/* a FIFO: the type alone */
	smb_put_le16(b + 4, 8);
	smb_put_le64(b + 8, NFS_SPECFILE_FIFO);
	CHECK_EQ(smb2_nfs_reparse_decode(b, 16, &r), 0);
	CHECK(r.type == NFS_SPECFILE_FIFO && r.major == 0 && r.minor == 0);
	/* a device without its numbers */
	smb_put_le64(b + 8, NFS_SPECFILE_BLK);
	CHECK_EQ(smb2_nfs_reparse_decode(b, 16, &r), -EBADMSG);
	smb_put_le32(b, IO_REPARSE_TAG_SYMLINK);
	CHECK_EQ(smb2_nfs_reparse_decode(b, 16, &r), -EOPNOTSUPP);
}

static void test_mfsymlink(void)
{
	uint8_t buf[SMB_MFSYMLINK_SIZE];
	const char *md5 = "0123456789abcdef0123456789abcdef";
	CHECK_EQ(smb_mfsymlink_encode(buf, sizeof(buf), "dir/target", 10, md5), 1067);
	CHECK(memcmp(buf, "XSym\n0010\n0123456789abcdef0123456789abcdef\ndir/target\n ", 55) == 0);
	CHECK_EQ(buf[1066], ' ');
	const char *t, *m;
	size_t tl;
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), 0);
	CHECK(tl == 10 && memcmp(t, "dir/target", 10) == 0 && memcmp(m, md5, 32) == 0);
	CHECK_EQ(smb_mfsymlink_decode(buf, 1066, &t, &tl, &m), -EINVAL);
	buf[7] = 'x';
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), -EBADMSG);
	buf[7] = '1';
	buf[5] = '2'; /* 2010 > 1024 */
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), -EBADMSG);
	buf[5] = '0';
	buf[12] = 'g'; /* not hex */
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), -EBADMSG);
	buf[12] = '2';
	buf[45] = '\0'; /* a NUL in the target */
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), -EBADMSG);
	/* the longest target fills the file: no newline after it */
	char longt[SMB_MFSYMLINK_TARGET_MAX];
	memset(longt, 'a', sizeof(longt));
	CHECK_EQ(smb_mfsymlink_encode(buf, sizeof(buf), longt, sizeof(longt), md5), 1067);
	CHECK_EQ(smb_mfsymlink_decode(buf, sizeof(buf), &t, &tl, &m), 0);
	CHECK_EQ(tl, SMB_MFSYMLINK_TARGET_MAX);
	CHECK_EQ(smb_mfsymlink_encode(buf, sizeof(buf), longt, sizeof(longt),
	                              "0123456789abcdef0123456789abcdeg"),
	         -EINVAL); /* not hex */
	CHECK_EQ(smb_mfsymlink_encode(buf, 100, "x", 1, md5), -ENOSPC);
}

int main(void)
{
	RUN(test_ea_round_trip);
	RUN(test_ea_bad);
	RUN(test_ea_list);
	RUN(test_copychunk);
	RUN(test_ranges);
	RUN(test_lock);
	RUN(test_symlink_reparse);
	RUN(test_nfs_reparse);
	RUN(test_mfsymlink);
	return check_report();
}
