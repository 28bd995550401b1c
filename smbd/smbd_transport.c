/* smbd/smbd_transport.c — SMB Direct as a struct smb_transport: librdmacm
 * connection set-up and the verbs data path around smbd_conn (smbd_conn.h).
 *
 * Set-up (connect(), on the caller's thread): rdma_cm address and route
 * resolution, PD, completion channel, one CQ for sends and receives, an RC QP
 * with RNR retry 0 (credits make receiver-not-ready impossible), one
 * registered region of receive slots and one of send slots.  The negotiate
 * receive is posted before rdma_connect() so the peer's response cannot race
 * it.  Port 5445 is tried first, then 445, as cifs.ko does: ksmbd listens on
 * 5445 only with an iWARP device, on 445 for RoCE/IB.  On iWARP we send the
 * legacy 8-byte IRD/ORD private data (two big-endian u32: our responder
 * resources, then our initiator depth), which peers with MPA v1 need.  The
 * event-channel and completion-channel fds are non-blocking from the start;
 * connect() polls them itself until SMB Direct negotiation is done, then
 * hands them to the event loop.
 *
 * Data path (loop thread only after connect): the completion fd callback
 * acks the CQ event, re-arms notification and polls the CQ dry, feeding
 * smbd_conn; smbd_conn posts through conn_ops below.  Sends come from any
 * thread: send() queues under rt->lock and wakes the loop with ev_call().
 *
 * RDMA offload (smbd_offload.h): smbd_token.c owns the registration cache
 * and the per-I/O tokens; this file gives it verbs (token_verbs_ops).  Window
 * binds and local invalidates are signalled send WRs tagged WR_MW; the send
 * queue has 2 * max_mw entries beyond the send slots for them.  A receive
 * that came by Send-with-Invalidate is reported to the token table before
 * smbd_conn_recv() can deliver the response upward.  Done callbacks run from
 * rt_tokens_run (ev_call), and finally from rt_barrier.
 *
 * Lock: rt->lock guards pend_*, drain_queued, dead, tokens_stopped and the mr
 * list; it is never held while calling out (done(), up->dead, smbd_conn).
 * Lock order: rt->lock is never taken inside the token table's lock (nor the
 * reverse: tv_schedule runs without it).
 */
#include "common/transport.h"
#include "common/evloop.h"
#include "common/log.h"
#include "smbd/smbd_conn.h"
#include "smbd/smbd_offload.h"
#include "smbd/smbd_proto.h"
#include "smbd/smbd_token.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <talloc.h>

#define SMBD_PORT_IWARP 5445
#define SMBD_PORT_IB    445
/* Incoming RDMA Reads (the server reading SMB2 WRITE payloads) we allow in
 * flight, capped by the device; and our own, which we never issue. */
#define SMBD_RESPONDER_RESOURCES 32
#define SMBD_INITIATOR_DEPTH     1
#define SMBD_CM_RETRY            6
#define SMBD_CM_RNR_RETRY        0

/* wr_id: the top bit says receive, the next a window's bind or local
 * invalidate (the rest is the pool slot), else a send slot. */
#define WR_RECV (1ull << 63)
#define WR_MW   (1ull << 62)
/* Memory windows per channel: I/Os with a window token in flight at most
 * (more fall back to per-I/O registration).  Each has at most a bind and a
 * local invalidate outstanding, so the send queue gets twice this many
 * extra entries. */
#define SMBD_MW_POOL_MAX 128

struct rdma_transport {
	struct smb_transport base;
	struct smbd_conn_params params;

	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	unsigned cq_unacked;
	bool iwarp;

	uint8_t *recv_mem, *send_mem;
	struct ibv_mr *recv_mr, *send_mr;
	uint32_t recv_slots, send_slots;
	uint32_t *recv_free, *send_free; /* stacks of free slot numbers */
	uint32_t recv_nfree, send_nfree;

	struct smbd_conn *conn;
	struct smbd_tokens *tokens; /* registration cache + per-I/O tokens */
	bool has_mw;                /* device binds type-2 windows */
	uint32_t inv_flags;         /* wc_flags bits meaning Send-with-Invalidate */
	uint32_t max_mw;
	bool tokens_stopped;   /* under lock: rt_barrier ran, schedule nothing */
	bool test_io_reg_fail; /* SMBRDMA_TEST_IO_REG_FAIL (smbd_offload.h); set at creation */

	/* Before the loop owns us, the connection's timer is a deadline that
	 * connect() polls against; once rt_kick() ran on the loop, an ev_timer
	 * (loop_timer).  on_loop: connect() succeeded and handed us over. */
	bool on_loop;
	bool loop_timer;
	uint64_t deadline_ms;
	int connect_err;
	struct ev_fd *cm_evf, *comp_evf;
	struct ev_timer *timer;
	bool reported;                 /* loop thread: up->dead called */
	uint64_t remote_invalidations; /* loop thread */

	pthread_mutex_t lock;
	struct smb_txbuf *pend_head, *pend_tail; /* under lock */
	bool drain_queued;                       /* under lock */
	bool dead;                               /* under lock: sends refused */
	bool connect_failed;                     /* under lock: never report death */
	struct smbd_transport_stats stats;       /* under lock: a snapshot */

	pthread_mutex_t barrier_lock;
	pthread_cond_t barrier_cond;
	bool barrier_done;

	struct smb_transport_info info;
};

static const struct smb_transport_ops rdma_ops;

static struct rdma_transport *to_rt(struct smb_transport *t)
{
	return (struct rdma_transport *)t;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* ---- ops smbd_conn calls ---- */

static int rt_post_send(void *arg, const struct iovec *iov, int iovcnt, size_t len)
{
	struct rdma_transport *rt = arg;
	if (len > rt->params.max_send_size)
		return -EMSGSIZE;
	if (!rt->send_nfree)
		return -ENOSPC; /* smbd_conn bounds sends by send_slots: a bug */
	uint32_t slot = rt->send_free[--rt->send_nfree];
	uint8_t *p = rt->send_mem + (size_t)slot * rt->params.max_send_size;
	size_t off = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	struct ibv_sge sge = {
	    .addr = (uintptr_t)p, .length = (uint32_t)len, .lkey = rt->send_mr->lkey};
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = slot,
	                             .sg_list = &sge,
	                             .num_sge = 1,
	                             .opcode = IBV_WR_SEND,
	                             .send_flags = IBV_SEND_SIGNALED,
	                         };
	int r = ibv_post_send(rt->id->qp, &wr, &bad);
	if (r) {
		rt->send_free[rt->send_nfree++] = slot;
		return -r;
	}
	return 0;
}

static int rt_post_recv(void *arg)
{
	struct rdma_transport *rt = arg;
	if (!rt->recv_nfree)
		return -ENOBUFS;
	uint32_t slot = rt->recv_free[--rt->recv_nfree];
	uint8_t *p = rt->recv_mem + (size_t)slot * rt->params.max_receive_size;
	struct ibv_sge sge = {
	    .addr = (uintptr_t)p, .length = rt->params.max_receive_size, .lkey = rt->recv_mr->lkey};
	struct ibv_recv_wr *bad, wr = {.wr_id = WR_RECV | slot, .sg_list = &sge, .num_sge = 1};
	int r = ibv_post_recv(rt->id->qp, &wr, &bad);
	if (r) {
		rt->recv_free[rt->recv_nfree++] = slot;
		return -r;
	}
	return 0;
}

static void rt_timer_cb(void *arg)
{
	struct rdma_transport *rt = arg;
	rt->timer = NULL; /* a fired timer frees itself */
	smbd_conn_timer_fired(rt->conn);
}

static void rt_timer_set(void *arg, uint64_t ms)
{
	struct rdma_transport *rt = arg;
	if (!rt->loop_timer) {
		rt->deadline_ms = ms ? ev_now_ms() + ms : 0;
		return;
	}
	if (rt->timer) {
		ev_timer_cancel(rt->timer);
		rt->timer = NULL;
	}
	if (ms && ev_timer_add(rt->base.loop, ms, rt_timer_cb, rt, &rt->timer) < 0) {
		smb_err("smbd: cannot arm a timer; keepalive disabled on this channel");
		rt->timer = NULL;
	}
}

static uint64_t rt_now_ms(void *arg)
{
	return ev_now_ms();
}

static void rt_deliver(void *arg, uint8_t *msg, size_t len)
{
	struct rdma_transport *rt = arg;
	if (!rt->on_loop) {
		/* Impossible: the peer has no credit before connect() returns. */
		talloc_free(msg);
		return;
	}
	rt->base.up.recv(rt->base.up.arg, msg, len);
}

static void rt_disconnect(void *arg)
{
	struct rdma_transport *rt = arg;
	if (rt->id)
		rdma_disconnect(rt->id);
}

static void complete_list(struct smb_txbuf *b, int err)
{
	while (b) {
		struct smb_txbuf *next = b->next;
		b->next = NULL;
		b->done(b, err);
		b = next;
	}
}

static void rt_dead(void *arg, int err)
{
	struct rdma_transport *rt = arg;
	struct smb_txbuf *pend;
	bool silent;

	pthread_mutex_lock(&rt->lock);
	rt->dead = true;
	silent = rt->connect_failed;
	pend = rt->pend_head;
	rt->pend_head = rt->pend_tail = NULL;
	pthread_mutex_unlock(&rt->lock);
	complete_list(pend, -ECONNABORTED);
	if (!rt->on_loop || silent) {
		rt->connect_err = err;
		return;
	}
	/* Move the QP to error so posted work flushes; the ids stay until destroy. */
	if (rt->id)
		rdma_disconnect(rt->id);
	if (rt->tokens && !rt->iwarp)
		smbd_tokens_set_dead(rt->tokens); /* IB/RoCE: the QP is in error now */
	if (!rt->reported) {
		rt->reported = true;
		smb_info("smbd: channel is dead: %s", strerror(-err));
		rt->base.up.dead(rt->base.up.arg, err);
	}
}

/* ---- verbs for the token engine (smbd_token.h) ---- */

/* The verbs flags of an engine access mask (smbd_token.h says which masks it
 * asks for).  Local write always: remote write and window binds need it, and
 * it grants the server nothing. */
static int access_flags(int access)
{
	int f = IBV_ACCESS_LOCAL_WRITE;
	if (access & SMBD_ACCESS_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (access & SMBD_ACCESS_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE;
	if (access & SMBD_ACCESS_MW_BIND)
		f |= IBV_ACCESS_MW_BIND;
	return f;
}

static int tv_reg_mr(void *arg, void *addr, size_t len, int access, void **mr, uint32_t *rkey)
{
	struct rdma_transport *rt = arg;
	if (rt->test_io_reg_fail && (access & (SMBD_ACCESS_REMOTE_READ | SMBD_ACCESS_REMOTE_WRITE)))
		return -ENOMEM; /* SMBRDMA_TEST_IO_REG_FAIL: a per-I/O registration */
	errno = 0;
	struct ibv_mr *m = ibv_reg_mr(rt->pd, addr, len, access_flags(access));
	if (!m)
		return errno ? -errno : -ENOMEM;
	*mr = m;
	*rkey = m->rkey;
	return 0;
}

static void tv_dereg_mr(void *arg, void *mr)
{
	int r = ibv_dereg_mr(mr);
	if (r)
		smb_err("smbd: deregistering a memory region (ibv_dereg_mr): %s; the region "
		        "stays registered until the device is closed",
		        strerror(r));
}

static int tv_alloc_mw(void *arg, void **mw, uint32_t *rkey)
{
	struct rdma_transport *rt = arg;
	errno = 0;
	struct ibv_mw *w = ibv_alloc_mw(rt->pd, IBV_MW_TYPE_2);
	if (!w)
		return errno ? -errno : -ENOMEM;
	*mw = w;
	*rkey = w->rkey;
	return 0;
}

static void tv_dealloc_mw(void *arg, void *mw)
{
	ibv_dealloc_mw(mw);
}

static int tv_post_bind(void *arg, void *mw, void *mr, uint32_t new_rkey, uint64_t addr, size_t len,
                        int access, uint64_t wr_id)
{
	struct rdma_transport *rt = arg;
	if (rt->test_io_reg_fail)
		return -ENOMEM; /* SMBRDMA_TEST_IO_REG_FAIL */
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = WR_MW | wr_id,
	                             .opcode = IBV_WR_BIND_MW,
	                             .send_flags = IBV_SEND_SIGNALED,
	                         };
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = new_rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
	    .mr = mr,
	    .addr = addr,
	    .length = len,
	    .mw_access_flags = (unsigned)(access_flags(access) & ~IBV_ACCESS_LOCAL_WRITE),
	};
	int r = ibv_post_send(rt->id->qp, &wr, &bad);
	/* The provider names the window by ibv_mw.rkey in the next bind (rxe
	 * checks it against the kernel's current key): for type 2, binding
	 * through post_send does not update it, so we do. */
	if (!r)
		((struct ibv_mw *)mw)->rkey = new_rkey;
	return -r;
}

static int tv_post_local_inv(void *arg, uint32_t rkey, uint64_t wr_id)
{
	struct rdma_transport *rt = arg;
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = WR_MW | wr_id,
	                             .opcode = IBV_WR_LOCAL_INV,
	                             .send_flags = IBV_SEND_SIGNALED,
	                             .invalidate_rkey = rkey,
	                         };
	return -ibv_post_send(rt->id->qp, &wr, &bad);
}

static void rt_tokens_run(void *arg)
{
	struct rdma_transport *rt = arg;
	smbd_tokens_run_done(rt->tokens);
}

static void tv_schedule(void *arg)
{
	struct rdma_transport *rt = arg;
	pthread_mutex_lock(&rt->lock);
	bool stopped = rt->tokens_stopped;
	pthread_mutex_unlock(&rt->lock);
	if (stopped)
		return; /* rt_barrier runs the queue itself */
	if (ev_call(rt->base.loop, rt_tokens_run, rt) < 0)
		smb_err("smbd: cannot queue I/O token completions");
}

static const struct smbd_verbs_ops token_verbs_ops = {
    .reg_mr = tv_reg_mr,
    .dereg_mr = tv_dereg_mr,
    .alloc_mw = tv_alloc_mw,
    .dealloc_mw = tv_dealloc_mw,
    .post_bind = tv_post_bind,
    .post_local_inv = tv_post_local_inv,
    .schedule = tv_schedule,
};

static const struct smbd_conn_ops conn_ops = {
    .post_send = rt_post_send,
    .post_recv = rt_post_recv,
    .timer_set = rt_timer_set,
    .now_ms = rt_now_ms,
    .deliver = rt_deliver,
    .disconnect = rt_disconnect,
    .dead = rt_dead,
};

/* Soft-RoCE (rdma_rxe, vendor id 0xffffff) fills the user CQE with the
 * kernel's flag values, and the kernel's IB_WC_WITH_INVALIDATE (1 << 2) is
 * userspace's IBV_WC_IP_CSUM_OK: a Send-with-Invalidate arrives flagged
 * with that bit.  IP_CSUM_OK never applies to an RC receive, so on rxe the
 * bit is read as what the kernel meant.  Missing it would make us invalidate
 * the window a second time, which oopses rxe (Linux 6.1) in
 * rxe_invalidate_mw. */
#define RXE_VENDOR_ID   0xffffffu
#define RXE_WC_WITH_INV (1u << 2)

/* ---- completions and rdma_cm events (connect()'s thread, then the loop) ---- */

static void rt_handle_wc(struct rdma_transport *rt, const struct ibv_wc *wc)
{
	if (wc->wr_id & WR_RECV) {
		uint32_t slot = (uint32_t)(wc->wr_id & ~WR_RECV);
		if (slot >= rt->recv_slots)
			return;
		if (wc->status == IBV_WC_SUCCESS) {
			const uint8_t *p =
			    rt->recv_mem + (size_t)slot * rt->params.max_receive_size;
			/* Before smbd_conn_recv() delivers the response upward:
			 * the upper layer's token_put() must see it. */
			if (wc->wc_flags & rt->inv_flags) {
				rt->remote_invalidations++;
				if (!rt->tokens ||
				    smbd_tokens_remote_inv(rt->tokens, wc->invalidated_rkey))
					smb_warn("smbd: server invalidated rkey 0x%x, not ours",
					         wc->invalidated_rkey);
			}
			/* The slot goes back only after smbd_conn copied what it keeps. */
			smbd_conn_recv(rt->conn, p, wc->byte_len);
			rt->recv_free[rt->recv_nfree++] = slot;
		} else {
			rt->recv_free[rt->recv_nfree++] = slot;
			smbd_conn_recv_failed(
			    rt->conn, wc->status == IBV_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO);
			if (wc->status != IBV_WC_WR_FLUSH_ERR)
				smb_err("smbd: receive completion: %s",
				        ibv_wc_status_str(wc->status));
		}
		return;
	}
	if (wc->wr_id & WR_MW) {
		if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
			smb_err("smbd: memory window bind or invalidate: %s",
			        ibv_wc_status_str(wc->status));
		if (rt->tokens)
			smbd_tokens_wr_done(rt->tokens, wc->wr_id & ~WR_MW,
			                    wc->status == IBV_WC_SUCCESS);
		if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
			smbd_conn_fail(rt->conn, -EIO);
		return;
	}
	uint32_t slot = (uint32_t)wc->wr_id;
	if (slot >= rt->send_slots)
		return;
	rt->send_free[rt->send_nfree++] = slot;
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		smb_err("smbd: send completion: %s", ibv_wc_status_str(wc->status));
	smbd_conn_send_done(rt->conn, wc->status == IBV_WC_SUCCESS ? 0 : -EIO);
}

/* Loop thread: publish the counters for smbd_transport_get_stats(). */
static void rt_snapshot_stats(struct rdma_transport *rt)
{
	struct smbd_conn_stats cs;
	if (!rt->conn)
		return;
	smbd_conn_get_stats(rt->conn, &cs);
	pthread_mutex_lock(&rt->lock);
	rt->stats = (struct smbd_transport_stats){
	    .msgs_sent = cs.msgs_sent,
	    .msgs_received = cs.msgs_received,
	    .bytes_sent = cs.bytes_sent,
	    .bytes_received = cs.bytes_received,
	    .send_credits = cs.send_credits,
	    .recv_credits = cs.recv_credits,
	    .keepalives_sent = cs.keepalives_sent,
	    .remote_invalidations = rt->remote_invalidations,
	};
	pthread_mutex_unlock(&rt->lock);
}

static void rt_poll_cq(struct rdma_transport *rt)
{
	struct ibv_wc wc[32];
	int n;
	do {
		n = ibv_poll_cq(rt->cq, 32, wc);
		if (n < 0) {
			smbd_conn_fail(rt->conn, -EIO);
			break;
		}
		for (int i = 0; i < n; i++)
			rt_handle_wc(rt, &wc[i]);
	} while (n == 32);
	if (rt->on_loop)
		rt_snapshot_stats(rt);
}

/* Completion channel readable: take the event, re-arm, then poll dry (a
 * completion that lands between the poll and the re-arm raises a new event). */
static void rt_comp_ready(struct rdma_transport *rt)
{
	struct ibv_cq *cq;
	void *ctx;
	while (ibv_get_cq_event(rt->comp_ch, &cq, &ctx) == 0)
		rt->cq_unacked++;
	if (rt->cq_unacked >= 64) {
		ibv_ack_cq_events(rt->cq, rt->cq_unacked);
		rt->cq_unacked = 0;
	}
	if (ibv_req_notify_cq(rt->cq, 0)) {
		smbd_conn_fail(rt->conn, -EIO);
		return;
	}
	rt_poll_cq(rt);
}

static void rt_cm_ready(struct rdma_transport *rt)
{
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(rt->cm_ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_DISCONNECTED:
			smbd_conn_disconnected(rt->conn);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			smb_err("smbd: RDMA device removed");
			smbd_conn_fail(rt->conn, -ENODEV);
			break;
		case RDMA_CM_EVENT_ADDR_CHANGE:
			smb_warn("smbd: local address changed");
			smbd_conn_fail(rt->conn, -ENETRESET);
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			smb_debug("smbd: rdma_cm event %s", rdma_event_str(type));
			break;
		}
	}
}

static void rt_on_comp(struct ev_fd *f, uint32_t events, void *arg)
{
	rt_comp_ready(arg);
}

static void rt_on_cm(struct ev_fd *f, uint32_t events, void *arg)
{
	rt_cm_ready(arg);
}

/* First call on the loop after connect(): from here the timer is an ev_timer
 * armed on this thread (no race with its callback), then catch completions
 * that arrived before the fds were watched. */
static void rt_kick(void *arg)
{
	struct rdma_transport *rt = arg;
	uint64_t at = rt->deadline_ms, now = ev_now_ms();
	rt->loop_timer = true;
	rt->deadline_ms = 0;
	if (at && smbd_conn_state(rt->conn) == SMBD_CONNECTED)
		rt_timer_set(rt, at > now ? at - now : 1);
	rt_comp_ready(rt);
}

/* ---- connect ---- */

static int cm_err(enum rdma_cm_event_type type, int status)
{
	switch (type) {
	case RDMA_CM_EVENT_REJECTED:
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_UNREACHABLE:
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_ADDR_ERROR:
		return -EADDRNOTAVAIL;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return -ENETUNREACH;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return status < 0 ? status : -ECONNREFUSED;
	}
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = ev_now_ms();
	if (now >= deadline)
		return 0;
	uint64_t left = deadline - now;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* Wait for one rdma_cm event on the (non-blocking) channel. */
static int wait_cm(struct rdma_transport *rt, enum rdma_cm_event_type want, uint64_t deadline)
{
	for (;;) {
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(rt->cm_ch, &ev) == 0) {
			enum rdma_cm_event_type type = ev->event;
			int status = ev->status;
			rdma_ack_cm_event(ev);
			if (type == want && status == 0)
				return 0;
			smb_debug("smbd: waiting for %s, got %s (status %d)", rdma_event_str(want),
			          rdma_event_str(type), status);
			return cm_err(type, status);
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int left = remaining_ms(deadline);
		if (!left)
			return -ETIMEDOUT;
		struct pollfd pfd = {.fd = rt->cm_ch->fd, .events = POLLIN};
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
}

/* Undo one connection attempt (not the event channel). */
static void rt_teardown(struct rdma_transport *rt)
{
	/* Windows first: on rxe (6.1) a bound type-2 window holds a reference
	 * on the QP that only its invalidation or deallocation drops, and
	 * rxe_destroy_qp() waits 50 s for it (then WARNs in __rxe_cleanup). */
	smbd_tokens_free(rt->tokens); /* windows and regions, before the PD */
	rt->tokens = NULL;
	if (rt->id && rt->id->qp)
		rdma_destroy_qp(rt->id);
	if (rt->recv_mr)
		ibv_dereg_mr(rt->recv_mr);
	if (rt->send_mr)
		ibv_dereg_mr(rt->send_mr);
	rt->recv_mr = rt->send_mr = NULL;
	free(rt->recv_mem);
	free(rt->send_mem);
	free(rt->recv_free);
	free(rt->send_free);
	rt->recv_mem = rt->send_mem = NULL;
	rt->recv_free = rt->send_free = NULL;
	if (rt->cq) {
		if (rt->cq_unacked)
			ibv_ack_cq_events(rt->cq, rt->cq_unacked);
		rt->cq_unacked = 0;
		ibv_destroy_cq(rt->cq);
		rt->cq = NULL;
	}
	if (rt->comp_ch)
		ibv_destroy_comp_channel(rt->comp_ch);
	rt->comp_ch = NULL;
	if (rt->pd)
		ibv_dealloc_pd(rt->pd);
	rt->pd = NULL;
	if (rt->id)
		rdma_destroy_id(rt->id);
	rt->id = NULL;
	TALLOC_FREE(rt->conn);
	rt->deadline_ms = 0;
	rt->connect_err = 0;
}

static int rt_alloc_slots(struct rdma_transport *rt)
{
	size_t rsz = (size_t)rt->recv_slots * rt->params.max_receive_size;
	size_t ssz = (size_t)rt->send_slots * rt->params.max_send_size;

	if (posix_memalign((void **)&rt->recv_mem, 4096, rsz) ||
	    posix_memalign((void **)&rt->send_mem, 4096, ssz))
		return -ENOMEM;
	rt->recv_free = calloc(rt->recv_slots, sizeof(uint32_t));
	rt->send_free = calloc(rt->send_slots, sizeof(uint32_t));
	if (!rt->recv_free || !rt->send_free)
		return -ENOMEM;
	for (uint32_t i = 0; i < rt->recv_slots; i++)
		rt->recv_free[i] = rt->recv_slots - 1 - i;
	for (uint32_t i = 0; i < rt->send_slots; i++)
		rt->send_free[i] = rt->send_slots - 1 - i;
	rt->recv_nfree = rt->recv_slots;
	rt->send_nfree = rt->send_slots;
	rt->recv_mr = ibv_reg_mr(rt->pd, rt->recv_mem, rsz, IBV_ACCESS_LOCAL_WRITE);
	rt->send_mr = ibv_reg_mr(rt->pd, rt->send_mem, ssz, 0);
	if (!rt->recv_mr || !rt->send_mr)
		return errno ? -errno : -ENOMEM;
	return 0;
}

/* rdma_cm up to ESTABLISHED, QP and buffers ready, negotiate receive posted. */
static int rt_try_port(struct rdma_transport *rt, const struct sockaddr *sa, uint64_t deadline)
{
	struct ibv_device_attr dattr;
	int r;

	if (rdma_create_id(rt->cm_ch, &rt->id, rt, RDMA_PS_TCP))
		return -errno;
	if (rdma_resolve_addr(rt->id, NULL, (struct sockaddr *)sa, remaining_ms(deadline)))
		return -errno;
	if ((r = wait_cm(rt, RDMA_CM_EVENT_ADDR_RESOLVED, deadline)))
		return r;
	if (rdma_resolve_route(rt->id, remaining_ms(deadline)))
		return -errno;
	if ((r = wait_cm(rt, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline)))
		return r;
	if (!rt->id->verbs)
		return -ENODEV;
	rt->iwarp = rt->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	if (ibv_query_device(rt->id->verbs, &dattr))
		return -EIO;

	rt->recv_slots = rt->params.recv_credit_max + 1u; /* +1: the one being processed */
	rt->send_slots = rt->params.send_slots;
	rt->has_mw = (dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && dattr.max_mw > 0;
	rt->inv_flags = IBV_WC_WITH_INV;
	if (dattr.vendor_id == RXE_VENDOR_ID)
		rt->inv_flags |= RXE_WC_WITH_INV;
	rt->max_mw = rt->has_mw ? (dattr.max_mw < SMBD_MW_POOL_MAX ? (uint32_t)dattr.max_mw
	                                                           : SMBD_MW_POOL_MAX)
	                        : 0;
	if ((int)(rt->recv_slots) > dattr.max_qp_wr ||
	    (int)(rt->send_slots + 2 * rt->max_mw) > dattr.max_qp_wr ||
	    (int)(rt->recv_slots + rt->send_slots + 2 * rt->max_mw) > dattr.max_cqe) {
		smb_err("smbd: device %s allows %d work requests and %d CQ entries; need %u+%u",
		        ibv_get_device_name(rt->id->verbs->device), dattr.max_qp_wr, dattr.max_cqe,
		        rt->recv_slots, rt->send_slots);
		return -ENOSPC;
	}
	rt->pd = ibv_alloc_pd(rt->id->verbs);
	if (!rt->pd)
		return -ENOMEM;
	rt->comp_ch = ibv_create_comp_channel(rt->id->verbs);
	if (!rt->comp_ch)
		return -errno;
	if ((r = set_nonblock(rt->comp_ch->fd)))
		return r;
	rt->cq =
	    ibv_create_cq(rt->id->verbs, (int)(rt->recv_slots + rt->send_slots + 2 * rt->max_mw),
	                  rt, rt->comp_ch, 0);
	if (!rt->cq)
		return -errno;
	if (ibv_req_notify_cq(rt->cq, 0))
		return -EIO;
	struct ibv_qp_init_attr qa = {
	    .send_cq = rt->cq,
	    .recv_cq = rt->cq,
	    .qp_type = IBV_QPT_RC,
	    .cap =
	        {
	            .max_send_wr = rt->send_slots + 2 * rt->max_mw,
	            .max_recv_wr = rt->recv_slots,
	            .max_send_sge = 1,
	            .max_recv_sge = 1,
	        },
	    .sq_sig_all = 0,
	};
	if (rdma_create_qp(rt->id, rt->pd, &qa))
		return -errno;
	if ((r = rt_alloc_slots(rt)))
		return r;
	if ((r = smbd_tokens_new(&token_verbs_ops, rt, rt->has_mw, rt->max_mw, &rt->tokens)))
		return r;
	if ((r = smbd_conn_new(NULL, &rt->params, &conn_ops, rt, &rt->conn)))
		return r;
	if ((r = smbd_conn_start(rt->conn)))
		return r;

	uint8_t resp_res =
	    (uint8_t)(dattr.max_qp_rd_atom < SMBD_RESPONDER_RESOURCES ? dattr.max_qp_rd_atom
	                                                              : SMBD_RESPONDER_RESOURCES);
	uint8_t init_depth =
	    (uint8_t)(dattr.max_qp_init_rd_atom < SMBD_INITIATOR_DEPTH ? dattr.max_qp_init_rd_atom
	                                                               : SMBD_INITIATOR_DEPTH);
	uint32_t ird_ord[2] = {htonl(resp_res), htonl(init_depth)};
	struct rdma_conn_param cp = {
	    .responder_resources = resp_res,
	    .initiator_depth = init_depth,
	    .retry_count = SMBD_CM_RETRY,
	    .rnr_retry_count = SMBD_CM_RNR_RETRY,
	    .flow_control = 0,
	};
	if (rt->iwarp) {
		cp.private_data = ird_ord;
		cp.private_data_len = sizeof(ird_ord);
	}
	if (rdma_connect(rt->id, &cp))
		return -errno;
	if ((r = wait_cm(rt, RDMA_CM_EVENT_ESTABLISHED, deadline)))
		return r;
	return 0;
}

/* Drive negotiation on this thread until CONNECTED or failure. */
static int rt_negotiate(struct rdma_transport *rt, uint64_t deadline)
{
	int r = smbd_conn_established(rt->conn);
	if (r)
		return r;
	for (;;) {
		enum smbd_conn_state s = smbd_conn_state(rt->conn);
		if (s == SMBD_CONNECTED)
			return 0;
		if (s != SMBD_NEGOTIATING)
			return rt->connect_err ? rt->connect_err : -EPROTO;
		uint64_t now = ev_now_ms();
		if (rt->deadline_ms && now >= rt->deadline_ms) {
			rt->deadline_ms = 0;
			smbd_conn_timer_fired(rt->conn);
			continue;
		}
		if (now >= deadline) {
			smbd_conn_fail(rt->conn, -ETIMEDOUT);
			continue;
		}
		uint64_t until = deadline;
		if (rt->deadline_ms && rt->deadline_ms < until)
			until = rt->deadline_ms;
		struct pollfd pfd[2] = {
		    {.fd = rt->comp_ch->fd, .events = POLLIN},
		    {.fd = rt->cm_ch->fd, .events = POLLIN},
		};
		int pr = poll(pfd, 2, remaining_ms(until));
		if (pr < 0 && errno != EINTR) {
			smbd_conn_fail(rt->conn, -errno);
			continue;
		}
		if (pr > 0 && pfd[0].revents)
			rt_comp_ready(rt);
		if (pr > 0 && pfd[1].revents)
			rt_cm_ready(rt);
	}
}

static void copy_sockaddr(struct sockaddr_storage *dst, const struct sockaddr *src)
{
	size_t n = src->sa_family == AF_INET6  ? sizeof(struct sockaddr_in6)
	           : src->sa_family == AF_INET ? sizeof(struct sockaddr_in)
	                                       : 0;
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, n);
}

static int rt_connect(struct smb_transport *t, const struct sockaddr *addr, socklen_t addrlen,
                      unsigned timeout_ms)
{
	struct rdma_transport *rt = to_rt(t);
	uint64_t deadline = ev_now_ms() + timeout_ms;
	struct sockaddr_storage ss;
	uint16_t ports[2];
	int nports = 0, r = -EINVAL;

	if (rt->id || rt->conn || addrlen > sizeof(ss) ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return -EINVAL;
	uint16_t port =
	    ntohs(addr->sa_family == AF_INET ? ((const struct sockaddr_in *)addr)->sin_port
	                                     : ((const struct sockaddr_in6 *)addr)->sin6_port);
	/* 0 or the SMB port: try the iWARP port first, like cifs.ko; else as given. */
	if (port == 0 || port == SMBD_PORT_IB) {
		ports[nports++] = SMBD_PORT_IWARP;
		ports[nports++] = SMBD_PORT_IB;
	} else {
		ports[nports++] = port;
	}
	rt->cm_ch = rdma_create_event_channel();
	if (!rt->cm_ch)
		return errno == ENODEV || errno == ENOENT ? -ENODEV : -errno;
	if ((r = set_nonblock(rt->cm_ch->fd)))
		goto fail;

	for (int i = 0; i < nports; i++) {
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, addr, addrlen);
		if (ss.ss_family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons(ports[i]);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(ports[i]);
		r = rt_try_port(rt, (struct sockaddr *)&ss, deadline);
		if (!r)
			r = rt_negotiate(rt, deadline);
		if (!r)
			break;
		smb_info("smbd: SMB Direct on port %u: %s", ports[i], strerror(-r));
		rt_teardown(rt);
		if (r == -ETIMEDOUT || r == -ENODEV || r == -EADDRNOTAVAIL)
			break; /* another port cannot help */
	}
	if (r)
		goto fail;

	struct smbd_conn_negotiated neg;
	smbd_conn_get_negotiated(rt->conn, &neg);
	rt->info.kind = "rdma";
	rt->info.caps = SMB_TRANSPORT_CAP_RDMA;
	copy_sockaddr(&rt->info.local, rdma_get_local_addr(rt->id));
	copy_sockaddr(&rt->info.remote, rdma_get_peer_addr(rt->id));
	rt->info.max_read_write = neg.max_read_write_size;
	rt->info.max_inline_send = neg.max_fragmented_send_size;
	rt->info.max_inline_recv = rt->params.max_fragmented_recv_size;

	/* Hand over to the loop: from here only the loop thread touches conn. */
	rt->on_loop = true;
	if ((r = ev_fd_add(t->loop, rt->cm_ch->fd, EPOLLIN, rt_on_cm, rt, &rt->cm_evf)) ||
	    (r = ev_fd_add(t->loop, rt->comp_ch->fd, EPOLLIN, rt_on_comp, rt, &rt->comp_evf)) ||
	    (r = ev_call(t->loop, rt_kick, rt))) {
		/* The loop may be running us already: connect() failed, so death
		 * must not be reported; destroy() stops the loop's callbacks. */
		pthread_mutex_lock(&rt->lock);
		rt->dead = true;
		rt->connect_failed = true;
		pthread_mutex_unlock(&rt->lock);
		return r;
	}
	smb_info("smbd: connected over %s (%s)", ibv_get_device_name(rt->id->verbs->device),
	         rt->iwarp ? "iWARP" : "IB/RoCE");
	if (rt->test_io_reg_fail)
		smb_warn("smbd: SMBRDMA_TEST_IO_REG_FAIL is set (a test knob): every per-I/O RDMA "
		         "registration and window bind fails, offloadable I/O goes inline");
	return 0;

fail:
	rt_teardown(rt);
	rdma_destroy_event_channel(rt->cm_ch);
	rt->cm_ch = NULL;
	return r;
}

/* ---- the other transport ops ---- */

static void rt_drain(void *arg)
{
	struct rdma_transport *rt = arg;
	struct smb_txbuf *b;

	pthread_mutex_lock(&rt->lock);
	b = rt->pend_head;
	rt->pend_head = rt->pend_tail = NULL;
	rt->drain_queued = false;
	pthread_mutex_unlock(&rt->lock);
	while (b) {
		struct smb_txbuf *next = b->next;
		smbd_conn_send(rt->conn, b); /* a dead conn completes it with -ECONNABORTED */
		b = next;
	}
	rt_snapshot_stats(rt);
}

static int rt_send(struct smb_transport *t, struct smb_txbuf *buf)
{
	struct rdma_transport *rt = to_rt(t);
	bool wake;

	buf->next = NULL;
	pthread_mutex_lock(&rt->lock);
	if (rt->dead || !rt->on_loop) {
		pthread_mutex_unlock(&rt->lock);
		return -ECONNABORTED;
	}
	if (rt->pend_tail)
		rt->pend_tail->next = buf;
	else
		rt->pend_head = buf;
	rt->pend_tail = buf;
	wake = !rt->drain_queued;
	rt->drain_queued = true;
	pthread_mutex_unlock(&rt->lock);
	if (wake) {
		int r = ev_call(t->loop, rt_drain, rt);
		if (r < 0) {
			/* Nothing will drain the queue: take it back.  Ours is its
			 * head (the queue was empty when we woke); fail the rest. */
			struct smb_txbuf *b;
			pthread_mutex_lock(&rt->lock);
			b = rt->pend_head;
			rt->pend_head = rt->pend_tail = NULL;
			rt->drain_queued = false;
			pthread_mutex_unlock(&rt->lock);
			if (b == buf)
				b = b->next;
			buf->next = NULL;
			complete_list(b, -ECONNABORTED);
			return r;
		}
	}
	return 0;
}

static void rt_shutdown_on_loop(void *arg)
{
	struct rdma_transport *rt = arg;
	if (rt->conn)
		smbd_conn_disconnect(rt->conn);
}

static void rt_shutdown(struct smb_transport *t)
{
	struct rdma_transport *rt = to_rt(t);
	if (rt->on_loop && ev_call(t->loop, rt_shutdown_on_loop, rt) < 0)
		smb_err("smbd: cannot queue shutdown");
}

/* Runs on the loop after every call queued before it: stop all callbacks. */
static void rt_barrier(void *arg)
{
	struct rdma_transport *rt = arg;
	if (rt->cm_evf)
		ev_fd_del(rt->cm_evf);
	if (rt->comp_evf)
		ev_fd_del(rt->comp_evf);
	rt->cm_evf = rt->comp_evf = NULL;
	if (rt->timer)
		ev_timer_cancel(rt->timer);
	rt->timer = NULL;
	/* Tokens put but not finished: the channel is dead (destroy comes
	 * after dead()), so finish them here, on the loop, and schedule no more. */
	pthread_mutex_lock(&rt->lock);
	rt->tokens_stopped = true;
	pthread_mutex_unlock(&rt->lock);
	if (rt->tokens) {
		smbd_tokens_set_dead(rt->tokens);
		smbd_tokens_run_done(rt->tokens);
	}
	pthread_mutex_lock(&rt->barrier_lock);
	rt->barrier_done = true;
	pthread_cond_signal(&rt->barrier_cond);
	pthread_mutex_unlock(&rt->barrier_lock);
}

static void rt_destroy(struct smb_transport *t)
{
	struct rdma_transport *rt = to_rt(t);

	if (rt->on_loop) {
		if (ev_call(t->loop, rt_barrier, rt) == 0) {
			pthread_mutex_lock(&rt->barrier_lock);
			while (!rt->barrier_done)
				pthread_cond_wait(&rt->barrier_cond, &rt->barrier_lock);
			pthread_mutex_unlock(&rt->barrier_lock);
		} else {
			smb_err("smbd: cannot reach the loop; tearing down from here");
			rt_barrier(rt);
		}
	}
	rt_teardown(rt);
	if (rt->cm_ch)
		rdma_destroy_event_channel(rt->cm_ch);
	pthread_cond_destroy(&rt->barrier_cond);
	pthread_mutex_destroy(&rt->barrier_lock);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}

static void rt_info(struct smb_transport *t, struct smb_transport_info *out)
{
	*out = to_rt(t)->info;
}

/* The generic counters of common/transport.h from ours. */
static int rt_get_stats(struct smb_transport *t, struct smb_transport_stats *out)
{
	struct smbd_transport_stats st;
	int rc = smbd_transport_get_stats(t, &st);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->send_credits = st.send_credits;
	out->recv_credits = st.recv_credits;
	out->rdma_read_bytes = st.rdma_read_bytes;
	out->rdma_write_bytes = st.rdma_write_bytes;
	out->mw_bound = st.mw_bound;
	out->mw_invalidated_remote = st.mw_invalidated_remote;
	out->mw_invalidated_local = st.mw_invalidated_local;
	return 0;
}

/* The offload ops of common/transport.h over smbd_offload.h (defined below). */
static void rt_set_dialect(struct smb_transport *t, uint16_t dialect)
{
	smbd_offload_set_dialect(t, dialect);
}

static int rt_region_add(struct smb_transport *t, void *addr, size_t len)
{
	return smbd_mr_cache_add(t, addr, len);
}

static int rt_io_token_get(struct smb_transport *t, void *addr, size_t len, enum smb_io_dir dir,
                           struct smb_io_token **tok, uint8_t desc[16], uint32_t *channel)
{
	return smbd_io_token_get(t, addr, len,
	                         dir == SMB_IO_SERVER_WRITES ? SMBD_ACCESS_REMOTE_WRITE
	                                                     : SMBD_ACCESS_REMOTE_READ,
	                         (struct smbd_io_token **)tok, desc, channel);
}

static void rt_io_token_put(struct smb_transport *t, struct smb_io_token *tok, size_t moved,
                            void (*done)(void *arg), void *arg)
{
	smbd_io_token_set_moved((struct smbd_io_token *)tok, moved);
	smbd_io_token_put(t, (struct smbd_io_token *)tok, done, arg);
}

static const struct smb_transport_ops rdma_ops = {
    .name = "rdma",
    .connect = rt_connect,
    .send = rt_send,
    .shutdown = rt_shutdown,
    .destroy = rt_destroy,
    .info = rt_info,
    .get_stats = rt_get_stats,
    .set_dialect = rt_set_dialect,
    .region_add = rt_region_add,
    .io_token_get = rt_io_token_get,
    .io_token_put = rt_io_token_put,
};

int smb_transport_rdma_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           struct smb_transport **out)
{
	struct rdma_transport *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->base.ops = &rdma_ops;
	rt->base.loop = loop;
	rt->base.up = *up;
	smbd_conn_params_default(&rt->params);
	rt->info.kind = "rdma";
	rt->info.caps = SMB_TRANSPORT_CAP_RDMA;
	const char *knob = getenv("SMBRDMA_TEST_IO_REG_FAIL");
	rt->test_io_reg_fail = knob && *knob && strcmp(knob, "0");
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->barrier_lock, NULL);
	pthread_cond_init(&rt->barrier_cond, NULL);
	*out = &rt->base;
	return 0;
}

/* ---- smbd_offload.h ---- */

int smbd_transport_get_stats(struct smb_transport *t, struct smbd_transport_stats *out)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	pthread_mutex_lock(&rt->lock);
	*out = rt->stats;
	pthread_mutex_unlock(&rt->lock);
	if (rt->tokens && rt->on_loop) {
		struct smbd_token_stats ts;
		smbd_tokens_get_stats(rt->tokens, &ts);
		out->mw_bound = ts.mw_bound;
		out->mw_invalidated_remote = ts.mw_inv_remote;
		out->mw_invalidated_local = ts.mw_inv_local;
		out->mr_per_io = ts.mr_per_io;
		out->binds_failed = ts.binds_failed;
		out->regs_failed = ts.regs_failed;
		out->rdma_read_bytes = ts.rdma_read_bytes;
		out->rdma_write_bytes = ts.rdma_write_bytes;
		out->tokens_active = ts.tokens_active;
	}
	return 0;
}

int smbd_offload_caps(struct smb_transport *t, struct smbd_offload_caps *out)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->conn || !rt->on_loop)
		return -ENOTCONN;
	struct smbd_conn_negotiated neg;
	smbd_conn_get_negotiated(rt->conn, &neg);
	*out = (struct smbd_offload_caps){
	    .max_read_write = neg.max_read_write_size,
	    .max_inline_send = neg.max_fragmented_send_size,
	    .max_inline_recv = rt->params.max_fragmented_recv_size,
	    .max_descs = 1,
	    .remote_invalidate = rt->has_mw,
	};
	return 0;
}

int smbd_offload_set_dialect(struct smb_transport *t, uint16_t dialect)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->tokens || !rt->on_loop)
		return -ENOTCONN;
	smbd_tokens_set_dialect(rt->tokens, dialect);
	return 0;
}

int smbd_mr_cache_add(struct smb_transport *t, void *addr, size_t len)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->tokens || !rt->on_loop)
		return -ENOTCONN;
	return smbd_tokens_region_add(rt->tokens, addr, len);
}

int smbd_mr_cache_remove(struct smb_transport *t, void *addr)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->tokens || !rt->on_loop)
		return -ENOTCONN;
	return smbd_tokens_region_remove(rt->tokens, addr);
}

int smbd_mr_cache_keys(struct smb_transport *t, const void *addr, uint32_t *lkey, uint32_t *rkey)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->tokens || !rt->on_loop)
		return -ENOTCONN;
	if (!smbd_tokens_region_covers(rt->tokens, addr, 1))
		return -ENOENT;
	struct ibv_mr *mr = smbd_tokens_region_mr(rt->tokens, addr);
	*lkey = mr ? mr->lkey : 0;
	*rkey = mr ? mr->rkey : 0;
	return 0;
}

int smbd_io_token_get(struct smb_transport *t, void *buf, size_t len, int access,
                      struct smbd_io_token **tok, uint8_t desc[16], uint32_t *channel)
{
	if (t->ops != &rdma_ops)
		return -EOPNOTSUPP;
	struct rdma_transport *rt = to_rt(t);
	if (!rt->tokens || !rt->on_loop)
		return -ENOTCONN;
	return smbd_tokens_get(rt->tokens, buf, len, access, tok, desc, channel);
}

void smbd_io_token_set_moved(struct smbd_io_token *tok, size_t bytes)
{
	smbd_tokens_set_moved(tok, bytes);
}

void smbd_io_token_put(struct smb_transport *t, struct smbd_io_token *tok, void (*done)(void *arg),
                       void *arg)
{
	if (t->ops != &rdma_ops || !tok)
		return;
	smbd_tokens_put(to_rt(t)->tokens, tok, done, arg);
}
