/* smbd/smbd_proto.c — [MS-SMBD] 2.2 message codec and the receiver checks of
 * 3.1.5.6-3.1.5.8.  Pure: no allocation, no I/O, no clock. */
#include "smbd/smbd_proto.h"
#include "common/cursor.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Fields at fixed offsets.  Reads go through the common bounds-checked
 * reader (common/cursor.h, smb_rd_u*_at): a field past the end sets its
 * sticky err, checked once after the whole structure.  Writes are
 * smb_put_le*() at fixed offsets, each encoder having checked first that its
 * buffer holds them all. */

#define REQ(f)  offsetof(struct smbd_negotiate_req_wire, f)
#define RESP(f) offsetof(struct smbd_negotiate_resp_wire, f)
#define DATA(f) offsetof(struct smbd_data_hdr_wire, f)
#define DESC(f) offsetof(struct smbd_buffer_desc_v1_wire, f)

int smbd_negotiate_req_encode(const struct smbd_negotiate_req *req, uint8_t *buf, size_t cap)
{
	if (cap < SMBD_NEGOTIATE_REQ_SIZE)
		return -ENOBUFS;
	if (req->min_version > req->max_version)
		return -EINVAL;
	smb_put_le16(buf + REQ(min_version), req->min_version);
	smb_put_le16(buf + REQ(max_version), req->max_version);
	smb_put_le16(buf + REQ(reserved), 0);
	smb_put_le16(buf + REQ(credits_requested), req->credits_requested);
	smb_put_le32(buf + REQ(preferred_send_size), req->preferred_send_size);
	smb_put_le32(buf + REQ(max_receive_size), req->max_receive_size);
	smb_put_le32(buf + REQ(max_fragmented_size), req->max_fragmented_size);
	return (int)SMBD_NEGOTIATE_REQ_SIZE;
}

int smbd_negotiate_req_decode(const uint8_t *buf, size_t len, struct smbd_negotiate_req *out)
{
	if (len < SMBD_NEGOTIATE_REQ_SIZE)
		return -EBADMSG;
	struct smb_rd c;
	smb_rd_init(&c, buf, len);
	struct smbd_negotiate_req r = {
	    .min_version = smb_rd_u16_at(&c, REQ(min_version)),
	    .max_version = smb_rd_u16_at(&c, REQ(max_version)),
	    .credits_requested = smb_rd_u16_at(&c, REQ(credits_requested)),
	    .preferred_send_size = smb_rd_u32_at(&c, REQ(preferred_send_size)),
	    .max_receive_size = smb_rd_u32_at(&c, REQ(max_receive_size)),
	    .max_fragmented_size = smb_rd_u32_at(&c, REQ(max_fragmented_size)),
	};
	if (c.err)
		return -EBADMSG;
	/* 3.1.5.6: the range must include 1.0, else a STATUS_NOT_SUPPORTED reply. */
	if (r.min_version > SMBD_VERSION_1 || r.max_version < SMBD_VERSION_1)
		return -EPROTONOSUPPORT;
	if (r.credits_requested == 0 || r.max_receive_size < SMBD_MIN_RECEIVE_SIZE ||
	    r.max_fragmented_size < SMBD_MIN_FRAGMENTED_SIZE)
		return -EPROTO;
	*out = r;
	return (int)SMBD_NEGOTIATE_REQ_SIZE;
}

int smbd_negotiate_resp_encode(const struct smbd_negotiate_resp *resp, uint8_t *buf, size_t cap)
{
	if (cap < SMBD_NEGOTIATE_RESP_SIZE)
		return -ENOBUFS;
	smb_put_le16(buf + RESP(min_version), resp->min_version);
	smb_put_le16(buf + RESP(max_version), resp->max_version);
	smb_put_le16(buf + RESP(negotiated_version), resp->negotiated_version);
	smb_put_le16(buf + RESP(reserved), 0);
	smb_put_le16(buf + RESP(credits_requested), resp->credits_requested);
	smb_put_le16(buf + RESP(credits_granted), resp->credits_granted);
	smb_put_le32(buf + RESP(status), resp->status);
	smb_put_le32(buf + RESP(max_read_write_size), resp->max_read_write_size);
	smb_put_le32(buf + RESP(preferred_send_size), resp->preferred_send_size);
	smb_put_le32(buf + RESP(max_receive_size), resp->max_receive_size);
	smb_put_le32(buf + RESP(max_fragmented_size), resp->max_fragmented_size);
	return (int)SMBD_NEGOTIATE_RESP_SIZE;
}

int smbd_negotiate_resp_decode(const uint8_t *buf, size_t len, uint32_t our_max_receive_size,
                               struct smbd_negotiate_resp *out)
{
	/* 3.1.5.7: "The length of the received message is at least 32 bytes." */
	if (len < SMBD_NEGOTIATE_RESP_SIZE)
		return -EBADMSG;
	struct smb_rd c;
	smb_rd_init(&c, buf, len);
	struct smbd_negotiate_resp r = {
	    .min_version = smb_rd_u16_at(&c, RESP(min_version)),
	    .max_version = smb_rd_u16_at(&c, RESP(max_version)),
	    .negotiated_version = smb_rd_u16_at(&c, RESP(negotiated_version)),
	    .credits_requested = smb_rd_u16_at(&c, RESP(credits_requested)),
	    .credits_granted = smb_rd_u16_at(&c, RESP(credits_granted)),
	    .status = smb_rd_u32_at(&c, RESP(status)),
	    .max_read_write_size = smb_rd_u32_at(&c, RESP(max_read_write_size)),
	    .preferred_send_size = smb_rd_u32_at(&c, RESP(preferred_send_size)),
	    .max_receive_size = smb_rd_u32_at(&c, RESP(max_receive_size)),
	    .max_fragmented_size = smb_rd_u32_at(&c, RESP(max_fragmented_size)),
	};
	if (c.err)
		return -EBADMSG;
	/* Status first: a refusal zeroes every other field (3.1.5.3). */
	if (r.status != 0)
		return -ECONNREFUSED;
	if (r.negotiated_version != SMBD_VERSION_1)
		return -EPROTONOSUPPORT;
	if (r.max_receive_size < SMBD_MIN_RECEIVE_SIZE ||
	    r.max_fragmented_size < SMBD_MIN_FRAGMENTED_SIZE || r.credits_granted == 0 ||
	    r.credits_requested == 0 || r.preferred_send_size > our_max_receive_size)
		return -EPROTO;
	*out = r;
	return (int)SMBD_NEGOTIATE_RESP_SIZE;
}

int smbd_data_hdr_encode(const struct smbd_data_hdr *hdr, uint8_t *buf, size_t cap)
{
	bool empty = hdr->data_length == 0;
	size_t n = empty ? SMBD_DATA_MIN_SIZE : SMBD_DATA_OFFSET;

	if (cap < n)
		return -ENOBUFS;
	/* 2.2.3: an empty message has RemainingDataLength 0 (3.1.5.1). */
	if (empty && hdr->remaining_data_length)
		return -EINVAL;
	smb_put_le16(buf + DATA(credits_requested), hdr->credits_requested);
	smb_put_le16(buf + DATA(credits_granted), hdr->credits_granted);
	smb_put_le16(buf + DATA(flags), hdr->flags);
	smb_put_le16(buf + DATA(reserved), 0);
	smb_put_le32(buf + DATA(remaining_data_length), hdr->remaining_data_length);
	smb_put_le32(buf + DATA(data_offset), empty ? 0 : SMBD_DATA_OFFSET);
	smb_put_le32(buf + DATA(data_length), hdr->data_length);
	if (!empty)
		smb_put_le32(buf + DATA(padding), 0);
	return (int)n;
}

int smbd_data_decode(const uint8_t *buf, size_t len, uint32_t max_fragmented_size,
                     struct smbd_data_hdr *out)
{
	/* 3.1.5.8: "at least 20 bytes" */
	if (len < SMBD_DATA_MIN_SIZE)
		return -EBADMSG;
	struct smb_rd c;
	smb_rd_init(&c, buf, len);
	struct smbd_data_hdr h = {
	    .credits_requested = smb_rd_u16_at(&c, DATA(credits_requested)),
	    .credits_granted = smb_rd_u16_at(&c, DATA(credits_granted)),
	    .flags = smb_rd_u16_at(&c, DATA(flags)),
	    .remaining_data_length = smb_rd_u32_at(&c, DATA(remaining_data_length)),
	    .data_offset = smb_rd_u32_at(&c, DATA(data_offset)),
	    .data_length = smb_rd_u32_at(&c, DATA(data_length)),
	};
	if (c.err)
		return -EBADMSG;
	/* 3.1.5.8: CreditsRequested >= 1, DataOffset 8-aligned, DataOffset +
	 * DataLength within the message, DataLength + RemainingDataLength within
	 * the maximum we reassemble.  Sums in 64 bits: the fields are peer-chosen. */
	if (h.credits_requested == 0)
		return -EPROTO;
	if (h.data_offset % 8 != 0)
		return -EPROTO;
	if ((uint64_t)h.data_offset + h.data_length > len)
		return -EPROTO;
	if ((uint64_t)h.data_length + h.remaining_data_length > max_fragmented_size)
		return -EPROTO;
	/* Ours: payload never overlaps the fixed header; a message without
	 * payload cannot announce more to come. */
	if (h.data_length && h.data_offset < SMBD_DATA_MIN_SIZE)
		return -EPROTO;
	if (!h.data_length && h.remaining_data_length)
		return -EPROTO;
	*out = h;
	return (int)len;
}

int smbd_buffer_desc_v1_encode(const struct smbd_buffer_desc_v1 *descs, size_t n, uint8_t *buf,
                               size_t cap)
{
	if (n == 0)
		return -EINVAL;
	if (n > cap / SMBD_BUFFER_DESC_V1_SIZE || n * SMBD_BUFFER_DESC_V1_SIZE > INT32_MAX)
		return -ENOBUFS;
	for (size_t i = 0; i < n; i++) {
		size_t at = i * SMBD_BUFFER_DESC_V1_SIZE;
		smb_put_le64(buf + at + DESC(offset), descs[i].offset);
		smb_put_le32(buf + at + DESC(token), descs[i].token);
		smb_put_le32(buf + at + DESC(length), descs[i].length);
	}
	return (int)(n * SMBD_BUFFER_DESC_V1_SIZE);
}

int smbd_buffer_desc_v1_decode(const uint8_t *buf, size_t len, struct smbd_buffer_desc_v1 *out,
                               size_t max, size_t *n)
{
	if (len == 0 || len % SMBD_BUFFER_DESC_V1_SIZE != 0)
		return -EBADMSG;
	size_t count = len / SMBD_BUFFER_DESC_V1_SIZE;
	if (count > max || len > INT32_MAX)
		return -E2BIG;
	struct smb_rd c;
	smb_rd_init(&c, buf, len);
	for (size_t i = 0; i < count; i++) {
		size_t at = i * SMBD_BUFFER_DESC_V1_SIZE;
		out[i].offset = smb_rd_u64_at(&c, at + DESC(offset));
		out[i].token = smb_rd_u32_at(&c, at + DESC(token));
		out[i].length = smb_rd_u32_at(&c, at + DESC(length));
	}
	if (c.err)
		return -EBADMSG;
	*n = count;
	return (int)len;
}
