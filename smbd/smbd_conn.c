/* smbd/smbd_conn.c — the SMB Direct connection state machine ([MS-SMBD] 3.1):
 * negotiation, send and receive credits, fragmentation and reassembly, the
 * keepalive, and death reported exactly once.  No verbs: see smbd_conn.h.
 *
 *    CREATED ──start()──▶ CONNECTING ──established()──▶ NEGOTIATING
 *                             │                              │ recv(): valid negotiate response
 *                             │                              ▼
 *                             │                          CONNECTED ◀─┐ recv(), send(),
 *                             │                              │    └──┘ send_done(), timer
 *                             │          disconnect()        │
 *                             ├──────────────────────────────┤
 *                             ▼                              ▼
 *                       DISCONNECTING ──disconnected()/timer──▶ DISCONNECTED
 *
 *   any live state ──fail(), a receiver check violated, negotiate or
 *                    keepalive timeout, a failed post──▶ ERROR
 *
 * Transitions and the functions that make them:
 *   CREATED -> CONNECTING         smbd_conn_start()
 *   CONNECTING -> NEGOTIATING     smbd_conn_established() (sends 2.2.1)
 *   NEGOTIATING -> CONNECTED      conn_recv_negotiate()    (checks 3.1.5.7)
 *   live -> DISCONNECTING         smbd_conn_disconnect()
 *   DISCONNECTING -> DISCONNECTED smbd_conn_disconnected(), smbd_conn_timer_fired()
 *   live -> ERROR                 conn_fail(): every fatal path goes through it
 * DISCONNECTED and ERROR are final; conn_finish() reports death once.
 *
 * Credits ([MS-SMBD] 3.1.5.1, 3.1.5.9): send_credits are the peer's receive
 * buffers we may fill.  recv_posted are our posted receives; recv_ungranted
 * of them are not yet announced, so the peer holds recv_posted -
 * recv_ungranted credits.  Before every send we post receives up to the
 * peer's target and grant all the new ones in that message, so a receive is
 * always posted before it is granted.  The last send credit is spent only by
 * a message that grants at least one credit back; otherwise the queue waits
 * for the peer's next grant (both sides out of credits is a deadlock).
 */
#include "smbd/smbd_conn.h"
#include "smbd/smbd_proto.h"
#include "common/log.h"

#include <errno.h>
#include <string.h>
#include <talloc.h>

enum smbd_keepalive {
	KEEPALIVE_NONE = 0, /* heard from the peer since the last idle check */
	KEEPALIVE_PENDING,  /* idle: the next message asks for a response */
	KEEPALIVE_SENT,     /* asked; the answer is due by the timer */
};

struct smbd_conn {
	struct smbd_conn_params p;
	const struct smbd_conn_ops *ops;
	void *arg;

	enum smbd_conn_state state;
	int err;
	bool dead_reported;
	bool in_pump, pump_again;

	/* Negotiated (3.1.5.7). */
	uint32_t max_send_size, max_receive_size, max_fragmented_send_size;
	uint32_t max_read_write_size;
	uint16_t peer_credits_requested;

	/* Credits. */
	uint32_t send_credits;
	uint32_t recv_target; /* ReceiveCreditTarget, capped at recv_credit_max */
	uint32_t recv_posted;
	uint32_t recv_ungranted;

	/* Sends waiting (linked through txbuf->next); q_off bytes of the head
	 * are already posted as fragments. */
	struct smb_txbuf *q_head, *q_tail;
	size_t q_off;
	/* Posted sends, oldest first: the txbuf a send finishes, or NULL. */
	struct smb_txbuf **ring;
	uint32_t ring_head, ring_count;

	bool send_immediate; /* the peer asked for a response, or credits to grant */
	enum smbd_keepalive keepalive;
	uint64_t last_recv_ms;

	/* Reassembly of a fragmented message (talloc, NULL parent). */
	uint8_t *reasm;
	size_t reasm_len, reasm_got;

	struct smbd_conn_stats stats;
};

const char *smbd_conn_state_str(enum smbd_conn_state s)
{
	switch (s) {
	case SMBD_CREATED:
		return "CREATED";
	case SMBD_CONNECTING:
		return "CONNECTING";
	case SMBD_NEGOTIATING:
		return "NEGOTIATING";
	case SMBD_CONNECTED:
		return "CONNECTED";
	case SMBD_DISCONNECTING:
		return "DISCONNECTING";
	case SMBD_DISCONNECTED:
		return "DISCONNECTED";
	case SMBD_ERROR:
		return "ERROR";
	}
	return "?";
}

void smbd_conn_params_default(struct smbd_conn_params *p)
{
	*p = (struct smbd_conn_params){
	    .send_credit_target = 255,
	    .recv_credit_max = 255,
	    .max_send_size = 1364,
	    .max_receive_size = 1364,
	    .max_fragmented_recv_size = 1024 * 1024,
	    .max_read_write_size = 8 * 1024 * 1024,
	    .send_slots = 64,
	    .negotiate_timeout_ms = 120000,
	    .idle_timeout_ms = 120000,
	    .keepalive_timeout_ms = 5000,
	    .disconnect_timeout_ms = 5000,
	};
}

static bool conn_alive(const struct smbd_conn *c)
{
	return c->state != SMBD_DISCONNECTED && c->state != SMBD_ERROR;
}

static void conn_set_state(struct smbd_conn *c, enum smbd_conn_state s, int err)
{
	if (err)
		smb_info("smbd: %s -> %s (%s)", smbd_conn_state_str(c->state),
		         smbd_conn_state_str(s), strerror(-err));
	else
		smb_debug("smbd: %s -> %s", smbd_conn_state_str(c->state), smbd_conn_state_str(s));
	c->state = s;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Complete every txbuf we hold with -ECONNABORTED.  The lists are detached
 * first, so a done() that sends again finds an empty, dead connection. */
static void conn_abort_sends(struct smbd_conn *c)
{
	struct smb_txbuf *q = c->q_head;
	uint32_t n = c->ring_count, head = c->ring_head;

	c->q_head = c->q_tail = NULL;
	c->q_off = 0;
	c->ring_count = 0;
	c->ring_head = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct smb_txbuf *b = c->ring[(head + i) % c->p.send_slots];
		if (b)
			b->done(b, -ECONNABORTED);
	}
	while (q) {
		struct smb_txbuf *next = q->next;
		q->next = NULL;
		q->done(q, -ECONNABORTED);
		q = next;
	}
}

/* The one place death is reported. */
static void conn_finish(struct smbd_conn *c, enum smbd_conn_state s, int err)
{
	if (c->dead_reported)
		return;
	conn_set_state(c, s, err);
	c->err = err;
	c->ops->timer_set(c->arg, 0);
	TALLOC_FREE(c->reasm);
	conn_abort_sends(c);
	c->dead_reported = true;
	c->ops->dead(c->arg, err);
}

static void conn_fail(struct smbd_conn *c, int err)
{
	if (!conn_alive(c))
		return;
	if (c->state == SMBD_DISCONNECTING) {
		/* Errors while closing are the close itself (flushed work). */
		conn_finish(c, SMBD_DISCONNECTED, -ECONNABORTED);
		return;
	}
	conn_finish(c, SMBD_ERROR, err);
}

int smbd_conn_new(void *mem_ctx, const struct smbd_conn_params *params,
                  const struct smbd_conn_ops *ops, void *arg, struct smbd_conn **out)
{
	if (params->max_receive_size < SMBD_MIN_NEGOTIATE_RECV ||
	    params->max_send_size < SMBD_MIN_RECEIVE_SIZE ||
	    params->max_fragmented_recv_size < SMBD_MIN_FRAGMENTED_SIZE ||
	    params->send_credit_target == 0 || params->recv_credit_max == 0 ||
	    params->send_slots == 0)
		return -EINVAL;
	struct smbd_conn *c = talloc_zero(mem_ctx, struct smbd_conn);
	if (!c)
		return -ENOMEM;
	c->ring = talloc_array(c, struct smb_txbuf *, params->send_slots);
	if (!c->ring) {
		talloc_free(c);
		return -ENOMEM;
	}
	c->p = *params;
	c->ops = ops;
	c->arg = arg;
	c->state = SMBD_CREATED;
	*out = c;
	return 0;
}

static void ring_push(struct smbd_conn *c, struct smb_txbuf *b)
{
	c->ring[(c->ring_head + c->ring_count) % c->p.send_slots] = b;
	c->ring_count++;
}

/* [MS-SMBD] 3.1.5.9: post receives up to the peer's target; with force
 * (our last send credit), post one more if none is waiting to be granted.
 * Returns 0, or -errno after the connection died. */
static int conn_manage_credits(struct smbd_conn *c, bool force)
{
	uint32_t max = c->p.recv_credit_max;
	uint32_t target = min_u32(c->recv_target ? c->recv_target : 1, max);

	while (c->recv_posted < target ||
	       (force && c->recv_ungranted == 0 && c->recv_posted < max)) {
		int r = c->ops->post_recv(c->arg);
		if (r == -ENOBUFS)
			break;
		if (r < 0) {
			smb_err("smbd: posting a receive failed in %s: %s",
			        smbd_conn_state_str(c->state), strerror(-r));
			conn_fail(c, r);
			return r;
		}
		c->recv_posted++;
		c->recv_ungranted++;
	}
	return 0;
}

/* The iov pieces of b covering [off, off + len). */
static int slice_iov(const struct smb_txbuf *b, size_t off, size_t len, struct iovec *out)
{
	int n = 0;
	for (int i = 0; i < b->iovcnt && len; i++) {
		size_t l = b->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = l - off < len ? l - off : len;
		out[n].iov_base = (uint8_t *)b->iov[i].iov_base + off;
		out[n++].iov_len = take;
		len -= take;
		off = 0;
	}
	return n;
}

/* Drop a head message the peer could never take (3.1.5.1: a local error). */
static bool conn_reject_oversized_head(struct smbd_conn *c)
{
	struct smb_txbuf *b = c->q_head;
	if (c->q_off || b->len <= c->max_fragmented_send_size)
		return false;
	smb_warn("smbd: message of %zu bytes exceeds the peer's MaxFragmentedSize %u", b->len,
	         c->max_fragmented_send_size);
	c->q_head = b->next;
	if (!c->q_head)
		c->q_tail = NULL;
	b->next = NULL;
	b->done(b, -EMSGSIZE);
	return true;
}

/* Post one data transfer message: the next fragment of the head txbuf, or
 * an empty one.  Credits and slots were checked by the caller. */
static int conn_post_one(struct smbd_conn *c, uint16_t grant, bool ask_response)
{
	struct smbd_data_hdr h = {
	    .credits_requested = c->p.send_credit_target,
	    .credits_granted = grant,
	    .flags = ask_response ? SMBD_FLAG_RESPONSE_REQUESTED : 0,
	};
	struct iovec iov[1 + SMB_TXBUF_MAX_IOV];
	uint8_t hdr[SMBD_DATA_OFFSET];
	struct smb_txbuf *b = c->q_head, *finished = NULL;
	size_t chunk = 0;
	int n = 1;

	if (b) {
		size_t left = b->len - c->q_off;
		chunk = c->max_send_size - SMBD_DATA_OFFSET;
		if (chunk > left)
			chunk = left;
		h.data_length = (uint32_t)chunk;
		h.remaining_data_length = (uint32_t)(left - chunk);
		n += slice_iov(b, c->q_off, chunk, iov + 1);
	}
	int hl = smbd_data_hdr_encode(&h, hdr, sizeof(hdr));
	if (hl < 0)
		return hl;
	iov[0].iov_base = hdr;
	iov[0].iov_len = (size_t)hl;
	int r = c->ops->post_send(c->arg, iov, n, (size_t)hl + chunk);
	if (r < 0)
		return r;
	c->send_credits--;
	c->recv_ungranted -= grant;
	if (b) {
		c->q_off += chunk;
		if (c->q_off == b->len) {
			c->q_head = b->next;
			if (!c->q_head)
				c->q_tail = NULL;
			b->next = NULL;
			c->q_off = 0;
			finished = b;
		}
		c->stats.bytes_sent += chunk;
	}
	ring_push(c, finished);
	c->stats.msgs_sent++;
	return 0;
}

/* [MS-SMBD] 3.1.5.1: send what the credits, the send slots and the last-
 * credit rule allow.  Not re-entrant: a nested call (from a done() or
 * deliver() callback) asks the running one to go round again. */
static void conn_pump(struct smbd_conn *c)
{
	if (c->in_pump) {
		c->pump_again = true;
		return;
	}
	c->in_pump = true;
	do {
		c->pump_again = false;
		while (c->state == SMBD_CONNECTED) {
			if (c->q_head && conn_reject_oversized_head(c))
				continue;
			bool ask = c->keepalive == KEEPALIVE_PENDING;
			if (!c->q_head && !c->send_immediate && !ask)
				break;
			if (c->send_credits == 0 || c->ring_count >= c->p.send_slots)
				break;
			if (conn_manage_credits(c, c->send_credits == 1) < 0)
				break;
			uint16_t grant = (uint16_t)min_u32(c->recv_ungranted, UINT16_MAX);
			if (c->send_credits == 1 && grant == 0)
				break; /* the last credit must bring one back */
			int r = conn_post_one(c, grant, ask);
			if (r < 0) {
				smb_err("smbd: posting a send failed in %s: %s",
				        smbd_conn_state_str(c->state), strerror(-r));
				conn_fail(c, r);
				break;
			}
			/* Any message answers a RESPONSE_REQUESTED and carries the grant. */
			c->send_immediate = false;
			if (ask) {
				c->keepalive = KEEPALIVE_SENT;
				c->stats.keepalives_sent++;
			}
		}
	} while (c->pump_again && c->state == SMBD_CONNECTED);
	c->in_pump = false;
}

int smbd_conn_start(struct smbd_conn *c)
{
	if (c->state != SMBD_CREATED)
		return -EINVAL;
	conn_set_state(c, SMBD_CONNECTING, 0);
	c->ops->timer_set(c->arg, c->p.negotiate_timeout_ms);
	/* 3.1.4.1: one receive (>= 512 bytes) for the negotiate response; it is
	 * not a credit the peer can spend on data. */
	int r = c->ops->post_recv(c->arg);
	if (r < 0) {
		conn_fail(c, r);
		return r;
	}
	c->recv_posted = 1;
	return 0;
}

int smbd_conn_established(struct smbd_conn *c)
{
	if (c->state != SMBD_CONNECTING)
		return conn_alive(c) ? -EINVAL : c->err;
	struct smbd_negotiate_req req = {
	    .min_version = SMBD_VERSION_1,
	    .max_version = SMBD_VERSION_1,
	    .credits_requested = c->p.send_credit_target,
	    .preferred_send_size = c->p.max_send_size,
	    .max_receive_size = c->p.max_receive_size,
	    .max_fragmented_size = c->p.max_fragmented_recv_size,
	};
	uint8_t buf[SMBD_NEGOTIATE_REQ_SIZE];
	int n = smbd_negotiate_req_encode(&req, buf, sizeof(buf));
	if (n < 0) {
		conn_fail(c, n);
		return n;
	}
	struct iovec iov = {.iov_base = buf, .iov_len = (size_t)n};
	int r = c->ops->post_send(c->arg, &iov, 1, (size_t)n);
	if (r < 0) {
		smb_err("smbd: sending the negotiate request failed: %s", strerror(-r));
		conn_fail(c, r);
		return r;
	}
	ring_push(c, NULL);
	c->stats.msgs_sent++;
	conn_set_state(c, SMBD_NEGOTIATING, 0);
	return 0;
}

/* [MS-SMBD] 3.1.5.7 */
static void conn_recv_negotiate(struct smbd_conn *c, const uint8_t *buf, size_t len)
{
	struct smbd_negotiate_resp resp;

	c->recv_posted--;
	int r = smbd_negotiate_resp_decode(buf, len, c->p.max_receive_size, &resp);
	if (r < 0) {
		smb_err("smbd: bad negotiate response (%zu bytes) in %s: %s", len,
		        smbd_conn_state_str(c->state), strerror(-r));
		conn_fail(c, r);
		return;
	}
	c->max_receive_size = min_u32(c->p.max_receive_size, resp.preferred_send_size);
	if (c->max_receive_size < SMBD_MIN_RECEIVE_SIZE)
		c->max_receive_size = SMBD_MIN_RECEIVE_SIZE;
	c->max_send_size = min_u32(c->p.max_send_size, resp.max_receive_size);
	c->max_read_write_size = min_u32(c->p.max_read_write_size, resp.max_read_write_size);
	c->max_fragmented_send_size = resp.max_fragmented_size;
	c->peer_credits_requested = resp.credits_requested;
	c->send_credits = resp.credits_granted;
	c->recv_target = min_u32(resp.credits_requested, c->p.recv_credit_max);
	c->last_recv_ms = c->ops->now_ms(c->arg);
	c->keepalive = KEEPALIVE_NONE;
	c->stats.msgs_received++;
	smb_info("smbd: negotiated send %u recv %u fragmented %u rw %u credits %u/%u",
	         c->max_send_size, c->max_receive_size, c->max_fragmented_send_size,
	         c->max_read_write_size, c->send_credits, c->recv_target);
	conn_set_state(c, SMBD_CONNECTED, 0);
	c->ops->timer_set(c->arg, c->p.idle_timeout_ms);
	if (conn_manage_credits(c, false) < 0)
		return;
	conn_pump(c);
}

/* [MS-SMBD] 3.1.5.8 */
static void conn_recv_data(struct smbd_conn *c, const uint8_t *buf, size_t len)
{
	struct smbd_data_hdr h;

	int r = smbd_data_decode(buf, len, c->p.max_fragmented_recv_size, &h);
	if (r < 0) {
		smb_err("smbd: bad data transfer message (%zu bytes) in %s: %s", len,
		        smbd_conn_state_str(c->state), strerror(-r));
		conn_fail(c, r);
		return;
	}
	if (c->recv_posted <= c->recv_ungranted) {
		smb_err("smbd: peer sent a message without a receive credit");
		conn_fail(c, -EPROTO);
		return;
	}
	c->recv_posted--;
	c->stats.msgs_received++;
	c->last_recv_ms = c->ops->now_ms(c->arg);
	c->keepalive = KEEPALIVE_NONE;
	c->recv_target = min_u32(h.credits_requested, c->p.recv_credit_max);
	if (h.credits_granted)
		c->send_credits = min_u32(c->send_credits + h.credits_granted, UINT16_MAX);
	if (h.flags & SMBD_FLAG_RESPONSE_REQUESTED)
		c->send_immediate = true;

	if (h.data_length) {
		if (!c->reasm) {
			size_t total = (size_t)h.data_length + h.remaining_data_length;
			c->reasm = talloc_size(NULL, total);
			if (!c->reasm) {
				conn_fail(c, -ENOMEM);
				return;
			}
			talloc_set_name_const(c->reasm, "smbd rx message");
			c->reasm_len = total;
			c->reasm_got = 0;
		} else if ((size_t)h.data_length + h.remaining_data_length !=
		           c->reasm_len - c->reasm_got) {
			smb_err("smbd: fragment of %u with %u remaining does not continue a "
			        "message with %zu of %zu bytes",
			        h.data_length, h.remaining_data_length, c->reasm_got, c->reasm_len);
			conn_fail(c, -EPROTO);
			return;
		}
		memcpy(c->reasm + c->reasm_got, buf + h.data_offset, h.data_length);
		c->reasm_got += h.data_length;
		c->stats.bytes_received += h.data_length;
		if (h.remaining_data_length == 0) {
			uint8_t *msg = c->reasm;
			size_t mlen = c->reasm_len;
			c->reasm = NULL;
			c->ops->deliver(c->arg, msg, mlen);
			if (c->state != SMBD_CONNECTED)
				return;
		}
	}

	if (conn_manage_credits(c, false) < 0)
		return;
	/* 3.1.5.8 says to grant new credits at once when nothing is queued.  We
	 * wait until the peer is down to half its target: one empty message per
	 * received message would double the message rate, and the next request
	 * carries the grant anyway. */
	uint32_t peer_credits = c->recv_posted - c->recv_ungranted;
	if (!c->q_head && c->recv_ungranted && peer_credits * 2 < c->recv_target)
		c->send_immediate = true;
	conn_pump(c);
}

void smbd_conn_recv(struct smbd_conn *c, const uint8_t *buf, size_t len)
{
	switch (c->state) {
	case SMBD_NEGOTIATING:
		conn_recv_negotiate(c, buf, len);
		break;
	case SMBD_CONNECTED:
		conn_recv_data(c, buf, len);
		break;
	case SMBD_CONNECTING:
		/* The peer cannot speak before our negotiate request. */
		smb_err("smbd: message received in %s", smbd_conn_state_str(c->state));
		conn_fail(c, -EPROTO);
		break;
	default:
		break; /* closing or closed: late completions */
	}
}

void smbd_conn_recv_failed(struct smbd_conn *c, int err)
{
	if (!conn_alive(c))
		return;
	/* Receives flush when we disconnect: expected, not an error. */
	if (c->state == SMBD_DISCONNECTING)
		smb_debug("smbd: receive flushed in %s: %s", smbd_conn_state_str(c->state),
		          strerror(-err));
	else
		smb_err("smbd: receive failed in %s: %s", smbd_conn_state_str(c->state),
		        strerror(-err));
	conn_fail(c, err);
}

void smbd_conn_send_done(struct smbd_conn *c, int status)
{
	if (!conn_alive(c) || c->state == SMBD_DISCONNECTING)
		return; /* sends were already completed with the death */
	if (status) {
		smb_err("smbd: send failed in %s: %s", smbd_conn_state_str(c->state),
		        strerror(-status));
		conn_fail(c, status);
		return;
	}
	if (c->ring_count == 0) {
		smb_err("smbd: send completion with no send posted");
		conn_fail(c, -EPROTO);
		return;
	}
	struct smb_txbuf *b = c->ring[c->ring_head];
	c->ring_head = (c->ring_head + 1) % c->p.send_slots;
	c->ring_count--;
	if (b)
		b->done(b, 0);
	conn_pump(c);
}

void smbd_conn_timer_fired(struct smbd_conn *c)
{
	switch (c->state) {
	case SMBD_CONNECTING:
	case SMBD_NEGOTIATING:
		smb_err("smbd: negotiation timed out in %s after %u ms",
		        smbd_conn_state_str(c->state), c->p.negotiate_timeout_ms);
		conn_fail(c, -ETIMEDOUT);
		break;
	case SMBD_CONNECTED: {
		if (c->keepalive != KEEPALIVE_NONE) {
			smb_err("smbd: peer did not answer a keepalive within %u ms",
			        c->p.keepalive_timeout_ms);
			conn_fail(c, -ETIMEDOUT);
			break;
		}
		uint64_t idle = c->ops->now_ms(c->arg) - c->last_recv_ms;
		if (idle < c->p.idle_timeout_ms) {
			c->ops->timer_set(c->arg, c->p.idle_timeout_ms - idle);
			break;
		}
		/* 3.1.6.2: idle — ask the peer to answer. */
		c->keepalive = KEEPALIVE_PENDING;
		conn_pump(c);
		if (c->state == SMBD_CONNECTED)
			c->ops->timer_set(c->arg, c->p.keepalive_timeout_ms);
		break;
	}
	case SMBD_DISCONNECTING:
		conn_finish(c, SMBD_DISCONNECTED, -ECONNABORTED);
		break;
	default:
		break;
	}
}

void smbd_conn_send(struct smbd_conn *c, struct smb_txbuf *buf)
{
	size_t sum = 0;

	buf->next = NULL;
	if (!conn_alive(c) || c->state == SMBD_DISCONNECTING) {
		buf->done(buf, -ECONNABORTED);
		return;
	}
	for (int i = 0; i < buf->iovcnt && buf->iovcnt <= SMB_TXBUF_MAX_IOV; i++)
		sum += buf->iov[i].iov_len;
	if (buf->iovcnt < 1 || buf->iovcnt > SMB_TXBUF_MAX_IOV || sum != buf->len ||
	    buf->len == 0 || buf->len > UINT32_MAX) {
		buf->done(buf, -EINVAL);
		return;
	}
	if (c->q_tail)
		c->q_tail->next = buf;
	else
		c->q_head = buf;
	c->q_tail = buf;
	conn_pump(c);
}

void smbd_conn_disconnect(struct smbd_conn *c)
{
	switch (c->state) {
	case SMBD_CREATED:
		conn_finish(c, SMBD_DISCONNECTED, -ECONNABORTED);
		break;
	case SMBD_CONNECTING:
	case SMBD_NEGOTIATING:
	case SMBD_CONNECTED:
		conn_set_state(c, SMBD_DISCONNECTING, 0);
		TALLOC_FREE(c->reasm);
		conn_abort_sends(c);
		if (c->state != SMBD_DISCONNECTING)
			break; /* a done() callback finished us */
		c->ops->timer_set(c->arg, c->p.disconnect_timeout_ms);
		c->ops->disconnect(c->arg);
		break;
	default:
		break;
	}
}

void smbd_conn_disconnected(struct smbd_conn *c)
{
	if (c->state == SMBD_DISCONNECTING)
		conn_finish(c, SMBD_DISCONNECTED, -ECONNABORTED);
	else if (conn_alive(c)) {
		smb_err("smbd: connection lost in %s", smbd_conn_state_str(c->state));
		conn_fail(c, -ECONNRESET);
	}
}

void smbd_conn_fail(struct smbd_conn *c, int err)
{
	conn_fail(c, err < 0 ? err : -EIO);
}

enum smbd_conn_state smbd_conn_state(const struct smbd_conn *c)
{
	return c->state;
}

int smbd_conn_error(const struct smbd_conn *c)
{
	return c->err;
}

void smbd_conn_get_stats(const struct smbd_conn *c, struct smbd_conn_stats *out)
{
	*out = c->stats;
	out->send_credits = c->send_credits;
	out->recv_credits = c->recv_posted - c->recv_ungranted;
	out->recv_posted = c->recv_posted;
}

void smbd_conn_get_negotiated(const struct smbd_conn *c, struct smbd_conn_negotiated *out)
{
	*out = (struct smbd_conn_negotiated){
	    .max_send_size = c->max_send_size,
	    .max_receive_size = c->max_receive_size,
	    .max_fragmented_send_size = c->max_fragmented_send_size,
	    .max_read_write_size = c->max_read_write_size,
	    .peer_credits_requested = c->peer_credits_requested,
	};
}
