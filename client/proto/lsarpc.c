/* client/proto/lsarpc.c — DCE/RPC on the LSA pipe: bind, LsarOpenPolicy2,
 * LsarLookupSids, LsarClose (see lsarpc.h for the layouts and the contract). */
#include "client/proto/lsarpc.h"

#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

/* [C706] 12.6.3 PDU types, 12.6.3.1 pfc_flags */
#define PTYPE_REQUEST  0
#define PTYPE_RESPONSE 2
#define PTYPE_FAULT    3
#define PTYPE_BIND     11
#define PTYPE_BIND_ACK 12
#define PTYPE_BIND_NAK 13
#define PFC_FIRST_LAST 0x03
#define HDR_LEN        16
#define REQ_HDR_LEN    24 /* + alloc_hint, p_cont_id, opnum */

#define OPNUM_CLOSE        0
#define OPNUM_LOOKUP_SIDS  15
#define OPNUM_OPEN_POLICY2 44

#define POLICY_LOOKUP_NAMES 0x00000800u
#define LOOKUP_LEVEL_WKSTA  1 /* LsapLookupWksta */

/* 12345778-1234-abcd-ef00-0123456789ab v0.0, and NDR 8a885d04-1ceb-11c9-9fe8-08002b104860
 * v2, as they go on the wire (time fields little-endian) */
static const uint8_t lsarpc_uuid[16] = {0x78, 0x57, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab,
                                        0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab};
static const uint8_t ndr_uuid[16] = {0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11,
                                     0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48, 0x60};

/* ---- the common header ------------------------------------------------------------- */

static void hdr_put(struct smb_wr *w, uint8_t ptype, uint32_t call_id)
{
	smb_wr_u8(w, 5); /* rpc_vers */
	smb_wr_u8(w, 0); /* rpc_vers_minor */
	smb_wr_u8(w, ptype);
	smb_wr_u8(w, PFC_FIRST_LAST);
	smb_wr_u8(w, 0x10); /* drep: little-endian, ASCII, IEEE */
	smb_wr_zero(w, 3);
	smb_wr_u16(w, 0); /* frag_length: hdr_end() */
	smb_wr_u16(w, 0); /* auth_length */
	smb_wr_u32(w, call_id);
}

static ssize_t hdr_end(struct smb_wr *w)
{
	size_t n = smb_wr_len(w);
	if (w->err)
		return w->err;
	if (n > LSARPC_MAX_FRAG)
		return -E2BIG;
	smb_put_le16(w->base + 8, (uint16_t)n);
	return (ssize_t)n;
}

/* The header of an answer: *ptype, and the PDU's length (frag_length). */
static int hdr_check(const uint8_t *b, size_t len, uint32_t call_id, uint8_t *ptype, size_t *frag)
{
	if (!b || len < HDR_LEN || b[0] != 5 || b[1] != 0)
		return -EBADMSG;
	uint16_t fl = smb_le16(b + 8);
	if ((b[4] & 0xF0) != 0x10 || fl < HDR_LEN || fl > len || smb_le16(b + 10) != 0 ||
	    (b[3] & PFC_FIRST_LAST) != PFC_FIRST_LAST || smb_le32(b + 12) != call_id)
		return -EBADMSG;
	*ptype = b[2];
	*frag = fl;
	return 0;
}

/* The stub of a response PDU (or the status of a fault: -EREMOTEIO). */
static int response_stub(const uint8_t *b, size_t len, uint32_t call_id, struct smb_rd *stub,
                         uint32_t *status)
{
	uint8_t ptype;
	size_t frag;
	int rc = hdr_check(b, len, call_id, &ptype, &frag);
	if (rc)
		return rc;
	if (ptype == PTYPE_FAULT) {
		if (frag < REQ_HDR_LEN + 4)
			return -EBADMSG;
		*status = smb_le32(b + REQ_HDR_LEN);
		return -EREMOTEIO;
	}
	if (ptype != PTYPE_RESPONSE || frag < REQ_HDR_LEN)
		return -EBADMSG;
	smb_rd_init(stub, b + REQ_HDR_LEN, frag - REQ_HDR_LEN);
	return 0;
}

static void request_begin(struct smb_wr *w, uint8_t *b, size_t cap, uint32_t call_id,
                          uint16_t opnum)
{
	smb_wr_init(w, b, cap);
	hdr_put(w, PTYPE_REQUEST, call_id);
	smb_wr_u32(w, 0); /* alloc_hint: request_end() */
	smb_wr_u16(w, 0); /* p_cont_id */
	smb_wr_u16(w, opnum);
}

static ssize_t request_end(struct smb_wr *w)
{
	ssize_t n = hdr_end(w);
	if (n > 0)
		smb_put_le32(w->base + HDR_LEN, (uint32_t)n - REQ_HDR_LEN);
	return n;
}

/* ---- bind ---------------------------------------------------------------------- */

ssize_t lsarpc_bind_encode(uint8_t *b, size_t cap, uint32_t call_id)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	hdr_put(&w, PTYPE_BIND, call_id);
	smb_wr_u16(&w, LSARPC_MAX_FRAG); /* max_xmit_frag */
	smb_wr_u16(&w, LSARPC_MAX_FRAG); /* max_recv_frag */
	smb_wr_u32(&w, 0);               /* assoc_group_id */
	smb_wr_u8(&w, 1);                /* n_context_elem */
	smb_wr_zero(&w, 3);
	smb_wr_u16(&w, 0); /* p_cont_id */
	smb_wr_u8(&w, 1);  /* n_transfer_syn */
	smb_wr_u8(&w, 0);
	smb_wr_bytes(&w, lsarpc_uuid, 16);
	smb_wr_u32(&w, 0); /* version 0.0 */
	smb_wr_bytes(&w, ndr_uuid, 16);
	smb_wr_u32(&w, 2);
	return hdr_end(&w);
}

int lsarpc_bind_ack_decode(const uint8_t *b, size_t len, uint32_t call_id)
{
	uint8_t ptype;
	size_t frag;
	int rc = hdr_check(b, len, call_id, &ptype, &frag);
	if (rc)
		return rc;
	if (ptype == PTYPE_BIND_NAK)
		return -EPROTO;
	if (ptype != PTYPE_BIND_ACK)
		return -EBADMSG;
	struct smb_rd r;
	smb_rd_init(&r, b, frag);
	smb_rd_skip(&r, HDR_LEN + 8); /* max frags, assoc_group_id */
	uint16_t addr_len = smb_rd_u16(&r);
	smb_rd_skip(&r, addr_len);
	size_t off = HDR_LEN + 10 + (size_t)addr_len;
	smb_rd_skip(&r, (4 - off % 4) % 4);
	uint8_t n = smb_rd_u8(&r);
	smb_rd_skip(&r, 3);
	uint16_t result = smb_rd_u16(&r);
	if (r.err || n == 0)
		return -EBADMSG;
	return result == 0 ? 0 : -EPROTO;
}

/* ---- LsarOpenPolicy2, LsarClose -------------------------------------------------- */

ssize_t lsarpc_open_policy2_encode(uint8_t *b, size_t cap, uint32_t call_id)
{
	struct smb_wr w;
	request_begin(&w, b, cap, call_id, OPNUM_OPEN_POLICY2);
	smb_wr_u32(&w, 0); /* SystemName: NULL */
	/* ObjectAttributes: Length, then RootDirectory, ObjectName,
	 * Attributes, SecurityDescriptor, SecurityQualityOfService: none */
	smb_wr_u32(&w, 24);
	smb_wr_zero(&w, 20);
	smb_wr_u32(&w, POLICY_LOOKUP_NAMES);
	return request_end(&w);
}

int lsarpc_open_policy2_decode(const uint8_t *b, size_t len, uint32_t call_id,
                               uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status)
{
	struct smb_rd r;
	int rc = response_stub(b, len, call_id, &r, status);
	if (rc)
		return rc;
	smb_rd_bytes(&r, handle, LSARPC_HANDLE_LEN);
	*status = smb_rd_u32(&r);
	return r.err ? -EBADMSG : 0;
}

ssize_t lsarpc_close_encode(uint8_t *b, size_t cap, uint32_t call_id,
                            const uint8_t handle[LSARPC_HANDLE_LEN])
{
	struct smb_wr w;
	request_begin(&w, b, cap, call_id, OPNUM_CLOSE);
	smb_wr_bytes(&w, handle, LSARPC_HANDLE_LEN);
	return request_end(&w);
}

/* ---- LsarLookupSids ----------------------------------------------------------------- */

ssize_t lsarpc_lookup_sids_encode(uint8_t *b, size_t cap, uint32_t call_id,
                                  const uint8_t handle[LSARPC_HANDLE_LEN],
                                  const struct smb2_sid *sids, uint32_t n)
{
	if (n == 0 || !sids)
		return -EINVAL;
	if (n > LSARPC_MAX_SIDS)
		return -E2BIG;
	struct smb_wr w;
	uint32_t ref = 0x00020000; /* referent ids: any, not 0 */
	request_begin(&w, b, cap, call_id, OPNUM_LOOKUP_SIDS);
	smb_wr_bytes(&w, handle, LSARPC_HANDLE_LEN);
	/* SidEnumBuffer: Entries, SidInfo -> [Entries] { Sid -> SID } */
	smb_wr_u32(&w, n);
	smb_wr_u32(&w, ref++);
	smb_wr_u32(&w, n); /* conformance */
	for (uint32_t i = 0; i < n; i++)
		smb_wr_u32(&w, ref++);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t tmp[8 + 4 * SMB2_SID_MAX_SUB];
		ssize_t l = smb2_sid_encode(tmp, sizeof(tmp), &sids[i]);
		if (l < 0)
			return l;
		smb_wr_u32(&w, sids[i].nsub); /* conformance of SubAuthority */
		smb_wr_bytes(&w, tmp, (size_t)l);
	}
	/* TranslatedNames: none yet */
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 0);
	smb_wr_u16(&w, LOOKUP_LEVEL_WKSTA);
	smb_wr_zero(&w, 2);
	smb_wr_u32(&w, 0); /* MappedCount */
	return request_end(&w);
}

static void rd_align4(struct smb_rd *r)
{
	size_t off = (size_t)(r->p - r->base);
	smb_rd_skip(r, (4 - off % 4) % 4);
}

/* The deferred Buffer of an RPC_UNICODE_STRING of byte length len (0 with
 * a NULL Buffer): MaximumCount, Offset, ActualCount, the UTF-16 units.
 * Into out as UTF-8, or "" when it does not fit or convert. */
static void rd_unicode_string(struct smb_rd *r, uint16_t len, char *out)
{
	out[0] = '\0';
	uint32_t max = smb_rd_u32(r), offset = smb_rd_u32(r), actual = smb_rd_u32(r);
	if (r->err)
		return;
	if (offset != 0 || actual > max || (uint64_t)actual * 2 < len || actual > UINT32_MAX / 2) {
		r->err = -EBADMSG;
		return;
	}
	const uint8_t *s = smb_rd_ptr(r, (size_t)actual * 2);
	rd_align4(r);
	if (s && len <= 2 * LSARPC_NAME_MAX &&
	    smb_utf16le_to_utf8(s, len, out, LSARPC_NAME_BUF) < 0)
		out[0] = '\0';
}

/* A deferred SID: MaximumCount, then the SID. */
static void rd_sid(struct smb_rd *r)
{
	uint32_t count = smb_rd_u32(r);
	const uint8_t *p = smb_rd_ptr(r, 8);
	if (r->err || !p)
		return;
	if (p[1] != count || count > SMB2_SID_MAX_SUB) {
		r->err = -EBADMSG;
		return;
	}
	smb_rd_skip(r, 4 * (size_t)count);
}

int lsarpc_lookup_sids_decode(const uint8_t *b, size_t len, uint32_t call_id,
                              struct lsarpc_name *out, uint32_t n, uint32_t *status)
{
	struct smb_rd r;
	int rc = response_stub(b, len, call_id, &r, status);
	if (rc)
		return rc;
	if (n > LSARPC_MAX_SIDS)
		return -EINVAL;
	/* ReferencedDomains -> { Entries, Domains -> [ ] { Name, Sid }, MaxEntries } */
	char domains[LSARPC_MAX_SIDS][LSARPC_NAME_BUF];
	uint32_t ndom = 0;
	if (smb_rd_u32(&r)) {
		ndom = smb_rd_u32(&r);
		uint32_t dptr = smb_rd_u32(&r);
		smb_rd_skip(&r, 4); /* MaxEntries */
		if (r.err || ndom > LSARPC_MAX_SIDS || (ndom && !dptr))
			return -EBADMSG;
		if (dptr) {
			uint32_t conf = smb_rd_u32(&r);
			if (conf < ndom)
				return -EBADMSG;
			uint16_t nlen[LSARPC_MAX_SIDS];
			uint32_t nptr[LSARPC_MAX_SIDS], sptr[LSARPC_MAX_SIDS];
			for (uint32_t i = 0; i < ndom; i++) {
				nlen[i] = smb_rd_u16(&r);
				smb_rd_skip(&r, 2); /* MaximumLength */
				nptr[i] = smb_rd_u32(&r);
				sptr[i] = smb_rd_u32(&r);
			}
			for (uint32_t i = 0; i < ndom && !r.err; i++) {
				domains[i][0] = '\0';
				if (nptr[i])
					rd_unicode_string(&r, nlen[i], domains[i]);
				if (sptr[i])
					rd_sid(&r);
			}
		}
	}
	/* TranslatedNames: { Entries, Names -> [ ] { Use, Name, DomainIndex } } */
	uint32_t count = smb_rd_u32(&r), names = smb_rd_u32(&r);
	if (r.err || count != n || (count && !names))
		return -EBADMSG;
	if (names) {
		uint32_t conf = smb_rd_u32(&r);
		if (conf < count)
			return -EBADMSG;
		uint16_t nlen[LSARPC_MAX_SIDS];
		uint32_t nptr[LSARPC_MAX_SIDS];
		int32_t dom[LSARPC_MAX_SIDS];
		for (uint32_t i = 0; i < count; i++) {
			out[i].type = smb_rd_u16(&r);
			smb_rd_skip(&r, 2); /* to the 4-byte alignment of Name */
			nlen[i] = smb_rd_u16(&r);
			smb_rd_skip(&r, 2);
			nptr[i] = smb_rd_u32(&r);
			dom[i] = (int32_t)smb_rd_u32(&r);
		}
		for (uint32_t i = 0; i < count && !r.err; i++) {
			out[i].name[0] = '\0';
			if (nptr[i])
				rd_unicode_string(&r, nlen[i], out[i].name);
			out[i].domain[0] = '\0';
			if (dom[i] >= 0 && (uint32_t)dom[i] < ndom)
				memcpy(out[i].domain, domains[dom[i]], LSARPC_NAME_BUF);
		}
	}
	smb_rd_skip(&r, 4); /* MappedCount */
	*status = smb_rd_u32(&r);
	return r.err ? -EBADMSG : 0;
}
