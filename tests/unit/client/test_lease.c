/* tests/unit/client/test_lease.c — leases through the public API
 * (client/lease.c: the RqLs context, the LEASE_BREAK notification and its
 * acknowledgment) against the scripted peer of peer.h, in-process.
 *
 * The peer offers leasing and grants what an RqLs asks.  The cases:
 *  - an open with a lease_id gets R|W|H; the peer breaks it to R; the
 *    caller's smb_lease_break_cb sees the lease_id, the old and new state,
 *    and the engine acknowledges only once the caller says so
 *    (smb_lease_break_done), with the lease's key and the new state, which
 *    the peer accepts (it refuses an unknown key or a state beyond the
 *    break's);
 *  - without a callback the engine acknowledges at once;
 *  - files ask v2 leases naming their directory's (ParentLeaseKey) until
 *    the server breaks that directory's lease while the CLOSE of a file
 *    below it is on its way (ksmbd); from then on they ask v1 leases.  A
 *    break of the directory's lease at any other time changes nothing. */
#include "client/client.h"
#include "common/log.h"
#include "tests/unit/check.h"
#include "tests/unit/client/engine.h"
#include "tests/unit/client/peer.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#define LEASE_ID 0x5eed0001ull

static bool mount(struct env *e)
{
	memset(e, 0, sizeof(*e));
	e->p = peer_new();
	peer_set_leasing(e->p, true);
	peer_add_file(e->p, "a.txt", "leased\n", 7);
	struct smb_client_opts o;
	env_opts(&o);
	return env_connect(e, &o);
}

/* ---- the break callback ------------------------------------------------------------ */

struct brk {
	pthread_mutex_t m;
	int n;
	uint64_t id;
	uint32_t old_state, new_state;
	struct smb_lease_ack *ack;
};

static void on_break(void *arg, uint64_t id, uint32_t old_state, uint32_t new_state,
                     struct smb_lease_ack *ack)
{
	struct brk *b = arg;
	pthread_mutex_lock(&b->m);
	b->n++;
	b->id = id;
	b->old_state = old_state;
	b->new_state = new_state;
	b->ack = ack; /* acknowledged later, from the test's thread */
	pthread_mutex_unlock(&b->m);
}

static bool break_seen(void *arg)
{
	struct brk *b = arg;
	pthread_mutex_lock(&b->m);
	bool r = b->n > 0;
	pthread_mutex_unlock(&b->m);
	return r;
}

static bool acked(void *arg)
{
	struct env *e = arg;
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	static struct smb_client_stats cs;
	smb_client_get_stats(e->c, &cs);
	return st.lease_acks > 0 && cs.lease_break_acks > 0;
}

static uint32_t granted;

static void lease_open_cb(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                          const struct smb_attr *a)
{
	granted = a && !err && status == STATUS_SUCCESS ? a->lease : 0;
	open_cb(arg, err, status, fid, a);
}

#define DIR_ID 0x5eed0d00ull

/* path opened asking for lease id (parent_id: its directory's); answered */
static struct smb2_fileid open_with(struct env *e, const char *path, bool dir, uint64_t id,
                                    uint64_t parent_id)
{
	struct smb_open_args a = {
	    .desired_access = dir ? FILE_READ_ATTRIBUTES : GENERIC_READ | GENERIC_WRITE,
	    .create_disposition = FILE_OPEN,
	    .create_options = dir ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE,
	    .lease_id = id,
	    .parent_lease_id = parent_id,
	};
	struct wait w;
	w_init(&w);
	granted = 0;
	CHECK_EQ(smb_open(e->c, path, &a, lease_open_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK(granted != 0);
	return w.fid;
}

/* a.txt opened asking for lease LEASE_ID: granted R|W|H */
static struct smb2_fileid open_leased(struct env *e)
{
	struct smb2_fileid fid = open_with(e, "a.txt", false, LEASE_ID, 0);
	CHECK_EQ(granted, SMB2_LEASE_RWH);
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	CHECK_EQ(st.leases_granted, 1);
	return fid;
}

/* The acknowledgment the peer accepted: the lease's key (our lease_id in
 * its first 8 bytes; the peer takes only the key it granted) and state. */
static void check_ack(struct env *e, uint32_t state)
{
	uint8_t key[16];
	uint32_t st = 0;
	CHECK(peer_last_lease_ack(e->p, key, &st));
	uint8_t want[8];
	for (int i = 0; i < 8; i++)
		want[i] = (uint8_t)(LEASE_ID >> (8 * i));
	CHECK_MEM(key, want, 8);
	CHECK_EQ(st, state);
	static struct smb_client_stats cs;
	smb_client_get_stats(e->c, &cs);
	CHECK_EQ(cs.lease_breaks, 1);
	CHECK_EQ(cs.lease_break_acks, 1);
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_break_acked_when_done(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct brk b = {.m = PTHREAD_MUTEX_INITIALIZER};
	smb_client_set_lease_break_cb(e.c, on_break, &b);
	struct smb2_fileid fid = open_leased(&e);
	CHECK(peer_break_lease(e.p, "a.txt", SMB2_LEASE_READ_CACHING));
	CHECK(poll_for(break_seen, &b));
	pthread_mutex_lock(&b.m);
	CHECK_EQ(b.n, 1);
	CHECK_EQ(b.id, LEASE_ID);
	CHECK_EQ(b.old_state, SMB2_LEASE_RWH);
	CHECK_EQ(b.new_state, SMB2_LEASE_READ_CACHING);
	struct smb_lease_ack *ack = b.ack;
	pthread_mutex_unlock(&b.m);
	/* nothing acknowledged before the caller is done with its cache */
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.lease_acks, 0);
	if (ack)
		smb_lease_break_done(ack);
	CHECK(poll_for(acked, &e));
	check_ack(&e, SMB2_LEASE_READ_CACHING);
	env_close(&e, fid);
	env_unmount(&e);
}

static void test_break_acked_at_once(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct smb2_fileid fid = open_leased(&e);
	uint32_t to = SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING;
	CHECK(peer_break_lease(e.p, "a.txt", to));
	CHECK(poll_for(acked, &e));
	check_ack(&e, to);
	env_close(&e, fid);
	env_unmount(&e);
}

static bool breaks_acked(void *arg)
{
	struct env *e = arg;
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	return st.lease_acks == st.lease_breaks;
}

static void test_parent_break_at_close_means_v1(void)
{
	struct env e;
	memset(&e, 0, sizeof(e));
	e.p = peer_new();
	peer_set_leasing(e.p, true);
	peer_set_dir_leasing(e.p, true);
	peer_add_dir(e.p, "d");
	peer_add_file(e.p, "d/f", "f\n", 2);
	peer_add_file(e.p, "d/g", "g\n", 2);
	struct smb_client_opts o;
	env_opts(&o);
	if (!env_connect(&e, &o))
		return;
	struct smb2_fileid dir = open_with(&e, "d", true, DIR_ID, 0);
	struct smb2_fileid f = open_with(&e, "d/f", false, LEASE_ID, DIR_ID);
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.lease_parent_keyed, 1);
	CHECK_EQ(st.lease_v1_asks, 0);

	/* the directory's lease broken with no close on its way: still v2 */
	CHECK(peer_break_lease(e.p, "d", SMB2_LEASE_READ_CACHING));
	CHECK(poll_for(breaks_acked, &e));
	struct smb2_fileid g = open_with(&e, "d/g", false, LEASE_ID + 1, DIR_ID);
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.lease_parent_keyed, 2);
	CHECK_EQ(st.lease_v1_asks, 0);
	env_close(&e, g);

	/* broken while the CLOSE of d/f is on its way: v1 from then on */
	struct peer_match m = {
	    .command = SMB2_CLOSE, .info_class = -1, .path = "d/f", .disposition = -1};
	int hook = peer_on(e.p, &m, PEER_BREAK_PARENT, 0);
	env_close(&e, f);
	CHECK_EQ(peer_hook_fired(e.p, hook), 1);
	CHECK(poll_for(breaks_acked, &e));
	g = open_with(&e, "d/g", false, LEASE_ID + 2, DIR_ID);
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.lease_breaks, 2);
	CHECK_EQ(st.lease_parent_keyed, 2);
	CHECK_EQ(st.lease_v1_asks, 1);
	/* a directory still asks v2 */
	struct smb2_fileid dir2 = open_with(&e, "d", true, DIR_ID + 1, 0);
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.lease_v1_asks, 1);
	env_close(&e, g);
	env_close(&e, dir2);
	env_close(&e, dir);
	env_unmount(&e);
}

int main(void)
{
	smb_log_init("test_lease", false, getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	RUN(test_break_acked_when_done);
	RUN(test_break_acked_at_once);
	RUN(test_parent_break_at_close_means_v1);
	return check_report();
}
