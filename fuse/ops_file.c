/* fuse/ops_file.c — ops on open files: open, create, read, write, flush,
 * fsync, release.
 *
 * libfuse hands the op a fuse_file_info on its own stack: a reply sent
 * later from a callback uses a copy kept in the request's context. */
#include "fuse/reqbuf.h"
#include "fuse/smbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "client/proto/smb2_errno.h"

/* ---- close ------------------------------------------------------------------- */

void smbfs_track_handle(struct smbfs *fs, struct smbfs_file *f)
{
	f->fs = fs;
	pthread_mutex_lock(&fs->handles_lock);
	f->prev = NULL;
	f->next = fs->handles;
	if (f->next)
		f->next->prev = f;
	fs->handles = f;
	pthread_mutex_unlock(&fs->handles_lock);
}

static void untrack_handle(struct smbfs_file *f)
{
	struct smbfs *fs = f->fs;

	if (!fs)
		return;
	pthread_mutex_lock(&fs->handles_lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		fs->handles = f->next;
	if (f->next)
		f->next->prev = f->prev;
	f->prev = f->next = NULL;
	pthread_mutex_unlock(&fs->handles_lock);
}

static void free_handle(struct smbfs_file *f)
{
	if (f->destroy)
		f->destroy(f);
	else
		free(f);
}

void smbfs_free_handles(struct smbfs *fs)
{
	struct smbfs_file *f;

	while ((f = fs->handles)) {
		fs->handles = f->next;
		free_handle(f);
	}
}

static void close_done(void *arg, int err, uint32_t status)
{
	struct smbfs_file *f = arg;
	fuse_req_t req = f->release_req;
	int e = smb_errno(err, status);

	if (e)
		smb_debug("close of nodeid %llu failed: %s", (unsigned long long)f->nodeid,
		          strerror(e));
	untrack_handle(f);
	free_handle(f);
	/* close(2) has returned long ago; the kernel ignores this value. */
	if (req)
		fuse_reply_err(req, 0);
}

static void close_ignored(void *arg, int err, uint32_t status)
{
}

/* Close a handle nobody will ever use (we could not hand it out). */
static void close_fid(struct smbfs *fs, struct smb2_fileid fid)
{
	if (smb_close(fs->client, fid, close_ignored, NULL) < 0)
		smb_warn("%s: could not close an unused handle", fs->source);
}

void smbfs_close_handle(struct smbfs *fs, struct smbfs_file *f)
{
	/* from now on nobody else may use its FileId (smbfs_open_fid) */
	pthread_mutex_lock(&fs->handles_lock);
	f->closing = true;
	pthread_mutex_unlock(&fs->handles_lock);
	int rc = smb_close(fs->client, f->fid, close_done, f);

	if (rc < 0)
		close_done(f, rc, 0);
}

/* ---- open, create ------------------------------------------------------------ */

struct open_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	struct fuse_file_info fi;
	uint64_t parent;   /* create only */
	uint64_t nodeid;   /* open only */
	uint64_t lease_id; /* the lease asked for (cache.c) */
	char name[];       /* create only */
};

static uint32_t access_for_flags(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		return GENERIC_READ;
	case O_WRONLY:
		/* fstat() on the handle needs READ_ATTRIBUTES */
		return GENERIC_WRITE | FILE_READ_ATTRIBUTES;
	default:
		return GENERIC_READ | GENERIC_WRITE;
	}
}

static bool writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static struct smbfs_file *new_handle(struct smb2_fileid fid, uint64_t nodeid, uint64_t lease_id,
                                     int flags)
{
	struct smbfs_file *f = calloc(1, sizeof(*f));

	if (f) {
		f->fid = fid;
		f->nodeid = nodeid;
		f->lease_id = lease_id;
		f->writable = (flags & O_ACCMODE) != O_RDONLY;
	}
	return f;
}

static void set_open_flags(struct smbfs *fs, struct fuse_file_info *fi, struct smbfs_file *f,
                           const struct smb_attr *attr)
{
	fi->fh = (uint64_t)(uintptr_t)f;
	/* cache=strict without a lease with R (or an oplock): another client
	 * may be writing it, so nothing of it is cached (cache.c). */
	bool keep;
	bool cache = smbfs_lease_open(fs, f, attr, &keep);
	/* O_DIRECT, cache=none or nothing to cache under: bypass the page
	 * cache, every read and write goes to the server as the application
	 * issued it. */
	fi->direct_io = (fi->flags & O_DIRECT) != 0 || fs->direct_io || (!cache && !fs->keep_cache);
	/* cache=strict: reopening drops cached pages (close-to-open) unless
	 * the lease kept them valid; cache=loose keeps them. */
	fi->keep_cache = fs->keep_cache || keep;
}

static void open_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                      const struct smb_attr *attr)
{
	struct open_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	struct smbfs_file *f = NULL;
	int e = smb_errno(err, status);

	if (e == 0) {
		f = new_handle(fid, ctx->nodeid, ctx->lease_id, ctx->fi.flags);
		if (!f) {
			e = ENOMEM;
			close_fid(fs, fid);
		}
	}
	if (e) {
		free(ctx);
		fuse_reply_err(req, e);
		return;
	}
	smbfs_track_handle(fs, f);
	smb_inode_set_attr(fs->inodes, ctx->nodeid, attr, smbfs_now_ns());
	set_open_flags(fs, &ctx->fi, f, attr);
	if (fuse_reply_open(req, &ctx->fi) == -ENOENT)
		smbfs_close_handle(fs, f); /* open(2) was interrupted */
	free(ctx);
}

void smbfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smb_open_args args = {0};
	struct open_ctx *ctx;
	char *path = NULL;
	int rc;

	if (fs->ro && writes(fi->flags)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	rc = smb_inode_path(fs->inodes, ino, NULL, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		free(path);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx->req = req;
	ctx->fs = fs;
	ctx->fi = *fi;
	ctx->nodeid = ino;
	args.desired_access = access_for_flags(fi->flags);
	args.share_access = FILE_SHARE_ALL;
	/* With FUSE_CAP_ATOMIC_O_TRUNC the kernel leaves truncation to us. */
	args.create_disposition = (fi->flags & O_TRUNC) ? FILE_OVERWRITE : FILE_OPEN;
	args.create_options = FILE_NON_DIRECTORY_FILE;
	args.lease_id = ctx->lease_id = smbfs_lease_id(fs, ino);
	if (fi->flags & O_TRUNC)
		smb_inode_invalidate_attr(fs->inodes, ino);
	rc = smb_open(fs->client, path, &args, open_done, ctx);
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

static void create_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                        const struct smb_attr *attr)
{
	struct open_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	struct fuse_entry_param e;
	struct smbfs_file *f;
	uint64_t nodeid, st_ino;
	int rc = smb_errno(err, status);

	smb_inode_dir_changed(fs->inodes, ctx->parent, smbfs_wall_ns());
	if (rc) {
		free(ctx);
		fuse_reply_err(req, rc);
		return;
	}
	rc = smb_inode_link(fs->inodes, ctx->parent, ctx->name, attr, smbfs_now_ns(), &nodeid,
	                    &st_ino);
	f = rc == 0 ? new_handle(fid, nodeid, ctx->lease_id, ctx->fi.flags) : NULL;
	if (!f) {
		/* The file exists on the server now, but we cannot hand it
		 * out; a later lookup will find it. */
		if (rc == 0)
			smbfs_forget_count(fs, nodeid, 1);
		close_fid(fs, fid);
		free(ctx);
		fuse_reply_err(req, rc ? -rc : ENOMEM);
		return;
	}
	smbfs_track_handle(fs, f);
	set_open_flags(fs, &ctx->fi, f, attr);
	smbfs_fill_entry(fs, nodeid, st_ino, attr, &e);
	if (fuse_reply_create(req, &e, &ctx->fi) == -ENOENT) {
		/* creat(2) was interrupted: the kernel knows neither the entry
		 * nor the handle. */
		smbfs_forget_count(fs, nodeid, 1);
		smbfs_close_handle(fs, f);
	}
	free(ctx);
}

void smbfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                  struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smb_open_args args = {0};
	struct open_ctx *ctx;
	char *path = NULL;
	int rc;

	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	rc = smbfs_check_name(fs, name);
	if (rc == 0)
		rc = smb_inode_path(fs->inodes, parent, name, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	ctx = calloc(1, sizeof(*ctx) + strlen(name) + 1);
	if (!ctx) {
		free(path);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx->req = req;
	ctx->fs = fs;
	ctx->fi = *fi;
	ctx->parent = parent;
	strcpy(ctx->name, name);
	args.desired_access = access_for_flags(fi->flags);
	args.share_access = FILE_SHARE_ALL;
	if (fi->flags & O_EXCL)
		args.create_disposition = FILE_CREATE;
	else if (fi->flags & O_TRUNC)
		args.create_disposition = FILE_OVERWRITE_IF;
	else
		args.create_disposition = FILE_OPEN_IF;
	args.create_options = FILE_NON_DIRECTORY_FILE;
	/* the inode's lease if this mount knows the name already */
	args.lease_id = ctx->lease_id =
	    smbfs_lease_id(fs, smb_inode_find(fs->inodes, parent, name));
	/* As cifs.ko does: a new file without any write bit is READONLY. */
	args.file_attributes = (mode & (S_IWUSR | S_IWGRP | S_IWOTH)) ? FILE_ATTRIBUTE_NORMAL
	                                                              : FILE_ATTRIBUTE_READONLY;
	/* SMB3 POSIX extensions: the mode itself (READONLY then says nothing more) */
	args.set_mode = fs->posix;
	args.mode = mode;
	if (fs->posix)
		args.file_attributes = FILE_ATTRIBUTE_NORMAL;
	rc = smb_open(fs->client, path, &args, create_done, ctx);
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- read, write --------------------------------------------------------------- */

static void read_done(void *arg, int err, uint32_t status, const void *data, size_t len)
{
	fuse_req_t req = arg;

	/* A read at or past the end is a short read, not an error. */
	if (err == 0 && status == STATUS_END_OF_FILE) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	int e = smb_errno(err, status);
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_buf(req, data, len);
}

void smbfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	int rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	smb_debug("read nodeid %llu: %zu bytes at %lld", (unsigned long long)ino, size,
	          (long long)off);
	rc = smb_read(smbfs_of(req)->client, smbfs_file_of(fi)->fid, (uint64_t)off, size, read_done,
	              req);
	if (rc < 0)
		fuse_reply_err(req, -rc);
}

struct write_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t nodeid;
	int lent; /* reqbuf id of the buffer holding the payload, or -1 */
};

static void write_done(void *arg, int err, uint32_t status, size_t written)
{
	struct write_ctx ctx = *(struct write_ctx *)arg;
	int e = smb_errno(err, status);

	free(arg);
	if (ctx.lent >= 0)
		reqbuf_return(ctx.fs->reqbufs, ctx.lent);
	/* Size and mtime moved on the server. */
	smb_inode_invalidate_attr(ctx.fs->inodes, ctx.nodeid);
	if (e)
		fuse_reply_err(ctx.req, e);
	else
		fuse_reply_write(ctx.req, written);
}

void smbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                 struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct write_ctx *ctx;
	int rc;

	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	smb_debug("write nodeid %llu: %zu bytes at %lld", (unsigned long long)ino, size,
	          (long long)off);
	ctx = malloc(sizeof(*ctx));
	if (!ctx) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx->req = req;
	ctx->fs = fs;
	ctx->nodeid = ino;
	/* buf lies in the request buffer the pump read into: borrow that
	 * buffer until the write is done, and the engine sends the payload
	 * from it in place (or has the server RDMA-Read it).  When every
	 * buffer was lent, buf is in the spare and smb_write() copies. */
	ctx->lent = reqbuf_lend(fs->reqbufs, buf, size);
	if (ctx->lent >= 0)
		rc = smb_write_lent(fs->client, smbfs_file_of(fi)->fid, (uint64_t)off, buf, size,
		                    write_done, ctx);
	else
		rc = smb_write(fs->client, smbfs_file_of(fi)->fid, (uint64_t)off, buf, size,
		               write_done, ctx);
	if (rc < 0) {
		if (ctx->lent >= 0)
			reqbuf_return(fs->reqbufs, ctx->lent);
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- flush, fsync, release ---------------------------------------------------- */

void smbfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Every write was acknowledged by the server before we replied to
	 * it; nothing is held back here.  The closing process's POSIX locks
	 * go, as FUSE asks of a filesystem that keeps them. */
	if (!smbfs_of(req)->nobrl && fi && fi->fh) {
		smbfs_plocks_flush(req, ino, fi);
		return;
	}
	fuse_reply_err(req, 0);
}

static void fsync_done(void *arg, int err, uint32_t status)
{
	smbfs_reply_status(arg, err, status);
}

void smbfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int rc;

	/* SMB2 FLUSH needs write access to the handle; a handle that cannot
	 * write has nothing of its own to flush, and every write through other
	 * handles was acknowledged before it returned (`sync FILE` opens
	 * read-only). */
	if (!fi || !fi->fh || !smbfs_file_of(fi)->writable) {
		fuse_reply_err(req, 0);
		return;
	}
	rc = smb_flush(smbfs_of(req)->client, smbfs_file_of(fi)->fid, fsync_done, req);
	if (rc < 0)
		fuse_reply_err(req, -rc);
}

void smbfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *f = smbfs_file_of(fi);

	/* The server may update times on close. */
	smb_inode_invalidate_attr(fs->inodes, f->nodeid);
	smbfs_plocks_release(fs, f);
	f->release_req = req;
	smbfs_close_handle(fs, f);
}
