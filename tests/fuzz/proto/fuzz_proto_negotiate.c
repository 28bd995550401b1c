/* Fuzz: NEGOTIATE response with its 3.1.1 contexts.  Checks: the security
 * buffer lies inside the message, past the fixed body; contexts count only
 * for 3.1.1 and never past NegotiateContextCount. */
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_negotiate_rsp r;
	if (smb2_negotiate_rsp_decode(data, size, &r) == 0) {
		fuzz_in(r.security_buffer, r.security_buffer_len, data, size);
		if (r.security_buffer && r.security_buffer < data + SMB2_HDR_SIZE + 64)
			abort();
		fuzz_touch(r.security_buffer, r.security_buffer_len);
		bool any = r.preauth_seen || r.cipher_seen || r.signing_seen || r.posix_seen;
		if (r.dialect != SMB2_DIALECT_0311 ? any || r.context_count
		                                   : r.context_count > smb_le16(data + 70))
			abort();
	}
	return 0;
}
