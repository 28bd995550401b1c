/* auth/ntlmssp.c — NTLMSSP messages and NTLMv2 ([MS-NLMP]), client side.
 *
 * Owns: the CHALLENGE decoder and AV pair walker (hostile input), the
 * NEGOTIATE and AUTHENTICATE encoders, the NTLMv2 response and key
 * computations, and the NTLMSSP MAC used for SPNEGO's mechListMIC.  All
 * cryptography goes through common/crypto.h.  Passwords and keys are wiped
 * from the stack before return and never logged.
 */
#include "auth/ntlmssp.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include <talloc.h>

#include "common/crypto.h"
#include "common/cursor.h"
#include "common/secret.h"

static const uint8_t ntlmssp_sig[8] = {'N', 'T', 'L', 'M', 'S', 'S', 'P', 0};

/* Windows 10, NTLMSSP revision 15 ([MS-NLMP] 2.2.2.10). */
static const uint8_t ntlmssp_version[8] = {10, 0, 0x61, 0x4a, 0, 0, 0, 0x0f};

/* ---- reading and writing: the common cursor (common/cursor.h) ----------- */

/* A security buffer (Len, MaxLen, Offset) at @off pointing inside the message. */
static const uint8_t *rd_secbuf(struct smb_rd *r, size_t off, uint16_t *len)
{
	uint16_t l = smb_rd_u16_at(r, off);
	uint32_t o = smb_rd_u32_at(r, off + 4);

	if (r->err)
		return NULL;
	if (l == 0) {
		*len = 0;
		return NULL;
	}
	if (!smb_rd_range_ok(r, o, l)) {
		r->err = -EBADMSG;
		return NULL;
	}
	*len = l;
	return r->base + o;
}

static void put_secbuf(uint8_t *p, uint16_t len, uint32_t off)
{
	smb_put_le16(p, len);
	smb_put_le16(p + 2, len);
	smb_put_le32(p + 4, off);
}

/* ---- CHALLENGE and AV pairs --------------------------------------------- */

int ntlmssp_challenge_decode(const uint8_t *msg, size_t len, struct ntlmssp_challenge *c)
{
	struct smb_rd r;

	smb_rd_init(&r, msg, len);
	memset(c, 0, sizeof(*c));
	/* Signature, MessageType, TargetNameFields, NegotiateFlags,
	 * ServerChallenge, Reserved, TargetInfoFields: 48 bytes at least. */
	if (!msg || len < 48 || memcmp(msg, ntlmssp_sig, 8) != 0 || smb_rd_u32_at(&r, 8) != 2)
		return -EBADMSG;
	c->target_name = rd_secbuf(&r, 12, &c->target_name_len);
	c->flags = smb_rd_u32_at(&r, 20);
	memcpy(c->server_challenge, msg + 24, 8);
	c->target_info = rd_secbuf(&r, 40, &c->target_info_len);
	if (r.err)
		return -EBADMSG;
	if (c->target_info) {
		const uint8_t *v;
		uint16_t vlen;

		/* Validate the list once here so users can walk it blindly. */
		if (ntlmssp_av_find(c->target_info, c->target_info_len, MSV_AV_EOL, &v, &vlen) < 0)
			return -EBADMSG;
	}
	return 0;
}

int ntlmssp_av_next(const uint8_t *av, size_t len, size_t *off, uint16_t *id, const uint8_t **val,
                    uint16_t *vlen)
{
	struct smb_rd r;
	uint16_t i, l;

	if (!av)
		return -EBADMSG;
	smb_rd_init(&r, av, len);
	i = smb_rd_u16_at(&r, *off);
	l = smb_rd_u16_at(&r, *off + 2);
	if (r.err || !smb_rd_range_ok(&r, *off + 4, l))
		return -EBADMSG;
	*id = i;
	*vlen = l;
	*val = av + *off + 4;
	*off += 4 + (size_t)l;
	return i == MSV_AV_EOL ? 0 : 1;
}

int ntlmssp_av_find(const uint8_t *av, size_t len, uint16_t id, const uint8_t **val, uint16_t *vlen)
{
	size_t off = 0;
	int found = 0;

	for (;;) {
		const uint8_t *v;
		uint16_t i, l;
		int rc = ntlmssp_av_next(av, len, &off, &i, &v, &l);

		if (rc < 0)
			return rc;
		if (!found && i == id) {
			*val = v;
			*vlen = l;
			found = 1;
		}
		if (rc == 0)
			return found;
	}
}

/* ---- strings ------------------------------------------------------------ */

static uint32_t upcase(uint32_t c)
{
	if (c >= 'a' && c <= 'z')
		return c - 0x20;
	if (c < 0x80)
		return c;
	if ((c >= 0xe0 && c <= 0xfe && c != 0xf7))
		return c - 0x20;
	if (c == 0xff)
		return 0x178;
	if (c >= 0x100 && c <= 0x17f) {
		/* Latin Extended-A alternates upper/lower, with the parity of
		 * the pairs flipping between U+0138 and U+0149 and after U+0178. */
		if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
			return (c & 1) ? c : c - 1;
		if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x178 || c == 0x17f)
			return c;
		return (c & 1) ? c - 1 : c;
	}
	if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2)
		return c - 0x20;
	if (c >= 0x430 && c <= 0x44f)
		return c - 0x20;
	if (c >= 0x450 && c <= 0x45f)
		return c - 0x50;
	return c;
}

ssize_t ntlmssp_utf16le(const char *str, bool upper, uint8_t *out, size_t cap)
{
	const uint8_t *s = (const uint8_t *)(str ? str : "");
	size_t n = 0;

	while (*s) {
		uint32_t c;
		int more;

		if (s[0] < 0x80) {
			c = s[0];
			more = 0;
		} else if ((s[0] & 0xe0) == 0xc0) {
			c = s[0] & 0x1f;
			more = 1;
		} else if ((s[0] & 0xf0) == 0xe0) {
			c = s[0] & 0x0f;
			more = 2;
		} else if ((s[0] & 0xf8) == 0xf0) {
			c = s[0] & 0x07;
			more = 3;
		} else {
			return -EINVAL;
		}
		for (int i = 1; i <= more; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return -EINVAL;
			c = (c << 6) | (s[i] & 0x3f);
		}
		/* overlong forms, surrogates and values past U+10FFFF */
		if ((more == 1 && c < 0x80) || (more == 2 && c < 0x800) ||
		    (more == 3 && c < 0x10000) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return -EINVAL;
		s += 1 + more;
		if (upper)
			c = upcase(c);
		if (c >= 0x10000) {
			if (out && cap - n < 4)
				return -ENOSPC;
			if (out) {
				smb_put_le16(out + n, (uint16_t)(0xd800 + ((c - 0x10000) >> 10)));
				smb_put_le16(out + n + 2,
				             (uint16_t)(0xdc00 + ((c - 0x10000) & 0x3ff)));
			}
			n += 4;
		} else {
			if (out && cap - n < 2)
				return -ENOSPC;
			if (out)
				smb_put_le16(out + n, (uint16_t)c);
			n += 2;
		}
		if (n > 0xfff0)
			return -EINVAL; /* no NTLMSSP field is this long */
	}
	return (ssize_t)n;
}

/* UTF-16LE copy of @s in a talloc buffer under @mem. */
static int utf16_dup(void *mem, const char *s, bool upper, uint8_t **out, size_t *len)
{
	ssize_t n = ntlmssp_utf16le(s, upper, NULL, 0);

	if (n < 0)
		return (int)n;
	*out = talloc_size(mem, n ? (size_t)n : 1);
	if (!*out)
		return -ENOMEM;
	*len = (size_t)n;
	if (n && ntlmssp_utf16le(s, upper, *out, (size_t)n) != n)
		return -EINVAL;
	return 0;
}

/* ---- NTLMv2 ------------------------------------------------------------- */

int ntlmssp_nt_hash(const char *password, uint8_t out[16])
{
	ssize_t n = ntlmssp_utf16le(password, false, NULL, 0);
	uint8_t *buf;
	int rc;

	if (n < 0)
		return (int)n;
	buf = talloc_size(NULL, n ? (size_t)n : 1);
	if (!buf)
		return -ENOMEM;
	ntlmssp_utf16le(password, false, buf, (size_t)n);
	rc = smb_md4(buf, (size_t)n, out);
	smb_wipe(buf, (size_t)n);
	talloc_free(buf);
	return rc;
}

int ntlmssp_ntowfv2(const uint8_t nt_hash[16], const char *user, const char *domain,
                    uint8_t out[16])
{
	void *mem = talloc_new(NULL);
	uint8_t *u, *d;
	size_t ulen, dlen;
	int rc;

	if (!mem)
		return -ENOMEM;
	rc = utf16_dup(mem, user, true, &u, &ulen);
	if (!rc)
		rc = utf16_dup(mem, domain, false, &d, &dlen);
	if (!rc) {
		struct iovec iov[2] = {{u, ulen}, {d, dlen}};

		rc = smb_hmac_md5(nt_hash, 16, iov, 2, out);
	}
	talloc_free(mem);
	return rc;
}

int ntlmssp_v2_response(const uint8_t response_key[16], const uint8_t server_challenge[8],
                        const uint8_t client_challenge[8], uint64_t timestamp,
                        const uint8_t *target_info, size_t target_info_len, uint8_t *nt_resp,
                        size_t nt_cap, size_t *nt_len, uint8_t lm_resp[24],
                        uint8_t session_base_key[16])
{
	size_t temp_len = 28 + target_info_len + 4;
	uint8_t *temp = nt_resp + 16;
	int rc;

	if (nt_cap < 16 || nt_cap - 16 < temp_len)
		return -ENOSPC;
	/* temp = RespType, HiRespType, Z(6), Time, ClientChallenge, Z(4),
	 *        ServerName (the AV pairs), Z(4) */
	temp[0] = 1;
	temp[1] = 1;
	memset(temp + 2, 0, 6);
	smb_put_le64(temp + 8, timestamp);
	memcpy(temp + 16, client_challenge, 8);
	memset(temp + 24, 0, 4);
	if (target_info_len)
		memcpy(temp + 28, target_info, target_info_len);
	memset(temp + 28 + target_info_len, 0, 4);

	struct iovec proof_in[2] = {{(void *)server_challenge, 8}, {temp, temp_len}};
	rc = smb_hmac_md5(response_key, 16, proof_in, 2, nt_resp);
	if (rc)
		return rc;
	*nt_len = 16 + temp_len;

	struct iovec lm_in[2] = {{(void *)server_challenge, 8}, {(void *)client_challenge, 8}};
	rc = smb_hmac_md5(response_key, 16, lm_in, 2, lm_resp);
	if (rc)
		return rc;
	memcpy(lm_resp + 16, client_challenge, 8);

	struct iovec sbk_in[1] = {{nt_resp, 16}};
	return smb_hmac_md5(response_key, 16, sbk_in, 1, session_base_key);
}

/* ---- keys and MAC ------------------------------------------------------- */

static int magic_md5(const uint8_t *key, size_t keylen, const char *magic, uint8_t out[16])
{
	struct iovec iov[2] = {{(void *)key, keylen}, {(void *)magic, strlen(magic) + 1}};

	return smb_md5(iov, 2, out);
}

int ntlmssp_derive_keys(const uint8_t esk[16], uint32_t flags, struct ntlmssp_keys *k)
{
	size_t seal_len = (flags & NTLMSSP_NEGOTIATE_128)  ? 16
	                  : (flags & NTLMSSP_NEGOTIATE_56) ? 7
	                                                   : 5;
	int rc;

	rc = magic_md5(esk, 16, "session key to client-to-server signing key magic constant",
	               k->client_sign);
	if (!rc)
		rc =
		    magic_md5(esk, 16, "session key to server-to-client signing key magic constant",
		              k->server_sign);
	if (!rc)
		rc = magic_md5(esk, seal_len,
		               "session key to client-to-server sealing key magic constant",
		               k->client_seal);
	if (!rc)
		rc = magic_md5(esk, seal_len,
		               "session key to server-to-client sealing key magic constant",
		               k->server_seal);
	return rc;
}

int ntlmssp_mac(const uint8_t sign_key[16], const uint8_t seal_key[16], bool key_exch, uint32_t seq,
                const uint8_t *msg, size_t len, uint8_t out[16])
{
	uint8_t seqbuf[4], hmac[16];
	struct iovec iov[2] = {{seqbuf, 4}, {(void *)msg, len}};
	int rc;

	smb_put_le32(seqbuf, seq);
	rc = smb_hmac_md5(sign_key, 16, iov, 2, hmac);
	if (rc)
		return rc;
	if (key_exch) {
		rc = smb_rc4(seal_key, 16, hmac, hmac, 8);
		if (rc)
			return rc;
	}
	smb_put_le32(out, 1);
	memcpy(out + 4, hmac, 8);
	smb_put_le32(out + 12, seq);
	smb_wipe(hmac, sizeof(hmac));
	return 0;
}

/* ---- a continuing security context ------------------------------------ */

int ntlmssp_sec_init(struct ntlmssp_sec *s, const struct ntlmssp_client_result *res)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if (!(res->flags & NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY) || res->anonymous)
		return -EPROTONOSUPPORT;
	s->flags = res->flags;
	memcpy(s->send_sign, res->keys.client_sign, 16);
	memcpy(s->recv_sign, res->keys.server_sign, 16);
	rc = smb_rc4_stream_new(res->keys.client_seal, 16, &s->send_rc4);
	if (!rc)
		rc = smb_rc4_stream_new(res->keys.server_seal, 16, &s->recv_rc4);
	if (rc)
		ntlmssp_sec_free(s);
	return rc;
}

void ntlmssp_sec_free(struct ntlmssp_sec *s)
{
	if (!s)
		return;
	smb_rc4_stream_free(s->send_rc4);
	smb_rc4_stream_free(s->recv_rc4);
	smb_wipe(s, sizeof(*s));
}

/* The signature over seq || whole; the checksum RC4'd with rc4 (when
 * KEY_EXCH), which moves that handle on by 8 bytes. */
static int sec_mac(const struct ntlmssp_sec *s, const uint8_t key[16], struct smb_rc4_stream *rc4,
                   uint32_t seq, const uint8_t *whole, size_t len, uint8_t sig[16])
{
	uint8_t seqbuf[4], hmac[16];
	struct iovec iov[2] = {{seqbuf, 4}, {(void *)whole, len}};
	int rc;

	smb_put_le32(seqbuf, seq);
	rc = smb_hmac_md5(key, 16, iov, 2, hmac);
	if (!rc && (s->flags & NTLMSSP_NEGOTIATE_KEY_EXCH))
		rc = smb_rc4_stream_update(rc4, hmac, hmac, 8);
	if (!rc) {
		smb_put_le32(sig, 1);
		memcpy(sig + 4, hmac, 8);
		smb_put_le32(sig + 12, seq);
	}
	smb_wipe(hmac, sizeof(hmac));
	return rc;
}

int ntlmssp_sec_sign(struct ntlmssp_sec *s, const uint8_t *whole, size_t len,
                     uint8_t sig[NTLMSSP_SIG_LEN])
{
	if (!s->send_rc4 || (!whole && len))
		return -EINVAL;
	int rc = sec_mac(s, s->send_sign, s->send_rc4, s->send_seq, whole, len, sig);
	if (!rc)
		s->send_seq++;
	return rc;
}

int ntlmssp_sec_seal(struct ntlmssp_sec *s, uint8_t *data, size_t dlen, const uint8_t *whole,
                     size_t wlen, uint8_t sig[NTLMSSP_SIG_LEN])
{
	uint8_t seqbuf[4], hmac[16];
	struct iovec iov[2] = {{seqbuf, 4}, {(void *)whole, wlen}};
	int rc;

	if (!s->send_rc4 || (!whole && wlen) || (!data && dlen))
		return -EINVAL;
	smb_put_le32(seqbuf, s->send_seq);
	rc = smb_hmac_md5(s->send_sign, 16, iov, 2, hmac);
	if (!rc)
		rc = smb_rc4_stream_update(s->send_rc4, data, data, dlen);
	if (!rc && (s->flags & NTLMSSP_NEGOTIATE_KEY_EXCH))
		rc = smb_rc4_stream_update(s->send_rc4, hmac, hmac, 8);
	if (!rc) {
		smb_put_le32(sig, 1);
		memcpy(sig + 4, hmac, 8);
		smb_put_le32(sig + 12, s->send_seq);
		s->send_seq++;
	}
	smb_wipe(hmac, sizeof(hmac));
	return rc;
}

int ntlmssp_sec_verify(struct ntlmssp_sec *s, const uint8_t *whole, size_t len,
                       const uint8_t sig[NTLMSSP_SIG_LEN])
{
	uint8_t want[NTLMSSP_SIG_LEN];

	if (!s->recv_rc4 || (!whole && len) || !sig)
		return -EINVAL;
	int rc = sec_mac(s, s->recv_sign, s->recv_rc4, s->recv_seq, whole, len, want);
	if (rc)
		return rc;
	s->recv_seq++;
	rc = smb_ct_equal(want, sig, NTLMSSP_SIG_LEN) ? 0 : -EBADMSG;
	smb_wipe(want, sizeof(want));
	return rc;
}

int ntlmssp_sec_unseal(struct ntlmssp_sec *s, uint8_t *data, size_t dlen, const uint8_t *whole,
                       size_t wlen, const uint8_t sig[NTLMSSP_SIG_LEN])
{
	if (!s->recv_rc4 || (!data && dlen))
		return -EINVAL;
	int rc = smb_rc4_stream_update(s->recv_rc4, data, data, dlen);
	if (rc)
		return rc;
	return ntlmssp_sec_verify(s, whole, wlen, sig);
}

/* ---- messages ----------------------------------------------------------- */

ssize_t ntlmssp_negotiate_encode(uint8_t *buf, size_t cap, uint32_t flags)
{
	if (cap < NTLMSSP_NEGOTIATE_LEN)
		return -ENOSPC;
	memcpy(buf, ntlmssp_sig, 8);
	smb_put_le32(buf + 8, 1);
	smb_put_le32(buf + 12, flags);
	put_secbuf(buf + 16, 0, NTLMSSP_NEGOTIATE_LEN); /* DomainNameFields */
	put_secbuf(buf + 24, 0, NTLMSSP_NEGOTIATE_LEN); /* WorkstationFields */
	memcpy(buf + 32, ntlmssp_version, 8);
	return NTLMSSP_NEGOTIATE_LEN;
}

/* The client's AV pairs for the NTLMv2 temp: the server's, with MsvAvFlags
 * carrying MIC_PRESENT when we send a MIC, plus MsvAvTargetName. */
static int client_target_info(void *mem, const struct ntlmssp_challenge *c, bool mic,
                              const char *server_name, uint8_t **out, size_t *out_len)
{
	uint8_t *spn = NULL, *buf;
	size_t spn_len = 0, cap, n = 0, off = 0;
	bool have_flags = false;
	int rc;

	if (server_name && *server_name) {
		char *s = talloc_asprintf(mem, "cifs/%s", server_name);

		if (!s)
			return -ENOMEM;
		/* The SPN is optional: one we cannot encode is left out. */
		rc = utf16_dup(mem, s, false, &spn, &spn_len);
		if (rc == -ENOMEM)
			return rc;
		if (rc || spn_len > 0xffff)
			spn_len = 0;
	}
	cap = (size_t)c->target_info_len + 8 + 4 + spn_len + 4 + 4;
	buf = talloc_size(mem, cap);
	if (!buf)
		return -ENOMEM;
	while (c->target_info) {
		const uint8_t *v;
		uint16_t id, vlen;

		rc = ntlmssp_av_next(c->target_info, c->target_info_len, &off, &id, &v, &vlen);
		if (rc < 0)
			return -EBADMSG;
		if (rc == 0)
			break;
		smb_put_le16(buf + n, id);
		smb_put_le16(buf + n + 2, vlen);
		memcpy(buf + n + 4, v, vlen);
		if (id == MSV_AV_FLAGS && vlen == 4) {
			have_flags = true;
			if (mic)
				buf[n + 4] |= MSV_AV_FLAG_MIC_PRESENT;
		}
		n += 4 + (size_t)vlen;
	}
	if (mic && !have_flags) {
		smb_put_le16(buf + n, MSV_AV_FLAGS);
		smb_put_le16(buf + n + 2, 4);
		smb_put_le32(buf + n + 4, MSV_AV_FLAG_MIC_PRESENT);
		n += 8;
	}
	if (spn_len) {
		smb_put_le16(buf + n, MSV_AV_TARGET_NAME);
		smb_put_le16(buf + n + 2, (uint16_t)spn_len);
		memcpy(buf + n + 4, spn, spn_len);
		n += 4 + spn_len;
	}
	smb_put_le32(buf + n, 0); /* MsvAvEOL */
	n += 4;
	*out = buf;
	*out_len = n;
	return 0;
}

static uint64_t filetime_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec + 11644473600ull) * 10000000ull + (uint64_t)ts.tv_nsec / 100;
}

#define AUTH_HDR_LEN 88 /* through Version and MIC */
#define AUTH_MIC_OFF 72

/* The NTLMv2 responses of a user with a password ([MS-NLMP] 3.3.2): the NT
 * response (*nt, a talloc child of tmp), the LMv2 response and
 * res->session_base_key; every intermediate key wiped. */
static int v2_responses(void *tmp, const struct ntlmssp_client_params *p,
                        const struct ntlmssp_challenge *c, uint64_t timestamp,
                        struct ntlmssp_client_result *res, uint8_t **nt, size_t *nt_len,
                        uint8_t lm[24])
{
	uint8_t nt_hash[16], key_nt[16], cc[8];
	uint8_t *ti = NULL;
	size_t ti_len = 0;
	int rc = ntlmssp_nt_hash(p->password, nt_hash);
	if (!rc)
		rc = ntlmssp_ntowfv2(nt_hash, p->user, p->domain, key_nt);
	if (!rc) {
		if (p->client_challenge_fixed)
			memcpy(cc, p->client_challenge_fixed, 8);
		else
			rc = smb_random_bytes(cc, 8);
	}
	if (!rc)
		rc = client_target_info(tmp, c, res->mic_sent, p->server_name, &ti, &ti_len);
	if (!rc && !(*nt = talloc_size(tmp, 16 + 28 + ti_len + 4)))
		rc = -ENOMEM;
	if (!rc)
		rc =
		    ntlmssp_v2_response(key_nt, c->server_challenge, cc, timestamp, ti, ti_len, *nt,
		                        16 + 28 + ti_len + 4, nt_len, lm, res->session_base_key);
	if (!rc && *nt_len > 0xffff)
		rc = -EBADMSG; /* the server's target info was too big to echo */
	smb_wipe(nt_hash, sizeof(nt_hash));
	smb_wipe(key_nt, sizeof(key_nt));
	return rc;
}

int ntlmssp_client_authenticate(void *mem_ctx, const struct ntlmssp_client_params *p,
                                const uint8_t *negotiate, size_t negotiate_len,
                                const uint8_t *challenge, size_t challenge_len, uint8_t **auth,
                                size_t *auth_len, struct ntlmssp_client_result *res)
{
	struct ntlmssp_challenge c;
	void *tmp;
	uint8_t lm[24], enc_key[16];
	uint8_t *nt = NULL, *dom = NULL, *usr = NULL, *ws = NULL, *msg;
	size_t nt_len = 0, lm_len, dom_len, usr_len, ws_len, total, off;
	uint64_t timestamp;
	const uint8_t *ts_val = NULL; /* set by ntlmssp_av_find() when it returns 1 */
	uint16_t ts_len = 0;
	bool have_ts, key_exch;
	uint32_t flags;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = ntlmssp_challenge_decode(challenge, challenge_len, &c);
	if (rc)
		return rc;
	if (!(c.flags & NTLMSSP_NEGOTIATE_UNICODE) || !(c.flags & NTLMSSP_NEGOTIATE_NTLM))
		return -EPROTONOSUPPORT;
	/* Client flags as we asked in NEGOTIATE, cut down to what the server
	 * granted. */
	flags =
	    (negotiate_len >= 16 ? (uint32_t)negotiate[12] | (uint32_t)negotiate[13] << 8 |
	                               (uint32_t)negotiate[14] << 16 | (uint32_t)negotiate[15] << 24
	                         : 0);
	flags &= c.flags;
	flags |= NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_NEGOTIATE_NTLM;

	tmp = talloc_new(NULL);
	if (!tmp)
		return -ENOMEM;
	res->anonymous = (!p->user || !*p->user) && (!p->password || !*p->password);

	have_ts = c.target_info &&
	          ntlmssp_av_find(c.target_info, c.target_info_len, MSV_AV_TIMESTAMP, &ts_val,
	                          &ts_len) == 1 &&
	          ts_len == 8;
	if (have_ts)
		timestamp = smb_le64(ts_val);
	else if (p->timestamp_fixed)
		timestamp = *p->timestamp_fixed;
	else
		timestamp = filetime_now();
	/* A MIC goes with a server timestamp ([MS-NLMP] 3.1.5.1.2); SPNEGO's
	 * mechListMIC then needs the extended-session-security keys. */
	res->mic_sent =
	    have_ts && !res->anonymous && (flags & NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY);
	if (res->anonymous) {
		/* [MS-NLMP] 3.3.2: empty NT response, LM response Z(1); there is
		 * no key worth exchanging. */
		flags |= NTLMSSP_NEGOTIATE_ANONYMOUS;
		flags &= ~NTLMSSP_NEGOTIATE_KEY_EXCH;
		lm_len = 1;
		memset(lm, 0, sizeof(lm));
		smb_wipe(res->session_base_key, 16);
	} else {
		rc = v2_responses(tmp, p, &c, timestamp, res, &nt, &nt_len, lm);
		if (rc)
			goto out;
		lm_len = 24;
		if (have_ts)
			memset(lm, 0, sizeof(lm)); /* [MS-NLMP] 3.3.2: Z(24) with a timestamp */
	}

	/* KeyExchangeKey = SessionBaseKey for NTLMv2. */
	key_exch = (flags & NTLMSSP_NEGOTIATE_KEY_EXCH) != 0;
	if (key_exch) {
		if (p->exported_session_key_fixed)
			memcpy(res->exported_session_key, p->exported_session_key_fixed, 16);
		else if ((rc = smb_random_bytes(res->exported_session_key, 16)) != 0)
			goto out;
		rc = smb_rc4(res->session_base_key, 16, res->exported_session_key, enc_key, 16);
		if (rc)
			goto out;
	} else {
		memcpy(res->exported_session_key, res->session_base_key, 16);
	}

	rc = utf16_dup(tmp, p->domain, false, &dom, &dom_len);
	if (!rc)
		rc = utf16_dup(tmp, p->user, false, &usr, &usr_len);
	if (!rc)
		rc = utf16_dup(tmp, p->workstation, false, &ws, &ws_len);
	if (rc)
		goto out;

	size_t enc_key_len = key_exch ? 16 : 0;

	total = AUTH_HDR_LEN + dom_len + usr_len + ws_len + lm_len + nt_len + enc_key_len;
	msg = talloc_zero_size(mem_ctx, total);
	if (!msg) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(msg, ntlmssp_sig, 8);
	smb_put_le32(msg + 8, 3);
	off = AUTH_HDR_LEN;
#define PUT_FIELD(hdr_off, data, len)                                        \
	do {                                                                 \
		put_secbuf(msg + (hdr_off), (uint16_t)(len), (uint32_t)off); \
		if (len)                                                     \
			memcpy(msg + off, (data), (len));                    \
		off += (len);                                                \
	} while (0)
	PUT_FIELD(28, dom, dom_len);
	PUT_FIELD(36, usr, usr_len);
	PUT_FIELD(44, ws, ws_len);
	PUT_FIELD(12, lm, lm_len);
	PUT_FIELD(20, nt, nt_len);
	PUT_FIELD(52, enc_key, enc_key_len);
#undef PUT_FIELD
	smb_put_le32(msg + 60, flags);
	memcpy(msg + 64, ntlmssp_version, 8);
	/* MIC (bytes 72..88) stays zero while it is computed. */
	if (res->mic_sent) {
		struct iovec iov[3] = {{(void *)negotiate, negotiate_len},
		                       {(void *)challenge, challenge_len},
		                       {msg, total}};

		rc = smb_hmac_md5(res->exported_session_key, 16, iov, 3, msg + AUTH_MIC_OFF);
		if (rc) {
			talloc_free(msg);
			goto out;
		}
	}
	rc = ntlmssp_derive_keys(res->exported_session_key, flags, &res->keys);
	if (rc) {
		talloc_free(msg);
		goto out;
	}
	res->flags = flags;
	*auth = msg;
	*auth_len = total;
out:
	smb_wipe(enc_key, sizeof(enc_key));
	talloc_free(tmp);
	if (rc)
		smb_wipe(res, sizeof(*res));
	return rc;
}
