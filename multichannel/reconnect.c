/* multichannel/reconnect.c — when every channel is gone, build the session
 * again (one attempt; the manager thread, chanmgr.c, retries with backoff).
 *
 *   connect to the server's address -> NEGOTIATE (same ClientGuid) ->
 *   with multichannel, try binding to the old session first (it may have
 *   survived a network cut, and its opens with it); otherwise
 *   SESSION_SETUP with PreviousSessionId = the old session -> TREE_CONNECT ->
 *   reopen every handle (durable v2 reconnect, else by path) -> publish the
 *   channel.  The manager then sends the parked requests out again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <talloc.h>

#include "client/chan.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/opens.h"
#include "client/session.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"

/* How long a reconnect waits for the NEGOTIATE's answer (open_negotiated()). */
#define RECONNECT_NEGOTIATE_MS 5000u

struct smb_reconn {
	struct smb_client *c;
	const struct smb_client_opts *opts; /* c->opts */
	unsigned connect_timeout_ms;
	struct smb_setup_slot *slot; /* the manager's */
};

static void discard(struct smb_reconn *r, struct smb_chan *ch)
{
	smb_setup_slot_set(r->slot, NULL);
	smb_chan_discard(ch);
}
/* A new connection to the server's address and its NEGOTIATE. */
static int open_negotiated(struct smb_reconn *r, void *mem, struct smb_chan **out, uint8_t **blob,
                           size_t *blob_len, char *why, size_t whylen)
{
	struct smb_client *c = r->c;
	struct smb_chan *ch = NULL;
	const char *gai_error;
	int err = smb_client_dial(c, r->connect_timeout_ms, &ch, &gai_error);
	if (err) {
		if (gai_error)
			snprintf(why, whylen, "cannot resolve %s: %s", c->host, gai_error);
		else
			snprintf(why, whylen, "cannot connect: %s", strerror(-err));
		return err;
	}
	if (!smb_setup_slot_set(r->slot, ch)) {
		discard(r, ch);
		return -ECANCELED;
	}
	/* A peer that took the connection and never answers (the listener of
	 * a cluster node being killed under its address, before its link went
	 * down) costs RECONNECT_NEGOTIATE_MS here, not the request timeout:
	 * the next attempt dials again, and finds the node that has the address
	 * now.  A live server answers a NEGOTIATE in milliseconds. */
	unsigned saved = ch->conn->timeout_ms;
	if (!saved || saved > RECONNECT_NEGOTIATE_MS)
		ch->conn->timeout_ms = RECONNECT_NEGOTIATE_MS;
	err = smb_chan_negotiate(c, ch, r->opts, blob, blob_len, mem, why, whylen);
	ch->conn->timeout_ms = saved;
	if (err) {
		discard(r, ch);
		return err;
	}
	*out = ch;
	return 0;
}

int smb_reconn_attempt(struct smb_reconn *r, bool bind_first, char *why, size_t whylen)
{
	struct smb_client *c = r->c;
	void *mem = talloc_new(NULL);
	if (!mem)
		return -ENOMEM;
	struct smb_chan *ch = NULL;
	uint8_t *blob = NULL;
	size_t blob_len = 0;
	int err = open_negotiated(r, mem, &ch, &blob, &blob_len, why, whylen);
	bool bound = false;
	if (!err && bind_first) {
		/* The session may have outlived its connections (a network cut). */
		char bwhy[256] = "";
		bound = smb_chan_session_setup(c, ch, r->opts, true, blob, blob_len, mem, bwhy,
		                               sizeof(bwhy)) == 0;
		if (!bound) {
			smb_debug("%s: binding to the old session failed (%s); a new session",
			          c->host, bwhy);
			discard(r, ch);
			ch = NULL;
			err = open_negotiated(r, mem, &ch, &blob, &blob_len, why, whylen);
		}
	}
	unsigned nd = 0, np = 0, nl = 0;
	if (!err && !bound) {
		uint64_t old = c->sess.session_id;
		ch->conn->signing = &c->sess.signing;
		ch->conn->crypt = &c->sess.crypt;
		/* A new session: its first SESSION_SETUP carries SessionId 0 and
		 * names the old one as PreviousSessionId ([MS-SMB2] 3.2.4.2.3). */
		c->sess.previous_session_id = old;
		c->sess.session_id = 0;
		err =
		    smb_chan_session_setup(c, ch, r->opts, false, blob, blob_len, mem, why, whylen);
		c->sess.previous_session_id = 0;
		if (err && !c->sess.session_id)
			c->sess.session_id = old;
		if (!err)
			err = smb_chan_tree_connect(c, ch, mem, why, whylen);
		if (!err)
			err = smb_opens_reopen(c, ch, mem, &nd, &np, &nl);
		if (err && !why[0])
			snprintf(why, whylen, "%s", strerror(-err));
	}
	if (!err) {
		if (bind_first)
			ch->conn->echo_ms = c->chans[0]->conn->echo_ms;
		else
			ch->conn->echo_ms = c->echo_ms;
		__atomic_add_fetch(&c->reconnects, 1, __ATOMIC_RELAXED);
		ch->reconnected = true;
		err = smb_chan_publish(c, ch);
		if (err)
			snprintf(why, whylen, "no channel slot left");
	}
	if (err) {
		if (ch)
			discard(r, ch);
		talloc_free(mem);
		return err;
	}
	smb_setup_slot_set(r->slot, NULL);
	if (bound)
		smb_warn("%s: reconnected; channel bound to the surviving session 0x%llx", c->host,
		         (unsigned long long)c->sess.session_id);
	else
		smb_warn("%s: reconnected: new session 0x%llx; %u handles reopened durably, %u by "
		         "path, %u lost",
		         c->host, (unsigned long long)c->sess.session_id, nd, np, nl);
	talloc_free(mem);
	return 0;
}

int smb_reconn_new(struct smb_client *c, struct smb_setup_slot *slot, struct smb_reconn **out)
{
	struct smb_reconn *r = talloc_zero(c, struct smb_reconn);
	if (!r)
		return -ENOMEM;
	r->c = c;
	r->opts = c->opts;
	r->connect_timeout_ms = r->opts->connect_timeout_ms ? r->opts->connect_timeout_ms : 15000;
	r->slot = slot;
	*out = r;
	return 0;
}
