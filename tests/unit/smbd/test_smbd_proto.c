/* tests/unit/smbd/test_smbd_proto.c — [MS-SMBD] 2.2 codec and the receiver
 * checks of 3.1.5.6-3.1.5.8, one violation at a time. */
#include "../check.h"
#include "smbd/smbd_proto.h"

#include <errno.h>

static struct smbd_negotiate_resp good_resp(void)
{
	return (struct smbd_negotiate_resp){
	    .min_version = 0x0100,
	    .max_version = 0x0100,
	    .negotiated_version = 0x0100,
	    .credits_requested = 255,
	    .credits_granted = 255,
	    .status = 0,
	    .max_read_write_size = 8 << 20,
	    .preferred_send_size = 1364,
	    .max_receive_size = 1364,
	    .max_fragmented_size = 1 << 20,
	};
}

static int resp_decode(const struct smbd_negotiate_resp *r, size_t len)
{
	uint8_t buf[64] = {0};
	struct smbd_negotiate_resp out;
	CHECK_EQ(smbd_negotiate_resp_encode(r, buf, sizeof(buf)), 32);
	return smbd_negotiate_resp_decode(buf, len, 1364, &out);
}

static void test_negotiate_req_bytes(void)
{
	struct smbd_negotiate_req req = {
	    .min_version = 0x0100,
	    .max_version = 0x0100,
	    .credits_requested = 255,
	    .preferred_send_size = 1364,
	    .max_receive_size = 1364,
	    .max_fragmented_size = 0x100000,
	};
	uint8_t buf[20], want[20];
	CHECK_EQ(smbd_negotiate_req_encode(&req, buf, sizeof(buf)), 20);
	check_hex("0001 0001 0000 ff00 54050000 54050000 00001000", want, sizeof(want));
	CHECK_MEM(buf, want, 20);
	CHECK_EQ(smbd_negotiate_req_encode(&req, buf, 19), -ENOBUFS);

	struct smbd_negotiate_req out;
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), 20);
	CHECK_EQ(out.credits_requested, 255);
	CHECK_EQ(out.max_fragmented_size, 0x100000);
	CHECK_EQ(smbd_negotiate_req_decode(buf, 19, &out), -EBADMSG);

	req.min_version = 0x0200; /* range 2.0..1.0 is nonsense */
	CHECK_EQ(smbd_negotiate_req_encode(&req, buf, sizeof(buf)), -EINVAL);
}

static void test_negotiate_req_checks(void)
{
	struct smbd_negotiate_req base = {0x0100, 0x0100, 10, 1024, 1024, 131072}, r, out;
	uint8_t buf[20];

	r = base;
	r.min_version = 0x0200;
	r.max_version = 0x0300;
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), -EPROTONOSUPPORT);
	r = base;
	r.min_version = r.max_version = 0x0000;
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), -EPROTONOSUPPORT);
	r = base;
	r.min_version = 0x0000;
	r.max_version = 0x0200; /* includes 1.0 */
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), 20);
	r = base;
	r.credits_requested = 0;
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), -EPROTO);
	r = base;
	r.max_receive_size = 127;
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), -EPROTO);
	r = base;
	r.max_fragmented_size = 131071;
	smbd_negotiate_req_encode(&r, buf, sizeof(buf));
	CHECK_EQ(smbd_negotiate_req_decode(buf, 20, &out), -EPROTO);
}

static void test_negotiate_resp_bytes(void)
{
	struct smbd_negotiate_resp r = good_resp(), out;
	uint8_t buf[40], want[32];
	CHECK_EQ(smbd_negotiate_resp_encode(&r, buf, sizeof(buf)), 32);
	check_hex("0001 0001 0001 0000 ff00 ff00 00000000 00008000 54050000 54050000 00001000",
	          want, sizeof(want));
	CHECK_MEM(buf, want, 32);
	CHECK_EQ(smbd_negotiate_resp_decode(buf, 32, 1364, &out), 32);
	CHECK_EQ(out.max_read_write_size, 8 << 20);
	CHECK_EQ(out.credits_granted, 255);
	/* Trailing bytes are not ours to judge. */
	CHECK_EQ(smbd_negotiate_resp_decode(buf, 40, 1364, &out), 32);
	CHECK_EQ(smbd_negotiate_resp_encode(&r, buf, 31), -ENOBUFS);
}

/* [MS-SMBD] 3.1.5.7, each check violated once. */
static void test_negotiate_resp_checks(void)
{
	struct smbd_negotiate_resp r;

	CHECK_EQ(resp_decode(&(struct smbd_negotiate_resp){0}, 0), -EBADMSG);
	r = good_resp();
	CHECK_EQ(resp_decode(&r, 31), -EBADMSG);
	r = good_resp();
	r.negotiated_version = 0x0200;
	CHECK_EQ(resp_decode(&r, 32), -EPROTONOSUPPORT);
	r = good_resp();
	r.max_receive_size = 127;
	CHECK_EQ(resp_decode(&r, 32), -EPROTO);
	r.max_receive_size = 128;
	CHECK_EQ(resp_decode(&r, 32), 32);
	r = good_resp();
	r.max_fragmented_size = 131071;
	CHECK_EQ(resp_decode(&r, 32), -EPROTO);
	r = good_resp();
	r.credits_granted = 0;
	CHECK_EQ(resp_decode(&r, 32), -EPROTO);
	r = good_resp();
	r.credits_requested = 0;
	CHECK_EQ(resp_decode(&r, 32), -EPROTO);
	r = good_resp();
	r.preferred_send_size = 1365; /* more than our MaxReceiveSize 1364 */
	CHECK_EQ(resp_decode(&r, 32), -EPROTO);
	r = good_resp();
	r.status = SMBD_STATUS_NOT_SUPPORTED;
	CHECK_EQ(resp_decode(&r, 32), -ECONNREFUSED);
}

static size_t data_msg(uint8_t *buf, uint16_t cr, uint16_t cg, uint16_t flags, uint32_t remaining,
                       uint32_t offset, uint32_t length, size_t total)
{
	memset(buf, 0, total);
	buf[0] = (uint8_t)cr;
	buf[1] = (uint8_t)(cr >> 8);
	buf[2] = (uint8_t)cg;
	buf[3] = (uint8_t)(cg >> 8);
	buf[4] = (uint8_t)flags;
	for (int i = 0; i < 4; i++) {
		buf[8 + i] = (uint8_t)(remaining >> (8 * i));
		buf[12 + i] = (uint8_t)(offset >> (8 * i));
		buf[16 + i] = (uint8_t)(length >> (8 * i));
	}
	return total;
}

/* [MS-SMBD] 3.1.5.8, each check violated once, plus ours. */
static void test_data_decode_checks(void)
{
	uint8_t buf[256];
	struct smbd_data_hdr h;
	const uint32_t maxf = 131072;

	/* An empty message is 20 bytes. */
	data_msg(buf, 10, 2, 1, 0, 0, 0, 20);
	CHECK_EQ(smbd_data_decode(buf, 20, maxf, &h), 20);
	CHECK_EQ(h.credits_requested, 10);
	CHECK_EQ(h.credits_granted, 2);
	CHECK_EQ(h.flags, SMBD_FLAG_RESPONSE_REQUESTED);
	CHECK_EQ(h.data_length, 0);
	CHECK_EQ(smbd_data_decode(buf, 19, maxf, &h), -EBADMSG);

	/* Payload at 24. */
	data_msg(buf, 1, 0, 0, 500, 24, 100, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), 124);
	CHECK_EQ(h.data_offset, 24);
	CHECK_EQ(h.data_length, 100);
	CHECK_EQ(h.remaining_data_length, 500);
	/* CreditsRequested 0 */
	data_msg(buf, 0, 0, 0, 0, 24, 100, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	/* DataOffset not 8-aligned */
	data_msg(buf, 1, 0, 0, 0, 28, 96, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	/* DataOffset + DataLength past the message */
	data_msg(buf, 1, 0, 0, 0, 24, 101, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	/* ... and with 32-bit wrap-around */
	data_msg(buf, 1, 0, 0, 0, 0xfffffff8u, 16, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	/* DataLength + RemainingDataLength over the reassembly maximum */
	data_msg(buf, 1, 0, 0, maxf - 99, 24, 100, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	data_msg(buf, 1, 0, 0, maxf - 100, 24, 100, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), 124);
	data_msg(buf, 1, 0, 0, 0xffffffffu, 24, 100, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	/* Ours: payload inside the fixed header; remainder with no payload. */
	data_msg(buf, 1, 0, 0, 0, 16, 8, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	data_msg(buf, 1, 0, 0, 0, 0, 8, 124);
	CHECK_EQ(smbd_data_decode(buf, 124, maxf, &h), -EPROTO);
	data_msg(buf, 1, 0, 0, 5, 0, 0, 20);
	CHECK_EQ(smbd_data_decode(buf, 20, maxf, &h), -EPROTO);
	/* An offset past 24 (more padding) is fine. */
	data_msg(buf, 1, 0, 0, 0, 32, 8, 40);
	CHECK_EQ(smbd_data_decode(buf, 40, maxf, &h), 40);
}

static void test_data_hdr_encode(void)
{
	uint8_t buf[24], want[24];
	struct smbd_data_hdr h = {.credits_requested = 255, .credits_granted = 3, .flags = 1};
	CHECK_EQ(smbd_data_hdr_encode(&h, buf, sizeof(buf)), 20);
	check_hex("ff00 0300 0100 0000 00000000 00000000 00000000", want, sizeof(want));
	CHECK_MEM(buf, want, 20);
	h.remaining_data_length = 1;
	CHECK_EQ(smbd_data_hdr_encode(&h, buf, sizeof(buf)), -EINVAL);
	h = (struct smbd_data_hdr){
	    .credits_requested = 1, .data_length = 1340, .remaining_data_length = 7};
	CHECK_EQ(smbd_data_hdr_encode(&h, buf, 23), -ENOBUFS);
	CHECK_EQ(smbd_data_hdr_encode(&h, buf, sizeof(buf)), 24);
	check_hex("0100 0000 0000 0000 07000000 18000000 3c050000 00000000", want, sizeof(want));
	CHECK_MEM(buf, want, 24);
	struct smbd_data_hdr out;
	uint8_t msg[24 + 1340] = {0};
	memcpy(msg, buf, 24);
	CHECK_EQ(smbd_data_decode(msg, sizeof(msg), 1 << 20, &out), (int)sizeof(msg));
	CHECK_EQ(out.data_length, 1340);
	CHECK_EQ(out.remaining_data_length, 7);
}

static void test_buffer_desc(void)
{
	struct smbd_buffer_desc_v1 d[2] = {{0x1122334455667788ull, 0xaabbccdd, 0x100000},
	                                   {0x1000, 7, 4096}},
	                           out[2];
	uint8_t buf[32], want[16];
	size_t n = 0;
	CHECK_EQ(smbd_buffer_desc_v1_encode(d, 2, buf, sizeof(buf)), 32);
	check_hex("8877665544332211 ddccbbaa 00001000", want, sizeof(want));
	CHECK_MEM(buf, want, 16);
	CHECK_EQ(smbd_buffer_desc_v1_encode(d, 2, buf, 31), -ENOBUFS);
	CHECK_EQ(smbd_buffer_desc_v1_encode(d, 0, buf, 32), -EINVAL);
	CHECK_EQ(smbd_buffer_desc_v1_decode(buf, 32, out, 2, &n), 32);
	CHECK_EQ(n, 2);
	CHECK_EQ(out[0].offset, 0x1122334455667788ull);
	CHECK_EQ(out[0].token, 0xaabbccdd);
	CHECK_EQ(out[1].length, 4096);
	CHECK_EQ(smbd_buffer_desc_v1_decode(buf, 31, out, 2, &n), -EBADMSG);
	CHECK_EQ(smbd_buffer_desc_v1_decode(buf, 0, out, 2, &n), -EBADMSG);
	CHECK_EQ(smbd_buffer_desc_v1_decode(buf, 32, out, 1, &n), -E2BIG);
}

int main(void)
{
	RUN(test_negotiate_req_bytes);
	RUN(test_negotiate_req_checks);
	RUN(test_negotiate_resp_bytes);
	RUN(test_negotiate_resp_checks);
	RUN(test_data_decode_checks);
	RUN(test_data_hdr_encode);
	RUN(test_buffer_desc);
	return check_report();
}
