/* tests/unit/proto/rpc_build.h — laying out connection-oriented DCE/RPC PDUs
 * by hand ([C706] 12.6), for the tests of client/proto/dcerpc.h and the
 * interfaces on it: the common header, the head of a response, and
 * frag_length once the PDU is whole. */
#ifndef SMBRDMA_TESTS_RPC_BUILD_H
#define SMBRDMA_TESTS_RPC_BUILD_H

#include <stdint.h>

#include "common/cursor.h"

/* A PDU header: version 5.0, little-endian, ASCII, IEEE; frag_length and
 * auth_length 0 until end_pdu(). */
static inline void put_hdr(struct smb_wr *w, uint8_t ptype, uint8_t flags, uint32_t call_id)
{
	const uint8_t h[8] = {5, 0, ptype, flags, 0x10, 0, 0, 0};
	smb_wr_bytes(w, h, 8);
	smb_wr_u16(w, 0);
	smb_wr_u16(w, 0);
	smb_wr_u32(w, call_id);
}

/* frag_length: all that w holds. */
static inline size_t end_pdu(struct smb_wr *w)
{
	size_t n = smb_wr_len(w);
	smb_put_le16(w->base + 8, (uint16_t)n);
	return n;
}

/* The header and fixed part of a response (ptype 2, or a fault's 3):
 * alloc_hint, p_cont_id, cancel_count 0, reserved. */
static inline void put_response_head(struct smb_wr *w, uint8_t ptype, uint8_t flags,
                                     uint32_t call_id, uint32_t alloc_hint, uint16_t ctx_id)
{
	put_hdr(w, ptype, flags, call_id);
	smb_wr_u32(w, alloc_hint);
	smb_wr_u16(w, ctx_id);
	smb_wr_u8(w, 0);
	smb_wr_u8(w, 0);
}

#endif
