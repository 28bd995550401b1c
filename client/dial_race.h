/* client/dial_race.h — transport=auto: connect over TCP and over QUIC at the
 * same time and keep whichever connects first (what Windows does: port 445
 * may be blocked on the way, UDP 443 may be, or neither).
 *
 * Each contestant runs smb_conn_open() on a thread of its own.  The caller
 * gets the first conn that connected; the loser is abandoned: a QUIC
 * contestant still handshaking is cancelled through its cancel_fd, a TCP
 * one still in connect() finishes on its thread (up to its connect timeout)
 * and closes what it got.  Abandoned threads use the client's event loop, so
 * the client waits for them (smb_dial_racers_wait) before freeing the loop.
 *
 * Threads: smb_dial_race() blocks (not on the loop thread); it touches no
 * talloc memory of the client (the contestants allocate with malloc), so the
 * losers may outlive the call.
 */
#ifndef SMBRDMA_CLIENT_DIAL_RACE_H
#define SMBRDMA_CLIENT_DIAL_RACE_H

#include "client/conn.h" /* enum smb_transport_kind */

#include <pthread.h>
#include <sys/socket.h>

struct ev_loop;
struct smb_quic_params;

/* Contestant threads still running, per client. */
struct smb_dial_racers {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int running; /* under lock */
};

void smb_dial_racers_init(struct smb_dial_racers *r);
/* Wait until no contestant thread runs any more, then destroy r. */
void smb_dial_racers_wait(struct smb_dial_racers *r);

struct smb_dial_spec {
	const struct sockaddr *tcp_addr, *quic_addr;
	socklen_t addrlen;
	const char *tcp_peer, *quic_peer;
	const struct smb_quic_params *quic;
	unsigned connect_timeout_ms, timeout_ms;
	int cancel_fd; /* the client's (smb_conn_open()); the race cancels QUIC with it too */
};

/* Returns 0 with *out (a conn) and *kind (TCP or QUIC), or the error of
 * the last contestant to fail (QUIC's when both fail, as it says more: a
 * refused certificate). */
int smb_dial_race(struct ev_loop *loop, struct smb_dial_racers *racers,
                  const struct smb_dial_spec *spec, struct smb_conn **out,
                  enum smb_transport_kind *kind);

#endif
