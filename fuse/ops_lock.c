/* fuse/ops_lock.c — flock(2) across clients, through SMB2 LOCK.
 *
 * SMB byte-range locks are mandatory (a locked range refuses other
 * handles' reads and writes) while flock is advisory, so a whole-file
 * flock is not a lock on the file's bytes: it is a lock on one byte far
 * past any data, FLOCK_BYTE, that only other flock()s (from this mount or
 * any client doing the same) contend for.  I/O is never affected.
 *
 * Blocking requests poll: a LOCK with FAIL_IMMEDIATELY, and while the
 * server says the byte is taken, again every FLOCK_RETRY_MS, until granted
 * or the caller is interrupted (EINTR).  A handle's locks go when it is
 * closed (the server drops them with the handle).  POSIX (fcntl) byte-range
 * locks are not sent to the server: the kernel keeps them, per mount.
 *
 * Threads: all on the loop thread (FUSE handlers and engine callbacks);
 * smbfs_file.flock is only touched there.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/file.h>

#include "client/proto/smb2_const.h"
#include "client/proto/smb2_fsctl.h"
#include "common/evloop.h"
#include "common/log.h"
#include "fuse/errno_map.h"

#define FLOCK_BYTE     0x7FFFFFFFFFFFFFF0ull /* below 2^63: servers refuse above */
#define FLOCK_RETRY_MS 100

struct flock_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	struct smbfs_file *f;
	int op;     /* LOCK_SH or LOCK_EX (LOCK_NB stripped), or LOCK_UN */
	bool block; /* no LOCK_NB: retry while taken */
	int step;   /* 0: unlocking what is held (a conversion), 1: locking */
};

static void flock_send(struct flock_ctx *c);

static void flock_reply(struct flock_ctx *c, int rc)
{
	fuse_req_t req = c->req;
	free(c);
	fuse_reply_err(req, rc);
}

static void flock_retry(void *arg)
{
	struct flock_ctx *c = arg;
	if (fuse_req_interrupted(c->req))
		flock_reply(c, EINTR);
	else
		flock_send(c);
}

static void flock_done(void *arg, int err, uint32_t status)
{
	struct flock_ctx *c = arg;
	if (c->step == 0) {
		/* unlocked (or it was not locked after all) */
		c->f->flock = 0;
		if (c->op == LOCK_UN ||
		    (err == 0 && status != STATUS_SUCCESS && status != STATUS_RANGE_NOT_LOCKED)) {
			flock_reply(c, c->op == LOCK_UN ? 0 : smb_errno(err, status));
			return;
		}
		c->step = 1;
		flock_send(c);
		return;
	}
	if (!err && status == STATUS_SUCCESS) {
		c->f->flock = c->op;
		flock_reply(c, 0);
		return;
	}
	bool taken =
	    !err && (status == STATUS_LOCK_NOT_GRANTED || status == STATUS_FILE_LOCK_CONFLICT);
	if (taken && !c->block) {
		flock_reply(c, EWOULDBLOCK);
		return;
	}
	struct ev_timer *t;
	if (!taken ||
	    ev_timer_add(smb_client_loop(c->fs->client), FLOCK_RETRY_MS, flock_retry, c, &t) < 0)
		flock_reply(c, taken ? ENOMEM : smb_errno(err, status));
}

static void flock_send(struct flock_ctx *c)
{
	struct smb2_lock_elem e = {.offset = FLOCK_BYTE, .length = 1};
	if (c->step == 0)
		e.flags = SMB2_LOCKFLAG_UNLOCK;
	else
		e.flags =
		    (c->op == LOCK_EX ? SMB2_LOCKFLAG_EXCLUSIVE_LOCK : SMB2_LOCKFLAG_SHARED_LOCK) |
		    SMB2_LOCKFLAG_FAIL_IMMEDIATELY;
	int rc = smb_lock(c->fs->client, c->f->fid, &e, 1, flock_done, c);
	if (rc < 0)
		flock_reply(c, -rc);
}

void smbfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *f = smbfs_file_of(fi);
	int kind = op & (LOCK_SH | LOCK_EX | LOCK_UN);
	if (!f || (kind != LOCK_SH && kind != LOCK_EX && kind != LOCK_UN)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (kind == f->flock || (kind == LOCK_UN && !f->flock)) {
		fuse_reply_err(req, 0); /* already so */
		return;
	}
	struct flock_ctx *c = malloc(sizeof(*c));
	if (!c) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	*c = (struct flock_ctx){.req = req,
	                        .fs = fs,
	                        .f = f,
	                        .op = kind,
	                        .block = !(op & LOCK_NB),
	                        /* a conversion or an unlock drops what is held first */
	                        .step = f->flock ? 0 : 1};
	flock_send(c);
}
