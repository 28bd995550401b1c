/* common/crypto.c — every cryptographic primitive the client uses, on OpenSSL 3.
 *
 * Owns a private OSSL_LIB_CTX with the "default" and "legacy" providers loaded
 * into it (MD4 and RC4 live in legacy), and the algorithm objects fetched from
 * it once at init.  Fetched EVP_MD/EVP_MAC/EVP_CIPHER objects are immutable
 * and safe to share between threads; every call makes its own short-lived
 * EVP_*_CTX, so nothing here needs a lock after init.
 *
 * Key material never reaches a log line: OpenSSL failures are logged by the
 * name of the operation and OpenSSL's error string only.
 */
#include "common/crypto.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "common/log.h"

static struct {
	OSSL_LIB_CTX *libctx;
	OSSL_PROVIDER *prov_default;
	OSSL_PROVIDER *prov_legacy;
	EVP_MD *md4;
	EVP_MD *md5;
	EVP_MD *sha512;
	EVP_MAC *hmac;
	EVP_MAC *cmac;
	EVP_CIPHER *aes128gcm;
	EVP_CIPHER *aead[4]; /* SMB_CIPHER_AES128_CCM.. AES256_GCM, minus 1 */
	EVP_CIPHER *rc4;
	/* Keyed with a dummy key and never used directly: each call dups one
	 * and re-keys the copy, which skips the by-name algorithm lookup that
	 * EVP_MAC_init() with parameters does.  Dup only reads the source, so
	 * threads share these safely. */
	EVP_MAC_CTX *tmpl_hmac_md5;
	EVP_MAC_CTX *tmpl_hmac_sha256;
	EVP_MAC_CTX *tmpl_cmac;
	int init_rc;
} crypto;

static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

/* Log the operation that failed and drain OpenSSL's error queue. */
static int ossl_fail(const char *what)
{
	char buf[256];
	unsigned long e = ERR_get_error();

	if (e) {
		ERR_error_string_n(e, buf, sizeof(buf));
		smb_err("crypto: %s failed: %s", what, buf);
	} else {
		smb_err("crypto: %s failed", what);
	}
	ERR_clear_error();
	return -EIO;
}

static EVP_MAC_CTX *mac_template(EVP_MAC *mac, const char *param, const char *alg)
{
	static const uint8_t dummy_key[16];
	OSSL_PARAM params[2];
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);

	if (!ctx)
		return NULL;
	params[0] = OSSL_PARAM_construct_utf8_string(param, (char *)alg, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, dummy_key, sizeof(dummy_key), params) != 1) {
		EVP_MAC_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void crypto_do_init(void)
{
	crypto.libctx = OSSL_LIB_CTX_new();
	if (!crypto.libctx) {
		crypto.init_rc = ossl_fail("OSSL_LIB_CTX_new");
		return;
	}
	crypto.prov_default = OSSL_PROVIDER_load(crypto.libctx, "default");
	if (!crypto.prov_default) {
		crypto.init_rc = ossl_fail("loading the default provider");
		return;
	}
	crypto.prov_legacy = OSSL_PROVIDER_load(crypto.libctx, "legacy");
	if (!crypto.prov_legacy) {
		crypto.init_rc = ossl_fail("loading the legacy provider (MD4, RC4)");
		return;
	}
	crypto.md4 = EVP_MD_fetch(crypto.libctx, "MD4", NULL);
	crypto.md5 = EVP_MD_fetch(crypto.libctx, "MD5", NULL);
	crypto.sha512 = EVP_MD_fetch(crypto.libctx, "SHA512", NULL);
	crypto.hmac = EVP_MAC_fetch(crypto.libctx, "HMAC", NULL);
	crypto.cmac = EVP_MAC_fetch(crypto.libctx, "CMAC", NULL);
	crypto.aes128gcm = EVP_CIPHER_fetch(crypto.libctx, "AES-128-GCM", NULL);
	crypto.rc4 = EVP_CIPHER_fetch(crypto.libctx, "RC4", NULL);
	static const char *const aead_names[4] = {"AES-128-CCM", "AES-128-GCM", "AES-256-CCM",
	                                          "AES-256-GCM"};
	for (int i = 0; i < 4; i++) {
		crypto.aead[i] = EVP_CIPHER_fetch(crypto.libctx, aead_names[i], NULL);
		if (!crypto.aead[i]) {
			crypto.init_rc = ossl_fail("fetching the SMB3 ciphers");
			return;
		}
	}
	if (!crypto.md4 || !crypto.md5 || !crypto.sha512 || !crypto.hmac || !crypto.cmac ||
	    !crypto.aes128gcm || !crypto.rc4) {
		crypto.init_rc = ossl_fail("fetching algorithms");
		return;
	}
	crypto.tmpl_hmac_md5 = mac_template(crypto.hmac, OSSL_MAC_PARAM_DIGEST, "MD5");
	crypto.tmpl_hmac_sha256 = mac_template(crypto.hmac, OSSL_MAC_PARAM_DIGEST, "SHA256");
	crypto.tmpl_cmac = mac_template(crypto.cmac, OSSL_MAC_PARAM_CIPHER, "AES-128-CBC");
	if (!crypto.tmpl_hmac_md5 || !crypto.tmpl_hmac_sha256 || !crypto.tmpl_cmac) {
		crypto.init_rc = ossl_fail("preparing MAC contexts");
		return;
	}
	crypto.init_rc = 0;
}

int smb_crypto_init(void)
{
	if (pthread_once(&crypto_once, crypto_do_init) != 0)
		return -EIO;
	return crypto.init_rc;
}

struct ossl_lib_ctx_st *smb_crypto_libctx(void)
{
	return smb_crypto_init() == 0 ? crypto.libctx : NULL;
}

int smb_ct_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

int smb_random_bytes(void *buf, size_t len)
{
	int rc = smb_crypto_init();

	if (rc)
		return rc;
	if (len == 0)
		return 0;
	if (len > INT_MAX)
		return -EINVAL;
	if (RAND_bytes_ex(crypto.libctx, buf, len, 0) != 1)
		return ossl_fail("RAND_bytes_ex");
	return 0;
}

/* ---- digests ---------------------------------------------------------- */

static int digest_iov(const EVP_MD *md, const char *what, const struct iovec *iov, int iovcnt,
                      uint8_t *out, unsigned int outlen)
{
	EVP_MD_CTX *ctx;
	unsigned int len = 0;
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return ossl_fail(what);
	if (EVP_DigestInit_ex2(ctx, md, NULL) != 1)
		goto fail;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && EVP_DigestUpdate(ctx, iov[i].iov_base, iov[i].iov_len) != 1)
			goto fail;
	}
	if (EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != outlen)
		goto fail;
	EVP_MD_CTX_free(ctx);
	return 0;
fail:
	EVP_MD_CTX_free(ctx);
	return ossl_fail(what);
}

int smb_md4(const void *data, size_t len, uint8_t out[16])
{
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	int rc = smb_crypto_init();

	if (rc)
		return rc;
	if (len && !data)
		return -EINVAL;
	return digest_iov(crypto.md4, "MD4", &iov, 1, out, 16);
}

int smb_md5(const struct iovec *iov, int iovcnt, uint8_t out[16])
{
	int rc = smb_crypto_init();

	return rc ? rc : digest_iov(crypto.md5, "MD5", iov, iovcnt, out, 16);
}

int smb_sha512(const struct iovec *iov, int iovcnt, uint8_t out[64])
{
	int rc = smb_crypto_init();

	return rc ? rc : digest_iov(crypto.sha512, "SHA-512", iov, iovcnt, out, 64);
}

/* ---- MACs --------------------------------------------------------------- */

static int mac_iov(const EVP_MAC_CTX *tmpl, const char *what, const uint8_t *key, size_t keylen,
                   const struct iovec *iov, int iovcnt, uint8_t *out, size_t outlen)
{
	EVP_MAC_CTX *ctx;
	size_t len = 0;

	if (iovcnt < 0 || (iovcnt > 0 && !iov) || (keylen && !key))
		return -EINVAL;
	ctx = EVP_MAC_CTX_dup(tmpl);
	if (!ctx)
		return ossl_fail(what);
	if (EVP_MAC_init(ctx, key, keylen, NULL) != 1)
		goto fail;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && EVP_MAC_update(ctx, iov[i].iov_base, iov[i].iov_len) != 1)
			goto fail;
	}
	if (EVP_MAC_final(ctx, out, &len, outlen) != 1 || len != outlen)
		goto fail;
	EVP_MAC_CTX_free(ctx);
	return 0;
fail:
	EVP_MAC_CTX_free(ctx);
	return ossl_fail(what);
}

static int hmac_iov(const EVP_MAC_CTX *tmpl, const char *what, const uint8_t *key, size_t keylen,
                    const struct iovec *iov, int iovcnt, uint8_t *out, size_t outlen)
{
	/* HMAC with an empty key is valid; OpenSSL wants a non-NULL pointer. */
	static const uint8_t empty_key[1];

	if (keylen == 0)
		key = empty_key;
	return mac_iov(tmpl, what, key, keylen, iov, iovcnt, out, outlen);
}

int smb_hmac_md5(const uint8_t *key, size_t keylen, const struct iovec *iov, int iovcnt,
                 uint8_t out[16])
{
	int rc = smb_crypto_init();

	return rc ? rc
	          : hmac_iov(crypto.tmpl_hmac_md5, "HMAC-MD5", key, keylen, iov, iovcnt, out, 16);
}

int smb_hmac_sha256(const uint8_t *key, size_t keylen, const struct iovec *iov, int iovcnt,
                    uint8_t out[32])
{
	int rc = smb_crypto_init();

	return rc ? rc
	          : hmac_iov(crypto.tmpl_hmac_sha256, "HMAC-SHA256", key, keylen, iov, iovcnt, out,
	                     32);
}

int smb_aes_cmac(const uint8_t key[16], const struct iovec *iov, int iovcnt, uint8_t out[16])
{
	int rc = smb_crypto_init();

	if (rc)
		return rc;
	if (!key)
		return -EINVAL;
	return mac_iov(crypto.tmpl_cmac, "AES-128-CMAC", key, 16, iov, iovcnt, out, 16);
}

/* ---- ciphers ------------------------------------------------------------ */

/* EVP_*Update take an int length: feed large buffers in pieces. */
#define EVP_CHUNK (1u << 30)

int smb_aes_gmac(const uint8_t key[16], const uint8_t nonce[12], const struct iovec *iov,
                 int iovcnt, uint8_t out[16])
{
	EVP_CIPHER_CTX *ctx;
	uint8_t scratch[16];
	int outl = 0;
	int rc = smb_crypto_init();

	if (rc)
		return rc;
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return ossl_fail("AES-128-GMAC");
	/* The GCM default IV length is 12 bytes, which is what we pass. */
	if (EVP_EncryptInit_ex2(ctx, crypto.aes128gcm, key, nonce, NULL) != 1)
		goto fail;
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			size_t n = left > EVP_CHUNK ? EVP_CHUNK : left;

			if (EVP_EncryptUpdate(ctx, NULL, &outl, p, (int)n) != 1)
				goto fail;
			p += n;
			left -= n;
		}
	}
	if (EVP_EncryptFinal_ex(ctx, scratch, &outl) != 1)
		goto fail;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, out) != 1)
		goto fail;
	EVP_CIPHER_CTX_free(ctx);
	return 0;
fail:
	EVP_CIPHER_CTX_free(ctx);
	return ossl_fail("AES-128-GMAC");
}

size_t smb_cipher_key_len(uint16_t cipher)
{
	switch (cipher) {
	case SMB_CIPHER_AES128_CCM:
	case SMB_CIPHER_AES128_GCM:
		return 16;
	case SMB_CIPHER_AES256_CCM:
	case SMB_CIPHER_AES256_GCM:
		return 32;
	}
	return 0;
}

size_t smb_cipher_nonce_len(uint16_t cipher)
{
	switch (cipher) {
	case SMB_CIPHER_AES128_CCM:
	case SMB_CIPHER_AES256_CCM:
		return 11;
	case SMB_CIPHER_AES128_GCM:
	case SMB_CIPHER_AES256_GCM:
		return 12;
	}
	return 0;
}

/* One AEAD pass in place.  CCM must see the total length before the AAD and
 * the data in a single update; GCM does not mind either way. */
static int aead(bool enc, uint16_t cipher, const uint8_t *key, const uint8_t *nonce,
                const uint8_t *aad, size_t aadlen, uint8_t *buf, size_t len, uint8_t tag[16])
{
	size_t nlen = smb_cipher_nonce_len(cipher);
	bool ccm = nlen == 11;
	int outl = 0, rc = smb_crypto_init();

	if (rc)
		return rc;
	if (!nlen || len > INT_MAX || aadlen > INT_MAX || (len && !buf))
		return -EINVAL;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return ossl_fail("AEAD context");
	EVP_CIPHER *alg = crypto.aead[cipher - 1];
	if (EVP_CipherInit_ex2(ctx, alg, NULL, NULL, enc, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)nlen, NULL) != 1)
		goto fail;
	if (ccm && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, enc ? NULL : tag) != 1)
		goto fail;
	if (EVP_CipherInit_ex2(ctx, NULL, key, nonce, enc, NULL) != 1)
		goto fail;
	if (ccm && EVP_CipherUpdate(ctx, NULL, &outl, NULL, (int)len) != 1)
		goto fail;
	if (aadlen && EVP_CipherUpdate(ctx, NULL, &outl, aad, (int)aadlen) != 1)
		goto fail;
	if (len && EVP_CipherUpdate(ctx, buf, &outl, buf, (int)len) != 1) {
		if (!enc && ccm)
			goto bad_tag; /* CCM checks the tag here */
		goto fail;
	}
	if (!ccm && !enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1)
		goto fail;
	if (!ccm || enc) {
		uint8_t scratch[32];
		if (EVP_CipherFinal_ex(ctx, scratch, &outl) != 1) {
			if (!enc)
				goto bad_tag;
			goto fail;
		}
	}
	if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1)
		goto fail;
	EVP_CIPHER_CTX_free(ctx);
	return 0;
bad_tag:
	ERR_clear_error();
	EVP_CIPHER_CTX_free(ctx);
	return -EBADMSG;
fail:
	EVP_CIPHER_CTX_free(ctx);
	return ossl_fail(enc ? "encryption" : "decryption");
}

int smb_aead_encrypt(uint16_t cipher, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                     size_t aadlen, uint8_t *buf, size_t len, uint8_t tag[16])
{
	return aead(true, cipher, key, nonce, aad, aadlen, buf, len, tag);
}

int smb_aead_decrypt(uint16_t cipher, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                     size_t aadlen, uint8_t *buf, size_t len, const uint8_t tag[16])
{
	uint8_t t[16];
	memcpy(t, tag, 16);
	return aead(false, cipher, key, nonce, aad, aadlen, buf, len, t);
}

int smb_rc4(const uint8_t *key, size_t keylen, const uint8_t *in, uint8_t *out, size_t len)
{
	EVP_CIPHER_CTX *ctx;
	int outl = 0;
	int rc = smb_crypto_init();

	if (rc)
		return rc;
	if (!key || keylen == 0 || keylen > 256 || (len && (!in || !out)))
		return -EINVAL;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return ossl_fail("RC4");
	if (EVP_EncryptInit_ex2(ctx, crypto.rc4, NULL, NULL, NULL) != 1)
		goto fail;
	if (EVP_CIPHER_CTX_set_key_length(ctx, (int)keylen) != 1)
		goto fail;
	if (EVP_EncryptInit_ex2(ctx, NULL, key, NULL, NULL) != 1)
		goto fail;
	while (len) {
		size_t n = len > EVP_CHUNK ? EVP_CHUNK : len;

		if (EVP_EncryptUpdate(ctx, out, &outl, in, (int)n) != 1 || (size_t)outl != n)
			goto fail;
		in += n;
		out += n;
		len -= n;
	}
	EVP_CIPHER_CTX_free(ctx);
	return 0;
fail:
	EVP_CIPHER_CTX_free(ctx);
	return ossl_fail("RC4");
}

/* the handle is the OpenSSL context itself */
int smb_rc4_stream_new(const uint8_t *key, size_t keylen, struct smb_rc4_stream **out)
{
	EVP_CIPHER_CTX *ctx;
	int rc = smb_crypto_init();

	if (out)
		*out = NULL;
	if (rc)
		return rc;
	if (!out || !key || keylen == 0 || keylen > 256)
		return -EINVAL;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return ossl_fail("RC4");
	if (EVP_EncryptInit_ex2(ctx, crypto.rc4, NULL, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_set_key_length(ctx, (int)keylen) != 1 ||
	    EVP_EncryptInit_ex2(ctx, NULL, key, NULL, NULL) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return ossl_fail("RC4");
	}
	*out = (struct smb_rc4_stream *)ctx;
	return 0;
}

int smb_rc4_stream_update(struct smb_rc4_stream *s, const uint8_t *in, uint8_t *out, size_t len)
{
	EVP_CIPHER_CTX *ctx = (EVP_CIPHER_CTX *)s;
	int outl = 0;

	if (!ctx || (len && (!in || !out)))
		return -EINVAL;
	while (len) {
		size_t n = len > EVP_CHUNK ? EVP_CHUNK : len;

		if (EVP_EncryptUpdate(ctx, out, &outl, in, (int)n) != 1 || (size_t)outl != n)
			return ossl_fail("RC4");
		in += n;
		out += n;
		len -= n;
	}
	return 0;
}

void smb_rc4_stream_free(struct smb_rc4_stream *s)
{
	/* EVP_CIPHER_CTX_free() clears the key schedule */
	EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)s);
}

/* ---- KDF and PDU signing ------------------------------------------------ */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* SP800-108 counter mode, PRF = HMAC-SHA256, r = 32:
 *   K(i) = HMAC(Ki, [i]_4be || Label || 0x00 || Context || [L]_4be)
 * The caller's label and context already carry the NULs [MS-SMB2] 3.1.4.2
 * asks for; the 0x00 here is SP800-108's own separator. */
int smb_kdf(const uint8_t *key, size_t keylen, const uint8_t *label, size_t label_len,
            const uint8_t *context, size_t context_len, uint8_t *out, size_t outlen)
{
	static const uint8_t zero;
	uint8_t ctr[4], lbits[4], block[32];
	int rc;

	if (!out || (label_len && !label) || (context_len && !context))
		return -EINVAL;
	if (outlen == 0 || outlen > UINT32_MAX / 8)
		return -EINVAL;
	put_be32(lbits, (uint32_t)(outlen * 8));
	for (uint32_t i = 1; outlen; i++) {
		size_t n = outlen < sizeof(block) ? outlen : sizeof(block);
		struct iovec iov[5] = {
		    {.iov_base = ctr, .iov_len = 4},
		    {.iov_base = (void *)label, .iov_len = label_len},
		    {.iov_base = (void *)&zero, .iov_len = 1},
		    {.iov_base = (void *)context, .iov_len = context_len},
		    {.iov_base = lbits, .iov_len = 4},
		};

		put_be32(ctr, i);
		rc = smb_hmac_sha256(key, keylen, iov, 5, block);
		if (rc) {
			OPENSSL_cleanse(block, sizeof(block));
			return rc;
		}
		memcpy(out, block, n);
		out += n;
		outlen -= n;
	}
	OPENSSL_cleanse(block, sizeof(block));
	return 0;
}

/* [MS-SMB2] 3.1.4.1: the AES-GMAC nonce is MessageId (8 bytes, as in the
 * header) followed by a 32-bit little-endian field whose bit 0 says the sender
 * is the server and bit 1 that the message is a CANCEL request.  The header
 * layout ([MS-SMB2] 2.2.1.2): Command at 12, Flags at 16, MessageId at 24. */
#define GMAC_HDR_SIZE        64     /* SMB2_HDR_SIZE */
#define GMAC_SERVER_TO_REDIR 0x0001 /* SMB2_FLAGS_SERVER_TO_REDIR */
#define GMAC_CANCEL          0x000C /* SMB2_CANCEL */
static int gmac_nonce(const struct iovec *iov, int iovcnt, uint8_t nonce[12])
{
	const uint8_t *hdr;
	uint32_t flags, role;
	uint16_t command;

	if (iovcnt < 1 || iov[0].iov_len < GMAC_HDR_SIZE)
		return -EINVAL;
	hdr = iov[0].iov_base;
	command = (uint16_t)(hdr[12] | hdr[13] << 8);
	flags = (uint32_t)hdr[16] | (uint32_t)hdr[17] << 8 | (uint32_t)hdr[18] << 16 |
	        (uint32_t)hdr[19] << 24;
	role = (flags & GMAC_SERVER_TO_REDIR) ? 1u : 0u;
	if (command == GMAC_CANCEL)
		role |= 2u;
	memcpy(nonce, hdr + 24, 8);
	nonce[8] = (uint8_t)role;
	nonce[9] = 0;
	nonce[10] = 0;
	nonce[11] = 0;
	return 0;
}

int smb_sign_pdu(uint16_t alg, const uint8_t key[16], const struct iovec *iov, int iovcnt,
                 uint8_t sig[16])
{
	uint8_t full[32], nonce[12];
	int rc;

	if (!key || !sig || iovcnt < 0 || (iovcnt > 0 && !iov))
		return -EINVAL;
	switch (alg) {
	case SMB_SIGNING_HMAC_SHA256:
		rc = smb_hmac_sha256(key, 16, iov, iovcnt, full);
		if (rc == 0)
			memcpy(sig, full, 16);
		OPENSSL_cleanse(full, sizeof(full));
		return rc;
	case SMB_SIGNING_AES_CMAC:
		return smb_aes_cmac(key, iov, iovcnt, sig);
	case SMB_SIGNING_AES_GMAC:
		rc = gmac_nonce(iov, iovcnt, nonce);
		if (rc)
			return rc;
		return smb_aes_gmac(key, nonce, iov, iovcnt, sig);
	default:
		return -EINVAL;
	}
}
