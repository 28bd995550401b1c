/* Fuzz: ERROR response and the error-body test. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_error_rsp r;
	(void)smb2_is_error_body(data, size);
	if (smb2_error_rsp_decode(data, size, &r) == 0) {
		fuzz_in(r.error_data, r.byte_count, data, size);
		fuzz_touch(r.error_data, r.byte_count);
	}
	return 0;
}
