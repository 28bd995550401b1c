/* smbd/smbd_conn.h — one SMB Direct connection's protocol state, with no verbs.
 *
 * The connection is a sans-I/O machine (like nghttp2's session): the verbs
 * layer (smbd/smbd_transport.c, or a test) feeds it events — a receive
 * completed with these bytes, a send completed, the timer fired, the upper
 * layer wants this SMB2 message sent — and it acts only through the ops
 * table below: post a send, post a receive, set the timer, hand a message
 * up, report death.
 *
 * Threading: single-threaded.  Every smbd_conn_* call for one connection
 * comes from one thread at a time (the event loop's once connected; the
 * connecting thread before that).  Ops are called from inside those calls.
 * The connection never calls an op re-entrantly into itself; an op may call
 * smbd_conn_send() or smbd_conn_disconnect() (they queue and return).
 *
 * Ownership: smbd_conn_send() takes the smb_txbuf; the connection calls
 * buf->done(buf, err) exactly once — 0 after the send completion of its last
 * fragment, -EMSGSIZE/-EINVAL for a message it cannot carry (the connection
 * lives on), -ECONNABORTED when the connection dies first.  Messages handed up
 * through ops->deliver are talloc buffers (NULL parent) the callee owns.
 */
#ifndef SMBRDMA_SMBD_CONN_H
#define SMBRDMA_SMBD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/transport.h"

/* enum starts at the initial state; see the diagram in smbd_conn.c. */
enum smbd_conn_state {
	SMBD_CREATED = 0,
	SMBD_CONNECTING,    /* rdma_cm is connecting; negotiate receive posted */
	SMBD_NEGOTIATING,   /* negotiate request sent, waiting for the response */
	SMBD_CONNECTED,     /* data transfer */
	SMBD_DISCONNECTING, /* we asked to close; waiting for the verbs layer */
	SMBD_DISCONNECTED,  /* closed cleanly; death reported */
	SMBD_ERROR,         /* failed (sticky); death reported */
};
const char *smbd_conn_state_str(enum smbd_conn_state s);

/* Tunables, [MS-SMBD] 3.1.1.1 ("implementation-specific"); defaults from
 * smbd_conn_params_default() are the values real peers use. */
struct smbd_conn_params {
	uint16_t send_credit_target;       /* credits we ask the peer for: 255 */
	uint16_t recv_credit_max;          /* receives we post at most: 255 */
	uint32_t max_send_size;            /* 1364 */
	uint32_t max_receive_size;         /* 1364; our receive buffers are this big */
	uint32_t max_fragmented_recv_size; /* largest message we reassemble: 1 MiB */
	uint32_t max_read_write_size;      /* our cap on RDMA read/write: 8 MiB */
	uint32_t send_slots;               /* sends in flight at most (send WRs): 64 */
	uint32_t negotiate_timeout_ms;     /* 120 s ([MS-SMBD] 3.1.4.1) */
	uint32_t idle_timeout_ms;          /* keepalive interval: 120 s */
	uint32_t keepalive_timeout_ms;     /* wait for a keepalive answer: 5 s */
	uint32_t disconnect_timeout_ms;    /* wait for a clean close: 5 s */
};
void smbd_conn_params_default(struct smbd_conn_params *p);

/* The verbs layer's side.  Every op is required (tests pass fakes). */
struct smbd_conn_ops {
	/* Post one send whose payload is the concatenation of iov[0..iovcnt)
	 * (len bytes, len <= the negotiated max send size).  The iov memory is
	 * valid only during the call: copy it into a registered buffer.  The
	 * connection keeps at most params.send_slots sends posted and expects
	 * one smbd_conn_send_done() per successful post, in posting order.
	 * Returns 0 or -errno (fatal). */
	int (*post_send)(void *arg, const struct iovec *iov, int iovcnt, size_t len);
	/* Post one receive buffer of params.max_receive_size bytes.  Returns 0,
	 * -ENOBUFS when no buffer is free (not fatal: try later), or -errno. */
	int (*post_recv)(void *arg);
	/* (Re)arm the connection's single timer, ms from now; 0 cancels. */
	void (*timer_set)(void *arg, uint64_t ms);
	/* Monotonic milliseconds. */
	uint64_t (*now_ms)(void *arg);
	/* A reassembled SMB2 message: msg is talloc'd (NULL parent), callee owns. */
	void (*deliver)(void *arg, uint8_t *msg, size_t len);
	/* Start a clean disconnect of the RDMA connection (rdma_disconnect).  The
	 * layer answers with smbd_conn_disconnected() when it is done. */
	void (*disconnect)(void *arg);
	/* The connection is dead (err < 0; -ECONNABORTED after our own
	 * disconnect).  Called exactly once, after every txbuf has been
	 * completed.  No op is called after it. */
	void (*dead)(void *arg, int err);
};

struct smbd_conn;

/* Counters for stats; the credit fields are the values now. */
struct smbd_conn_stats {
	uint64_t msgs_sent, msgs_received;
	uint64_t bytes_sent, bytes_received; /* SMB2 payload carried inline */
	uint32_t send_credits;               /* the peer's credits we hold */
	uint32_t recv_credits;               /* our receives the peer may use */
	uint32_t recv_posted;
	uint64_t keepalives_sent;
};

/* Negotiated values, valid once CONNECTED. */
struct smbd_conn_negotiated {
	uint32_t max_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_send_size;
	uint32_t max_read_write_size;
	uint16_t peer_credits_requested;
};

/* Allocates under mem_ctx (talloc).  Returns 0, -EINVAL for params below the
 * spec's floors (receive < 512, send < 128, fragmented < 128 KiB, a zero
 * count), or -ENOMEM. */
int smbd_conn_new(void *mem_ctx, const struct smbd_conn_params *params,
                  const struct smbd_conn_ops *ops, void *arg, struct smbd_conn **out);

/* CREATED -> CONNECTING: arms the negotiate timer and posts the one receive
 * the negotiate response lands in.  Call before rdma_connect(). */
int smbd_conn_start(struct smbd_conn *c);

/* CONNECTING -> NEGOTIATING: the RDMA connection is established; sends the
 * negotiate request.  Returns 0 or -errno (then the connection is dead). */
int smbd_conn_established(struct smbd_conn *c);

/* A receive completed successfully with len bytes at buf.  The connection
 * copies what it keeps: the buffer may be reposted when this returns. */
void smbd_conn_recv(struct smbd_conn *c, const uint8_t *buf, size_t len);

/* The oldest posted send completed (status 0) or failed (-errno, fatal). */
void smbd_conn_send_done(struct smbd_conn *c, int status);

/* A receive failed (other than a flush after death): fatal. */
void smbd_conn_recv_failed(struct smbd_conn *c, int err);

/* The timer set through ops->timer_set fired. */
void smbd_conn_timer_fired(struct smbd_conn *c);

/* Queue an SMB2 message (see ownership above).  Never fails synchronously. */
void smbd_conn_send(struct smbd_conn *c, struct smb_txbuf *buf);

/* Ask for a clean close (from the upper layer).  Death is reported with
 * -ECONNABORTED once the verbs layer says it is down, or the disconnect
 * timer fires. */
void smbd_conn_disconnect(struct smbd_conn *c);

/* The RDMA connection went down (rdma_cm DISCONNECTED, or our disconnect
 * finished).  Outside DISCONNECTING this is a connection loss: -ECONNRESET. */
void smbd_conn_disconnected(struct smbd_conn *c);

/* Any fatal condition the verbs layer sees (device removal, QP error,
 * rdma_cm failure).  Death is reported with err. */
void smbd_conn_fail(struct smbd_conn *c, int err);

enum smbd_conn_state smbd_conn_state(const struct smbd_conn *c);
/* The error the connection died with (0 while alive). */
int smbd_conn_error(const struct smbd_conn *c);
void smbd_conn_get_stats(const struct smbd_conn *c, struct smbd_conn_stats *out);
void smbd_conn_get_negotiated(const struct smbd_conn *c, struct smbd_conn_negotiated *out);

#endif
