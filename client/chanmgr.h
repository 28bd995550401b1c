/* client/chanmgr.h — what client/ asks of the channel manager, internal.
 *
 * client/ keeps the session, tree, open and request objects; which
 * channels exist, which one carries a request, and bringing channels back
 * belong to the channel manager, which multichannel/ implements
 * (multichannel/chanmgr.c).  client/ never includes multichannel/: the
 * manager is handed in as this table when the client is made
 * (smb_client_open), so the dependency points one way, multichannel/ ->
 * client/.  smb_client_connect() (client.h) is smb_client_open() with
 * multichannel's manager; a unit test may pass its own table, or none.
 *
 * Calls, all with the client alive (between smb_client_open() and the end
 * of smb_client_destroy()):
 *  - start: once, at the end of smb_client_open(), on its thread, after
 *    the tree connect and the deep copy of the options (c->opts).  It may
 *    bind further channels before it returns.  0, or -errno (the open
 *    fails).  The manager's state hangs off c->mgr_state.
 *  - stop: once, from smb_client_destroy() after c->closing is set and
 *    before the channels close; joins whatever thread the manager runs.
 *  - wake: any thread, loop thread included, never blocks: a channel died,
 *    or a request parked, so look at the channels now.
 *  - pick: any thread, for every request; the channel for a request of
 *    this kind and size.  Never NULL: channel 0 when none is alive (its
 *    requests then fail or park with the channel's error).
 *  - orphan: ch died (it is marked dead) with req in flight, or its dead
 *    transport refused req's send: the loop thread (death report) or the
 *    sender's.  true: the manager took req (replayed on another channel or
 *    parked until one is back; it completes later); false: the caller
 *    fails it.  Must not block.
 */
#ifndef SMBRDMA_CLIENT_CHANMGR_H
#define SMBRDMA_CLIENT_CHANMGR_H

#include <stdbool.h>
#include <stddef.h>

struct smb_client;
struct smb_req;
struct smb_chan;
struct smb_client_opts;

enum smb_sched_kind {
	SMB_SCHED_META, /* small request: lowest latency */
	SMB_SCHED_BULK, /* READ/WRITE payload of len bytes */
};

struct smb_chanmgr_ops {
	int (*start)(struct smb_client *c);
	void (*stop)(struct smb_client *c);
	void (*wake)(struct smb_client *c);
	struct smb_chan *(*pick)(struct smb_client *c, enum smb_sched_kind kind, size_t len);
	bool (*orphan)(struct smb_chan *ch, struct smb_req *req);
	/* Optional: req was refused by ch's conn because the client is moving
	 * (c->moving, conn->hold); the submitter's thread.  true: the manager
	 * parked it until the move is over; false: the conn sends it (the move
	 * ended meanwhile).  Must not block. */
	bool (*hold)(struct smb_chan *ch, struct smb_req *req);
};

/* smb_client_connect() with the channel manager mgr (NULL: none — one
 * channel, never renewed, requests not replayed after its loss).  mgr must
 * outlive the client. */
int smb_client_open(const struct smb_client_opts *o, const struct smb_chanmgr_ops *mgr,
                    struct smb_client **out, char *errbuf, size_t errlen);
/* The same on loop, another client's event loop, instead of one of its
 * own (NULL: its own): its callbacks run on that loop's thread, which
 * must outlive it (client/dfs_ns.c opens a DFS link's target so, beside
 * the namespace's root).  Such a client is destroyed off that loop's
 * thread. */
struct ev_loop;
int smb_client_open_on(const struct smb_client_opts *o, const struct smb_chanmgr_ops *mgr,
                       struct ev_loop *loop, struct smb_client **out, char *errbuf, size_t errlen);

#endif
