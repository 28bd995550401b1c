/* common/transport.h — what a channel's byte mover looks like to client/.
 *
 * It sits in common/ so that smbd/, which implements it for SMB Direct, needs
 * nothing from client/ (docs/ARCHITECTURE.md, the layer table).
 *
 * A transport carries whole SMB2 messages (one PDU or one compound chain, or
 * one SMB2 TRANSFORM message) between us and one server address.  Direct TCP
 * (client/transport_tcp.c), QUIC (client/transport_quic.c) and SMB Direct
 * (smbd/) implement the same ops; no
 * code above this header may ask which one it has: it asks the transport what
 * it can do (caps) and calls the op, which returns -EOPNOTSUPP if it lacks it.
 *
 * Rules for implementers
 *  - Every op has a default (transport_default_*) that returns -EOPNOTSUPP, so
 *    callers never test a pointer for NULL: fill unused ops with the defaults.
 *  - connect() is synchronous (it may block up to timeout_ms); it is called
 *    once, on a thread that is not the event loop's, before any send().  After
 *    it returns 0 the transport registers its fds with the loop it was given.
 *  - send() may be called from any thread, concurrently; it must not block.  It
 *    takes ownership of @buf: when the bytes are on the wire (or the transport
 *    has failed) it calls buf->done(buf, err) exactly once, from any thread,
 *    possibly before send() returns.  Messages go out in the order send() was
 *    entered (callers serialise sends whose order matters).  Returns 0, or
 *    -errno if the transport is already dead (then done() has NOT been called,
 *    and the caller still owns buf).
 *  - Received messages are delivered on the loop thread, in order, through
 *    up->recv(up->arg, msg, len).  @msg is a talloc context that the callee now
 *    owns (talloc_free or talloc_steal it); len is the SMB2 message length.
 *  - A stream transport may receive part of a message in place (see struct
 *    smb_rx_place): then msg holds only the bytes before the placed part.
 *  - The transport reports its death exactly once through up->dead(up->arg, err),
 *    on the loop thread, after which it delivers nothing more; sends fail with
 *    -ECONNABORTED.  shutdown() starts that from outside (the report still comes).
 *  - destroy() frees everything; it is called once, off the loop thread, after
 *    dead() has been reported (or if connect() failed), never concurrently
 *    with another op.
 */
#ifndef SMBRDMA_COMMON_TRANSPORT_H
#define SMBRDMA_COMMON_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct ev_loop;
struct smb_transport;

/* An outgoing message: up to SMB_TXBUF_MAX_IOV pieces, sent back to back. */
#define SMB_TXBUF_MAX_IOV 8
struct smb_txbuf {
	struct iovec iov[SMB_TXBUF_MAX_IOV];
	int iovcnt;
	size_t len; /* sum of iov lengths */
	void (*done)(struct smb_txbuf *buf, int err);
	void *arg;              /* the sender's */
	struct smb_txbuf *next; /* the transport's, while it holds buf */
};

/* Receiving a READ payload in place (stream transports; optional).
 *
 * Once the first SMB_RX_PLACE_HEAD bytes of a message of msg_len bytes are
 * in, the transport may call up->place(arg, head, msg_len).  The owner
 * returns NULL (receive it whole, as usual) or a struct it owns saying that
 * the message's tail [off, msg_len) is to be received straight into buf
 * (off >= SMB_RX_PLACE_HEAD).  The transport then delivers the message
 * through up->recv() with only its first off bytes in msg (len = off).
 *  - Until that recv() (or dead()), the struct stays valid and the owner may
 *    set buf to NULL at any time on the loop thread: the lender wants its
 *    buffer back (its request timed out or failed).  The transport reads buf
 *    before every receive into it and, once NULL, drops the rest of the tail.
 *    As the transport receives on the loop thread only, no receive into buf
 *    is in flight while the owner revokes it there.
 *  - Tail bytes the transport had already read into its own buffers are
 *    copied into buf and counted in copied.
 * up->placing(arg) (optional) says the owner expects messages it will place:
 * the transport then reads no further ahead than a message's first
 * SMB_RX_PLACE_HEAD bytes, so a tail never lands anywhere but buf. */
#define SMB_RX_PLACE_HEAD 80 /* SMB2 header + READ response up to its Buffer */
struct smb_rx_place {
	uint8_t *buf;  /* NULL: revoked, drop the tail */
	size_t off;    /* the tail starts here in the message */
	size_t copied; /* tail bytes copied from the transport's buffers */
};

/* Upcalls from a transport to its owner (a channel in client/). */
struct smb_transport_up {
	void (*recv)(void *arg, uint8_t *msg, size_t len);
	void (*dead)(void *arg, int err);
	struct smb_rx_place *(*place)(void *arg, const uint8_t *head, size_t msg_len);
	bool (*placing)(void *arg);
	void *arg;
	/* An fd (the owner's) that becomes readable to abandon a connect()
	 * still in progress: it fails with -ECANCELED (an unmount must not wait
	 * out a connect timeout).  -1: none; every owner sets it.  TCP honours
	 * it; QUIC takes its own in smb_quic_params. */
	int cancel_fd;
};

enum smb_transport_cap {
	SMB_TRANSPORT_CAP_RDMA = 1u << 0, /* READ/WRITE may carry descriptors (offload ops) */
};

struct smb_transport_info {
	const char *kind; /* "tcp", "quic", "rdma" */
	uint32_t caps;    /* enum smb_transport_cap */
	struct sockaddr_storage local, remote;
	uint32_t max_read_write; /* 0 = no transport limit */
	/* Largest whole SMB2 message the transport carries each way (0 = no
	 * limit): READ/WRITE not offloaded must fit, headers included. */
	uint32_t max_inline_send;
	uint32_t max_inline_recv;
};

/* Counters a transport may keep beyond what the channel counts itself. */
struct smb_transport_stats {
	uint64_t rdma_read_bytes;  /* payload the server pulled from us by RDMA Read */
	uint64_t rdma_write_bytes; /* payload the server pushed to us by RDMA Write */
	uint32_t send_credits;     /* transport-level credits we hold now */
	uint32_t recv_credits;     /* receive credits granted to the peer */
	uint64_t mw_bound, mw_invalidated_remote, mw_invalidated_local;
};

/* RDMA offload of one READ/WRITE payload ([MS-SMB2] 2.2.19/2.2.21 Channel):
 * a token names [addr, addr+len) to the server for this one I/O only. */
struct smb_io_token;
enum smb_io_dir {
	SMB_IO_SERVER_WRITES = 1, /* SMB2 READ: the server RDMA-Writes into the buffer */
	SMB_IO_SERVER_READS = 2,  /* SMB2 WRITE: the server RDMA-Reads from the buffer */
};

/* An RDMA registration of a caller's buffer. */

struct smb_transport_ops {
	const char *name;
	int (*connect)(struct smb_transport *t, const struct sockaddr *addr, socklen_t addrlen,
	               unsigned timeout_ms);
	int (*send)(struct smb_transport *t, struct smb_txbuf *buf);
	void (*shutdown)(struct smb_transport *t);
	void (*destroy)(struct smb_transport *t);
	void (*info)(struct smb_transport *t, struct smb_transport_info *out);
	/* Optional counters; any thread; the default returns -EOPNOTSUPP. */
	int (*get_stats)(struct smb_transport *t, struct smb_transport_stats *out);
	/* Offload (transports with SMB_TRANSPORT_CAP_RDMA; defaults -EOPNOTSUPP).
	 * region_add: register a long-lived buffer once (the registration cache);
	 *   tokens may then be had for ranges inside it.  Not on the loop thread.
	 * io_token_get: any thread, non-blocking: fills one 16-byte Buffer
	 *   Descriptor V1 and the Channel value for the request (RDMA_V1_INVALIDATE
	 *   where the server can invalidate the token, else RDMA_V1).
	 * io_token_put: loop thread, after the I/O's response (or failure);
	 *   moved = payload bytes the I/O moved by RDMA.  done(arg) runs later on
	 *   the loop thread, once the server can no longer reach the memory: only
	 *   then may the buffer be reused or handed on. */
	/* The SMB2 dialect negotiated on this channel (some transports choose
	 * differently by dialect, e.g. RDMA_V1_INVALIDATE needs 3.0.2); default:
	 * nothing. */
	void (*set_dialect)(struct smb_transport *t, uint16_t dialect);
	int (*region_add)(struct smb_transport *t, void *addr, size_t len);
	int (*io_token_get)(struct smb_transport *t, void *addr, size_t len, enum smb_io_dir dir,
	                    struct smb_io_token **tok, uint8_t desc[16], uint32_t *channel);
	void (*io_token_put)(struct smb_transport *t, struct smb_io_token *tok, size_t moved,
	                     void (*done)(void *arg), void *arg);
};

/* The base every implementation embeds first (container_of to get back). */
struct smb_transport {
	const struct smb_transport_ops *ops;
	struct ev_loop *loop;
	struct smb_transport_up up;
};

int transport_default_connect(struct smb_transport *t, const struct sockaddr *addr,
                              socklen_t addrlen, unsigned timeout_ms);
int transport_default_send(struct smb_transport *t, struct smb_txbuf *buf);
void transport_default_shutdown(struct smb_transport *t);
int transport_default_get_stats(struct smb_transport *t, struct smb_transport_stats *out);
void transport_default_set_dialect(struct smb_transport *t, uint16_t dialect);
int transport_default_region_add(struct smb_transport *t, void *addr, size_t len);
int transport_default_io_token_get(struct smb_transport *t, void *addr, size_t len,
                                   enum smb_io_dir dir, struct smb_io_token **tok, uint8_t desc[16],
                                   uint32_t *channel);
/* Never called for a transport whose io_token_get fails; calls done at once. */
void transport_default_io_token_put(struct smb_transport *t, struct smb_io_token *tok, size_t moved,
                                    void (*done)(void *arg), void *arg);

/* Constructors: allocate an unconnected transport bound to loop and up.
 * Declared here, defined in the layers that implement them (client/, smbd/);
 * only client/conn.c calls them. */
int smb_transport_tcp_new(struct ev_loop *loop, const struct smb_transport_up *up,
                          struct smb_transport **out);
/* smbd/smbd_transport.c; returns -EOPNOTSUPP when built without rdma. */
int smb_transport_rdma_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           struct smb_transport **out);

static inline int smb_transport_connect(struct smb_transport *t, const struct sockaddr *a,
                                        socklen_t l, unsigned timeout_ms)
{
	return t->ops->connect(t, a, l, timeout_ms);
}
static inline int smb_transport_send(struct smb_transport *t, struct smb_txbuf *b)
{
	return t->ops->send(t, b);
}
static inline void smb_transport_shutdown(struct smb_transport *t)
{
	t->ops->shutdown(t);
}
static inline void smb_transport_destroy(struct smb_transport *t)
{
	t->ops->destroy(t);
}

#endif
