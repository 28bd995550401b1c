/* tests/unit/smbd/test_smbd_rdma_peer.c — the SMB Direct transport against a
 * real server (ksmbd in the guest of tests/vm/): connect (5445, then 445),
 * SMB Direct negotiation, one SMB2 NEGOTIATE round trip, a large message to
 * exercise fragmentation, shutdown, destroy; and the RDMA offload tokens on
 * the live QP: device capability (memory windows or not), a registration
 * cache entry, per-I/O tokens got and put twice (a window bind and a local
 * invalidate on rxe, a per-I/O registration on siw), every done callback on
 * the loop thread, a fresh rkey per I/O.
 *
 * SMBRDMA_TEST_EXPECT_MW=1|0 makes the device's window support a checked
 * expectation (the guest test sets it: 1 for rxe, 0 for siw).
 *
 * The peer is named by SMBRDMA_TEST_RDMA_ADDR (an IPv4/IPv6 address on an
 * rxe or siw link).  On a machine with no RDMA device at all the test skips
 * (exit 77) and says why on a line of its own; with a device, a missing
 * address is a failure, and so is every other. */
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"
#include "smbd/smbd_offload.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

struct peer_test {
	struct ev_loop *loop;
	int tok_done, tok_done_off_loop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *msg;
	size_t len;
	int nmsg;
	int dead, dead_err;
	int sent, send_err;
};

static void on_recv(void *arg, uint8_t *msg, size_t len)
{
	struct peer_test *p = arg;
	pthread_mutex_lock(&p->lock);
	talloc_free(p->msg);
	p->msg = msg;
	p->len = len;
	p->nmsg++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void on_dead(void *arg, int err)
{
	struct peer_test *p = arg;
	pthread_mutex_lock(&p->lock);
	p->dead++;
	p->dead_err = err;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void on_sent(struct smb_txbuf *b, int err)
{
	struct peer_test *p = b->arg;
	pthread_mutex_lock(&p->lock);
	p->sent++;
	p->send_err = err;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void on_token_done(void *arg)
{
	struct peer_test *p = arg;
	pthread_mutex_lock(&p->lock);
	p->tok_done++;
	if (!ev_on_loop_thread(p->loop))
		p->tok_done_off_loop++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Wait until *counter reaches want (10 s: a clean close may wait out the 5 s disconnect timer). */
static int wait_for(struct peer_test *p, int *counter, int want)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&p->lock);
	while (*counter < want && !p->dead) {
		if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT)
			break;
	}
	int ok = *counter >= want;
	pthread_mutex_unlock(&p->lock);
	return ok;
}

/* An SMB2 NEGOTIATE request offering 3.0 and 3.0.2 (no negotiate contexts). */
static size_t smb2_negotiate(uint8_t *b, uint64_t message_id)
{
	memset(b, 0, 104);
	memcpy(b, "\xfeSMB", 4);
	b[4] = 64; /* StructureSize */
	b[14] = 1; /* CreditRequest */
	b[24] = (uint8_t)message_id;
	b[64] = 36; /* StructureSize */
	b[66] = 2;  /* DialectCount */
	b[68] = 1;  /* SecurityMode: signing enabled */
	for (int i = 0; i < 16; i++)
		b[76 + i] = (uint8_t)(0x40 + i); /* ClientGuid */
	b[100] = 0x00;
	b[101] = 0x03; /* 0x0300 */
	b[102] = 0x02;
	b[103] = 0x03; /* 0x0302 */
	return 104;
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

/* Long for a reason: one scripted exchange with the peer, read top to
 * bottom, each step beside its checks. */
int main(void)
{
	const char *addr = getenv("SMBRDMA_TEST_RDMA_ADDR");
	if (!have_rdma_device()) {
		printf("SKIP: no RDMA device on this machine (/sys/class/infiniband is empty)\n");
		return 77;
	}
	if (!addr || !*addr) {
		printf("SMBRDMA_TEST_RDMA_ADDR is not set: name the SMB Direct peer to test "
		       "(tests/vm/guest/test_smbd_transport.py does)\n");
		return 1;
	}
	smb_log_init("test_smbd_rdma_peer", false, LOG_DEBUG);

	struct sockaddr_storage ss = {0};
	socklen_t sl;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		sl = sizeof(*s4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		sl = sizeof(*s6);
	} else {
		fprintf(stderr, "FAIL: bad address %s\n", addr);
		return 1;
	}

	struct peer_test p = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct ev_loop *loop;
	struct smb_transport *t;
	struct smb_transport_up up = {.recv = on_recv, .dead = on_dead, .arg = &p, .cancel_fd = -1};
	int r, fails = 0;

	if ((r = ev_loop_new(&loop)) || (r = smb_transport_rdma_new(loop, &up, &t))) {
		fprintf(stderr, "FAIL: set-up: %s\n", strerror(-r));
		return 1;
	}
	r = smb_transport_connect(t, (struct sockaddr *)&ss, sl, 20000);
	if (r) {
		fprintf(stderr, "FAIL: connect to %s: %s\n", addr, strerror(-r));
		smb_transport_destroy(t);
		ev_loop_free(loop);
		return 1;
	}
	struct smb_transport_info info;
	t->ops->info(t, &info);
	p.loop = loop;
	struct smbd_offload_caps caps = {0};
	if (smbd_offload_caps(t, &caps) == 0)
		printf("connected: kind %s max_read_write %u inline send %u recv %u\n", info.kind,
		       info.max_read_write, caps.max_inline_send, caps.max_inline_recv);
	if (strcmp(info.kind, "rdma") || !(info.caps & SMB_TRANSPORT_CAP_RDMA)) {
		fprintf(stderr, "FAIL: info() says %s caps %u\n", info.kind, info.caps);
		fails++;
	}

	/* One SMB2 NEGOTIATE round trip. */
	uint8_t req[104];
	struct smb_txbuf tb = {.iovcnt = 1, .done = on_sent, .arg = &p};
	tb.iov[0].iov_base = req;
	tb.iov[0].iov_len = tb.len = smb2_negotiate(req, 0);
	if ((r = smb_transport_send(t, &tb)) || !wait_for(&p, &p.sent, 1) || p.send_err) {
		fprintf(stderr, "FAIL: send: %s\n", strerror(r ? -r : -p.send_err));
		fails++;
	} else if (!wait_for(&p, &p.nmsg, 1)) {
		fprintf(stderr, "FAIL: no SMB2 NEGOTIATE response\n");
		fails++;
	} else {
		pthread_mutex_lock(&p.lock);
		if (p.len < 72 || memcmp(p.msg, "\xfeSMB", 4) || p.msg[12] != 0 ||
		    p.msg[8] | p.msg[9] | p.msg[10] | p.msg[11]) {
			fprintf(stderr, "FAIL: bad NEGOTIATE response (%zu bytes)\n", p.len);
			fails++;
		} else {
			printf("SMB2 NEGOTIATE: dialect 0x%04x over SMB Direct\n",
			       p.msg[68] | (p.msg[69] << 8));
		}
		pthread_mutex_unlock(&p.lock);
	}

	struct smbd_transport_stats st;
	if (smbd_transport_get_stats(t, &st) || st.msgs_received < 1 || st.bytes_sent != 104) {
		fprintf(stderr, "FAIL: stats: received %llu messages, sent %llu bytes\n",
		        (unsigned long long)st.msgs_received, (unsigned long long)st.bytes_sent);
		fails++;
	} else {
		printf("stats: sent %llu/%llu B, received %llu/%llu B, credits %u/%u\n",
		       (unsigned long long)st.msgs_sent, (unsigned long long)st.bytes_sent,
		       (unsigned long long)st.msgs_received, (unsigned long long)st.bytes_received,
		       st.send_credits, st.recv_credits);
	}

	/* RDMA offload tokens on the live connection. */
	bool has_mw = caps.remote_invalidate;
	printf("device: memory windows type 2: %s\n", has_mw ? "yes" : "no");
	const char *want_mw = getenv("SMBRDMA_TEST_EXPECT_MW");
	if (want_mw && *want_mw && (atoi(want_mw) != 0) != has_mw) {
		fprintf(stderr, "FAIL: expected memory windows %s\n", want_mw);
		fails++;
	}
	size_t pool_len = 1 << 20;
	uint8_t *pool = aligned_alloc(4096, pool_len);
	if ((r = smbd_offload_set_dialect(t, 0x0302)) ||
	    (r = smbd_mr_cache_add(t, pool, pool_len))) {
		fprintf(stderr, "FAIL: registration cache: %s\n", strerror(-r));
		fails++;
	} else {
		if (smbd_mr_cache_add(t, pool + 4096, 4096) != -EEXIST) {
			fprintf(stderr, "FAIL: overlapping registration accepted\n");
			fails++;
		}
		uint32_t prev = 0;
		for (int i = 0; i < 2; i++) {
			struct smbd_io_token *tok;
			uint8_t desc[16];
			uint32_t channel = 0;
			struct smbd_buffer_desc_v1 d;
			size_t nd = 0;
			int acc = i ? SMBD_ACCESS_REMOTE_READ : SMBD_ACCESS_REMOTE_WRITE;
			r = smbd_io_token_get(t, pool + 8192, 65536, acc, &tok, desc, &channel);
			if (r) {
				fprintf(stderr, "FAIL: token get: %s\n", strerror(-r));
				fails++;
				break;
			}
			smbd_buffer_desc_v1_decode(desc, 16, &d, 1, &nd);
			printf("token %d: channel %u offset 0x%llx rkey 0x%08x len %u\n", i,
			       channel, (unsigned long long)d.offset, d.token, d.length);
			if (nd != 1 || d.offset != (uintptr_t)(pool + 8192) || d.length != 65536 ||
			    channel != (has_mw ? 2u : 1u) || (i && d.token == prev)) {
				fprintf(stderr, "FAIL: token %d wrong\n", i);
				fails++;
			}
			prev = d.token;
			smbd_io_token_set_moved(tok, 65536);
			smbd_io_token_put(t, tok, on_token_done, &p);
			if (!wait_for(&p, &p.tok_done, i + 1)) {
				fprintf(stderr, "FAIL: token %d: done never called\n", i);
				fails++;
				break;
			}
		}
		if (p.tok_done_off_loop) {
			fprintf(stderr, "FAIL: done called off the loop thread\n");
			fails++;
		}
		if (smbd_transport_get_stats(t, &st) == 0) {
			printf(
			    "tokens: mw bound %llu inv remote %llu local %llu, per-I/O MRs %llu, "
			    "failed binds %llu registrations %llu, rdma read %llu write %llu B, "
			    "active %u\n",
			    (unsigned long long)st.mw_bound,
			    (unsigned long long)st.mw_invalidated_remote,
			    (unsigned long long)st.mw_invalidated_local,
			    (unsigned long long)st.mr_per_io, (unsigned long long)st.binds_failed,
			    (unsigned long long)st.regs_failed,
			    (unsigned long long)st.rdma_read_bytes,
			    (unsigned long long)st.rdma_write_bytes, st.tokens_active);
			bool ok = st.tokens_active == 0 && st.rdma_read_bytes == 65536 &&
			          st.rdma_write_bytes == 65536 && st.regs_failed == 0 &&
			          st.binds_failed == 0;
			if (has_mw)
				ok = ok && st.mw_bound == 2 && st.mw_invalidated_local == 2;
			else
				ok = ok && st.mr_per_io == 2 && st.mw_bound == 0;
			if (!ok) {
				fprintf(stderr, "FAIL: token stats\n");
				fails++;
			}
		}
		if ((r = smbd_mr_cache_remove(t, pool))) {
			fprintf(stderr, "FAIL: mr_cache_remove: %s\n", strerror(-r));
			fails++;
		}
	}

	/* Shutdown reports death once, with -ECONNABORTED. */
	smb_transport_shutdown(t);
	if (!wait_for(&p, &p.dead, 1) || p.dead != 1) {
		fprintf(stderr, "FAIL: shutdown did not report death (%d)\n", p.dead);
		fails++;
	}
	tb.len = tb.iov[0].iov_len;
	if (smb_transport_send(t, &tb) != -ECONNABORTED) {
		fprintf(stderr, "FAIL: send after death did not fail\n");
		fails++;
	}
	smb_transport_destroy(t);
	ev_loop_free(loop);
	talloc_free(p.msg);
	free(pool);
	printf("%s\n", fails ? "FAIL" : "ok");
	return fails ? 1 : 0;
}
