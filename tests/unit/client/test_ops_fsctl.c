/* tests/unit/client/test_ops_fsctl.c — the calls of client/ops_fsctl.c
 * against a scripted stand-in for the single-request calls they chain
 * (smb_fstat, smb_fsctl, smb_query_eas, smb_lock, smb_get_reparse,
 * smb_get_small, smb_put_small): what each step sends, what it makes of
 * each answer, and what the caller's callback gets.  Covers what a real
 * server will not do on demand (copychunk limits below Samba's, cut and
 * malformed answers); tests/integration covers the rest against Samba. */
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/proto/smb2_fsctl.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the stand-in: one request outstanding at a time --------------------------------- */

enum kind { K_NONE, K_FSTAT, K_FSCTL, K_EAS, K_LOCK, K_REPARSE, K_GET_SMALL, K_PUT_SMALL };

static struct {
	enum kind kind;
	struct smb2_fileid fid;
	uint32_t code, max_out;
	uint8_t in[2048];
	size_t inlen;
	char path[64], name[64];
	struct smb2_lock_elem lock;
	void *cb, *arg;
} P;

static void take(enum kind k, void *cb, void *arg)
{
	CHECK_EQ(P.kind, K_NONE); /* one at a time: each step waits for the last */
	P.kind = k;
	P.cb = cb;
	P.arg = arg;
}

/* The request outstanding, which must be of kind k; cleared for the next. */
static void expect(enum kind k)
{
	CHECK_EQ(P.kind, k);
	P.kind = K_NONE;
}

/* smb_copy_range()'s DFS hook (client/dfs_ns.h): no namespace here. */
bool smb_dfs_routes(const struct smb_client *c)
{
	(void)c;
	return false;
}

int smb_dfs_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                       struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                       void *arg)
{
	(void)c, (void)src, (void)src_off, (void)dst, (void)dst_off, (void)len, (void)cb, (void)arg;
	CHECK(!"smb_dfs_copy_range called without a namespace");
	return -ENOSYS;
}

int smb_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg)
{
	take(K_FSTAT, (void *)cb, arg);
	P.fid = fid;
	return 0;
}

int smb_fsctl(struct smb_client *c, struct smb2_fileid fid, uint32_t code, const void *in,
              size_t inlen, uint32_t max_out, smb_buf_cb cb, void *arg)
{
	take(K_FSCTL, (void *)cb, arg);
	P.fid = fid;
	P.code = code;
	P.max_out = max_out;
	P.inlen = inlen;
	if (inlen)
		memcpy(P.in, in, inlen);
	return 0;
}

int smb_query_eas(struct smb_client *c, const char *path, const char *name, smb_buf_cb cb,
                  void *arg)
{
	take(K_EAS, (void *)cb, arg);
	snprintf(P.path, sizeof(P.path), "%s", path);
	snprintf(P.name, sizeof(P.name), "%s", name ? name : "(all)");
	return 0;
}

int smb_lock(struct smb_client *c, struct smb2_fileid fid, const struct smb2_lock_elem *e,
             uint16_t n, smb_status_cb cb, void *arg)
{
	take(K_LOCK, (void *)cb, arg);
	CHECK_EQ(n, 1);
	P.fid = fid;
	P.lock = e[0];
	return 0;
}

int smb_get_reparse(struct smb_client *c, const char *path, smb_buf_cb cb, void *arg)
{
	take(K_REPARSE, (void *)cb, arg);
	snprintf(P.path, sizeof(P.path), "%s", path);
	return 0;
}

int smb_get_small(struct smb_client *c, const char *path, size_t max, smb_buf_cb cb, void *arg)
{
	take(K_GET_SMALL, (void *)cb, arg);
	CHECK_EQ(max, SMB_MFSYMLINK_SIZE);
	snprintf(P.path, sizeof(P.path), "%s", path);
	return 0;
}

int smb_put_small(struct smb_client *c, const char *path, const void *data, size_t len,
                  smb_status_cb cb, void *arg)
{
	take(K_PUT_SMALL, (void *)cb, arg);
	snprintf(P.path, sizeof(P.path), "%s", path);
	CHECK(len <= sizeof(P.in));
	memcpy(P.in, data, len);
	P.inlen = len;
	return 0;
}

static void answer_buf(int err, uint32_t status, const void *buf, size_t len)
{
	((smb_buf_cb)P.cb)(P.arg, err, status, buf, len);
}

static void answer_status(int err, uint32_t status)
{
	((smb_status_cb)P.cb)(P.arg, err, status);
}

static char host[] = "srv";
static struct smb_client client = {.host = host};
static const struct smb2_fileid SRC = {1, 2}, DST = {3, 4};

/* ---- smb_copy_range ------------------------------------------------------------------- */

static struct {
	int calls, err;
	uint32_t status;
	uint64_t copied;
	bool no_offload;
} copy_got;

static void copy_cb(void *arg, int err, uint32_t status, uint64_t copied, bool no_offload)
{
	copy_got.calls++;
	copy_got.err = err;
	copy_got.status = status;
	copy_got.copied = copied;
	copy_got.no_offload = no_offload;
}

static void answer_size(uint64_t eof)
{
	struct smb_attr a = {.end_of_file = eof};
	expect(K_FSTAT);
	((smb_attr_cb)P.cb)(P.arg, 0, STATUS_SUCCESS, &a);
}

static void answer_key(void)
{
	expect(K_FSCTL);
	CHECK_EQ(P.code, FSCTL_SRV_REQUEST_RESUME_KEY);
	CHECK(memcmp(&P.fid, &SRC, sizeof(SRC)) == 0);
	CHECK_EQ(P.max_out, 32);
	uint8_t key[28] = {0};
	for (int i = 0; i < 24; i++)
		key[i] = (uint8_t)(0xa0 + i);
	answer_buf(0, STATUS_SUCCESS, key, sizeof(key));
}

/* The COPYCHUNK_WRITE outstanding: its chunks (count returned). */
static uint32_t chunks(struct smb2_chunk *out, uint32_t max)
{
	CHECK_EQ(P.kind, K_FSCTL);
	CHECK_EQ(P.code, FSCTL_SRV_COPYCHUNK_WRITE);
	CHECK(memcmp(&P.fid, &DST, sizeof(DST)) == 0);
	CHECK_EQ(P.in[0], 0xa0); /* the resume key */
	uint32_t n = smb_le32(P.in + 24);
	CHECK_EQ(P.inlen, 32 + 24 * (size_t)n);
	for (uint32_t i = 0; i < n && i < max; i++) {
		const uint8_t *c = P.in + 32 + 24 * i;
		out[i] = (struct smb2_chunk){smb_le64(c), smb_le64(c + 8), smb_le32(c + 16)};
	}
	return n;
}

static void answer_chunks(uint32_t status, uint32_t a, uint32_t b, uint32_t total)
{
	uint8_t r[12];
	smb_put_le32(r, a);
	smb_put_le32(r + 4, b);
	smb_put_le32(r + 8, total);
	expect(K_FSCTL);
	answer_buf(0, status, r, sizeof(r));
}

static void test_copy(void)
{
	const uint64_t M = 1u << 20;
	struct smb2_chunk ch[16];
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 10, DST, 20, 0, copy_cb, NULL), -EINVAL);
	CHECK_EQ(smb_copy_range(&client, SRC, 10, DST, 20, 40 * M, copy_cb, NULL), 0);
	answer_size(10 + 18 * M + 5); /* the copy is clamped to the source's end */
	answer_key();
	/* Samba's limits: 16 chunks of 1 MiB */
	CHECK_EQ(chunks(ch, 16), 16);
	CHECK(ch[0].src_off == 10 && ch[0].dst_off == 20 && ch[0].len == M);
	CHECK(ch[15].src_off == 10 + 15 * M && ch[15].dst_off == 20 + 15 * M);
	answer_chunks(STATUS_SUCCESS, 16, M, 16 * M);
	/* the rest: 2 MiB and 5 bytes */
	CHECK_EQ(chunks(ch, 16), 3);
	CHECK(ch[0].src_off == 10 + 16 * M && ch[2].len == 5);
	/* a server with lower limits: the request again, within them */
	answer_chunks(STATUS_INVALID_PARAMETER, 2, M / 2, M);
	CHECK_EQ(copy_got.calls, 0);
	CHECK_EQ(chunks(ch, 16), 2);
	CHECK(ch[0].src_off == 10 + 16 * M && ch[0].len == M / 2 && ch[1].len == M / 2);
	answer_chunks(STATUS_SUCCESS, 2, M / 2, M);
	CHECK_EQ(chunks(ch, 16), 2);
	CHECK(ch[0].src_off == 10 + 17 * M && ch[1].len == M / 2);
	/* a short copy ends it: reported as what was copied */
	answer_chunks(STATUS_SUCCESS, 1, 100, 100);
	CHECK_EQ(P.kind, K_NONE);
	CHECK_EQ(copy_got.calls, 1);
	CHECK(copy_got.err == 0 && copy_got.status == STATUS_SUCCESS && !copy_got.no_offload);
	CHECK_EQ(copy_got.copied, 17 * M + 100);
}

static void test_copy_failures(void)
{
	const uint64_t M = 1u << 20;
	struct smb2_chunk ch[16];
	/* the source ends where the copy starts: nothing sent, nothing copied */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 100, DST, 0, 10, copy_cb, NULL), 0);
	answer_size(100);
	CHECK_EQ(P.kind, K_NONE);
	CHECK(copy_got.calls == 1 && copy_got.copied == 0 && copy_got.err == 0);

	/* no resume key: no server-side copy from this handle */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 0, DST, 0, 10, copy_cb, NULL), 0);
	answer_size(10);
	expect(K_FSCTL);
	answer_buf(0, STATUS_NOT_SUPPORTED, NULL, 0);
	CHECK(copy_got.calls == 1 && copy_got.no_offload && copy_got.copied == 0);
	CHECK_EQ(copy_got.status, STATUS_NOT_SUPPORTED);
	/* a resume key too short: EIO, still from the key */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 0, DST, 0, 10, copy_cb, NULL), 0);
	answer_size(10);
	expect(K_FSCTL);
	answer_buf(0, STATUS_SUCCESS, "short", 5);
	CHECK(copy_got.calls == 1 && copy_got.no_offload && copy_got.err == -EIO);

	/* limits no lower than ours, then the same again: the status, no loop */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 0, DST, 0, 4 * M, copy_cb, NULL), 0);
	answer_size(4 * M);
	answer_key();
	CHECK_EQ(chunks(ch, 16), 4);
	answer_chunks(STATUS_INVALID_PARAMETER, 2, M, 2 * M);
	CHECK_EQ(chunks(ch, 16), 2);
	answer_chunks(STATUS_INVALID_PARAMETER, 2, M, 2 * M);
	CHECK_EQ(P.kind, K_NONE);
	CHECK(copy_got.calls == 1 && copy_got.status == STATUS_INVALID_PARAMETER);
	CHECK(copy_got.copied == 0 && !copy_got.no_offload);
	/* limits of 0 are no limits to take */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 0, DST, 0, M, copy_cb, NULL), 0);
	answer_size(M);
	answer_key();
	CHECK_EQ(chunks(ch, 16), 1);
	answer_chunks(STATUS_INVALID_PARAMETER, 0, 0, 0);
	CHECK(copy_got.calls == 1 && copy_got.status == STATUS_INVALID_PARAMETER);
	/* a malformed answer after some progress: EIO with the bytes copied */
	memset(&copy_got, 0, sizeof(copy_got));
	CHECK_EQ(smb_copy_range(&client, SRC, 0, DST, 0, 17 * M, copy_cb, NULL), 0);
	answer_size(17 * M);
	answer_key();
	CHECK_EQ(chunks(ch, 16), 16);
	answer_chunks(STATUS_SUCCESS, 16, M, 16 * M);
	CHECK_EQ(chunks(ch, 16), 1);
	expect(K_FSCTL);
	answer_buf(0, STATUS_SUCCESS, "bad", 3);
	CHECK(copy_got.calls == 1 && copy_got.err == -EIO && copy_got.copied == 16 * M);
}

/* ---- smb_zero_range, smb_lock_range ------------------------------------------------- */

static int status_calls, status_err;
static uint32_t status_got;

static void status_cb(void *arg, int err, uint32_t status)
{
	status_calls++;
	status_err = err;
	status_got = status;
}

static void test_zero_and_lock(void)
{
	status_calls = 0;
	CHECK_EQ(smb_zero_range(&client, DST, 4096, 8192, false, status_cb, NULL), 0);
	CHECK_EQ(P.code, FSCTL_SET_ZERO_DATA);
	CHECK(P.inlen == 16 && smb_le64(P.in) == 4096 && smb_le64(P.in + 8) == 4096 + 8192);
	expect(K_FSCTL);
	answer_buf(0, STATUS_DISK_FULL, NULL, 0);
	CHECK(status_calls == 1 && status_got == STATUS_DISK_FULL);

	/* a hole: SET_SPARSE first, whose failure does not matter */
	status_calls = 0;
	CHECK_EQ(smb_zero_range(&client, DST, 0, 10, true, status_cb, NULL), 0);
	CHECK(P.code == FSCTL_SET_SPARSE && P.inlen == 0);
	expect(K_FSCTL);
	answer_buf(0, STATUS_INVALID_DEVICE_REQUEST, NULL, 0);
	CHECK_EQ(status_calls, 0);
	CHECK(P.code == FSCTL_SET_ZERO_DATA && smb_le64(P.in + 8) == 10);
	expect(K_FSCTL);
	answer_buf(0, STATUS_SUCCESS, NULL, 0);
	CHECK(status_calls == 1 && status_err == 0 && status_got == STATUS_SUCCESS);
	CHECK_EQ(smb_zero_range(&client, DST, UINT64_MAX, 2, false, status_cb, NULL), -EINVAL);
	CHECK_EQ(P.kind, K_NONE);

	status_calls = 0;
	CHECK_EQ(smb_lock_range(&client, SRC, 7, 3, SMB_LOCK_EXCLUSIVE | SMB_LOCK_FAIL_IMMEDIATELY,
	                        status_cb, NULL),
	         0);
	CHECK(P.lock.offset == 7 && P.lock.length == 3);
	CHECK_EQ(P.lock.flags, SMB2_LOCKFLAG_EXCLUSIVE_LOCK | SMB2_LOCKFLAG_FAIL_IMMEDIATELY);
	expect(K_LOCK);
	answer_status(0, STATUS_LOCK_NOT_GRANTED);
	CHECK(status_calls == 1 && status_got == STATUS_LOCK_NOT_GRANTED);
}

/* ---- smb_query_ranges ----------------------------------------------------------------- */

static struct {
	int calls, err;
	uint32_t status;
	size_t n;
	struct smb_range r[4];
} ranges_got;

static void ranges_cb(void *arg, int err, uint32_t status, const struct smb_range *r, size_t n)
{
	ranges_got.calls++;
	ranges_got.err = err;
	ranges_got.status = status;
	ranges_got.n = n;
	for (size_t i = 0; i < n && i < 4; i++)
		ranges_got.r[i] = r[i];
}

static void test_ranges(void)
{
	uint8_t out[32];
	smb_put_le64(out, 0);
	smb_put_le64(out + 8, 4096);
	smb_put_le64(out + 16, 65536);
	smb_put_le64(out + 24, 100);
	memset(&ranges_got, 0, sizeof(ranges_got));
	CHECK_EQ(smb_query_ranges(&client, SRC, 0, 1 << 20, ranges_cb, NULL), 0);
	CHECK(P.code == FSCTL_QUERY_ALLOCATED_RANGES && P.max_out == 65536);
	CHECK(smb_le64(P.in) == 0 && smb_le64(P.in + 8) == 1 << 20);
	expect(K_FSCTL);
	/* a cut list still gives its ranges */
	answer_buf(0, STATUS_BUFFER_OVERFLOW, out, sizeof(out));
	CHECK(ranges_got.calls == 1 && ranges_got.status == STATUS_BUFFER_OVERFLOW);
	CHECK(ranges_got.n == 2 && ranges_got.r[1].off == 65536 && ranges_got.r[1].len == 100);

	memset(&ranges_got, 0, sizeof(ranges_got));
	CHECK_EQ(smb_query_ranges(&client, SRC, 0, 10, ranges_cb, NULL), 0);
	expect(K_FSCTL);
	answer_buf(0, STATUS_SUCCESS, out, 17);
	CHECK(ranges_got.calls == 1 && ranges_got.err == -EIO && ranges_got.n == 0);

	memset(&ranges_got, 0, sizeof(ranges_got));
	CHECK_EQ(smb_query_ranges(&client, SRC, 0, 10, ranges_cb, NULL), 0);
	expect(K_FSCTL);
	answer_buf(0, STATUS_INVALID_DEVICE_REQUEST, NULL, 0);
	CHECK(ranges_got.calls == 1 && ranges_got.err == 0 && ranges_got.n == 0);
	CHECK_EQ(ranges_got.status, STATUS_INVALID_DEVICE_REQUEST);
	/* no data at all */
	memset(&ranges_got, 0, sizeof(ranges_got));
	CHECK_EQ(smb_query_ranges(&client, SRC, 0, 10, ranges_cb, NULL), 0);
	expect(K_FSCTL);
	answer_buf(0, STATUS_SUCCESS, NULL, 0);
	CHECK(ranges_got.calls == 1 && ranges_got.err == 0 && ranges_got.n == 0);
}

/* ---- smb_list_eas --------------------------------------------------------------------- */

static struct {
	int calls, err;
	uint32_t status;
	size_t n;
	char names[4][16];
	size_t vlen[4];
} eas_got;

static void eas_cb(void *arg, int err, uint32_t status, const struct smb_ea_entry *eas, size_t n)
{
	eas_got.calls++;
	eas_got.err = err;
	eas_got.status = status;
	eas_got.n = n;
	for (size_t i = 0; i < n && i < 4; i++) {
		CHECK_EQ(strlen(eas[i].name), eas[i].name_len);
		snprintf(eas_got.names[i], sizeof(eas_got.names[i]), "%s", eas[i].name);
		eas_got.vlen[i] = eas[i].value_len;
	}
}

static void test_eas(void)
{
	memset(&eas_got, 0, sizeof(eas_got));
	CHECK_EQ(smb_list_eas(&client, "d/f", "x", eas_cb, NULL), 0);
	CHECK(strcmp(P.path, "d/f") == 0 && strcmp(P.name, "x") == 0);
	expect(K_EAS);
	/* none by that name: an empty list */
	answer_buf(0, STATUS_NONEXISTENT_EA_ENTRY, NULL, 0);
	CHECK(eas_got.calls == 1 && eas_got.err == 0 && eas_got.status == STATUS_SUCCESS);
	CHECK_EQ(eas_got.n, 0);

	memset(&eas_got, 0, sizeof(eas_got));
	CHECK_EQ(smb_list_eas(&client, "f", NULL, eas_cb, NULL), 0);
	CHECK_EQ(strcmp(P.name, "(all)"), 0);
	expect(K_EAS);
	answer_buf(0, STATUS_NO_EAS_ON_FILE, NULL, 0);
	CHECK(eas_got.calls == 1 && eas_got.status == STATUS_SUCCESS && eas_got.n == 0);

	uint8_t buf[128];
	struct smb2_ea in[] = {
	    {.name = "a", .name_len = 1, .value = (const uint8_t *)"xy", .value_len = 2},
	    {.name = "gone", .name_len = 4},
	    {.name = "Bee", .name_len = 3, .value = (const uint8_t *)"z", .value_len = 1},
	};
	ssize_t n = smb2_ea_list_encode(buf, sizeof(buf), in, 3);
	CHECK(n > 0);
	memset(&eas_got, 0, sizeof(eas_got));
	CHECK_EQ(smb_list_eas(&client, "f", NULL, eas_cb, NULL), 0);
	expect(K_EAS);
	answer_buf(0, STATUS_SUCCESS, buf, (size_t)n);
	CHECK(eas_got.calls == 1 && eas_got.err == 0 && eas_got.n == 2);
	CHECK(strcmp(eas_got.names[0], "a") == 0 && eas_got.vlen[0] == 2);
	CHECK(strcmp(eas_got.names[1], "Bee") == 0 && eas_got.vlen[1] == 1);

	/* malformed after a good entry: EIO, no entries */
	memset(&eas_got, 0, sizeof(eas_got));
	CHECK_EQ(smb_list_eas(&client, "f", NULL, eas_cb, NULL), 0);
	expect(K_EAS);
	answer_buf(0, STATUS_SUCCESS, buf, (size_t)n - 1);
	CHECK(eas_got.calls == 1 && eas_got.err == -EIO && eas_got.n == 0);
	/* the server's error passes through */
	memset(&eas_got, 0, sizeof(eas_got));
	CHECK_EQ(smb_list_eas(&client, "f", NULL, eas_cb, NULL), 0);
	expect(K_EAS);
	answer_buf(0, STATUS_ACCESS_DENIED, NULL, 0);
	CHECK(eas_got.calls == 1 && eas_got.status == STATUS_ACCESS_DENIED);
}

/* ---- links and device numbers ------------------------------------------------------- */

static struct {
	int calls, err;
	uint32_t status;
	bool null;
	char target[1100];
	uint32_t rdev;
} t_got;

static void target_cb(void *arg, int err, uint32_t status, const char *target)
{
	t_got.calls++;
	t_got.err = err;
	t_got.status = status;
	t_got.null = !target;
	snprintf(t_got.target, sizeof(t_got.target), "%s", target ? target : "");
}

static void rdev_cb(void *arg, int err, uint32_t status, uint32_t rdev)
{
	t_got.calls++;
	t_got.err = err;
	t_got.status = status;
	t_got.rdev = rdev;
}

static void test_mfsymlink(void)
{
	status_calls = 0;
	CHECK_EQ(smb_mfsymlink_create(&client, "l", "", status_cb, NULL), -EINVAL);
	char big[SMB_MFSYMLINK_TARGET_MAX + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_EQ(smb_mfsymlink_create(&client, "l", big, status_cb, NULL), -EINVAL);
	CHECK_EQ(smb_mfsymlink_create(&client, "l", "../to/there", status_cb, NULL), 0);
	CHECK(P.inlen == SMB_MFSYMLINK_SIZE && memcmp(P.in, "XSym\n0011\n", 10) == 0);
	/* MD5("../to/there") */
	CHECK_MEM(P.in + 10, "b03b440650904692951afe379eca2a50", 32);
	expect(K_PUT_SMALL);
	answer_status(0, STATUS_SUCCESS);
	CHECK_EQ(status_calls, 1);

	uint8_t file[SMB_MFSYMLINK_SIZE];
	memcpy(file, P.in, sizeof(file));
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_mfsymlink_read(&client, "l", target_cb, NULL), 0);
	expect(K_GET_SMALL);
	answer_buf(0, STATUS_SUCCESS, file, sizeof(file));
	CHECK(t_got.calls == 1 && !t_got.null && strcmp(t_got.target, "../to/there") == 0);
	/* a recorded MD5 that does not match: no link */
	file[10] ^= 1;
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_mfsymlink_read(&client, "l", target_cb, NULL), 0);
	expect(K_GET_SMALL);
	answer_buf(0, STATUS_SUCCESS, file, sizeof(file));
	CHECK(t_got.calls == 1 && t_got.null && t_got.err == 0 && t_got.status == STATUS_SUCCESS);
	/* an ordinary file */
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_mfsymlink_read(&client, "l", target_cb, NULL), 0);
	expect(K_GET_SMALL);
	answer_buf(0, STATUS_SUCCESS, "hello", 5);
	CHECK(t_got.calls == 1 && t_got.null && t_got.err == 0);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_mfsymlink_read(&client, "l", target_cb, NULL), 0);
	expect(K_GET_SMALL);
	answer_buf(0, STATUS_ACCESS_DENIED, NULL, 0);
	CHECK(t_got.calls == 1 && t_got.null && t_got.status == STATUS_ACCESS_DENIED);
}

static void test_reparse(void)
{
	uint8_t buf[256];
	ssize_t n = smb2_symlink_reparse_encode(buf, sizeof(buf), "a/b", 3, true);
	CHECK(n > 0);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_symlink(&client, "s", target_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_SUCCESS, buf, (size_t)n);
	CHECK(t_got.calls == 1 && t_got.err == 0 && !t_got.null);
	CHECK_EQ(strcmp(t_got.target, "a\\b"), 0); /* as the server wrote it */
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_symlink(&client, "s", target_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_SUCCESS, buf, 7);
	CHECK(t_got.calls == 1 && t_got.err == -EINVAL && t_got.null);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_symlink(&client, "s", target_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_NOT_A_REPARSE_POINT, NULL, 0);
	CHECK(t_got.calls == 1 && t_got.err == 0 && t_got.status == STATUS_NOT_A_REPARSE_POINT);

	/* NFS reparse points: a block device, a FIFO, a truncated device */
	uint8_t nfs[24] = {0};
	smb_put_le32(nfs, IO_REPARSE_TAG_NFS);
	smb_put_le16(nfs + 4, 16);
	smb_put_le64(nfs + 8, NFS_SPECFILE_BLK);
	smb_put_le32(nfs + 16, 7);
	smb_put_le32(nfs + 20, 300);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_rdev(&client, "b", rdev_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_SUCCESS, nfs, sizeof(nfs));
	CHECK(t_got.calls == 1 && t_got.err == 0 && t_got.rdev == SMB_ATTR_RDEV(7, 300));
	smb_put_le64(nfs + 8, NFS_SPECFILE_FIFO);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_rdev(&client, "b", rdev_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_SUCCESS, nfs, sizeof(nfs));
	CHECK(t_got.calls == 1 && t_got.err == -EOPNOTSUPP && t_got.rdev == 0);
	smb_put_le64(nfs + 8, NFS_SPECFILE_CHR);
	smb_put_le16(nfs + 4, 8);
	memset(&t_got, 0, sizeof(t_got));
	CHECK_EQ(smb_read_rdev(&client, "b", rdev_cb, NULL), 0);
	expect(K_REPARSE);
	answer_buf(0, STATUS_SUCCESS, nfs, 16);
	CHECK(t_got.calls == 1 && t_got.err == -EIO);
}

int main(void)
{
	RUN(test_copy);
	RUN(test_copy_failures);
	RUN(test_zero_and_lock);
	RUN(test_ranges);
	RUN(test_eas);
	RUN(test_mfsymlink);
	RUN(test_reparse);
	return check_report();
}
