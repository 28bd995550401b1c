/* client/transport_quic.c — SMB2 over QUIC on ngtcp2 + GnuTLS (contract in
 * transport_quic.h).
 *
 * Outgoing data: send() puts a quic_out (the txbuf's pieces, or a copy of a
 * small message, and its 4-byte length prefix) on q->pending under q->lock;
 * the loop thread moves pending onto q->out, where entries stay in stream
 * order until acknowledged.  q->wcur is the first entry with bytes not yet
 * handed to ngtcp2 (stream offset q->written); acked_stream_data_offset()
 * frees entries from the head, completing the txbufs not copied.
 *
 *   connect() [caller's thread]: socket, TLS, handshake by poll()
 *      -> registered with the loop: quic_on_event / quic_timer_cb / quic_kick
 *      -> quic_report_dead() once -> destroy()
 */
#include "client/transport_quic.h"
#include "client/msg_framer.h"
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/udp_batch.h"
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#if HAVE_NGTCP2

#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <talloc.h>
#include <time.h>
#include <unistd.h>

#define QUIC_IDLE_MS      30000u /* no packet from the peer this long: dead */
#define QUIC_KEEPALIVE_MS 5000u
#define QUIC_PKT_MAX      65536u
#define QUIC_MAX_VECS     16
#define QUIC_SOCKBUF      (8 << 20) /* SO_SNDBUF/SO_RCVBUF asked for */
#define QUIC_FLUSH_PKTS   1024      /* most packets one flush writes */
/* Flow control: how much the server may send beyond what we have consumed.
 * We consume on arrival (quic_recv_stream_cb() copies the data out and gives
 * the credit back at once), so the window covers what is on its way: on the
 * path, in our socket buffer (QUIC_SOCKBUF) and reordered inside ngtcp2, at
 * worst all the READ responses in flight.  The load to carry without a stall
 * is 1 MiB READs at 8 in flight: 8 x (1 MiB + 4-byte length prefix + SMB2
 * header and READ response + 52-byte transform header when sealed), just
 * over 8 MiB.  ngtcp2 announces credit (MAX_STREAM_DATA, MAX_DATA) only once
 * a quarter of the window has been consumed since the last announcement, so
 * the server can count on 3/4 of it: 3/4 x W >= 8 MiB needs W >= 10.7 MiB.
 * 16 MiB, for the one stream and the connection alike (one stream carries
 * everything), from the first packet: no ramp-up.  Beyond that ngtcp2
 * auto-tunes: a window used up within 2 RTTs is doubled, up to
 * QUIC_RX_WINDOW_MAX, for deeper queues or larger I/O (Samba grants 8 MiB
 * READs).  Measured between two network namespaces (bench/quic-vs-tcp): at
 * 1 MiB READs and WRITEs, 8 in flight, neither end ever waited for credit,
 * nor did this client with the relay's window at 8 MiB; both consume as
 * fast as the data comes. */
#define QUIC_RX_WINDOW     (16u << 20)
#define QUIC_RX_WINDOW_MAX (64u << 20)
/* One UDP GSO send: at most this many bytes (a super-datagram is bounded by
 * the 16-bit IP/UDP lengths) in at most this many segments. */
#define QUIC_GSO_BYTES 65000u
#define QUIC_GSO_SEGS  64u

/* Messages up to this size are copied at send() and their done() called at
 * once; larger ones (READ/WRITE payloads) go out from the sender's buffers
 * and are done() when the server has acknowledged their last byte, which
 * QUIC needs for retransmission.  Why copy at all: ngtcp2 1.x does not put
 * an ACK in a packet before the ACK delay is up (25 ms), so the server's
 * answer to a request routinely arrives before its ACK, and a sender that
 * frees a small request at its answer (the set-up requests of a channel
 * live in a talloc context the caller frees) would have it freed under us.
 * A copy of a few hundred bytes costs nothing next to that; 1 MiB would. */
#define QUIC_COPY_MAX (64u << 10)

struct quic_out {
	struct smb_txbuf *buf; /* NULL when copied (done() already called) */
	struct iovec iov[SMB_TXBUF_MAX_IOV];
	int iovcnt;
	size_t len;
	uint8_t prefix[4];
	uint64_t start, end; /* stream offsets [start, end) of prefix + message */
	struct quic_out *next;
	uint8_t copy[]; /* the message, when copied */
};

struct quic_transport {
	struct smb_transport base;
	int fd;
	char *server_name, *cafile, *certfile, *keyfile;
	int cancel_fd;
	struct smb_transport_info info;
	struct sockaddr_storage local, remote;
	socklen_t local_len, remote_len;

	gnutls_certificate_credentials_t cred;
	gnutls_session_t tls;
	ngtcp2_conn *conn;
	ngtcp2_crypto_conn_ref conn_ref;
	int64_t stream_id;

	pthread_mutex_t lock;
	/* under lock: */
	struct quic_out *pend_head, *pend_tail;
	bool kick_queued;
	bool dead;
	bool shutdown_req;

	/* the connecting thread, then the loop thread only: */
	struct ev_fd *evf;
	struct ev_timer *timer;
	bool reported;
	int fatal;        /* -errno a callback asked to die with */
	bool peer_closed; /* the peer closed or drained: send no CONNECTION_CLOSE */
	bool handshake_done;
	struct quic_out *out_head, *out_tail, *wcur;
	uint64_t queued;  /* stream offset after the last queued byte */
	uint64_t written; /* stream offset handed to ngtcp2 */
	struct smb_framer framer;
	uint8_t *pkt; /* QUIC_PKT_MAX bytes, rx and tx */
	bool gso;     /* udp_send_gso() usable: UDP_SEGMENT known, no EIO yet */
};

#define to_quic(t) ((struct quic_transport *)(t))

static ngtcp2_tstamp quic_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

static void quic_path(struct quic_transport *q, ngtcp2_path *path)
{
	memset(path, 0, sizeof(*path));
	path->local.addr = (ngtcp2_sockaddr *)&q->local;
	path->local.addrlen = q->local_len;
	path->remote.addr = (ngtcp2_sockaddr *)&q->remote;
	path->remote.addrlen = q->remote_len;
}

/* ---- ngtcp2 callbacks ------------------------------------------------------------ */

static ngtcp2_conn *quic_get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct quic_transport *)ref->user_data)->conn;
}

static void quic_rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	(void)ctx;
	gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

static int quic_new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                           void *user_data)
{
	uint8_t b[NGTCP2_MAX_CIDLEN];
	if (cidlen > sizeof(b) || gnutls_rnd(GNUTLS_RND_RANDOM, b, cidlen) < 0 ||
	    gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) < 0)
		return NGTCP2_ERR_CALLBACK_FAILURE;
	ngtcp2_cid_init(cid, b, cidlen);
	return 0;
}

static void quic_deliver(void *arg, uint8_t *msg, size_t len)
{
	struct quic_transport *q = arg;
	q->base.up.recv(q->base.up.arg, msg, len);
}

static int quic_recv_stream_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                               uint64_t offset, const uint8_t *data, size_t datalen,
                               void *user_data, void *stream_user_data)
{
	struct quic_transport *q = user_data;
	if (stream_id != q->stream_id)
		return 0; /* nothing else is ours to read */
	int err = smb_framer_feed(&q->framer, data, datalen, quic_deliver, q);
	if (err) {
		q->fatal = err;
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	/* Copied out: give the window back at once. */
	ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
	ngtcp2_conn_extend_max_offset(conn, datalen);
	if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) {
		smb_err("quic: %s closed the SMB stream", q->server_name);
		q->fatal = -ECONNRESET;
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static int quic_stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                                uint64_t app_error_code, void *user_data, void *stream_user_data)
{
	struct quic_transport *q = user_data;
	if (stream_id == q->stream_id && !q->fatal) {
		smb_err("quic: %s closed the SMB stream (application error %llu)", q->server_name,
		        (unsigned long long)app_error_code);
		q->fatal = -ECONNRESET;
	}
	return 0;
}

/* Entries wholly below offset+datalen are acknowledged: complete them. */
static int quic_acked_cb(ngtcp2_conn *conn, int64_t stream_id, uint64_t offset, uint64_t datalen,
                         void *user_data, void *stream_user_data)
{
	struct quic_transport *q = user_data;
	uint64_t upto = offset + datalen;
	while (q->out_head && q->out_head->end <= upto && q->out_head != q->wcur) {
		struct quic_out *o = q->out_head;
		q->out_head = o->next;
		if (!q->out_head)
			q->out_tail = NULL;
		if (o->buf)
			o->buf->done(o->buf, 0);
		free(o);
	}
	return 0;
}

static int quic_handshake_done_cb(ngtcp2_conn *conn, void *user_data)
{
	((struct quic_transport *)user_data)->handshake_done = true;
	return 0;
}

/* ---- writing --------------------------------------------------------------------- */

static int quic_send_pkt(struct quic_transport *q, const uint8_t *p, size_t n)
{
	for (;;) {
		ssize_t w = send(q->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		/* A full socket buffer drops the packet: to QUIC that is loss.  So
		 * is a datagram the route cannot carry (IP_PMTUDISC_PROBE never
		 * fragments): a path MTU probe, or the report of an ICMP
		 * "fragmentation needed" for one. */
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
		    errno == EMSGSIZE)
			return 0;
		/* An ICMP error from an earlier packet surfaces here too. */
		return -errno;
	}
}

/* Send n bytes of packets of seg bytes each (the last may be shorter) in
 * one UDP GSO sendmsg: one syscall and one trip through the stack instead of
 * one per packet.  Without GSO in the kernel (or for one packet), one send()
 * each. */
static int quic_send_batch(struct quic_transport *q, const uint8_t *p, size_t n, size_t seg)
{
	if (n > seg && q->gso) {
		int err = udp_send_gso(q->fd, NULL, 0, p, n, seg);
		if (!err)
			return 0;
		if (err == -EIO) {
			/* The device cannot checksum segments: never again. */
			smb_info("quic: %s: no UDP GSO on this path; one send per packet",
			         q->server_name);
			q->gso = false;
		} else if (err != -EINVAL && err != -EMSGSIZE) {
			return err;
		}
		/* EINVAL/EMSGSIZE: a segment larger than the route allows (a path
		 * MTU probe); send this batch one packet at a time. */
	}
	for (size_t off = 0; off < n; off += seg) {
		int err = quic_send_pkt(q, p + off, n - off < seg ? n - off : seg);
		if (err)
			return err;
	}
	return 0;
}

/* Fill vecs from the unwritten stream data; returns the count. */
static int quic_collect(struct quic_transport *q, ngtcp2_vec *v)
{
	int n = 0;
	uint64_t off = q->written;
	for (struct quic_out *o = q->wcur; o && n < QUIC_MAX_VECS; o = o->next) {
		uint64_t pos = off > o->start ? off - o->start : 0; /* bytes of o already written */
		if (pos < 4 && n < QUIC_MAX_VECS) {
			v[n].base = o->prefix + pos;
			v[n++].len = 4 - pos;
			pos = 4;
		}
		uint64_t skip = pos - 4;
		for (int i = 0; i < o->iovcnt && n < QUIC_MAX_VECS; i++) {
			size_t l = o->iov[i].iov_len;
			if (skip >= l) {
				skip -= l;
				continue;
			}
			v[n].base = (uint8_t *)o->iov[i].iov_base + skip;
			v[n++].len = l - skip;
			skip = 0;
		}
		off = o->end;
	}
	return n;
}

static void quic_advance(struct quic_transport *q, size_t n)
{
	q->written += n;
	while (q->wcur && q->wcur->end <= q->written)
		q->wcur = q->wcur->next;
}

/* Write every packet ngtcp2 has for us now: stream data while flow and
 * congestion control allow it, then ACKs and the rest.  Pacing is accounted
 * every send quantum (update_pkt_tx_time() with the quantum's first
 * timestamp, then a fresh one), so one wakeup writes until congestion
 * control or pacing says stop, not just one quantum; a quantum that took
 * longer to write than its pacing time lets the next go at once.  When
 * pacing says wait, our millisecond timer (rounded up) brings us back late;
 * ngtcp2 credits the lateness back (once 1 ms of it has gathered, the next
 * pacing waits shrink by it), so the average rate holds.  Returns 0 or
 * -errno (fatal). */
static int quic_flush(struct quic_transport *q)
{
	ngtcp2_path_storage ps;
	ngtcp2_pkt_info pi;
	ngtcp2_ssize nwrite, wlen;
	ngtcp2_tstamp ts = quic_now();
	/* Room for the largest packet ngtcp2 may write: its limit, not the
	 * path's current one.  It keeps stream packets to the path's size
	 * itself; a path MTU probe is larger, and ngtcp2 skips any probe that
	 * does not fit (given the path's size, it never probed, and every
	 * datagram stayed at 1200 bytes). */
	size_t max_pkt = ngtcp2_conn_get_max_tx_udp_payload_size(q->conn);
	size_t quantum = ngtcp2_conn_get_send_quantum(q->conn);
	size_t sent = 0;
	bool blocked = false;
	/* Packets gather at q->pkt + batch, seg bytes each, until one is short,
	 * the batch is full, or ngtcp2 has no more: then one quic_send_batch(). */
	size_t batch = 0, seg = 0, max_segs = 1;

	ngtcp2_path_storage_zero(&ps);
	if (max_pkt > QUIC_PKT_MAX)
		max_pkt = QUIC_PKT_MAX;
	if (q->gso && max_pkt <= QUIC_GSO_BYTES / 2) {
		max_segs = QUIC_GSO_BYTES / max_pkt;
		if (max_segs > QUIC_GSO_SEGS)
			max_segs = QUIC_GSO_SEGS;
	}
	for (int npkt = 0; npkt < QUIC_FLUSH_PKTS;) {
		ngtcp2_vec v[QUIC_MAX_VECS];
		int nv = 0;
		int64_t sid = -1;
		uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
		if (!blocked && q->stream_id >= 0 && q->wcur) {
			nv = quic_collect(q, v);
			sid = q->stream_id;
			flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
		}
		wlen = -1;
		nwrite =
		    ngtcp2_conn_writev_stream(q->conn, &ps.path, &pi, q->pkt + batch, max_pkt,
		                              &wlen, flags, sid, nv ? v : NULL, (size_t)nv, ts);
		if (nwrite < 0) {
			if (nwrite == NGTCP2_ERR_WRITE_MORE) {
				quic_advance(q, (size_t)wlen);
				continue;
			}
			if (nwrite == NGTCP2_ERR_STREAM_DATA_BLOCKED ||
			    nwrite == NGTCP2_ERR_STREAM_SHUT_WR) {
				blocked = true;
				continue;
			}
			smb_err("quic: %s: cannot write a packet: %s", q->server_name,
			        ngtcp2_strerror((int)nwrite));
			return -EPROTO;
		}
		if (wlen > 0)
			quic_advance(q, (size_t)wlen);
		if (nwrite == 0)
			break;
		size_t len = (size_t)nwrite;
		if (batch && len > seg) {
			/* Longer than the batch's segments: send those, start anew. */
			int err = quic_send_batch(q, q->pkt, batch, seg);
			if (err)
				return err;
			memmove(q->pkt, q->pkt + batch, len);
			batch = 0;
		}
		if (!batch)
			seg = len;
		batch += len;
		if (len < seg || batch / seg >= max_segs) {
			int err = quic_send_batch(q, q->pkt, batch, seg);
			if (err)
				return err;
			batch = 0;
		}
		npkt++;
		sent += (size_t)nwrite;
		if (quantum && sent >= quantum) {
			ngtcp2_conn_update_pkt_tx_time(q->conn, ts);
			ts = quic_now();
			sent = 0;
		}
	}
	if (batch) {
		int err = quic_send_batch(q, q->pkt, batch, seg);
		if (err)
			return err;
	}
	ngtcp2_conn_update_pkt_tx_time(q->conn, ts);
	return 0;
}

/* ---- reading --------------------------------------------------------------------- */

/* The peer closed the connection: log why, if it said.  Returns whether it
 * gave an error. */
static bool quic_log_peer_close(struct quic_transport *q)
{
	const ngtcp2_ccerr *cc = ngtcp2_conn_get_ccerr(q->conn);
	if (!cc->error_code)
		return false;
	if (cc->type == NGTCP2_CCERR_TYPE_TRANSPORT && cc->error_code >= NGTCP2_CRYPTO_ERROR &&
	    cc->error_code < NGTCP2_CRYPTO_ERROR + 0x100) {
		unsigned alert = (unsigned)(cc->error_code - NGTCP2_CRYPTO_ERROR);
		const char *name = gnutls_alert_get_strname((gnutls_alert_description_t)alert);
		smb_err("quic: %s closed the connection with TLS alert '%s'%s", q->server_name,
		        name ? name : "?",
		        alert == GNUTLS_A_CERTIFICATE_REQUIRED
		            ? " (it wants a client certificate: certfile=, keyfile=)"
		            : "");
	} else {
		smb_err("quic: %s closed the connection (%s error 0x%llx)", q->server_name,
		        cc->type == NGTCP2_CCERR_TYPE_APPLICATION ? "application" : "transport",
		        (unsigned long long)cc->error_code);
	}
	return true;
}

/* One datagram to ngtcp2.  Returns 0 (processed or dropped) or -errno
 * (fatal). */
static int quic_read_pkt(struct quic_transport *q, const uint8_t *p, size_t n, ngtcp2_tstamp ts)
{
	ngtcp2_path path;
	ngtcp2_pkt_info pi = {0};
	quic_path(q, &path);
	int rv = ngtcp2_conn_read_pkt(q->conn, &path, &pi, p, n, ts);
	if (rv == 0)
		return 0;
	if (q->fatal)
		return q->fatal;
	if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING) {
		q->peer_closed = true;
		if (q->handshake_done)
			quic_log_peer_close(q);
		return -ECONNRESET;
	}
	if (rv == NGTCP2_ERR_CRYPTO)
		return -EKEYREJECTED;
	if (ngtcp2_err_is_fatal(rv)) {
		smb_err("quic: %s: %s", q->server_name, ngtcp2_strerror(rv));
		return -EPROTO;
	}
	return 0; /* anything else only drops this packet */
}

/* Read and process every datagram waiting.  With UDP_GRO on the socket one
 * read may bring several datagrams of one size (the cmsg says which), the
 * last maybe shorter.  Returns 0 or -errno (fatal). */
static int quic_read(struct quic_transport *q)
{
	for (int i = 0; i < 256; i++) {
		size_t seg;
		ssize_t r = udp_recv_gro(q->fd, q->pkt, QUIC_PKT_MAX, NULL, NULL, &seg);
		if (r < 0)
			return r == -EAGAIN || r == -EWOULDBLOCK ? 0 : (int)r;
		/* The datagrams of one read arrived together: one clock read for
		 * them (a clock read per datagram was 1% of the loop thread). */
		ngtcp2_tstamp ts = quic_now();
		for (size_t off = 0; off < (size_t)r; off += seg) {
			size_t n = (size_t)r - off < seg ? (size_t)r - off : seg;
			int err = quic_read_pkt(q, q->pkt + off, n, ts);
			if (err)
				return err;
		}
	}
	return 0;
}

static int quic_handle_expiry(struct quic_transport *q)
{
	ngtcp2_tstamp now = quic_now();
	if (ngtcp2_conn_get_expiry(q->conn) > now)
		return 0;
	int rv = ngtcp2_conn_handle_expiry(q->conn, now);
	if (rv == 0)
		return 0;
	q->peer_closed = true; /* the peer is gone: nobody to tell */
	if (rv == NGTCP2_ERR_IDLE_CLOSE)
		return -ETIMEDOUT;
	if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT)
		return -ETIMEDOUT;
	smb_err("quic: %s: %s", q->server_name, ngtcp2_strerror(rv));
	return -EPROTO;
}

/* ---- the loop thread ------------------------------------------------------------- */

static void quic_complete_list(struct quic_out *o, int err)
{
	while (o) {
		struct quic_out *next = o->next;
		if (o->buf)
			o->buf->done(o->buf, err);
		free(o);
		o = next;
	}
}

/* Tell the peer we go, when it is still there to hear it. */
static void quic_close_conn(struct quic_transport *q)
{
	if (!q->conn || q->peer_closed || ngtcp2_conn_in_closing_period(q->conn) ||
	    ngtcp2_conn_in_draining_period(q->conn))
		return;
	ngtcp2_ccerr ccerr;
	ngtcp2_path_storage ps;
	ngtcp2_path_storage_zero(&ps);
	ngtcp2_ccerr_set_application_error(&ccerr, 0, NULL, 0);
	ngtcp2_ssize n = ngtcp2_conn_write_connection_close(q->conn, &ps.path, NULL, q->pkt,
	                                                    QUIC_PKT_MAX, &ccerr, quic_now());
	if (n > 0)
		quic_send_pkt(q, q->pkt, (size_t)n);
}

static void quic_report_dead(struct quic_transport *q, int err)
{
	if (q->reported)
		return;
	q->reported = true;
	if (q->timer) {
		ev_timer_cancel(q->timer);
		q->timer = NULL;
	}
	if (q->evf) {
		ev_fd_del(q->evf);
		q->evf = NULL;
	}
	quic_close_conn(q);
	pthread_mutex_lock(&q->lock);
	q->dead = true;
	struct quic_out *pend = q->pend_head;
	q->pend_head = q->pend_tail = NULL;
	pthread_mutex_unlock(&q->lock);
	struct quic_out *out = q->out_head;
	q->out_head = q->out_tail = q->wcur = NULL;
	quic_complete_list(out, -ECONNABORTED);
	quic_complete_list(pend, -ECONNABORTED);
	smb_framer_reset(&q->framer);
	q->base.up.dead(q->base.up.arg, err);
}

static void quic_timer_cb(void *arg);

static void quic_rearm(struct quic_transport *q)
{
	if (q->timer) {
		ev_timer_cancel(q->timer);
		q->timer = NULL;
	}
	ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(q->conn);
	if (exp == UINT64_MAX)
		return;
	ngtcp2_tstamp now = quic_now();
	uint64_t ms = exp > now ? (exp - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS : 0;
	if (ev_timer_add(q->base.loop, ms, quic_timer_cb, q, &q->timer) < 0)
		q->timer = NULL;
}

/* After any event: write what is due, re-arm, or die. */
static void quic_after(struct quic_transport *q, int err)
{
	if (!err && q->fatal)
		err = q->fatal;
	if (!err)
		err = quic_flush(q);
	if (err) {
		quic_report_dead(q, err);
		return;
	}
	quic_rearm(q);
}

static void quic_timer_cb(void *arg)
{
	struct quic_transport *q = arg;
	q->timer = NULL; /* a fired timer frees itself */
	if (q->reported)
		return;
	int err = quic_handle_expiry(q);
	if (err == -ETIMEDOUT)
		smb_err("quic: %s: no packet from the server for %u s; the connection is dead",
		        q->server_name, QUIC_IDLE_MS / 1000);
	quic_after(q, err);
}

static void quic_on_event(struct ev_fd *f, uint32_t events, void *arg)
{
	struct quic_transport *q = arg;
	if (q->reported)
		return;
	int err = quic_read(q);
	if (err == -ECONNREFUSED)
		smb_err("quic: %s: the server's port is unreachable (ICMP)", q->server_name);
	quic_after(q, err);
}

/* Move what send() queued onto the stream (loop thread). */
static void quic_kick(void *arg)
{
	struct quic_transport *q = arg;
	pthread_mutex_lock(&q->lock);
	struct quic_out *list = q->pend_head;
	q->pend_head = q->pend_tail = NULL;
	q->kick_queued = false;
	bool stop = q->shutdown_req;
	pthread_mutex_unlock(&q->lock);
	if (q->reported) {
		quic_complete_list(list, -ECONNABORTED);
		return;
	}
	while (list) {
		struct quic_out *o = list;
		list = o->next;
		o->next = NULL;
		o->start = q->queued;
		o->end = q->queued += 4 + o->len;
		if (q->out_tail)
			q->out_tail->next = o;
		else
			q->out_head = o;
		q->out_tail = o;
		if (!q->wcur)
			q->wcur = o;
	}
	if (stop) {
		quic_report_dead(q, -ECONNABORTED);
		return;
	}
	quic_after(q, 0);
}

/* Queue a kick unless one is queued.  Called with q->lock held. */
static void quic_kick_locked(struct quic_transport *q)
{
	if (q->kick_queued)
		return;
	if (ev_call(q->base.loop, quic_kick, q) == 0)
		q->kick_queued = true;
}

static int quic_send(struct smb_transport *t, struct smb_txbuf *buf)
{
	struct quic_transport *q = to_quic(t);
	bool copied = buf->len <= QUIC_COPY_MAX;
	struct quic_out *o = calloc(1, sizeof(*o) + (copied ? buf->len : 0));
	if (!o)
		return -ENOMEM;
	o->len = buf->len;
	if (copied) {
		size_t off = 0;
		for (int i = 0; i < buf->iovcnt; i++) {
			memcpy(o->copy + off, buf->iov[i].iov_base, buf->iov[i].iov_len);
			off += buf->iov[i].iov_len;
		}
		o->iov[0].iov_base = o->copy;
		o->iov[0].iov_len = buf->len;
		o->iovcnt = 1;
	} else {
		o->buf = buf;
		memcpy(o->iov, buf->iov, sizeof(o->iov));
		o->iovcnt = buf->iovcnt;
	}
	o->prefix[1] = (uint8_t)(buf->len >> 16);
	o->prefix[2] = (uint8_t)(buf->len >> 8);
	o->prefix[3] = (uint8_t)buf->len;
	buf->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->dead) {
		pthread_mutex_unlock(&q->lock);
		free(o);
		return -ECONNABORTED;
	}
	if (q->pend_tail)
		q->pend_tail->next = o;
	else
		q->pend_head = o;
	q->pend_tail = o;
	quic_kick_locked(q);
	pthread_mutex_unlock(&q->lock);
	if (copied)
		buf->done(buf, 0);
	return 0;
}

static void quic_shutdown(struct smb_transport *t)
{
	struct quic_transport *q = to_quic(t);
	pthread_mutex_lock(&q->lock);
	q->shutdown_req = true;
	if (!q->dead)
		quic_kick_locked(q);
	pthread_mutex_unlock(&q->lock);
}

/* ---- connect --------------------------------------------------------------------- */

static int quic_tls_setup(struct quic_transport *q)
{
	int rv = gnutls_certificate_allocate_credentials(&q->cred);
	if (rv < 0)
		return -ENOMEM;
	if (q->cafile) {
		rv =
		    gnutls_certificate_set_x509_trust_file(q->cred, q->cafile, GNUTLS_X509_FMT_PEM);
		if (rv <= 0) {
			smb_err("quic: cannot read CA certificates from '%s': %s", q->cafile,
			        rv < 0 ? gnutls_strerror(rv) : "no certificate in it");
			return -EINVAL;
		}
	} else if ((rv = gnutls_certificate_set_x509_system_trust(q->cred)) < 0) {
		smb_err("quic: cannot load the system trust store: %s", gnutls_strerror(rv));
		return -EINVAL;
	}
	if (q->certfile) {
		rv = gnutls_certificate_set_x509_key_file(q->cred, q->certfile,
		                                          q->keyfile ? q->keyfile : q->certfile,
		                                          GNUTLS_X509_FMT_PEM);
		if (rv < 0) {
			smb_err("quic: cannot load the client certificate '%s': %s", q->certfile,
			        gnutls_strerror(rv));
			return -EINVAL;
		}
	}
	if (gnutls_init(&q->tls, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA) < 0)
		return -ENOMEM;
	const char *prio = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
	                   "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-SECP256R1:"
	                   "+GROUP-X25519:+GROUP-SECP384R1:+GROUP-SECP521R1:"
	                   "%DISABLE_TLS13_COMPAT_MODE";
	if (gnutls_priority_set_direct(q->tls, prio, NULL) < 0 ||
	    ngtcp2_crypto_gnutls_configure_client_session(q->tls) != 0 ||
	    gnutls_credentials_set(q->tls, GNUTLS_CRD_CERTIFICATE, q->cred) < 0)
		return -EPROTO;
	q->conn_ref.get_conn = quic_get_conn;
	q->conn_ref.user_data = q;
	gnutls_session_set_ptr(q->tls, &q->conn_ref);
	gnutls_datum_t alpn = {.data = (unsigned char *)"smb", .size = 3};
	if (gnutls_alpn_set_protocols(q->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY) < 0)
		return -EPROTO;
	struct in6_addr a6;
	bool literal = inet_pton(AF_INET, q->server_name, &a6) == 1 ||
	               inet_pton(AF_INET6, q->server_name, &a6) == 1;
	if (!literal)
		gnutls_server_name_set(q->tls, GNUTLS_NAME_DNS, q->server_name,
		                       strlen(q->server_name));
	gnutls_session_set_verify_cert(q->tls, q->server_name, 0);
	return 0;
}

/* The largest UDP payload for this path as far as this host knows: the
 * route's MTU (IP_MTU of the connected socket) less the IP and UDP headers,
 * or 0 when that is unknown or no more than ngtcp2's default limit (1452).
 * *whole says the route is the whole path, as over loopback: its MTU (64 KiB
 * by default) cannot be exceeded further on, so that size can be used at
 * once.  Elsewhere it is only the first hop's: path MTU discovery tries it
 * first (quic_pmtud_probes()).  Fewer, larger packets are the cheapest speed
 * QUIC has: each costs a QUIC header, header protection, an AEAD call, ACK
 * bookkeeping and a trip through the stack (64 KiB datagrams on loopback are
 * 45 times fewer than 1452-byte ones; a 9000-byte MTU gives 6 times fewer). */
static size_t quic_route_payload(struct quic_transport *q, bool *whole)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	int mtu = 0, level, opt;
	size_t hdr;
	socklen_t len = sizeof(mtu);
	*whole = false;
	if (q->remote.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&q->remote;
		*whole = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
		level = IPPROTO_IP;
		opt = IP_MTU;
		hdr = 20 + 8;
	} else if (q->remote.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&q->remote;
		bool mapped = memcmp(&a->sin6_addr, v4mapped, sizeof(v4mapped)) == 0;
		*whole = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
		         (mapped && a->sin6_addr.s6_addr[12] == 127);
		level = IPPROTO_IPV6;
		opt = IPV6_MTU;
		hdr = mapped ? 20 + 8 : 40 + 8;
	} else {
		return 0;
	}
	if (getsockopt(q->fd, level, opt, &mtu, &len) < 0 || mtu < 1500)
		return 0;
	size_t payload = (size_t)mtu - hdr;
	return payload > QUIC_PKT_MAX ? QUIC_PKT_MAX : payload;
}

/* The sizes path MTU discovery tries, largest first, into probes[6]; returns
 * how many.  ngtcp2 moves on to the next smaller one when a probe is lost
 * (three times) and stops at the first that is acknowledged: the first hop's
 * limit, then the Ethernet sizes behind a 1500-byte hop (IPv4, IPv6), then
 * ngtcp2's own list (PPPoE, a fibre service, tunnels, the IPv6 minimum). */
static size_t quic_pmtud_probes(size_t first_hop, uint16_t *probes)
{
	static const uint16_t known[] = {1472, 1452, 1444, 1406, 1342, 1232};
	size_t n = 0;
	probes[n++] = (uint16_t)(first_hop < UINT16_MAX ? first_hop : UINT16_MAX);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && n < 6; i++)
		if (known[i] < probes[0])
			probes[n++] = known[i];
	return n;
}

static int quic_conn_setup(struct quic_transport *q, unsigned timeout_ms)
{
	ngtcp2_callbacks cb = {
	    .client_initial = ngtcp2_crypto_client_initial_cb,
	    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	    .encrypt = ngtcp2_crypto_encrypt_cb,
	    .decrypt = ngtcp2_crypto_decrypt_cb,
	    .hp_mask = ngtcp2_crypto_hp_mask_cb,
	    .recv_retry = ngtcp2_crypto_recv_retry_cb,
	    .update_key = ngtcp2_crypto_update_key_cb,
	    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
	    .rand = quic_rand_cb,
	    .get_new_connection_id = quic_new_cid_cb,
	    .recv_stream_data = quic_recv_stream_cb,
	    .acked_stream_data_offset = quic_acked_cb,
	    .stream_close = quic_stream_close_cb,
	    .handshake_completed = quic_handshake_done_cb,
	};
	ngtcp2_cid dcid, scid;
	uint8_t b[18 + 17];
	if (gnutls_rnd(GNUTLS_RND_RANDOM, b, sizeof(b)) < 0)
		return -EIO;
	ngtcp2_cid_init(&dcid, b, 18);
	ngtcp2_cid_init(&scid, b + 18, 17);

	ngtcp2_settings settings;
	ngtcp2_settings_default(&settings);
	settings.initial_ts = quic_now();
	settings.handshake_timeout = (ngtcp2_duration)timeout_ms * NGTCP2_MILLISECONDS;
	settings.max_window = QUIC_RX_WINDOW_MAX;
	settings.max_stream_window = QUIC_RX_WINDOW_MAX;
	bool whole;
	uint16_t probes[6];
	size_t route = quic_route_payload(q, &whole);
	if (route > settings.max_tx_udp_payload_size) {
		settings.max_tx_udp_payload_size = route;
		if (whole) {
			settings.no_tx_udp_payload_size_shaping = 1;
		} else {
			settings.pmtud_probeslen = quic_pmtud_probes(route, probes);
			settings.pmtud_probes = probes; /* ngtcp2 copies them */
		}
	}

	ngtcp2_transport_params params;
	ngtcp2_transport_params_default(&params);
	params.initial_max_streams_bidi = 0; /* the server opens nothing */
	params.initial_max_streams_uni = 0;
	params.initial_max_stream_data_bidi_local = QUIC_RX_WINDOW;
	params.initial_max_data = QUIC_RX_WINDOW;
	params.max_idle_timeout = (ngtcp2_duration)QUIC_IDLE_MS * NGTCP2_MILLISECONDS;

	ngtcp2_path path;
	quic_path(q, &path);
	int rv = ngtcp2_conn_client_new(&q->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
	                                &settings, &params, NULL, q);
	if (rv != 0) {
		smb_err("quic: ngtcp2_conn_client_new: %s", ngtcp2_strerror(rv));
		return -ENOMEM;
	}
	ngtcp2_conn_set_tls_native_handle(q->conn, q->tls);
	ngtcp2_conn_set_keep_alive_timeout(q->conn, (ngtcp2_duration)QUIC_KEEPALIVE_MS *
	                                                NGTCP2_MILLISECONDS);
	return 0;
}

/* The handshake failed with err: say why in one line. */
static int quic_explain(struct quic_transport *q, int err)
{
	unsigned status = gnutls_session_get_verify_cert_status(q->tls);
	if (err == -EKEYREJECTED && status) {
		gnutls_datum_t txt = {0};
		gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &txt, 0);
		smb_err("quic: the server certificate for '%s' was refused (%s): %s",
		        q->server_name, q->cafile ? q->cafile : "system trust store",
		        txt.data ? (const char *)txt.data : "?");
		gnutls_free(txt.data);
		return -EKEYREJECTED;
	}
	if (q->peer_closed && quic_log_peer_close(q))
		return -ECONNREFUSED;
	if (err == -EKEYREJECTED) {
		int tls = ngtcp2_conn_get_tls_error(q->conn);
		smb_err("quic: TLS handshake with %s failed: %s", q->server_name,
		        tls ? gnutls_strerror(tls) : "(no detail)");
		return -EPROTO;
	}
	return err;
}

static int quic_handshake(struct quic_transport *q, unsigned timeout_ms)
{
	uint64_t deadline = ev_now_ms() + timeout_ms;
	for (;;) {
		int err = quic_flush(q);
		if (err)
			return err;
		if (q->handshake_done)
			return 0;
		uint64_t now_ms = ev_now_ms();
		if (now_ms >= deadline)
			return -ETIMEDOUT;
		ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(q->conn), now = quic_now();
		uint64_t wait = deadline - now_ms;
		if (exp != UINT64_MAX) {
			uint64_t e =
			    exp > now ? (exp - now + NGTCP2_MILLISECONDS - 1) / NGTCP2_MILLISECONDS
			              : 0;
			if (e < wait)
				wait = e;
		}
		struct pollfd pfd[2] = {{.fd = q->fd, .events = POLLIN},
		                        {.fd = q->cancel_fd, .events = POLLIN}};
		int pr = poll(pfd, q->cancel_fd >= 0 ? 2 : 1, (int)wait);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0 && q->cancel_fd >= 0 && (pfd[1].revents & POLLIN))
			return -ECANCELED;
		if (pr > 0 && (pfd[0].revents & (POLLIN | POLLERR))) {
			err = quic_read(q);
			if (!err)
				err = q->fatal;
			if (err)
				return err;
		}
		err = quic_handle_expiry(q);
		if (err)
			return err;
	}
}

/* Big socket buffers: a window of datagrams arrives at once, and on a busy
 * host the loop thread may not read for a while; what overflows the receive
 * buffer is lost, and loss is what makes congestion control back off.
 * Beyond net.core.rmem_max/wmem_max only with CAP_NET_ADMIN (the *FORCE
 * options), which the daemon has given up by the time it connects: so it
 * gets what the sysctls allow, and says so once when that is less than
 * asked (raising them is the administrator's call, never ours). */
static void quic_set_bufs(int fd)
{
	static atomic_bool told;
	int sz = QUIC_SOCKBUF;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	/* The kernel reports twice what it grants (the other half is its
	 * bookkeeping). */
	int rcv = 0, snd = 0;
	socklen_t len = sizeof(rcv);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len) < 0)
		return;
	len = sizeof(snd);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len) < 0)
		return;
	if ((rcv / 2 < sz || snd / 2 < sz) && !atomic_exchange(&told, true))
		smb_info("quic: UDP socket buffers %d KiB in, %d KiB out of the %d KiB asked for "
		         "(net.core.rmem_max, wmem_max); a burst beyond them is lost",
		         rcv / 2048, snd / 2048, sz / 1024);
}

static int quic_connect(struct smb_transport *t, const struct sockaddr *addr, socklen_t addrlen,
                        unsigned timeout_ms)
{
	struct quic_transport *q = to_quic(t);
	if (!timeout_ms)
		timeout_ms = 15000;
	if (addrlen > sizeof(q->remote))
		return -EINVAL;
	int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	quic_set_bufs(fd);
	/* Don't fragment, ever: path MTU discovery needs a probe too large for
	 * some hop to be lost, not fragmented on its way and acknowledged (the
	 * kernel's default would fragment once an ICMP error has lowered the
	 * route's MTU); and the probes never exceed the first hop's MTU. */
	int probe = IP_PMTUDISC_PROBE;
	setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof(probe));
	if (addr->sa_family == AF_INET6) {
		probe = IPV6_PMTUDISC_PROBE;
		setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe, sizeof(probe));
	}
	/* Datagrams of a burst arrive coalesced (quic_read() splits them) and
	 * leave in GSO batches (quic_flush()) where the kernel can. */
	q->gso = udp_batch_setup(fd);
	if (connect(fd, addr, addrlen) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	q->fd = fd;
	memcpy(&q->remote, addr, addrlen);
	q->remote_len = addrlen;
	q->local_len = sizeof(q->local);
	getsockname(fd, (struct sockaddr *)&q->local, &q->local_len);

	int err = quic_tls_setup(q);
	if (!err)
		err = quic_conn_setup(q, timeout_ms);
	if (!err) {
		err = quic_handshake(q, timeout_ms);
		if (err)
			err = quic_explain(q, err);
	}
	if (!err) {
		gnutls_datum_t proto = {0};
		if (gnutls_alpn_get_selected_protocol(q->tls, &proto) < 0 || proto.size != 3 ||
		    memcmp(proto.data, "smb", 3) != 0) {
			smb_err("quic: %s did not agree to ALPN \"smb\"", q->server_name);
			err = -EPROTO;
		}
	}
	if (!err) {
		int rv = ngtcp2_conn_open_bidi_stream(q->conn, &q->stream_id, NULL);
		if (rv != 0) {
			smb_err("quic: %s allows no stream: %s", q->server_name,
			        ngtcp2_strerror(rv));
			err = -EPROTO;
		}
	}
	if (err)
		return err; /* destroy() frees the rest */
	memcpy(&q->info.local, &q->local, q->local_len);
	memcpy(&q->info.remote, addr, addrlen);
	err = ev_fd_add(t->loop, fd, EPOLLIN, quic_on_event, q, &q->evf);
	if (err)
		return err;
	/* The first timer comes from the loop thread, which owns the conn now. */
	pthread_mutex_lock(&q->lock);
	quic_kick_locked(q);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* ---- teardown, info -------------------------------------------------------------- */

static void quic_destroy(struct smb_transport *t)
{
	struct quic_transport *q = to_quic(t);
	if (q->evf) {
		/* connect() got as far as the loop and failed after: nothing was
		 * reported, so nothing else unregistered it. */
		ev_fd_del(q->evf);
		q->evf = NULL;
	}
	/* Calls queued for q before now (kicks) run before the barrier. */
	if (t->loop)
		ev_call_wait(t->loop, NULL, NULL);
	if (q->timer)
		ev_timer_cancel(q->timer);
	quic_complete_list(q->out_head, -ECONNABORTED);
	quic_complete_list(q->pend_head, -ECONNABORTED);
	smb_framer_reset(&q->framer);
	if (q->conn)
		ngtcp2_conn_del(q->conn);
	if (q->tls)
		gnutls_deinit(q->tls);
	if (q->cred)
		gnutls_certificate_free_credentials(q->cred);
	if (q->fd >= 0)
		close(q->fd);
	pthread_mutex_destroy(&q->lock);
	free(q->pkt);
	free(q->server_name);
	free(q->cafile);
	free(q->certfile);
	free(q->keyfile);
	free(q);
}

static void quic_info(struct smb_transport *t, struct smb_transport_info *out)
{
	*out = to_quic(t)->info;
}

static const struct smb_transport_ops quic_ops = {
    .name = "quic",
    .connect = quic_connect,
    .send = quic_send,
    .shutdown = quic_shutdown,
    .destroy = quic_destroy,
    .info = quic_info,
    .get_stats = transport_default_get_stats,
    .set_dialect = transport_default_set_dialect,
    .region_add = transport_default_region_add,
    .io_token_get = transport_default_io_token_get,
    .io_token_put = transport_default_io_token_put,
};

static char *dup_or_null(const char *s, bool *fail)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*fail = true;
	return d;
}

int smb_transport_quic_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           const struct smb_quic_params *p, struct smb_transport **out)
{
	if (!p || !p->server_name || !*p->server_name)
		return -EINVAL;
	struct quic_transport *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	bool fail = false;
	q->base.ops = &quic_ops;
	q->base.loop = loop;
	q->base.up = *up;
	q->fd = -1;
	q->stream_id = -1;
	q->cancel_fd = p->cancel_fd;
	q->info.kind = "quic";
	q->server_name = dup_or_null(p->server_name, &fail);
	q->cafile = dup_or_null(p->cafile, &fail);
	q->certfile = dup_or_null(p->certfile, &fail);
	q->keyfile = dup_or_null(p->keyfile, &fail);
	q->pkt = malloc(QUIC_PKT_MAX);
	pthread_mutex_init(&q->lock, NULL);
	smb_framer_init(&q->framer, "quic");
	if (fail || !q->pkt) {
		q->base.loop = NULL;
		quic_destroy(&q->base);
		return -ENOMEM;
	}
	*out = &q->base;
	return 0;
}

#else /* !HAVE_NGTCP2 */

int smb_transport_quic_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           const struct smb_quic_params *p, struct smb_transport **out)
{
	(void)loop;
	(void)up;
	(void)p;
	(void)out;
	return -EOPNOTSUPP;
}

#endif
