/* client/proto/smb2_lease.c — lease contexts and lease break messages
 * (smb2_lease.h). */
#include "client/proto/smb2_lease.h"

#include <errno.h>
#include <string.h>

ssize_t smb2_rqls_encode(uint8_t *out, size_t cap, const struct smb2_lease *l)
{
	struct smb_wr w;
	if (l->version != 1 && l->version != 2)
		return -EINVAL;
	smb_wr_init(&w, out, cap);
	smb_wr_bytes(&w, l->key, SMB2_LEASE_KEY_LEN);
	smb_wr_u32(&w, l->state);
	smb_wr_u32(&w, l->version == 2 ? l->flags : 0); /* v1 LeaseFlags: MUST be 0 */
	smb_wr_u64(&w, 0);                              /* LeaseDuration: reserved */
	if (l->version == 2) {
		if (l->flags & SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET)
			smb_wr_bytes(&w, l->parent_key, SMB2_LEASE_KEY_LEN);
		else
			smb_wr_zero(&w, SMB2_LEASE_KEY_LEN);
		smb_wr_u16(&w, l->epoch);
		smb_wr_u16(&w, 0);
	}
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

int smb2_rqls_rsp_decode(const uint8_t *data, uint32_t len, struct smb2_lease *l)
{
	struct smb_rd r;
	if (!data || len < SMB2_RQLS_V1_LEN)
		return -EBADMSG;
	memset(l, 0, sizeof(*l));
	smb_rd_init(&r, data, len);
	smb_rd_bytes(&r, l->key, SMB2_LEASE_KEY_LEN);
	l->state = smb_rd_u32(&r);
	l->flags = smb_rd_u32(&r);
	smb_rd_skip(&r, 8); /* LeaseDuration */
	l->version = 1;
	if (len >= SMB2_RQLS_V2_LEN) {
		smb_rd_bytes(&r, l->parent_key, SMB2_LEASE_KEY_LEN);
		l->epoch = smb_rd_u16(&r);
		l->version = 2;
	}
	return r.err ? -EBADMSG : 0;
}

/* The body's StructureSize, or -EBADMSG when the message is too short. */
static int body_size(struct smb_rd *r, const uint8_t *msg, size_t len)
{
	if (!msg || len < SMB2_HDR_SIZE + 2)
		return -EBADMSG;
	smb_rd_init(r, msg, len);
	smb_rd_seek(r, SMB2_HDR_SIZE);
	uint16_t size = smb_rd_u16(r);
	return r->err ? -EBADMSG : size;
}

int smb2_lease_break_decode(const uint8_t *msg, size_t len, struct smb2_lease_break *b)
{
	struct smb_rd r;
	int size = body_size(&r, msg, len);
	if (size < 0)
		return size;
	if (size == 24)
		return -EPROTO;
	if (size != 44)
		return -EBADMSG;
	b->new_epoch = smb_rd_u16(&r);
	b->flags = smb_rd_u32(&r);
	smb_rd_bytes(&r, b->key, SMB2_LEASE_KEY_LEN);
	b->current_state = smb_rd_u32(&r);
	b->new_state = smb_rd_u32(&r);
	b->break_reason = smb_rd_u32(&r);
	b->access_mask_hint = smb_rd_u32(&r);
	b->share_mask_hint = smb_rd_u32(&r);
	return r.err ? -EBADMSG : 0;
}

ssize_t smb2_lease_break_ack_encode(uint8_t *body, size_t cap, const uint8_t key[16],
                                    uint32_t state)
{
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, SMB2_LEASE_BREAK_ACK_LEN);
	smb_wr_u16(&w, 0); /* Reserved */
	smb_wr_u32(&w, 0); /* Flags */
	smb_wr_bytes(&w, key, SMB2_LEASE_KEY_LEN);
	smb_wr_u32(&w, state);
	smb_wr_u64(&w, 0); /* LeaseDuration */
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

int smb2_lease_break_rsp_decode(const uint8_t *msg, size_t len, uint8_t key[16], uint32_t *state)
{
	struct smb_rd r;
	int size = body_size(&r, msg, len);
	if (size != SMB2_LEASE_BREAK_ACK_LEN)
		return -EBADMSG;
	smb_rd_skip(&r, 6); /* Reserved, Flags */
	smb_rd_bytes(&r, key, SMB2_LEASE_KEY_LEN);
	*state = smb_rd_u32(&r);
	smb_rd_skip(&r, 8);
	return r.err ? -EBADMSG : 0;
}
