/* tests/unit/smbd/peer_rdma.c — the server half of SMB Direct for scripted
 * test peers (peer_rdma.h says what and how). */
#include "peer_rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RXE_VENDOR 0xffffffu
/* rxe reports the kernel's IB_WC_WITH_INVALIDATE (bit 2, userspace's
 * IBV_WC_IP_CSUM_OK) for a Send-with-Invalidate: see smbd_transport.c. */
#define RXE_WC_WITH_INV (1u << 2)

enum { WR_SEND = 1, WR_RDMA = 2, WR_RECV_BASE = 1000 };

struct peer_state P;

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: peer timed out\n";
	if (write(1, m, sizeof(m) - 1) < 0) {
	}
	_exit(1);
}

void peer_alarm(unsigned seconds)
{
	signal(SIGALRM, on_alarm);
	alarm(seconds);
}

uint64_t peer_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int post_recv(uint32_t slot)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(P.recv_mem + (size_t)slot * PEER_MAX_RECV_SIZE),
	                      .length = PEER_MAX_RECV_SIZE,
	                      .lkey = P.recv_mr->lkey};
	struct ibv_recv_wr *bad, wr = {.wr_id = WR_RECV_BASE + slot, .sg_list = &sge, .num_sge = 1};
	int r = ibv_post_recv(P.id->qp, &wr, &bad);
	if (!r)
		P.posted++;
	return r;
}

static void handle_wc(const struct ibv_wc *wc)
{
	if (wc->wr_id >= WR_RECV_BASE) {
		uint32_t slot = (uint32_t)(wc->wr_id - WR_RECV_BASE);
		P.posted--;
		if (P.negotiated && P.client_credits)
			P.client_credits--;
		if (wc->status != IBV_WC_SUCCESS) {
			if (!P.qp_dead)
				P.dead_status = wc->status;
			P.qp_dead = true;
			return;
		}
		/* The client never sends with invalidate; on rxe the flag is bit 2. */
		if (wc->wc_flags & (IBV_WC_WITH_INV | (P.rxe ? RXE_WC_WITH_INV : 0)))
			printf("note: a receive came by Send-with-Invalidate (rkey 0x%08x)\n",
			       wc->invalidated_rkey);
		if (P.qn < PEER_NRECV) {
			struct peer_rx *m = &P.q[(P.qh + P.qn) % PEER_NRECV];
			m->len = wc->byte_len;
			memcpy(m->data, P.recv_mem + (size_t)slot * PEER_MAX_RECV_SIZE,
			       wc->byte_len);
			P.qn++;
		}
		/* Repost at once: the next message we send grants it. */
		post_recv(slot);
		return;
	}
	if (wc->wr_id == P.wc_id) {
		P.wc_seen = true;
		P.wc_status = wc->status;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		if (!P.qp_dead)
			P.dead_status = wc->status;
		P.qp_dead = true;
	}
}

static void poll_cm(void)
{
	struct rdma_cm_event *ev;
	while (rdma_get_cm_event(P.ch, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && ev->id == P.id)
			P.disconnected = true;
		else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT)
			printf("rdma_cm event: %s\n", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
}

/* Poll the CQ and the cm channel once; sleeps ~1 ms when there was nothing. */
void peer_pump_once(void)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(P.cq, 16, wc);
	for (int i = 0; i < n; i++)
		handle_wc(&wc[i]);
	poll_cm();
	if (n <= 0) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Wait for the completion of send-queue WR wr_id; false on timeout. */
static bool wait_wr(uint64_t wr_id, int ms)
{
	uint64_t end = peer_now_ms() + (uint64_t)ms;
	while (!(P.wc_seen && P.wc_id == wr_id) && peer_now_ms() < end)
		peer_pump_once();
	return P.wc_seen && P.wc_id == wr_id;
}

static void expect_wr(uint64_t wr_id)
{
	P.wc_id = wr_id;
	P.wc_seen = false;
}

/* Next received message, or NULL when the QP died, it disconnected, or ms passed. */
struct peer_rx *peer_wait_msg(int ms)
{
	uint64_t end = peer_now_ms() + (uint64_t)ms;
	while (!P.qn && !P.qp_dead && !P.disconnected && peer_now_ms() < end)
		peer_pump_once();
	if (!P.qn)
		return NULL;
	struct peer_rx *m = &P.q[P.qh];
	P.qh = (P.qh + 1) % PEER_NRECV;
	P.qn--;
	return m;
}

static int post_rdma(enum ibv_wr_opcode op, const struct smbd_buffer_desc_v1 *d, uint32_t len)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)P.rdma_mem, .length = len, .lkey = P.rdma_mr->lkey};
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = WR_RDMA,
	                             .sg_list = &sge,
	                             .num_sge = 1,
	                             .opcode = op,
	                             .send_flags = IBV_SEND_SIGNALED,
	                         };
	wr.wr.rdma.remote_addr = d->offset;
	wr.wr.rdma.rkey = d->token;
	expect_wr(WR_RDMA);
	return ibv_post_send(P.id->qp, &wr, &bad);
}

int peer_do_rdma(enum ibv_wr_opcode op, const struct smbd_buffer_desc_v1 *d, uint32_t len)
{
	if (len > d->length || len > PEER_RDMA_BUF_MAX)
		return -2;
	int r = post_rdma(op, d, len);
	if (r) {
		printf("ibv_post_send(%s): %s\n", op == IBV_WR_RDMA_READ ? "read" : "write",
		       strerror(r));
		return -2;
	}
	if (!wait_wr(WR_RDMA, PEER_OP_TIMEOUT_MS))
		return -1;
	return (int)P.wc_status;
}

const char *peer_status_str(int st)
{
	return st == -1   ? "no completion within 10 s"
	       : st == -2 ? "could not post"
	                  : ibv_wc_status_str((enum ibv_wc_status)st);
}

/* One data transfer message: len bytes of payload with remaining bytes to
 * follow in later fragments, granting every receive reposted since the last
 * one.  inv_rkey != 0: Send-with-Invalidate. */
static int send_fragment(const void *payload, size_t len, uint32_t remaining, uint32_t inv_rkey)
{
	uint64_t end = peer_now_ms() + PEER_OP_TIMEOUT_MS;
	while (!P.send_credits && !P.qp_dead && !P.disconnected && peer_now_ms() < end)
		peer_pump_once();
	if (!P.send_credits) {
		printf("no send credit from the client\n");
		return -1;
	}
	if (len + SMBD_DATA_OFFSET > P.client_max_recv)
		return -1;
	struct smbd_data_hdr h = {
	    .credits_requested = PEER_CREDITS_REQUESTED,
	    .credits_granted =
	        (uint16_t)(P.posted > P.client_credits ? P.posted - P.client_credits : 0),
	    .remaining_data_length = remaining,
	    .data_length = (uint32_t)len,
	};
	int hl = smbd_data_hdr_encode(&h, P.send_mem, PEER_MAX_SEND_SIZE);
	if (hl < 0)
		return -1;
	if (len)
		memcpy(P.send_mem + hl, payload, len);
	struct ibv_sge sge = {
	    .addr = (uintptr_t)P.send_mem, .length = (uint32_t)(hl + len), .lkey = P.send_mr->lkey};
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = WR_SEND,
	                             .sg_list = &sge,
	                             .num_sge = 1,
	                             .opcode = inv_rkey ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND,
	                             .send_flags = IBV_SEND_SIGNALED,
	                         };
	if (inv_rkey)
		wr.invalidate_rkey = inv_rkey;
	expect_wr(WR_SEND);
	int r = ibv_post_send(P.id->qp, &wr, &bad);
	if (r) {
		printf("ibv_post_send(send): %s\n", strerror(r));
		return -1;
	}
	P.send_credits--;
	P.client_credits += h.credits_granted;
	if (!wait_wr(WR_SEND, PEER_OP_TIMEOUT_MS) || P.wc_status != IBV_WC_SUCCESS) {
		printf("send: %s\n", P.wc_seen ? ibv_wc_status_str(P.wc_status) : "no completion");
		return -1;
	}
	return 0;
}

int peer_send_msg(const void *payload, size_t len, uint32_t inv_rkey)
{
	return send_fragment(payload, len, 0, inv_rkey);
}

int peer_send_data(const void *payload, size_t len, uint32_t inv_rkey)
{
	size_t room =
	    P.client_max_recv < PEER_MAX_SEND_SIZE ? P.client_max_recv : PEER_MAX_SEND_SIZE;
	room -= SMBD_DATA_OFFSET;
	const uint8_t *p = payload;
	do {
		size_t n = len < room ? len : room;
		len -= n;
		if (send_fragment(p, n, (uint32_t)len, len ? 0 : inv_rkey))
			return -1;
		p += n;
	} while (len);
	return 0;
}

int peer_asm_feed(struct peer_asm *a, const struct peer_rx *m)
{
	struct smbd_data_hdr h;
	if (smbd_data_decode(m->data, m->len, PEER_MAX_FRAGMENTED, &h) < 0) {
		printf("FAIL: bad data transfer message (%u bytes)\n", m->len);
		return -2;
	}
	P.send_credits += h.credits_granted;
	if (!h.data_length) {
		if (a->have) {
			printf("FAIL: an empty fragment inside a message\n");
			return -2;
		}
		if (h.flags & SMBD_FLAG_RESPONSE_REQUESTED && peer_send_msg(NULL, 0, 0))
			return -2;
		return 0;
	}
	if (a->have + h.data_length + h.remaining_data_length > a->cap) {
		printf("FAIL: a %zu-byte message, we take %zu\n",
		       a->have + h.data_length + h.remaining_data_length, a->cap);
		return -2;
	}
	memcpy(a->buf + a->have, m->data + h.data_offset, h.data_length);
	a->have += h.data_length;
	return h.remaining_data_length ? 0 : 1;
}

int peer_next_data(uint8_t *buf, size_t cap, int ms, bool *gone)
{
	uint64_t end = peer_now_ms() + (uint64_t)ms;
	struct peer_asm a = {.buf = buf, .cap = cap};
	*gone = false;
	for (;;) {
		uint64_t now = peer_now_ms();
		struct peer_rx *m = now < end ? peer_wait_msg((int)(end - now)) : NULL;
		if (!m) {
			*gone = P.qp_dead || P.disconnected;
			return -1;
		}
		int r = peer_asm_feed(&a, m);
		if (r < 0)
			return r;
		if (r)
			return (int)a.have;
	}
}

/* ---- set-up ---- */

static struct rdma_cm_event *wait_cm(enum rdma_cm_event_type want, int ms)
{
	uint64_t end = peer_now_ms() + (uint64_t)ms;
	for (;;) {
		struct rdma_cm_event *ev;
		if (rdma_get_cm_event(P.ch, &ev) == 0) {
			if (ev->event == want)
				return ev;
			printf("waiting for %s, got %s (status %d)\n", rdma_event_str(want),
			       rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			return NULL;
		}
		uint64_t now = peer_now_ms();
		if (now >= end)
			return NULL;
		struct pollfd pfd = {.fd = P.ch->fd, .events = POLLIN};
		poll(&pfd, 1, (int)(end - now));
	}
}

static int setup_qp(struct rdma_cm_id *id)
{
	P.pd = ibv_alloc_pd(id->verbs);
	P.cq = P.pd ? ibv_create_cq(id->verbs, 64, NULL, NULL, 0) : NULL;
	if (!P.cq)
		return -1;
	struct ibv_qp_init_attr qa = {
	    .send_cq = P.cq,
	    .recv_cq = P.cq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 16,
	            .max_recv_wr = PEER_NRECV,
	            .max_send_sge = 1,
	            .max_recv_sge = 1},
	};
	if (rdma_create_qp(id, P.pd, &qa)) {
		perror("rdma_create_qp");
		return -1;
	}
	P.qp_made = true;
	if (posix_memalign((void **)&P.recv_mem, 4096, PEER_NRECV * PEER_MAX_RECV_SIZE) ||
	    posix_memalign((void **)&P.send_mem, 4096, 4096) ||
	    posix_memalign((void **)&P.rdma_mem, 4096, PEER_RDMA_BUF_MAX))
		return -1;
	P.recv_mr =
	    ibv_reg_mr(P.pd, P.recv_mem, PEER_NRECV * PEER_MAX_RECV_SIZE, IBV_ACCESS_LOCAL_WRITE);
	P.send_mr = ibv_reg_mr(P.pd, P.send_mem, 4096, 0);
	P.rdma_mr = ibv_reg_mr(P.pd, P.rdma_mem, PEER_RDMA_BUF_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!P.recv_mr || !P.send_mr || !P.rdma_mr) {
		perror("ibv_reg_mr");
		return -1;
	}
	for (uint32_t i = 0; i < PEER_NRECV; i++)
		if (post_recv(i))
			return -1;
	return 0;
}

int peer_accept(void)
{
	struct rdma_cm_event *ev = wait_cm(RDMA_CM_EVENT_CONNECT_REQUEST, 20000);
	if (!ev) {
		printf("FAIL: no connect request\n");
		return -1;
	}
	P.id = ev->id;
	struct rdma_conn_param in = ev->param.conn;
	uint32_t ird = 0, ord = 0;
	bool have_hdr = false;
	struct ibv_device_attr da;
	if (ibv_query_device(P.id->verbs, &da)) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	P.iwarp = P.id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	P.rxe = da.vendor_id == RXE_VENDOR;
	if (P.iwarp && in.private_data && in.private_data_len >= 8) {
		uint32_t h[2];
		memcpy(h, in.private_data, 8);
		ird = ntohl(h[0]);
		ord = ntohl(h[1]);
		have_hdr = true;
	}
	printf("connect request on %s (%s): responder_resources %u initiator_depth %u",
	       ibv_get_device_name(P.id->verbs->device), P.iwarp ? "iWARP" : "IB/RoCE",
	       in.responder_resources, in.initiator_depth);
	if (have_hdr)
		printf(", IRD/ORD header %u/%u", ird, ord);
	printf("\n");
	/* Our RDMA Reads in flight: the client's IRD (rdma_cm hands it over as our
	 * initiator_depth), the device and ksmbd's cap. */
	uint32_t depth = in.initiator_depth ? in.initiator_depth : ird;
	if (depth > (uint32_t)da.max_qp_init_rd_atom)
		depth = (uint32_t)da.max_qp_init_rd_atom;
	if (depth > PEER_INITIATOR_DEPTH)
		depth = PEER_INITIATOR_DEPTH;
	if (!depth)
		depth = 1;
	rdma_ack_cm_event(ev);
	if (setup_qp(P.id)) {
		printf("FAIL: QP set-up\n");
		return -1;
	}
	/* ksmbd answers with responder_resources 0 (it never lets us read it). */
	uint32_t hdr[2] = {htonl(0), htonl(depth)};
	struct rdma_conn_param cp = {
	    .responder_resources = 0,
	    .initiator_depth = (uint8_t)depth,
	    .retry_count = 6,
	    .rnr_retry_count = 0,
	};
	if (P.iwarp) {
		cp.private_data = hdr;
		cp.private_data_len = sizeof(hdr);
	}
	if (rdma_accept(P.id, &cp)) {
		perror("rdma_accept");
		return -1;
	}
	ev = wait_cm(RDMA_CM_EVENT_ESTABLISHED, 10000);
	if (!ev) {
		printf("FAIL: not established\n");
		return -1;
	}
	rdma_ack_cm_event(ev);
	printf("established: initiator depth %u\n", depth);
	return 0;
}

int peer_negotiate(void)
{
	struct peer_rx *m = peer_wait_msg(PEER_OP_TIMEOUT_MS);
	struct smbd_negotiate_req req;
	if (!m || smbd_negotiate_req_decode(m->data, m->len, &req) < 0) {
		printf("FAIL: no valid SMBD negotiate request\n");
		return -1;
	}
	P.client_max_recv = req.max_receive_size;
	uint32_t pss =
	    PEER_MAX_SEND_SIZE < req.max_receive_size ? PEER_MAX_SEND_SIZE : req.max_receive_size;
	uint32_t avail = P.posted > P.client_credits ? P.posted - P.client_credits : 0;
	uint32_t grant = avail < req.credits_requested ? avail : req.credits_requested;
	struct smbd_negotiate_resp resp = {
	    .min_version = SMBD_VERSION_1,
	    .max_version = SMBD_VERSION_1,
	    .negotiated_version = SMBD_VERSION_1,
	    .credits_requested = PEER_CREDITS_REQUESTED,
	    .credits_granted = (uint16_t)grant,
	    .status = 0,
	    .max_read_write_size = PEER_MAX_READ_WRITE,
	    .preferred_send_size = pss,
	    .max_receive_size = PEER_MAX_RECV_SIZE,
	    .max_fragmented_size = PEER_MAX_FRAGMENTED,
	};
	int n = smbd_negotiate_resp_encode(&resp, P.send_mem, 4096);
	struct ibv_sge sge = {
	    .addr = (uintptr_t)P.send_mem, .length = (uint32_t)n, .lkey = P.send_mr->lkey};
	struct ibv_send_wr *bad, wr = {
	                             .wr_id = WR_SEND,
	                             .sg_list = &sge,
	                             .num_sge = 1,
	                             .opcode = IBV_WR_SEND,
	                             .send_flags = IBV_SEND_SIGNALED,
	                         };
	expect_wr(WR_SEND);
	if (n < 0 || ibv_post_send(P.id->qp, &wr, &bad) || !wait_wr(WR_SEND, PEER_OP_TIMEOUT_MS) ||
	    P.wc_status != IBV_WC_SUCCESS) {
		printf("FAIL: cannot send the negotiate response\n");
		return -1;
	}
	P.client_credits += grant;
	P.negotiated = true;
	printf("SMBD negotiated: client credits requested %u, granted %u, client max receive %u, "
	       "max fragmented %u\n",
	       req.credits_requested, grant, req.max_receive_size, req.max_fragmented_size);
	return 0;
}

void peer_teardown(void)
{
	if (P.id) {
		rdma_disconnect(P.id);
		uint64_t end = peer_now_ms() + 2000;
		while (!P.disconnected && peer_now_ms() < end)
			peer_pump_once();
		if (P.qp_made)
			rdma_destroy_qp(P.id);
	}
	if (P.rdma_mr)
		ibv_dereg_mr(P.rdma_mr);
	if (P.send_mr)
		ibv_dereg_mr(P.send_mr);
	if (P.recv_mr)
		ibv_dereg_mr(P.recv_mr);
	if (P.cq)
		ibv_destroy_cq(P.cq);
	if (P.pd)
		ibv_dealloc_pd(P.pd);
	if (P.id)
		rdma_destroy_id(P.id);
	if (P.listen_id)
		rdma_destroy_id(P.listen_id);
	if (P.ch)
		rdma_destroy_event_channel(P.ch);
	free(P.recv_mem);
	free(P.send_mem);
	free(P.rdma_mem);
}

int peer_listen(const char *addr, const char *port_str)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	uint16_t port = (uint16_t)atoi(port_str);
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		printf("FAIL: bad address %s\n", addr);
		return -1;
	}
	P.ch = rdma_create_event_channel();
	if (!P.ch || rdma_create_id(P.ch, &P.listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(P.listen_id, (struct sockaddr *)&ss) || rdma_listen(P.listen_id, 1)) {
		printf("FAIL: cannot listen on %s port %u: %s\n", addr, port, strerror(errno));
		return -1;
	}
	int fl = fcntl(P.ch->fd, F_GETFL);
	fcntl(P.ch->fd, F_SETFL, fl | O_NONBLOCK);
	printf("listening on %s port %u (%s)\n", addr, port,
	       P.listen_id->verbs ? ibv_get_device_name(P.listen_id->verbs->device) : "any device");
	return 0;
}
