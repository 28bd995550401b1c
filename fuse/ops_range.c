/* fuse/ops_range.c — ops on byte ranges of an open file that the server
 * does for us: copy_file_range (server-side copy: smb_copy_range()),
 * fallocate (smb_zero_range() for punch-hole and zero-range, end of file
 * for the plain mode) and lseek SEEK_DATA / SEEK_HOLE (smb_query_ranges()).
 * The engine builds and parses the FSCTLs (client/ops_fsctl.c); this file
 * maps the FUSE ops onto them and their results to errno.
 *
 * Each op is a short chain of engine calls; its context is malloc'd and
 * freed by the step that replies.  All steps run on the loop thread.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "client/proto/smb2_errno.h"

/* ---- copy_file_range -------------------------------------------------------------- */

struct copy_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t out_ino;
};

static void copy_finish(struct copy_ctx *c, int rc, uint64_t done)
{
	fuse_req_t req = c->req;
	smb_inode_invalidate_attr(c->fs->inodes, c->out_ino);
	free(c);
	/* a partial copy is reported as such, like write() */
	if (done)
		fuse_reply_write(req, done);
	else if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_write(req, 0);
}

static void copy_done(void *arg, int err, uint32_t status, uint64_t copied, bool no_offload)
{
	int rc = smb_errno(err, status);
	/* no server-side copy here: the kernel falls back to read+write */
	if (no_offload && (rc == EINVAL || rc == EOPNOTSUPP))
		rc = EOPNOTSUPP;
	copy_finish(arg, rc, copied);
}

void smbfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                           struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
                           struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *in = smbfs_file_of(fi_in), *out = smbfs_file_of(fi_out);
	smbfs_times_moved(fs, ino_out, false);
	/* The server copies what it has: after the writes in flight on either
	 * file (the op runs again from the top once each is idle). */
	struct smbfs_held a = {.op = SMBFS_HELD_COPY,
	                       .req = req,
	                       .ino = ino_in,
	                       .off = off_in,
	                       .ino2 = ino_out,
	                       .off2 = off_out,
	                       .size = len,
	                       .n = flags};
	if (fi_out) {
		a.fi2 = *fi_out;
		a.has_fi2 = true;
	}
	if (smbfs_hold_for_writes(fs, ino_in, &a, fi_in) ||
	    smbfs_hold_for_writes(fs, ino_out, &a, fi_in))
		return;
	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (flags || !in || !out || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct copy_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*c = (struct copy_ctx){.req = req, .fs = fs, .out_ino = ino_out};
	int rc = len ? smb_copy_range(fs->client, in->fid, (uint64_t)off_in, out->fid,
	                              (uint64_t)off_out, len, copy_done, c)
	             : 0;
	if (!len || rc < 0)
		copy_finish(c, -rc, 0);
}

/* ---- fallocate ------------------------------------------------------------------------- */

struct falloc_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t ino;
	struct smb2_fileid fid;
	int mode;
	uint64_t off, len;
};

static void falloc_reply(struct falloc_ctx *f, int rc)
{
	fuse_req_t req = f->req;
	smb_inode_invalidate_attr(f->fs->inodes, f->ino);
	free(f);
	fuse_reply_err(req, rc);
}

static void falloc_sized(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	falloc_reply(arg, smb_errno(err, status));
}

/* After the zeroing (or for plain mode): extend the end of file unless
 * FALLOC_FL_KEEP_SIZE. */
static void falloc_extend(struct falloc_ctx *f, const struct smb_attr *a)
{
	uint64_t end = f->off + f->len;
	if ((f->mode & FALLOC_FL_KEEP_SIZE) || a->end_of_file >= end) {
		falloc_reply(f, 0);
		return;
	}
	struct smb_setattr_args s = {.which = SMB_SET_SIZE, .size = end};
	int rc = smb_setattr(f->fs->client, NULL, &f->fid, &s, falloc_sized, f);
	if (rc < 0)
		falloc_reply(f, -rc);
}

static void falloc_have_attr(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct falloc_ctx *f = arg;
	int rc = smb_errno(err, status);
	if (rc)
		falloc_reply(f, rc);
	else
		falloc_extend(f, a);
}

static void falloc_zeroed(void *arg, int err, uint32_t status)
{
	struct falloc_ctx *f = arg;
	int rc = smb_errno(err, status);
	if (rc || (f->mode & FALLOC_FL_KEEP_SIZE)) {
		falloc_reply(f, rc);
		return;
	}
	rc = smb_fstat(f->fs->client, f->fid, falloc_have_attr, f);
	if (rc < 0)
		falloc_reply(f, -rc);
}

void smbfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                     struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *file = smbfs_file_of(fi);
	const int known = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
	struct smbfs_held a = {
	    .op = SMBFS_HELD_FALLOCATE, .req = req, .ino = ino, .n = mode, .off = off, .len = len};
	smbfs_times_moved(fs, ino, false);
	if (smbfs_hold_for_writes(fs, ino, &a, fi))
		return;
	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if ((mode & ~known) || ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (!file || off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	struct falloc_ctx *f = malloc(sizeof(*f));
	if (!f) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*f = (struct falloc_ctx){.req = req,
	                         .fs = fs,
	                         .ino = ino,
	                         .fid = file->fid,
	                         .mode = mode,
	                         .off = (uint64_t)off,
	                         .len = (uint64_t)len};
	int rc;
	if (mode & (FALLOC_FL_ZERO_RANGE | FALLOC_FL_PUNCH_HOLE)) /* punch: sparse first */
		rc = smb_zero_range(fs->client, file->fid, f->off, f->len,
		                    mode & FALLOC_FL_PUNCH_HOLE, falloc_zeroed, f);
	else /* plain: the server allocates as it writes; only the size changes */
		rc = smb_fstat(fs->client, file->fid, falloc_have_attr, f);
	if (rc < 0)
		falloc_reply(f, -rc);
}

/* ---- lseek SEEK_DATA / SEEK_HOLE ---------------------------------------------------- */

struct seek_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	struct smb2_fileid fid;
	int whence;
	uint64_t off, eof;
};

static void seek_have_ranges(void *arg, int err, uint32_t status, const struct smb_range *r,
                             size_t n)
{
	struct seek_ctx *s = arg;
	fuse_req_t req = s->req;
	uint64_t off = s->off, eof = s->eof;
	int whence = s->whence;
	free(s);
	/* A server without the FSCTL: the whole file is data. */
	if (!err && (status == STATUS_INVALID_DEVICE_REQUEST || status == STATUS_NOT_SUPPORTED)) {
		fuse_reply_lseek(req, whence == SEEK_DATA ? (off_t)off : (off_t)eof);
		return;
	}
	/* a cut list (BUFFER_OVERFLOW) still holds the first ranges */
	int rc = smb_errno(err, status == STATUS_BUFFER_OVERFLOW ? STATUS_SUCCESS : status);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	uint64_t pos = off;
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		uint64_t r_end = r[i].off + r[i].len;
		if (r_end <= pos)
			continue;
		if (whence == SEEK_DATA) {
			pos = r[i].off > pos ? r[i].off : pos;
			found = true;
			break;
		}
		if (r[i].off > pos)
			break; /* pos is in a hole */
		pos = r_end;   /* data up to r_end; look on */
	}
	if (whence == SEEK_DATA && (!found || pos >= eof))
		fuse_reply_err(req, ENXIO);
	else
		fuse_reply_lseek(req, (off_t)(pos < eof ? pos : eof));
}

static void seek_have_size(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct seek_ctx *s = arg;
	int rc = smb_errno(err, status);
	if (!rc && s->off >= a->end_of_file)
		rc = ENXIO;
	if (!rc) {
		s->eof = a->end_of_file;
		rc = -smb_query_ranges(s->fs->client, s->fid, s->off, s->eof - s->off,
		                       seek_have_ranges, s);
	}
	if (rc) {
		fuse_req_t req = s->req;
		free(s);
		fuse_reply_err(req, rc);
	}
}

void smbfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *file = smbfs_file_of(fi);
	struct smbfs_held a = {
	    .op = SMBFS_HELD_LSEEK, .req = req, .ino = ino, .off = off, .n = whence};
	if (smbfs_hold_for_writes(fs, ino, &a, fi))
		return;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		/* the kernel does SEEK_SET/CUR/END itself */
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!file || off < 0) {
		fuse_reply_err(req, off < 0 ? ENXIO : EINVAL);
		return;
	}
	struct seek_ctx *s = malloc(sizeof(*s));
	if (!s) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*s = (struct seek_ctx){
	    .req = req, .fs = fs, .fid = file->fid, .whence = whence, .off = (uint64_t)off};
	int rc = smb_fstat(fs->client, file->fid, seek_have_size, s);
	if (rc < 0) {
		free(s);
		fuse_reply_err(req, -rc);
	}
}
