/* multichannel/chanmgr.c — the channel manager: one thread owns the channels.
 *
 * client/ asks through client/chanmgr.h (start, stop, wake, pick); this
 * file answers with one thread that opens, binds and re-opens channels,
 * and with the scheduler's pick (sched.c) on the caller's thread.  Which
 * request moves where when its channel dies (replay on another channel,
 * or park) is decided at the death, on the loop thread or the sender's, by
 * failover.c through the manager's orphan call; the thread then brings
 * channels back and sends the parked requests out again.
 *
 * The thread's states (c->closing or stop end it from any state):
 *
 *            start: first channels bound (mc.c), thread started
 *                               |
 *                               v
 *        +--------------------> UP <-------------------------+
 *        |                  |       |                        |
 *        |   kick, link up, |       | every channel dead     |
 *        |   requery timer  |       v                        |
 *        |                  |     DOWN: expire parked reqs,  |
 *        |                  |     one reconnect attempt ---->+ ok: unpark,
 *        |                  v       |                          then PASS
 *        +--------------- PASS      | failed
 *        (mc.c: query the           v
 *         interfaces, bind       BACKOFF 100 ms, doubling to 5 s,
 *         what is missing)       then DOWN again (a kick wakes it early)
 *
 * With one channel (no multichannel asked or offered) there is no PASS:
 * the thread sleeps in UP until its channel dies.  Everything the thread
 * does is synchronous I/O on a channel it is setting up, never on the loop
 * thread; the loop thread only wakes it (an eventfd).  The slot holds the
 * channel being set up, so that stop aborts its wait.
 */
#include "client/chan.h"
#include "client/chanmgr.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/session.h"
#include "common/evloop.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"
#include "multichannel/sched.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <talloc.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS   5000
/* A planned move (smb_mgr_move()) lets the requests in flight finish for
 * this long before it cuts the channels. */
#define MOVE_DRAIN_MS 5000

struct smb_chanmgr {
	struct smb_client *c;
	struct smb_mc *mc;         /* NULL: one channel */
	struct smb_reconn *reconn; /* the DOWN state's attempts */
	struct smb_setup_slot slot;
	struct smb_park park; /* failover.c: requests waiting for a channel */
	pthread_t thread;
	bool thread_started;
	int wake_fd;                 /* eventfd: stop or kick; open until the client is freed */
	bool stop, kick;             /* atomic */
	struct smb_witness *witness; /* witness.c's thread, with `witness`; NULL */
};

void smb_setup_slot_init(struct smb_setup_slot *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->ch = NULL;
	s->cancelled = false;
}

bool smb_setup_slot_set(struct smb_setup_slot *s, struct smb_chan *ch)
{
	pthread_mutex_lock(&s->lock);
	bool ok = !s->cancelled || !ch;
	s->ch = ok ? ch : NULL;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void smb_setup_slot_cancel(struct smb_setup_slot *s, const char *why)
{
	pthread_mutex_lock(&s->lock);
	s->cancelled = true;
	if (s->ch)
		smb_conn_abort(s->ch->conn, why);
	pthread_mutex_unlock(&s->lock);
}

/* The DOWN state: one reconnect attempt.  true when a channel lives again. */
static bool down(struct smb_chanmgr *m, unsigned *tries)
{
	struct smb_client *c = m->c;
	smb_park_expire(&m->park, false);
	/* A DFS link with more targets tries each of the others once now. */
	for (int moves = 0;; moves++) {
		char why[512] = "";
		if (smb_reconn_attempt(m->reconn, m->mc != NULL, why, sizeof(why)) == 0) {
			*tries = 0;
			/* a planned move is over: what it held goes out now */
			smb_park_end_move(&m->park);
			smb_park_release(&m->park);
			return true;
		}
		if ((*tries)++ == 0 || *tries % 10 == 0)
			smb_warn("%s: reconnect attempt %u failed: %s; trying again", c->host,
			         *tries, why[0] ? why : "unknown error");
		if (moves + 1 >= c->nalts || !smb_client_retarget(c))
			return false;
	}
}

/* Sleep until woken, a link changes, or timeout_ms (-1: no timeout).
 * false when the thread must end. */
static bool sleep_until_woken(struct smb_chanmgr *m, int timeout_ms, bool *link_up)
{
	int nl = m->mc ? smb_mc_netlink_fd(m->mc) : -1;
	struct pollfd pfd[2] = {{.fd = m->wake_fd, .events = POLLIN}, {.fd = nl, .events = POLLIN}};
	int rc = poll(pfd, nl >= 0 ? 2 : 1, timeout_ms);
	if (rc < 0 && errno != EINTR)
		return false;
	if (rc > 0 && (pfd[0].revents & POLLIN)) {
		uint64_t v;
		if (read(m->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return false;
	}
	if (__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE))
		return false;
	*link_up = rc > 0 && nl >= 0 && (pfd[1].revents & POLLIN) && smb_mc_netlink_read(m->mc);
	return true;
}

static void *mgr_thread(void *arg)
{
	struct smb_chanmgr *m = arg;
	struct smb_client *c = m->c;
	unsigned backoff = 0, tries = 0;
	uint64_t next_pass = m->mc ? ev_now_ms() + smb_mc_requery_ms(m->mc) : UINT64_MAX;
	for (;;) {
		bool closing = __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE);
		bool is_down = !closing && smb_client_live_channels(c) == 0;
		uint64_t now = ev_now_ms();
		int timeout = -1;
		if (is_down)
			timeout = (int)(backoff ? backoff : 1);
		else if (!closing && m->mc)
			timeout = now >= next_pass ? 0 : (int)(next_pass - now);
		bool link_up = false;
		if (!sleep_until_woken(m, timeout, &link_up))
			break;
		bool kick = __atomic_exchange_n(&m->kick, false, __ATOMIC_ACQ_REL) || link_up;
		if (__atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
			continue;
		if (smb_client_live_channels(c) == 0) {
			if (!down(m, &tries)) {
				backoff = backoff ? backoff * 2 : BACKOFF_FIRST_MS;
				if (backoff > BACKOFF_MAX_MS)
					backoff = BACKOFF_MAX_MS;
				continue;
			}
			kick = true; /* the session is back: its other channels too */
		}
		backoff = 0;
		tries = 0;
		if (m->mc && (kick || ev_now_ms() >= next_pass)) {
			smb_mc_pass(m->mc);
			next_pass = ev_now_ms() + smb_mc_requery_ms(m->mc);
		}
	}
	return NULL;
}

static int mgr_close_fd(struct smb_chanmgr *m)
{
	if (m->wake_fd >= 0)
		close(m->wake_fd);
	m->wake_fd = -1;
	return 0;
}

static void mgr_wake(struct smb_client *c);

static int mgr_start(struct smb_client *c)
{
	const struct smb_client_opts *o = c->opts;
	struct smb_chanmgr *m = talloc_zero(c, struct smb_chanmgr);
	if (!m)
		return -ENOMEM;
	m->c = c;
	smb_setup_slot_init(&m->slot);
	smb_park_init(&m->park, c);
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake_fd < 0)
		return -errno;
	talloc_set_destructor(m, mgr_close_fd);
	int err = smb_reconn_new(c, &m->slot, &m->reconn);
	if (err)
		return err;
	c->mgr_state = m;
	if ((o->multichannel || (smb_rdma_channels(o) > 1 && c->chans[0]->rdma)) &&
	    (err = smb_mc_new(c, &m->slot, &m->park, &m->mc)) < 0)
		return err;
	if (pthread_create(&m->thread, NULL, mgr_thread, m) == 0)
		m->thread_started = true;
	else
		smb_warn("%s: cannot start the channel manager thread; lost channels are not "
		         "re-established",
		         c->host);
	if (o->witness && m->thread_started && (err = smb_witness_start(c, m, &m->witness)) < 0)
		smb_warn("%s: cannot start the witness client: %s", c->host, strerror(-err));
	return 0;
}

bool smb_mgr_chan_ipv4(struct smb_chan *ch, char *out, size_t cap)
{
	struct smb_transport_info ti;
	out[0] = 0;
	if (!ch->conn)
		return false;
	ch->conn->transport->ops->info(ch->conn->transport, &ti);
	return ti.remote.ss_family == AF_INET &&
	       inet_ntop(AF_INET, &((const struct sockaddr_in *)&ti.remote)->sin_addr, out,
	                 (socklen_t)cap) != NULL;
}

int smb_mgr_move(struct smb_chanmgr *m, const char *addr, const char *why)
{
	struct smb_client *c = m->c;
	char *to = talloc_strdup(c, addr); /* freed with c: a reader may hold it */
	if (!to)
		return -ENOMEM;
	char *from = __atomic_load_n(&c->addr, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c->addr, to, __ATOMIC_RELEASE);
	__atomic_store_n(&c->moving, true, __ATOMIC_RELEASE);
	/* new requests are held from here; those in flight finish */
	uint64_t t0 = ev_now_ms();
	unsigned left;
	for (;;) {
		left = 0;
		int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
		for (int i = 0; i < n; i++)
			if (!__atomic_load_n(&c->chans[i]->dead, __ATOMIC_ACQUIRE))
				left += smb_conn_inflight(c->chans[i]->conn);
		if (!left || ev_now_ms() - t0 >= MOVE_DRAIN_MS ||
		    __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
			break;
		usleep(1000);
	}
	uint64_t drained = ev_now_ms() - t0;
	if (left)
		smb_warn("%s: %s: %u requests still in flight after %llu ms; they are sent "
		         "again after the move",
		         c->host, why, left, (unsigned long long)drained);
	/* cut every channel: the manager opens the session at `to` and sends
	 * what was held */
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE), cut = 0;
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		if (__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE))
			continue;
		char a[INET_ADDRSTRLEN];
		smb_mgr_chan_ipv4(ch, a, sizeof(a));
		smb_conn_abort(ch->conn, why);
		cut++;
		smb_debug("%s: channel %d to %s closed for the move", c->host, i, a);
	}
	smb_info("%s: %s: %d channels closed after %llu ms with nothing in flight; "
	         "reconnecting to %s",
	         c->host, why, cut, (unsigned long long)drained, to);
	mgr_wake(c);
	/* the manager clears `moving` once the session is up at `to` */
	uint64_t limit = (uint64_t)c->timeout_ms + 15000u;
	while (__atomic_load_n(&c->moving, __ATOMIC_ACQUIRE) && ev_now_ms() - t0 < limit &&
	       !__atomic_load_n(&c->closing, __ATOMIC_ACQUIRE))
		usleep(5000);
	if (!__atomic_load_n(&c->moving, __ATOMIC_ACQUIRE)) {
		smb_info("%s: %s: the session is up at %s after %llu ms", c->host, why, to,
		         (unsigned long long)(ev_now_ms() - t0));
		return 0;
	}
	/* no session there: back to where it was, and what was held waits
	 * for the reconnect there (or its deadline) */
	__atomic_store_n(&c->addr, from, __ATOMIC_RELEASE);
	smb_park_end_move(&m->park);
	mgr_wake(c);
	return -ETIMEDOUT;
}

static void mgr_wake(struct smb_client *c)
{
	struct smb_chanmgr *m = c->mgr_state;
	if (!m)
		return;
	__atomic_store_n(&m->kick, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(m->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		smb_debug("%s: cannot wake the channel manager: %s", c->host, strerror(errno));
}

static void mgr_stop(struct smb_client *c)
{
	struct smb_chanmgr *m = c->mgr_state;
	if (!m)
		return;
	/* the witness first: a move it makes waits for this thread */
	smb_witness_stop(m->witness);
	m->witness = NULL;
	__atomic_store_n(&m->stop, true, __ATOMIC_RELEASE);
	mgr_wake(c);
	/* A set-up waiting for the server's answer gives up at once. */
	smb_setup_slot_cancel(&m->slot, "unmounting");
	if (m->thread_started)
		pthread_join(m->thread, NULL);
	m->thread_started = false;
	smb_mc_close(m->mc);
	smb_park_expire(&m->park, true); /* before the loop stops */
	/* m and its eventfd stay until the client is freed: a channel dying
	 * on the loop thread meanwhile may still wake it. */
}

static bool mgr_hold(struct smb_chan *ch, struct smb_req *req)
{
	struct smb_chanmgr *m = ch->c->mgr_state;
	return m && smb_park_hold(&m->park, ch, req);
}

static bool mgr_orphan(struct smb_chan *ch, struct smb_req *req)
{
	struct smb_chanmgr *m = ch->c->mgr_state;
	return m && smb_park_orphan(&m->park, ch, req);
}

static const struct smb_chanmgr_ops chanmgr_ops = {
    .start = mgr_start,
    .stop = mgr_stop,
    .wake = mgr_wake,
    .pick = smb_sched_pick,
    .orphan = mgr_orphan,
    .hold = mgr_hold,
};

int smb_client_connect(const struct smb_client_opts *o, struct smb_client **out, char *errbuf,
                       size_t errlen)
{
	return smb_client_open(o, &chanmgr_ops, out, errbuf, errlen);
}
