/* Fuzz: UTF-16LE -> UTF-8, and back: whatever converts must round-trip. */
#include <string.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char u8[3 * 4096 + 1];
	static uint8_t u16[2 * 4096];
	if (size > 2 * 4096)
		return 0;
	ssize_t n = smb_utf16le_to_utf8(data, size, u8, sizeof(u8));
	if (n < 0)
		return 0;
	if (strlen(u8) != (size_t)n)
		abort();
	ssize_t m = smb_utf8_to_utf16le(u8, (size_t)n, u16, sizeof(u16), false);
	if (m < 0 || (size_t)m > size || memcmp(u16, data, (size_t)m) != 0)
		abort();
	/* What is left over can only be the NUL padding the decoder drops. */
	for (size_t i = (size_t)m; i < size; i++)
		if (data[i])
			abort();
	/* And the UTF-8 side of the converter on the raw bytes. */
	(void)smb_utf8_to_utf16le((const char *)data, size, u16, sizeof(u16), true);
	return 0;
}
