/* smbd/smbd_token.c — registration cache and per-I/O token state machine.
 *
 * A window token (MW) in the pool:
 *
 *   FREE --get: post BIND--> BOUND --WITH_INV recv--> REMOTE_INV --+
 *                              |                                   |
 *                              +--put: post LOCAL_INV--> LOCAL_INV |
 *                                                         |        |
 *               (put called, no bind/inv WR outstanding)  v        v
 *                                                   DONE: done_cb queued, back to FREE
 *
 * The state is kept as flags (bind_pending, inv_pending, invalidated, put)
 * because a receive completion may be reaped before the bind's completion.
 * A window whose bind or invalidate failed is poisoned (never rebound); a
 * failed WR means the QP is in error, so nothing remote can reach it.
 * A per-I/O MR token is deregistered at put.
 *
 * What a server can reach ([RFC 5042] 5.1.3: no standing exposure): a cached
 * region is registered for local access and window binding only (not at all
 * on a device without windows), so no key of its opens anything; remote
 * access exists only as a token, over exactly one
 * I/O's bytes, in the one direction that I/O needs, from get() until the
 * token is invalidated or deregistered.  When no token can be made (the bind
 * and the per-I/O registration both fail) get() fails and the caller sends
 * the I/O inline; there is no weaker fallback.
 */
#include "smbd/smbd_token.h"
#include "client/proto/smb2_const.h"
#include "common/log.h"
#include "smbd/smbd_proto.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { TOK_MW, TOK_MR };

struct smbd_region {
	uintptr_t addr;
	size_t len;
	void *mr;
	uint32_t rkey;
	unsigned refs; /* tokens over it */
};

struct smbd_io_token {
	enum tok_kind kind;
	uint32_t index; /* pool slot (MW) */
	void *mw, *mr;
	uint32_t rkey;
	struct smbd_region *region;
	size_t len, moved;
	int access;
	bool in_use, bind_pending, inv_pending, invalidated, put, poisoned, queued;
	void (*done)(void *arg);
	void *done_arg;
	struct smbd_io_token *next; /* free list or done queue */
};

struct smbd_tokens {
	const struct smbd_verbs_ops *ops;
	void *arg;
	bool has_mw, dead, scheduled;
	uint16_t dialect;
	pthread_mutex_t lock;         /* guards everything below */
	struct smbd_region **regions; /* sorted by addr, disjoint */
	size_t nregions, cap_regions;
	struct smbd_io_token *pool; /* max_mw window tokens */
	uint32_t max_mw, nmw;       /* nmw: windows allocated so far */
	struct smbd_io_token *free_mw;
	struct smbd_io_token *done_head, *done_tail;
	struct smbd_token_stats st;
};

int smbd_tokens_new(const struct smbd_verbs_ops *ops, void *arg, bool has_mw, uint32_t max_mw,
                    struct smbd_tokens **out)
{
	struct smbd_tokens *tt = calloc(1, sizeof(*tt));
	if (!tt)
		return -ENOMEM;
	tt->ops = ops;
	tt->arg = arg;
	tt->has_mw = has_mw && max_mw;
	tt->max_mw = tt->has_mw ? max_mw : 0;
	if (tt->max_mw && !(tt->pool = calloc(tt->max_mw, sizeof(*tt->pool)))) {
		free(tt);
		return -ENOMEM;
	}
	tt->dialect = 0x0300;
	pthread_mutex_init(&tt->lock, NULL);
	*out = tt;
	return 0;
}

void smbd_tokens_free(struct smbd_tokens *tt)
{
	if (!tt)
		return;
	for (uint32_t i = 0; i < tt->nmw; i++) {
		if (tt->pool[i].in_use)
			smb_warn("smbd: an I/O token was never put");
		tt->ops->dealloc_mw(tt->arg, tt->pool[i].mw);
	}
	for (size_t i = 0; i < tt->nregions; i++) {
		if (tt->regions[i]->refs)
			smb_warn("smbd: registered region freed with %u tokens over it",
			         tt->regions[i]->refs);
		if (tt->regions[i]->mr)
			tt->ops->dereg_mr(tt->arg, tt->regions[i]->mr);
		free(tt->regions[i]);
	}
	free(tt->regions);
	free(tt->pool);
	pthread_mutex_destroy(&tt->lock);
	free(tt);
}

void smbd_tokens_set_dialect(struct smbd_tokens *tt, uint16_t dialect)
{
	pthread_mutex_lock(&tt->lock);
	tt->dialect = dialect;
	pthread_mutex_unlock(&tt->lock);
}

/* ---- registration cache (under lock) ---- */

/* Index of the first region with addr > a. */
static size_t region_upper(const struct smbd_tokens *tt, uintptr_t a)
{
	size_t lo = 0, hi = tt->nregions;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tt->regions[mid]->addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct smbd_region *region_find(const struct smbd_tokens *tt, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i = region_upper(tt, a);
	if (!i || !len)
		return NULL;
	struct smbd_region *r = tt->regions[i - 1];
	if (a - r->addr > r->len || len > r->len - (a - r->addr))
		return NULL;
	return r;
}

int smbd_tokens_region_add(struct smbd_tokens *tt, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	if (!addr || !len || a + len < a)
		return -EINVAL;
	struct smbd_region *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->addr = a;
	r->len = len;
	/* With windows: registered for binding only, no remote access (only a
	 * window bound per I/O gives the server any).  Without: not registered
	 * at all, the range is only remembered.  Every token is then a per-I/O
	 * registration, and a registration for the connection's life would be
	 * reachable for nothing: siw (Linux 6.1) serves a peer's RDMA Read from
	 * any valid STag of the PD without checking its remote-read right
	 * (siw_qp_sq_proc_tx() checks a READ_RESPONSE's memory with perms 0).
	 * Register outside the lock: it pins pages and may take milliseconds. */
	int err = tt->has_mw
	              ? tt->ops->reg_mr(tt->arg, addr, len, SMBD_ACCESS_MW_BIND, &r->mr, &r->rkey)
	              : 0;
	if (err) {
		free(r);
		return err;
	}
	pthread_mutex_lock(&tt->lock);
	size_t i = region_upper(tt, a);
	if ((i && tt->regions[i - 1]->addr + tt->regions[i - 1]->len > a) ||
	    (i < tt->nregions && tt->regions[i]->addr < a + len)) {
		err = -EEXIST;
	} else if (tt->nregions == tt->cap_regions) {
		size_t cap = tt->cap_regions ? tt->cap_regions * 2 : 16;
		void *p = realloc(tt->regions, cap * sizeof(*tt->regions));
		if (!p)
			err = -ENOMEM;
		else {
			tt->regions = p;
			tt->cap_regions = cap;
		}
	}
	if (!err) {
		memmove(&tt->regions[i + 1], &tt->regions[i],
		        (tt->nregions - i) * sizeof(*tt->regions));
		tt->regions[i] = r;
		tt->nregions++;
	}
	pthread_mutex_unlock(&tt->lock);
	if (err) {
		if (r->mr)
			tt->ops->dereg_mr(tt->arg, r->mr);
		free(r);
	}
	return err;
}

int smbd_tokens_region_remove(struct smbd_tokens *tt, void *addr)
{
	pthread_mutex_lock(&tt->lock);
	size_t i = region_upper(tt, (uintptr_t)addr);
	if (!i || tt->regions[i - 1]->addr != (uintptr_t)addr) {
		pthread_mutex_unlock(&tt->lock);
		return -ENOENT;
	}
	struct smbd_region *r = tt->regions[i - 1];
	if (r->refs) {
		pthread_mutex_unlock(&tt->lock);
		return -EBUSY;
	}
	memmove(&tt->regions[i - 1], &tt->regions[i], (tt->nregions - i) * sizeof(*tt->regions));
	tt->nregions--;
	pthread_mutex_unlock(&tt->lock);
	if (r->mr)
		tt->ops->dereg_mr(tt->arg, r->mr);
	free(r);
	return 0;
}

void *smbd_tokens_region_mr(struct smbd_tokens *tt, const void *addr)
{
	pthread_mutex_lock(&tt->lock);
	size_t i = region_upper(tt, (uintptr_t)addr);
	void *mr = i && tt->regions[i - 1]->addr == (uintptr_t)addr ? tt->regions[i - 1]->mr : NULL;
	pthread_mutex_unlock(&tt->lock);
	return mr;
}

bool smbd_tokens_region_covers(struct smbd_tokens *tt, const void *addr, size_t len)
{
	pthread_mutex_lock(&tt->lock);
	bool ok = region_find(tt, addr, len) != NULL;
	pthread_mutex_unlock(&tt->lock);
	return ok;
}

/* ---- tokens ---- */

/* ibv_inc_rkey()'s rule without the verbs header: a new 8-bit key part, so a
 * server holding the window's previous rkey is refused. */
static uint32_t inc_rkey(uint32_t rkey)
{
	return (rkey & 0xffffff00u) | ((rkey + 1) & 0xffu);
}

static void encode_desc(uint64_t addr, uint32_t rkey, size_t len, uint8_t desc[16])
{
	struct smbd_buffer_desc_v1 d = {.offset = addr, .token = rkey, .length = (uint32_t)len};
	smbd_buffer_desc_v1_encode(&d, 1, desc, SMBD_BUFFER_DESC_V1_SIZE);
}

/* A window token from the pool, allocating a window if the pool is not full.
 * Called with the lock held; alloc_mw is a quick ioctl. */
static struct smbd_io_token *mw_take(struct smbd_tokens *tt)
{
	struct smbd_io_token *t = tt->free_mw;
	if (t) {
		tt->free_mw = t->next;
		return t;
	}
	if (tt->nmw == tt->max_mw || tt->dead)
		return NULL;
	t = &tt->pool[tt->nmw];
	if (tt->ops->alloc_mw(tt->arg, &t->mw, &t->rkey))
		return NULL;
	t->index = tt->nmw++;
	t->kind = TOK_MW;
	return t;
}

/* Lock held.  Bind a pooled window over [buf, buf+len) of region r for one
 * I/O.  NULL when no window is free or the bind cannot be posted (the
 * window is then unchanged and back in the pool). */
static struct smbd_io_token *mw_bind(struct smbd_tokens *tt, struct smbd_region *r, void *buf,
                                     size_t len, int access)
{
	struct smbd_io_token *t = mw_take(tt);
	if (!t)
		return NULL;
	uint32_t rkey = inc_rkey(t->rkey);
	int err =
	    tt->ops->post_bind(tt->arg, t->mw, r->mr, rkey, (uintptr_t)buf, len, access, t->index);
	if (err) {
		tt->st.binds_failed++;
		t->next = tt->free_mw;
		tt->free_mw = t;
		return NULL;
	}
	t->rkey = rkey;
	t->region = r;
	r->refs++;
	t->len = len;
	t->moved = 0;
	t->access = access;
	t->in_use = true;
	t->bind_pending = true;
	t->inv_pending = t->invalidated = t->put = t->queued = false;
	t->done = NULL;
	t->next = NULL;
	tt->st.tokens_active++;
	tt->st.mw_bound++;
	return t;
}

int smbd_tokens_get(struct smbd_tokens *tt, void *buf, size_t len, int access,
                    struct smbd_io_token **tok, uint8_t desc[16], uint32_t *channel)
{
	if (!buf || !len || len > UINT32_MAX ||
	    (access != SMBD_ACCESS_REMOTE_READ && access != SMBD_ACCESS_REMOTE_WRITE))
		return -EINVAL;
	pthread_mutex_lock(&tt->lock);
	if (tt->dead) {
		pthread_mutex_unlock(&tt->lock);
		return -ECONNABORTED;
	}
	/* 1. A window bound over the cached region, valid for this I/O only. */
	struct smbd_region *r = tt->has_mw ? region_find(tt, buf, len) : NULL;
	struct smbd_io_token *t = r ? mw_bind(tt, r, buf, len, access) : NULL;
	bool inval = tt->dialect >= 0x0302;
	pthread_mutex_unlock(&tt->lock);
	if (t) {
		encode_desc((uintptr_t)buf, t->rkey, len, desc);
		*channel = inval ? SMB2_CHANNEL_RDMA_V1_INVALIDATE : SMB2_CHANNEL_RDMA_V1;
		*tok = t;
		return 0;
	}

	/* 2. A registration of exactly this buffer, for this I/O. */
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->kind = TOK_MR;
	t->len = len;
	t->access = access;
	t->in_use = true;
	int err = tt->ops->reg_mr(tt->arg, buf, len, access, &t->mr, &t->rkey);
	pthread_mutex_lock(&tt->lock);
	if (err) {
		/* No token: the caller sends this I/O inline. */
		tt->st.regs_failed++;
	} else {
		tt->st.mr_per_io++;
		tt->st.tokens_active++;
	}
	pthread_mutex_unlock(&tt->lock);
	if (err) {
		free(t);
		return err;
	}
	encode_desc((uintptr_t)buf, t->rkey, len, desc);
	*channel = SMB2_CHANNEL_RDMA_V1; /* an MR's rkey must not be invalidated remotely */
	*tok = t;
	return 0;
}

void smbd_tokens_set_moved(struct smbd_io_token *tok, size_t bytes)
{
	tok->moved = bytes < tok->len ? bytes : tok->len;
}

/* Lock held.  Queue t's done callback if t is finished. */
static void maybe_finish(struct smbd_tokens *tt, struct smbd_io_token *t)
{
	if (!t->put || t->queued)
		return;
	if (t->kind == TOK_MW &&
	    (t->bind_pending || t->inv_pending || (!t->invalidated && !t->poisoned)))
		return;
	t->queued = true;
	t->next = NULL;
	if (tt->done_tail)
		tt->done_tail->next = t;
	else
		tt->done_head = t;
	tt->done_tail = t;
}

static void kick(struct smbd_tokens *tt, bool *sched)
{
	if (tt->done_head && !tt->scheduled) {
		tt->scheduled = true;
		*sched = true;
	}
}

void smbd_tokens_put(struct smbd_tokens *tt, struct smbd_io_token *t, void (*done)(void *arg),
                     void *arg)
{
	bool sched = false;
	void *mr = NULL;

	pthread_mutex_lock(&tt->lock);
	t->put = true;
	t->done = done;
	t->done_arg = arg;
	if (t->access == SMBD_ACCESS_REMOTE_READ)
		tt->st.rdma_read_bytes += t->moved;
	else
		tt->st.rdma_write_bytes += t->moved;
	if (t->kind == TOK_MR) {
		mr = t->mr;
		t->mr = NULL;
	} else if (t->kind == TOK_MW && !t->invalidated && !t->poisoned && !t->inv_pending) {
		if (tt->dead) {
			t->poisoned = true; /* QP in error: unreachable, never rebind */
		} else if (tt->ops->post_local_inv(tt->arg, t->rkey, t->index)) {
			smb_err("smbd: cannot post a local invalidate; window retired");
			t->poisoned = true;
		} else {
			t->inv_pending = true;
		}
	}
	if (t->kind != TOK_MR)
		maybe_finish(tt, t);
	pthread_mutex_unlock(&tt->lock);

	if (mr) /* synchronous: once it returns the rkey is dead */
		tt->ops->dereg_mr(tt->arg, mr);
	pthread_mutex_lock(&tt->lock);
	if (t->kind == TOK_MR)
		maybe_finish(tt, t);
	kick(tt, &sched);
	pthread_mutex_unlock(&tt->lock);
	if (sched)
		tt->ops->schedule(tt->arg);
}

void smbd_tokens_wr_done(struct smbd_tokens *tt, uint64_t wr_id, bool ok)
{
	bool sched = false;
	pthread_mutex_lock(&tt->lock);
	if (wr_id >= tt->nmw) {
		pthread_mutex_unlock(&tt->lock);
		return;
	}
	struct smbd_io_token *t = &tt->pool[wr_id];
	if (t->bind_pending) {
		t->bind_pending = false;
		if (!ok)
			t->poisoned = true;
	} else if (t->inv_pending) {
		t->inv_pending = false;
		if (ok) {
			t->invalidated = true;
			tt->st.mw_inv_local++;
		} else {
			t->poisoned = true;
		}
	}
	maybe_finish(tt, t);
	kick(tt, &sched);
	pthread_mutex_unlock(&tt->lock);
	if (sched)
		tt->ops->schedule(tt->arg);
}

int smbd_tokens_remote_inv(struct smbd_tokens *tt, uint32_t rkey)
{
	bool sched = false;
	int r = -ENOENT;
	pthread_mutex_lock(&tt->lock);
	for (uint32_t i = 0; i < tt->nmw; i++) {
		struct smbd_io_token *t = &tt->pool[i];
		if (t->in_use && t->rkey == rkey && !t->invalidated && !t->poisoned) {
			t->invalidated = true;
			tt->st.mw_inv_remote++;
			maybe_finish(tt, t);
			r = 0;
			break;
		}
	}
	if (r)
		tt->st.unknown_remote_inv++;
	kick(tt, &sched);
	pthread_mutex_unlock(&tt->lock);
	if (sched)
		tt->ops->schedule(tt->arg);
	return r;
}

void smbd_tokens_set_dead(struct smbd_tokens *tt)
{
	bool sched = false;
	pthread_mutex_lock(&tt->lock);
	tt->dead = true;
	/* WRs still outstanding will never be reaped once the QP goes: treat
	 * every window as unreachable now. */
	for (uint32_t i = 0; i < tt->nmw; i++) {
		struct smbd_io_token *t = &tt->pool[i];
		if (!t->in_use)
			continue;
		t->bind_pending = t->inv_pending = false;
		if (!t->invalidated)
			t->poisoned = true;
		maybe_finish(tt, t);
	}
	kick(tt, &sched);
	pthread_mutex_unlock(&tt->lock);
	if (sched)
		tt->ops->schedule(tt->arg);
}

void smbd_tokens_run_done(struct smbd_tokens *tt)
{
	pthread_mutex_lock(&tt->lock);
	struct smbd_io_token *t = tt->done_head;
	tt->done_head = tt->done_tail = NULL;
	tt->scheduled = false;
	pthread_mutex_unlock(&tt->lock);
	while (t) {
		struct smbd_io_token *next = t->next;
		void (*done)(void *) = t->done;
		void *arg = t->done_arg;
		pthread_mutex_lock(&tt->lock);
		tt->st.tokens_active--;
		if (t->region)
			t->region->refs--;
		t->region = NULL;
		if (t->kind == TOK_MW) {
			t->in_use = t->put = t->queued = false;
			/* A poisoned window keeps its state (maybe still bound): retire it. */
			if (!t->poisoned) {
				t->invalidated = false;
				t->next = tt->free_mw;
				tt->free_mw = t;
			}
		}
		pthread_mutex_unlock(&tt->lock);
		if (t->kind != TOK_MW)
			free(t);
		if (done)
			done(arg);
		t = next;
	}
}

void smbd_tokens_get_stats(struct smbd_tokens *tt, struct smbd_token_stats *out)
{
	pthread_mutex_lock(&tt->lock);
	*out = tt->st;
	pthread_mutex_unlock(&tt->lock);
}
