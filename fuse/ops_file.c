/* fuse/ops_file.c — ops on open files: open, create, read, write, flush,
 * fsync, release.
 *
 * libfuse hands the op a fuse_file_info on its own stack: a reply sent
 * later from a callback uses a copy kept in the request's context. */
#include "fuse/reqbuf.h"
#include "fuse/ring.h"
#include "fuse/smbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
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

static bool node_has_handles(struct smbfs *fs, uint64_t nodeid)
{
	bool any = false;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !any; f = f->next)
		any = f->nodeid == nodeid;
	pthread_mutex_unlock(&fs->handles_lock);
	return any;
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
	void (*closed)(void *) = f->on_closed;
	void *closed_arg = f->on_closed_arg;
	int e = smb_errno(err, status);

	if (e)
		smb_debug("close of nodeid %llu failed: %s", (unsigned long long)f->nodeid,
		          strerror(e));
	untrack_handle(f);
	/* the scan of every handle only for an inode with hidden names */
	if (f->fs && smb_inode_has_hidden_names(f->fs->inodes, f->nodeid) &&
	    !node_has_handles(f->fs, f->nodeid))
		smb_inode_handles_closed(f->fs->inodes, f->nodeid);
	free_handle(f);
	/* close(2) has returned long ago; the kernel ignores this value. */
	if (req)
		fuse_reply_err(req, 0);
	if (closed)
		closed(closed_arg);
}

static void close_ignored(void *arg, int err, uint32_t status)
{
}

void smbfs_close_fid(struct smbfs *fs, struct smb2_fileid fid)
{
	if (smb_close(fs->client, fid, close_ignored, NULL) < 0)
		smb_warn("%s: could not close an unused handle", fs->source);
}

void smbfs_times_told(struct smbfs *fs, uint64_t ino, const struct smb_attr *attr)
{
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next)
		if (f->nodeid == ino && f->wrote && !f->closing) {
			f->mtime_told = true;
			f->told_mtime = attr->last_write_time;
		}
	pthread_mutex_unlock(&fs->handles_lock);
}

/* smbfs_times_moved(); writer, when not NULL, is the handle a write(2)
 * came through: it wrote (under the same lock). */
static void times_moved(struct smbfs *fs, uint64_t ino, bool set, struct smbfs_file *writer)
{
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next)
		if (f->nodeid == ino) {
			f->mtime_told = false;
			if (set)
				f->wrote = false;
		}
	if (writer)
		writer->wrote = true;
	pthread_mutex_unlock(&fs->handles_lock);
}

void smbfs_times_moved(struct smbfs *fs, uint64_t ino, bool set)
{
	times_moved(fs, ino, set, NULL);
}

/* The mtime f's CLOSE keeps (0: none), once f is `closing`. */
static uint64_t mtime_to_keep(struct smbfs *fs, struct smbfs_file *f)
{
	pthread_mutex_lock(&fs->handles_lock);
	uint64_t t = f->mtime_told ? f->told_mtime : 0;
	pthread_mutex_unlock(&fs->handles_lock);
	return t;
}

void smbfs_close_handle(struct smbfs *fs, struct smbfs_file *f)
{
	/* from now on nobody else may use its FileId (smbfs_open_fid) */
	pthread_mutex_lock(&fs->handles_lock);
	f->closing = true;
	pthread_mutex_unlock(&fs->handles_lock);
	uint64_t keep = mtime_to_keep(fs, f);
	void *arg = f;
	int rc = -1;

	if (keep)
		rc = smb_close_batch(fs->client, &f->fid, &keep, &arg, 1, close_done);
	if (rc < 0)
		rc = smb_close(fs->client, f->fid, close_done, f);
	if (rc < 0)
		close_done(f, rc, 0);
}

/* ---- closes in batches --------------------------------------------------------
 *
 * A released file's CLOSE waits up to CLOSE_BATCH_MS for others, and goes
 * with up to SMB_CLOSE_BATCH_MAX - 1 of them in one compound: the kernel
 * answered close(2) already, nothing waits on it, and the server keeps the
 * file open a few ms longer (its lease too; our handles share everything).
 * What must not find the file open waits (smbfs_closes_wait()). */
#define CLOSE_BATCH_MS 10

struct smbfs_close_waiter {
	void (*then)(void *arg);
	void *arg;
	struct smbfs_close_waiter *next;
};

static void closes_settled(struct smbfs *fs)
{
	struct smbfs_close_waiter *w = fs->close_waiters;
	fs->close_waiters = NULL;
	while (w) {
		struct smbfs_close_waiter *next = w->next;
		w->then(w->arg);
		free(w);
		w = next;
	}
}

static void deferred_close_done(void *arg, int err, uint32_t status)
{
	struct smbfs_file *f = arg;
	struct smbfs *fs = f->fs;
	close_done(f, err, status);
	if (!--fs->closes_out && fs->close_waiters)
		closes_settled(fs);
}

static void send_closes(struct smbfs *fs)
{
	struct smb2_fileid fids[SMB_CLOSE_BATCH_MAX];
	uint64_t mtimes[SMB_CLOSE_BATCH_MAX];
	void *args[SMB_CLOSE_BATCH_MAX];
	int n = fs->close_n;

	if (fs->close_timer)
		ev_timer_cancel(fs->close_timer);
	fs->close_timer = NULL;
	fs->close_n = 0;
	fs->close_pdus = 0;
	for (int i = 0; i < n; i++) {
		fids[i] = fs->close_q[i]->fid;
		mtimes[i] = mtime_to_keep(fs, fs->close_q[i]);
		args[i] = fs->close_q[i];
	}
	if (n == 0 || smb_close_batch(fs->client, fids, mtimes, args, n, deferred_close_done) == 0)
		return;
	/* one by one, then (a handle a reconnect lost fails alone) */
	for (int i = 0; i < n; i++)
		if (smb_close(fs->client, fids[i], deferred_close_done, args[i]) < 0)
			deferred_close_done(args[i], -EIO, 0);
}

static void close_timer_fired(void *arg)
{
	struct smbfs *fs = arg;
	fs->close_timer = NULL; /* fired: freed by the loop */
	send_closes(fs);
}

void smbfs_close_later(struct smbfs *fs, struct smbfs_file *f)
{
	fuse_req_t req = f->release_req;
	/* not while an op waits for the deferred ones (it would wait on) */
	if (!fs->batch_closes || !fs->client || fs->close_waiters) {
		smbfs_close_handle(fs, f);
		return;
	}
	f->release_req = NULL;
	pthread_mutex_lock(&fs->handles_lock);
	f->closing = true;
	pthread_mutex_unlock(&fs->handles_lock);
	int pdus = mtime_to_keep(fs, f) ? 2 : 1;
	if (fs->close_pdus + pdus > SMB_CLOSE_BATCH_MAX)
		send_closes(fs);
	f->close_deferred = true;
	fs->closes_out++;
	fs->close_q[fs->close_n++] = f;
	fs->close_pdus += pdus;
	if (req)
		fuse_reply_err(req, 0); /* close(2) returned long ago */
	if (fs->close_pdus == SMB_CLOSE_BATCH_MAX ||
	    (!fs->close_timer && ev_timer_add(smb_client_loop(fs->client), CLOSE_BATCH_MS,
	                                      close_timer_fired, fs, &fs->close_timer) < 0))
		send_closes(fs);
}

void smbfs_quiesce(struct smbfs *fs)
{
	fs->batch_closes = false;
	send_closes(fs);
	fs->max_cached_dirs = 0;
	smbfs_dirs_unpark(fs, 0, NULL, NULL);
}

bool smbfs_closes_wait(struct smbfs *fs, uint64_t nodeid, void (*then)(void *arg), void *arg)
{
	bool pending = false;
	if (!fs->closes_out)
		return false;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !pending; f = f->next)
		pending = f->close_deferred && (!nodeid || f->nodeid == nodeid);
	pthread_mutex_unlock(&fs->handles_lock);
	if (!pending)
		return false;
	struct smbfs_close_waiter *w = malloc(sizeof(*w));
	if (w) {
		*w = (struct smbfs_close_waiter){
		    .then = then, .arg = arg, .next = fs->close_waiters};
		fs->close_waiters = w;
	}
	send_closes(fs); /* may complete them all at once (and run w) */
	return w != NULL;
}

/* ---- open, create ------------------------------------------------------------ */

struct open_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	struct fuse_file_info fi;
	uint64_t parent; /* create only */
	uint64_t nodeid; /* open only */
	/* What was sent (args.lease_id: the lease asked for, cache.c), for
	 * open_fresh_key(): path is owned (free_open_ctx()). */
	struct smb_open_args args;
	char *path;
	bool fresh_key; /* sent again under a fresh lease key already */
	char name[];    /* create only */
};

static void free_open_ctx(struct open_ctx *ctx)
{
	if (ctx)
		free(ctx->path);
	free(ctx);
}

/* A server refuses a lease key it holds for this file under another name
 * with STATUS_INVALID_PARAMETER ([MS-SMB2] 3.3.5.9.8; Samba's
 * lease_match()): with the POSIX extensions hard links are one inode, and
 * an open of one name asks for the lease the other name's open holds.  The
 * open is sent once more under a key of its own, which the handle keeps
 * (its breaks name it, cache.c).  True: sent, cb answers. */
static bool open_fresh_key(struct open_ctx *ctx, uint32_t status, smb_open_cb cb)
{
	if (status != STATUS_INVALID_PARAMETER || ctx->fresh_key || !ctx->args.lease_id)
		return false;
	ctx->fresh_key = true;
	ctx->args.lease_id = smbfs_lease_id(ctx->fs, 0);
	return smb_open(ctx->fs->client, ctx->path, &ctx->args, cb, ctx) == 0;
}

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
	bool direct = (fi->flags & O_DIRECT) != 0 || fs->direct_io || (!cache && !fs->keep_cache);
	/* A write-only open (cp, tar x, git's new objects) has no pages to
	 * read and cannot be mmapped: its writes skip the page cache too (the
	 * kernel's copy of every page, and the security.capability GETXATTR
	 * it sends before each cached write), and are still written behind
	 * under a W lease (f->direct stays false).  The kernel drops the
	 * range's cached pages before each such write (fuse_direct_io() in
	 * Linux 6.12, and 6.18 by test), so other opens here read what it
	 * wrote; fs->wronly_direct relies on that from FUSE 7.39 (Linux 6.6)
	 * on, a conservative bound.  Not O_APPEND: an append takes its offset
	 * from the cached size. */
	bool wronly = (fi->flags & O_ACCMODE) == O_WRONLY && !(fi->flags & O_APPEND);
	fi->direct_io = direct || (wronly && fs->wronly_direct);
	/* cache=strict: reopening drops cached pages (close-to-open) unless
	 * the lease kept them valid; cache=loose keeps them. */
	fi->keep_cache = fs->keep_cache || keep;
	f->direct = direct;
}

/* The open's attributes say the file changed since the kernel was last told
 * (a LOOKUP, which opens without a lease and so breaks nobody's, can see
 * the file before another client's writes behind land; the open breaks
 * that client's lease, and its answer comes after them): the kernel's
 * attributes go stale, so a read past the size it had asks again.  Only the
 * attributes: offset -1 touches no page and does not block. */
static void open_attr_changed(struct smbfs *fs, uint64_t nodeid, const struct smb_attr *attr)
{
	struct smb_attr old;
	uint64_t st_ino;
	bool fresh;

	if (!fs->se ||
	    smb_inode_get_attr(fs->inodes, nodeid, smbfs_now_ns(), &old, &fresh, &st_ino) < 0)
		return;
	if (old.end_of_file != attr->end_of_file || old.last_write_time != attr->last_write_time)
		fuse_lowlevel_notify_inval_inode(fs->se, nodeid, -1, 0);
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
		f = new_handle(fid, ctx->nodeid, ctx->args.lease_id, ctx->fi.flags);
		if (!f) {
			e = ENOMEM;
			smbfs_close_fid(fs, fid);
		}
	} else if (!err && open_fresh_key(ctx, status, open_done)) {
		return;
	}
	if (e) {
		free_open_ctx(ctx);
		fuse_reply_err(req, e);
		return;
	}
	smbfs_track_handle(fs, f);
	open_attr_changed(fs, ctx->nodeid, attr);
	smb_inode_set_attr(fs->inodes, ctx->nodeid, attr, smbfs_now_ns());
	set_open_flags(fs, &ctx->fi, f, attr);
	if (fuse_reply_open(req, &ctx->fi) == -ENOENT)
		smbfs_close_handle(fs, f); /* open(2) was interrupted */
	free_open_ctx(ctx);
}

/* An open run again once the inode's put-off CLOSE is answered. */
struct open_again {
	fuse_req_t req;
	fuse_ino_t ino;
	struct fuse_file_info fi;
};

static void open_again(void *arg)
{
	struct open_again o = *(struct open_again *)arg;
	free(arg);
	smbfs_open(o.req, o.ino, &o.fi);
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
	/* The open asks for the inode's lease, which the handle whose CLOSE
	 * was put off still holds under the name it was opened by: a server
	 * refuses the key under another name (a hard link, a directory
	 * renamed above: STATUS_INVALID_PARAMETER), so that CLOSE goes
	 * first. */
	if (fs->closes_out) {
		struct open_again *o = malloc(sizeof(*o));
		if (o) {
			*o = (struct open_again){.req = req, .ino = ino, .fi = *fi};
			if (smbfs_closes_wait(fs, ino, open_again, o))
				return;
			free(o);
		}
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
	args.lease_id = smbfs_lease_id(fs, ino);
	/* our own changes through it (size, times) then leave our lease of
	 * its directory alone (ParentLeaseKey, as smbfs_create()) */
	args.parent_lease_id = smbfs_parent_lease_id(fs, smb_inode_parent(fs->inodes, ino));
	if (fi->flags & O_TRUNC)
		smb_inode_invalidate_attr(fs->inodes, ino);
	ctx->args = args;
	ctx->path = path;
	rc = smb_open(fs->client, path, &args, open_done, ctx);
	if (rc < 0) {
		free_open_ctx(ctx);
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

	if (rc && !err && open_fresh_key(ctx, status, create_done))
		return;
	smb_inode_dir_changed(fs->inodes, ctx->parent, smbfs_wall_ns());
	smbfs_dir_known_add(fs, ctx->parent, ctx->name);
	if (rc) {
		free_open_ctx(ctx);
		fuse_reply_err(req, rc);
		return;
	}
	rc = smb_inode_link(fs->inodes, ctx->parent, ctx->name, attr, smbfs_now_ns(), &nodeid,
	                    &st_ino);
	f = rc == 0 ? new_handle(fid, nodeid, ctx->args.lease_id, ctx->fi.flags) : NULL;
	if (!f) {
		/* The file exists on the server now, but we cannot hand it
		 * out; a later lookup will find it. */
		if (rc == 0)
			smbfs_forget_count(fs, nodeid, 1);
		smbfs_close_fid(fs, fid);
		free_open_ctx(ctx);
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
	free_open_ctx(ctx);
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
	args.lease_id = smbfs_lease_id(fs, smb_inode_find(fs->inodes, parent, name));
	/* The new name, and what is written through this handle, do not
	 * break our own lease on the directory (ParentLeaseKey): the kernel
	 * and the inode table know of them already. */
	args.parent_lease_id = smbfs_parent_lease_id(fs, parent);
	/* As cifs.ko does: a new file without any write bit is READONLY. */
	args.file_attributes = (mode & (S_IWUSR | S_IWGRP | S_IWOTH)) ? FILE_ATTRIBUTE_NORMAL
	                                                              : FILE_ATTRIBUTE_READONLY;
	/* SMB3 POSIX extensions: the mode itself (READONLY then says nothing more) */
	args.set_mode = fs->posix;
	args.mode = mode;
	if (fs->posix)
		args.file_attributes = FILE_ATTRIBUTE_NORMAL;
	ctx->args = args;
	ctx->path = path;
	rc = smb_open(fs->client, path, &args, create_done, ctx);
	if (rc < 0) {
		free_open_ctx(ctx);
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
	struct smbfs_held a = {
	    .op = SMBFS_HELD_READ, .req = req, .ino = ino, .size = size, .off = off};
	int rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* The page cache may miss what a write answered early put there (a
	 * partial page): read after it reached the server. */
	if (smbfs_hold_for_writes(smbfs_of(req), ino, &a, fi))
		return;
	smb_debug("read nodeid %llu: %zu bytes at %lld", (unsigned long long)ino, size,
	          (long long)off);
	/* A request from the FUSE ring: the data lands in its entry, and the
	 * reply is sent from there without a copy (fuse/ring.h). */
	size_t cap = 0;
	void *in_ring = fuse_ring_payload(smbfs_of(req)->ring, &cap);
	if (in_ring && size <= cap)
		rc = smb_read_lent(smbfs_of(req)->client, smbfs_file_of(fi)->fid, (uint64_t)off,
		                   in_ring, size, read_done, req);
	else
		rc = smb_read(smbfs_of(req)->client, smbfs_file_of(fi)->fid, (uint64_t)off, size,
		              read_done, req);
	if (rc < 0)
		fuse_reply_err(req, -rc);
}

/* Write-behind (fuse/wb.h): a buffered write to a file under a lease with W
 * is answered once its WRITE is sent; fs->wb holds every WRITE in flight so
 * that overlapping writes keep their order and the ops below wait for them.
 * An error of a write answered early is kept in its handle (wb_err) and
 * given to the next write, flush (close(2)) or fsync on it. */
struct write_ctx {
	fuse_req_t req; /* NULL once answered */
	struct smbfs *fs;
	struct smbfs_file *f;
	const char *data;       /* in the lent buffer, or copy; w.len bytes */
	int lent;               /* reqbuf id of the buffer holding the payload, or -1 */
	bool in_ring;           /* the payload is in its FUSE ring entry, which stays put
	                           until this write's reply (not answered early) */
	char *copy;             /* the payload when no buffer could be lent, or gathered */
	size_t cap;             /* of copy, when gathering */
	struct ev_timer *timer; /* sends a gathered write that waited GATHER_MS */
	/* New times a setattr left with the gathered write, to go out in
	 * the same round trip after it (smbfs_gather_times()); which == 0:
	 * none. */
	struct smb_setattr_args times;
	struct wb_write w;
	struct wb_waiter q; /* waiting for an overlapping write to complete */
};

static struct write_ctx *write_of(struct wb_write *w)
{
	return (struct write_ctx *)(void *)((char *)w - offsetof(struct write_ctx, w));
}

/* A write held for room in the table may now be answered. */
static void answer_held(struct wb_write *w)
{
	struct write_ctx *ctx = write_of(w);

	fuse_reply_write(ctx->req, (size_t)ctx->w.len);
	ctx->req = NULL;
}

static void keep_write_error(struct smbfs_file *f, int e)
{
	pthread_mutex_lock(&f->fs->handles_lock);
	if (!f->wb_err)
		f->wb_err = e;
	pthread_mutex_unlock(&f->fs->handles_lock);
}

/* The error a write answered early left on f, taken (each is reported once). */
static int take_write_error(struct smbfs_file *f)
{
	pthread_mutex_lock(&f->fs->handles_lock);
	int e = f->wb_err;
	f->wb_err = 0;
	pthread_mutex_unlock(&f->fs->handles_lock);
	return e;
}

static void write_done(void *arg, int err, uint32_t status, size_t written)
{
	struct write_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	int e = smb_errno(err, status);

	if (ctx->lent >= 0)
		reqbuf_return(fs->reqbufs, ctx->lent);
	free(ctx->copy);
	/* Size and mtime moved on the server. */
	smb_inode_invalidate_attr(fs->inodes, ctx->w.nodeid);
	if (ctx->w.answered) {
		/* write(2) returned long ago: whoever waits on the inode
		 * (flush, fsync) must find the error on the handle */
		if (!e && written < (size_t)ctx->w.len)
			e = EIO;
		if (e) {
			smb_warn(
			    "%s: a write of %zu bytes at %llu to inode %llu, already "
			    "answered, failed: %s (reported on the next write, close or fsync)",
			    fs->source, (size_t)ctx->w.len, (unsigned long long)ctx->w.off,
			    (unsigned long long)ctx->w.nodeid, strerror(e));
			keep_write_error(ctx->f, e);
		}
	}
	wb_done(fs->wb, &ctx->w, answer_held);
	if (!ctx->w.answered) {
		if (e)
			fuse_reply_err(ctx->req, e);
		else
			fuse_reply_write(ctx->req, written);
	}
	free(ctx);
}

static void write_submit(struct write_ctx *ctx)
{
	struct smbfs *fs = ctx->fs;
	int rc;

	/* a lent request buffer, or our own copy: both stay put until
	 * write_done, so the engine sends from them in place */
	if (ctx->times.which)
		rc = smb_write_times(fs->client, ctx->f->fid, ctx->w.off, ctx->data,
		                     (size_t)ctx->w.len, &ctx->times, write_done, ctx);
	else if (ctx->lent >= 0 || ctx->copy || ctx->in_ring)
		rc = smb_write_lent(fs->client, ctx->f->fid, ctx->w.off, ctx->data,
		                    (size_t)ctx->w.len, write_done, ctx);
	else
		rc = smb_write(fs->client, ctx->f->fid, ctx->w.off, ctx->data, (size_t)ctx->w.len,
		               write_done, ctx);
	if (rc < 0)
		write_done(ctx, rc, 0, 0);
}

/* Enter ctx in the table, and answer its write(2) now if there is room. */
static bool enter_write(struct write_ctx *ctx)
{
	if (!wb_add(ctx->fs->wb, &ctx->w))
		return false;
	fuse_reply_write(ctx->req, (size_t)ctx->w.len);
	ctx->req = NULL;
	return true;
}

static void write_send(struct write_ctx *ctx)
{
	enter_write(ctx);
	write_submit(ctx);
}

/* ---- gathering small writes ----------------------------------------------------
 *
 * tar writes a file in 10 KiB records, git in 8 KiB ones: under write-behind
 * each would be a WRITE of its own.  Instead a handle gathers contiguous
 * writes smaller than GATHER_SMALL into one buffer (up to GATHER_MAX), in
 * the table as one write answered early, and sends it when the next write
 * does not follow on, when it is full, GATHER_MS after it began, or before
 * anything that waits for the inode's writes (smbfs_hold_for_writes(), an
 * overlapping write, a lease break): what holds for a write answered early
 * holds for it. */
#define GATHER_SMALL (128u << 10)
#define GATHER_MAX   (1u << 20)
#define GATHER_MS    1000

static struct write_ctx *take_gather(struct smbfs_file *f)
{
	pthread_mutex_lock(&f->fs->handles_lock);
	struct write_ctx *g = f->gather;
	f->gather = NULL;
	pthread_mutex_unlock(&f->fs->handles_lock);
	return g;
}

static void send_gather(struct write_ctx *g)
{
	if (g->timer)
		ev_timer_cancel(g->timer);
	g->timer = NULL;
	g->data = g->copy;
	write_submit(g);
}

static void gather_timer(void *arg)
{
	struct write_ctx *g = arg;

	g->timer = NULL; /* fired: it frees itself */
	if (take_gather(g->f) == g)
		send_gather(g);
}

void smbfs_send_gathered(struct smbfs *fs, uint64_t nodeid)
{
	struct write_ctx *g[16];
	size_t n;

	do {
		n = 0;
		pthread_mutex_lock(&fs->handles_lock);
		for (struct smbfs_file *f = fs->handles; f && n < 16; f = f->next) {
			if (f->nodeid == nodeid && f->gather) {
				g[n++] = f->gather;
				f->gather = NULL;
			}
		}
		pthread_mutex_unlock(&fs->handles_lock);
		for (size_t i = 0; i < n; i++)
			send_gather(g[i]);
	} while (n == 16);
}

bool smbfs_gather_times(struct smbfs *fs, uint64_t nodeid, const struct smb_setattr_args *times)
{
	struct write_ctx *one = NULL;
	unsigned n = 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->nodeid == nodeid && f->gather) {
			one = f->gather;
			n++;
		}
	}
	/* Only behind the inode's one gathered write with nothing else in
	 * flight: then it is the last write before the setattr, and every
	 * write after it waits for it (wb_must_wait()). */
	bool taken = n == 1 && !one->f->closing && !one->times.which &&
	             one->w.len <= SMB_WRITE_TIMES_MAX && wb_in_flight_of(fs->wb, nodeid) == 1;
	if (taken)
		one->times = *times;
	pthread_mutex_unlock(&fs->handles_lock);
	return taken;
}

/* Add a small write to f's gathered one if it follows on and fits. */
static bool gather_append(struct smbfs *fs, struct smbfs_file *f, const char *buf, size_t size,
                          off_t off)
{
	struct write_ctx *g = f->gather;

	/* not past new times: they were set after what is gathered */
	if (!g || g->times.which || g->w.off + g->w.len != (uint64_t)off ||
	    g->w.len + size > GATHER_MAX)
		return false;
	size_t at = (size_t)g->w.len, end = at + size;
	if (end > g->cap) {
		/* double, up to GATHER_MAX (which end never passes) */
		size_t cap = g->cap * 2 < end          ? end
		             : g->cap * 2 > GATHER_MAX ? GATHER_MAX
		                                       : g->cap * 2;
		char *p = realloc(g->copy, cap);
		if (!p)
			return false;
		g->copy = p;
		g->cap = cap;
	}
	if (!wb_grow(fs->wb, &g->w, size)) /* w.len grows with it */
		return false;
	memcpy(g->copy + at, buf, size);
	return true;
}

/* Begin gathering with this write: true when it is taken (answered, or
 * sent to be answered when it completes). */
static bool gather_start(struct smbfs *fs, struct smbfs_file *f, fuse_req_t req, const char *buf,
                         size_t size, off_t off)
{
	size_t cap = size < (64u << 10) ? (64u << 10) : size;
	struct write_ctx *g = calloc(1, sizeof(*g));
	char *copy = malloc(cap);

	if (!g || !copy) {
		free(g);
		free(copy);
		return false;
	}
	memcpy(copy, buf, size);
	*g = (struct write_ctx){
	    .req = req,
	    .fs = fs,
	    .f = f,
	    .data = copy,
	    .lent = -1,
	    .copy = copy,
	    .cap = cap,
	    .w = {.nodeid = f->nodeid, .off = (uint64_t)off, .len = size, .may_answer = true}};
	if (!enter_write(g)) {
		write_submit(g); /* no room: answered when it completes */
		return true;
	}
	if (ev_timer_add(smb_client_loop(fs->client), GATHER_MS, gather_timer, g, &g->timer) < 0) {
		send_gather(g);
		return true;
	}
	pthread_mutex_lock(&fs->handles_lock);
	f->gather = g;
	pthread_mutex_unlock(&fs->handles_lock);
	return true;
}

static void write_resume(void *arg)
{
	struct write_ctx *ctx = arg;

	if (wb_must_wait(ctx->fs->wb, ctx->w.nodeid, ctx->w.off, (size_t)ctx->w.len) &&
	    wb_when_idle(ctx->fs->wb, &ctx->q, ctx->w.nodeid, write_resume, ctx))
		return;
	write_send(ctx);
}

/* May this write be answered before it completes?  Only a buffered one, on
 * a handle whose lease has W (no other client can read the file without a
 * break, which waits for it), without O_SYNC/O_DSYNC. */
static bool may_write_behind(struct smbfs *fs, struct smbfs_file *f,
                             const struct fuse_file_info *fi)
{
	if (!fs->write_behind || f->direct || (fi->flags & (O_DIRECT | O_DSYNC | O_SYNC)))
		return false;
	pthread_mutex_lock(&fs->handles_lock);
	bool ok = (f->lease & SMB2_LEASE_WRITE_CACHING) && !f->uncached && !f->closing;
	pthread_mutex_unlock(&fs->handles_lock);
	return ok;
}

void smbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                 struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *f = smbfs_file_of(fi);
	struct write_ctx *ctx;

	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	int e = take_write_error(f);
	if (e) {
		fuse_reply_err(req, e);
		return;
	}
	smb_debug("write nodeid %llu: %zu bytes at %lld", (unsigned long long)ino, size,
	          (long long)off);
	times_moved(fs, ino, false, f);
	bool behind = may_write_behind(fs, f, fi);
	bool small = behind && size < GATHER_SMALL;
	if (small && gather_append(fs, f, buf, size, off)) {
		fuse_reply_write(req, size);
		return;
	}
	/* what was gathered goes first */
	struct write_ctx *g = take_gather(f);
	if (g)
		send_gather(g);
	if (small && !wb_must_wait(fs->wb, ino, (uint64_t)off, size) &&
	    gather_start(fs, f, req, buf, size, off))
		return;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx->req = req;
	ctx->fs = fs;
	ctx->f = f;
	ctx->w.nodeid = ino;
	ctx->w.off = (uint64_t)off;
	ctx->w.len = size;
	ctx->w.may_answer = behind;
	/* buf lies in the request buffer the pump read into: borrow that
	 * buffer until the write is done, and the engine sends the payload
	 * from it in place (or has the server RDMA-Read it).  When every
	 * buffer was lent, buf is in the spare: a write sent at once lets
	 * smb_write() copy it; one that must wait copies it here. */
	ctx->lent = reqbuf_lend(fs->reqbufs, buf, size);
	ctx->in_ring = ctx->lent < 0 && !behind && fuse_ring_holds(fs->ring, buf, size);
	ctx->data = buf;
	if (wb_must_wait(fs->wb, ino, (uint64_t)off, size)) {
		smbfs_send_gathered(fs, ino); /* else the wait could be for ever */
		if (ctx->lent < 0 && !ctx->in_ring) {
			ctx->copy = malloc(size ? size : 1);
			if (!ctx->copy) {
				free(ctx);
				fuse_reply_err(req, ENOMEM);
				return;
			}
			memcpy(ctx->copy, buf, size);
			ctx->data = ctx->copy;
		}
		if (wb_when_idle(fs->wb, &ctx->q, ino, write_resume, ctx))
			return;
	}
	write_send(ctx);
}

/* ---- waiting for the writes in flight ---------------------------------------- */

struct held_op {
	struct wb_waiter q;
	struct smbfs_held a;
};

static void held_resume(void *arg)
{
	struct held_op *h = arg;
	struct smbfs_held a = h->a;

	free(h);
	struct fuse_file_info *fi = a.has_fi ? &a.fi : NULL;
	switch (a.op) {
	case SMBFS_HELD_READ:
		smbfs_read(a.req, a.ino, a.size, a.off, fi);
		break;
	case SMBFS_HELD_FLUSH:
		smbfs_flush(a.req, a.ino, fi);
		break;
	case SMBFS_HELD_FSYNC:
		smbfs_fsync(a.req, a.ino, a.n, fi);
		break;
	case SMBFS_HELD_RELEASE:
		smbfs_release(a.req, a.ino, fi);
		break;
	case SMBFS_HELD_SETATTR:
		smbfs_setattr(a.req, a.ino, &a.st, a.n, fi);
		break;
	case SMBFS_HELD_FALLOCATE:
		smbfs_fallocate(a.req, a.ino, a.n, a.off, a.len, fi);
		break;
	case SMBFS_HELD_LSEEK:
		smbfs_lseek(a.req, a.ino, a.off, a.n, fi);
		break;
	case SMBFS_HELD_COPY:
		smbfs_copy_file_range(a.req, a.ino, a.off, fi, a.ino2, a.off2,
		                      a.has_fi2 ? &a.fi2 : NULL, a.size, a.n);
		break;
	case SMBFS_HELD_GETATTR:
		smbfs_getattr(a.req, a.ino, fi);
		break;
	case SMBFS_HELD_LOOKUP:
		smbfs_lookup(a.req, a.ino, a.name);
		break;
	case SMBFS_HELD_OPENDIR:
		smbfs_opendir(a.req, a.ino, &a.fi);
		break;
	}
}

/* A copy of *a (with *fi, if any, as its fi), or NULL. */
static struct held_op *held_new(const struct smbfs_held *a, const struct fuse_file_info *fi)
{
	struct held_op *h = malloc(sizeof(*h));
	if (h) {
		h->a = *a;
		if (fi) {
			h->a.fi = *fi;
			h->a.has_fi = true;
		}
	}
	return h;
}

bool smbfs_hold_for_close(struct smbfs *fs, uint64_t nodeid, const struct smbfs_held *a,
                          const struct fuse_file_info *fi)
{
	if (!fs->closes_out)
		return false;
	struct held_op *h = held_new(a, fi);
	if (!h)
		return false; /* without the wait; the op goes on */
	if (smbfs_closes_wait(fs, nodeid, held_resume, h))
		return true;
	free(h);
	return false;
}

bool smbfs_hold_for_writes(struct smbfs *fs, uint64_t nodeid, const struct smbfs_held *a,
                           const struct fuse_file_info *fi)
{
	/* a gathered write is in the table too: an idle inode has none */
	if (!wb_busy(fs->wb, nodeid))
		return false;
	smbfs_send_gathered(fs, nodeid);
	struct held_op *h = held_new(a, fi);
	if (!h)
		return false; /* without the wait; the op goes on */
	if (wb_when_idle(fs->wb, &h->q, nodeid, held_resume, h))
		return true;
	free(h);
	return false;
}

/* ---- flush, fsync, release ---------------------------------------------------- */

void smbfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	/* The mtime a stat showed since the last write goes with the gathered
	 * write (a SET_INFO in its compound, which the server keeps through
	 * the CLOSE) rather than with the CLOSE, whose batch it would halve. */
	if (fi && fi->fh) {
		struct smbfs_file *f = smbfs_file_of(fi);
		uint64_t told = mtime_to_keep(fs, f);
		struct smb_setattr_args t = {.which = SMB_SET_MTIME, .mtime = told};
		if (told && smbfs_gather_times(fs, ino, &t))
			smbfs_times_moved(fs, ino, true);
	}
	/* close(2) returns once the writes answered early are on the server,
	 * with the error of one that failed. */
	struct smbfs_held a = {.op = SMBFS_HELD_FLUSH, .req = req, .ino = ino};
	if (smbfs_hold_for_writes(fs, ino, &a, fi))
		return;
	int e = fi && fi->fh ? take_write_error(smbfs_file_of(fi)) : 0;
	/* The closing process's POSIX locks go, as FUSE asks of a filesystem
	 * that keeps them. */
	if (!fs->nobrl && fi && fi->fh) {
		smbfs_plocks_flush(req, ino, fi, e);
		return;
	}
	fuse_reply_err(req, e);
}

static void fsync_done(void *arg, int err, uint32_t status)
{
	smbfs_reply_status(arg, err, status);
}

void smbfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct smbfs_held a = {.op = SMBFS_HELD_FSYNC, .req = req, .ino = ino, .n = datasync};
	int rc;

	if (smbfs_hold_for_writes(smbfs_of(req), ino, &a, fi))
		return;
	int e = fi && fi->fh ? take_write_error(smbfs_file_of(fi)) : 0;
	if (e) {
		fuse_reply_err(req, e);
		return;
	}

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
	struct smbfs_held a = {.op = SMBFS_HELD_RELEASE, .req = req, .ino = ino};

	/* Its handle closes after the last WRITE through it. */
	if (smbfs_hold_for_writes(fs, ino, &a, fi))
		return;
	int e = take_write_error(f);
	if (e)
		smb_warn("%s: a write to inode %llu failed after it was answered and no "
		         "close or fsync was left to report it: %s",
		         fs->source, (unsigned long long)ino, strerror(e));
	/* The server may update times on close. */
	smb_inode_invalidate_attr(fs->inodes, f->nodeid);
	smbfs_plocks_release(fs, f);
	f->release_req = req;
	/* A handle holding a flock closes at once: its CLOSE ends the lock,
	 * which another client may be waiting for. */
	if (f->flock)
		smbfs_close_handle(fs, f);
	else
		smbfs_close_later(fs, f);
}

void smbfs_wb_clamp_size(struct smbfs *fs, uint64_t nodeid, struct stat *st)
{
	if (!fs->wb || !S_ISREG(st->st_mode))
		return;
	uint64_t end = wb_end(fs->wb, nodeid);
	if (end > (uint64_t)st->st_size)
		st->st_size = (off_t)end;
}
