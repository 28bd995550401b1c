/* client/rpc_tcp.c — a blocking DCE/RPC client over TCP with NTLMSSP
 * integrity and privacy (see rpc_tcp.h for the protocol and the contract).
 */
#include "client/rpc_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <talloc.h>

#include "auth/ntlmssp.h"
#include "client/proto/dcerpc.h"
#include "common/log.h"
#include "common/secret.h"

#define CTX_ID      0
#define AUTH_CTX_ID 0x53524d42u /* any value; the answers must echo it */

struct rpc_tcp {
	int fd;
	int cancel_fd; /* the caller's, or -1 */
	int efd;       /* rpc_tcp_cancel()'s eventfd */
	atomic_bool cancelled;
	char peer[64];
	bool bound;
	bool dead; /* an earlier error left the stream in an unknown state */
	uint32_t call_id;
	uint16_t max_xmit; /* negotiated: what the server takes */
	uint8_t level;     /* 0: no auth, else 5 or 6 */
	bool hdr_sign;     /* the server's answer to PFC_SUPPORT_HEADER_SIGN */
	struct ntlmssp_sec sec;
	uint8_t rbuf[RPC_TCP_MAX_FRAG];
	uint8_t wbuf[RPC_TCP_MAX_FRAG];
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- deadlines and waiting ------------------------------------------------ */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* 0: no deadline */
static uint64_t deadline_of(unsigned timeout_ms)
{
	return timeout_ms ? now_ms() + timeout_ms : 0;
}

/* Wait until fd is ready for events: 0, -ETIMEDOUT, -ECANCELED. */
static int wait_fd(struct rpc_tcp *r, short events, uint64_t deadline)
{
	for (;;) {
		if (atomic_load(&r->cancelled))
			return -ECANCELED;
		int tmo = -1;
		if (deadline) {
			uint64_t now = now_ms();
			if (now >= deadline)
				return -ETIMEDOUT;
			uint64_t left = deadline - now;
			tmo = left > 60000 ? 60000 : (int)left;
		}
		struct pollfd p[3] = {{.fd = r->fd, .events = events},
		                      {.fd = r->efd, .events = POLLIN},
		                      {.fd = r->cancel_fd, .events = POLLIN}};
		int n = poll(p, r->cancel_fd >= 0 ? 3 : 2, tmo);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents || (r->cancel_fd >= 0 && p[2].revents))
			return -ECANCELED;
		if (p[0].revents)
			return 0; /* errors show in the send/recv that follows */
	}
}

static int send_all(struct rpc_tcp *r, const uint8_t *b, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(r->fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = wait_fd(r, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		return (errno == EPIPE || errno == ECONNRESET) ? -ECONNRESET : -errno;
	}
	return 0;
}

static int recv_all(struct rpc_tcp *r, uint8_t *b, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = recv(r->fd, b, len, MSG_DONTWAIT);
		if (n > 0) {
			b += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = wait_fd(r, POLLIN, deadline);
			if (rc)
				return rc;
			continue;
		}
		return errno == ECONNRESET ? -ECONNRESET : -errno;
	}
	return 0;
}

static const char *io_what(int rc)
{
	switch (rc) {
	case -ETIMEDOUT:
		return "timed out";
	case -ECANCELED:
		return "cancelled";
	case -ECONNRESET:
		return "the server closed the connection";
	default:
		return strerror(-rc);
	}
}

/* One PDU into r->rbuf: the header first, its frag_length checked against
 * what we offered before the rest is read.  Returns its length. */
static ssize_t recv_pdu(struct rpc_tcp *r, uint64_t deadline, char *err, size_t errlen)
{
	int rc = recv_all(r, r->rbuf, DCERPC_HDR_LEN, deadline);
	if (rc) {
		seterr(err, errlen, "%s: waiting for an answer: %s", r->peer, io_what(rc));
		return rc;
	}
	uint16_t fl = (uint16_t)(r->rbuf[8] | r->rbuf[9] << 8);
	if (r->rbuf[0] != 5 || fl < DCERPC_HDR_LEN || fl > RPC_TCP_MAX_FRAG) {
		seterr(err, errlen, "%s: malformed DCE/RPC header (version %u, frag_length %u)",
		       r->peer, r->rbuf[0], fl);
		return -EBADMSG;
	}
	rc = recv_all(r, r->rbuf + DCERPC_HDR_LEN, fl - DCERPC_HDR_LEN, deadline);
	if (rc) {
		seterr(err, errlen, "%s: reading a %u-byte fragment: %s", r->peer, fl, io_what(rc));
		return rc;
	}
	return fl;
}

/* ---- connect, close, cancel -------------------------------------------------- */

static int rpc_tcp_destructor(struct rpc_tcp *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->efd >= 0)
		close(r->efd);
	ntlmssp_sec_free(&r->sec);
	smb_wipe(r->rbuf, sizeof(r->rbuf));
	smb_wipe(r->wbuf, sizeof(r->wbuf));
	return 0;
}

static int parse_addr(const char *addr, uint16_t port, struct sockaddr_storage *ss, socklen_t *sl)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = addr ? strlen(addr) : 0;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	if (n && n < sizeof(buf) && inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*sl = sizeof(*s4);
		return 0;
	}
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']' && n - 2 < sizeof(buf)) {
		memcpy(buf, addr + 1, n - 2);
		buf[n - 2] = '\0';
	} else if (n && n < sizeof(buf)) {
		memcpy(buf, addr, n + 1);
	} else {
		return -EINVAL;
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET6, buf, &s6->sin6_addr) != 1)
		return -EINVAL;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	*sl = sizeof(*s6);
	return 0;
}

int rpc_tcp_connect(void *mem, const char *addr, uint16_t port, unsigned timeout_ms, int cancel_fd,
                    struct rpc_tcp **out, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	seterr(err, errlen, "%s", "");
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (parse_addr(addr, port, &ss, &sl) || port == 0) {
		seterr(err, errlen, "not a numeric IPv4/IPv6 address and port: %s port %u",
		       addr ? addr : "(null)", port);
		return -EINVAL;
	}
	uint64_t deadline = deadline_of(timeout_ms);
	struct rpc_tcp *r = talloc_zero(mem, struct rpc_tcp);
	if (!r) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->fd = -1;
	r->efd = -1;
	r->cancel_fd = cancel_fd;
	r->call_id = 1;
	atomic_init(&r->cancelled, false);
	talloc_set_destructor(r, rpc_tcp_destructor);
	if (ss.ss_family == AF_INET6 && addr[0] != '[')
		snprintf(r->peer, sizeof(r->peer), "[%s]:%u", addr, port);
	else
		snprintf(r->peer, sizeof(r->peer), "%s:%u", addr, port);

	int rc;
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
	if (r->efd < 0 || r->fd < 0) {
		rc = -errno;
		seterr(err, errlen, "%s: socket: %s", r->peer, strerror(-rc));
		goto fail;
	}
	int one = 1;
	(void)setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(r->fd, (struct sockaddr *)&ss, sl) < 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
			seterr(err, errlen, "%s: connect: %s", r->peer, strerror(-rc));
			goto fail;
		}
		rc = wait_fd(r, POLLOUT, deadline);
		if (rc) {
			seterr(err, errlen, "%s: connect: %s", r->peer, io_what(rc));
			goto fail;
		}
		int soerr = 0;
		socklen_t el = sizeof(soerr);
		if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &soerr, &el) < 0)
			soerr = errno;
		if (soerr) {
			rc = -soerr;
			seterr(err, errlen, "%s: connect: %s", r->peer, strerror(soerr));
			goto fail;
		}
	}
	smb_debug("rpc_tcp %s: connected", r->peer);
	*out = r;
	return 0;
fail:
	talloc_free(r);
	return rc;
}

void rpc_tcp_cancel(struct rpc_tcp *r)
{
	if (!r)
		return;
	atomic_store(&r->cancelled, true);
	uint64_t one = 1;
	if (r->efd >= 0)
		(void)!write(r->efd, &one, sizeof(one));
}

void rpc_tcp_close(struct rpc_tcp *r)
{
	talloc_free(r);
}

/* ---- bind ---------------------------------------------------------------- */

/* Receive the answer to the bind, call_id; check it and fill the ack and
 * its first result.  0, -EPROTO (bind_nak, or the context refused). */
static int bind_answer(struct rpc_tcp *r, uint32_t call_id, uint64_t deadline,
                       struct dcerpc_pdu *pdu, struct dcerpc_bind_ack *ack, char *err,
                       size_t errlen)
{
	ssize_t n = recv_pdu(r, deadline, err, errlen);
	if (n < 0)
		return (int)n;
	if (dcerpc_pdu_decode(r->rbuf, (size_t)n, pdu) != n) {
		seterr(err, errlen, "%s: malformed answer to the bind", r->peer);
		return -EBADMSG;
	}
	const uint8_t fl = DCERPC_PFC_FIRST_FRAG | DCERPC_PFC_LAST_FRAG;
	if (pdu->hdr.call_id != call_id || (pdu->hdr.pfc_flags & fl) != fl) {
		seterr(err, errlen, "%s: answer to the bind has call_id %u (want %u) or flags 0x%x",
		       r->peer, pdu->hdr.call_id, call_id, pdu->hdr.pfc_flags);
		return -EBADMSG;
	}
	if (pdu->hdr.ptype == DCERPC_PTYPE_BIND_NAK) {
		uint16_t reason = 0;
		if (dcerpc_bind_nak_decode(pdu, &reason)) {
			seterr(err, errlen, "%s: malformed bind_nak", r->peer);
			return -EBADMSG;
		}
		seterr(err, errlen, "%s: the server refused the bind (bind_nak, reason %u)",
		       r->peer, reason);
		return -EPROTO;
	}
	struct dcerpc_result res;
	int rc = dcerpc_bind_ack_decode(pdu, ack, &res, 1);
	if (pdu->hdr.ptype != DCERPC_PTYPE_BIND_ACK || rc == -EBADMSG || ack->n_results != 1) {
		seterr(err, errlen, "%s: malformed bind_ack (type %u)", r->peer, pdu->hdr.ptype);
		return -EBADMSG;
	}
	if (res.result != DCERPC_RESULT_ACCEPT) {
		seterr(err, errlen,
		       "%s: the server refused the interface (result %u, reason %u): not served "
		       "on this endpoint?",
		       r->peer, res.result, res.reason);
		return -EPROTO;
	}
	if (memcmp(&res.transfer.uuid, dcerpc_ndr_syntax.uuid, 16) != 0 ||
	    res.transfer.major != dcerpc_ndr_syntax.major) {
		seterr(err, errlen, "%s: bind_ack accepts a transfer syntax we did not offer",
		       r->peer);
		return -EBADMSG;
	}
	/* [C706]: every implementation takes 1432-byte fragments */
	if (ack->max_recv_frag < 1432) {
		seterr(err, errlen, "%s: bind_ack: max_recv_frag %u is too small", r->peer,
		       ack->max_recv_frag);
		return -EBADMSG;
	}
	r->max_xmit = ack->max_recv_frag < RPC_TCP_MAX_FRAG ? ack->max_recv_frag : RPC_TCP_MAX_FRAG;
	r->hdr_sign = (pdu->hdr.pfc_flags & DCERPC_PFC_SUPPORT_HEADER_SIGN) != 0;
	return 0;
}

static int bind_auth(struct rpc_tcp *r, const struct dcerpc_bind *bind,
                     const struct rpc_tcp_auth *auth, uint64_t deadline, char *err, size_t errlen)
{
	uint8_t neg[NTLMSSP_NEGOTIATE_LEN];
	uint32_t flags = NTLMSSP_NEGOTIATE_UNICODE | NTLMSSP_REQUEST_TARGET |
	                 NTLMSSP_NEGOTIATE_SIGN | NTLMSSP_NEGOTIATE_NTLM |
	                 NTLMSSP_NEGOTIATE_ALWAYS_SIGN |
	                 NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY | NTLMSSP_NEGOTIATE_VERSION |
	                 NTLMSSP_NEGOTIATE_128 | NTLMSSP_NEGOTIATE_KEY_EXCH | NTLMSSP_NEGOTIATE_56;
	if (auth->level == DCERPC_AUTH_LEVEL_PRIVACY)
		flags |= NTLMSSP_NEGOTIATE_SEAL;
	ssize_t nl = ntlmssp_negotiate_encode(neg, sizeof(neg), flags);
	if (nl < 0) {
		seterr(err, errlen, "NTLMSSP NEGOTIATE: %s", strerror((int)-nl));
		return (int)nl;
	}
	struct dcerpc_auth a = {.type = DCERPC_AUTH_TYPE_NTLMSSP,
	                        .level = auth->level,
	                        .context_id = AUTH_CTX_ID,
	                        .token = neg,
	                        .token_len = (uint16_t)nl};
	ssize_t n = dcerpc_bind_encode(r->wbuf, sizeof(r->wbuf), bind, &a);
	if (n < 0) {
		seterr(err, errlen, "encoding the bind: %s", strerror((int)-n));
		return (int)n;
	}
	int rc = send_all(r, r->wbuf, (size_t)n, deadline);
	if (rc) {
		seterr(err, errlen, "%s: sending the bind: %s", r->peer, io_what(rc));
		return rc;
	}
	struct dcerpc_pdu pdu;
	struct dcerpc_bind_ack ack;
	rc = bind_answer(r, bind->call_id, deadline, &pdu, &ack, err, errlen);
	if (rc)
		return rc;
	if (!pdu.has_auth || pdu.auth.type != DCERPC_AUTH_TYPE_NTLMSSP ||
	    pdu.auth.level != auth->level || pdu.auth.context_id != AUTH_CTX_ID) {
		seterr(err, errlen,
		       "%s: bind_ack carries no NTLMSSP CHALLENGE for our auth context "
		       "(type %u level %u context 0x%x)",
		       r->peer, pdu.auth.type, pdu.auth.level, pdu.auth.context_id);
		return -EBADMSG;
	}

	void *tmp = talloc_new(NULL);
	if (!tmp) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct ntlmssp_client_params p = {
	    .user = auth->user,
	    .password = auth->password,
	    .domain = auth->domain ? auth->domain : "",
	    .workstation = auth->workstation ? auth->workstation : "",
	};
	struct ntlmssp_client_result res;
	uint8_t *am = NULL;
	size_t al = 0;
	rc = ntlmssp_client_authenticate(tmp, &p, neg, (size_t)nl, pdu.auth.token,
	                                 pdu.auth.token_len, &am, &al, &res);
	if (rc) {
		seterr(err, errlen, "%s: NTLMSSP: %s", r->peer,
		       rc == -EBADMSG           ? "malformed CHALLENGE"
		       : rc == -EPROTONOSUPPORT ? "the server offers no NTLM with Unicode"
		       : rc == -EINVAL          ? "invalid UTF-8 in the credentials"
		                                : strerror(-rc));
		goto out;
	}
	uint32_t need = NTLMSSP_NEGOTIATE_SIGN | NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY |
	                (auth->level == DCERPC_AUTH_LEVEL_PRIVACY ? NTLMSSP_NEGOTIATE_SEAL : 0);
	if ((res.flags & need) != need || res.anonymous) {
		seterr(err, errlen,
		       "%s: NTLMSSP: the server does not grant %s with extended session security "
		       "(flags 0x%08x)",
		       r->peer, auth->level == DCERPC_AUTH_LEVEL_PRIVACY ? "sealing" : "signing",
		       res.flags);
		rc = -EPROTO;
		goto out;
	}
	if (al > UINT16_MAX) {
		rc = -E2BIG;
		seterr(err, errlen, "NTLMSSP AUTHENTICATE too large");
		goto out;
	}
	a.token = am;
	a.token_len = (uint16_t)al;
	n = dcerpc_auth3_encode(r->wbuf, sizeof(r->wbuf), bind->call_id, &a);
	if (n < 0) {
		rc = (int)n;
		seterr(err, errlen, "encoding AUTH3: %s", strerror(-rc));
		goto out;
	}
	rc = ntlmssp_sec_init(&r->sec, &res);
	if (rc) {
		seterr(err, errlen, "NTLMSSP security context: %s", strerror(-rc));
		goto out;
	}
	rc = send_all(r, r->wbuf, (size_t)n, deadline);
	if (rc)
		seterr(err, errlen, "%s: sending AUTH3: %s", r->peer, io_what(rc));
out:
	smb_wipe(&res, sizeof(res));
	if (am)
		smb_wipe(am, al);
	talloc_free(tmp);
	return rc;
}

int rpc_tcp_bind(struct rpc_tcp *r, const struct dcerpc_syntax *iface,
                 const struct rpc_tcp_auth *auth, unsigned timeout_ms, char *err, size_t errlen)
{
	seterr(err, errlen, "%s", "");
	if (!r || !iface) {
		seterr(err, errlen, "no connection or interface");
		return -EINVAL;
	}
	if (r->dead || r->bound) {
		seterr(err, errlen, "%s: %s", r->peer,
		       r->dead ? "connection unusable after an earlier error" : "already bound");
		return r->dead ? -ENOTCONN : -EINVAL;
	}
	if (auth && ((auth->level != DCERPC_AUTH_LEVEL_INTEGRITY &&
	              auth->level != DCERPC_AUTH_LEVEL_PRIVACY) ||
	             !auth->user || !auth->password)) {
		seterr(err, errlen,
		       "auth level must be 5 (integrity) or 6 (privacy), with a user "
		       "and a password");
		return -EINVAL;
	}
	uint64_t deadline = deadline_of(timeout_ms);
	const struct dcerpc_ctx ctx = {
	    .id = CTX_ID, .abstract = *iface, .transfer = &dcerpc_ndr_syntax, .n_transfer = 1};
	const struct dcerpc_bind bind = {
	    .ptype = DCERPC_PTYPE_BIND,
	    .pfc_flags = auth ? DCERPC_PFC_SUPPORT_HEADER_SIGN : 0,
	    .call_id = r->call_id++,
	    .max_xmit_frag = RPC_TCP_MAX_FRAG,
	    .max_recv_frag = RPC_TCP_MAX_FRAG,
	    .ctx = &ctx,
	    .n_ctx = 1,
	};
	int rc;
	if (auth) {
		rc = bind_auth(r, &bind, auth, deadline, err, errlen);
	} else {
		ssize_t n = dcerpc_bind_encode(r->wbuf, sizeof(r->wbuf), &bind, NULL);
		rc = n < 0 ? (int)n : send_all(r, r->wbuf, (size_t)n, deadline);
		if (rc) {
			seterr(err, errlen, "%s: sending the bind: %s", r->peer, io_what(rc));
		} else {
			struct dcerpc_pdu pdu;
			struct dcerpc_bind_ack ack;
			rc = bind_answer(r, bind.call_id, deadline, &pdu, &ack, err, errlen);
			if (!rc && pdu.has_auth) {
				seterr(err, errlen,
				       "%s: bind_ack to an unauthenticated bind "
				       "carries an auth trailer",
				       r->peer);
				rc = -EBADMSG;
			}
		}
	}
	if (rc) {
		r->dead = true;
		ntlmssp_sec_free(&r->sec);
		smb_debug("rpc_tcp: bind failed: %s", err ? err : "");
		return rc;
	}
	r->bound = true;
	r->level = auth ? auth->level : 0;
	smb_debug("rpc_tcp %s: bound (auth level %u, header signing %s, max_xmit_frag %u)", r->peer,
	          r->level, r->hdr_sign ? "yes" : "no", r->max_xmit);
	return 0;
}

/* ---- calls ----------------------------------------------------------------- */

/* Sign or seal the request fragment in r->wbuf[0, n). */
static int protect(struct rpc_tcp *r, size_t n)
{
	struct dcerpc_auth_span sp;
	int rc = dcerpc_auth_span(r->wbuf, n, &sp);
	if (rc)
		return rc;
	if (r->level == DCERPC_AUTH_LEVEL_PRIVACY)
		return ntlmssp_sec_seal(&r->sec, r->wbuf + sp.stub_off, sp.stub_len, r->wbuf,
		                        sp.signed_len, r->wbuf + sp.token_off);
	return ntlmssp_sec_sign(&r->sec, r->wbuf, sp.signed_len, r->wbuf + sp.token_off);
}

/* Check (and unseal) the answer fragment in r->rbuf[0, n) framed as pdu. */
static int unprotect(struct rpc_tcp *r, size_t n, const struct dcerpc_pdu *pdu, char *err,
                     size_t errlen)
{
	if (!pdu->has_auth || pdu->auth.type != DCERPC_AUTH_TYPE_NTLMSSP ||
	    pdu->auth.level != r->level || pdu->auth.context_id != AUTH_CTX_ID ||
	    pdu->auth.token_len != NTLMSSP_SIG_LEN) {
		seterr(err, errlen,
		       "%s: answer without our auth trailer (auth %s, type %u level %u "
		       "context 0x%x, %u-byte token)",
		       r->peer, pdu->has_auth ? "present" : "absent", pdu->auth.type,
		       pdu->auth.level, pdu->auth.context_id, pdu->auth.token_len);
		return -EBADMSG;
	}
	struct dcerpc_auth_span sp;
	if (dcerpc_auth_span(r->rbuf, n, &sp)) {
		seterr(err, errlen, "%s: malformed auth trailer", r->peer);
		return -EBADMSG;
	}
	int rc;
	if (r->level == DCERPC_AUTH_LEVEL_PRIVACY)
		rc = ntlmssp_sec_unseal(&r->sec, r->rbuf + sp.stub_off, sp.stub_len, r->rbuf,
		                        sp.signed_len, r->rbuf + sp.token_off);
	else
		rc = ntlmssp_sec_verify(&r->sec, r->rbuf, sp.signed_len, r->rbuf + sp.token_off);
	if (rc == -EBADMSG)
		seterr(err, errlen, "%s: bad NTLMSSP signature on an answer", r->peer);
	else if (rc)
		seterr(err, errlen, "%s: NTLMSSP: %s", r->peer, strerror(-rc));
	return rc;
}

static int send_request(struct rpc_tcp *r, uint32_t call_id, uint16_t opnum, const uint8_t *stub,
                        size_t stub_len, uint64_t deadline, char *err, size_t errlen)
{
	/* a fragment's stub: what fits beside the header, the padding and the
	 * trailer; a multiple of the padding's alignment when signed */
	size_t chunk = r->max_xmit - DCERPC_REQ_HDR_LEN;
	if (r->level) {
		chunk -= DCERPC_AUTH_HDR + NTLMSSP_SIG_LEN;
		chunk -= chunk % DCERPC_AUTH_PAD_ALIGN;
	}
	const struct dcerpc_auth a = {.type = DCERPC_AUTH_TYPE_NTLMSSP,
	                              .level = r->level,
	                              .context_id = AUTH_CTX_ID,
	                              .token_len = NTLMSSP_SIG_LEN};
	size_t off = 0;
	do {
		size_t take = stub_len - off < chunk ? stub_len - off : chunk;
		struct dcerpc_request req = {
		    .pfc_flags = (uint8_t)((off == 0 ? DCERPC_PFC_FIRST_FRAG : 0) |
		                           (off + take == stub_len ? DCERPC_PFC_LAST_FRAG : 0)),
		    .call_id = call_id,
		    .alloc_hint = (uint32_t)(stub_len - off),
		    .ctx_id = CTX_ID,
		    .opnum = opnum,
		};
		struct smb_wr w;
		dcerpc_request_begin(&w, r->wbuf, sizeof(r->wbuf), &req);
		smb_wr_bytes(&w, stub + off, take);
		ssize_t n = dcerpc_request_end(&w, &req, r->level ? &a : NULL, r->max_xmit);
		if (n < 0) {
			seterr(err, errlen, "encoding a request fragment: %s", strerror((int)-n));
			return (int)n;
		}
		if (r->level) {
			int rc = protect(r, (size_t)n);
			if (rc) {
				seterr(err, errlen, "NTLMSSP: protecting a request: %s",
				       strerror(-rc));
				return rc;
			}
		}
		int rc = send_all(r, r->wbuf, (size_t)n, deadline);
		if (rc) {
			seterr(err, errlen, "%s: sending opnum %u: %s", r->peer, opnum,
			       io_what(rc));
			return rc;
		}
		off += take;
	} while (off < stub_len);
	return 0;
}

int rpc_tcp_call(struct rpc_tcp *r, uint16_t opnum, const uint8_t *stub, size_t stub_len,
                 uint8_t *out, size_t cap, size_t *out_len, unsigned timeout_ms,
                 uint32_t *fault_status, char *err, size_t errlen)
{
	seterr(err, errlen, "%s", "");
	if (out_len)
		*out_len = 0;
	if (fault_status)
		*fault_status = 0;
	if (!r || (!stub && stub_len) || (!out && cap) || !out_len || stub_len > UINT32_MAX) {
		seterr(err, errlen, "invalid arguments");
		return -EINVAL;
	}
	if (r->dead || !r->bound) {
		seterr(err, errlen, "%s: %s", r->peer,
		       r->dead ? "connection unusable after an earlier error" : "not bound");
		return r->dead ? -ENOTCONN : -EINVAL;
	}
	uint64_t deadline = deadline_of(timeout_ms);
	uint32_t call_id = r->call_id++;
	int rc = send_request(r, call_id, opnum, stub, stub_len, deadline, err, errlen);
	struct dcerpc_reasm ra;
	dcerpc_reasm_init(&ra, out, cap);
	while (!rc) {
		ssize_t n = recv_pdu(r, deadline, err, errlen);
		if (n < 0) {
			rc = (int)n;
			break;
		}
		struct dcerpc_pdu pdu;
		struct dcerpc_response rsp;
		if (dcerpc_pdu_decode(r->rbuf, (size_t)n, &pdu) != n) {
			seterr(err, errlen, "%s: malformed PDU in answer to opnum %u", r->peer,
			       opnum);
			rc = -EBADMSG;
			break;
		}
		if (pdu.hdr.call_id != call_id) {
			seterr(err, errlen, "%s: answer for call_id %u, want %u", r->peer,
			       pdu.hdr.call_id, call_id);
			rc = -EBADMSG;
			break;
		}
		if (pdu.hdr.ptype == DCERPC_PTYPE_FAULT) {
			/* a signed fault is checked (and keeps the sequence in
			 * step); an unsigned one is only an error status */
			if (pdu.has_auth && r->level) {
				rc = unprotect(r, (size_t)n, &pdu, err, errlen);
				if (rc)
					break;
			}
			if (dcerpc_response_decode(&pdu, &rsp) != -EREMOTEIO) {
				seterr(err, errlen, "%s: malformed fault", r->peer);
				rc = -EBADMSG;
				break;
			}
			if (fault_status)
				*fault_status = rsp.status;
			seterr(err, errlen, "%s: opnum %u: the server answered with fault 0x%08x%s",
			       r->peer, opnum, rsp.status,
			       rsp.status == 5 ? " (access denied: authentication failed?)"
			       : rsp.status == 0x721
			           ? " (security package error: the server rejected "
			             "our signature or seal)"
			           : "");
			/* the server may still send the rest of a fragmented
			 * request's answer: only an unfragmented call's fault
			 * leaves the stream in step */
			if (!(pdu.hdr.pfc_flags & DCERPC_PFC_LAST_FRAG) || ra.started)
				r->dead = true;
			return -EREMOTEIO;
		}
		if (pdu.hdr.ptype != DCERPC_PTYPE_RESPONSE) {
			seterr(err, errlen, "%s: unexpected PDU type %u in answer to opnum %u",
			       r->peer, pdu.hdr.ptype, opnum);
			rc = -EBADMSG;
			break;
		}
		if (r->level) {
			rc = unprotect(r, (size_t)n, &pdu, err, errlen);
			if (rc)
				break;
		} else if (pdu.has_auth) {
			seterr(err, errlen, "%s: auth trailer on an unauthenticated connection",
			       r->peer);
			rc = -EBADMSG;
			break;
		}
		if (dcerpc_response_decode(&pdu, &rsp) != 0 || rsp.ctx_id != CTX_ID) {
			seterr(err, errlen, "%s: malformed response (context %u)", r->peer,
			       rsp.ctx_id);
			rc = -EBADMSG;
			break;
		}
		rc = dcerpc_reasm_add(&ra, &rsp);
		if (rc == 1) {
			*out_len = ra.len;
			return 0;
		}
		if (rc == -E2BIG)
			seterr(err, errlen, "%s: the answer to opnum %u is larger than %zu bytes",
			       r->peer, opnum, cap);
		else if (rc)
			seterr(err, errlen, "%s: answer fragments out of order", r->peer);
	}
	r->dead = true;
	smb_debug("rpc_tcp: call failed: %s", err ? err : "");
	return rc;
}

/* ---- the endpoint mapper -------------------------------------------------- */

/* What is left of timeout_ms since start (at least 1); 0 stays 0 (none). */
static unsigned left_ms(uint64_t start, unsigned timeout_ms)
{
	uint64_t spent = now_ms() - start;
	if (!timeout_ms)
		return 0;
	return spent < timeout_ms ? (unsigned)(timeout_ms - spent) : 1;
}

int rpc_tcp_epm_map(void *mem, const char *addr, const struct dcerpc_syntax *iface,
                    unsigned timeout_ms, int cancel_fd, uint16_t *port, char *err, size_t errlen)
{
	if (!iface || !port) {
		seterr(err, errlen, "invalid arguments");
		return -EINVAL;
	}
	uint64_t start = now_ms();
	struct rpc_tcp *r;
	int rc =
	    rpc_tcp_connect(mem, addr, DCERPC_EPM_PORT, timeout_ms, cancel_fd, &r, err, errlen);
	if (rc)
		return rc;
	rc = rpc_tcp_bind(r, &dcerpc_epm_syntax, NULL, left_ms(start, timeout_ms), err, errlen);
	if (rc)
		goto out;
	uint8_t stub[256], ans[4096];
	ssize_t n = dcerpc_epm_map_encode(stub, sizeof(stub), iface, DCERPC_EPM_MAX_TOWERS);
	if (n < 0) {
		rc = (int)n;
		seterr(err, errlen, "encoding ept_map: %s", strerror(-rc));
		goto out;
	}
	size_t al = 0;
	uint32_t fault = 0;
	rc = rpc_tcp_call(r, DCERPC_EPM_OPNUM_MAP, stub, (size_t)n, ans, sizeof(ans), &al,
	                  left_ms(start, timeout_ms), &fault, err, errlen);
	if (rc)
		goto out;
	uint8_t ip[4];
	uint32_t status = 0;
	rc = dcerpc_epm_map_decode(ans, al, iface, port, ip, &status);
	if (rc == -ENOENT)
		seterr(err, errlen,
		       "%s: the endpoint mapper knows no TCP endpoint of the "
		       "interface (status 0x%08x)",
		       r->peer, status);
	else if (rc)
		seterr(err, errlen, "%s: malformed ept_map answer", r->peer);
	else if (*port == 0) {
		seterr(err, errlen, "%s: ept_map answered port 0", r->peer);
		rc = -EBADMSG;
	}
out:
	rpc_tcp_close(r);
	return rc;
}
