/* client/proto/dcerpc.h — connection-oriented DCE/RPC PDUs, the NDR pieces
 * every interface on top of them needs, and the endpoint mapper's ept_map.
 *
 * Layouts: [C706] 12.6 connection-oriented PDUs with [MS-RPCE] 2.2.2: the
 * common header (12.6.3.1), bind and alter_context (12.6.4.3, 12.6.4.1),
 * bind_ack and alter_context_resp (12.6.4.4, 12.6.4.2), bind_nak
 * (12.6.4.5), request (12.6.4.9), response (12.6.4.10), fault (12.6.4.7)
 * and the auth_verifier trailer (13.2.6.1, [MS-RPCE] 2.2.2.11 sec_trailer:
 * auth_type, auth_level, auth_pad_length, auth_reserved,
 * auth_context_id, then auth_length bytes of token, which this codec only
 * carries).  NDR 2.0 ([C706] ch. 14) little-endian, the only data
 * representation read or written: 4-byte referent ids, conformant and
 * varying arrays, alignment counted from the start of the stub.  The
 * endpoint mapper: [C706]'s ept_map (opnum 3 of
 * e1af8308-5d1f-11c9-91a4-08002b14a0fa v3.0), appendix L towers, [MS-RPCE]
 * 2.2.1.2 (floors for ncacn_ip_tcp: interface, transfer syntax, 0x0b,
 * 0x07 TCP port, 0x09 IPv4 address).
 *
 * Contract: the rules of client/proto/smb2.h (sans-I/O, no allocation).
 * Encoders return the bytes written, -ENOSPC when cap is too small, -EINVAL
 * for arguments that cannot be sent.  Decoders check every length, count
 * and offset against the buffer and read nothing outside it; malformed
 * input is -EBADMSG.  Pointers a decoder returns (stubs, tokens, the
 * secondary address) point into the caller's input and live as long as it.
 */
#ifndef SMBRDMA_PROTO_DCERPC_H
#define SMBRDMA_PROTO_DCERPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cursor.h"

/* [C706] 12.6.3.1 PTYPE */
#define DCERPC_PTYPE_REQUEST            0
#define DCERPC_PTYPE_RESPONSE           2
#define DCERPC_PTYPE_FAULT              3
#define DCERPC_PTYPE_BIND               11
#define DCERPC_PTYPE_BIND_ACK           12
#define DCERPC_PTYPE_BIND_NAK           13
#define DCERPC_PTYPE_ALTER_CONTEXT      14
#define DCERPC_PTYPE_ALTER_CONTEXT_RESP 15
#define DCERPC_PTYPE_AUTH3              16 /* [MS-RPCE] 2.2.2.10 rpc_auth_3 */
/* pfc_flags ([C706] 12.6.3.1, [MS-RPCE] 2.2.2.3) */
#define DCERPC_PFC_FIRST_FRAG          0x01
#define DCERPC_PFC_LAST_FRAG           0x02
#define DCERPC_PFC_PENDING_CANCEL      0x04 /* in bind: PFC_SUPPORT_HEADER_SIGN */
#define DCERPC_PFC_SUPPORT_HEADER_SIGN 0x04 /* [MS-RPCE] 2.2.2.3, bind/bind_ack */
#define DCERPC_PFC_CONC_MPX            0x10
#define DCERPC_PFC_DID_NOT_EXECUTE     0x20
#define DCERPC_PFC_MAYBE               0x40
#define DCERPC_PFC_OBJECT_UUID         0x80

#define DCERPC_HDR_LEN     16 /* the common header */
#define DCERPC_REQ_HDR_LEN 24 /* + alloc_hint, p_cont_id, opnum (or cancel_count) */
#define DCERPC_AUTH_HDR    8  /* the sec_trailer before the token */
/* A request's stub before a sec_trailer is padded to a multiple of this:
 * [MS-RPCE] 2.2.2.11 aligns the trailer to 16 from the start of the PDU
 * body.  A bind's body is a multiple of 4 and goes unpadded, as Samba and
 * Windows send it. */
#define DCERPC_AUTH_PAD_ALIGN 16

/* An interface or transfer syntax: the UUID as it goes on the wire
 * (time_low, time_mid, time_hi_and_version little-endian, then the 8
 * bytes of clock_seq and node as written), and its version. */
struct dcerpc_syntax {
	uint8_t uuid[16];
	uint16_t major, minor;
};
/* 8a885d04-1ceb-11c9-9fe8-08002b104860 v2.0 */
extern const struct dcerpc_syntax dcerpc_ndr_syntax;
/* e1af8308-5d1f-11c9-91a4-08002b14a0fa v3.0: the endpoint mapper, port 135 */
extern const struct dcerpc_syntax dcerpc_epm_syntax;
/* Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into its wire form: 0, or
 * -EINVAL for anything else. */
int dcerpc_uuid_parse(const char *s, uint8_t uuid[16]);

/* The common header ([C706] 12.6.3.1). */
struct dcerpc_hdr {
	uint8_t rpc_vers, rpc_vers_minor; /* 5, 0 or 1 */
	uint8_t ptype;
	uint8_t pfc_flags;
	uint8_t drep[4]; /* 0x10 0 0 0: little-endian, ASCII, IEEE */
	uint16_t frag_length;
	uint16_t auth_length;
	uint32_t call_id;
};

/* auth_verifier_co_t ([C706] 13.2.6.1, [MS-RPCE] 2.2.2.11). */
struct dcerpc_auth {
	uint8_t type;       /* auth_type: 9 SPNEGO, 10 NTLM, 16 Kerberos... */
	uint8_t level;      /* auth_level: 2 connect ... 6 privacy */
	uint8_t pad_length; /* decoded: auth_pad_length as sent; encoders set it */
	uint32_t context_id;
	/* The token: auth_length bytes.  To an encoder token may be NULL:
	 * token_len zero bytes are reserved for a signature written later at
	 * the end of the PDU. */
	const uint8_t *token;
	uint16_t token_len;
};

/* One PDU as the header frames it: the header, its body (after the 16-byte
 * header up to the auth padding, or the end of the fragment without
 * auth) and the trailer. */
struct dcerpc_pdu {
	struct dcerpc_hdr hdr;
	const uint8_t *body;
	size_t body_len;
	bool has_auth;
	struct dcerpc_auth auth;
};

/* The PDU at the start of b[0, len) (more may follow it: a stream carries
 * them back to back).  Checked: rpc_vers 5 and minor 0 or 1; drep
 * little-endian (a big-endian or non-ASCII peer is -EBADMSG: never
 * negotiated by us); 16 <= frag_length <= len; with auth_length,
 * 8 + auth_length bytes of trailer fit after the header, and the padding
 * auth_pad_length claims lies inside the body.  Returns frag_length, or
 * -EBADMSG.  A PDU that does not all fit in len yet is -EBADMSG too; a
 * reader of a stream first waits for frag_length (bytes 8-9) bytes. */
ssize_t dcerpc_pdu_decode(const uint8_t *b, size_t len, struct dcerpc_pdu *pdu);

/* ---- bind, alter_context ------------------------------------------------ */

/* One presentation context ([C706] p_cont_elem_t). */
struct dcerpc_ctx {
	uint16_t id;
	struct dcerpc_syntax abstract;
	const struct dcerpc_syntax *transfer; /* n_transfer of them, >= 1 */
	uint8_t n_transfer;
};
struct dcerpc_bind {
	uint8_t ptype;     /* DCERPC_PTYPE_BIND or _ALTER_CONTEXT */
	uint8_t pfc_flags; /* FIRST_FRAG|LAST_FRAG are always set */
	uint32_t call_id;
	uint16_t max_xmit_frag, max_recv_frag;
	uint32_t assoc_group_id;
	const struct dcerpc_ctx *ctx; /* n_ctx of them, 1..255 */
	uint8_t n_ctx;
};
/* A bind or alter_context, with the auth trailer when auth is not NULL. */
ssize_t dcerpc_bind_encode(uint8_t *b, size_t cap, const struct dcerpc_bind *bind,
                           const struct dcerpc_auth *auth);

/* p_result_t: result 0 acceptance, 1 user rejection, 2 provider rejection,
 * 3 negotiate_ack ([MS-RPCE] 2.2.2.4: bind time feature negotiation). */
#define DCERPC_RESULT_ACCEPT        0
#define DCERPC_RESULT_USER_REJECT   1
#define DCERPC_RESULT_PROVIDER_REJ  2
#define DCERPC_RESULT_NEGOTIATE_ACK 3
struct dcerpc_result {
	uint16_t result;
	uint16_t reason;
	struct dcerpc_syntax transfer;
};
struct dcerpc_bind_ack {
	uint16_t max_xmit_frag, max_recv_frag;
	uint32_t assoc_group_id;
	const uint8_t *sec_addr; /* port_spec, sec_addr_len bytes (NUL included) */
	uint16_t sec_addr_len;
	uint8_t n_results;
};
/* The body of a bind_ack or alter_context_resp (pdu from
 * dcerpc_pdu_decode()): sec_addr, the 4-byte alignment, then n_results
 * results to res[0..max).  0, -E2BIG when n_results > max (ack is set),
 * -EBADMSG when the PDU is of another type or anything lies past the
 * body. */
int dcerpc_bind_ack_decode(const struct dcerpc_pdu *pdu, struct dcerpc_bind_ack *ack,
                           struct dcerpc_result *res, size_t max);
/* bind_nak: provider_reject_reason, then the versions the server supports
 * ([C706] p_rt_versions_supported_t: a count, a major and minor each):
 * checked when the PDU goes on past the reason; what [MS-RPCE] may add
 * after them is not read.  0 with *reason, or -EBADMSG. */
int dcerpc_bind_nak_decode(const struct dcerpc_pdu *pdu, uint16_t *reason);

/* ---- request, response, fault ------------------------------------------- */

struct dcerpc_request {
	uint8_t pfc_flags; /* FIRST_FRAG / LAST_FRAG of this fragment; OBJECT_UUID from object */
	uint32_t call_id;
	uint32_t alloc_hint; /* 0: the stub's length in this fragment */
	uint16_t ctx_id;
	uint16_t opnum;
	const uint8_t *object; /* 16 bytes, or NULL */
};
/* A request fragment carrying stub[0, stub_len), with the auth trailer when
 * auth is not NULL (the stub padded to DCERPC_AUTH_PAD_ALIGN; auth->pad_length
 * is ignored).  Fragmenting is the caller's: each fragment's stub goes in its
 * own call with the right pfc_flags.  -E2BIG past 65535 bytes. */
ssize_t dcerpc_request_encode(uint8_t *b, size_t cap, const struct dcerpc_request *req,
                              const uint8_t *stub, size_t stub_len, const struct dcerpc_auth *auth);
/* The same in place: after dcerpc_request_begin() the caller writes the stub
 * through w; dcerpc_request_end() adds the trailer and fills frag_length and
 * alloc_hint (when req->alloc_hint is 0).  Returns as _encode(); max_frag
 * (0: none) refuses a longer PDU with -E2BIG. */
void dcerpc_request_begin(struct smb_wr *w, uint8_t *b, size_t cap,
                          const struct dcerpc_request *req);
ssize_t dcerpc_request_end(struct smb_wr *w, const struct dcerpc_request *req,
                           const struct dcerpc_auth *auth, size_t max_frag);

struct dcerpc_response {
	uint8_t pfc_flags;
	uint32_t call_id;
	uint32_t alloc_hint;
	uint16_t ctx_id;
	uint8_t cancel_count;
	const uint8_t *stub; /* this fragment's stub */
	size_t stub_len;
	uint32_t status; /* a fault's status (nca_s_* or a Win32 error) */
};
/* A response or fault PDU.  0 for a response; -EREMOTEIO for a fault
 * (status set; stub is whatever follows status and its reserved field,
 * which may be missing);
 * -EBADMSG for another type or a body shorter than its fixed part. */
int dcerpc_response_decode(const struct dcerpc_pdu *pdu, struct dcerpc_response *rsp);

/* Reassembly of a fragmented response's stub into the caller's buffer. */
struct dcerpc_reasm {
	uint8_t *buf;
	size_t cap;
	size_t len;
	uint32_t call_id;
	bool started, done;
};
void dcerpc_reasm_init(struct dcerpc_reasm *ra, uint8_t *buf, size_t cap);
/* Adds one fragment: the first must have FIRST_FRAG, each the first one's
 * call_id, none FIRST_FRAG again, nothing after LAST_FRAG.  1 when the stub
 * is whole (LAST_FRAG), 0 when more must come, -EBADMSG, -E2BIG when the
 * stub outgrows cap. */
int dcerpc_reasm_add(struct dcerpc_reasm *ra, const struct dcerpc_response *rsp);

/* ---- authentication: AUTH3, the signed and sealed regions ----------------- */

/* auth_type and auth_level values ([MS-RPCE] 2.2.1.1.7, 2.2.1.1.8) */
#define DCERPC_AUTH_TYPE_NTLMSSP    10 /* RPC_C_AUTHN_WINNT */
#define DCERPC_AUTH_LEVEL_CONNECT   2
#define DCERPC_AUTH_LEVEL_INTEGRITY 5
#define DCERPC_AUTH_LEVEL_PRIVACY   6
#define DCERPC_AUTH3_PAD            4 /* the body before an AUTH3's sec_trailer */

/* An AUTH3 PDU (the third leg of a three-legged bind, no answer): the
 * common header (FIRST_FRAG|LAST_FRAG), 4 pad bytes, then the sec_trailer
 * (auth_pad_length 0) and auth->token, which must not be NULL. */
ssize_t dcerpc_auth3_encode(uint8_t *b, size_t cap, uint32_t call_id,
                            const struct dcerpc_auth *auth);

/* Where the protection of a request, response or fault PDU with an auth
 * trailer lies, all offsets from the PDU's byte 0 ([MS-RPCE] 3.3.1.5.2,
 * header signing):
 *   stub_off, stub_len  what PKT_PRIVACY seals: from the end of the 24-byte
 *                       request/response header (40 with a request's object
 *                       UUID; 32 for a fault: status and its reserved word
 *                       stay clear) to the sec_trailer, so the stub and its
 *                       auth padding;
 *   signed_len          what the signature covers: bytes [0, signed_len),
 *                       the whole PDU through the sec_trailer;
 *   token_off,          the signature (auth_length bytes at the end).
 *   token_len
 * Works on an encoded request whose token was reserved (a NULL token to
 * dcerpc_request_end()) as well as on a received PDU.  b[0, len) must hold
 * the whole PDU.  0; -EBADMSG when the PDU does not frame (as
 * dcerpc_pdu_decode()), has no auth trailer, is of another type, or its
 * trailer and padding leave no room for the fixed header. */
struct dcerpc_auth_span {
	size_t stub_off, stub_len;
	size_t signed_len;
	size_t token_off;
	uint16_t token_len;
};
int dcerpc_auth_span(const uint8_t *b, size_t len, struct dcerpc_auth_span *sp);

/* ---- NDR ------------------------------------------------------------------ */

#define NDR_CONTEXT_HANDLE_LEN 20 /* attributes(4) + uuid(16) */

/* Skip to the next multiple of a (2, 4, 8) from r->base. */
void ndr_rd_align(struct smb_rd *r, size_t a);
/* A unique or full pointer to a conformant varying UTF-16 string with its
 * NUL ([string] wchar_t *): the referent id (*ref, then advanced) and
 * max_count, offset 0, actual_count, the units, padding to 4.  s NULL: a
 * NULL pointer (0).  Invalid UTF-8 sets w->err = -EINVAL. */
void ndr_wr_ptr_string(struct smb_wr *w, const char *s, uint32_t *ref);

/* ---- the endpoint mapper -------------------------------------------------- */

#define DCERPC_EPM_PORT       135
#define DCERPC_EPM_OPNUM_MAP  3
#define DCERPC_PROT_NCACN     0x0b /* RPC connection-oriented protocol */
#define DCERPC_PROT_TCP       0x07
#define DCERPC_PROT_IP        0x09
#define DCERPC_PROT_UUID      0x0d
#define DCERPC_EPT_NOT_FOUND  0x16c9a0d6u /* EPT_S_NOT_REGISTERED */
#define DCERPC_EPM_MAX_TOWERS 4

/* An ncacn_ip_tcp tower: five floors. */
struct dcerpc_tower {
	struct dcerpc_syntax iface;
	struct dcerpc_syntax transfer;
	uint16_t port;   /* host order (big-endian on the wire) */
	uint8_t ipv4[4]; /* network order */
};
/* The tower_octet_string ([C706] appendix L): floor_count, then floors of
 * lhs_length, lhs (protocol id + data), rhs_length, rhs. */
ssize_t dcerpc_tower_encode(uint8_t *b, size_t cap, const struct dcerpc_tower *t);
/* 0 when b[0, len) is exactly a tower of the five ncacn_ip_tcp floors,
 * -ENOENT for a well-formed tower of other floors (another protocol),
 * -EBADMSG when a floor runs past len or its lengths do not fit its
 * protocol. */
int dcerpc_tower_decode(const uint8_t *b, size_t len, struct dcerpc_tower *t);

/* The stub of ept_map(object NULL-UUID, tower for iface over NDR,
 * ncacn_ip_tcp port 0, 0.0.0.0; entry_handle zero, max_towers). */
ssize_t dcerpc_epm_map_encode(uint8_t *stub, size_t cap, const struct dcerpc_syntax *iface,
                              uint32_t max_towers);
/* The stub of its answer: entry_handle, num_towers, the towers (a
 * conformant varying array of full pointers to twr_t), status.  The first
 * ncacn_ip_tcp tower for iface over NDR gives *port and ip.  0; -ENOENT
 * when status is non-zero (*status: EPT_S_NOT_REGISTERED...) or no tower
 * fits; -EBADMSG. */
int dcerpc_epm_map_decode(const uint8_t *stub, size_t len, const struct dcerpc_syntax *iface,
                          uint16_t *port, uint8_t ip[4], uint32_t *status);

#endif
