/* tests/unit/auth/test_crypto.c — known-answer tests for common/crypto.c.
 *
 * Sources of the vectors: RFC 1320 (MD4), RFC 1321 (MD5), RFC 2202 (HMAC-MD5),
 * RFC 4231 (HMAC-SHA256), FIPS 180-2 (SHA-512), RFC 4493 (AES-CMAC), the GCM
 * specification's test case 1 (GMAC of nothing), RFC 6229 (RC4), and
 * Microsoft's Open Specifications blog "SMB 2 and SMB 3 security in Windows
 * 10: the anatomy of signing and cryptographic keys" (KDF, preauth hash and a
 * signed SESSION_SETUP response).  GMAC/HMAC/CMAC signing of a synthetic PDU
 * was cross-checked with `openssl mac` (OpenSSL 3.0 CLI).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/crypto.h"
#include "client/proto/smb2_const.h"
#include "tests/unit/check.h"

static uint8_t buf_a[1024], buf_b[1024];

static size_t hex(const char *h, uint8_t *out)
{
	return check_hex(h, out, 1024);
}

static struct iovec iov1(const void *p, size_t n)
{
	struct iovec v = {.iov_base = (void *)p, .iov_len = n};
	return v;
}

static void test_init(void)
{
	CHECK_EQ(smb_crypto_init(), 0);
	CHECK_EQ(smb_crypto_init(), 0);
	CHECK(smb_crypto_libctx() != NULL);
}

static void test_md4(void)
{
	static const struct {
		const char *msg, *md;
	} v[] = {
	    {"", "31d6cfe0d16ae931b73c59d7e0c089c0"},
	    {"a", "bde52cb31de33e46245e05fbdbd6fb24"},
	    {"abc", "a448017aaf21d8525fc10ae87aa6729d"},
	    {"message digest", "d9130a8164549fe818874806e1c7014b"},
	    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	     "e33b4ddc9c38f2199c3e7b164fcc0536"},
	};
	uint8_t out[16];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		hex(v[i].md, buf_a);
		CHECK_EQ(smb_md4(v[i].msg, strlen(v[i].msg), out), 0);
		CHECK_MEM(out, buf_a, 16);
	}
}

static void test_md5_sha512(void)
{
	uint8_t out[64];
	struct iovec v[3] = {iov1("a", 1), iov1("", 0), iov1("bc", 2)};

	hex("900150983cd24fb0d6963f7d28e17f72", buf_a);
	CHECK_EQ(smb_md5(v, 3, out), 0);
	CHECK_MEM(out, buf_a, 16);

	hex("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
	    "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
	    buf_a);
	CHECK_EQ(smb_sha512(v, 3, out), 0);
	CHECK_MEM(out, buf_a, 64);
}

/* [MS-SMB2] 3.2.5.2 preauth integrity: H1 = SHA-512(H0 || NEGOTIATE request),
 * H0 = 64 zero bytes; values from the blog's SMB 3.1.1 example. */
static void test_preauth_sha512(void)
{
	static const char *neg_req =
	    "FE534D4240000100000000000000800000000000000000000100000000000000FFFE000000000000"
	    "00000000000000000000000000000000000000000000000024000500000000003F000000ECD86F32"
	    "6276024F9F7752B89BB33F3A70000000020000000202100200030203110300000100260000000000"
	    "010020000100FA49E6578F1F3A9F4CD3E9CC14A67AA884B3D05844E0E5A118225C15887F32FF0000"
	    "0200060000000000020002000100";
	uint8_t h0[64] = {0}, out[64], want[64];
	size_t n = hex(neg_req, buf_a);
	struct iovec v[2] = {iov1(h0, 64), iov1(buf_a, n)};

	hex("DD94EFC5321BB618A2E208BA8920D2F422992526947A409B5037DE1E0FE8C7362B8C47122594CDE0"
	    "CE26AA9DFC8BCDBDE0621957672623351A7540F1E54A0426",
	    want);
	CHECK_EQ(smb_sha512(v, 2, out), 0);
	CHECK_MEM(out, want, 64);
}

static void test_hmac(void)
{
	uint8_t key[131], out[32];
	struct iovec v;

	/* RFC 4231 test case 1 */
	memset(key, 0x0b, 20);
	v = iov1("Hi There", 8);
	hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", buf_a);
	CHECK_EQ(smb_hmac_sha256(key, 20, &v, 1, out), 0);
	CHECK_MEM(out, buf_a, 32);
	/* RFC 4231 test case 2, message split in three */
	struct iovec v2[3] = {iov1("what do ya", 10), iov1(" want for ", 10), iov1("nothing?", 8)};
	hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", buf_a);
	CHECK_EQ(smb_hmac_sha256((const uint8_t *)"Jefe", 4, v2, 3, out), 0);
	CHECK_MEM(out, buf_a, 32);
	/* RFC 4231 test case 6: key longer than a block */
	memset(key, 0xaa, 131);
	v = iov1("Test Using Larger Than Block-Size Key - Hash Key First", 54);
	hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", buf_a);
	CHECK_EQ(smb_hmac_sha256(key, 131, &v, 1, out), 0);
	CHECK_MEM(out, buf_a, 32);

	/* RFC 2202 HMAC-MD5 test cases 1 and 2 */
	memset(key, 0x0b, 16);
	v = iov1("Hi There", 8);
	hex("9294727a3638bb1c13f48ef8158bfc9d", buf_a);
	CHECK_EQ(smb_hmac_md5(key, 16, &v, 1, out), 0);
	CHECK_MEM(out, buf_a, 16);
	hex("750c783e6ab0b503eaa86e310a5db738", buf_a);
	CHECK_EQ(smb_hmac_md5((const uint8_t *)"Jefe", 4, v2, 3, out), 0);
	CHECK_MEM(out, buf_a, 16);
}

static void test_cmac(void)
{
	uint8_t key[16], msg[64], out[16];
	static const char *want[] = {
	    "bb1d6929e95937287fa37d129b756746",
	    "070a16b46b4d4144f79bdd9dd04a287c",
	    "dfa66747de9ae63030ca32611497c827",
	    "51f0bebf7e3b9d92fc49741779363cfe",
	};
	static const size_t lens[] = {0, 16, 40, 64};

	hex("2b7e151628aed2a6abf7158809cf4f3c", key);
	hex("6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51"
	    "30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710",
	    msg);
	for (int i = 0; i < 4; i++) {
		struct iovec v = iov1(msg, lens[i]);

		hex(want[i], buf_a);
		CHECK_EQ(smb_aes_cmac(key, &v, 1, out), 0);
		CHECK_MEM(out, buf_a, 16);
	}
	/* The same 64-byte message cut at every offset gives the same MAC. */
	hex(want[3], buf_a);
	for (size_t cut = 0; cut <= 64; cut++) {
		struct iovec v[2] = {iov1(msg, cut), iov1(msg + cut, 64 - cut)};

		CHECK_EQ(smb_aes_cmac(key, v, 2, out), 0);
		CHECK_MEM(out, buf_a, 16);
	}
}

static void test_gmac(void)
{
	uint8_t key[16] = {0}, nonce[12] = {0}, out[16];

	/* GCM spec test case 1: zero key, zero IV, nothing at all. */
	hex("58e2fccefa7e3061367f1d57a4e7455a", buf_a);
	CHECK_EQ(smb_aes_gmac(key, nonce, NULL, 0, out), 0);
	CHECK_MEM(out, buf_a, 16);
}

static void test_rc4(void)
{
	uint8_t key[16], zero[16] = {0}, out[16];

	/* RFC 6229, 40-bit key 0x0102030405, keystream offset 0 */
	hex("0102030405", key);
	hex("b2396305f03dc027ccc3524a0a1118a8", buf_a);
	CHECK_EQ(smb_rc4(key, 5, zero, out, 16), 0);
	CHECK_MEM(out, buf_a, 16);
	/* in place, and round trip */
	memcpy(out, zero, 16);
	CHECK_EQ(smb_rc4(key, 5, out, out, 16), 0);
	CHECK_MEM(out, buf_a, 16);
	CHECK_EQ(smb_rc4(key, 5, out, out, 16), 0);
	CHECK_MEM(out, zero, 16);
	/* [MS-NLMP] 4.2.4: RC4(SessionBaseKey, 0x55 * 16) */
	hex("8de40ccadbc14a82f15cb0ad0de95ca3", key);
	memset(buf_b, 0x55, 16);
	hex("c5dad2544fc9799094ce1ce90bc9d03e", buf_a);
	CHECK_EQ(smb_rc4(key, 16, buf_b, out, 16), 0);
	CHECK_MEM(out, buf_a, 16);
	CHECK_EQ(smb_rc4(NULL, 0, zero, out, 16), -EINVAL);
}

/* The keeping stream: pieces of any size continue one keystream (RFC 6229,
 * 40-bit key 0x0102030405, offsets 0 and 16). */
static void test_rc4_stream(void)
{
	uint8_t key[5], zero[32] = {0}, out[32];
	struct smb_rc4_stream *s = NULL;

	hex("0102030405", key);
	hex("b2396305f03dc027ccc3524a0a1118a8", buf_a);
	hex("6982944f18fc82d589c403a47a0d0919", buf_a + 16);
	CHECK_EQ(smb_rc4_stream_new(key, 5, &s), 0);
	CHECK_EQ(smb_rc4_stream_update(s, zero, out, 3), 0);
	CHECK_EQ(smb_rc4_stream_update(s, zero, out + 3, 0), 0);
	CHECK_EQ(smb_rc4_stream_update(s, zero, out + 3, 13), 0);
	memcpy(out + 16, zero, 16);
	CHECK_EQ(smb_rc4_stream_update(s, out + 16, out + 16, 16), 0); /* in place */
	CHECK_MEM(out, buf_a, 32);
	smb_rc4_stream_free(s);
	smb_rc4_stream_free(NULL);
	CHECK_EQ(smb_rc4_stream_new(key, 0, &s), -EINVAL);
	CHECK(s == NULL);
}

static void test_kdf(void)
{
	static const struct {
		const char *key, *label, *ctx, *want;
		size_t label_len, ctx_len;
	} v[] = {
	    /* SMB 3.0, first channel */
	    {"7CD451825D0450D235424E44BA6E78CC", "SMB2AESCMAC", "SmbSign",
	     "0B7E9C5CAC36C0F6EA9AB275298CEDCE", 12, 8},
	    {"7CD451825D0450D235424E44BA6E78CC", "SMB2AESCCM", "ServerIn ",
	     "FAD27796665B313EBB578F388632B4F7", 11, 10},
	    {"7CD451825D0450D235424E44BA6E78CC", "SMB2AESCCM", "ServerOut",
	     "B0F0427F7CEB416D1D9DCC0CD4F99447", 11, 10},
	    {"7CD451825D0450D235424E44BA6E78CC", "SMB2APP", "SmbRpc",
	     "BB23A4575AA26C721AF525AF15A87B4F", 8, 7},
	    /* SMB 3.0, second channel */
	    {"4E01A2B313BCF660CC250BEF021AEDE6", "SMB2AESCMAC", "SmbSign",
	     "BA1A17DBBFEC349BCA105563D598952F", 12, 8},
	};
	uint8_t key[16], out[32];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		hex(v[i].key, key);
		hex(v[i].want, buf_a);
		CHECK_EQ(smb_kdf(key, 16, (const uint8_t *)v[i].label, v[i].label_len,
		                 (const uint8_t *)v[i].ctx, v[i].ctx_len, out, 16),
		         0);
		CHECK_MEM(out, buf_a, 16);
	}
	CHECK_EQ(smb_kdf(key, 16, NULL, 0, NULL, 0, out, 0), -EINVAL);
	/* 32-byte output (AES-256 keys): first block differs from the 16-byte
	 * one because L is part of the input. */
	CHECK_EQ(smb_kdf(key, 16, (const uint8_t *)"SMB2AESCMAC", 12, (const uint8_t *)"SmbSign", 8,
	                 out, 32),
	         0);
	hex("BA1A17DBBFEC349BCA105563D598952F", buf_a);
	CHECK(memcmp(out, buf_a, 16) != 0);
}

/* SMB 3.1.1 from the same blog: SigningKey = KDF(SessionKey, "SMBSigningKey\0",
 * PreauthIntegrityHashValue), and the final SESSION_SETUP response carries
 * an AES-CMAC signature made with it. */
static void test_smb311_session_setup_signature(void)
{
	static const char *rsp =
	    "FE534D4240000100000000000100800009000000000000000300000000000000FFFE000000000000"
	    "1900000000100000EBE146DA120BA25FC3376A49DFE31BC10900000048001D00A11B3019A0030A01"
	    "00A3120410010000003B453CDC3524164200000000";
	uint8_t session_key[16], preauth[64], signing_key[16], want_key[16], sig[16], want_sig[16];
	size_t n;

	hex("270E1BA896585EEB7AF3472D3B4C75A7", session_key);
	hex("0DD13628CC3ED218EF9DF9772D436D0887AB9814BFAE63A80AA845F36909DB7928622DDDAD522D97"
	    "51640A459762C5A9D6BB084CBB3CE6BDADEF5D5BCE3C6C01",
	    preauth);
	hex("73FE7A9A77BEF0BDE49C650D8CCB5F76", want_key);
	CHECK_EQ(smb_kdf(session_key, 16, (const uint8_t *)"SMBSigningKey", 14, preauth, 64,
	                 signing_key, 16),
	         0);
	CHECK_MEM(signing_key, want_key, 16);

	n = hex(rsp, buf_a);
	memcpy(want_sig, buf_a + 48, 16);
	memset(buf_a + 48, 0, 16);
	/* header and body in separate iovs, as the engine will send them */
	struct iovec v[2] = {iov1(buf_a, 64), iov1(buf_a + 64, n - 64)};
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_AES_CMAC, signing_key, v, 2, sig), 0);
	CHECK_MEM(sig, want_sig, 16);

	/* The 3.1.1 encryption/decryption/application keys from the same page. */
	static const struct {
		const char *label, *want;
	} k[] = {
	    {"SMBC2SCipherKey", "629BCBC54422A0F572B97F45989B6073"},
	    {"SMBS2CCipherKey", "E2AF0DCEFAC68DA71A0DFBD0D1350D74"},
	    {"SMBAppKey", "6D7AD7954E9EC61E907B4D473DC178FF"},
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		uint8_t out[16];

		hex(k[i].want, want_key);
		CHECK_EQ(smb_kdf(session_key, 16, (const uint8_t *)k[i].label,
		                 strlen(k[i].label) + 1, preauth, 64, out, 16),
		         0);
		CHECK_MEM(out, want_key, 16);
	}
}

/* A synthetic PDU: CANCEL sent by the server (both nonce bits set) and a READ
 * from the client (neither); expected values from `openssl mac`. */
static void test_sign_pdu_gmac_hmac(void)
{
	static const char *cancel_from_server =
	    "fe534d4240000000000000000c000000090000000000000008070605040302010000000000000000"
	    "000000000000000000000000000000000000000000000000000102030405060708090a0b0c0d0e0f"
	    "101112131415161718191a1b1c1d1e1f2021222324252627";
	static const char *read_from_client =
	    "fe534d42400000000000000008000000080000000000000008070605040302010000000000000000"
	    "000000000000000000000000000000000000000000000000000102030405060708090a0b0c0d0e0f"
	    "101112131415161718191a1b1c1d1e1f2021222324252627";
	uint8_t key[16], sig[16], want[32];
	size_t n;

	hex("000102030405060708090a0b0c0d0e0f", key);

	n = hex(cancel_from_server, buf_a);
	CHECK_EQ(n, 104);
	struct iovec v[2] = {iov1(buf_a, 64), iov1(buf_a + 64, n - 64)};
	hex("7311F68CACEF4D4261AB831D380C92A0", want);
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_AES_GMAC, key, v, 2, sig), 0);
	CHECK_MEM(sig, want, 16);

	n = hex(read_from_client, buf_b);
	CHECK_EQ(n, 104);
	struct iovec w[1] = {iov1(buf_b, n)};
	hex("723E75D479157C8C5A529DF252EC558F", want);
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_AES_GMAC, key, w, 1, sig), 0);
	CHECK_MEM(sig, want, 16);
	hex("A3DFB8CDA5DEC42B74BF1F9522354E8E163DAE5B02CC0497DC2041289F87F0DF", want);
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_HMAC_SHA256, key, w, 1, sig), 0);
	CHECK_MEM(sig, want, 16);
	hex("E78D52EC709E3BEB76D560EF0CE7DB1E", want);
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_AES_CMAC, key, w, 1, sig), 0);
	CHECK_MEM(sig, want, 16);

	/* GMAC needs the whole header in the first iov. */
	struct iovec shortv[2] = {iov1(buf_b, 32), iov1(buf_b + 32, n - 32)};
	CHECK_EQ(smb_sign_pdu(SMB2_SIGNING_AES_GMAC, key, shortv, 2, sig), -EINVAL);
	CHECK_EQ(smb_sign_pdu(0x7777, key, w, 1, sig), -EINVAL);
}

static void test_random(void)
{
	uint8_t a[32] = {0}, b[32] = {0};

	CHECK_EQ(smb_random_bytes(a, sizeof(a)), 0);
	CHECK_EQ(smb_random_bytes(b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK_EQ(smb_random_bytes(a, 0), 0);
}

/* Signing from several threads at once (the MAC templates are shared) gives
 * the same answers as from one. */
struct sign_job {
	uint8_t want[3][16];
	int bad;
};

static void *sign_worker(void *arg)
{
	struct sign_job *job = arg;
	uint8_t msg[200], key[16], sig[16];
	struct iovec v = {msg, sizeof(msg)};

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	memset(key, 0x3c, 16);
	for (int iter = 0; iter < 2000; iter++) {
		for (uint16_t alg = 0; alg < 3; alg++) {
			if (smb_sign_pdu(alg, key, &v, 1, sig) || memcmp(sig, job->want[alg], 16))
				job->bad++;
		}
	}
	return NULL;
}

static void test_threads(void)
{
	struct sign_job job = {.bad = 0};
	uint8_t msg[200], key[16];
	struct iovec v = {msg, sizeof(msg)};
	pthread_t t[4];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	memset(key, 0x3c, 16);
	for (uint16_t alg = 0; alg < 3; alg++)
		CHECK_EQ(smb_sign_pdu(alg, key, &v, 1, job.want[alg]), 0);
	struct sign_job jobs[4];
	for (int i = 0; i < 4; i++) {
		jobs[i] = job;
		CHECK_EQ(pthread_create(&t[i], NULL, sign_worker, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK_EQ(jobs[i].bad, 0);
	}
}

/* SMB3 ciphers: AES-128-GCM against the GCM specification's test case 2
 * (zero key and IV, one zero block), and for all four a round trip in
 * place, and a flipped bit in the ciphertext, the AAD or the tag refused. */
static void test_aead(void)
{
	static const uint8_t c2[16] = {0x03, 0x88, 0xda, 0xce, 0x60, 0xb6, 0xa3, 0x92,
	                               0xf3, 0x28, 0xc2, 0xb9, 0x71, 0xb2, 0xfe, 0x78};
	static const uint8_t t2[16] = {0xab, 0x6e, 0x47, 0xd4, 0x2c, 0xec, 0x13, 0xbd,
	                               0xf5, 0x3a, 0x67, 0xb2, 0x12, 0x57, 0xbd, 0xdf};
	uint8_t key[32] = {0}, nonce[12] = {0}, buf[16] = {0}, tag[16];
	CHECK_EQ(smb_aead_encrypt(SMB2_ENCRYPTION_AES128_GCM, key, nonce, NULL, 0, buf, 16, tag),
	         0);
	CHECK_MEM(buf, c2, 16);
	CHECK_MEM(tag, t2, 16);
	CHECK_EQ(smb_aead_decrypt(SMB2_ENCRYPTION_AES128_GCM, key, nonce, NULL, 0, buf, 16, tag),
	         0);
	CHECK(buf[0] == 0 && buf[15] == 0);

	static const uint16_t ciphers[] = {SMB2_ENCRYPTION_AES128_CCM, SMB2_ENCRYPTION_AES128_GCM,
	                                   SMB2_ENCRYPTION_AES256_CCM, SMB2_ENCRYPTION_AES256_GCM};
	static uint8_t plain[70000], work[70000];
	uint8_t aad[32];
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < 32; i++) {
		key[i] = (uint8_t)(0xa0 + i);
		aad[i] = (uint8_t)i;
	}
	for (int c = 0; c < 4; c++) {
		uint16_t cph = ciphers[c];
		size_t klen = smb_cipher_key_len(cph), nlen = smb_cipher_nonce_len(cph);
		CHECK(klen == (c < 2 ? 16u : 32u));
		CHECK(nlen == (c % 2 ? 12u : 11u));
		memset(nonce, 0x11, sizeof(nonce));
		memcpy(work, plain, sizeof(plain));
		CHECK_EQ(smb_aead_encrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag), 0);
		CHECK(memcmp(work, plain, 64) != 0);
		uint8_t saved[70000];
		memcpy(saved, work, sizeof(work));
		CHECK_EQ(smb_aead_decrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag), 0);
		CHECK_MEM(work, plain, sizeof(plain));
		/* tampering: ciphertext, AAD, tag, key length matters */
		memcpy(work, saved, sizeof(work));
		work[40000] ^= 1;
		CHECK_EQ(smb_aead_decrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag),
		         -EBADMSG);
		memcpy(work, saved, sizeof(work));
		aad[5] ^= 0x80;
		CHECK_EQ(smb_aead_decrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag),
		         -EBADMSG);
		aad[5] ^= 0x80;
		memcpy(work, saved, sizeof(work));
		tag[15] ^= 1;
		CHECK_EQ(smb_aead_decrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag),
		         -EBADMSG);
		tag[15] ^= 1;
		memcpy(work, saved, sizeof(work));
		nonce[3] ^= 1;
		CHECK_EQ(smb_aead_decrypt(cph, key, nonce, aad, 32, work, sizeof(work), tag),
		         -EBADMSG);
	}
	CHECK_EQ(smb_cipher_key_len(0), 0);
	CHECK_EQ(smb_aead_encrypt(9, key, nonce, NULL, 0, buf, 16, tag), -EINVAL);
}

int main(void)
{
	RUN(test_init);
	RUN(test_aead);
	RUN(test_md4);
	RUN(test_md5_sha512);
	RUN(test_preauth_sha512);
	RUN(test_hmac);
	RUN(test_cmac);
	RUN(test_gmac);
	RUN(test_rc4);
	RUN(test_rc4_stream);
	RUN(test_kdf);
	RUN(test_smb311_session_setup_signature);
	RUN(test_sign_pdu_gmac_hmac);
	RUN(test_random);
	RUN(test_threads);
	return check_report();
}
