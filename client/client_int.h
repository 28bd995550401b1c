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
 * manager's own state (c->mgr_state, opaque here); the open handles
 * (c->opens, opens.c's), the leases (c->leases, lease.c's) and the SID
 * map (c->sidmap, sidmap.c's) belong to their modules.  Lifetime:
 * smb_client_destroy() frees it.
 *
 * Each object has its own header, with its contract; include the ones a
 * file uses, not this one for them:
 *   client/session.h  struct smb_session, struct smb_tree; channel set-up
 *                     (negotiate, session set-up, tree connect)
 *   client/chan.h     struct smb_chan; opening, publishing, discarding one
 *   client/request.h  requests to the tree: made, submitted and waited for,
 *                     CREATEs appended
 *   client/opens.h    the table of open handles, oplock breaks (opens.c,
 *                     c->opens)
 *   client/lease.h    leases, lease breaks, their counts (lease.c,
 *                     c->leases)
 *   client/sidmap.h   owner and group SIDs to Unix ids (sidmap.c, c->sidmap)
 * and below them client/conn.h (one connection, its requests) and
 * client/chanmgr.h (what client/ asks of the channel manager).
 */
#ifndef SMBRDMA_CLIENT_CLIENT_INT_H
#define SMBRDMA_CLIENT_CLIENT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/chanmgr.h"        /* the manager's table; enum smb_sched_kind */
#include "client/client.h"         /* struct smb_client_opts, the callbacks, the limits */
#include "client/conn.h"           /* enum smb_transport_kind */
#include "client/dial_race.h"      /* struct smb_dial_racers */
#include "client/lease.h"          /* struct smb_leases */
#include "client/session.h"        /* struct smb_session, struct smb_tree */
#include "client/transport_quic.h" /* struct smb_quic_params */

struct ev_loop;
struct smb_chan;
struct smb_opens;
struct smb_sidmap;

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
	struct smb_quic_params quic; /* its cancel_fd is cancel_fd */
	/* eventfd, written once by smb_client_destroy(): a connect in progress
	 * (the manager's reconnect, a dial race's contestant) gives up at once
	 * instead of waiting out its timeout; closed with the client. */
	int cancel_fd;
	struct smb_dial_racers racers; /* transport=auto contestants still running */
	unsigned timeout_ms;
	bool hard; /* requests have no deadline and wait for reconnects forever */
	struct ev_loop *loop;
	bool loop_borrowed; /* loop is another client's (a DFS link's target runs on
	                       the namespace's loop): not freed with this one */
	/* The DFS namespace this client's share roots (client/dfs_ns.h), made
	 * by smb_client_open() when the tree connect says the share is in
	 * one; NULL otherwise.  Freed first by smb_client_destroy(). */
	struct smb_dfs *dfs;
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
	struct smb_opens *opens;  /* client/opens.c: handles to reopen (opens.h) */
	struct smb_leases leases; /* client/lease.c's (lease.h) */
	bool durable;             /* ask for durable v2 handles (3.x) */
	bool no_lease;            /* ask for neither lease nor oplock (nolease) */
	/* A CREATE's QFid context came back with the file id (atomic; set once
	 * by client/ops.c on the loop thread, read by smb_open() callers):
	 * from then on an open that makes a file goes without QUERY_INFO. */
	bool qfid_answered;
	/* smb_stat() in steps or as the compound (client/ops.c, "lookups in
	 * steps"): the mode (set before use, smb_client_set_meta_split()), and
	 * running means in us of the compound's round trip and of a lone
	 * request's, with the count of lookups decided (all atomic, relaxed). */
	enum smb_meta_split meta_split;
	struct {
		uint64_t compound_us, single_us, lookups;
	} meta_lat;
	/* Where else the share is: a DFS link's targets in referral order
	 * (client/dfs_ns.c sets them, smb_client_set_targets(), after the
	 * client is open and again when the referral is refreshed; under
	 * chans_lock), alts[alt_cur] the one in use.  When a reconnect attempt
	 * fails, the channel manager moves to the next (smb_client_retarget(),
	 * session.h).  NULL/0: only the one. */
	struct smb_alt_target {
		char *host, *share, *unc, *addr;
	} * alts;
	int nalts;
	int alt_cur;               /* atomic */
	uint64_t retargets;        /* atomic: moves to another target */
	struct smb_sidmap *sidmap; /* client/sidmap.c, made on first use (atomic) */
	/* A planned move (multichannel/chanmgr.c, smb_mgr_move()): while set,
	 * the channels' conns refuse new requests (conn->hold points here)
	 * and the manager parks them until the session is up at the new
	 * address; cleared by the manager then (atomic). */
	bool moving;
	/* The witness client's report (multichannel/witness.c writes it,
	 * smb_client_get_stats() copies it), under witness_lock. */
	struct smb_witness_info witness;
	pthread_mutex_t witness_lock;
	unsigned echo_ms;    /* keepalive of a lone channel; 0 = off */
	uint64_t reconnects; /* atomic */
	/* Since when no channel lives (ms, atomic; 0 = one does).  Requests
	 * wait for the reconnect at most timeout_ms from then (`timeout=`,
	 * multichannel/failover.c): a server that stays away longer gets
	 * calls failing at once, not each one waiting the whole timeout. */
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

/* A deep copy of o (opts.c), a talloc child of ctx: every string is its
 * own, the password is wiped when the copy is freed.  NULL: no memory. */
struct smb_client_opts *smb_client_opts_dup(void *ctx, const struct smb_client_opts *o);

#endif
