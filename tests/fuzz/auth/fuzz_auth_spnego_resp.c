/* tests/fuzz/auth/fuzz_auth_spnego_resp.c — NegTokenResp decoder, and the
 * encoder fed back with what decoded (it must reproduce valid DER input). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/spnego.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spnego_resp r;
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (spnego_decode_resp(copy, size, &r) == 0) {
		size_t cap = size + 16;
		uint8_t *out = malloc(cap);
		ssize_t n;
		struct spnego_resp again;

		if (!out)
			abort();
		n = spnego_encode_resp(out, cap, r.neg_state, r.supported_mech,
		                       r.supported_mech_len, r.response_token, r.response_token_len,
		                       r.mech_list_mic, r.mech_list_mic_len);
		/* Re-encoding what decoded must decode to the same fields (the
		 * bytes may differ: the decoder accepts non-minimal lengths). */
		if (n < 0 || spnego_decode_resp(out, (size_t)n, &again) != 0)
			abort();
		if (again.neg_state != r.neg_state ||
		    again.response_token_len != r.response_token_len ||
		    again.mech_list_mic_len != r.mech_list_mic_len ||
		    again.supported_mech_len != r.supported_mech_len ||
		    (r.response_token_len &&
		     memcmp(again.response_token, r.response_token, r.response_token_len)))
			abort();
		free(out);
	}
	free(copy);
	return 0;
}
