/* tests/unit/client/test_replay.c — replays after a lost reply ([MS-SMB2]
 * 3.2.4.1.1: SMB2_FLAGS_REPLAY_OPERATION and ChannelSequence), the whole
 * engine (session set-up, ops, opens, the reconnect thread) against the
 * scripted peer of peer.h, in-process.
 *
 * Each test mounts the peer's share with smb_client_connect(), arms a lost
 * reply on one operation's request (the peer carries the message out, then
 * closes the connection without answering), runs the operation through the
 * public API and checks that
 *  - the peer saw it, the client made a new connection and sent it again
 *    with the replay flag (and a ChannelSequence bumped past the lost one's);
 *  - the result is what the user must see: success for an executed rename,
 *    unlink or rmdir (the replay finding the name gone, or being deleted);
 *    for an exclusive create, the open the first try made when the server
 *    knows the replay by its CreateGuid, else EEXIST (NAME_COLLISION), and
 *    EEXIST for an exclusive mkdir; the data intact for a write and a read;
 *  - nothing that must not ran twice (one rename, one delete, one create);
 *  - every request after the session set-up was signed with the right key.
 * The same cases against the Python hostile server and Samba are
 * tests/integration/test_replay.py. */
#include "client/client.h"
#include "common/log.h"
#include "tests/unit/check.h"
#include "tests/unit/client/peer.h"
#include "tests/unit/client/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#define HELLO "hello, replayed world\n"

/* ---- a mount of the peer's share ---------------------------------------------------- */

#define VICTIM_LEN ((sizeof(HELLO) - 1) * 800)
static uint8_t victim[VICTIM_LEN];

static bool mount(struct env *e, bool durable)
{
	memset(e, 0, sizeof(*e));
	e->p = peer_new();
	peer_set_durable(e->p, durable);
	peer_add_file(e->p, "a.txt", HELLO, sizeof(HELLO) - 1);
	peer_add_file(e->p, "victim.txt", victim, VICTIM_LEN);
	peer_add_dir(e->p, "emptydir");
	struct smb_client_opts o;
	env_opts(&o);
	return env_connect(e, &o);
}

/* The request the lost reply was armed on (hooked), and the first replay of
 * the same command and path on a later connection. */
struct lost {
	struct peer_rec first, replay;
	bool have_first, have_replay;
	int replays; /* records of command+path flagged REPLAY */
};

static struct lost find_lost(struct env *e, uint16_t lost_cmd, uint16_t replay_cmd,
                             const char *path)
{
	struct lost l = {0};
	static struct peer_rec recs[1024];
	int n = peer_records(e->p, e->rec0, recs, 1024);
	for (int i = 0; i < n; i++) {
		const struct peer_rec *r = &recs[i];
		if (!l.have_first && r->hooked && r->command == lost_cmd) {
			l.first = *r;
			l.have_first = true;
			/* the PDU that names the path is the chain's CREATE */
			for (int j = i; j >= 0 && recs[j].conn == r->conn; j--) {
				if (recs[j].command == replay_cmd &&
				    strcmp(recs[j].path, path) == 0) {
					l.first = recs[j];
					break;
				}
			}
			continue;
		}
		if (r->command == replay_cmd && strcmp(r->path, path) == 0 &&
		    (r->flags & SMB2_FLAGS_REPLAY_OPERATION)) {
			l.replays++;
			if (!l.have_replay) {
				l.replay = *r;
				l.have_replay = true;
			}
		}
	}
	return l;
}

/* The checks every lost reply shares. */
static void check_lost(struct env *e, int hook, uint16_t lost_cmd, uint16_t replay_cmd,
                       const char *path)
{
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	CHECK_EQ(peer_hook_fired(e->p, hook), 1);
	CHECK(st.connections >= 2); /* a reconnect after the lost reply */
	CHECK(st.sessions >= 2);
	struct lost l = find_lost(e, lost_cmd, replay_cmd, path);
	CHECK(l.have_first);
	CHECK(l.have_replay);
	if (!l.have_first || !l.have_replay)
		return;
	CHECK(!(l.first.flags & SMB2_FLAGS_REPLAY_OPERATION)); /* the first try is no replay */
	CHECK(l.replay.conn > l.first.conn);
	CHECK(l.replay.session_id != l.first.session_id); /* the new session */
	/* [MS-SMB2] 3.2.5.1.x: ChannelSequence bumped once for the lost channel */
	CHECK_EQ(l.replay.channel_sequence, (uint16_t)(l.first.channel_sequence + 1));
	CHECK_EQ(l.replays, 1);
}

static struct peer_match match(uint16_t cmd, int cls, const char *path, int disp)
{
	return (struct peer_match){
	    .command = cmd, .info_class = cls, .path = path, .disposition = disp};
}

/* ---- the cases --------------------------------------------------------------------- */

static void test_mount(void)
{
	struct env e;
	if (!mount(&e, true))
		return;
	struct wait w;
	env_open(&e, "a.txt", FILE_OPEN, &w);
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	struct smb2_fileid fid = w.fid;
	w_init(&w);
	CHECK_EQ(smb_read(e.c, fid, 0, 100, read_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, sizeof(HELLO) - 1);
	CHECK_MEM(w.data, HELLO, sizeof(HELLO) - 1);
	env_close(&e, fid);
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.connections, 1);
	env_unmount(&e);
}

static void test_rename(void)
{
	struct env e;
	if (!mount(&e, true))
		return;
	int h = env_rename_lost(&e);
	check_lost(&e, h, SMB2_SET_INFO, SMB2_CREATE, "a.txt");
	env_check_renamed(&e, HELLO, sizeof(HELLO) - 1);
	env_unmount(&e);
}

/* unlink or rmdir whose reply is lost: the replay meets nothing (its CREATE
 * fails NAME_NOT_FOUND), or, with replay_status, the peer answers the
 * replay's CREATE so (DELETE_PENDING: a delete still under way); both mean
 * done. */
static void remove_case(const char *path, bool dir, uint32_t replay_status)
{
	struct env e;
	if (!mount(&e, true))
		return;
	struct peer_match m = match(SMB2_SET_INFO, FileDispositionInformation, path, -1);
	int h = peer_on(e.p, &m, PEER_LOST_REPLY, 0);
	int h2 = -1;
	if (replay_status) {
		struct peer_match r = match(SMB2_CREATE, -1, path, -1);
		r.replay_only = true;
		h2 = peer_on(e.p, &r, PEER_STATUS, replay_status);
	}
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_unlink(e.c, path, dir, status_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS); /* done, though the replay meets nothing */
	check_lost(&e, h, SMB2_SET_INFO, SMB2_CREATE, path);
	if (replay_status)
		CHECK_EQ(peer_hook_fired(e.p, h2), 1);
	CHECK(!peer_exists(e.p, path));
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.deletes, 1);
	env_unmount(&e);
}

static void test_unlink(void)
{
	remove_case("a.txt", false, 0);
}

static void test_unlink_delete_pending(void)
{
	remove_case("a.txt", false, STATUS_DELETE_PENDING);
}

static void test_rmdir(void)
{
	remove_case("emptydir", true, 0);
}

static void attr_cb(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	w_done(arg, err, status);
}

/* An exclusive mkdir has no CreateGuid a server could know its replay by
 * (a directory is never durable, and the chain closes it at once): the
 * replay meets the directory it made, which cannot be told from someone
 * else's, so the user gets EEXIST (NAME_COLLISION). */
static void test_mkdir(void)
{
	struct env e;
	if (!mount(&e, true))
		return;
	struct peer_match m = match(SMB2_CREATE, -1, "newdir", FILE_CREATE);
	int h = peer_on(e.p, &m, PEER_LOST_REPLY, 0);
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_mkdir(e.c, "newdir", attr_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_OBJECT_NAME_COLLISION);
	check_lost(&e, h, SMB2_CREATE, SMB2_CREATE, "newdir");
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.creates, 1);
	CHECK(peer_exists(e.p, "newdir"));
	env_unmount(&e);
}

/* O_CREAT|O_EXCL whose reply is lost.  durable: the create carries a
 * durable v2 CreateGuid; the peer knows the replay by it and answers with
 * the open the first try made: success, and the file is ours.  !durable: a
 * server that keeps no CreateGuid; the replay meets the file the first try
 * made, and the user gets EEXIST (it may be someone else's). */
static void exclusive_case(bool durable)
{
	struct env e;
	if (!mount(&e, durable))
		return;
	struct peer_match m = match(SMB2_CREATE, -1, "new.txt", FILE_CREATE);
	int h = peer_on(e.p, &m, PEER_LOST_REPLY, 0);
	struct wait w;
	env_open(&e, "new.txt", FILE_CREATE, &w);
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, durable ? STATUS_SUCCESS : STATUS_OBJECT_NAME_COLLISION);
	check_lost(&e, h, SMB2_CREATE, SMB2_CREATE, "new.txt");
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.creates, 1);
	CHECK_EQ(st.replayed_creates, durable ? 1 : 0);
	CHECK(peer_exists(e.p, "new.txt"));
	if (durable && !w.err && w.status == STATUS_SUCCESS) {
		struct smb2_fileid fid = w.fid;
		w_init(&w);
		CHECK_EQ(smb_write(e.c, fid, 0, "mine", 4, write_cb, &w), 0);
		CHECK(w_wait(&w));
		CHECK_EQ(w.n, 4);
		env_close(&e, fid);
		char buf[8];
		CHECK_EQ(peer_file_data(e.p, "new.txt", buf, sizeof(buf)), 4);
		CHECK_MEM(buf, "mine", 4);
	}
	env_unmount(&e);
}

static void test_exclusive_create(void)
{
	exclusive_case(true);
}

static void test_exclusive_create_no_durable(void)
{
	exclusive_case(false);
}

/* A mount with victim.txt open (a durable handle), a lost reply armed on
 * the next cmd on it.  false if that could not be set up. */
static bool handle_case(struct env *e, uint16_t cmd, struct smb2_fileid *fid, int *hook)
{
	if (!mount(e, true))
		return false;
	struct wait w;
	env_open(e, "victim.txt", FILE_OPEN, &w);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	*fid = w.fid;
	struct peer_match m = match(cmd, -1, "victim.txt", -1);
	*hook = peer_on(e->p, &m, PEER_LOST_REPLY, 0);
	return true;
}

/* What a lost READ or WRITE leaves: the replay, through the handle the
 * durable reconnect brought along. */
static void handle_case_end(struct env *e, uint16_t cmd, struct smb2_fileid fid, int hook)
{
	check_lost(e, hook, cmd, cmd, "victim.txt");
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	CHECK_EQ(st.durable_reconnects, 1);
	env_close(e, fid);
	env_unmount(e);
}

static void test_write(void)
{
	struct env e;
	struct smb2_fileid fid;
	int h;
	if (!handle_case(&e, SMB2_WRITE, &fid, &h))
		return;
	uint8_t data[4096];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_write(e.c, fid, 4096, data, sizeof(data), write_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, sizeof(data));
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.writes, 2); /* the lost one and its replay: the same bytes */
	static uint8_t want[VICTIM_LEN], got[VICTIM_LEN + 16];
	memcpy(want, victim, VICTIM_LEN);
	memcpy(want + 4096, data, sizeof(data));
	CHECK_EQ(peer_file_data(e.p, "victim.txt", got, sizeof(got)), VICTIM_LEN);
	CHECK_MEM(got, want, VICTIM_LEN);
	handle_case_end(&e, SMB2_WRITE, fid, h);
}

static void test_read(void)
{
	struct env e;
	struct smb2_fileid fid;
	int h;
	if (!handle_case(&e, SMB2_READ, &fid, &h))
		return;
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_read(e.c, fid, 0, 8192, read_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, 8192);
	CHECK_MEM(w.data, victim, 8192);
	handle_case_end(&e, SMB2_READ, fid, h);
}

/* The connection cut with nothing in flight: the client reconnects, the
 * handle comes along by a durable reconnect, and a READ issued meanwhile
 * waits for the new session and is carried out once, its data intact.
 * No server saw that READ before, so it goes out as new: without
 * SMB2_FLAGS_REPLAY_OPERATION (client/conn.c smb_req_reset_for_replay). */
static void test_cut_idle(void)
{
	struct env e;
	if (!mount(&e, true))
		return;
	struct wait w;
	env_open(&e, "victim.txt", FILE_OPEN, &w);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	struct smb2_fileid fid = w.fid;
	peer_drop_connections(e.p);
	w_init(&w);
	CHECK_EQ(smb_read(e.c, fid, 0, 100, read_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, 100);
	CHECK_MEM(w.data, victim, 100);
	struct peer_stats st;
	peer_get_stats(e.p, &st);
	CHECK_EQ(st.connections, 2);
	CHECK_EQ(st.durable_reconnects, 1);
	CHECK_EQ(st.reads, 1);
	struct peer_rec recs[256];
	int n = peer_records(e.p, 0, recs, 256), nread = 0;
	for (int i = 0; i < n; i++)
		if (recs[i].command == SMB2_READ) {
			nread++;
			CHECK(!(recs[i].flags & SMB2_FLAGS_REPLAY_OPERATION));
		}
	CHECK_EQ(nread, 1);
	env_close(&e, fid);
	env_unmount(&e);
}

int main(void)
{
	smb_log_init("test_replay", false, getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	for (size_t i = 0; i < VICTIM_LEN; i++)
		victim[i] = (uint8_t)HELLO[i % (sizeof(HELLO) - 1)];
	RUN(test_mount);
	RUN(test_rename);
	RUN(test_unlink);
	RUN(test_unlink_delete_pending);
	RUN(test_rmdir);
	RUN(test_mkdir);
	RUN(test_exclusive_create);
	RUN(test_exclusive_create_no_durable);
	RUN(test_write);
	RUN(test_read);
	RUN(test_cut_idle);
	return check_report();
}
