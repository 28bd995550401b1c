/* auth/auth.h — the security-blob exchange of SESSION_SETUP, behind one interface.
 *
 * client/ drives it like GSS-API: call smb_auth_step() with the security
 * buffer the server sent (first call: the NEGOTIATE response's buffer, possibly
 * empty), send what it returns in the next SESSION_SETUP request, and repeat
 * while it returns SMB_AUTH_CONTINUE.  Every blob is SPNEGO ([MS-SPNG],
 * RFC 4178) wrapping the mechanism: NTLMSSP (auth/ntlmssp.c) or Kerberos
 * through GSSAPI (auth/krb5.c).
 *
 * Memory: contexts are talloc'ed under the caller's parent; *out points into
 * memory owned by the context and is valid until the next step or the free.
 * One context serves one session setup; it is not thread-safe (one caller).
 */
#ifndef SMBRDMA_AUTH_AUTH_H
#define SMBRDMA_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

struct smb_auth;

struct smb_auth_creds {
	const char *user; /* may be "" for anonymous */
	const char *password;
	const char *domain;      /* may be NULL or "" */
	const char *workstation; /* may be NULL */
	const char *server_name; /* host name, for Kerberos SPN and NTLM target info */
};

enum {
	SMB_AUTH_DONE = 0,     /* finished; *out (maybe empty) is the last blob to send */
	SMB_AUTH_CONTINUE = 1, /* send *out and call again with the reply */
};

/* NTLMSSP (NTLMv2, with key exchange and MIC) inside SPNEGO. */
int smb_auth_ntlmssp_new(void *talloc_parent, const struct smb_auth_creds *creds,
                         struct smb_auth **out);
/* Kerberos through MIT krb5 GSSAPI: gss_init_sec_context() with the SPNEGO
 * mechanism, target GSS_C_NT_HOSTBASED_SERVICE "cifs@<server_name>", mutual
 * authentication.  Credentials are acquired here, so a missing ticket fails
 * at once: -ENOKEY (no credentials), -EKEYEXPIRED (expired), -EACCES
 * (other GSS failure), with a one-line human message in errbuf naming the
 * cause (the GSS major/minor status text). */
struct smb_auth_krb5_opts {
	const char *server_name; /* host name the SPN is built from */
	const char *user;        /* NULL or "": the default principal of the ccache (or
	                            the keytab's first entry); else "name" or "name@REALM" */
	const char *domain;      /* realm for a user without '@'; may be NULL */
	const char *keytab;      /* NULL: the caller's credential cache (KRB5CCNAME or the
	                            default); else a client keytab, used without any ccache */
};
int smb_auth_krb5_new(void *talloc_parent, const struct smb_auth_krb5_opts *o,
                      struct smb_auth **out, char *errbuf, size_t errlen);
/* The last failure's human text (GSS status for Kerberos), or NULL. */
const char *smb_auth_last_error(const struct smb_auth *a);

/* Returns SMB_AUTH_DONE, SMB_AUTH_CONTINUE, or -errno: -EACCES when the
 * server's token rejects us (SPNEGO reject), -EBADMSG for a malformed token,
 * -EPROTONOSUPPORT when the server offers no mechanism we have. */
int smb_auth_step(struct smb_auth *a, const uint8_t *in, size_t inlen, const uint8_t **out,
                  size_t *outlen);
/* The session key once the exchange has produced it (NTLM: ExportedSessionKey,
 * 16 bytes; Kerberos: the GSS context's whole key, e.g. 32 bytes for
 * aes256-cts, from GSS_C_INQ_SSPI_SESSION_KEY); -EAGAIN before, -ENOSPC when
 * *keylen (in: buffer size, out: key length) is too small — 64 always fits.
 * SMB takes the first 16 bytes (zero-padded) as Session.SessionKey and all of
 * it as Session.FullSessionKey ([MS-SMB2] 3.2.5.3). */
int smb_auth_session_key(struct smb_auth *a, uint8_t *key, size_t *keylen);
/* Name of the mechanism in use, for log lines ("NTLMSSP", "Kerberos"). */
const char *smb_auth_mech_name(const struct smb_auth *a);
void smb_auth_free(struct smb_auth *a);

#endif
