/* tests/unit/client/test_conn.c — the channel layer (client/conn.c) against a
 * scripted fake transport: credits, compounds, interim responses, signature
 * failures, timeouts, and death failing everything exactly once.  This is a
 * fault-injection peer for what a real server will not do on demand; the real
 * server tests are in tests/integration. */
#include "client/conn.h"
#include "client/transport_quic.h"
#include "common/crypto.h"
#include "client/proto/smb2_fsctl.h"
#include "common/evloop.h"
#include "common/log.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>
#include <unistd.h>

/* ---- the fake transport --------------------------------------------------------- */

#define MAX_SENT 64
struct fake {
	struct smb_transport base;
	pthread_mutex_t m;
	struct smb2_hdr sent[MAX_SENT]; /* headers of every PDU sent */
	int nsent;
	bool dead;
	bool hold; /* keep txbufs (a full socket) until released */
	struct smb_txbuf *held[8];
	int nheld;
};

static void fake_dead_cb(void *arg);
/* The next connect() hands the transport to the loop, which reports its
 * death before connect() returns (a peer that hangs up at once). */
static bool die_at_connect;

static int fake_connect(struct smb_transport *t, const struct sockaddr *a, socklen_t l, unsigned ms)
{
	if (die_at_connect) {
		die_at_connect = false;
		((struct fake *)t)->dead = true;
		ev_call_wait(t->loop, fake_dead_cb, t);
	}
	return 0;
}

static int fake_send(struct smb_transport *t, struct smb_txbuf *b)
{
	struct fake *f = (struct fake *)t;
	pthread_mutex_lock(&f->m);
	if (f->dead) {
		pthread_mutex_unlock(&f->m);
		return -ECONNABORTED;
	}
	/* Record each PDU header of the chain (they sit in the odd iovs or first). */
	for (int i = 0; i < b->iovcnt; i++) {
		const uint8_t *p = b->iov[i].iov_base;
		size_t off = 0;
		while (b->iov[i].iov_len - off >= 64 && smb_le32(p + off) == SMB2_PROTOCOL_ID &&
		       f->nsent < MAX_SENT) {
			smb2_hdr_decode(p + off, b->iov[i].iov_len - off, &f->sent[f->nsent++]);
			uint32_t next = smb_le32(p + off + 20);
			if (!next)
				break;
			off += next;
		}
	}
	if (f->hold && f->nheld < 8) {
		f->held[f->nheld++] = b;
		pthread_mutex_unlock(&f->m);
		return 0;
	}
	pthread_mutex_unlock(&f->m);
	b->done(b, 0);
	return 0;
}

static void fake_shutdown(struct smb_transport *t);
static void fake_destroy(struct smb_transport *t)
{
	free(t);
}
static void fake_info(struct smb_transport *t, struct smb_transport_info *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = "fake";
}
static const struct smb_transport_ops fake_ops = {
    .name = "fake",
    .connect = fake_connect,
    .send = fake_send,
    .shutdown = fake_shutdown,
    .destroy = fake_destroy,
    .info = fake_info,
    .get_stats = transport_default_get_stats,
    .set_dialect = transport_default_set_dialect,
    .region_add = transport_default_region_add,
    .io_token_get = transport_default_io_token_get,
    .io_token_put = transport_default_io_token_put,
};

static void fake_dead_cb(void *arg)
{
	struct fake *f = arg;
	f->base.up.dead(f->base.up.arg, -ECONNRESET);
}

static void fake_shutdown(struct smb_transport *t)
{
	struct fake *f = (struct fake *)t;
	pthread_mutex_lock(&f->m);
	bool was = f->dead;
	f->dead = true;
	pthread_mutex_unlock(&f->m);
	if (!was)
		ev_call(t->loop, fake_dead_cb, f);
}

static struct fake *the_fake;

/* conn.c builds its transport through these constructors; the test links its
 * own instead of transport_tcp.c. */
int smb_transport_tcp_new(struct ev_loop *loop, const struct smb_transport_up *up,
                          struct smb_transport **out)
{
	struct fake *f = calloc(1, sizeof(*f));
	f->base.ops = &fake_ops;
	f->base.loop = loop;
	f->base.up = *up;
	pthread_mutex_init(&f->m, NULL);
	the_fake = f;
	*out = &f->base;
	return 0;
}

int smb_transport_rdma_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           struct smb_transport **out)
{
	return -EOPNOTSUPP;
}

int smb_transport_quic_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           const struct smb_quic_params *p, struct smb_transport **out)
{
	return -EOPNOTSUPP;
}

/* Deliver a message to conn on the loop thread. */
struct delivery {
	struct fake *f;
	uint8_t *msg;
	size_t len;
};
static void deliver_cb(void *arg)
{
	struct delivery *d = arg;
	d->f->base.up.recv(d->f->base.up.arg, d->msg, d->len);
	free(d);
}
static void deliver(struct ev_loop *loop, const uint8_t *bytes, size_t len)
{
	struct delivery *d = malloc(sizeof(*d));
	d->f = the_fake;
	d->msg = talloc_memdup(NULL, bytes, len);
	d->len = len;
	ev_call(loop, deliver_cb, d);
}

/* A response PDU: header + a 4-byte generic body (StructureSize 4). */
static size_t make_rsp(uint8_t *out, uint16_t cmd, uint64_t msgid, uint32_t status,
                       uint16_t credits, uint32_t flags, uint32_t next, uint64_t async_id)
{
	struct smb2_hdr h = {.command = cmd,
	                     .message_id = msgid,
	                     .status = status,
	                     .credits = credits,
	                     .flags = flags | SMB2_FLAGS_SERVER_TO_REDIR,
	                     .next_command = next,
	                     .async_id = async_id};
	smb2_hdr_encode(out, 64, &h);
	memset(out + 64, 0, 8);
	smb_put_le16(out + 64, 4);
	return 72;
}

/* ---- request plumbing ------------------------------------------------------------ */

struct result {
	pthread_mutex_t m;
	pthread_cond_t cv;
	int calls;
	int err;
	uint32_t status[SMB_REQ_MAX_PDU];
	bool replayed; /* smb_req_replayed() when done */
};

static void on_done(struct smb_req *req)
{
	struct result *r = req->arg;
	pthread_mutex_lock(&r->m);
	r->calls++;
	r->err = req->err;
	r->replayed = smb_req_replayed(req);
	for (int i = 0; i < req->npdu; i++)
		r->status[i] = req->pdu[i].have_rsp ? req->pdu[i].rsp_hdr.status : 0xFFFFFFFFu;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->m);
	smb_req_put(req);
}

static void result_init(struct result *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->m, NULL);
	pthread_cond_init(&r->cv, NULL);
}

static bool wait_calls(struct result *r, int n, int ms)
{
	for (int i = 0; i < ms / 5; i++) {
		pthread_mutex_lock(&r->m);
		int c = r->calls;
		pthread_mutex_unlock(&r->m);
		if (c >= n)
			return true;
		usleep(5000);
	}
	return false;
}

static int sent_count(void)
{
	pthread_mutex_lock(&the_fake->m);
	int n = the_fake->nsent;
	pthread_mutex_unlock(&the_fake->m);
	return n;
}

static struct smb_req *echo_req(struct smb_conn *c, struct result *r, int npdu)
{
	struct smb_req *req = smb_req_new(c, NULL);
	for (int i = 0; i < npdu; i++) {
		uint8_t *b = smb_req_begin_pdu(req, SMB2_ECHO, 8);
		smb_req_end_pdu(req, smb2_echo_req_encode(b, 8));
	}
	req->arg = r;
	req->done = on_done;
	req->session_id = 1;
	return req;
}

static struct ev_loop *loop;

static struct smb_conn *open_conn(unsigned timeout_ms)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct smb_conn *c;
	int err = smb_conn_open(loop, SMB_TRANSPORT_TCP, NULL, (struct sockaddr *)&sa, sizeof(sa),
	                        "fake", 1000, timeout_ms, -1, &c);
	CHECK_EQ(err, 0);
	return c;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_simple_roundtrip(void)
{
	struct smb_conn *c = open_conn(0);
	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r, 1)), 0);
	CHECK_EQ(sent_count(), 1);
	uint8_t m[128];
	size_t l = make_rsp(m, SMB2_ECHO, the_fake->sent[0].message_id, 0, 10, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, 0);
	CHECK_EQ(r.status[0], 0);
	smb_conn_close(c);
	CHECK_EQ(r.calls, 1);
}

static void test_credit_wait(void)
{
	struct smb_conn *c = open_conn(0); /* starts with 1 credit */
	struct result r[3];
	for (int i = 0; i < 3; i++) {
		result_init(&r[i]);
		CHECK_EQ(smb_conn_submit(c, echo_req(c, &r[i], 1)), 0);
	}
	CHECK_EQ(sent_count(), 1); /* the others wait for credits */
	CHECK_EQ(the_fake->sent[0].message_id, 0);
	uint8_t m[128];
	/* The answer grants 2 credits: both waiting requests go out. */
	size_t l = make_rsp(m, SMB2_ECHO, 0, 0, 2, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r[0], 1, 2000));
	for (int i = 0; i < 200 && sent_count() < 3; i++)
		usleep(5000);
	CHECK_EQ(sent_count(), 3);
	CHECK_EQ(the_fake->sent[1].message_id, 1);
	CHECK_EQ(the_fake->sent[2].message_id, 2);
	smb_conn_close(c);
	CHECK_EQ(r[1].calls, 1);
	CHECK_EQ(r[1].err, -ECONNABORTED);
	CHECK_EQ(r[2].err, -ECONNABORTED);
}

static void test_compound_and_interim(void)
{
	struct smb_conn *c = open_conn(0);
	struct result r1, r2;
	result_init(&r1);
	result_init(&r2);
	uint8_t m[512];
	/* Grant enough credits first. */
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r1, 1)), 0);
	size_t l = make_rsp(m, SMB2_ECHO, 0, 0, 20, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r1, 1, 2000));

	struct smb_req *req = echo_req(c, &r2, 3);
	req->related = true;
	CHECK_EQ(smb_conn_submit(c, req), 0);
	CHECK_EQ(sent_count(), 4);
	CHECK(the_fake->sent[2].flags & SMB2_FLAGS_RELATED_OPERATIONS);
	CHECK_EQ(the_fake->sent[1].next_command, 72);
	/* Interim STATUS_PENDING for the first, then one compound answer for all. */
	l = make_rsp(m, SMB2_ECHO, 1, STATUS_PENDING, 1, SMB2_FLAGS_ASYNC_COMMAND, 0, 77);
	deliver(loop, m, l);
	usleep(20000);
	CHECK_EQ(r2.calls, 0);
	l = make_rsp(m, SMB2_ECHO, 1, 0, 1, 0, 72, 0);
	l += make_rsp(m + l, SMB2_ECHO, 2, STATUS_ACCESS_DENIED, 1, 0, 72, 0);
	l += make_rsp(m + l, SMB2_ECHO, 3, 0, 1, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r2, 1, 2000));
	CHECK_EQ(r2.err, 0);
	CHECK_EQ(r2.status[1], STATUS_ACCESS_DENIED);
	/* A duplicate answer is ignored, not a crash. */
	deliver(loop, m, l);
	usleep(20000);
	CHECK_EQ(r2.calls, 1);
	smb_conn_close(c);
}

static void test_bad_signature(void)
{
	struct smb_conn *c = open_conn(0);
	struct smb_signing s = {.active = true, .have_key = true, .alg = SMB2_SIGNING_HMAC_SHA256};
	memset(s.key, 0x42, 16);
	c->signing = &s;
	struct result r1, r2;
	result_init(&r1);
	result_init(&r2);
	uint8_t m[128];
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r1, 1)), 0);
	CHECK(the_fake->sent[0].flags & SMB2_FLAGS_SIGNED);
	/* Correctly signed answer. */
	size_t l = make_rsp(m, SMB2_ECHO, 0, 0, 5, SMB2_FLAGS_SIGNED, 0, 0);
	struct iovec iov = {m, l};
	smb_sign_pdu(s.alg, s.key, &iov, 1, m + 48);
	deliver(loop, m, l);
	CHECK(wait_calls(&r1, 1, 2000));
	CHECK_EQ(r1.err, 0);
	/* Corrupted signature: the request fails with EIO. */
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r2, 1)), 0);
	l = make_rsp(m, SMB2_ECHO, 1, 0, 5, SMB2_FLAGS_SIGNED, 0, 0);
	smb_sign_pdu(s.alg, s.key, &iov, 1, m + 48);
	m[50] ^= 1;
	deliver(loop, m, l);
	CHECK(wait_calls(&r2, 1, 2000));
	CHECK_EQ(r2.err, -EIO);
	smb_conn_close(c);
}

static void test_timeout_and_death(void)
{
	struct smb_conn *c = open_conn(300);
	struct result r1, r2;
	result_init(&r1);
	result_init(&r2);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r1, 1)), 0);
	CHECK(wait_calls(&r1, 1, 3000));
	CHECK_EQ(r1.err, -ETIMEDOUT);
	/* The lost request's credit never comes back, so the next one waits; a
	 * dead transport must fail it exactly once. */
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r2, 1)), 0);
	smb_transport_shutdown(the_fake ? &the_fake->base : NULL);
	CHECK(wait_calls(&r2, 1, 3000));
	CHECK(r2.err == -ECONNABORTED || r2.err == -EIO);
	/* r2 may have been failed by the credit check before the death report
	 * ran: wait for the conn to be dead before testing submit on it. */
	bool dead = false;
	for (int i = 0; i < 600 && !dead; i++) {
		pthread_mutex_lock(&c->lock);
		dead = c->state == SMB_CONN_DEAD;
		pthread_mutex_unlock(&c->lock);
		if (!dead)
			usleep(5000);
	}
	CHECK(dead);
	struct result r3;
	result_init(&r3);
	struct smb_req *req = echo_req(c, &r3, 1);
	CHECK(smb_conn_submit(c, req) < 0); /* fails synchronously, no callback */
	smb_req_put(req);
	smb_conn_close(c);
	CHECK_EQ(r2.calls, 1);
	CHECK_EQ(r3.calls, 0);
}

/* A request whose payload is the caller's (smb_req_set_payload_lent) that
 * times out while its bytes still wait in the transport's queue: done()
 * must wait until the transport lets go, or the caller would reuse a
 * buffer the transport may still send from. */
static void test_lent_payload_outlives_no_send(void)
{
	struct smb_conn *c = open_conn(300);
	struct result r;
	result_init(&r);
	static const uint8_t data[512] = {1, 2, 3};
	struct smb_req *req = echo_req(c, &r, 1);
	smb_req_set_payload_lent(req, 0, data, sizeof(data), 1);
	pthread_mutex_lock(&the_fake->m);
	the_fake->hold = true;
	pthread_mutex_unlock(&the_fake->m);
	CHECK_EQ(smb_conn_submit(c, req), 0);
	/* Its deadline passes (300 ms); the transport still holds the send. */
	CHECK(!wait_calls(&r, 1, 1200));
	pthread_mutex_lock(&the_fake->m);
	int n = the_fake->nheld;
	struct smb_txbuf *held[8];
	memcpy(held, the_fake->held, sizeof(held));
	the_fake->nheld = 0;
	the_fake->hold = false;
	pthread_mutex_unlock(&the_fake->m);
	CHECK_EQ(n, 1);
	for (int i = 0; i < n; i++)
		held[i]->done(held[i], 0);
	CHECK(wait_calls(&r, 1, 3000));
	CHECK_EQ(r.err, -ETIMEDOUT);
	usleep(50000);
	CHECK_EQ(r.calls, 1);
	smb_conn_close(c);

	/* Not lent: done() runs at the deadline, the transport still holding
	 * the (request-owned) bytes.  (A new connection: the lost request's
	 * credit never came back.) */
	c = open_conn(300);
	struct result r2;
	result_init(&r2);
	struct smb_req *req2 = echo_req(c, &r2, 1);
	smb_req_set_payload(req2, 0, data, sizeof(data), 1);
	pthread_mutex_lock(&the_fake->m);
	the_fake->hold = true;
	pthread_mutex_unlock(&the_fake->m);
	CHECK_EQ(smb_conn_submit(c, req2), 0);
	CHECK(wait_calls(&r2, 1, 3000));
	CHECK_EQ(r2.err, -ETIMEDOUT);
	pthread_mutex_lock(&the_fake->m);
	n = the_fake->nheld;
	memcpy(held, the_fake->held, sizeof(held));
	the_fake->nheld = 0;
	the_fake->hold = false;
	pthread_mutex_unlock(&the_fake->m);
	for (int i = 0; i < n; i++)
		held[i]->done(held[i], 0);
	smb_conn_close(c);
}

static void test_malformed_message(void)
{
	struct smb_conn *c = open_conn(0);
	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r, 1)), 0);
	uint8_t m[128];
	size_t l = make_rsp(m, SMB2_ECHO, 0, 0, 1, 0, 13 /* bad NextCommand */, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, -ECONNABORTED);
	smb_conn_close(c);
}

/* ---- multichannel: replay on another channel ----------------------------------- */

static struct smb_conn *orphan_target;
static int orphan_calls;

/* What client/session.c's chan_orphan does, minus the channel choice. */
static bool move_to_target(void *arg, struct smb_req *req)
{
	orphan_calls++;
	if (smb_req_reset_for_replay(req))
		return false;
	return smb_conn_submit(orphan_target, req) == 0;
}

static int fake_sent(struct fake *f)
{
	pthread_mutex_lock(&f->m);
	int n = f->nsent;
	pthread_mutex_unlock(&f->m);
	return n;
}

static bool wait_sent(struct fake *f, int n)
{
	for (int i = 0; i < 400 && fake_sent(f) < n; i++)
		usleep(5000);
	return fake_sent(f) >= n;
}

static void test_replay_on_other_channel(void)
{
	uint16_t seq = 0;
	struct smb_conn *b = open_conn(0);
	struct fake *fb = the_fake;
	struct smb_conn *a = open_conn(0);
	struct fake *fa = the_fake;
	a->channel_sequence = b->channel_sequence = &seq;
	a->on_orphan = move_to_target;
	orphan_target = b;
	orphan_calls = 0;
	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(a, echo_req(a, &r, 1)), 0);
	CHECK_EQ(fake_sent(fa), 1);
	CHECK(!(fa->sent[0].flags & SMB2_FLAGS_REPLAY_OPERATION));
	CHECK_EQ(fa->sent[0].status, 0);
	/* Channel a dies with the request in flight; the session's sequence moves. */
	seq = 1;
	smb_conn_abort(a, "test: channel cut");
	CHECK(wait_sent(fb, 1));
	CHECK_EQ(orphan_calls, 1);
	CHECK(fb->sent[0].flags & SMB2_FLAGS_REPLAY_OPERATION);
	CHECK_EQ(fb->sent[0].status & 0xffff, 1); /* ChannelSequence */
	CHECK_EQ(r.calls, 0);                     /* not failed */
	uint8_t m[128];
	size_t l = make_rsp(m, SMB2_ECHO, fb->sent[0].message_id, 0, 10, 0, 0, 0);
	the_fake = fb;
	deliver(loop, m, l);
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, 0);
	CHECK_EQ(r.status[0], 0);
	CHECK(r.replayed); /* the first send may have been carried out */

	/* Submitting on the dead channel moves the request too. */
	struct result r2;
	result_init(&r2);
	CHECK_EQ(smb_conn_submit(a, echo_req(a, &r2, 1)), 0);
	CHECK(wait_sent(fb, 2));
	CHECK_EQ(orphan_calls, 2);

	/* A WRITE-like refusal for the old ChannelSequence is sent again. */
	seq = 2;
	l = make_rsp(m, SMB2_ECHO, fb->sent[1].message_id, STATUS_FILE_NOT_AVAILABLE, 10, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_sent(fb, 3));
	CHECK_EQ(fb->sent[2].status & 0xffff, 2);
	CHECK(fb->sent[2].flags & SMB2_FLAGS_REPLAY_OPERATION);
	CHECK_EQ(r2.calls, 0);
	l = make_rsp(m, SMB2_ECHO, fb->sent[2].message_id, 0, 10, 0, 0, 0);
	deliver(loop, m, l);
	CHECK(wait_calls(&r2, 1, 2000));
	CHECK_EQ(r2.err, 0);
	CHECK_EQ(r2.status[0], 0);
	/* refused by the dead transport, then refused for its sequence: never
	 * carried out, so not read as a replay */
	CHECK(!r2.replayed);
	smb_conn_close(a);
	smb_conn_close(b);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r2.calls, 1);
}

static void test_no_taker_fails_the_request(void)
{
	struct smb_conn *a = open_conn(0);
	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(a, echo_req(a, &r, 1)), 0);
	smb_conn_abort(a, "test: channel cut"); /* no on_orphan: fails */
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, -ECONNABORTED);
	smb_conn_close(a);
}

/* ---- issue 20: the replay class of a request (the table in client/conn.h) ---------- */

static void add_create_pdu(struct smb_req *req, uint32_t disp, uint32_t opts, bool guid)
{
	uint8_t dh2q[SMB2_DH2Q_LEN], g[16] = {1, 2, 3};
	struct smb2_create_req cr = {
	    .create_disposition = disp, .create_options = opts, .name = "d/f"};
	if (guid) {
		smb2_dh2q_encode(dh2q, 0, g);
		cr.contexts[0] = (struct smb2_create_ctx){"DH2Q", dh2q, sizeof(dh2q)};
		cr.context_count = 1;
	}
	uint8_t *b = smb_req_begin_pdu(req, SMB2_CREATE, 256);
	CHECK_EQ(smb_req_end_pdu(req, smb2_create_req_encode(b, 256, &cr)) < 0, false);
}

static void add_set_info_pdu(struct smb_req *req, uint8_t cls)
{
	static const uint8_t info[40];
	struct smb2_set_info_req si = {.info_type = SMB2_0_INFO_FILE,
	                               .file_info_class = cls,
	                               .buffer = info,
	                               .buffer_len = sizeof(info),
	                               .fileid = SMB2_FILEID_RELATED};
	uint8_t *b = smb_req_begin_pdu(req, SMB2_SET_INFO, 128);
	CHECK_EQ(smb_req_end_pdu(req, smb2_set_info_req_encode(b, 128, &si)) < 0, false);
}

static void add_close_pdu(struct smb_req *req, struct smb2_fileid fid)
{
	struct smb2_close_req cl = {.fileid = fid};
	uint8_t *b = smb_req_begin_pdu(req, SMB2_CLOSE, 24);
	CHECK_EQ(smb_req_end_pdu(req, smb2_close_req_encode(b, 24, &cl)) < 0, false);
}

/* CREATE [+ SET_INFO cls] + CLOSE, related, as client/ops.c builds them;
 * cls 0: no SET_INFO. */
static enum smb_replay_class chain_class(struct smb_conn *c, uint32_t disp, uint32_t opts,
                                         bool guid, uint8_t cls)
{
	struct smb_req *req = smb_req_new(c, NULL);
	req->related = true;
	add_create_pdu(req, disp, opts, guid);
	if (cls)
		add_set_info_pdu(req, cls);
	add_close_pdu(req, SMB2_FILEID_RELATED);
	enum smb_replay_class k = smb_req_replay_class(req);
	smb_req_put(req);
	return k;
}

static void test_replay_class(void)
{
	struct smb_conn *c = open_conn(0);
	struct result r;
	result_init(&r);
	/* stat, open: idempotent; the compound's own CLOSE too */
	CHECK_EQ(chain_class(c, FILE_OPEN, 0, false, 0), SMB_REPLAY_FREE);
	CHECK_EQ(chain_class(c, FILE_OVERWRITE_IF, 0, true, 0), SMB_REPLAY_FREE);
	CHECK_EQ(chain_class(c, FILE_OPEN, 0, false, FileBasicInformation), SMB_REPLAY_FREE);
	CHECK_EQ(chain_class(c, FILE_OPEN, 0, false, FileEndOfFileInformation), SMB_REPLAY_FREE);
	/* rename, link, unlink/rmdir */
	CHECK_EQ(chain_class(c, FILE_OPEN, 0, false, FileRenameInformation), SMB_REPLAY_CHECKED);
	CHECK_EQ(chain_class(c, FILE_OPEN, 0, false, FileLinkInformation), SMB_REPLAY_CHECKED);
	CHECK_EQ(chain_class(c, FILE_OPEN, FILE_DIRECTORY_FILE, false, FileDispositionInformation),
	         SMB_REPLAY_CHECKED);
	CHECK_EQ(chain_class(c, FILE_OPEN, FILE_DELETE_ON_CLOSE, false, 0), SMB_REPLAY_CHECKED);
	/* exclusive create, mkdir: only a CreateGuid lets the server know it */
	CHECK_EQ(chain_class(c, FILE_CREATE, FILE_DIRECTORY_FILE, false, 0), SMB_REPLAY_CHECKED);
	CHECK_EQ(chain_class(c, FILE_CREATE, 0, true, 0), SMB_REPLAY_KNOWN);
	/* a CLOSE of a handle: the first may have closed it */
	struct smb_req *req = smb_req_new(c, NULL);
	add_close_pdu(req, (struct smb2_fileid){7, 8});
	CHECK_EQ(smb_req_replay_class(req), SMB_REPLAY_CHECKED);
	smb_req_put(req);
	/* LOCK: known to the server by its LockSequence, else not idempotent */
	struct smb2_lock_elem le = {
	    .offset = 0, .length = 1, .flags = SMB2_LOCKFLAG_EXCLUSIVE_LOCK};
	for (uint32_t seq = 0; seq <= 0x11; seq += 0x11) {
		req = smb_req_new(c, NULL);
		uint8_t *b = smb_req_begin_pdu(req, SMB2_LOCK, 48);
		CHECK_EQ(
		    smb_req_end_pdu(req, smb2_lock_req_encode(b, 48, (struct smb2_fileid){7, 8},
		                                              seq, &le, 1)) < 0,
		    false);
		CHECK_EQ(smb_req_replay_class(req), seq ? SMB_REPLAY_KNOWN : SMB_REPLAY_CHECKED);
		smb_req_put(req);
	}
	/* ECHO: idempotent; channel-bound ones never move */
	req = echo_req(c, &r, 1);
	CHECK_EQ(smb_req_replay_class(req), SMB_REPLAY_FREE);
	CHECK(!smb_req_replayed(req));
	req->no_replay = true;
	CHECK_EQ(smb_req_replay_class(req), SMB_REPLAY_NEVER);
	/* reset for a replay before any send: it goes out as new, and is
	 * not a replay a caller reads */
	CHECK_EQ(smb_req_reset_for_replay(req), 0);
	CHECK(!req->replay);
	CHECK(!smb_req_replayed(req));
	smb_req_put(req);
	smb_conn_close(c);
}

/* ---- issue 18: nothing unverified changes state ------------------------------------ */

static int breaks_seen;
static void count_break(void *arg, const uint8_t *pdu, size_t len)
{
	breaks_seen++;
}

static unsigned conn_credits(struct smb_conn *c)
{
	usleep(30000); /* let the loop thread take what was delivered */
	pthread_mutex_lock(&c->lock);
	unsigned n = c->credits;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static size_t make_break(uint8_t *m, uint16_t credits, uint32_t flags)
{
	return make_rsp(m, SMB2_OPLOCK_BREAK, UINT64_MAX, 0, credits, flags, 0, 0);
}

static void sign_rsp(const struct smb_signing *s, uint8_t *m, size_t l, bool corrupt)
{
	struct iovec iov = {m, l};
	smb_sign_pdu(s->alg, s->key, &iov, 1, m + 48);
	if (corrupt)
		m[50] ^= 1;
}

/* Sealed session: a break, an interim or a final answer that came in the
 * clear changes nothing (no callback, no credits, no async id). */
static void test_sealed_session_ignores_cleartext(void)
{
	struct smb_conn *c = open_conn(0);
	struct smb_crypt k = {.active = true,
	                      .have_key = true,
	                      .cipher = SMB2_ENCRYPTION_AES128_GCM,
	                      .session_id = 1};
	c->crypt = &k;
	c->on_break = count_break;
	breaks_seen = 0;
	uint8_t m[128];
	unsigned before = conn_credits(c);
	deliver(loop, m, make_break(m, 500, 0));
	CHECK_EQ(conn_credits(c), before);
	CHECK_EQ(breaks_seen, 0);

	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r, 1)), 0); /* MessageId 0, sealed */
	before = conn_credits(c);
	deliver(loop, m,
	        make_rsp(m, SMB2_ECHO, 0, STATUS_PENDING, 500, SMB2_FLAGS_ASYNC_COMMAND, 0, 9));
	CHECK_EQ(conn_credits(c), before);
	CHECK_EQ(r.calls, 0);
	deliver(loop, m, make_rsp(m, SMB2_ECHO, 0, 0, 500, 0, 0, 0));
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, -EIO);
	CHECK_EQ(conn_credits(c), before);
	c->crypt = NULL;
	smb_conn_close(c);
}

/* Signed session: a break or an interim answer whose signature fails is
 * ignored; an unsigned one (exempt from signing, [MS-SMB2] 3.2.5.1.3)
 * is honoured, but its credits go no further than the request asked. */
static void test_signed_session_unverified_grants(void)
{
	struct smb_conn *c = open_conn(0);
	struct smb_signing s = {.active = true, .have_key = true, .alg = SMB2_SIGNING_HMAC_SHA256};
	memset(s.key, 0x42, 16);
	c->signing = &s;
	c->on_break = count_break;
	breaks_seen = 0;
	uint8_t m[128];
	unsigned before = conn_credits(c);
	size_t l = make_break(m, 500, SMB2_FLAGS_SIGNED);
	sign_rsp(&s, m, l, true);
	deliver(loop, m, l);
	CHECK_EQ(conn_credits(c), before);
	CHECK_EQ(breaks_seen, 0); /* forged: never reaches the lease code */
	deliver(loop, m, make_break(m, 500, 0));
	CHECK_EQ(conn_credits(c), before); /* unsigned: acted on, no credits */
	CHECK_EQ(breaks_seen, 1);
	l = make_break(m, 7, SMB2_FLAGS_SIGNED);
	sign_rsp(&s, m, l, false);
	deliver(loop, m, l);
	CHECK_EQ(conn_credits(c), before + 7); /* verified: believed */
	CHECK_EQ(breaks_seen, 2);

	struct result r;
	result_init(&r);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r, 1)), 0);
	uint64_t mid = the_fake->sent[sent_count() - 1].message_id;
	unsigned asked = the_fake->sent[sent_count() - 1].credits;
	before = conn_credits(c);
	l = make_rsp(m, SMB2_ECHO, mid, STATUS_PENDING, 500,
	             SMB2_FLAGS_ASYNC_COMMAND | SMB2_FLAGS_SIGNED, 0, 9);
	sign_rsp(&s, m, l, true);
	deliver(loop, m, l);
	CHECK_EQ(conn_credits(c), before); /* bad signature: nothing */
	deliver(loop, m,
	        make_rsp(m, SMB2_ECHO, mid, STATUS_PENDING, 500, SMB2_FLAGS_ASYNC_COMMAND, 0, 9));
	CHECK_EQ(conn_credits(c), before + asked); /* unsigned: no more than asked */
	CHECK_EQ(r.calls, 0);
	l = make_rsp(m, SMB2_ECHO, mid, 0, 0, SMB2_FLAGS_SIGNED, 0, 0);
	sign_rsp(&s, m, l, false);
	deliver(loop, m, l);
	CHECK(wait_calls(&r, 1, 2000));
	CHECK_EQ(r.err, 0);
	c->signing = NULL;
	smb_conn_close(c);
}

/* ---- READ payload received in place (smb_req_lend_rx, up->place) ----------------- */

struct read_result {
	struct result r;
	struct smb_conn *c;
	size_t placed;
	bool loan_live_at_done; /* conn's loan still pointed at the buffer in done() */
};

static void on_read_done(struct smb_req *req)
{
	struct read_result *rr = req->arg;
	pthread_mutex_lock(&rr->r.m);
	rr->placed = req->pdu[0].rsp_placed;
	rr->loan_live_at_done = rr->c->place_pdu == &req->pdu[0] || rr->c->place.buf != NULL;
	rr->r.calls++;
	rr->r.err = req->err;
	pthread_cond_broadcast(&rr->r.cv);
	pthread_mutex_unlock(&rr->r.m);
	smb_req_put(req);
}

static struct smb_req *read_req(struct smb_conn *c, struct read_result *rr, void *buf, size_t len)
{
	struct smb_req *req = smb_req_new(c, NULL);
	struct smb2_read_req q = {.length = (uint32_t)len};
	uint8_t *b = smb_req_begin_pdu(req, SMB2_READ, 56);
	smb_req_end_pdu(req, smb2_read_req_encode(b, 56, &q));
	smb_req_lend_rx(req, 0, buf, len);
	req->arg = rr;
	req->done = on_read_done;
	req->session_id = 1;
	rr->c = c;
	return req;
}

/* A READ answer's first 80 bytes: header + body up to Buffer. */
static void read_head(uint8_t *h, uint64_t mid, uint32_t status, uint32_t flags, uint32_t next,
                      uint8_t data_off, uint32_t data_len)
{
	make_rsp(h, SMB2_READ, mid, status, 8, flags, next, 0);
	memset(h + 64, 0, 16);
	smb_put_le16(h + 64, 17);
	h[66] = data_off;
	smb_put_le32(h + 68, data_len);
}

/* up->place on the loop thread, as a transport calls it. */
struct place_call {
	const uint8_t *head;
	size_t msg_len;
	struct smb_rx_place *out;
	bool done;
};
static void place_cb(void *arg)
{
	struct place_call *pc = arg;
	struct smb_transport_up *up = &the_fake->base.up;
	pc->out = up->place(up->arg, pc->head, pc->msg_len);
	__atomic_store_n(&pc->done, true, __ATOMIC_RELEASE);
}
static struct smb_rx_place *place(const uint8_t *head, size_t msg_len)
{
	struct place_call pc = {.head = head, .msg_len = msg_len};
	ev_call(loop, place_cb, &pc);
	while (!__atomic_load_n(&pc.done, __ATOMIC_ACQUIRE))
		usleep(1000);
	return pc.out;
}

static void test_read_placed(void)
{
	struct smb_conn *c = open_conn(0);
	struct smb_signing s = {.active = true, .have_key = true, .alg = SMB2_SIGNING_AES_CMAC};
	memset(s.key, 0x42, 16);
	c->signing = &s;
	static uint8_t buf[8192], payload[5000];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	uint8_t h[80];

	/* A short read (5000 of 8192), signed over header + placed payload. */
	struct read_result rr = {0};
	result_init(&rr.r);
	CHECK_EQ(smb_conn_submit(c, read_req(c, &rr, buf, sizeof(buf))), 0);
	uint64_t mid = the_fake->sent[sent_count() - 1].message_id;
	read_head(h, mid, 0, SMB2_FLAGS_SIGNED, 0, 80, sizeof(payload));
	struct iovec iov[2] = {{h, 80}, {payload, sizeof(payload)}};
	smb_sign_pdu(s.alg, s.key, iov, 2, h + 48);
	struct smb_rx_place *pl = place(h, 80 + sizeof(payload));
	CHECK(pl != NULL);
	CHECK(pl && pl->buf == buf && pl->off == 80);
	if (pl)
		memcpy(pl->buf, payload, sizeof(payload)); /* the transport's recvmsg() */
	deliver(loop, h, 80);
	CHECK(wait_calls(&rr.r, 1, 2000));
	CHECK_EQ(rr.r.err, 0);
	CHECK_EQ(rr.placed, sizeof(payload));
	CHECK_MEM(buf, payload, sizeof(payload));

	/* Padding before DataOffset stays in the message; a payload byte that
	 * does not match the signature fails the request. */
	struct read_result r2 = {0};
	result_init(&r2.r);
	CHECK_EQ(smb_conn_submit(c, read_req(c, &r2, buf, sizeof(buf))), 0);
	mid = the_fake->sent[sent_count() - 1].message_id;
	uint8_t h2[96] = {0};
	read_head(h2, mid, 0, SMB2_FLAGS_SIGNED, 0, 96, sizeof(payload));
	struct iovec iov2[2] = {{h2, 96}, {payload, sizeof(payload)}};
	smb_sign_pdu(s.alg, s.key, iov2, 2, h2 + 48);
	pl = place(h2, 96 + sizeof(payload));
	CHECK(pl && pl->off == 96);
	if (pl) {
		memcpy(pl->buf, payload, sizeof(payload));
		pl->buf[100] ^= 1;
	}
	deliver(loop, h2, 96);
	CHECK(wait_calls(&r2.r, 1, 2000));
	CHECK_EQ(r2.r.err, -EIO);

	/* Not placed (then the channel dies mid-payload): an error status, a compound, more than
	 * the loan, a TRANSFORM message, data not at the end, an unknown MessageId. */
	struct read_result r3 = {0};
	result_init(&r3.r);
	CHECK_EQ(smb_conn_submit(c, read_req(c, &r3, buf, 4096)), 0);
	mid = the_fake->sent[sent_count() - 1].message_id;
	read_head(h, mid, STATUS_END_OF_FILE, 0, 0, 80, 100);
	CHECK(place(h, 180) == NULL);
	read_head(h, mid, 0, 0, 184, 80, 100);
	CHECK(place(h, 180) == NULL);
	read_head(h, mid, 0, 0, 0, 80, 4097);
	CHECK(place(h, 80 + 4097) == NULL);
	read_head(h, mid, 0, 0, 0, 80, 100);
	CHECK(place(h, 188) == NULL);
	uint8_t t[80];
	memcpy(t, h, 80);
	smb_put_le32(t, SMB2_TRANSFORM_ID);
	CHECK(place(t, 180) == NULL);
	read_head(h, mid + 1, 0, 0, 0, 80, 100);
	CHECK(place(h, 180) == NULL);
	/* on a sealed session a cleartext answer reaches no loan */
	struct smb_crypt k = {.active = true, .have_key = true};
	c->crypt = &k;
	read_head(h, mid, 0, 0, 0, 80, 100);
	CHECK(place(h, 180) == NULL);
	c->crypt = NULL;
	CHECK(place(h, 180) != NULL); /* the one it takes */
	c->signing = NULL;
	smb_conn_close(c); /* fails r3, the loan revoked first */
	CHECK(wait_calls(&r3.r, 1, 2000));
	CHECK(!r3.loan_live_at_done);
}

/* A request that times out while its payload is coming in place: the loan
 * is revoked before done() runs (the caller may free the buffer then), and
 * the late answer is dropped. */
static void test_read_placed_revoked(void)
{
	struct smb_conn *c = open_conn(300);
	static uint8_t buf[4096];
	struct read_result rr = {0};
	result_init(&rr.r);
	CHECK_EQ(smb_conn_submit(c, read_req(c, &rr, buf, sizeof(buf))), 0);
	uint64_t mid = the_fake->sent[sent_count() - 1].message_id;
	uint8_t h[80];
	read_head(h, mid, 0, 0, 0, 80, 1000);
	struct smb_rx_place *pl = place(h, 1080);
	CHECK(pl && pl->buf == buf);
	CHECK(wait_calls(&rr.r, 1, 3000));
	CHECK_EQ(rr.r.err, -ETIMEDOUT);
	CHECK(!rr.loan_live_at_done);
	CHECK(pl && pl->buf == NULL);
	deliver(loop, h, 80); /* the rest came and was dropped */
	usleep(20000);
	CHECK_EQ(rr.r.calls, 1);
	smb_conn_close(c);
}

/* ---- a fake clock and fake timers (struct smb_conn_env) -------------------------- *
 *
 * Time stands still until the test advances it; timers fire only then.
 * advance() runs on the loop thread (through the real loop, which the fake
 * transport delivers on too), so the conn sees the ticks where it would
 * with the evloop env, one callback at a time.  call still posts on the
 * real loop.  Nothing here sleeps: loop_sync() waits for the loop to have
 * run everything posted before it. */

struct smb_conn_timer {
	uint64_t due_ms;
	void (*fn)(void *arg);
	void *arg;
	struct smb_conn_timer *next;
};

static struct {
	pthread_mutex_t m;
	uint64_t now_ms;
	struct smb_conn_timer *timers; /* unsorted */
	int added, cancelled, fired;
	uint64_t last_ms; /* ms of the latest timer_add */
} fk = {.m = PTHREAD_MUTEX_INITIALIZER};

#define FAKE_T0 1000000u /* ms; a clock at 0 would read as "no deadline" */

static uint64_t fake_now_us(void *ctx)
{
	pthread_mutex_lock(&fk.m);
	uint64_t now = fk.now_ms * 1000u;
	pthread_mutex_unlock(&fk.m);
	return now;
}

static int fake_timer_add(void *ctx, uint64_t ms, void (*fn)(void *arg), void *arg,
                          struct smb_conn_timer **out)
{
	struct smb_conn_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&fk.m);
	t->due_ms = fk.now_ms + ms;
	t->next = fk.timers;
	fk.timers = t;
	fk.added++;
	fk.last_ms = ms;
	pthread_mutex_unlock(&fk.m);
	*out = t;
	return 0;
}

static void fake_timer_cancel(void *ctx, struct smb_conn_timer *t)
{
	CHECK(ev_on_loop_thread(loop));
	pthread_mutex_lock(&fk.m);
	struct smb_conn_timer **pp = &fk.timers;
	while (*pp && *pp != t)
		pp = &(*pp)->next;
	CHECK(*pp == t); /* armed and not fired */
	if (*pp)
		*pp = t->next;
	fk.cancelled++;
	pthread_mutex_unlock(&fk.m);
	free(t);
}

static int fake_call(void *ctx, void (*fn)(void *arg), void *arg)
{
	return ev_call(loop, fn, arg);
}

static const struct smb_conn_env fake_env = {.now_us = fake_now_us,
                                             .timer_add = fake_timer_add,
                                             .timer_cancel = fake_timer_cancel,
                                             .call = fake_call};

static void fake_env_reset(void)
{
	pthread_mutex_lock(&fk.m);
	CHECK(fk.timers == NULL);
	fk.now_ms = FAKE_T0;
	fk.timers = NULL;
	fk.added = fk.cancelled = fk.fired = 0;
	pthread_mutex_unlock(&fk.m);
}

static int fake_timers_armed(void)
{
	int n = 0;
	pthread_mutex_lock(&fk.m);
	for (struct smb_conn_timer *t = fk.timers; t; t = t->next)
		n++;
	pthread_mutex_unlock(&fk.m);
	return n;
}

/* Run fn(arg) on the loop thread and wait until it has returned (after
 * everything posted before it). */
static void run_on_loop(void (*fn)(void *arg), void *arg)
{
	CHECK_EQ(ev_call_wait(loop, fn, arg), 0);
}
static void loop_sync(void)
{
	run_on_loop(NULL, NULL);
}

/* Loop thread: fire every timer due now, earliest first (also those the
 * fired ones arm, if due). */
static void fire_due(void)
{
	for (;;) {
		pthread_mutex_lock(&fk.m);
		struct smb_conn_timer **best = NULL;
		for (struct smb_conn_timer **pp = &fk.timers; *pp; pp = &(*pp)->next)
			if ((*pp)->due_ms <= fk.now_ms &&
			    (!best || (*pp)->due_ms < (*best)->due_ms))
				best = pp;
		struct smb_conn_timer *t = best ? *best : NULL;
		if (t) {
			*best = t->next;
			fk.fired++;
		}
		pthread_mutex_unlock(&fk.m);
		if (!t)
			return;
		t->fn(t->arg);
		free(t);
	}
}

/* Loop thread: move the clock forward 1 ms at a time, firing what falls due. */
static void advance_cb(void *arg)
{
	uint64_t ms = *(uint64_t *)arg;
	fire_due();
	for (uint64_t i = 0; i < ms; i++) {
		pthread_mutex_lock(&fk.m);
		fk.now_ms++;
		pthread_mutex_unlock(&fk.m);
		fire_due();
	}
}

static void advance(uint64_t ms)
{
	run_on_loop(advance_cb, &ms);
}

static uint64_t fake_elapsed(void)
{
	pthread_mutex_lock(&fk.m);
	uint64_t t = fk.now_ms - FAKE_T0;
	pthread_mutex_unlock(&fk.m);
	return t;
}

static struct smb_conn *open_fake_conn(unsigned timeout_ms)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct smb_conn *c;
	int err =
	    smb_conn_open_env(loop, &fake_env, SMB_TRANSPORT_TCP, NULL, (struct sockaddr *)&sa,
	                      sizeof(sa), "fake", 1000, timeout_ms, -1, &c);
	CHECK_EQ(err, 0);
	return c;
}

static int calls_of(struct result *r)
{
	pthread_mutex_lock(&r->m);
	int n = r->calls;
	pthread_mutex_unlock(&r->m);
	return n;
}

static enum smb_conn_state state_of(struct smb_conn *c)
{
	pthread_mutex_lock(&c->lock);
	enum smb_conn_state s = c->state;
	pthread_mutex_unlock(&c->lock);
	return s;
}

/* Deliver a message and wait until the conn has taken it. */
static void deliver_sync(const uint8_t *m, size_t l)
{
	deliver(loop, m, l);
	loop_sync();
}

/* Deadlines on the fake clock: a request fails with ETIMEDOUT at the first
 * tick (every 1000 ms) at or after its deadline, never before; the first
 * interim answer restarts its wait. */
static void test_fake_clock_deadline(void)
{
	fake_env_reset();
	struct smb_conn *c = open_fake_conn(3000);
	CHECK_EQ(fake_timers_armed(), 1); /* the tick */
	CHECK_EQ(fk.last_ms, 1000);
	uint8_t m[128];
	struct result r0, r1, r2, r3;
	result_init(&r0);
	result_init(&r1);
	result_init(&r2);
	result_init(&r3);
	/* Credits first (the conn starts with one). */
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r0, 1)), 0);
	deliver_sync(m, make_rsp(m, SMB2_ECHO, the_fake->sent[0].message_id, 0, 10, 0, 0, 0));
	CHECK_EQ(calls_of(&r0), 1);
	CHECK_EQ(r0.err, 0);

	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r1, 1)), 0); /* due at T0+3000, on a tick */
	advance(500);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r2, 1)), 0); /* due at T0+3500, between */
	CHECK_EQ(sent_count(), 3);
	advance(2499);
	CHECK_EQ(fake_elapsed(), 2999);
	CHECK_EQ(calls_of(&r1), 0);
	CHECK_EQ(calls_of(&r2), 0);
	advance(1);
	CHECK_EQ(calls_of(&r1), 1);
	CHECK_EQ(r1.err, -ETIMEDOUT);
	CHECK_EQ(calls_of(&r2), 0);
	advance(999); /* T0+3999: r2 is past its deadline, the next tick is not yet */
	CHECK_EQ(calls_of(&r2), 0);
	advance(1);
	CHECK_EQ(calls_of(&r2), 1);
	CHECK_EQ(r2.err, -ETIMEDOUT);

	/* T0+4000: r3 due at T0+7000; an interim answer at T0+6500 moves it
	 * to T0+9500, so the tick at T0+10000 fails it. */
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r3, 1)), 0);
	uint64_t mid = the_fake->sent[sent_count() - 1].message_id;
	advance(2500);
	deliver_sync(
	    m, make_rsp(m, SMB2_ECHO, mid, STATUS_PENDING, 1, SMB2_FLAGS_ASYNC_COMMAND, 0, 5));
	advance(3499);
	CHECK_EQ(fake_elapsed(), 9999);
	CHECK_EQ(calls_of(&r3), 0);
	advance(1);
	CHECK_EQ(calls_of(&r3), 1);
	CHECK_EQ(r3.err, -ETIMEDOUT);
	CHECK_EQ(state_of(c), SMB_CONN_UP);
	CHECK_EQ(fake_timers_armed(), 1);
	smb_conn_close(c);
	CHECK_EQ(fake_timers_armed(), 0); /* the death report cancelled the tick */
	CHECK_EQ(fk.cancelled, 1);
}

/* The latency histogram on the fake clock: every answered request lands in
 * the log2 microsecond bucket of its time from submission to answer, the
 * sum adds up, and a request that fails without an answer is not counted. */
static void test_fake_clock_latency_histogram(void)
{
	fake_env_reset();
	struct smb_conn *c = open_fake_conn(2000);
	uint8_t m[128];
	struct result r0, r1, r2;
	result_init(&r0);
	result_init(&r1);
	result_init(&r2);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r0, 1)), 0);
	advance(3); /* 3000 us: more than 2^11, at most 2^12 */
	deliver_sync(m, make_rsp(m, SMB2_ECHO, the_fake->sent[0].message_id, 0, 10, 0, 0, 0));
	CHECK_EQ(calls_of(&r0), 1);
	CHECK_EQ(r0.err, 0);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r1, 1)), 0); /* answered at once: 0 us */
	deliver_sync(m, make_rsp(m, SMB2_ECHO, the_fake->sent[1].message_id, 0, 1, 0, 0, 0));
	CHECK_EQ(calls_of(&r1), 1);
	CHECK_EQ(smb_conn_submit(c, echo_req(c, &r2, 1)), 0); /* never answered */
	advance(3000);
	CHECK_EQ(calls_of(&r2), 1);
	CHECK_EQ(r2.err, -ETIMEDOUT);
	uint64_t total = 0;
	for (int k = 0; k < SMB_CONN_LAT_BUCKETS; k++) {
		uint64_t n = __atomic_load_n(&c->st_lat_buckets[k], __ATOMIC_RELAXED);
		CHECK_EQ(n, (uint64_t)(k == 0 || k == 12));
		total += n;
	}
	CHECK_EQ(total, 2);
	CHECK_EQ(__atomic_load_n(&c->st_lat_sum_us, __ATOMIC_RELAXED), 3000);
	smb_conn_close(c);
}

/* Keepalive on the fake clock: an ECHO after echo_ms with nothing received;
 * an answer restarts the wait; an ECHO unanswered for echo_ms drops the
 * channel. */
static void test_fake_clock_keepalive(void)
{
	fake_env_reset();
	struct smb_conn *c = open_fake_conn(0);
	c->echo_ms = 5000;
	uint8_t m[128];
	advance(4999);
	CHECK_EQ(sent_count(), 0);
	advance(1);
	CHECK_EQ(sent_count(), 1);
	CHECK_EQ(the_fake->sent[0].command, SMB2_ECHO);
	advance(1000); /* answered at T0+6000 */
	deliver_sync(m, make_rsp(m, SMB2_ECHO, the_fake->sent[0].message_id, 0, 1, 0, 0, 0));
	pthread_mutex_lock(&c->lock);
	CHECK_EQ(c->echo_sent_ms, 0);
	pthread_mutex_unlock(&c->lock);
	advance(4999); /* nothing sent before T0+11000 */
	CHECK_EQ(sent_count(), 1);
	advance(1);
	CHECK_EQ(sent_count(), 2);
	CHECK_EQ(the_fake->sent[1].command, SMB2_ECHO);
	/* Unanswered: still up at T0+15999, dropped at T0+16000. */
	advance(4999);
	CHECK_EQ(state_of(c), SMB_CONN_UP);
	advance(1);
	loop_sync(); /* the fake transport reports the death through the loop */
	CHECK_EQ(state_of(c), SMB_CONN_DEAD);
	char why[160];
	smb_conn_dead_why(c, why, sizeof(why));
	CHECK(strstr(why, "keepalive ECHO in 5000 ms") != NULL);
	CHECK_EQ(sent_count(), 2);
	smb_conn_close(c);
	CHECK_EQ(fake_timers_armed(), 0);
}

/* A fake-clock conn under ChannelSequence *seq with one ECHO submitted as a
 * replay (as if sent once on a channel now dead); its completion goes to r. */
static struct smb_conn *submit_replayed_echo(uint16_t *seq, struct result *r)
{
	fake_env_reset();
	struct smb_conn *c = open_fake_conn(0);
	c->channel_sequence = seq;
	result_init(r);
	struct smb_req *req = echo_req(c, r, 1);
	req->sends = 1;
	CHECK_EQ(smb_req_reset_for_replay(req), 0);
	CHECK_EQ(smb_conn_submit(c, req), 0);
	return c;
}

/* STATUS_FILE_NOT_AVAILABLE for a replay under the current ChannelSequence:
 * sent again by a timer, 20 ms after the first refusal, 40 after the second. */
static void test_fake_clock_resend_later(void)
{
	uint16_t seq = 3;
	struct result r;
	struct smb_conn *c = submit_replayed_echo(&seq, &r);
	CHECK_EQ(sent_count(), 1);
	CHECK(the_fake->sent[0].flags & SMB2_FLAGS_REPLAY_OPERATION);
	uint8_t m[128];
	int sent = 1;
	for (uint64_t wait = 20; wait <= 40; wait += 20) {
		uint64_t mid = the_fake->sent[sent - 1].message_id;
		deliver_sync(m,
		             make_rsp(m, SMB2_ECHO, mid, STATUS_FILE_NOT_AVAILABLE, 10, 0, 0, 0));
		CHECK_EQ(calls_of(&r), 0);
		CHECK_EQ(fake_timers_armed(), 2); /* the tick and the resend */
		CHECK_EQ(fk.last_ms, wait);
		advance(wait - 1);
		CHECK_EQ(sent_count(), sent);
		advance(1);
		CHECK_EQ(sent_count(), sent + 1);
		sent++;
		CHECK(the_fake->sent[sent - 1].flags & SMB2_FLAGS_REPLAY_OPERATION);
		CHECK_EQ(the_fake->sent[sent - 1].status & 0xffff, 3); /* ChannelSequence */
		CHECK_EQ(fake_timers_armed(), 1);
	}
	deliver_sync(m,
	             make_rsp(m, SMB2_ECHO, the_fake->sent[sent - 1].message_id, 0, 10, 0, 0, 0));
	CHECK_EQ(calls_of(&r), 1);
	CHECK_EQ(r.err, 0);
	/* sent once before its channel died, so maybe carried out twice - the
	 * refusals (not carried out) change nothing about that */
	CHECK(r.replayed);
	smb_conn_close(c);
	CHECK_EQ(fake_timers_armed(), 0);
}

/* A request waiting for its resend timer when the channel dies is in
 * flight like the others: the death takes it (here: no other channel, so
 * it fails) and cancels its timer, which must not fire on the conn that
 * smb_conn_close() frees. */
static void test_fake_clock_resend_then_death(void)
{
	uint16_t seq = 3;
	struct result r;
	struct smb_conn *c = submit_replayed_echo(&seq, &r);
	uint8_t m[128];
	deliver_sync(m, make_rsp(m, SMB2_ECHO, the_fake->sent[0].message_id,
	                         STATUS_FILE_NOT_AVAILABLE, 10, 0, 0, 0));
	CHECK_EQ(fake_timers_armed(), 2); /* the tick and the resend */
	CHECK_EQ(calls_of(&r), 0);
	smb_conn_abort(c, "test: channel cut");
	loop_sync();
	CHECK_EQ(calls_of(&r), 1);
	CHECK_EQ(r.err, -ECONNABORTED);
	CHECK_EQ(fake_timers_armed(), 0);
	CHECK_EQ(sent_count(), 1); /* never sent again */
	smb_conn_close(c);
	advance(1000); /* nothing left to fire on the freed conn */
	CHECK_EQ(fake_timers_armed(), 0);
}

/* A transport that died between its connect() and the conn being marked
 * up (the loop reported it already) leaves a dead conn without a tick:
 * marked UP with a tick it took requests, and the tick, cancelled by
 * nobody, fired every second on the conn after smb_conn_close() freed it
 * (a jump through its freed env: a daemon's SIGSEGV at address 0). */
static void test_fake_clock_dead_before_up(void)
{
	fake_env_reset();
	die_at_connect = true;
	struct smb_conn *c = open_fake_conn(3000);
	CHECK_EQ(state_of(c), SMB_CONN_DEAD);
	CHECK_EQ(fake_timers_armed(), 0);
	struct result r;
	result_init(&r);
	struct smb_req *req = echo_req(c, &r, 1);
	req->no_replay = true;
	CHECK(smb_conn_submit(c, req) < 0); /* refused: the caller fails its set-up */
	smb_req_put(req);
	CHECK_EQ(sent_count(), 0);
	smb_conn_close(c);
	advance(2000); /* nothing armed on the freed conn */
	CHECK_EQ(fake_timers_armed(), 0);
}

int main(void)
{
	smb_log_init("test_conn", false, LOG_ERR);
	CHECK_EQ(smb_crypto_init(), 0);
	CHECK_EQ(ev_loop_new(&loop), 0);
	RUN(test_simple_roundtrip);
	RUN(test_credit_wait);
	RUN(test_compound_and_interim);
	RUN(test_bad_signature);
	RUN(test_timeout_and_death);
	RUN(test_lent_payload_outlives_no_send);
	RUN(test_malformed_message);
	RUN(test_replay_on_other_channel);
	RUN(test_no_taker_fails_the_request);
	RUN(test_replay_class);
	RUN(test_sealed_session_ignores_cleartext);
	RUN(test_signed_session_unverified_grants);
	RUN(test_read_placed);
	RUN(test_read_placed_revoked);
	RUN(test_fake_clock_deadline);
	RUN(test_fake_clock_keepalive);
	RUN(test_fake_clock_latency_histogram);
	RUN(test_fake_clock_resend_later);
	RUN(test_fake_clock_resend_then_death);
	RUN(test_fake_clock_dead_before_up);
	ev_loop_free(loop);
	return check_report();
}
