/* client/proto/lsarpc.h — the DCE/RPC messages of a SID-to-name lookup on a
 * server's LSA pipe: BIND to the lsarpc interface, LsarOpenPolicy2,
 * LsarLookupSids, LsarClose.
 *
 * Layouts: [C706] / [MS-RPCE] 2.2.2 connection-oriented PDUs (common header,
 * bind, bind_ack, request, response, fault), NDR 2.0 transfer syntax
 * (little-endian, 4-byte pointers), [MS-LSAT] 3.1.4.4 LsarOpenPolicy2
 * (opnum 44), 3.1.4.11 LsarLookupSids (opnum 15), [MS-LSAD] 3.1.4.9.4
 * LsarClose (opnum 0).  The PDUs travel in FSCTL_PIPE_TRANSCEIVE on the
 * pipe "lsarpc" of the server's IPC$ share (client/sidmap.c); the PDUs
 * themselves are client/proto/dcerpc.h's.
 *
 * Contract: the rules of client/proto/smb2.h (sans-I/O, no allocation;
 * every length, count, offset and pointer of an answer is checked against
 * the buffer, -EBADMSG when anything lies outside it).  Only unfragmented
 * PDUs (first and last fragment) without authentication are read.
 */
#ifndef SMBRDMA_PROTO_LSARPC_H
#define SMBRDMA_PROTO_LSARPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2_posix.h"

/* The fragment sizes a bind offers: a request or an answer larger than
 * this would come in fragments, which the decoders refuse. */
#define LSARPC_MAX_FRAG 4280

/* A bind to lsarpc 0.0 with the NDR 2.0 transfer syntax. */
ssize_t lsarpc_bind_encode(uint8_t *b, size_t cap, uint32_t call_id);
/* 0 when the bind_ack accepts the presentation context, -EPROTO when it
 * (or a bind_nak) refuses it, -EBADMSG. */
int lsarpc_bind_ack_decode(const uint8_t *b, size_t len, uint32_t call_id);

/* LsarOpenPolicy2(NULL, {24}, POLICY_LOOKUP_NAMES). */
#define LSARPC_HANDLE_LEN 20
ssize_t lsarpc_open_policy2_encode(uint8_t *b, size_t cap, uint32_t call_id);
/* The policy handle and the call's NTSTATUS.  0, -EBADMSG, or -EREMOTEIO
 * for a fault PDU (*status: its status). */
int lsarpc_open_policy2_decode(const uint8_t *b, size_t len, uint32_t call_id,
                               uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status);

/* LsarLookupSids(handle, n SIDs, LsapLookupWksta).  -E2BIG past
 * LSARPC_MAX_SIDS. */
#define LSARPC_MAX_SIDS 32
ssize_t lsarpc_lookup_sids_encode(uint8_t *b, size_t cap, uint32_t call_id,
                                  const uint8_t handle[LSARPC_HANDLE_LEN],
                                  const struct smb2_sid *sids, uint32_t n);

/* SID_NAME_USE ([MS-LSAT] 2.2.13) */
#define LSA_SID_TYPE_USER       1
#define LSA_SID_TYPE_GROUP      2
#define LSA_SID_TYPE_DOMAIN     3
#define LSA_SID_TYPE_ALIAS      4
#define LSA_SID_TYPE_WELL_KNOWN 5
#define LSA_SID_TYPE_UNKNOWN    8
#define LSARPC_NAME_MAX         256 /* UTF-16 units of a name we take */
#define LSARPC_NAME_BUF         (LSARPC_NAME_MAX * 3 + 1)
/* One translated SID: its type and its name and domain in UTF-8 ("" when
 * the server sent none, or one longer than LSARPC_NAME_MAX). */
struct lsarpc_name {
	uint16_t type;
	char name[LSARPC_NAME_BUF];
	char domain[LSARPC_NAME_BUF];
};
/* The answer to a lookup of n SIDs: out[0..n) in the order asked, and the
 * call's NTSTATUS (STATUS_SUCCESS, STATUS_SOME_NOT_MAPPED 0x00000107,
 * STATUS_NONE_MAPPED 0xC0000073, ...); an answer of another count than n
 * is -EBADMSG.  0, -EBADMSG, -EREMOTEIO (fault, *status). */
int lsarpc_lookup_sids_decode(const uint8_t *b, size_t len, uint32_t call_id,
                              struct lsarpc_name *out, uint32_t n, uint32_t *status);

/* LsarClose(handle); its answer needs no reading. */
ssize_t lsarpc_close_encode(uint8_t *b, size_t cap, uint32_t call_id,
                            const uint8_t handle[LSARPC_HANDLE_LEN]);

/* ---- the same calls as stubs only ---------------------------------------
 * For a transport that frames, signs and fragments the PDUs itself
 * (client/rpc_tcp.c): the request stubs the functions above put in their
 * PDUs, and the decoders of the answers' (reassembled, verified) stubs,
 * with the same checks and results, minus the PDU's (no -EREMOTEIO: a
 * fault is the transport's). */
struct dcerpc_syntax;
/* 12345778-1234-abcd-ef00-0123456789ab v0.0 */
extern const struct dcerpc_syntax lsarpc_syntax;
#define LSARPC_OPNUM_CLOSE        0
#define LSARPC_OPNUM_LOOKUP_SIDS  15
#define LSARPC_OPNUM_OPEN_POLICY2 44
ssize_t lsarpc_open_policy2_stub_encode(uint8_t *stub, size_t cap);
int lsarpc_open_policy2_stub_decode(const uint8_t *stub, size_t len,
                                    uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status);
ssize_t lsarpc_lookup_sids_stub_encode(uint8_t *stub, size_t cap,
                                       const uint8_t handle[LSARPC_HANDLE_LEN],
                                       const struct smb2_sid *sids, uint32_t n);
int lsarpc_lookup_sids_stub_decode(const uint8_t *stub, size_t len, struct lsarpc_name *out,
                                   uint32_t n, uint32_t *status);
ssize_t lsarpc_close_stub_encode(uint8_t *stub, size_t cap,
                                 const uint8_t handle[LSARPC_HANDLE_LEN]);

#endif
