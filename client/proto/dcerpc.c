/* client/proto/dcerpc.c — connection-oriented DCE/RPC PDUs, NDR helpers and
 * ept_map (see dcerpc.h for the layouts and the contract). */
#include "client/proto/dcerpc.h"

#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

const struct dcerpc_syntax dcerpc_ndr_syntax = {
    .uuid = {0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11, 0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10,
             0x48, 0x60},
    .major = 2,
};
const struct dcerpc_syntax dcerpc_epm_syntax = {
    .uuid = {0x08, 0x83, 0xaf, 0xe1, 0x1f, 0x5d, 0xc9, 0x11, 0x91, 0xa4, 0x08, 0x00, 0x2b, 0x14,
             0xa0, 0xfa},
    .major = 3,
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int dcerpc_uuid_parse(const char *s, uint8_t uuid[16])
{
	/* the bytes in text order, then the first three fields turned
	 * little-endian */
	uint8_t t[16];
	size_t k = 0;
	if (!s || strlen(s) != 36)
		return -EINVAL;
	for (size_t i = 0; i < 36;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i++] != '-')
				return -EINVAL;
			continue;
		}
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		t[k++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	const uint8_t order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
	for (size_t i = 0; i < 16; i++)
		uuid[i] = t[order[i]];
	return 0;
}

/* ---- the common header and the trailer -------------------------------------- */

static void hdr_put(struct smb_wr *w, uint8_t ptype, uint8_t flags, uint32_t call_id)
{
	smb_wr_u8(w, 5); /* rpc_vers */
	smb_wr_u8(w, 0); /* rpc_vers_minor */
	smb_wr_u8(w, ptype);
	smb_wr_u8(w, flags);
	smb_wr_u8(w, 0x10); /* drep: little-endian, ASCII, IEEE */
	smb_wr_zero(w, 3);
	smb_wr_u16(w, 0); /* frag_length: pdu_end() */
	smb_wr_u16(w, 0); /* auth_length: pdu_end() */
	smb_wr_u32(w, call_id);
}

/* The trailer after the body written so far (padded to pad_align), then
 * frag_length and auth_length. */
static ssize_t pdu_end(struct smb_wr *w, const struct dcerpc_auth *auth, size_t pad_align,
                       size_t body_from, size_t max_frag)
{
	if (auth) {
		size_t body = smb_wr_len(w) - body_from;
		size_t pad = (pad_align - body % pad_align) % pad_align;
		smb_wr_zero(w, pad);
		smb_wr_u8(w, auth->type);
		smb_wr_u8(w, auth->level);
		smb_wr_u8(w, (uint8_t)pad);
		smb_wr_u8(w, 0);
		smb_wr_u32(w, auth->context_id);
		if (auth->token)
			smb_wr_bytes(w, auth->token, auth->token_len);
		else
			smb_wr_zero(w, auth->token_len);
	}
	if (w->err)
		return w->err;
	size_t n = smb_wr_len(w);
	if (n > UINT16_MAX || (max_frag && n > max_frag))
		return -E2BIG;
	smb_put_le16(w->base + 8, (uint16_t)n);
	smb_put_le16(w->base + 10, auth ? auth->token_len : 0);
	return (ssize_t)n;
}

ssize_t dcerpc_pdu_decode(const uint8_t *b, size_t len, struct dcerpc_pdu *pdu)
{
	if (!b || !pdu || len < DCERPC_HDR_LEN)
		return -EBADMSG;
	memset(pdu, 0, sizeof(*pdu));
	struct dcerpc_hdr *h = &pdu->hdr;
	h->rpc_vers = b[0];
	h->rpc_vers_minor = b[1];
	h->ptype = b[2];
	h->pfc_flags = b[3];
	memcpy(h->drep, b + 4, 4);
	h->frag_length = smb_le16(b + 8);
	h->auth_length = smb_le16(b + 10);
	h->call_id = smb_le32(b + 12);
	if (h->rpc_vers != 5 || h->rpc_vers_minor > 1 || (h->drep[0] & 0xF0) != 0x10 ||
	    (h->drep[0] & 0x0F) != 0 || h->frag_length < DCERPC_HDR_LEN || h->frag_length > len)
		return -EBADMSG;
	size_t end = h->frag_length;
	pdu->body = b + DCERPC_HDR_LEN;
	if (h->auth_length) {
		if ((size_t)h->auth_length + DCERPC_AUTH_HDR > end - DCERPC_HDR_LEN)
			return -EBADMSG;
		size_t at = end - h->auth_length - DCERPC_AUTH_HDR;
		const uint8_t *t = b + at;
		pdu->has_auth = true;
		pdu->auth.type = t[0];
		pdu->auth.level = t[1];
		pdu->auth.pad_length = t[2];
		pdu->auth.context_id = smb_le32(t + 4);
		pdu->auth.token = t + DCERPC_AUTH_HDR;
		pdu->auth.token_len = h->auth_length;
		if (pdu->auth.pad_length > at - DCERPC_HDR_LEN)
			return -EBADMSG;
		end = at - pdu->auth.pad_length;
	}
	pdu->body_len = end - DCERPC_HDR_LEN;
	return h->frag_length;
}

/* ---- bind, alter_context ------------------------------------------------ */

static void syntax_put(struct smb_wr *w, const struct dcerpc_syntax *s)
{
	smb_wr_bytes(w, s->uuid, 16);
	smb_wr_u16(w, s->major);
	smb_wr_u16(w, s->minor);
}

static void syntax_get(struct smb_rd *r, struct dcerpc_syntax *s)
{
	smb_rd_bytes(r, s->uuid, 16);
	s->major = smb_rd_u16(r);
	s->minor = smb_rd_u16(r);
}

ssize_t dcerpc_bind_encode(uint8_t *b, size_t cap, const struct dcerpc_bind *bind,
                           const struct dcerpc_auth *auth)
{
	if (!bind || !bind->ctx || bind->n_ctx == 0 ||
	    (bind->ptype != DCERPC_PTYPE_BIND && bind->ptype != DCERPC_PTYPE_ALTER_CONTEXT))
		return -EINVAL;
	for (size_t i = 0; i < bind->n_ctx; i++)
		if (!bind->ctx[i].transfer || bind->ctx[i].n_transfer == 0)
			return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	hdr_put(&w, bind->ptype, bind->pfc_flags | DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG,
	        bind->call_id);
	smb_wr_u16(&w, bind->max_xmit_frag);
	smb_wr_u16(&w, bind->max_recv_frag);
	smb_wr_u32(&w, bind->assoc_group_id);
	smb_wr_u8(&w, bind->n_ctx); /* p_context_elem: n_context_elem */
	smb_wr_zero(&w, 3);
	for (size_t i = 0; i < bind->n_ctx; i++) {
		const struct dcerpc_ctx *c = &bind->ctx[i];
		smb_wr_u16(&w, c->id);
		smb_wr_u8(&w, c->n_transfer);
		smb_wr_u8(&w, 0);
		syntax_put(&w, &c->abstract);
		for (size_t k = 0; k < c->n_transfer; k++)
			syntax_put(&w, &c->transfer[k]);
	}
	/* the body is a multiple of 4 already: no padding before a trailer */
	return pdu_end(&w, auth, 4, DCERPC_HDR_LEN, 0);
}

int dcerpc_bind_ack_decode(const struct dcerpc_pdu *pdu, struct dcerpc_bind_ack *ack,
                           struct dcerpc_result *res, size_t max)
{
	if (!pdu || !ack || (!res && max))
		return -EINVAL;
	if (pdu->hdr.ptype != DCERPC_PTYPE_BIND_ACK &&
	    pdu->hdr.ptype != DCERPC_PTYPE_ALTER_CONTEXT_RESP)
		return -EBADMSG;
	memset(ack, 0, sizeof(*ack));
	/* offsets from the PDU's start: the alignment of the result list is */
	struct smb_rd r;
	smb_rd_init(&r, pdu->body - DCERPC_HDR_LEN, DCERPC_HDR_LEN + pdu->body_len);
	smb_rd_skip(&r, DCERPC_HDR_LEN);
	ack->max_xmit_frag = smb_rd_u16(&r);
	ack->max_recv_frag = smb_rd_u16(&r);
	ack->assoc_group_id = smb_rd_u32(&r);
	ack->sec_addr_len = smb_rd_u16(&r);
	ack->sec_addr = smb_rd_ptr(&r, ack->sec_addr_len);
	ndr_rd_align(&r, 4);
	ack->n_results = smb_rd_u8(&r);
	smb_rd_skip(&r, 3);
	for (size_t i = 0; i < ack->n_results && !r.err; i++) {
		struct dcerpc_result x;
		x.result = smb_rd_u16(&r);
		x.reason = smb_rd_u16(&r);
		syntax_get(&r, &x.transfer);
		if (i < max)
			res[i] = x;
	}
	if (r.err)
		return -EBADMSG;
	if (ack->sec_addr_len == 0)
		ack->sec_addr = NULL;
	return ack->n_results > max ? -E2BIG : 0;
}

int dcerpc_bind_nak_decode(const struct dcerpc_pdu *pdu, uint16_t *reason)
{
	if (!pdu || !reason)
		return -EINVAL;
	if (pdu->hdr.ptype != DCERPC_PTYPE_BIND_NAK || pdu->body_len < 2)
		return -EBADMSG;
	*reason = smb_le16(pdu->body);
	if (pdu->body_len > 2) {
		/* versions: n_protocols, then major, minor each */
		uint8_t n = pdu->body[2];
		if (pdu->body_len - 3 < 2 * (size_t)n)
			return -EBADMSG;
	}
	return 0;
}

/* ---- request, response, fault ------------------------------------------- */

void dcerpc_request_begin(struct smb_wr *w, uint8_t *b, size_t cap,
                          const struct dcerpc_request *req)
{
	uint8_t flags = req->pfc_flags & ~DCERPC_PFC_OBJECT_UUID;
	if (req->object)
		flags |= DCERPC_PFC_OBJECT_UUID;
	smb_wr_init(w, b, cap);
	hdr_put(w, DCERPC_PTYPE_REQUEST, flags, req->call_id);
	smb_wr_u32(w, req->alloc_hint); /* 0: dcerpc_request_end() */
	smb_wr_u16(w, req->ctx_id);
	smb_wr_u16(w, req->opnum);
	if (req->object)
		smb_wr_bytes(w, req->object, 16);
}

ssize_t dcerpc_request_end(struct smb_wr *w, const struct dcerpc_request *req,
                           const struct dcerpc_auth *auth, size_t max_frag)
{
	size_t from = DCERPC_REQ_HDR_LEN + (req->object ? 16 : 0);
	if (w->err)
		return w->err;
	size_t stub = smb_wr_len(w) - from;
	ssize_t n = pdu_end(w, auth, DCERPC_AUTH_PAD_ALIGN, from, max_frag);
	if (n > 0 && req->alloc_hint == 0)
		smb_put_le32(w->base + DCERPC_HDR_LEN, (uint32_t)stub);
	return n;
}

ssize_t dcerpc_request_encode(uint8_t *b, size_t cap, const struct dcerpc_request *req,
                              const uint8_t *stub, size_t stub_len, const struct dcerpc_auth *auth)
{
	if (!req || (!stub && stub_len))
		return -EINVAL;
	if (stub_len > UINT16_MAX)
		return -E2BIG;
	struct smb_wr w;
	dcerpc_request_begin(&w, b, cap, req);
	smb_wr_bytes(&w, stub, stub_len);
	return dcerpc_request_end(&w, req, auth, 0);
}

int dcerpc_response_decode(const struct dcerpc_pdu *pdu, struct dcerpc_response *rsp)
{
	if (!pdu || !rsp)
		return -EINVAL;
	uint8_t t = pdu->hdr.ptype;
	/* alloc_hint(4) p_cont_id(2) cancel_count(1) reserved(1), and a
	 * fault's status(4), then reserved(4), which some peers leave out */
	size_t fixed = t == DCERPC_PTYPE_FAULT ? 12 : 8;
	if ((t != DCERPC_PTYPE_RESPONSE && t != DCERPC_PTYPE_FAULT) || pdu->body_len < fixed)
		return -EBADMSG;
	if (t == DCERPC_PTYPE_FAULT && pdu->body_len >= 16)
		fixed = 16;
	memset(rsp, 0, sizeof(*rsp));
	rsp->pfc_flags = pdu->hdr.pfc_flags;
	rsp->call_id = pdu->hdr.call_id;
	rsp->alloc_hint = smb_le32(pdu->body);
	rsp->ctx_id = smb_le16(pdu->body + 4);
	rsp->cancel_count = pdu->body[6];
	rsp->stub = pdu->body + fixed;
	rsp->stub_len = pdu->body_len - fixed;
	if (t == DCERPC_PTYPE_FAULT) {
		rsp->status = smb_le32(pdu->body + 8);
		return -EREMOTEIO;
	}
	return 0;
}

void dcerpc_reasm_init(struct dcerpc_reasm *ra, uint8_t *buf, size_t cap)
{
	*ra = (struct dcerpc_reasm){.buf = buf, .cap = buf ? cap : 0};
}

int dcerpc_reasm_add(struct dcerpc_reasm *ra, const struct dcerpc_response *rsp)
{
	bool first = rsp->pfc_flags & DCERPC_PFC_FIRST_FRAG;
	if (ra->done || first == ra->started || (ra->started && rsp->call_id != ra->call_id))
		return -EBADMSG;
	ra->started = true;
	ra->call_id = rsp->call_id;
	if (rsp->stub_len > ra->cap - ra->len)
		return -E2BIG;
	if (rsp->stub_len)
		memcpy(ra->buf + ra->len, rsp->stub, rsp->stub_len);
	ra->len += rsp->stub_len;
	ra->done = (rsp->pfc_flags & DCERPC_PFC_LAST_FRAG) != 0;
	return ra->done ? 1 : 0;
}

/* ---- authentication: AUTH3, the signed and sealed regions ----------------- */

ssize_t dcerpc_auth3_encode(uint8_t *b, size_t cap, uint32_t call_id,
                            const struct dcerpc_auth *auth)
{
	if (!auth || (!auth->token && auth->token_len))
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	hdr_put(&w, DCERPC_PTYPE_AUTH3, DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG, call_id);
	smb_wr_zero(&w, DCERPC_AUTH3_PAD);
	/* 16 + 4 is a multiple of 4: no auth padding */
	return pdu_end(&w, auth, 4, DCERPC_HDR_LEN, 0);
}

int dcerpc_auth_span(const uint8_t *b, size_t len, struct dcerpc_auth_span *sp)
{
	struct dcerpc_pdu pdu;
	if (!sp)
		return -EINVAL;
	if (dcerpc_pdu_decode(b, len, &pdu) < 0 || !pdu.has_auth)
		return -EBADMSG;
	size_t fixed;
	switch (pdu.hdr.ptype) {
	case DCERPC_PTYPE_REQUEST:
		fixed =
		    DCERPC_REQ_HDR_LEN + ((pdu.hdr.pfc_flags & DCERPC_PFC_OBJECT_UUID) ? 16 : 0);
		break;
	case DCERPC_PTYPE_RESPONSE:
		fixed = DCERPC_REQ_HDR_LEN;
		break;
	case DCERPC_PTYPE_FAULT:
		fixed = DCERPC_REQ_HDR_LEN + 8;
		break;
	default:
		return -EBADMSG;
	}
	size_t trailer = pdu.hdr.frag_length - pdu.hdr.auth_length - DCERPC_AUTH_HDR;
	if (DCERPC_HDR_LEN + pdu.body_len < fixed)
		return -EBADMSG;
	sp->stub_off = fixed;
	sp->stub_len = trailer - fixed;
	sp->signed_len = trailer + DCERPC_AUTH_HDR;
	sp->token_off = sp->signed_len;
	sp->token_len = pdu.hdr.auth_length;
	return 0;
}

/* ---- NDR ------------------------------------------------------------------ */

void ndr_rd_align(struct smb_rd *r, size_t a)
{
	size_t off = (size_t)(r->p - r->base);
	smb_rd_skip(r, (a - off % a) % a);
}

void ndr_wr_ptr_string(struct smb_wr *w, const char *s, uint32_t *ref)
{
	smb_wr_align(w, 4);
	if (!s) {
		smb_wr_u32(w, 0);
		return;
	}
	smb_wr_u32(w, (*ref)++);
	/* the units go 12 bytes on; the counts are known after them */
	size_t at = smb_wr_len(w);
	smb_wr_zero(w, 12);
	if (w->err)
		return;
	ssize_t n = smb_utf8_to_utf16le(s, strlen(s), w->p, (size_t)(w->end - w->p), false);
	if (n == -ENOSPC || (n >= 0 && (size_t)n + 2 > (size_t)(w->end - w->p))) {
		w->err = -ENOSPC;
		return;
	}
	if (n < 0 || (size_t)n / 2 + 1 > UINT32_MAX) {
		w->err = -EINVAL;
		return;
	}
	w->p += n;
	smb_wr_u16(w, 0);
	uint32_t units = (uint32_t)n / 2 + 1;
	smb_put_le32(w->base + at, units); /* max_count */
	smb_put_le32(w->base + at + 4, 0); /* offset */
	smb_put_le32(w->base + at + 8, units);
	smb_wr_align(w, 4);
}

/* ---- the endpoint mapper -------------------------------------------------- */

/* lhs: protocol id + data; rhs: data */
static void floor_put(struct smb_wr *w, uint8_t prot, const void *lhs, uint16_t lhs_len,
                      const void *rhs, uint16_t rhs_len)
{
	smb_wr_u16(w, (uint16_t)(1 + lhs_len));
	smb_wr_u8(w, prot);
	smb_wr_bytes(w, lhs, lhs_len);
	smb_wr_u16(w, rhs_len);
	smb_wr_bytes(w, rhs, rhs_len);
}

/* An interface or transfer syntax floor: UUID, major version (LE) in the
 * lhs, minor version (LE) in the rhs. */
static void floor_put_syntax(struct smb_wr *w, const struct dcerpc_syntax *s)
{
	uint8_t lhs[18], rhs[2];
	memcpy(lhs, s->uuid, 16);
	smb_put_le16(lhs + 16, s->major);
	smb_put_le16(rhs, s->minor);
	floor_put(w, DCERPC_PROT_UUID, lhs, sizeof(lhs), rhs, sizeof(rhs));
}

static void tower_put(struct smb_wr *w, const struct dcerpc_tower *t)
{
	const uint8_t zero2[2] = {0, 0};
	const uint8_t port[2] = {(uint8_t)(t->port >> 8), (uint8_t)t->port};
	smb_wr_u16(w, 5); /* floor_count */
	floor_put_syntax(w, &t->iface);
	floor_put_syntax(w, &t->transfer);
	floor_put(w, DCERPC_PROT_NCACN, NULL, 0, zero2, 2); /* minor version 0 */
	floor_put(w, DCERPC_PROT_TCP, NULL, 0, port, 2);
	floor_put(w, DCERPC_PROT_IP, NULL, 0, t->ipv4, 4);
}

ssize_t dcerpc_tower_encode(uint8_t *b, size_t cap, const struct dcerpc_tower *t)
{
	if (!t)
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	tower_put(&w, t);
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

/* One floor: its protocol id, lhs data and rhs, all inside r. */
struct floor {
	uint8_t prot;
	const uint8_t *lhs, *rhs;
	uint16_t lhs_len, rhs_len; /* lhs_len without the protocol id */
};

static void floor_get(struct smb_rd *r, struct floor *f)
{
	uint16_t l = smb_rd_u16(r);
	if (l == 0)
		r->err = -EBADMSG;
	f->prot = smb_rd_u8(r);
	f->lhs_len = l ? (uint16_t)(l - 1) : 0;
	f->lhs = smb_rd_ptr(r, f->lhs_len);
	f->rhs_len = smb_rd_u16(r);
	f->rhs = smb_rd_ptr(r, f->rhs_len);
}

static bool floor_syntax(const struct floor *f, struct dcerpc_syntax *s)
{
	if (f->prot != DCERPC_PROT_UUID || f->lhs_len != 18 || f->rhs_len != 2)
		return false;
	memcpy(s->uuid, f->lhs, 16);
	s->major = smb_le16(f->lhs + 16);
	s->minor = smb_le16(f->rhs);
	return true;
}

int dcerpc_tower_decode(const uint8_t *b, size_t len, struct dcerpc_tower *t)
{
	if (!b || !t)
		return -EBADMSG;
	struct smb_rd r;
	struct floor f[5];
	smb_rd_init(&r, b, len);
	uint16_t n = smb_rd_u16(&r);
	for (uint16_t i = 0; i < n && !r.err; i++) {
		struct floor x;
		floor_get(&r, &x);
		if (i < 5)
			f[i] = x;
	}
	if (r.err || smb_rd_left(&r) != 0)
		return -EBADMSG;
	memset(t, 0, sizeof(*t));
	if (n != 5 || !floor_syntax(&f[0], &t->iface) || !floor_syntax(&f[1], &t->transfer) ||
	    f[2].prot != DCERPC_PROT_NCACN || f[2].lhs_len != 0 || f[2].rhs_len != 2 ||
	    f[3].prot != DCERPC_PROT_TCP || f[3].lhs_len != 0 || f[3].rhs_len != 2 ||
	    f[4].prot != DCERPC_PROT_IP || f[4].lhs_len != 0 || f[4].rhs_len != 4)
		return -ENOENT;
	t->port = (uint16_t)(f[3].rhs[0] << 8 | f[3].rhs[1]);
	memcpy(t->ipv4, f[4].rhs, 4);
	return 0;
}

ssize_t dcerpc_epm_map_encode(uint8_t *stub, size_t cap, const struct dcerpc_syntax *iface,
                              uint32_t max_towers)
{
	if (!iface)
		return -EINVAL;
	struct dcerpc_tower t = {.iface = *iface, .transfer = dcerpc_ndr_syntax};
	struct smb_wr w;
	smb_wr_init(&w, stub, cap);
	/* object: a full pointer to the nil UUID */
	smb_wr_u32(&w, 1);
	smb_wr_zero(&w, 16);
	/* map_tower: a full pointer to twr_t, a conformant structure: its
	 * max_count first, then tower_length and the octets */
	smb_wr_u32(&w, 2);
	size_t at = smb_wr_len(&w);
	smb_wr_zero(&w, 8);
	tower_put(&w, &t);
	if (w.err)
		return w.err;
	uint32_t tl = (uint32_t)(smb_wr_len(&w) - at - 8);
	smb_put_le32(w.base + at, tl);
	smb_put_le32(w.base + at + 4, tl);
	smb_wr_align(&w, 4);
	smb_wr_zero(&w, NDR_CONTEXT_HANDLE_LEN); /* entry_handle */
	smb_wr_u32(&w, max_towers);
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

int dcerpc_epm_map_decode(const uint8_t *stub, size_t len, const struct dcerpc_syntax *iface,
                          uint16_t *port, uint8_t ip[4], uint32_t *status)
{
	if (!iface || !port || !ip || !status)
		return -EINVAL;
	if (!stub)
		return -EBADMSG;
	struct smb_rd r;
	smb_rd_init(&r, stub, len);
	smb_rd_skip(&r, NDR_CONTEXT_HANDLE_LEN);
	uint32_t num = smb_rd_u32(&r);
	uint32_t max = smb_rd_u32(&r), off = smb_rd_u32(&r), actual = smb_rd_u32(&r);
	if (r.err || off != 0 || actual > max || actual != num || actual > smb_rd_left(&r) / 4)
		return -EBADMSG;
	const uint8_t *ptrs = smb_rd_ptr(&r, 4 * (size_t)actual);
	bool found = false;
	for (uint32_t i = 0; i < actual && !r.err; i++) {
		if (smb_le32(ptrs + 4 * i) == 0)
			continue;
		uint32_t conf = smb_rd_u32(&r), tl = smb_rd_u32(&r);
		if (r.err || conf != tl)
			return -EBADMSG;
		const uint8_t *tw = smb_rd_ptr(&r, tl);
		ndr_rd_align(&r, 4);
		if (r.err)
			return -EBADMSG;
		struct dcerpc_tower t;
		int rc = dcerpc_tower_decode(tw, tl, &t);
		if (rc == -EBADMSG)
			return rc;
		if (rc == 0 && !found && memcmp(t.iface.uuid, iface->uuid, 16) == 0 &&
		    t.iface.major == iface->major &&
		    memcmp(t.transfer.uuid, dcerpc_ndr_syntax.uuid, 16) == 0) {
			found = true;
			*port = t.port;
			memcpy(ip, t.ipv4, 4);
		}
	}
	*status = smb_rd_u32(&r);
	if (r.err || smb_rd_left(&r) != 0)
		return -EBADMSG;
	if (*status != 0)
		return -ENOENT;
	return found ? 0 : -ENOENT;
}
