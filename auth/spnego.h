/* auth/spnego.h — SPNEGO tokens ([MS-SPNG], RFC 4178), DER per X.690.
 *
 *   NegotiationToken ::= CHOICE { negTokenInit [0] NegTokenInit,
 *                                 negTokenResp [1] NegTokenResp }
 *   The first token travels inside the GSS-API InitialContextToken
 *   ([APPLICATION 0] { thisMech 1.3.6.1.5.5.2, innerToken }, RFC 2743 3.1).
 *
 * Decoders are pure and treat the input as hostile: they return 0 or -EBADMSG
 * and hand back pointers into the caller's buffer.  Encoders write into a
 * caller's buffer and return the bytes written or -ENOSPC.
 */
#ifndef SMBRDMA_AUTH_SPNEGO_H
#define SMBRDMA_AUTH_SPNEGO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* OID contents (no tag/length). */
extern const uint8_t spnego_oid_spnego[6];   /* 1.3.6.1.5.5.2 */
extern const uint8_t spnego_oid_ntlmssp[10]; /* 1.3.6.1.4.1.311.2.2.10 */
extern const uint8_t spnego_oid_krb5[9];     /* 1.2.840.113554.1.2.2 */
extern const uint8_t spnego_oid_ms_krb5[9];  /* 1.2.840.48018.1.2.2 */

/* negState values, RFC 4178 4.2.2 */
enum spnego_neg_state {
	SPNEGO_ACCEPT_COMPLETED = 0,
	SPNEGO_ACCEPT_INCOMPLETE = 1,
	SPNEGO_REJECT = 2,
	SPNEGO_REQUEST_MIC = 3,
	SPNEGO_NEG_STATE_ABSENT = -1,
};

/* NegTokenInit, or [MS-SPNG] 2.2.1 NegTokenInit2 (the server's NEGOTIATE
 * blob: negHints in [3] and mechListMIC in [4]). */
struct spnego_init {
	const uint8_t *mech_types; /* the whole MechTypeList (SEQUENCE OF OID) DER */
	size_t mech_types_len;
	const uint8_t *mech_token; /* NULL when absent */
	size_t mech_token_len;
	const uint8_t *mech_list_mic; /* NULL when absent */
	size_t mech_list_mic_len;
};
/* Accepts the GSS-wrapped form (0x60 ...) and the bare [0] form. */
int spnego_decode_init(const uint8_t *buf, size_t len, struct spnego_init *out);

/* Does a MechTypeList (as in spnego_init.mech_types) hold @oid?  1, 0, or
 * -EBADMSG for a malformed list.  *index gets its position when found. */
int spnego_mech_list_find(const uint8_t *mech_types, size_t len, const uint8_t *oid, size_t oidlen,
                          int *index);

struct spnego_resp {
	int neg_state;                 /* enum spnego_neg_state */
	const uint8_t *supported_mech; /* OID contents, NULL when absent */
	size_t supported_mech_len;
	const uint8_t *response_token; /* NULL when absent */
	size_t response_token_len;
	const uint8_t *mech_list_mic; /* NULL when absent */
	size_t mech_list_mic_len;
};
int spnego_decode_resp(const uint8_t *buf, size_t len, struct spnego_resp *out);

/* A MechTypeList with one OID per entry of @oids/@oidlens: this exact DER is
 * what goes into the NegTokenInit and what mechListMIC covers. */
ssize_t spnego_encode_mech_types(uint8_t *buf, size_t cap, const uint8_t *const *oids,
                                 const size_t *oidlens, int count);
/* GSS-wrapped NegTokenInit { mechTypes, mechToken }. */
ssize_t spnego_encode_init(uint8_t *buf, size_t cap, const uint8_t *mech_types,
                           size_t mech_types_len, const uint8_t *token, size_t token_len);
/* NegTokenResp; neg_state SPNEGO_NEG_STATE_ABSENT and NULL pointers omit
 * the field. */
ssize_t spnego_encode_resp(uint8_t *buf, size_t cap, int neg_state, const uint8_t *mech,
                           size_t mech_len, const uint8_t *token, size_t token_len,
                           const uint8_t *mic, size_t mic_len);

#endif
