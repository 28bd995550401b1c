/* client/proto/smb2_lease.h — leases: the request/response lease create
 * context ("RqLs", [MS-SMB2] 2.2.13.2.8 v1 / 2.2.13.2.10 v2, 2.2.14.2.10 /
 * 2.2.14.2.11), the LEASE_BREAK notification (2.2.23.2), its
 * acknowledgment (2.2.24.2) and the server's response to that (2.2.25.2).
 *
 * Pure codec, like smb2.h: no I/O, no allocation.  Decoders take untrusted
 * bytes (a whole SMB2 message for the break and the break response, a
 * context's data for RqLs), check every length and return -EBADMSG for
 * anything malformed; encoders write into the caller's buffer.
 */
#ifndef SMBRDMA_PROTO_SMB2_LEASE_H
#define SMBRDMA_PROTO_SMB2_LEASE_H

#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2.h"

/* LeaseState bits (SMB2_LEASE_*): smb2_const.h. */

/* RqLs Flags */
#define SMB2_LEASE_FLAG_BREAK_IN_PROGRESS    0x02u
#define SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET 0x04u
/* LEASE_BREAK notification Flags */
#define SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED 0x01u

#define SMB2_LEASE_KEY_LEN 16
#define SMB2_RQLS_V1_LEN   32 /* LeaseKey, LeaseState, LeaseFlags, LeaseDuration */
#define SMB2_RQLS_V2_LEN   52 /* ... ParentLeaseKey, Epoch, Reserved */

struct smb2_lease {
	uint8_t key[SMB2_LEASE_KEY_LEN];
	uint32_t state;                         /* SMB2_LEASE_* */
	uint32_t flags;                         /* SMB2_LEASE_FLAG_* */
	uint8_t parent_key[SMB2_LEASE_KEY_LEN]; /* v2, with PARENT_LEASE_KEY_SET */
	uint16_t epoch;                         /* v2 */
	uint8_t version;                        /* 1 or 2 (the decoded length says which) */
};

/* The RqLs request context's data, version l->version (1: 32 bytes, 2: 52).
 * Bytes written, or -ENOSPC / -EINVAL (a version other than 1 or 2). */
ssize_t smb2_rqls_encode(uint8_t *out, size_t cap, const struct smb2_lease *l);
/* The RqLs response context's data: v2 when at least 52 bytes, v1 when at
 * least 32; 0, or -EBADMSG. */
int smb2_rqls_rsp_decode(const uint8_t *data, uint32_t len, struct smb2_lease *l);

/* LEASE_BREAK notification (an OPLOCK_BREAK message whose StructureSize is 44). */
struct smb2_lease_break {
	uint16_t new_epoch;
	uint32_t flags; /* SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED */
	uint8_t key[SMB2_LEASE_KEY_LEN];
	uint32_t current_state, new_state;
	uint32_t break_reason, access_mask_hint, share_mask_hint;
};
/* msg is the whole message (SMB2 header first).  0; -EPROTO when it is an
 * oplock break (StructureSize 24, smb2_oplock_break_decode()); -EBADMSG. */
int smb2_lease_break_decode(const uint8_t *msg, size_t len, struct smb2_lease_break *b);

/* LEASE_BREAK acknowledgment body (StructureSize 36): agree to state (the
 * notification's NewLeaseState).  Bytes written or -ENOSPC. */
#define SMB2_LEASE_BREAK_ACK_LEN 36
ssize_t smb2_lease_break_ack_encode(uint8_t *body, size_t cap, const uint8_t key[16],
                                    uint32_t state);
/* The server's LEASE_BREAK response (StructureSize 36) to our
 * acknowledgment, the whole message: 0 with *key and *state, or -EBADMSG. */
int smb2_lease_break_rsp_decode(const uint8_t *msg, size_t len, uint8_t key[16], uint32_t *state);

#endif
