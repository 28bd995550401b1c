/* auth/auth.c — SPNEGO-wrapped NTLMSSP behind auth/auth.h.
 *
 * States and transitions (all in smb_auth_step()):
 *
 *   INIT ──(server NEGOTIATE blob, maybe empty)──▶ NEGOTIATE_SENT
 *        out: NegTokenInit { mechTypes [NTLMSSP], mechToken NEGOTIATE }
 *   NEGOTIATE_SENT ──(NegTokenResp accept-incomplete + CHALLENGE)──▶ AUTH_SENT
 *        out: NegTokenResp { responseToken AUTHENTICATE, mechListMIC }
 *   AUTH_SENT ──(NegTokenResp accept-completed [+ mechListMIC], or empty)──▶ DONE
 *        out: nothing
 *   any ──(reject: -EACCES; malformed: -EBADMSG; ...)──▶ FAILED (sticky)
 *
 * The mechListMIC we send (and the server's we check) is an NTLMSSP MAC with
 * sequence number 0 over the DER MechTypeList we sent ([MS-SPNG] 3.1.5.1,
 * [MS-NLMP] 3.4.4.2); we send it exactly when the AUTHENTICATE carries a MIC.
 *
 * The smb_auth_* entry points dispatch through the context's ops
 * (auth/auth_mech.h): NTLMSSP's are here, Kerberos's in auth/krb5.c.
 */
#include "auth/auth.h"

#include <errno.h>
#include <string.h>

#include <talloc.h>

#include "auth/ntlmssp.h"
#include "auth/spnego.h"
#include "common/crypto.h"
#include "common/log.h"
#include "auth/auth_mech.h"
#include "auth/auth_test.h"

enum smb_auth_state {
	AUTH_INIT = 0,
	AUTH_NEGOTIATE_SENT,
	AUTH_AUTH_SENT,
	AUTH_DONE,
	AUTH_FAILED,
};

static const char *smb_auth_state_str(enum smb_auth_state s)
{
	switch (s) {
	case AUTH_INIT:
		return "INIT";
	case AUTH_NEGOTIATE_SENT:
		return "NEGOTIATE_SENT";
	case AUTH_AUTH_SENT:
		return "AUTH_SENT";
	case AUTH_DONE:
		return "DONE";
	case AUTH_FAILED:
		return "FAILED";
	}
	return "?";
}

#define CLIENT_FLAGS                                                                      \
	(NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_REQUEST_TARGET | NTLMSSP_NEGOTIATE_SIGN |    \
	 NTLMSSP_NEGOTIATE_NTLM | NTLMSSP_NEGOTIATE_ALWAYS_SIGN |                         \
	 NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY | NTLMSSP_NEGOTIATE_TARGET_INFO |     \
	 NTLMSSP_NEGOTIATE_VERSION | NTLMSSP_NEGOTIATE_128 | NTLMSSP_NEGOTIATE_KEY_EXCH | \
	 NTLMSSP_NEGOTIATE_56)

struct smb_auth {
	const struct smb_auth_mech_ops *ops;
	void *mech_state; /* a mechanism other than NTLMSSP: its state */
	char *last_error; /* smb_auth_last_error() */
	/* NTLMSSP: */
	enum smb_auth_state state;
	/* credentials, copied; the password is wiped by the destructor */
	char *user, *password, *domain, *workstation, *server_name;
	/* what we sent, kept for the MIC and mechListMIC */
	uint8_t negotiate[NTLMSSP_NEGOTIATE_LEN];
	uint8_t mech_types[32];
	size_t mech_types_len;
	/* the token handed to the caller, valid until the next step */
	uint8_t *out;
	size_t out_len;
	bool have_key;
	struct ntlmssp_client_result ntlm;
	/* tests only: fixed randomness for known-answer runs */
	bool fixed;
	uint8_t fixed_cc[8];
	uint8_t fixed_esk[16];
	uint64_t fixed_time;
};

static void wipe(void *p, size_t n)
{
	volatile uint8_t *v = p;

	while (n--)
		*v++ = 0;
}

static int auth_destructor(struct smb_auth *a)
{
	if (a->password)
		wipe(a->password, strlen(a->password));
	wipe(&a->ntlm, sizeof(a->ntlm));
	wipe(a->fixed_esk, sizeof(a->fixed_esk));
	return 0;
}

static const struct smb_auth_mech_ops ntlmssp_ops;

int smb_auth_ntlmssp_new(void *talloc_parent, const struct smb_auth_creds *creds,
                         struct smb_auth **out)
{
	struct smb_auth *a;
	int rc;

	*out = NULL;
	if (!creds)
		return -EINVAL;
	rc = smb_crypto_init();
	if (rc)
		return rc;
	a = talloc_zero(talloc_parent, struct smb_auth);
	if (!a)
		return -ENOMEM;
	talloc_set_destructor(a, auth_destructor);
	a->ops = &ntlmssp_ops;
	a->user = talloc_strdup(a, creds->user ? creds->user : "");
	a->password = talloc_strdup(a, creds->password ? creds->password : "");
	a->domain = talloc_strdup(a, creds->domain ? creds->domain : "");
	a->workstation = talloc_strdup(a, creds->workstation ? creds->workstation : "");
	a->server_name = talloc_strdup(a, creds->server_name ? creds->server_name : "");
	if (!a->user || !a->password || !a->domain || !a->workstation || !a->server_name) {
		talloc_free(a);
		return -ENOMEM;
	}
	/* Catch bad UTF-8 now rather than in the middle of the exchange. */
	if (ntlmssp_utf16le(a->user, false, NULL, 0) < 0 ||
	    ntlmssp_utf16le(a->password, false, NULL, 0) < 0 ||
	    ntlmssp_utf16le(a->domain, false, NULL, 0) < 0 ||
	    ntlmssp_utf16le(a->workstation, false, NULL, 0) < 0) {
		talloc_free(a);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

void smb_auth_ntlmssp_fix_randomness(struct smb_auth *a, const uint8_t client_challenge[8],
                                     const uint8_t exported_session_key[16], uint64_t timestamp)
{
	a->fixed = true;
	memcpy(a->fixed_cc, client_challenge, 8);
	memcpy(a->fixed_esk, exported_session_key, 16);
	a->fixed_time = timestamp;
}

static void set_out(struct smb_auth *a, uint8_t *buf, size_t len)
{
	talloc_free(a->out);
	a->out = buf;
	a->out_len = len;
}

static int fail(struct smb_auth *a, int err, const char *why)
{
	smb_info("auth: NTLMSSP %s -> FAILED: %s (%d)", smb_auth_state_str(a->state), why, err);
	smb_auth_set_error(a, why);
	a->state = AUTH_FAILED;
	set_out(a, NULL, 0);
	return err;
}

static void transition(struct smb_auth *a, enum smb_auth_state to)
{
	smb_debug("auth: NTLMSSP %s -> %s", smb_auth_state_str(a->state), smb_auth_state_str(to));
	a->state = to;
}

/* INIT: check the server offers NTLMSSP, send NEGOTIATE. */
static int step_init(struct smb_auth *a, const uint8_t *in, size_t inlen)
{
	const uint8_t *oids[1] = {spnego_oid_ntlmssp};
	const size_t oidlens[1] = {sizeof(spnego_oid_ntlmssp)};
	struct spnego_init init;
	ssize_t n;
	uint8_t *buf;
	size_t cap;

	if (inlen) {
		if (spnego_decode_init(in, inlen, &init))
			return fail(a, -EBADMSG, "malformed NegTokenInit");
		int found =
		    spnego_mech_list_find(init.mech_types, init.mech_types_len, spnego_oid_ntlmssp,
		                          sizeof(spnego_oid_ntlmssp), NULL);
		if (found < 0)
			return fail(a, -EBADMSG, "malformed mechTypes");
		if (found == 0)
			return fail(a, -EPROTONOSUPPORT, "server does not offer NTLMSSP");
	}
	n = ntlmssp_negotiate_encode(a->negotiate, sizeof(a->negotiate), CLIENT_FLAGS);
	if (n < 0)
		return fail(a, (int)n, "encoding NEGOTIATE");
	n = spnego_encode_mech_types(a->mech_types, sizeof(a->mech_types), oids, oidlens, 1);
	if (n < 0)
		return fail(a, (int)n, "encoding mechTypes");
	a->mech_types_len = (size_t)n;

	cap = sizeof(a->negotiate) + a->mech_types_len + 64;
	buf = talloc_size(a, cap);
	if (!buf)
		return fail(a, -ENOMEM, "out of memory");
	n = spnego_encode_init(buf, cap, a->mech_types, a->mech_types_len, a->negotiate,
	                       sizeof(a->negotiate));
	if (n < 0) {
		talloc_free(buf);
		return fail(a, (int)n, "encoding NegTokenInit");
	}
	set_out(a, buf, (size_t)n);
	transition(a, AUTH_NEGOTIATE_SENT);
	return SMB_AUTH_CONTINUE;
}

static int check_neg_state_reject(struct smb_auth *a, const struct spnego_resp *r)
{
	if (r->neg_state == SPNEGO_REJECT)
		return fail(a, -EACCES, "server rejected the authentication");
	return 0;
}

/* NEGOTIATE_SENT: answer the CHALLENGE with AUTHENTICATE (+ mechListMIC). */
static int step_challenge(struct smb_auth *a, const uint8_t *in, size_t inlen)
{
	struct spnego_resp r;
	struct ntlmssp_client_params p = {
	    .user = a->user,
	    .password = a->password,
	    .domain = a->domain,
	    .workstation = a->workstation,
	    .server_name = a->server_name,
	};
	uint8_t *auth_msg = NULL, *buf;
	size_t auth_len = 0, cap;
	uint8_t mic[16];
	ssize_t n;
	int rc;

	if (!inlen || spnego_decode_resp(in, inlen, &r))
		return fail(a, -EBADMSG, "malformed NegTokenResp");
	rc = check_neg_state_reject(a, &r);
	if (rc)
		return rc;
	if (r.neg_state != SPNEGO_ACCEPT_INCOMPLETE && r.neg_state != SPNEGO_REQUEST_MIC &&
	    r.neg_state != SPNEGO_NEG_STATE_ABSENT)
		return fail(a, -EBADMSG, "unexpected negState with the CHALLENGE");
	if (r.supported_mech &&
	    (r.supported_mech_len != sizeof(spnego_oid_ntlmssp) ||
	     memcmp(r.supported_mech, spnego_oid_ntlmssp, sizeof(spnego_oid_ntlmssp)) != 0))
		return fail(a, -EPROTONOSUPPORT, "server chose a mechanism other than NTLMSSP");
	if (!r.response_token)
		return fail(a, -EBADMSG, "no CHALLENGE in the NegTokenResp");
	if (a->fixed) {
		p.client_challenge_fixed = a->fixed_cc;
		p.exported_session_key_fixed = a->fixed_esk;
		p.timestamp_fixed = &a->fixed_time;
	}
	rc =
	    ntlmssp_client_authenticate(a, &p, a->negotiate, sizeof(a->negotiate), r.response_token,
	                                r.response_token_len, &auth_msg, &auth_len, &a->ntlm);
	if (rc)
		return fail(a, rc, "building AUTHENTICATE");
	a->have_key = true;

	if (a->ntlm.mic_sent) {
		rc = ntlmssp_mac(a->ntlm.keys.client_sign, a->ntlm.keys.client_seal,
		                 (a->ntlm.flags & NTLMSSP_NEGOTIATE_KEY_EXCH) != 0, 0,
		                 a->mech_types, a->mech_types_len, mic);
		if (rc) {
			talloc_free(auth_msg);
			return fail(a, rc, "computing mechListMIC");
		}
	}
	cap = auth_len + 64;
	buf = talloc_size(a, cap);
	if (!buf) {
		talloc_free(auth_msg);
		return fail(a, -ENOMEM, "out of memory");
	}
	n = spnego_encode_resp(buf, cap, SPNEGO_NEG_STATE_ABSENT, NULL, 0, auth_msg, auth_len,
	                       a->ntlm.mic_sent ? mic : NULL, 16);
	talloc_free(auth_msg);
	if (n < 0) {
		talloc_free(buf);
		return fail(a, (int)n, "encoding NegTokenResp");
	}
	set_out(a, buf, (size_t)n);
	transition(a, AUTH_AUTH_SENT);
	return SMB_AUTH_CONTINUE;
}

/* AUTH_SENT: the server's last word, with its mechListMIC when it sends one. */
static int step_final(struct smb_auth *a, const uint8_t *in, size_t inlen)
{
	struct spnego_resp r;
	uint8_t mic[16];
	int rc;

	if (inlen) {
		if (spnego_decode_resp(in, inlen, &r))
			return fail(a, -EBADMSG, "malformed final NegTokenResp");
		rc = check_neg_state_reject(a, &r);
		if (rc)
			return rc;
		if (r.neg_state != SPNEGO_ACCEPT_COMPLETED &&
		    r.neg_state != SPNEGO_NEG_STATE_ABSENT)
			return fail(a, -EBADMSG, "server wants another leg after AUTHENTICATE");
		if (r.response_token && r.response_token_len)
			return fail(a, -EBADMSG, "unexpected NTLMSSP token after AUTHENTICATE");
		if (r.mech_list_mic) {
			if (!(a->ntlm.flags & NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY) ||
			    a->ntlm.anonymous)
				return fail(a, -EBADMSG, "mechListMIC we cannot check");
			rc = ntlmssp_mac(a->ntlm.keys.server_sign, a->ntlm.keys.server_seal,
			                 (a->ntlm.flags & NTLMSSP_NEGOTIATE_KEY_EXCH) != 0, 0,
			                 a->mech_types, a->mech_types_len, mic);
			if (rc)
				return fail(a, rc, "computing the server's mechListMIC");
			if (r.mech_list_mic_len != 16 || !smb_ct_equal(mic, r.mech_list_mic, 16))
				return fail(a, -EACCES, "server's mechListMIC does not verify");
		}
	}
	set_out(a, NULL, 0);
	transition(a, AUTH_DONE);
	return SMB_AUTH_DONE;
}

static int ntlmssp_step(struct smb_auth *a, const uint8_t *in, size_t inlen, const uint8_t **out,
                        size_t *outlen)
{
	int rc;

	switch (a->state) {
	case AUTH_INIT:
		rc = step_init(a, in, inlen);
		break;
	case AUTH_NEGOTIATE_SENT:
		rc = step_challenge(a, in, inlen);
		break;
	case AUTH_AUTH_SENT:
		rc = step_final(a, in, inlen);
		break;
	default:
		return -EINVAL;
	}
	if (rc >= 0 && a->out) {
		*out = a->out;
		*outlen = a->out_len;
	}
	return rc;
}

static int ntlmssp_session_key(struct smb_auth *a, uint8_t *key, size_t *keylen)
{
	if (!a->have_key || a->state == AUTH_FAILED)
		return -EAGAIN;
	if (*keylen < 16)
		return -ENOSPC;
	memcpy(key, a->ntlm.exported_session_key, 16);
	*keylen = 16;
	return 0;
}

static const struct smb_auth_mech_ops ntlmssp_ops = {
    .name = "NTLMSSP",
    .step = ntlmssp_step,
    .session_key = ntlmssp_session_key,
};

/* ---- dispatch (auth/auth.h) and the mechanisms' helpers (auth/auth_mech.h) ---- */

struct smb_auth *smb_auth_mech_new(void *talloc_parent, const struct smb_auth_mech_ops *ops,
                                   size_t state_size, void **state)
{
	struct smb_auth *a = talloc_zero(talloc_parent, struct smb_auth);

	if (!a)
		return NULL;
	a->ops = ops;
	a->mech_state = talloc_zero_size(a, state_size);
	if (!a->mech_state) {
		talloc_free(a);
		return NULL;
	}
	*state = a->mech_state;
	return a;
}

void *smb_auth_mech_state(const struct smb_auth *a)
{
	return a->mech_state;
}

void smb_auth_set_error(struct smb_auth *a, const char *text)
{
	talloc_free(a->last_error);
	a->last_error = text ? talloc_strdup(a, text) : NULL;
}

const char *smb_auth_last_error(const struct smb_auth *a)
{
	return a ? a->last_error : NULL;
}

int smb_auth_step(struct smb_auth *a, const uint8_t *in, size_t inlen, const uint8_t **out,
                  size_t *outlen)
{
	static const uint8_t empty[1];

	if (!a || !out || !outlen || (inlen && !in))
		return -EINVAL;
	*out = empty;
	*outlen = 0;
	return a->ops->step(a, in, inlen, out, outlen);
}

int smb_auth_session_key(struct smb_auth *a, uint8_t *key, size_t *keylen)
{
	if (!a || !key || !keylen)
		return -EINVAL;
	return a->ops->session_key(a, key, keylen);
}

const char *smb_auth_mech_name(const struct smb_auth *a)
{
	return a ? a->ops->name : "?";
}

void smb_auth_free(struct smb_auth *a)
{
	talloc_free(a);
}
