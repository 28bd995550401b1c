/* client/chan.h — internal to client/ and the channel manager above it:
 * one channel of a client's session (struct smb_chan), and the calls that
 * open, publish and discard one (client/session.c).
 *
 * Owner: the client; a channel is a talloc child of c.  Lifetime: made
 * by smb_chan_open() or smb_client_dial(), unpublished (only its opener
 * uses it, to set it up: session.h); smb_chan_publish() appends it to
 * c->chans under c->chans_lock, and from then on the scheduler may pick
 * it on any thread.  Channel 0 is published at once (session set-up runs
 * on it); the channel manager publishes the others once set up (bound
 * to the session, or in a reconnect's new session).  A channel that is
 * never published is freed by smb_chan_discard(); a published one is
 * never freed before smb_client_destroy().
 *
 * Locks: a channel's own are its conn's (conn->lock, conn.h) and its
 * offload pool's (pool.lock, offload.h).  Fields marked atomic are read
 * and written with atomics; the others are written by the thread setting
 * the channel up (smb_client_open() for channel 0, before the mount is
 * used; the channel manager's thread for the rest and, later, for what it
 * learns of the server's interfaces) and read on any thread.
 */
#ifndef SMBRDMA_CLIENT_CHAN_H
#define SMBRDMA_CLIENT_CHAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "client/client_int.h" /* smb_client_live_channels() reads c->chans */
#include "client/conn.h"       /* struct smb_signing, enum smb_transport_kind */
#include "client/offload.h"    /* struct smb_offload_pool */

/* One channel of the session: a connection and what is per connection.
 * Created before it is published in c->chans; never freed before
 * smb_client_destroy() (a dead channel stays, marked dead), so a pointer
 * taken from c->chans stays valid for the client's life. */
struct smb_chan {
	struct smb_client *c;
	int index;
	struct smb_conn *conn;
	struct smb_signing signing; /* Channel.SigningKey (channel 0 uses the session's) */
	uint8_t preauth[64];        /* the connection's preauth hash (3.1.1) */
	bool rdma;                  /* SMB Direct transport */
	uint64_t link_speed;        /* the server interface's advertised bits/s, 0 unknown */
	uint32_t if_index;          /* the server interface's IfIndex; UINT32_MAX unknown */
	/* What one SMB2 message may carry inline (0 = no transport limit), the
	 * READ/WRITE sizes on this channel, and its offload pool (registered
	 * with this channel's transport, so per channel). */
	uint32_t inline_max_read, inline_max_write;
	uint32_t max_read, max_write;
	struct smb_offload_pool pool;
	int nregions; /* caller regions registered with this transport (pool.lock) */
	/* Scheduler inputs (atomic). */
	uint64_t inflight_bytes;
	uint64_t lat_ewma_us;
	bool dead;
	/* Counts for smbrdmactl (atomic). */
	uint64_t failovers, replays;
	bool seq_bumped;  /* atomic: its loss bumped channel_sequence */
	bool published;   /* atomic: in chans[] (smb_chan_publish) */
	bool reconnected; /* opened by a reconnect (multichannel/reconnect.c) */
};

/* How many published channels are not dead (any thread). */
static inline int smb_client_live_channels(struct smb_client *c)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE), live = 0;
	for (int i = 0; i < n; i++)
		live += !__atomic_load_n(&c->chans[i]->dead, __ATOMIC_ACQUIRE);
	return live;
}

/* Allocate a channel (talloc child of c) with its conn open to addr; kind
 * "quic" uses c->quic. */
int smb_chan_open(struct smb_client *c, enum smb_transport_kind kind, const struct sockaddr *addr,
                  socklen_t addrlen, const char *peer, unsigned connect_timeout_ms,
                  struct smb_chan **out);
/* A channel (unpublished) to the mount's server address, trying each
 * address the name resolves to.  On a name that does not resolve,
 * -EHOSTUNREACH with *gai_error set; else *gai_error is NULL. */
int smb_client_dial(struct smb_client *c, unsigned ctimeout, struct smb_chan **out,
                    const char **gai_error);
/* The port a channel of kind ("tcp", "quic") dials. */
uint16_t smb_client_kind_port(const struct smb_client *c, enum smb_transport_kind kind);
/* Publish a set-up channel: the scheduler may pick it from now on (the
 * manager then sends its parked requests). */
int smb_chan_publish(struct smb_client *c, struct smb_chan *ch);
/* Close and free a channel that was never published. */
void smb_chan_discard(struct smb_chan *ch);

#endif
