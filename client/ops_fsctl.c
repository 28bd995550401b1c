/* client/ops_fsctl.c — the POSIX-completing operations of client.h that
 * take more than one request or a payload to encode or decode: server-side
 * copy (FSCTL_SRV_REQUEST_RESUME_KEY + FSCTL_SRV_COPYCHUNK_WRITE), zeroing
 * (FSCTL_SET_SPARSE + FSCTL_SET_ZERO_DATA), allocated ranges
 * (FSCTL_QUERY_ALLOCATED_RANGES), EA lists (FILE_FULL_EA_INFORMATION),
 * byte-range locks, symbolic links (reparse points and mfsymlink files) and
 * device numbers (NFS reparse points).
 *
 * Each is a short chain of the single-request calls of client/ops.c; the
 * payloads are built and parsed here with the codec of
 * client/proto/smb2_fsctl.h, so fuse/ and lib/ see only parsed values.
 * Each chain's context is a talloc tree of its own, freed before its
 * callback runs (the callback may start the next call at once).
 */
#include "client/client.h"
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/proto/smb2_fsctl.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <talloc.h>

/* The public constants of client.h are the codec's. */
_Static_assert(SMB_EA_NAME_MAX == SMB2_EA_NAME_MAX, "EaNameLength");
_Static_assert(SMB_EA_VALUE_MAX == SMB2_EA_VALUE_MAX, "EaValueLength");
_Static_assert(SMB_LOCK_SHARED == SMB2_LOCKFLAG_SHARED_LOCK, "lock flags");
_Static_assert(SMB_LOCK_EXCLUSIVE == SMB2_LOCKFLAG_EXCLUSIVE_LOCK, "lock flags");
_Static_assert(SMB_LOCK_UNLOCK == SMB2_LOCKFLAG_UNLOCK, "lock flags");
_Static_assert(SMB_LOCK_FAIL_IMMEDIATELY == SMB2_LOCKFLAG_FAIL_IMMEDIATELY, "lock flags");

/* Samba's copychunk limits (what it answers STATUS_INVALID_PARAMETER with);
 * Windows allows the same or more.  A server that allows less says so in
 * that answer, and the copy goes on within its limits. */
#define CHUNK_SIZE (1u << 20)
#define CHUNKS_MAX 16
#define RANGES_OUT 65536

/* ---- smb_copy_range ------------------------------------------------------------------ */

struct copy_op {
	struct smb_client *c;
	smb_copy_cb cb;
	void *arg;
	struct smb2_fileid src, dst;
	uint64_t off_in, off_out, left, done;
	uint8_t key[SMB2_RESUME_KEY_LEN];
	uint32_t asked; /* bytes in the request in flight */
	/* per request: chunks, bytes per chunk, bytes in all */
	uint32_t chunks_max, chunk_size, total_max;
};

static void copy_finish(struct copy_op *o, int err, uint32_t status, bool no_offload)
{
	smb_copy_cb cb = o->cb;
	void *arg = o->arg;
	uint64_t done = o->done;
	talloc_free(o);
	cb(arg, err, status, done, no_offload);
}

static void copy_next(struct copy_op *o);

/* STATUS_INVALID_PARAMETER with the server's limits ([MS-SMB2] 3.3.5.15.6:
 * ChunksWritten, ChunkBytesWritten, TotalBytesWritten are its maximums):
 * take them when any is below ours, so the copy is retried within them.
 * Each retry lowers a limit, so a server cannot keep it going. */
static bool copy_take_limits(struct copy_op *o, const struct smb2_copychunk_rsp *r)
{
	if (!r->chunks_written || !r->chunk_bytes_written || !r->total_bytes_written ||
	    (r->chunks_written >= o->chunks_max && r->chunk_bytes_written >= o->chunk_size &&
	     r->total_bytes_written >= o->total_max))
		return false;
	if (r->chunks_written < o->chunks_max)
		o->chunks_max = r->chunks_written;
	if (r->chunk_bytes_written < o->chunk_size)
		o->chunk_size = r->chunk_bytes_written;
	if (r->total_bytes_written < o->total_max)
		o->total_max = r->total_bytes_written;
	smb_info("%s: server-side copy within the server's limits: %u chunks of %u bytes, "
	         "%u bytes a request",
	         o->c->host, o->chunks_max, o->chunk_size, o->total_max);
	return true;
}

static void copy_chunked(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct copy_op *o = arg;
	struct smb2_copychunk_rsp r;
	if (!err && status == STATUS_INVALID_PARAMETER && buf &&
	    smb2_copychunk_rsp_decode(buf, len, &r) == 0 && copy_take_limits(o, &r)) {
		copy_next(o);
		return;
	}
	if (err || status != STATUS_SUCCESS) {
		copy_finish(o, err, status, false);
		return;
	}
	if (smb2_copychunk_rsp_decode(buf, len, &r) < 0) {
		smb_err("%s: malformed SRV_COPYCHUNK response; failing the copy with EIO",
		        o->c->host);
		copy_finish(o, -EIO, 0, false);
		return;
	}
	uint64_t n = r.total_bytes_written > o->asked ? o->asked : r.total_bytes_written;
	o->done += n;
	o->left -= n;
	o->off_in += n;
	o->off_out += n;
	if (n < o->asked || !o->left)
		copy_finish(o, 0, STATUS_SUCCESS, false);
	else
		copy_next(o);
}

static void copy_next(struct copy_op *o)
{
	struct smb2_chunk ch[CHUNKS_MAX];
	uint32_t n = 0;
	uint64_t asked = 0;
	uint64_t most = o->left < o->total_max ? o->left : o->total_max;
	while (n < o->chunks_max && asked < most) {
		uint64_t l = most - asked < o->chunk_size ? most - asked : o->chunk_size;
		ch[n++] = (struct smb2_chunk){o->off_in + asked, o->off_out + asked, (uint32_t)l};
		asked += l;
	}
	uint8_t in[SMB2_RESUME_KEY_LEN + 8 + CHUNKS_MAX * SMB2_COPYCHUNK_CHUNK_SIZE];
	ssize_t inlen = smb2_copychunk_encode(in, sizeof(in), o->key, ch, n);
	o->asked = (uint32_t)asked;
	int rc = inlen < 0 ? (int)inlen
	                   : smb_fsctl(o->c, o->dst, FSCTL_SRV_COPYCHUNK_WRITE, in, (size_t)inlen,
	                               12, copy_chunked, o);
	if (rc < 0)
		copy_finish(o, rc, 0, false);
}

static void copy_have_key(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct copy_op *o = arg;
	if (err || status != STATUS_SUCCESS)
		copy_finish(o, err, status, true);
	else if (smb2_resume_key_decode(buf, len, o->key) < 0)
		copy_finish(o, -EIO, 0, true);
	else
		copy_next(o);
}

static void copy_have_size(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct copy_op *o = arg;
	if (err || status != STATUS_SUCCESS) {
		copy_finish(o, err, status, false);
		return;
	}
	/* nothing to copy at or past the source's end */
	uint64_t eof = a->end_of_file;
	o->left = o->off_in >= eof ? 0 : eof - o->off_in < o->left ? eof - o->off_in : o->left;
	if (!o->left) {
		copy_finish(o, 0, STATUS_SUCCESS, false);
		return;
	}
	int rc =
	    smb_fsctl(o->c, o->src, FSCTL_SRV_REQUEST_RESUME_KEY, NULL, 0, 32, copy_have_key, o);
	if (rc < 0)
		copy_finish(o, rc, 0, false);
}

int smb_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                   struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                   void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_copy_range(c, src, src_off, dst, dst_off, len, cb, arg);
	if (!len)
		return -EINVAL;
	struct copy_op *o = talloc_zero(NULL, struct copy_op);
	if (!o)
		return -ENOMEM;
	*o = (struct copy_op){.c = c,
	                      .cb = cb,
	                      .arg = arg,
	                      .src = src,
	                      .dst = dst,
	                      .off_in = src_off,
	                      .off_out = dst_off,
	                      .left = len,
	                      .chunks_max = CHUNKS_MAX,
	                      .chunk_size = CHUNK_SIZE,
	                      .total_max = CHUNKS_MAX * CHUNK_SIZE};
	int rc = smb_fstat(c, src, copy_have_size, o);
	if (rc < 0)
		talloc_free(o);
	return rc;
}

/* ---- smb_zero_range ------------------------------------------------------------------- */

struct zero_op {
	struct smb_client *c;
	smb_status_cb cb;
	void *arg;
	struct smb2_fileid fid;
	uint8_t in[16];
	size_t inlen;
};

static void zero_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct zero_op *o = arg;
	smb_status_cb cb = o->cb;
	void *cb_arg = o->arg;
	talloc_free(o);
	cb(cb_arg, err, status);
}

/* After SET_SPARSE, whose result does not matter: without sparse files the
 * range just stays allocated. */
static void zero_sparse_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct zero_op *o = arg;
	int rc = smb_fsctl(o->c, o->fid, FSCTL_SET_ZERO_DATA, o->in, o->inlen, 0, zero_done, o);
	if (rc < 0)
		zero_done(o, rc, 0, NULL, 0);
}

int smb_zero_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   bool punch, smb_status_cb cb, void *arg)
{
	struct zero_op *o = talloc_zero(NULL, struct zero_op);
	if (!o)
		return -ENOMEM;
	*o = (struct zero_op){.c = c, .cb = cb, .arg = arg, .fid = fid};
	ssize_t n = smb2_zero_data_encode(o->in, sizeof(o->in), off, len);
	int rc = (int)n;
	if (n >= 0) {
		o->inlen = (size_t)n;
		rc = punch
		         ? smb_fsctl(c, fid, FSCTL_SET_SPARSE, NULL, 0, 0, zero_sparse_done, o)
		         : smb_fsctl(c, fid, FSCTL_SET_ZERO_DATA, o->in, o->inlen, 0, zero_done, o);
	}
	if (rc < 0)
		talloc_free(o);
	return rc < 0 ? rc : 0;
}

/* ---- smb_query_ranges ----------------------------------------------------------------- */

struct ranges_op {
	struct smb_client *c;
	smb_ranges_cb cb;
	void *arg;
};

static void ranges_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct ranges_op *o = arg;
	struct smb_client *c = o->c;
	smb_ranges_cb cb = o->cb;
	void *cb_arg = o->arg;
	struct smb2_range *r = NULL;
	struct smb_range *out = NULL;
	size_t n = 0;
	if (!err && (status == STATUS_SUCCESS || status == STATUS_BUFFER_OVERFLOW)) {
		size_t max = len / 16;
		r = talloc_array(o, struct smb2_range, max ? max : 1);
		out = talloc_array(o, struct smb_range, max ? max : 1);
		if (!r || !out) {
			err = -ENOMEM;
		} else if (smb2_ranges_decode(buf, len, r, max, &n) < 0) {
			smb_err("%s: malformed QUERY_ALLOCATED_RANGES answer; failing with EIO",
			        c->host);
			err = -EIO;
		}
		for (size_t i = 0; !err && i < n; i++)
			out[i] = (struct smb_range){r[i].off, r[i].len};
	}
	if (err) {
		status = 0;
		n = 0;
	}
	cb(cb_arg, err, status, err ? NULL : out, n);
	talloc_free(o);
}

int smb_query_ranges(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                     smb_ranges_cb cb, void *arg)
{
	uint8_t in[16];
	ssize_t n = smb2_range_encode(in, sizeof(in), off, len);
	if (n < 0)
		return (int)n;
	struct ranges_op *o = talloc_zero(NULL, struct ranges_op);
	if (!o)
		return -ENOMEM;
	*o = (struct ranges_op){.c = c, .cb = cb, .arg = arg};
	int rc = smb_fsctl(c, fid, FSCTL_QUERY_ALLOCATED_RANGES, in, (size_t)n, RANGES_OUT,
	                   ranges_done, o);
	if (rc < 0)
		talloc_free(o);
	return rc;
}

/* ---- smb_list_eas --------------------------------------------------------------------- */

struct eas_op {
	struct smb_client *c;
	smb_eas_cb cb;
	void *arg;
};

static void eas_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct eas_op *o = arg;
	smb_eas_cb cb = o->cb;
	void *cb_arg = o->arg;
	struct smb_ea_entry *eas = NULL;
	size_t n = 0;
	/* No EAs (or none by that name) is an empty list, not an error. */
	if (!err && (status == STATUS_NO_EAS_ON_FILE || status == STATUS_NONEXISTENT_EA_ENTRY)) {
		status = STATUS_SUCCESS;
		len = 0;
	}
	if (!err && status == STATUS_SUCCESS) {
		size_t max = SMB2_EA_LIST_MAX(len);
		struct smb2_ea *e = talloc_array(o, struct smb2_ea, max);
		eas = talloc_array(o, struct smb_ea_entry, max);
		if (!e || !eas) {
			err = -ENOMEM;
		} else if (smb2_ea_list_decode(buf, len, e, max, &n) < 0 || n > max) {
			smb_err("%s: malformed EA list from the server; failing with EIO",
			        o->c->host);
			err = -EIO;
		}
		for (size_t i = 0; !err && i < n; i++)
			eas[i] = (struct smb_ea_entry){e[i].name, e[i].name_len, e[i].value,
			                               e[i].value_len};
	}
	if (err) {
		status = 0;
		n = 0;
	}
	cb(cb_arg, err, status, err ? NULL : eas, n);
	talloc_free(o);
}

int smb_list_eas(struct smb_client *c, const char *path, const char *name, smb_eas_cb cb, void *arg)
{
	struct eas_op *o = talloc_zero(NULL, struct eas_op);
	if (!o)
		return -ENOMEM;
	*o = (struct eas_op){.c = c, .cb = cb, .arg = arg};
	int rc = smb_query_eas(c, path, name, eas_done, o);
	if (rc < 0)
		talloc_free(o);
	return rc;
}

/* ---- smb_lock_range ------------------------------------------------------------------- */

int smb_lock_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   uint32_t flags, smb_status_cb cb, void *arg)
{
	struct smb2_lock_elem e = {.offset = off, .length = len, .flags = flags};
	return smb_lock(c, fid, &e, 1, cb, arg);
}

/* ---- symbolic links, device numbers --------------------------------------------------- */

static void md5_hex(const void *p, size_t n, char out[33])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	if (!EVP_Digest(p, n, d, &dl, EVP_md5(), NULL) || dl != 16) {
		memset(out, '0', 32);
	} else {
		for (unsigned i = 0; i < 16; i++)
			snprintf(out + 2 * i, 3, "%02x", d[i]);
	}
	out[32] = '\0';
}

int smb_mfsymlink_create(struct smb_client *c, const char *path, const char *target,
                         smb_status_cb cb, void *arg)
{
	size_t tl = strlen(target);
	if (tl == 0 || tl > SMB_MFSYMLINK_TARGET_MAX)
		return -EINVAL;
	uint8_t buf[SMB_MFSYMLINK_SIZE];
	char md5[33];
	md5_hex(target, tl, md5);
	ssize_t n = smb_mfsymlink_encode(buf, sizeof(buf), target, tl, md5);
	return n < 0 ? (int)n : smb_put_small(c, path, buf, (size_t)n, cb, arg);
}

struct target_op {
	smb_target_cb cb;
	void *arg;
};

static struct target_op *target_op_new(smb_target_cb cb, void *arg)
{
	struct target_op *o = talloc_zero(NULL, struct target_op);
	if (o)
		*o = (struct target_op){.cb = cb, .arg = arg};
	return o;
}

static void target_op_done(struct target_op *o, int err, uint32_t status, const char *target)
{
	smb_target_cb cb = o->cb;
	void *arg = o->arg;
	talloc_free(o);
	cb(arg, err, status, target);
}

static void mfsymlink_read_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct target_op *o = arg;
	const char *t, *md5;
	size_t tl;
	char want[33], target[SMB_MFSYMLINK_TARGET_MAX + 1];
	bool is_link = false;
	if (!err && status == STATUS_SUCCESS &&
	    smb_mfsymlink_decode(buf, len, &t, &tl, &md5) == 0) {
		md5_hex(t, tl, want);
		is_link = strncasecmp(want, md5, 32) == 0;
	}
	if (is_link) {
		memcpy(target, t, tl);
		target[tl] = '\0';
	}
	target_op_done(o, err, status, is_link ? target : NULL);
}

int smb_mfsymlink_read(struct smb_client *c, const char *path, smb_target_cb cb, void *arg)
{
	struct target_op *o = target_op_new(cb, arg);
	int rc = o ? smb_get_small(c, path, SMB_MFSYMLINK_SIZE, mfsymlink_read_done, o) : -ENOMEM;
	if (rc < 0)
		talloc_free(o);
	return rc;
}

static void symlink_read_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct target_op *o = arg;
	struct smb2_symlink l;
	char target[PATH_MAX];
	if (err || status != STATUS_SUCCESS)
		target_op_done(o, err, status, NULL);
	else if (smb2_symlink_reparse_decode(buf, len, &l) < 0 ||
	         smb_utf16le_to_utf8(l.subst16, l.subst16_len, target, sizeof(target)) <= 0)
		target_op_done(o, -EINVAL, 0, NULL); /* not a symbolic link (any more) */
	else
		target_op_done(o, 0, STATUS_SUCCESS, target);
}

int smb_read_symlink(struct smb_client *c, const char *path, smb_target_cb cb, void *arg)
{
	struct target_op *o = target_op_new(cb, arg);
	int rc = o ? smb_get_reparse(c, path, symlink_read_done, o) : -ENOMEM;
	if (rc < 0)
		talloc_free(o);
	return rc;
}

struct rdev_op {
	smb_rdev_cb cb;
	void *arg;
};

static void rdev_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct rdev_op *o = arg;
	smb_rdev_cb cb = o->cb;
	void *cb_arg = o->arg;
	talloc_free(o);
	struct smb2_nfs_reparse r;
	uint32_t rdev = 0;
	if (!err && status == STATUS_SUCCESS) {
		int rc = smb2_nfs_reparse_decode(buf, len, &r);
		if (rc == -EBADMSG)
			err = -EIO;
		else if (rc < 0 || (r.type != NFS_SPECFILE_CHR && r.type != NFS_SPECFILE_BLK))
			err = -EOPNOTSUPP;
		else
			rdev = SMB_ATTR_RDEV(r.major, r.minor);
		if (err)
			status = 0;
	}
	cb(cb_arg, err, status, rdev);
}

int smb_read_rdev(struct smb_client *c, const char *path, smb_rdev_cb cb, void *arg)
{
	struct rdev_op *o = talloc_zero(NULL, struct rdev_op);
	if (!o)
		return -ENOMEM;
	*o = (struct rdev_op){.cb = cb, .arg = arg};
	int rc = smb_get_reparse(c, path, rdev_done, o);
	if (rc < 0)
		talloc_free(o);
	return rc;
}
