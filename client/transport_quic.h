/* client/transport_quic.h — SMB2 over QUIC ([MS-SMB2] 2.1: TLS 1.3, ALPN
 * "smb", UDP port 443 by default), a third implementation of the transport
 * ops of common/transport.h, on ngtcp2 with its GnuTLS crypto helper.
 *
 * What it carries: one client-initiated bidirectional stream with the same
 * framing as Direct TCP (a zero byte and a 24-bit big-endian length before
 * every SMB2 message; reassembled by client/msg_framer.h).  Loss recovery,
 * congestion control, keep-alive and path migration are ngtcp2's.  Datagrams
 * are up to 1452 bytes (ngtcp2's path MTU discovery), except to a loopback
 * address, where they are as large as the loopback MTU allows (see
 * quic_loopback_payload() for why).  Bursts go out as UDP GSO batches and
 * come in coalesced (UDP_GRO), where the kernel offers them.
 *
 * TLS: the server's certificate chain is verified against the system trust
 * store, or against only the CA certificates of cafile when one is given, and
 * must name server_name (a DNS name, or an address in an IP SAN); server_name
 * also goes out as SNI unless it is an address.  certfile+keyfile, when given,
 * are offered as a client certificate.  A refused certificate fails connect()
 * with -EKEYREJECTED after logging one line that names the problem (GnuTLS's
 * verification status text).
 *
 * Threads (ngtcp2 is not thread-safe):
 *  - connect() runs the handshake on the caller's thread with poll(); the
 *    connection is touched by no other thread until it returns.  On success
 *    the UDP socket is registered with the loop and from then on only the
 *    loop thread calls into ngtcp2 or GnuTLS.
 *  - send() (any thread) appends to a locked queue and, unless one is already
 *    pending, ev_call()s the loop thread to move the queue onto the stream.
 *    Stream data must stay valid until the peer acknowledges it (ngtcp2
 *    retransmits from the caller's memory), so buf->done(buf, 0) comes when
 *    the whole message is acknowledged, not when it was first sent.
 *  - Timers: one ev_timer, re-armed after every read/write from
 *    ngtcp2_conn_get_expiry(); it drives retransmission, pacing, keep-alive
 *    and the idle timeout.
 *  - Death (idle timeout: no packet from the peer for QUIC_IDLE_MS despite
 *    keep-alives; the peer's CONNECTION_CLOSE; a framing error; an ICMP
 *    error on the socket; shutdown()) is reported once, on the loop thread,
 *    through up->dead, as common/transport.h requires; queued and unacked
 *    messages complete with -ECONNABORTED.
 *  - destroy() (off the loop, after dead or a failed connect) waits for every
 *    ev_call it may still have queued before freeing.
 */
#ifndef SMBRDMA_CLIENT_TRANSPORT_QUIC_H
#define SMBRDMA_CLIENT_TRANSPORT_QUIC_H

#include <stdint.h>

struct ev_loop;
struct smb_transport;
struct smb_transport_up;

/* What the caller knows that a QUIC connection needs.  The strings are
 * copied by smb_transport_quic_new(). */
struct smb_quic_params {
	const char *server_name; /* verified against the certificate; required */
	const char *cafile;      /* PEM CA certificates; NULL = the system trust store */
	const char *certfile;    /* PEM client certificate; NULL = none */
	const char *keyfile;     /* its key; NULL = in certfile */
	/* An fd that becomes readable to abandon connect() (-ECANCELED); -1 = none.
	 * The caller owns it. */
	int cancel_fd;
};

/* Returns -EOPNOTSUPP when built without ngtcp2. */
int smb_transport_quic_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           const struct smb_quic_params *p, struct smb_transport **out);

#endif
