/* client/opens.c — the table of open handles, so they outlive a connection.
 *
 * Callers keep the FileId smb_open() gave them for the life of the handle.
 * After a reconnect the server knows the handle by another FileId (a
 * durable reconnect may keep it, a reopen by path does not); every request
 * is patched on its way out (smb_req_fix_fids) from the caller's FileId to
 * the current one.  Handles that could not be reopened are "lost": requests
 * on them fail with EIO, and closing them succeeds at once.
 *
 * Oplock breaks are acknowledged here (a lease break goes to lease.c): the
 * table keeps the level each handle holds, since a break from level II to
 * none must not be acknowledged.  A handle's lease (its lease_id in the
 * open args) is asked for again when it is reopened.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

#include "client/client.h"
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/conn.h"
#include "client/lease.h"
#include "client/opens.h"
#include "client/request.h"
#include "common/crypto.h"
#include "client/proto/smb2_fsctl.h"
#include "client/proto/smb2_lease.h"
#include "common/log.h"

#define OPENS_BUCKETS 256

struct smb_open_rec {
	struct smb2_fileid orig, cur;
	char *path;
	struct smb_open_args args;
	uint8_t create_guid[16];
	bool durable;
	bool lost;
	bool closing;    /* its CLOSE is sent (smb_opens_closing()), under the lock */
	uint64_t serial; /* smb_opens_serial(); under the lock */
	uint8_t oplock;  /* the level held now (SMB2_OPLOCK_LEVEL_*), under the lock */
	/* LockSequence buckets ([MS-SMB2] 3.2.4.19), durable handles only:
	 * bit i of lock_busy: bucket i+1 is in a LOCK not answered yet;
	 * lock_seq[i]: its LockSequenceNumber (4 bits).  Under the lock. */
	uint64_t lock_busy;
	uint8_t lock_seq[64];
	/* The byte-range locks the server holds for the handle (granted,
	 * not unlocked; smb_opens_locks_done()), taken again after a reopen
	 * by path; nlocks of them in locks[] (a talloc child).  locks_lost:
	 * one could not be, and every request but CLOSE fails with EIO.
	 * Under the lock. */
	struct smb2_lock_elem *locks;
	unsigned nlocks;
	bool locks_lost;
	struct smb_open_rec *next;
};

struct smb_opens {
	pthread_rwlock_t lock;
	struct smb_open_rec *b[OPENS_BUCKETS];
	unsigned n;
	unsigned closing;      /* records with closing set */
	bool moved;            /* some cur differs from orig: patching is needed */
	uint64_t last_serial;  /* the last serial given (smb_opens_serial()) */
	smb_break_cb on_break; /* smb_client_set_break_cb(); set before any open */
	void *on_break_arg;
	smb_lock_lost_cb on_lock_lost; /* smb_client_set_lock_lost_cb(); likewise */
	void *on_lock_lost_arg;
};

static unsigned bucket(struct smb2_fileid f)
{
	uint64_t h = (f.persistent ^ (f.volatile_ * 0x9e3779b97f4a7c15ull));
	return (unsigned)(h >> 56) % OPENS_BUCKETS;
}

static bool fid_eq(struct smb2_fileid a, struct smb2_fileid b)
{
	return a.persistent == b.persistent && a.volatile_ == b.volatile_;
}

static int opens_destructor(struct smb_opens *o)
{
	pthread_rwlock_destroy(&o->lock);
	return 0;
}

int smb_opens_init(struct smb_client *c)
{
	c->opens = talloc_zero(c, struct smb_opens);
	if (!c->opens)
		return -ENOMEM;
	pthread_rwlock_init(&c->opens->lock, NULL);
	talloc_set_destructor(c->opens, opens_destructor);
	return 0;
}

void smb_opens_new_guid(uint8_t guid[16])
{
	if (smb_random_bytes(guid, 16))
		memset(guid, 0, 16);
}

void smb_opens_add(struct smb_client *c, struct smb2_fileid fid, const char *path,
                   const struct smb_open_args *args, const uint8_t create_guid[16], bool durable)
{
	struct smb_opens *o = c->opens;
	struct smb_open_rec *r = talloc_zero(o, struct smb_open_rec);
	if (!r || !(r->path = talloc_strdup(r, path))) {
		talloc_free(r);
		smb_warn("%s: out of memory: the open of %s will not survive a reconnect", c->host,
		         path);
		return;
	}
	r->orig = r->cur = fid;
	r->args = *args;
	memcpy(r->create_guid, create_guid, 16);
	r->durable = durable;
	pthread_rwlock_wrlock(&o->lock);
	r->serial = ++o->last_serial;
	unsigned k = bucket(fid);
	r->next = o->b[k];
	o->b[k] = r;
	o->n++;
	pthread_rwlock_unlock(&o->lock);
}

void smb_opens_remove(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_opens *o = c->opens;
	struct smb_open_rec *gone = NULL;
	pthread_rwlock_wrlock(&o->lock);
	for (struct smb_open_rec **pp = &o->b[bucket(fid)]; *pp; pp = &(*pp)->next) {
		if (fid_eq((*pp)->orig, fid)) {
			gone = *pp;
			*pp = gone->next;
			o->n--;
			o->closing -= gone->closing;
			break;
		}
	}
	pthread_rwlock_unlock(&o->lock);
	talloc_free(gone);
}

/* Caller holds the lock. */
static struct smb_open_rec *find(struct smb_opens *o, struct smb2_fileid fid)
{
	for (struct smb_open_rec *r = o->b[bucket(fid)]; r; r = r->next)
		if (fid_eq(r->orig, fid))
			return r;
	return NULL;
}

uint64_t smb_opens_serial(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_opens *o = c->opens;
	uint64_t serial = 0;
	pthread_rwlock_rdlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	if (r && !r->closing && !r->lost)
		serial = r->serial;
	pthread_rwlock_unlock(&o->lock);
	return serial;
}

void smb_opens_closing(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_opens *o = c->opens;
	pthread_rwlock_wrlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	if (r && !r->closing) {
		r->closing = true;
		o->closing++;
	}
	pthread_rwlock_unlock(&o->lock);
}

bool smb_opens_closing_below(struct smb_client *c, uint64_t parent_lease_id)
{
	struct smb_opens *o = c->opens;
	bool found = false;
	pthread_rwlock_rdlock(&o->lock);
	for (unsigned k = 0; o->closing && !found && k < OPENS_BUCKETS; k++)
		for (struct smb_open_rec *r = o->b[k]; r && !found; r = r->next)
			found = r->closing && r->args.parent_lease_id == parent_lease_id &&
			        !(r->args.create_options & FILE_DIRECTORY_FILE);
	pthread_rwlock_unlock(&o->lock);
	return found;
}

void smb_opens_set_oplock(struct smb_client *c, struct smb2_fileid fid, uint8_t level)
{
	struct smb_opens *o = c->opens;
	pthread_rwlock_wrlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	if (r)
		r->oplock = level;
	pthread_rwlock_unlock(&o->lock);
}

uint32_t smb_opens_lock_seq_take(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_opens *o = c->opens;
	uint32_t seq = 0;
	pthread_rwlock_wrlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	if (r && r->durable && !r->lost && ~r->lock_busy) {
		int i = __builtin_ctzll(~r->lock_busy);
		r->lock_busy |= 1ull << i;
		/* LockSequenceIndex (28 bits, 1..64) above LockSequenceNumber (4) */
		seq = (uint32_t)(i + 1) << 4 | (r->lock_seq[i] & 0xf);
	}
	pthread_rwlock_unlock(&o->lock);
	return seq;
}

void smb_opens_lock_seq_done(struct smb_client *c, struct smb2_fileid fid, uint32_t seq)
{
	struct smb_opens *o = c->opens;
	unsigned i = (seq >> 4) - 1;
	if (!seq || i >= 64)
		return;
	pthread_rwlock_wrlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	if (r) {
		/* the next LOCK of this bucket is a new one to the server */
		r->lock_seq[i] = (uint8_t)((r->lock_seq[i] + 1) & 0xf);
		r->lock_busy &= ~(1ull << i);
	}
	pthread_rwlock_unlock(&o->lock);
}

void smb_client_set_break_cb(struct smb_client *c, smb_break_cb cb, void *arg)
{
	if (smb_dfs_routes(c)) {
		smb_dfs_set_break_cb(c, cb, arg);
		return;
	}
	c->opens->on_break = cb;
	c->opens->on_break_arg = arg;
}

void smb_client_set_lock_lost_cb(struct smb_client *c, smb_lock_lost_cb cb, void *arg)
{
	if (smb_dfs_routes(c)) {
		smb_dfs_set_lock_lost_cb(c, cb, arg);
		return;
	}
	c->opens->on_lock_lost = cb;
	c->opens->on_lock_lost_arg = arg;
}

void smb_opens_locks_done(struct smb_client *c, struct smb2_fileid fid,
                          const struct smb2_lock_elem *e, uint16_t n)
{
	struct smb_opens *o = c->opens;
	pthread_rwlock_wrlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	for (uint16_t i = 0; r && i < n; i++) {
		if (e[i].flags & SMB2_LOCKFLAG_UNLOCK) {
			/* an unlock names one lock by its exact range */
			for (unsigned k = 0; k < r->nlocks; k++)
				if (r->locks[k].offset == e[i].offset &&
				    r->locks[k].length == e[i].length) {
					r->locks[k] = r->locks[--r->nlocks];
					break;
				}
			continue;
		}
		struct smb2_lock_elem *v =
		    talloc_realloc(r, r->locks, struct smb2_lock_elem, r->nlocks + 1);
		if (!v) {
			smb_warn("%s: out of memory: a lock on %s will not be taken again after a "
			         "reconnect",
			         c->host, r->path);
			continue;
		}
		r->locks = v;
		r->locks[r->nlocks++] =
		    (struct smb2_lock_elem){.offset = e[i].offset,
		                            .length = e[i].length,
		                            .flags = e[i].flags & (SMB2_LOCKFLAG_SHARED_LOCK |
		                                                   SMB2_LOCKFLAG_EXCLUSIVE_LOCK)};
	}
	pthread_rwlock_unlock(&o->lock);
}

bool smb_opens_lost(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_opens *o = c->opens;
	pthread_rwlock_rdlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	bool lost = r && r->lost;
	pthread_rwlock_unlock(&o->lock);
	return lost;
}

bool smb_file_failed(struct smb_client *c, struct smb2_fileid fid)
{
	if (smb_dfs_routes(c))
		return smb_dfs_file_failed(c, fid);
	struct smb_opens *o = c->opens;
	if (!__atomic_load_n(&o->moved, __ATOMIC_ACQUIRE))
		return false; /* nothing was reopened, nothing lost */
	pthread_rwlock_rdlock(&o->lock);
	struct smb_open_rec *r = find(o, fid);
	bool failed = r && (r->lost || r->locks_lost);
	pthread_rwlock_unlock(&o->lock);
	return failed;
}

int smb_req_fix_fids(struct smb_client *c, struct smb_req *req)
{
	struct smb_opens *o = c->opens;
	if (!o || !__atomic_load_n(&o->moved, __ATOMIC_ACQUIRE))
		return 0;
	int err = 0;
	pthread_rwlock_rdlock(&o->lock);
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		int off = smb2_req_fileid_offset(p->command);
		if (off < 0 || p->len < (size_t)(SMB2_HDR_SIZE + off + 16))
			continue;
		uint8_t *f = p->buf + SMB2_HDR_SIZE + off;
		if (!p->fid_known) {
			/* what the caller wrote, before any patching */
			p->orig_fid.persistent = smb_le64(f);
			p->orig_fid.volatile_ = smb_le64(f + 8);
			p->fid_known = true;
		}
		struct smb_open_rec *r = find(o, p->orig_fid);
		if (!r)
			continue;
		/* a handle whose lock was lost: its CLOSE (and an oplock break's
		 * ack) still go, nothing that relies on the lock does */
		if (r->lost || (r->locks_lost && p->command != SMB2_CLOSE &&
		                p->command != SMB2_OPLOCK_BREAK)) {
			err = -EIO;
			continue;
		}
		smb_put_le64(f, r->cur.persistent);
		smb_put_le64(f + 8, r->cur.volatile_);
	}
	pthread_rwlock_unlock(&o->lock);
	return err;
}

/* Reopen one handle on ch: durable reconnect (DH2C) when it was granted,
 * else by path with FILE_OPEN (never re-create or truncate).  0 with *cur
 * set (and the oplock level granted), or -errno. */
static int reopen_one(struct smb_client *c, struct smb_chan *ch, struct smb_open_rec *r,
                      bool durable, void *mem, struct smb2_fileid *cur, uint8_t *oplock_granted)
{
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	req->no_replay = true;
	uint8_t dh2c[SMB2_DH2C_LEN], rqls[SMB2_RQLS_V2_LEN];
	struct smb2_create_ctx ctx[2];
	int n = 0;
	struct smb_open_args a = r->args;
	a.create_disposition = FILE_OPEN;
	if (durable) {
		smb2_dh2c_encode(dh2c, r->cur, r->create_guid);
		ctx[n++] = (struct smb2_create_ctx){"DH2C", dh2c, sizeof(dh2c)};
	}
	/* The handle's lease goes with it: a durable reconnect must name
	 * the key it was granted under ([MS-SMB2] 3.2.4.4), and a reopen
	 * by path asks for the lease again. */
	bool lease = smb_lease_ctx(c, &a, rqls, &ctx[n]);
	n += lease;
	uint8_t oplock = lease     ? SMB2_OPLOCK_LEVEL_LEASE
	                 : durable ? SMB2_OPLOCK_LEVEL_BATCH
	                           : SMB2_OPLOCK_LEVEL_NONE;
	int err = smb_req_add_create_ctxs(req, r->path, &a, oplock, ctx, n);
	if (!err)
		err = smb_client_submit_sync(c, req);
	if (!err) {
		uint32_t st = req->pdu[0].rsp_hdr.status;
		struct smb2_create_rsp rsp;
		if (st != STATUS_SUCCESS) {
			smb_debug("%s: %s of %s: %s", c->host,
			          durable ? "durable reconnect" : "reopen", r->path,
			          smb2_status_str(st));
			err = -ENOENT;
		} else if (smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &rsp) < 0) {
			err = -EBADMSG;
		} else {
			*cur = rsp.fileid;
			*oplock_granted = rsp.oplock_level;
			if (lease)
				smb_lease_granted(c, rsp.contexts, rsp.contexts_len);
		}
	}
	smb_req_put(req);
	return err;
}

/* Take lock e again on the handle the server now knows as cur (after a
 * reopen by path).  0 and *status: the server's answer; or -errno when the
 * connection failed. */
static int relock_one(struct smb_client *c, struct smb_chan *ch, struct smb2_fileid cur,
                      const struct smb2_lock_elem *e, void *mem, uint32_t *status)
{
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	req->no_replay = true;
	struct smb2_lock_elem el = *e;
	el.flags |= SMB2_LOCKFLAG_FAIL_IMMEDIATELY;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_LOCK, 48);
	int err =
	    body ? smb_req_end_pdu(req, smb2_lock_req_encode(body, 48, cur, 0, &el, 1)) : -ENOMEM;
	if (!err)
		err = smb_client_submit_sync(c, req);
	if (!err)
		*status = req->pdu[0].rsp_hdr.status;
	smb_req_put(req);
	return err;
}

/* A reopen by path: the server dropped the handle's locks with it.  Take
 * each again; one refused is lost (the handle is marked, the caller's
 * callback told).  0, or -errno when the connection failed (try again). */
static int relock_all(struct smb_client *c, struct smb_chan *ch, struct smb_open_rec *r,
                      struct smb2_fileid cur, void *mem)
{
	struct smb_opens *o = c->opens;
	pthread_rwlock_rdlock(&o->lock);
	unsigned n = r->nlocks;
	struct smb2_lock_elem *v = n ? talloc_memdup(mem, r->locks, n * sizeof(*v)) : NULL;
	pthread_rwlock_unlock(&o->lock);
	if (n && !v)
		return -ENOMEM;
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t st = 0;
		int err = relock_one(c, ch, cur, &v[i], mem, &st);
		if (err)
			return err;
		if (st == STATUS_SUCCESS) {
			v[kept++] = v[i];
			continue;
		}
		bool excl = v[i].flags & SMB2_LOCKFLAG_EXCLUSIVE_LOCK;
		pthread_rwlock_wrlock(&o->lock);
		r->locks_lost = true;
		__atomic_store_n(&o->moved, true, __ATOMIC_RELEASE);
		pthread_rwlock_unlock(&o->lock);
		if (o->on_lock_lost)
			o->on_lock_lost(o->on_lock_lost_arg, r->orig, r->path, v[i].offset,
			                v[i].length, excl, st);
		else
			smb_err("%s: %s: the %s lock of bytes %llu+%llu could not be taken again "
			        "after the reconnect (%s); I/O through its handle fails with EIO",
			        c->host, r->path, excl ? "exclusive" : "shared",
			        (unsigned long long)v[i].offset, (unsigned long long)v[i].length,
			        smb2_status_str(st));
	}
	if (kept < n) {
		/* what is held now; a LOCK answered meanwhile cannot have
		 * changed the list: requests are parked until the channel is
		 * published */
		pthread_rwlock_wrlock(&o->lock);
		if (r->nlocks == n) {
			memcpy(r->locks, v, kept * sizeof(*v));
			r->nlocks = kept;
		}
		pthread_rwlock_unlock(&o->lock);
	}
	return 0;
}

int smb_opens_reopen(struct smb_client *c, struct smb_chan *ch, void *mem, unsigned *n_durable,
                     unsigned *n_path, unsigned *n_lost)
{
	struct smb_opens *o = c->opens;
	*n_durable = *n_path = *n_lost = 0;
	/* Requests are parked meanwhile and the loop does not add or remove
	 * opens while no channel lives, but hold the lock for the walk: a
	 * failed open's cleanup may still remove one. */
	pthread_rwlock_rdlock(&o->lock);
	struct smb_open_rec **all = talloc_array(mem, struct smb_open_rec *, o->n ? o->n : 1);
	unsigned n = 0;
	for (unsigned k = 0; all && k < OPENS_BUCKETS; k++)
		for (struct smb_open_rec *r = o->b[k]; r && n < o->n; r = r->next)
			if (!r->lost)
				all[n++] = r;
	pthread_rwlock_unlock(&o->lock);
	if (!all)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct smb_open_rec *r = all[i];
		struct smb2_fileid cur;
		uint8_t granted = SMB2_OPLOCK_LEVEL_NONE;
		int err = -ENOENT;
		bool durable = r->durable;
		if (durable) {
			err = reopen_one(c, ch, r, true, mem, &cur, &granted);
			if (err == 0)
				++*n_durable;
		}
		if (err == -ENOENT || err == -EBADMSG) {
			err = reopen_one(c, ch, r, false, mem, &cur, &granted);
			if (err == 0) {
				++*n_path;
				durable = false;
			}
		}
		if (err && err != -ENOENT && err != -EBADMSG)
			return err; /* the new connection failed: try again later */
		if (!err && !durable && (err = relock_all(c, ch, r, cur, mem)) != 0)
			return err;
		pthread_rwlock_wrlock(&o->lock);
		if (err) {
			r->lost = true;
			__atomic_store_n(&o->moved, true, __ATOMIC_RELEASE);
			++*n_lost;
			smb_err("%s: %s could not be reopened after the reconnect; its I/O fails "
			        "with EIO",
			        c->host, r->path);
		} else {
			r->cur = cur;
			r->durable = durable;
			r->oplock = granted;
			/* a reopen by path may have found another file there */
			r->serial = ++o->last_serial;
			if (!fid_eq(cur, r->orig))
				__atomic_store_n(&o->moved, true, __ATOMIC_RELEASE);
		}
		pthread_rwlock_unlock(&o->lock);
		/* Whatever the server did while we were away, what was cached
		 * under the old oplock may be stale now. */
		if (o->on_break)
			o->on_break(o->on_break_arg, r->orig, SMB2_OPLOCK_LEVEL_NONE);
	}
	return 0;
}

static void break_ack_done(struct smb_req *req)
{
	uint32_t st = req->pdu[0].have_rsp ? req->pdu[0].rsp_hdr.status : 0;
	if (req->err || st != STATUS_SUCCESS)
		smb_debug("oplock break acknowledgment: %s",
		          req->err ? strerror(-req->err) : smb2_status_str(st));
	smb_req_put(req);
}

/* The handle the server knows as cur: its level goes down to level (a
 * break never raises one: an unsigned break may come from anyone in the
 * path, conn.c); returns the level it held (LEVEL_NONE if unknown) and
 * sets *orig to the caller's FileId of it. */
static uint8_t oplock_lowered(struct smb_opens *o, struct smb2_fileid cur, uint8_t level,
                              struct smb2_fileid *orig)
{
	uint8_t old = SMB2_OPLOCK_LEVEL_NONE;
	*orig = cur;
	pthread_rwlock_wrlock(&o->lock);
	/* cur and orig differ only after a reconnect moved some handle */
	struct smb_open_rec *r = o->moved ? NULL : find(o, cur);
	for (unsigned b = 0; o->moved && !r && b < OPENS_BUCKETS; b++)
		for (r = o->b[b]; r && !fid_eq(r->cur, cur); r = r->next)
			;
	if (r) {
		old = r->oplock;
		if (level < old)
			r->oplock = level;
		*orig = r->orig;
	}
	pthread_rwlock_unlock(&o->lock);
	return old;
}

void smb_opens_on_break(struct smb_client *c, const uint8_t *pdu, size_t len)
{
	struct smb2_oplock_break b;
	int err = smb2_oplock_break_decode(pdu, len, &b);
	if (err == -EPROTO) {
		smb_lease_on_break(c, pdu, len);
		return;
	}
	if (err) {
		smb_warn("%s: malformed OPLOCK_BREAK notification ignored", c->host);
		return;
	}
	struct smb2_fileid orig;
	struct smb_opens *o = c->opens;
	uint8_t old = oplock_lowered(o, b.fileid, b.oplock_level, &orig);
	/* The caller drops what it cached under the oplock (fuse/ queues the
	 * kernel's invalidation), then we agree at once to the level the
	 * server breaks us to (its FileId, sent as it is). */
	if (o->on_break)
		o->on_break(o->on_break_arg, orig, b.oplock_level);
	/* A break from level II can only go to none: the server expects no
	 * acknowledgment ([MS-SMB2] 2.2.24.1), and Samba answers one with
	 * STATUS_INVALID_OPLOCK_PROTOCOL. */
	if (old == SMB2_OPLOCK_LEVEL_II && b.oplock_level == SMB2_OPLOCK_LEVEL_NONE) {
		smb_debug("%s: level II oplock broken to none (no acknowledgment)", c->host);
		return;
	}
	struct smb_req *req = smb_client_req(c, NULL);
	uint8_t *body = req ? smb_req_begin_pdu(req, SMB2_OPLOCK_BREAK, 24) : NULL;
	err = body ? smb_req_end_pdu(req, smb2_oplock_break_ack_encode(body, 24, &b)) : -ENOMEM;
	if (!err) {
		req->pdu[0].fid_known = true; /* the server's FileId already */
		req->pdu[0].orig_fid = (struct smb2_fileid){0, 0};
		req->done = break_ack_done;
		err = smb_conn_submit(req->conn, req);
	}
	if (err) {
		smb_warn("%s: cannot acknowledge an oplock break: %s", c->host, strerror(-err));
		if (req)
			smb_req_put(req);
	} else {
		smb_debug("%s: oplock broken to level %u; acknowledged", c->host, b.oplock_level);
	}
}
