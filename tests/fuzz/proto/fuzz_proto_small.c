/* Fuzz: the fixed-size responses (TREE_CONNECT, TREE_DISCONNECT, LOGOFF,
 * CLOSE, FLUSH, WRITE, ECHO, SET_INFO), ERROR, and IOCTL with its output
 * read as FSCTL_QUERY_NETWORK_INTERFACE_INFO, the way multichannel/ does.
 * Every decoder sees every input.  Checks: each verdict is the one the
 * StructureSize rule gives (header + a body of at least StructureSize,
 * rounded down to even), fields come from their offsets, and buffers a
 * decoder hands back lie after the fixed body and inside the message. */
#include <errno.h>
#include <sys/socket.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

#define BODY SMB2_HDR_SIZE

/* [MS-SMB2] 2.2: the verdict for a body of StructureSize ss (a body may be
 * one byte short of an odd StructureSize: the empty variable part). */
static int body_verdict(const uint8_t *m, size_t len, uint16_t ss)
{
	if (len < BODY + 2)
		return -EBADMSG;
	if (smb_le16(m + BODY) != ss)
		return -EPROTO;
	if (len - BODY < (size_t)(ss & ~1u))
		return -EBADMSG;
	return 0;
}

static void expect(int rc, int want)
{
	if (rc != want)
		abort();
}

/* A (pointer, length) a decoder handed back: NULL iff empty, else inside
 * the message and past the fixed body of size fixed. */
static void expect_buf(const uint8_t *p, uint32_t n, const uint8_t *m, size_t len, size_t fixed)
{
	if (!p != !n)
		abort();
	if (!p)
		return;
	fuzz_in(p, n, m, len);
	if (p < m + BODY + fixed)
		abort();
	fuzz_touch(p, n);
}

static void netif(const uint8_t *b, uint32_t len)
{
	struct smb2_netif out[4];
	size_t n = 99;
	int rc = smb2_netif_decode(b, len, out, 4, &n);
	if (rc == 0) {
		if (n > len / 152)
			abort();
		for (size_t i = 0; i < n && i < 4; i++)
			if (out[i].family != AF_INET && out[i].family != AF_INET6)
				abort();
	} else if (rc != -EBADMSG || n != 0) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;
	size_t len = size;
	int v;

	expect(smb2_logoff_rsp_decode(m, len), body_verdict(m, len, 4));
	expect(smb2_tree_disconnect_rsp_decode(m, len), body_verdict(m, len, 4));
	expect(smb2_flush_rsp_decode(m, len), body_verdict(m, len, 4));
	expect(smb2_echo_rsp_decode(m, len), body_verdict(m, len, 4));
	expect(smb2_set_info_rsp_decode(m, len), body_verdict(m, len, 2));

	struct smb2_tree_connect_rsp tc;
	v = body_verdict(m, len, 16);
	expect(smb2_tree_connect_rsp_decode(m, len, &tc), v);
	if (v == 0 && (tc.share_type != m[BODY + 2] || tc.share_flags != smb_le32(m + BODY + 4) ||
	               tc.capabilities != smb_le32(m + BODY + 8) ||
	               tc.maximal_access != smb_le32(m + BODY + 12)))
		abort();

	struct smb2_close_rsp cl;
	v = body_verdict(m, len, 60);
	expect(smb2_close_rsp_decode(m, len, &cl), v);
	if (v == 0 &&
	    (cl.flags != smb_le16(m + BODY + 2) || cl.creation_time != smb_le64(m + BODY + 8) ||
	     cl.end_of_file != smb_le64(m + BODY + 48) ||
	     cl.file_attributes != smb_le32(m + BODY + 56)))
		abort();

	struct smb2_write_rsp wr;
	v = body_verdict(m, len, 17);
	expect(smb2_write_rsp_decode(m, len, &wr), v);
	if (v == 0 &&
	    (wr.count != smb_le32(m + BODY + 4) || wr.remaining != smb_le32(m + BODY + 8)))
		abort();

	struct smb2_error_rsp er;
	v = body_verdict(m, len, 9);
	int rc = smb2_error_rsp_decode(m, len, &er);
	if (v != 0) {
		expect(rc, v);
	} else {
		uint32_t bc = smb_le32(m + BODY + 4);
		expect(rc, bc <= len - BODY - 8 ? 0 : -EBADMSG);
		if (rc == 0) {
			if (er.byte_count != bc || er.error_context_count != m[BODY + 2] ||
			    (bc && er.error_data != m + BODY + 8))
				abort();
			expect_buf(er.error_data, er.byte_count, m, len, 8);
		}
	}
	if (smb2_is_error_body(m, len) && smb_le16(m + BODY) != 9)
		abort();

	struct smb2_ioctl_rsp io;
	v = body_verdict(m, len, 49);
	rc = smb2_ioctl_rsp_decode(m, len, &io);
	if (v != 0) {
		expect(rc, v);
	} else if (rc == 0) {
		if (io.ctl_code != smb_le32(m + BODY + 4) ||
		    io.input_len != smb_le32(m + BODY + 28) ||
		    io.output_len != smb_le32(m + BODY + 36))
			abort();
		expect_buf(io.input, io.input_len, m, len, 48);
		expect_buf(io.output, io.output_len, m, len, 48);
		netif(io.output, io.output_len);
	} else {
		expect(rc, -EBADMSG);
	}
	free(m);
	return 0;
}
