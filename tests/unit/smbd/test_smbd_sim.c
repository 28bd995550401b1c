/* tests/unit/smbd/test_smbd_sim.c — our connection against a simulated peer
 * that follows [MS-SMBD] credits, with random message sizes both ways and a
 * random interleaving of events.  Checks that every message arrives whole
 * and in order, that nobody ever sends into a receive that is not posted
 * (RNR retry is 0: that would kill a real connection), and that the pair
 * never stalls with work left (the credit deadlock). */
#include "../check.h"
#include "common/log.h"
#include "smbd/smbd_conn.h"
#include "smbd/smbd_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <talloc.h>

#define NMSG     60
#define WIRE_MAX 8192

struct wire_msg {
	uint8_t *b;
	size_t len;
};

struct sim {
	struct smbd_conn *c;
	uint32_t rng;
	int rnr; /* a message arrived with no receive posted */

	/* us -> peer */
	struct wire_msg to_peer[WIRE_MAX];
	int tp_head, tp_count;
	int sends_unacked;
	long our_recv_posted;

	/* the peer */
	long peer_recv_posted, peer_ungranted, peer_send_credits;
	uint16_t peer_request; /* the credits the peer asks us for */
	uint16_t our_target;   /* what we asked for */
	uint8_t *peer_rx;      /* reassembly of our messages */
	size_t peer_rx_len, peer_rx_got;
	int peer_got; /* whole messages the peer received */
	int peer_sent_msgs, peer_frag_off;

	/* the upper layer */
	int we_queued, we_delivered;
	size_t sizes_up[NMSG], sizes_down[NMSG];
	int dead;
};

static uint32_t rnd(struct sim *s)
{
	s->rng = s->rng * 1103515245u + 12345u;
	return s->rng >> 8;
}

static uint8_t pat(int msg, size_t i)
{
	return (uint8_t)(msg * 31 + i * 7);
}

static int s_post_send(void *arg, const struct iovec *iov, int iovcnt, size_t len)
{
	struct sim *s = arg;
	if (s->tp_count == WIRE_MAX)
		return -ENOSPC;
	uint8_t *b = malloc(len);
	size_t off = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(b + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	s->to_peer[(s->tp_head + s->tp_count++) % WIRE_MAX] = (struct wire_msg){b, len};
	s->sends_unacked++;
	return 0;
}

static int s_post_recv(void *arg)
{
	struct sim *s = arg;
	if (s->our_recv_posted >= 256)
		return -ENOBUFS;
	s->our_recv_posted++;
	return 0;
}

static void s_timer_set(void *arg, uint64_t ms)
{
}

static uint64_t s_now(void *arg)
{
	return 0;
}

static void s_deliver(void *arg, uint8_t *msg, size_t len)
{
	struct sim *s = arg;
	int k = s->we_delivered++;
	CHECK(k < NMSG);
	if (k < NMSG) {
		CHECK_EQ(len, s->sizes_down[k]);
		for (size_t i = 0; i < len; i++) {
			if (msg[i] != pat(1000 + k, i)) {
				CHECK(!"payload differs");
				break;
			}
		}
	}
	talloc_free(msg);
}

static void s_disconnect(void *arg)
{
}

static void s_dead(void *arg, int err)
{
	((struct sim *)arg)->dead++;
}

static const struct smbd_conn_ops sim_ops = {
    .post_send = s_post_send,
    .post_recv = s_post_recv,
    .timer_set = s_timer_set,
    .now_ms = s_now,
    .deliver = s_deliver,
    .disconnect = s_disconnect,
    .dead = s_dead,
};

struct up_msg {
	struct smb_txbuf b;
	uint8_t *data;
	int done;
};

static void up_done(struct smb_txbuf *b, int err)
{
	struct up_msg *m = (struct up_msg *)b;
	CHECK_EQ(err, 0);
	m->done++;
}

/* The peer takes one message off the wire. */
static bool peer_receive(struct sim *s)
{
	if (!s->tp_count)
		return false;
	struct wire_msg w = s->to_peer[s->tp_head];
	s->tp_head = (s->tp_head + 1) % WIRE_MAX;
	s->tp_count--;
	if (s->peer_recv_posted - s->peer_ungranted <= 0)
		s->rnr++; /* we sent without a credit */
	if (s->peer_recv_posted <= 0)
		s->rnr++;
	s->peer_recv_posted--;
	/* the peer reposts at once; the new buffer is not granted yet */
	s->peer_recv_posted++;
	s->peer_ungranted++;
	struct smbd_data_hdr h;
	CHECK_EQ(smbd_data_decode(w.b, w.len, 1 << 20, &h), (int)w.len);
	s->peer_send_credits += h.credits_granted;
	s->our_target = h.credits_requested;
	if (h.data_length) {
		if (!s->peer_rx) {
			s->peer_rx_len = h.data_length + h.remaining_data_length;
			s->peer_rx = malloc(s->peer_rx_len);
			s->peer_rx_got = 0;
		}
		memcpy(s->peer_rx + s->peer_rx_got, w.b + h.data_offset, h.data_length);
		s->peer_rx_got += h.data_length;
		if (!h.remaining_data_length) {
			int k = s->peer_got++;
			CHECK_EQ(s->peer_rx_len, s->sizes_up[k]);
			for (size_t i = 0; i < s->peer_rx_len; i++) {
				if (s->peer_rx[i] != pat(k, i)) {
					CHECK(!"payload differs at the peer");
					break;
				}
			}
			free(s->peer_rx);
			s->peer_rx = NULL;
		}
	}
	free(w.b);
	return true;
}

/* The peer sends one fragment (or an empty grant) if its credits allow. */
static bool peer_send(struct sim *s, bool grant_only)
{
	bool have = s->peer_sent_msgs < NMSG;
	if (!have && !grant_only)
		return false;
	if (grant_only && !s->peer_ungranted)
		return false;
	if (s->peer_send_credits == 0)
		return false;
	if (s->peer_send_credits == 1 && s->peer_ungranted == 0)
		return false; /* the same last-credit rule */
	if (s->our_recv_posted <= 0) {
		s->rnr++;
		return false;
	}
	uint8_t buf[1364];
	struct smbd_data_hdr h = {.credits_requested = s->peer_request,
	                          .credits_granted = (uint16_t)s->peer_ungranted};
	size_t payload = 0;
	if (!grant_only) {
		int k = s->peer_sent_msgs;
		size_t total = s->sizes_down[k], left = total - (size_t)s->peer_frag_off;
		payload = left < 1340 ? left : 1340;
		h.data_length = (uint32_t)payload;
		h.remaining_data_length = (uint32_t)(left - payload);
		for (size_t i = 0; i < payload; i++)
			buf[24 + i] = pat(1000 + k, (size_t)s->peer_frag_off + i);
		s->peer_frag_off += (int)payload;
		if ((size_t)s->peer_frag_off == total) {
			s->peer_sent_msgs++;
			s->peer_frag_off = 0;
		}
	}
	int n = smbd_data_hdr_encode(&h, buf, sizeof(buf));
	if (grant_only)
		CHECK_EQ(n, 20);
	s->peer_ungranted = 0;
	s->peer_send_credits--;
	s->our_recv_posted--;
	smbd_conn_recv(s->c, buf, (size_t)n + payload);
	return true;
}

static void run_sim(uint32_t seed, uint16_t peer_bufs, uint16_t peer_request)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct smbd_conn_params p;
	struct up_msg *up = calloc(NMSG, sizeof(*up));

	s->rng = seed;
	smbd_conn_params_default(&p);
	p.send_slots = 16;
	CHECK_EQ(smbd_conn_new(NULL, &p, &sim_ops, s, &s->c), 0);
	for (int k = 0; k < NMSG; k++) {
		uint32_t r = rnd(s);
		/* mostly small, some fragmented, a few large */
		s->sizes_up[k] = r % 4 ? 64 + r % 1200 : 1 + r % 200000;
		r = rnd(s);
		s->sizes_down[k] = r % 4 ? 64 + r % 1200 : 1 + r % 500000;
	}
	smbd_conn_start(s->c);
	smbd_conn_established(s->c);
	free(s->to_peer[0].b); /* the negotiate request */
	s->tp_head = 1;
	s->tp_count = 0;
	s->sends_unacked = 0;
	smbd_conn_send_done(s->c, 0);

	/* The peer posted peer_bufs receives and grants them all. */
	s->peer_recv_posted = peer_bufs;
	s->peer_ungranted = 0;
	s->peer_send_credits = 0;
	s->peer_request = peer_request;
	struct smbd_negotiate_resp resp = {
	    .min_version = 0x0100,
	    .max_version = 0x0100,
	    .negotiated_version = 0x0100,
	    .credits_requested = peer_request,
	    .credits_granted = peer_bufs,
	    .max_read_write_size = 1 << 20,
	    .preferred_send_size = 1364,
	    .max_receive_size = 1364,
	    .max_fragmented_size = 1 << 20,
	};
	uint8_t nb[32];
	smbd_negotiate_resp_encode(&resp, nb, sizeof(nb));
	s->our_recv_posted--;
	smbd_conn_recv(s->c, nb, sizeof(nb));
	CHECK_EQ(smbd_conn_state(s->c), SMBD_CONNECTED);

	int idle_rounds = 0;
	for (long step = 0; step < 2000000 && idle_rounds < 50; step++) {
		bool progress = false;
		switch (rnd(s) % 5) {
		case 0:
			if (s->we_queued < NMSG) {
				int k = s->we_queued++;
				struct up_msg *m = &up[k];
				m->data = malloc(s->sizes_up[k]);
				for (size_t i = 0; i < s->sizes_up[k]; i++)
					m->data[i] = pat(k, i);
				m->b.iov[0].iov_base = m->data;
				m->b.iov[0].iov_len = s->sizes_up[k];
				m->b.iovcnt = 1;
				m->b.len = s->sizes_up[k];
				m->b.done = up_done;
				smbd_conn_send(s->c, &m->b);
				progress = true;
			}
			break;
		case 1:
			progress = peer_receive(s);
			break;
		case 2:
			if (s->sends_unacked) {
				s->sends_unacked--;
				smbd_conn_send_done(s->c, 0);
				progress = true;
			}
			break;
		case 3:
			progress = peer_send(s, false);
			break;
		case 4:
			/* the peer grants when we run low, as we do */
			if (s->peer_ungranted &&
			    (s->peer_recv_posted - s->peer_ungranted) * 2 < s->our_target)
				progress = peer_send(s, true);
			break;
		}
		if (smbd_conn_state(s->c) != SMBD_CONNECTED)
			break;
		/* a round of every event without progress means the pair is stuck */
		if (progress)
			idle_rounds = 0;
		else if (!s->tp_count && !s->sends_unacked && s->we_queued == NMSG)
			idle_rounds++;
	}
	/* Everything must have arrived; the peer may still hold grants it
	 * would send if the session went on. */
	while (peer_receive(s) || s->sends_unacked) {
		if (s->sends_unacked) {
			s->sends_unacked--;
			smbd_conn_send_done(s->c, 0);
		}
	}
	CHECK_EQ(smbd_conn_state(s->c), SMBD_CONNECTED);
	CHECK_EQ(s->dead, 0);
	CHECK_EQ(s->rnr, 0);
	CHECK_EQ(s->peer_got, NMSG);
	CHECK_EQ(s->we_delivered, NMSG);
	for (int k = 0; k < NMSG; k++) {
		CHECK_EQ(up[k].done, 1);
		free(up[k].data);
	}
	if (check_failures)
		fprintf(stderr, "  seed %u bufs %u request %u: peer got %d, we got %d\n", seed,
		        peer_bufs, peer_request, s->peer_got, s->we_delivered);
	smbd_conn_fail(s->c, -ECONNABORTED);
	talloc_free(s->c);
	free(s->peer_rx);
	for (int i = 0; i < s->tp_count; i++)
		free(s->to_peer[(s->tp_head + i) % WIRE_MAX].b);
	free(up);
	free(s);
}

static void test_sim_generous_peer(void)
{
	for (uint32_t seed = 1; seed <= 5; seed++)
		run_sim(seed, 255, 255);
}

static void test_sim_stingy_peer(void)
{
	/* A peer with one receive buffer that asks for one credit: every
	 * message must bring a credit back or both sides stop. */
	for (uint32_t seed = 10; seed <= 14; seed++)
		run_sim(seed, 1, 1);
	for (uint32_t seed = 20; seed <= 24; seed++)
		run_sim(seed, 2, 3);
}

int main(void)
{
	smb_log_set_level(LOG_EMERG);
	RUN(test_sim_generous_peer);
	RUN(test_sim_stingy_peer);
	return check_report();
}
