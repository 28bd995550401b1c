/* auth/ntlmssp.h — NTLMSSP messages and NTLMv2 ([MS-NLMP]), no SPNEGO.
 *
 * Pure functions plus a small state struct; spnego.c and auth.c build on them.
 * The decoders treat every offset/length in a CHALLENGE as hostile.
 */
#ifndef SMBRDMA_AUTH_NTLMSSP_H
#define SMBRDMA_AUTH_NTLMSSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct smb_rc4_stream;

#define NTLMSSP_NEGOTIATE_UNICODE                  0x00000001u
#define NTLMSSP_REQUEST_TARGET                     0x00000004u
#define NTLMSSP_NEGOTIATE_SIGN                     0x00000010u
#define NTLMSSP_NEGOTIATE_SEAL                     0x00000020u
#define NTLMSSP_NEGOTIATE_NTLM                     0x00000200u
#define NTLMSSP_NEGOTIATE_ALWAYS_SIGN              0x00008000u
#define NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY 0x00080000u
#define NTLMSSP_NEGOTIATE_TARGET_INFO              0x00800000u
#define NTLMSSP_NEGOTIATE_VERSION                  0x02000000u
#define NTLMSSP_NEGOTIATE_128                      0x20000000u
#define NTLMSSP_NEGOTIATE_KEY_EXCH                 0x40000000u
#define NTLMSSP_NEGOTIATE_56                       0x80000000u

struct ntlmssp_challenge {
	uint32_t flags;
	uint8_t server_challenge[8];
	const uint8_t *target_info; /* AV pairs, points into the message */
	uint16_t target_info_len;
	const uint8_t *target_name;
	uint16_t target_name_len;
};
/* Decode a CHALLENGE_MESSAGE ([MS-NLMP] 2.2.1.2).  0 or -EBADMSG. */
int ntlmssp_challenge_decode(const uint8_t *msg, size_t len, struct ntlmssp_challenge *c);
/* Find an AV pair; returns 1 and sets *val and *vlen, 0 if absent, -EBADMSG if the
 * list is malformed (no MsvAvEOL inside len, or a length past the end). */
int ntlmssp_av_find(const uint8_t *av, size_t len, uint16_t id, const uint8_t **val,
                    uint16_t *vlen);

/* ---- additions (auth/ntlmssp.c) ------------------------------------------ */

#define NTLMSSP_NEGOTIATE_ANONYMOUS 0x00000800u

/* [MS-NLMP] 2.2.2.1 AV_PAIR ids */
enum ntlmssp_av_id {
	MSV_AV_EOL = 0,
	MSV_AV_NB_COMPUTER_NAME = 1,
	MSV_AV_NB_DOMAIN_NAME = 2,
	MSV_AV_DNS_COMPUTER_NAME = 3,
	MSV_AV_DNS_DOMAIN_NAME = 4,
	MSV_AV_DNS_TREE_NAME = 5,
	MSV_AV_FLAGS = 6,
	MSV_AV_TIMESTAMP = 7,
	MSV_AV_SINGLE_HOST = 8,
	MSV_AV_TARGET_NAME = 9,
	MSV_AV_CHANNEL_BINDINGS = 10,
};
#define MSV_AV_FLAG_MIC_PRESENT 0x00000002u

/* Walk an AV pair list: start with *off = 0; returns 1 with a pair, 0 at
 * MsvAvEOL, -EBADMSG when the list runs past len without an EOL. */
int ntlmssp_av_next(const uint8_t *av, size_t len, size_t *off, uint16_t *id, const uint8_t **val,
                    uint16_t *vlen);

/* UTF-8 to UTF-16LE (upper-cased when @upper: ASCII, Latin-1, Latin
 * Extended-A, Greek and Cyrillic).  With out == NULL only measures.  Returns
 * bytes, -EINVAL for invalid UTF-8, -ENOSPC when cap is too small. */
ssize_t ntlmssp_utf16le(const char *s, bool upper, uint8_t *out, size_t cap);

/* [MS-NLMP] 3.3.1 NTOWFv1 = MD4(UTF-16LE(password)); 3.3.2 NTOWFv2. */
int ntlmssp_nt_hash(const char *password, uint8_t out[16]);
int ntlmssp_ntowfv2(const uint8_t nt_hash[16], const char *user, const char *domain,
                    uint8_t out[16]);
/* [MS-NLMP] 3.3.2 NTLMv2 responses.  nt_resp gets NTProofStr || temp
 * (16 + 28 + target_info_len + 4 bytes); lm_resp the LMv2 response. */
int ntlmssp_v2_response(const uint8_t response_key[16], const uint8_t server_challenge[8],
                        const uint8_t client_challenge[8], uint64_t timestamp,
                        const uint8_t *target_info, size_t target_info_len, uint8_t *nt_resp,
                        size_t nt_cap, size_t *nt_len, uint8_t lm_resp[24],
                        uint8_t session_base_key[16]);

/* [MS-NLMP] 3.4.5.2/3.4.5.3 keys, from the ExportedSessionKey and the
 * negotiated flags (extended session security is assumed). */
struct ntlmssp_keys {
	uint8_t client_sign[16];
	uint8_t server_sign[16];
	uint8_t client_seal[16];
	uint8_t server_seal[16];
};
int ntlmssp_derive_keys(const uint8_t exported_session_key[16], uint32_t flags,
                        struct ntlmssp_keys *k);
/* [MS-NLMP] 3.4.4.2 MAC with extended session security: version 1,
 * HMAC-MD5(sign_key, seq || msg)[0..8] (RC4-sealed with a fresh handle on
 * seal_key when key_exch), seq. */
int ntlmssp_mac(const uint8_t sign_key[16], const uint8_t seal_key[16], bool key_exch, uint32_t seq,
                const uint8_t *msg, size_t len, uint8_t out[16]);

/* NEGOTIATE_MESSAGE ([MS-NLMP] 2.2.1.1), no domain or workstation. */
#define NTLMSSP_NEGOTIATE_LEN 40
ssize_t ntlmssp_negotiate_encode(uint8_t *buf, size_t cap, uint32_t flags);

/* The client's side of CHALLENGE -> AUTHENTICATE.  The *_fixed members are
 * for tests (known-answer vectors); leave them NULL to use the clock and the
 * random generator. */
struct ntlmssp_client_params {
	const char *user;
	const char *password;
	const char *domain;
	const char *workstation;
	const char *server_name;                   /* adds MsvAvTargetName "cifs/<name>" */
	const uint8_t *client_challenge_fixed;     /* 8 bytes */
	const uint8_t *exported_session_key_fixed; /* 16 bytes */
	const uint64_t *timestamp_fixed;           /* used when the server sends none */
};
struct ntlmssp_client_result {
	uint32_t flags; /* negotiated, as sent in AUTHENTICATE */
	bool mic_sent;
	bool anonymous;
	uint8_t session_base_key[16];
	uint8_t exported_session_key[16];
	struct ntlmssp_keys keys;
};
/* Builds the AUTHENTICATE_MESSAGE ([MS-NLMP] 2.2.1.3) into *auth, a talloc
 * child of mem_ctx.  0, -EBADMSG (bad CHALLENGE), -EPROTONOSUPPORT (no
 * Unicode or NTLM on offer), -EINVAL (bad UTF-8 in creds), -ENOMEM. */
int ntlmssp_client_authenticate(void *mem_ctx, const struct ntlmssp_client_params *p,
                                const uint8_t *negotiate, size_t negotiate_len,
                                const uint8_t *challenge, size_t challenge_len, uint8_t **auth,
                                size_t *auth_len, struct ntlmssp_client_result *res);

/* ---- a continuing security context for a message stream ------------------
 *
 * [MS-NLMP] 3.4.3 / 3.4.4 with extended session security (NTLM2): what
 * DCE/RPC's auth levels PKT_INTEGRITY (sign) and PKT_PRIVACY (seal) need.
 * Unlike ntlmssp_mac(), the RC4 handles continue across messages: one for
 * sending (client_seal key), one for receiving (server_seal key), each
 * advanced by every sign (with KEY_EXCH), seal, verify and unseal; and the
 * send and receive sequence numbers count up from 0, one per message.
 * Messages must therefore be signed in the order they go out and checked
 * in the order they come in; a failed check leaves the context unusable
 * (the receive handle has moved on): drop the connection.
 *
 * Ownership: the caller owns the struct (stack, talloc or embedded);
 * ntlmssp_sec_init() allocates the two RC4 handles, ntlmssp_sec_free()
 * frees them and wipes the keys (idempotent; safe on a zeroed struct and
 * after a failed init).  Threads: one thread uses a context at a time. */
struct ntlmssp_sec {
	uint32_t flags; /* negotiated */
	uint8_t send_sign[16], recv_sign[16];
	struct smb_rc4_stream *send_rc4, *recv_rc4;
	uint32_t send_seq, recv_seq;
};
#define NTLMSSP_SIG_LEN 16
/* From the result of ntlmssp_client_authenticate().  0; -EPROTONOSUPPORT
 * without extended session security (NTLMv1-style signing is not done) or
 * for an anonymous context (no keys); -EIO/-ENOMEM from the RC4 setup. */
int ntlmssp_sec_init(struct ntlmssp_sec *s, const struct ntlmssp_client_result *res);
void ntlmssp_sec_free(struct ntlmssp_sec *s);
/* Signature of an outgoing message whole[0, len): version 1,
 * HMAC-MD5(send_sign, seq || whole)[0..8] (RC4'd with the send handle when
 * KEY_EXCH), seq; send_seq then advances. */
int ntlmssp_sec_sign(struct ntlmssp_sec *s, const uint8_t *whole, size_t len,
                     uint8_t sig[NTLMSSP_SIG_LEN]);
/* Seal an outgoing message: the MAC over the plaintext whole[0, wlen) is
 * computed first, then data[0, dlen) is encrypted in place with the send
 * handle, then the 8 checksum bytes with the same handle (when KEY_EXCH).
 * data usually lies inside whole (the PDU's stub inside the PDU); whole is
 * read before data is written. */
int ntlmssp_sec_seal(struct ntlmssp_sec *s, uint8_t *data, size_t dlen, const uint8_t *whole,
                     size_t wlen, uint8_t sig[NTLMSSP_SIG_LEN]);
/* Check a received message's signature with the receive handle and
 * recv_seq (which then advances).  0, or -EBADMSG when it does not match
 * (constant-time compare of all 16 bytes). */
int ntlmssp_sec_verify(struct ntlmssp_sec *s, const uint8_t *whole, size_t len,
                       const uint8_t sig[NTLMSSP_SIG_LEN]);
/* Unseal a received message: data[0, dlen) is decrypted in place first,
 * then the MAC over the now plain whole[0, wlen) is checked as by
 * ntlmssp_sec_verify().  On -EBADMSG data holds what the decryption gave:
 * the caller must not use it. */
int ntlmssp_sec_unseal(struct ntlmssp_sec *s, uint8_t *data, size_t dlen, const uint8_t *whole,
                       size_t wlen, const uint8_t sig[NTLMSSP_SIG_LEN]);

#endif
