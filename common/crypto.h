/* common/crypto.h — every cryptographic primitive the client uses, on OpenSSL 3.
 *
 * All algorithms are fetched from a private OSSL_LIB_CTX holding the default
 * and legacy providers (MD4 and RC4 for NTLM live in legacy); the machine's
 * OpenSSL configuration is not changed.  smb_crypto_init() must be called once
 * before anything else (it is idempotent and thread-safe); every function here
 * is then thread-safe.  Functions return 0 or -errno (-EIO on an OpenSSL
 * failure, which is logged).  Key material is never logged.
 */
#ifndef SMBRDMA_COMMON_CRYPTO_H
#define SMBRDMA_COMMON_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Algorithm ids, valued as on the wire ([MS-SMB2] 2.2.3.1.2 EncryptionAlgorithm
 * Id and 2.2.3.1.7 SigningAlgorithm Id), so a negotiated id passes through
 * unchanged.  They are defined here rather than taken from
 * client/proto/smb2_const.h so that common/ uses no layer above it;
 * client/conn.c asserts at compile time that they equal the SMB2_ENCRYPTION_*
 * and SMB2_SIGNING_* values there. */
enum smb_cipher_id {
	SMB_CIPHER_AES128_CCM = 0x0001,
	SMB_CIPHER_AES128_GCM = 0x0002,
	SMB_CIPHER_AES256_CCM = 0x0003,
	SMB_CIPHER_AES256_GCM = 0x0004,
};
enum smb_signing_id {
	SMB_SIGNING_HMAC_SHA256 = 0x0000,
	SMB_SIGNING_AES_CMAC = 0x0001,
	SMB_SIGNING_AES_GMAC = 0x0002,
};

int smb_crypto_init(void);
struct ossl_lib_ctx_st;
struct ossl_lib_ctx_st *smb_crypto_libctx(void);

int smb_random_bytes(void *buf, size_t len);

/* 1 when the n bytes at a and b are equal, else 0, in a time that does not
 * depend on where they differ: for every MAC, signature or tag compared. */
int smb_ct_equal(const void *a, const void *b, size_t n);

/* Hashes / MACs over a scatter list. */
int smb_md4(const void *data, size_t len, uint8_t out[16]);
int smb_md5(const struct iovec *iov, int iovcnt, uint8_t out[16]);
int smb_hmac_md5(const uint8_t *key, size_t keylen, const struct iovec *iov, int iovcnt,
                 uint8_t out[16]);
int smb_hmac_sha256(const uint8_t *key, size_t keylen, const struct iovec *iov, int iovcnt,
                    uint8_t out[32]);
int smb_sha512(const struct iovec *iov, int iovcnt, uint8_t out[64]);
int smb_aes_cmac(const uint8_t key[16], const struct iovec *iov, int iovcnt, uint8_t out[16]);
/* AES-128-GMAC: GCM with no plaintext, all of iov as AAD ([MS-SMB2] 3.1.4.1). */
int smb_aes_gmac(const uint8_t key[16], const uint8_t nonce[12], const struct iovec *iov,
                 int iovcnt, uint8_t out[16]);
/* RC4 (NTLM key exchange): out may equal in. */
int smb_rc4(const uint8_t *key, size_t keylen, const uint8_t *in, uint8_t *out, size_t len);

/* A keeping RC4 stream: the key schedule and keystream position survive
 * between smb_rc4_stream_update() calls (the NTLMSSP sealing handles of
 * [MS-NLMP] 3.4.3, which continue across messages).  _new() returns a
 * handle into *out (freed, key state wiped, by _free(); NULL is fine);
 * one thread uses a handle at a time.  in == out is allowed. */
struct smb_rc4_stream;
int smb_rc4_stream_new(const uint8_t *key, size_t keylen, struct smb_rc4_stream **out);
int smb_rc4_stream_update(struct smb_rc4_stream *s, const uint8_t *in, uint8_t *out, size_t len);
void smb_rc4_stream_free(struct smb_rc4_stream *s);

/* SMB3 encryption ([MS-SMB2] 3.1.4.3): AES-128/256-CCM (11-byte nonce) and
 * AES-128/256-GCM (12-byte nonce), 16-byte tag, in place over buf.
 *   cipher: SMB_CIPHER_AES128_CCM .. SMB_CIPHER_AES256_GCM
 *   key:    smb_cipher_key_len(cipher) bytes
 * decrypt returns -EBADMSG (not logged) when the tag does not verify; buf
 * then holds garbage. */
size_t smb_cipher_key_len(uint16_t cipher);   /* 0 for an unknown cipher */
size_t smb_cipher_nonce_len(uint16_t cipher); /* 0 for an unknown cipher */
int smb_aead_encrypt(uint16_t cipher, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                     size_t aadlen, uint8_t *buf, size_t len, uint8_t tag[16]);
int smb_aead_decrypt(uint16_t cipher, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                     size_t aadlen, uint8_t *buf, size_t len, const uint8_t tag[16]);

/* [MS-SMB2] 3.1.4.2: SP800-108 counter-mode KDF with HMAC-SHA256, r=32,
 * L = outlen*8.  Label and context are passed with their terminating NULs
 * where the spec says so (the caller includes them in the lengths). */
int smb_kdf(const uint8_t *key, size_t keylen, const uint8_t *label, size_t label_len,
            const uint8_t *context, size_t context_len, uint8_t *out, size_t outlen);

/* [MS-SMB2] 3.1.4.1 message signing.  @iov covers the whole PDU with its
 * Signature field already zeroed; the 16-byte result goes into Signature.
 *   alg: SMB_SIGNING_HMAC_SHA256 / SMB_SIGNING_AES_CMAC / SMB_SIGNING_AES_GMAC
 * For GMAC the nonce is built from the header inside (MessageId, and the
 * SERVER_TO_REDIR and CANCEL bits), so the first iov must hold the 64-byte
 * header. */
int smb_sign_pdu(uint16_t alg, const uint8_t key[16], const struct iovec *iov, int iovcnt,
                 uint8_t sig[16]);

#endif
