/* tests/quic/relay.c — TEST INFRASTRUCTURE, not installed: a QUIC-to-TCP
 * relay that lets the tests mount Samba (which speaks no QUIC) with
 * transport=quic.  The only server-side code in the project.
 *
 *   smbquic-relay --listen ADDR:PORT --forward ADDR:PORT --cert PEM --key PEM
 *                 [--client-ca PEM] [--mode quic|tcp]
 *
 * quic: terminates QUIC + TLS 1.3 (ALPN "smb") with the given certificate
 *   and copies the bytes of each connection's first client bidirectional
 *   stream to a new TCP connection to --forward, and back.  The bytes are
 *   not parsed: the SMB2 Direct TCP framing passes through as it is.
 *   --client-ca: demand a client certificate issued by that CA.
 * tcp: a plain TCP forwarder on the same hop (for the benchmark: both paths
 *   then cross one relay process).
 *
 * One thread, epoll; connections are told apart by the client's address
 * (the tests do not migrate).  Each wakeup reads every waiting datagram
 * before writing anything; datagrams are as large as the route to the client
 * allows (at once to a client on this host, after path MTU discovery to
 * others), as the client's are; UDP GSO out, UDP_GRO in.
 * Prints "ready" on stdout once listening.  Exits on SIGTERM/SIGINT.
 */
#include "common/udp_batch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PKT_MAX 65536
/* The client's flow-control window, stream and connection alike.  The relay
 * consumes as fast as Samba's TCP socket takes the bytes, so it rarely
 * fills; it is sized for a server that consumes a WRITE only once it has
 * all of it: 1 MiB WRITEs at 8 in flight put just over 8 MiB on the stream,
 * and ngtcp2 announces credit only once a quarter of the window is
 * consumed, so the client can count on 3/4 of it; 16 MiB (3/4 = 12 MiB)
 * keeps it from ever waiting (client/transport_quic.c, QUIC_RX_WINDOW, has
 * the sums).  Fixed: flow control is what bounds the up buffer. */
#define RX_WINDOW (16u << 20)
/* Bytes buffered each way per connection: up, all the window lets in;
 * down, the READ responses of 8 x 1 MiB in flight until acknowledged. */
#define BUF_CAP   RX_WINDOW
#define MAX_CONNS 64

/* A ring of BUF_CAP bytes: those held start at mem[head] and run on for len
 * bytes, wrapping at the end.  Bytes never move once written (sliding them
 * down, once per buffer-full, cost reads a copy of all in flight: a
 * memmove per ACK of an 8 MiB buffer was what first made QUIC reads crawl). */
struct bytebuf {
	uint8_t *mem;
	size_t head, len;
};

struct rconn {
	bool used;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	ngtcp2_conn *conn;
	gnutls_session_t tls;
	ngtcp2_crypto_conn_ref ref;
	int64_t stream_id;
	int tcp_fd; /* to --forward */
	/* client -> server: stream data not yet written to tcp_fd */
	struct bytebuf up;
	/* server -> client: read from tcp_fd; kept until acked.  down_base is
	 * the stream offset of the first byte held; down_sent how many of the
	 * held bytes were handed to ngtcp2. */
	struct bytebuf down;
	uint64_t down_base;
	size_t down_sent;
	bool closing;
	uint32_t tcp_events; /* what tcp_fd is registered for */
	bool touched;        /* read a datagram in this wakeup: after() due */
};

/* tcp mode */
struct tconn {
	int a, b; /* client side, server side */
};

static struct rconn conns[MAX_CONNS];
static int udp_fd = -1, ep = -1;
static struct sockaddr_storage listen_addr, fwd_addr;
static socklen_t listen_len, fwd_len;
static gnutls_certificate_credentials_t cred;
static bool want_client_cert;
static volatile sig_atomic_t stop;
static uint8_t pkt[PKT_MAX];   /* received datagrams */
static uint8_t txpkt[PKT_MAX]; /* packets being written */
static bool gso;               /* udp_send_gso() usable (udp_batch_setup) */

static ngtcp2_tstamp now_ts(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

static int parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	int port = atoi(colon + 1);
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		return 0;
	}
	return -1;
}

/* The held bytes from off on, as up to two pieces; returns how many. */
static int buf_span(const struct bytebuf *b, size_t off, ngtcp2_vec v[2])
{
	if (off >= b->len)
		return 0;
	size_t start = (b->head + off) % BUF_CAP, n = b->len - off;
	v[0].base = b->mem + start;
	v[0].len = n < BUF_CAP - start ? n : BUF_CAP - start;
	if (v[0].len == n)
		return 1;
	v[1].base = b->mem;
	v[1].len = n - v[0].len;
	return 2;
}

/* The free space after the held bytes that is one piece; NULL without any
 * (or memory). */
static uint8_t *buf_room(struct bytebuf *b, size_t *n)
{
	if (!b->mem && !(b->mem = malloc(BUF_CAP)))
		return NULL;
	size_t tail = (b->head + b->len) % BUF_CAP;
	*n = BUF_CAP - b->len;
	if (*n > BUF_CAP - tail)
		*n = BUF_CAP - tail;
	return *n ? b->mem + tail : NULL;
}

static int buf_append(struct bytebuf *b, const uint8_t *p, size_t n)
{
	if (b->len + n > BUF_CAP)
		return -1;
	while (n) {
		size_t room;
		uint8_t *dst = buf_room(b, &room);
		if (!dst)
			return -1;
		size_t k = n < room ? n : room;
		memcpy(dst, p, k);
		b->len += k;
		p += k;
		n -= k;
	}
	return 0;
}

static void buf_consume(struct bytebuf *b, size_t n)
{
	b->head = (b->head + n) % BUF_CAP;
	b->len -= n;
	if (!b->len)
		b->head = 0;
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---- QUIC connections -------------------------------------------------------- */

static void rconn_free(struct rconn *c)
{
	if (c->conn) {
		/* For reading a benchmark: what congestion control ended with. */
		ngtcp2_conn_info ci;
		ngtcp2_conn_get_conn_info(c->conn, &ci);
		fprintf(stderr,
		        "relay: conn closed: srtt %.3f ms, min_rtt %.3f ms, cwnd %llu, ssthresh "
		        "%llu, in flight %llu, datagrams up to %zu bytes\n",
		        ci.smoothed_rtt / 1e6, ci.min_rtt / 1e6, (unsigned long long)ci.cwnd,
		        (unsigned long long)ci.ssthresh, (unsigned long long)ci.bytes_in_flight,
		        ngtcp2_conn_get_path_max_tx_udp_payload_size(c->conn));
	}
	if (c->tcp_fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, c->tcp_fd, NULL);
		close(c->tcp_fd);
	}
	if (c->conn)
		ngtcp2_conn_del(c->conn);
	if (c->tls)
		gnutls_deinit(c->tls);
	free(c->up.mem);
	free(c->down.mem);
	memset(c, 0, sizeof(*c));
	c->tcp_fd = -1;
}

static void send_pkt(struct rconn *c, const uint8_t *p, size_t n)
{
	sendto(udp_fd, p, n, MSG_DONTWAIT, (struct sockaddr *)&c->peer, c->peer_len);
}

/* n bytes of packets of seg bytes (the last may be shorter) in one UDP GSO
 * sendmsg, as client/transport_quic.c does; one sendto each without GSO. */
static void send_batch(struct rconn *c, const uint8_t *p, size_t n, size_t seg)
{
	if (n > seg && gso) {
		int err = udp_send_gso(udp_fd, (struct sockaddr *)&c->peer, c->peer_len, p, n, seg);
		if (err == -EIO) {
			fprintf(stderr, "relay: no UDP GSO here\n");
			gso = false;
		} else if (err != -EINVAL && err != -EMSGSIZE) {
			return; /* sent, or lost */
		}
		/* EINVAL/EMSGSIZE: a segment too large for the route (an MTU
		 * probe): one packet at a time, as without GSO. */
	}
	for (size_t off = 0; off < n; off += seg)
		send_pkt(c, p + off, n - off < seg ? n - off : seg);
}

/* liberr: the ngtcp2 error that ends the connection (a refused TLS
 * handshake becomes its alert), or 0 for a plain close. */
static void rconn_close_err(struct rconn *c, int liberr)
{
	if (c->conn && !ngtcp2_conn_in_closing_period(c->conn) &&
	    !ngtcp2_conn_in_draining_period(c->conn)) {
		ngtcp2_ccerr ce;
		ngtcp2_path_storage ps;
		ngtcp2_path_storage_zero(&ps);
		if (liberr == NGTCP2_ERR_CRYPTO)
			ngtcp2_ccerr_set_tls_alert(&ce, ngtcp2_conn_get_tls_alert(c->conn), NULL,
			                           0);
		else if (liberr)
			ngtcp2_ccerr_set_liberr(&ce, liberr, NULL, 0);
		else
			ngtcp2_ccerr_set_application_error(&ce, 0, NULL, 0);
		ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, NULL, txpkt,
		                                                    sizeof(txpkt), &ce, now_ts());
		if (n > 0)
			send_pkt(c, txpkt, (size_t)n);
	}
	rconn_free(c);
}

static void rconn_close(struct rconn *c)
{
	rconn_close_err(c, 0);
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct rconn *)ref->user_data)->conn;
}

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *ud)
{
	uint8_t b[NGTCP2_MAX_CIDLEN];
	gnutls_rnd(GNUTLS_RND_RANDOM, b, cidlen);
	ngtcp2_cid_init(cid, b, cidlen);
	gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN);
	return 0;
}

static int flush_up(struct rconn *c);

static int stream_open_cb(ngtcp2_conn *conn, int64_t stream_id, void *ud)
{
	struct rconn *c = ud;
	if (c->stream_id >= 0 || !ngtcp2_is_bidi_stream(stream_id))
		return 0;
	c->stream_id = stream_id;
	int fd = socket(fwd_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&fwd_addr, fwd_len) < 0) {
		perror("relay: connect to --forward");
		if (fd >= 0)
			close(fd);
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_nonblock(fd);
	c->tcp_fd = fd;
	c->tcp_events = EPOLLIN;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

static int recv_stream_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                          const uint8_t *data, size_t datalen, void *ud, void *sud)
{
	struct rconn *c = ud;
	if (stream_id != c->stream_id) {
		ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
		ngtcp2_conn_extend_max_offset(conn, datalen);
		return 0;
	}
	if (buf_append(&c->up, data, datalen) < 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	if (flags & NGTCP2_STREAM_DATA_FLAG_FIN)
		c->closing = true;
	return 0;
}

static int acked_cb(ngtcp2_conn *conn, int64_t stream_id, uint64_t offset, uint64_t datalen,
                    void *ud, void *sud)
{
	struct rconn *c = ud;
	uint64_t upto = offset + datalen;
	if (stream_id != c->stream_id || upto <= c->down_base)
		return 0;
	size_t n = (size_t)(upto - c->down_base);
	if (n > c->down_sent)
		n = c->down_sent;
	buf_consume(&c->down, n);
	c->down_base += n;
	c->down_sent -= n;
	return 0;
}

static int stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                           uint64_t app_error_code, void *ud, void *sud)
{
	struct rconn *c = ud;
	if (stream_id == c->stream_id)
		c->closing = true;
	return 0;
}

/* Write what the client sent on to Samba; give its window back as it goes. */
static int flush_up(struct rconn *c)
{
	while (c->up.len && c->tcp_fd >= 0) {
		ngtcp2_vec v[2];
		int nv = buf_span(&c->up, 0, v);
		struct iovec iov[2] = {{v[0].base, v[0].len},
		                       {nv > 1 ? v[1].base : NULL, nv > 1 ? v[1].len : 0}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)nv};
		ssize_t w = sendmsg(c->tcp_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN ? 0 : -1; /* after() asks for EPOLLOUT */
		buf_consume(&c->up, (size_t)w);
		ngtcp2_conn_extend_max_stream_offset(c->conn, c->stream_id, (uint64_t)w);
		ngtcp2_conn_extend_max_offset(c->conn, (uint64_t)w);
	}
	return 0;
}

/* Watch tcp_fd for what is wanted now: reading while the down buffer has
 * room, writing while bytes wait to go up.  A syscall only on a change. */
static void tcp_watch(struct rconn *c)
{
	if (c->tcp_fd < 0)
		return;
	uint32_t want = (c->down.len < BUF_CAP ? EPOLLIN : 0) | (c->up.len ? EPOLLOUT : 0);
	if (want == c->tcp_events)
		return;
	struct epoll_event ev = {.events = want, .data.ptr = c};
	epoll_ctl(ep, EPOLL_CTL_MOD, c->tcp_fd, &ev);
	c->tcp_events = want;
}

/* Write every packet due; returns -1 when the connection must go. */
static int write_pkts(struct rconn *c)
{
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	ngtcp2_tstamp ts = now_ts();
	bool blocked = false;
	/* ngtcp2's limit, not the path's: room for a path MTU probe, which
	 * ngtcp2 skips when it does not fit (client/transport_quic.c). */
	size_t max = ngtcp2_conn_get_max_tx_udp_payload_size(c->conn);
	size_t quantum = ngtcp2_conn_get_send_quantum(c->conn), sent = 0;
	/* Packets gather in txpkt, seg bytes each, for one send_batch(). */
	size_t batch = 0, seg = 0, max_segs = 1;
	if (max > sizeof(txpkt))
		max = sizeof(txpkt);
	if (gso && max <= 65000 / 2)
		max_segs = 65000 / max < 64 ? 65000 / max : 64;
	ngtcp2_path_storage_zero(&ps);
	for (int i = 0; i < 4096; i++) {
		ngtcp2_vec v[2];
		ngtcp2_ssize wlen = -1;
		int64_t sid = -1;
		size_t nv = 0;
		if (!blocked && c->stream_id >= 0 && c->down_sent < c->down.len) {
			nv = (size_t)buf_span(&c->down, c->down_sent, v);
			sid = c->stream_id;
		}
		ngtcp2_ssize n = ngtcp2_conn_writev_stream(
		    c->conn, &ps.path, &pi, txpkt + batch, max, &wlen,
		    NGTCP2_WRITE_STREAM_FLAG_MORE, sid, nv ? v : NULL, nv, ts);
		if (n < 0) {
			if (n == NGTCP2_ERR_WRITE_MORE) {
				c->down_sent += (size_t)wlen;
				continue;
			}
			if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR) {
				blocked = true;
				continue;
			}
			return -1;
		}
		if (wlen > 0)
			c->down_sent += (size_t)wlen;
		if (n == 0)
			break;
		size_t len = (size_t)n;
		if (batch && len > seg) {
			send_batch(c, txpkt, batch, seg);
			memmove(txpkt, txpkt + batch, len);
			batch = 0;
		}
		if (!batch)
			seg = len;
		batch += len;
		if (len < seg || batch / seg >= max_segs) {
			send_batch(c, txpkt, batch, seg);
			batch = 0;
		}
		/* Account pacing as we go, as client/transport_quic.c does. */
		sent += (size_t)n;
		if (quantum && sent >= quantum) {
			ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
			ts = now_ts();
			sent = 0;
		}
	}
	if (batch)
		send_batch(c, txpkt, batch, seg);
	ngtcp2_conn_update_pkt_tx_time(c->conn, ts);
	return 0;
}

static void after(struct rconn *c)
{
	if (!c->used)
		return;
	if (flush_up(c) < 0 || write_pkts(c) < 0 || (c->closing && !c->up.len)) {
		rconn_close(c);
		return;
	}
	tcp_watch(c);
}

/* The largest UDP payload the route to the client allows (its MTU less the
 * IPv4 and UDP headers), 0 if no more than ngtcp2's default; *whole when the
 * client is on this host, the route then being the whole path (why, and
 * what the probes are: client/transport_quic.c, quic_route_payload()).
 * The listening socket is not connected, so ask the kernel through a socket
 * connected to the client. */
static size_t route_payload(const struct sockaddr_storage *peer, socklen_t len, bool *whole)
{
	*whole = false;
	if (peer->ss_family != AF_INET)
		return 0;
	*whole = (ntohl(((const struct sockaddr_in *)peer)->sin_addr.s_addr) >> 24) == 127;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = 0;
	socklen_t mlen = sizeof(mtu);
	if (fd < 0)
		return 0;
	if (connect(fd, (const struct sockaddr *)peer, len) < 0 ||
	    getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &mlen) < 0)
		mtu = 0;
	close(fd);
	if (mtu < 1500)
		return 0;
	return (size_t)mtu - 28 > PKT_MAX ? PKT_MAX : (size_t)mtu - 28;
}

static struct rconn *rconn_new(const ngtcp2_pkt_hd *hd, const struct sockaddr_storage *peer,
                               socklen_t peer_len)
{
	struct rconn *c = NULL;
	for (int i = 0; i < MAX_CONNS; i++)
		if (!conns[i].used) {
			c = &conns[i];
			break;
		}
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->used = true;
	c->tcp_fd = -1;
	c->stream_id = -1;
	c->peer = *peer;
	c->peer_len = peer_len;

	ngtcp2_callbacks cb = {
	    .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
	    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	    .encrypt = ngtcp2_crypto_encrypt_cb,
	    .decrypt = ngtcp2_crypto_decrypt_cb,
	    .hp_mask = ngtcp2_crypto_hp_mask_cb,
	    .update_key = ngtcp2_crypto_update_key_cb,
	    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
	    .rand = rand_cb,
	    .get_new_connection_id = new_cid_cb,
	    .stream_open = stream_open_cb,
	    .recv_stream_data = recv_stream_cb,
	    .acked_stream_data_offset = acked_cb,
	    .stream_close = stream_close_cb,
	};
	ngtcp2_settings st;
	ngtcp2_settings_default(&st);
	st.initial_ts = now_ts();
	/* No window auto-tuning past RX_WINDOW: datagrams of a wakeup are all
	 * read before the up buffer is written to TCP, and flow control is what
	 * keeps that buffer within its size. */
	st.max_window = RX_WINDOW;
	st.max_stream_window = RX_WINDOW;
	bool whole;
	size_t route = route_payload(peer, peer_len, &whole);
	/* Largest first, as the client tries them. */
	uint16_t probes[6] = {(uint16_t)(route < UINT16_MAX ? route : UINT16_MAX)};
	if (route > st.max_tx_udp_payload_size) {
		st.max_tx_udp_payload_size = route;
		if (whole) {
			st.no_tx_udp_payload_size_shaping = 1;
		} else {
			static const uint16_t known[] = {1472, 1452, 1444, 1406, 1342};
			size_t n = 1;
			for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
				if (known[i] < probes[0])
					probes[n++] = known[i];
			st.pmtud_probes = probes;
			st.pmtud_probeslen = n;
		}
	}
	ngtcp2_transport_params tp;
	ngtcp2_transport_params_default(&tp);
	tp.initial_max_streams_bidi = 4;
	tp.initial_max_stream_data_bidi_remote = RX_WINDOW;
	tp.initial_max_data = RX_WINDOW;
	tp.max_idle_timeout = 60 * NGTCP2_SECONDS;
	tp.original_dcid = hd->dcid;
	tp.original_dcid_present = 1;
	tp.stateless_reset_token_present = 1;
	gnutls_rnd(GNUTLS_RND_RANDOM, tp.stateless_reset_token, sizeof(tp.stateless_reset_token));

	uint8_t sb[16];
	ngtcp2_cid scid;
	gnutls_rnd(GNUTLS_RND_RANDOM, sb, sizeof(sb));
	ngtcp2_cid_init(&scid, sb, sizeof(sb));
	ngtcp2_path path = {.local = {(ngtcp2_sockaddr *)&listen_addr, listen_len},
	                    .remote = {(ngtcp2_sockaddr *)&c->peer, c->peer_len}};
	if (ngtcp2_conn_server_new(&c->conn, &hd->scid, &scid, &path, hd->version, &cb, &st, &tp,
	                           NULL, c) != 0)
		goto fail;
	if (gnutls_init(&c->tls,
	                GNUTLS_SERVER | GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA) < 0)
		goto fail;
	if (gnutls_priority_set_direct(c->tls,
	                               "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
	                               "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:"
	                               "+GROUP-SECP256R1:+GROUP-X25519:+GROUP-SECP384R1:"
	                               "+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE",
	                               NULL) < 0 ||
	    ngtcp2_crypto_gnutls_configure_server_session(c->tls) != 0 ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, cred) < 0)
		goto fail;
	gnutls_datum_t alpn = {.data = (unsigned char *)"smb", .size = 3};
	gnutls_alpn_set_protocols(c->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY);
	if (want_client_cert) {
		gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_cert(c->tls, NULL, 0);
	}
	c->ref.get_conn = get_conn;
	c->ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->ref);
	ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
	return c;
fail:
	rconn_free(c);
	return NULL;
}

static struct rconn *find_conn(const struct sockaddr_storage *peer, socklen_t len)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used && conns[i].peer_len == len &&
		    memcmp(&conns[i].peer, peer, len) == 0)
			return &conns[i];
	return NULL;
}

/* One datagram from peer: to its connection, or a new one.  Returns the
 * connection if it still stands. */
static struct rconn *on_datagram(const uint8_t *p, size_t n, const struct sockaddr_storage *peer,
                                 socklen_t plen)
{
	struct rconn *c = find_conn(peer, plen);
	if (!c) {
		ngtcp2_pkt_hd hd;
		if (ngtcp2_accept(&hd, p, n) != 0)
			return NULL;
		c = rconn_new(&hd, peer, plen);
		if (!c)
			return NULL;
	}
	ngtcp2_path path = {.local = {(ngtcp2_sockaddr *)&listen_addr, listen_len},
	                    .remote = {(ngtcp2_sockaddr *)&c->peer, c->peer_len}};
	ngtcp2_pkt_info pi = {0};
	int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, p, n, now_ts());
	if (rv != 0) {
		if (rv == NGTCP2_ERR_CRYPTO)
			fprintf(stderr, "relay: TLS handshake failed: %s\n",
			        gnutls_strerror(ngtcp2_conn_get_tls_error(c->conn)));
		if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_DROP_CONN)
			rconn_free(c); /* nothing to send: the peer closed, or ngtcp2 says drop */
		else
			rconn_close_err(c, rv);
		return NULL;
	}
	return c;
}

/* Read every datagram waiting, then write once per connection that got any:
 * one ACK for the batch instead of one per datagram or two, and one TCP
 * write of what they carried. */
static void on_udp(void)
{
	struct rconn *touched[MAX_CONNS];
	int ntouched = 0;
	for (int i = 0; i < 1024; i++) {
		struct sockaddr_storage peer;
		socklen_t plen;
		size_t seg;
		ssize_t n = udp_recv_gro(udp_fd, pkt, sizeof(pkt), &peer, &plen, &seg);
		if (n <= 0)
			break;
		for (size_t off = 0; off < (size_t)n; off += seg) {
			size_t len = (size_t)n - off < seg ? (size_t)n - off : seg;
			struct rconn *c = on_datagram(pkt + off, len, &peer, plen);
			if (c && !c->touched && ntouched < MAX_CONNS) {
				c->touched = true;
				touched[ntouched++] = c;
			}
		}
	}
	for (int i = 0; i < ntouched; i++) {
		/* Closed (and maybe reused) since: rconn_free/rconn_new cleared the flag. */
		if (!touched[i]->touched)
			continue;
		touched[i]->touched = false;
		after(touched[i]);
	}
}

static void on_tcp(struct rconn *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		if (flush_up(c) < 0) {
			rconn_close(c);
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		while (c->down.len < BUF_CAP) {
			/* Straight into the buffer, as much as the socket has. */
			size_t want;
			uint8_t *dst = buf_room(&c->down, &want);
			if (!dst) {
				rconn_close(c);
				return;
			}
			ssize_t r = recv(c->tcp_fd, dst, want, MSG_DONTWAIT);
			if (r > 0) {
				c->down.len += (size_t)r;
				continue;
			}
			if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				write_pkts(c);
				rconn_close(c);
				return;
			}
			break;
		}
	}
	after(c);
}

static int next_timeout_ms(void)
{
	ngtcp2_tstamp now = now_ts(), min = UINT64_MAX;
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used) {
			ngtcp2_tstamp e = ngtcp2_conn_get_expiry(conns[i].conn);
			if (e < min)
				min = e;
		}
	if (min == UINT64_MAX)
		return 1000;
	if (min <= now)
		return 0;
	uint64_t ms = (min - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS;
	return ms > 1000 ? 1000 : (int)ms;
}

static void on_timers(void)
{
	ngtcp2_tstamp now = now_ts();
	for (int i = 0; i < MAX_CONNS; i++) {
		struct rconn *c = &conns[i];
		if (!c->used || ngtcp2_conn_get_expiry(c->conn) > now)
			continue;
		if (ngtcp2_conn_handle_expiry(c->conn, now) != 0) {
			rconn_free(c); /* idle or handshake timeout: nobody to tell */
			continue;
		}
		after(c);
	}
}

static int run_quic(void)
{
	udp_fd = socket(listen_addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* Beyond net.core.rmem_max when root (the tests are). */
	int sz = 8 << 20;
	if (setsockopt(udp_fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(udp_fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(udp_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(udp_fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	/* Never fragment: path MTU probes must be lost where too large (as the
	 * client's socket, client/transport_quic.c). */
	int probe = IP_PMTUDISC_PROBE;
	setsockopt(udp_fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof(probe));
	if (bind(udp_fd, (struct sockaddr *)&listen_addr, listen_len) < 0) {
		perror("relay: bind");
		return 1;
	}
	set_nonblock(udp_fd);
	gso = udp_batch_setup(udp_fd);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, udp_fd, &ev);
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].tcp_fd = -1;
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, next_timeout_ms());
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr)
				on_udp();
			else if (((struct rconn *)evs[i].data.ptr)->used)
				on_tcp(evs[i].data.ptr, evs[i].events);
		}
		on_timers();
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].used)
			rconn_close(&conns[i]);
	return 0;
}

/* ---- tcp mode: the same hop without QUIC ----------------------------------- */

static int pump(int from, int to)
{
	uint8_t b[1 << 16];
	ssize_t r = recv(from, b, sizeof(b), 0);
	if (r <= 0)
		return -1;
	for (ssize_t off = 0; off < r;) {
		ssize_t w = send(to, b + off, (size_t)(r - off), MSG_NOSIGNAL);
		if (w < 0)
			return -1;
		off += w;
	}
	return 0;
}

static int run_tcp(void)
{
	int lfd = socket(listen_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&listen_addr, listen_len) < 0 || listen(lfd, 16) < 0) {
		perror("relay: bind/listen");
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 1000);
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr) {
				int a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
				if (a < 0)
					continue;
				int b = socket(fwd_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
				if (connect(b, (struct sockaddr *)&fwd_addr, fwd_len) < 0) {
					close(a);
					close(b);
					continue;
				}
				setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				struct tconn *t = malloc(sizeof(*t));
				struct tconn *u = malloc(sizeof(*u));
				t->a = a, t->b = b; /* a readable: copy a -> b */
				u->a = b, u->b = a;
				struct epoll_event e1 = {.events = EPOLLIN, .data.ptr = t};
				struct epoll_event e2 = {.events = EPOLLIN, .data.ptr = u};
				epoll_ctl(ep, EPOLL_CTL_ADD, a, &e1);
				epoll_ctl(ep, EPOLL_CTL_ADD, b, &e2);
				continue;
			}
			struct tconn *t = evs[i].data.ptr;
			if (pump(t->a, t->b) < 0) {
				/* Closing both ends makes the peer's half fail too; its
				 * tconn leaks (test infrastructure, short-lived). */
				epoll_ctl(ep, EPOLL_CTL_DEL, t->a, NULL);
				epoll_ctl(ep, EPOLL_CTL_DEL, t->b, NULL);
				shutdown(t->a, SHUT_RDWR);
				shutdown(t->b, SHUT_RDWR);
				close(t->a);
				close(t->b);
				free(t);
			}
		}
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: smbquic-relay --listen A:P --forward A:P [--mode quic|tcp]\n"
	                "                     [--cert PEM --key PEM [--client-ca PEM]]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *listen_s = NULL, *fwd_s = NULL, *cert = NULL, *key = NULL, *ca = NULL;
	const char *mode = "quic";
	static const struct option opts[] = {{"listen", required_argument, NULL, 'l'},
	                                     {"forward", required_argument, NULL, 'f'},
	                                     {"cert", required_argument, NULL, 'c'},
	                                     {"key", required_argument, NULL, 'k'},
	                                     {"client-ca", required_argument, NULL, 'a'},
	                                     {"mode", required_argument, NULL, 'm'},
	                                     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
			listen_s = optarg;
			break;
		case 'f':
			fwd_s = optarg;
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'a':
			ca = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		default:
			usage();
		}
	}
	if (!listen_s || !fwd_s || parse_addr(listen_s, &listen_addr, &listen_len) < 0 ||
	    parse_addr(fwd_s, &fwd_addr, &fwd_len) < 0)
		usage();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (strcmp(mode, "tcp") == 0)
		return run_tcp();
	if (strcmp(mode, "quic") != 0 || !cert || !key)
		usage();
	gnutls_certificate_allocate_credentials(&cred);
	int rv = gnutls_certificate_set_x509_key_file(cred, cert, key, GNUTLS_X509_FMT_PEM);
	if (rv < 0) {
		fprintf(stderr, "relay: %s: %s\n", cert, gnutls_strerror(rv));
		return 1;
	}
	if (ca) {
		if (gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM) <= 0) {
			fprintf(stderr, "relay: cannot read %s\n", ca);
			return 1;
		}
		want_client_cert = true;
	}
	return run_quic();
}
