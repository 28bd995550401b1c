/* tests/fuzz/smbd/fuzz_smbd_data.c — the [MS-SMBD] 2.2.3 data transfer decoder
 * (with the 3.1.5.8 checks) and the 2.2.3.1 Buffer Descriptor V1 array decoder
 * on arbitrary bytes.  Whatever passes must describe bytes inside the input. */
#include "smbd/smbd_proto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smbd_data_hdr h;
	const uint32_t maxf = 1u << 20;

	if (smbd_data_decode(data, size, maxf, &h) == (int)size) {
		if ((uint64_t)h.data_offset + h.data_length > size || h.data_offset % 8 ||
		    (uint64_t)h.data_length + h.remaining_data_length > maxf ||
		    h.credits_requested == 0)
			abort();
		/* Touch the payload so ASan sees any overrun. */
		volatile uint8_t sum = 0;
		for (uint32_t i = 0; i < h.data_length; i++)
			sum ^= data[h.data_offset + i];
		(void)sum;
	}

	struct smbd_buffer_desc_v1 d[64];
	size_t n = 0;
	int r = smbd_buffer_desc_v1_decode(data, size, d, 64, &n);
	if (r >= 0) {
		uint8_t out[64 * SMBD_BUFFER_DESC_V1_SIZE];
		if (n == 0 || n > 64 || (size_t)r != size ||
		    smbd_buffer_desc_v1_encode(d, n, out, sizeof(out)) != r ||
		    memcmp(out, data, size) != 0)
			abort();
	}
	return 0;
}
