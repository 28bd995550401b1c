/* client/proto/smb2_msg.c — SMB2/3 message bodies ([MS-SMB2] 2.2): the
 * header, compound walking, and every request encoder and response decoder
 * the client uses.  See smb2.h for the contract.
 *
 * Conventions here:
 *  - Request encoders write the body through struct smb_wr starting at the
 *    body (header offset 64); since 64 is a multiple of 8, aligning from the
 *    body start is the same as aligning from the header start.  A request
 *    whose StructureSize is odd always carries at least one Buffer byte
 *    (a zero pad when its variable part is empty), as servers expect.
 *  - Response decoders first call rsp_body(), which checks the length and
 *    StructureSize, then read the fixed part through struct smb_rd and check
 *    every (offset, length) from the wire with rsp_buf().
 */
#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

#define BODY SMB2_HDR_SIZE /* header offset of the first body byte */

/* ---- helpers --------------------------------------------------------------- */

static ssize_t wr_result(const struct smb_wr *w)
{
	return w->err ? w->err : (ssize_t)smb_wr_len(w);
}

/* Converts s into the writer as UTF-16LE; returns the bytes written (and
 * leaves w->err set on failure). */
static size_t wr_utf16(struct smb_wr *w, const char *s, bool path)
{
	if (w->err)
		return 0;
	ssize_t n = smb_utf8_to_utf16le(s, strlen(s), w->p, (size_t)(w->end - w->p), path);
	if (n < 0) {
		w->err = (int)n;
		return 0;
	}
	if (n)
		w->p += n;
	return (size_t)n;
}

/* Pads an odd-StructureSize request whose Buffer would otherwise be empty. */
static void wr_min_buffer(struct smb_wr *w, size_t fixed)
{
	if (!w->err && smb_wr_len(w) == fixed)
		smb_wr_u8(w, 0);
}

static void wr_fileid(struct smb_wr *w, const struct smb2_fileid *f)
{
	smb_wr_u64(w, f->persistent);
	smb_wr_u64(w, f->volatile_);
}

/* Checks that msg holds a header and a response body with StructureSize ss
 * and positions r after the StructureSize.  A body may be one byte shorter
 * than an odd StructureSize (empty Buffer), as real servers send it. */
static int rsp_body(const uint8_t *msg, size_t len, uint16_t ss, struct smb_rd *r)
{
	if (!msg || len < BODY + 2)
		return -EBADMSG;
	if (smb_le16(msg + BODY) != ss)
		return -EPROTO;
	if (len - BODY < (size_t)(ss & ~1u))
		return -EBADMSG;
	smb_rd_init(r, msg, len);
	smb_rd_seek(r, BODY + 2);
	return 0;
}

/* An (offset-from-header, length) pair from the wire: the bytes must lie in
 * msg and after the fixed body (min_off).  Empty buffers give NULL whatever
 * their offset says. */
static int rsp_buf(const uint8_t *msg, size_t len, uint64_t off, uint64_t blen, size_t min_off,
                   const uint8_t **out)
{
	*out = NULL;
	if (blen == 0)
		return 0;
	if (off < min_off || off > len || blen > len - off)
		return -EBADMSG;
	*out = msg + off;
	return 0;
}

/* Decoders of bodies that are only StructureSize + Reserved. */
static int rsp_trivial(const uint8_t *msg, size_t len, uint16_t ss)
{
	struct smb_rd r;
	return rsp_body(msg, len, ss, &r);
}

static ssize_t req_trivial(uint8_t *body, size_t cap)
{
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 4);
	smb_wr_u16(&w, 0);
	return wr_result(&w);
}

/* ---- header ---------------------------------------------------------------- */

ssize_t smb2_hdr_encode(uint8_t *buf, size_t cap, const struct smb2_hdr *h)
{
	struct smb_wr w;

	smb_wr_init(&w, buf, cap);
	smb_wr_u32(&w, SMB2_PROTOCOL_ID);
	smb_wr_u16(&w, SMB2_HDR_SIZE);
	smb_wr_u16(&w, h->credit_charge);
	smb_wr_u32(&w, h->status);
	smb_wr_u16(&w, h->command);
	smb_wr_u16(&w, h->credits);
	smb_wr_u32(&w, h->flags);
	smb_wr_u32(&w, h->next_command);
	smb_wr_u64(&w, h->message_id);
	if (h->flags & SMB2_FLAGS_ASYNC_COMMAND) {
		smb_wr_u64(&w, h->async_id);
	} else {
		smb_wr_u32(&w, h->process_id);
		smb_wr_u32(&w, h->tree_id);
	}
	smb_wr_u64(&w, h->session_id);
	smb_wr_bytes(&w, h->signature, sizeof(h->signature));
	return wr_result(&w);
}

int smb2_hdr_decode(const uint8_t *buf, size_t len, struct smb2_hdr *h)
{
	struct smb_rd r;

	if (!buf || len < SMB2_HDR_SIZE)
		return -EBADMSG;
	smb_rd_init(&r, buf, len);
	if (smb_rd_u32(&r) != SMB2_PROTOCOL_ID)
		return -EBADMSG;
	if (smb_rd_u16(&r) != SMB2_HDR_SIZE)
		return -EPROTO;
	memset(h, 0, sizeof(*h));
	h->credit_charge = smb_rd_u16(&r);
	h->status = smb_rd_u32(&r);
	h->command = smb_rd_u16(&r);
	h->credits = smb_rd_u16(&r);
	h->flags = smb_rd_u32(&r);
	h->next_command = smb_rd_u32(&r);
	h->message_id = smb_rd_u64(&r);
	if (h->flags & SMB2_FLAGS_ASYNC_COMMAND) {
		h->async_id = smb_rd_u64(&r);
	} else {
		h->process_id = smb_rd_u32(&r);
		h->tree_id = smb_rd_u32(&r);
	}
	h->session_id = smb_rd_u64(&r);
	smb_rd_bytes(&r, h->signature, sizeof(h->signature));
	return r.err;
}

ssize_t smb2_compound_next(const uint8_t *msg, size_t len, size_t off)
{
	if (!msg || off > len || len - off < SMB2_HDR_SIZE)
		return -EBADMSG;
	uint32_t next = smb_le32(msg + off + SMB2_HDR_NEXTCOMMAND_OFF);
	if (next == 0)
		return (ssize_t)(len - off);
	if (next < SMB2_HDR_SIZE || next % 8 || next > len - off)
		return -EBADMSG;
	/* The member that follows must at least hold a header. */
	if (len - off - next < SMB2_HDR_SIZE)
		return -EBADMSG;
	return (ssize_t)next;
}

/* ---- ERROR 2.2.2 ----------------------------------------------------------- */

int smb2_error_rsp_decode(const uint8_t *msg, size_t len, struct smb2_error_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 9, &r);
	if (rc)
		return rc;
	o->error_context_count = smb_rd_u8(&r);
	smb_rd_skip(&r, 1);
	o->byte_count = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	return rsp_buf(msg, len, BODY + 8, o->byte_count, BODY + 8, &o->error_data);
}

bool smb2_is_error_body(const uint8_t *msg, size_t len)
{
	if (!msg || len < BODY + 2 || smb_le16(msg + BODY) != 9)
		return false;
	uint16_t cmd = smb_le16(msg + 12);
	uint32_t status = smb_le32(msg + 8);
	switch (cmd) {
	case SMB2_SESSION_SETUP:
	case SMB2_QUERY_DIRECTORY:
	case SMB2_QUERY_INFO:
	case SMB2_CHANGE_NOTIFY:
		/* These commands' own bodies are also StructureSize 9: tell
		 * them apart by the statuses that carry the command body. */
		return !(status == STATUS_SUCCESS || status == STATUS_BUFFER_OVERFLOW ||
		         status == STATUS_MORE_PROCESSING_REQUIRED ||
		         status == STATUS_NOTIFY_ENUM_DIR);
	default:
		return true;
	}
}

/* ---- NEGOTIATE 2.2.3 / 2.2.4 ------------------------------------------------ */

/* Starts a negotiate context ([MS-SMB2] 2.2.3.1): 8-aligned, 8-byte header. */
static void neg_ctx_begin(struct smb_wr *w, uint16_t type, uint16_t data_len)
{
	smb_wr_align(w, 8);
	smb_wr_u16(w, type);
	smb_wr_u16(w, data_len);
	smb_wr_u32(w, 0);
}

static const uint8_t posix_ctx_guid[16] = {SMB2_POSIX_GUID_BYTES};

ssize_t smb2_negotiate_req_encode(uint8_t *body, size_t cap, const struct smb2_negotiate_req *q)
{
	struct smb_wr w;
	bool smb311 = false;

	if (q->dialect_count < 1 || q->dialect_count > SMB2_MAX_DIALECTS || q->cipher_count < 0 ||
	    q->cipher_count > SMB2_MAX_CIPHERS || q->signing_alg_count < 0 ||
	    q->signing_alg_count > SMB2_MAX_SIGNALGS)
		return -EINVAL;
	for (int i = 0; i < q->dialect_count; i++)
		if (q->dialects[i] == SMB2_DIALECT_0311)
			smb311 = true;

	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 36);
	smb_wr_u16(&w, (uint16_t)q->dialect_count);
	smb_wr_u16(&w, q->security_mode);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, q->capabilities);
	smb_wr_bytes(&w, q->client_guid, 16);
	/* NegotiateContextOffset/Count/Reserved2, or ClientStartTime (0)
	 * before 3.1.1; filled in below. */
	uint8_t *ctx_fields = w.p;
	smb_wr_u64(&w, 0);
	for (int i = 0; i < q->dialect_count; i++)
		smb_wr_u16(&w, q->dialects[i]);
	if (!smb311 || w.err)
		return wr_result(&w);

	uint16_t count = 0;
	smb_wr_align(&w, 8);
	uint32_t ctx_off = (uint32_t)(BODY + smb_wr_len(&w));

	neg_ctx_begin(&w, SMB2_PREAUTH_INTEGRITY_CAPABILITIES, 2 + 2 + 2 + 32);
	smb_wr_u16(&w, 1);  /* HashAlgorithmCount */
	smb_wr_u16(&w, 32); /* SaltLength */
	smb_wr_u16(&w, SMB2_PREAUTH_INTEGRITY_SHA512);
	smb_wr_bytes(&w, q->preauth_salt, 32);
	count++;

	if (q->cipher_count > 0) {
		neg_ctx_begin(&w, SMB2_ENCRYPTION_CAPABILITIES,
		              (uint16_t)(2 + 2 * q->cipher_count));
		smb_wr_u16(&w, (uint16_t)q->cipher_count);
		for (int i = 0; i < q->cipher_count; i++)
			smb_wr_u16(&w, q->ciphers[i]);
		count++;
	}
	if (q->signing_alg_count > 0) {
		neg_ctx_begin(&w, SMB2_SIGNING_CAPABILITIES,
		              (uint16_t)(2 + 2 * q->signing_alg_count));
		smb_wr_u16(&w, (uint16_t)q->signing_alg_count);
		for (int i = 0; i < q->signing_alg_count; i++)
			smb_wr_u16(&w, q->signing_algs[i]);
		count++;
	}
	if (q->netname && q->netname[0]) {
		neg_ctx_begin(&w, SMB2_NETNAME_NEGOTIATE_CONTEXT_ID, 0);
		uint8_t *len_field = w.p - 6;
		size_t n = wr_utf16(&w, q->netname, false);
		if (n > UINT16_MAX && !w.err)
			w.err = -EINVAL;
		if (!w.err)
			smb_put_le16(len_field, (uint16_t)n);
		count++;
	}
	if (q->posix_extensions) {
		neg_ctx_begin(&w, SMB2_POSIX_EXTENSIONS_AVAILABLE, sizeof(posix_ctx_guid));
		smb_wr_bytes(&w, posix_ctx_guid, sizeof(posix_ctx_guid));
		count++;
	}
	if (w.err)
		return w.err;
	smb_put_le32(ctx_fields, ctx_off);
	smb_put_le16(ctx_fields + 4, count);
	return wr_result(&w);
}

/* Reads one negotiate context's data into the response. */
static int neg_ctx_decode(struct smb2_negotiate_rsp *o, uint16_t type, const uint8_t *d,
                          uint16_t dlen)
{
	uint16_t n;

	switch (type) {
	case SMB2_PREAUTH_INTEGRITY_CAPABILITIES:
		if (o->preauth_seen || dlen < 4)
			return -EBADMSG;
		n = smb_le16(d);
		if (n < 1 || (uint32_t)4 + 2u * n + smb_le16(d + 2) > dlen)
			return -EBADMSG;
		o->preauth_seen = true;
		o->preauth_hash_alg = smb_le16(d + 4);
		return 0;
	case SMB2_ENCRYPTION_CAPABILITIES:
		if (o->cipher_seen || dlen < 2)
			return -EBADMSG;
		n = smb_le16(d);
		if (n < 1 || (uint32_t)2 + 2u * n > dlen)
			return -EBADMSG;
		o->cipher_seen = true;
		o->cipher = smb_le16(d + 2);
		return 0;
	case SMB2_SIGNING_CAPABILITIES:
		if (o->signing_seen || dlen < 2)
			return -EBADMSG;
		n = smb_le16(d);
		if (n < 1 || (uint32_t)2 + 2u * n > dlen)
			return -EBADMSG;
		o->signing_seen = true;
		o->signing_alg = smb_le16(d + 2);
		return 0;
	case SMB2_POSIX_EXTENSIONS_AVAILABLE:
		o->posix_seen = true;
		return 0;
	default:
		return 0; /* others (compression, transport, ...) are not ours to judge */
	}
}

int smb2_negotiate_rsp_decode(const uint8_t *msg, size_t len, struct smb2_negotiate_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 65, &r);
	if (rc)
		return rc;
	memset(o, 0, sizeof(*o));
	o->security_mode = smb_rd_u16(&r);
	o->dialect = smb_rd_u16(&r);
	uint16_t ctx_count = smb_rd_u16(&r);
	smb_rd_bytes(&r, o->server_guid, 16);
	o->capabilities = smb_rd_u32(&r);
	o->max_transact_size = smb_rd_u32(&r);
	o->max_read_size = smb_rd_u32(&r);
	o->max_write_size = smb_rd_u32(&r);
	o->system_time = smb_rd_u64(&r);
	o->server_start_time = smb_rd_u64(&r);
	uint16_t sec_off = smb_rd_u16(&r);
	o->security_buffer_len = smb_rd_u16(&r);
	uint32_t ctx_off = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	rc = rsp_buf(msg, len, sec_off, o->security_buffer_len, BODY + 64, &o->security_buffer);
	if (rc)
		return rc;
	/* Before 3.1.1 the context fields are reserved. */
	if (o->dialect != SMB2_DIALECT_0311 || ctx_count == 0)
		return 0;

	uint64_t off = ctx_off;
	if (off < BODY + 64)
		return -EBADMSG;
	for (uint16_t i = 0; i < ctx_count; i++) {
		if (i > 0)
			off = (off + 7) & ~(uint64_t)7;
		if (off > len || len - off < 8)
			return -EBADMSG;
		uint16_t type = smb_le16(msg + off);
		uint16_t dlen = smb_le16(msg + off + 2);
		if (dlen > len - off - 8)
			return -EBADMSG;
		rc = neg_ctx_decode(o, type, msg + off + 8, dlen);
		if (rc)
			return rc;
		o->context_count++;
		off += 8u + dlen;
	}
	return 0;
}

/* ---- SESSION_SETUP 2.2.5 / 2.2.6, LOGOFF 2.2.7 / 2.2.8 ------------------- */

ssize_t smb2_session_setup_req_encode(uint8_t *body, size_t cap,
                                      const struct smb2_session_setup_req *q)
{
	struct smb_wr w;

	if (q->security_buffer_len && !q->security_buffer)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 25);
	smb_wr_u8(&w, q->flags);
	smb_wr_u8(&w, q->security_mode);
	smb_wr_u32(&w, q->capabilities);
	smb_wr_u32(&w, 0); /* Channel */
	smb_wr_u16(&w, BODY + 24);
	smb_wr_u16(&w, q->security_buffer_len);
	smb_wr_u64(&w, q->previous_session_id);
	smb_wr_bytes(&w, q->security_buffer, q->security_buffer_len);
	wr_min_buffer(&w, 24);
	return wr_result(&w);
}

int smb2_session_setup_rsp_decode(const uint8_t *msg, size_t len, struct smb2_session_setup_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 9, &r);
	if (rc)
		return rc;
	o->session_flags = smb_rd_u16(&r);
	uint16_t off = smb_rd_u16(&r);
	o->security_buffer_len = smb_rd_u16(&r);
	if (r.err)
		return r.err;
	return rsp_buf(msg, len, off, o->security_buffer_len, BODY + 8, &o->security_buffer);
}

ssize_t smb2_logoff_req_encode(uint8_t *body, size_t cap)
{
	return req_trivial(body, cap);
}

int smb2_logoff_rsp_decode(const uint8_t *msg, size_t len)
{
	return rsp_trivial(msg, len, 4);
}

/* ---- TREE_CONNECT 2.2.9 / 2.2.10, TREE_DISCONNECT 2.2.11 / 2.2.12 -------- */

ssize_t smb2_tree_connect_req_encode(uint8_t *body, size_t cap,
                                     const struct smb2_tree_connect_req *q)
{
	struct smb_wr w;

	if (!q->path || !q->path[0])
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 9);
	smb_wr_u16(&w, q->flags);
	smb_wr_u16(&w, BODY + 8);
	uint8_t *len_field = w.p;
	smb_wr_u16(&w, 0);
	size_t n = wr_utf16(&w, q->path, true);
	if (w.err)
		return w.err;
	if (n > UINT16_MAX)
		return -EINVAL;
	smb_put_le16(len_field, (uint16_t)n);
	return wr_result(&w);
}

int smb2_tree_connect_rsp_decode(const uint8_t *msg, size_t len, struct smb2_tree_connect_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 16, &r);
	if (rc)
		return rc;
	o->share_type = smb_rd_u8(&r);
	smb_rd_skip(&r, 1);
	o->share_flags = smb_rd_u32(&r);
	o->capabilities = smb_rd_u32(&r);
	o->maximal_access = smb_rd_u32(&r);
	return r.err;
}

ssize_t smb2_tree_disconnect_req_encode(uint8_t *body, size_t cap)
{
	return req_trivial(body, cap);
}

int smb2_tree_disconnect_rsp_decode(const uint8_t *msg, size_t len)
{
	return rsp_trivial(msg, len, 4);
}

/* ---- CREATE 2.2.13 / 2.2.14 ------------------------------------------------ */

/* Writes one create context ([MS-SMB2] 2.2.13.2) at the writer's current,
 * 8-aligned position and returns where it starts. */
static uint8_t *create_ctx_write(struct smb_wr *w, const struct smb2_create_ctx *c)
{
	size_t nl = strlen(c->name);
	uint16_t data_off = c->data_len ? (uint16_t)((16 + nl + 7) & ~(size_t)7) : 0;

	smb_wr_align(w, 8);
	uint8_t *start = w->p;
	smb_wr_u32(w, 0); /* Next: patched by the caller */
	smb_wr_u16(w, 16);
	smb_wr_u16(w, (uint16_t)nl);
	smb_wr_u16(w, 0);
	smb_wr_u16(w, data_off);
	smb_wr_u32(w, c->data_len);
	smb_wr_bytes(w, c->name, nl);
	if (c->data_len) {
		smb_wr_align(w, 8);
		smb_wr_bytes(w, c->data, c->data_len);
	}
	return start;
}

ssize_t smb2_create_req_encode(uint8_t *body, size_t cap, const struct smb2_create_req *q)
{
	struct smb_wr w;
	const char *name = q->name ? q->name : "";

	if (q->context_count < 0 || q->context_count > SMB2_MAX_CREATE_CTX)
		return -EINVAL;
	for (int i = 0; i < q->context_count; i++) {
		const struct smb2_create_ctx *c = &q->contexts[i];
		size_t nl = c->name ? strlen(c->name) : 0;
		if (nl < 1 || nl > 64 || (c->data_len && !c->data) || c->data_len > INT32_MAX)
			return -EINVAL;
	}
	/* Names are relative to the share; a leading separator would make
	 * the server refuse the open, so "/a/b" is taken to mean "a/b". */
	while (*name == '/')
		name++;

	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 57);
	smb_wr_u8(&w, 0); /* SecurityFlags */
	smb_wr_u8(&w, q->requested_oplock_level);
	smb_wr_u32(&w, q->impersonation_level);
	smb_wr_u64(&w, 0); /* SmbCreateFlags */
	smb_wr_u64(&w, 0); /* Reserved */
	smb_wr_u32(&w, q->desired_access);
	smb_wr_u32(&w, q->file_attributes);
	smb_wr_u32(&w, q->share_access);
	smb_wr_u32(&w, q->create_disposition);
	smb_wr_u32(&w, q->create_options);
	smb_wr_u16(&w, BODY + 56);
	uint8_t *fields = w.p; /* NameLength, CreateContextsOffset/Length */
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 0);
	size_t nl = wr_utf16(&w, name, !q->posix_path);
	if (w.err)
		return w.err;
	if (nl > UINT16_MAX)
		return -EINVAL;
	smb_put_le16(fields, (uint16_t)nl);
	/* The root ("") still gets a one-byte Buffer. */
	wr_min_buffer(&w, 56);

	if (q->context_count > 0) {
		uint8_t *prev = NULL, *first = NULL;
		smb_wr_align(&w, 8);
		for (int i = 0; i < q->context_count && !w.err; i++) {
			uint8_t *cur = create_ctx_write(&w, &q->contexts[i]);
			if (w.err)
				break;
			if (prev)
				smb_put_le32(prev, (uint32_t)(cur - prev));
			else
				first = cur;
			prev = cur;
		}
		if (w.err)
			return w.err;
		smb_put_le32(fields + 2, (uint32_t)(BODY + (first - w.base)));
		smb_put_le32(fields + 6, (uint32_t)(w.p - first));
	}
	return wr_result(&w);
}

int smb2_create_rsp_decode(const uint8_t *msg, size_t len, struct smb2_create_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 89, &r);
	if (rc)
		return rc;
	o->oplock_level = smb_rd_u8(&r);
	o->flags = smb_rd_u8(&r);
	o->create_action = smb_rd_u32(&r);
	o->creation_time = smb_rd_u64(&r);
	o->last_access_time = smb_rd_u64(&r);
	o->last_write_time = smb_rd_u64(&r);
	o->change_time = smb_rd_u64(&r);
	o->allocation_size = smb_rd_u64(&r);
	o->end_of_file = smb_rd_u64(&r);
	o->file_attributes = smb_rd_u32(&r);
	smb_rd_skip(&r, 4);
	o->fileid.persistent = smb_rd_u64(&r);
	o->fileid.volatile_ = smb_rd_u64(&r);
	uint32_t off = smb_rd_u32(&r);
	o->contexts_len = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	return rsp_buf(msg, len, off, o->contexts_len, BODY + 88, &o->contexts);
}

int smb2_create_ctx_next_raw(const uint8_t *chain, uint32_t chain_len, uint32_t *off,
                             const uint8_t **name, uint16_t *name_len, const uint8_t **data,
                             uint32_t *data_len)
{
	uint32_t o = *off;

	if (!chain || o >= chain_len)
		return 0;
	if (chain_len - o < 16)
		return -EBADMSG;
	const uint8_t *c = chain + o;
	uint32_t next = smb_le32(c);
	uint16_t noff = smb_le16(c + 4), nlen = smb_le16(c + 6);
	uint16_t doff = smb_le16(c + 10);
	uint32_t dlen = smb_le32(c + 12);
	uint32_t limit = chain_len - o; /* this context's extent */

	if (next) {
		/* Next must move forward to an 8-aligned context that fits. */
		if (next % 8 || next < 16 || next > limit || limit - next < 16)
			return -EBADMSG;
		limit = next;
	}
	if (nlen == 0 || noff < 16 || noff > limit || nlen > limit - noff)
		return -EBADMSG;
	if (dlen && (doff < 16 || doff > limit || dlen > limit - doff))
		return -EBADMSG;
	*name = c + noff;
	*name_len = nlen;
	*data = dlen ? c + doff : NULL;
	*data_len = dlen;
	*off = next ? o + next : chain_len;
	return 1;
}

int smb2_create_ctx_next(const uint8_t *chain, uint32_t chain_len, uint32_t *off, char name[5],
                         const uint8_t **data, uint32_t *data_len)
{
	const uint8_t *n;
	uint16_t nlen;
	int rc = smb2_create_ctx_next_raw(chain, chain_len, off, &n, &nlen, data, data_len);
	if (rc <= 0)
		return rc;
	/* Tags other than the 4-character ones (GUID-named contexts) come
	 * back with an empty name; smb2_create_ctx_next_raw() shows them. */
	if (nlen == 4) {
		memcpy(name, n, 4);
		name[4] = '\0';
	} else {
		name[0] = '\0';
	}
	return 1;
}

int smb2_create_ctx_find(const uint8_t *chain, uint32_t chain_len, const char *tag,
                         const uint8_t **data, uint32_t *data_len)
{
	uint32_t off = 0;
	char name[5];
	while (smb2_create_ctx_next(chain, chain_len, &off, name, data, data_len) == 1)
		if (strcmp(name, tag) == 0)
			return 1;
	return 0;
}

/* ---- CLOSE 2.2.15 / 2.2.16, FLUSH 2.2.17 / 2.2.18 ------------------------- */

ssize_t smb2_close_req_encode(uint8_t *body, size_t cap, const struct smb2_close_req *q)
{
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 24);
	smb_wr_u16(&w, q->flags);
	smb_wr_u32(&w, 0);
	wr_fileid(&w, &q->fileid);
	return wr_result(&w);
}

int smb2_close_rsp_decode(const uint8_t *msg, size_t len, struct smb2_close_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 60, &r);
	if (rc)
		return rc;
	o->flags = smb_rd_u16(&r);
	smb_rd_skip(&r, 4);
	o->creation_time = smb_rd_u64(&r);
	o->last_access_time = smb_rd_u64(&r);
	o->last_write_time = smb_rd_u64(&r);
	o->change_time = smb_rd_u64(&r);
	o->allocation_size = smb_rd_u64(&r);
	o->end_of_file = smb_rd_u64(&r);
	o->file_attributes = smb_rd_u32(&r);
	return r.err;
}

ssize_t smb2_flush_req_encode(uint8_t *body, size_t cap, const struct smb2_fileid *fid)
{
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 24);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, 0);
	wr_fileid(&w, fid);
	return wr_result(&w);
}

int smb2_flush_rsp_decode(const uint8_t *msg, size_t len)
{
	return rsp_trivial(msg, len, 4);
}

/* ---- READ 2.2.19 / 2.2.20 -------------------------------------------------- */

ssize_t smb2_read_req_encode(uint8_t *body, size_t cap, const struct smb2_read_req *q)
{
	struct smb_wr w;

	if (q->channel_info_len && !q->channel_info)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 49);
	smb_wr_u8(&w, SMB2_READ_RSP_DATA_OFF); /* Padding: where we want the data */
	smb_wr_u8(&w, q->flags);
	smb_wr_u32(&w, q->length);
	smb_wr_u64(&w, q->offset);
	wr_fileid(&w, &q->fileid);
	smb_wr_u32(&w, q->minimum_count);
	smb_wr_u32(&w, q->channel);
	smb_wr_u32(&w, q->remaining_bytes);
	smb_wr_u16(&w, q->channel_info_len ? BODY + 48 : 0);
	smb_wr_u16(&w, q->channel_info_len);
	smb_wr_bytes(&w, q->channel_info, q->channel_info_len);
	wr_min_buffer(&w, 48);
	return wr_result(&w);
}

int smb2_read_rsp_decode(const uint8_t *msg, size_t len, struct smb2_read_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 17, &r);
	if (rc)
		return rc;
	o->data_offset = smb_rd_u8(&r);
	smb_rd_skip(&r, 1);
	o->data_length = smb_rd_u32(&r);
	o->data_remaining = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	return rsp_buf(msg, len, o->data_offset, o->data_length, BODY + 16, &o->data);
}

/* ---- WRITE 2.2.21 / 2.2.22 ------------------------------------------------- */

ssize_t smb2_write_req_encode(uint8_t *body, size_t cap, const struct smb2_write_req *q)
{
	struct smb_wr w;

	if ((q->channel_info_len && !q->channel_info) ||
	    BODY + 48 + (size_t)q->channel_info_len > UINT16_MAX)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 49);
	/* DataOffset; 0 for an RDMA write, whose payload the server pulls
	 * ([MS-SMB2] 2.2.21: Length and DataOffset are 0 with a channel). */
	smb_wr_u16(&w, q->data_length == 0 && q->channel_info_len
	                   ? 0
	                   : (uint16_t)(BODY + 48 + q->channel_info_len));
	smb_wr_u32(&w, q->data_length);
	smb_wr_u64(&w, q->offset);
	wr_fileid(&w, &q->fileid);
	smb_wr_u32(&w, q->channel);
	smb_wr_u32(&w, q->remaining_bytes);
	smb_wr_u16(&w, q->channel_info_len ? BODY + 48 : 0);
	smb_wr_u16(&w, q->channel_info_len);
	smb_wr_u32(&w, q->flags);
	smb_wr_bytes(&w, q->channel_info, q->channel_info_len);
	/* With no payload to follow, the Buffer still needs its one byte. */
	if (q->data_length == 0)
		wr_min_buffer(&w, 48);
	return wr_result(&w);
}

int smb2_write_rsp_decode(const uint8_t *msg, size_t len, struct smb2_write_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 17, &r);
	if (rc)
		return rc;
	smb_rd_skip(&r, 2);
	o->count = smb_rd_u32(&r);
	o->remaining = smb_rd_u32(&r);
	return r.err;
}

/* ---- IOCTL 2.2.31 / 2.2.32 ------------------------------------------------- */

ssize_t smb2_ioctl_req_encode(uint8_t *body, size_t cap, const struct smb2_ioctl_req *q)
{
	struct smb_wr w;

	if (q->input_len && !q->input)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 57);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, q->ctl_code);
	wr_fileid(&w, &q->fileid);
	smb_wr_u32(&w, q->input_len ? BODY + 56 : 0); /* InputOffset */
	smb_wr_u32(&w, q->input_len);
	smb_wr_u32(&w, q->max_input_response);
	smb_wr_u32(&w, 0); /* OutputOffset */
	smb_wr_u32(&w, 0); /* OutputCount */
	smb_wr_u32(&w, q->max_output_response);
	smb_wr_u32(&w, q->flags);
	smb_wr_u32(&w, 0);
	smb_wr_bytes(&w, q->input, q->input_len);
	wr_min_buffer(&w, 56);
	return wr_result(&w);
}

int smb2_ioctl_rsp_decode(const uint8_t *msg, size_t len, struct smb2_ioctl_rsp *o)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 49, &r);
	if (rc)
		return rc;
	smb_rd_skip(&r, 2);
	o->ctl_code = smb_rd_u32(&r);
	o->fileid.persistent = smb_rd_u64(&r);
	o->fileid.volatile_ = smb_rd_u64(&r);
	uint32_t in_off = smb_rd_u32(&r);
	o->input_len = smb_rd_u32(&r);
	uint32_t out_off = smb_rd_u32(&r);
	o->output_len = smb_rd_u32(&r);
	o->flags = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	rc = rsp_buf(msg, len, in_off, o->input_len, BODY + 48, &o->input);
	if (rc)
		return rc;
	return rsp_buf(msg, len, out_off, o->output_len, BODY + 48, &o->output);
}

/* ---- ECHO 2.2.28 / 2.2.29, CANCEL 2.2.30 --------------------------------- */

ssize_t smb2_echo_req_encode(uint8_t *body, size_t cap)
{
	return req_trivial(body, cap);
}

int smb2_echo_rsp_decode(const uint8_t *msg, size_t len)
{
	return rsp_trivial(msg, len, 4);
}

ssize_t smb2_cancel_req_encode(uint8_t *body, size_t cap)
{
	return req_trivial(body, cap);
}

/* ---- QUERY_DIRECTORY 2.2.33 / 2.2.34 -------------------------------------- */

ssize_t smb2_query_directory_req_encode(uint8_t *body, size_t cap,
                                        const struct smb2_query_directory_req *q)
{
	struct smb_wr w;
	const char *pattern = q->pattern ? q->pattern : "";

	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 33);
	smb_wr_u8(&w, q->info_class);
	smb_wr_u8(&w, q->flags);
	smb_wr_u32(&w, q->file_index);
	wr_fileid(&w, &q->fileid);
	uint8_t *fields = w.p; /* FileNameOffset, FileNameLength */
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, q->output_buffer_length);
	size_t n = wr_utf16(&w, pattern, false);
	if (w.err)
		return w.err;
	if (n > UINT16_MAX)
		return -EINVAL;
	if (n) {
		smb_put_le16(fields, BODY + 32);
		smb_put_le16(fields + 2, (uint16_t)n);
	}
	wr_min_buffer(&w, 32);
	return wr_result(&w);
}

/* QUERY_DIRECTORY and QUERY_INFO responses share one layout ([MS-SMB2]
 * 2.2.34, 2.2.38): StructureSize 9, OutputBufferOffset, OutputBufferLength,
 * then the buffer. */
static int rsp_out_buffer(const uint8_t *msg, size_t len, const uint8_t **buf, uint32_t *buf_len)
{
	struct smb_rd r;
	int rc = rsp_body(msg, len, 9, &r);
	if (rc)
		return rc;
	uint16_t off = smb_rd_u16(&r);
	*buf_len = smb_rd_u32(&r);
	if (r.err)
		return r.err;
	return rsp_buf(msg, len, off, *buf_len, BODY + 8, buf);
}

int smb2_query_directory_rsp_decode(const uint8_t *msg, size_t len,
                                    struct smb2_query_directory_rsp *o)
{
	return rsp_out_buffer(msg, len, &o->buffer, &o->buffer_len);
}

/* ---- QUERY_INFO 2.2.37 / 2.2.38 ------------------------------------------- */

ssize_t smb2_query_info_req_encode(uint8_t *body, size_t cap, const struct smb2_query_info_req *q)
{
	struct smb_wr w;

	if (q->input_len && !q->input)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 41);
	smb_wr_u8(&w, q->info_type);
	smb_wr_u8(&w, q->file_info_class);
	smb_wr_u32(&w, q->output_buffer_length);
	smb_wr_u16(&w, q->input_len ? BODY + 40 : 0);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, q->input_len);
	smb_wr_u32(&w, q->additional_information);
	smb_wr_u32(&w, q->flags);
	wr_fileid(&w, &q->fileid);
	smb_wr_bytes(&w, q->input, q->input_len);
	wr_min_buffer(&w, 40);
	return wr_result(&w);
}

int smb2_query_info_rsp_decode(const uint8_t *msg, size_t len, struct smb2_query_info_rsp *o)
{
	return rsp_out_buffer(msg, len, &o->buffer, &o->buffer_len);
}

/* ---- SET_INFO 2.2.39 / 2.2.40 --------------------------------------------- */

ssize_t smb2_set_info_req_encode(uint8_t *body, size_t cap, const struct smb2_set_info_req *q)
{
	struct smb_wr w;

	if (q->buffer_len && !q->buffer)
		return -EINVAL;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 33);
	smb_wr_u8(&w, q->info_type);
	smb_wr_u8(&w, q->file_info_class);
	smb_wr_u32(&w, q->buffer_len);
	smb_wr_u16(&w, BODY + 32);
	smb_wr_u16(&w, 0);
	smb_wr_u32(&w, q->additional_information);
	wr_fileid(&w, &q->fileid);
	smb_wr_bytes(&w, q->buffer, q->buffer_len);
	wr_min_buffer(&w, 32);
	return wr_result(&w);
}

int smb2_set_info_rsp_decode(const uint8_t *msg, size_t len)
{
	return rsp_trivial(msg, len, 2);
}
