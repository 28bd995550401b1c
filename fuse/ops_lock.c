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
 * closed (the server drops them with the handle).
 *
 * POSIX (fcntl) record locks, the same way: a byte range [s, e] of the file
 * is locked on the server as [PLOCK_BASE + s, PLOCK_BASE + e], a shadow of
 * the file's offsets that no I/O reaches, so the locks stay advisory and
 * every client doing the same (every smbrdma mount) contends for them; they
 * are not seen by Windows applications or cifs.ko, whose byte-range locks
 * are on the data itself.  The kernel hands every fcntl lock of the mount to
 * us (FUSE_POSIX_LOCKS), so the POSIX rules between owners of this mount
 * (processes: FUSE's lock_owner) are kept here, in a plock_set per file
 * (plock.h), and the server is told only what changes: a new lock is one
 * LOCK of the bytes not held yet, an unlock of what was locked is one
 * UNLOCK; a conversion or a partial unlock unlocks the segments concerned
 * and locks what stays (not atomic on the server; if the lock then fails,
 * what was unlocked is locked again).  Each segment is locked through the
 * handle of the fcntl() that took it and goes when that handle closes.
 * Requests on one file run one at a time, in order (plk_inode's queue); a
 * blocking request that finds the range taken leaves the queue and tries
 * again every FLOCK_RETRY_MS.  With `nobrl` none of this happens and the
 * kernel keeps POSIX locks per mount.
 *
 * After a reconnect the engine takes every lock again on the reopened
 * handle before any request goes out (client.h, smb_lock_lost_cb); one
 * that another client took meanwhile is lost: smbfs_on_lock_lost() logs
 * which, and the engine fails every request through that handle but its
 * CLOSE with EIO, so its holder learns it at its next read, write, flush or
 * lock (what is kept here for it goes when the handle closes).
 *
 * Threads: all on the loop thread (FUSE handlers and engine callbacks);
 * smbfs_file.flock and smbfs.plocks are only touched there.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>

#include "common/evloop.h"
#include "common/log.h"
#include "client/proto/smb2_errno.h"
#include "fuse/plock.h"

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

/* A LOCK's answer says another holder has the range (not an error of ours). */
static bool lock_taken(int err, uint32_t status)
{
	return !err && (status == STATUS_LOCK_NOT_GRANTED || status == STATUS_FILE_LOCK_CONFLICT);
}

/* A LOCK element's flags for a lock that never waits on the server (a
 * blocking request polls instead). */
static uint32_t lock_flags(bool exclusive)
{
	return (exclusive ? SMB_LOCK_EXCLUSIVE : SMB_LOCK_SHARED) | SMB_LOCK_FAIL_IMMEDIATELY;
}

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
	bool taken = lock_taken(err, status);
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
	uint32_t flags = c->step == 0 ? SMB_LOCK_UNLOCK : lock_flags(c->op == LOCK_EX);
	int rc = smb_lock_range(c->fs->client, c->f->fid, FLOCK_BYTE, 1, flags, flock_done, c);
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
	if (kind != LOCK_UN && smb_file_failed(fs->client, f->fid)) {
		fuse_reply_err(req, EIO); /* a lock of it was lost in a reconnect */
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

/* ---- POSIX (fcntl) record locks ------------------------------------------------ */

#define PLOCK_BASE (UINT64_C(1) << 62)
#define PLOCK_TOP  (FLOCK_BYTE - 1) /* the last byte of the shadow range */

struct plk_ctx;

struct plk_inode {
	uint64_t nodeid;
	struct plock_set set;
	struct plk_ctx *head, *tail; /* queued; the head runs while busy */
	bool busy;
	unsigned waiting;       /* blocking requests out of the queue until their retry */
	struct plk_inode *next; /* smbfs.plocks */
};

enum plk_phase {
	PLK_UNLOCK,      /* unlocking plan.drop[i] */
	PLK_LOCK,        /* locking add[i] */
	PLK_UNDO_ADD,    /* a lock failed: unlocking add[0..i) */
	PLK_UNDO_DROP,   /* and locking plan.drop[] again */
	PLK_PROBE,       /* F_GETLK: trying gap[i] */
	PLK_PROBE_UN,    /* F_GETLK: it was free; unlocking it */
	PLK_PROBE_SH,    /* F_GETLK: a write lock was refused; is it a read lock? */
	PLK_PROBE_SH_UN, /* F_GETLK: it is; unlocking our read lock, then report */
};

struct plk_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	struct plk_inode *pi;
	struct smbfs_file *f;
	uint64_t owner, start, end;
	int type;
	uint32_t pid;
	bool sleep, getlk;
	struct plock_plan plan;
	struct plock_seg **add; /* plan.add as an array */
	enum plk_phase phase;
	size_t i, nfailed; /* progress in the phase; add[] locked before the failure */
	int err;           /* errno of the failed lock, EAGAIN when taken */
	int then_err;      /* the answer when it succeeds (a flush's write error) */
	uint64_t gap[8][2];
	size_t ngap;
	struct plk_ctx *next;
};

/* A file offset's place in the shadow range (the top ones share its last byte). */
static uint64_t srv_off(uint64_t x)
{
	return x >= PLOCK_TOP - PLOCK_BASE ? PLOCK_TOP : PLOCK_BASE + x;
}

/* A struct flock answer for [start, end] (l_len 0: to the end of the file). */
static struct flock flock_of(int type, uint64_t start, uint64_t end, uint32_t pid)
{
	return (struct flock){.l_type = (short)type,
	                      .l_whence = SEEK_SET,
	                      .l_start = (off_t)start,
	                      .l_len = end >= PLOCK_MAX ? 0 : (off_t)(end - start + 1),
	                      .l_pid = (pid_t)pid};
}

static struct plk_inode *plk_inode(struct smbfs *fs, uint64_t nodeid, bool create)
{
	for (struct plk_inode *pi = fs->plocks; pi; pi = pi->next)
		if (pi->nodeid == nodeid)
			return pi;
	if (!create)
		return NULL;
	struct plk_inode *pi = calloc(1, sizeof(*pi));
	if (pi) {
		pi->nodeid = nodeid;
		pi->next = fs->plocks;
		fs->plocks = pi;
	}
	return pi;
}

static void plk_inode_put(struct smbfs *fs, struct plk_inode *pi)
{
	if (pi->busy || pi->head || pi->waiting || pi->set.segs)
		return;
	for (struct plk_inode **pp = &fs->plocks; *pp; pp = &(*pp)->next)
		if (*pp == pi) {
			*pp = pi->next;
			free(pi);
			return;
		}
}

static void plk_run(struct plk_ctx *c);

/* Start the next queued request of pi if it is idle, or free pi if it is
 * idle and holds nothing.  Callers touch pi no more after: a request may
 * finish inside plk_run() and kick (and free) pi itself. */
static void plk_kick(struct smbfs *fs, struct plk_inode *pi)
{
	if (pi->busy)
		return;
	if (pi->head) {
		pi->busy = true;
		plk_run(pi->head);
		return;
	}
	plk_inode_put(fs, pi);
}

static void plk_enqueue(struct plk_ctx *c)
{
	struct plk_inode *pi = c->pi;
	c->next = NULL;
	if (pi->tail)
		pi->tail->next = c;
	else
		pi->head = c;
	pi->tail = c;
	plk_kick(c->fs, pi);
}

/* The running request leaves the queue (it is pi->head). */
static void plk_dequeue(struct plk_ctx *c)
{
	struct plk_inode *pi = c->pi;
	pi->head = c->next;
	if (!pi->head)
		pi->tail = NULL;
	pi->busy = false;
}

static void plk_free(struct plk_ctx *c)
{
	plock_plan_free(&c->plan);
	free(c->add);
	free(c);
}

/* Answer the running request and start the next. */
static void plk_finish(struct plk_ctx *c, int rc, const struct flock *lk)
{
	struct smbfs *fs = c->fs;
	struct plk_inode *pi = c->pi;
	plk_dequeue(c);
	if (lk)
		fuse_reply_lock(c->req, lk);
	else
		fuse_reply_err(c->req, rc ? rc : c->then_err);
	plk_free(c);
	plk_kick(fs, pi);
}

static void plk_retry(void *arg)
{
	struct plk_ctx *c = arg;
	struct smbfs *fs = c->fs;
	struct plk_inode *pi = c->pi;
	pi->waiting--;
	if (fuse_req_interrupted(c->req)) {
		fuse_reply_err(c->req, EINTR);
		plk_free(c);
		plk_kick(fs, pi);
		return;
	}
	plk_enqueue(c);
}

/* The range is taken: a blocking request leaves the queue and comes back
 * later; any other is answered EAGAIN. */
static void plk_taken(struct plk_ctx *c)
{
	struct ev_timer *t;
	if (!c->sleep) {
		plk_finish(c, EAGAIN, NULL);
		return;
	}
	plock_plan_free(&c->plan);
	free(c->add);
	c->add = NULL;
	struct smbfs *fs = c->fs;
	struct plk_inode *pi = c->pi;
	plk_dequeue(c);
	if (ev_timer_add(smb_client_loop(fs->client), FLOCK_RETRY_MS, plk_retry, c, &t) < 0) {
		fuse_reply_err(c->req, ENOLCK);
		plk_free(c);
	} else {
		pi->waiting++;
	}
	plk_kick(fs, pi);
}

static void plk_step(struct plk_ctx *c);

/* F_GETLK: another client holds a lock of `type` over gap i (which, and
 * whose, the server does not say: the gap is reported, with no pid). */
static void plk_report(struct plk_ctx *c, int type)
{
	struct flock lk = flock_of(type, c->gap[c->i][0], c->gap[c->i][1], 0);
	plk_finish(c, 0, &lk);
}

static void plk_done(void *arg, int err, uint32_t status)
{
	struct plk_ctx *c = arg;
	bool ok = !err && status == STATUS_SUCCESS;
	bool taken = lock_taken(err, status);
	switch (c->phase) {
	case PLK_UNLOCK:
	case PLK_UNDO_ADD:
		/* not locked there after all, or the handle or connection is
		 * gone: the server holds nothing of it either way */
		if (!ok)
			smb_debug("%s: unlock of a POSIX lock: %s", c->fs->source,
			          err ? strerror(-err) : smb2_status_str(status));
		c->i++;
		break;
	case PLK_LOCK:
		if (ok) {
			c->i++;
			break;
		}
		if (c->type == F_UNLCK) {
			/* a part that stays locked after a partial unlock: an unlock
			 * cannot fail, so the part is given up */
			smb_warn("%s: after a partial unlock, the rest of a POSIX lock could not "
			         "be taken again (%s); it is lost",
			         c->fs->source, err ? strerror(-err) : smb2_status_str(status));
			c->add[c->i]->fh = NULL; /* marks it for plk_commit() */
			c->i++;
			break;
		}
		c->err = taken ? EAGAIN : smb_errno(err, status);
		c->nfailed = c->i;
		c->phase = PLK_UNDO_ADD;
		c->i = 0;
		break;
	case PLK_UNDO_DROP:
		if (!ok)
			smb_warn("%s: a POSIX lock given up for a conversion could not be taken "
			         "again (%s); it is lost",
			         c->fs->source, err ? strerror(-err) : smb2_status_str(status));
		c->i++;
		break;
	case PLK_PROBE:
		if (ok) {
			c->phase = PLK_PROBE_UN;
		} else if (taken && c->type == F_WRLCK) {
			c->phase = PLK_PROBE_SH;
		} else if (taken) {
			plk_report(c, F_WRLCK);
			return;
		} else {
			plk_finish(c, smb_errno(err, status), NULL);
			return;
		}
		break;
	case PLK_PROBE_UN:
		c->phase = PLK_PROBE;
		c->i++;
		break;
	case PLK_PROBE_SH:
		if (!ok) {
			plk_report(c, F_WRLCK);
			return;
		}
		c->phase = PLK_PROBE_SH_UN;
		break;
	case PLK_PROBE_SH_UN:
		plk_report(c, F_RDLCK);
		return;
	}
	plk_step(c);
}

/* The plan holds on the server: into the set, less the parts lost. */
static void plk_commit(struct plk_ctx *c)
{
	for (struct plock_seg **pp = &c->plan.add; *pp;) {
		struct plock_seg *g = *pp;
		if (!g->fh) {
			*pp = g->next;
			c->plan.nadd--;
			free(g);
		} else {
			pp = &g->next;
		}
	}
	plock_commit(&c->pi->set, &c->plan);
}

static void plk_send(struct plk_ctx *c, const struct smbfs_file *f, uint64_t start, uint64_t end,
                     uint32_t flags)
{
	uint64_t off = srv_off(start);
	int rc =
	    smb_lock_range(c->fs->client, f->fid, off, srv_off(end) - off + 1, flags, plk_done, c);
	if (rc < 0)
		plk_done(c, rc, 0);
}

/* Lock a segment as it stands (its type, through its handle), or unlock it. */
static void plk_send_seg(struct plk_ctx *c, const struct plock_seg *g, bool lock)
{
	plk_send(c, g->fh, g->start, g->end,
	         lock ? lock_flags(g->type == F_WRLCK) : SMB_LOCK_UNLOCK);
}

/* F_GETLK: probe gap i through the request's handle. */
static void plk_send_gap(struct plk_ctx *c, uint32_t flags)
{
	plk_send(c, c->f, c->gap[c->i][0], c->gap[c->i][1], flags);
}

/* Send the next LOCK the request needs, or answer it. */
static void plk_step(struct plk_ctx *c)
{
	switch (c->phase) {
	case PLK_UNLOCK:
		if (c->i < c->plan.ndrop) {
			plk_send_seg(c, c->plan.drop[c->i], false);
			return;
		}
		c->phase = PLK_LOCK;
		c->i = 0;
		/* fall through */
	case PLK_LOCK:
		if (c->i < c->plan.nadd) {
			plk_send_seg(c, c->add[c->i], true);
			return;
		}
		plk_commit(c);
		plk_finish(c, 0, NULL);
		return;
	case PLK_UNDO_ADD:
		if (c->i < c->nfailed) {
			plk_send_seg(c, c->add[c->i], false);
			return;
		}
		c->phase = PLK_UNDO_DROP;
		c->i = 0;
		/* fall through */
	case PLK_UNDO_DROP:
		if (c->i < c->plan.ndrop) {
			plk_send_seg(c, c->plan.drop[c->i], true);
			return;
		}
		if (c->err == EAGAIN)
			plk_taken(c);
		else
			plk_finish(c, c->err, NULL);
		return;
	case PLK_PROBE:
		if (c->i < c->ngap) {
			plk_send_gap(c, lock_flags(c->type == F_WRLCK));
			return;
		}
		plk_finish(c, 0, &(struct flock){.l_type = F_UNLCK, .l_whence = SEEK_SET});
		return;
	case PLK_PROBE_UN:
		plk_send_gap(c, SMB_LOCK_UNLOCK);
		return;
	case PLK_PROBE_SH:
		plk_send_gap(c, lock_flags(false));
		return;
	case PLK_PROBE_SH_UN:
		plk_send_gap(c, SMB_LOCK_UNLOCK);
		return;
	}
}

/* Start the request at the head of its file's queue. */
static void plk_run(struct plk_ctx *c)
{
	struct plock_set *set = &c->pi->set;
	const struct plock_seg *g =
	    c->type == F_UNLCK ? NULL : plock_conflict(set, c->owner, c->start, c->end, c->type);
	if (c->getlk) {
		if (g) {
			struct flock lk = flock_of(g->type, g->start, g->end, g->pid);
			plk_finish(c, 0, &lk);
			return;
		}
		/* the parts the owner does not hold itself: are they free on the
		 * server? (the first 8 of them) */
		c->ngap = plock_gaps(set, c->owner, c->start, c->end, c->gap, 8);
		if (c->ngap > 8)
			c->ngap = 8;
		c->phase = PLK_PROBE;
		c->i = 0;
		plk_step(c);
		return;
	}
	if (g) {
		plk_taken(c);
		return;
	}
	if (plock_plan(set, c->owner, c->start, c->end, c->type, c->pid, c->f, &c->plan) ||
	    (c->plan.nadd && !(c->add = malloc(c->plan.nadd * sizeof(*c->add))))) {
		plk_finish(c, ENOLCK, NULL);
		return;
	}
	size_t k = 0;
	for (struct plock_seg *a = c->plan.add; a; a = a->next)
		c->add[k++] = a;
	c->phase = PLK_UNLOCK;
	c->i = 0;
	plk_step(c);
}

/* then_err: the answer on success (0 but for a flush that has a write's
 * error to report). */
static void plk_submit(fuse_req_t req, fuse_ino_t ino, struct smbfs_file *f, uint64_t owner,
                       const struct flock *lock, bool sleep, bool getlk, int then_err)
{
	struct smbfs *fs = smbfs_of(req);
	uint64_t start = lock ? (uint64_t)lock->l_start : 0;
	uint64_t end = PLOCK_MAX;
	if (lock && lock->l_len > 0)
		end = start + (uint64_t)lock->l_len - 1;
	int type = lock ? lock->l_type : F_UNLCK;
	if ((lock && lock->l_start < 0) || end > PLOCK_MAX || start > end ||
	    (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* Nothing held on the file: an unlock has nothing to do. */
	struct plk_inode *pi = plk_inode(fs, ino, type != F_UNLCK || getlk);
	if (!pi) {
		fuse_reply_err(req, type == F_UNLCK ? then_err : ENOLCK);
		return;
	}
	struct plk_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		plk_kick(fs, pi);
		fuse_reply_err(req, ENOLCK);
		return;
	}
	*c = (struct plk_ctx){.req = req,
	                      .fs = fs,
	                      .pi = pi,
	                      .f = f,
	                      .owner = owner,
	                      .start = start,
	                      .end = end,
	                      .type = type,
	                      .pid = lock ? (uint32_t)lock->l_pid : 0,
	                      .sleep = sleep,
	                      .getlk = getlk,
	                      .then_err = then_err};
	plk_enqueue(c);
}

void smbfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct smbfs_file *f = fi ? smbfs_file_of(fi) : NULL;
	if (!f || lock->l_type == F_UNLCK) {
		fuse_reply_err(req, f ? EINVAL : EBADF);
		return;
	}
	if (smb_file_failed(smbfs_of(req)->client, f->fid)) {
		fuse_reply_err(req, EIO); /* a lock of it was lost in a reconnect */
		return;
	}
	plk_submit(req, ino, f, fi->lock_owner, lock, false, true, 0);
}

void smbfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
                 int sleep)
{
	struct smbfs_file *f = fi ? smbfs_file_of(fi) : NULL;
	if (!f) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (lock->l_type != F_UNLCK && smb_file_failed(smbfs_of(req)->client, f->fid)) {
		fuse_reply_err(req, EIO); /* a lock of it was lost in a reconnect */
		return;
	}
	plk_submit(req, ino, f, fi->lock_owner, lock, sleep != 0, false, 0);
}

void smbfs_plocks_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int err)
{
	/* A close(2): the closing process's locks on the file go (POSIX). */
	plk_submit(req, ino, smbfs_file_of(fi), fi->lock_owner, NULL, false, false, err);
}

void smbfs_plocks_release(struct smbfs *fs, struct smbfs_file *f)
{
	struct plk_inode *pi = plk_inode(fs, f->nodeid, false);
	if (!pi)
		return;
	size_t n = plock_drop_fh(&pi->set, f);
	if (n)
		smb_debug("%s: %zu POSIX lock(s) went with their handle", fs->source, n);
	plk_kick(fs, pi);
}

void smbfs_plocks_free(struct smbfs *fs)
{
	/* Teardown: no request is queued any more (the session is over). */
	while (fs->plocks) {
		struct plk_inode *pi = fs->plocks;
		fs->plocks = pi->next;
		plock_clear(&pi->set);
		free(pi);
	}
}

void smbfs_on_lock_lost(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                        uint64_t len, bool exclusive, uint32_t status)
{
	struct smbfs *fs = arg;
	const char *why =
	    lock_taken(0, status) ? "another client holds it now" : smb2_status_str(status);
	if (off == FLOCK_BYTE && len == 1) {
		smb_err(
		    "%s: the flock(%s) of /%s could not be taken again after the reconnect (%s); "
		    "I/O through that open file fails with EIO until it is closed",
		    fs->source, exclusive ? "LOCK_EX" : "LOCK_SH", path, why);
	} else if (off >= PLOCK_BASE && len && off + (len - 1) <= PLOCK_TOP) {
		uint64_t s = off - PLOCK_BASE, e = s + (len - 1);
		char end[32];
		if (off + (len - 1) == PLOCK_TOP)
			snprintf(end, sizeof(end), "the end of the file");
		else
			snprintf(end, sizeof(end), "%llu", (unsigned long long)e);
		smb_err("%s: the fcntl %s lock of bytes %llu to %s of /%s could not be taken again "
		        "after the reconnect (%s); I/O through that open file fails with EIO until "
		        "it is closed",
		        fs->source, exclusive ? "write" : "read", (unsigned long long)s, end, path,
		        why);
	} else {
		smb_err(
		    "%s: the byte-range lock of bytes %llu+%llu of /%s could not be taken again "
		    "after the reconnect (%s); I/O through that open file fails with EIO until "
		    "it is closed",
		    fs->source, (unsigned long long)off, (unsigned long long)len, path, why);
	}
	(void)fid;
}
