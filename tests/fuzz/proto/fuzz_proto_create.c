/* Fuzz: CREATE response and its create-context chain. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_create_rsp r;
	if (smb2_create_rsp_decode(data, size, &r) == 0) {
		fuzz_in(r.contexts, r.contexts_len, data, size);
		fuzz_create_ctxs(r.contexts, r.contexts_len);
	}
	/* The iterator also on the raw bytes after a header's worth. */
	if (size > 64 && size - 64 <= UINT32_MAX)
		fuzz_create_ctxs(data + 64, (uint32_t)(size - 64));
	return 0;
}
