/* smbd/smbd_offload.h — what an SMB Direct transport offers the SMB2 layer
 * for RDMA offload of READ/WRITE payloads, beyond client/transport.h.
 *
 * A PROPOSAL to the owner of client/transport.h: these calls live here so
 * client/ can use them now (through a transport whose info() has
 * SMB_TRANSPORT_CAP_RDMA); they could move into struct smb_transport_ops later
 * (as an op with a -EOPNOTSUPP default), which is why every one takes the
 * base struct smb_transport and returns -EOPNOTSUPP when the transport is not
 * an SMB Direct one.
 *
 * Implemented today:
 *  - ops->reg_buf(t, addr, len, access, &mr) registers [addr, addr+len) once
 *    (ibv_reg_mr); access is a mask of SMBD_ACCESS_* below.  Registration is
 *    slow: keep the mr for the buffer's life (a registration cache in client/).
 *  - smbd_offload_desc() fills one Buffer Descriptor V1 ([MS-SMBD] 2.2.3.1)
 *    for a range inside a registration.  The token is the region's rkey: it
 *    stays valid until dereg_buf, i.e. this is SMB2_CHANNEL_RDMA_V1 over a
 *    long-lived region (the weak-isolation fallback the design allows with a
 *    warning).  Encode the array with smbd_buffer_desc_v1_encode().
 *  - smbd_offload_caps() says how big an offloaded I/O may be and how big an
 *    inline message may be.  Note info()'s max_read_write is the negotiated
 *    MaxReadWriteSize, the limit of an *offloaded* READ/WRITE; until client/
 *    sends descriptors, a READ/WRITE must fit max_inline_recv/max_inline_send
 *    (whole SMB2 message, header included).
 *  - smbd_transport_get_stats() for smbrdmactl stats.
 *
 * Proposed next (not implemented; the shape client/ should code against):
 *
 *   // A token valid for one I/O over [addr, addr+len) inside mr.  Where the
 *   // device has type-2 memory windows (rxe), a window bound by an
 *   // IBV_WR_BIND_MW posted on the loop before the request that carries it
 *   // (same send queue, so the server cannot see the request first) and
 *   // *channel = SMB2_CHANNEL_RDMA_V1_INVALIDATE (RDMA_V1 for dialect 3.0).
 *   // Without windows (siw): a per-I/O ibv_reg_mr and *channel =
 *   // SMB2_CHANNEL_RDMA_V1 — an ordinary MR's rkey cannot be invalidated by
 *   // the server's Send-with-Invalidate (the QP would fail), so never ask for
 *   // INVALIDATE with one.  Non-blocking; any thread.
 *   int smbd_io_token_get(struct smb_transport *t, struct smb_transport_mr *mr,
 *                         const void *addr, size_t len, int access,
 *                         struct smbd_io_token **out,
 *                         struct smbd_buffer_desc_v1 *desc, uint16_t *channel);
 *   // After the I/O's response arrived or the request failed.  The transport
 *   // has seen whether a message came by Send-with-Invalidate on this rkey
 *   // (IBV_WC_WITH_INV, invalidated_rkey); if not, it posts IBV_WR_LOCAL_INV
 *   // (or deregisters the per-I/O MR).  done(arg) runs on the loop thread
 *   // once the server can no longer touch the memory: only then may the
 *   // buffer be replied to FUSE or reused.  A token is never reused while a
 *   // server could still hold it; a window's rkey advances with every bind.
 *   void smbd_io_token_put(struct smb_transport *t, struct smbd_io_token *tok,
 *                          void (*done)(void *arg), void *arg);
 *
 *   reg_buf() then also asks for IBV_ACCESS_MW_BIND where windows exist.
 *
 *   Counters for smbrdmactl stats (rdma read/write bytes, windows bound /
 *   invalidated remotely / locally) come with it.
 */
#ifndef SMBRDMA_SMBD_OFFLOAD_H
#define SMBRDMA_SMBD_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/transport.h"
#include "smbd/smbd_proto.h"

/* Bits of reg_buf()'s access argument on an SMB Direct transport. */
#define SMBD_ACCESS_REMOTE_READ  (1 << 0) /* the server RDMA-Reads it: SMB2 WRITE payload */
#define SMBD_ACCESS_REMOTE_WRITE (1 << 1) /* the server RDMA-Writes it: SMB2 READ payload */

struct smbd_offload_caps {
	uint32_t max_read_write;  /* negotiated MaxReadWriteSize: largest offloaded I/O */
	uint32_t max_inline_send; /* largest SMB2 message we may send (peer's MaxFragmentedSize) */
	uint32_t max_inline_recv; /* largest SMB2 message we reassemble */
	uint32_t max_descs;       /* Buffer Descriptor V1 entries per I/O we produce */
	bool remote_invalidate;   /* per-I/O tokens exist (not yet: false) */
};

/* Valid after connect() returned 0.  -EOPNOTSUPP for a non-RDMA transport. */
int smbd_offload_caps(struct smb_transport *t, struct smbd_offload_caps *out);

/* One descriptor for [addr, addr+len), which must lie inside mr (-ERANGE
 * otherwise; -EINVAL for len 0 or len > UINT32_MAX). */
int smbd_offload_desc(struct smb_transport *t, const struct smb_transport_mr *mr, const void *addr,
                      size_t len, struct smbd_buffer_desc_v1 *out);

/* Per-channel counters for smbrdmactl stats.  A snapshot the loop thread
 * refreshes after each batch of completions and sends; safe from any thread. */
struct smbd_transport_stats {
	uint64_t msgs_sent, msgs_received;
	uint64_t bytes_sent, bytes_received; /* SMB2 bytes carried inline */
	uint32_t send_credits;               /* the server's credits we hold now */
	uint32_t recv_credits;               /* our receives the server may use now */
	uint64_t keepalives_sent;
	uint64_t remote_invalidations; /* messages that came by Send-with-Invalidate */
};
int smbd_transport_get_stats(struct smb_transport *t, struct smbd_transport_stats *out);

#endif
