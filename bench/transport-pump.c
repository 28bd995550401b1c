/* bench/transport-pump.c — BENCHMARK TOOL, not installed: moves bulk bytes
 * through one client transport (common/transport.h: Direct TCP or QUIC)
 * with no SMB, no FUSE and no file server, to measure what the transport
 * itself costs and how fast it can go (bench/quic-ceiling drives it).
 *
 *   transport-pump serve ADDR:PORT
 *       A TCP responder (the "file server"): reads Direct TCP framed
 *       messages (a zero byte and a 24-bit length first); a message whose
 *       byte 4 is 'R' asks for a reply of the size in bytes 5..8
 *       (little-endian); any other message gets a 64-byte reply.  Every
 *       reply starts 0xFE 'SMB' (the client's framer checks it).  One
 *       thread per connection, blocking I/O.  Prints "ready".
 *   transport-pump tcp|quic ADDR:PORT write|read MIB [INFLIGHT [MSG_KIB]]
 *       [--server-name NAME --cafile PEM]
 *       The client: keeps INFLIGHT (8) requests of MSG_KIB (1024) KiB each
 *       outstanding (write: MSG_KIB-KiB messages answered with 64 bytes;
 *       read: small requests answered with MSG_KIB KiB), like SMB2
 *       WRITE/READ at that queue depth, until MIB MiB moved.  Prints one
 *       line of JSON: bytes, seconds, and this process's CPU seconds.
 *
 * Reaching the relay (tests/quic/relay.c), which forwards to serve, gives
 * the same hop as bench/quic-vs-tcp with everything above the transport
 * taken away: the ceiling of SMB over each transport on this machine.
 */
#include "common/transport.h"
#include "client/transport_quic.h"
#include "common/evloop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <talloc.h>
#include <time.h>
#include <unistd.h>

#define SMALL 64u

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void put_hdr(uint8_t h[8], uint32_t len)
{
	h[0] = 0;
	h[1] = (uint8_t)(len >> 16);
	h[2] = (uint8_t)(len >> 8);
	h[3] = (uint8_t)len;
	h[4] = 0xFE;
	h[5] = 'S';
	h[6] = 'M';
	h[7] = 'B';
}

/* ---- serve ---------------------------------------------------------------- */

static int read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t r = write(fd, (const uint8_t *)p + put, n - put);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		put += (size_t)r;
	}
	return 0;
}

static uint8_t *zeros; /* 16 MiB of reply payload */

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t hdr[4], *msg = malloc(16u << 20), rh[8];

	while (msg && read_full(fd, hdr, 4) == 0) {
		uint32_t len = (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
		if (hdr[0] != 0 || len < 4 || read_full(fd, msg, len) < 0)
			break;
		uint32_t want = SMALL;
		if (len >= 9 && msg[4] == 'R') {
			memcpy(&want, msg + 5, 4);
			if (want < 4 || want > (16u << 20) - 8)
				break;
		}
		put_hdr(rh, want);
		if (write_full(fd, rh, 8) < 0 || write_full(fd, zeros, want - 4) < 0)
			break;
	}
	free(msg);
	close(fd);
	return NULL;
}

static int serve(const char *addr)
{
	struct sockaddr_in sa;
	int one = 1, ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	zeros = calloc(1, 16u << 20);
	if (ls < 0 || !zeros || parse_addr(addr, &sa) < 0)
		return 2;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 16) < 0) {
		perror("transport-pump serve");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		pthread_t th;
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (pthread_create(&th, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(th);
		else
			close(fd);
	}
}

/* ---- client --------------------------------------------------------------- */

struct pump {
	struct smb_transport *t;
	bool write;
	uint32_t msg;         /* payload bytes per I/O */
	uint64_t goal, moved; /* payload bytes */
	uint64_t sent;        /* payload bytes asked for so far */
	uint8_t *payload;     /* msg bytes of request payload (write), shared by all */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished, dead;
	int err;
};

/* A request: the transport adds the 4-byte length prefix itself. */
struct req {
	struct smb_txbuf buf;
	uint8_t hdr[12];
};

static void finish(struct pump *p, int err)
{
	pthread_mutex_lock(&p->lock);
	if (!p->finished) {
		p->finished = true;
		p->err = err;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
}

static void req_done(struct smb_txbuf *b, int err)
{
	struct pump *p = b->arg;

	free(b);
	if (err)
		finish(p, err);
}

/* Loop thread (or main, before the first reply). */
static void issue(struct pump *p)
{
	struct req *r;

	if (p->sent >= p->goal)
		return;
	r = calloc(1, sizeof(*r));
	if (!r) {
		finish(p, -ENOMEM);
		return;
	}
	r->buf.done = req_done;
	r->buf.arg = p;
	memcpy(r->hdr, "\xfeSMB", 4);
	if (p->write) { /* 0xFE 'SMB' 'W', then the payload */
		r->hdr[4] = 'W';
		r->buf.iov[0] = (struct iovec){r->hdr, 5};
		r->buf.iov[1] = (struct iovec){p->payload, p->msg};
		r->buf.iovcnt = 2;
	} else { /* 0xFE 'SMB' 'R' and the size wanted */
		r->hdr[4] = 'R';
		memcpy(r->hdr + 5, &p->msg, 4);
		r->buf.iov[0] = (struct iovec){r->hdr, 9};
		r->buf.iovcnt = 1;
	}
	r->buf.len = r->buf.iov[0].iov_len + (r->buf.iovcnt > 1 ? r->buf.iov[1].iov_len : 0);
	p->sent += p->msg;
	int rc = smb_transport_send(p->t, &r->buf);
	if (rc < 0) {
		free(r);
		finish(p, rc);
	}
}

static void on_recv(void *arg, uint8_t *msg, size_t len)
{
	struct pump *p = arg;

	talloc_free(msg);
	if (!p->write && len != p->msg) {
		fprintf(stderr, "transport-pump: reply of %zu bytes, want %u\n", len, p->msg);
		finish(p, -EBADMSG);
		return;
	}
	p->moved += p->msg;
	if (p->moved >= p->goal)
		finish(p, 0);
	else
		issue(p);
}

static void on_dead(void *arg, int err)
{
	struct pump *p = arg;

	finish(p, err ? err : -ECONNRESET);
	pthread_mutex_lock(&p->lock);
	p->dead = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

struct start_arg {
	struct pump *p;
	unsigned n;
};

static void start_cb(void *arg)
{
	struct start_arg *s = arg;
	for (unsigned i = 0; i < s->n; i++)
		issue(s->p);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int usage(void)
{
	fprintf(stderr, "usage: transport-pump serve ADDR:PORT\n"
	                "       transport-pump tcp|quic ADDR:PORT write|read MIB [INFLIGHT "
	                "[MSG_KIB]] [--server-name NAME --cafile PEM]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *pos[8], *server_name = "localhost", *cafile = NULL;
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--server-name") == 0 && i + 1 < argc)
			server_name = argv[++i];
		else if (strcmp(argv[i], "--cafile") == 0 && i + 1 < argc)
			cafile = argv[++i];
		else if (npos < 8)
			pos[npos++] = argv[i];
		else
			return usage();
	}
	if (npos == 2 && strcmp(pos[0], "serve") == 0)
		return serve(pos[1]);
	if (npos < 4)
		return usage();

	struct sockaddr_in sa;
	bool quic = strcmp(pos[0], "quic") == 0;
	unsigned inflight = npos > 4 ? (unsigned)atoi(pos[4]) : 8;
	unsigned kib = npos > 5 ? (unsigned)atoi(pos[5]) : 1024;
	struct pump p = {.write = strcmp(pos[2], "write") == 0,
	                 .msg = kib << 10,
	                 .goal = (uint64_t)strtoull(pos[3], NULL, 10) << 20,
	                 .lock = PTHREAD_MUTEX_INITIALIZER,
	                 .cond = PTHREAD_COND_INITIALIZER};
	struct smb_transport_up up = {.recv = on_recv, .dead = on_dead, .arg = &p, .cancel_fd = -1};
	struct ev_loop *loop;
	int rc;

	if ((!quic && strcmp(pos[0], "tcp") != 0) || parse_addr(pos[1], &sa) < 0 || !inflight ||
	    !kib || kib > 8192 || !p.goal)
		return usage();
	p.payload = calloc(1, p.msg);
	if (!p.payload || ev_loop_new(&loop) < 0)
		return 1;
	if (quic) {
		struct smb_quic_params qp = {
		    .server_name = server_name, .cafile = cafile, .cancel_fd = -1};
		rc = smb_transport_quic_new(loop, &up, &qp, &p.t);
	} else {
		rc = smb_transport_tcp_new(loop, &up, &p.t);
	}
	if (rc < 0 ||
	    (rc = smb_transport_connect(p.t, (struct sockaddr *)&sa, sizeof(sa), 10000)) < 0) {
		fprintf(stderr, "transport-pump: connect: %s\n", strerror(-rc));
		return 1;
	}
	double t0 = now_s(), c0 = cpu_s();
	struct start_arg s = {&p, inflight};
	ev_call(loop, start_cb, &s);
	pthread_mutex_lock(&p.lock);
	while (!p.finished)
		pthread_cond_wait(&p.cond, &p.lock);
	pthread_mutex_unlock(&p.lock);
	double secs = now_s() - t0, cpu = cpu_s() - c0;
	/* destroy() only after the dead report, and before the loop goes */
	smb_transport_shutdown(p.t);
	pthread_mutex_lock(&p.lock);
	while (!p.dead)
		pthread_cond_wait(&p.cond, &p.lock);
	pthread_mutex_unlock(&p.lock);
	smb_transport_destroy(p.t);
	ev_loop_free(loop);
	if (p.err) {
		fprintf(stderr, "transport-pump: %s\n", strerror(-p.err));
		return 1;
	}
	printf("{\"transport\": \"%s\", \"dir\": \"%s\", \"bytes\": %llu, \"seconds\": %.4f, "
	       "\"cpu_s\": %.3f, \"inflight\": %u, \"msg_kib\": %u}\n",
	       pos[0], p.write ? "write" : "read", (unsigned long long)p.moved, secs, cpu, inflight,
	       kib);
	return 0;
}
