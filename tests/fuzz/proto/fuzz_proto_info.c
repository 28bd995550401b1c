/* Fuzz: QUERY_INFO responses and the information-class decoders ([MS-FSCC]
 * 2.4.2 All, 2.4.7 Basic, 2.4.22 Internal, 2.4.29 NetworkOpen, 2.4.41
 * Standard, 2.5.4 FsFullSize).  Each decoder sees both the whole input (as
 * a bare buffer) and the OutputBuffer of the input read as a response.
 * Checks: a decoder accepts exactly the buffers that hold its fixed part,
 * and FileAllInformation agrees with the Basic and Standard decoders on the
 * parts it embeds. */
#include <errno.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

static void verdict(int rc, size_t len, size_t need)
{
	if (len >= need ? rc != 0 : rc != -EBADMSG)
		abort();
}

static void check_infos(const uint8_t *b, size_t len)
{
	struct smb2_file_basic_info bi;
	struct smb2_file_standard_info si;
	struct smb2_file_all_info ai;
	struct smb2_file_network_open_info ni;
	struct smb2_fs_full_size_info fi;
	uint64_t ino;

	verdict(smb2_file_basic_info_decode(b, len, &bi), len, 36);
	verdict(smb2_file_standard_info_decode(b, len, &si), len, 22);
	verdict(smb2_file_internal_info_decode(b, len, &ino), len, 8);
	verdict(smb2_file_network_open_info_decode(b, len, &ni), len, 52);
	verdict(smb2_fs_full_size_info_decode(b, len, &fi), len, 32);
	int rc = smb2_file_all_info_decode(b, len, &ai);
	verdict(rc, len, 96);
	if (rc == 0) {
		struct smb2_file_standard_info s2;
		if (smb2_file_standard_info_decode(b + 40, len - 40, &s2) != 0)
			abort();
		if (ai.basic.creation_time != bi.creation_time ||
		    ai.basic.last_access_time != bi.last_access_time ||
		    ai.basic.last_write_time != bi.last_write_time ||
		    ai.basic.change_time != bi.change_time ||
		    ai.basic.file_attributes != bi.file_attributes ||
		    ai.standard.allocation_size != s2.allocation_size ||
		    ai.standard.end_of_file != s2.end_of_file ||
		    ai.standard.number_of_links != s2.number_of_links ||
		    ai.standard.delete_pending != s2.delete_pending ||
		    ai.standard.directory != s2.directory || ai.index_number != smb_le64(b + 64))
			abort();
	}
	if (len >= 52 && (ni.creation_time != bi.creation_time ||
	                  ni.change_time != bi.change_time || ni.end_of_file != smb_le64(b + 40)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *msg = fuzz_dup(data, size);
	if (!msg)
		return 0;
	check_infos(msg, size);
	struct smb2_query_info_rsp r;
	memset(&r, 0, sizeof(r));
	int rc = smb2_query_info_rsp_decode(msg, size, &r);
	if (rc != 0 && rc != -EBADMSG && rc != -EPROTO)
		abort();
	if (rc == 0) {
		if (!r.buffer != !r.buffer_len)
			abort(); /* an empty buffer is NULL, a non-empty one is not */
		fuzz_in(r.buffer, r.buffer_len, msg, size);
		if (r.buffer && r.buffer < msg + SMB2_HDR_SIZE + 8)
			abort(); /* not inside the header or the fixed body */
		check_infos(r.buffer, r.buffer_len);
	}
	free(msg);
	return 0;
}
