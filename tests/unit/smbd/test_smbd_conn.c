/* tests/unit/smbd/test_smbd_conn.c — the SMB Direct state machine driven by a
 * fake verbs layer: no hardware.  The fake plays the peer's bookkeeping and
 * checks the credit rules on every message we post:
 *  - we never send without a send credit;
 *  - the last send credit is spent only by a message granting one back;
 *  - the peer never holds more credits than we have receives posted. */
#include "../check.h"
#include "smbd/smbd_conn.h"
#include "smbd/smbd_proto.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <talloc.h>

#define MAX_SENT 4096

struct fake {
	struct smbd_conn *c;
	struct smbd_conn_params p;

	/* what we posted */
	uint8_t *sent[MAX_SENT];
	size_t sent_len[MAX_SENT];
	int nsent;
	int unacked; /* posted sends without send_done */
	int fail_post_send;

	long recv_posted_total, recv_completed; /* receives posted / consumed */
	int recv_free;                          /* buffers the fake has; -1 = unlimited */

	/* the peer's view */
	long our_credits;     /* send credits the peer granted us, unspent */
	long granted_to_peer; /* credits we granted, unspent by the peer */
	int rule_violations;

	uint64_t now, timer_ms;
	int timer_sets;

	uint8_t *deliv[64];
	size_t deliv_len[64];
	int ndeliv;
	struct smb_txbuf *send_from_deliver;

	int dead_count, dead_err, disconnect_calls;
};

static int f_post_send(void *arg, const struct iovec *iov, int iovcnt, size_t len)
{
	struct fake *f = arg;
	if (f->fail_post_send)
		return -EIO;
	CHECK(f->nsent < MAX_SENT);
	uint8_t *b = malloc(len ? len : 1);
	size_t off = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(b + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	CHECK_EQ(off, len);
	f->sent[f->nsent] = b;
	f->sent_len[f->nsent++] = len;
	f->unacked++;
	if (smbd_conn_state(f->c) == SMBD_CONNECTED) {
		struct smbd_data_hdr h;
		CHECK_EQ(smbd_data_decode(b, len, 1 << 20, &h), (int)len);
		if (f->our_credits <= 0 || (f->our_credits == 1 && h.credits_granted == 0))
			f->rule_violations++;
		f->our_credits--;
		f->granted_to_peer += h.credits_granted;
		/* a credit is granted only over a posted receive */
		if (f->granted_to_peer > f->recv_posted_total - f->recv_completed)
			f->rule_violations++;
	}
	return 0;
}

static int f_post_recv(void *arg)
{
	struct fake *f = arg;
	if (f->recv_free == 0)
		return -ENOBUFS;
	if (f->recv_free > 0)
		f->recv_free--;
	f->recv_posted_total++;
	return 0;
}

static void f_timer_set(void *arg, uint64_t ms)
{
	struct fake *f = arg;
	f->timer_ms = ms;
	f->timer_sets++;
}

static uint64_t f_now(void *arg)
{
	return ((struct fake *)arg)->now;
}

static void f_deliver(void *arg, uint8_t *msg, size_t len)
{
	struct fake *f = arg;
	CHECK(f->ndeliv < 64);
	f->deliv[f->ndeliv] = msg;
	f->deliv_len[f->ndeliv++] = len;
	if (f->send_from_deliver) {
		struct smb_txbuf *b = f->send_from_deliver;
		f->send_from_deliver = NULL;
		smbd_conn_send(f->c, b);
	}
}

static void f_disconnect(void *arg)
{
	((struct fake *)arg)->disconnect_calls++;
}

static void f_dead(void *arg, int err)
{
	struct fake *f = arg;
	f->dead_count++;
	f->dead_err = err;
}

static const struct smbd_conn_ops fake_ops = {
    .post_send = f_post_send,
    .post_recv = f_post_recv,
    .timer_set = f_timer_set,
    .now_ms = f_now,
    .deliver = f_deliver,
    .disconnect = f_disconnect,
    .dead = f_dead,
};

/* A txbuf whose completions we count. */
struct tbuf {
	struct smb_txbuf b;
	int done_count, err;
	uint8_t data[8192];
};

static void tbuf_done(struct smb_txbuf *b, int err)
{
	struct tbuf *t = (struct tbuf *)b;
	t->done_count++;
	t->err = err;
}

static void tbuf_init(struct tbuf *t, size_t len, uint8_t seed)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < len && i < sizeof(t->data); i++)
		t->data[i] = (uint8_t)(seed + i * 7);
	t->b.iov[0].iov_base = t->data;
	t->b.iov[0].iov_len = len;
	t->b.iovcnt = 1;
	t->b.len = len;
	t->b.done = tbuf_done;
}

static struct fake *fake_new(const struct smbd_conn_params *p)
{
	struct fake *f = calloc(1, sizeof(*f));
	if (p)
		f->p = *p;
	else
		smbd_conn_params_default(&f->p);
	f->recv_free = -1;
	f->now = 1000000;
	CHECK_EQ(smbd_conn_new(NULL, &f->p, &fake_ops, f, &f->c), 0);
	return f;
}

static void fake_free(struct fake *f)
{
	for (int i = 0; i < f->nsent; i++)
		free(f->sent[i]);
	for (int i = 0; i < f->ndeliv; i++)
		talloc_free(f->deliv[i]);
	talloc_free(f->c);
	free(f);
}

/* Complete the oldest n posted sends. */
static void ack_sends(struct fake *f, int n)
{
	while (n-- > 0 && f->unacked > 0) {
		f->unacked--;
		smbd_conn_send_done(f->c, 0);
	}
}

static void ack_all(struct fake *f)
{
	ack_sends(f, f->unacked);
}

/* Feed a message from the peer as a completed receive. */
static void peer_recv(struct fake *f, const uint8_t *buf, size_t len)
{
	f->recv_completed++;
	if (f->recv_free >= 0)
		f->recv_free++; /* the buffer comes back after the call; close enough */
	smbd_conn_recv(f->c, buf, len);
}

static size_t build_data(uint8_t *buf, uint16_t cr, uint16_t cg, uint16_t flags, uint32_t remaining,
                         const uint8_t *payload, uint32_t len)
{
	struct smbd_data_hdr h = {.credits_requested = cr,
	                          .credits_granted = cg,
	                          .flags = flags,
	                          .remaining_data_length = remaining,
	                          .data_length = len};
	int n = smbd_data_hdr_encode(&h, buf, 24);
	CHECK(n > 0);
	if (len)
		memcpy(buf + n, payload, len);
	return (size_t)n + len;
}

/* The peer sends a data message; counts the credit it spends. */
static void peer_data(struct fake *f, uint16_t cr, uint16_t cg, uint16_t flags, uint32_t remaining,
                      const uint8_t *payload, uint32_t len)
{
	uint8_t buf[2048];
	size_t n = build_data(buf, cr, cg, flags, remaining, payload, len);
	f->granted_to_peer--;
	f->our_credits += cg;
	peer_recv(f, buf, n);
}

static struct smbd_negotiate_resp resp_default(void)
{
	return (struct smbd_negotiate_resp){
	    .min_version = 0x0100,
	    .max_version = 0x0100,
	    .negotiated_version = 0x0100,
	    .credits_requested = 255,
	    .credits_granted = 255,
	    .max_read_write_size = 8 << 20,
	    .preferred_send_size = 1364,
	    .max_receive_size = 1364,
	    .max_fragmented_size = 1 << 20,
	};
}

static void start_negotiate(struct fake *f)
{
	CHECK_EQ(smbd_conn_start(f->c), 0);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTING);
	CHECK_EQ(f->timer_ms, 120000);
	CHECK_EQ(f->recv_posted_total, 1);
	CHECK_EQ(smbd_conn_established(f->c), 0);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_NEGOTIATING);
	CHECK_EQ(f->nsent, 1);
}

static void send_resp(struct fake *f, const struct smbd_negotiate_resp *r, size_t len)
{
	uint8_t buf[64] = {0};
	CHECK_EQ(smbd_negotiate_resp_encode(r, buf, sizeof(buf)), 32);
	f->our_credits = r->credits_granted;
	peer_recv(f, buf, len);
}

static struct fake *connected(const struct smbd_conn_params *p, uint16_t granted,
                              uint16_t requested)
{
	struct fake *f = fake_new(p);
	start_negotiate(f);
	ack_all(f);
	struct smbd_negotiate_resp r = resp_default();
	r.credits_granted = granted;
	r.credits_requested = requested;
	send_resp(f, &r, 32);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	return f;
}

/* ---- negotiation ---- */

static void test_negotiate_ok(void)
{
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	struct smbd_negotiate_req req;
	CHECK_EQ(f->sent_len[0], 20);
	CHECK_EQ(smbd_negotiate_req_decode(f->sent[0], f->sent_len[0], &req), 20);
	CHECK_EQ(req.min_version, 0x0100);
	CHECK_EQ(req.max_version, 0x0100);
	CHECK_EQ(req.credits_requested, 255);
	CHECK_EQ(req.preferred_send_size, 1364);
	CHECK_EQ(req.max_receive_size, 1364);
	CHECK_EQ(req.max_fragmented_size, 1 << 20);
	ack_all(f);

	struct smbd_negotiate_resp r = resp_default();
	r.credits_requested = 100;
	r.credits_granted = 10;
	r.max_read_write_size = 16 << 20; /* capped at ours, 8 MiB */
	r.max_receive_size = 1024;        /* our sends shrink to it */
	send_resp(f, &r, 32);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	CHECK_EQ(f->timer_ms, 120000);
	struct smbd_conn_negotiated n;
	smbd_conn_get_negotiated(f->c, &n);
	CHECK_EQ(n.max_read_write_size, 8 << 20);
	CHECK_EQ(n.max_send_size, 1024);
	CHECK_EQ(n.max_receive_size, 1364);
	CHECK_EQ(n.max_fragmented_send_size, 1 << 20);
	struct smbd_conn_stats st;
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.send_credits, 10);
	CHECK_EQ(st.recv_posted, 100); /* posted up to the peer's target ... */
	CHECK_EQ(st.recv_credits, 0);  /* ... but not granted before a send */
	CHECK_EQ(f->dead_count, 0);

	/* The first message grants all 100; a 1000-byte message is 2 fragments
	 * of at most 1024 - 24. */
	struct tbuf t;
	tbuf_init(&t, 1500, 1);
	smbd_conn_send(f->c, &t.b);
	CHECK_EQ(f->nsent, 3);
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(f->sent[1], f->sent_len[1], 1 << 20, &h), 1024);
	CHECK_EQ(h.credits_granted, 100);
	CHECK_EQ(h.credits_requested, 255);
	CHECK_EQ(h.data_length, 1000);
	CHECK_EQ(h.remaining_data_length, 500);
	CHECK_EQ(smbd_data_decode(f->sent[2], f->sent_len[2], 1 << 20, &h), 524);
	CHECK_EQ(h.credits_granted, 0);
	CHECK_EQ(h.remaining_data_length, 0);
	CHECK_EQ(t.done_count, 0);
	ack_sends(f, 1);
	CHECK_EQ(t.done_count, 0); /* done only when the last fragment is out */
	ack_sends(f, 1);
	CHECK_EQ(t.done_count, 1);
	CHECK_EQ(t.err, 0);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

static void expect_negotiate_failure(struct smbd_negotiate_resp r, size_t len, int err)
{
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	send_resp(f, &r, len);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_ERROR);
	CHECK_EQ(f->dead_count, 1);
	CHECK_EQ(f->dead_err, err);
	CHECK_EQ(f->timer_ms, 0);
	/* later events change nothing */
	smbd_conn_timer_fired(f->c);
	smbd_conn_disconnected(f->c);
	smbd_conn_fail(f->c, -EIO);
	ack_all(f);
	CHECK_EQ(f->dead_count, 1);
	fake_free(f);
}

static void test_negotiate_edge_cases(void)
{
	struct smbd_negotiate_resp r;

	r = resp_default();
	r.negotiated_version = 0x0200;
	expect_negotiate_failure(r, 32, -EPROTONOSUPPORT);
	r = resp_default();
	r.credits_granted = 0;
	expect_negotiate_failure(r, 32, -EPROTO);
	r = resp_default();
	r.credits_requested = 0;
	expect_negotiate_failure(r, 32, -EPROTO);
	r = resp_default();
	r.max_receive_size = 100;
	expect_negotiate_failure(r, 32, -EPROTO);
	r = resp_default();
	r.max_fragmented_size = 65536;
	expect_negotiate_failure(r, 32, -EPROTO);
	r = resp_default();
	r.preferred_send_size = 4096;
	expect_negotiate_failure(r, 32, -EPROTO);
	r = resp_default();
	r.status = SMBD_STATUS_NOT_SUPPORTED;
	expect_negotiate_failure(r, 32, -ECONNREFUSED);
	r = resp_default();
	expect_negotiate_failure(r, 31, -EBADMSG);
	expect_negotiate_failure(r, 0, -EBADMSG);
}

static void test_negotiate_small_peer(void)
{
	/* The smallest legal peer: 128-byte receives, 1 credit. */
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	ack_all(f);
	struct smbd_negotiate_resp r = resp_default();
	r.max_receive_size = 128;
	r.preferred_send_size = 64; /* our receive size floors at 128 */
	r.credits_granted = 1;
	r.credits_requested = 1;
	r.max_fragmented_size = 131072;
	send_resp(f, &r, 32);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	struct smbd_conn_negotiated n;
	smbd_conn_get_negotiated(f->c, &n);
	CHECK_EQ(n.max_send_size, 128);
	CHECK_EQ(n.max_receive_size, 128);
	struct tbuf t;
	tbuf_init(&t, 300, 9);
	smbd_conn_send(f->c, &t.b);
	/* one credit, granted back in the message: only the first fragment */
	CHECK_EQ(f->nsent, 2);
	CHECK_EQ(f->sent_len[1], 128);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

static void test_negotiate_timeout(void)
{
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_ERROR);
	CHECK_EQ(f->dead_count, 1);
	CHECK_EQ(f->dead_err, -ETIMEDOUT);
	fake_free(f);

	/* configurable, and also while rdma_cm is still connecting */
	struct smbd_conn_params p;
	smbd_conn_params_default(&p);
	p.negotiate_timeout_ms = 3000;
	f = fake_new(&p);
	CHECK_EQ(smbd_conn_start(f->c), 0);
	CHECK_EQ(f->timer_ms, 3000);
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(f->dead_err, -ETIMEDOUT);
	CHECK_EQ(smbd_conn_established(f->c), -ETIMEDOUT);
	CHECK_EQ(f->dead_count, 1);
	fake_free(f);
}

static void test_params_checked(void)
{
	struct smbd_conn_params p;
	struct smbd_conn *c;
	smbd_conn_params_default(&p);
	p.max_receive_size = 511;
	CHECK_EQ(smbd_conn_new(NULL, &p, &fake_ops, NULL, &c), -EINVAL);
	smbd_conn_params_default(&p);
	p.max_fragmented_recv_size = 131071;
	CHECK_EQ(smbd_conn_new(NULL, &p, &fake_ops, NULL, &c), -EINVAL);
	smbd_conn_params_default(&p);
	p.send_slots = 0;
	CHECK_EQ(smbd_conn_new(NULL, &p, &fake_ops, NULL, &c), -EINVAL);
}

static void test_message_before_negotiate(void)
{
	struct fake *f = fake_new(NULL);
	CHECK_EQ(smbd_conn_start(f->c), 0);
	uint8_t buf[32] = {0};
	peer_recv(f, buf, 32);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_ERROR);
	CHECK_EQ(f->dead_err, -EPROTO);
	fake_free(f);
}

/* ---- credits ---- */

static void test_credit_starvation(void)
{
	/* The peer grants 2 credits and wants 255. */
	struct fake *f = connected(NULL, 2, 255);
	struct tbuf t[5];
	for (int i = 0; i < 5; i++) {
		tbuf_init(&t[i], 100, (uint8_t)i);
		smbd_conn_send(f->c, &t[i].b);
	}
	/* Message 1 grants 255; message 2 would spend the last credit and has
	 * nothing to grant (all 255 receives are posted and granted): it waits. */
	CHECK_EQ(f->nsent, 2);
	ack_all(f);
	CHECK_EQ(t[0].done_count, 1);
	CHECK_EQ(t[1].done_count, 0);
	struct smbd_conn_stats st;
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.send_credits, 1);
	CHECK_EQ(st.recv_credits, 255);

	/* The peer answers with an empty message that grants nothing: it used
	 * one of our receives, so we repost it and can grant it back with the
	 * last credit. */
	peer_data(f, 255, 0, 0, 0, NULL, 0);
	CHECK_EQ(f->nsent, 3);
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(f->sent[2], f->sent_len[2], 1 << 20, &h), 124);
	CHECK_EQ(h.credits_granted, 1);
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.send_credits, 0);
	ack_all(f);
	CHECK_EQ(t[1].done_count, 1);
	CHECK_EQ(t[2].done_count, 0);

	/* Out of credits entirely: everything queues until a grant arrives. */
	peer_data(f, 255, 5, 0, 0, NULL, 0);
	CHECK_EQ(f->nsent, 6);
	ack_all(f);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(t[i].done_count, 1);
		CHECK_EQ(t[i].err, 0);
	}
	CHECK_EQ(f->rule_violations, 0);
	CHECK_EQ(f->dead_count, 0);
	fake_free(f);
}

static void test_last_credit_without_receive_buffers(void)
{
	/* We have one receive buffer beyond the negotiate one: the last credit
	 * stays unspent while nothing can be granted. */
	struct smbd_conn_params p;
	smbd_conn_params_default(&p);
	p.recv_credit_max = 4;
	struct fake *f = fake_new(&p);
	start_negotiate(f);
	ack_all(f);
	f->recv_free = 1;
	struct smbd_negotiate_resp r = resp_default();
	r.credits_granted = 1;
	send_resp(f, &r, 32);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	struct tbuf t1, t2;
	tbuf_init(&t1, 50, 1);
	tbuf_init(&t2, 50, 2);
	smbd_conn_send(f->c, &t1.b);
	CHECK_EQ(f->nsent, 2); /* grants the one buffer we had */
	smbd_conn_send(f->c, &t2.b);
	CHECK_EQ(f->nsent, 2);
	CHECK_EQ(f->dead_count, 0);
	/* The peer grants 1, using our buffer; it comes back, gets reposted and
	 * granted: t2 goes. */
	peer_data(f, 1, 1, 0, 0, NULL, 0);
	CHECK_EQ(f->nsent, 3);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

static void test_peer_overruns_credits(void)
{
	/* The peer holds no credit (we never sent) yet sends: a violation. */
	struct fake *f = connected(NULL, 10, 10);
	peer_data(f, 1, 0, 0, 0, NULL, 0);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_ERROR);
	CHECK_EQ(f->dead_err, -EPROTO);
	CHECK_EQ(f->dead_count, 1);
	fake_free(f);
}

static void test_send_slots_bound(void)
{
	struct smbd_conn_params p;
	smbd_conn_params_default(&p);
	p.send_slots = 2;
	struct fake *f = fake_new(&p);
	start_negotiate(f);
	ack_all(f);
	struct smbd_negotiate_resp r = resp_default();
	send_resp(f, &r, 32);
	struct tbuf t[4];
	for (int i = 0; i < 4; i++) {
		tbuf_init(&t[i], 10, (uint8_t)i);
		smbd_conn_send(f->c, &t[i].b);
	}
	CHECK_EQ(f->nsent, 3); /* negotiate + 2 */
	ack_sends(f, 1);
	CHECK_EQ(f->nsent, 4);
	CHECK_EQ(t[0].done_count, 1);
	ack_all(f);
	ack_all(f);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(t[i].done_count, 1);
	fake_free(f);
}

static void test_grant_when_peer_runs_low(void)
{
	struct fake *f = connected(NULL, 255, 10);
	struct tbuf t;
	tbuf_init(&t, 10, 1);
	smbd_conn_send(f->c, &t.b); /* grants 10 */
	ack_all(f);
	CHECK_EQ(f->granted_to_peer, 10);
	int before = f->nsent;
	/* The peer spends its credits: while it holds at least half its target
	 * we stay quiet; below that we send an empty grant. */
	for (int i = 0; i < 5; i++)
		peer_data(f, 10, 0, 0, 0, NULL, 0);
	CHECK_EQ(f->nsent, before);
	peer_data(f, 10, 0, 0, 0, NULL, 0);
	CHECK_EQ(f->nsent, before + 1);
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(f->sent[before], f->sent_len[before], 1 << 20, &h), 20);
	CHECK_EQ(h.credits_granted, 6);
	CHECK_EQ(h.data_length, 0);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

/* ---- reassembly ---- */

static void test_reassembly_in_order(void)
{
	struct fake *f = connected(NULL, 255, 255);
	struct tbuf t;
	tbuf_init(&t, 10, 1);
	smbd_conn_send(f->c, &t.b);
	ack_all(f);
	uint8_t msg[3000];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 13);
	peer_data(f, 255, 0, 0, 2000, msg, 1000);
	peer_data(f, 255, 0, 0, 1000, msg + 1000, 1000);
	CHECK_EQ(f->ndeliv, 0);
	/* a credit-only message between fragments is fine */
	peer_data(f, 255, 1, 0, 0, NULL, 0);
	peer_data(f, 255, 0, 0, 0, msg + 2000, 1000);
	CHECK_EQ(f->ndeliv, 1);
	CHECK_EQ(f->deliv_len[0], 3000);
	CHECK_MEM(f->deliv[0], msg, 3000);
	/* and a single-fragment message after */
	peer_data(f, 255, 0, 0, 0, msg, 64);
	CHECK_EQ(f->ndeliv, 2);
	CHECK_EQ(f->deliv_len[1], 64);
	struct smbd_conn_stats st;
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.bytes_received, 3064);
	CHECK_EQ(f->dead_count, 0);
	fake_free(f);
}

static struct fake *connected_and_granted(void)
{
	struct fake *f = connected(NULL, 255, 255);
	struct tbuf *t = talloc_zero(NULL, struct tbuf);
	tbuf_init(t, 10, 1);
	smbd_conn_send(f->c, &t->b);
	ack_all(f);
	CHECK_EQ(t->done_count, 1);
	talloc_free(t);
	return f;
}

static void expect_dead(struct fake *f, int err)
{
	CHECK_EQ(smbd_conn_state(f->c), SMBD_ERROR);
	CHECK_EQ(f->dead_count, 1);
	CHECK_EQ(f->dead_err, err);
	fake_free(f);
}

static void test_reassembly_too_large(void)
{
	struct fake *f = connected_and_granted();
	uint8_t d[100] = {0};
	peer_data(f, 255, 0, 0, (1 << 20) - 99, d, 100);
	expect_dead(f, -EPROTO);
}

static void test_reassembly_inconsistent(void)
{
	uint8_t d[100] = {0};
	/* remaining grows */
	struct fake *f = connected_and_granted();
	peer_data(f, 255, 0, 0, 100, d, 50);
	peer_data(f, 255, 0, 0, 90, d, 50);
	expect_dead(f, -EPROTO);
	/* remaining shrinks by more than the fragment */
	f = connected_and_granted();
	peer_data(f, 255, 0, 0, 100, d, 50);
	peer_data(f, 255, 0, 0, 40, d, 50);
	expect_dead(f, -EPROTO);
	/* fragment longer than what was left */
	f = connected_and_granted();
	peer_data(f, 255, 0, 0, 30, d, 50);
	peer_data(f, 255, 0, 0, 0, d, 50);
	expect_dead(f, -EPROTO);
}

/* [MS-SMBD] 3.1.5.8, each receiver check violated once on a live connection. */
static void test_data_receiver_checks(void)
{
	uint8_t buf[200];
	struct fake *f;

	f = connected_and_granted(); /* shorter than 20 bytes */
	build_data(buf, 1, 0, 0, 0, NULL, 0);
	peer_recv(f, buf, 19);
	expect_dead(f, -EBADMSG);

	f = connected_and_granted(); /* CreditsRequested 0 */
	peer_data(f, 0, 0, 0, 0, NULL, 0);
	expect_dead(f, -EPROTO);

	f = connected_and_granted(); /* DataOffset not 8-aligned */
	build_data(buf, 1, 0, 0, 0, (const uint8_t *)"abcdefgh", 8);
	buf[12] = 25;
	peer_recv(f, buf, 40);
	expect_dead(f, -EPROTO);

	f = connected_and_granted(); /* DataOffset + DataLength past the end */
	size_t n = build_data(buf, 1, 0, 0, 0, (const uint8_t *)"abcdefgh", 8);
	peer_recv(f, buf, n - 1);
	expect_dead(f, -EPROTO);

	f = connected_and_granted(); /* DataLength + RemainingDataLength too big */
	build_data(buf, 1, 0, 0, 0xfffffff0u, (const uint8_t *)"abcdefgh", 8);
	peer_recv(f, buf, n);
	expect_dead(f, -EPROTO);
}

/* ---- keepalive ---- */

static void test_keepalive_unanswered(void)
{
	struct fake *f = connected_and_granted();
	struct tbuf pending;
	tbuf_init(&pending, 10, 3);
	int before = f->nsent;
	f->now += 60000;
	smbd_conn_timer_fired(f->c); /* early (re-armed) fire: not idle yet */
	CHECK_EQ(f->nsent, before);
	CHECK_EQ(f->timer_ms, 60000);
	f->now += 60000;
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(f->nsent, before + 1);
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(f->sent[before], f->sent_len[before], 1 << 20, &h), 20);
	CHECK_EQ(h.flags, SMBD_FLAG_RESPONSE_REQUESTED);
	CHECK_EQ(f->timer_ms, 5000);
	/* a send posted but not completed when we die completes with an error */
	smbd_conn_send(f->c, &pending.b);
	f->now += 5000;
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(pending.done_count, 1);
	CHECK_EQ(pending.err, -ECONNABORTED);
	expect_dead(f, -ETIMEDOUT);
}

static void test_keepalive_answered(void)
{
	struct fake *f = connected_and_granted();
	f->now += 120000;
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(f->timer_ms, 5000);
	ack_all(f);
	f->now += 1000;
	peer_data(f, 255, 1, 0, 0, NULL, 0); /* the answer */
	f->now += 4000;
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	CHECK_EQ(f->timer_ms, 120000 - 4000);
	struct smbd_conn_stats st;
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.keepalives_sent, 1);
	CHECK_EQ(f->dead_count, 0);
	fake_free(f);
}

static void test_response_requested_answered(void)
{
	struct fake *f = connected_and_granted();
	int before = f->nsent;
	peer_data(f, 255, 0, SMBD_FLAG_RESPONSE_REQUESTED, 0, NULL, 0);
	CHECK_EQ(f->nsent, before + 1);
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(f->sent[before], f->sent_len[before], 1 << 20, &h), 20);
	CHECK_EQ(h.flags, 0); /* answering does not ask back: no ping-pong */
	CHECK_EQ(h.credits_granted, 1);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

/* ---- death and disconnect ---- */

static void test_death_exactly_once(void)
{
	struct fake *f = connected(NULL, 2, 255);
	struct tbuf t[4];
	for (int i = 0; i < 4; i++) {
		tbuf_init(&t[i], 3000, (uint8_t)i); /* 3 fragments each */
		smbd_conn_send(f->c, &t[i].b);
	}
	/* t[0] partly posted, the rest queued */
	smbd_conn_disconnected(f->c);
	smbd_conn_disconnected(f->c);
	smbd_conn_fail(f->c, -EIO);
	smbd_conn_recv_failed(f->c, -EIO);
	smbd_conn_timer_fired(f->c);
	ack_all(f); /* late (flushed) completions are ignored */
	smbd_conn_send_done(f->c, -EIO);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(t[i].done_count, 1);
		CHECK_EQ(t[i].err, -ECONNABORTED);
	}
	struct tbuf late;
	tbuf_init(&late, 10, 1);
	smbd_conn_send(f->c, &late.b);
	CHECK_EQ(late.done_count, 1);
	CHECK_EQ(late.err, -ECONNABORTED);
	uint8_t buf[64];
	size_t n = build_data(buf, 1, 1, 0, 0, (const uint8_t *)"x", 1);
	peer_recv(f, buf, n);
	CHECK_EQ(f->ndeliv, 0);
	expect_dead(f, -ECONNRESET);
}

static void test_send_failure_is_fatal(void)
{
	struct fake *f = connected_and_granted();
	struct tbuf t;
	tbuf_init(&t, 10, 1);
	f->fail_post_send = 1;
	smbd_conn_send(f->c, &t.b);
	CHECK_EQ(t.done_count, 1);
	CHECK_EQ(t.err, -ECONNABORTED);
	expect_dead(f, -EIO);

	f = connected_and_granted();
	tbuf_init(&t, 10, 1);
	smbd_conn_send(f->c, &t.b);
	smbd_conn_send_done(f->c, -EIO); /* a send completed in error */
	CHECK_EQ(t.done_count, 1);
	CHECK_EQ(t.err, -ECONNABORTED);
	expect_dead(f, -EIO);
}

static void test_disconnect(void)
{
	struct fake *f = connected_and_granted();
	struct tbuf t;
	tbuf_init(&t, 10, 1);
	smbd_conn_send(f->c, &t.b);
	smbd_conn_disconnect(f->c);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_DISCONNECTING);
	CHECK_EQ(f->disconnect_calls, 1);
	CHECK_EQ(t.done_count, 1);
	CHECK_EQ(t.err, -ECONNABORTED);
	CHECK_EQ(f->dead_count, 0);
	ack_all(f);
	smbd_conn_recv_failed(f->c, -ECONNRESET); /* flushed receives */
	CHECK_EQ(smbd_conn_state(f->c), SMBD_DISCONNECTED);
	CHECK_EQ(f->dead_count, 1);
	CHECK_EQ(f->dead_err, -ECONNABORTED);
	smbd_conn_disconnected(f->c);
	CHECK_EQ(f->dead_count, 1);
	fake_free(f);

	/* the clean way, and by timeout */
	f = connected_and_granted();
	smbd_conn_disconnect(f->c);
	CHECK_EQ(f->timer_ms, 5000);
	smbd_conn_disconnected(f->c);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_DISCONNECTED);
	CHECK_EQ(f->dead_count, 1);
	fake_free(f);
	f = connected_and_granted();
	smbd_conn_disconnect(f->c);
	smbd_conn_timer_fired(f->c);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_DISCONNECTED);
	CHECK_EQ(f->dead_count, 1);
	CHECK_EQ(f->dead_err, -ECONNABORTED);
	fake_free(f);
}

/* ---- sending ---- */

static void test_fragmentation_roundtrip(void)
{
	struct fake *f = connected(NULL, 255, 255);
	struct tbuf t;
	tbuf_init(&t, 5000, 42);
	/* split the message over three iovs */
	t.b.iov[0].iov_len = 7;
	t.b.iov[1].iov_base = t.data + 7;
	t.b.iov[1].iov_len = 0;
	t.b.iov[2].iov_base = t.data + 7;
	t.b.iov[2].iov_len = 4993;
	t.b.iovcnt = 3;
	smbd_conn_send(f->c, &t.b);
	uint8_t out[5000];
	size_t got = 0;
	int frags = 0;
	for (int i = 1; i < f->nsent; i++) {
		struct smbd_data_hdr h;
		CHECK_EQ(smbd_data_decode(f->sent[i], f->sent_len[i], 1 << 20, &h),
		         (int)f->sent_len[i]);
		CHECK(f->sent_len[i] <= 1364);
		CHECK_EQ(h.remaining_data_length, 5000 - got - h.data_length);
		memcpy(out + got, f->sent[i] + h.data_offset, h.data_length);
		got += h.data_length;
		frags++;
	}
	CHECK_EQ(frags, 4); /* 1340 * 3 + 980 */
	CHECK_EQ(got, 5000);
	CHECK_MEM(out, t.data, 5000);
	ack_sends(f, 4);
	CHECK_EQ(t.done_count, 1);
	struct smbd_conn_stats st;
	smbd_conn_get_stats(f->c, &st);
	CHECK_EQ(st.bytes_sent, 5000);
	fake_free(f);
}

static void test_too_large_and_invalid(void)
{
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	ack_all(f);
	struct smbd_negotiate_resp r = resp_default();
	r.max_fragmented_size = 131072;
	send_resp(f, &r, 32);
	static struct tbuf big;
	tbuf_init(&big, 10, 0);
	big.b.iov[0].iov_len = big.b.len = 131073; /* never read: rejected first */
	smbd_conn_send(f->c, &big.b);
	CHECK_EQ(big.done_count, 1);
	CHECK_EQ(big.err, -EMSGSIZE);
	struct tbuf bad;
	tbuf_init(&bad, 10, 0);
	bad.b.len = 11;
	smbd_conn_send(f->c, &bad.b);
	CHECK_EQ(bad.err, -EINVAL);
	tbuf_init(&bad, 0, 0);
	smbd_conn_send(f->c, &bad.b);
	CHECK_EQ(bad.err, -EINVAL);
	CHECK_EQ(smbd_conn_state(f->c), SMBD_CONNECTED);
	CHECK_EQ(f->dead_count, 0);
	fake_free(f);
}

static void test_queued_before_connected_and_send_from_deliver(void)
{
	struct fake *f = fake_new(NULL);
	start_negotiate(f);
	struct tbuf early, reply;
	tbuf_init(&early, 100, 1);
	smbd_conn_send(f->c, &early.b);
	CHECK_EQ(f->nsent, 1); /* waits for negotiation */
	ack_all(f);
	struct smbd_negotiate_resp r = resp_default();
	send_resp(f, &r, 32);
	CHECK_EQ(f->nsent, 2);
	ack_all(f);
	CHECK_EQ(early.done_count, 1);
	/* the upper layer answers from inside deliver() */
	tbuf_init(&reply, 100, 2);
	f->send_from_deliver = &reply.b;
	peer_data(f, 255, 1, 0, 0, (const uint8_t *)"hello", 5);
	CHECK_EQ(f->ndeliv, 1);
	CHECK_EQ(f->nsent, 3);
	ack_all(f);
	CHECK_EQ(reply.done_count, 1);
	CHECK_EQ(f->rule_violations, 0);
	fake_free(f);
}

int main(void)
{
	smb_log_set_level(LOG_EMERG); /* the failures we provoke log errors */
	RUN(test_negotiate_ok);
	RUN(test_negotiate_edge_cases);
	RUN(test_negotiate_small_peer);
	RUN(test_negotiate_timeout);
	RUN(test_params_checked);
	RUN(test_message_before_negotiate);
	RUN(test_credit_starvation);
	RUN(test_last_credit_without_receive_buffers);
	RUN(test_peer_overruns_credits);
	RUN(test_send_slots_bound);
	RUN(test_grant_when_peer_runs_low);
	RUN(test_reassembly_in_order);
	RUN(test_reassembly_too_large);
	RUN(test_reassembly_inconsistent);
	RUN(test_data_receiver_checks);
	RUN(test_keepalive_unanswered);
	RUN(test_keepalive_answered);
	RUN(test_response_requested_answered);
	RUN(test_death_exactly_once);
	RUN(test_send_failure_is_fatal);
	RUN(test_disconnect);
	RUN(test_fragmentation_roundtrip);
	RUN(test_too_large_and_invalid);
	RUN(test_queued_before_connected_and_send_from_deliver);
	return check_report();
}
