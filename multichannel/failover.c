/* multichannel/failover.c — requests whose channel died: replayed on
 * another channel, or parked until the manager brings one back.
 *
 * A conn offers each request in flight at its death (and each send its
 * dead transport refused) to client/session.c's chan_orphan, which hands
 * it here through the manager's orphan call.  Here it is decided
 * ([MS-SMB2] 3.2.4.1.1): with a live channel left (3.x), it goes there as
 * a replay, the ChannelSequence bumped once per lost channel; with none,
 * it is parked (deadline: the request timeout, and no later than the
 * timeout after the loss: `timeout=`; none with `hard`) and the manager
 * is woken.  smb_park_release() sends the parked ones once a channel is
 * published, rebound to the session and tree it belongs to; a loop timer
 * fails those past their deadline every half second even while the
 * manager is blocked in a reconnect attempt.  What a replay may carry and
 * how an answer to a replay is read is client/conn.c's replay class and
 * client/ops.c's business.
 */
#include "client/chan.h"
#include "client/chanmgr.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/opens.h"
#include "client/session.h"
#include "client/proto/smb2.h"
#include "client/proto/smb2_const.h"
#include "common/evloop.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"

#include <errno.h>
#include <string.h>

void smb_park_init(struct smb_park *pk, struct smb_client *c)
{
	pk->c = c;
	pthread_mutex_init(&pk->lock, NULL);
	pk->parked = NULL;
	pk->timer_armed = false;
}

static void park_fail_cb(void *arg);

/* A request going out again after a reconnect: the new session, its tree,
 * the handles' current FileIds.  -EIO when a handle was lost. */
static int req_rebind(struct smb_client *c, struct smb_req *req)
{
	/* The tree id too, even when the session id is already the new one: a
	 * request built between a reconnect's SESSION_SETUP and its
	 * TREE_CONNECT has the new session and the old tree (the server answers
	 * STATUS_NETWORK_NAME_DELETED).  Every tree id we send is c->tree_id. */
	req->session_id = c->sess.session_id;
	if (req->tree_id)
		req->tree_id = c->tree.tree_id;
	return smb_req_fix_fids(c, req);
}

/* Parked requests fail at their deadline even while the channel manager
 * is blocked in an attempt: a loop timer looks every half second. */
static void park_tick(void *arg)
{
	struct smb_park *pk = arg;
	struct smb_client *c = pk->c;
	smb_park_expire(pk, false);
	struct ev_timer *t;
	if (!smb_park_any(pk) || __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE) ||
	    ev_timer_add(c->loop, 500, park_tick, pk, &t) < 0)
		__atomic_store_n(&pk->timer_armed, false, __ATOMIC_RELEASE);
}

static void park_timer_arm(void *arg)
{
	struct smb_park *pk = arg;
	struct ev_timer *t;
	if (ev_timer_add(pk->c->loop, 500, park_tick, pk, &t) < 0)
		__atomic_store_n(&pk->timer_armed, false, __ATOMIC_RELEASE);
}

/* The channel for a request that is sent again: READ/WRITE as bulk (their
 * size is not at hand here), the rest as small requests. */
static struct smb_chan *pick_for(struct smb_client *c, const struct smb_req *req)
{
	uint16_t cmd = req->pdu[0].command;
	bool bulk = cmd == SMB2_READ || cmd == SMB2_WRITE;
	return smb_client_pick(c, bulk ? SMB_SCHED_BULK : SMB_SCHED_META, bulk ? 65536 : 0);
}

/* Put a request (its deadline_ms set) on the parked list; returns whether
 * it is the first one waiting.  park_wake() follows. */
static bool park_push(struct smb_park *pk, struct smb_req *req)
{
	pthread_mutex_lock(&pk->lock);
	bool first = !pk->parked;
	req->wnext = pk->parked;
	pk->parked = req;
	pthread_mutex_unlock(&pk->lock);
	return first;
}

/* After park_push(): make sure the expiry timer runs and the reconnect
 * thread is awake. */
static void park_wake(struct smb_park *pk)
{
	if (!__atomic_exchange_n(&pk->timer_armed, true, __ATOMIC_ACQ_REL) &&
	    ev_call(pk->c->loop, park_timer_arm, pk) < 0)
		__atomic_store_n(&pk->timer_armed, false, __ATOMIC_RELEASE);
	smb_client_wake_mgr(pk->c);
}

bool smb_park_hold(struct smb_park *pk, struct smb_chan *ch, struct smb_req *req)
{
	struct smb_client *c = pk->c;
	if (req->no_replay || __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
		return false;
	bool sent = __atomic_load_n(&req->sends, __ATOMIC_ACQUIRE) > 0;
	pthread_mutex_lock(&pk->lock);
	/* `moving` is cleared under this lock before the release that sends
	 * the parked ones: a request parked here is never left behind */
	if (!__atomic_load_n(&c->moving, __ATOMIC_ACQUIRE) || smb_req_reset_for_replay(req)) {
		pthread_mutex_unlock(&pk->lock);
		return false;
	}
	req->deadline_ms = c->hard ? 0 : ev_now_ms() + c->timeout_ms;
	req->held = !sent;
	req->wnext = pk->parked;
	pk->parked = req;
	pthread_mutex_unlock(&pk->lock);
	if (sent && !__atomic_exchange_n(&ch->seq_bumped, true, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&c->sess.channel_sequence, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&c->witness_lock);
	if (sent)
		c->witness.drain_replays++;
	else
		c->witness.held++;
	pthread_mutex_unlock(&c->witness_lock);
	park_wake(pk);
	return true;
}

void smb_park_end_move(struct smb_park *pk)
{
	pthread_mutex_lock(&pk->lock);
	__atomic_store_n(&pk->c->moving, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pk->lock);
}

/* From ch's death report (loop thread) or a send refused by its dead
 * transport (any thread): move a request that was in flight on
 * ch to a live channel, as a replay ([MS-SMB2] 3.2.4.1.1: the replay flag,
 * and a ChannelSequence bumped once per lost channel). */
bool smb_park_orphan(struct smb_park *pk, struct smb_chan *ch, struct smb_req *req)
{
	struct smb_client *c = pk->c;
	if (req->no_replay || __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
		return false;
	uint16_t cmd = req->pdu[0].command;
	/* A planned move (chanmgr.c) parks what its cut orphans. */
	if (smb_park_hold(pk, ch, req))
		return true;
	struct smb_chan *to = pick_for(c, req);
	bool none = !to || to == ch || __atomic_load_n(&to->dead, __ATOMIC_ACQUIRE);
	/* Another channel takes it as a replay (3.x); with none left it waits
	 * for the reconnect, which sends it on a new session. */
	if (!none && c->sess.dialect < SMB2_DIALECT_0300)
		return false;
	/* hard: no deadline (0), no grace: it waits until a channel is back. */
	uint64_t now = ev_now_ms(), deadline = c->hard ? 0 : now + c->timeout_ms;
	if (none && !c->hard) {
		/* Every channel is down: wait for the channel manager to bring
		 * one back - up to the request timeout, and no longer than
		 * that timeout after the connection was lost (`timeout=` is
		 * the grace: a server that stays away longer gets calls
		 * failing at once, not each waiting it out again). */
		uint64_t zero = 0, down;
		__atomic_compare_exchange_n(&c->down_since_ms, &zero, now ? now : 1, false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		down = __atomic_load_n(&c->down_since_ms, __ATOMIC_ACQUIRE);
		/* down <= now: this is the earlier of the two limits */
		uint64_t grace = (down ? down : now) + c->timeout_ms;
		if (now >= grace) {
			smb_debug("%s: %s fails at once: no connection to the server for %llu s",
			          c->host, smb2_command_str(cmd),
			          (unsigned long long)((now - down) / 1000));
			return false;
		}
		deadline = grace;
	}
	if (smb_req_reset_for_replay(req))
		return false;
	if (!__atomic_exchange_n(&ch->seq_bumped, true, __ATOMIC_ACQ_REL))
		__atomic_add_fetch(&c->sess.channel_sequence, 1, __ATOMIC_ACQ_REL);
	/* The live channel may belong to a session a reconnect just built; a
	 * parked request is rebound when smb_park_release() sends it. */
	if (!none && req_rebind(c, req) < 0)
		return false;
	if (none) {
		req->deadline_ms = deadline;
		bool first = park_push(pk, req);
		__atomic_add_fetch(&ch->failovers, 1, __ATOMIC_RELAXED);
		if (first && c->hard)
			smb_warn("%s: every channel is down; requests wait for one to come back "
			         "(hard)",
			         c->host);
		else if (first)
			smb_warn("%s: every channel is down; requests wait up to %llu s for one to "
			         "come back",
			         c->host, (unsigned long long)((deadline - now + 999) / 1000));
		park_wake(pk);
		return true;
	}
	/* (req may be answered and freed once submitted) */
	enum smb_replay_class k = smb_req_replay_class(req);
	if (smb_conn_submit(to->conn, req))
		return false;
	__atomic_add_fetch(&ch->failovers, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&to->replays, 1, __ATOMIC_RELAXED);
	smb_debug("%s: %s replayed on channel %d (%s)", ch->conn->peer, smb2_command_str(cmd),
	          to->index, smb_replay_class_str(k));
	return true;
}

bool smb_park_any(struct smb_park *pk)
{
	pthread_mutex_lock(&pk->lock);
	bool any = pk->parked != NULL;
	pthread_mutex_unlock(&pk->lock);
	return any;
}

void smb_park_release(struct smb_park *pk)
{
	struct smb_client *c = pk->c;
	pthread_mutex_lock(&pk->lock);
	struct smb_req *list = pk->parked;
	pk->parked = NULL;
	pthread_mutex_unlock(&pk->lock);
	unsigned n = 0;
	while (list) {
		struct smb_req *req = list, *next = req->wnext;
		req->wnext = NULL;
		list = next;
		struct smb_chan *to = pick_for(c, req);
		if (!to) {
			/* the channel died again before we got here: wait on,
			 * deadline unchanged */
			park_push(pk, req);
			park_wake(pk);
			continue;
		}
		int err = req_rebind(c, req);
		uint16_t cmd = req->pdu[0].command;
		enum smb_replay_class k = smb_req_replay_class(req);
		/* one a planned move held before it was sent goes out as new */
		bool held = req->held;
		req->held = false;
		/* A submit to a channel that just died offers it to chan_orphan
		 * again (parked again, 0); any other refusal fails it here, or
		 * nobody would ever answer it. */
		if (!err)
			err = smb_conn_submit(to->conn, req);
		if (err) {
			smb_debug("%s: %s could not be sent again (%s)", c->host,
			          smb2_command_str(req->pdu[0].command), strerror(-err));
			req->err = err == -ENOTCONN ? -ECONNABORTED : err;
			if (ev_call(c->loop, park_fail_cb, req) < 0)
				smb_req_finish(req);
			continue;
		}
		if (held) {
			smb_debug("%s: %s, held by the move, sent on the new session", c->host,
			          smb2_command_str(cmd));
			continue;
		}
		__atomic_add_fetch(&to->replays, 1, __ATOMIC_RELAXED);
		smb_debug("%s: %s sent again on the new session (%s)", c->host,
		          smb2_command_str(cmd), smb_replay_class_str(k));
		n++;
	}
	if (n)
		smb_info("%s: %u waiting requests sent again", c->host, n);
}

static void park_fail_cb(void *arg)
{
	struct smb_req *req = arg;
	smb_req_finish(req);
}

void smb_park_expire(struct smb_park *pk, bool all)
{
	struct smb_client *c = pk->c;
	uint64_t now = ev_now_ms();
	struct smb_req *expired = NULL;
	pthread_mutex_lock(&pk->lock);
	for (struct smb_req **pp = &pk->parked; *pp;) {
		struct smb_req *req = *pp;
		if (all || (req->deadline_ms && req->deadline_ms <= now)) {
			*pp = req->wnext;
			req->wnext = expired;
			expired = req;
			continue;
		}
		pp = &req->wnext;
	}
	pthread_mutex_unlock(&pk->lock);
	while (expired) {
		struct smb_req *req = expired;
		expired = req->wnext;
		req->wnext = NULL;
		req->err = all ? -ECONNABORTED : -ETIMEDOUT;
		if (!all)
			smb_err(
			    "%s: %s request waited for a channel until its deadline; failing it "
			    "with ETIMEDOUT",
			    c->host, smb2_command_str(req->pdu[0].command));
		if (ev_call(c->loop, park_fail_cb, req) < 0)
			smb_req_finish(req);
	}
}
