/* smbd/smbd_offload.h — what an SMB Direct transport offers the SMB2 layer
 * for RDMA offload of READ/WRITE payloads, beyond common/transport.h.
 *
 * client/ never includes this header: it reaches these calls through the
 * offload ops of struct smb_transport_ops (region_add, io_token_get,
 * io_token_put, ...; common/transport.h), which smbd/smbd_transport.c fills
 * from the functions below and every other transport leaves at their
 * -EOPNOTSUPP defaults.  The SMB Direct unit tests call them directly.
 *
 * No standing exposure ([RFC 5042] 5.1.3): nothing this transport registers
 * for the connection's life carries remote access.  The receive and send
 * slots are local; a cached region (smbd_mr_cache_add: the client's offload
 * pool, the FUSE request buffers, a library caller's buffers) is registered
 * with local write and window binding only (IBV_ACCESS_LOCAL_WRITE |
 * IBV_ACCESS_MW_BIND), so its own rkey opens nothing; on a device without
 * memory windows (siw) it is not registered at all (siw on Linux 6.1 serves
 * a peer's RDMA Read from any valid STag without checking its remote-read
 * right).  A server reaches our memory only
 * through a per-I/O token (below): exactly the I/O's bytes, with exactly the
 * access the I/O needs (IBV_ACCESS_REMOTE_WRITE for an SMB2 READ,
 * IBV_ACCESS_REMOTE_READ for an SMB2 WRITE), from smbd_io_token_get() until
 * the token is invalidated (window) or deregistered (per-I/O MR), which
 * happens before the I/O's buffer is handed back (done callback of put()).
 *
 *  - smbd_offload_caps() says how big an offloaded I/O may be and how big an
 *    inline message may be.  Note info()'s max_read_write is the negotiated
 *    MaxReadWriteSize, the limit of an *offloaded* READ/WRITE; an inline
 *    READ/WRITE must fit max_inline_recv/max_inline_send (whole SMB2 message,
 *    header included).
 *  - smbd_transport_get_stats() for smbrdmactl stats.
 *
 * Per-I/O tokens (implemented; smbd/smbd_token.c is the engine):
 *
 *   Setup, once per channel after connect() (any thread):
 *     smbd_offload_set_dialect(t, dialect)   after SMB2 NEGOTIATE; default 3.0
 *     smbd_mr_cache_add(t, buf, len)          for each long-lived buffer
 *   Per READ (server writes into buf) or WRITE (server reads buf), any thread:
 *     smbd_io_token_get(t, buf, len, SMBD_ACCESS_REMOTE_WRITE or _READ,
 *                       &tok, desc, &channel)
 *     -> put desc (16 bytes) in the request's channel info, channel in Channel;
 *        then send the request (after get returned: the bind is already on the
 *        send queue ahead of it).
 *   In the response callback (loop thread), or on any failure of the request:
 *     smbd_io_token_set_moved(tok, bytes)     what the server actually moved
 *     smbd_io_token_put(t, tok, done, arg)
 *     done(arg) later, on the loop thread: only then reply/reuse the buffer.
 *
 * What the token is:
 *   1. buf inside a cached region and the device has type-2 memory windows
 *      (rxe): a pooled window bound over just [buf, buf+len) with a fresh
 *      rkey (ibv_inc_rkey); channel RDMA_V1_INVALIDATE for dialect >= 3.0.2,
 *      else RDMA_V1.  The server's Send-with-Invalidate kills it; otherwise
 *      put() posts IBV_WR_LOCAL_INV and done runs after that completes.
 *   2. otherwise (siw; a buffer not in the cache; window pool exhausted; the
 *      bind could not be posted): a per-I/O ibv_reg_mr of exactly
 *      [buf, buf+len), channel RDMA_V1; put() deregisters it.
 *   3. if that registration fails too, get() fails (-ENOMEM or the verbs
 *      error): the caller sends the I/O inline, as an ordinary SMB Direct
 *      data message (split to fit).  The region's own key is never offered.
 *
 * Test knob: SMBRDMA_TEST_IO_REG_FAIL=1 in the environment of the process
 * that creates the transport makes every per-I/O registration and window
 * bind fail (-ENOMEM), so every offloadable I/O goes inline.  It exists for
 * tests/vm/guest/test_smbrdma_inline_fallback.py; it is logged as a warning
 * at connect and can only take offload away, never grant access.
 *
 * Rules:
 *  - Ownership: the token belongs to the transport; the caller holds it from
 *    get() to put() and must put every token it got, exactly once, before
 *    destroy().  The caller's buffer must stay valid until done(arg) ran.
 *  - Threads: get(), set_moved(), mr_cache_add/remove, set_dialect from any
 *    thread.  put() from the loop thread (normally inside up->recv for the
 *    response: the transport recorded the receive's invalidated rkey before
 *    delivering it, so put() already knows); from another thread it works but
 *    a remote invalidation may not have been seen yet, so it invalidates
 *    locally.  Put a token only once its response arrived, the request was
 *    never sent, or the channel is being given up: putting one whose request
 *    is still out (a timeout) keeps memory safe, but a late Send-with-
 *    Invalidate naming the dead rkey then fails the QP.  done(arg) is never called from inside
 * put(); it runs later on the loop thread, exactly once per put().  Locks: the transport takes its
 * internal token lock only briefly and never across done(); callers must not hold a lock done()
 * needs while calling put().
 *  - After the channel died, put() still completes (the QP is in error, so
 *    nothing remote can reach memory); get() fails with -ECONNABORTED.
 *  - A token's rkey is never handed out again while a server could hold it:
 *    windows get a new key per bind and are retired if an invalidate fails.
 *  - mr_cache_remove() fails with -EBUSY while tokens over the region exist;
 *    regions left at destroy() are deregistered there.
 *  - Non-RDMA transports: every call returns -EOPNOTSUPP (put: no-op).
 */
#ifndef SMBRDMA_SMBD_OFFLOAD_H
#define SMBRDMA_SMBD_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/transport.h"
#include "smbd/smbd_proto.h"

/* Access of one per-I/O token (smbd_io_token_get): exactly one of these. */
#define SMBD_ACCESS_REMOTE_READ  (1 << 0) /* the server RDMA-Reads it: SMB2 WRITE payload */
#define SMBD_ACCESS_REMOTE_WRITE (1 << 1) /* the server RDMA-Writes it: SMB2 READ payload */

struct smbd_offload_caps {
	uint32_t max_read_write;  /* negotiated MaxReadWriteSize: largest offloaded I/O */
	uint32_t max_inline_send; /* largest SMB2 message we may send (peer's MaxFragmentedSize) */
	uint32_t max_inline_recv; /* largest SMB2 message we reassemble */
	uint32_t max_descs;       /* Buffer Descriptor V1 entries per I/O we produce */
	bool remote_invalidate;   /* windows exist: tokens can be invalidated remotely */
};

/* Valid after connect() returned 0.  -EOPNOTSUPP for a non-RDMA transport. */
int smbd_offload_caps(struct smb_transport *t, struct smbd_offload_caps *out);

/* Per-channel counters for smbrdmactl stats.  A snapshot the loop thread
 * refreshes after each batch of completions and sends; safe from any thread. */
struct smbd_transport_stats {
	uint64_t msgs_sent, msgs_received;
	uint64_t bytes_sent, bytes_received; /* SMB2 bytes carried inline */
	uint32_t send_credits;               /* the server's credits we hold now */
	uint32_t recv_credits;               /* our receives the server may use now */
	uint64_t keepalives_sent;
	uint64_t remote_invalidations; /* messages that came by Send-with-Invalidate */
	uint64_t mw_bound;             /* windows bound for an I/O */
	uint64_t mw_invalidated_remote;
	uint64_t mw_invalidated_local;
	uint64_t mr_per_io;        /* tokens that were a per-I/O registration */
	uint64_t binds_failed;     /* binds not posted: a per-I/O registration instead */
	uint64_t regs_failed;      /* per-I/O registrations failed: no token, I/O inline */
	uint64_t rdma_read_bytes;  /* the server RDMA-Read from us (SMB2 WRITE) */
	uint64_t rdma_write_bytes; /* the server RDMA-Wrote to us (SMB2 READ) */
	uint32_t tokens_active;
};
int smbd_transport_get_stats(struct smb_transport *t, struct smbd_transport_stats *out);

/* ---- registration cache and per-I/O tokens (see the top of this file) ---- */
struct smbd_io_token;

/* The SMB2 dialect negotiated on this channel: decides RDMA_V1_INVALIDATE. */
int smbd_offload_set_dialect(struct smb_transport *t, uint16_t dialect);
/* Register [addr, addr+len) once (-EEXIST if it overlaps a cached region). */
int smbd_mr_cache_add(struct smb_transport *t, void *addr, size_t len);
/* Deregister the region starting at addr (-ENOENT, -EBUSY while tokens use it). */
int smbd_mr_cache_remove(struct smb_transport *t, void *addr);
/* Tests only: the local and remote key of the cached region starting at addr,
 * which no descriptor ever carries (a hostile peer tries them, to show they
 * open nothing; on rxe and siw an MR's rkey, when it has one, is its lkey).
 * 0 and both keys 0 when the region is not registered (no windows); -ENOENT
 * if no region starts there. */
int smbd_mr_cache_keys(struct smb_transport *t, const void *addr, uint32_t *lkey, uint32_t *rkey);

/* access: SMBD_ACCESS_REMOTE_WRITE (READ: server writes buf) or
 * SMBD_ACCESS_REMOTE_READ (WRITE: server reads buf).  On success *tok, the
 * encoded Buffer Descriptor V1 in desc and the SMB2 Channel in *channel.
 * -EINVAL (len 0 or > 4 GiB, bad access), -ECONNABORTED (channel dead),
 * -ENOTCONN, -ENOMEM, or a verbs error. */
int smbd_io_token_get(struct smb_transport *t, void *buf, size_t len, int access,
                      struct smbd_io_token **tok, uint8_t desc[16], uint32_t *channel);
/* Bytes the server moved for this I/O (READ: DataLength; WRITE: Count), for
 * the rdma_read/write byte counters; 0 if never called. */
void smbd_io_token_set_moved(struct smbd_io_token *tok, size_t bytes);
void smbd_io_token_put(struct smb_transport *t, struct smbd_io_token *tok, void (*done)(void *arg),
                       void *arg);

#endif
