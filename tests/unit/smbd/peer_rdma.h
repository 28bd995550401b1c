/* tests/unit/smbd/peer_rdma.h — the server half of SMB Direct for scripted
 * test peers (token_peer_server.c, relay_peer_server.c), run in the test
 * guest against our transport.
 *
 * Just enough [MS-SMBD] to be our transport's peer: listen, accept one
 * connection (on iWARP with the 8-byte IRD/ORD private data SMB Direct peers
 * exchange), answer the negotiate request with ksmbd's numbers, then data
 * transfer messages both ways (fragmented and reassembled) and RDMA Reads and
 * Writes against the client's buffer descriptors.  Credits: every receive is
 * reposted as soon as it completes, and each message we send grants the
 * client every posted receive it does not hold a credit for.
 *
 * One connection per process, one thread: the state is the global P.  Every
 * wait is bounded (PEER_OP_TIMEOUT_MS per operation); peer_alarm() bounds the
 * whole run.  Functions return 0 (or a length) on success, a negative value
 * on failure, having printed why on stdout.
 */
#ifndef SMBRDMA_TESTS_PEER_RDMA_H
#define SMBRDMA_TESTS_PEER_RDMA_H

#include "smbd/smbd_proto.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_OP_TIMEOUT_MS 10000

/* ksmbd's SMB Direct numbers (fs/ksmbd/transport_rdma.c, Linux 6.1). */
#define PEER_CREDITS_REQUESTED 255
#define PEER_MAX_SEND_SIZE     1364
#define PEER_MAX_RECV_SIZE     1364
#define PEER_MAX_FRAGMENTED    (1024 * 1024)
#define PEER_MAX_READ_WRITE    (8 * 1024 * 1024)
#define PEER_INITIATOR_DEPTH   8 /* SMB_DIRECT_CM_INITIATOR_DEPTH */

#define PEER_NRECV        32
#define PEER_RDMA_BUF_MAX (1u << 20) /* P.rdma_mem: what one RDMA Read/Write moves */

struct peer_rx {
	uint8_t data[PEER_MAX_RECV_SIZE];
	uint32_t len;
};

struct peer_state {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	bool qp_made, rxe, iwarp;
	uint8_t *recv_mem, *send_mem, *rdma_mem;
	struct ibv_mr *recv_mr, *send_mr, *rdma_mr;
	struct peer_rx q[PEER_NRECV];
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
};
extern struct peer_state P;

/* Exit 1 with "FAIL: peer timed out" after seconds. */
void peer_alarm(unsigned seconds);
uint64_t peer_now_ms(void);
/* Poll the CQ and the cm channel once; sleeps ~1 ms when there was nothing. */
void peer_pump_once(void);
/* Next received message, or NULL when the QP died, it disconnected, or ms passed. */
struct peer_rx *peer_wait_msg(int ms);

/* Listen on ADDR PORT (strings from argv), print "listening on ...". */
int peer_listen(const char *addr, const char *port);
/* Accept one connection and answer its SMB Direct negotiate request. */
int peer_accept(void);
int peer_negotiate(void);
/* Disconnect (waiting up to 2 s) and free everything. */
void peer_teardown(void);

/* Send one data transfer message carrying payload whole (no fragmentation;
 * len 0: credits only).  inv_rkey != 0: Send-with-Invalidate. */
int peer_send_msg(const void *payload, size_t len, uint32_t inv_rkey);
/* Send payload as an SMB Direct message, fragmented to the client's receive
 * size; the last fragment by Send-with-Invalidate of inv_rkey when not 0. */
int peer_send_data(const void *payload, size_t len, uint32_t inv_rkey);
/* One client message being reassembled into buf (cap bytes at most). */
struct peer_asm {
	uint8_t *buf;
	size_t cap, have;
};
/* Take one received message: 1 when a whole message is in a->buf (a->have
 * bytes; reset have before the next), 0 when more is to come or it carried
 * credits only (answered if it asked), -2 when the client broke a rule. */
int peer_asm_feed(struct peer_asm *a, const struct peer_rx *m);
/* The next whole message from the client (fragments reassembled into buf,
 * cap bytes at most; credit-only messages taken and answered as they ask).
 * Its length; -1 when none came within ms (*gone: because the connection
 * died), -2 when the client broke a rule (printed). */
int peer_next_data(uint8_t *buf, size_t cap, int ms, bool *gone);

/* RDMA Read (the client's bytes into P.rdma_mem) or Write (P.rdma_mem's
 * first len bytes to the client) against d; len <= d->length.  Returns the
 * completion status, or -1 (no completion in time) / -2 (could not post). */
int peer_do_rdma(enum ibv_wr_opcode op, const struct smbd_buffer_desc_v1 *d, uint32_t len);
const char *peer_status_str(int st);

#endif
