/* client/proto/smb2_transform.c — the SMB2 TRANSFORM_HEADER ([MS-SMB2] 2.2.41). */
#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

void smb2_transform_hdr_encode(uint8_t out[SMB2_TRANSFORM_HDR_SIZE],
                               const struct smb2_transform_hdr *h)
{
	struct smb_wr w;

	smb_wr_init(&w, out, SMB2_TRANSFORM_HDR_SIZE);
	smb_wr_u32(&w, SMB2_TRANSFORM_ID);
	smb_wr_bytes(&w, h->signature, sizeof(h->signature));
	smb_wr_bytes(&w, h->nonce, sizeof(h->nonce));
	smb_wr_u32(&w, h->original_size);
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, h->flags);
	smb_wr_u64(&w, h->session_id);
}

int smb2_transform_hdr_decode(const uint8_t *msg, size_t len, struct smb2_transform_hdr *h)
{
	struct smb_rd r;

	if (!msg || len < SMB2_TRANSFORM_HDR_SIZE)
		return -EBADMSG;
	smb_rd_init(&r, msg, len);
	if (smb_rd_u32(&r) != SMB2_TRANSFORM_ID)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	smb_rd_bytes(&r, h->signature, sizeof(h->signature));
	smb_rd_bytes(&r, h->nonce, sizeof(h->nonce));
	h->original_size = smb_rd_u32(&r);
	smb_rd_skip(&r, 2);
	h->flags = smb_rd_u16(&r);
	h->session_id = smb_rd_u64(&r);
	if (r.err)
		return r.err;
	/* AEAD: the ciphertext is exactly as long as the message it hides, and
	 * that message holds at least one SMB2 header. */
	if (h->original_size != len - SMB2_TRANSFORM_HDR_SIZE || h->original_size < SMB2_HDR_SIZE)
		return -EBADMSG;
	/* 3.1.1 says Flags = Encrypted; 3.0.x says EncryptionAlgorithm =
	 * AES-128-CCM: the same value on the wire. */
	if (h->flags != SMB2_TRANSFORM_FLAG_ENCRYPTED)
		return -EPROTO;
	return 0;
}
