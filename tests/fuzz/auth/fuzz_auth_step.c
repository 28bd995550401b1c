/* tests/fuzz/auth/fuzz_auth_step.c — smb_auth_step() fed hostile server
 * tokens at each of its three steps.  The first byte picks the step; the rest
 * is the token. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_test.h"
#include "auth/spnego.h"
#include "common/crypto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A minimal CHALLENGE with a timestamp (so with MIC and mechListMIC). */
static const uint8_t challenge[64] = {
    'N',  'T',  'L',  'M',  'S',  'S',  'P',  0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x30, 0x00, 0x00, 0x00, 0x15, 0x82, 0x8a, 0xe2, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x10, 0x00, 0x30, 0x00, 0x00, 0x00,
    0x07, 0x00, 0x08, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x00, 0x00,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t cc[8], esk[16];
	struct smb_auth_creds creds = {.user = "u", .password = "p", .server_name = "s"};
	struct smb_auth *a;
	const uint8_t *out;
	size_t outlen;
	uint8_t *copy;
	int which, rc;

	if (size < 1 || smb_crypto_init())
		return 0;
	which = data[0] % 3;
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (smb_auth_ntlmssp_new(NULL, &creds, &a) != 0)
		abort();
	smb_auth_ntlmssp_fix_randomness(a, cc, esk, 0);
	if (which == 0) {
		smb_auth_step(a, copy, size - 1, &out, &outlen);
	} else {
		if (smb_auth_step(a, NULL, 0, &out, &outlen) != SMB_AUTH_CONTINUE)
			abort();
		if (which == 1) {
			smb_auth_step(a, copy, size - 1, &out, &outlen);
		} else {
			uint8_t tok[128];
			ssize_t n = spnego_encode_resp(
			    tok, sizeof(tok), SPNEGO_ACCEPT_INCOMPLETE, spnego_oid_ntlmssp,
			    sizeof(spnego_oid_ntlmssp), challenge, sizeof(challenge), NULL, 0);

			if (n < 0)
				abort();
			rc = smb_auth_step(a, tok, (size_t)n, &out, &outlen);
			if (rc != SMB_AUTH_CONTINUE)
				abort();
			smb_auth_step(a, copy, size - 1, &out, &outlen);
		}
	}
	if (outlen && out[outlen - 1] == 0x42)
		which = 4; /* touch the last output byte */
	smb_auth_free(a);
	free(copy);
	return 0;
}
