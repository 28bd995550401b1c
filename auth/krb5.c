/* auth/krb5.c — Kerberos for SESSION_SETUP ([MS-SMB2] 3.2.5.3, [MS-KILE]) through
 * MIT krb5 GSSAPI, behind auth/auth.h.
 *
 * GSSAPI does all the protocol: the SPNEGO mechanism (RFC 4178) wraps the
 * Kerberos AP-REQ/AP-REP (RFC 4121), so every blob is the SPNEGO token the
 * server expects.  This file picks the credentials, runs
 * gss_init_sec_context() and hands out the session key.
 *
 * States and transitions (all in krb5_step()):
 *
 *   INIT ──(server's NEGOTIATE blob: ignored, GSS builds its own mech list)──▶ SENT
 *        out: NegTokenInit { mechTypes [krb5], mechToken AP-REQ (mutual required) }
 *   SENT ──(NegTokenResp accept-completed + AP-REP, verified by GSS)──▶ DONE
 *        out: nothing; the session key is read from the context
 *   SENT ──(GSS wants another leg)──▶ SENT, out: GSS's next token
 *   any ──(GSS failure: -EACCES, -EBADMSG, -ENOKEY, -EKEYEXPIRED, ...)──▶ FAILED (sticky)
 *
 * Credentials are acquired in smb_auth_krb5_new(), so a missing or expired
 * ticket fails before any SESSION_SETUP is sent.  Without a keytab they come
 * from the caller's credential cache (KRB5CCNAME or the default).  With a
 * keytab GSS gets a TGT from it into a MEMORY ccache that lives as long as
 * the process: one per (keytab, principal), so a reconnect reuses the TGT
 * (and GSS renews it from the keytab when it runs out) instead of sending a
 * new AS-REQ each time or piling up caches, and no ccache file is written.
 * Once smb_auth_krb5_keep() (auth/krb5.h) has copied the cache or the
 * keytab's keys into memory, those copies stand in for the files.
 *
 * Nothing here logs keys or tickets, or stores any other than the session
 * key, which the destructor wipes, and the copies smb_auth_krb5_keep() made.
 */
#include "config.h"

#include "auth/auth.h"
#include "auth/krb5.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth/auth_mech.h"

static void set_errbuf(char *errbuf, size_t errlen, const char *text)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", text);
}

#if HAVE_KRB5

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>
#include <talloc.h>

#include "common/log.h"
#include "common/secret.h"

/* 1.3.6.1.5.5.2 (SPNEGO) and 1.2.840.113554.1.2.2 (Kerberos 5) */
static gss_OID_desc oid_spnego = {6, (void *)"\x2b\x06\x01\x05\x05\x02"};
static gss_OID_desc oid_krb5 = {9, (void *)"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02"};

#define KRB5_REQ_FLAGS (GSS_C_MUTUAL_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG)
#define KRB5_KEY_MAX   64

enum krb5_state {
	KRB5_INIT = 0,
	KRB5_SENT,
	KRB5_DONE,
	KRB5_FAILED,
};

static const char *krb5_state_str(enum krb5_state s)
{
	switch (s) {
	case KRB5_INIT:
		return "INIT";
	case KRB5_SENT:
		return "SENT";
	case KRB5_DONE:
		return "DONE";
	case KRB5_FAILED:
		return "FAILED";
	}
	return "?";
}

struct krb5_mech {
	enum krb5_state state;
	gss_cred_id_t cred;
	gss_ctx_id_t ctx;
	gss_name_t target;
	char *target_text; /* "cifs@host", for messages */
	/* the token handed to the caller, valid until the next step */
	uint8_t *out;
	size_t out_len;
	uint8_t key[KRB5_KEY_MAX];
	size_t key_len;
	bool have_key;
};

static int krb5_mech_destructor(struct krb5_mech *k)
{
	OM_uint32 minor;

	if (k->ctx != GSS_C_NO_CONTEXT)
		gss_delete_sec_context(&minor, &k->ctx, GSS_C_NO_BUFFER);
	if (k->cred != GSS_C_NO_CREDENTIAL)
		gss_release_cred(&minor, &k->cred);
	if (k->target != GSS_C_NO_NAME)
		gss_release_name(&minor, &k->target);
	smb_wipe(k->key, sizeof(k->key));
	return 0;
}

/* Appends the text of one GSS status code (all its lines) to buf. */
static void append_status(char *buf, size_t len, OM_uint32 code, int type)
{
	OM_uint32 minor, more = 0;

	do {
		gss_buffer_desc msg = GSS_C_EMPTY_BUFFER;
		size_t used = strlen(buf);

		if (GSS_ERROR(gss_display_status(&minor, code, type, GSS_C_NO_OID, &more, &msg)))
			break;
		if (used + 1 < len)
			snprintf(buf + used, len - used, "%s%.*s", used ? ": " : "",
			         (int)msg.length, (const char *)msg.value);
		gss_release_buffer(&minor, &msg);
	} while (more);
}

/* "<major text>: <minor text>", e.g. "No credentials were supplied, or ...:
 * No Kerberos credentials available (default cache: FILE:/tmp/krb5cc_0)". */
static void gss_text(OM_uint32 major, OM_uint32 minor, char *buf, size_t len)
{
	buf[0] = '\0';
	append_status(buf, len, major, GSS_C_GSS_CODE);
	if (minor)
		append_status(buf, len, minor, GSS_C_MECH_CODE);
}

static int gss_errno(OM_uint32 major)
{
	switch (GSS_ROUTINE_ERROR(major)) {
	case GSS_S_NO_CRED:
		return -ENOKEY;
	case GSS_S_CREDENTIALS_EXPIRED:
		return -EKEYEXPIRED;
	case GSS_S_DEFECTIVE_TOKEN:
	case GSS_S_DEFECTIVE_CREDENTIAL:
		return -EBADMSG;
	case GSS_S_BAD_MECH:
		return -EPROTONOSUPPORT;
	default:
		return -EACCES;
	}
}

/* The client principal to ask for: "user@REALM" as given, else user@DOMAIN
 * (upper-cased, as realms are), else "user" in the default realm. */
static char *client_principal(void *mem, const struct smb_auth_krb5_opts *o)
{
	char *p;

	if (strchr(o->user, '@') || !o->domain || !o->domain[0])
		return talloc_strdup(mem, o->user);
	p = talloc_asprintf(mem, "%s@%s", o->user, o->domain);
	if (p)
		for (char *c = strchr(p, '@'); *c; c++)
			*c = (char)toupper((unsigned char)*c);
	return p;
}

/* "MEMORY:smbrdma-<pid>-<FNV-1a of keytab and principal>": see the file header. */
static char *keytab_ccache_name(void *mem, const char *keytab, const char *principal)
{
	uint64_t h = 14695981039346656037ull;
	const char *parts[2] = {keytab, principal ? principal : ""};

	for (int i = 0; i < 2; i++)
		for (const char *c = parts[i];; c++) {
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
			if (!*c)
				break;
		}
	return talloc_asprintf(mem, "MEMORY:smbrdma-%ld-%016llx", (long)getpid(),
	                       (unsigned long long)h);
}

/* ---- credentials kept in memory (auth/krb5.h) ----------------------------------
 *
 * Each kind is published once, whole, through an atomic pointer and never
 * changes or goes afterwards, so readers take no lock.  The krb5 context and
 * the handles stay open: MIT frees a MEMORY keytab with its last handle.
 */
struct krb5_kept {
	krb5_context ctx;
	char *principal; /* the principal asked for as client_principal() spells it;
	                    NULL: the default one */
	char *keytab;    /* the keytab= it stands for; NULL for a cache */
	char *name;      /* "MEMORY:..." of the copy */
	krb5_keytab kt;
	krb5_ccache cc;
};

static struct krb5_kept *kept_keytab, *kept_cache; /* atomic, set once */

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The copy standing in for keytab (NULL: for the caller's cache) when asked
 * for principal, or NULL to use the files. */
static const struct krb5_kept *kept_for(const char *keytab, const char *principal)
{
	const struct krb5_kept *kp =
	    __atomic_load_n(keytab ? &kept_keytab : &kept_cache, __ATOMIC_ACQUIRE);

	if (kp && same_str(kp->principal, principal) && same_str(kp->keytab, keytab))
		return kp;
	return NULL;
}

static void kept_free(struct krb5_kept *kp)
{
	if (!kp)
		return;
	if (kp->ctx) {
		if (kp->kt)
			krb5_kt_close(kp->ctx, kp->kt);
		if (kp->cc)
			krb5_cc_destroy(kp->ctx, kp->cc);
		krb5_free_context(kp->ctx);
	}
	free(kp->principal);
	free(kp->keytab);
	free(kp->name);
	free(kp);
}

/* "what: <krb5's text for ret>" into errbuf; returns -ENOKEY for the codes
 * that mean "nothing there", else -EACCES. */
static int kept_fail(krb5_context ctx, krb5_error_code ret, char *errbuf, size_t errlen,
                     const char *what)
{
	const char *text = krb5_get_error_message(ctx, ret);

	snprintf(errbuf, errlen, "sec=krb5: %s: %s", what, text);
	krb5_free_error_message(ctx, text);
	switch (ret) {
	case KRB5_CC_NOTFOUND:
	case KRB5_FCC_NOFILE:
	case KRB5_KT_NOTFOUND:
	case KRB5_KT_END:
	case ENOENT:
		return -ENOKEY;
	case ENOMEM:
		return -ENOMEM;
	default:
		return -EACCES;
	}
}

/* The keys of kp->principal (or of the keytab's first entry) from keytab
 * into the MEMORY keytab kp->name. */
static int keep_keytab(struct krb5_kept *kp, const char *keytab, char *errbuf, size_t errlen)
{
	krb5_keytab src = NULL;
	krb5_kt_cursor cur;
	krb5_keytab_entry e;
	krb5_principal want = NULL;
	krb5_error_code ret;
	int copied = 0, rc = 0;
	char what[PATH_MAX + 64];

	snprintf(what, sizeof(what), "keeping the keys of keytab %s", keytab);
	ret = krb5_kt_resolve(kp->ctx, keytab, &src);
	if (!ret && kp->principal)
		ret = krb5_parse_name(kp->ctx, kp->principal, &want);
	if (!ret)
		ret = krb5_kt_resolve(kp->ctx, kp->name, &kp->kt);
	if (!ret)
		ret = krb5_kt_start_seq_get(kp->ctx, src, &cur);
	if (ret) {
		rc = kept_fail(kp->ctx, ret, errbuf, errlen, what);
		goto out;
	}
	while (rc == 0 && (ret = krb5_kt_next_entry(kp->ctx, src, &e, &cur)) == 0) {
		if (!want)
			ret = krb5_copy_principal(kp->ctx, e.principal, &want);
		if (!ret && krb5_principal_compare(kp->ctx, e.principal, want)) {
			ret = krb5_kt_add_entry(kp->ctx, kp->kt, &e);
			copied += ret == 0;
		}
		if (ret)
			rc = kept_fail(kp->ctx, ret, errbuf, errlen, what);
		krb5_free_keytab_entry_contents(kp->ctx, &e); /* wipes the key */
	}
	krb5_kt_end_seq_get(kp->ctx, src, &cur);
	if (rc == 0 && !copied) {
		snprintf(errbuf, errlen, "sec=krb5: keytab %s holds no key for %s", keytab,
		         kp->principal ? kp->principal : "any principal");
		rc = -ENOKEY;
	}
out:
	if (want)
		krb5_free_principal(kp->ctx, want);
	if (src)
		krb5_kt_close(kp->ctx, src);
	return rc;
}

/* The cache GSS would pick for kp->principal (the default one when NULL),
 * copied whole into the MEMORY cache kp->name. */
static int keep_cache(struct krb5_kept *kp, char *errbuf, size_t errlen)
{
	krb5_ccache src = NULL;
	krb5_principal want = NULL, owner = NULL;
	krb5_error_code ret;
	int rc = 0;

	if (kp->principal) {
		ret = krb5_parse_name(kp->ctx, kp->principal, &want);
		if (!ret)
			ret = krb5_cc_cache_match(kp->ctx, want, &src);
	} else {
		ret = krb5_cc_default(kp->ctx, &src);
	}
	if (!ret)
		ret = krb5_cc_get_principal(kp->ctx, src, &owner);
	if (!ret)
		ret = krb5_cc_resolve(kp->ctx, kp->name, &kp->cc);
	if (!ret)
		ret = krb5_cc_initialize(kp->ctx, kp->cc, owner);
	if (!ret)
		ret = krb5_cc_copy_creds(kp->ctx, src, kp->cc);
	if (ret)
		rc = kept_fail(kp->ctx, ret, errbuf, errlen, "keeping the credential cache");
	if (owner)
		krb5_free_principal(kp->ctx, owner);
	if (want)
		krb5_free_principal(kp->ctx, want);
	if (src)
		krb5_cc_close(kp->ctx, src);
	return rc;
}

int smb_auth_krb5_keep(const struct smb_auth_krb5_opts *o, char *errbuf, size_t errlen)
{
	static unsigned long serial; /* atomic: one name per copy */
	const char *keytab = o && o->keytab && o->keytab[0] ? o->keytab : NULL;
	char dummy[1], *principal = NULL;
	struct krb5_kept *kp, *none = NULL;
	krb5_error_code ret;
	int rc;

	if (!errbuf || !errlen) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	errbuf[0] = '\0';
	if (!o)
		return -EINVAL;
	kp = calloc(1, sizeof(*kp));
	if (!kp)
		return -ENOMEM;
	if (o->user && o->user[0]) {
		principal = client_principal(NULL, o);
		kp->principal = principal ? strdup(principal) : NULL;
		talloc_free(principal);
		if (!kp->principal) {
			kept_free(kp);
			return -ENOMEM;
		}
	}
	if (keytab && !(kp->keytab = strdup(keytab))) {
		kept_free(kp);
		return -ENOMEM;
	}
	if (asprintf(&kp->name, "MEMORY:smbrdma-kept-%s-%ld-%lu", keytab ? "kt" : "cc",
	             (long)getpid(), __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED)) < 0) {
		kp->name = NULL;
		kept_free(kp);
		return -ENOMEM;
	}
	ret = krb5_init_context(&kp->ctx);
	if (ret) {
		kp->ctx = NULL;
		snprintf(errbuf, errlen, "sec=krb5: cannot start Kerberos: %s", strerror(ret));
		kept_free(kp);
		return -EACCES;
	}
	rc = keytab ? keep_keytab(kp, keytab, errbuf, errlen) : keep_cache(kp, errbuf, errlen);
	if (rc == 0 && !__atomic_compare_exchange_n(keytab ? &kept_keytab : &kept_cache, &none, kp,
	                                            false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		snprintf(errbuf, errlen, "sec=krb5: the %s is kept already",
		         keytab ? "keytab" : "credential cache");
		rc = -EALREADY;
	}
	if (rc) {
		kept_free(kp);
		return rc;
	}
	smb_debug("auth: Kerberos %s of %s kept in memory (%s)",
	          keytab ? "keys" : "credential cache",
	          kp->principal ? kp->principal : "the default principal", kp->name);
	return 0;
}

/* Initiator credentials for `mechs`: from the keytab into the MEMORY cache
 * `ccname`, or (keytab NULL) from the cache `ccname` (NULL: the caller's);
 * an expired cache yields GSS_S_CREDENTIALS_EXPIRED. */
static OM_uint32 acquire(gss_name_t client, gss_OID_set mechs, const char *keytab,
                         const char *ccname, gss_cred_id_t *cred, OM_uint32 *minor)
{
	OM_uint32 major, lifetime = 0;

	if (keytab && keytab[0]) {
		gss_key_value_element_desc el[2] = {
		    {"client_keytab", keytab},
		    {"ccache", ccname},
		};
		gss_key_value_set_desc store = {2, el};
		return gss_acquire_cred_from(minor, client, GSS_C_INDEFINITE, mechs, GSS_C_INITIATE,
		                             &store, cred, NULL, NULL);
	}
	if (ccname) {
		gss_key_value_element_desc el = {"ccache", ccname};
		gss_key_value_set_desc store = {1, &el};
		major = gss_acquire_cred_from(minor, client, GSS_C_INDEFINITE, mechs,
		                              GSS_C_INITIATE, &store, cred, NULL, &lifetime);
	} else {
		major = gss_acquire_cred(minor, client, GSS_C_INDEFINITE, mechs, GSS_C_INITIATE,
		                         cred, NULL, &lifetime);
	}
	/* A cache whose tickets have all run out. */
	if (!GSS_ERROR(major) && lifetime == 0) {
		OM_uint32 rminor;

		gss_release_cred(&rminor, cred);
		*minor = 0;
		major = GSS_S_CREDENTIALS_EXPIRED;
	}
	return major;
}

/* Imports the target name and acquires SPNEGO credentials limited to
 * Kerberos.  Fills errbuf and returns -errno on failure. */
static int krb5_mech_setup(struct krb5_mech *k, const struct smb_auth_krb5_opts *o, char *errbuf,
                           size_t errlen)
{
	gss_OID_set_desc spnego_set = {1, &oid_spnego};
	gss_OID_set_desc krb5_set = {1, &oid_krb5};
	gss_name_t client = GSS_C_NO_NAME;
	char *principal = NULL, *ccname = NULL;
	OM_uint32 major, minor;
	char text[512];
	int rc = 0;

	k->target_text = talloc_asprintf(k, "cifs@%s", o->server_name);
	if (!k->target_text)
		return -ENOMEM;
	gss_buffer_desc tbuf = {strlen(k->target_text), k->target_text};
	major = gss_import_name(&minor, &tbuf, GSS_C_NT_HOSTBASED_SERVICE, &k->target);
	if (GSS_ERROR(major)) {
		gss_text(major, minor, text, sizeof(text));
		snprintf(errbuf, errlen, "sec=krb5: bad server name %s: %s", k->target_text, text);
		return -EINVAL;
	}

	if (o->user && o->user[0]) {
		principal = client_principal(k, o);
		if (!principal)
			return -ENOMEM;
		gss_buffer_desc cbuf = {strlen(principal), principal};
		major = gss_import_name(&minor, &cbuf, GSS_KRB5_NT_PRINCIPAL_NAME, &client);
		if (GSS_ERROR(major)) {
			gss_text(major, minor, text, sizeof(text));
			snprintf(errbuf, errlen, "sec=krb5: bad user name '%s': %s", principal,
			         text);
			return -EINVAL;
		}
	}

	/* The files, or the copies smb_auth_krb5_keep() made of them. */
	const char *keytab = o->keytab && o->keytab[0] ? o->keytab : NULL;
	const struct krb5_kept *kept = kept_for(keytab, principal);
	const char *use_keytab = keytab, *use_cc = NULL;
	if (keytab) {
		ccname = keytab_ccache_name(k, keytab, principal);
		if (!ccname) {
			rc = -ENOMEM;
			goto out;
		}
		use_cc = ccname;
		if (kept)
			use_keytab = kept->name;
	} else if (kept) {
		use_cc = kept->name;
	}
	major = acquire(client, &spnego_set, use_keytab, use_cc, &k->cred, &minor);
	if (GSS_ERROR(major)) {
		/* SPNEGO's own text ("SPNEGO cannot find mechanisms to negotiate")
		 * hides why: ask Kerberos alone for the cause. */
		gss_cred_id_t probe = GSS_C_NO_CREDENTIAL;
		OM_uint32 kmajor, kminor, rminor;

		kmajor = acquire(client, &krb5_set, use_keytab, use_cc, &probe, &kminor);
		if (GSS_ERROR(kmajor)) {
			major = kmajor;
			minor = kminor;
		}
		if (probe != GSS_C_NO_CREDENTIAL)
			gss_release_cred(&rminor, &probe);
	}
	if (GSS_ERROR(major)) {
		gss_text(major, minor, text, sizeof(text));
		rc = gss_errno(major);
		if (keytab)
			snprintf(
			    errbuf, errlen,
			    "sec=krb5: no Kerberos credentials for %s from keytab %s (klist -k "
			    "lists what it holds): %s",
			    principal ? principal : "its first principal", keytab, text);
		else if (rc == -EKEYEXPIRED && kept)
			snprintf(
			    errbuf, errlen,
			    "sec=krb5: the Kerberos ticket%s%s kept since the mount has expired "
			    "(a mount does not see a later kinit: mount again, or mount with "
			    "keytab=): %s",
			    principal ? " of " : "", principal ? principal : "", text);
		else if (rc == -EKEYEXPIRED)
			snprintf(errbuf, errlen,
			         "sec=krb5: the Kerberos ticket%s%s has expired (run kinit again, "
			         "or give keytab=): %s",
			         principal ? " of " : "", principal ? principal : "", text);
		else
			snprintf(errbuf, errlen,
			         "sec=krb5: no Kerberos credentials for %s (run kinit, or give "
			         "keytab=): %s",
			         principal ? principal : "the mount", text);
		if (rc == -EACCES || rc == -EBADMSG)
			rc = -ENOKEY;
		goto out;
	}
	/* Negotiate Kerberos only, whatever other GSS mechanisms are installed. */
	major = gss_set_neg_mechs(&minor, k->cred, &krb5_set);
	if (GSS_ERROR(major)) {
		gss_text(major, minor, text, sizeof(text));
		snprintf(errbuf, errlen, "sec=krb5: cannot limit SPNEGO to Kerberos: %s", text);
		rc = -EACCES;
		goto out;
	}
	smb_debug("auth: Kerberos credentials for %s (%s%s), target %s",
	          principal ? principal : "the default principal",
	          keytab ? "keytab" : "credential cache", kept ? ", the copy kept in memory" : "",
	          k->target_text);
out:
	if (client != GSS_C_NO_NAME)
		gss_release_name(&minor, &client);
	talloc_free(principal);
	talloc_free(ccname);
	return rc;
}

static int krb5_fail(struct smb_auth *a, struct krb5_mech *k, int err, const char *what,
                     OM_uint32 major, OM_uint32 minor)
{
	char text[512], msg[640];

	text[0] = '\0';
	if (major)
		gss_text(major, minor, text, sizeof(text));
	snprintf(msg, sizeof(msg), "Kerberos %s for %s%s%s", what, k->target_text,
	         text[0] ? ": " : "", text);
	smb_info("auth: Kerberos %s -> FAILED: %s (%d)", krb5_state_str(k->state), msg, err);
	smb_auth_set_error(a, msg);
	k->state = KRB5_FAILED;
	talloc_free(k->out);
	k->out = NULL;
	k->out_len = 0;
	return err;
}

static void krb5_transition(struct krb5_mech *k, enum krb5_state to)
{
	smb_debug("auth: Kerberos %s -> %s", krb5_state_str(k->state), krb5_state_str(to));
	k->state = to;
}

/* Reads the whole session key from the established context. */
static int krb5_read_key(struct smb_auth *a, struct krb5_mech *k)
{
	gss_buffer_set_t set = GSS_C_NO_BUFFER_SET;
	OM_uint32 major, minor;
	int rc = 0;

	major = gss_inquire_sec_context_by_oid(&minor, k->ctx, GSS_C_INQ_SSPI_SESSION_KEY, &set);
	if (GSS_ERROR(major))
		return krb5_fail(a, k, -EACCES, "session key unavailable", major, minor);
	if (!set || set->count < 1 || set->elements[0].length == 0 ||
	    set->elements[0].length > sizeof(k->key)) {
		rc = krb5_fail(a, k, -EPROTO, "session key of unexpected size", 0, 0);
	} else {
		memcpy(k->key, set->elements[0].value, set->elements[0].length);
		k->key_len = set->elements[0].length;
		k->have_key = true;
	}
	if (set) {
		for (size_t i = 0; i < set->count; i++)
			smb_wipe(set->elements[i].value, set->elements[i].length);
		gss_release_buffer_set(&minor, &set);
	}
	return rc;
}

static int krb5_step(struct smb_auth *a, const uint8_t *in, size_t inlen, const uint8_t **out,
                     size_t *outlen)
{
	struct krb5_mech *k = smb_auth_mech_state(a);
	gss_buffer_desc inbuf = {inlen, (void *)in};
	gss_buffer_desc outbuf = GSS_C_EMPTY_BUFFER;
	OM_uint32 major, minor, rminor, ret_flags = 0;
	size_t produced;
	int rc;

	if (k->state != KRB5_INIT && k->state != KRB5_SENT)
		return -EINVAL;
	if (k->state == KRB5_SENT && !inlen)
		return krb5_fail(a, k, -EBADMSG, "got an empty token from the server", 0, 0);
	/* The NEGOTIATE response's hint (RFC 4178 4.2.1: "not to be relied on")
	 * plays no part: GSS sends its own mechanism list. */
	major = gss_init_sec_context(&minor, k->cred, &k->ctx, k->target, &oid_spnego,
	                             KRB5_REQ_FLAGS, GSS_C_INDEFINITE, GSS_C_NO_CHANNEL_BINDINGS,
	                             k->state == KRB5_INIT ? GSS_C_NO_BUFFER : &inbuf, NULL,
	                             &outbuf, &ret_flags, NULL);
	talloc_free(k->out);
	k->out = NULL;
	k->out_len = 0;
	produced = outbuf.length;
	if (produced) {
		k->out = talloc_memdup(k, outbuf.value, produced);
		k->out_len = k->out ? produced : 0;
	}
	gss_release_buffer(&rminor, &outbuf);
	if (GSS_ERROR(major))
		return krb5_fail(a, k, gss_errno(major),
		                 k->state == KRB5_INIT ? "cannot start the authentication"
		                                       : "authentication failed",
		                 major, minor);
	if (produced && !k->out)
		return krb5_fail(a, k, -ENOMEM, "out of memory", 0, 0);

	if (major & GSS_S_CONTINUE_NEEDED) {
		if (!k->out_len)
			return krb5_fail(a, k, -EPROTO, "GSS wants another leg but sent nothing", 0,
			                 0);
		krb5_transition(k, KRB5_SENT);
		*out = k->out;
		*outlen = k->out_len;
		return SMB_AUTH_CONTINUE;
	}
	/* GSS_S_COMPLETE: the server must have proven itself (AP-REP). */
	if (!(ret_flags & GSS_C_MUTUAL_FLAG))
		return krb5_fail(a, k, -EACCES, "finished without mutual authentication", 0, 0);
	rc = krb5_read_key(a, k);
	if (rc)
		return rc;
	krb5_transition(k, KRB5_DONE);
	smb_info("auth: Kerberos authentication to %s complete (mutual, %zu-byte session key)",
	         k->target_text, k->key_len);
	if (k->out_len) {
		*out = k->out;
		*outlen = k->out_len;
	}
	return SMB_AUTH_DONE;
}

static int krb5_session_key(struct smb_auth *a, uint8_t *key, size_t *keylen)
{
	struct krb5_mech *k = smb_auth_mech_state(a);

	if (!k->have_key || k->state != KRB5_DONE)
		return -EAGAIN;
	if (*keylen < k->key_len)
		return -ENOSPC;
	memcpy(key, k->key, k->key_len);
	*keylen = k->key_len;
	return 0;
}

static const struct smb_auth_mech_ops krb5_ops = {
    .name = "Kerberos",
    .step = krb5_step,
    .session_key = krb5_session_key,
};

int smb_auth_krb5_new(void *talloc_parent, const struct smb_auth_krb5_opts *o,
                      struct smb_auth **out, char *errbuf, size_t errlen)
{
	char dummy[1];
	struct krb5_mech *k;
	struct smb_auth *a;
	int rc;

	if (!errbuf || !errlen) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	errbuf[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!o || !o->server_name || !o->server_name[0]) {
		set_errbuf(errbuf, errlen, "sec=krb5: no server name to build the SPN from");
		return -EINVAL;
	}
	a = smb_auth_mech_new(talloc_parent, &krb5_ops, sizeof(*k), (void **)&k);
	if (!a) {
		set_errbuf(errbuf, errlen, "sec=krb5: out of memory");
		return -ENOMEM;
	}
	k->cred = GSS_C_NO_CREDENTIAL;
	k->ctx = GSS_C_NO_CONTEXT;
	k->target = GSS_C_NO_NAME;
	talloc_set_destructor(k, krb5_mech_destructor);
	rc = krb5_mech_setup(k, o, errbuf, errlen);
	if (rc) {
		if (rc == -ENOMEM && !errbuf[0])
			set_errbuf(errbuf, errlen, "sec=krb5: out of memory");
		smb_info("auth: %s", errbuf);
		talloc_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

#else /* !HAVE_KRB5 */

int smb_auth_krb5_keep(const struct smb_auth_krb5_opts *o, char *errbuf, size_t errlen)
{
	(void)o;
	set_errbuf(errbuf, errlen, "sec=krb5: this build has no Kerberos support");
	return -EOPNOTSUPP;
}

int smb_auth_krb5_new(void *talloc_parent, const struct smb_auth_krb5_opts *o,
                      struct smb_auth **out, char *errbuf, size_t errlen)
{
	(void)talloc_parent;
	(void)o;
	if (out)
		*out = NULL;
	set_errbuf(errbuf, errlen,
	           "sec=krb5: this build has no Kerberos support (rebuild with libkrb5-dev)");
	return -EOPNOTSUPP;
}

#endif
