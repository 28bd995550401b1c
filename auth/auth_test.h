/* auth/auth_test.h — hooks for known-answer tests; not for production use. */
#ifndef SMBRDMA_AUTH_AUTH_TEST_H
#define SMBRDMA_AUTH_AUTH_TEST_H

#include <stdint.h>

struct smb_auth;

/* Use this client challenge, ExportedSessionKey and (when the server sends
 * no MsvAvTimestamp) timestamp instead of the random generator and clock. */
void smb_auth_ntlmssp_fix_randomness(struct smb_auth *a, const uint8_t client_challenge[8],
                                     const uint8_t exported_session_key[16], uint64_t timestamp);

#endif
