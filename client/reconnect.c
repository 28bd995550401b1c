/* client/reconnect.c — when every channel is gone, build the session again.
 *
 * A thread (started by smb_client_connect, idle until kicked) does, with
 * backoff from 100 ms to 5 s between attempts, until a channel lives again
 * or the client closes:
 *   connect to the server's address -> NEGOTIATE (same ClientGuid) ->
 *   with multichannel, try binding to the old session first (it may have
 *   survived a network cut, and its opens with it); otherwise
 *   SESSION_SETUP with PreviousSessionId = the old session -> TREE_CONNECT ->
 *   reopen every handle (durable v2 reconnect, else by path) -> publish the
 *   channel -> the parked requests go out again, their FileIds patched.
 * Meanwhile requests park (session.c chan_orphan) and fail with ETIMEDOUT
 * at their deadline; the thread expires them while it retries.  With
 * `hard` they have none: they wait for as many attempts as it takes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <talloc.h>
#include <unistd.h>

#include "client/client_int.h"
#include "common/evloop.h"
#include "common/log.h"

struct smb_reconn {
	struct smb_client *c;
	const struct smb_client_opts *opts; /* c->opts */
	pthread_t thread;
	bool thread_started;
	int wake_fd;
	bool stop, kick; /* atomic */
	unsigned connect_timeout_ms;
	/* The channel an attempt is setting up, so that stopping can cut its
	 * wait short (lock guards it against the attempt discarding it). */
	pthread_mutex_t lock;
	struct smb_chan *trying;
};

static void set_trying(struct smb_reconn *r, struct smb_chan *ch)
{
	pthread_mutex_lock(&r->lock);
	r->trying = ch;
	pthread_mutex_unlock(&r->lock);
}

static void discard(struct smb_reconn *r, struct smb_chan *ch)
{
	set_trying(r, NULL);
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
	set_trying(r, ch);
	if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		discard(r, ch);
		return -ECANCELED;
	}
	err = smb_chan_negotiate(c, ch, r->opts, blob, blob_len, mem, why, whylen);
	if (err) {
		discard(r, ch);
		return err;
	}
	*out = ch;
	return 0;
}

/* One attempt.  0 when a channel is published; -errno with why set. */
static int attempt(struct smb_reconn *r, char *why, size_t whylen)
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
	if (!err && c->mc) {
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
		uint64_t old = c->session_id;
		ch->conn->signing = &c->signing;
		ch->conn->crypt = &c->crypt;
		/* A new session: its first SESSION_SETUP carries SessionId 0 and
		 * names the old one as PreviousSessionId ([MS-SMB2] 3.2.4.2.3). */
		c->previous_session_id = old;
		c->session_id = 0;
		err =
		    smb_chan_session_setup(c, ch, r->opts, false, blob, blob_len, mem, why, whylen);
		c->previous_session_id = 0;
		if (err && !c->session_id)
			c->session_id = old;
		if (!err)
			err = smb_chan_tree_connect(c, ch, mem, why, whylen);
		if (!err)
			err = smb_opens_reopen(c, ch, mem, &nd, &np, &nl);
		if (err && !why[0])
			snprintf(why, whylen, "%s", strerror(-err));
	}
	if (!err) {
		if (c->mc)
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
	set_trying(r, NULL);
	if (bound)
		smb_warn("%s: reconnected; channel bound to the surviving session 0x%llx", c->host,
		         (unsigned long long)c->session_id);
	else
		smb_warn("%s: reconnected: new session 0x%llx; %u handles reopened durably, %u by "
		         "path, %u lost",
		         c->host, (unsigned long long)c->session_id, nd, np, nl);
	talloc_free(mem);
	return 0;
}

static void *reconn_thread(void *arg)
{
	struct smb_reconn *r = arg;
	struct smb_client *c = r->c;
	unsigned backoff = 0, tries = 0;
	for (;;) {
		bool down = smb_client_live_channels(c) == 0 &&
		            !__atomic_load_n(&c->closing, __ATOMIC_ACQUIRE);
		int timeout = down ? (int)(backoff ? backoff : 1) : -1;
		struct pollfd pfd = {.fd = r->wake_fd, .events = POLLIN};
		int rc = poll(&pfd, 1, timeout);
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0) {
			uint64_t v;
			if (read(r->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			break;
		__atomic_store_n(&r->kick, false, __ATOMIC_RELEASE);
		if (smb_client_live_channels(c) > 0 ||
		    __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE)) {
			backoff = 0;
			tries = 0;
			continue;
		}
		smb_client_park_expire(c, false);
		char why[512] = "";
		if (attempt(r, why, sizeof(why)) == 0) {
			backoff = 0;
			tries = 0;
			smb_client_unpark(c);
			if (c->mc)
				smb_mc_kick(c);
			continue;
		}
		if (tries++ == 0 || tries % 10 == 0)
			smb_warn("%s: reconnect attempt %u failed: %s; trying again", c->host,
			         tries, why[0] ? why : "unknown error");
		backoff = backoff ? backoff * 2 : 100;
		if (backoff > 5000)
			backoff = 5000;
	}
	return NULL;
}

int smb_reconn_start(struct smb_client *c)
{
	struct smb_reconn *r = talloc_zero(c, struct smb_reconn);
	if (!r)
		return -ENOMEM;
	r->c = c;
	r->opts = c->opts;
	r->connect_timeout_ms = r->opts->connect_timeout_ms ? r->opts->connect_timeout_ms : 15000;
	pthread_mutex_init(&r->lock, NULL);
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake_fd < 0)
		return -errno;
	c->reconn = r;
	if (pthread_create(&r->thread, NULL, reconn_thread, r) == 0)
		r->thread_started = true;
	else
		smb_warn("%s: cannot start the reconnect thread; a lost connection is not "
		         "re-established",
		         c->host);
	return 0;
}

void smb_reconn_kick(struct smb_client *c)
{
	struct smb_reconn *r = c->reconn;
	if (!r)
		return;
	__atomic_store_n(&r->kick, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(r->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		smb_debug("%s: cannot wake the reconnect thread: %s", c->host, strerror(errno));
}

void smb_reconn_stop(struct smb_client *c)
{
	struct smb_reconn *r = c->reconn;
	if (!r)
		return;
	__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
	smb_reconn_kick(c);
	/* An attempt waiting for the server's answer gives up at once. */
	pthread_mutex_lock(&r->lock);
	if (r->trying)
		smb_conn_abort(r->trying->conn, "unmounting");
	pthread_mutex_unlock(&r->lock);
	if (r->thread_started)
		pthread_join(r->thread, NULL);
	r->thread_started = false;
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	r->wake_fd = -1;
}
