/* auth/auth_mech.h — what a mechanism behind auth/auth.h implements; internal to auth/.
 *
 * auth.c owns struct smb_auth and implements NTLMSSP itself; another
 * mechanism (auth/krb5.c: Kerberos through GSSAPI) supplies a
 * `static const struct smb_auth_mech_ops` and its own state.
 *
 * Rules for implementers:
 * - step() is called by smb_auth_step() with its arguments checked and
 *   *out and *outlen preset to an empty token; it returns SMB_AUTH_DONE,
 *   SMB_AUTH_CONTINUE or -errno and keeps any token it hands out valid
 *   until its next step or the context's free.  A failure is sticky.
 * - session_key() follows smb_auth_session_key() (-EAGAIN before the key
 *   exists, -ENOSPC when *keylen is too small).
 * - Human text for a failure goes through smb_auth_set_error(), so that
 *   smb_auth_last_error() serves every mechanism.  No keys, tickets or
 *   passwords in it, nor in any log line.
 * - The state from smb_auth_mech_new() is a talloc child of the context:
 *   a destructor on it releases whatever the mechanism holds outside talloc.
 */
#ifndef SMBRDMA_AUTH_AUTH_MECH_H
#define SMBRDMA_AUTH_AUTH_MECH_H

#include <stddef.h>
#include <stdint.h>

struct smb_auth;

struct smb_auth_mech_ops {
	const char *name; /* smb_auth_mech_name() */
	int (*step)(struct smb_auth *a, const uint8_t *in, size_t inlen, const uint8_t **out,
	            size_t *outlen);
	int (*session_key)(struct smb_auth *a, uint8_t *key, size_t *keylen);
};

/* A context run by `ops`, with `state_size` zeroed bytes of mechanism state
 * (a talloc child of the context) in *state; NULL when out of memory. */
struct smb_auth *smb_auth_mech_new(void *talloc_parent, const struct smb_auth_mech_ops *ops,
                                   size_t state_size, void **state);
/* The state smb_auth_mech_new() allocated. */
void *smb_auth_mech_state(const struct smb_auth *a);
/* Remember `text` (copied) as what smb_auth_last_error() returns. */
void smb_auth_set_error(struct smb_auth *a, const char *text);

#endif
