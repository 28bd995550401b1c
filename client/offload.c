/* client/offload.c — RDMA offload of READ and WRITE payloads.
 *
 * On a channel whose transport can hand out per-I/O tokens, a READ or WRITE
 * above rdma_threshold carries one Buffer Descriptor V1 ([MS-SMB2] 2.2.19,
 * 2.2.21; [MS-SMBD] 2.2.3.1) instead of inline data: the server RDMA-Writes
 * the READ data into, or RDMA-Reads the WRITE data from, a buffer of ours.
 * Those buffers come from one pool registered with the transport once, at
 * mount (the registration cache); each I/O gets a token valid for it alone,
 * released through io_token_put(), and the buffer returns to the pool only
 * when the transport says the server can no longer reach it.
 *
 * Pool: pool->lock guards the free stack; taken briefly from any thread.
 * Completion order for one I/O: response (loop thread) -> io_token_put ->
 * token done (loop thread) -> caller's callback -> buffer dirty, tagged with
 * its open -> taken by that open's next I/O, or cleared -> back to the pool.
 *
 * Never hand back bytes of another open's I/O: a server announces how much
 * it RDMA-Wrote (DataRemaining) but may have written less.  More than was
 * granted is refused (-EIO); for the rest, the memory it was granted held
 * zeros or what the same open's earlier I/O left there (offload.h): pool
 * buffers going to another open are cleared by the pool's cleaner thread
 * (a 1 MiB memset kept off the loop thread, which would otherwise spend it
 * between one reply and the next request), a caller's lent buffer before
 * the grant.
 *
 * No token (the transport could neither bind a window nor register the
 * buffer for this I/O): the I/O goes inline, the channel counts it
 * (fallback_inline) and says so once in the log.  Nothing weaker than a
 * per-I/O token is ever offered to the server.
 */
#include "client/offload.h"
#include "client/chan.h"
#include "client/chanmgr.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/conn.h"
#include "client/opens.h"
#include "client/request.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

#define POOL_BUFS 32

static void *pool_cleaner(void *arg);

int smb_offload_setup(struct smb_chan *ch, size_t bufsize)
{
	struct smb_offload_pool *p = &ch->pool;
	struct smb_transport *t = ch->conn->transport;
	int nbuf = POOL_BUFS, err = -ENOMEM;

	/* Registration counts against RLIMIT_MEMLOCK (soft-iWARP even for
	 * root), which is the process owner's to set, not the engine's: a
	 * library must not change its caller's limits.  mount.smbrdma bounds
	 * it before it connects (fuse/privs.c).  If registration is refused,
	 * try a smaller pool. */
	for (; nbuf >= 4; nbuf /= 2) {
		size_t total = bufsize * (size_t)nbuf;
		if (posix_memalign((void **)&p->mem, 4096, total))
			return -ENOMEM;
		memset(p->mem, 0, total); /* fault the pages in before registering */
		err = t->ops->region_add(t, p->mem, total);
		if (err == 0)
			break;
		free(p->mem);
		p->mem = NULL;
		if (err != -ENOMEM)
			return err;
	}
	if (err)
		return err;
	p->bufsize = bufsize;
	p->nbuf = nbuf;
	p->nfree = nbuf;
	p->ndirty = p->clearing = 0;
	p->stop = p->paused = false;
	for (int i = 0; i < nbuf; i++)
		p->free_stack[i] = i;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->cleaner_up = pthread_create(&p->cleaner, NULL, pool_cleaner, p) == 0;
	if (!p->cleaner_up)
		smb_warn("%s: no thread to clear RDMA buffers; they are cleared on the I/O path",
		         ch->c->host);
	return 0;
}

void smb_offload_teardown(struct smb_chan *ch)
{
	struct smb_offload_pool *p = &ch->pool;
	/* The transport deregisters its regions when it is destroyed. */
	if (p->mem) {
		if (p->cleaner_up) {
			pthread_mutex_lock(&p->lock);
			p->stop = true;
			pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
			pthread_join(p->cleaner, NULL);
			p->cleaner_up = false;
		}
		pthread_cond_destroy(&p->cond);
		pthread_cond_destroy(&p->idle);
		pthread_mutex_destroy(&p->lock);
		free(p->mem);
		p->mem = NULL;
	}
}

/* Buffer i of the pool, and the index of buffer b. */
static uint8_t *buf_at(const struct smb_offload_pool *p, int i)
{
	return p->mem + (size_t)i * p->bufsize;
}

static int buf_index(const struct smb_offload_pool *p, const uint8_t *b)
{
	return (int)((size_t)(b - p->mem) / p->bufsize);
}

/* Under p->lock: take dirty buffer k (0: the oldest) off the list (*len:
 * its bytes not cleared); when none is left and none is being cleared, wake
 * smb_offload_wait_clean() (the cleaner counts its buffer in clearing
 * first; an I/O that takes one keeps it, it is no longer the pool's). */
static uint8_t *dirty_take_locked(struct smb_offload_pool *p, int k, size_t *len)
{
	uint8_t *b = buf_at(p, p->dirty[k]);
	*len = p->dirty_len[k];
	p->ndirty--;
	for (int i = k; i < p->ndirty; i++) {
		p->dirty[i] = p->dirty[i + 1];
		p->dirty_len[i] = p->dirty_len[i + 1];
		p->dirty_open[i] = p->dirty_open[i + 1];
	}
	if (!p->ndirty && !p->clearing)
		pthread_cond_broadcast(&p->idle);
	return b;
}

/* Under p->lock: should the cleaner clear now?  Below half the buffers
 * free, or asked to clear all; not before, so that an open's next I/O
 * finds its own dirty buffer still there. */
static bool cleaner_due_locked(const struct smb_offload_pool *p)
{
	return p->ndirty && !p->paused && (p->draining || p->nfree < (p->nbuf + 1) / 2);
}

/* Takes a buffer for an I/O of the open with serial open (0: none): the
 * newest dirty buffer that open's own I/O left (*inherited: the bytes in
 * it not cleared), else the top of the free stack, else a dirty one
 * cleared here (the I/O pays for one clear rather than going inline).
 * NULL when every buffer is out with an I/O. */
static uint8_t *pool_get(struct smb_offload_pool *p, uint64_t open, size_t *inherited)
{
	uint8_t *b = NULL;
	size_t len = 0;
	*inherited = 0;
	pthread_mutex_lock(&p->lock);
	int k = p->ndirty - 1;
	while (open && k >= 0 && p->dirty_open[k] != open)
		k--;
	if (open && k >= 0) {
		b = dirty_take_locked(p, k, inherited);
		p->reused++;
	} else if (p->nfree) {
		b = buf_at(p, p->free_stack[--p->nfree]);
		if (cleaner_due_locked(p))
			pthread_cond_signal(&p->cond);
	} else if (p->ndirty) {
		b = dirty_take_locked(p, 0, &len);
	}
	pthread_mutex_unlock(&p->lock);
	if (len)
		memset(b, 0, len);
	return b;
}

/* A buffer that is all zeros back on the free stack (under p->lock). */
static void free_push_locked(struct smb_offload_pool *p, uint8_t *b)
{
	p->free_stack[p->nfree++] = buf_index(p, b);
}

static void pool_put(struct smb_offload_pool *p, uint8_t *b)
{
	pthread_mutex_lock(&p->lock);
	free_push_locked(p, b);
	pthread_mutex_unlock(&p->lock);
}

/* The cleaner: clears dirty buffers one at a time, lock dropped while it
 * clears, until smb_offload_teardown() stops it. */
static void *pool_cleaner(void *arg)
{
	struct smb_offload_pool *p = arg;
	pthread_setname_np(pthread_self(), "smb-rdma-clear");
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!cleaner_due_locked(p) && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop)
			break;
		p->clearing++; /* before the take: wait_clean() must not see idle */
		size_t len;
		uint8_t *b = dirty_take_locked(p, 0, &len);
		pthread_mutex_unlock(&p->lock);
		memset(b, 0, len);
		pthread_mutex_lock(&p->lock);
		p->clearing--;
		free_push_locked(p, b);
		if (!p->ndirty && !p->clearing)
			pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void smb_offload_pause_cleaner(struct smb_chan *ch, bool paused)
{
	struct smb_offload_pool *p = &ch->pool;
	if (!p->mem)
		return;
	pthread_mutex_lock(&p->lock);
	p->paused = paused;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void smb_offload_wait_clean(struct smb_chan *ch)
{
	struct smb_offload_pool *p = &ch->pool;
	if (!p->mem)
		return;
	pthread_mutex_lock(&p->lock);
	p->draining++;
	pthread_cond_broadcast(&p->cond);
	while (p->cleaner_up && !p->paused && (p->ndirty || p->clearing))
		pthread_cond_wait(&p->idle, &p->lock);
	p->draining--;
	pthread_mutex_unlock(&p->lock);
}

void smb_offload_stats(struct smb_chan *ch, struct smb_channel_stats *out)
{
	struct smb_offload_pool *p = &ch->pool;
	out->offload_fallback_inline = __atomic_load_n(&p->fallback_inline, __ATOMIC_RELAXED);
	if (p->mem) {
		pthread_mutex_lock(&p->lock);
		out->offload_reused = p->reused;
		pthread_mutex_unlock(&p->lock);
	}
}

/* A pool buffer after an I/O of the open with serial open (0: none): what
 * the server or our copy may have written (the buffer's first len bytes) is
 * cleared before it is free again, by the cleaner (offload.h), or here when
 * there is none; until then that open's next I/O may take it as it is. */
static void pool_put_clean(struct smb_offload_pool *p, uint8_t *b, size_t len, uint64_t open)
{
	if (!len) {
		pool_put(p, b); /* untouched: still zeros */
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (p->cleaner_up) {
		p->dirty[p->ndirty] = buf_index(p, b);
		p->dirty_len[p->ndirty] = len;
		p->dirty_open[p->ndirty] = open;
		p->ndirty++;
		if (cleaner_due_locked(p))
			pthread_cond_signal(&p->cond);
		pthread_mutex_unlock(&p->lock);
		return;
	}
	pthread_mutex_unlock(&p->lock);
	memset(b, 0, len);
	pool_put(p, b);
}

/* The transport gave no token (err): count it, say so once per channel. */
static void note_fallback(struct smb_chan *ch, int err)
{
	__atomic_add_fetch(&ch->pool.fallback_inline, 1, __ATOMIC_RELAXED);
	if (!__atomic_exchange_n(&ch->pool.fallback_logged, true, __ATOMIC_RELAXED))
		smb_warn(
		    "%s: channel %d: no per-I/O RDMA token (%s): such READ/WRITEs go inline on "
		    "this channel (smbrdmactl stats: offload_fallback_inline)",
		    ch->c->host, ch->index, strerror(-err));
}

bool smb_offload_wanted(const struct smb_chan *ch, size_t len, bool is_read)
{
	return ch->pool.mem && len > ch->c->rdma_threshold && len <= ch->pool.bufsize &&
	       len <= (is_read ? ch->max_read : ch->max_write) && !smb_client_sealed(ch->c);
}

/* err says the channel is gone (not the I/O's fault). */
static bool conn_lost(int err)
{
	return err == -ECONNABORTED || err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE;
}

/* One offloaded I/O.  Allocated apart from the request: it outlives it until
 * the token is released. */
struct oio {
	struct smb_client *c;
	struct smb_chan *ch;
	uint8_t *buf;
	size_t len;
	struct smb_io_token *tok;
	bool is_read;
	bool lent;        /* buf is the caller's (a registered region), not the pool's */
	uint64_t open;    /* smb_opens_serial() of fid, for a pool buffer */
	size_t inherited; /* bytes of that open's earlier I/O in a pool buffer */
	struct smb2_fileid fid;
	uint64_t offset;
	smb_read_cb rcb;
	smb_write_cb wcb;
	void *arg;
	int err;
	uint32_t status;
	size_t moved;
};

/* A pool buffer back after its I/O, which wrote (or granted) its first used
 * bytes; what the open's earlier I/O left there counts too. */
static void oio_put_buf(struct oio *o, size_t used)
{
	if (!o->lent)
		pool_put_clean(&o->ch->pool, o->buf, used > o->inherited ? used : o->inherited,
		               o->open);
}

/* The channel died under this I/O: its descriptor named memory registered
 * with that channel's transport, so the request cannot move as it is.
 * Send the I/O again through the ordinary path, which picks a live channel
 * (inline or offloaded there) or, with none, parks it inline for the
 * reconnect (counted there) like any request in flight on a lost channel.
 * true if reissued (the callback then comes from there). */
static bool oio_failover(struct oio *o)
{
	struct smb_client *c = o->c;
	if (!conn_lost(o->err) || __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
		return false;
	struct smb_chan *to = smb_client_pick(c, SMB_SCHED_BULK, o->len);
	bool moved = to && to != o->ch && !__atomic_load_n(&to->dead, __ATOMIC_ACQUIRE);
	/* smb_write() copies the data before it returns; buf is ours until then. */
	int rc = o->is_read ? smb_read(c, o->fid, o->offset, o->len, o->rcb, o->arg)
	                    : smb_write(c, o->fid, o->offset, o->buf, o->len, o->wcb, o->arg);
	if (rc)
		return false;
	if (moved) {
		__atomic_add_fetch(&o->ch->failovers, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&to->replays, 1, __ATOMIC_RELAXED);
	}
	return true;
}

static void oio_finish(void *arg)
{
	struct oio *o = arg;
	if (o->err && oio_failover(o)) {
		/* reissued: the new request calls back */
	} else if (o->is_read) {
		if (o->err)
			o->rcb(o->arg, o->err, 0, NULL, 0);
		else
			o->rcb(o->arg, 0, o->status, o->status == STATUS_SUCCESS ? o->buf : NULL,
			       o->status == STATUS_SUCCESS ? o->moved : 0);
	} else {
		if (o->err)
			o->wcb(o->arg, o->err, 0, 0);
		else
			o->wcb(o->arg, 0, o->status, o->status == STATUS_SUCCESS ? o->moved : 0);
	}
	oio_put_buf(o, o->len);
	free(o);
}

static void oio_done(struct smb_req *req)
{
	struct oio *o = req->arg;
	struct smb_transport *t = o->ch->conn->transport;

	o->err = req->err;
	if (!o->err) {
		struct smb_pdu *p = &req->pdu[0];
		o->status = p->rsp_hdr.status;
		if (o->is_read && o->status == STATUS_END_OF_FILE) {
			o->status = STATUS_SUCCESS;
			o->moved = 0;
		} else if (o->status == STATUS_SUCCESS && o->is_read) {
			struct smb2_read_rsp rr;
			if (smb2_read_rsp_decode(p->rsp, p->rsp_len, &rr) < 0) {
				smb_err("%s: malformed READ response; failing the call with EIO",
				        o->c->host);
				o->err = -EIO;
			} else {
				/* Data moved by RDMA is counted in DataRemaining; a
				 * server may also answer inline (DataLength). */
				size_t n = rr.data_length ? rr.data_length : rr.data_remaining;
				if (n > o->len) {
					smb_err("%s: READ reply claims %zu bytes for a %zu-byte "
					        "buffer; failing the call with EIO",
					        o->c->host, n, o->len);
					o->err = -EIO;
				} else {
					if (rr.data_length) {
						memcpy(o->buf, rr.data, n);
						__atomic_add_fetch(&o->c->payload_bytes_copied, n,
						                   __ATOMIC_RELAXED);
					}
					o->moved = n;
				}
			}
		} else if (o->status == STATUS_SUCCESS) {
			struct smb2_write_rsp wr;
			if (smb2_write_rsp_decode(p->rsp, p->rsp_len, &wr) < 0) {
				smb_err("%s: malformed WRITE response; failing the call with EIO",
				        o->c->host);
				o->err = -EIO;
			} else {
				o->moved = wr.count > o->len ? o->len : wr.count;
			}
		}
	}
	smb_req_put(req);
	t->ops->io_token_put(t, o->tok, o->err ? 0 : o->moved, oio_finish, o);
}

static void oio_release_only(void *arg)
{
	struct oio *o = arg;
	oio_put_buf(o, o->len);
	free(o);
}

/* wdata: a pool write's data (copied into the pool buffer); a lent I/O
 * comes with o->buf set instead.  Takes ownership of o: on success o lives
 * until oio_finish(); on failure it is freed here (through the token's release when a token was
 * taken) and the caller is not called back. */
static int oio_submit(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, size_t len,
                      const void *wdata, struct oio *o)
{
	struct smb_client *c = ch->c;
	struct smb_transport *t = ch->conn->transport;
	uint8_t desc[16];
	uint32_t channel;

	o->c = c;
	o->ch = ch;
	o->len = len;
	o->fid = fid;
	o->offset = offset;
	if (!o->lent) {
		o->open = smb_opens_serial(c, fid);
		o->buf = pool_get(&ch->pool, o->open, &o->inherited);
	}
	if (!o->buf) {
		free(o);
		return -EAGAIN;
	}
	if (o->lent && o->is_read)
		memset(o->buf, 0, len); /* what a short RDMA Write leaves: zeros */
	int err = t->ops->io_token_get(t, o->buf, len,
	                               o->is_read ? SMB_IO_SERVER_WRITES : SMB_IO_SERVER_READS,
	                               &o->tok, desc, &channel);
	if (err) {
		/* A lent I/O that gets no token is tried again through the pool
		 * (smb_read_lent/smb_write_lent): counted there.  A dead
		 * transport is no fallback: the ordinary path then waits for
		 * the reconnect, as it does for any I/O. */
		if (!conn_lost(err) && !o->lent)
			note_fallback(ch, err);
		oio_put_buf(o, 0); /* untouched by this I/O */
		free(o);
		return -EAGAIN;
	}
	if (wdata && !o->lent) {
		memcpy(o->buf, wdata, len);
		__atomic_add_fetch(&c->payload_bytes_copied, len, __ATOMIC_RELAXED);
	}
	struct smb_req *req = smb_chan_req(ch, NULL);
	uint8_t *body =
	    req ? smb_req_begin_pdu(req, o->is_read ? SMB2_READ : SMB2_WRITE, 80) : NULL;
	if (!body) {
		err = -ENOMEM;
	} else if (o->is_read) {
		struct smb2_read_req r = {
		    .length = (uint32_t)len,
		    .offset = offset,
		    .fileid = fid,
		    .channel = channel,
		    .channel_info = desc,
		    .channel_info_len = 16,
		};
		err = smb_req_end_pdu(req, smb2_read_req_encode(body, 80, &r));
	} else {
		struct smb2_write_req w = {
		    .data_length = 0,
		    .offset = offset,
		    .fileid = fid,
		    .channel = channel,
		    .remaining_bytes = (uint32_t)len,
		    .channel_info = desc,
		    .channel_info_len = 16,
		};
		err = smb_req_end_pdu(req, smb2_write_req_encode(body, 80, &w));
	}
	if (!err) {
		req->no_replay = true; /* its descriptor is bound to this channel */
		req->pdu[0].credit_charge = smb_credit_charge(ch->conn, len);
		req->arg = o;
		req->done = oio_done;
		err = smb_req_fix_fids(ch->c, req);
		if (!err)
			err = smb_conn_submit(ch->conn, req);
	}
	if (err) {
		if (req)
			smb_req_put(req);
		/* Nothing reached the server: release the token, then the buffer. */
		t->ops->io_token_put(t, o->tok, 0, oio_release_only, o);
	}
	/* The channel died since the token: the ordinary path, as above. */
	return conn_lost(err) ? -EAGAIN : err;
}

int smb_offload_read(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, size_t len,
                     smb_read_cb cb, void *arg)
{
	struct oio *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->is_read = true;
	o->rcb = cb;
	o->arg = arg;
	return oio_submit(ch, fid, offset, len, NULL, o);
}

int smb_offload_write(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset,
                      const void *data, size_t len, smb_write_cb cb, void *arg)
{
	struct oio *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->wcb = cb;
	o->arg = arg;
	return oio_submit(ch, fid, offset, len, data, o);
}

/* Any thread.  Is [p, p+len) inside one caller region registered on ch? */
static bool in_region(struct smb_chan *ch, const void *p, size_t len)
{
	struct smb_client *c = ch->c;
	uintptr_t a = (uintptr_t)p;
	int n = __atomic_load_n(&ch->nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		uintptr_t r = (uintptr_t)c->regions[i].addr;
		if (a >= r && a - r <= c->regions[i].len && len <= c->regions[i].len - (a - r))
			return true;
	}
	return false;
}

/* Can [p, p+len) go by RDMA in place on ch? */
static bool lendable(struct smb_chan *ch, const void *p, size_t len, bool is_read)
{
	return smb_offload_wanted(ch, len, is_read) && in_region(ch, p, len);
}

/* A lent I/O: buf is the caller's, inside a registered region. */
static int lent_io(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, void *buf,
                   size_t len, bool is_read, smb_read_cb rcb, smb_write_cb wcb, void *arg)
{
	if (!lendable(ch, buf, len, is_read))
		return -EAGAIN;
	struct oio *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->is_read = is_read;
	o->rcb = rcb;
	o->wcb = wcb;
	o->arg = arg;
	o->lent = true;
	o->buf = buf;
	return oio_submit(ch, fid, offset, len, NULL, o);
}

int smb_offload_write_lent(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset,
                           const void *data, size_t len, smb_write_cb cb, void *arg)
{
	return lent_io(ch, fid, offset, (void *)data, len, false, NULL, cb, arg);
}

int smb_offload_read_lent(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, void *buf,
                          size_t len, smb_read_cb cb, void *arg)
{
	return lent_io(ch, fid, offset, buf, len, true, cb, NULL, arg);
}

int smb_offload_regions_sync(struct smb_chan *ch)
{
	struct smb_client *c = ch->c;
	struct smb_transport *t = ch->conn->transport;
	if (!ch->pool.mem)
		return 0;
	int n = __atomic_load_n(&c->nregions, __ATOMIC_ACQUIRE);
	for (int i = ch->nregions; i < n; i++) {
		int err = t->ops->region_add(t, c->regions[i].addr, c->regions[i].len);
		if (err)
			return err;
		__atomic_store_n(&ch->nregions, i + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

int smb_client_region_add(struct smb_client *c, void *addr, size_t len)
{
	if (!addr || !len)
		return -EINVAL;
	pthread_mutex_lock(&c->chans_lock);
	int n = c->nregions, err = 0, offloading = 0;
	if (n == SMB_CLIENT_MAX_REGIONS) {
		pthread_mutex_unlock(&c->chans_lock);
		return -ENOSPC;
	}
	c->regions[n].addr = addr;
	c->regions[n].len = len;
	__atomic_store_n(&c->nregions, n + 1, __ATOMIC_RELEASE);
	for (int i = 0; i < c->nchans && !err; i++) {
		if (!c->chans[i]->pool.mem || c->chans[i]->dead)
			continue;
		offloading++;
		err = smb_offload_regions_sync(c->chans[i]);
	}
	/* No offloading channel: forget it.  (On an error some channels may
	 * have it and others not; each lends only what it registered.) */
	if (!offloading)
		__atomic_store_n(&c->nregions, n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->chans_lock);
	if (c->dfs)
		smb_dfs_region_add(c, addr, len); /* the DFS links' clients too */
	return err ? err : offloading ? 0 : -EOPNOTSUPP;
}
