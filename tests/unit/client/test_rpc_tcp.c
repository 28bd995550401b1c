/* client/rpc_tcp.c against a scripted DCE/RPC server on loopback (a thread
 * of this test).  The server side does what Samba does with NTLMSSP:
 * CHALLENGE in the bind_ack, recomputes the session key from AUTH3's
 * AUTHENTICATE, checks every request fragment's signature (or unseals it)
 * with its own continuing context and signs or seals its answers.  It
 * advertises small fragments, so requests and answers both go in several.
 * Then it misbehaves, once per connection: a wrong call_id, a flipped
 * signature byte, a frag_length past the cap, a fault, silence (timeout and
 * cancel), a close, an answer bigger than the caller's buffer. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <talloc.h>

#include "auth/ntlmssp.h"
#include "client/proto/dcerpc.h"
#include "client/proto/smb2.h"
#include "client/rpc_tcp.h"
#include "common/crypto.h"
#include "common/log.h"
#include "tests/unit/check.h"

#define USER     "alice"
#define PASS     "S3cret-pw"
#define DOMAIN   "DOM"
#define SRV_FRAG 1432 /* both the max_recv_frag and max_xmit_frag it acks */

enum mode {
	M_ECHO,       /* answer every call with its stub reversed */
	M_CALL_ID,    /* first answer with call_id + 1 */
	M_BAD_SIG,    /* first answer with a flipped signature byte */
	M_BIG_FRAG,   /* a header announcing 6000 bytes */
	M_FAULT,      /* fault 0x1c010002 (unsigned), then echo */
	M_SILENT,     /* never answer the first call */
	M_CLOSE,      /* close after reading the first call */
	M_NO_TRAILER, /* an answer without auth trailer */
	M_ACK_CTX,    /* a bind_ack naming another auth context */
	M_NAK,        /* a bind_nak */
	M_SMALL_FRAG  /* a bind_ack with max_recv_frag 1024 */
};

struct server {
	int lfd;
	uint16_t port;
	enum mode mode;
	uint8_t level; /* expected in the bind */
	int calls;     /* answered */
	int errors;    /* what the server found wrong with the client */
	pthread_t th;
};

static int rd_all(int fd, uint8_t *b, size_t n)
{
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int wr_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static ssize_t rd_pdu(int fd, uint8_t *b, size_t cap)
{
	if (rd_all(fd, b, 16))
		return -1;
	size_t fl = smb_le16(b + 8);
	if (fl < 16 || fl > cap || rd_all(fd, b + 16, fl - 16))
		return -1;
	return (ssize_t)fl;
}

static size_t challenge(uint8_t *b)
{
	uint32_t flags =
	    NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_NEGOTIATE_NTLM | NTLMSSP_NEGOTIATE_SIGN |
	    NTLMSSP_NEGOTIATE_SEAL | NTLMSSP_NEGOTIATE_ALWAYS_SIGN |
	    NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY | NTLMSSP_NEGOTIATE_TARGET_INFO |
	    NTLMSSP_NEGOTIATE_128 | NTLMSSP_NEGOTIATE_KEY_EXCH | NTLMSSP_NEGOTIATE_56;
	memset(b, 0, 60);
	memcpy(b, "NTLMSSP\0", 8);
	smb_put_le32(b + 8, 2);
	smb_put_le32(b + 16, 56); /* target name: empty, at 56 */
	smb_put_le32(b + 20, flags);
	memcpy(b + 24, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
	smb_put_le16(b + 40, 4); /* target info: MsvAvEOL */
	smb_put_le16(b + 42, 4);
	smb_put_le32(b + 44, 56);
	return 60;
}

/* The server's context from AUTHENTICATE, as a server computes it. */
static int server_sec(const uint8_t *am, size_t al, struct ntlmssp_sec *sec)
{
	if (al < 64)
		return -1;
	uint16_t ntl = smb_le16(am + 20), skl = smb_le16(am + 52);
	uint32_t nto = smb_le32(am + 24), sko = smb_le32(am + 56);
	if (ntl < 16 || nto + ntl > al || skl != 16 || sko + 16 > al)
		return -1;
	uint8_t nt[16], owf[16], sbk[16];
	struct ntlmssp_client_result res;
	memset(&res, 0, sizeof(res));
	res.flags = smb_le32(am + 60);
	if (ntlmssp_nt_hash(PASS, nt) || ntlmssp_ntowfv2(nt, USER, DOMAIN, owf))
		return -1;
	struct iovec iov = {(void *)(am + nto), 16};
	if (smb_hmac_md5(owf, 16, &iov, 1, sbk) ||
	    smb_rc4(sbk, 16, am + sko, res.exported_session_key, 16))
		return -1;
	struct ntlmssp_keys k;
	if (ntlmssp_derive_keys(res.exported_session_key, res.flags, &k))
		return -1;
	/* the server sends with the server-to-client keys */
	memcpy(res.keys.client_sign, k.server_sign, 16);
	memcpy(res.keys.server_sign, k.client_sign, 16);
	memcpy(res.keys.client_seal, k.server_seal, 16);
	memcpy(res.keys.server_seal, k.client_seal, 16);
	return ntlmssp_sec_init(sec, &res);
}

/* what bind_ack() advertises (the server thread's alone) */
static uint16_t ack_frag = SRV_FRAG;

static size_t bind_ack(uint8_t *b, uint32_t call_id, const uint8_t *tok, size_t tl, uint8_t level,
                       uint32_t ctx)
{
	struct smb_wr w;
	smb_wr_init(&w, b, 4096);
	smb_wr_u8(&w, 5);
	smb_wr_u8(&w, 0);
	smb_wr_u8(&w, DCERPC_PTYPE_BIND_ACK);
	smb_wr_u8(&w, 3 | DCERPC_PFC_SUPPORT_HEADER_SIGN);
	smb_wr_u32(&w, 0x10);
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, (uint16_t)tl);
	smb_wr_u32(&w, call_id);
	smb_wr_u16(&w, ack_frag);
	smb_wr_u16(&w, ack_frag);
	smb_wr_u32(&w, 0x1234);
	smb_wr_u16(&w, 4);
	smb_wr_bytes(&w, "135", 4);
	smb_wr_zero(&w, 2); /* to 32 */
	smb_wr_u8(&w, 1);
	smb_wr_zero(&w, 3);
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 0);
	smb_wr_bytes(&w, dcerpc_ndr_syntax.uuid, 16);
	smb_wr_u32(&w, 2);
	if (tl) {
		smb_wr_u8(&w, DCERPC_AUTH_TYPE_NTLMSSP);
		smb_wr_u8(&w, level);
		smb_wr_u8(&w, 0);
		smb_wr_u8(&w, 0);
		smb_wr_u32(&w, ctx);
		smb_wr_bytes(&w, tok, tl);
	}
	size_t n = smb_wr_len(&w);
	smb_put_le16(b + 8, (uint16_t)n);
	return n;
}

/* One response fragment carrying stub[0, n), signed or sealed. */
static size_t response(uint8_t *b, uint32_t call_id, uint8_t flags, const uint8_t *stub, size_t n,
                       uint32_t alloc, uint8_t level, uint32_t ctx, struct ntlmssp_sec *sec)
{
	struct smb_wr w;
	smb_wr_init(&w, b, 8192);
	smb_wr_u8(&w, 5);
	smb_wr_u8(&w, 0);
	smb_wr_u8(&w, DCERPC_PTYPE_RESPONSE);
	smb_wr_u8(&w, flags);
	smb_wr_u32(&w, 0x10);
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, level ? 16 : 0);
	smb_wr_u32(&w, call_id);
	smb_wr_u32(&w, alloc);
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 0);
	smb_wr_bytes(&w, stub, n);
	if (level) {
		size_t pad = (16 - n % 16) % 16;
		smb_wr_zero(&w, pad);
		smb_wr_u8(&w, DCERPC_AUTH_TYPE_NTLMSSP);
		smb_wr_u8(&w, level);
		smb_wr_u8(&w, (uint8_t)pad);
		smb_wr_u8(&w, 0);
		smb_wr_u32(&w, ctx);
		smb_wr_zero(&w, 16);
	}
	size_t len = smb_wr_len(&w);
	smb_put_le16(b + 8, (uint16_t)len);
	if (level) {
		struct dcerpc_auth_span sp;
		if (dcerpc_auth_span(b, len, &sp))
			abort();
		if (level == DCERPC_AUTH_LEVEL_PRIVACY)
			ntlmssp_sec_seal(sec, b + sp.stub_off, sp.stub_len, b, sp.signed_len,
			                 b + sp.token_off);
		else
			ntlmssp_sec_sign(sec, b, sp.signed_len, b + sp.token_off);
	}
	return len;
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	static uint8_t b[8192], out[8192], stub[65536];
	struct ntlmssp_sec sec = {0};
	uint32_t ctx = 0;
	if (fd < 0)
		return NULL;
	ssize_t n = rd_pdu(fd, b, sizeof(b));
	struct dcerpc_pdu pdu;
	if (n < 0 || dcerpc_pdu_decode(b, (size_t)n, &pdu) != n ||
	    pdu.hdr.ptype != DCERPC_PTYPE_BIND) {
		s->errors++;
		goto out;
	}
	uint32_t bind_call = pdu.hdr.call_id;
	ack_frag = s->mode == M_SMALL_FRAG ? 1024 : SRV_FRAG;
	if (s->level) {
		if (!pdu.has_auth || pdu.auth.level != s->level ||
		    pdu.auth.type != DCERPC_AUTH_TYPE_NTLMSSP ||
		    !(pdu.hdr.pfc_flags & DCERPC_PFC_SUPPORT_HEADER_SIGN)) {
			s->errors++;
			goto out;
		}
		ctx = pdu.auth.context_id;
		uint8_t ch[64];
		size_t cl = challenge(ch);
		size_t k = bind_ack(out, bind_call, ch, cl, s->level,
		                    s->mode == M_ACK_CTX ? ctx ^ 1 : ctx);
		if (s->mode == M_NAK) {
			/* provider_reject_reason 2, one version: 5.0 */
			const uint8_t nak[21] = {5, 0,    DCERPC_PTYPE_BIND_NAK,
			                         3, 0x10, 0,
			                         0, 0,    21,
			                         0, 0,    0,
			                         0, 0,    0,
			                         0, 2,    0,
			                         1, 5,    0};
			memcpy(out, nak, sizeof(nak));
			smb_put_le32(out + 12, bind_call);
			k = sizeof(nak);
		}
		if (wr_all(fd, out, k))
			goto out;
		n = rd_pdu(fd, b, sizeof(b));
		if (n < 0 || dcerpc_pdu_decode(b, (size_t)n, &pdu) != n ||
		    pdu.hdr.ptype != DCERPC_PTYPE_AUTH3 || pdu.hdr.call_id != bind_call ||
		    !pdu.has_auth || pdu.body_len != 4 || pdu.auth.context_id != ctx ||
		    server_sec(pdu.auth.token, pdu.auth.token_len, &sec)) {
			s->errors++;
			goto out;
		}
	} else {
		size_t k = bind_ack(out, bind_call, NULL, 0, 0, 0);
		if (wr_all(fd, out, k))
			goto out;
	}
	for (int call = 0;; call++) {
		/* a whole request, fragment by fragment */
		size_t sl = 0;
		uint32_t call_id = 0;
		for (;;) {
			n = rd_pdu(fd, b, sizeof(b));
			if (n < 0)
				goto out;
			if ((size_t)n > SRV_FRAG || dcerpc_pdu_decode(b, (size_t)n, &pdu) != n ||
			    pdu.hdr.ptype != DCERPC_PTYPE_REQUEST) {
				s->errors++;
				goto out;
			}
			if (s->level) {
				struct dcerpc_auth_span sp;
				int rc = dcerpc_auth_span(b, (size_t)n, &sp);
				if (!rc && s->level == DCERPC_AUTH_LEVEL_PRIVACY)
					rc = ntlmssp_sec_unseal(&sec, b + sp.stub_off, sp.stub_len,
					                        b, sp.signed_len, b + sp.token_off);
				else if (!rc)
					rc = ntlmssp_sec_verify(&sec, b, sp.signed_len,
					                        b + sp.token_off);
				if (rc || pdu.auth.context_id != ctx) {
					s->errors++;
					goto out;
				}
			}
			size_t part = pdu.body_len - 8;
			if (sl + part > sizeof(stub)) {
				s->errors++;
				goto out;
			}
			memcpy(stub + sl, pdu.body + 8, part);
			sl += part;
			call_id = pdu.hdr.call_id;
			if (pdu.hdr.pfc_flags & DCERPC_PFC_LAST_FRAG)
				break;
		}
		if (call == 0 && s->mode == M_SILENT) {
			while (read(fd, b, sizeof(b)) > 0) /* until the client gives up */
				;
			goto out;
		}
		if (call == 0 && s->mode == M_CLOSE)
			goto out;
		if (call == 0 && s->mode == M_BIG_FRAG) {
			memset(out, 0, 16);
			out[0] = 5;
			out[2] = DCERPC_PTYPE_RESPONSE;
			out[3] = 3;
			out[4] = 0x10;
			smb_put_le16(out + 8, 6000);
			smb_put_le32(out + 12, call_id);
			wr_all(fd, out, 16);
			while (read(fd, b, sizeof(b)) > 0)
				;
			goto out;
		}
		if (call == 0 && s->mode == M_FAULT) {
			memset(out, 0, 32);
			out[0] = 5;
			out[2] = DCERPC_PTYPE_FAULT;
			out[3] = 3 | DCERPC_PFC_DID_NOT_EXECUTE;
			out[4] = 0x10;
			smb_put_le16(out + 8, 32);
			smb_put_le32(out + 12, call_id);
			smb_put_le32(out + 24, 0x1c010002);
			if (wr_all(fd, out, 32))
				goto out;
			continue;
		}
		/* the answer: the stub reversed, in fragments of what the
		 * client offered but no larger than ours */
		for (size_t i = 0; i < sl / 2; i++) {
			uint8_t t = stub[i];
			stub[i] = stub[sl - 1 - i];
			stub[sl - 1 - i] = t;
		}
		uint8_t lvl = s->mode == M_NO_TRAILER ? 0 : s->level;
		size_t chunk = SRV_FRAG - 24 - (lvl ? 24 + 15 : 0);
		chunk -= chunk % 16;
		size_t off = 0;
		do {
			size_t take = sl - off < chunk ? sl - off : chunk;
			uint8_t fl = (uint8_t)((off == 0 ? 1 : 0) | (off + take == sl ? 2 : 0));
			uint32_t cid = call_id + (s->mode == M_CALL_ID && call == 0 ? 1 : 0);
			size_t k = response(out, cid, fl, stub + off, take, (uint32_t)(sl - off),
			                    lvl, ctx, &sec);
			if (s->mode == M_BAD_SIG && call == 0)
				out[k - 3] ^= 0x40;
			if (wr_all(fd, out, k))
				goto out;
			off += take;
		} while (off < sl);
		s->calls++;
	}
out:
	ntlmssp_sec_free(&sec);
	close(fd);
	return NULL;
}

static void server_start(struct server *s, enum mode mode, uint8_t level)
{
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->level = level;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(s->lfd, 1) ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al))
		abort();
	s->port = ntohs(a.sin_port);
	if (pthread_create(&s->th, NULL, server_main, s))
		abort();
}

static void server_join(struct server *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
}

/* an interface nobody serves but our fake */
static const struct dcerpc_syntax iface = {
    .uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, .major = 1};

static struct rpc_tcp *connect_bind(struct server *s, int cancel_fd, uint8_t level)
{
	char err[256];
	struct rpc_tcp *r = NULL;
	struct rpc_tcp_auth auth = {
	    .user = USER, .password = PASS, .domain = DOMAIN, .workstation = "WS", .level = level};
	CHECK_EQ(rpc_tcp_connect(NULL, "127.0.0.1", s->port, 5000, cancel_fd, &r, err, sizeof(err)),
	         0);
	if (!r)
		return NULL;
	int rc = rpc_tcp_bind(r, &iface, level ? &auth : NULL, 5000, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc)
		fprintf(stderr, "bind: %s\n", err);
	return r;
}

static int call(struct rpc_tcp *r, size_t len, unsigned tmo, size_t cap, uint32_t *fault, char *err)
{
	static uint8_t in[20000], out[20000];
	size_t ol = 0;
	for (size_t i = 0; i < len; i++)
		in[i] = (uint8_t)(i * 13 + len);
	int rc = rpc_tcp_call(r, 7, in, len, out, cap, &ol, tmo, fault, err, 256);
	if (rc == 0) {
		CHECK_EQ(ol, len);
		for (size_t i = 0; i < len; i++)
			if (out[i] != in[len - 1 - i]) {
				CHECK(!"reversed stub");
				break;
			}
	}
	return rc;
}

/* Several calls, small and fragmented both ways, at levels 0, 5, 6: the
 * sequence numbers and RC4 states stay in step across fragments and calls. */
static void test_levels(void)
{
	const uint8_t levels[3] = {0, 5, 6};
	for (int i = 0; i < 3; i++) {
		struct server s;
		char err[256];
		uint32_t fault;
		server_start(&s, M_ECHO, levels[i]);
		struct rpc_tcp *r = connect_bind(&s, -1, levels[i]);
		const size_t sizes[] = {1, 100, 5000, 0, 17, 12345};
		for (size_t k = 0; r && k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			int rc = call(r, sizes[k], 5000, 20000, &fault, err);
			CHECK_EQ(rc, 0);
			if (rc)
				fprintf(stderr, "level %u size %zu: %s\n", levels[i], sizes[k],
				        err);
		}
		rpc_tcp_close(r);
		server_join(&s);
		CHECK_EQ(s.errors, 0);
		CHECK_EQ(s.calls, 6);
	}
}

static void test_hostile(void)
{
	struct {
		enum mode mode;
		int want;
		const char *says;
	} cases[] = {
	    {M_CALL_ID, -EBADMSG, "call_id"},
	    {M_BAD_SIG, -EBADMSG, "bad NTLMSSP signature"},
	    {M_BIG_FRAG, -EBADMSG, "frag_length 6000"},
	    {M_CLOSE, -ECONNRESET, "closed the connection"},
	    {M_NO_TRAILER, -EBADMSG, "without our auth trailer"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (uint8_t level = 5; level <= 6; level++) {
			struct server s;
			char err[256];
			uint32_t fault = 0;
			server_start(&s, cases[i].mode, level);
			struct rpc_tcp *r = connect_bind(&s, -1, level);
			CHECK_EQ(call(r, 3000, 5000, 20000, &fault, err), cases[i].want);
			CHECK(strstr(err, cases[i].says) != NULL);
			if (!strstr(err, cases[i].says))
				fprintf(stderr, "case %zu: %s\n", i, err);
			/* and the connection is not used again */
			CHECK_EQ(call(r, 10, 5000, 20000, &fault, err), -ENOTCONN);
			rpc_tcp_close(r);
			server_join(&s);
			CHECK_EQ(s.errors, 0);
		}
	}

	/* a fault: its status; the connection goes on */
	struct server s;
	char err[256];
	uint32_t fault = 0;
	server_start(&s, M_FAULT, 6);
	struct rpc_tcp *r = connect_bind(&s, -1, 6);
	CHECK_EQ(call(r, 40, 5000, 20000, &fault, err), -EREMOTEIO);
	CHECK_EQ(fault, 0x1c010002);
	CHECK(strstr(err, "fault 0x1c010002") != NULL);
	CHECK_EQ(call(r, 40, 5000, 20000, &fault, err), 0);
	/* an answer larger than the buffer */
	CHECK_EQ(call(r, 3000, 5000, 2000, &fault, err), -E2BIG);
	rpc_tcp_close(r);
	server_join(&s);
	CHECK_EQ(s.errors, 0);
}

/* Answers to the bind that must fail it, each with a clear message; the
 * server sees the client go away and no AUTH3. */
static void test_bind_hostile(void)
{
	struct {
		enum mode mode;
		int want;
		const char *says;
	} cases[] = {
	    {M_ACK_CTX, -EBADMSG, "no NTLMSSP CHALLENGE for our auth context"},
	    {M_NAK, -EPROTO, "refused the bind (bind_nak, reason 2)"},
	    {M_SMALL_FRAG, -EBADMSG, "max_recv_frag 1024 is too small"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct server s;
		char err[256];
		struct rpc_tcp *r = NULL;
		struct rpc_tcp_auth auth = {
		    .user = USER, .password = PASS, .domain = DOMAIN, .level = 5};
		server_start(&s, cases[i].mode, 5);
		CHECK_EQ(rpc_tcp_connect(NULL, "127.0.0.1", s.port, 5000, -1, &r, err, sizeof(err)),
		         0);
		CHECK_EQ(rpc_tcp_bind(r, &iface, &auth, 5000, err, sizeof(err)), cases[i].want);
		CHECK(strstr(err, cases[i].says) != NULL);
		if (!strstr(err, cases[i].says))
			fprintf(stderr, "case %zu: %s\n", i, err);
		uint32_t fault;
		CHECK_EQ(call(r, 10, 1000, 100, &fault, err), -ENOTCONN);
		rpc_tcp_close(r);
		server_join(&s);
		CHECK_EQ(s.calls, 0);
	}
}

static void *cancel_later(void *arg)
{
	usleep(200 * 1000);
	rpc_tcp_cancel(arg);
	return NULL;
}

static void test_timeout_cancel(void)
{
	struct server s;
	char err[256];
	uint32_t fault;
	server_start(&s, M_SILENT, 5);
	struct rpc_tcp *r = connect_bind(&s, -1, 5);
	CHECK_EQ(call(r, 10, 200, 100, &fault, err), -ETIMEDOUT);
	CHECK(strstr(err, "timed out") != NULL);
	rpc_tcp_close(r);
	server_join(&s);

	/* the caller's fd: readable = give up */
	int efd = eventfd(0, EFD_CLOEXEC);
	server_start(&s, M_SILENT, 5);
	r = connect_bind(&s, efd, 5);
	uint64_t one = 1;
	CHECK_EQ(write(efd, &one, 8), 8);
	CHECK_EQ(call(r, 10, 0, 100, &fault, err), -ECANCELED);
	rpc_tcp_close(r);
	server_join(&s);
	close(efd);

	/* rpc_tcp_cancel() from another thread during a wait forever */
	server_start(&s, M_SILENT, 6);
	r = connect_bind(&s, -1, 6);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, cancel_later, r), 0);
	CHECK_EQ(call(r, 10, 0, 100, &fault, err), -ECANCELED);
	pthread_join(th, NULL);
	rpc_tcp_close(r);
	server_join(&s);
}

static void test_args(void)
{
	char err[256];
	struct rpc_tcp *r = (struct rpc_tcp *)1;
	CHECK_EQ(rpc_tcp_connect(NULL, "localhost", 135, 100, -1, &r, err, sizeof(err)), -EINVAL);
	CHECK(r == NULL);
	CHECK(strstr(err, "numeric") != NULL);
	CHECK_EQ(rpc_tcp_connect(NULL, "::1", 0, 100, -1, &r, err, sizeof(err)), -EINVAL);
	/* nobody listens on this one */
	struct server s;
	server_start(&s, M_ECHO, 0);
	uint16_t port = s.port;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	                        .sin_port = htons(port)};
	CHECK_EQ(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0); /* the server's one accept */
	close(fd);
	server_join(&s);
	CHECK_EQ(rpc_tcp_connect(NULL, "127.0.0.1", port, 1000, -1, &r, err, sizeof(err)),
	         -ECONNREFUSED);
	CHECK(strstr(err, "connect") != NULL);
}

int main(void)
{
	smb_log_init("test_rpc_tcp", false, LOG_ERR);
	if (smb_crypto_init())
		return 1;
	RUN(test_levels);
	RUN(test_hostile);
	RUN(test_bind_hostile);
	RUN(test_timeout_cancel);
	RUN(test_args);
	return check_report();
}
