/* tests/fuzz/smbd/fuzz_smbd_negotiate_resp.c — [MS-SMBD] 2.2.1/2.2.2 decoders
 * on arbitrary bytes; a response that passes the 3.1.5.7 checks re-encodes to
 * the same 32 bytes. */
#include "smbd/smbd_proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smbd_negotiate_resp resp;
	struct smbd_negotiate_req req;
	uint8_t buf[32];

	if (smbd_negotiate_resp_decode(data, size, 1364, &resp) == 32) {
		if (resp.status != 0 || resp.negotiated_version != SMBD_VERSION_1 ||
		    resp.credits_granted == 0 || resp.credits_requested == 0 ||
		    resp.max_receive_size < SMBD_MIN_RECEIVE_SIZE ||
		    resp.max_fragmented_size < SMBD_MIN_FRAGMENTED_SIZE ||
		    resp.preferred_send_size > 1364)
			abort();
		if (smbd_negotiate_resp_encode(&resp, buf, sizeof(buf)) != 32)
			abort();
		/* Reserved is not kept; everything else round-trips. */
		if (memcmp(buf, data, 6) != 0 || memcmp(buf + 8, data + 8, 24) != 0)
			abort();
	}
	if (smbd_negotiate_req_decode(data, size, &req) == 20) {
		if (req.min_version > SMBD_VERSION_1 || req.max_version < SMBD_VERSION_1 ||
		    req.credits_requested == 0)
			abort();
	}
	return 0;
}
