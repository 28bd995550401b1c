/* Fuzz: FSCTL_QUERY_NETWORK_INTERFACE_INFO output (NETWORK_INTERFACE_INFO chains). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

#define MAX_OUT 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan flags any read past the end. */
	uint8_t *buf = size ? malloc(size) : NULL;
	if (size && !buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	struct smb2_netif out[MAX_OUT + 1];
	memset(out, 0x5a, sizeof(out));
	size_t n = 7, n0 = 7;
	int rc = smb2_netif_decode(buf, size, out, MAX_OUT, &n);
	/* max 0 and no array: the same verdict and the same count */
	int rc0 = smb2_netif_decode(buf, size, NULL, 0, &n0);
	if (rc != rc0 || n != n0)
		abort();
	if (rc != 0 && (rc != -EBADMSG || n != 0))
		abort();
	if (rc == 0) {
		/* every counted entry took at least one 152-byte entry of input */
		if (n > size / 152)
			abort();
		for (size_t i = 0; i < n && i < MAX_OUT; i++)
			if (out[i].family != AF_INET && out[i].family != AF_INET6)
				abort();
		/* nothing written past max */
		struct smb2_netif guard;
		memset(&guard, 0x5a, sizeof(guard));
		if (memcmp(&out[MAX_OUT], &guard, sizeof(guard)) != 0)
			abort();
	}
	free(buf);
	return 0;
}
