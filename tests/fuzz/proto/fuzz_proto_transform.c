/* Fuzz: the TRANSFORM_HEADER of an encrypted message, then (as the client
 * does after decrypting) the compound walk and SMB2 header of what it
 * claims to hide. */
#include <errno.h>
#include <string.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan flags any read past the end. */
	uint8_t *buf = size ? malloc(size) : NULL;
	if (size && !buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	struct smb2_transform_hdr th;
	int rc = smb2_transform_hdr_decode(buf, size, &th);
	if (rc != 0 && rc != -EBADMSG && rc != -EPROTO)
		abort();
	if (rc == 0) {
		if (size < SMB2_TRANSFORM_HDR_SIZE + SMB2_HDR_SIZE ||
		    th.original_size != size - SMB2_TRANSFORM_HDR_SIZE ||
		    th.flags != SMB2_TRANSFORM_FLAG_ENCRYPTED)
			abort();
		/* re-encoding gives back the header bytes (Reserved is zero) */
		uint8_t again[SMB2_TRANSFORM_HDR_SIZE];
		smb2_transform_hdr_encode(again, &th);
		buf[40] = buf[41] = 0;
		if (memcmp(again, buf, SMB2_TRANSFORM_HDR_SIZE) != 0)
			abort();
		const uint8_t *plain = buf + SMB2_TRANSFORM_HDR_SIZE;
		size_t len = th.original_size, off = 0;
		while (off < len) {
			ssize_t n = smb2_compound_next(plain, len, off);
			struct smb2_hdr h;
			if (n <= 0 || smb2_hdr_decode(plain + off, (size_t)n, &h) < 0)
				break;
			off += (size_t)n;
		}
	}
	free(buf);
	return 0;
}
