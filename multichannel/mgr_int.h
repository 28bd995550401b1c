/* multichannel/mgr_int.h — internal to multichannel/: what the channel
 * manager's thread (chanmgr.c) runs.
 *
 * Everything here runs on the manager thread (never the loop thread: it
 * does synchronous I/O), except smb_setup_slot_cancel().  The objects are
 * talloc children of the client and live as long as it.
 */
#ifndef SMBRDMA_MULTICHANNEL_MGR_INT_H
#define SMBRDMA_MULTICHANNEL_MGR_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smb_client;
struct smb_chan;

/* The channel the manager thread is setting up (opening, negotiating,
 * binding), so that stopping can cut its wait for the server short. */
struct smb_setup_slot {
	pthread_mutex_t lock; /* guards ch and cancelled */
	struct smb_chan *ch;
	bool cancelled;
};
void smb_setup_slot_init(struct smb_setup_slot *s);
/* ch is being set up now (NULL: nothing is).  false after a cancel: the
 * caller discards ch and gives up. */
bool smb_setup_slot_set(struct smb_setup_slot *s, struct smb_chan *ch);
/* Any thread: abort the channel being set up, and refuse any later one. */
void smb_setup_slot_cancel(struct smb_setup_slot *s, const char *why);

/* ---- failover.c: requests whose channel died ------------------------------------- */
/* The parked requests: waiting for any channel (every one is dead).  Part
 * of the manager; lives as long as the client. */
struct smb_park {
	struct smb_client *c;
	pthread_mutex_t lock;   /* guards parked */
	struct smb_req *parked; /* chained by wnext */
	bool timer_armed;       /* atomic: the expiry timer is armed */
};
void smb_park_init(struct smb_park *pk, struct smb_client *c);
/* The manager's orphan call (client/chanmgr.h): replay req on a live
 * channel, or park it.  false: the caller fails it. */
bool smb_park_orphan(struct smb_park *pk, struct smb_chan *ch, struct smb_req *req);
/* A planned move (c->moving): park req, refused by ch's conn while it
 * holds (never sent: it goes out after the move as new) or orphaned by the
 * move's cut (sent: a replay then).  false when no move is under way (or
 * req may not wait): the caller goes on as without one. */
bool smb_park_hold(struct smb_park *pk, struct smb_chan *ch, struct smb_req *req);
/* The move is over: clear c->moving under the park's lock, so that a
 * request parked by smb_park_hold() is in the list the next
 * smb_park_release() sends. */
void smb_park_end_move(struct smb_park *pk);
/* Send the parked requests on a live channel now (any thread; after a
 * channel is published). */
void smb_park_release(struct smb_park *pk);
/* Fail those past their deadline, or all (on the loop thread, via ev_call). */
void smb_park_expire(struct smb_park *pk, bool all);
bool smb_park_any(struct smb_park *pk);

/* ---- mc.c: the server's interfaces and the channels bound to them ----------------- */
struct smb_mc;
/* The extra channels the mount asks for (c->opts: multichannel,
 * max_channels, rdma_channels, interfaces=): checks that the session can
 * have them, binds the first ones (errors are logged: the mount works with
 * the channels it got).  0 with *out NULL when the server or the session
 * cannot (said why), -errno when out of resources. */
int smb_mc_new(struct smb_client *c, struct smb_setup_slot *slot, struct smb_park *park,
               struct smb_mc **out);
/* Query the interface list and bind what is missing, up to max_channels. */
void smb_mc_pass(struct smb_mc *mc);
/* How often to query again without being asked. */
uint64_t smb_mc_requery_ms(const struct smb_mc *mc);
/* Link notifications: the socket to poll (-1: none), and reading what it
 * has (kills the channels over a link that went down).  true: a link came
 * up, so look for channels now. */
int smb_mc_netlink_fd(const struct smb_mc *mc);
bool smb_mc_netlink_read(struct smb_mc *mc);
void smb_mc_close(struct smb_mc *mc);

/* ---- reconnect.c: a new session when every channel is gone ------------------------ */
struct smb_reconn;
int smb_reconn_new(struct smb_client *c, struct smb_setup_slot *slot, struct smb_reconn **out);
/* One attempt; bind_first: try binding to the old session before a new one
 * (multichannel: it may have outlived its connections).  0 when a channel
 * is published; -errno with why set. */
int smb_reconn_attempt(struct smb_reconn *r, bool bind_first, char *why, size_t whylen);

/* ---- chanmgr.c: what the witness asks of the manager --------------------------------- */

struct smb_chanmgr;
/* A planned move of the session to addr (numeric IPv4), on the witness
 * thread: new requests are held (c->moving), those in flight are let
 * finish (up to MOVE_DRAIN_MS), every channel is cut, and the manager
 * thread reconnects to addr and then sends what was held.  Waits for it:
 * 0 once the session is up there; -ETIMEDOUT when it is not after the
 * request timeout (the mount goes back to the address it had). */
int smb_mgr_move(struct smb_chanmgr *m, const char *addr, const char *why);
/* The numeric IPv4 address ch's connection talks to, into out; false
 * (out "") for another family or no connection.  Any thread. */
bool smb_mgr_chan_ipv4(struct smb_chan *ch, char *out, size_t cap);

/* ---- witness.c: the Service Witness client ------------------------------------------ */

struct smb_witness;
/* Start the witness thread of c (`witness`), after the manager's thread.
 * 0 or -errno; *out is stopped and freed by smb_witness_stop() (NULL: no-op),
 * which the manager's stop calls before its own thread ends. */
int smb_witness_start(struct smb_client *c, struct smb_chanmgr *m, struct smb_witness **out);
void smb_witness_stop(struct smb_witness *w);

#endif
