/* tests/unit/smbd/test_smbd_token_dead.c — a token is dead after its I/O: the
 * server cannot reuse it.  The client half; the server is the hostile peer
 * token_peer_server.c (ksmbd cannot be made to reuse an rkey), and
 * tests/vm/guest/test_smbd_token_dead.py runs both in the test guest.
 *
 * Over our SMB Direct transport (explicit port), on one connection:
 *   1. a token (REMOTE_READ) over a buffer holding a pattern; the peer
 *      RDMA-Reads it and checks the pattern, answers DONE; the token is put
 *      in the receive callback (loop thread, as client/ does) and its done
 *      callback awaited;
 *   2. the same with a REMOTE_WRITE token: the peer RDMA-Writes a pattern,
 *      which we check;
 *   3. a fresh token over the same buffer (on rxe the same memory window,
 *      rebound with a new key), then RETRY: the peer uses the fresh token
 *      (must work) and then the OLD one of round 1 (--retry read) or round 2
 *      (--retry write), which must be refused.  The refusal kills the QP:
 *      we expect the connection to die, put the fresh token, and for a write
 *      retry check that the old token's data never reached the buffer.
 * --old region makes the retried key the registration cache's own key for the
 * buffer's region (its lkey: on rxe and siw the rkey an MR with remote access
 * has), which no descriptor ever carried: the region is registered without
 * remote access (with windows) or not at all (without: the key is then 0), so
 * it must be refused like a dead token.
 * --mode remote sets dialect 3.1.1 (channel RDMA_V1_INVALIDATE where the
 * device has memory windows: the peer answers DONE by Send-with-Invalidate),
 * --mode local dialect 3.0 (RDMA_V1: we invalidate at put).  Without
 * windows (siw) every token is a per-I/O registration either way.
 * SMBRDMA_TEST_EXPECT_MW=1|0 makes window support a checked expectation.
 *
 * Usage: test_smbd_token_dead [--mode remote|local] [--retry read|write]
 *                             [--old token|region] ADDR PORT
 * Exit 0 ok, 1 failure, 77 no RDMA device on this machine (and why, on a
 * line).  Every wait is bounded; the whole run at most 30 s. */
#include "client/proto/smb2_const.h"
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"
#include "smbd/smbd_offload.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_TIMEOUT_S 30
#define WAIT_MS          10000
#define IO_LEN           65536

/* ---- the test's protocol (keep in sync with token_peer_server.c) ---- */
#define TK_MAGIC       "TKD1"
#define TK_REQ_SIZE    44
#define TK_OP_READ     1
#define TK_OP_WRITE    2
#define TK_OP_RETRY_RD 3
#define TK_OP_RETRY_WR 4
#define TK_FLAG_INV    1

static uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)(i ^ (i >> 8) ^ (i >> 16));
	return (uint8_t)(x * 31u + seed * 17u + 5u);
}

static void fill(uint8_t *b, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pattern(seed, i);
}

/* Bytes of b[0..len) equal to pattern(seed). */
static size_t matching(const uint8_t *b, size_t len, uint32_t seed)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += b[i] == pattern(seed, i);
	return n;
}

struct ctx {
	struct ev_loop *loop;
	struct smb_transport *t;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char reply[64];
	int nreply;
	int dead, dead_err;
	int sent, send_err;
	int tok_done, tok_done_off_loop;
	struct smbd_io_token *put_on_reply; /* put from on_recv, on the loop thread */
	size_t put_moved;
	struct smb_txbuf tb;
	uint8_t msg[TK_REQ_SIZE];
};

static void on_token_done(void *arg)
{
	struct ctx *c = arg;
	pthread_mutex_lock(&c->lock);
	c->tok_done++;
	if (!ev_on_loop_thread(c->loop))
		c->tok_done_off_loop++;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void on_recv(void *arg, uint8_t *msg, size_t len)
{
	struct ctx *c = arg;
	pthread_mutex_lock(&c->lock);
	size_t n = len < sizeof(c->reply) - 1 ? len : sizeof(c->reply) - 1;
	memcpy(c->reply, msg, n);
	c->reply[n] = 0;
	c->nreply++;
	struct smbd_io_token *tok = c->put_on_reply;
	size_t moved = c->put_moved;
	c->put_on_reply = NULL;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	talloc_free(msg);
	/* As client/ does: the response's receive recorded any remote
	 * invalidation before this upcall, so put() knows whether to post one. */
	if (tok) {
		smbd_io_token_set_moved(tok, moved);
		smbd_io_token_put(c->t, tok, on_token_done, c);
	}
}

static void on_dead(void *arg, int err)
{
	struct ctx *c = arg;
	pthread_mutex_lock(&c->lock);
	c->dead++;
	c->dead_err = err;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void on_sent(struct smb_txbuf *b, int err)
{
	struct ctx *c = b->arg;
	pthread_mutex_lock(&c->lock);
	c->sent++;
	c->send_err = err;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Wait until *counter >= want (or death, when stop_on_dead); ms at most. */
static int wait_for(struct ctx *c, int *counter, int want, int ms, bool stop_on_dead)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->lock);
	while (*counter < want && !(stop_on_dead && c->dead)) {
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT)
			break;
	}
	int ok = *counter >= want;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* Send one message of the test's protocol (or text) and wait for its send. */
static int send_payload(struct ctx *c, const void *p, size_t len)
{
	pthread_mutex_lock(&c->lock);
	int want = c->sent + 1;
	pthread_mutex_unlock(&c->lock);
	memcpy(c->msg, p, len);
	c->tb = (struct smb_txbuf){.iovcnt = 1, .done = on_sent, .arg = c};
	c->tb.iov[0].iov_base = c->msg;
	c->tb.iov[0].iov_len = c->tb.len = len;
	int r = smb_transport_send(c->t, &c->tb);
	if (r)
		return r;
	if (!wait_for(c, &c->sent, want, WAIT_MS, false))
		return -ETIMEDOUT;
	return c->send_err;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int send_req(struct ctx *c, uint8_t op, uint8_t flags, uint32_t seed, const uint8_t desc[16],
                    const uint8_t *desc2)
{
	uint8_t m[TK_REQ_SIZE] = {0};
	memcpy(m, TK_MAGIC, 4);
	m[4] = op;
	m[5] = flags;
	put_le32(m + 8, seed);
	memcpy(m + 12, desc, 16);
	if (desc2)
		memcpy(m + 28, desc2, 16);
	return send_payload(c, m, sizeof(m));
}

static uint32_t desc_rkey(const uint8_t desc[16])
{
	return (uint32_t)desc[8] | (uint32_t)desc[9] << 8 | (uint32_t)desc[10] << 16 |
	       (uint32_t)desc[11] << 24;
}

static int have_rdma_device(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: client timed out\n";
	if (write(1, m, sizeof(m) - 1) < 0) {
	}
	_exit(1);
}

static void print_stats(const char *when, const struct smbd_transport_stats *st)
{
	printf("stats %s: mw bound %llu, invalidated remote %llu local %llu, "
	       "Send-with-Invalidate received %llu, per-I/O MRs %llu, failed registrations %llu, "
	       "rdma read %llu write %llu B, active %u\n",
	       when, (unsigned long long)st->mw_bound,
	       (unsigned long long)st->mw_invalidated_remote,
	       (unsigned long long)st->mw_invalidated_local,
	       (unsigned long long)st->remote_invalidations, (unsigned long long)st->mr_per_io,
	       (unsigned long long)st->regs_failed, (unsigned long long)st->rdma_read_bytes,
	       (unsigned long long)st->rdma_write_bytes, st->tokens_active);
}

/* One I/O round with a live token: 0 or a failure already printed. */
static int io_round(struct ctx *c, int round, int access, uint8_t *buf, uint32_t seed,
                    uint8_t desc[16], uint32_t *channel)
{
	struct smbd_io_token *tok;
	bool rd = access == SMBD_ACCESS_REMOTE_READ;
	if (rd)
		fill(buf, IO_LEN, seed);
	else
		memset(buf, 0, IO_LEN);
	int r = smbd_io_token_get(c->t, buf, IO_LEN, access, &tok, desc, channel);
	if (r) {
		printf("FAIL: round %d: token get: %s\n", round, strerror(-r));
		return -1;
	}
	bool inv = *channel == SMB2_CHANNEL_RDMA_V1_INVALIDATE;
	printf("round %d (peer RDMA-%ss): token rkey 0x%08x channel %u (%s)\n", round,
	       rd ? "Read" : "Write", desc_rkey(desc), *channel,
	       inv ? "RDMA_V1_INVALIDATE: DONE comes by Send-with-Invalidate"
	           : "RDMA_V1: DONE by plain send");
	pthread_mutex_lock(&c->lock);
	int want_reply = c->nreply + 1, want_done = c->tok_done + 1;
	c->put_on_reply = tok;
	c->put_moved = IO_LEN;
	pthread_mutex_unlock(&c->lock);
	r = send_req(c, rd ? TK_OP_READ : TK_OP_WRITE, inv ? TK_FLAG_INV : 0, seed, desc, NULL);
	if (r || !wait_for(c, &c->nreply, want_reply, WAIT_MS, true)) {
		printf("FAIL: round %d: %s\n", round, r ? strerror(-r) : "no answer from the peer");
		pthread_mutex_lock(&c->lock);
		tok = c->put_on_reply;
		c->put_on_reply = NULL;
		pthread_mutex_unlock(&c->lock);
		if (tok)
			smbd_io_token_put(c->t, tok, on_token_done, c);
		return -1;
	}
	if (!wait_for(c, &c->tok_done, want_done, WAIT_MS, false)) {
		printf("FAIL: round %d: the token's done callback never ran\n", round);
		return -1;
	}
	if (strcmp(c->reply, "DONE")) {
		printf("FAIL: round %d: the peer says '%s'\n", round, c->reply);
		return -1;
	}
	if (!rd) {
		size_t ok = matching(buf, IO_LEN, seed);
		if (ok != IO_LEN) {
			printf("FAIL: round %d: %zu of %u bytes written by the peer\n", round, ok,
			       IO_LEN);
			return -1;
		}
	}
	printf("round %d: peer says DONE, token put, done callback ran%s\n", round,
	       rd ? "" : ", the peer's data is in the buffer");
	return 0;
}

/* Long for a reason: the scenario, step by step, as the peer sees it; split
 * up it would only move the steps away from their checks. */
int main(int argc, char **argv)
{
	const char *mode = "remote", *retry = "read", *oldkind = "token";
	int ai = 1;
	for (; ai + 1 < argc && argv[ai][0] == '-'; ai += 2) {
		if (!strcmp(argv[ai], "--mode"))
			mode = argv[ai + 1];
		else if (!strcmp(argv[ai], "--retry"))
			retry = argv[ai + 1];
		else if (!strcmp(argv[ai], "--old"))
			oldkind = argv[ai + 1];
		else
			break;
	}
	if (argc - ai != 2 || (strcmp(mode, "remote") && strcmp(mode, "local")) ||
	    (strcmp(retry, "read") && strcmp(retry, "write")) ||
	    (strcmp(oldkind, "token") && strcmp(oldkind, "region"))) {
		fprintf(stderr,
		        "usage: %s [--mode remote|local] [--retry read|write] [--old token|region] "
		        "ADDR PORT\n",
		        argv[0]);
		return 1;
	}
	if (!have_rdma_device()) {
		printf("SKIP: no RDMA device on this machine (/sys/class/infiniband is empty)\n");
		return 77;
	}
	const char *addr = argv[ai];
	uint16_t port = (uint16_t)atoi(argv[ai + 1]);
	bool remote = !strcmp(mode, "remote"), retry_rd = !strcmp(retry, "read");
	bool old_region = !strcmp(oldkind, "region");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(CLIENT_TIMEOUT_S);
	smb_log_init("test_smbd_token_dead", false, LOG_INFO);

	struct sockaddr_storage ss = {0};
	socklen_t sl;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		sl = sizeof(*s6);
	} else {
		printf("FAIL: bad address %s\n", addr);
		return 1;
	}

	struct ctx c = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct smb_transport_up up = {.recv = on_recv, .dead = on_dead, .arg = &c, .cancel_fd = -1};
	int r, fails = 0;
	if ((r = ev_loop_new(&c.loop)) || (r = smb_transport_rdma_new(c.loop, &up, &c.t))) {
		printf("FAIL: set-up: %s\n", strerror(-r));
		return 1;
	}
	r = smb_transport_connect(c.t, (struct sockaddr *)&ss, sl, 15000);
	if (r) {
		printf("FAIL: connect to %s port %u: %s\n", addr, port, strerror(-r));
		smb_transport_destroy(c.t);
		ev_loop_free(c.loop);
		return 1;
	}
	struct smbd_offload_caps caps = {0};
	smbd_offload_caps(c.t, &caps);
	bool has_mw = caps.remote_invalidate;
	printf("connected to %s port %u: max_read_write %u, memory windows type 2: %s\n", addr,
	       port, caps.max_read_write, has_mw ? "yes" : "no");
	const char *want_mw = getenv("SMBRDMA_TEST_EXPECT_MW");
	if (want_mw && *want_mw && (atoi(want_mw) != 0) != has_mw) {
		printf("FAIL: expected memory windows %s\n", want_mw);
		fails++;
	}
	uint16_t dialect = remote ? 0x0311 : 0x0300;
	printf("mode %s: dialect 0x%04x, %s; retry with the old %s token\n", mode, dialect,
	       !has_mw  ? "no windows: per-I/O registrations, deregistered at put"
	       : remote ? "windows invalidated by the peer's Send-with-Invalidate"
	                : "windows invalidated locally at put",
	       retry_rd ? "REMOTE_READ (round 1)" : "REMOTE_WRITE (round 2)");

	size_t pool_len = 1 << 20;
	uint8_t *pool = aligned_alloc(4096, pool_len);
	uint8_t *buf = pool + 8192;
	uint8_t d1[16], d2[16], df[16];
	uint32_t ch1 = 0, ch2 = 0, chf = 0;
	struct smbd_io_token *fresh = NULL;
	struct smbd_transport_stats st;
	uint32_t want_ch =
	    has_mw && remote ? SMB2_CHANNEL_RDMA_V1_INVALIDATE : SMB2_CHANNEL_RDMA_V1;
	if (!pool || (r = smbd_offload_set_dialect(c.t, dialect)) ||
	    (r = smbd_mr_cache_add(c.t, pool, pool_len))) {
		printf("FAIL: registration cache: %s\n", strerror(pool ? -r : ENOMEM));
		fails++;
		goto out;
	}
	if (io_round(&c, 1, SMBD_ACCESS_REMOTE_READ, buf, 11, d1, &ch1) ||
	    io_round(&c, 2, SMBD_ACCESS_REMOTE_WRITE, buf, 22, d2, &ch2)) {
		fails++;
		goto out;
	}
	if (ch1 != want_ch || ch2 != want_ch) {
		printf("FAIL: channels %u/%u, expected %u\n", ch1, ch2, want_ch);
		fails++;
	}

	/* The fresh token, same buffer and access as the one the peer retries. */
	const uint8_t *old = retry_rd ? d1 : d2;
	uint8_t dregion[16];
	if (old_region) {
		uint32_t lkey = 0, rkey = 0;
		if ((r = smbd_mr_cache_keys(c.t, pool, &lkey, &rkey))) {
			printf("FAIL: the region's keys: %s\n", strerror(-r));
			fails++;
			goto out;
		}
		struct smbd_buffer_desc_v1 rd = {
		    .offset = (uintptr_t)buf, .token = lkey, .length = IO_LEN};
		smbd_buffer_desc_v1_encode(&rd, 1, dregion, sizeof(dregion));
		old = dregion;
		if (!lkey && !rkey)
			printf(
			    "region of %zu B: not registered (no memory windows on this device); "
			    "the peer retries with key 0\n",
			    pool_len);
		else
			printf(
			    "region of %zu B: lkey 0x%08x rkey 0x%08x; the peer retries with the "
			    "lkey, which no descriptor carried\n",
			    pool_len, lkey, rkey);
		if (has_mw != (lkey != 0)) {
			printf("FAIL: the region should be registered exactly when the device has "
			       "memory windows\n");
			fails++;
		}
	}
	uint32_t seed_f = retry_rd ? 33 : 44;
	if (retry_rd)
		fill(buf, IO_LEN, seed_f);
	else
		memset(buf, 0, IO_LEN);
	r = smbd_io_token_get(c.t, buf, IO_LEN,
	                      retry_rd ? SMBD_ACCESS_REMOTE_READ : SMBD_ACCESS_REMOTE_WRITE, &fresh,
	                      df, &chf);
	if (r) {
		printf("FAIL: fresh token: %s\n", strerror(-r));
		fails++;
		goto out;
	}
	uint32_t ok_key = desc_rkey(old), new_key = desc_rkey(df);
	printf("fresh token over the same buffer: rkey 0x%08x (old 0x%08x%s)\n", new_key, ok_key,
	       (ok_key >> 8) == (new_key >> 8) ? ": same index, new key byte" : "");
	if (new_key == ok_key && !old_region) {
		printf("FAIL: the fresh token reuses the old rkey\n");
		fails++;
	}
	smbd_transport_get_stats(c.t, &st);
	print_stats("before the retry", &st);
	bool ok = st.tokens_active == 1 && st.regs_failed == 0 && st.rdma_read_bytes == IO_LEN &&
	          st.rdma_write_bytes == IO_LEN;
	if (has_mw)
		ok = ok && st.mw_bound == 3 && st.mr_per_io == 0 &&
		     (remote ? st.mw_invalidated_remote == 2 && st.mw_invalidated_local == 0 &&
		                   st.remote_invalidations == 2
		             : st.mw_invalidated_local == 2 && st.mw_invalidated_remote == 0 &&
		                   st.remote_invalidations == 0);
	else
		ok = ok && st.mr_per_io == 3 && st.mw_bound == 0;
	if (!ok) {
		printf("FAIL: token stats before the retry\n");
		fails++;
	}

	/* RETRY: the peer uses the fresh token, then the old one. */
	pthread_mutex_lock(&c.lock);
	int nreply = c.nreply;
	pthread_mutex_unlock(&c.lock);
	r = send_req(&c, retry_rd ? TK_OP_RETRY_RD : TK_OP_RETRY_WR, 0, seed_f, old, df);
	if (r) {
		printf("FAIL: RETRY: %s\n", strerror(-r));
		fails++;
	}
	printf("sent RETRY: the peer now tries old rkey 0x%08x\n", ok_key);
	bool died = false;
	while (!r) {
		if (!wait_for(&c, &c.nreply, nreply + 1, WAIT_MS + 5000, true)) {
			pthread_mutex_lock(&c.lock);
			died = c.dead;
			int err = c.dead_err;
			pthread_mutex_unlock(&c.lock);
			if (died)
				printf("connection died after the retry: %s (expected: the refused "
				       "access fails the QP)\n",
				       strerror(-err));
			else {
				printf("FAIL: the connection outlived the retry without an "
				       "answer\n");
				fails++;
			}
			break;
		}
		nreply++;
		if (!strcmp(c.reply, "CHECK")) {
			/* The peer's old-token Write completed on its side: did it land? */
			size_t hit = matching(buf, IO_LEN, seed_f ^ 0xa5);
			printf("%s: %zu bytes of the old-token write in the buffer\n",
			       hit > IO_LEN / 2 ? "FAIL: old rkey still works" : "peer asks", hit);
			if (hit > IO_LEN / 2)
				fails++;
			send_payload(&c, hit > IO_LEN / 2 ? "WRITTEN" : "INTACT", 7);
			continue;
		}
		printf("FAIL: the peer says '%s'\n", c.reply);
		fails++;
	}
	if (!retry_rd) {
		size_t newb = matching(buf, IO_LEN, seed_f),
		       oldb = matching(buf, IO_LEN, seed_f ^ 0xa5);
		printf("buffer after the retry: %zu B of the fresh-token write, %zu B of the "
		       "old-token write\n",
		       newb, oldb);
		if (newb != IO_LEN) {
			printf("FAIL: the fresh-token write did not land whole\n");
			fails++;
		}
	}

out:
	if (fresh) {
		pthread_mutex_lock(&c.lock);
		int want = c.tok_done + 1;
		pthread_mutex_unlock(&c.lock);
		smbd_io_token_put(c.t, fresh, on_token_done, &c);
		if (!wait_for(&c, &c.tok_done, want, WAIT_MS, false)) {
			printf("FAIL: the fresh token's done callback never ran\n");
			fails++;
		}
	}
	if (c.tok_done_off_loop) {
		printf("FAIL: done called off the loop thread\n");
		fails++;
	}
	if (smbd_transport_get_stats(c.t, &st) == 0) {
		print_stats("at the end", &st);
		if (st.tokens_active) {
			printf("FAIL: %u tokens still active\n", st.tokens_active);
			fails++;
		}
	}
	pthread_mutex_lock(&c.lock);
	bool dead = c.dead;
	pthread_mutex_unlock(&c.lock);
	if (!dead) {
		smb_transport_shutdown(c.t);
		wait_for(&c, &c.dead, 1, WAIT_MS, false);
	}
	printf("destroying the transport\n");
	smb_transport_destroy(c.t);
	ev_loop_free(c.loop);
	free(pool);
	printf("%s\n", fails ? "FAIL" : "ok");
	return fails ? 1 : 0;
}
