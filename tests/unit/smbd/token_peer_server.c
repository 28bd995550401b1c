/* tests/unit/smbd/token_peer_server.c — a hostile SMB Direct peer that tries
 * to reuse an RDMA token after its I/O (the client is test_smbd_token_dead.c;
 * tests/vm/guest/test_smbd_token_dead.py runs both in the test guest).
 *
 * ksmbd cannot be made to RDMA-Read or -Write with a token it already used,
 * so this small librdmacm/ibverbs server speaks just enough [MS-SMBD] to be
 * our transport's peer: it accepts one connection (on iWARP with the 8-byte
 * IRD/ORD private data header SMB Direct peers exchange), answers the SMBD
 * negotiate request with ksmbd's numbers, then takes data transfer messages
 * whose payload is this test's own protocol (struct below; keep the client's
 * copy in sync) and answers with data transfer messages.  Credits: every
 * receive is reposted as soon as it completes, and each message we send
 * grants the client every posted receive it does not hold a credit for.
 *
 *   READ  desc, seed          RDMA Read desc, check the pattern, answer DONE
 *   WRITE desc, seed          RDMA Write the pattern into desc, answer DONE
 *                             (DONE by Send-with-Invalidate of desc's token
 *                             when the request says so: the client's channel
 *                             was RDMA_V1_INVALIDATE; else a plain send)
 *   RETRY_READ  old, new      RDMA Read with the fresh token (must work: the
 *                             buffer is reachable), then with the OLD one:
 *                             that must fail.
 *   RETRY_WRITE old, new      the same with RDMA Writes (patterns seed and
 *                             seed ^ 0xa5); a Write with a dead token may
 *                             complete here before the remote refuses it
 *                             (iWARP Writes are not acknowledged), so the peer
 *                             then sends CHECK and the refusal shows as the
 *                             connection dying; a client that still answers
 *                             (WRITTEN / INTACT) means the old token worked.
 *
 * Verdict on stdout: "old rkey 0x... refused: <why>" and exit 0, or
 * "FAIL: old rkey 0x... still works" (or another FAIL line) and exit 1.  The
 * refused access moves both QPs to the error state: that is expected.  Every
 * wait is bounded (PEER_TIMEOUT_S for the whole run).
 *
 * Usage: token_peer_server ADDR PORT
 */
#include "smbd/smbd_proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PEER_TIMEOUT_S 30
#define OP_TIMEOUT_MS  10000

/* ksmbd's SMB Direct numbers (fs/ksmbd/transport_rdma.c, Linux 6.1). */
#define PEER_CREDITS_REQUESTED 255
#define PEER_MAX_SEND_SIZE     1364
#define PEER_MAX_RECV_SIZE     1364
#define PEER_MAX_FRAGMENTED    (1024 * 1024)
#define PEER_MAX_READ_WRITE    (8 * 1024 * 1024)
#define PEER_INITIATOR_DEPTH   8 /* SMB_DIRECT_CM_INITIATOR_DEPTH */

#define NRECV        32
#define RDMA_BUF_MAX (1u << 20)
#define RXE_VENDOR   0xffffffu
/* rxe reports the kernel's IB_WC_WITH_INVALIDATE (bit 2, userspace's
 * IBV_WC_IP_CSUM_OK) for a Send-with-Invalidate: see smbd_transport.c. */
#define RXE_WC_WITH_INV (1u << 2)

/* ---- the test's protocol (keep in sync with test_smbd_token_dead.c) ---- */
#define TK_MAGIC       "TKD1"
#define TK_REQ_SIZE    44
#define TK_OP_READ     1
#define TK_OP_WRITE    2
#define TK_OP_RETRY_RD 3
#define TK_OP_RETRY_WR 4
#define TK_FLAG_INV    1 /* answer DONE by Send-with-Invalidate of desc's token */

static uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)(i ^ (i >> 8) ^ (i >> 16));
	return (uint8_t)(x * 31u + seed * 17u + 5u);
}

/* ---- state ---- */
struct rx_msg {
	uint8_t data[PEER_MAX_RECV_SIZE];
	uint32_t len;
};

enum { WR_SEND = 1, WR_RDMA = 2, WR_RECV_BASE = 1000 };

static struct {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	bool qp_made, rxe, iwarp;
	uint8_t *recv_mem, *send_mem, *rdma_mem;
	struct ibv_mr *recv_mr, *send_mr, *rdma_mr;
	struct rx_msg q[NRECV];
	int qh, qn;
	/* the last send-queue completion we waited for */
	uint64_t wc_id;
	bool wc_seen;
	enum ibv_wc_status wc_status;
	bool qp_dead, disconnected;
	enum ibv_wc_status dead_status;
	uint32_t send_credits;   /* the client's grants we hold */
	uint32_t posted;         /* our receives posted */
	uint32_t client_credits; /* of those, granted to the client */
	bool negotiated;         /* later receives each spend a client credit */
	uint32_t client_max_recv;
} P;

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "FAIL: peer timed out\n";
	if (write(1, m, sizeof(m) - 1) < 0) {
	}
	_exit(1);
}

static uint64_t now_ms(void)
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
		if (P.qn < NRECV) {
			struct rx_msg *m = &P.q[(P.qh + P.qn) % NRECV];
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
static void pump_once(void)
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
	uint64_t end = now_ms() + (uint64_t)ms;
	while (!(P.wc_seen && P.wc_id == wr_id) && now_ms() < end)
		pump_once();
	return P.wc_seen && P.wc_id == wr_id;
}

static void expect_wr(uint64_t wr_id)
{
	P.wc_id = wr_id;
	P.wc_seen = false;
}

/* Next received message, or NULL when the QP died, it disconnected, or ms passed. */
static struct rx_msg *wait_msg(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (!P.qn && !P.qp_dead && !P.disconnected && now_ms() < end)
		pump_once();
	if (!P.qn)
		return NULL;
	struct rx_msg *m = &P.q[P.qh];
	P.qh = (P.qh + 1) % NRECV;
	P.qn--;
	return m;
}

static int post_rdma(enum ibv_wr_opcode op, const struct smbd_buffer_desc_v1 *d)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)P.rdma_mem, .length = d->length, .lkey = P.rdma_mr->lkey};
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

/* RDMA Read or Write with d; returns the completion status, or -1 (no
 * completion in time) / -2 (could not post). */
static int do_rdma(enum ibv_wr_opcode op, const struct smbd_buffer_desc_v1 *d)
{
	int r = post_rdma(op, d);
	if (r) {
		printf("ibv_post_send(%s): %s\n", op == IBV_WR_RDMA_READ ? "read" : "write",
		       strerror(r));
		return -2;
	}
	if (!wait_wr(WR_RDMA, OP_TIMEOUT_MS))
		return -1;
	return (int)P.wc_status;
}

static const char *status_str(int st)
{
	return st == -1   ? "no completion within 10 s"
	       : st == -2 ? "could not post"
	                  : ibv_wc_status_str((enum ibv_wc_status)st);
}

/* Send one data transfer message (payload may be empty), granting every
 * receive reposted since the last one.  inv_rkey != 0: Send-with-Invalidate. */
static int send_msg(const void *payload, size_t len, uint32_t inv_rkey)
{
	uint64_t end = now_ms() + OP_TIMEOUT_MS;
	while (!P.send_credits && !P.qp_dead && !P.disconnected && now_ms() < end)
		pump_once();
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
	    .data_length = (uint32_t)len,
	};
	int hl = smbd_data_hdr_encode(&h, P.send_mem, PEER_MAX_SEND_SIZE);
	if (hl < 0)
		return -1;
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
	if (!wait_wr(WR_SEND, OP_TIMEOUT_MS) || P.wc_status != IBV_WC_SUCCESS) {
		printf("send: %s\n", P.wc_seen ? ibv_wc_status_str(P.wc_status) : "no completion");
		return -1;
	}
	return 0;
}

static int send_text(const char *s, uint32_t inv_rkey)
{
	return send_msg(s, strlen(s), inv_rkey);
}

/* ---- set-up ---- */

static struct rdma_cm_event *wait_cm(enum rdma_cm_event_type want, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
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
		uint64_t now = now_ms();
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
	    .cap = {.max_send_wr = 16, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
	};
	if (rdma_create_qp(id, P.pd, &qa)) {
		perror("rdma_create_qp");
		return -1;
	}
	P.qp_made = true;
	if (posix_memalign((void **)&P.recv_mem, 4096, NRECV * PEER_MAX_RECV_SIZE) ||
	    posix_memalign((void **)&P.send_mem, 4096, 4096) ||
	    posix_memalign((void **)&P.rdma_mem, 4096, RDMA_BUF_MAX))
		return -1;
	P.recv_mr =
	    ibv_reg_mr(P.pd, P.recv_mem, NRECV * PEER_MAX_RECV_SIZE, IBV_ACCESS_LOCAL_WRITE);
	P.send_mr = ibv_reg_mr(P.pd, P.send_mem, 4096, 0);
	P.rdma_mr = ibv_reg_mr(P.pd, P.rdma_mem, RDMA_BUF_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!P.recv_mr || !P.send_mr || !P.rdma_mr) {
		perror("ibv_reg_mr");
		return -1;
	}
	for (uint32_t i = 0; i < NRECV; i++)
		if (post_recv(i))
			return -1;
	return 0;
}

static int accept_one(void)
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

static int negotiate(void)
{
	struct rx_msg *m = wait_msg(OP_TIMEOUT_MS);
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
	if (n < 0 || ibv_post_send(P.id->qp, &wr, &bad) || !wait_wr(WR_SEND, OP_TIMEOUT_MS) ||
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

/* Next request of the test's protocol (empty messages only carry credits). */
static int next_request(uint8_t *req, int ms, bool *conn_gone)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	*conn_gone = false;
	for (;;) {
		uint64_t now = now_ms();
		struct rx_msg *m = now < end ? wait_msg((int)(end - now)) : NULL;
		if (!m) {
			*conn_gone = P.qp_dead || P.disconnected;
			return -1;
		}
		struct smbd_data_hdr h;
		if (smbd_data_decode(m->data, m->len, PEER_MAX_FRAGMENTED, &h) < 0 ||
		    h.remaining_data_length) {
			printf("FAIL: bad data transfer message (%u bytes)\n", m->len);
			return -2;
		}
		P.send_credits += h.credits_granted;
		if (!h.data_length) {
			if (h.flags & SMBD_FLAG_RESPONSE_REQUESTED && send_msg(NULL, 0, 0))
				return -2;
			continue;
		}
		if (h.data_length < TK_REQ_SIZE || memcmp(m->data + h.data_offset, TK_MAGIC, 4)) {
			/* A text answer (WRITTEN / INTACT) to our CHECK. */
			size_t n = h.data_length < 63 ? h.data_length : 63;
			memcpy(req, m->data + h.data_offset, n);
			req[n] = 0;
			return 1;
		}
		memcpy(req, m->data + h.data_offset, TK_REQ_SIZE);
		return 0;
	}
}

static bool check_pattern(uint32_t seed, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (P.rdma_mem[i] != pattern(seed, i))
			return false;
	return true;
}

static void fill_pattern(uint32_t seed, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		P.rdma_mem[i] = pattern(seed, i);
}

static int decode_desc(const uint8_t *b, struct smbd_buffer_desc_v1 *d)
{
	size_t n = 0;
	if (smbd_buffer_desc_v1_decode(b, 16, d, 1, &n) != 16 || n != 1 || !d->length ||
	    d->length > RDMA_BUF_MAX)
		return -1;
	return 0;
}

/* READ or WRITE: one I/O with a live token, answered DONE. */
static int serve_io(uint8_t op, uint8_t flags, uint32_t seed, const struct smbd_buffer_desc_v1 *d)
{
	const char *what = op == TK_OP_READ ? "read" : "write";
	int st;
	if (op == TK_OP_READ) {
		memset(P.rdma_mem, 0, d->length);
		st = do_rdma(IBV_WR_RDMA_READ, d);
	} else {
		fill_pattern(seed, d->length);
		st = do_rdma(IBV_WR_RDMA_WRITE, d);
	}
	if (st != IBV_WC_SUCCESS) {
		printf("FAIL: RDMA %s of %u B with live rkey 0x%08x: %s\n", what, d->length,
		       d->token, status_str(st));
		return -1;
	}
	if (op == TK_OP_READ && !check_pattern(seed, d->length)) {
		printf("FAIL: RDMA read with rkey 0x%08x: wrong data\n", d->token);
		send_text("ERR wrong data", 0);
		return -1;
	}
	printf("RDMA %s of %u B with rkey 0x%08x at 0x%llx: ok%s\n", what, d->length, d->token,
	       (unsigned long long)d->offset, op == TK_OP_READ ? ", pattern checked" : "");
	bool inv = flags & TK_FLAG_INV;
	if (send_text("DONE", inv ? d->token : 0))
		return -1;
	if (inv)
		printf("answered DONE by Send-with-Invalidate of rkey 0x%08x\n", d->token);
	else
		printf("answered DONE by plain send (the client invalidates)\n");
	return 0;
}

/* RETRY_READ / RETRY_WRITE: 0 when the old token was refused, 1 when it worked. */
static int serve_retry(uint8_t op, uint32_t seed, const struct smbd_buffer_desc_v1 *old,
                       const struct smbd_buffer_desc_v1 *fresh)
{
	bool rd = op == TK_OP_RETRY_RD;
	const char *what = rd ? "read" : "write";
	printf("retry (%s): old rkey 0x%08x, fresh rkey 0x%08x over 0x%llx+%u\n", what, old->token,
	       fresh->token, (unsigned long long)fresh->offset, fresh->length);
	if (old->offset != fresh->offset || old->length != fresh->length) {
		printf("FAIL: the fresh token is not over the same buffer\n");
		return -1;
	}
	/* 1. The fresh token works: the buffer is there, the connection alive. */
	int st;
	if (rd) {
		memset(P.rdma_mem, 0, fresh->length);
		st = do_rdma(IBV_WR_RDMA_READ, fresh);
	} else {
		fill_pattern(seed, fresh->length);
		st = do_rdma(IBV_WR_RDMA_WRITE, fresh);
	}
	if (st != IBV_WC_SUCCESS || (rd && !check_pattern(seed, fresh->length))) {
		printf("FAIL: RDMA %s with the fresh rkey 0x%08x: %s\n", what, fresh->token,
		       st == IBV_WC_SUCCESS ? "wrong data" : status_str(st));
		return -1;
	}
	printf("fresh rkey 0x%08x: RDMA %s of %u B ok\n", fresh->token, what, fresh->length);

	/* 2. The old token must not. */
	if (rd) {
		memset(P.rdma_mem, 0, old->length);
		st = do_rdma(IBV_WR_RDMA_READ, old);
	} else {
		fill_pattern(seed ^ 0xa5, old->length);
		st = do_rdma(IBV_WR_RDMA_WRITE, old);
	}
	if (st == -1 || st == -2) {
		printf("FAIL: old rkey 0x%08x: %s\n", old->token, status_str(st));
		return -1;
	}
	if (st != IBV_WC_SUCCESS) {
		printf("old rkey 0x%08x refused: %s (wc status %d)\n", old->token, status_str(st),
		       st);
		return 0;
	}
	if (rd) {
		printf("FAIL: old rkey 0x%08x still works: read %u B%s\n", old->token, old->length,
		       check_pattern(seed, old->length) ? ", the buffer's data" : "");
		send_text("FAIL old rkey still works", 0);
		return 1;
	}
	/* A Write completed: on iWARP that only means it left.  Ask the client. */
	printf("old rkey 0x%08x: RDMA write completed locally; asking the client\n", old->token);
	if (send_text("CHECK", 0)) {
		printf("old rkey 0x%08x refused: the connection died after the write (%s%s)\n",
		       old->token, P.qp_dead ? ibv_wc_status_str(P.dead_status) : "",
		       P.disconnected ? ", disconnected" : "");
		return 0;
	}
	uint8_t ans[64];
	bool gone;
	int r = next_request(ans, OP_TIMEOUT_MS, &gone);
	if (r < 0 && gone) {
		printf("old rkey 0x%08x refused: the client's QP terminated the connection "
		       "(%s%s)\n",
		       old->token, P.qp_dead ? ibv_wc_status_str(P.dead_status) : "",
		       P.disconnected ? ", disconnected" : "");
		return 0;
	}
	if (r == 1) {
		printf("FAIL: old rkey 0x%08x still works: the client answers %s\n", old->token,
		       (char *)ans);
		return 1;
	}
	printf("FAIL: old rkey 0x%08x: no verdict (%s)\n", old->token,
	       r < 0 ? "timeout" : "unexpected request");
	return -1;
}

static int serve(void)
{
	for (;;) {
		uint8_t req[64];
		bool gone;
		int r = next_request(req, 20000, &gone);
		if (r < 0) {
			printf("FAIL: %s before the retry\n",
			       gone ? "the connection died" : "no request");
			return 1;
		}
		if (r == 1) {
			printf("FAIL: unexpected message '%s'\n", (char *)req);
			return 1;
		}
		uint8_t op = req[4], flags = req[5];
		uint32_t seed = (uint32_t)req[8] | (uint32_t)req[9] << 8 | (uint32_t)req[10] << 16 |
		                (uint32_t)req[11] << 24;
		struct smbd_buffer_desc_v1 d, d2;
		if (decode_desc(req + 12, &d)) {
			printf("FAIL: bad descriptor\n");
			return 1;
		}
		switch (op) {
		case TK_OP_READ:
		case TK_OP_WRITE:
			if (serve_io(op, flags, seed, &d))
				return 1;
			break;
		case TK_OP_RETRY_RD:
		case TK_OP_RETRY_WR:
			if (decode_desc(req + 28, &d2)) {
				printf("FAIL: bad fresh descriptor\n");
				return 1;
			}
			return serve_retry(op, seed, &d, &d2) ? 1 : 0;
		default:
			printf("FAIL: unknown op %u\n", op);
			return 1;
		}
	}
}

static void teardown(void)
{
	if (P.id) {
		rdma_disconnect(P.id);
		uint64_t end = now_ms() + 2000;
		while (!P.disconnected && now_ms() < end)
			pump_once();
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

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(PEER_TIMEOUT_S);

	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	uint16_t port = (uint16_t)atoi(argv[2]);
	if (inet_pton(AF_INET, argv[1], &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, argv[1], &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	} else {
		fprintf(stderr, "bad address %s\n", argv[1]);
		return 2;
	}
	P.ch = rdma_create_event_channel();
	if (!P.ch || rdma_create_id(P.ch, &P.listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(P.listen_id, (struct sockaddr *)&ss) || rdma_listen(P.listen_id, 1)) {
		printf("FAIL: cannot listen on %s port %u: %s\n", argv[1], port, strerror(errno));
		teardown();
		return 1;
	}
	int fl = fcntl(P.ch->fd, F_GETFL);
	fcntl(P.ch->fd, F_SETFL, fl | O_NONBLOCK);
	printf("listening on %s port %u (%s)\n", argv[1], port,
	       P.listen_id->verbs ? ibv_get_device_name(P.listen_id->verbs->device) : "any device");

	int rc = 1;
	if (accept_one() == 0 && negotiate() == 0)
		rc = serve();
	if (P.qp_dead)
		printf("peer QP in error (%s): expected after a refused access\n",
		       ibv_wc_status_str(P.dead_status));
	teardown();
	printf("peer exit %d\n", rc);
	return rc;
}
