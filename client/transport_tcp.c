/* client/transport_tcp.c — Direct TCP ([MS-SMB2] 2.1): each SMB2 message is
 * preceded by a 4-byte header, a zero byte and a 24-bit big-endian length.
 *
 * Sending: any thread; tcp->lock serialises writers and guards the queue.  A
 * sender writes directly when the queue is empty; what the socket does not
 * take stays queued and the loop thread finishes it on EPOLLOUT.
 * Receiving: loop thread only.  Each recvmsg() fills, in order, the rest of
 * the message being assembled (its talloc buffer, and the owner's buffer for
 * a tail placed there, struct smb_rx_place), then a staging buffer that
 * batches small messages and holds the start of the next one.  While the
 * owner expects placed messages (up.placing) the stage reads no further than
 * the next message's first SMB_RX_PLACE_HEAD bytes, so READ payload never
 * passes through it: it is received where the reader wants it, with no copy.
 * What arrives is checked as it comes: the framing byte, the length, the
 * protocol id (tcp_check_magic), and progress - a server that stops in the
 * middle of a message for stall_ms has broken the stream for good (nothing
 * after it can be framed), so the connection is dropped (tcp_stall_cb)
 * instead of every later request timing out on it.
 */
#include "client/msg_framer.h"
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>
#include <unistd.h>

#define TCP_STAGE_CAP (256u << 10)
#define TCP_STALL_MS  15000u /* when connect() was given no timeout */

struct tcp_transport {
	struct smb_transport base;
	int fd;
	struct ev_fd *evf;
	struct smb_transport_info info;

	pthread_mutex_t lock;
	/* under lock: */
	struct smb_txbuf *q_head, *q_tail;
	size_t head_sent; /* bytes of q_head (incl. 4-byte prefix) written */
	bool want_out;
	bool dead; /* no more sends accepted */
	int dead_err;

	/* loop thread only: */
	bool reported;
	uint8_t *stage;
	size_t stage_len, stage_off;
	uint8_t *msg; /* message being assembled (talloc): its first head_len bytes */
	size_t msg_len, msg_got, head_len;
	struct smb_rx_place *place; /* the owner's, for msg's tail [head_len, msg_len) */
	bool msg_checked;           /* its first 4 bytes were checked (tcp_check_magic) */
	unsigned stall_ms;          /* a partial message may wait this long for a byte */
	uint64_t last_progress;     /* ev_now_ms() of the last byte received */
	struct ev_timer *stall;     /* armed while a message is partial */
};

#define to_tcp(t) ((struct tcp_transport *)(t))

static void tcp_report_dead(struct tcp_transport *tcp, int err);

static void tcp_fail_queue_locked(struct tcp_transport *tcp, struct smb_txbuf **failed)
{
	*failed = tcp->q_head;
	tcp->q_head = tcp->q_tail = NULL;
	tcp->head_sent = 0;
}

static void tcp_complete_list(struct smb_txbuf *b, int err)
{
	while (b) {
		struct smb_txbuf *next = b->next;
		b->done(b, err);
		b = next;
	}
}

static void tcp_dead_on_loop(void *arg)
{
	struct tcp_transport *tcp = arg;
	tcp_report_dead(tcp, tcp->dead_err);
}

/* Write as much of the queue as the socket takes.  Called with lock held;
 * completed buffers are moved to *done_list.  Returns 0, or -errno on a
 * socket error (the caller then kills the transport). */
static int tcp_flush_locked(struct tcp_transport *tcp, struct smb_txbuf **done_list)
{
	struct smb_txbuf **done_tail = done_list;
	while (*done_tail)
		done_tail = &(*done_tail)->next;

	while (tcp->q_head) {
		struct smb_txbuf *b = tcp->q_head;
		uint8_t prefix[4] = {0, (uint8_t)(b->len >> 16), (uint8_t)(b->len >> 8),
		                     (uint8_t)b->len};
		struct iovec iov[SMB_TXBUF_MAX_IOV + 1];
		int n = 0;
		size_t skip = tcp->head_sent;

		if (skip < 4) {
			iov[n].iov_base = prefix + skip;
			iov[n++].iov_len = 4 - skip;
			skip = 0;
		} else {
			skip -= 4;
		}
		for (int i = 0; i < b->iovcnt; i++) {
			size_t l = b->iov[i].iov_len;
			if (skip >= l) {
				skip -= l;
				continue;
			}
			iov[n].iov_base = (uint8_t *)b->iov[i].iov_base + skip;
			iov[n++].iov_len = l - skip;
			skip = 0;
		}
		if (!n)
			return 0; /* nothing can take a byte (cannot happen) */
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(tcp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		tcp->head_sent += (size_t)w;
		if (tcp->head_sent < b->len + 4)
			continue;
		tcp->q_head = b->next;
		if (!tcp->q_head)
			tcp->q_tail = NULL;
		tcp->head_sent = 0;
		b->next = NULL;
		*done_tail = b;
		done_tail = &b->next;
	}
	return 0;
}

/* Called with lock held after a socket error: mark dead, take the queue. */
static void tcp_kill_locked(struct tcp_transport *tcp, int err, struct smb_txbuf **failed)
{
	if (!tcp->dead) {
		tcp->dead = true;
		tcp->dead_err = err;
		shutdown(tcp->fd, SHUT_RDWR);
	}
	tcp_fail_queue_locked(tcp, failed);
}

static void tcp_update_pollout_locked(struct tcp_transport *tcp)
{
	bool want = tcp->q_head != NULL && !tcp->dead;
	if (want != tcp->want_out && tcp->evf) {
		tcp->want_out = want;
		ev_fd_mod(tcp->evf, EPOLLIN | (want ? EPOLLOUT : 0));
	}
}

static int tcp_send(struct smb_transport *t, struct smb_txbuf *buf)
{
	struct tcp_transport *tcp = to_tcp(t);
	struct smb_txbuf *done_list = NULL, *failed = NULL;
	int err = 0;

	buf->next = NULL;
	pthread_mutex_lock(&tcp->lock);
	if (tcp->dead) {
		pthread_mutex_unlock(&tcp->lock);
		return -ECONNABORTED;
	}
	bool was_empty = !tcp->q_head;
	if (tcp->q_tail)
		tcp->q_tail->next = buf;
	else
		tcp->q_head = buf;
	tcp->q_tail = buf;
	if (was_empty) {
		err = tcp_flush_locked(tcp, &done_list);
		if (err) {
			tcp_kill_locked(tcp, err, &failed);
			ev_call(t->loop, tcp_dead_on_loop, tcp);
		} else {
			tcp_update_pollout_locked(tcp);
		}
	}
	pthread_mutex_unlock(&tcp->lock);
	tcp_complete_list(done_list, 0);
	tcp_complete_list(failed, -ECONNABORTED);
	return 0;
}

static void tcp_report_dead(struct tcp_transport *tcp, int err)
{
	struct smb_txbuf *failed = NULL;
	if (tcp->reported)
		return;
	tcp->reported = true;
	if (tcp->stall) {
		ev_timer_cancel(tcp->stall);
		tcp->stall = NULL;
	}
	pthread_mutex_lock(&tcp->lock);
	tcp_kill_locked(tcp, err, &failed);
	pthread_mutex_unlock(&tcp->lock);
	tcp_complete_list(failed, -ECONNABORTED);
	if (tcp->evf) {
		ev_fd_del(tcp->evf);
		tcp->evf = NULL;
	}
	TALLOC_FREE(tcp->msg);
	tcp->place = NULL;
	tcp->base.up.dead(tcp->base.up.arg, err);
}

/* The protocol id, once 4 bytes of the message are in (msg_framer.h). */
static int tcp_check_magic(struct tcp_transport *tcp)
{
	if (tcp->msg_checked || tcp->msg_got < 4)
		return 0;
	tcp->msg_checked = true;
	return smb_frame_check_magic("tcp", tcp->msg, tcp->msg_len);
}

/* The message is complete: hand it up. */
static void tcp_deliver(struct tcp_transport *tcp)
{
	uint8_t *m = tcp->msg;
	size_t l = tcp->head_len;
	tcp->msg = NULL;
	tcp->place = NULL;
	tcp->base.up.recv(tcp->base.up.arg, m, l);
}

/* n more bytes of the message are in, p the n bytes from the stage (or NULL
 * if they were received in place).  Returns 0 or -errno (fatal). */
static int tcp_msg_advance(struct tcp_transport *tcp, const uint8_t *p, size_t n)
{
	while (p && n) {
		size_t at = tcp->msg_got, take;
		if (at < tcp->head_len) {
			take = tcp->head_len - at < n ? tcp->head_len - at : n;
			memcpy(tcp->msg + at, p, take);
		} else {
			take = n; /* the caller gave no more than the message has */
			if (tcp->place->buf) {
				memcpy(tcp->place->buf + (at - tcp->place->off), p, take);
				tcp->place->copied += take;
			}
		}
		tcp->msg_got += take;
		p += take;
		n -= take;
	}
	if (!p)
		tcp->msg_got += n;
	int err = tcp_check_magic(tcp);
	if (err)
		return err;
	if (tcp->msg_got == tcp->msg_len)
		tcp_deliver(tcp);
	return 0;
}

/* Start assembling the message whose length prefix is at p (avail bytes of
 * it in the stage).  Returns 1 if started, 0 if more bytes are needed first,
 * -errno (fatal). */
static int tcp_msg_start(struct tcp_transport *tcp, const uint8_t *p, size_t avail)
{
	size_t len;
	if (smb_frame_len("tcp", p, &len) < 0)
		return -EBADMSG;
	struct smb_rx_place *pl = NULL;
	if (tcp->base.up.place && len > SMB_RX_PLACE_HEAD) {
		if (avail < 4 + SMB_RX_PLACE_HEAD) {
			/* not yet: the protocol id is checked as soon as it is in */
			if (avail >= 8 && smb_frame_check_magic("tcp", p + 4, len) < 0)
				return -EBADMSG;
			return 0;
		}
		if (smb_frame_check_magic("tcp", p + 4, len) < 0)
			return -EBADMSG;
		pl = tcp->base.up.place(tcp->base.up.arg, p + 4, len);
		if (pl && (pl->off < SMB_RX_PLACE_HEAD || pl->off >= len || !pl->buf))
			return -EINVAL; /* the owner broke the contract */
	}
	tcp->stage_off += 4;
	tcp->head_len = pl ? pl->off : len;
	tcp->msg = talloc_size(NULL, tcp->head_len);
	if (!tcp->msg)
		return -ENOMEM;
	talloc_set_name_const(tcp->msg, "smb rx message");
	tcp->place = pl;
	tcp->msg_len = len;
	tcp->msg_got = 0;
	tcp->msg_checked = false;
	return 1;
}

/* Deliver complete messages from the staging buffer; start assembling a
 * partial one.  Returns 0 or -errno (fatal). */
static int tcp_consume_stage(struct tcp_transport *tcp)
{
	while (!tcp->reported) {
		size_t avail = tcp->stage_len - tcp->stage_off;
		uint8_t *p = tcp->stage + tcp->stage_off;

		if (tcp->msg) {
			size_t take = tcp->msg_len - tcp->msg_got;
			if (take > avail)
				take = avail;
			if (!take)
				break; /* stage drained; compact below */
			tcp->stage_off += take;
			int err = tcp_msg_advance(tcp, p, take);
			if (err)
				return err;
			continue;
		}
		if (avail < 4)
			break;
		int r = tcp_msg_start(tcp, p, avail);
		if (r < 0)
			return r;
		if (r == 0)
			break;
	}
	/* Keep the unconsumed tail at the front. */
	size_t rest = tcp->stage_len - tcp->stage_off;
	if (rest && tcp->stage_off)
		memmove(tcp->stage, tcp->stage + tcp->stage_off, rest);
	tcp->stage_len = rest;
	tcp->stage_off = 0;
	return 0;
}

/* How much the stage may take in the next receive.  Called with the stage
 * compacted (it holds the start of the next message, if anything) and, when
 * a message is being assembled, empty. */
static size_t tcp_stage_window(struct tcp_transport *tcp)
{
	size_t room = TCP_STAGE_CAP - tcp->stage_len;
	if (!tcp->base.up.placing || !tcp->base.up.placing(tcp->base.up.arg))
		return room;
	const size_t head = 4 + SMB_RX_PLACE_HEAD;
	size_t want;
	if (tcp->msg) {
		/* a revoked tail goes to the stage and is dropped there */
		bool sink = tcp->place && !tcp->place->buf && tcp->msg_got < tcp->msg_len;
		want = sink ? room : head;
	} else if (tcp->stage_len < 4) {
		want = head - tcp->stage_len;
	} else {
		size_t len = 0;
		(void)smb_frame_len("tcp", tcp->stage, &len); /* checked when it came */
		/* A short message whole, then the head of the next one. */
		want = len > SMB_RX_PLACE_HEAD ? head - tcp->stage_len
		                               : 4 + len - tcp->stage_len + head;
	}
	return want < room ? want : room;
}

/* Bytes of an unfinished message (or of its length prefix) are in. */
static bool tcp_partial(const struct tcp_transport *tcp)
{
	return tcp->msg != NULL || tcp->stage_len > tcp->stage_off;
}

static void tcp_stall_cb(void *arg);

static void tcp_stall_arm(struct tcp_transport *tcp, uint64_t ms)
{
	if (!tcp->stall && !tcp->reported &&
	    ev_timer_add(tcp->base.loop, ms, tcp_stall_cb, tcp, &tcp->stall) < 0)
		tcp->stall = NULL;
}

/* Loop thread: the stall timer. */
static void tcp_stall_cb(void *arg)
{
	struct tcp_transport *tcp = arg;
	tcp->stall = NULL; /* a fired timer frees itself */
	if (tcp->reported || !tcp_partial(tcp))
		return;
	uint64_t idle = ev_now_ms() - tcp->last_progress;
	if (idle < tcp->stall_ms) {
		tcp_stall_arm(tcp, tcp->stall_ms - idle);
		return;
	}
	if (tcp->msg)
		smb_err(
		    "tcp: server stopped sending in the middle of a %zu-byte message (%zu bytes "
		    "in) %llu ms ago; dropping the connection",
		    tcp->msg_len, tcp->msg_got, (unsigned long long)idle);
	else
		smb_err("tcp: server stopped sending in the middle of a message length (%zu of 4 "
		        "bytes in) %llu ms ago; dropping the connection",
		        tcp->stage_len - tcp->stage_off, (unsigned long long)idle);
	tcp_report_dead(tcp, -ETIMEDOUT);
}

static int tcp_read_ready(struct tcp_transport *tcp)
{
	for (int rounds = 0; rounds < 64 && !tcp->reported; rounds++) {
		struct iovec iov[3];
		int n = 0;
		size_t in_msg = 0; /* of the iovs, bytes that are the message's */
		if (tcp->msg) {
			if (tcp->msg_got < tcp->head_len) {
				iov[n].iov_base = tcp->msg + tcp->msg_got;
				iov[n++].iov_len = tcp->head_len - tcp->msg_got;
			}
			size_t at = tcp->msg_got > tcp->head_len ? tcp->msg_got : tcp->head_len;
			if (at < tcp->msg_len && tcp->place->buf) {
				iov[n].iov_base = tcp->place->buf + (at - tcp->place->off);
				iov[n++].iov_len = tcp->msg_len - at;
			}
			for (int i = 0; i < n; i++)
				in_msg += iov[i].iov_len;
		}
		size_t window = tcp_stage_window(tcp);
		if (window) {
			iov[n].iov_base = tcp->stage + tcp->stage_len;
			iov[n++].iov_len = window;
		}
		if (!n)
			return 0; /* nothing can take a byte (cannot happen) */
		/* One buffer (the stage alone, the common case): recv(), which
		 * spares the kernel copying in and checking a msghdr and iovec
		 * on every call. */
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t r = n == 1 ? recv(tcp->fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT)
		                   : recvmsg(tcp->fd, &mh, MSG_DONTWAIT);
		if (r > 0) {
			tcp->last_progress = ev_now_ms();
			size_t got = (size_t)r, mine = got < in_msg ? got : in_msg;
			if (mine) {
				int err = tcp_msg_advance(tcp, NULL, mine);
				if (err)
					return err;
			}
			if (got > mine) {
				tcp->stage_len += got - mine;
				int err = tcp_consume_stage(tcp);
				if (err)
					return err;
			}
			continue;
		}
		if (r == 0)
			return -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == EINTR)
			continue;
		return -errno;
	}
	return 0;
}

static void tcp_on_event(struct ev_fd *f, uint32_t events, void *arg)
{
	struct tcp_transport *tcp = arg;
	int err = 0;

	if (events & EPOLLOUT) {
		struct smb_txbuf *done_list = NULL, *failed = NULL;
		pthread_mutex_lock(&tcp->lock);
		err = tcp_flush_locked(tcp, &done_list);
		if (err)
			tcp_kill_locked(tcp, err, &failed);
		else
			tcp_update_pollout_locked(tcp);
		pthread_mutex_unlock(&tcp->lock);
		tcp_complete_list(done_list, 0);
		tcp_complete_list(failed, -ECONNABORTED);
	}
	if (!err && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		err = tcp_read_ready(tcp);
	if (!err && (events & (EPOLLHUP | EPOLLERR)) && !(events & EPOLLIN))
		err = -ECONNRESET;
	if (!err) {
		pthread_mutex_lock(&tcp->lock);
		if (tcp->dead)
			err = tcp->dead_err ? tcp->dead_err : -ECONNABORTED;
		pthread_mutex_unlock(&tcp->lock);
	}
	if (err)
		tcp_report_dead(tcp, err);
	else if (tcp_partial(tcp))
		tcp_stall_arm(tcp, tcp->stall_ms);
}

static int tcp_connect(struct smb_transport *t, const struct sockaddr *addr, socklen_t addrlen,
                       unsigned timeout_ms)
{
	struct tcp_transport *tcp = to_tcp(t);
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, addr, addrlen) < 0) {
		if (errno != EINPROGRESS) {
			int err = -errno;
			close(fd);
			return err;
		}
		int cfd = t->up.cancel_fd;
		struct pollfd pfd[2] = {{.fd = fd, .events = POLLOUT},
		                        {.fd = cfd, .events = POLLIN}};
		int pr;
		do {
			pr = poll(pfd, cfd >= 0 ? 2 : 1, (int)timeout_ms);
		} while (pr < 0 && errno == EINTR);
		if (pr == 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		if (pr > 0 && cfd >= 0 && (pfd[1].revents & POLLIN) &&
		    !(pfd[0].revents & POLLOUT)) {
			close(fd);
			return -ECANCELED;
		}
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (pr < 0 || soerr) {
			close(fd);
			return pr < 0 ? -errno : -soerr;
		}
	}
	tcp->fd = fd;
	/* The connect timeout is also how long the stream may stall mid-message. */
	tcp->stall_ms = timeout_ms ? timeout_ms : TCP_STALL_MS;
	tcp->last_progress = ev_now_ms();
	socklen_t sl = sizeof(tcp->info.local);
	getsockname(fd, (struct sockaddr *)&tcp->info.local, &sl);
	memcpy(&tcp->info.remote, addr, addrlen);
	int err = ev_fd_add(t->loop, fd, EPOLLIN, tcp_on_event, tcp, &tcp->evf);
	if (err) {
		close(fd);
		tcp->fd = -1;
		return err;
	}
	return 0;
}

static void tcp_shutdown(struct smb_transport *t)
{
	struct tcp_transport *tcp = to_tcp(t);
	pthread_mutex_lock(&tcp->lock);
	if (tcp->fd >= 0)
		shutdown(tcp->fd, SHUT_RDWR);
	pthread_mutex_unlock(&tcp->lock);
}

static void tcp_destroy(struct smb_transport *t)
{
	struct tcp_transport *tcp = to_tcp(t);
	if (tcp->evf)
		ev_fd_del(tcp->evf);
	if (tcp->fd >= 0)
		close(tcp->fd);
	talloc_free(tcp->msg);
	free(tcp->stage);
	pthread_mutex_destroy(&tcp->lock);
	free(tcp);
}

static void tcp_info(struct smb_transport *t, struct smb_transport_info *out)
{
	*out = to_tcp(t)->info;
}

static const struct smb_transport_ops tcp_ops = {
    .name = "tcp",
    .connect = tcp_connect,
    .send = tcp_send,
    .shutdown = tcp_shutdown,
    .destroy = tcp_destroy,
    .info = tcp_info,
    .get_stats = transport_default_get_stats,
    .set_dialect = transport_default_set_dialect,
    .region_add = transport_default_region_add,
    .io_token_get = transport_default_io_token_get,
    .io_token_put = transport_default_io_token_put,
};

int smb_transport_tcp_new(struct ev_loop *loop, const struct smb_transport_up *up,
                          struct smb_transport **out)
{
	struct tcp_transport *tcp = calloc(1, sizeof(*tcp));
	if (!tcp)
		return -ENOMEM;
	tcp->stage = malloc(TCP_STAGE_CAP);
	if (!tcp->stage) {
		free(tcp);
		return -ENOMEM;
	}
	tcp->base.ops = &tcp_ops;
	tcp->base.loop = loop;
	tcp->base.up = *up;
	tcp->fd = -1;
	tcp->info.kind = "tcp";
	pthread_mutex_init(&tcp->lock, NULL);
	*out = &tcp->base;
	return 0;
}
