/* tests/unit/client/engine.h — what the tests of the whole engine against
 * the scripted peer (peer.h) share: waiting for the public API's
 * callbacks, and a mount of the peer's share.
 *
 * A struct wait is handed as the callback's arg; w_wait() blocks until the
 * callback ran (30 s at most) and leaves what it reported in the struct. */
#ifndef SMBRDMA_TESTS_UNIT_CLIENT_ENGINE_H
#define SMBRDMA_TESTS_UNIT_CLIENT_ENGINE_H

#include "client/client.h"
#include "tests/unit/check.h"
#include "tests/unit/client/peer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int err;
	uint32_t status;
	struct smb2_fileid fid;
	struct smb_attr attr; /* open_cb: the attributes given, if any */
	size_t n;
	uint8_t data[16384];
};

static inline void w_init(struct wait *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->cv, NULL);
}

static inline void w_done(struct wait *w, int err, uint32_t status)
{
	pthread_mutex_lock(&w->m);
	w->err = err;
	w->status = status;
	w->done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->m);
}

/* false if it did not come within 30 s */
static inline bool w_wait(struct wait *w)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&w->m);
	while (!w->done)
		if (pthread_cond_timedwait(&w->cv, &w->m, &ts) != 0)
			break;
	bool d = w->done;
	pthread_mutex_unlock(&w->m);
	return d;
}

static inline void status_cb(void *arg, int err, uint32_t status)
{
	w_done(arg, err, status);
}

static inline void open_cb(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                           const struct smb_attr *a)
{
	struct wait *w = arg;
	w->fid = fid;
	if (a)
		w->attr = *a;
	w_done(w, err, status);
}

static inline void write_cb(void *arg, int err, uint32_t status, size_t written)
{
	struct wait *w = arg;
	w->n = written;
	w_done(w, err, status);
}

static inline void read_cb(void *arg, int err, uint32_t status, const void *data, size_t len)
{
	struct wait *w = arg;
	w->n = len <= sizeof(w->data) ? len : 0;
	if (w->n)
		memcpy(w->data, data, len);
	w_done(w, err, status);
}

/* Poll cond(arg) every 10 ms until true, for 5 s at most: false if it
 * never became true. */
static inline bool poll_for(bool (*cond)(void *), void *arg)
{
	struct timespec d = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 500; i++) {
		if (cond(arg))
			return true;
		nanosleep(&d, NULL);
	}
	return false;
}

/* ---- a mount of the peer's share ---------------------------------------------------- */

struct env {
	struct peer *p;
	struct smb_client *c;
	int rec0; /* records before the operation under test */
};

/* The options of a mount of the peer's share, as its user. */
static inline void env_opts(struct smb_client_opts *o)
{
	*o = (struct smb_client_opts){
	    .host = "127.0.0.1",
	    .addr = "127.0.0.1",
	    .share = PEER_SHARE,
	    .user = PEER_USER,
	    .password = PEER_PASSWORD,
	    .domain = PEER_DOMAIN,
	    .timeout_ms = 20000,
	    .connect_timeout_ms = 5000,
	};
}

/* Mount with o the share of e->p (made and filled by the caller): SMB
 * 3.1.1, signed.  false if it failed (e->p is freed then). */
static inline bool env_connect(struct env *e, const struct smb_client_opts *o)
{
	char why[512] = "";
	int err = smb_client_connect(o, &e->c, why, sizeof(why));
	CHECK_EQ(err, 0);
	if (err) {
		fprintf(stderr, "smb_client_connect: %s\n", why);
		peer_free(e->p);
		return false;
	}
	struct smb_client_info info;
	smb_client_get_info(e->c, &info);
	CHECK_EQ(info.dialect, SMB2_DIALECT_0311);
	CHECK(info.signing);
	e->rec0 = peer_nrecords(e->p);
	return true;
}

/* The peer saw nothing wrong (else its last violation is printed). */
static inline void env_check_peer(struct peer *p)
{
	struct peer_stats st;
	peer_get_stats(p, &st);
	CHECK_EQ(st.violations, 0);
	if (st.violations) {
		char v[256];
		peer_last_violation(p, v, sizeof(v));
		fprintf(stderr, "  last violation: %s\n", v);
	}
}

/* The peer saw nothing wrong; unmount, free the peer. */
static inline void env_unmount(struct env *e)
{
	env_check_peer(e->p);
	smb_client_destroy(e->c);
	peer_free(e->p);
}

/* smb_open() of a file for reading and writing, waited for into w. */
static inline void env_open(struct env *e, const char *path, uint32_t disp, struct wait *w)
{
	struct smb_open_args a = {
	    .desired_access = GENERIC_READ | GENERIC_WRITE,
	    .create_disposition = disp,
	    .create_options = FILE_NON_DIRECTORY_FILE,
	};
	w_init(w);
	CHECK_EQ(smb_open(e->c, path, &a, open_cb, w), 0);
	CHECK(w_wait(w));
}

static inline void env_close(struct env *e, struct smb2_fileid fid)
{
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_close(e->c, fid, status_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
}

/* rename a.txt to b.txt with the reply to its SET_INFO lost (the peer
 * carries it out and cuts that connection); the user must see success,
 * though the replay meets no a.txt.  Returns the hook. */
static inline int env_rename_lost(struct env *e)
{
	struct peer_match m = {.command = SMB2_SET_INFO,
	                       .info_class = FileRenameInformation,
	                       .path = "a.txt",
	                       .disposition = -1};
	int h = peer_on(e->p, &m, PEER_LOST_REPLY, 0);
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_rename(e->c, "a.txt", "b.txt", false, status_cb, &w), 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	return h;
}

/* After env_rename_lost(): a.txt is b.txt now, its len bytes intact, and
 * renamed once. */
static inline void env_check_renamed(struct env *e, const void *data, size_t len)
{
	CHECK(!peer_exists(e->p, "a.txt"));
	char buf[256];
	CHECK_EQ(peer_file_data(e->p, "b.txt", buf, sizeof(buf)), len);
	CHECK_MEM(buf, data, len < sizeof(buf) ? len : sizeof(buf));
	struct peer_stats st;
	peer_get_stats(e->p, &st);
	CHECK_EQ(st.renames, 1);
}

#endif
