/* tests/unit/auth/test_krb5.c — the Kerberos mechanism (auth/krb5.c) without a KDC.
 *
 * Each test builds what a KDC would have handed out, in a private temp dir:
 * a credential cache with a TGT and a service ticket for
 * cifs/srv.smbrdma.unit, and the service's keytab.  The handshake test then
 * plays the SMB server with gss_accept_sec_context() (SPNEGO, as Samba and
 * Windows do) and checks that both ends hold the same 32-byte session key.
 * krb5.conf names a KDC on 127.0.0.1:9 that nothing here ever needs: every
 * ticket is already in the cache.
 *
 * Tickets are sealed with krb5_encrypt_tkt_part() and encode_krb5_ticket():
 * MIT exports both (they serve its KDC) but declares them in no public
 * header, hence the prototypes below.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <krb5.h>
#include <talloc.h>

#include "auth/auth.h"
#include "auth/krb5.h"
#include "tests/unit/check.h"

krb5_error_code krb5_encrypt_tkt_part(krb5_context, const krb5_keyblock *, krb5_ticket *);
krb5_error_code encode_krb5_ticket(const krb5_ticket *, krb5_data **);

#define REALM  "SMBRDMA.UNIT"
#define SERVER "srv.smbrdma.unit"
#define USER   "alice"

static char dir[] = "/tmp/smbrdma-test-krb5-XXXXXX";
static char path_conf[256], path_cc[256], path_srv_kt[256], path_user_kt[256];
static krb5_context kctx;
static krb5_keyblock service_key;

static void die(const char *what, krb5_error_code ret)
{
	fprintf(stderr, "setup: %s: %s\n", what, ret ? krb5_get_error_message(kctx, ret) : "");
	exit(1);
}

static krb5_principal principal(const char *name)
{
	krb5_principal p;
	krb5_error_code ret = krb5_parse_name(kctx, name, &p);

	if (ret)
		die("krb5_parse_name", ret);
	return p;
}

/* A ticket from `client` to `server` valid from start to end, sealed with
 * server_key, stored in the cache `cc`. */
static void store_ticket(krb5_ccache cc, const char *client, const char *server,
                         const krb5_keyblock *server_key, krb5_timestamp start, krb5_timestamp end)
{
	krb5_keyblock *session;
	krb5_transited transited = {.tr_type = KRB5_DOMAIN_X500_COMPRESS};
	krb5_enc_tkt_part part = {0};
	krb5_ticket tkt = {0};
	krb5_creds cr = {0};
	krb5_data *der;
	krb5_error_code ret;

	ret = krb5_init_keyblock(kctx, ENCTYPE_AES256_CTS_HMAC_SHA1_96, 0, &session);
	if (!ret)
		ret = krb5_c_make_random_key(kctx, ENCTYPE_AES256_CTS_HMAC_SHA1_96, session);
	if (ret)
		die("session key", ret);
	part.flags = TKT_FLG_INITIAL | TKT_FLG_PRE_AUTH;
	part.session = session;
	part.client = principal(client);
	part.transited = transited;
	part.times.authtime = part.times.starttime = start;
	part.times.endtime = end;
	tkt.server = principal(server);
	tkt.enc_part2 = &part;
	ret = krb5_encrypt_tkt_part(kctx, server_key, &tkt);
	if (ret)
		die("krb5_encrypt_tkt_part", ret);
	tkt.enc_part.kvno = 1;
	ret = encode_krb5_ticket(&tkt, &der);
	if (ret)
		die("encode_krb5_ticket", ret);

	cr.client = part.client;
	cr.server = tkt.server;
	cr.keyblock = *session;
	cr.times = part.times;
	cr.ticket_flags = part.flags;
	cr.ticket = *der;
	ret = krb5_cc_store_cred(kctx, cc, &cr);
	if (ret)
		die("krb5_cc_store_cred", ret);
	krb5_free_data(kctx, der);
	free(tkt.enc_part.ciphertext.data);
	krb5_free_principal(kctx, part.client);
	krb5_free_principal(kctx, tkt.server);
	krb5_free_keyblock(kctx, session);
}

/* A fresh cache for USER@REALM: with a service ticket for cifs/SERVER when
 * `service`, and a TGT that ends `tgt_end` seconds from now. */
static void make_ccache(long tgt_end, bool service)
{
	krb5_timestamp now = (krb5_timestamp)time(NULL);
	krb5_keyblock tgt_key;
	krb5_principal me = principal(USER "@" REALM);
	krb5_ccache cc;
	krb5_error_code ret;

	unlink(path_cc);
	ret = krb5_cc_resolve(kctx, path_cc, &cc);
	if (!ret)
		ret = krb5_cc_initialize(kctx, cc, me);
	if (!ret)
		ret = krb5_c_make_random_key(kctx, ENCTYPE_AES256_CTS_HMAC_SHA1_96, &tgt_key);
	if (ret)
		die("ccache", ret);
	store_ticket(cc, USER "@" REALM, "krbtgt/" REALM "@" REALM, &tgt_key,
	             now - 7200 + (tgt_end < 0 ? (krb5_timestamp)tgt_end : 0),
	             now + (krb5_timestamp)tgt_end);
	if (service)
		store_ticket(cc, USER "@" REALM, "cifs/" SERVER "@" REALM, &service_key, now - 60,
		             now + 3600);
	krb5_free_keyblock_contents(kctx, &tgt_key);
	krb5_free_principal(kctx, me);
	krb5_cc_close(kctx, cc);
}

static void add_key(const char *kt_name, const char *name, const krb5_keyblock *key)
{
	krb5_keytab kt;
	krb5_keytab_entry e = {0};
	krb5_error_code ret = krb5_kt_resolve(kctx, kt_name, &kt);

	e.principal = principal(name);
	e.vno = 1;
	e.key = *key;
	if (!ret)
		ret = krb5_kt_add_entry(kctx, kt, &e);
	if (ret)
		die("keytab", ret);
	krb5_free_principal(kctx, e.principal);
	krb5_kt_close(kctx, kt);
}

static void setup(void)
{
	char env[300];
	FILE *f;
	krb5_error_code ret;

	if (!mkdtemp(dir))
		die("mkdtemp", 0);
	snprintf(path_conf, sizeof(path_conf), "%s/krb5.conf", dir);
	snprintf(path_cc, sizeof(path_cc), "FILE:%s/ccache", dir);
	snprintf(path_srv_kt, sizeof(path_srv_kt), "FILE:%s/service.keytab", dir);
	snprintf(path_user_kt, sizeof(path_user_kt), "%s/user.keytab", dir);
	f = fopen(path_conf, "w");
	if (!f)
		die("krb5.conf", 0);
	fprintf(f,
	        "[libdefaults]\n default_realm = %s\n dns_lookup_kdc = false\n"
	        " dns_lookup_realm = false\n rdns = false\n dns_canonicalize_hostname = false\n"
	        " udp_preference_limit = 1\n"
	        "[realms]\n %s = {\n  kdc = 127.0.0.1:9\n }\n"
	        "[domain_realm]\n .smbrdma.unit = %s\n",
	        REALM, REALM, REALM);
	fclose(f);
	setenv("KRB5_CONFIG", path_conf, 1);
	setenv("KRB5CCNAME", path_cc, 1);
	setenv("KRB5_KTNAME", path_srv_kt, 1); /* the acceptor's keys */
	snprintf(env, sizeof(env), "FILE:%s/no-default-client.keytab", dir);
	setenv("KRB5_CLIENT_KTNAME", env, 1);
	setenv("KRB5RCACHETYPE", "none", 1);
	ret = krb5_init_context(&kctx);
	if (!ret)
		ret = krb5_c_make_random_key(kctx, ENCTYPE_AES256_CTS_HMAC_SHA1_96, &service_key);
	if (ret)
		die("krb5 context", ret);
	add_key(path_srv_kt, "cifs/" SERVER "@" REALM, &service_key);
}

static void teardown(void)
{
	char cmd[300];

	krb5_free_keyblock_contents(kctx, &service_key);
	krb5_free_context(kctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static const struct smb_auth_krb5_opts opts = {.server_name = SERVER};

static void test_no_ccache(void)
{
	struct smb_auth *a = (struct smb_auth *)1;
	char err[512];
	int rc;

	unlink(path_cc + 5);
	rc = smb_auth_krb5_new(NULL, &opts, &a, err, sizeof(err));
	CHECK_EQ(rc, -ENOKEY);
	CHECK(a == NULL);
	CHECK(strstr(err, "run kinit") != NULL);
	/* the cause, from Kerberos itself rather than SPNEGO */
	CHECK(strstr(err, "No Kerberos credentials available") != NULL);
	fprintf(stderr, "  message: %s\n", err);
}

static void test_expired(void)
{
	struct smb_auth *a;
	char err[512];

	make_ccache(-600, false);
	CHECK_EQ(smb_auth_krb5_new(NULL, &opts, &a, err, sizeof(err)), -EKEYEXPIRED);
	CHECK(strstr(err, "expired") != NULL);
	fprintf(stderr, "  message: %s\n", err);
}

static void test_wrong_principal(void)
{
	struct smb_auth_krb5_opts o = {
	    .server_name = SERVER, .user = "bob", .domain = "smbrdma.unit"};
	struct smb_auth *a;
	char err[512];

	make_ccache(3600, false);
	CHECK_EQ(smb_auth_krb5_new(NULL, &o, &a, err, sizeof(err)), -ENOKEY);
	/* the domain became the realm, upper-cased */
	CHECK(strstr(err, "bob@SMBRDMA.UNIT") != NULL);
	fprintf(stderr, "  message: %s\n", err);
}

static void test_keytab_without_the_user(void)
{
	struct smb_auth_krb5_opts o = {
	    .server_name = SERVER, .user = "carol@" REALM, .keytab = path_user_kt};
	krb5_keyblock k;
	struct smb_auth *a;
	char err[512];

	CHECK_EQ(krb5_c_make_random_key(kctx, ENCTYPE_AES256_CTS_HMAC_SHA1_96, &k), 0);
	add_key(path_user_kt, USER "@" REALM, &k);
	krb5_free_keyblock_contents(kctx, &k);
	CHECK_EQ(smb_auth_krb5_new(NULL, &o, &a, err, sizeof(err)), -ENOKEY);
	CHECK(strstr(err, "keytab") != NULL && strstr(err, "carol@" REALM) != NULL);
	fprintf(stderr, "  message: %s\n", err);
}

/* The server side of one leg: *out gets the acceptor's token. */
static OM_uint32 accept_leg(gss_ctx_id_t *ctx, const uint8_t *in, size_t inlen,
                            gss_buffer_desc *out)
{
	gss_buffer_desc inbuf = {inlen, (void *)in};
	OM_uint32 minor;

	return gss_accept_sec_context(&minor, ctx, GSS_C_NO_CREDENTIAL, &inbuf,
	                              GSS_C_NO_CHANNEL_BINDINGS, NULL, NULL, out, NULL, NULL, NULL);
}

static void test_handshake(void)
{
	void *mem = talloc_new(NULL);
	gss_ctx_id_t sctx = GSS_C_NO_CONTEXT;
	gss_buffer_desc srv_tok = GSS_C_EMPTY_BUFFER;
	gss_buffer_set_t srv_key = GSS_C_NO_BUFFER_SET;
	uint8_t key[64];
	size_t keylen = sizeof(key), small = 16;
	const uint8_t *out;
	size_t outlen;
	struct smb_auth *a;
	OM_uint32 major, minor;
	char err[512];

	make_ccache(3600, true);
	CHECK_EQ(smb_auth_krb5_new(mem, &opts, &a, err, sizeof(err)), 0);
	if (!a) {
		fprintf(stderr, "  %s\n", err);
		talloc_free(mem);
		return;
	}
	CHECK(strcmp(smb_auth_mech_name(a), "Kerberos") == 0);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), -EAGAIN);

	/* leg 1: whatever the NEGOTIATE response held is ignored */
	CHECK_EQ(smb_auth_step(a, (const uint8_t *)"\x60\x00", 2, &out, &outlen),
	         SMB_AUTH_CONTINUE);
	/* GSS-API InitialContextToken ([APPLICATION 0]) for SPNEGO 1.3.6.1.5.5.2 */
	CHECK(outlen > 100 && out[0] == 0x60);
	CHECK(outlen > 20 && memmem(out, 20, "\x06\x06\x2b\x06\x01\x05\x05\x02", 8) != NULL);
	major = accept_leg(&sctx, out, outlen, &srv_tok);
	CHECK_EQ(major, GSS_S_COMPLETE);

	/* leg 2: accept-completed + AP-REP; mutual authentication finishes */
	CHECK(srv_tok.length > 0);
	CHECK_EQ(smb_auth_step(a, srv_tok.value, srv_tok.length, &out, &outlen), SMB_AUTH_DONE);
	CHECK_EQ(outlen, 0);
	gss_release_buffer(&minor, &srv_tok);

	CHECK_EQ(smb_auth_session_key(a, key, &small), -ENOSPC);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), 0);
	CHECK_EQ(keylen, 32); /* aes256-cts: the whole key, not 16 bytes of it */
	major = gss_inquire_sec_context_by_oid(&minor, sctx, GSS_C_INQ_SSPI_SESSION_KEY, &srv_key);
	CHECK_EQ(major, GSS_S_COMPLETE);
	if (major == GSS_S_COMPLETE && srv_key->count >= 1) {
		CHECK_EQ(srv_key->elements[0].length, keylen);
		CHECK_MEM(srv_key->elements[0].value, key, keylen);
		gss_release_buffer_set(&minor, &srv_key);
	}
	/* a finished context takes no more tokens */
	CHECK_EQ(smb_auth_step(a, (const uint8_t *)"x", 1, &out, &outlen), -EINVAL);
	gss_delete_sec_context(&minor, &sctx, GSS_C_NO_BUFFER);
	smb_auth_free(a);
	talloc_free(mem);
}

static void test_server_garbage_is_sticky(void)
{
	static const uint8_t junk[] = {0xa1, 0x03, 0x30, 0x01, 0x00};
	const uint8_t *out;
	size_t outlen;
	struct smb_auth *a;
	uint8_t key[64];
	size_t keylen = sizeof(key);
	char err[512];
	int rc;

	make_ccache(3600, true);
	CHECK_EQ(smb_auth_krb5_new(NULL, &opts, &a, err, sizeof(err)), 0);
	if (!a)
		return;
	CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), SMB_AUTH_CONTINUE);
	rc = smb_auth_step(a, junk, sizeof(junk), &out, &outlen);
	CHECK(rc < 0);
	CHECK(smb_auth_last_error(a) != NULL);
	if (smb_auth_last_error(a))
		fprintf(stderr, "  last error (%d): %s\n", rc, smb_auth_last_error(a));
	CHECK_EQ(smb_auth_step(a, junk, sizeof(junk), &out, &outlen), -EINVAL);
	CHECK_EQ(smb_auth_session_key(a, key, &keylen), -EAGAIN);
	smb_auth_free(a);
}

static void test_no_server_name(void)
{
	struct smb_auth_krb5_opts o = {.server_name = ""};
	struct smb_auth *a;
	char err[128];

	CHECK_EQ(smb_auth_krb5_new(NULL, &o, &a, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != '\0');
}

/* smb_auth_krb5_keep() of the cache: with the file gone (as a daemon that
 * gave up root no longer reads it), the copy still authenticates. */
static void test_keep_cache(void)
{
	gss_ctx_id_t sctx = GSS_C_NO_CONTEXT;
	gss_buffer_desc srv_tok = GSS_C_EMPTY_BUFFER;
	const uint8_t *out;
	size_t outlen;
	struct smb_auth *a;
	OM_uint32 minor;
	char err[512];

	make_ccache(3600, true);
	CHECK_EQ(smb_auth_krb5_keep(&opts, err, sizeof(err)), 0);
	CHECK_EQ(smb_auth_krb5_keep(&opts, err, sizeof(err)), -EALREADY);
	CHECK_EQ(unlink(path_cc + 5), 0);
	CHECK_EQ(smb_auth_krb5_new(NULL, &opts, &a, err, sizeof(err)), 0);
	if (!a) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK_EQ(smb_auth_step(a, NULL, 0, &out, &outlen), SMB_AUTH_CONTINUE);
	CHECK_EQ(accept_leg(&sctx, out, outlen, &srv_tok), GSS_S_COMPLETE);
	CHECK_EQ(smb_auth_step(a, srv_tok.value, srv_tok.length, &out, &outlen), SMB_AUTH_DONE);
	gss_release_buffer(&minor, &srv_tok);
	gss_delete_sec_context(&minor, &sctx, GSS_C_NO_BUFFER);
	smb_auth_free(a);
}

/* And of a keytab: only the principal's keys, still there with the file
 * gone.  With no TGT cached GSS asks the KDC for one at once, and there is
 * no KDC here: that it tries proves it found the key. */
static void test_keep_keytab(void)
{
	struct smb_auth_krb5_opts o = {
	    .server_name = SERVER, .user = USER "@" REALM, .keytab = path_user_kt};
	struct smb_auth_krb5_opts carol = {
	    .server_name = SERVER, .user = "carol@" REALM, .keytab = path_user_kt};
	struct smb_auth *a;
	char err[512];

	/* test_keytab_without_the_user left USER's key there, and no other */
	CHECK_EQ(smb_auth_krb5_keep(&carol, err, sizeof(err)), -ENOKEY);
	CHECK(strstr(err, "carol@" REALM) != NULL);
	fprintf(stderr, "  message: %s\n", err);
	CHECK_EQ(smb_auth_krb5_keep(&o, err, sizeof(err)), 0);
	CHECK_EQ(unlink(path_user_kt), 0);
	CHECK_EQ(smb_auth_krb5_new(NULL, &o, &a, err, sizeof(err)), -ENOKEY);
	CHECK(strstr(err, "Cannot contact any KDC") != NULL);
	fprintf(stderr, "  message: %s\n", err);
	/* another principal is not served from the copy: the file is gone */
	CHECK_EQ(smb_auth_krb5_new(NULL, &carol, &a, err, sizeof(err)), -ENOKEY);
	CHECK(strstr(err, "Cannot contact any KDC") == NULL);
	fprintf(stderr, "  message: %s\n", err);
}

int main(void)
{
	setup();
	RUN(test_no_ccache);
	RUN(test_expired);
	RUN(test_wrong_principal);
	RUN(test_keytab_without_the_user);
	RUN(test_handshake);
	RUN(test_server_garbage_is_sticky);
	RUN(test_no_server_name);
	/* last: a kept copy stays for the rest of the process */
	RUN(test_keep_cache);
	RUN(test_keep_keytab);
	teardown();
	return check_report();
}
