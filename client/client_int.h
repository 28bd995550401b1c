/* client/client_int.h — internal to client/ and the channel manager above
 * it: what a struct smb_client holds.
 *
 * A client is made of objects with one owner each: the mount's settings
 * (struct smb_client's own fields: immutable after smb_client_open()
 * returns, except where noted), the session and the tree (struct
 * smb_session, struct smb_tree: written by smb_client_open() and then
 * only by the channel manager's reconnect, see there), the channels
 * (struct smb_chan, each with its conn and its own lock; the array is
 * appended to by the channel manager under chans_lock), and the
 * manager's own state (c->mgr_state, opaque here).  Lifetime:
 * smb_client_destroy() frees it.
 */
#ifndef SMBRDMA_CLIENT_CLIENT_INT_H
#define SMBRDMA_CLIENT_CLIENT_INT_H

#include "client/client.h"
#include "client/conn.h"
#include "client/dial_race.h"
#include "client/transport_quic.h"
#include "client/offload.h"
#include "client/chanmgr.h"

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

/* The session ([MS-SMB2] 3.2.1.3): what NEGOTIATE and SESSION_SETUP on
 * channel 0 settled.  One writer at a time: smb_client_open() (client/
 * session.c) before the mount is used, then the channel manager's
 * reconnect (multichannel/reconnect.c) on its thread, only while no
 * channel lives (so no request is being built on a live one).  Read on
 * any thread, without a lock: a request built during a reconnect may
 * carry the old session id, which the rebind before its resend fixes
 * (multichannel/failover.c req_rebind). */
struct smb_session {
	uint16_t dialect;
	uint16_t server_security_mode;
	uint32_t server_caps;
	uint8_t client_guid[16]; /* the same on every channel (binding needs it) */
	/* What channel 0's NEGOTIATE said, for FSCTL_VALIDATE_NEGOTIATE_INFO. */
	uint32_t neg_caps;
	uint16_t neg_security_mode;
	uint16_t neg_dialects[8];
	int neg_ndialects;
	uint8_t server_guid[16];
	uint32_t max_read, max_write, max_transact;
	uint64_t session_id;
	uint64_t previous_session_id; /* set by reconnect for its SESSION_SETUP */
	struct smb_signing signing;   /* Session.SigningKey */
	uint8_t session_key[16];      /* Session.SessionKey (binding may need it) */
	struct smb_crypt crypt;       /* Session.EncryptionKey/DecryptionKey, cipher */
	bool guest;
	uint16_t channel_sequence; /* Session.ChannelSequence (atomic) */
	bool posix;                /* SMB3 POSIX extensions negotiated (set once, before
	                              the mount is used; re-checked on reconnect) */
	bool posix_share_off;      /* ... but the share does not use them
	                              (smb_posix_probe()): posix stays false */
};

/* The tree connect ([MS-SMB2] 3.2.1.4): the share's name, set once by
 * smb_client_open(), and what its TREE_CONNECT answered, rewritten by
 * the same writers as struct smb_session under the same rule. */
struct smb_tree {
	char *share, *unc;
	uint32_t tree_id;
	uint32_t share_type;
};

struct smb_client {
	/* The mount's options: one deep copy (opts.c) made by
	 * smb_client_open() before the channel manager starts, read-only
	 * afterwards, freed with c (its password wiped). */
	const struct smb_client_opts *opts;
	char *host, *user, *domain;
	char *addr; /* numeric address to dial instead of resolving host; NULL */
	uint16_t port;
	bool rdma;
	/* How channel 0 is dialled: dial_kind, or (dial_auto) the TCP/QUIC
	 * race; and how it was (stream_kind: TCP or QUIC, what multichannel's
	 * non-RDMA channels use).  quic: server name and certificates, strings
	 * in c. */
	enum smb_transport_kind dial_kind, stream_kind;
	bool dial_auto;
	uint16_t quic_port;
	struct smb_quic_params quic;
	struct smb_dial_racers racers; /* transport=auto contestants still running */
	unsigned timeout_ms;
	bool hard; /* requests have no deadline and wait for reconnects forever */
	struct ev_loop *loop;
	struct smb_conn *conn; /* chans[0]->conn: session set-up, tree connect, logoff */
	/* Channels: chans[0] is the one the session was set up on.  Appended
	 * under chans_lock; nchans is read without it (atomic, release/acquire). */
	struct smb_chan *chans[SMB_CLIENT_MAX_CHANNELS];
	int nchans;
	pthread_mutex_t chans_lock;

	struct smb_session sess;
	struct smb_tree tree;
	bool closing; /* atomic: smb_client_destroy() began */
	/* The channel manager (chanmgr.h): set by smb_client_open() before
	 * mgr->start, NULL without one; its state is its own. */
	const struct smb_chanmgr_ops *mgr;
	struct smb_chanmgr *mgr_state;
	struct smb_opens *opens; /* client/opens.c: handles to reopen */
	smb_break_cb on_break;   /* smb_client_set_break_cb(); set before any open */
	void *on_break_arg;
	smb_lease_break_cb on_lease_break; /* smb_client_set_lease_break_cb() */
	void *on_lease_break_arg;
	uint64_t leases_granted, lease_breaks, lease_break_acks; /* atomic (stats) */
	bool durable;              /* ask for durable v2 handles (3.x) */
	bool no_lease;             /* ask for neither lease nor oplock (nolease) */
	struct smb_sidmap *sidmap; /* client/sidmap.c, made on first use (atomic) */
	unsigned echo_ms;          /* keepalive of a lone channel; 0 = off */
	uint64_t reconnects;       /* atomic */
	/* Since when no channel lives (ms, atomic; 0 = one does).  Requests
	 * wait for the reconnect at most SMB_RECONNECT_GRACE_MS from then:
	 * a server that stays away gets calls failing fast, not each one
	 * waiting the whole timeout. */
	uint64_t down_since_ms;
	uint64_t payload_bytes_copied; /* atomic */
	uint32_t rdma_threshold;
	/* Caller regions registered by smb_client_region_add(); appended under
	 * chans_lock, read on any thread (nregions is atomic). */
	struct {
		void *addr;
		size_t len;
	} regions[SMB_CLIENT_MAX_REGIONS];
	int nregions;
};

#define SMB_RECONNECT_GRACE_MS 20000

/* How many published channels are not dead (any thread). */
static inline int smb_client_live_channels(struct smb_client *c)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE), live = 0;
	for (int i = 0; i < n; i++)
		live += !__atomic_load_n(&c->chans[i]->dead, __ATOMIC_ACQUIRE);
	return live;
}

/* Is the session sealing its requests (so no RDMA offload: the payload
 * must travel inside the encrypted message)? */
static inline bool smb_client_sealed(struct smb_client *c)
{
	return __atomic_load_n(&c->sess.crypt.active, __ATOMIC_ACQUIRE);
}

/* The channel the manager picks for a request of this kind and size
 * (chanmgr.h); channel 0 without a manager. */
static inline struct smb_chan *smb_client_pick(struct smb_client *c, enum smb_sched_kind kind,
                                               size_t len)
{
	return c->mgr ? c->mgr->pick(c, kind, len) : c->chans[0];
}
/* Wake the manager: a channel died or a request parked (any thread). */
static inline void smb_client_wake_mgr(struct smb_client *c)
{
	if (c->mgr)
		c->mgr->wake(c);
}

/* A request to this client's tree on the channel the scheduler picks for a
 * small (metadata) request. */
struct smb_req *smb_client_req(struct smb_client *c, void *talloc_parent);
/* The client a request belongs to (through its channel). */
static inline struct smb_client *smb_req_client(const struct smb_req *req)
{
	return req->conn->chan->c;
}

/* A request to this client's tree on channel ch. */
struct smb_req *smb_chan_req(struct smb_chan *ch, void *talloc_parent);
/* Submit on req->conn and wait (not on the loop thread).  Returns req->err. */
int smb_client_submit_sync(struct smb_client *c, struct smb_req *req);

/* A deep copy of o (opts.c), a talloc child of ctx: every string is its
 * own, the password is wiped when the copy is freed.  NULL: no memory. */
struct smb_client_opts *smb_client_opts_dup(void *ctx, const struct smb_client_opts *o);

/* Channel set-up (session.c), used for channel 0 by smb_client_connect()
 * and for further channels by multichannel/.  Not on the loop thread. */
int smb_chan_negotiate(struct smb_client *c, struct smb_chan *ch, const struct smb_client_opts *o,
                       uint8_t **sec_blob, size_t *sec_len, void *mem, char *errbuf, size_t errlen);
/* binding: bind ch to the existing session (SMB2_SESSION_FLAG_BINDING). */
int smb_chan_session_setup(struct smb_client *c, struct smb_chan *ch,
                           const struct smb_client_opts *o, bool binding, const uint8_t *blob,
                           size_t blob_len, void *mem, char *errbuf, size_t errlen);
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

/* TREE_CONNECT on ch (the share of c), then (3.0/3.0.2) the negotiation
 * validated.  Not on the loop thread. */
int smb_chan_tree_connect(struct smb_client *c, struct smb_chan *ch, void *mem, char *errbuf,
                          size_t errlen);

/* With the SMB3 POSIX extensions negotiated: does the share use them?  A
 * CREATE of its root with the POSIX context, whose answer must carry one
 * (Samba answers the context on a share with smb3 unix extensions = yes
 * only); if not, c->posix goes false for good and posix_share_off true.
 * On ch, not on the loop thread, before the mount is used. */
void smb_posix_probe(struct smb_client *c, struct smb_chan *ch, void *mem);

/* Append a CREATE to req (ops.c): the args as smb_open() takes them, the
 * oplock level to ask for, and at most one create context (copied). */
int smb_req_add_create(struct smb_req *req, const char *path, const struct smb_open_args *a,
                       uint8_t oplock, const struct smb2_create_ctx *ctx);

/* The same with n (0..SMB2_MAX_CREATE_CTX) create contexts. */
int smb_req_add_create_ctxs(struct smb_req *req, const char *path, const struct smb_open_args *a,
                            uint8_t oplock, const struct smb2_create_ctx *ctx, int n);

#endif
