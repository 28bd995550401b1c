/* fuse/ops_dir.c — directory handles: opendir, readdir, readdirplus,
 * releasedir, fsyncdir.
 *
 * A handle buffers the entries fetched with smb_readdir() and serves them by
 * offset: entry i has offset i + 1, entries 0 and 1 are "." and ".." made up
 * here (the server's own are dropped).  A readdir asking past the buffer
 * waits on the handle until the next QUERY_DIRECTORY reply arrives; one
 * fetch is in flight at a time.  readdir at offset 0 after entries were
 * served (rewinddir) starts the listing over.
 *
 * Names from the server are hostile (dir_names.h): an entry the kernel
 * would choke on, or that names nothing a lookup could reach, or a second
 * entry of one name, is dropped before it is buffered, so it is never
 * linked (no nlookup to leak) nor served; each listing logs its drops in
 * one line, and such lines are rate-limited.  A listing fails with EFBIG
 * past DIR_LISTING_MAX_ENTRIES entries from the server, and with EIO after
 * MAX_EMPTY_REPLIES replies in a row that brought nothing new.
 *
 * Lock: smbfs_dir.lock guards the fields marked below; it is held while
 * readdirplus links inodes (inode table lock nests inside) and never while
 * replying or calling the engine.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/evloop.h"
#include "common/log.h"
#include "fuse/dir_names.h"
#include "client/proto/smb2_errno.h"

_Static_assert(DIR_NAME_MAX == SMBFS_NAME_MAX, "a listed name must be one a lookup takes");

/* Give up on a server that keeps answering "success" with no new entry
 * (none at all, or the same ones again). */
#define MAX_EMPTY_REPLIES 64

/* Lines about dropped names, and about listings over the cap: at most
 * LOG_BURST of each kind a minute, for a server that does it in every
 * directory of a tree being walked. */
#define LOG_WINDOW_NS (60 * UINT64_C(1000000000))
#define LOG_BURST     10
static pthread_mutex_t log_limit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dir_log_limit drops_limit, cap_limit; /* guarded by log_limit_lock */

struct dir_entry {
	char *name;
	struct smb_attr attr;
};

struct dir_waiter {
	fuse_req_t req;
	size_t size;
	off_t off;
	bool plus;
	struct dir_waiter *next;
};

struct smbfs_dir {
	struct smbfs_file file; /* first: fi->fh points here */
	struct smbfs *fs;
	pthread_mutex_t lock;
	/* guarded by lock: */
	struct dir_entry *ents;
	size_t count, cap;
	bool eof;               /* the server said STATUS_NO_MORE_FILES */
	int err;                /* sticky errno of a failed fetch */
	bool fetching;          /* a smb_readdir() is in flight */
	bool restart;           /* the next fetch restarts the scan */
	bool served;            /* some entry was handed out since the (re)start */
	unsigned empty_replies; /* replies in a row that brought nothing new */
	/* of this listing (since the (re)start): */
	unsigned seen;             /* entries the server sent, dropped ones included */
	unsigned server_dots;      /* 1: its "." came, 2: its ".." came */
	struct dir_name_set names; /* of ents[2..count), for duplicates */
	/* The directory's names, folded, once the listing reached its end
	 * (whole), with those this mount made in it since (also before:
	 * smbfs_dir_known_add()); what smbfs_dir_lacks() answers from. */
	bool whole;
	struct dir_fold_set known;
	/* Kept from our own mkdir (smbfs_dir_keep_made()): whole and empty
	 * then, but its listing is never served (what we made in it since
	 * is in known only); an opendir closes it and lists afresh. */
	bool made;
	struct dir_drops drops; /* not logged yet */
	struct dir_waiter *waiters, **waiters_tail;
};

static int dir_add(struct smbfs_dir *d, const char *name, const struct smb_attr *attr)
{
	if (d->count == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct dir_entry *ents = realloc(d->ents, cap * sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		d->ents = ents;
		d->cap = cap;
	}
	d->ents[d->count].name = strdup(name);
	if (!d->ents[d->count].name)
		return -ENOMEM;
	d->ents[d->count].attr = *attr;
	d->count++;
	return 0;
}

/* Drop everything after "." and ".." (the name set points into it). */
static void dir_truncate(struct smbfs_dir *d)
{
	dir_name_set_free(&d->names);
	d->whole = false;
	dir_fold_free(&d->known);
	while (d->count > 2)
		free(d->ents[--d->count].name);
}

static bool log_allowed(struct dir_log_limit *l, unsigned *suppressed)
{
	pthread_mutex_lock(&log_limit_lock);
	bool ok = dir_log_allow(l, smbfs_now_ns(), LOG_WINDOW_NS, LOG_BURST, suppressed);
	pthread_mutex_unlock(&log_limit_lock);
	return ok;
}

/* The directory's path inside the share ("/a/b"), for a log line, or NULL. */
static char *dir_path(struct smbfs_dir *d)
{
	char *path = NULL, *out;
	if (smb_inode_path(d->fs->inodes, d->file.nodeid, NULL, &path) < 0)
		return NULL;
	out = malloc(strlen(path) + 2);
	if (out) {
		out[0] = '/';
		strcpy(out + 1, path);
	}
	free(path);
	return out;
}

/* Under the lock: take the listing's drops out, as one line's worth of
 * text (line[0] is '\0' when there were none). */
static void drops_take(struct smbfs_dir *d, char *line, size_t cap)
{
	line[0] = '\0';
	if (d->drops.total)
		dir_drops_format(&d->drops, line, cap);
	d->drops = (struct dir_drops){0};
}

/* Not under the lock: log what drops_take() took, if anything. */
static void drops_log(struct smbfs_dir *d, const char *line)
{
	unsigned suppressed;
	if (!line[0] || !log_allowed(&drops_limit, &suppressed))
		return;
	char *path = dir_path(d);
	smb_warn("%s: dropped from the listing of \"%s\" as the server sent them: %s%s",
	         d->fs->source, path ? path : "?", line,
	         suppressed ? " (lines like this for other listings were left out)" : "");
	free(path);
}

static void dir_destroy(struct smbfs_file *f)
{
	struct smbfs_dir *d = (struct smbfs_dir *)f;
	char line[768];

	/* A listing left before its end still says what it dropped. */
	drops_take(d, line, sizeof(line));
	drops_log(d, line);
	dir_name_set_free(&d->names);
	dir_fold_free(&d->known);
	while (d->count)
		free(d->ents[--d->count].name);
	free(d->ents);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static bool is_dot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Buffer one entry from the server, or drop it.  Returns 1 if the entry was
 * new to this listing (buffered, or dropped for its name or as hidden), 0
 * for one it had already seen (dropped, noted), -ENOMEM. */
static int dir_take(struct smbfs_dir *d, const struct smb_dirent *ent)
{
	const char *name = ent->name;
	enum dir_name_verdict v = d->fs->posix ? dir_name_check_posix(name) : dir_name_check(name);

	if (v == DIR_NAME_OK && is_dot(name)) {
		/* The server's own "." and "..": ours stand in for them. */
		unsigned bit = name[1] ? 2 : 1;
		if (!(d->server_dots & bit)) {
			d->server_dots |= bit;
			return 0;
		}
		v = DIR_NAME_DOT;
	} else if (v == DIR_NAME_OK && dir_name_set_has(&d->names, name)) {
		v = DIR_NAME_DUPLICATE;
	}
	if (v != DIR_NAME_OK) {
		dir_drops_note(&d->drops, name, v);
		return v != DIR_NAME_DOT && v != DIR_NAME_DUPLICATE;
	}
	if (smbfs_is_hidden_name(name))
		return 1;
	if (dir_add(d, name, &ent->attr) < 0)
		return -ENOMEM;
	if (dir_name_set_add(&d->names, d->ents[d->count - 1].name) < 0) {
		free(d->ents[--d->count].name);
		return -ENOMEM;
	}
	return 1;
}

/* ---- serving entries --------------------------------------------------------- */

struct linked {
	uint64_t *ids;
	size_t n, cap;
};

static bool linked_push(struct linked *l, uint64_t nodeid)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		uint64_t *ids = realloc(l->ids, cap * sizeof(*ids));
		if (!ids)
			return false;
		l->ids = ids;
		l->cap = cap;
	}
	l->ids[l->n++] = nodeid;
	return true;
}

/* A listing carries no link count (smb_attr nlink 0, "unknown"): an entry
 * whose inode the table knows gets the count it knew, not a 1 that would
 * overwrite the kernel's (a file with two names). */
static void fill_listed(struct smbfs *fs, uint64_t nodeid, uint64_t st_ino,
                        const struct smb_attr *listed, struct fuse_entry_param *e)
{
	struct smb_attr a = *listed, known;
	uint64_t known_ino;
	bool fresh;

	if (!a.nlink &&
	    smb_inode_get_attr(fs->inodes, nodeid, smbfs_now_ns(), &known, &fresh, &known_ino) == 0)
		a.nlink = known.nlink;
	smbfs_fill_entry(fs, nodeid, st_ino, &a, e);
}

/* Reply to one readdir/readdirplus from the buffer.  Called without the
 * lock; the caller knows off < count, or eof, or err. */
static void dir_serve(struct smbfs_dir *d, fuse_req_t req, size_t size, off_t off, bool plus)
{
	struct smbfs *fs = d->fs;
	struct linked linked = {0};
	size_t pos = 0;
	char *buf;
	int err = 0;

	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&d->lock);
	d->served = true;
	if ((size_t)off >= d->count && !d->eof)
		err = d->err ? d->err : EIO;
	uint64_t dir_ino = smb_inode_st_ino(fs->inodes, d->file.nodeid);
	for (size_t i = (size_t)off; i < d->count && !err; i++) {
		const struct dir_entry *ent = &d->ents[i];
		size_t room = size - pos, used;
		struct fuse_entry_param e;
		uint64_t st_ino = ent->attr.file_id;

		if (i < 2)
			st_ino = dir_ino;
		else if (!st_ino)
			st_ino = smb_inode_find(fs->inodes, d->file.nodeid, ent->name);
		if (!st_ino)
			st_ino = UINT64_MAX - i; /* server gave no id; stable per listing */
		memset(&e, 0, sizeof(e));
		smb_attr_to_stat(&ent->attr, &fs->policy, st_ino, &e.attr);
		/* A possible mfsymlink (or a POSIX device node) gets no type
		 * (DT_UNKNOWN): the caller asks, and the LOOKUP reads the file. */
		if (i >= 2 && smbfs_needs_lookup(fs, &ent->attr))
			e.attr.st_mode &= ~(mode_t)S_IFMT;
		if (!plus) {
			used = fuse_add_direntry(req, buf + pos, room, ent->name, &e.attr,
			                         (off_t)i + 1);
			if (used > room)
				break;
			pos += used;
			continue;
		}
		/* Size first: an entry we link must reach the kernel. */
		if (fuse_add_direntry_plus(req, NULL, 0, ent->name, NULL, 0) > room)
			break;
		/* A possible mfsymlink (or a POSIX device node) is checked by
		 * the LOOKUP the kernel sends for an entry without attributes. */
		if (i >= 2 && !smbfs_needs_lookup(fs, &ent->attr)) {
			uint64_t nodeid;
			/* On failure e.ino stays 0: the kernel then takes the
			 * name without attributes and counts no lookup. */
			if (smb_inode_link(fs->inodes, d->file.nodeid, ent->name, &ent->attr,
			                   smbfs_now_ns(), &nodeid, &st_ino) == 0) {
				if (linked_push(&linked, nodeid))
					fill_listed(fs, nodeid, st_ino, &ent->attr, &e);
				else
					smbfs_forget_count(fs, nodeid, 1);
			}
		}
		pos += fuse_add_direntry_plus(req, buf + pos, room, ent->name, &e, (off_t)i + 1);
	}
	pthread_mutex_unlock(&d->lock);
	if (err) {
		fuse_reply_err(req, err);
	} else if (fuse_reply_buf(req, buf, pos) < 0) {
		/* Interrupted (-ENOENT), or a reply the kernel refused: it
		 * linked none of these entries. */
		for (size_t i = 0; i < linked.n; i++)
			smbfs_forget_count(fs, linked.ids[i], 1);
	}
	free(linked.ids);
	free(buf);
}

/* ---- fetching ---------------------------------------------------------------- */

static void dir_fetch(struct smbfs_dir *d);

static void fetch_done(void *arg, int err, uint32_t status, const struct smb_dirent *ents,
                       size_t count)
{
	struct smbfs_dir *d = arg;
	struct dir_waiter *ready = NULL, **ready_tail = &ready, *w, **pp;
	bool more, no_progress = false, too_big = false;
	char drops[768] = "";
	int e = smb_errno(err, status);

	pthread_mutex_lock(&d->lock);
	if (err == 0 && status == STATUS_NO_MORE_FILES) {
		d->eof = true;
		/* the whole listing since the open, or since its restart */
		d->whole = !d->err;
		for (size_t i = 2; i < d->count && d->whole; i++)
			d->whole = dir_fold_add(&d->known, d->ents[i].name) == 0;
	} else if (e) {
		d->err = e;
	} else {
		bool progress = false;
		for (size_t i = 0; i < count && !d->err; i++) {
			if (++d->seen > DIR_LISTING_MAX_ENTRIES) {
				/* Fail it, and give its memory back now. */
				too_big = true;
				d->err = EFBIG;
				dir_truncate(d);
				break;
			}
			int rc = dir_take(d, &ents[i]);
			if (rc < 0)
				d->err = ENOMEM;
			progress |= rc > 0;
		}
		d->empty_replies = progress ? 0 : d->empty_replies + 1;
		if (!d->err && d->empty_replies >= MAX_EMPTY_REPLIES) {
			no_progress = true;
			d->err = EIO;
		}
	}
	if (d->eof || d->err)
		drops_take(d, drops, sizeof(drops));
	/* Take out every waiter the buffer can answer now. */
	for (pp = &d->waiters; (w = *pp);) {
		if ((size_t)w->off < d->count || d->eof || d->err) {
			*pp = w->next;
			w->next = NULL;
			*ready_tail = w;
			ready_tail = &w->next;
		} else {
			pp = &w->next;
		}
	}
	d->waiters_tail = pp;
	more = d->waiters != NULL;
	d->fetching = more;
	pthread_mutex_unlock(&d->lock);

	drops_log(d, drops);
	if (no_progress)
		smb_warn("%s: directory listing makes no progress (%d replies in a row with no "
		         "new entry); failing it with EIO",
		         d->fs->source, MAX_EMPTY_REPLIES);
	unsigned suppressed;
	if (too_big && log_allowed(&cap_limit, &suppressed)) {
		char *path = dir_path(d);
		smb_warn("%s: the server's listing of \"%s\" goes past %u entries; failing it with "
		         "EFBIG%s",
		         d->fs->source, path ? path : "?", DIR_LISTING_MAX_ENTRIES,
		         suppressed ? " (lines like this for other listings were left out)" : "");
		free(path);
	}
	while ((w = ready)) {
		ready = w->next;
		dir_serve(d, w->req, w->size, w->off, w->plus);
		free(w);
	}
	if (more)
		dir_fetch(d);
}

static void dir_fetch(struct smbfs_dir *d)
{
	bool restart;
	int rc;

	pthread_mutex_lock(&d->lock);
	restart = d->restart;
	d->restart = false;
	pthread_mutex_unlock(&d->lock);
	rc = smb_readdir(d->fs->client, d->file.fid, restart, fetch_done, d);

	if (rc < 0)
		fetch_done(d, rc, 0, NULL, 0);
}

static void readdir_common(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
                           bool plus)
{
	struct smbfs_dir *d = (struct smbfs_dir *)smbfs_file_of(fi);
	struct dir_waiter *w;
	bool start;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	pthread_mutex_lock(&d->lock);
	char drops[768] = "";
	if (off == 0 && d->served && !d->fetching) {
		/* rewinddir(): list afresh. */
		dir_truncate(d);
		drops_take(d, drops, sizeof(drops));
		d->eof = false;
		d->err = 0;
		d->served = false;
		d->empty_replies = 0;
		d->seen = 0;
		d->server_dots = 0;
		d->restart = true;
	}
	/* Not "." and ".." alone before anything came from the server: the
	 * kernel's first READDIRPLUS decides whether the rest of the listing
	 * comes with attributes (FUSE_CAP_READDIRPLUS_AUTO), and a reply of
	 * two made-up entries makes it list the rest without, then LOOKUP
	 * each name (ls -l: one request per file). */
	bool dots_only = d->count <= 2 && !d->seen;
	if (((size_t)off < d->count && !dots_only) || d->eof || d->err) {
		pthread_mutex_unlock(&d->lock);
		drops_log(d, drops);
		dir_serve(d, req, size, off, plus);
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&d->lock);
		drops_log(d, drops);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	w->req = req;
	w->size = size;
	w->off = off;
	w->plus = plus;
	*d->waiters_tail = w;
	d->waiters_tail = &w->next;
	start = !d->fetching;
	d->fetching = true;
	pthread_mutex_unlock(&d->lock);
	drops_log(d, drops);
	if (start)
		dir_fetch(d);
}

void smbfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
	readdir_common(req, size, off, fi, false);
}

void smbfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	readdir_common(req, size, off, fi, true);
}

/* ---- opendir, releasedir ----------------------------------------------------- */

struct opendir_ctx {
	fuse_req_t req;
	struct smbfs *fs;
	uint64_t nodeid;
	uint64_t lease_id; /* asked for (smbfs_lease_id()) */
	struct fuse_file_info fi;
};

static void parent_lease_take(struct smbfs *fs, uint64_t child, const struct smb_attr *attr);

static void opendir_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                         const struct smb_attr *attr)
{
	struct opendir_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	fuse_req_t req = ctx->req;
	struct smbfs_dir *d = NULL;
	struct smb_attr dotdot = {.file_attributes = FILE_ATTRIBUTE_DIRECTORY};
	int e = smb_errno(err, status);

	if (e == 0) {
		d = calloc(1, sizeof(*d));
		if (d) {
			d->file.fid = fid;
			d->file.nodeid = ctx->nodeid;
			d->file.lease_id = ctx->lease_id;
			d->file.destroy = dir_destroy;
			d->fs = fs;
			pthread_mutex_init(&d->lock, NULL);
			d->waiters_tail = &d->waiters;
			d->file.opened_ns = smbfs_now_ns();
			smbfs_track_handle(fs, &d->file);
			smb_inode_set_attr(fs->inodes, ctx->nodeid, attr, smbfs_now_ns());
			if (dir_add(d, ".", attr) < 0 || dir_add(d, "..", &dotdot) < 0)
				e = ENOMEM;
		} else {
			e = ENOMEM;
		}
		if (e) {
			if (d)
				smbfs_close_handle(fs, &d->file);
			else
				smb_warn("%s: out of memory; a directory handle leaks", fs->source);
		}
	}
	if (e) {
		free(ctx);
		fuse_reply_err(req, e);
		return;
	}
	ctx->fi.fh = (uint64_t)(uintptr_t)&d->file;
	/* Under a directory lease with R the kernel may keep the listing
	 * (cache.c: a break drops it). */
	bool keep = false;
	ctx->fi.cache_readdir = attr->oplock == SMB2_OPLOCK_LEVEL_LEASE &&
	                        smbfs_lease_open(fs, &d->file, attr, &keep) && !fs->direct_io;
	ctx->fi.keep_cache = ctx->fi.cache_readdir && keep;
	if (fuse_reply_open(req, &ctx->fi) == -ENOENT)
		smbfs_close_handle(fs, &d->file);
	else if (ctx->fi.cache_readdir)
		parent_lease_take(fs, ctx->nodeid, attr);
	free(ctx);
}

/* ---- kept handles (handlecache) ----------------------------------------------- *
 *
 * cifs.ko keeps a directory's handle open under its directory lease and
 * serves the next open from it; so do we.  On releasedir a handle whose
 * lease still holds R and H since it was opened (not "uncached": no break
 * took R) is parked instead of closed (unless another handle of the directory is
 * still open: one per directory), at most
 * fs->max_cached_dirs, for DIR_CACHE_MS (cifs.ko's dir_cache_timeout).
 * The next opendir of the directory takes it back without a CREATE, and
 * tells the kernel to keep the listing it cached (the lease was held all
 * along, so no other client changed the directory; the kernel drops the
 * listing itself when this mount changes it, and this mount's creates and
 * unlinks name the lease as their parent's, so that Samba does not break
 * it for them: ParentLeaseKey).  A parked handle is closed
 * when its time is up, when a break takes R or H (smbfs_dirs_lease_lost),
 * to make room for a newer one, and before rmdir or a directory's rename
 * (smbfs_dirs_unpark).  Parking, taking back and closing happen on the
 * loop thread; `parked` is read under handles_lock by other threads. */
#define DIR_CACHE_MS 30000

/* Under handles_lock: may f be kept, or taken back, for its lease? */
static bool lease_current(const struct smbfs_file *f)
{
	uint32_t rh = SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING;
	return (f->lease & rh) == rh && !f->uncached && !f->closing && !f->lease_lost;
}

static bool lease_current_now(struct smbfs *fs, const struct smbfs_file *f)
{
	pthread_mutex_lock(&fs->handles_lock);
	bool ok = lease_current(f);
	pthread_mutex_unlock(&fs->handles_lock);
	return ok;
}

/* Under handles_lock: f leaves the parked set (it was in it). */
static void unpark_locked(struct smbfs *fs, struct smbfs_file *f)
{
	f->parked = false;
	fs->parked_dirs--;
}

/* Loop thread: f's park timer will not fire. */
static void stop_park_timer(struct smbfs_file *f)
{
	if (f->park_timer)
		ev_timer_cancel(f->park_timer);
	f->park_timer = NULL;
}

/* Loop thread, f already unparked: stop its timer and close it. */
static void close_unparked(struct smbfs *fs, struct smbfs_file *f)
{
	stop_park_timer(f);
	smbfs_close_handle(fs, f);
}

static void park_expired(void *arg)
{
	struct smbfs_file *f = arg;
	struct smbfs *fs = f->fs;
	bool expired;

	f->park_timer = NULL; /* fired: freed by the loop */
	pthread_mutex_lock(&fs->handles_lock);
	expired = f->parked;
	if (expired)
		unpark_locked(fs, f);
	pthread_mutex_unlock(&fs->handles_lock);
	if (expired)
		smbfs_close_handle(fs, f);
}

/* releasedir: keep d instead of closing it?  true: kept (the caller
 * answers the release). */
static bool dir_park(struct smbfs *fs, struct smbfs_dir *d)
{
	struct smbfs_file *f = &d->file, *victim = NULL;
	bool ok;

	if (!fs->max_cached_dirs || !fs->client)
		return false;
	pthread_mutex_lock(&d->lock);
	ok = !d->fetching && !d->waiters && !d->err;
	pthread_mutex_unlock(&d->lock);
	if (!ok || ev_timer_add(smb_client_loop(fs->client), DIR_CACHE_MS, park_expired, f,
	                        &f->park_timer) < 0)
		return false;
	pthread_mutex_lock(&fs->handles_lock);
	ok = lease_current(f);
	/* one handle per directory: not while another is open (it holds
	 * the lease; it may be kept when it is released) */
	for (struct smbfs_file *o = fs->handles; o && ok; o = o->next) {
		ok = o == f || o->nodeid != f->nodeid || o->closing;
		if (o->parked && (!victim || o->parked_ns < victim->parked_ns))
			victim = o;
	}
	if (ok) {
		if (fs->parked_dirs < fs->max_cached_dirs)
			victim = NULL;
		else
			unpark_locked(fs, victim); /* the oldest makes room */
		f->parked = true;
		f->parked_ns = smbfs_now_ns();
		fs->parked_dirs++;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	if (!ok) {
		stop_park_timer(f);
		return false;
	}
	if (victim)
		close_unparked(fs, victim);
	return true;
}

/* opendir: the handle parked for nodeid, taken back, if its lease is
 * still whole; NULL otherwise. */
static struct smbfs_dir *dir_unpark(struct smbfs *fs, uint64_t nodeid)
{
	struct smbfs_file *f = NULL;

	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *o = fs->handles; o && !f; o = o->next)
		if (o->parked && o->nodeid == nodeid &&
		    (lease_current(o) || ((struct smbfs_dir *)o)->made))
			f = o;
	if (f)
		unpark_locked(fs, f);
	pthread_mutex_unlock(&fs->handles_lock);
	if (f)
		stop_park_timer(f);
	if (f && (((struct smbfs_dir *)f)->made || !lease_current_now(fs, f))) {
		/* no listing to serve: the opendir lists afresh */
		smbfs_close_handle(fs, f);
		f = NULL;
	}
	return (struct smbfs_dir *)f;
}

/* Park a handle opened under a lease with R and H (opened_ns: when the
 * open was sent, or earlier); made: by our mkdir, so whole and empty. */
static bool dir_keep(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid fid, uint64_t lease_id,
                     const struct smb_attr *attr, bool made, uint64_t opened_ns)
{
	uint32_t rh = SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING;
	if (attr->oplock != SMB2_OPLOCK_LEVEL_LEASE || (attr->lease & rh) != rh)
		return false;
	struct smbfs_dir *d = calloc(1, sizeof(*d));
	struct smb_attr dotdot = {.file_attributes = FILE_ATTRIBUTE_DIRECTORY};
	if (!d)
		return false;
	d->file.fid = fid;
	d->file.nodeid = nodeid;
	d->file.lease_id = lease_id;
	d->file.destroy = dir_destroy;
	d->fs = fs;
	pthread_mutex_init(&d->lock, NULL);
	d->waiters_tail = &d->waiters;
	d->file.opened_ns = opened_ns;
	d->eof = made;
	d->whole = made; /* made empty under the lease granted with it */
	d->made = made;
	/* the next opendir serves a kept handle's listing from the top */
	if (!made && (dir_add(d, ".", attr) < 0 || dir_add(d, "..", &dotdot) < 0)) {
		dir_destroy(&d->file);
		return false;
	}
	smbfs_track_handle(fs, &d->file);
	bool keep;
	smbfs_lease_open(fs, &d->file, attr, &keep);
	if (!dir_park(fs, d)) {
		smbfs_close_handle(fs, &d->file);
		/* closed and freed, but the caller must not close fid again */
	}
	return true;
}

bool smbfs_dir_keep_made(struct smbfs *fs, uint64_t nodeid, struct smb2_fileid fid,
                         uint64_t lease_id, const struct smb_attr *attr)
{
	return dir_keep(fs, nodeid, fid, lease_id, attr, true, smbfs_now_ns());
}

/* ---- the share's root, kept ---------------------------------------------------
 *
 * Nothing opendirs the root when a user works below it (ls -lR $M/tree),
 * yet the kernel asks for its attributes and looks its names up again
 * every actimeo.  Like cifs.ko's cached root handle, a stat of the root
 * opens it under a lease (CREATE + QUERY_INFO, the cost of the stat by
 * path it replaces) and parks that handle: the root's attributes and the
 * names in it are then answered from the inode table while the lease
 * holds (smbfs_dir_leased()). */

/* May a directory be opened under a lease and kept here?  A mount that
 * keeps directories and caches, on a session with directory leases. */
static bool dirs_keepable(struct smbfs *fs)
{
	return fs->max_cached_dirs && fs->client && !fs->direct_io && fs->timeout > 0 &&
	       smb_client_leases_dirs(fs->client);
}

/* An open of directory nodeid for listing, under a lease keyed lease_id,
 * naming its parent's lease (ParentLeaseKey): ksmbd 7.3 breaks a
 * directory's lease at any v2-leased open below it that does not name it
 * (smb_send_parent_lease_break_noti), so a listing that went down the
 * tree broke each directory it had just read. */
static struct smb_open_args dir_open_args(struct smbfs *fs, uint64_t nodeid, uint64_t lease_id)
{
	return (struct smb_open_args){
	    .desired_access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
	    .share_access = FILE_SHARE_ALL,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_DIRECTORY_FILE,
	    .lease_id = lease_id,
	    .parent_lease_id =
	        nodeid == FUSE_ROOT_ID
	            ? 0
	            : smbfs_parent_lease_id(fs, smb_inode_parent(fs->inodes, nodeid)),
	};
}

struct root_ctx {
	struct smbfs *fs;
	uint64_t lease_id;
	uint64_t sent_ns;
	smb_attr_cb cb;
	void *arg;
};

static void root_opened(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                        const struct smb_attr *attr)
{
	struct root_ctx ctx = *(struct root_ctx *)arg;
	free(arg);
	if (!err && status == STATUS_SUCCESS) {
		/* the attributes first: stored after the lease began */
		smb_inode_set_attr(ctx.fs->inodes, FUSE_ROOT_ID, attr, smbfs_now_ns());
		bool kept =
		    dir_keep(ctx.fs, FUSE_ROOT_ID, fid, ctx.lease_id, attr, false, ctx.sent_ns);
		if (!kept)
			smbfs_close_fid(ctx.fs, fid);
		else
			smb_debug("%s: the root's handle is kept under its lease", ctx.fs->source);
	}
	ctx.cb(ctx.arg, err, status, attr);
}

int smbfs_stat_root(struct smbfs *fs, smb_attr_cb cb, void *arg)
{
	uint64_t since;
	if (!dirs_keepable(fs) || smbfs_dir_leased(fs, FUSE_ROOT_ID, &since))
		return smbfs_stat(fs, "", cb, arg);
	struct root_ctx *ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	*ctx = (struct root_ctx){.fs = fs,
	                         .lease_id = smbfs_lease_id(fs, FUSE_ROOT_ID),
	                         .sent_ns = smbfs_now_ns(),
	                         .cb = cb,
	                         .arg = arg};
	struct smb_open_args args = dir_open_args(fs, FUSE_ROOT_ID, ctx->lease_id);
	int rc = smb_open(fs->client, "", &args, root_opened, ctx);
	if (rc < 0)
		free(ctx);
	return rc;
}

/* ---- the parent of a listed directory, kept ----------------------------------
 *
 * ls -lR $M/src/tree lists tree and all below it under their leases, yet
 * nothing opendirs src: every actimeo the kernel looks tree up in src
 * again, a round trip each time.  So when a directory is listed under a
 * lease whose parent (not the root: smbfs_stat_root()) holds none, the
 * parent is opened under a lease, in the background, and parked like a
 * released handle (30 s, max_cached_dirs); then the listed directory is
 * asked for by its path again, so that its attributes, and with them its
 * name in the parent, are stored after the parent's lease began and its
 * lookup is answered from the table (smbfs_lookup()).  Two requests, once
 * per walked tree, on no one's way; one parent at a time
 * (fs->parent_leasing). */

struct parent_ctx {
	struct smbfs *fs;
	uint64_t parent, child;
	uint64_t lease_id;
	uint64_t sent_ns;
	uint64_t child_id; /* the child's file id when it was listed */
};

static void parent_done(struct parent_ctx *ctx)
{
	ctx->fs->parent_leasing = 0;
	free(ctx);
}

static void child_restated(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct parent_ctx *ctx = arg;
	/* Still the file it was (a directory made anew under the same name
	 * in between is another file: nothing stored, asked again). */
	if (!err && status == STATUS_SUCCESS && attr->file_id == ctx->child_id)
		smb_inode_set_attr(ctx->fs->inodes, ctx->child, attr, smbfs_now_ns());
	parent_done(ctx);
}

static void parent_opened(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                          const struct smb_attr *attr)
{
	struct parent_ctx *ctx = arg;
	struct smbfs *fs = ctx->fs;
	uint64_t since;
	char *path = NULL;

	if (err || status != STATUS_SUCCESS) {
		parent_done(ctx);
		return;
	}
	smb_inode_set_attr(fs->inodes, ctx->parent, attr, smbfs_now_ns());
	if (!dir_keep(fs, ctx->parent, fid, ctx->lease_id, attr, false, ctx->sent_ns))
		smbfs_close_fid(fs, fid);
	if (!smbfs_dir_leased(fs, ctx->parent, &since) ||
	    smb_inode_path(fs->inodes, ctx->child, NULL, &path) < 0 ||
	    smbfs_stat(fs, path, child_restated, ctx) < 0)
		parent_done(ctx);
	free(path);
}

/* Loop thread: child was opened for a listing under a lease with R. */
static void parent_lease_take(struct smbfs *fs, uint64_t child, const struct smb_attr *attr)
{
	uint64_t since, parent = smb_inode_parent(fs->inodes, child);
	char *path = NULL;

	if (!dirs_keepable(fs) || !attr->file_id || fs->parent_leasing || parent == 0 ||
	    parent == FUSE_ROOT_ID || smbfs_dir_leased(fs, parent, &since))
		return;
	struct parent_ctx *ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return;
	*ctx = (struct parent_ctx){.fs = fs,
	                           .parent = parent,
	                           .child = child,
	                           .lease_id = smbfs_lease_id(fs, parent),
	                           .sent_ns = smbfs_now_ns(),
	                           .child_id = attr->file_id};
	struct smb_open_args args = dir_open_args(fs, parent, ctx->lease_id);
	fs->parent_leasing = parent;
	if (smb_inode_path(fs->inodes, parent, NULL, &path) < 0 ||
	    smb_open(fs->client, path, &args, parent_opened, ctx) < 0)
		parent_done(ctx);
	free(path);
}

struct unpark_wait {
	unsigned left;
	void (*then)(void *arg);
	void *arg;
};

static void unpark_closed(void *arg)
{
	struct unpark_wait *w = arg;
	if (--w->left)
		return;
	void (*then)(void *) = w->then;
	void *then_arg = w->arg;
	free(w);
	then(then_arg);
}

/* Loop thread: unpark the handles that match (nodeid, or all with 0; or,
 * with lost, those whose lease is no longer current) into out[], at most
 * cap; returns how many. */
static size_t take_parked(struct smbfs *fs, uint64_t nodeid, bool lost, struct smbfs_file **out,
                          size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&fs->handles_lock);
	if (!fs->parked_dirs) {
		pthread_mutex_unlock(&fs->handles_lock);
		return 0;
	}
	for (struct smbfs_file *o = fs->handles; o && n < cap; o = o->next) {
		if (!o->parked || (nodeid && o->nodeid != nodeid) || (lost && lease_current(o)))
			continue;
		unpark_locked(fs, o);
		out[n++] = o;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return n;
}

bool smbfs_dirs_unpark(struct smbfs *fs, uint64_t nodeid, void (*then)(void *arg), void *arg)
{
	struct smbfs_file *batch[64];
	struct unpark_wait *w = NULL;
	size_t n;

	while ((n = take_parked(fs, nodeid, false, batch, 64)) > 0) {
		if (!then || (!w && !(w = calloc(1, sizeof(*w))))) {
			/* no memory to wait with: close them and go on */
			for (size_t i = 0; i < n; i++)
				close_unparked(fs, batch[i]);
			continue;
		}
		w->then = then;
		w->arg = arg;
		w->left += (unsigned)n;
		for (size_t i = 0; i < n; i++) {
			batch[i]->on_closed = unpark_closed;
			batch[i]->on_closed_arg = w;
		}
		/* +1 held until every CLOSE of this batch is sent: a CLOSE
		 * that fails at once completes before the next is sent */
		w->left++;
		for (size_t i = 0; i < n; i++)
			close_unparked(fs, batch[i]);
		w->left--;
		if (!w->left) { /* all done already: nothing to wait for */
			free(w);
			w = NULL;
			then(arg);
			return true;
		}
	}
	return w != NULL;
}

static void lease_lost_on_loop(void *arg)
{
	struct smbfs *fs = arg;
	struct smbfs_file *batch[64];
	size_t n;

	while ((n = take_parked(fs, 0, true, batch, 64)) > 0)
		for (size_t i = 0; i < n; i++)
			close_unparked(fs, batch[i]);
}

void smbfs_dirs_lease_lost(struct smbfs *fs)
{
	bool any;
	pthread_mutex_lock(&fs->handles_lock);
	any = fs->parked_dirs > 0;
	pthread_mutex_unlock(&fs->handles_lock);
	if (any && fs->client && ev_call(smb_client_loop(fs->client), lease_lost_on_loop, fs) < 0)
		smb_warn("%s: cannot close the directory handles a lease break left: they close "
		         "within %u s",
		         fs->source, DIR_CACHE_MS / 1000);
}

/* Loop thread: the directory handles of nodeid (open or kept) whose lease
 * holds R and H since their open, at most cap, into out[]. */
static size_t leased_dirs(struct smbfs *fs, uint64_t nodeid, struct smbfs_dir **out, size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && n < cap; f = f->next)
		if (f->nodeid == nodeid && f->destroy == dir_destroy && f->lease_id &&
		    lease_current(f))
			out[n++] = (struct smbfs_dir *)f;
	pthread_mutex_unlock(&fs->handles_lock);
	return n;
}

bool smbfs_dir_lacks(struct smbfs *fs, uint64_t nodeid, const char *name)
{
	struct smbfs_dir *dirs[4];
	bool lacks = false;

	if (!dir_fold_plain(name))
		return false;
	/* Handles are freed on this thread only: the ones found stay. */
	size_t n = leased_dirs(fs, nodeid, dirs, 4);
	for (size_t i = 0; i < n && !lacks; i++) {
		pthread_mutex_lock(&dirs[i]->lock);
		lacks = dirs[i]->whole && !dir_fold_may_have(&dirs[i]->known, name);
		pthread_mutex_unlock(&dirs[i]->lock);
	}
	return lacks;
}

void smbfs_dir_known_add(struct smbfs *fs, uint64_t nodeid, const char *name)
{
	struct smbfs_dir **dirs = NULL;
	size_t n = 0, cap = 0;

	if (fs->negc) /* name may be there now */
		negc_changed(fs->negc);

	/* Every handle of the directory, leased or not, takes the name: a
	 * set must hold every name (one that cannot take it, for lack of
	 * memory, answers nothing more).  Handles are freed on this thread
	 * only, so the ones found stay until the end. */
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->nodeid != nodeid || f->destroy != dir_destroy)
			continue;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 4;
			struct smbfs_dir **p = realloc(dirs, c * sizeof(*p));
			if (!p) {
				/* the rest keep no set at all */
				((struct smbfs_dir *)f)->file.lease_lost = true;
				continue;
			}
			dirs = p;
			cap = c;
		}
		dirs[n++] = (struct smbfs_dir *)f;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&dirs[i]->lock);
		if (dir_fold_add(&dirs[i]->known, name) < 0)
			dirs[i]->whole = false;
		pthread_mutex_unlock(&dirs[i]->lock);
	}
	free(dirs);
}

bool smbfs_dir_leased(struct smbfs *fs, uint64_t nodeid, uint64_t *since_ns)
{
	bool leased = false;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->nodeid != nodeid || !f->lease_id || f->destroy != dir_destroy ||
		    !lease_current(f))
			continue;
		if (!leased || f->opened_ns < *since_ns)
			*since_ns = f->opened_ns;
		leased = true;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return leased;
}

void smbfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct opendir_ctx *ctx;
	char *path = NULL;
	int rc;

	smbfs_post_init(fs);
	/* A listing from the server carries times, and a kept handle's goes
	 * to the server again at its rewind: after the CLOSEs put off (ls -l
	 * right after cp, make after an edit). */
	struct smbfs_held a = {.op = SMBFS_HELD_OPENDIR, .req = req, .ino = ino};
	if (smbfs_hold_for_close(fs, 0, &a, fi))
		return;
	struct smbfs_dir *kept = dir_unpark(fs, ino);
	if (kept) {
		/* Held under the lease all along: the kernel's listing is good. */
		fi->fh = (uint64_t)(uintptr_t)&kept->file;
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
		if (fuse_reply_open(req, fi) == -ENOENT && !dir_park(fs, kept))
			smbfs_close_handle(fs, &kept->file);
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
	ctx->nodeid = ino;
	ctx->fi = *fi;
	/* a directory lease where the server grants them (cache.c) */
	ctx->lease_id = smbfs_lease_id(fs, ino);
	struct smb_open_args args = dir_open_args(fs, ino, ctx->lease_id);
	rc = smb_open(fs->client, path, &args, opendir_done, ctx);
	free(path);
	if (rc < 0) {
		free(ctx);
		fuse_reply_err(req, -rc);
	}
}

void smbfs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct smbfs *fs = smbfs_of(req);
	struct smbfs_file *f = smbfs_file_of(fi);

	if (dir_park(fs, (struct smbfs_dir *)f)) {
		fuse_reply_err(req, 0);
		return;
	}
	f->release_req = req;
	smbfs_close_handle(fs, f);
}

/* Nothing to send: a directory changes on the server only through CREATE,
 * SET_INFO (rename, delete) and CLOSE requests, and each of them is done
 * and durable as far as the server will say by the time its reply came
 * back, which was before the op that made the change was answered.  SMB2
 * FLUSH is for file data (and Samba refuses it on a handle opened without
 * write access, as directory handles are).  Answering here rather than
 * leaving the op out saves the kernel one ENOSYS round trip. */
void smbfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}
