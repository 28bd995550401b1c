/* client/proto/lsarpc.c — DCE/RPC on the LSA pipe: bind, LsarOpenPolicy2,
 * LsarLookupSids, LsarClose (see lsarpc.h for the layouts and the contract). */
#include "client/proto/lsarpc.h"

#include <errno.h>
#include <string.h>

#include "client/proto/dcerpc.h"
#include "client/proto/smb2.h"

#define OPNUM_CLOSE        LSARPC_OPNUM_CLOSE
#define OPNUM_LOOKUP_SIDS  LSARPC_OPNUM_LOOKUP_SIDS
#define OPNUM_OPEN_POLICY2 LSARPC_OPNUM_OPEN_POLICY2

#define POLICY_LOOKUP_NAMES 0x00000800u
#define LOOKUP_LEVEL_WKSTA  1 /* LsapLookupWksta */

/* 12345778-1234-abcd-ef00-0123456789ab v0.0, as it goes on the wire */
const struct dcerpc_syntax lsarpc_syntax = {
    .uuid = {0x78, 0x57, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0x00, 0x01, 0x23, 0x45, 0x67,
             0x89, 0xab},
};

/* An answer to call_id: one whole fragment without auth. */
static int pdu_check(const uint8_t *b, size_t len, uint32_t call_id, struct dcerpc_pdu *pdu)
{
	const uint8_t first_last = DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG;
	if (dcerpc_pdu_decode(b, len, pdu) < 0 || pdu->has_auth || pdu->hdr.call_id != call_id ||
	    (pdu->hdr.pfc_flags & first_last) != first_last)
		return -EBADMSG;
	return 0;
}

/* The stub of a response PDU (or the status of a fault: -EREMOTEIO). */
static int response_stub(const uint8_t *b, size_t len, uint32_t call_id, struct smb_rd *stub,
                         uint32_t *status)
{
	struct dcerpc_pdu pdu;
	struct dcerpc_response rsp;
	int rc = pdu_check(b, len, call_id, &pdu);
	if (!rc)
		rc = dcerpc_response_decode(&pdu, &rsp);
	if (rc == -EREMOTEIO)
		*status = rsp.status;
	if (rc)
		return rc;
	smb_rd_init(stub, rsp.stub, rsp.stub_len);
	return 0;
}

static void request_begin(struct smb_wr *w, struct dcerpc_request *req, uint8_t *b, size_t cap,
                          uint32_t call_id, uint16_t opnum)
{
	*req = (struct dcerpc_request){
	    .pfc_flags = DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG,
	    .call_id = call_id,
	    .opnum = opnum,
	};
	dcerpc_request_begin(w, b, cap, req);
}

/* ---- bind ---------------------------------------------------------------------- */

ssize_t lsarpc_bind_encode(uint8_t *b, size_t cap, uint32_t call_id)
{
	const struct dcerpc_ctx ctx = {
	    .abstract = lsarpc_syntax, .transfer = &dcerpc_ndr_syntax, .n_transfer = 1};
	const struct dcerpc_bind bind = {
	    .ptype = DCERPC_PTYPE_BIND,
	    .call_id = call_id,
	    .max_xmit_frag = LSARPC_MAX_FRAG,
	    .max_recv_frag = LSARPC_MAX_FRAG,
	    .ctx = &ctx,
	    .n_ctx = 1,
	};
	return dcerpc_bind_encode(b, cap, &bind, NULL);
}

int lsarpc_bind_ack_decode(const uint8_t *b, size_t len, uint32_t call_id)
{
	struct dcerpc_pdu pdu;
	struct dcerpc_bind_ack ack;
	struct dcerpc_result res;
	int rc = pdu_check(b, len, call_id, &pdu);
	if (rc)
		return rc;
	if (pdu.hdr.ptype == DCERPC_PTYPE_BIND_NAK)
		return -EPROTO;
	if (pdu.hdr.ptype != DCERPC_PTYPE_BIND_ACK)
		return -EBADMSG;
	rc = dcerpc_bind_ack_decode(&pdu, &ack, &res, 1);
	if (rc == -EBADMSG || ack.n_results == 0)
		return -EBADMSG;
	return res.result == DCERPC_RESULT_ACCEPT ? 0 : -EPROTO;
}

/* ---- LsarOpenPolicy2, LsarClose -------------------------------------------------- */

static void open_policy2_put(struct smb_wr *w)
{
	smb_wr_u32(w, 0); /* SystemName: NULL */
	/* ObjectAttributes: Length, then RootDirectory, ObjectName,
	 * Attributes, SecurityDescriptor, SecurityQualityOfService: none */
	smb_wr_u32(w, 24);
	smb_wr_zero(w, 20);
	smb_wr_u32(w, POLICY_LOOKUP_NAMES);
}

ssize_t lsarpc_open_policy2_encode(uint8_t *b, size_t cap, uint32_t call_id)
{
	struct smb_wr w;
	struct dcerpc_request req;
	request_begin(&w, &req, b, cap, call_id, OPNUM_OPEN_POLICY2);
	open_policy2_put(&w);
	return dcerpc_request_end(&w, &req, NULL, LSARPC_MAX_FRAG);
}

ssize_t lsarpc_open_policy2_stub_encode(uint8_t *stub, size_t cap)
{
	struct smb_wr w;
	smb_wr_init(&w, stub, cap);
	open_policy2_put(&w);
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

static int open_policy2_get(struct smb_rd *r, uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status)
{
	smb_rd_bytes(r, handle, LSARPC_HANDLE_LEN);
	*status = smb_rd_u32(r);
	return r->err ? -EBADMSG : 0;
}

int lsarpc_open_policy2_decode(const uint8_t *b, size_t len, uint32_t call_id,
                               uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status)
{
	struct smb_rd r;
	int rc = response_stub(b, len, call_id, &r, status);
	if (rc)
		return rc;
	return open_policy2_get(&r, handle, status);
}

int lsarpc_open_policy2_stub_decode(const uint8_t *stub, size_t len,
                                    uint8_t handle[LSARPC_HANDLE_LEN], uint32_t *status)
{
	struct smb_rd r;
	if (!stub && len)
		return -EBADMSG;
	smb_rd_init(&r, stub, len);
	return open_policy2_get(&r, handle, status);
}

ssize_t lsarpc_close_encode(uint8_t *b, size_t cap, uint32_t call_id,
                            const uint8_t handle[LSARPC_HANDLE_LEN])
{
	struct smb_wr w;
	struct dcerpc_request req;
	request_begin(&w, &req, b, cap, call_id, OPNUM_CLOSE);
	smb_wr_bytes(&w, handle, LSARPC_HANDLE_LEN);
	return dcerpc_request_end(&w, &req, NULL, LSARPC_MAX_FRAG);
}

ssize_t lsarpc_close_stub_encode(uint8_t *stub, size_t cap, const uint8_t handle[LSARPC_HANDLE_LEN])
{
	struct smb_wr w;
	smb_wr_init(&w, stub, cap);
	smb_wr_bytes(&w, handle, LSARPC_HANDLE_LEN);
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

/* ---- LsarLookupSids ----------------------------------------------------------------- */

static int lookup_sids_put(struct smb_wr *w, const uint8_t handle[LSARPC_HANDLE_LEN],
                           const struct smb2_sid *sids, uint32_t n)
{
	if (n == 0 || !sids)
		return -EINVAL;
	if (n > LSARPC_MAX_SIDS)
		return -E2BIG;
	uint32_t ref = 0x00020000; /* referent ids: any, not 0 */
	smb_wr_bytes(w, handle, LSARPC_HANDLE_LEN);
	/* SidEnumBuffer: Entries, SidInfo -> [Entries] { Sid -> SID } */
	smb_wr_u32(w, n);
	smb_wr_u32(w, ref++);
	smb_wr_u32(w, n); /* conformance */
	for (uint32_t i = 0; i < n; i++)
		smb_wr_u32(w, ref++);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t tmp[8 + 4 * SMB2_SID_MAX_SUB];
		ssize_t l = smb2_sid_encode(tmp, sizeof(tmp), &sids[i]);
		if (l < 0)
			return (int)l;
		smb_wr_u32(w, sids[i].nsub); /* conformance of SubAuthority */
		smb_wr_bytes(w, tmp, (size_t)l);
	}
	/* TranslatedNames: none yet */
	smb_wr_u32(w, 0);
	smb_wr_u32(w, 0);
	smb_wr_u16(w, LOOKUP_LEVEL_WKSTA);
	smb_wr_zero(w, 2);
	smb_wr_u32(w, 0); /* MappedCount */
	return 0;
}

ssize_t lsarpc_lookup_sids_encode(uint8_t *b, size_t cap, uint32_t call_id,
                                  const uint8_t handle[LSARPC_HANDLE_LEN],
                                  const struct smb2_sid *sids, uint32_t n)
{
	struct smb_wr w;
	struct dcerpc_request req;
	if (n == 0 || !sids)
		return -EINVAL;
	if (n > LSARPC_MAX_SIDS)
		return -E2BIG;
	request_begin(&w, &req, b, cap, call_id, OPNUM_LOOKUP_SIDS);
	int rc = lookup_sids_put(&w, handle, sids, n);
	if (rc)
		return rc;
	return dcerpc_request_end(&w, &req, NULL, LSARPC_MAX_FRAG);
}

ssize_t lsarpc_lookup_sids_stub_encode(uint8_t *stub, size_t cap,
                                       const uint8_t handle[LSARPC_HANDLE_LEN],
                                       const struct smb2_sid *sids, uint32_t n)
{
	struct smb_wr w;
	smb_wr_init(&w, stub, cap);
	int rc = lookup_sids_put(&w, handle, sids, n);
	if (rc)
		return rc;
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
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
	ndr_rd_align(r, 4);
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

static int lookup_sids_get(struct smb_rd *rd, struct lsarpc_name *out, uint32_t n,
                           uint32_t *status);

int lsarpc_lookup_sids_decode(const uint8_t *b, size_t len, uint32_t call_id,
                              struct lsarpc_name *out, uint32_t n, uint32_t *status)
{
	struct smb_rd r;
	int rc = response_stub(b, len, call_id, &r, status);
	if (rc)
		return rc;
	return lookup_sids_get(&r, out, n, status);
}

int lsarpc_lookup_sids_stub_decode(const uint8_t *stub, size_t len, struct lsarpc_name *out,
                                   uint32_t n, uint32_t *status)
{
	struct smb_rd r;
	if (!stub && len)
		return -EBADMSG;
	smb_rd_init(&r, stub, len);
	return lookup_sids_get(&r, out, n, status);
}

/* The stub of LsarLookupSids' answer, from r. */
static int lookup_sids_get(struct smb_rd *rd, struct lsarpc_name *out, uint32_t n, uint32_t *status)
{
	struct smb_rd r = *rd;
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
