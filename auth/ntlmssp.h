/* auth/ntlmssp.h — NTLMSSP messages and NTLMv2 ([MS-NLMP]), no SPNEGO.
 *
 * Pure functions plus a small state struct; spnego.c and auth.c build on them.
 * The decoders treat every offset/length in a CHALLENGE as hostile.
 */
#ifndef SMBRDMA_AUTH_NTLMSSP_H
#define SMBRDMA_AUTH_NTLMSSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NTLMSSP_NEGOTIATE_UNICODE		  0x00000001u
#define NTLMSSP_REQUEST_TARGET			  0x00000004u
#define NTLMSSP_NEGOTIATE_SIGN			  0x00000010u
#define NTLMSSP_NEGOTIATE_SEAL			  0x00000020u
#define NTLMSSP_NEGOTIATE_NTLM			  0x00000200u
#define NTLMSSP_NEGOTIATE_ALWAYS_SIGN		  0x00008000u
#define NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY 0x00080000u
#define NTLMSSP_NEGOTIATE_TARGET_INFO		  0x00800000u
#define NTLMSSP_NEGOTIATE_VERSION		  0x02000000u
#define NTLMSSP_NEGOTIATE_128			  0x20000000u
#define NTLMSSP_NEGOTIATE_KEY_EXCH		  0x40000000u
#define NTLMSSP_NEGOTIATE_56			  0x80000000u

struct ntlmssp_challenge {
	uint32_t flags;
	uint8_t server_challenge[8];
	const uint8_t *target_info;	/* AV pairs, points into the message */
	uint16_t target_info_len;
	const uint8_t *target_name;
	uint16_t target_name_len;
};
/* Decode a CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2).  0 or -EBADMSG. */
int ntlmssp_challenge_decode(const uint8_t *msg, size_t len, struct ntlmssp_challenge *c);
/* Find an AV pair; returns 1 and sets *val/*vlen, 0 if absent, -EBADMSG if the
 * list is malformed (no MsvAvEOL inside len, or a length past the end). */
int ntlmssp_av_find(const uint8_t *av, size_t len, uint16_t id, const uint8_t **val,
		    uint16_t *vlen);

#endif
