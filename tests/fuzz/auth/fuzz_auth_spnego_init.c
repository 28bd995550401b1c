/* tests/fuzz/auth/fuzz_auth_spnego_init.c — NegTokenInit / NegTokenInit2 decoder
 * and the mechTypes walker. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/spnego.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spnego_init init;
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (spnego_decode_init(copy, size, &init) == 0) {
		int idx;

		if (spnego_mech_list_find(init.mech_types, init.mech_types_len, spnego_oid_ntlmssp,
		                          sizeof(spnego_oid_ntlmssp), &idx) < 0)
			abort(); /* the decoder validated the list */
		if (init.mech_token_len && init.mech_token[init.mech_token_len - 1] == 0x99)
			idx = 0;
		if (init.mech_list_mic_len && init.mech_list_mic[0] == 0x99)
			idx = 1;
		(void)idx;
	}
	free(copy);
	return 0;
}
