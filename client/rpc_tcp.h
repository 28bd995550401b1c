/* client/rpc_tcp.h — a blocking DCE/RPC client over TCP (ncacn_ip_tcp),
 * optionally authenticated with NTLMSSP at PKT_INTEGRITY or PKT_PRIVACY.
 *
 * For one plain worker thread (the witness client, [MS-SWN]): every call
 * blocks in poll() until its answer, its timeout, a cancellation or an
 * error.  The PDUs are client/proto/dcerpc.h's; the NTLMSSP security
 * context is auth/ntlmssp.h's struct ntlmssp_sec.
 *
 * Protocol: a bind offers one presentation context (id 0, the interface
 * over NDR 2.0) and PFC_SUPPORT_HEADER_SIGN; with auth, the three-legged
 * NTLMSSP exchange of [MS-RPCE] 3.3.1.5.2: bind carrying NEGOTIATE,
 * bind_ack carrying CHALLENGE, AUTH3 carrying AUTHENTICATE (which has no
 * answer: wrong credentials show at the first call, as a fault or a closed
 * connection).  Each request fragment is signed (level 5) or sealed (level
 * 6) over the whole PDU through its sec_trailer (NTLMSSP with extended
 * session security signs the whole PDU whichever way the server answers
 * PFC_SUPPORT_HEADER_SIGN, as Samba does); each answer fragment's
 * auth trailer must name our auth type, level and context id, and its
 * signature is checked (after unsealing) before any stub byte is used.
 *
 * Everything the server sends is hostile: a fragment's frag_length is
 * checked against the size offered in the bind before it is read; the
 * call_id, ptype, fragment flags and presentation context of every answer
 * are checked.  A fault is reported with its status (-EREMOTEIO); a fault
 * without an auth trailer is taken unverified, since Samba sends them so
 * when it refuses a call (its status is used only as an error, never as
 * data).  After any error other than -EREMOTEIO the connection is in an
 * unknown state (a partial PDU, a security context out of step) and every
 * later call returns -ENOTCONN: close it and connect again.
 *
 * Errors are -errno with a clear sentence in err (always NUL-terminated
 * when errlen > 0): -ETIMEDOUT, -ECANCELED, -ECONNRESET (the peer closed
 * or reset), -ECONNREFUSED, -EBADMSG (malformed answer, bad signature,
 * wrong call_id), -EPROTO (bind refused, NTLMSSP refused the level),
 * -EREMOTEIO (a fault: *fault_status), -E2BIG (an answer larger than the
 * caller's buffer), -EINVAL, -ENOMEM, -ENOTCONN.
 *
 * Timeouts are in milliseconds for the whole operation; 0 waits forever
 * (a long poll).  cancel_fd (-1 for none) is any descriptor that becomes
 * readable to give up at once (an eventfd or a pipe the caller owns and
 * never reads here); rpc_tcp_cancel() does the same from any thread.
 *
 * Ownership: rpc_tcp_connect() allocates the handle as a talloc child of
 * mem; rpc_tcp_close() (or freeing mem) closes the socket and wipes the
 * keys.  Threads: one thread calls everything but rpc_tcp_cancel(), which
 * any thread may call while the handle lives.
 */
#ifndef SMBRDMA_CLIENT_RPC_TCP_H
#define SMBRDMA_CLIENT_RPC_TCP_H

#include <stddef.h>
#include <stdint.h>

struct dcerpc_syntax;
struct rpc_tcp;

/* The largest fragment offered and accepted (both directions). */
#define RPC_TCP_MAX_FRAG 5840

struct rpc_tcp_auth {
	const char *user, *password, *domain, *workstation; /* UTF-8; domain/ws may be NULL */
	uint8_t level;                                      /* 5 PKT_INTEGRITY, 6 PKT_PRIVACY */
};

/* A TCP connection to addr (numeric IPv4, or IPv6 with or without [ ])
 * port. */
int rpc_tcp_connect(void *mem, const char *addr, uint16_t port, unsigned timeout_ms, int cancel_fd,
                    struct rpc_tcp **out, char *err, size_t errlen);
/* Bind to iface (auth NULL: no authentication).  Once per connection. */
int rpc_tcp_bind(struct rpc_tcp *r, const struct dcerpc_syntax *iface,
                 const struct rpc_tcp_auth *auth, unsigned timeout_ms, char *err, size_t errlen);
/* One call: stub[0, stub_len) as opnum, fragmented to the negotiated size;
 * the answer's stub, reassembled, into out[0, cap) and *out_len. */
int rpc_tcp_call(struct rpc_tcp *r, uint16_t opnum, const uint8_t *stub, size_t stub_len,
                 uint8_t *out, size_t cap, size_t *out_len, unsigned timeout_ms,
                 uint32_t *fault_status, char *err, size_t errlen);
/* Ask the endpoint mapper on addr port 135 (unauthenticated) where iface
 * listens over ncacn_ip_tcp: *port.  -ENOENT when it is not registered. */
int rpc_tcp_epm_map(void *mem, const char *addr, const struct dcerpc_syntax *iface,
                    unsigned timeout_ms, int cancel_fd, uint16_t *port, char *err, size_t errlen);
/* Makes the blocking call of another thread (and every later one) return
 * -ECANCELED.  Async-signal-safe (one write to an eventfd). */
void rpc_tcp_cancel(struct rpc_tcp *r);
void rpc_tcp_close(struct rpc_tcp *r);

#endif
