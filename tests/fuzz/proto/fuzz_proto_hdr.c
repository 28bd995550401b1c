/* Fuzz: header decode and compound walk; each member goes to the decoder of
 * its command, as the client's receive path would. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

static void decode_member(const uint8_t *m, size_t len)
{
	struct smb2_hdr h;
	if (smb2_hdr_decode(m, len, &h))
		return;
	if (smb2_is_error_body(m, len)) {
		struct smb2_error_rsp e;
		if (smb2_error_rsp_decode(m, len, &e) == 0)
			fuzz_in(e.error_data, e.byte_count, m, len);
		return;
	}
	switch (h.command) {
	case SMB2_NEGOTIATE: {
		struct smb2_negotiate_rsp r;
		if (smb2_negotiate_rsp_decode(m, len, &r) == 0)
			fuzz_in(r.security_buffer, r.security_buffer_len, m, len);
		break;
	}
	case SMB2_SESSION_SETUP: {
		struct smb2_session_setup_rsp r;
		if (smb2_session_setup_rsp_decode(m, len, &r) == 0)
			fuzz_in(r.security_buffer, r.security_buffer_len, m, len);
		break;
	}
	case SMB2_LOGOFF:
		(void)smb2_logoff_rsp_decode(m, len);
		break;
	case SMB2_TREE_CONNECT: {
		struct smb2_tree_connect_rsp r;
		(void)smb2_tree_connect_rsp_decode(m, len, &r);
		break;
	}
	case SMB2_TREE_DISCONNECT:
		(void)smb2_tree_disconnect_rsp_decode(m, len);
		break;
	case SMB2_CREATE: {
		struct smb2_create_rsp r;
		if (smb2_create_rsp_decode(m, len, &r) == 0) {
			fuzz_in(r.contexts, r.contexts_len, m, len);
			fuzz_create_ctxs(r.contexts, r.contexts_len);
		}
		break;
	}
	case SMB2_CLOSE: {
		struct smb2_close_rsp r;
		(void)smb2_close_rsp_decode(m, len, &r);
		break;
	}
	case SMB2_FLUSH:
		(void)smb2_flush_rsp_decode(m, len);
		break;
	case SMB2_READ: {
		struct smb2_read_rsp r;
		if (smb2_read_rsp_decode(m, len, &r) == 0)
			fuzz_in(r.data, r.data_length, m, len);
		break;
	}
	case SMB2_WRITE: {
		struct smb2_write_rsp r;
		(void)smb2_write_rsp_decode(m, len, &r);
		break;
	}
	case SMB2_IOCTL: {
		struct smb2_ioctl_rsp r;
		if (smb2_ioctl_rsp_decode(m, len, &r) == 0) {
			fuzz_in(r.input, r.input_len, m, len);
			fuzz_in(r.output, r.output_len, m, len);
		}
		break;
	}
	case SMB2_ECHO:
		(void)smb2_echo_rsp_decode(m, len);
		break;
	case SMB2_QUERY_DIRECTORY: {
		struct smb2_query_directory_rsp r;
		if (smb2_query_directory_rsp_decode(m, len, &r) == 0) {
			fuzz_in(r.buffer, r.buffer_len, m, len);
			fuzz_dirents(r.buffer, r.buffer_len);
		}
		break;
	}
	case SMB2_QUERY_INFO: {
		struct smb2_query_info_rsp r;
		if (smb2_query_info_rsp_decode(m, len, &r) == 0) {
			fuzz_in(r.buffer, r.buffer_len, m, len);
			fuzz_infos(r.buffer, r.buffer_len);
		}
		break;
	}
	case SMB2_SET_INFO:
		(void)smb2_set_info_rsp_decode(m, len);
		break;
	default:
		break;
	}
	(void)smb2_command_str(h.command);
	(void)smb2_status_str(h.status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	int members = 0;
	while (off < size) {
		ssize_t n = smb2_compound_next(data, size, off);
		if (n < 0)
			break;
		if ((size_t)n < SMB2_HDR_SIZE || (size_t)n > size - off)
			abort();
		decode_member(data + off, (size_t)n);
		off += (size_t)n;
		if (++members > 1 + (int)(size / 64))
			abort();
	}
	return 0;
}
