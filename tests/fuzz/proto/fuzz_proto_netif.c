/* Fuzz: FSCTL_QUERY_NETWORK_INTERFACE_INFO output (NETWORK_INTERFACE_INFO chains). */
#include <sys/socket.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_netif out[4];
	size_t n = 0;
	if (smb2_netif_decode(data, size, out, 4, &n) == 0) {
		for (size_t i = 0; i < n && i < 4; i++)
			if (out[i].family != AF_INET && out[i].family != AF_INET6)
				abort();
	}
	return 0;
}
