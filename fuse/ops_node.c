/* fuse/ops_node.c — ops on names and inodes: lookup, forget, getattr,
 * setattr, mkdir, unlink, rmdir, rename, access, and the inode-flag ioctls. */
#include "fuse/smbfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>

#include "common/log.h"
#include "client/proto/smb2_errno.h"

/* Context of a request on one or two names.  The strings live in buf. */
struct name_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t parent, newparent;
	const char *name, *newname;
	bool cleared_readonly; /* unlink: READONLY was cleared for a retry */
	uint64_t lease_id;     /* mkdir: the new directory's lease */
	bool lookup;           /* a LOOKUP, sent at neg_epoch and sent_ns (negcache.h) */
	uint64_t neg_epoch, sent_ns;
	char *from, *to; /* rename past an open target: the paths (malloc'd) */
	char buf[];
};

static void name_ctx_free(struct name_ctx *ctx)
{
	if (ctx) {
		free(ctx->from);
		free(ctx->to);
		free(ctx);
	}
}

static struct name_ctx *name_ctx_new(fuse_req_t req, uint64_t parent, const char *name,
                                     uint64_t newparent, const char *newname)
{
	size_t n1 = strlen(name) + 1, n2 = newname ? strlen(newname) + 1 : 0;
	struct name_ctx *ctx = malloc(sizeof(*ctx) + n1 + n2);

	if (!ctx)
		return NULL;
	ctx->req = req;
	ctx->fs = smbfs_of(req);
	ctx->parent = parent;
	ctx->newparent = newparent;
	ctx->cleared_readonly = false;
	ctx->lookup = false;
	ctx->from = ctx->to = NULL;
	memcpy(ctx->buf, name, n1);
	ctx->name = ctx->buf;
	ctx->newname = NULL;
	if (newname) {
		memcpy(ctx->buf + n1, newname, n2);
		ctx->newname = ctx->buf + n1;
	}
	return ctx;
}

/* Path of (parent, name) after checking name; replies with the error and
 * returns NULL on failure. */
static char *child_path_or_reply(fuse_req_t req, uint64_t parent, const char *name)
{
	struct smbfs *fs = smbfs_of(req);
	char *path = NULL;
	int rc = smbfs_check_name(fs, name);

	if (rc == 0)
		rc = smb_inode_path(fs->inodes, parent, name, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return NULL;
	}
	return path;
}

/* ---- lookup and mkdir: reply with a new entry ---------------------------------- */

void smbfs_reply_entry(struct smbfs *fs, fuse_req_t req, uint64_t nodeid, uint64_t st_ino,
                       const struct smb_attr *attr)
{
	struct fuse_entry_param e;

	smbfs_fill_entry(fs, nodeid, st_ino, attr, &e);
	/* The kernel never saw the entry if the request was interrupted: take
	 * back the lookup count it will not forget. */
	if (fuse_reply_entry(req, &e) == -ENOENT)
		smbfs_forget_count(fs, nodeid, 1);
}

static void entry_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct name_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	uint64_t nodeid, st_ino;
	int rc = smb_errno(err, status);

	if (rc == 0)
		rc = -smb_inode_link(fs->inodes, ctx->parent, ctx->name, attr, smbfs_now_ns(),
		                     &nodeid, &st_ino);
	else if (rc == ENOENT && ctx->lookup && fs->negc)
		negc_add(fs->negc, ctx->parent, ctx->name, ctx->neg_epoch, ctx->sent_ns);
	free(ctx);
	if (rc)
		fuse_reply_err(req, rc);
	else
		smbfs_reply_entry(fs, req, nodeid, st_ino, attr);
}

/* How long a LOOKUP's "no such name" answers the next LOOKUP of it: the
 * attribute timeout, at most 1 s (cifs.ko's for a negative dentry). */
static uint64_t negc_ttl_ns(const struct smbfs *fs)
{
	return fs->timeout >= 1 ? 1000000000ull : (uint64_t)(fs->timeout * 1e9);
}

void smbfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct smbfs *fs = smbfs_of(req);
	char *path;
	struct name_ctx *ctx;
	int rc;

	smbfs_post_init(fs);
	if (fs->closes_out && strlen(name) <= SMBFS_NAME_MAX) {
		struct smbfs_held a = {.op = SMBFS_HELD_LOOKUP, .req = req, .ino = parent};
		strcpy(a.name, name);
		uint64_t known = smb_inode_find(fs->inodes, parent, name);
		if (known && smbfs_hold_for_close(fs, known, &a, NULL))
			return;
	}
	/* Under the parent's directory lease (held since `since`) a name
	 * still names the file it named, and what was stored of that file
	 * since is good, as cifs.ko trusts a dentry under a cached directory
	 * (cifs_dentry_needs_reval()): a create, unlink or rename in the
	 * directory, and a change to a file in it, by another client break
	 * the lease first. */
	uint64_t since, nodeid, st_ino;
	struct smb_attr attr;
	if (fs->timeout > 0 && smbfs_dir_leased(fs, parent, &since) &&
	    smb_inode_lookup_kept(fs->inodes, parent, name, since, &attr, &nodeid, &st_ino) == 0) {
		smbfs_reply_entry(fs, req, nodeid, st_ino, &attr);
		return;
	}
	/* And a name its whole listing lacks is not there (tar x, cp -r and
	 * git checkout look up every name before they create it). */
	if (fs->timeout > 0 && smbfs_dir_lacks(fs, parent, name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* And a name found missing a moment ago, nothing changed since (the
	 * second LOOKUP of an exclusive create, negcache.h). */
	if (fs->timeout > 0 && fs->negc &&
	    negc_lacks(fs->negc, parent, name, smbfs_now_ns(), negc_ttl_ns(fs))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	path = child_path_or_reply(req, parent, name);
	if (!path)
		return;
	ctx = name_ctx_new(req, parent, name, 0, NULL);
	if (ctx && fs->negc) {
		ctx->lookup = true;
		ctx->neg_epoch = negc_epoch(fs->negc);
		ctx->sent_ns = smbfs_now_ns();
	}
	rc = ctx ? smbfs_stat(fs, path, entry_done, ctx) : -ENOMEM;
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

static void mkdir_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct name_ctx *ctx = arg;

	smbfs_dir_known_add(ctx->fs, ctx->parent, ctx->name);
	smb_inode_dir_changed(ctx->fs->inodes, ctx->parent, smbfs_wall_ns());
	entry_done(arg, err, status, attr);
}

/* mkdir that kept the new directory open (smbfs_dir_keep_made()). */
static void mkdir_open_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                            const struct smb_attr *attr)
{
	struct name_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	uint64_t nodeid, st_ino;
	int rc = smb_errno(err, status);

	smbfs_dir_known_add(fs, ctx->parent, ctx->name);
	smb_inode_dir_changed(fs->inodes, ctx->parent, smbfs_wall_ns());
	if (!rc)
		rc = -smb_inode_link(fs->inodes, ctx->parent, ctx->name, attr, smbfs_now_ns(),
		                     &nodeid, &st_ino);
	else
		fid = (struct smb2_fileid){0};
	if (!rc) /* every open of it names this lease */
		smb_inode_set_lease_key(fs->inodes, nodeid, ctx->lease_id);
	bool kept = !rc && smbfs_dir_keep_made(fs, nodeid, fid, ctx->lease_id, attr);
	if (!kept && !smb_errno(err, status))
		smbfs_close_fid(fs, fid);
	name_ctx_free(ctx);
	if (rc)
		fuse_reply_err(req, rc);
	else
		smbfs_reply_entry(fs, req, nodeid, st_ino, attr);
}

void smbfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct smbfs *fs = smbfs_of(req);
	struct name_ctx *ctx;
	char *path;
	int rc;

	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	path = child_path_or_reply(req, parent, name);
	if (!path)
		return;
	ctx = name_ctx_new(req, parent, name, 0, NULL);
	if (ctx && fs->max_cached_dirs && fs->timeout > 0) {
		/* Made open, under a lease of its own, and kept: it is empty,
		 * and stays known whole while the lease holds (tar x, cp -r:
		 * what is made in it next needs no LOOKUP). */
		struct smb_open_args oa = {
		    .desired_access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
		    .share_access = FILE_SHARE_ALL,
		    .create_disposition = FILE_CREATE,
		    .create_options = FILE_DIRECTORY_FILE,
		    .file_attributes = FILE_ATTRIBUTE_DIRECTORY,
		    .set_mode = fs->posix,
		    .mode = mode,
		    .lease_id = ctx->lease_id = smbfs_lease_id(fs, 0),
		    /* our own lease on parent stays */
		    .parent_lease_id = smbfs_parent_lease_id(fs, parent),
		};
		rc = smb_open(fs->client, path, &oa, mkdir_open_done, ctx);
	} else {
		/* our own lease on parent stays (ParentLeaseKey) */
		rc = ctx ? smb_create_in(fs->client, path, true, fs->posix, mode,
		                         smbfs_lease_id(fs, 0), smbfs_parent_lease_id(fs, parent),
		                         mkdir_done, ctx)
		         : -ENOMEM;
	}
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- forget ------------------------------------------------------------------ */

void smbfs_forget_count(struct smbfs *fs, uint64_t nodeid, uint64_t n)
{
	if (!smb_inode_forget(fs->inodes, nodeid, n))
		smb_err("BUG: forgetting %llu lookups of inode %llu, which has fewer: the "
		        "daemon's lookup count disagrees with the kernel's (clamped to 0)",
		        (unsigned long long)n, (unsigned long long)nodeid);
	/* The kernel forgot the inode, and its cached listing with it: a
	 * handle kept for it goes (a new lookup may give the directory
	 * another nodeid, which would not find it, and its rmdir would then
	 * leave the directory delete-pending behind the kept handle). */
	if (!smb_inode_nlookup(fs->inodes, nodeid))
		smbfs_dirs_unpark(fs, nodeid, NULL, NULL);
}

void smbfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	smbfs_forget_count(smbfs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

void smbfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct smbfs *fs = smbfs_of(req);

	for (size_t i = 0; i < count; i++)
		smbfs_forget_count(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- getattr ----------------------------------------------------------------- */

struct attr_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t ino;
	bool borrowed; /* asked by a handle smbfs_open_fid() lent */
};

/* The stat of ino.  A link count of 0 from the server reads "unknown" in
 * smb_attr_to_stat(); for an inode whose names are all gone it is the
 * truth (the server's count for a file it will delete at its last close,
 * as POSIX wants for an open file that was unlinked or renamed over).  A
 * count of 1 for a file whose only name this mount deleted is the
 * delete-pending name (ksmbd's POSIX information counts it): 0 too. */
static void inode_stat(struct smbfs *fs, uint64_t ino, const struct smb_attr *attr, uint64_t st_ino,
                       struct stat *st)
{
	struct smb_attr a = *attr;

	a.nlink = smb_inode_nlink(fs->inodes, ino, attr->nlink);
	smb_attr_to_stat(&a, &fs->policy, st_ino, st);
	smbfs_wb_clamp_size(fs, ino, st);
	if (a.symlink || a.nlink > 1)
		return;
	if ((a.nlink == 0 && smb_inode_unlinked(fs->inodes, ino)) ||
	    (a.nlink == 1 && smb_inode_last_name_deleted(fs->inodes, ino)))
		st->st_nlink = 0;
}

static void reply_attr(struct smbfs *fs, fuse_req_t req, uint64_t ino, const struct smb_attr *attr)
{
	struct stat st;

	smb_inode_set_attr(fs->inodes, ino, attr, smbfs_now_ns());
	inode_stat(fs, ino, attr, smb_inode_st_ino(fs->inodes, ino), &st);
	smbfs_times_told(fs, ino, attr);
	fuse_reply_attr(req, &st, smbfs_attr_timeout(fs, ino));
}

static int getattr_by_path(struct attr_ctx *ctx);

static void getattr_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct attr_ctx ctx = *(struct attr_ctx *)arg;
	int e = smb_errno(err, status);

	/* A lent handle can be closed before the server reads our request
	 * (a kept directory's, at a lease break; a file's, released by
	 * another process): the name is still there to ask by. */
	if (e == EBADF && ctx.borrowed) {
		struct attr_ctx *again = arg;
		again->borrowed = false;
		e = -getattr_by_path(again);
		if (!e)
			return;
	}
	free(arg);
	if (e)
		fuse_reply_err(ctx.req, e);
	else
		reply_attr(ctx.fs, ctx.req, ctx.ino, attr);
}

static int getattr_by_path(struct attr_ctx *ctx)
{
	struct smbfs *fs = ctx->fs;
	char *path = NULL;
	if (ctx->ino == FUSE_ROOT_ID)
		return smbfs_stat_root(fs, getattr_done, ctx);
	int rc = smb_inode_path(fs->inodes, ctx->ino, NULL, &path);
	if (rc == 0)
		rc = smbfs_stat(fs, path, getattr_done, ctx);
	free(path);
	return rc;
}

/* Ask the server for ino's attributes (by handle when there is one) and
 * reply with them. */
static void getattr_from_server(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct attr_ctx *ctx = malloc(sizeof(*ctx));
	int rc;

	if (!ctx) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*ctx = (struct attr_ctx){.req = req, .fs = fs, .ino = ino};
	struct smb2_fileid fid;
	if (fi && fi->fh) {
		const struct smbfs_file *f = smbfs_file_of(fi);
		rc = smb_fstat(fs->client, f->fid, getattr_done, ctx);
	} else if (smbfs_open_fid(fs, ino, &fid)) {
		/* by a handle we hold: right even after its name went away */
		ctx->borrowed = true;
		rc = smb_fstat(fs->client, fid, getattr_done, ctx);
	} else {
		rc = getattr_by_path(ctx);
	}
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

void smbfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smb_attr attr;
	uint64_t st_ino;
	bool fresh;
	struct stat st;

	smbfs_post_init(fs);
	struct smbfs_held a = {.op = SMBFS_HELD_GETATTR, .req = req, .ino = ino};
	if (smbfs_hold_for_close(fs, ino, &a, fi))
		return;
	double timeout = smbfs_attr_timeout(fs, ino);
	uint64_t since;
	/* A directory we hold under a lease with R keeps the attributes
	 * stored since: a change by another client breaks the lease first
	 * (cache.c), and so do ours, but for creates and unlinks, which
	 * update the table themselves (smb_inode_dir_changed()). */
	if (timeout > 0 &&
	    smb_inode_get_attr(fs->inodes, ino, smbfs_now_ns(), &attr, &fresh, &st_ino) == 0 &&
	    (fresh || (smbfs_dir_leased(fs, ino, &since) &&
	               smb_inode_attr_valid_since(fs->inodes, ino, since)))) {
		inode_stat(fs, ino, &attr, st_ino, &st);
		smbfs_times_told(fs, ino, &attr);
		fuse_reply_attr(req, &st, timeout);
		return;
	}
	getattr_from_server(req, ino, fi);
}

/* ---- setattr ----------------------------------------------------------------- */

/* File attributes a client may set with FileBasicInformation ([MS-FSA]
 * 2.1.5.14.2); others (DIRECTORY, SPARSE_FILE, ...) must not be sent back. */
#define SETTABLE_ATTRIBUTES                                                        \
	(FILE_ATTRIBUTE_READONLY | FILE_ATTRIBUTE_HIDDEN | FILE_ATTRIBUTE_SYSTEM | \
	 FILE_ATTRIBUTE_ARCHIVE | FILE_ATTRIBUTE_TEMPORARY)

struct setattr_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t ino;
	bool has_fid;
	bool borrowed; /* fid is one smbfs_writable_fid() lent */
	struct smb2_fileid fid;
	bool set_mode;
	mode_t mode;
	struct smb_setattr_args args;
	int chown_form;      /* 0, or which form of a POSIX chown went out (chown_send) */
	uint32_t chown_mode; /* the file's mode, for the second form */
	char path[];
};

/* A server may take a chown and change nothing (ksmbd keeps the owner
 * unless it is given as its own domain SID): that is EPERM, not success. */
static int posix_owner_check(struct smbfs *fs, const struct smb_setattr_args *args,
                             const struct smb_attr *now, bool log)
{
	bool uid_kept = (args->which & SMB_SET_UID) && now->posix && now->uid != args->uid;
	bool gid_kept = (args->which & SMB_SET_GID) && now->posix && now->gid != args->gid;
	if (!uid_kept && !gid_kept)
		return 0;
	if (log)
		smb_log(LOG_NOTICE, "%s: chown: the server accepted but kept %s %u (EPERM)",
		        fs->source, uid_kept ? "owner" : "group",
		        (unsigned)(uid_kept ? now->uid : now->gid));
	return EPERM;
}

static void setattr_send(struct setattr_ctx *ctx, const struct smb_attr *cur);

/* By path, from now on: our own leases on it and its directory stay. */
static void setattr_by_name(struct setattr_ctx *ctx)
{
	struct smbfs *fs = ctx->fs;
	ctx->borrowed = ctx->has_fid = false;
	ctx->args.lease_id = smbfs_lease_id(fs, ctx->ino);
	ctx->args.parent_lease_id =
	    smbfs_parent_lease_id(fs, smb_inode_parent(fs->inodes, ctx->ino));
}

/* The handle ctx borrowed was closed before the server read our request
 * (released by another process meanwhile): by path, then. */
static bool setattr_retry_by_name(struct setattr_ctx *ctx, int e)
{
	struct smbfs *fs = ctx->fs;
	struct smb_attr cur;
	bool fresh;
	if (e != EBADF || !ctx->borrowed ||
	    smb_inode_get_attr(fs->inodes, ctx->ino, 0, &cur, &fresh, NULL) != 0)
		return false;
	setattr_by_name(ctx);
	setattr_send(ctx, &cur);
	return true;
}

static void setattr_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct setattr_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	uint64_t ino = ctx->ino;
	int e = smb_errno(err, status);
	struct smb_setattr_args args = ctx->args;

	if (setattr_retry_by_name(ctx, e))
		return;
	free(ctx);
	if (!e)
		e = posix_owner_check(fs, &args, attr, true);
	if (e) {
		fuse_reply_err(req, e);
		return;
	}
	/* The server describes an mfsymlink as the 1067-byte file it is; to
	 * the kernel the inode stays a link (a changed type is a bad inode). */
	struct smb_attr prev, now = *attr;
	bool fresh;
	if (smb_inode_get_attr(fs->inodes, ino, smbfs_now_ns(), &prev, &fresh, NULL) == 0 &&
	    prev.symlink && smbfs_may_be_symlink(fs, attr)) {
		now.symlink = true;
		now.end_of_file = prev.end_of_file;
	}
	reply_attr(fs, req, ino, &now);
}

static void setattr_have_attr(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct setattr_ctx *ctx = arg;
	int e = smb_errno(err, status);

	if (e == EBADF && ctx->borrowed) {
		/* by path, as for the change (the attributes come first) */
		setattr_by_name(ctx);
		e = -smb_stat(ctx->fs->client, ctx->path, setattr_have_attr, ctx);
		if (!e)
			return;
	}
	if (e) {
		fuse_req_t req = ctx->req;
		free(ctx);
		fuse_reply_err(req, e);
		return;
	}
	smb_inode_set_attr(ctx->fs->inodes, ctx->ino, attr, smbfs_now_ns());
	setattr_send(ctx, attr);
}

/* Second step: with the current attributes known, turn a mode change into a
 * READONLY change and send what is left. */
/* A chown under the SMB3 POSIX extensions goes first and alone, in one of
 * two forms, because servers read it differently: Samba (4.22) takes a
 * descriptor with just the owner and group, and reads one whose DACL is a
 * single S-1-5-88-3-<mode> ACE as a chmod only, ignoring its owner
 * (smb2_nttrans.c check_smb2_posix_chmod_ace); ksmbd reads the owner only
 * from a descriptor with a DACL, and keeps it from the first form.  So the
 * first form, then, if the server refused it or kept the old ids, the
 * second with the mode the file has. */
static void chown_send(struct setattr_ctx *ctx);

static void chown_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct setattr_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	int e = smb_errno(err, status);
	if (!e)
		e = posix_owner_check(fs, &ctx->args, attr, ctx->chown_form == 2);
	if (e && ctx->chown_form == 1) {
		chown_send(ctx);
		return;
	}
	if (e) {
		fuse_req_t req = ctx->req;
		free(ctx);
		/* a refused owner or group is EPERM to chown(2) */
		fuse_reply_err(req, e == EACCES ? EPERM : e);
		return;
	}
	smb_inode_set_attr(fs->inodes, ctx->ino, attr, smbfs_now_ns());
	ctx->args.which &= ~(unsigned)(SMB_SET_UID | SMB_SET_GID);
	setattr_send(ctx, attr); /* what else there is to set */
}

static void chown_send(struct setattr_ctx *ctx)
{
	struct smb_setattr_args a = {
	    .which = ctx->args.which & (SMB_SET_UID | SMB_SET_GID),
	    .uid = ctx->args.uid,
	    .gid = ctx->args.gid,
	};
	if (++ctx->chown_form == 2) {
		a.which |= SMB_SET_MODE;
		a.mode = ctx->chown_mode;
	}
	a.lease_id = ctx->args.lease_id;
	a.parent_lease_id = ctx->args.parent_lease_id;
	int rc = smb_setattr(ctx->fs->client, ctx->path, NULL, &a, chown_done, ctx);
	if (rc < 0) {
		fuse_req_t req = ctx->req;
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

static void setattr_send(struct setattr_ctx *ctx, const struct smb_attr *cur)
{
	struct smbfs *fs = ctx->fs;
	int rc;

	if (fs->posix && (ctx->args.which & (SMB_SET_UID | SMB_SET_GID)) && cur->posix) {
		ctx->chown_form = 0;
		ctx->chown_mode = cur->mode & 07777;
		chown_send(ctx);
		return;
	}
	if (ctx->set_mode && fs->posix) {
		ctx->args.which |= SMB_SET_MODE;
		ctx->args.mode = ctx->mode & 07777;
	} else if (ctx->set_mode && !(cur->file_attributes & FILE_ATTRIBUTE_DIRECTORY)) {
		uint32_t old = cur->file_attributes & SETTABLE_ATTRIBUTES;
		uint32_t want = old & ~FILE_ATTRIBUTE_READONLY;
		if (!(ctx->mode & (S_IWUSR | S_IWGRP | S_IWOTH)))
			want |= FILE_ATTRIBUTE_READONLY;
		if (want != old) {
			ctx->args.which |= SMB_SET_ATTRIBUTES;
			/* 0 would mean "leave unchanged" */
			ctx->args.file_attributes = want ? want : FILE_ATTRIBUTE_NORMAL;
		}
	}
	if (ctx->args.which == 0) {
		/* Nothing the server stores changes (chmod of a directory, or
		 * to the same READONLY state): answer with what we know. */
		fuse_req_t req = ctx->req;
		uint64_t ino = ctx->ino;
		free(ctx);
		reply_attr(fs, req, ino, cur);
		return;
	}
	rc = smb_setattr(fs->client, ctx->path, ctx->has_fid ? &ctx->fid : NULL, &ctx->args,
	                 setattr_done, ctx);
	if (rc < 0) {
		fuse_req_t req = ctx->req;
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

static uint64_t set_time(int to_set, int now_flag, const struct timespec *ts)
{
	struct timespec now;

	if (to_set & now_flag) {
		clock_gettime(CLOCK_REALTIME, &now);
		return smb_timespec_to_nttime(&now);
	}
	return smb_timespec_to_nttime(ts);
}

/* futimens() right after a write (tar, cp -p, rsync): the times ride with
 * the gathered write (smbfs_gather_times()) and the setattr is answered
 * from what we know.  That write holds a W lease, so no other client sees
 * the file before the break, which waits for it. */
static bool defer_times(struct smbfs *fs, fuse_req_t req, fuse_ino_t ino, const struct stat *attr,
                        int to_set)
{
	const int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
	                  FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
	struct smb_attr cur;
	bool fresh;

	if (!(to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) || (to_set & ~times) ||
	    smb_inode_get_attr(fs->inodes, ino, 0, &cur, &fresh, NULL) < 0 || cur.symlink ||
	    (cur.file_attributes & FILE_ATTRIBUTE_DIRECTORY))
		return false;
	struct smb_setattr_args t = {0};
	if (to_set & FUSE_SET_ATTR_ATIME) {
		t.which |= SMB_SET_ATIME;
		t.atime = set_time(to_set, FUSE_SET_ATTR_ATIME_NOW, &attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME) {
		t.which |= SMB_SET_MTIME;
		t.mtime = set_time(to_set, FUSE_SET_ATTR_MTIME_NOW, &attr->st_mtim);
	}
	if (!smbfs_gather_times(fs, ino, &t))
		return false;
	if (t.which & SMB_SET_ATIME)
		cur.last_access_time = t.atime;
	if (t.which & SMB_SET_MTIME)
		cur.last_write_time = t.mtime;
	reply_attr(fs, req, ino, &cur);
	return true;
}

void smbfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct setattr_ctx *ctx;
	struct smb_attr cur;
	bool fresh;
	char *path = NULL;
	int rc;
	/* A truncate or new times: what a stat showed is not the mtime to keep. */
	if (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME))
		smbfs_times_moved(fs, ino, to_set & FUSE_SET_ATTR_MTIME);
	/* New times after a write still gathered go out with it. */
	if (!fs->ro && defer_times(fs, req, ino, attr, to_set))
		return;
	/* After the CLOSE put off, which would move the mtime again. */
	struct smbfs_held c = {
	    .op = SMBFS_HELD_SETATTR, .req = req, .ino = ino, .n = to_set, .st = *attr};
	if (smbfs_hold_for_close(fs, ino, &c, fi))
		return;
	/* A truncate or new times must land after the writes in flight. */
	struct smbfs_held a = {
	    .op = SMBFS_HELD_SETATTR, .req = req, .ino = ino, .n = to_set, .st = *attr};
	if (smbfs_hold_for_writes(fs, ino, &a, fi))
		return;

	/* Without the SMB3 POSIX extensions every file belongs to uid=/gid= */
	if (!fs->posix && (to_set & FUSE_SET_ATTR_UID) && attr->st_uid != fs->policy.uid) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (!fs->posix && (to_set & FUSE_SET_ATTR_GID) && attr->st_gid != fs->policy.gid) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (fs->ro && (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	                         FUSE_SET_ATTR_MODE))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	rc = smb_inode_path(fs->inodes, ino, NULL, &path);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	ctx = calloc(1, sizeof(*ctx) + strlen(path) + 1);
	if (!ctx) {
		free(path);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	strcpy(ctx->path, path);
	free(path);
	ctx->req = req;
	ctx->fs = fs;
	ctx->ino = ino;
	/* chmod/chown under the POSIX extensions go by path (smb_setattr()) */
	bool by_path =
	    fs->posix && (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID));
	if (fi && fi->fh && !by_path) {
		ctx->has_fid = true;
		ctx->fid = smbfs_file_of(fi)->fid;
	} else if (!by_path) {
		/* utimensat() and truncate() by name come without a handle:
		 * one of ours that may write does, as cifs.ko's
		 * cifs_get_writable_file(), saving the open and close (and a
		 * break of our own directory lease, which Samba gives for a
		 * change by path). */
		ctx->has_fid = ctx->borrowed = smbfs_writable_fid(fs, ino, &ctx->fid);
	}
	if (!ctx->has_fid)
		setattr_by_name(ctx);
	if (fs->posix && (to_set & FUSE_SET_ATTR_UID)) {
		ctx->args.which |= SMB_SET_UID;
		ctx->args.uid = (uint32_t)attr->st_uid;
	}
	if (fs->posix && (to_set & FUSE_SET_ATTR_GID)) {
		ctx->args.which |= SMB_SET_GID;
		ctx->args.gid = (uint32_t)attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		ctx->args.which |= SMB_SET_SIZE;
		ctx->args.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME) {
		ctx->args.which |= SMB_SET_ATIME;
		ctx->args.atime = set_time(to_set, FUSE_SET_ATTR_ATIME_NOW, &attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME) {
		ctx->args.which |= SMB_SET_MTIME;
		ctx->args.mtime = set_time(to_set, FUSE_SET_ATTR_MTIME_NOW, &attr->st_mtim);
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		ctx->set_mode = true;
		ctx->mode = attr->st_mode;
	}
	smb_inode_invalidate_attr(fs->inodes, ino);
	/* Stale attributes are good enough to learn the type and the other
	 * DOS attribute bits to keep; ask the server only if we have none. */
	if (smb_inode_get_attr(fs->inodes, ino, 0, &cur, &fresh, NULL) == 0) {
		setattr_send(ctx, &cur);
		return;
	}
	if (ctx->has_fid)
		rc = smb_fstat(fs->client, ctx->fid, setattr_have_attr, ctx);
	else
		rc = smb_stat(fs->client, ctx->path, setattr_have_attr, ctx);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- unlink, rmdir ------------------------------------------------------------- */

static void unlink_cleared(void *arg, int err, uint32_t status, const struct smb_attr *attr);

static void unlink_done(void *arg, int err, uint32_t status)
{
	struct name_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	int e = smb_errno(err, status);

	/* The server will not delete a file with FILE_ATTRIBUTE_READONLY, but
	 * POSIX lets anyone who may write the directory unlink it (git
	 * deletes its 0444 objects): clear the attribute and try once more. */
	if (err == 0 && status == STATUS_CANNOT_DELETE && !ctx->cleared_readonly) {
		struct smb_setattr_args args = {.which = SMB_SET_ATTRIBUTES,
		                                .file_attributes = FILE_ATTRIBUTE_NORMAL};
		char *path = NULL;
		int rc = smb_inode_path(fs->inodes, ctx->parent, ctx->name, &path);

		ctx->cleared_readonly = true;
		if (rc == 0)
			rc = smb_setattr(fs->client, path, NULL, &args, unlink_cleared, ctx);
		free(path);
		if (rc == 0)
			return;
	}
	if (e == 0)
		smb_inode_unlink(fs->inodes, ctx->parent, ctx->name);
	smb_inode_dir_changed(fs->inodes, ctx->parent, smbfs_wall_ns());
	free(ctx);
	fuse_reply_err(req, e);
}

static void unlink_cleared(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct name_ctx *ctx = arg;
	char *path = NULL;
	int rc = smb_errno(err, status) ? -EACCES : 0;

	if (rc == 0)
		rc = smb_inode_path(ctx->fs->inodes, ctx->parent, ctx->name, &path);
	if (rc == 0)
		rc = smb_unlink(ctx->fs->client, path, false, unlink_done, ctx);
	free(path);
	if (rc < 0) {
		fuse_req_t req = ctx->req;
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- POSIX names for open files ----------------------------------------------------
 *
 * The server keeps the name of a file deleted while open until its last
 * handle closes (and refuses to create that name again or to rename over
 * it).  POSIX wants the name gone at once, so a file this mount holds open
 * is first moved to a hidden name in its directory, and that name is
 * deleted: the server removes it when the last handle closes.  (NFS clients
 * do the same "silly rename".)  Other clients' opens are not known here.
 */

bool smbfs_writable_fid(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid *fid)
{
	bool found = false;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !found; f = f->next) {
		found = f->nodeid == nodeid && f->writable && !f->closing && !f->parked &&
		        !smb_file_failed(fs->client, f->fid);
		if (found)
			*fid = f->fid;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return found;
}

bool smbfs_open_fid(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid *fid)
{
	bool open = false;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !open; f = f->next) {
		/* a closing handle still holds the name, but its FileId is
		 * no longer usable; nor is one whose lock a reconnect lost
		 * (its own descriptor alone learns of it) */
		open = f->nodeid == nodeid &&
		       (!fid || (!f->closing && !smb_file_failed(fs->client, f->fid)));
		if (open && fid)
			*fid = f->fid;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return open;
}

struct hide_ctx {
	struct smbfs *fs;
	void (*done)(void *arg, int err, uint32_t status); /* then this */
	void *arg;
	uint64_t parent;
	uint64_t nodeid;
	bool is_dir;
	bool one_link;     /* its link count was 1 (as last known) */
	char *hidden;      /* its path */
	char *hidden_name; /* in parent */
	char name[];       /* the name it had in parent */
};

static void hide_free(struct hide_ctx *h)
{
	free(h->hidden);
	free(h->hidden_name);
	free(h);
}

static void hide_deleted(void *arg, int err, uint32_t status)
{
	struct hide_ctx *h = arg;
	void (*done)(void *, int, uint32_t) = h->done;
	void *darg = h->arg;
	/* moved but not marked for deletion: the hidden file stays, which
	 * loses nothing; the unlink itself succeeded */
	if (err || status != STATUS_SUCCESS)
		smb_warn("%s: %s could not be marked for deletion: %s", h->fs->source, h->hidden,
		         strerror(smb_errno(err, status)));
	else {
		smb_inode_unlink(h->fs->inodes, h->parent, h->hidden_name);
		if (!h->is_dir)
			smb_inode_name_hidden(h->fs->inodes, h->nodeid);
		if (h->one_link && !h->is_dir)
			smb_inode_mark_last_name_deleted(h->fs->inodes, h->nodeid);
	}
	hide_free(h);
	done(darg, 0, STATUS_SUCCESS);
}

static void hide_moved(void *arg, int err, uint32_t status)
{
	struct hide_ctx *h = arg;
	int rc = 0;

	if (!smb_errno(err, status)) {
		/* the inode's name is the hidden one now: paths built from it
		 * (a getattr without a handle) find the file, not whatever
		 * takes the old name next */
		if (smb_inode_rename(h->fs->inodes, h->parent, h->name, h->parent, h->hidden_name) <
		    0)
			smb_warn("%s: out of memory renaming %s", h->fs->source, h->name);
		rc = smb_unlink(h->fs->client, h->hidden, h->is_dir, hide_deleted, h);
	}
	if (smb_errno(err, status) || rc < 0) {
		void (*done)(void *, int, uint32_t) = h->done;
		void *darg = h->arg;
		hide_free(h);
		done(darg, rc < 0 ? rc : err, rc < 0 ? 0 : status);
	}
}

/* Move (parent, name) at path, held open here as nodeid, out of sight and
 * delete it; then done(arg, err, status) as the unlink's own completion. */
static int hide_open_file(struct smbfs *fs, uint64_t parent, const char *name, const char *path,
                          uint64_t nodeid, void (*done)(void *, int, uint32_t), void *arg)
{
	static uint64_t seq; /* loop thread only */
	char hidden_name[64];
	struct smb_attr attr;
	bool fresh;
	snprintf(hidden_name, sizeof(hidden_name), SMBFS_HIDDEN_PREFIX "%llx-%llx",
	         (unsigned long long)nodeid, (unsigned long long)++seq);
	struct hide_ctx *h = calloc(1, sizeof(*h) + strlen(name) + 1);
	if (!h)
		return -ENOMEM;
	*h = (struct hide_ctx){
	    .fs = fs, .done = done, .arg = arg, .parent = parent, .nodeid = nodeid};
	strcpy(h->name, name);
	/* stale attributes still tell the type (a directory is deleted as
	 * one) and whether this was the file's only name */
	if (smb_inode_get_attr(fs->inodes, nodeid, 0, &attr, &fresh, NULL) == 0) {
		h->is_dir = (attr.file_attributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
		h->one_link = attr.nlink == 1;
	}
	h->hidden_name = strdup(hidden_name);
	int rc =
	    h->hidden_name ? smb_inode_path(fs->inodes, parent, hidden_name, &h->hidden) : -ENOMEM;
	if (!rc)
		rc = smb_rename(fs->client, path, h->hidden, false, hide_moved, h);
	if (rc < 0)
		hide_free(h);
	return rc;
}

struct after_unpark;
static struct after_unpark *after_unpark_new(fuse_req_t req, fuse_ino_t parent, const char *name,
                                             fuse_ino_t newparent, const char *newname,
                                             unsigned flags);
static void unlink_again(void *arg);

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, bool is_dir)
{
	struct smbfs *fs = smbfs_of(req);
	struct name_ctx *ctx;
	char *path;
	int rc;

	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	path = child_path_or_reply(req, parent, name);
	if (!path)
		return;
	ctx = name_ctx_new(req, parent, name, 0, NULL);
	uint64_t nodeid = smb_inode_find(fs->inodes, parent, name);
	if (!ctx)
		rc = -ENOMEM;
	else if (nodeid && smbfs_open_fid(fs, nodeid, NULL))
		rc = hide_open_file(fs, parent, name, path, nodeid, unlink_done, ctx);
	else /* our own lease on the directory stays (it changes nothing we keep) */
		rc = smb_unlink_in(fs->client, path, is_dir, smbfs_lease_id(fs, nodeid),
		                   smbfs_parent_lease_id(fs, parent), unlink_done, ctx);
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

void smbfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct smbfs *fs = smbfs_of(req);
	/* A file whose CLOSE was put off would be found open (and the name
	 * hidden instead of removed): the CLOSE goes first. */
	uint64_t nodeid = smb_inode_find(fs->inodes, parent, name);
	struct after_unpark *u =
	    nodeid && fs->closes_out ? after_unpark_new(req, parent, name, 0, NULL, 0) : NULL;
	if (u && smbfs_closes_wait(fs, nodeid, unlink_again, u))
		return;
	free(u);
	remove_entry(req, parent, name, false);
}

/* An op run again once the directory handles kept open under it are
 * closed (smbfs_dirs_unpark): its arguments, copied. */
struct after_unpark {
	fuse_req_t req;
	fuse_ino_t parent, newparent;
	unsigned flags;
	char *name, *newname; /* point into buf */
	char buf[];
};

static struct after_unpark *after_unpark_new(fuse_req_t req, fuse_ino_t parent, const char *name,
                                             fuse_ino_t newparent, const char *newname,
                                             unsigned flags)
{
	size_t a = strlen(name) + 1, b = newname ? strlen(newname) + 1 : 0;
	struct after_unpark *u = malloc(sizeof(*u) + a + b);
	if (!u)
		return NULL;
	*u = (struct after_unpark){
	    .req = req, .parent = parent, .newparent = newparent, .flags = flags};
	u->name = memcpy(u->buf, name, a);
	u->newname = newname ? memcpy(u->buf + a, newname, b) : NULL;
	return u;
}

static void unlink_again(void *arg)
{
	struct after_unpark *u = arg;
	smbfs_unlink(u->req, u->parent, u->name);
	free(u);
}

static void rmdir_again(void *arg)
{
	struct after_unpark *u = arg;
	smbfs_rmdir(u->req, u->parent, u->name);
	free(u);
}

void smbfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct smbfs *fs = smbfs_of(req);
	/* The server removes a directory only once its last handle closes:
	 * one we kept under its lease goes first. */
	uint64_t nodeid = smb_inode_find(fs->inodes, parent, name);
	struct after_unpark *u = nodeid ? after_unpark_new(req, parent, name, 0, NULL, 0) : NULL;
	if (u && smbfs_dirs_unpark(fs, nodeid, rmdir_again, u))
		return;
	free(u);
	remove_entry(req, parent, name, true);
}

/* ---- rename -------------------------------------------------------------------- */

static void rename_done(void *arg, int err, uint32_t status)
{
	struct name_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	int e = smb_errno(err, status);

	if (e == 0) {
		if (smb_inode_rename(fs->inodes, ctx->parent, ctx->name, ctx->newparent,
		                     ctx->newname) < 0)
			smb_warn("%s: out of memory renaming %s; the old name is dropped",
			         fs->source, ctx->name);
		/* ctime of the moved inode changed on the server */
		smb_inode_invalidate_attr(fs->inodes,
		                          smb_inode_find(fs->inodes, ctx->newparent, ctx->newname));
	}
	smb_inode_dir_changed(fs->inodes, ctx->parent, smbfs_wall_ns());
	smb_inode_dir_changed(fs->inodes, ctx->newparent, smbfs_wall_ns());
	smbfs_dir_known_add(fs, ctx->newparent, ctx->newname);
	name_ctx_free(ctx);
	fuse_reply_err(req, e);
}

/* The open target is out of the way: now the rename itself. */
static void rename_after_hide(void *arg, int err, uint32_t status)
{
	struct name_ctx *ctx = arg;
	int rc = smb_errno(err, status);
	if (!rc)
		rc = -smb_rename(ctx->fs->client, ctx->from, ctx->to, true, rename_done, ctx);
	if (rc) {
		fuse_req_t req = ctx->req;
		name_ctx_free(ctx);
		fuse_reply_err(req, rc);
	}
}

static void rename_again(void *arg)
{
	struct after_unpark *u = arg;
	smbfs_rename(u->req, u->parent, u->name, u->newparent, u->newname, u->flags);
	free(u);
}

/* May (parent, name) be a directory (or is its type unknown)? */
static bool maybe_dir(struct smbfs *fs, uint64_t parent, const char *name)
{
	uint64_t nodeid = smb_inode_find(fs->inodes, parent, name);
	struct smb_attr a;
	bool fresh;
	return nodeid && (smb_inode_get_attr(fs->inodes, nodeid, 0, &a, &fresh, NULL) < 0 ||
	                  (a.file_attributes & FILE_ATTRIBUTE_DIRECTORY));
}

void smbfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                  const char *newname, unsigned int flags)
{
	struct smbfs *fs = smbfs_of(req);
	struct name_ctx *ctx;
	char *from = NULL, *to = NULL;
	int rc;

	/* The server refuses to move a directory with open handles under it,
	 * and to replace one that is open: the handles kept under leases go
	 * first (all of them: which are under it is not worth working out). */
	bool dirs = maybe_dir(fs, parent, name) || maybe_dir(fs, newparent, newname);
	if (dirs) {
		struct after_unpark *u =
		    after_unpark_new(req, parent, name, newparent, newname, flags);
		if (u && smbfs_dirs_unpark(fs, 0, rename_again, u))
			return;
		free(u);
	}
	/* So do CLOSEs put off (smbfs_close_later()): any, under a
	 * directory; the target's, which would be found open; the
	 * source's, whose lease Samba would break (and wait for) first
	 * (git renames index.lock right after closing it). */
	if (fs->closes_out) {
		uint64_t ids[2] = {smb_inode_find(fs->inodes, parent, name),
		                   smb_inode_find(fs->inodes, newparent, newname)};
		for (int i = 0; i < (dirs ? 1 : 2); i++) {
			uint64_t id = dirs ? 0 : ids[i];
			if (!dirs && !id)
				continue;
			struct after_unpark *u =
			    after_unpark_new(req, parent, name, newparent, newname, flags);
			if (u && smbfs_closes_wait(fs, id, rename_again, u))
				return;
			free(u);
		}
	}

	/* SMB has no atomic exchange and no whiteouts. */
	if (flags & ~(unsigned)RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (fs->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	rc = smbfs_check_name(fs, name);
	if (rc == 0)
		rc = smbfs_check_name(fs, newname);
	if (rc == 0)
		rc = smb_inode_path(fs->inodes, parent, name, &from);
	if (rc == 0)
		rc = smb_inode_path(fs->inodes, newparent, newname, &to);
	if (rc == 0) {
		ctx = name_ctx_new(req, parent, name, newparent, newname);
		uint64_t target = smb_inode_find(fs->inodes, newparent, newname);
		if (!ctx) {
			rc = -ENOMEM;
		} else if (!(flags & RENAME_NOREPLACE) && target &&
		           smbfs_open_fid(fs, target, NULL) &&
		           smb_inode_find(fs->inodes, parent, name) != target) {
			/* the server refuses to replace an open file: move
			 * it out of sight first, then rename */
			ctx->from = from;
			ctx->to = to;
			from = to = NULL;
			rc = hide_open_file(fs, newparent, newname, ctx->to, target,
			                    rename_after_hide, ctx);
		} else {
			rc = smb_rename(fs->client, from, to, !(flags & RENAME_NOREPLACE),
			                rename_done, ctx);
		}
		if (rc < 0)
			name_ctx_free(ctx);
	}
	free(from);
	free(to);
	if (rc < 0)
		fuse_reply_err(req, -rc);
}

/* ---- access -------------------------------------------------------------------- */

/* The kernel asks only on a noperm mount (without default_permissions it
 * checks no mode bits itself): access(2), faccessat(2) and chdir(2).  The
 * server decides, as for every other op of such a mount: the path is opened
 * with the access the mask names and closed again.  Of a directory's
 * rights, FILE_LIST_DIRECTORY, FILE_ADD_FILE and FILE_TRAVERSE have the
 * values of FILE_READ_DATA, FILE_WRITE_DATA and FILE_EXECUTE, so one
 * mapping serves both. */
struct access_ctx {
	fuse_req_t req;
	struct smbfs *fs;
};

static void access_closed(void *arg, int err, uint32_t status)
{
	(void)err;
	(void)status; /* the answer came with the open; a failed close changes nothing */
	struct access_ctx *ctx = arg;
	fuse_req_t req = ctx->req;

	free(ctx);
	fuse_reply_err(req, 0);
}

static void access_opened(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                          const struct smb_attr *attr)
{
	(void)attr;
	struct access_ctx *ctx = arg;
	fuse_req_t req = ctx->req;
	int e = smb_errno(err, status);

	if (e == 0 && smb_close(ctx->fs->client, fid, access_closed, ctx) == 0)
		return;
	free(ctx);
	fuse_reply_err(req, e);
}

void smbfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct smbfs *fs = smbfs_of(req);
	struct smb_open_args args = {0};
	struct access_ctx *ctx;
	char *path = NULL;
	int rc;

	/* F_OK: the kernel looked the name up already. */
	if ((mask & (R_OK | W_OK | X_OK)) == 0) {
		fuse_reply_err(req, 0);
		return;
	}
	args.desired_access = FILE_READ_ATTRIBUTES;
	if (mask & R_OK)
		args.desired_access |= FILE_READ_DATA;
	if (mask & W_OK)
		args.desired_access |= FILE_WRITE_DATA;
	if (mask & X_OK)
		args.desired_access |= FILE_EXECUTE;
	args.share_access = FILE_SHARE_ALL;
	args.create_disposition = FILE_OPEN;
	rc = smb_inode_path(fs->inodes, ino, NULL, &path);
	ctx = rc == 0 ? malloc(sizeof(*ctx)) : NULL;
	if (rc == 0 && !ctx)
		rc = -ENOMEM;
	if (rc == 0) {
		ctx->req = req;
		ctx->fs = fs;
		rc = smb_open(fs->client, path, &args, access_opened, ctx);
	}
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

/* ---- ioctl: the inode flags (FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FS*XATTR) --- *
 *
 * Of the inode flags chattr(1) knows, only FS_COMPR_FL has an SMB
 * counterpart, FILE_ATTRIBUTE_COMPRESSED; READONLY is not IMMUTABLE (the
 * file can still be renamed) and the rest (append-only, nodump, noatime...)
 * do not exist on the wire.  GETFLAGS reports FS_COMPR_FL from the server's
 * attributes; SETFLAGS accepts the flags GETFLAGS reports (so `chattr` with
 * nothing to change works) and refuses any change with EOPNOTSUPP, as ext4
 * does for a flag it does not support.  The kernel asks for the old flags
 * with FS_IOC_FSGETXATTR before it sets new ones: no FS_XFLAG_* has an SMB
 * counterpart, so it reads all zero and FS_IOC_FSSETXATTR takes only zero
 * xflags (the rest of struct fsxattr means nothing here and is ignored).
 * Every other command is ENOTTY;
 * FIONREAD on a file never reaches us (the VFS answers it from i_size). */
struct ioctl_ctx {
	fuse_req_t req;
	unsigned int cmd;
	unsigned int want; /* SETFLAGS: the flags asked for */
};

static unsigned int attr_to_fs_flags(const struct smb_attr *attr)
{
	return (attr->file_attributes & FILE_ATTRIBUTE_COMPRESSED) ? FS_COMPR_FL : 0;
}

static void ioctl_have_attr(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct ioctl_ctx ctx = *(struct ioctl_ctx *)arg;
	int e = smb_errno(err, status);
	unsigned int flags;

	free(arg);
	if (e) {
		fuse_reply_err(ctx.req, e);
		return;
	}
	flags = attr_to_fs_flags(attr);
	if (ctx.cmd == FS_IOC_GETFLAGS)
		fuse_reply_ioctl(ctx.req, 0, &flags, sizeof(flags));
	else if (ctx.want == flags)
		fuse_reply_ioctl(ctx.req, 0, NULL, 0);
	else
		fuse_reply_err(ctx.req, EOPNOTSUPP);
}

void smbfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
                 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
                 size_t out_bufsz)
{
	(void)ino;
	(void)arg;
	struct smbfs *fs = smbfs_of(req);
	struct ioctl_ctx *ctx;
	int rc;

	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	/* The kernel sizes the buffers from the command; the flags are an int
	 * although the command is declared with a long. */
	if ((cmd == FS_IOC_GETFLAGS && out_bufsz < sizeof(unsigned int)) ||
	    (cmd == FS_IOC_SETFLAGS && in_bufsz < sizeof(unsigned int))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((cmd == FS_IOC_FSGETXATTR && out_bufsz < sizeof(struct fsxattr)) ||
	    (cmd == FS_IOC_FSSETXATTR && in_bufsz < sizeof(struct fsxattr))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (cmd == FS_IOC_FSGETXATTR) {
		struct fsxattr xa = {0};
		fuse_reply_ioctl(req, 0, &xa, sizeof(xa));
		return;
	}
	if (cmd == FS_IOC_FSSETXATTR) {
		struct fsxattr xa;
		memcpy(&xa, in_buf, sizeof(xa));
		if (xa.fsx_xflags)
			fuse_reply_err(req, EOPNOTSUPP);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	if (cmd != FS_IOC_GETFLAGS && cmd != FS_IOC_SETFLAGS) {
		smb_debug("%s: ioctl 0x%x: not supported", fs->source, cmd);
		fuse_reply_err(req, ENOTTY);
		return;
	}
	ctx = malloc(sizeof(*ctx));
	if (!ctx) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ctx->req = req;
	ctx->cmd = cmd;
	ctx->want = 0;
	if (cmd == FS_IOC_SETFLAGS)
		memcpy(&ctx->want, in_buf, sizeof(ctx->want));
	rc = smb_fstat(fs->client, smbfs_file_of(fi)->fid, ioctl_have_attr, ctx);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}
