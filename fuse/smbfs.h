/* fuse/smbfs.h — the state of one mount, shared by the FUSE ops.
 *
 * Every op handler runs on the engine's loop thread (fuse/main.c reads
 * /dev/fuse there), submits one engine call and returns without blocking;
 * the engine calls back on the same thread and the callback sends the one
 * reply (fuse_reply_*) and frees the request's context.  A
 * handler whose submission fails synchronously replies itself.  No lock is
 * held while replying.
 *
 * Lock order: a directory handle's lock (ops_dir.c) may be held while taking
 * the inode table's lock (inode.h); nothing is taken under the latter.
 */
#ifndef SMBRDMA_FUSE_SMBFS_H
#define SMBRDMA_FUSE_SMBFS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client/client.h"
#include "fuse/inode.h"
#include "fuse/negcache.h"
#include "fuse/stat_map.h"
#include "fuse/wb.h"

struct ev_timer;

/* Largest READ/WRITE the kernel sends us; the engine splits it further. */
#define SMBFS_MAX_IO (1u << 20)
/* NAME_MAX as the kernel sees it; SMB allows 255 UTF-16 units. */
#define SMBFS_NAME_MAX 255

struct smbfs {
	struct smb_client *client; /* set before the session runs, cleared after */
	struct smb_inode_table *inodes;
	struct smb_stat_policy policy;
	double timeout;    /* entry and attribute timeout for the kernel (actimeo; 0 with
	                      cache=none) */
	struct negc *negc; /* names a LOOKUP found missing (negcache.h); NULL: none */
	bool ro;
	bool direct_io;           /* cache=none: every open bypasses the page cache */
	bool keep_cache;          /* cache=loose: an open keeps the pages cached before */
	bool mfsymlinks;          /* symlinks are Minshall+French symlink files (ops_link.c) */
	bool nobrl;               /* fcntl locks are the kernel's, per mount (ops_lock.c) */
	struct plk_inode *plocks; /* ops_lock.c: files with POSIX locks (loop thread) */
	bool posix;               /* the SMB3 POSIX extensions are in use (set before serving) */
	struct fuse_session *se;  /* for cache invalidation (cache.c); set before serving */
	int notifiers;            /* cache.c threads still running (atomic) */
	/* Largest READ/WRITE the kernel sends: SMBFS_MAX_IO, or less with
	 * rsize=/wsize=.  max_read must be the max_read= of the mount. */
	unsigned max_read, max_write;
	char source[512]; /* //host/share for log lines */
	/* sysfs file of our bdi's read-ahead, set before the loop starts;
	 * written once, by the first op after INIT (smbfs_post_init()). */
	char readahead_knob[128];
	unsigned readahead_kb; /* what is written there: rasize= in KiB */
	bool post_init_done;   /* atomic */
	/* Every open handle, so that those the kernel never released (the
	 * session ended first) are freed at teardown. */
	pthread_mutex_t handles_lock;
	struct smbfs_file *handles; /* guarded by handles_lock */
	/* The buffers /dev/fuse is read into; writes borrow them (reqbuf.h). */
	struct reqbuf_pool *reqbufs;
	/* FUSE over io_uring (ring.h); NULL with noio_uring.  ring_why: why
	 * requests come through /dev/fuse instead ("" while the ring runs). */
	struct fuse_ring *ring;
	char ring_why[192];
	/* Lease breaks acknowledged from cache.c's threads: under ack_lock,
	 * and not once client_gone (set before smb_client_destroy()). */
	pthread_mutex_t ack_lock;
	bool client_gone;
	uint64_t next_lease_id; /* cache.c: ids of new files' leases (atomic) */
	/* Every WRITE in flight (ops_file.c, wb.h); write_behind: buffered
	 * writes under a W lease may be answered before they complete. */
	struct wb_table *wb;
	bool write_behind;
	/* Write-only opens skip the page cache (ops_file.c set_open_flags());
	 * set at FUSE init from the kernel's protocol version. */
	bool wronly_direct;
	/* Directory handles kept after their last close (ops_dir.c): at most
	 * max_cached_dirs (0: none kept); parked_dirs counts them, under
	 * handles_lock. */
	unsigned max_cached_dirs;
	unsigned parked_dirs;
	/* The directory whose lease ops_dir.c is taking because a child of
	 * it was listed (parent_lease_take()); 0: none.  One at a time;
	 * loop thread only. */
	uint64_t parent_leasing;
	/* CLOSEs of released files waiting to go out together (ops_file.c,
	 * smbfs_close_later()); loop thread only.  closes_out counts the
	 * deferred CLOSEs queued or sent and not yet answered; close_waiters
	 * run once it is 0 (smbfs_closes_wait()). */
	bool batch_closes;
	struct smbfs_file *close_q[SMB_CLOSE_BATCH_MAX];
	int close_n;
	int close_pdus; /* PDUs those CLOSEs take (smb_close_batch()) */
	struct ev_timer *close_timer;
	unsigned closes_out;
	struct smbfs_close_waiter *close_waiters;
};

/* An open handle: fi->fh points at one of these from open/create/opendir to
 * release/releasedir.  A directory handle (ops_dir.c) starts with one. */
struct smbfs_file {
	struct smb2_fileid fid;
	uint64_t nodeid;
	bool writable;          /* opened with write access */
	int flock;              /* LOCK_SH/LOCK_EX held (ops_lock.c), or 0 */
	uint8_t oplock;         /* the server's oplock on it (cache.c) */
	uint64_t lease_id;      /* its lease (smb_open_args), 0: none asked */
	uint32_t lease;         /* the lease's state (SMB2_LEASE_*; under
	                           handles_lock) */
	bool uncached;          /* no oplock: its inode's attributes are not
	                           cached (cache.c; under handles_lock) */
	bool closing;           /* its CLOSE is under way (under handles_lock) */
	bool close_deferred;    /* that CLOSE waits to go with others, or went (smbfs_close_later();
	                           loop thread) */
	bool lease_lost;        /* a break took R or H from its lease: what was kept under it
	                           is stale even if a later open gets them back (ops_dir.c;
	                           under handles_lock) */
	bool direct;            /* opened with direct_io (no page cache) */
	int wb_err;             /* a write answered early failed: errno for the next write, flush or
	                           fsync (ops_file.c; under handles_lock) */
	void *gather;           /* small writes gathered into one WRITE not sent yet (ops_file.c's
	                           struct write_ctx; set and taken under handles_lock, on the loop
	                           thread) */
	fuse_req_t release_req; /* answered once the close completes */
	/* A stat showed the kernel the file's mtime after the last write(2)
	 * through this mount: its CLOSE keeps that time (smb_close_batch()'s
	 * mtimes), or a cold mount's git would find every file it checked out
	 * changed (Samba moves the mtime to the CLOSE's time).  Under
	 * handles_lock (smbfs_times_told(), smbfs_times_moved()). */
	bool wrote;          /* a write(2) came through it since the last setattr of its mtime */
	bool mtime_told;     /* told_mtime was shown since the last write */
	uint64_t told_mtime; /* NT time */
	/* A directory handle the kernel released, kept open while its lease
	 * holds R and H, for the next opendir (ops_dir.c; under handles_lock,
	 * changed on the loop thread only); park_timer closes it. */
	bool parked;
	uint64_t parked_ns;
	uint64_t opened_ns;          /* a directory handle: when its open completed */
	struct ev_timer *park_timer; /* loop thread */
	/* Called (loop thread) once the handle's CLOSE completed and it is freed. */
	void (*on_closed)(void *arg);
	void *on_closed_arg;
	void (*destroy)(struct smbfs_file *f); /* NULL: free(f) */
	struct smbfs *fs;                      /* set by smbfs_track_handle() */
	struct smbfs_file *prev, *next;        /* smbfs.handles, under handles_lock */
};

static inline struct smbfs_file *smbfs_file_of(const struct fuse_file_info *fi)
{
	return (struct smbfs_file *)(uintptr_t)fi->fh;
}

/* Put f on the list of open handles (once its fid is valid). */
void smbfs_track_handle(struct smbfs *fs, struct smbfs_file *f);
/* Close f->fid, then reply 0 to f->release_req if set, and free f. */
void smbfs_close_handle(struct smbfs *fs, struct smbfs_file *f);
/* A released file's CLOSE: sent with others in one compound (up to
 * SMB_CLOSE_BATCH_MAX, within CLOSE_BATCH_MS; tar x and cp -r close a
 * file every millisecond or two), else at once as smbfs_close_handle().
 * The release is answered now.  f is `closing` from here on: its FileId is
 * used no more, and smbfs_open_fid() still counts it open until the CLOSE
 * is answered.  Loop thread. */
void smbfs_close_later(struct smbfs *fs, struct smbfs_file *f);
/* Unmount, before smb_client_destroy(): no timer may start a request
 * after this (the client's connections go away under the loop thread).
 * The CLOSEs put off go now, kept directory handles are closed, and from
 * here on no CLOSE is put off and no handle kept.  Loop thread. */
void smbfs_quiesce(struct smbfs *fs);
/* Must an op wait for deferred CLOSEs first (an unlink, a rename: the
 * server would find the file open)?  If nodeid (0: any) has one queued or
 * in flight: the queue is sent now, then(arg) runs once every deferred
 * CLOSE out at this call is answered (releases meanwhile close at once),
 * and true is returned.  false: nothing to wait for (or no memory to
 * wait with), go on.  Loop thread. */
bool smbfs_closes_wait(struct smbfs *fs, uint64_t nodeid, void (*then)(void *arg), void *arg);
/* The kernel is being told ino's attributes: an open handle of it that
 * wrote keeps attr's mtime at its CLOSE (smbfs_file.mtime_told). */
void smbfs_times_told(struct smbfs *fs, uint64_t ino, const struct smb_attr *attr);
/* ino's mtime moves (a write, a truncate, a server-side copy): what was
 * told before is no longer the time to keep.  set: a setattr gave it an
 * mtime, which the server keeps through the CLOSE: nothing to keep until
 * the next write. */
void smbfs_times_moved(struct smbfs *fs, uint64_t ino, bool set);
/* Close a handle nobody will ever use (we could not hand it out). */
void smbfs_close_fid(struct smbfs *fs, struct smb2_fileid fid);
/* Teardown, after smb_client_destroy(): free the handles never released. */
void smbfs_free_handles(struct smbfs *fs);

extern const struct fuse_lowlevel_ops smbfs_ops;

static inline struct smbfs *smbfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

uint64_t smbfs_now_ns(void);
/* Wall-clock ns since 1970 (for times we set in the cache ourselves). */
uint64_t smbfs_wall_ns(void);

/* Work that must wait until the kernel has processed our INIT reply: the
 * kernel's bdi read-ahead starts at 128 KiB and INIT can only lower it, so
 * it is raised to rasize= (fs->readahead_kb) through sysfs afterwards.  Cheap after the
 * first call; the ops a kernel sends first (lookup, getattr, statfs,
 * opendir) call it. */
void smbfs_post_init(struct smbfs *fs);

/* Reply to an op with the errno of (err, status) — 0 becomes success
 * (fuse_reply_err(req, 0)), which only ops without data may use. */
void smbfs_reply_status(fuse_req_t req, int err, uint32_t status);

/* Reply to a LOOKUP (or mkdir, mknod, ...) with nodeid, just linked; an
 * interrupted request gives its lookup count back. */
void smbfs_reply_entry(struct smbfs *fs, fuse_req_t req, uint64_t nodeid, uint64_t st_ino,
                       const struct smb_attr *attr);
/* Fill a fuse_entry_param for a freshly linked inode. */
void smbfs_fill_entry(struct smbfs *fs, uint64_t nodeid, uint64_t st_ino,
                      const struct smb_attr *attr, struct fuse_entry_param *e);

/* Check a name from the kernel before it goes into a path: -ENAMETOOLONG, or
 * -EINVAL for a name the SMB path syntax cannot carry ('\\', unless the
 * SMB3 POSIX extensions are in use). */
int smbfs_check_name(const struct smbfs *fs, const char *name);

/* ops_node.c */
/* Names an unlinked-but-open file is moved to (".smbrdma-gone-...") until
 * its last handle closes; never listed. */
#define SMBFS_HIDDEN_PREFIX ".smbrdma-gone-"
static inline bool smbfs_is_hidden_name(const char *name)
{
	return strncmp(name, SMBFS_HIDDEN_PREFIX, sizeof(SMBFS_HIDDEN_PREFIX) - 1) == 0;
}
/* Does this mount hold nodeid open (a handle closing counts)?  With fid:
 * one of its handles whose FileId is still usable (not closing, not
 * failed: smb_file_failed()). */
bool smbfs_open_fid(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid *fid);
/* One of this mount's handles of nodeid opened for writing and still
 * usable (not closing, parked or failed): true, with its FileId in *fid. */
bool smbfs_writable_fid(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid *fid);
void smbfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
/* Drop n lookups of nodeid (a FORGET, or a lookup the kernel never saw);
 * an underflow is logged as a "BUG:" line (smb_inode_forget()). */
void smbfs_forget_count(struct smbfs *fs, uint64_t nodeid, uint64_t n);
void smbfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void smbfs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void smbfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void smbfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi);
void smbfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void smbfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void smbfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void smbfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                  const char *newname, unsigned int flags);
void smbfs_statfs(fuse_req_t req, fuse_ino_t ino);
/* Only on a noperm mount: the server is asked by opening with the access
 * the mask names. */
void smbfs_access(fuse_req_t req, fuse_ino_t ino, int mask);
/* FS_IOC_GETFLAGS/SETFLAGS (FS_COMPR_FL only, read-only) and FS_IOC_FSGETXATTR/
 * FSSETXATTR (all zero); else ENOTTY. */
void smbfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
                 struct fuse_file_info *fi, unsigned flags, const void *in_buf, size_t in_bufsz,
                 size_t out_bufsz);

/* ops_file.c */
void smbfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void smbfs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                  struct fuse_file_info *fi);
void smbfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void smbfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                 struct fuse_file_info *fi);
void smbfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void smbfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void smbfs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* A setattr of times only (futimens() after a write: tar, cp -p) on an
 * inode whose last write is still gathered, unsent (ops_file.c): the times
 * go with that write, in one round trip after it (smb_write_times()), and
 * true is returned; the caller answers the setattr at once.  A failure to
 * set them is reported like the write's own (on the next write, flush or
 * fsync).  false: nothing gathered (or too much), the caller goes on. */
bool smbfs_gather_times(struct smbfs *fs, uint64_t nodeid, const struct smb_setattr_args *times);
/* An op that must not overtake the WRITEs in flight on an inode (wb.h):
 * its arguments, copied, to run it again once there are none. */
enum smbfs_held_kind {
	SMBFS_HELD_READ,
	SMBFS_HELD_FLUSH,
	SMBFS_HELD_FSYNC,
	SMBFS_HELD_RELEASE,
	SMBFS_HELD_SETATTR,
	SMBFS_HELD_FALLOCATE,
	SMBFS_HELD_LSEEK,
	SMBFS_HELD_COPY,
	SMBFS_HELD_GETATTR, /* these three wait for closes (smbfs_hold_for_close()) */
	SMBFS_HELD_LOOKUP,
	SMBFS_HELD_OPENDIR,
};
struct smbfs_held {
	enum smbfs_held_kind op;
	fuse_req_t req;
	fuse_ino_t ino, ino2; /* ino2, fi2, off2: copy_file_range's destination */
	struct fuse_file_info fi, fi2;
	bool has_fi, has_fi2;
	size_t size;                   /* read, copy_file_range */
	off_t off, off2, len;          /* len: fallocate */
	int n;                         /* datasync, to_set, mode, whence or flags */
	struct stat st;                /* setattr */
	char name[SMBFS_NAME_MAX + 1]; /* lookup (ino: the parent) */
};
/* nodeid (0: any inode) has a CLOSE put off (smbfs_close_later()): keep a
 * copy of *a (as smbfs_hold_for_writes()) and run the op again once that
 * CLOSE is answered; true, and the caller returns.  Samba moves a file's
 * mtime to its last write only at its close (or 2 s after): a stat, a
 * setattr or a listing right after close(2) must not see the server before
 * it (make compares the times).  false: go on now. */
bool smbfs_hold_for_close(struct smbfs *fs, uint64_t nodeid, const struct smbfs_held *a,
                          const struct fuse_file_info *fi);
/* nodeid has WRITEs in flight: keep a copy of *a (with *fi as a->fi when fi
 * is not NULL) and run the op again (from the completion of the last, on
 * the loop thread) once it has none; true, and the caller returns.  false:
 * go on now. */
bool smbfs_hold_for_writes(struct smbfs *fs, uint64_t nodeid, const struct smbfs_held *a,
                           const struct fuse_file_info *fi);
/* Send the small writes gathered on nodeid's handles now (loop thread). */
void smbfs_send_gathered(struct smbfs *fs, uint64_t nodeid);
/* st_size no smaller than the writes the kernel was told are done (wb_end). */
void smbfs_wb_clamp_size(struct smbfs *fs, uint64_t nodeid, struct stat *st);

/* ops_link.c: symlinks (mfsymlinks), hard links, xattrs */
/* smb_stat() that reports an mfsymlink file as a symlink (attr->symlink,
 * end_of_file = the target's length); plain smb_stat() without mfsymlinks. */
int smbfs_stat(struct smbfs *fs, const char *path, smb_attr_cb cb, void *arg);
/* Could a (regular, 1067-byte) file with these attributes be an
 * mfsymlink?  Only when the mount has mfsymlinks. */
bool smbfs_may_be_symlink(const struct smbfs *fs, const struct smb_attr *a);
/* Is there more to a file with these attributes (from a listing) than they
 * say, so that only a LOOKUP (smbfs_stat) describes it: a possible
 * mfsymlink, or under the SMB3 POSIX extensions a device node, whose
 * numbers Samba gives in its reparse point only. */
bool smbfs_needs_lookup(const struct smbfs *fs, const struct smb_attr *a);
void smbfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void smbfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void smbfs_readlink(fuse_req_t req, fuse_ino_t ino);
void smbfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void smbfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                    size_t size, int flags);
void smbfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void smbfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void smbfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* cache.c: what the kernel may cache, from the server's leases and oplocks */
/* smb_break_cb of the engine (smb_client_set_break_cb). */
void smbfs_on_break(void *arg, struct smb2_fileid fid, uint8_t level);
/* smb_lease_break_cb of the engine (smb_client_set_lease_break_cb). */
void smbfs_on_lease_break(void *arg, uint64_t lease_id, uint32_t old_state, uint32_t new_state,
                          struct smb_lease_ack *ack);
/* The lease_id to open nodeid with: the key it was made with
 * (smb_inode_lease_key()), else nodeid; 0: a new file, not known yet: a
 * fresh id.  Also what an open in a directory names as its parent's. */
uint64_t smbfs_lease_id(struct smbfs *fs, uint64_t nodeid);
/* The lease key of directory parent, for an open in it to name as its
 * parent's (ParentLeaseKey); 0 for 0 (no parent known). */
static inline uint64_t smbfs_parent_lease_id(struct smbfs *fs, uint64_t parent)
{
	return parent ? smbfs_lease_id(fs, parent) : 0;
}
/* f was just opened (and tracked) with attr: record its lease, which is the
 * state of every handle sharing it.  Returns whether its data may be
 * cached (cache=strict: a lease with R, or an oplock), and sets *keep when
 * the pages cached before may be kept (another handle held R all along). */
bool smbfs_lease_open(struct smbfs *fs, struct smbfs_file *f, const struct smb_attr *attr,
                      bool *keep);
/* The attribute (and entry) timeout to give the kernel for nodeid: the
 * mount's, or 0 while one of its handles holds no oplock. */
double smbfs_attr_timeout(struct smbfs *fs, uint64_t nodeid);
/* Teardown, after smb_client_destroy(): let the invalidation threads end. */
void smbfs_wait_notifiers(struct smbfs *fs);

/* ops_lock.c: flock(2) through SMB2 LOCK on a byte past any data */
void smbfs_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);
/* POSIX (fcntl) locks across clients (ops_lock.c; not used with nobrl). */
void smbfs_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock);
void smbfs_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
                 int sleep);
/* smb_lock_lost_cb of the engine (smb_client_set_lock_lost_cb; channel
 * manager thread): a flock or fcntl lock not taken again after a
 * reconnect; logs the file and the range as the holder knows them. */
void smbfs_on_lock_lost(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                        uint64_t len, bool exclusive, uint32_t status);
/* flush: drop fi->lock_owner's POSIX locks on ino (a close), then reply
 * err (0, or the error of a write answered early). */
void smbfs_plocks_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int err);
/* release of f: forget the locks taken through it (the server drops them). */
void smbfs_plocks_release(struct smbfs *fs, struct smbfs_file *f);
/* teardown: free what is left. */
void smbfs_plocks_free(struct smbfs *fs);

/* ops_range.c: server-side copy, fallocate, SEEK_DATA/SEEK_HOLE */
void smbfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                           struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
                           struct fuse_file_info *fi_out, size_t len, int flags);
void smbfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                     struct fuse_file_info *fi);
void smbfs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

/* ops_dir.c */
void smbfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void smbfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi);
void smbfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi);
void smbfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* Kept directory handles (handlecache): close those of nodeid (0: all),
 * then call then(arg) on the loop thread once their CLOSEs completed;
 * true, and the caller waits for it.  false: none was kept, go on now.
 * rmdir and a directory's rename call it first (the server keeps a
 * directory with an open handle, and refuses to move one with open
 * handles under it).  then NULL: close them, wait for nothing (false). */
bool smbfs_dirs_unpark(struct smbfs *fs, uint64_t nodeid, void (*then)(void *arg), void *arg);
/* Our own mkdir opened the new directory nodeid (fid, under the lease
 * lease_id with the state in attr): keep the handle (as a released one,
 * handlecache) while the lease holds R and H, the directory known whole
 * and empty, so that LOOKUPs of the names to be made in it need no round
 * trip (smbfs_dir_lacks()).  true: the handle is taken care of (kept, or
 * closed); false: not taken (no such lease), the caller closes fid. */
bool smbfs_dir_keep_made(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid fid,
                         uint64_t lease_id, const struct smb_attr *attr);
/* smbfs_stat() of the share's root that, where the server leases
 * directories and handlecache is on, opens the root under a lease and
 * keeps the handle (as a released one), so that its attributes and its
 * names need no round trip while the lease holds.  Loop thread. */
int smbfs_stat_root(struct smbfs *fs, smb_attr_cb cb, void *arg);
/* Is name surely not in directory nodeid?  true when a handle of it (open
 * or kept) holds its whole listing under a lease unbroken since the open,
 * and the listing, with what this mount made in it since, lacks the name
 * (dir_names.h dir_fold_set: without regard to case; plain names only).
 * A LOOKUP is then answered ENOENT with no round trip.  Loop thread. */
bool smbfs_dir_lacks(struct smbfs *fs, uint64_t nodeid, const char *name);
/* This mount made (or may have made) name in directory nodeid: every
 * listing of it kept takes the name.  Called by create, mkdir, mknod,
 * symlink, link and rename whether they succeeded or not.  Loop thread. */
void smbfs_dir_known_add(struct smbfs *fs, uint64_t nodeid, const char *name);
/* A break took R or H from a lease: close the kept handles that no longer
 * hold both (any thread; the work is posted to the loop thread). */
void smbfs_dirs_lease_lost(struct smbfs *fs);
/* Is nodeid a directory that a handle of ours (open or kept) holds under a
 * lease with R and H, unbroken since the handle was opened?  Then
 * *since_ns is when (the earliest such open): what was stored of it and
 * of its names since is still what the server has. */
bool smbfs_dir_leased(struct smbfs *fs, uint64_t nodeid, uint64_t *since_ns);
/* Replies 0 at once: every directory change was complete at the server
 * when its op was answered. */
void smbfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

#endif
