/* fuse/cache.c — what the kernel may cache, driven by the server's leases
 * (or, where the server does not lease, its oplocks).
 *
 * cache=strict (the default): every open asks for a lease, R|W|H on a
 * file (R|H on a directory where the server leases directories), one per
 * inode (the lease_id is the nodeid; a file created by name gets a fresh
 * id), so opens of one inode share it and never break each other.  Without
 * leasing it asks for a batch oplock.  An open that gets R (or an oplock)
 * is served through the page cache; one that gets neither is opened with
 * direct_io and its inode's attributes are not cached (timeout 0).  A new
 * open keeps the pages cached before only while another handle of the
 * inode held R throughout (keep_cache); otherwise they go (close-to-open).
 * The mount has no kernel writeback cache (the kernel would then trust its
 * own size over the server's, and another client's writes would never
 * show).  A buffered write(2) under a lease with W is written behind
 * instead (ops_file.c, wb.h): answered once its WRITE is sent, with the
 * data still on its way; a break waits for those WRITEs before its ack
 * (hold_break), and so do flush, fsync, read and setattr.  Without W, and
 * for O_DIRECT, O_SYNC or cache=none, write(2) returns once the server has
 * the data.  Pages dirtied through a shared mmap wait in the kernel; the
 * invalidation below writes them back before it returns.
 *
 * When the server breaks a lease (another client opened or wrote the file):
 *  - losing R: the kernel drops the inode's pages and attributes
 *    (fuse_lowlevel_notify_inval_inode, which also writes back any dirty
 *    page first), its handles become "uncached" (attributes timeout 0,
 *    auto_inval_data drops pages the server's mtime or size says are
 *    stale), and only then is the break acknowledged;
 *  - losing W (keeping R): the same invalidation, for the pages a shared
 *    mmap may have dirtied: they reach the server before the ack (the
 *    clean ones are dropped with them, and read again);
 *  - a directory losing R (Samba breaks R|H to none, without waiting for
 *    the ack, when another client creates, renames or unlinks a name in
 *    it or writes to a file in it; and when this mount does, except
 *    through an open that names the directory's lease as its parent's, as
 *    creates and unlinks do): its cached listing and attributes go as above, and the
 *    kernel's entries for the names under it that the inode table knows
 *    expire (fuse_lowlevel_notify_expire_entry; inval_entry on kernels
 *    before 6.2), so a name that went or now names another file is
 *    looked up again; then the ack.  (No negative entry is cached by the
 *    kernel: a lookup's ENOENT is an error reply, which it does not keep;
 *    the daemon's own, negcache.h, is forgotten at any break.)
 *  - losing only H: no cache of the kernel depends on it, so the ack goes
 *    at once; a directory handle kept open after its close (ops_dir.c,
 *    handlecache) is closed after any ack that leaves its lease without
 *    R or H (ack_lease_break).
 * An oplock break does the same for the one handle it names, acknowledged
 * by the engine at once (an oplock break leaves no time to wait).
 * cache=none: direct_io always, breaks are acknowledged at once.
 * cache=loose: pages kept across opens whatever the lease says; breaks
 * still drop them.
 *
 * The kernel's invalidation must not run on the loop thread: it waits for
 * page locks that reads in flight hold until the loop thread answers them,
 * and an entry's for the directory's inode lock, which an op in flight in
 * that directory holds until the loop thread answers it.
 * So each break that drops a cache starts a short-lived thread that makes
 * the call and then acknowledges; breaks are rare.  (The expiry of a
 * directory's entries is waited for EXPIRE_WAIT_MS at most: an op of ours
 * in the directory may hold its lock until the server has the ack.)  fs->notifiers counts
 * them; teardown waits for none to be left.  An ack after the client is
 * gone is dropped (fs->client_gone, under fs->ack_lock).
 *
 * Threads: smbfs_on_break and smbfs_on_lease_break run on the loop thread
 * (or the channel manager thread); handles are read under fs->handles_lock.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"

struct inval_job {
	struct smbfs *fs;
	uint64_t nodeid;
	struct smb_lease_ack *ack; /* sent once the cache is gone; NULL: none */
};

/* Acknowledge; then close the kept directory handles (ops_dir.c) that the
 * break left without R or H (after the ack: the lease goes with them). */
static void ack_lease_break(struct smbfs *fs, struct smb_lease_ack *ack)
{
	bool gone;
	pthread_mutex_lock(&fs->ack_lock);
	gone = fs->client_gone;
	if (gone)
		smb_lease_break_drop(ack);
	else
		smb_lease_break_done(ack);
	pthread_mutex_unlock(&fs->ack_lock);
	if (!gone)
		smbfs_dirs_lease_lost(fs);
}

/* The kernel's entries for the children of directory nodeid: each one's
 * next use asks the server again (LOOKUP).  Expired rather than dropped
 * where the kernel can (6.2 and later), so a mount on a child stays. */
static void expire_children(struct smbfs *fs, uint64_t nodeid)
{
	char **names;
	size_t n;
	if (smb_inode_child_names(fs->inodes, nodeid, &names, &n) < 0) {
		/* nothing better left: the entries expire by actimeo */
		smb_warn("%s: out of memory: the entries under inode %llu are not dropped",
		         fs->source, (unsigned long long)nodeid);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		int rc = fuse_lowlevel_notify_expire_entry(fs->se, nodeid, names[i], len,
		                                           FUSE_LL_EXPIRE_ONLY);
		if (rc == -ENOSYS)
			rc = fuse_lowlevel_notify_inval_entry(fs->se, nodeid, names[i], len);
		if (rc < 0 && rc != -ENOENT && rc != -ENODEV)
			smb_debug("%s: dropping the entry \"%s\" of inode %llu: %s", fs->source,
			          names[i], (unsigned long long)nodeid, strerror(-rc));
	}
	if (n)
		smb_debug("%s: %zu entries under inode %llu expired", fs->source, n,
		          (unsigned long long)nodeid);
	smb_inode_names_free(names, n);
}

/* A directory's entries expire under the directory's inode lock, which the
 * kernel holds across an op of ours in that directory (a rename, a create)
 * until the loop thread answers it; and ksmbd holds that op until it has
 * our ack of the break the op itself caused (ksmbd 6.12 breaks our own
 * directory lease at a rename in it): each waited for the other until
 * ksmbd gave up on the ack, 30 s later.  So an ack waits for the expiry
 * EXPIRE_WAIT_MS at most; then it goes, and the expiry ends with the op. */
#define EXPIRE_WAIT_MS 200

/* Run fn(arg) on a detached thread counted in fs->notifiers (fn subtracts
 * itself when done).  0, or -1: no thread, nothing counted. */
static int start_notifier(struct smbfs *fs, void *(*fn)(void *), void *arg)
{
	pthread_attr_t at;
	pthread_t t;
	__atomic_add_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	if (rc == 0)
		return 0;
	__atomic_sub_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	return -1;
}

struct expire_job {
	struct smbfs *fs;
	uint64_t nodeid;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	bool done;           /* under lock */
	int refs;            /* under lock: the waiter and the expiring thread */
};

static void expire_job_put(struct expire_job *e)
{
	pthread_mutex_lock(&e->lock);
	bool last = --e->refs == 0;
	pthread_mutex_unlock(&e->lock);
	if (last) {
		pthread_cond_destroy(&e->cond);
		pthread_mutex_destroy(&e->lock);
		free(e);
	}
}

static void *expire_thread(void *arg)
{
	struct expire_job *e = arg;
	struct smbfs *fs = e->fs;
	expire_children(fs, e->nodeid);
	pthread_mutex_lock(&e->lock);
	e->done = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	expire_job_put(e);
	__atomic_sub_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

/* expire_children(), waited for EXPIRE_WAIT_MS at most (it goes on after,
 * counted in fs->notifiers). */
static void expire_children_bounded(struct smbfs *fs, uint64_t nodeid)
{
	struct expire_job *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;
	if (!e) {
		expire_children(fs, nodeid);
		return;
	}
	e->fs = fs;
	e->nodeid = nodeid;
	e->refs = 2;
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (start_notifier(fs, expire_thread, e) < 0) {
		e->refs = 1;
		expire_job_put(e);
		expire_children(fs, nodeid);
		return;
	}
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += (long)EXPIRE_WAIT_MS * 1000000L;
	dl.tv_sec += dl.tv_nsec / 1000000000L;
	dl.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&e->lock);
	while (!e->done && pthread_cond_timedwait(&e->cond, &e->lock, &dl) != ETIMEDOUT)
		;
	bool done = e->done;
	pthread_mutex_unlock(&e->lock);
	if (!done)
		smb_debug("%s: the entries under inode %llu wait for an op in it: the break is "
		          "acknowledged first",
		          fs->source, (unsigned long long)nodeid);
	expire_job_put(e);
}

static void *inval_thread(void *arg)
{
	struct inval_job *j = arg;
	struct smbfs *fs = j->fs;
	/* offset 0, length 0: every cached page (dirty ones written back
	 * first; a directory's: its cached listing) and the attributes */
	int rc = fuse_lowlevel_notify_inval_inode(fs->se, j->nodeid, 0, 0);
	if (rc < 0 && rc != -ENOENT && rc != -ENODEV)
		smb_debug("%s: dropping the cache of inode %llu: %s", fs->source,
		          (unsigned long long)j->nodeid, strerror(-rc));
	/* A directory's lease covers its names too (a file has no children:
	 * nothing to walk) */
	if (j->ack) {
		expire_children_bounded(fs, j->nodeid);
		ack_lease_break(fs, j->ack);
	} else {
		expire_children(fs, j->nodeid);
	}
	free(j);
	__atomic_sub_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

/* Drop the kernel's cache of nodeid on a thread, then send ack (if any). */
static void drop_kernel_cache(struct smbfs *fs, uint64_t nodeid, struct smb_lease_ack *ack)
{
	struct inval_job *j = malloc(sizeof(*j));
	if (!j || !fs->se) {
		free(j);
		if (ack)
			ack_lease_break(fs, ack);
		return;
	}
	/* The attributes at once (offset < 0: no page is touched, nothing
	 * blocks): the next read revalidates them, and auto_inval_data drops
	 * pages the server's mtime or size says are stale even before the
	 * thread has dropped them all. */
	fuse_lowlevel_notify_inval_inode(fs->se, nodeid, -1, 0);
	j->fs = fs;
	j->nodeid = nodeid;
	j->ack = ack;
	if (start_notifier(fs, inval_thread, j) < 0) {
		smb_warn("%s: cannot start a thread to drop the cache of inode %llu", fs->source,
		         (unsigned long long)nodeid);
		free(j);
		if (ack)
			ack_lease_break(fs, ack);
	}
}

void smbfs_on_break(void *arg, struct smb2_fileid fid, uint8_t level)
{
	struct smbfs *fs = arg;
	uint64_t nodeid = 0;
	if (fs->negc) /* another client is at work: names may have come */
		negc_changed(fs->negc);
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->fid.persistent != fid.persistent || f->fid.volatile_ != fid.volatile_)
			continue;
		if (level < f->oplock) /* breaks only lower (see client/opens.c) */
			f->oplock = level;
		if (level == SMB2_OPLOCK_LEVEL_NONE) {
			f->lease = SMB2_LEASE_NONE; /* after a reconnect: nothing is known */
			if (!fs->keep_cache)
				f->uncached = true;
		}
		nodeid = f->nodeid;
		break;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	if (nodeid && !fs->direct_io) {
		smb_debug("%s: oplock of inode %llu broken to level %u: dropping its cache",
		          fs->source, (unsigned long long)nodeid, level);
		drop_kernel_cache(fs, nodeid, NULL);
	}
	if (level == SMB2_OPLOCK_LEVEL_NONE)
		smbfs_dirs_lease_lost(fs);
}

/* A break waits for the writes answered early on its inode: the server
 * (and the client it breaks us for) must see them before our ack. */
struct break_hold {
	struct wb_waiter q;
	struct smbfs *fs;
	uint64_t nodeid;
	struct smb_lease_ack *ack;
	bool drop;
};

static void break_resume(void *arg)
{
	struct break_hold h = *(struct break_hold *)arg;

	free(arg);
	smb_debug("%s: the writes in flight on inode %llu are done: the break goes on",
	          h.fs->source, (unsigned long long)h.nodeid);
	if (h.drop)
		drop_kernel_cache(h.fs, h.nodeid, h.ack);
	else
		ack_lease_break(h.fs, h.ack);
}

/* On the loop thread: what was gathered goes out, then the break waits for
 * every write in flight. */
static void break_on_loop(void *arg)
{
	struct break_hold *h = arg;

	smbfs_send_gathered(h->fs, h->nodeid);
	if (!wb_when_idle(h->fs->wb, &h->q, h->nodeid, break_resume, h))
		break_resume(h);
}

static bool hold_break(struct smbfs *fs, uint64_t nodeid, struct smb_lease_ack *ack, bool drop)
{
	/* a gathered write not sent yet is in the table too */
	if (!fs->wb || !wb_busy(fs->wb, nodeid))
		return false;
	struct break_hold *h = malloc(sizeof(*h));
	if (!h)
		return false;
	*h = (struct break_hold){.fs = fs, .nodeid = nodeid, .ack = ack, .drop = drop};
	if (fs->client && ev_call(smb_client_loop(fs->client), break_on_loop, h) == 0)
		return true;
	if (wb_when_idle(fs->wb, &h->q, nodeid, break_resume, h))
		return true;
	free(h);
	return false;
}

void smbfs_on_lease_break(void *arg, uint64_t lease_id, uint32_t old_state, uint32_t new_state,
                          struct smb_lease_ack *ack)
{
	struct smbfs *fs = arg;
	uint64_t nodeid = 0;
	uint32_t held = 0;
	if (fs->negc) /* another client is at work: names may have come */
		negc_changed(fs->negc);
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->lease_id != lease_id)
			continue;
		held |= f->lease;
		f->lease &= new_state;
		uint32_t rh = SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING;
		if ((new_state & rh) != rh)
			f->lease_lost = true;
		if (!(new_state & SMB2_LEASE_READ_CACHING) && !fs->keep_cache)
			f->uncached = true;
		nodeid = f->nodeid;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	/* What we may have cached: what our handles held, or what the server
	 * says we held (a break may overtake the open that granted it). */
	held |= old_state;
	uint32_t lost = held & ~new_state;
	bool drop = (lost & (SMB2_LEASE_READ_CACHING | SMB2_LEASE_WRITE_CACHING)) && nodeid &&
	            !fs->direct_io;
	smb_debug("%s: lease of inode %llu broken from 0x%x to 0x%x%s", fs->source,
	          (unsigned long long)nodeid, held, new_state, drop ? ": dropping its cache" : "");
	if (nodeid && hold_break(fs, nodeid, ack, drop))
		return;
	if (drop)
		drop_kernel_cache(fs, nodeid, ack);
	else
		ack_lease_break(fs, ack);
}

uint64_t smbfs_lease_id(struct smbfs *fs, uint64_t nodeid)
{
	/* nodeids count up from 1; fresh ids from the top half never meet them */
	if (nodeid) {
		uint64_t key = smb_inode_lease_key(fs->inodes, nodeid);
		return key ? key : nodeid;
	}
	return (1ull << 63) | __atomic_add_fetch(&fs->next_lease_id, 1, __ATOMIC_RELAXED);
}

bool smbfs_lease_open(struct smbfs *fs, struct smbfs_file *f, const struct smb_attr *attr,
                      bool *keep)
{
	bool leased = attr->oplock == SMB2_OPLOCK_LEVEL_LEASE;
	bool cache = leased ? (attr->lease & SMB2_LEASE_READ_CACHING)
	                    : attr->oplock != SMB2_OPLOCK_LEVEL_NONE;
	bool kept = false;
	pthread_mutex_lock(&fs->handles_lock);
	f->oplock = attr->oplock;
	f->lease = leased ? attr->lease : SMB2_LEASE_NONE;
	if (!leased)
		f->lease_id = 0; /* an oplock: breaks name the handle, not the lease */
	for (struct smbfs_file *o = fs->handles; leased && o; o = o->next) {
		if (o == f || o->lease_id != f->lease_id || o->closing)
			continue;
		kept |= cache && (o->lease & SMB2_LEASE_READ_CACHING) && !o->uncached;
		o->lease = f->lease; /* one lease, one state */
	}
	/* cache=strict without R: another client may be writing it, so
	 * nothing of it is cached. */
	if (!cache && !fs->keep_cache && !fs->direct_io)
		f->uncached = true;
	pthread_mutex_unlock(&fs->handles_lock);
	*keep = kept;
	return cache;
}

double smbfs_attr_timeout(struct smbfs *fs, uint64_t nodeid)
{
	bool uncached = false;
	if (fs->timeout == 0)
		return 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !uncached; f = f->next)
		uncached = f->nodeid == nodeid && f->uncached;
	pthread_mutex_unlock(&fs->handles_lock);
	return uncached ? 0 : fs->timeout;
}

void smbfs_wait_notifiers(struct smbfs *fs)
{
	for (int i = 0; i < 1000 && __atomic_load_n(&fs->notifiers, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
}
