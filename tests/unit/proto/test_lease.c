/* tests/unit/proto/test_lease.c — RqLs contexts, LEASE_BREAK messages. */
#include <errno.h>

#include "client/proto/smb2_lease.h"
#include "tests/unit/check.h"

static const uint8_t KEY[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void test_rqls_round_trip(void)
{
	uint8_t buf[64];
	struct smb2_lease l = {.state = SMB2_LEASE_RWH, .version = 2, .epoch = 0};
	memcpy(l.key, KEY, 16);
	CHECK_EQ(smb2_rqls_encode(buf, sizeof(buf), &l), 52);
	CHECK_MEM(buf, KEY, 16);
	CHECK_EQ(smb_le32(buf + 16), 7);
	CHECK_EQ(smb_le32(buf + 20), 0);
	/* a server's answer: R|H granted, epoch 3, a parent key */
	smb_put_le32(buf + 16, SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING);
	smb_put_le32(buf + 20, SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET);
	memset(buf + 32, 0xaa, 16);
	smb_put_le16(buf + 48, 3);
	struct smb2_lease got;
	CHECK_EQ(smb2_rqls_rsp_decode(buf, 52, &got), 0);
	CHECK_EQ(got.version, 2);
	CHECK_EQ(got.state, 3);
	CHECK_EQ(got.epoch, 3);
	CHECK_EQ(got.parent_key[15], 0xaa);
	CHECK_MEM(got.key, KEY, 16);

	l.version = 1;
	l.flags = SMB2_LEASE_FLAG_BREAK_IN_PROGRESS; /* not sent in v1 */
	CHECK_EQ(smb2_rqls_encode(buf, sizeof(buf), &l), 32);
	CHECK_EQ(smb_le32(buf + 20), 0);
	CHECK_EQ(smb2_rqls_rsp_decode(buf, 32, &got), 0);
	CHECK_EQ(got.version, 1);
	CHECK_EQ(got.state, 7);
	CHECK_EQ(smb2_rqls_rsp_decode(buf, 31, &got), -EBADMSG);
	CHECK_EQ(smb2_rqls_rsp_decode(NULL, 0, &got), -EBADMSG);
	CHECK_EQ(smb2_rqls_encode(buf, 40, &(struct smb2_lease){.version = 2}), -ENOSPC);
	CHECK_EQ(smb2_rqls_encode(buf, sizeof(buf), &(struct smb2_lease){.version = 3}), -EINVAL);
}

static size_t break_msg(uint8_t *m, uint16_t size, uint32_t flags, uint32_t cur, uint32_t new)
{
	memset(m, 0, SMB2_HDR_SIZE + 44);
	uint8_t *b = m + SMB2_HDR_SIZE;
	smb_put_le16(b, size);
	smb_put_le16(b + 2, 5);
	smb_put_le32(b + 4, flags);
	memcpy(b + 8, KEY, 16);
	smb_put_le32(b + 24, cur);
	smb_put_le32(b + 28, new);
	return SMB2_HDR_SIZE + 44;
}

static void test_lease_break(void)
{
	uint8_t m[SMB2_HDR_SIZE + 44];
	struct smb2_lease_break b;
	size_t n = break_msg(m, 44, SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED, 7, 1);
	CHECK_EQ(smb2_lease_break_decode(m, n, &b), 0);
	CHECK_EQ(b.new_epoch, 5);
	CHECK_EQ(b.flags, 1);
	CHECK_EQ(b.current_state, 7);
	CHECK_EQ(b.new_state, 1);
	CHECK_MEM(b.key, KEY, 16);
	CHECK_EQ(smb2_lease_break_decode(m, n - 1, &b), -EBADMSG);
	break_msg(m, 24, 0, 0, 0);
	CHECK_EQ(smb2_lease_break_decode(m, n, &b), -EPROTO); /* an oplock break */
	break_msg(m, 36, 0, 0, 0);
	CHECK_EQ(smb2_lease_break_decode(m, n, &b), -EBADMSG);
	CHECK_EQ(smb2_lease_break_decode(m, SMB2_HDR_SIZE + 1, &b), -EBADMSG);
}

static void test_lease_break_ack(void)
{
	uint8_t body[SMB2_LEASE_BREAK_ACK_LEN], m[SMB2_HDR_SIZE + SMB2_LEASE_BREAK_ACK_LEN];
	CHECK_EQ(smb2_lease_break_ack_encode(body, sizeof(body), KEY, 1), 36);
	CHECK_EQ(smb_le16(body), 36);
	CHECK_EQ(smb_le32(body + 4), 0);
	CHECK_MEM(body + 8, KEY, 16);
	CHECK_EQ(smb_le32(body + 24), 1);
	CHECK_EQ(smb2_lease_break_ack_encode(body, 35, KEY, 1), -ENOSPC);
	/* the server's response has the same layout */
	memset(m, 0, SMB2_HDR_SIZE);
	memcpy(m + SMB2_HDR_SIZE, body, sizeof(body));
	uint8_t key[16];
	uint32_t state = 99;
	CHECK_EQ(smb2_lease_break_rsp_decode(m, sizeof(m), key, &state), 0);
	CHECK_EQ(state, 1);
	CHECK_MEM(key, KEY, 16);
	CHECK_EQ(smb2_lease_break_rsp_decode(m, sizeof(m) - 1, key, &state), -EBADMSG);
	smb_put_le16(m + SMB2_HDR_SIZE, 44);
	CHECK_EQ(smb2_lease_break_rsp_decode(m, sizeof(m), key, &state), -EBADMSG);
}

int main(void)
{
	RUN(test_rqls_round_trip);
	RUN(test_lease_break);
	RUN(test_lease_break_ack);
	return check_report();
}
