/* Fuzz: NEGOTIATE response with its 3.1.1 contexts. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_negotiate_rsp r;
	if (smb2_negotiate_rsp_decode(data, size, &r) == 0) {
		fuzz_in(r.security_buffer, r.security_buffer_len, data, size);
		fuzz_touch(r.security_buffer, r.security_buffer_len);
	}
	return 0;
}
