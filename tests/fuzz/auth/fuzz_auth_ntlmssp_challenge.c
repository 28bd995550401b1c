/* tests/fuzz/auth/fuzz_auth_ntlmssp_challenge.c — CHALLENGE decoder, AV pair
 * walker, and the client's AUTHENTICATE built from whatever decoded.  The AV
 * walker also runs on the raw input (a list the decoder did not vet). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <talloc.h>

#include "auth/ntlmssp.h"
#include "common/crypto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* [p, p+n) inside [base, base+len)? */
static void inside(const uint8_t *p, size_t n, const uint8_t *base, size_t len)
{
	if (p && (p < base || (size_t)(p - base) > len || n > len - (size_t)(p - base)))
		abort();
}

/* Walks an AV list of unknown quality: every value inside the list, the
 * offset moving forward by 4 + its length, and av_find agreeing. */
static void av_walk(const uint8_t *av, size_t len)
{
	size_t off = 0, prev;
	uint16_t id, vlen;
	const uint8_t *val;
	int rc, pairs = 0;

	do {
		prev = off;
		rc = ntlmssp_av_next(av, len, &off, &id, &val, &vlen);
		if (rc < 0) {
			if (rc != -EBADMSG || off != prev)
				abort();
			break;
		}
		if (off != prev + 4 + vlen || val != av + prev + 4)
			abort();
		inside(val, vlen, av, len);
		if (++pairs > (int)(len / 4))
			abort();
	} while (rc == 1);
	if (ntlmssp_av_find(av, len, MSV_AV_TIMESTAMP, &val, &vlen) < 0 ? rc >= 0 : rc < 0)
		abort(); /* find fails exactly when the walk does */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t cc[8] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
	static const uint8_t esk[16] = {0x55};
	static const uint64_t t0 = 0;
	struct ntlmssp_challenge c;
	uint8_t *copy, neg[NTLMSSP_NEGOTIATE_LEN];

	if (smb_crypto_init())
		abort();
	/* an exact-size heap copy so ASan sees any read past the end */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	av_walk(copy, size);
	if (ntlmssp_challenge_decode(copy, size, &c) == 0) {
		inside(c.target_info, c.target_info_len, copy, size);
		inside(c.target_name, c.target_name_len, copy, size);
		if (c.target_info) {
			size_t off = 0;
			uint16_t id, vlen;
			const uint8_t *val;
			int rc;

			while ((rc = ntlmssp_av_next(c.target_info, c.target_info_len, &off, &id,
			                             &val, &vlen)) == 1) {
				if (vlen && (val[0] == 0xfe && val[vlen - 1] == 0xff))
					off += 0; /* touch both ends of the value */
			}
			if (rc < 0)
				abort(); /* the decoder promised a valid list */
			ntlmssp_av_find(c.target_info, c.target_info_len, 7, &val, &vlen);
		}
		if (c.target_name_len && c.target_name[c.target_name_len - 1] == 0x42)
			c.flags ^= 1;

		struct ntlmssp_client_params p = {
		    .user = "user",
		    .password = "pass",
		    .domain = "DOM",
		    .server_name = "srv",
		    .client_challenge_fixed = cc,
		    .exported_session_key_fixed = esk,
		    .timestamp_fixed = &t0,
		};
		struct ntlmssp_client_result res;
		uint8_t *auth;
		size_t alen;

		ntlmssp_negotiate_encode(neg, sizeof(neg), 0xe2088297u);
		if (ntlmssp_client_authenticate(NULL, &p, neg, sizeof(neg), copy, size, &auth,
		                                &alen, &res) == 0)
			talloc_free(auth);
	}
	free(copy);
	return 0;
}
