/* client/conn.c — one channel: MessageIds, credits, the pending table,
 * compounding, signing and verification, timeouts, and failing everything
 * exactly once when the transport dies.
 *
 *   NEW --smb_conn_open()--> UP --transport dead / smb_conn_close()--> DEAD
 *
 * See conn.h for the request life cycle and the lock rules.
 */
#include "client/conn.h"
#include "common/crypto.h"
#include "client/transport_quic.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>
#include <time.h>

/* common/crypto.h numbers its algorithms as the wire does, without
 * smb2_const.h (common/ may not include it); the negotiated ids are passed to
 * it as they are, so the two must agree. */
_Static_assert(SMB_CIPHER_AES128_CCM == SMB2_ENCRYPTION_AES128_CCM &&
                   SMB_CIPHER_AES128_GCM == SMB2_ENCRYPTION_AES128_GCM &&
                   SMB_CIPHER_AES256_CCM == SMB2_ENCRYPTION_AES256_CCM &&
                   SMB_CIPHER_AES256_GCM == SMB2_ENCRYPTION_AES256_GCM,
               "common/crypto.h cipher ids are the wire's");
_Static_assert(SMB_SIGNING_HMAC_SHA256 == SMB2_SIGNING_HMAC_SHA256 &&
                   SMB_SIGNING_AES_CMAC == SMB2_SIGNING_AES_CMAC &&
                   SMB_SIGNING_AES_GMAC == SMB2_SIGNING_AES_GMAC,
               "common/crypto.h signing ids are the wire's");

#define CONN_TICK_MS       1000
#define CONN_CREDIT_TARGET 512  /* credits we try to keep available */
#define CONN_CREDIT_MAX    8192 /* never believe more than this */
/* A READ out for this much or more makes the transport read no further
 * ahead than a message's head (up->placing): below it, batching small
 * answers in one receive and copying their few bytes costs less than a
 * receive each. */
#define CONN_EXACT_READ (16u << 10)

uint16_t smb_credit_charge(const struct smb_conn *c, size_t len)
{
	if (!c->large_mtu)
		return 0;
	return len == 0 ? 1 : (uint16_t)((len - 1) / 65536 + 1);
}

static unsigned pdu_credits(const struct smb_pdu *p)
{
	return p->credit_charge ? p->credit_charge : 1;
}

static unsigned req_credits(const struct smb_req *r)
{
	unsigned n = 0;
	for (int i = 0; i < r->npdu; i++)
		n += pdu_credits(&r->pdu[i]);
	return n;
}

/* ---- the env: clock, timers, calls --------------------------------------------- */

static uint64_t evloop_now_us(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* struct smb_conn_timer is never defined here: the handle is the ev_timer. */
static int evloop_timer_add(void *ctx, uint64_t ms, void (*fn)(void *arg), void *arg,
                            struct smb_conn_timer **out)
{
	struct ev_timer *t;
	int err = ev_timer_add(ctx, ms, fn, arg, &t);
	if (err == 0)
		*out = (struct smb_conn_timer *)t;
	return err;
}

static void evloop_timer_cancel(void *ctx, struct smb_conn_timer *t)
{
	(void)ctx;
	ev_timer_cancel((struct ev_timer *)t);
}

static int evloop_call(void *ctx, void (*fn)(void *arg), void *arg)
{
	return ev_call(ctx, fn, arg);
}

struct smb_conn_env smb_conn_env_evloop(struct ev_loop *loop)
{
	return (struct smb_conn_env){.now_us = evloop_now_us,
	                             .timer_add = evloop_timer_add,
	                             .timer_cancel = evloop_timer_cancel,
	                             .call = evloop_call,
	                             .ctx = loop};
}

static uint64_t now_us(const struct smb_conn *c)
{
	return c->env.now_us(c->env.ctx);
}

static uint64_t now_ms(const struct smb_conn *c)
{
	return now_us(c) / 1000u;
}

static int conn_timer_add(struct smb_conn *c, uint64_t ms, void (*fn)(void *arg), void *arg,
                          struct smb_conn_timer **out)
{
	return c->env.timer_add(c->env.ctx, ms, fn, arg, out);
}

static int conn_call(struct smb_conn *c, void (*fn)(void *arg), void *arg)
{
	return c->env.call(c->env.ctx, fn, arg);
}

/* ---- requests ---------------------------------------------------------------- */

static int req_destructor(struct smb_req *req)
{
	(void)req;
	return 0;
}

struct smb_req *smb_req_new(struct smb_conn *c, void *talloc_parent)
{
	struct smb_req *req = talloc_zero(talloc_parent, struct smb_req);
	if (!req)
		return NULL;
	talloc_set_destructor(req, req_destructor);
	req->conn = c;
	req->refs = 1;
	return req;
}

void smb_req_get(struct smb_req *req)
{
	__atomic_add_fetch(&req->refs, 1, __ATOMIC_RELAXED);
}

void smb_req_put(struct smb_req *req)
{
	if (__atomic_sub_fetch(&req->refs, 1, __ATOMIC_ACQ_REL) == 0)
		talloc_free(req);
}

uint8_t *smb_req_begin_pdu(struct smb_req *req, uint16_t command, size_t body_cap)
{
	if (req->npdu >= SMB_REQ_MAX_PDU)
		return NULL;
	struct smb_pdu *p = &req->pdu[req->npdu];
	memset(p, 0, sizeof(*p));
	p->cap = SMB2_HDR_SIZE + body_cap + 8;
	p->buf = talloc_zero_size(req, p->cap);
	if (!p->buf)
		return NULL;
	p->command = command;
	p->req = req;
	return p->buf + SMB2_HDR_SIZE;
}

int smb_req_end_pdu(struct smb_req *req, ssize_t body_len)
{
	if (body_len < 0)
		return (int)body_len;
	struct smb_pdu *p = &req->pdu[req->npdu];
	if (!p->buf)
		return -ENOMEM;
	p->len = SMB2_HDR_SIZE + (size_t)body_len;
	req->npdu++;
	return 0;
}

void smb_req_set_payload(struct smb_req *req, int i, const void *data, size_t len,
                         uint16_t credit_charge)
{
	req->pdu[i].payload = data;
	req->pdu[i].payload_len = len;
	req->pdu[i].credit_charge = credit_charge;
}

void smb_req_set_payload_lent(struct smb_req *req, int i, const void *data, size_t len,
                              uint16_t credit_charge)
{
	smb_req_set_payload(req, i, data, len, credit_charge);
	req->payload_lent = true;
}

void smb_req_lend_rx(struct smb_req *req, int i, void *buf, size_t len)
{
	req->pdu[i].rx_buf = buf;
	req->pdu[i].rx_cap = len;
	req->pdu[i].rx_any = !buf;
}

/* ---- pending hash (conn->lock held) -------------------------------------------- */

/* conn->lock held: outstanding changes by delta.  Stored atomically, so
 * the scheduler (smb_sched_pick) may read it without the lock. */
static void conn_outstanding_add(struct smb_conn *c, int64_t delta)
{
	__atomic_store_n(&c->outstanding, (uint32_t)((int64_t)c->outstanding + delta),
	                 __ATOMIC_RELAXED);
}

static bool pdu_big_read(const struct smb_pdu *p)
{
	return p->command == SMB2_READ && (p->rx_buf || p->rx_any) && p->rx_cap >= CONN_EXACT_READ;
}

static unsigned bucket(uint64_t msgid)
{
	return (unsigned)(msgid % SMB_PENDING_BUCKETS);
}

static void pending_insert(struct smb_conn *c, struct smb_pdu *p)
{
	unsigned b = bucket(p->msgid);
	p->hnext = c->pending[b];
	c->pending[b] = p;
	c->npending++;
	if (pdu_big_read(p))
		__atomic_add_fetch(&c->nreads, 1, __ATOMIC_RELAXED);
}

static struct smb_pdu *pending_find(struct smb_conn *c, uint64_t msgid, bool remove)
{
	for (struct smb_pdu **pp = &c->pending[bucket(msgid)]; *pp; pp = &(*pp)->hnext) {
		struct smb_pdu *p = *pp;
		if (p->msgid != msgid)
			continue;
		if (remove) {
			*pp = p->hnext;
			p->hnext = NULL;
			c->npending--;
			conn_outstanding_add(c, -(int64_t)pdu_credits(p));
			if (pdu_big_read(p))
				__atomic_sub_fetch(&c->nreads, 1, __ATOMIC_RELAXED);
			if (p == c->place_pdu) {
				/* its answer is coming in place: the lender wants the
				 * buffer back (the transport drops the rest) */
				c->place.buf = NULL;
				c->place_pdu = NULL;
			}
		}
		return p;
	}
	return NULL;
}

/* Remove every PDU of req still pending; returns how many were. */
static int pending_remove_req(struct smb_conn *c, struct smb_req *req)
{
	int n = 0;
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		if (!p->have_rsp && pending_find(c, p->msgid, true) == p)
			n++;
	}
	return n;
}

/* ---- sending ------------------------------------------------------------------- */

static bool tx_held(struct smb_req *req)
{
	return __atomic_load_n(&req->tx_busy[0], __ATOMIC_SEQ_CST) ||
	       __atomic_load_n(&req->tx_busy[1], __ATOMIC_SEQ_CST);
}

static void deferred_done(void *arg)
{
	struct smb_req *req = arg;
	req->done(req);
}

/* The transport let go of a send.  A finished request whose lent payload
 * it held gets its done() now (the submitter's reference keeps req alive
 * until done() runs). */
static void tx_done(struct smb_txbuf *buf, int err)
{
	struct smb_req *req = buf->arg;
	__atomic_store_n(&req->tx_busy[buf == &req->txs[1]], false, __ATOMIC_SEQ_CST);
	if (req->payload_lent && !tx_held(req) &&
	    __atomic_exchange_n(&req->done_waiting, false, __ATOMIC_SEQ_CST) &&
	    conn_call(req->conn, deferred_done, req) < 0)
		req->done(req);
	smb_req_put(req);
}

void smb_req_finish(struct smb_req *req)
{
	if (req->payload_lent) {
		/* Whichever of us and tx_done() sees both "finished" and "no send
		 * held" last takes done_waiting back and runs done(). */
		__atomic_store_n(&req->done_waiting, true, __ATOMIC_SEQ_CST);
		if (tx_held(req) ||
		    !__atomic_exchange_n(&req->done_waiting, false, __ATOMIC_SEQ_CST))
			return;
	}
	req->done(req);
}

/* Assign MessageIds and credits, fill headers; conn->lock held. */
static void req_prepare_locked(struct smb_conn *c, struct smb_req *req)
{
	unsigned have = c->credits + c->outstanding;
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		unsigned n = pdu_credits(p);
		p->msgid = c->next_msgid;
		c->next_msgid += n;
		c->credits -= n;
		conn_outstanding_add(c, n);
		uint16_t ask = (uint16_t)n;
		if (have < CONN_CREDIT_TARGET)
			ask = (uint16_t)(n + 64);
		struct smb2_hdr h = {
		    .credit_charge = p->credit_charge,
		    .status = c->channel_sequence ? *c->channel_sequence : 0,
		    .command = p->command,
		    .credits = ask,
		    .message_id = p->msgid,
		    .process_id = 0xFEFF,
		    .tree_id = req->tree_id,
		    .session_id = req->session_id,
		};
		if (req->related && i > 0)
			h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
		if (req->replay && c->channel_sequence)
			h.flags |= SMB2_FLAGS_REPLAY_OPERATION;
		req->sent_seq = (uint16_t)h.status;
		bool last = i == req->npdu - 1;
		if (!last) {
			size_t padded = (p->len + 7) & ~(size_t)7;
			/* begin_pdu left 8 bytes of zeroed slack for this */
			p->len = padded;
			h.next_command = (uint32_t)padded;
		}
		smb2_hdr_encode(p->buf, SMB2_HDR_SIZE, &h);
		pending_insert(c, p);
	}
}

/* Does this request go out encrypted?  Not before the session has keys,
 * nor SESSION_SETUP: a binding is signed with the session's signing key,
 * and Samba refuses an encrypted one (it then skips the signature check
 * binding needs). */
static bool req_sealable(const struct smb_conn *c, const struct smb_req *req)
{
	const struct smb_crypt *k = c->crypt;
	return k && __atomic_load_n(&k->active, __ATOMIC_ACQUIRE) && k->have_key &&
	       req->session_id == k->session_id && req->pdu[0].command != SMB2_SESSION_SETUP;
}

/* Does this request go out signed (and must its answer be)?  An encrypted
 * one is not signed: the AEAD tag covers it. */
static bool req_signed(const struct smb_conn *c, const struct smb_req *req)
{
	const struct smb_signing *s = c->signing;
	return s && s->have_key && !req->no_sign && !req->sealed && req->session_id &&
	       (s->active || req->force_sign);
}

static int req_sign(struct smb_conn *c, struct smb_req *req)
{
	struct smb_signing *s = c->signing;
	if (!req_signed(c, req))
		return 0;
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		uint32_t flags = smb_le32(p->buf + SMB2_HDR_FLAGS_OFF) | SMB2_FLAGS_SIGNED;
		smb_put_le32(p->buf + SMB2_HDR_FLAGS_OFF, flags);
		memset(p->buf + SMB2_HDR_SIGNATURE_OFF, 0, 16);
		struct iovec iov[2] = {{p->buf, p->len}, {(void *)p->payload, p->payload_len}};
		int err = smb_sign_pdu(s->alg, s->key, iov, p->payload_len ? 2 : 1,
		                       p->buf + SMB2_HDR_SIGNATURE_OFF);
		if (err)
			return err;
	}
	return 0;
}

static void req_build_tx(struct smb_req *req)
{
	struct smb_txbuf *tx = &req->txs[req->txi];
	req->tx = tx;
	tx->iovcnt = 0;
	tx->len = 0;
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		tx->iov[tx->iovcnt].iov_base = p->buf;
		tx->iov[tx->iovcnt++].iov_len = p->len;
		tx->len += p->len;
		if (p->payload_len) {
			tx->iov[tx->iovcnt].iov_base = (void *)p->payload;
			tx->iov[tx->iovcnt++].iov_len = p->payload_len;
			tx->len += p->payload_len;
		}
	}
	tx->done = tx_done;
	tx->arg = req;
}

/* Replace the built tx by one TRANSFORM message ([MS-SMB2] 3.2.4.1.8):
 * header, then the whole chain (payloads included) encrypted as one. */
static int req_seal(struct smb_conn *c, struct smb_req *req)
{
	struct smb_crypt *k = c->crypt;
	struct smb_txbuf *tx = req->tx;
	size_t total = tx->len;
	if (total > UINT32_MAX - SMB2_TRANSFORM_HDR_SIZE)
		return -EMSGSIZE;
	talloc_free(req->sealbuf[req->txi]);
	uint8_t *b = talloc_size(req, SMB2_TRANSFORM_HDR_SIZE + total);
	req->sealbuf[req->txi] = b;
	if (!b)
		return -ENOMEM;
	uint8_t *m = b + SMB2_TRANSFORM_HDR_SIZE;
	for (int i = 0; i < tx->iovcnt; i++) {
		memcpy(m, tx->iov[i].iov_base, tx->iov[i].iov_len);
		m += tx->iov[i].iov_len;
	}
	struct smb2_transform_hdr th = {
	    .original_size = (uint32_t)total,
	    .flags = SMB2_TRANSFORM_FLAG_ENCRYPTED,
	    .session_id = k->session_id,
	};
	uint64_t n = __atomic_fetch_add(&k->nonce_ctr, 1, __ATOMIC_RELAXED);
	smb_put_le64(th.nonce, n);
	memcpy(th.nonce + 8, k->salt, smb_cipher_nonce_len(k->cipher) - 8);
	smb2_transform_hdr_encode(b, &th);
	uint8_t tag[16];
	int err = smb_aead_encrypt(k->cipher, k->enc_key, th.nonce, b + SMB2_TRANSFORM_AAD_OFF,
	                           SMB2_TRANSFORM_HDR_SIZE - SMB2_TRANSFORM_AAD_OFF,
	                           b + SMB2_TRANSFORM_HDR_SIZE, total, tag);
	if (err)
		return err;
	memcpy(b + 4, tag, 16);
	tx->iov[0].iov_base = b;
	tx->iov[0].iov_len = SMB2_TRANSFORM_HDR_SIZE + total;
	tx->iovcnt = 1;
	tx->len = SMB2_TRANSFORM_HDR_SIZE + total;
	return 0;
}

/* A received TRANSFORM message: decrypt it in place.  On success *plain
 * points at the SMB2 message(s) inside msg. */
static int conn_unseal(struct smb_conn *c, uint8_t *msg, size_t len, uint8_t **plain,
                       size_t *plain_len)
{
	struct smb2_transform_hdr th;
	const struct smb_crypt *k = c->crypt;
	int err = smb2_transform_hdr_decode(msg, len, &th);
	if (err) {
		smb_err("%s: malformed TRANSFORM header (%s)", c->peer,
		        err == -EPROTO ? "unknown flags" : "bad length");
		return -EBADMSG;
	}
	if (!k || !k->have_key) {
		smb_err("%s: server sent an encrypted message, and the session has no "
		        "encryption keys",
		        c->peer);
		return -EPROTO;
	}
	if (th.session_id != k->session_id) {
		smb_err("%s: encrypted message for session 0x%llx, ours is 0x%llx", c->peer,
		        (unsigned long long)th.session_id, (unsigned long long)k->session_id);
		return -EPROTO;
	}
	err = smb_aead_decrypt(k->cipher, k->dec_key, th.nonce, msg + SMB2_TRANSFORM_AAD_OFF,
	                       SMB2_TRANSFORM_HDR_SIZE - SMB2_TRANSFORM_AAD_OFF,
	                       msg + SMB2_TRANSFORM_HDR_SIZE, th.original_size, th.signature);
	if (err) {
		smb_err("%s: an encrypted message failed to decrypt (%s)", c->peer,
		        err == -EBADMSG ? "bad authentication tag: wrong key or tampering"
		                        : strerror(-err));
		return -EIO;
	}
	*plain = msg + SMB2_TRANSFORM_HDR_SIZE;
	*plain_len = th.original_size;
	return 0;
}

static bool conn_gone(int err)
{
	return err == -ECONNABORTED || err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE;
}

/* The channel is gone under a request not yet on the wire: another channel
 * may take it (multichannel).  true if it did. */
static bool offer_orphan(struct smb_conn *c, struct smb_req *req, int err)
{
	return conn_gone(err) && !req->no_replay && c->on_orphan &&
	       c->on_orphan(c->on_dead_arg, req);
}

/* Sign and hand to the transport.  The req is already pending.  Returns 0, or
 * -errno when the req could not be sent and was taken back out of pending
 * (the caller owns it again); if someone else already completed it, 0. */
static int req_send(struct smb_conn *c, struct smb_req *req)
{
	req->sealed = req_sealable(c, req);
	int err = req->sealed ? 0 : req_sign(c, req);
	if (!err) {
		req_build_tx(req);
		if (req->sealed)
			err = req_seal(c, req);
	}
	if (!err) {
		smb_req_get(req); /* for the transport */
		__atomic_add_fetch(&c->st_requests, 1, __ATOMIC_RELAXED);
		for (int i = 0; i < req->npdu; i++)
			if (req->pdu[i].command < SMB_CONN_COMMANDS)
				__atomic_add_fetch(&c->st_commands[req->pdu[i].command], 1,
				                   __ATOMIC_RELAXED);
		__atomic_add_fetch(&c->st_bytes_sent, req->tx->len, __ATOMIC_RELAXED);
		__atomic_store_n(&req->tx_busy[req->txi], true, __ATOMIC_RELEASE);
		/* counted before the send: the channel may die, and the req be
		 * reset for a replay, before smb_transport_send() returns */
		__atomic_add_fetch(&req->sends, 1, __ATOMIC_ACQ_REL);
		err = smb_transport_send(c->transport, req->tx);
		if (!err)
			return 0;
		__atomic_sub_fetch(&req->sends, 1, __ATOMIC_ACQ_REL);
		__atomic_store_n(&req->tx_busy[req->txi], false, __ATOMIC_RELEASE);
		smb_req_put(req);
	}
	pthread_mutex_lock(&c->lock);
	int n = pending_remove_req(c, req);
	pthread_mutex_unlock(&c->lock);
	if (n && offer_orphan(c, req, err))
		return 0;
	return n ? err : 0;
}

/* The log2 bucket of a latency (SMB_LAT_BUCKETS, client/client.h). */
static unsigned lat_bucket(uint64_t us)
{
	unsigned k = 0;
	while (k < SMB_CONN_LAT_BUCKETS - 1 && us > (UINT64_C(1) << k))
		k++;
	return k;
}

/* Every answered request goes into the conn's latency histogram (smbrdmactl
 * stats and top); small requests only feed the scheduler's EWMA (a READ or
 * WRITE's time is mostly its payload's). */
static void note_latency(struct smb_req *req)
{
	struct smb_conn *c = req->conn;
	if (req->err || !c || !req->t0_us)
		return;
	uint64_t sample = now_us(c) - req->t0_us;
	__atomic_add_fetch(&c->st_lat_buckets[lat_bucket(sample)], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->st_lat_sum_us, sample, __ATOMIC_RELAXED);
	if (req->pdu[0].payload_len || req->pdu[0].command == SMB2_READ ||
	    req->pdu[0].command == SMB2_WRITE)
		return;
	uint64_t old = __atomic_load_n(&c->st_lat_ewma_us, __ATOMIC_RELAXED);
	uint64_t ewma = old ? (old * 7 + sample) / 8 : sample;
	__atomic_store_n(&c->st_lat_ewma_us, ewma ? ewma : 1, __ATOMIC_RELAXED);
}

static void req_complete(struct smb_req *req)
{
	note_latency(req);
	smb_req_finish(req);
}

/* Loop thread: send queued requests the credits now allow. */
static void conn_kick(struct smb_conn *c)
{
	for (;;) {
		pthread_mutex_lock(&c->lock);
		struct smb_req *req = c->wait_head;
		if (!req || c->state != SMB_CONN_UP) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		unsigned need = req_credits(req);
		if (c->credits < need) {
			if (c->outstanding == 0) {
				/* Nothing in flight will ever grant more. */
				c->wait_head = req->wnext;
				if (!c->wait_head)
					c->wait_tail = NULL;
				pthread_mutex_unlock(&c->lock);
				smb_err(
				    "%s: server granted %u credits, a request needs %u: failing it",
				    c->peer, c->credits, need);
				req->err = -EIO;
				req_complete(req);
				continue;
			}
			pthread_mutex_unlock(&c->lock);
			return;
		}
		c->wait_head = req->wnext;
		if (!c->wait_head)
			c->wait_tail = NULL;
		req_prepare_locked(c, req);
		pthread_mutex_unlock(&c->lock);
		int err = req_send(c, req);
		if (err) {
			req->err = err;
			req_complete(req);
		}
	}
}

static void conn_kick_cb(void *arg);

int smb_conn_submit(struct smb_conn *c, struct smb_req *req)
{
	if (req->npdu == 0)
		return -EINVAL;
	req->conn = c;
	req->t0_us = now_us(c);
	if (c->timeout_ms && !req->deadline_ms) /* the same clock, in ms: no second read */
		req->deadline_ms = req->t0_us / 1000u + c->timeout_ms;
	/* a planned move holds what may wait: the manager parks it */
	if (c->hold && __atomic_load_n(c->hold, __ATOMIC_ACQUIRE) && !req->no_replay &&
	    c->on_held && c->on_held(c->on_dead_arg, req))
		return 0;
	pthread_mutex_lock(&c->lock);
	if (c->state != SMB_CONN_UP) {
		int err = c->dead_err ? c->dead_err : -ENOTCONN;
		bool fresh = c->state == SMB_CONN_DEAD;
		pthread_mutex_unlock(&c->lock);
		if (fresh && offer_orphan(c, req, err))
			return 0;
		return err;
	}
	unsigned need = req_credits(req);
	if (c->wait_head || c->credits < need) {
		req->wnext = NULL;
		if (c->wait_tail)
			c->wait_tail->wnext = req;
		else
			c->wait_head = req;
		c->wait_tail = req;
		bool stuck = c->outstanding == 0;
		pthread_mutex_unlock(&c->lock);
		if (stuck)
			conn_call(c, conn_kick_cb, c);
		return 0;
	}
	req_prepare_locked(c, req);
	pthread_mutex_unlock(&c->lock);
	return req_send(c, req);
}

unsigned smb_conn_inflight(struct smb_conn *c)
{
	unsigned n = 0;
	pthread_mutex_lock(&c->lock);
	n = c->npending;
	for (struct smb_req *r = c->wait_head; r; r = r->wnext)
		n++;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* ---- receiving ----------------------------------------------------------------- */

/* The signature of a PDU whose first len bytes are at pdu and the rest (tail,
 * tail_len bytes) elsewhere: a READ received in place. */
static int verify_pdu2(const struct smb_signing *s, const uint8_t *pdu, size_t len,
                       const void *tail, size_t tail_len)
{
	uint8_t saved[16], calc[16];
	uint8_t *m = (uint8_t *)pdu; /* we own the receive buffer */
	memcpy(saved, pdu + SMB2_HDR_SIGNATURE_OFF, 16);
	memset(m + SMB2_HDR_SIGNATURE_OFF, 0, 16);
	struct iovec iov[2] = {{m, len}, {(void *)tail, tail_len}};
	int err = smb_sign_pdu(s->alg, s->key, iov, tail_len ? 2 : 1, calc);
	memcpy(m + SMB2_HDR_SIGNATURE_OFF, saved, 16);
	if (err)
		return err;
	return smb_ct_equal(saved, calc, 16) ? 0 : -EIO;
}

int smb_verify_pdu(const struct smb_signing *s, const uint8_t *pdu, size_t len)
{
	return verify_pdu2(s, pdu, len, NULL, 0);
}

static void resend_later(void *arg)
{
	struct smb_req *req = arg;
	struct smb_conn *c = req->conn;
	pthread_mutex_lock(&c->lock);
	for (struct smb_req **pp = &c->resend_waiting; *pp; pp = &(*pp)->rnext)
		if (*pp == req) {
			*pp = req->rnext;
			break;
		}
	req->rnext = NULL;
	req->resend_timer = NULL;
	pthread_mutex_unlock(&c->lock);
	int err = smb_conn_submit(c, req);
	if (err) {
		req->err = err;
		req_complete(req);
	}
}

/* [MS-SMB2] 3.3.5.2.10: STATUS_FILE_NOT_AVAILABLE answers a WRITE (or
 * SET_INFO, IOCTL) sent under an older ChannelSequence than the open has
 * seen - after a channel loss bumped it, one sent before on another
 * channel may arrive after a newer one - or a replay while requests from
 * before the bump are still outstanding at the server.  Nothing was done:
 * send it again, at once under the new sequence, or after a short wait for
 * a replay (the server finishes or drops the old ones).  true if resent
 * (the req completes later). */
static bool resend_stale(struct smb_conn *c, struct smb_req *req)
{
	if (req->err || !c->channel_sequence || req->seq_retries >= 50)
		return false;
	bool stale = false;
	for (int i = 0; i < req->npdu; i++)
		stale |= req->pdu[i].rsp_hdr.status == STATUS_FILE_NOT_AVAILABLE;
	bool old = req->sent_seq != __atomic_load_n(c->channel_sequence, __ATOMIC_ACQUIRE);
	bool twice = req->maybe_twice; /* this send was refused: not carried out */
	if (!stale || (!old && !req->replay) || smb_req_reset_for_replay(req))
		return false;
	req->maybe_twice = twice;
	req->seq_retries++;
	smb_debug("%s: %s refused (%s); sending it again", c->peer,
	          smb2_command_str(req->pdu[0].command),
	          old ? "an old ChannelSequence" : "older requests still outstanding");
	if (old) {
		if (smb_conn_submit(c, req) == 0)
			return true;
		req->err = -EIO;
		return false;
	}
	req->conn = c;
	unsigned ms = 20u * (req->seq_retries < 10 ? req->seq_retries : 10u);
	/* Armed and listed under the lock, so that the conn's death (this
	 * thread too) finds it either waiting or already resent. */
	pthread_mutex_lock(&c->lock);
	bool dead = c->state == SMB_CONN_DEAD;
	int err =
	    dead ? -ECONNABORTED : conn_timer_add(c, ms, resend_later, req, &req->resend_timer);
	if (!err) {
		req->rnext = c->resend_waiting;
		c->resend_waiting = req;
	}
	pthread_mutex_unlock(&c->lock);
	if (!err)
		return true;
	req->err = dead ? -ECONNABORTED : -EIO;
	return false;
}

static void conn_fatal(struct smb_conn *c, const char *why)
{
	smb_err("%s: %s; dropping the connection", c->peer, why);
	pthread_mutex_lock(&c->lock);
	if (!c->dead_why[0])
		snprintf(c->dead_why, sizeof(c->dead_why), "%s", why);
	pthread_mutex_unlock(&c->lock);
	smb_transport_shutdown(c->transport);
}

void smb_conn_abort(struct smb_conn *c, const char *why)
{
	conn_fatal(c, why);
}

/* How far a received PDU may be believed before it changes anything.
 *
 * On a sealed session only what arrived encrypted (the AEAD tag proves the
 * sender holds the session's key) is believed.  On a signed session a PDU
 * that carries a signature is believed once it verifies.  [MS-SMB2]
 * 3.2.5.1.3 exempts two kinds from signing, and servers leave them
 * unsigned: interim (STATUS_PENDING) responses and oplock/lease break
 * notifications.  Those are UNVERIFIABLE: they may only do what anyone in
 * the network path could do anyway by delaying or dropping packets - mark
 * a request async (for CANCEL), restart its wait once, take cached state
 * away (break handlers only ever lower it), give back at most the credits
 * the request asked for (an interim answer carries the request's grant);
 * a break grants none.  FORGED ones (unencrypted on a sealed session, a
 * signature that does not verify) change nothing.  Before a
 * session has keys (NEGOTIATE, SESSION_SETUP) there is nothing to check
 * against and everything is TRUSTED; the handshake proves itself
 * (session.c). */
enum rx_trust { RX_TRUSTED, RX_UNVERIFIABLE, RX_FORGED };

static bool conn_sealed(const struct smb_conn *c)
{
	return c->crypt && __atomic_load_n(&c->crypt->active, __ATOMIC_ACQUIRE);
}

static bool conn_signs(const struct smb_conn *c)
{
	return c->signing && c->signing->active && c->signing->have_key;
}

/* An interim response or a break: not tied to a signed request. */
static enum rx_trust rx_trust_unsolicited(struct smb_conn *c, bool sealed, bool req_signed,
                                          const struct smb2_hdr *h, const uint8_t *pdu, size_t len,
                                          const char *what)
{
	if (conn_sealed(c)) {
		if (sealed)
			return RX_TRUSTED;
		smb_warn("%s: unencrypted %s (%s) on an encrypted session ignored", c->peer, what,
		         smb2_command_str(h->command));
		return RX_FORGED;
	}
	if (!req_signed || sealed)
		return RX_TRUSTED;
	if (!(h->flags & SMB2_FLAGS_SIGNED))
		return RX_UNVERIFIABLE;
	if (smb_verify_pdu(c->signing, pdu, len) < 0) {
		smb_warn("%s: bad signature on %s (%s); ignored", c->peer, what,
		         smb2_command_str(h->command));
		return RX_FORGED;
	}
	return RX_TRUSTED;
}

static void credits_add_locked(struct smb_conn *c, unsigned n)
{
	if (c->credits + n <= CONN_CREDIT_MAX)
		c->credits += n;
	else
		c->credits = CONN_CREDIT_MAX;
}

/* A final response: true if it may be believed; else says why and the
 * request fails with EIO. */
static bool rx_final_ok(struct smb_conn *c, bool sealed, const struct smb_req *req,
                        const struct smb2_hdr *h, const uint8_t *pdu, size_t len, const void *tail,
                        size_t tail_len)
{
	const char *cmd = smb2_command_str(h->command);
	unsigned long long mid = (unsigned long long)h->message_id;
	if (req->sealed && !sealed) {
		smb_err("%s: %s response (MessageId %llu) came unencrypted on an encrypted "
		        "session; failing the request with EIO",
		        c->peer, cmd, mid);
		return false;
	}
	if (!req_signed(c, req) || sealed || req->no_verify)
		return true;
	if (!(h->flags & SMB2_FLAGS_SIGNED)) {
		smb_err("%s: %s response (MessageId %llu) is not signed on a signed session; "
		        "failing the request with EIO",
		        c->peer, cmd, mid);
		return false;
	}
	if (verify_pdu2(c->signing, pdu, len, tail, tail_len) < 0) {
		smb_err("%s: bad signature on %s response (MessageId %llu); failing the request "
		        "with EIO",
		        c->peer, cmd, mid);
		return false;
	}
	return true;
}

/* up->place: a READ answer whose PDU lent a buffer has its payload (the
 * message's tail) received straight into it.  Only the plain case: one
 * unencrypted PDU, STATUS_SUCCESS, the data last in the message and no
 * longer than the loan; anything else comes whole and is copied. */
static struct smb_rx_place *conn_place(void *arg, const uint8_t *head, size_t msg_len)
{
	struct smb_conn *c = arg;
	const uint8_t *b = head + SMB2_HDR_SIZE;
	/* on a sealed session a cleartext answer is refused: write none of it */
	if (conn_sealed(c) || smb_le32(head) != SMB2_PROTOCOL_ID ||
	    smb_le16(head + 12) != SMB2_READ || smb_le32(head + 8) != STATUS_SUCCESS ||
	    smb_le32(head + 20) != 0 || !(smb_le32(head + 16) & SMB2_FLAGS_SERVER_TO_REDIR) ||
	    smb_le16(b) != 17)
		return NULL;
	size_t off = b[2], dlen = smb_le32(b + 4);
	if (off < SMB_RX_PLACE_HEAD || !dlen || off + dlen != msg_len)
		return NULL;
	uint64_t mid = smb_le64(head + 24);
	pthread_mutex_lock(&c->lock);
	struct smb_pdu *p = pending_find(c, mid, false);
	/* A small answer with no lent buffer comes whole: it was read ahead
	 * into the transport's stage with its neighbours (up->placing is false
	 * for reads below CONN_EXACT_READ), so placing its tail would cost a
	 * buffer of its own and a copy, and save nothing. */
	bool small_any = p && !p->rx_buf && dlen < CONN_EXACT_READ;
	if (!p || p->command != SMB2_READ || !(p->rx_buf || p->rx_any) || dlen > p->rx_cap ||
	    small_any || c->placing) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	if (!p->rx_buf) {
		/* loop thread, like the talloc_reference() in conn_recv() */
		p->rx_buf = talloc_size(p->req, p->rx_cap);
		if (!p->rx_buf) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
	}
	c->placing = true;
	c->place_pdu = p;
	c->place = (struct smb_rx_place){.buf = p->rx_buf, .off = off};
	c->place_len = dlen;
	pthread_mutex_unlock(&c->lock);
	return &c->place;
}

/* up->placing: READs are out, so their answers may be placed. */
static bool conn_placing(void *arg)
{
	struct smb_conn *c = arg;
	return __atomic_load_n(&c->nreads, __ATOMIC_RELAXED) != 0;
}

/* conn_recv's cases (loop thread, conn->lock not held).  An oplock or
 * lease break notification: its credits count only when it verifies. */
static void rx_break(struct smb_conn *c, bool sealed, const struct smb2_hdr *h, const uint8_t *pdu,
                     size_t plen)
{
	enum rx_trust t =
	    rx_trust_unsolicited(c, sealed, conn_signs(c), h, pdu, plen, "break notification");
	if (t == RX_FORGED)
		return;
	if (t == RX_TRUSTED) {
		pthread_mutex_lock(&c->lock);
		credits_add_locked(c, h->credits);
		pthread_mutex_unlock(&c->lock);
	}
	if (c->on_break)
		c->on_break(c->on_dead_arg, pdu, plen);
	else
		smb_debug("%s: oplock/lease break notification ignored", c->peer);
}

/* A response nothing waits for: late (its request timed out) or stray.
 * Its credits are the server's, if it can show it is the server (not when
 * its payload went to a loan that was revoked: nothing to verify it with). */
static void rx_stray(struct smb_conn *c, bool sealed, bool placed, const struct smb2_hdr *h,
                     const uint8_t *pdu, size_t plen)
{
	enum rx_trust t =
	    placed ? (conn_signs(c) ? RX_UNVERIFIABLE : RX_TRUSTED)
	           : rx_trust_unsolicited(c, sealed, conn_signs(c), h, pdu, plen, "response");
	if (t == RX_TRUSTED) {
		pthread_mutex_lock(&c->lock);
		credits_add_locked(c, h->credits);
		pthread_mutex_unlock(&c->lock);
	}
	smb_warn("%s: response to unknown MessageId %llu (%s) ignored", c->peer,
	         (unsigned long long)h->message_id, smb2_command_str(h->command));
}

/* An interim (STATUS_PENDING) answer to p, whose request signs
 * (signed_req): the request goes async, and the first interim answer
 * restarts its wait once - more of them must not keep it waiting forever. */
static void rx_interim(struct smb_conn *c, bool sealed, bool signed_req, struct smb_pdu *p,
                       const struct smb2_hdr *h, const uint8_t *pdu, size_t plen)
{
	enum rx_trust t =
	    rx_trust_unsolicited(c, sealed, signed_req, h, pdu, plen, "interim response");
	if (t == RX_FORGED)
		return;
	pthread_mutex_lock(&c->lock);
	if (pending_find(c, h->message_id, false) == p) {
		if (!p->async) {
			p->req->deadline_ms = c->timeout_ms ? now_ms(c) + c->timeout_ms : 0;
			/* The interim answer carries the grant for this request
			 * (Samba's final one then grants none); unverified, it may
			 * give back no more than we asked for. */
			unsigned grant = h->credits;
			unsigned asked = smb_le16(p->buf + SMB2_HDR_CREDITS_OFF);
			if (t == RX_UNVERIFIABLE && grant > asked)
				grant = asked;
			credits_add_locked(c, grant);
		}
		p->async = true;
		p->async_id = h->async_id;
	}
	pthread_mutex_unlock(&c->lock);
}

static void conn_recv(void *arg, uint8_t *msg, size_t len)
{
	struct smb_conn *c = arg;
	struct smb_req *done_head = NULL, **done_tail = &done_head;
	/* Was this message's tail received in place?  (place_pdu NULL: it was
	 * revoked and dropped.) */
	bool placed = false;
	struct smb_pdu *place_pdu = NULL;
	size_t place_len = 0, place_copied = 0;
	if (c->placing) {
		pthread_mutex_lock(&c->lock);
		placed = true;
		place_pdu = c->place_pdu;
		place_len = c->place_len;
		place_copied = c->place.copied;
		c->placing = false;
		c->place_pdu = NULL;
		pthread_mutex_unlock(&c->lock);
		__atomic_add_fetch(&c->st_bytes_received, place_len, __ATOMIC_RELAXED);
	}

	__atomic_add_fetch(&c->st_bytes_received, len + 4, __ATOMIC_RELAXED);
	__atomic_store_n(&c->last_rx_ms, now_ms(c), __ATOMIC_RELAXED);
	/* msg stays the talloc handle; buf/len are what is parsed. */
	uint8_t *buf = msg;
	bool sealed = len >= 4 && smb_le32(msg) == SMB2_TRANSFORM_ID;
	if (sealed && conn_unseal(c, msg, len, &buf, &len) < 0) {
		talloc_unlink(NULL, msg);
		conn_fatal(c, "undecryptable message from server");
		goto complete;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t plen = smb2_compound_next(buf, len, off);
		struct smb2_hdr h;
		if (plen < 0 || smb2_hdr_decode(buf + off, (size_t)plen, &h) < 0) {
			talloc_unlink(NULL, msg);
			conn_fatal(c, "malformed SMB2 header or compound chain from server");
			goto complete;
		}
		const uint8_t *pdu_bytes = buf + off;
		off += (size_t)plen;
		if (!(h.flags & SMB2_FLAGS_SERVER_TO_REDIR)) {
			smb_warn("%s: ignoring a message without the response flag", c->peer);
			continue;
		}
		if (h.message_id == UINT64_MAX && h.command == SMB2_OPLOCK_BREAK) {
			rx_break(c, sealed, &h, pdu_bytes, (size_t)plen);
			continue;
		}
		/* STATUS_PENDING is always an interim answer; without the async
		 * flag it is a server bug, taken as one all the same (cifs.ko
		 * does), and said. */
		bool interim = h.status == STATUS_PENDING;
		if (interim && !(h.flags & SMB2_FLAGS_ASYNC_COMMAND))
			smb_warn("%s: %s response (MessageId %llu) is STATUS_PENDING without the "
			         "async flag; taken as an interim response",
			         c->peer, smb2_command_str(h.command),
			         (unsigned long long)h.message_id);
		pthread_mutex_lock(&c->lock);
		struct smb_pdu *p = pending_find(c, h.message_id, !interim);
		if (p && p->command != h.command) {
			/* put it back: a response for another command is a server bug */
			if (!interim) {
				pending_insert(c, p);
				conn_outstanding_add(c, pdu_credits(p));
			}
			pthread_mutex_unlock(&c->lock);
			smb_err(
			    "%s: response MessageId %llu has command %s, expected another; ignored",
			    c->peer, (unsigned long long)h.message_id, smb2_command_str(h.command));
			continue;
		}
		if (!p) {
			pthread_mutex_unlock(&c->lock);
			rx_stray(c, sealed, placed, &h, pdu_bytes, (size_t)plen);
			continue;
		}
		struct smb_req *req = p->req;
		if (interim) {
			/* Still pending, so still ours: verify outside the lock. */
			bool signed_req = req_signed(c, req) && !req->no_verify;
			pthread_mutex_unlock(&c->lock);
			rx_interim(c, sealed, signed_req, p, &h, pdu_bytes, (size_t)plen);
			continue;
		}
		pthread_mutex_unlock(&c->lock);

		size_t tail = p == place_pdu ? place_len : 0;
		if (placed && !tail) {
			/* cannot be: conn_place() matched this message to place_pdu */
			req->err = -EIO;
		} else if (!rx_final_ok(c, sealed, req, &h, pdu_bytes, (size_t)plen, p->rx_buf,
		                        tail)) {
			req->err = -EIO;
		} else {
			pthread_mutex_lock(&c->lock);
			credits_add_locked(c, h.credits);
			pthread_mutex_unlock(&c->lock);
		}
		p->have_rsp = true;
		p->rsp_hdr = h;
		p->rsp = pdu_bytes;
		p->rsp_len = (size_t)plen;
		p->rsp_placed = tail;
		p->rsp_copied = tail ? place_copied : 0;
		/* Each request answered here keeps the message alive. */
		if (req->last_rx != msg) {
			talloc_reference(req, msg);
			req->last_rx = msg;
		}
		if (++req->received == req->npdu) {
			req->dnext = NULL;
			*done_tail = req;
			done_tail = &req->dnext;
		}
	}
	talloc_unlink(NULL, msg);
complete:
	while (done_head) {
		struct smb_req *next = done_head->dnext;
		if (!resend_stale(c, done_head))
			req_complete(done_head);
		done_head = next;
	}
	conn_kick(c);
}

static void conn_kick_cb(void *arg)
{
	conn_kick(arg);
}

/* ---- death and timeouts -------------------------------------------------------- */

/* Take every pending and waiting request off the conn (lock held). */
static struct smb_req *collect_all_locked(struct smb_conn *c)
{
	struct smb_req *list = NULL;
	for (unsigned b = 0; b < SMB_PENDING_BUCKETS; b++) {
		while (c->pending[b]) {
			struct smb_pdu *p = c->pending[b];
			struct smb_req *req = p->req;
			pending_remove_req(c, req);
			req->wnext = list;
			list = req;
		}
	}
	struct smb_req *w = c->wait_head;
	while (w) {
		struct smb_req *next = w->wnext;
		w->wnext = list;
		list = w;
		w = next;
	}
	c->wait_head = c->wait_tail = NULL;
	return list;
}

static void fail_list(struct smb_req *list, int err)
{
	while (list) {
		struct smb_req *next = list->wnext;
		if (!list->err)
			list->err = err;
		req_complete(list);
		list = next;
	}
}

int smb_req_reset_for_replay(struct smb_req *req)
{
	/* The next send uses the other txbuf; it must be free. */
	int next = req->txi ^ 1;
	if (__atomic_load_n(&req->tx_busy[next], __ATOMIC_ACQUIRE))
		return -EBUSY;
	req->txi = next;
	req->err = 0;
	req->received = 0;
	req->last_rx = NULL;
	req->wnext = req->dnext = NULL;
	/* Only a request some transport took is a replay: one that never
	 * left (refused by a dead transport) goes out again as new, without
	 * SMB2_FLAGS_REPLAY_OPERATION, and its failure means what it says. */
	if (__atomic_load_n(&req->sends, __ATOMIC_ACQUIRE) > 0) {
		req->replay = true;
		req->maybe_twice = true;
	}
	req->deadline_ms = 0;
	for (int i = 0; i < req->npdu; i++) {
		struct smb_pdu *p = &req->pdu[i];
		p->have_rsp = false;
		p->async = false;
		p->async_id = 0;
		p->rsp = NULL;
		p->rsp_len = 0;
		p->rsp_placed = p->rsp_copied = 0;
		p->hnext = NULL;
		memset(&p->rsp_hdr, 0, sizeof(p->rsp_hdr));
	}
	return 0;
}

/* ---- replay classes (the table in conn.h) ---- */

static uint32_t body_u32(const struct smb_pdu *p, size_t off)
{
	if (p->len < SMB2_HDR_SIZE + off + 4)
		return 0;
	const uint8_t *b = p->buf + SMB2_HDR_SIZE + off;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint8_t body_u8(const struct smb_pdu *p, size_t off)
{
	return p->len > SMB2_HDR_SIZE + off ? p->buf[SMB2_HDR_SIZE + off] : 0;
}

/* Does this CREATE carry a durable v2 request (a CreateGuid)? */
static bool create_has_guid(const struct smb_pdu *p)
{
	uint32_t coff = body_u32(p, 48), clen = body_u32(p, 52), dlen;
	const uint8_t *data;
	if (!clen || coff > p->len || clen > p->len - coff)
		return false;
	return smb2_create_ctx_find(p->buf + coff, clen, "DH2Q", &data, &dlen) == 1;
}

static enum smb_replay_class pdu_replay_class(const struct smb_pdu *p, bool in_chain)
{
	switch (p->command) {
	case SMB2_CREATE: {
		uint32_t disp = body_u32(p, 36), opts = body_u32(p, 40);
		if (opts & FILE_DELETE_ON_CLOSE)
			return SMB_REPLAY_CHECKED;
		if (disp != FILE_CREATE)
			return SMB_REPLAY_FREE;
		return create_has_guid(p) ? SMB_REPLAY_KNOWN : SMB_REPLAY_CHECKED;
	}
	case SMB2_SET_INFO: {
		uint8_t cls = body_u8(p, 3);
		bool file = body_u8(p, 2) == SMB2_0_INFO_FILE;
		return file && (cls == FileRenameInformation || cls == FileLinkInformation ||
		                cls == FileDispositionInformation ||
		                cls == FileDispositionInformationEx)
		           ? SMB_REPLAY_CHECKED
		           : SMB_REPLAY_FREE;
	}
	case SMB2_CLOSE: {
		/* the compound's own handle (RELATED FileId) is opened again by
		 * the replayed CREATE before it */
		static const uint8_t related[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		                                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
		bool own = in_chain && p->len >= SMB2_HDR_SIZE + 24 &&
		           memcmp(p->buf + SMB2_HDR_SIZE + 8, related, 16) == 0;
		return own ? SMB_REPLAY_FREE : SMB_REPLAY_CHECKED;
	}
	case SMB2_LOCK: /* LockSequence */
		return body_u32(p, 4) ? SMB_REPLAY_KNOWN : SMB_REPLAY_CHECKED;
	case SMB2_QUERY_DIRECTORY:
		return body_u8(p, 3) & (SMB2_RESTART_SCANS | SMB2_REOPEN) ? SMB_REPLAY_FREE
		                                                          : SMB_REPLAY_CHECKED;
	case SMB2_NEGOTIATE:
	case SMB2_SESSION_SETUP:
		return SMB_REPLAY_NEVER;
	default:
		return SMB_REPLAY_FREE;
	}
}

enum smb_replay_class smb_req_replay_class(const struct smb_req *req)
{
	enum smb_replay_class k = req->no_replay ? SMB_REPLAY_NEVER : SMB_REPLAY_FREE;
	for (int i = 0; i < req->npdu; i++) {
		enum smb_replay_class pk = pdu_replay_class(&req->pdu[i], req->related && i > 0);
		if (pk > k)
			k = pk;
	}
	return k;
}

const char *smb_replay_class_str(enum smb_replay_class k)
{
	static const char *const names[] = {
	    [SMB_REPLAY_FREE] = "idempotent",
	    [SMB_REPLAY_KNOWN] = "known to the server",
	    [SMB_REPLAY_CHECKED] = "not idempotent",
	    [SMB_REPLAY_NEVER] = "channel-bound",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

bool smb_req_replayed(const struct smb_req *req)
{
	return req->maybe_twice;
}

static void conn_dead(void *arg, int err)
{
	struct smb_conn *c = arg;
	pthread_mutex_lock(&c->lock);
	bool closing = c->closing;
	__atomic_store_n(&c->state, SMB_CONN_DEAD, __ATOMIC_RELEASE);
	c->dead_err = -ECONNABORTED;
	if (!c->dead_why[0])
		snprintf(c->dead_why, sizeof(c->dead_why), "%s",
		         err == -EBADMSG     ? "the server sent something that is not SMB2"
		         : err == -ETIMEDOUT ? "the server stopped sending mid-message"
		                             : strerror(-err));
	struct smb_req *list = collect_all_locked(c); /* revokes any loan */
	c->placing = false;                           /* the transport delivers nothing more */
	/* Those waiting to be sent again are in flight too: their timers
	 * would fire on a conn that smb_conn_close() may free. */
	while (c->resend_waiting) {
		struct smb_req *r = c->resend_waiting;
		c->resend_waiting = r->rnext;
		r->rnext = NULL;
		c->env.timer_cancel(c->env.ctx, r->resend_timer);
		r->resend_timer = NULL;
		r->wnext = list;
		list = r;
	}
	if (c->tick) {
		c->env.timer_cancel(c->env.ctx, c->tick);
		c->tick = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	unsigned inflight = 0;
	for (struct smb_req *r = list; r; r = r->wnext)
		inflight++;
	if (!closing)
		smb_err("%s: connection lost (%s) with %u requests in flight", c->peer,
		        strerror(-err), inflight);
	else
		smb_debug("%s: connection closed", c->peer);
	/* Offer each to another channel first (multichannel failover). */
	struct smb_req *keep = NULL;
	while (list) {
		struct smb_req *next = list->wnext;
		list->wnext = NULL;
		if (closing || list->err || !c->on_orphan || !c->on_orphan(c->on_dead_arg, list)) {
			list->wnext = keep;
			keep = list;
		}
		list = next;
	}
	unsigned failed = 0;
	for (struct smb_req *r = keep; r; r = r->wnext)
		failed++;
	if (inflight && !closing)
		smb_log(failed ? LOG_ERR : LOG_NOTICE, "%s: %u moved to other channels, %u failed",
		        c->peer, inflight - failed, failed);
	fail_list(keep, -ECONNABORTED);
	if (c->on_dead)
		c->on_dead(c->on_dead_arg, err);
	/* Last touch of c on this path: smb_conn_close() may free it now. */
	pthread_mutex_lock(&c->lock);
	c->dead_done = true;
	pthread_cond_broadcast(&c->dead_cv);
	pthread_mutex_unlock(&c->lock);
}

static void echo_done(struct smb_req *req)
{
	struct smb_conn *c = req->conn;
	pthread_mutex_lock(&c->lock);
	c->echo_sent_ms = 0;
	pthread_mutex_unlock(&c->lock);
	smb_req_put(req);
}

/* Loop thread, conn->lock not held. */
static void send_echo(struct smb_conn *c)
{
	struct smb_req *req = smb_req_new(c, NULL);
	uint8_t *body = req ? smb_req_begin_pdu(req, SMB2_ECHO, 8) : NULL;
	if (!body || smb_req_end_pdu(req, smb2_echo_req_encode(body, 8)) < 0) {
		if (req)
			smb_req_put(req);
		return;
	}
	req->no_replay = true;
	req->done = echo_done;
	if (smb_conn_submit(c, req) < 0)
		smb_req_put(req);
}

static void conn_tick(void *arg)
{
	struct smb_conn *c = arg;
	uint64_t now = now_ms(c);
	struct smb_req *list = NULL;
	bool echo = false, silent = false;

	pthread_mutex_lock(&c->lock);
	c->tick = NULL;
	if (c->state != SMB_CONN_UP) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	for (unsigned b = 0; b < SMB_PENDING_BUCKETS; b++) {
		struct smb_pdu **pp = &c->pending[b];
		while (*pp) {
			struct smb_req *req = (*pp)->req;
			if (req->deadline_ms && req->deadline_ms <= now) {
				pending_remove_req(c, req);
				req->wnext = list;
				list = req;
				pp = &c->pending[b]; /* the chain changed */
				continue;
			}
			pp = &(*pp)->hnext;
		}
	}
	for (struct smb_req **wp = &c->wait_head; *wp;) {
		struct smb_req *req = *wp;
		if (req->deadline_ms && req->deadline_ms <= now) {
			*wp = req->wnext;
			req->wnext = list;
			list = req;
			continue;
		}
		c->wait_tail = req;
		wp = &req->wnext;
	}
	if (!c->wait_head)
		c->wait_tail = NULL;
	if (c->echo_ms) {
		uint64_t rx = __atomic_load_n(&c->last_rx_ms, __ATOMIC_RELAXED);
		if (c->echo_sent_ms && now - c->echo_sent_ms >= c->echo_ms && rx < c->echo_sent_ms)
			silent = true;
		else if (!c->echo_sent_ms && now - rx >= c->echo_ms) {
			c->echo_sent_ms = now;
			echo = true;
		}
	}
	if (conn_timer_add(c, CONN_TICK_MS, conn_tick, c, &c->tick) < 0)
		c->tick = NULL;
	pthread_mutex_unlock(&c->lock);
	if (silent) {
		char why[96];
		snprintf(why, sizeof(why), "no answer to the keepalive ECHO in %u ms", c->echo_ms);
		conn_fatal(c, why);
	} else if (echo) {
		send_echo(c);
	}
	/* The time each waited: its own deadline (set-up steps, `hard`) may
	 * differ from the connection's timeout_ms. */
	for (struct smb_req *r = list; r; r = r->wnext)
		smb_err("%s: %s request (MessageId %llu) got no answer in %llu ms; failing it "
		        "with ETIMEDOUT",
		        c->peer, smb2_command_str(r->pdu[0].command),
		        (unsigned long long)r->pdu[0].msgid,
		        (unsigned long long)((now_us(c) - r->t0_us) / 1000));
	fail_list(list, -ETIMEDOUT);
}

/* ---- open / close -------------------------------------------------------------- */

static int new_tcp(struct ev_loop *loop, const struct smb_transport_up *up,
                   const struct smb_quic_params *quic, struct smb_transport **out)
{
	return smb_transport_tcp_new(loop, up, out);
}

static int new_quic(struct ev_loop *loop, const struct smb_transport_up *up,
                    const struct smb_quic_params *quic, struct smb_transport **out)
{
	return smb_transport_quic_new(loop, up, quic, out);
}

static int new_rdma(struct ev_loop *loop, const struct smb_transport_up *up,
                    const struct smb_quic_params *quic, struct smb_transport **out)
{
	return smb_transport_rdma_new(loop, up, out);
}

static const struct {
	const char *name;
	int (*create)(struct ev_loop *loop, const struct smb_transport_up *up,
	              const struct smb_quic_params *quic, struct smb_transport **out);
} transports[SMB_TRANSPORT_KINDS] = {
    [SMB_TRANSPORT_TCP] = {"tcp", new_tcp},
    [SMB_TRANSPORT_QUIC] = {"quic", new_quic},
    [SMB_TRANSPORT_RDMA] = {"rdma", new_rdma},
};

const char *smb_transport_kind_name(enum smb_transport_kind kind)
{
	return (unsigned)kind < SMB_TRANSPORT_KINDS ? transports[kind].name : "?";
}

int smb_transport_kind_parse(const char *name)
{
	for (int k = 0; k < SMB_TRANSPORT_KINDS; k++)
		if (strcmp(name, transports[k].name) == 0)
			return k;
	return -1;
}

int smb_conn_open(struct ev_loop *loop, enum smb_transport_kind kind,
                  const struct smb_quic_params *quic, const struct sockaddr *addr,
                  socklen_t addrlen, const char *peer, unsigned connect_timeout_ms,
                  unsigned timeout_ms, int cancel_fd, struct smb_conn **out)
{
	return smb_conn_open_env(loop, NULL, kind, quic, addr, addrlen, peer, connect_timeout_ms,
	                         timeout_ms, cancel_fd, out);
}

int smb_conn_open_env(struct ev_loop *loop, const struct smb_conn_env *env,
                      enum smb_transport_kind kind, const struct smb_quic_params *quic,
                      const struct sockaddr *addr, socklen_t addrlen, const char *peer,
                      unsigned connect_timeout_ms, unsigned timeout_ms, int cancel_fd,
                      struct smb_conn **out)
{
	struct smb_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->env = env ? *env : smb_conn_env_evloop(loop);
	c->peer = strdup(peer);
	c->timeout_ms = timeout_ms;
	c->credits = 1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->dead_cv, NULL);
	struct smb_transport_up up = {.recv = conn_recv,
	                              .dead = conn_dead,
	                              .place = conn_place,
	                              .placing = conn_placing,
	                              .arg = c,
	                              .cancel_fd = cancel_fd};
	int err = (unsigned)kind < SMB_TRANSPORT_KINDS
	              ? transports[kind].create(loop, &up, quic, &c->transport)
	              : -EINVAL;
	if (err)
		goto fail;
	err = smb_transport_connect(c->transport, addr, addrlen, connect_timeout_ms);
	if (err) {
		smb_transport_destroy(c->transport);
		goto fail;
	}
	/* From connect() on the transport belongs to the loop, which may have
	 * reported its death already (the peer hung up at once): conn_dead()
	 * then ran with no tick to cancel.  Such a conn stays DEAD, without a
	 * tick: marked UP it would take requests, and its tick, re-armed every
	 * second and cancelled by nobody, would fire on c after
	 * smb_conn_close() freed it.  Its first request fails instead. */
	pthread_mutex_lock(&c->lock);
	if (c->state == SMB_CONN_NEW) {
		__atomic_store_n(&c->state, SMB_CONN_UP, __ATOMIC_RELEASE);
		c->last_rx_ms = now_ms(c);
		if (conn_timer_add(c, CONN_TICK_MS, conn_tick, c, &c->tick) < 0)
			c->tick = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	*out = c;
	return 0;
fail:
	pthread_cond_destroy(&c->dead_cv);
	pthread_mutex_destroy(&c->lock);
	free(c->peer);
	free(c);
	return err;
}

void smb_conn_close(struct smb_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	bool dead = c->state == SMB_CONN_DEAD;
	pthread_mutex_unlock(&c->lock);
	if (!dead)
		smb_transport_shutdown(c->transport);
	/* Even when already DEAD, conn_dead() may still be running on the loop
	 * thread: wait until it is done with c. */
	pthread_mutex_lock(&c->lock);
	while (!c->dead_done)
		pthread_cond_wait(&c->dead_cv, &c->lock);
	pthread_mutex_unlock(&c->lock);
	smb_transport_destroy(c->transport);
	pthread_cond_destroy(&c->dead_cv);
	pthread_mutex_destroy(&c->lock);
	free(c->peer);
	free(c);
}

void smb_conn_dead_why(struct smb_conn *c, char *out, size_t len)
{
	pthread_mutex_lock(&c->lock);
	if (c->dead_why[0])
		snprintf(out, len, " (%s)", c->dead_why);
	else if (len)
		out[0] = '\0';
	pthread_mutex_unlock(&c->lock);
}
