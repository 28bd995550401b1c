/* tests/unit/client/test_transport_tcp.c — the Direct TCP receiver
 * (client/transport_tcp.c) against a peer on loopback: messages framed and
 * delivered in order, a message's tail received in place (struct
 * smb_rx_place) with no byte copied while the owner says it places, the copy
 * counted when the stage had read ahead, and a loan revoked mid-tail (the
 * rest dropped, the stream still framed after it). */
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <talloc.h>
#include <unistd.h>

#define BIG      200000
#define MAX_MSGS 16

static struct ev_loop *loop;

struct owner {
	pthread_mutex_t m;
	size_t lens[MAX_MSGS];
	uint8_t first[MAX_MSGS]; /* byte 12 of each message (our tag) */
	int nmsgs;
	bool placing;
	uint8_t *dest; /* the loan for tag 8 messages */
	struct smb_rx_place pl;
	int places;
};

static void on_recv(void *arg, uint8_t *msg, size_t len)
{
	struct owner *o = arg;
	pthread_mutex_lock(&o->m);
	if (o->nmsgs < MAX_MSGS) {
		o->lens[o->nmsgs] = len;
		o->first[o->nmsgs++] = msg[12];
	}
	pthread_mutex_unlock(&o->m);
	talloc_free(msg);
}

static void on_dead(void *arg, int err)
{
	(void)arg;
	(void)err;
}

static struct smb_rx_place *on_place(void *arg, const uint8_t *head, size_t msg_len)
{
	struct owner *o = arg;
	if (head[12] != 8 || msg_len != 80 + BIG)
		return NULL;
	o->places++;
	o->pl = (struct smb_rx_place){.buf = o->dest, .off = 80};
	return &o->pl;
}

static bool on_placing(void *arg)
{
	struct owner *o = arg;
	return __atomic_load_n(&o->placing, __ATOMIC_RELAXED);
}

/* A framed message of len bytes tagged tag, payload bytes from offset 80. */
static size_t frame(uint8_t *out, size_t len, uint8_t tag)
{
	out[0] = 0;
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	uint8_t *m = out + 4;
	memset(m, 0, len < 80 ? len : 80);
	memcpy(m, "\xfeSMB", 4);
	m[12] = tag;
	for (size_t i = 80; i < len; i++)
		m[i] = (uint8_t)(i * 13 + tag);
	return len + 4;
}

static bool payload_ok(const uint8_t *p, size_t n, uint8_t tag)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i + 80) * 13 + tag))
			return false;
	return true;
}

static int wait_msgs(struct owner *o, int n)
{
	for (int i = 0; i < 400; i++) {
		pthread_mutex_lock(&o->m);
		int got = o->nmsgs;
		pthread_mutex_unlock(&o->m);
		if (got >= n)
			return got;
		usleep(5000);
	}
	return -1;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Connect a TCP transport owned by o to a loopback peer; *peer: its fd. */
static struct smb_transport *connect_pair(struct owner *o, int *peer)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	CHECK_EQ(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ(listen(l, 1), 0);
	getsockname(l, (struct sockaddr *)&sa, &sl);
	struct smb_transport_up up = {.recv = on_recv,
	                              .dead = on_dead,
	                              .place = on_place,
	                              .placing = on_placing,
	                              .arg = o,
	                              .cancel_fd = -1};
	struct smb_transport *t;
	CHECK_EQ(smb_transport_tcp_new(loop, &up, &t), 0);
	CHECK_EQ(smb_transport_connect(t, (struct sockaddr *)&sa, sizeof(sa), 2000), 0);
	*peer = accept(l, NULL, NULL);
	close(l);
	return t;
}

static void owner_init(struct owner *o, bool placing)
{
	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->m, NULL);
	o->placing = placing;
	o->dest = calloc(1, BIG);
}

static void close_pair(struct smb_transport *t, int peer, struct owner *o)
{
	close(peer);
	smb_transport_shutdown(t);
	usleep(50000); /* the death report on the loop */
	smb_transport_destroy(t);
	free(o->dest);
}

/* A short message, a placed one, a short one, written at once. */
static void run_stream(bool placing)
{
	struct owner o;
	owner_init(&o, placing);
	int peer;
	struct smb_transport *t = connect_pair(&o, &peer);
	static uint8_t out[3 * 4 + 72 + 80 + BIG + 100];
	size_t n = frame(out, 72, 1);
	n += frame(out + n, 80 + BIG, 8);
	n += frame(out + n, 100, 2);
	write_all(peer, out, n);
	CHECK_EQ(wait_msgs(&o, 3), 3);
	CHECK_EQ(o.lens[0], 72);
	CHECK_EQ(o.lens[1], 80); /* the head only: the tail went to dest */
	CHECK_EQ(o.first[1], 8);
	CHECK_EQ(o.lens[2], 100);
	CHECK_EQ(o.places, 1);
	CHECK(payload_ok(o.dest, BIG, 8));
	if (placing)
		CHECK_EQ(o.pl.copied, 0); /* no tail byte went through the stage */
	else
		CHECK(o.pl.copied <= BIG); /* whatever the stage read ahead: counted */
	close_pair(t, peer, &o);
}

static void test_placed_no_copy(void)
{
	run_stream(true);
}

static void test_placed_read_ahead_counted(void)
{
	run_stream(false);
}

static void revoke_cb(void *arg)
{
	struct owner *o = arg;
	o->pl.buf = NULL;
	__atomic_store_n(&o->placing, false, __ATOMIC_RELAXED);
}

/* The loan is taken back half way through the tail: the rest is dropped,
 * dest keeps what it had, and the next message is framed right. */
static void test_revoked_mid_tail(void)
{
	struct owner o;
	owner_init(&o, true);
	int peer;
	struct smb_transport *t = connect_pair(&o, &peer);
	static uint8_t out[2 * 4 + 80 + BIG + 100];
	size_t n = frame(out, 80 + BIG, 8);
	size_t half = 4 + 80 + BIG / 2;
	write_all(peer, out, half);
	for (int i = 0; i < 400 && o.dest[BIG / 2 - 1] != (uint8_t)((BIG / 2 - 1 + 80) * 13 + 8);
	     i++)
		usleep(5000);
	CHECK_EQ(o.places, 1);
	ev_call(loop, revoke_cb, &o);
	usleep(20000);
	n += frame(out + n, 100, 2);
	write_all(peer, out + half, n - half);
	CHECK_EQ(wait_msgs(&o, 2), 2);
	CHECK_EQ(o.lens[0], 80);
	CHECK_EQ(o.lens[1], 100);
	CHECK_EQ(o.first[1], 2);
	CHECK(payload_ok(o.dest, BIG / 2, 8));
	CHECK_EQ(o.dest[BIG - 1], 0); /* nothing after the revocation */
	close_pair(t, peer, &o);
}

int main(void)
{
	smb_log_init("test_transport_tcp", false, LOG_ERR);
	CHECK_EQ(ev_loop_new(&loop), 0);
	RUN(test_placed_no_copy);
	RUN(test_placed_read_ahead_counted);
	RUN(test_revoked_mid_tail);
	ev_loop_free(loop);
	return check_report();
}
