/* Fuzz: READ, WRITE, CLOSE, IOCTL, QUERY_INFO and QUERY_DIRECTORY responses,
 * the directory-entry iterator and the info-class decoders.  Every decoder
 * sees every input; the wrong ones must just refuse it. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_read_rsp rd;
	if (smb2_read_rsp_decode(data, size, &rd) == 0) {
		fuzz_in(rd.data, rd.data_length, data, size);
		fuzz_touch(rd.data, rd.data_length);
	}
	struct smb2_write_rsp wr;
	(void)smb2_write_rsp_decode(data, size, &wr);
	struct smb2_close_rsp cl;
	(void)smb2_close_rsp_decode(data, size, &cl);
	struct smb2_ioctl_rsp io;
	if (smb2_ioctl_rsp_decode(data, size, &io) == 0) {
		fuzz_in(io.input, io.input_len, data, size);
		fuzz_in(io.output, io.output_len, data, size);
		fuzz_touch(io.output, io.output_len);
	}
	struct smb2_query_info_rsp qi;
	if (smb2_query_info_rsp_decode(data, size, &qi) == 0) {
		fuzz_in(qi.buffer, qi.buffer_len, data, size);
		fuzz_infos(qi.buffer, qi.buffer_len);
	}
	struct smb2_query_directory_rsp qd;
	if (smb2_query_directory_rsp_decode(data, size, &qd) == 0) {
		fuzz_in(qd.buffer, qd.buffer_len, data, size);
		fuzz_dirents(qd.buffer, qd.buffer_len);
	}
	(void)smb2_flush_rsp_decode(data, size);
	(void)smb2_set_info_rsp_decode(data, size);
	(void)smb2_echo_rsp_decode(data, size);
	/* The raw iterators and info decoders on the whole input too. */
	if (size <= UINT32_MAX)
		fuzz_dirents(data, (uint32_t)size);
	fuzz_infos(data, size);
	return 0;
}
