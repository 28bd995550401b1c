/* tests/unit/auth/test_ntlmssp.c — NTLMSSP/NTLMv2 against [MS-NLMP] 4.2.4,
 * plus a server-side re-computation of everything the client sends and
 * hostile CHALLENGE messages. */
#include <errno.h>
#include <stdlib.h>

#include <talloc.h>

#include "auth/ntlmssp.h"
#include "common/crypto.h"
#include "tests/unit/check.h"

static uint8_t want[2048];

static size_t hex(const char *h, uint8_t *out)
{
	return check_hex(h, out, 2048);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

/* A security buffer of an AUTHENTICATE message, checked to lie inside it. */
static const uint8_t *field(const uint8_t *msg, size_t len, size_t hdr, uint16_t *flen)
{
	uint16_t l = get16(msg + hdr);
	uint32_t o = get32(msg + hdr + 4);

	CHECK(o <= len && len - o >= l);
	*flen = l;
	return msg + o;
}

/* [MS-NLMP] 4.2.1 common values and 4.2.4 AV pairs. */
static const char *av_424 = "02000c0044006f006d00610069006e00"
                            "01000c005300650072007600650072000000 0000";
#define FLAGS_424 0xe28a8233u

/* CHALLENGE_MESSAGE with the given flags and AV pairs; TargetName "Server". */
static size_t make_challenge(uint8_t *msg, uint32_t flags, const uint8_t *av, size_t avlen)
{
	static const uint8_t server[12] = {'S', 0, 'e', 0, 'r', 0, 'v', 0, 'e', 0, 'r', 0};

	memset(msg, 0, 56);
	memcpy(msg, "NTLMSSP", 8);
	put32(msg + 8, 2);
	put16(msg + 12, 12);
	put16(msg + 14, 12);
	put32(msg + 16, 56);
	put32(msg + 20, flags);
	hex("0123456789abcdef", msg + 24);
	put16(msg + 40, (uint16_t)avlen);
	put16(msg + 42, (uint16_t)avlen);
	put32(msg + 44, 68);
	hex("060070170000000f", msg + 48);
	memcpy(msg + 56, server, 12);
	memcpy(msg + 68, av, avlen);
	return 68 + avlen;
}

static void test_hashes(void)
{
	uint8_t nt[16], owf[16];

	CHECK_EQ(ntlmssp_nt_hash("Password", nt), 0);
	hex("a4f49c406510bdcab6824ee7c30fd852", want);
	CHECK_MEM(nt, want, 16);
	CHECK_EQ(ntlmssp_ntowfv2(nt, "User", "Domain", owf), 0);
	hex("0c868a403bfd7a93a3001ef22ef02e3f", want);
	CHECK_MEM(owf, want, 16);
	/* the user is upper-cased, the domain is not */
	uint8_t owf2[16];
	CHECK_EQ(ntlmssp_ntowfv2(nt, "uSeR", "Domain", owf2), 0);
	CHECK_MEM(owf2, want, 16);
	CHECK_EQ(ntlmssp_ntowfv2(nt, "User", "DOMAIN", owf2), 0);
	CHECK(memcmp(owf2, want, 16) != 0);
}

static void test_utf16(void)
{
	uint8_t out[16];

	CHECK_EQ(ntlmssp_utf16le("aé€😀", false, out, sizeof(out)), 10);
	hex("6100 e900 ac20 3dd8 00de", want);
	CHECK_MEM(out, want, 10);
	CHECK_EQ(ntlmssp_utf16le("aéÿжё", true, out, sizeof(out)), 10);
	hex("4100 c900 7801 1604 0104", want);
	CHECK_MEM(out, want, 10);
	CHECK_EQ(ntlmssp_utf16le("abc", false, out, 4), -ENOSPC);
	CHECK_EQ(ntlmssp_utf16le("\xc3", false, out, sizeof(out)), -EINVAL);
	CHECK_EQ(ntlmssp_utf16le("\xc0\x80", false, out, sizeof(out)), -EINVAL);
	CHECK_EQ(ntlmssp_utf16le("\xed\xa0\x80", false, out, sizeof(out)), -EINVAL);
	CHECK_EQ(ntlmssp_utf16le("\xf8\x88\x80\x80\x80", false, out, sizeof(out)), -EINVAL);
	CHECK_EQ(ntlmssp_utf16le("", false, out, 0), 0);
	CHECK_EQ(ntlmssp_utf16le(NULL, false, NULL, 0), 0);
}

/* [MS-NLMP] 4.2.4.1 and 4.2.4.2: the NTLMv2 computations on their own. */
static void test_v2_response_vectors(void)
{
	uint8_t nt[16], owf[16], av[64], sc[8], cc[8], resp[256], lm[24], sbk[16];
	size_t avlen = hex(av_424, av), nlen = 0;

	hex("0123456789abcdef", sc);
	memset(cc, 0xaa, 8);
	CHECK_EQ(ntlmssp_nt_hash("Password", nt), 0);
	CHECK_EQ(ntlmssp_ntowfv2(nt, "User", "Domain", owf), 0);
	CHECK_EQ(ntlmssp_v2_response(owf, sc, cc, 0, av, avlen, resp, sizeof(resp), &nlen, lm, sbk),
	         0);
	CHECK_EQ(nlen, 16 + 28 + avlen + 4);
	size_t wl = hex("68cd0ab851e51c96aabc927bebef6a1c"
	                "01010000000000000000000000000000aaaaaaaaaaaaaaaa00000000"
	                "02000c0044006f006d00610069006e0001000c005300650072007600650072000000"
	                "0000 00000000",
	                want);
	CHECK_EQ(wl, nlen);
	CHECK_MEM(resp, want, nlen);
	hex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa", want);
	CHECK_MEM(lm, want, 24);
	hex("8de40ccadbc14a82f15cb0ad0de95ca3", want);
	CHECK_MEM(sbk, want, 16);
	CHECK_EQ(ntlmssp_v2_response(owf, sc, cc, 0, av, avlen, resp, 50, &nlen, lm, sbk), -ENOSPC);
}

/* [MS-NLMP] 4.2.4.3: the AUTHENTICATE message's fields and the keys. */
static void test_authenticate_vectors(void)
{
	void *mem = talloc_new(NULL);
	uint8_t chal[256], av[64], neg[NTLMSSP_NEGOTIATE_LEN], cc[8], esk[16];
	uint64_t t0 = 0;
	size_t avlen = hex(av_424, av);
	size_t clen = make_challenge(chal, FLAGS_424, av, avlen);
	struct ntlmssp_client_params p = {
	    .user = "User",
	    .password = "Password",
	    .domain = "Domain",
	    .workstation = "COMPUTER",
	    .client_challenge_fixed = cc,
	    .exported_session_key_fixed = esk,
	    .timestamp_fixed = &t0,
	};
	struct ntlmssp_client_result res;
	uint8_t *auth;
	size_t alen;
	uint16_t l;
	const uint8_t *f;

	memset(cc, 0xaa, 8);
	memset(esk, 0x55, 16);
	CHECK_EQ(ntlmssp_negotiate_encode(neg, sizeof(neg), 0xe2088297u), NTLMSSP_NEGOTIATE_LEN);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), chal, clen, &auth, &alen, &res),
	    0);
	CHECK_MEM(auth, "NTLMSSP\0\3\0\0\0", 12);
	CHECK(!res.mic_sent); /* no MsvAvTimestamp in 4.2.4 */
	CHECK(!res.anonymous);

	f = field(auth, alen, 12, &l);
	CHECK_EQ(l, 24);
	hex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa", want);
	CHECK_MEM(f, want, 24);
	f = field(auth, alen, 20, &l);
	CHECK_EQ(l, 16 + 28 + avlen + 4);
	hex("68cd0ab851e51c96aabc927bebef6a1c01010000000000000000000000000000aaaaaaaaaaaaaaaa",
	    want);
	CHECK_MEM(f, want, 40);
	CHECK_MEM(f + 44, av, avlen);
	f = field(auth, alen, 28, &l);
	CHECK_EQ(l, 12);
	CHECK_MEM(f, "D\0o\0m\0a\0i\0n\0", 12);
	f = field(auth, alen, 36, &l);
	CHECK_EQ(l, 8);
	CHECK_MEM(f, "U\0s\0e\0r\0", 8);
	f = field(auth, alen, 44, &l);
	CHECK_EQ(l, 16);
	CHECK_MEM(f, "C\0O\0M\0P\0U\0T\0E\0R\0", 16);
	f = field(auth, alen, 52, &l);
	CHECK_EQ(l, 16);
	hex("c5dad2544fc9799094ce1ce90bc9d03e", want);
	CHECK_MEM(f, want, 16);
	CHECK_EQ(get32(auth + 60), (0xe2088297u & FLAGS_424) | NTLMSSP_NEGOTIATE_UNICODE);

	hex("8de40ccadbc14a82f15cb0ad0de95ca3", want);
	CHECK_MEM(res.session_base_key, want, 16);
	CHECK_MEM(res.exported_session_key, esk, 16);
	hex("4788dc861b4782f35d43fd98fe1a2d39", want);
	CHECK_MEM(res.keys.client_sign, want, 16);
	hex("59f600973cc4960a25480a7c196e4c58", want);
	CHECK_MEM(res.keys.client_seal, want, 16);
	static const uint8_t zero[16];
	CHECK_MEM(auth + 72, zero, 16); /* no MIC */
	talloc_free(mem);
}

/* [MS-NLMP] 4.2.4.4: sealing "Plaintext" with seq 0 yields ciphertext then
 * the checksum from one RC4 stream; checks the MAC's HMAC half and the keys. */
static void test_mac_vectors(void)
{
	uint8_t sign[16], seal[16], msg[18], seqmsg[22], hm[16], stream[26], sig[16];
	struct iovec iov = {seqmsg, sizeof(seqmsg)};

	hex("4788dc861b4782f35d43fd98fe1a2d39", sign);
	hex("59f600973cc4960a25480a7c196e4c58", seal);
	CHECK_EQ(ntlmssp_utf16le("Plaintext", false, msg, sizeof(msg)), 18);
	memset(seqmsg, 0, 4);
	memcpy(seqmsg + 4, msg, 18);
	CHECK_EQ(smb_hmac_md5(sign, 16, &iov, 1, hm), 0);
	memcpy(stream, msg, 18);
	memcpy(stream + 18, hm, 8);
	CHECK_EQ(smb_rc4(seal, 16, stream, stream, 26), 0);
	hex("54e50165bf1936dc996020c1811b0f06fb5f", want);
	CHECK_MEM(stream, want, 18);
	hex("7fb38ec5c55d4976", want);
	CHECK_MEM(stream + 18, want, 8);

	/* ntlmssp_mac: version 1, checksum, seq; without KEY_EXCH the checksum
	 * is the plain HMAC. */
	CHECK_EQ(ntlmssp_mac(sign, seal, false, 0, msg, 18, sig), 0);
	CHECK_MEM(sig, "\1\0\0\0", 4);
	CHECK_MEM(sig + 4, hm, 8);
	CHECK_MEM(sig + 12, "\0\0\0\0", 4);
	CHECK_EQ(ntlmssp_mac(sign, seal, true, 0, msg, 18, sig), 0);
	memcpy(stream, hm, 8);
	CHECK_EQ(smb_rc4(seal, 16, stream, stream, 8), 0);
	CHECK_MEM(sig + 4, stream, 8);
	CHECK_EQ(ntlmssp_mac(sign, seal, true, 7, msg, 18, sig), 0);
	CHECK_EQ(get32(sig + 12), 7);
}

/* The [MS-NLMP] 4.2.4 context: RandomSessionKey 0x55 x 16, the 4.2.4
 * flags (with KEY_EXCH and extended session security). */
static void sec_424_result(struct ntlmssp_client_result *res)
{
	memset(res, 0, sizeof(*res));
	res->flags = 0xe28a8233u;
	memset(res->exported_session_key, 0x55, 16);
	CHECK_EQ(ntlmssp_derive_keys(res->exported_session_key, res->flags, &res->keys), 0);
}

/* The peer's view of the same context: its sending keys are our receiving
 * ones. */
static void sec_peer(const struct ntlmssp_client_result *res, struct ntlmssp_client_result *peer)
{
	*peer = *res;
	memcpy(peer->keys.client_sign, res->keys.server_sign, 16);
	memcpy(peer->keys.server_sign, res->keys.client_sign, 16);
	memcpy(peer->keys.client_seal, res->keys.server_seal, 16);
	memcpy(peer->keys.server_seal, res->keys.client_seal, 16);
}

/* [MS-NLMP] 4.2.4.4 through the continuing context: seal of "Plaintext"
 * with seq 0 gives the spec's ciphertext and signature; then a second
 * seal goes on in the same RC4 stream with seq 1. */
static void test_sec_vectors(void)
{
	struct ntlmssp_client_result res;
	struct ntlmssp_sec s = {0}, s2 = {0};
	uint8_t msg[18], buf[18], sig[16], sig2[16], stream[64];

	sec_424_result(&res);
	CHECK_EQ(ntlmssp_sec_init(&s, &res), 0);
	CHECK_EQ(ntlmssp_utf16le("Plaintext", false, msg, sizeof(msg)), 18);
	memcpy(buf, msg, 18);
	CHECK_EQ(ntlmssp_sec_seal(&s, buf, 18, buf, 18, sig), 0);
	hex("54e50165bf1936dc996020c1811b0f06fb5f", want);
	CHECK_MEM(buf, want, 18);
	hex("010000007fb38ec5c55d497600000000", want);
	CHECK_MEM(sig, want, 16);
	CHECK_EQ(s.send_seq, 1);

	/* the second message: the handle has moved on by 18 + 8 bytes */
	memcpy(buf, msg, 18);
	CHECK_EQ(ntlmssp_sec_seal(&s, buf, 18, buf, 18, sig2), 0);
	CHECK_EQ(get32(sig2 + 12), 1);
	memset(stream, 0, sizeof(stream));
	CHECK_EQ(smb_rc4(res.keys.client_seal, 16, stream, stream, 26 + 18), 0);
	for (size_t i = 0; i < 18; i++)
		CHECK_EQ(buf[i], msg[i] ^ stream[26 + i]);
	CHECK(memcmp(sig2 + 4, sig + 4, 8) != 0);

	/* sign only: the same checksum the one-shot MAC gives for seq 0 */
	CHECK_EQ(ntlmssp_sec_init(&s2, &res), 0);
	CHECK_EQ(ntlmssp_sec_sign(&s2, msg, 18, sig), 0);
	CHECK_EQ(ntlmssp_mac(res.keys.client_sign, res.keys.client_seal, true, 0, msg, 18, sig2),
	         0);
	CHECK_MEM(sig, sig2, 16);
	ntlmssp_sec_free(&s);
	ntlmssp_sec_free(&s2);
	ntlmssp_sec_free(&s2); /* idempotent */

	/* no extended session security, or anonymous: refused */
	res.flags &= ~NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY;
	CHECK_EQ(ntlmssp_sec_init(&s, &res), -EPROTONOSUPPORT);
	sec_424_result(&res);
	res.anonymous = true;
	CHECK_EQ(ntlmssp_sec_init(&s, &res), -EPROTONOSUPPORT);
	ntlmssp_sec_free(&s);
}

/* Both directions over several messages, signed and sealed in turn, with
 * and without KEY_EXCH: each side's seq and RC4 state advance together;
 * a tampered byte, a replay or a skipped message fails with -EBADMSG. */
static void test_sec_roundtrip(void)
{
	for (int kx = 0; kx < 2; kx++) {
		struct ntlmssp_client_result res, peer;
		struct ntlmssp_sec c, sv;
		sec_424_result(&res);
		if (!kx)
			res.flags &= ~NTLMSSP_NEGOTIATE_KEY_EXCH;
		sec_peer(&res, &peer);
		CHECK_EQ(ntlmssp_sec_init(&c, &res), 0);
		CHECK_EQ(ntlmssp_sec_init(&sv, &peer), 0);
		for (int i = 0; i < 6; i++) {
			uint8_t whole[100], copy[100], sig[16];
			for (size_t k = 0; k < sizeof(whole); k++)
				whole[k] = (uint8_t)(k * 7 + (size_t)i);
			memcpy(copy, whole, sizeof(whole));
			struct ntlmssp_sec *tx = (i % 2) ? &sv : &c, *rx = (i % 2) ? &c : &sv;
			if (i % 3 == 2) {
				/* seal bytes 24..80 of the message */
				CHECK_EQ(ntlmssp_sec_seal(tx, whole + 24, 56, whole, 100, sig), 0);
				CHECK(memcmp(whole + 24, copy + 24, 56) != 0);
				CHECK_MEM(whole, copy, 24);
				CHECK_EQ(ntlmssp_sec_unseal(rx, whole + 24, 56, whole, 100, sig),
				         0);
				CHECK_MEM(whole, copy, 100);
			} else {
				CHECK_EQ(ntlmssp_sec_sign(tx, whole, 100, sig), 0);
				CHECK_EQ(ntlmssp_sec_verify(rx, whole, 100, sig), 0);
			}
			CHECK_EQ(get32(sig + 12), (uint32_t)(i / 2));
		}
		CHECK_EQ(c.send_seq, 3);
		CHECK_EQ(c.recv_seq, 3);
		CHECK_EQ(sv.send_seq, 3);

		/* a flipped byte in the message */
		uint8_t m[40] = {1, 2, 3}, sig[16];
		CHECK_EQ(ntlmssp_sec_sign(&c, m, 40, sig), 0);
		m[39] ^= 1;
		CHECK_EQ(ntlmssp_sec_verify(&sv, m, 40, sig), -EBADMSG);
		ntlmssp_sec_free(&sv);

		/* out of order: a fresh receiver wants seq 0, gets seq 4 */
		CHECK_EQ(ntlmssp_sec_init(&sv, &peer), 0);
		m[0] = 9;
		uint8_t m2[40];
		memcpy(m2, m, 40);
		CHECK_EQ(ntlmssp_sec_sign(&c, m, 40, sig), 0);
		CHECK_EQ(get32(sig + 12), 4);
		CHECK_EQ(ntlmssp_sec_verify(&sv, m, 40, sig), -EBADMSG);
		/* the right MAC with a wrong seq field */
		ntlmssp_sec_free(&sv);
		ntlmssp_sec_free(&c);
		CHECK_EQ(ntlmssp_sec_init(&c, &res), 0);
		CHECK_EQ(ntlmssp_sec_init(&sv, &peer), 0);
		CHECK_EQ(ntlmssp_sec_sign(&c, m2, 40, sig), 0);
		sig[15] ^= 1;
		CHECK_EQ(ntlmssp_sec_verify(&sv, m2, 40, sig), -EBADMSG);
		ntlmssp_sec_free(&c);
		ntlmssp_sec_free(&sv);
	}
}

/* Recompute, as a server would, everything in an AUTHENTICATE built against a
 * CHALLENGE carrying MsvAvTimestamp (so with MIC and MsvAvFlags). */
static void test_authenticate_with_mic(void)
{
	void *mem = talloc_new(NULL);
	uint8_t av[128], chal[256], neg[NTLMSSP_NEGOTIATE_LEN];
	size_t avlen = 0;
	struct ntlmssp_client_params p = {
	    .user = "alice",
	    .password = "S3cr\xc3\xa9t!",
	    .domain = "",
	    .workstation = "",
	    .server_name = "fs1",
	};
	struct ntlmssp_client_result res;
	uint8_t *auth;
	size_t alen, clen;
	uint16_t l, ntl;
	const uint8_t *f, *nt, *v;

	avlen += hex("02000800 4400 4f00 4d00 3100", av + avlen); /* NbDomain "DOM1" */
	avlen += hex("0700 0800 0011223344556677", av + avlen);   /* Timestamp */
	avlen += hex("0600 0400 01000000", av + avlen);           /* Flags: constrained */
	avlen += hex("0000 0000", av + avlen);
	clen = make_challenge(chal, FLAGS_424, av, avlen);
	CHECK_EQ(ntlmssp_negotiate_encode(neg, sizeof(neg), 0xe2888235u), NTLMSSP_NEGOTIATE_LEN);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), chal, clen, &auth, &alen, &res),
	    0);
	CHECK(res.mic_sent);

	/* LM is Z(24) when the server sent a timestamp */
	static const uint8_t zero[24];
	f = field(auth, alen, 12, &l);
	CHECK_EQ(l, 24);
	CHECK_MEM(f, zero, 24);

	/* the temp echoes the timestamp and carries MsvAvFlags|MIC and the SPN */
	nt = field(auth, alen, 20, &ntl);
	CHECK(ntl > 16 + 28 + 4);
	hex("0011223344556677", want);
	CHECK_MEM(nt + 16 + 8, want, 8);
	const uint8_t *ti = nt + 16 + 28;
	size_t tilen = ntl - 16 - 28 - 4;
	CHECK_EQ(ntlmssp_av_find(ti, tilen, MSV_AV_FLAGS, &v, &l), 1);
	CHECK_EQ(l, 4);
	CHECK_EQ(get32(v), 0x3);
	CHECK_EQ(ntlmssp_av_find(ti, tilen, MSV_AV_TARGET_NAME, &v, &l), 1);
	CHECK_EQ(l, 16);
	CHECK_MEM(v,
	          "c\0i\0f\0s\0/\0f\0s\0"
	          "1\0",
	          16);
	CHECK_EQ(ntlmssp_av_find(ti, tilen, MSV_AV_NB_DOMAIN_NAME, &v, &l), 1);

	/* server side: NTProofStr, SessionBaseKey, ExportedSessionKey, MIC */
	uint8_t nth[16], owf[16], proof[16], sbk[16], esk[16], mic[16];
	CHECK_EQ(ntlmssp_nt_hash("S3cr\xc3\xa9t!", nth), 0);
	CHECK_EQ(ntlmssp_ntowfv2(nth, "ALICE", "", owf), 0);
	struct iovec pin[2] = {{chal + 24, 8}, {(void *)(nt + 16), ntl - 16u}};
	CHECK_EQ(smb_hmac_md5(owf, 16, pin, 2, proof), 0);
	CHECK_MEM(proof, nt, 16);
	struct iovec sin[1] = {{proof, 16}};
	CHECK_EQ(smb_hmac_md5(owf, 16, sin, 1, sbk), 0);
	CHECK_MEM(sbk, res.session_base_key, 16);
	f = field(auth, alen, 52, &l);
	CHECK_EQ(l, 16);
	CHECK_EQ(smb_rc4(sbk, 16, f, esk, 16), 0);
	CHECK_MEM(esk, res.exported_session_key, 16);
	uint8_t *copy = talloc_memdup(mem, auth, alen);
	memset(copy + 72, 0, 16);
	struct iovec min[3] = {{neg, sizeof(neg)}, {chal, clen}, {copy, alen}};
	CHECK_EQ(smb_hmac_md5(esk, 16, min, 3, mic), 0);
	CHECK_MEM(auth + 72, mic, 16);
	/* empty domain and workstation are sent as empty fields */
	field(auth, alen, 28, &l);
	CHECK_EQ(l, 0);
	field(auth, alen, 44, &l);
	CHECK_EQ(l, 0);
	talloc_free(mem);
}

static void test_anonymous(void)
{
	void *mem = talloc_new(NULL);
	uint8_t av[64], chal[256], neg[NTLMSSP_NEGOTIATE_LEN];
	size_t avlen = hex(av_424, av), clen = make_challenge(chal, FLAGS_424, av, avlen);
	struct ntlmssp_client_params p = {.user = "", .password = ""};
	struct ntlmssp_client_result res;
	uint8_t *auth;
	size_t alen;
	uint16_t l;

	ntlmssp_negotiate_encode(neg, sizeof(neg), 0xe2088297u);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), chal, clen, &auth, &alen, &res),
	    0);
	CHECK(res.anonymous);
	field(auth, alen, 12, &l);
	CHECK_EQ(l, 1);
	field(auth, alen, 20, &l);
	CHECK_EQ(l, 0);
	CHECK(get32(auth + 60) & NTLMSSP_NEGOTIATE_ANONYMOUS);
	talloc_free(mem);
}

static void test_challenge_decode_hostile(void)
{
	uint8_t av[64], chal[256], tmp[256];
	size_t avlen = hex(av_424, av), clen = make_challenge(chal, FLAGS_424, av, avlen);
	struct ntlmssp_challenge c;
	const uint8_t *v;
	uint16_t l;

	CHECK_EQ(ntlmssp_challenge_decode(chal, clen, &c), 0);
	CHECK_EQ(c.flags, FLAGS_424);
	CHECK_EQ(c.target_info_len, avlen);
	CHECK_EQ(c.target_name_len, 12);
	CHECK_EQ(ntlmssp_av_find(c.target_info, c.target_info_len, MSV_AV_NB_COMPUTER_NAME, &v, &l),
	         1);
	CHECK_EQ(l, 12);
	CHECK_EQ(ntlmssp_av_find(c.target_info, c.target_info_len, MSV_AV_TIMESTAMP, &v, &l), 0);

	/* every truncation fails: the target info is last */
	for (size_t n = 0; n < clen; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		memcpy(copy, chal, n);
		CHECK_EQ(ntlmssp_challenge_decode(copy, n, &c), -EBADMSG);
		free(copy);
	}
	/* wrong signature or type */
	memcpy(tmp, chal, clen);
	tmp[0] = 'X';
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen, &c), -EBADMSG);
	memcpy(tmp, chal, clen);
	tmp[8] = 3;
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen, &c), -EBADMSG);
	/* target info offset past the end, and offset + len wrapping */
	memcpy(tmp, chal, clen);
	put32(tmp + 44, 0xfffffff0u);
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen, &c), -EBADMSG);
	memcpy(tmp, chal, clen);
	put16(tmp + 40, 0xffff);
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen, &c), -EBADMSG);
	/* an AV pair whose length runs past the list */
	memcpy(tmp, chal, clen);
	put16(tmp + 68 + 2, 0xfff0);
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen, &c), -EBADMSG);
	/* a list without MsvAvEOL */
	memcpy(tmp, chal, clen);
	put16(tmp + 40, (uint16_t)(avlen - 4));
	CHECK_EQ(ntlmssp_challenge_decode(tmp, clen - 4, &c), -EBADMSG);
	/* AV pair list: odd trailing bytes and a header cut in half */
	CHECK_EQ(ntlmssp_av_find(av, 2, MSV_AV_EOL, &v, &l), -EBADMSG);
	CHECK_EQ(ntlmssp_av_find(NULL, 0, MSV_AV_EOL, &v, &l), -EBADMSG);
	uint8_t eol[4] = {0};
	CHECK_EQ(ntlmssp_av_find(eol, 4, MSV_AV_EOL, &v, &l), 1);
	CHECK_EQ(l, 0);
	/* target info absent: decodes, and the client still answers */
	memcpy(tmp, chal, 68);
	put16(tmp + 40, 0);
	put16(tmp + 42, 0);
	CHECK_EQ(ntlmssp_challenge_decode(tmp, 68, &c), 0);
	CHECK(c.target_info == NULL);
}

static void test_client_rejects(void)
{
	void *mem = talloc_new(NULL);
	uint8_t av[64], chal[256], neg[NTLMSSP_NEGOTIATE_LEN];
	size_t avlen = hex(av_424, av);
	size_t clen = make_challenge(chal, FLAGS_424 & ~NTLMSSP_NEGOTIATE_UNICODE, av, avlen);
	struct ntlmssp_client_params p = {.user = "u", .password = "p"};
	struct ntlmssp_client_result res;
	uint8_t *auth;
	size_t alen;

	ntlmssp_negotiate_encode(neg, sizeof(neg), 0xe2088297u);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), chal, clen, &auth, &alen, &res),
	    -EPROTONOSUPPORT);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), chal, 20, &auth, &alen, &res),
	    -EBADMSG);
	/* a huge (64 KiB) target info cannot be echoed in a 16-bit field */
	uint8_t *big = talloc_zero_size(mem, 68 + 0xffff);
	uint8_t *bav = talloc_zero_size(mem, 0xffff);
	put16(bav, MSV_AV_NB_DOMAIN_NAME);
	put16(bav + 2, 0xffff - 8);
	clen = make_challenge(big, FLAGS_424, bav, 0xffff);
	CHECK_EQ(
	    ntlmssp_client_authenticate(mem, &p, neg, sizeof(neg), big, clen, &auth, &alen, &res),
	    -EBADMSG);
	talloc_free(mem);
}

int main(void)
{
	if (smb_crypto_init()) {
		fprintf(stderr, "crypto init failed\n");
		return 1;
	}
	RUN(test_hashes);
	RUN(test_utf16);
	RUN(test_v2_response_vectors);
	RUN(test_authenticate_vectors);
	RUN(test_mac_vectors);
	RUN(test_sec_vectors);
	RUN(test_sec_roundtrip);
	RUN(test_authenticate_with_mic);
	RUN(test_anonymous);
	RUN(test_challenge_decode_hostile);
	RUN(test_client_rejects);
	return check_report();
}
