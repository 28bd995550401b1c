/* tests/unit/client/test_chanmgr.c — the channel manager (multichannel/:
 * chanmgr.c's thread, mc.c's interface list and bindings, failover.c's
 * replay on another channel or park, reconnect.c) against the scripted
 * peer of peer.h, in-process, through the public API (client/client.h).
 *
 * The peer lists two interfaces, 127.0.0.1 (the mount's address) and
 * 127.0.0.2; a mount with multichannel and max_channels=2 binds a second
 * channel to the other one.  The cases:
 *  - mount: the second connection dialled 127.0.0.2 and bound itself to
 *    the session of the first (a signed binding SESSION_SETUP the peer
 *    verified); the client's stats show two channels up;
 *  - failover: a WRITE, and a rename, whose channel is cut with its reply
 *    lost go to the other channel as a replay (SMB2_FLAGS_REPLAY_OPERATION,
 *    ChannelSequence + 1, the same session); the user sees success and the
 *    data intact, and no new session was set up;
 *  - rebind: after a channel is cut, the manager binds a new one to the
 *    interface that lost it (within a bounded wait);
 *  - every channel cut: a request waits, the reconnect first tries to bind
 *    to the old session (the peer, which ended it with its last channel,
 *    refuses: USER_SESSION_DELETED), then sets up a new session; the
 *    request goes out on it once, and the manager binds the second channel
 *    to the new session;
 *  - a reconnect that succeeds on its fourth try, with nothing else waking
 *    the manager: it still binds the second channel at once (the manager
 *    kicks itself when the session is back), not at the next requery;
 *  - every channel cut while handles hold byte-range locks, on a server
 *    that granted no durable handle: the reopens by path take each lock
 *    again before a parked request goes out; one refused is reported lost
 *    and fails its handle's requests with EIO, but not its CLOSE;
 *  - a planned move (multichannel/chanmgr.c's smb_mgr_move(), what a
 *    witness CLIENT_MOVE does) to 127.0.0.2: a WRITE issued while the move
 *    is under way is held, not failed and not replayed; the session is set
 *    up again at the new address, the open handle reopened durably there,
 *    and the WRITE goes out once, on the new session, without the replay
 *    flag. */
#include "client/client.h"
#include "client/client_int.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"
#include "tests/unit/check.h"
#include "tests/unit/client/peer.h"
#include "tests/unit/client/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#define HELLO     "hello, multichannel world\n"
#define VICTIM_SZ 16384

static uint8_t victim[VICTIM_SZ];

static bool mount(struct env *e)
{
	memset(e, 0, sizeof(*e));
	e->p = peer_new();
	static const char *const ifaces[] = {"127.0.0.1", "127.0.0.2"};
	peer_set_interfaces(e->p, ifaces, 2);
	peer_add_file(e->p, "a.txt", HELLO, sizeof(HELLO) - 1);
	peer_add_file(e->p, "victim.txt", victim, VICTIM_SZ);
	struct smb_client_opts o;
	env_opts(&o);
	o.multichannel = true;
	o.max_channels = 2;
	return env_connect(e, &o);
}

/* The client's channels in state "up" (smbrdmactl stats). */
static int channels_up(struct env *e)
{
	static struct smb_client_stats cs;
	smb_client_get_stats(e->c, &cs);
	int up = 0;
	for (int i = 0; i < cs.nchannels; i++)
		up += strcmp(cs.channels[i].state, "up") == 0;
	return up;
}

static uint64_t conn_session(struct env *e, int conn)
{
	uint64_t sid = 0;
	peer_conn_info(e->p, conn, NULL, 0, &sid, NULL);
	return sid;
}

static bool conn_addr_is(struct env *e, int conn, const char *want)
{
	char a[64] = "";
	return peer_conn_info(e->p, conn, a, sizeof(a), NULL, NULL) && strcmp(a, want) == 0;
}

struct bound {
	struct env *e;
	int n, up;
};

static bool is_bound(void *arg)
{
	struct bound *b = arg;
	struct peer_stats st;
	peer_get_stats(b->e->p, &st);
	return st.bindings >= b->n && channels_up(b->e) >= b->up;
}

/* Poll until the peer has seen n bindings and the client has `up` channels
 * up: at most 5 s. */
static bool wait_bound(struct env *e, int n, int up)
{
	struct bound b = {e, n, up};
	return poll_for(is_bound, &b);
}

static void read_check(struct env *e, struct smb2_fileid fid, size_t len)
{
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_read(e->c, fid, 0, len, read_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, len);
	CHECK_MEM(w.data, victim, len);
}

static struct smb2_fileid open_victim(struct env *e)
{
	struct wait w;
	env_open(e, "victim.txt", FILE_OPEN, &w);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	return w.fid;
}

/* victim.txt opened, read in four pieces (spread over the channels), closed */
static void open_read_close(struct env *e)
{
	struct smb2_fileid fid = open_victim(e);
	for (int i = 0; i < 4; i++)
		read_check(e, fid, 4096);
	env_close(e, fid);
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_mount_binds(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK(st.netif_queries >= 1);
	CHECK_EQ(st.connections, 2);
	CHECK_EQ(st.sessions, 1);
	CHECK_EQ(st.bindings, 1);
	CHECK(conn_addr_is(&e, 1, "127.0.0.1"));
	CHECK(conn_addr_is(&e, 2, "127.0.0.2")); /* the other interface */
	CHECK(conn_session(&e, 1) != 0);
	CHECK_EQ(conn_session(&e, 2), conn_session(&e, 1));
	/* the binding SESSION_SETUP named the session, on the second connection */
	struct peer_rec recs[64];
	int n = peer_records(e.p, 0, recs, 64), nbind = 0;
	for (int i = 0; i < n; i++)
		if (recs[i].binding) {
			nbind++;
			CHECK_EQ(recs[i].conn, 2);
			CHECK_EQ(recs[i].session_id, conn_session(&e, 1));
		}
	CHECK_EQ(nbind, 2); /* NTLMSSP NEGOTIATE, AUTHENTICATE */
	static struct smb_client_stats cs;
	smb_client_get_stats(e.c, &cs);
	CHECK_EQ(cs.nchannels, 2);
	CHECK_EQ(channels_up(&e), 2);
	open_read_close(&e); /* I/O works over the pair */
	env_unmount(&e);
}

/* The request hooked (its reply lost, its connection cut) and its replay. */
struct lost {
	struct peer_rec first, replay;
	bool have_first, have_replay;
	int replays;
};

static struct lost find_lost(struct env *e, uint16_t cmd, const char *path)
{
	struct lost l = {0};
	static struct peer_rec recs[1024];
	int n = peer_records(e->p, e->rec0, recs, 1024);
	for (int i = 0; i < n; i++) {
		const struct peer_rec *r = &recs[i];
		if (r->command != cmd || strcmp(r->path, path) != 0)
			continue;
		if (!l.have_first && !(r->flags & SMB2_FLAGS_REPLAY_OPERATION)) {
			l.first = *r;
			l.have_first = true;
		} else if (r->flags & SMB2_FLAGS_REPLAY_OPERATION) {
			if (!l.have_replay)
				l.replay = *r;
			l.have_replay = true;
			l.replays++;
		}
	}
	return l;
}

/* What a failover leaves: the replay on the other, live channel of the
 * same session; no session set up again. */
static void check_failover(struct env *e, int hook, uint16_t cmd, const char *path)
{
	CHECK_EQ(peer_hook_fired(e->p, hook), 1);
	struct lost l = find_lost(e, cmd, path);
	CHECK(l.have_first);
	CHECK(l.have_replay);
	CHECK_EQ(l.replays, 1);
	if (l.have_first && l.have_replay) {
		/* on the other channel of the mount, not one bound after the cut */
		CHECK(l.first.conn == 1 || l.first.conn == 2);
		CHECK_EQ(l.replay.conn, l.first.conn == 1 ? 2 : 1);
		CHECK_EQ(l.replay.session_id, l.first.session_id);
		CHECK_EQ(l.replay.channel_sequence, (uint16_t)(l.first.channel_sequence + 1));
	}
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	CHECK_EQ(st.sessions, 1); /* no reconnect */
	static struct smb_client_stats cs;
	smb_client_get_stats(e->c, &cs);
	uint64_t failovers = 0, replays = 0, reconnects = 0;
	for (int i = 0; i < cs.nchannels; i++) {
		failovers += cs.channels[i].failovers;
		replays += cs.channels[i].replays;
		reconnects += cs.channels[i].reconnects;
	}
	CHECK_EQ(failovers, 1);
	CHECK_EQ(replays, 1);
	CHECK_EQ(reconnects, 0);
}

static void test_failover_write(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct smb2_fileid fid = open_victim(&e);
	e.rec0 = peer_nrecords(e.p);
	struct peer_match m = {
	    .command = SMB2_WRITE, .info_class = -1, .path = "victim.txt", .disposition = -1};
	int h = peer_on(e.p, &m, PEER_LOST_REPLY, 0);
	uint8_t data[4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_write(e.c, fid, 8192, data, sizeof(data), write_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, sizeof(data));
	check_failover(&e, h, SMB2_WRITE, "victim.txt");
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.writes, 2); /* the lost one and its replay: the same bytes */
	static uint8_t want[VICTIM_SZ], got[VICTIM_SZ + 16];
	memcpy(want, victim, VICTIM_SZ);
	memcpy(want + 8192, data, sizeof(data));
	CHECK_EQ(peer_file_data(e.p, "victim.txt", got, sizeof(got)), VICTIM_SZ);
	CHECK_MEM(got, want, VICTIM_SZ);
	env_close(&e, fid); /* the handle lives on the surviving channel */
	env_unmount(&e);
}

static void test_failover_rename(void)
{
	struct env e;
	if (!mount(&e))
		return;
	int h = env_rename_lost(&e);
	/* the compound's CREATE names the path: it is what is replayed */
	check_failover(&e, h, SMB2_CREATE, "a.txt");
	env_check_renamed(&e, HELLO, sizeof(HELLO) - 1);
	env_unmount(&e);
}

/* A channel cut with nothing in flight: the manager's wake on its death
 * runs a pass that binds a new channel to the interface it went to.
 * Channel 0 (the mount's) is the one cut, so the new binding is signed
 * with the session's key as the surviving bound channel knows it. */
static void test_rebind(void)
{
	struct env e;
	if (!mount(&e))
		return;
	uint64_t sid = conn_session(&e, 1);
	CHECK(peer_drop_connection(e.p, 1));
	CHECK(wait_bound(&e, 2, 2));
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.sessions, 1);
	CHECK_EQ(st.bindings, 2);
	CHECK_EQ(st.connections, 3);
	CHECK(conn_addr_is(&e, 3, "127.0.0.1")); /* the interface that lost its channel */
	CHECK_EQ(conn_session(&e, 3), sid);
	CHECK_EQ(channels_up(&e), 2);
	open_read_close(&e); /* and it carries I/O */
	env_unmount(&e);
}

/* Any NEGOTIATE (a reconnect's, or a binding's on a new connection). */
static const struct peer_match any_negotiate = {
    .command = SMB2_NEGOTIATE, .info_class = -1, .disposition = -1};

static bool none_up(void *arg)
{
	return channels_up(arg) == 0;
}

/* Every channel cut with nothing in flight: a READ issued meanwhile parks;
 * the reconnect tries binding to the old session (refused: the peer ended
 * it with its last channel), sets up a new one, brings the handle back by
 * a durable reconnect and sends the READ once, as new (no server saw it).
 * The manager then binds the second channel to the new session. */
static void test_all_down(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct smb2_fileid fid = open_victim(&e);
	uint64_t old = conn_session(&e, 1);
	e.rec0 = peer_nrecords(e.p);
	/* The READ must be issued once the client knows every channel is
	 * gone: issued while one death is still unreported, it may go out on
	 * that channel and be lost with it, and its resend then rightly
	 * carries the replay flag.  The next NEGOTIATE is refused (the
	 * reconnect's first try, or a binding attempt of the manager's pass
	 * after the first death), so "all down" usually lasts the first
	 * backoff, 100 ms, long enough to see.  Should the reconnect win
	 * anyway, the READ goes out on its new channel: still once, and as
	 * new, which is what is checked below; only the parking is then not
	 * exercised. */
	int hook = peer_on(e.p, &any_negotiate, PEER_STATUS, STATUS_INSUFFICIENT_RESOURCES);
	peer_drop_connections(e.p);
	(void)poll_for(none_up, &e);
	read_check(&e, fid, 100);
	CHECK(peer_hook_fired(e.p, hook));
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.sessions, 2);
	CHECK(st.bind_refusals >= 1); /* the binding to the old session, refused */
	CHECK_EQ(st.durable_reconnects, 1);
	CHECK_EQ(st.reads, 1);
	struct peer_rec recs[256];
	int n = peer_records(e.p, e.rec0, recs, 256), nread = 0, refused = 0;
	uint64_t sid = 0;
	for (int i = 0; i < n; i++) {
		if (recs[i].binding && recs[i].session_id == old &&
		    recs[i].status == STATUS_USER_SESSION_DELETED)
			refused++;
		if (recs[i].command == SMB2_READ) {
			nread++;
			sid = recs[i].session_id;
			CHECK(!(recs[i].flags & SMB2_FLAGS_REPLAY_OPERATION));
		}
	}
	CHECK(refused >= 1);
	CHECK_EQ(nread, 1);
	CHECK(sid != 0 && sid != old); /* on the new session */
	/* the second channel comes back, bound to the new session */
	CHECK(wait_bound(&e, 2, 2));
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.bindings, 2);
	CHECK_EQ(conn_session(&e, st.connections), sid);
	CHECK_EQ(st.sessions, 2);
	env_close(&e, fid);
	env_unmount(&e);
}

static bool two_sessions(void *arg)
{
	struct peer_stats st;
	peer_get_stats(arg, &st);
	return st.sessions >= 2;
}

/* Every channel cut with nothing in flight, and the first three reconnect
 * tries refused (their NEGOTIATE answered INSUFFICIENT_RESOURCES): the
 * manager backs off (100, 200, 400 ms) and tries again, by then the two
 * deaths' wake-ups long consumed, however they raced the first try.  When the
 * session is back, the second channel is bound within the bounded wait,
 * well before the next interface requery (600 s): the manager's own kick
 * after a reconnect, the only thing that can start that pass here. */
static void test_reconnect_kicks_pass(void)
{
	struct env e;
	if (!mount(&e))
		return;
	int hook[3];
	for (int i = 0; i < 3; i++)
		hook[i] = peer_on(e.p, &any_negotiate, PEER_STATUS, STATUS_INSUFFICIENT_RESOURCES);
	peer_drop_connections(e.p);
	CHECK(poll_for(two_sessions, e.p));
	for (int i = 0; i < 3; i++)
		CHECK(peer_hook_fired(e.p, hook[i]));
	CHECK(wait_bound(&e, 2, 2));
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.sessions, 2);
	CHECK_EQ(st.bindings, 2);
	CHECK_EQ(conn_session(&e, st.connections), conn_session(&e, st.connections - 1));
	open_read_close(&e);
	env_unmount(&e);
}

static void lock_ok(struct env *e, struct smb2_fileid fid, uint64_t off, uint64_t len,
                    uint32_t flags)
{
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_lock_range(e->c, fid, off, len, flags, status_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
}

static struct {
	int calls;
	char path[64];
	uint64_t off, len;
	bool exclusive;
	uint32_t status;
} lost;

static void on_lock_lost(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                         uint64_t len, bool exclusive, uint32_t status)
{
	lost.calls++;
	snprintf(lost.path, sizeof(lost.path), "%s", path);
	lost.off = off;
	lost.len = len;
	lost.exclusive = exclusive;
	lost.status = status;
}

/* Two handles hold locks (victim.txt: [10, 15) exclusive and [100, 101)
 * shared, plus one given back; a.txt: [0, 1) exclusive) when every channel
 * is cut; the peer granted no durable handle, so both come back by path.
 * It refuses the first lock taken again (another client took the range
 * meanwhile).  Seen: each reopen is followed by its handle's locks, the
 * given-back one not among them, before the parked READ of a.txt goes out;
 * the refused lock is reported once, with its path and range; victim.txt's
 * READ fails with EIO, a.txt's works; victim.txt's CLOSE succeeds. */
static void test_locks_taken_again(void)
{
	struct env e;
	if (!mount(&e))
		return;
	peer_set_durable(e.p, false);
	memset(&lost, 0, sizeof(lost));
	smb_client_set_lock_lost_cb(e.c, on_lock_lost, NULL);
	struct smb2_fileid v = open_victim(&e), a;
	struct wait w;
	env_open(&e, "a.txt", FILE_OPEN, &w);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	a = w.fid;
	lock_ok(&e, v, 10, 5, SMB_LOCK_EXCLUSIVE | SMB_LOCK_FAIL_IMMEDIATELY);
	lock_ok(&e, v, 100, 1, SMB_LOCK_SHARED | SMB_LOCK_FAIL_IMMEDIATELY);
	lock_ok(&e, v, 200, 1, SMB_LOCK_EXCLUSIVE | SMB_LOCK_FAIL_IMMEDIATELY);
	lock_ok(&e, v, 200, 1, SMB_LOCK_UNLOCK);
	lock_ok(&e, a, 0, 1, SMB_LOCK_EXCLUSIVE | SMB_LOCK_FAIL_IMMEDIATELY);
	CHECK(!smb_file_failed(e.c, v));
	static const struct peer_match any_lock = {
	    .command = SMB2_LOCK, .info_class = -1, .disposition = -1};
	int hook = peer_on(e.p, &any_lock, PEER_STATUS, STATUS_LOCK_NOT_GRANTED);
	e.rec0 = peer_nrecords(e.p);
	peer_drop_connections(e.p);
	(void)poll_for(none_up, &e);
	/* issued while no channel lives, or on the new one: either way after
	 * the reopens and their locks */
	struct wait r;
	w_init(&r);
	CHECK_EQ(smb_read(e.c, a, 0, 4, read_cb, &r), 0);
	CHECK(w_wait(&r));
	CHECK_EQ(r.err, 0);
	CHECK_EQ(r.n, 4);
	CHECK(peer_hook_fired(e.p, hook));
	CHECK_EQ(lost.calls, 1);
	CHECK(lost.exclusive && lost.status == STATUS_LOCK_NOT_GRANTED);
	CHECK_EQ(strcmp(lost.path, "victim.txt"), 0);
	CHECK(lost.off == 10 && lost.len == 5);
	CHECK(smb_file_failed(e.c, v));
	CHECK(!smb_file_failed(e.c, a));
	w_init(&r);
	int rc = smb_read(e.c, v, 0, 4, read_cb, &r);
	if (rc == 0) {
		CHECK(w_wait(&r));
		rc = r.err;
	}
	CHECK_EQ(rc, -EIO);
	struct peer_rec recs[256];
	int n = peer_records(e.p, e.rec0, recs, 256), reopens = 0, locks = 0, granted = 0;
	int last_lock = -1, first_read = -1;
	for (int i = 0; i < n; i++) {
		if (recs[i].command == SMB2_CREATE && recs[i].status == STATUS_SUCCESS)
			reopens++;
		if (recs[i].command == SMB2_LOCK) {
			locks++;
			granted += recs[i].status == STATUS_SUCCESS;
			last_lock = i;
		}
		if (recs[i].command == SMB2_READ && first_read < 0)
			first_read = i;
	}
	CHECK_EQ(reopens, 2);
	CHECK_EQ(locks, 3); /* not the lock given back */
	CHECK_EQ(granted, 2);
	CHECK(first_read > last_lock); /* a.txt's READ after every lock */
	env_close(&e, v);
	env_close(&e, a);
	env_unmount(&e);
}

struct mover {
	struct env *e;
	const char *to;
	int err;
};

static void *move_thread(void *arg)
{
	struct mover *mv = arg;
	mv->err = smb_mgr_move(mv->e->c->mgr_state, mv->to, "a planned move (test)");
	return NULL;
}

static bool is_moving(void *arg)
{
	struct env *e = arg;
	return __atomic_load_n(&e->c->moving, __ATOMIC_ACQUIRE);
}

static void test_planned_move(void)
{
	struct env e;
	if (!mount(&e))
		return;
	/* both channels up: the move cuts them both, so the session ends at
	 * the peer and is set up anew (as at another node of a cluster) */
	CHECK(wait_bound(&e, 1, 2));
	struct smb2_fileid fid = open_victim(&e);
	uint64_t old = conn_session(&e, 1);
	struct peer_stats st0;
	peer_get_stats(e.p, &st0);
	e.rec0 = peer_nrecords(e.p);
	/* the first three NEGOTIATEs after the cut are refused (one may be a
	 * binding attempt for the channel that died first, while the other
	 * lived): the move stays under way for at least the manager's first
	 * two backoffs (100 + 200 ms), and the WRITE below is surely issued
	 * while it is */
	int hooks[3];
	for (int i = 0; i < 3; i++)
		hooks[i] = peer_on(e.p, &any_negotiate, PEER_STATUS, STATUS_INSUFFICIENT_RESOURCES);
	struct mover mv = {&e, "127.0.0.2", -1};
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, move_thread, &mv), 0);
	CHECK(poll_for(is_moving, &e));
	static const char data[] = "written while the session moved\n";
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_write(e.c, fid, 0, data, sizeof(data) - 1, write_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, sizeof(data) - 1);
	pthread_join(t, NULL);
	CHECK_EQ(mv.err, 0);
	for (int i = 0; i < 3; i++)
		CHECK(peer_hook_fired(e.p, hooks[i]));
	CHECK(!__atomic_load_n(&e.c->moving, __ATOMIC_ACQUIRE));
	static struct smb_client_stats cs;
	smb_client_get_stats(e.c, &cs);
	CHECK(cs.witness.held >= 1);
	CHECK_EQ(cs.witness.drain_replays, 0);
	for (int i = 0; i < cs.nchannels; i++) /* a held request is no replay */
		CHECK_EQ(cs.channels[i].replays, 0);
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.sessions, st0.sessions + 1);
	CHECK_EQ(st.durable_reconnects, st0.durable_reconnects + 1);
	struct peer_rec recs[256];
	int n = peer_records(e.p, e.rec0, recs, 256), nwrite = 0;
	for (int i = 0; i < n; i++) {
		if (recs[i].command != SMB2_WRITE)
			continue;
		nwrite++;
		CHECK(!(recs[i].flags & SMB2_FLAGS_REPLAY_OPERATION));
		CHECK(recs[i].session_id != old);
		CHECK(conn_addr_is(&e, recs[i].conn, "127.0.0.2"));
	}
	CHECK_EQ(nwrite, 1);
	char back[sizeof(data)] = "";
	CHECK_EQ(peer_file_data(e.p, "victim.txt", back, sizeof(data) - 1), VICTIM_SZ);
	CHECK_MEM(back, data, sizeof(data) - 1);
	env_close(&e, fid);
	env_unmount(&e);
}

int main(void)
{
	smb_log_init("test_chanmgr", false, getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	for (size_t i = 0; i < VICTIM_SZ; i++)
		victim[i] = (uint8_t)HELLO[i % (sizeof(HELLO) - 1)];
	RUN(test_mount_binds);
	RUN(test_failover_write);
	RUN(test_failover_rename);
	RUN(test_rebind);
	RUN(test_all_down);
	RUN(test_reconnect_kicks_pass);
	RUN(test_locks_taken_again);
	RUN(test_planned_move);
	return check_report();
}
