/* client/proto/smb2_durable.c — durable handle v2 and QFid contexts, OPLOCK_BREAK,
 * and where each request keeps its FileId (for reopened handles). */
#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

int smb2_req_fileid_offset(uint16_t command)
{
	switch (command) {
	case SMB2_CLOSE:
	case SMB2_FLUSH:
	case SMB2_LOCK:
	case SMB2_IOCTL:
	case SMB2_QUERY_DIRECTORY:
	case SMB2_CHANGE_NOTIFY:
	case SMB2_OPLOCK_BREAK:
		return 8;
	case SMB2_READ:
	case SMB2_WRITE:
	case SMB2_SET_INFO:
		return 16;
	case SMB2_QUERY_INFO:
		return 24;
	}
	return -1;
}

void smb2_dh2q_encode(uint8_t out[SMB2_DH2Q_LEN], uint32_t timeout_ms,
                      const uint8_t create_guid[16])
{
	struct smb_wr w;
	smb_wr_init(&w, out, SMB2_DH2Q_LEN);
	smb_wr_u32(&w, timeout_ms);
	smb_wr_u32(&w, 0); /* Flags: not persistent */
	smb_wr_u64(&w, 0);
	smb_wr_bytes(&w, create_guid, 16);
}

void smb2_dh2c_encode(uint8_t out[SMB2_DH2C_LEN], struct smb2_fileid fid,
                      const uint8_t create_guid[16])
{
	struct smb_wr w;
	smb_wr_init(&w, out, SMB2_DH2C_LEN);
	smb_wr_u64(&w, fid.persistent);
	smb_wr_u64(&w, fid.volatile_);
	smb_wr_bytes(&w, create_guid, 16);
	smb_wr_u32(&w, 0);
}

int smb2_dh2q_rsp_decode(const uint8_t *data, uint32_t len, uint32_t *timeout_ms)
{
	struct smb_rd r;
	if (!data || len < 8)
		return -EBADMSG;
	smb_rd_init(&r, data, len);
	*timeout_ms = smb_rd_u32(&r);
	return r.err;
}

int smb2_qfid_rsp_decode(const uint8_t *data, uint32_t len, uint64_t *disk_file_id)
{
	struct smb_rd r;
	if (!data || len < 16)
		return -EBADMSG;
	smb_rd_init(&r, data, len);
	*disk_file_id = smb_rd_u64(&r);
	return r.err;
}

int smb2_oplock_break_decode(const uint8_t *msg, size_t len, struct smb2_oplock_break *b)
{
	struct smb_rd r;
	if (!msg || len < SMB2_HDR_SIZE + 2)
		return -EBADMSG;
	smb_rd_init(&r, msg, len);
	smb_rd_seek(&r, SMB2_HDR_SIZE);
	uint16_t size = smb_rd_u16(&r);
	if (r.err)
		return r.err;
	if (size != 24)
		return -EPROTO;
	b->oplock_level = smb_rd_u8(&r);
	smb_rd_skip(&r, 5);
	b->fileid.persistent = smb_rd_u64(&r);
	b->fileid.volatile_ = smb_rd_u64(&r);
	return r.err;
}

ssize_t smb2_oplock_break_ack_encode(uint8_t *body, size_t cap, const struct smb2_oplock_break *b)
{
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 24);
	smb_wr_u8(&w, b->oplock_level);
	smb_wr_u8(&w, 0);
	smb_wr_u32(&w, 0);
	smb_wr_u64(&w, b->fileid.persistent);
	smb_wr_u64(&w, b->fileid.volatile_);
	return w.err ? w.err : (ssize_t)(w.p - w.base);
}
