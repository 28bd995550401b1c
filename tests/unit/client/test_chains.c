/* tests/unit/client/test_chains.c — the compounds the FUSE layer sends to
 * save round trips, against the scripted peer of peer.h, in-process:
 *  - smb_write_times(): a WRITE carrying its data in its body and a
 *    SET_INFO FileBasicInformation on the same handle, one message, the
 *    SET_INFO related (so it runs only after the WRITE succeeded); the data
 *    lands, the callback gets the bytes written, a failed WRITE fails the
 *    whole (and the SET_INFO is not carried out); bad arguments are refused
 *    before anything is sent;
 *  - smb_close_batch(): several CLOSEs in one message, none related, each
 *    callback with its own CLOSE's status (one refused leaves the others
 *    closed);
 *  - smb_open() with FILE_CREATE: a CREATE+QUERY_INFO compound asking
 *    QFid; once the server has answered QFid, the CREATE alone, whose
 *    answer gives the file id (QFid) and one link; opens of files that
 *    may make the file keep the QUERY_INFO, opens by name go alone too
 *    (the link count "unknown"); a server that ignores QFid keeps getting
 *    the compound;
 *  - smb_stat() in steps (CREATE, QUERY_INFO FileStandardInformation,
 *    CLOSE, each alone) once QFid was answered, the compound before and
 *    with NEVER; the AUTO choice from the two running means. */
#include "client/client.h"
#include "client/client_int.h"
#include "common/log.h"
#include "tests/unit/check.h"
#include "tests/unit/client/engine.h"
#include "tests/unit/client/peer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

static bool mount(struct env *e)
{
	memset(e, 0, sizeof(*e));
	e->p = peer_new();
	peer_add_file(e->p, "a.txt", "a", 1);
	peer_add_file(e->p, "b.txt", "b", 1);
	peer_add_file(e->p, "c.txt", "c", 1);
	struct smb_client_opts o;
	env_opts(&o);
	return env_connect(e, &o);
}

static uint64_t requests(struct env *e)
{
	struct smb_client_stats st;
	smb_client_get_stats(e->c, &st);
	uint64_t n = 0;
	for (int i = 0; i < st.nchannels; i++)
		n += st.channels[i].requests;
	return n;
}

static void test_write_times(void)
{
	struct env e;
	if (!mount(&e))
		return;
	struct wait w;
	env_open(&e, "w.txt", FILE_CREATE, &w);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	struct smb2_fileid fid = w.fid;
	struct smb_setattr_args t = {.which = SMB_SET_MTIME, .mtime = 132000000000000000ull};

	/* refused before anything goes out */
	uint64_t r0 = requests(&e);
	CHECK_EQ(smb_write_times(e.c, fid, 0, "x", 0, &t, write_cb, &w), -EINVAL);
	char *big = calloc(1, SMB_WRITE_TIMES_MAX + 1);
	CHECK_EQ(smb_write_times(e.c, fid, 0, big, SMB_WRITE_TIMES_MAX + 1, &t, write_cb, &w),
	         -EINVAL);
	free(big);
	struct smb_setattr_args size = {.which = SMB_SET_SIZE | SMB_SET_MTIME};
	CHECK_EQ(smb_write_times(e.c, fid, 0, "x", 1, &size, write_cb, &w), -EINVAL);
	CHECK_EQ(requests(&e), r0);

	int from = peer_nrecords(e.p);
	w_init(&w);
	CHECK_EQ(smb_write_times(e.c, fid, 0, "hello, times", 12, &t, write_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	CHECK_EQ(w.n, 12);
	CHECK_EQ(requests(&e), r0 + 1); /* one message */
	struct peer_rec r[4];
	CHECK_EQ(peer_records(e.p, from, r, 4), 2);
	CHECK_EQ(r[0].command, SMB2_WRITE);
	CHECK_EQ(r[0].length, 12);
	CHECK(!(r[0].flags & SMB2_FLAGS_RELATED_OPERATIONS));
	CHECK_EQ(r[1].command, SMB2_SET_INFO);
	CHECK_EQ(r[1].info_class, FileBasicInformation);
	CHECK(r[1].flags & SMB2_FLAGS_RELATED_OPERATIONS);
	CHECK_EQ(r[1].status, STATUS_SUCCESS);
	char got[32];
	CHECK_EQ(peer_file_data(e.p, "w.txt", got, sizeof(got)), 12);
	CHECK(memcmp(got, "hello, times", 12) == 0);

	/* a WRITE refused: the whole fails with its status, and the SET_INFO
	 * after it is not carried out */
	struct peer_match m = {.command = SMB2_WRITE, .info_class = -1, .disposition = -1};
	int hook = peer_on(e.p, &m, PEER_STATUS, STATUS_DISK_FULL);
	from = peer_nrecords(e.p);
	w_init(&w);
	CHECK_EQ(smb_write_times(e.c, fid, 12, "more", 4, &t, write_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(peer_hook_fired(e.p, hook), 1);
	CHECK_EQ(w.status, STATUS_DISK_FULL);
	CHECK_EQ(w.n, 0);
	CHECK_EQ(peer_records(e.p, from, r, 4), 2);
	CHECK(r[1].status != STATUS_SUCCESS);
	CHECK_EQ(peer_file_data(e.p, "w.txt", got, sizeof(got)), 12);
	env_close(&e, fid);
	env_unmount(&e);
}

static const char *const names[3] = {"a.txt", "b.txt", "c.txt"};

/* names[0..2] open, ready for a batch: fids[i], args[i] = &w[i]. */
struct three {
	struct smb2_fileid fids[3];
	struct wait w[3];
	void *args[3];
};

static bool mount_three(struct env *e, struct three *t)
{
	if (!mount(e))
		return false;
	for (int i = 0; i < 3; i++) {
		env_open(e, names[i], FILE_OPEN, &t->w[i]);
		CHECK_EQ(t->w[i].status, STATUS_SUCCESS);
		t->fids[i] = t->w[i].fid;
		w_init(&t->w[i]);
		t->args[i] = &t->w[i];
	}
	return true;
}

/* Close the three in one batch, b.txt's `refused` PDU answered
 * STATUS_ACCESS_DENIED; returns the index of the peer's first record of
 * it. */
static int close_three(struct env *e, struct three *t, const uint64_t *mtimes, uint16_t refused)
{
	struct peer_match m = {
	    .command = refused, .info_class = -1, .path = "b.txt", .disposition = -1};
	int hook = peer_on(e->p, &m, PEER_STATUS, STATUS_ACCESS_DENIED);
	uint64_t r0 = requests(e);
	int from = peer_nrecords(e->p);
	CHECK_EQ(smb_close_batch(e->c, t->fids, mtimes, t->args, 3, status_cb), 0);
	for (int i = 0; i < 3; i++)
		CHECK(w_wait(&t->w[i]));
	CHECK_EQ(requests(e), r0 + 1); /* one message */
	CHECK_EQ(peer_hook_fired(e->p, hook), 1);
	return from;
}

static void test_close_batch(void)
{
	struct env e;
	struct three t;
	if (!mount_three(&e, &t))
		return;
	CHECK_EQ(smb_close_batch(e.c, t.fids, NULL, t.args, 0, status_cb), -EINVAL);
	CHECK_EQ(smb_close_batch(e.c, t.fids, NULL, t.args, SMB_CLOSE_BATCH_MAX + 1, status_cb),
	         -EINVAL);

	int from = close_three(&e, &t, NULL, SMB2_CLOSE);
	CHECK_EQ(t.w[0].status, STATUS_SUCCESS);
	CHECK_EQ(t.w[1].status, STATUS_ACCESS_DENIED);
	CHECK_EQ(t.w[2].status, STATUS_SUCCESS);
	struct peer_rec r[4];
	CHECK_EQ(peer_records(e.p, from, r, 4), 3);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(r[i].command, SMB2_CLOSE);
		CHECK(!(r[i].flags & SMB2_FLAGS_RELATED_OPERATIONS));
		CHECK(strcmp(r[i].path, names[i]) == 0);
	}
	env_unmount(&e);
}

/* A nonzero mtime goes as a SET_INFO FileBasicInformation of that
 * LastWriteTime right before its handle's CLOSE; each callback gets its
 * CLOSE's status, not the SET_INFO's; the PDUs are counted against
 * SMB_CLOSE_BATCH_MAX. */
static void test_close_batch_mtimes(void)
{
	struct env e;
	struct three t;
	if (!mount_three(&e, &t))
		return;
	const uint64_t when = 133000000000000000ULL;
	uint64_t mtimes[3] = {0, when, when + 1};
	uint64_t all[SMB_CLOSE_BATCH_MAX] = {when, when, when, 0, 0, 0};
	struct smb2_fileid many[SMB_CLOSE_BATCH_MAX] = {t.fids[0], t.fids[1], t.fids[2], t.fids[0]};
	void *margs[SMB_CLOSE_BATCH_MAX] = {0};
	CHECK_EQ(smb_close_batch(e.c, many, all, margs, 4, status_cb), -EINVAL); /* 7 PDUs */

	int from = close_three(&e, &t, mtimes, SMB2_SET_INFO);
	/* the SET_INFO's refusal is not the CLOSE's */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(t.w[i].status, STATUS_SUCCESS);
	struct peer_rec r[6];
	CHECK_EQ(peer_records(e.p, from, r, 6), 5);
	static const uint16_t want[5] = {SMB2_CLOSE, SMB2_SET_INFO, SMB2_CLOSE, SMB2_SET_INFO,
	                                 SMB2_CLOSE};
	static const char *path[5] = {"a.txt", "b.txt", "b.txt", "c.txt", "c.txt"};
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(r[i].command, want[i]);
		CHECK(!(r[i].flags & SMB2_FLAGS_RELATED_OPERATIONS));
		CHECK(strcmp(r[i].path, path[i]) == 0);
	}
	CHECK_EQ(r[1].info_class, FileBasicInformation);
	CHECK_EQ(r[3].info_class, FileBasicInformation);
	env_unmount(&e);
}

/* Open path with disposition disp; the records it made into r (at most 4),
 * their number returned; the open's attributes into *a; closed after. */
static int open_records(struct env *e, const char *path, uint32_t disp, struct peer_rec *r,
                        struct smb_attr *a)
{
	struct wait w;
	int from = peer_nrecords(e->p);
	env_open(e, path, disp, &w);
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	*a = w.attr;
	int n = peer_records(e->p, from, r, 4);
	env_close(e, w.fid);
	return n;
}

static void test_create_alone_after_qfid(void)
{
	for (int answer = 0; answer < 2; answer++) {
		struct env e;
		if (!mount(&e))
			return;
		peer_set_qfid(e.p, answer);
		struct peer_rec r[4];
		struct smb_attr first, made, old;
		/* the first made file: the compound, whatever the server does */
		CHECK_EQ(open_records(&e, "n1", FILE_CREATE, r, &first), 2);
		CHECK_EQ(r[0].command, SMB2_CREATE);
		CHECK_EQ(r[1].command, SMB2_QUERY_INFO);
		CHECK(first.file_id != 0);
		CHECK_EQ(first.nlink, 1);
		/* the next: alone once QFid was answered */
		int n = open_records(&e, "n2", FILE_CREATE, r, &made);
		CHECK_EQ(n, answer ? 1 : 2);
		CHECK_EQ(r[0].command, SMB2_CREATE);
		CHECK(made.file_id != 0 && made.file_id != first.file_id);
		CHECK_EQ(made.nlink, 1);
		/* an open that may make the file replies its attributes as an
		 * entry: it asks them */
		CHECK_EQ(open_records(&e, "n2", FILE_OPEN_IF, r, &old), 2);
		CHECK_EQ(r[1].command, SMB2_QUERY_INFO);
		CHECK_EQ(old.file_id, made.file_id);
		CHECK_EQ(old.nlink, 1);
		/* an open of a file by name needs no link count: alone too,
		 * the count "unknown" */
		for (int ow = 0; ow < 2; ow++) {
			n = open_records(&e, "n2", ow ? FILE_OVERWRITE : FILE_OPEN, r, &old);
			CHECK_EQ(n, answer ? 1 : 2);
			CHECK_EQ(r[0].command, SMB2_CREATE);
			CHECK_EQ(old.file_id, made.file_id);
			CHECK_EQ(old.nlink, answer ? 0u : 1u);
		}
		env_unmount(&e);
	}
}

static void stat_cb(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct wait *w = arg;
	if (a)
		w->attr = *a;
	w_done(w, err, status);
}

/* smb_stat() of path; the records it made into r (at most 4), their count */
static int stat_records(struct env *e, const char *path, struct peer_rec *r, struct wait *w)
{
	int from = peer_nrecords(e->p);
	w_init(w);
	CHECK_EQ(smb_stat(e->c, path, stat_cb, w), 0);
	CHECK(w_wait(w));
	return peer_records(e->p, from, r, 4);
}

static void test_stat_steps(void)
{
	for (int answer = 0; answer < 2; answer++) {
		struct env e;
		if (!mount(&e))
			return;
		peer_set_qfid(e.p, answer);
		smb_client_set_meta_split(e.c, SMB_META_SPLIT_ALWAYS);
		struct peer_rec r[4];
		struct smb_attr made;
		struct wait w;
		CHECK_EQ(open_records(&e, "s1", FILE_CREATE, r, &made), 2);
		/* in steps once QFid was answered: three requests, none
		 * related, the handle closed before the answer */
		int n = stat_records(&e, "s1", r, &w);
		CHECK_EQ(w.err, 0);
		CHECK_EQ(w.status, STATUS_SUCCESS);
		CHECK_EQ(n, 3);
		CHECK_EQ(r[0].command, SMB2_CREATE);
		CHECK_EQ(r[1].command, SMB2_QUERY_INFO);
		CHECK_EQ(r[2].command, SMB2_CLOSE);
		if (answer) {
			for (int i = 0; i < 3; i++)
				CHECK(!(r[i].flags & SMB2_FLAGS_RELATED_OPERATIONS));
			CHECK_EQ(r[1].info_class, FileStandardInformation);
		} else {
			CHECK(r[1].flags & SMB2_FLAGS_RELATED_OPERATIONS);
			CHECK_EQ(r[1].info_class, FileAllInformation);
		}
		CHECK_EQ(w.attr.file_id, made.file_id);
		CHECK_EQ(w.attr.nlink, 1);
		CHECK_EQ(w.attr.end_of_file, 0);
		CHECK(w.attr.last_write_time != 0);
		/* a missing name: the CREATE's status, nothing more sent */
		n = stat_records(&e, "missing", r, &w);
		CHECK_EQ(w.err, 0);
		CHECK_EQ(w.status, STATUS_OBJECT_NAME_NOT_FOUND);
		CHECK_EQ(n, answer ? 1 : 3);
		/* NEVER: the compound */
		smb_client_set_meta_split(e.c, SMB_META_SPLIT_NEVER);
		n = stat_records(&e, "s1", r, &w);
		CHECK_EQ(w.status, STATUS_SUCCESS);
		CHECK_EQ(n, 3);
		CHECK(r[1].flags & SMB2_FLAGS_RELATED_OPERATIONS);
		CHECK_EQ(w.attr.file_id, made.file_id);
		/* AUTO: the compound's round trip is timed (the request's own
		 * clock), as the steps and the lone CREATEs were */
		smb_client_set_meta_split(e.c, SMB_META_SPLIT_AUTO);
		stat_records(&e, "s1", r, &w);
		CHECK_EQ(w.status, STATUS_SUCCESS);
		CHECK(e.c->meta_lat.compound_us != 0);
		CHECK(!answer || e.c->meta_lat.single_us != 0);
		env_unmount(&e);
	}
}

/* AUTO: in steps while the compound costs more than four lone requests,
 * and every 16th lookup the other way. */
static void test_stat_split_choice(void)
{
	CHECK(!smb_stat_split_wanted(0, 0, 0));
	CHECK(!smb_stat_split_wanted(100000, 0, 0)); /* no lone sample yet */
	CHECK(smb_stat_split_wanted(0, 0, 15));      /* ...so take one */
	CHECK(!smb_stat_split_wanted(120000, 60000, 3));
	CHECK(smb_stat_split_wanted(120000, 60000, 31));
	CHECK(smb_stat_split_wanted(16000000, 2500000, 3));
	CHECK(!smb_stat_split_wanted(16000000, 2500000, 47));
	CHECK(!smb_stat_split_wanted(400, 100, 1)); /* 4x: not more than four */
	int split = 0;
	for (uint64_t i = 0; i < 160; i++)
		split += smb_stat_split_wanted(16000000, 2500000, i);
	CHECK_EQ(split, 150);
}

int main(void)
{
	smb_log_init("test_chains", false, getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	RUN(test_write_times);
	RUN(test_close_batch);
	RUN(test_close_batch_mtimes);
	RUN(test_create_alone_after_qfid);
	RUN(test_stat_steps);
	RUN(test_stat_split_choice);
	return check_report();
}
