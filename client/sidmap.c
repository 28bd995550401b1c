/* client/sidmap.c — Unix ids for owners and groups that come as account
 * SIDs (SMB3 POSIX extensions).
 *
 * The POSIX information gives a file's owner and group as SIDs.  A Unix
 * SID (S-1-22-1-<uid>, S-1-22-2-<gid>) is its id (client/proto/smb2_posix.h);
 * ksmbd sends only those.  Samba (4.22) sends the SID its passdb or idmap
 * has for the uid: S-1-22-1-<uid> only for a uid with no account, and
 * S-1-5-21-<domain>-<rid> for its users (the very one the mount logs on
 * as, whose files those mostly are).  Such a SID is turned into a name by
 * the server, LsarLookupSids on the LSA pipe of its IPC$ share ([MS-LSAT];
 * client/proto/lsarpc.h), and the name into a local id through NSS
 * (getpwnam_r for a user, getgrnam_r for a group; "name", then
 * "DOMAIN\name"): the mapping by name that cifs.idmap with winbind and
 * NFSv4's idmapd make, right where the client and the server share their
 * accounts.  A SID whose name has no local account, or that could not be
 * looked up, has no id (the mount shows uid=/gid= for it).  Only domain
 * account SIDs (S-1-5-21-...) are looked up.
 *
 * Answers are cached: a mapped SID for MAPPED_TTL_MS, an unmapped one for
 * NONE_TTL_MS.  One lookup runs at a time, of at most LSARPC_MAX_SIDS SIDs;
 * SIDs asked for meanwhile wait for the next.  A lookup is a few round trips
 * on the loop thread: TREE_CONNECT to IPC$ (once per session), CREATE of
 * the pipe, the bind, LsarOpenPolicy2 and LsarLookupSids in
 * FSCTL_PIPE_TRANSCEIVE, CLOSE.  Its requests are never replayed on another
 * channel: a lookup cut by a lost connection fails (and maps nothing).
 *
 * Threads: the cache is under its mutex (any thread may ask it); lookups
 * start and end on the loop thread, and a waiter's done() runs there,
 * without the mutex.
 */
#include "client/client_int.h"
#include "client/conn.h"
#include "client/request.h"
#include "client/session.h"
#include "client/sidmap.h"
#include "client/proto/lsarpc.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <talloc.h>

#define MAPPED_TTL_MS (10 * 60 * 1000)
#define NONE_TTL_MS   (60 * 1000)
#define MAX_ENTRIES   4096
#define FAIL_LOG_MS   (60 * 1000)

/* FSCTL_PIPE_TRANSCEIVE ([MS-FSCC] 2.3.36) */
#define FSCTL_PIPE_TRANSCEIVE_ 0x0011C017u
/* what a pipe open asks ([MS-SMB2] clients ask the same) */
#define PIPE_ACCESS 0x0012019Fu

enum ent_state { ENT_QUEUED, ENT_PENDING, ENT_DONE };

struct ent {
	struct smb2_sid sid;
	enum ent_state state;
	uint32_t uid, gid; /* SMB2_POSIX_ID_NONE: none */
	uint64_t expires_ms;
};

struct waiter {
	struct waiter *next;
	void (*done)(void *arg);
	void *arg;
	int n;
	struct smb2_sid sids[];
};

struct batch {
	struct smb_client *c;
	uint32_t n;
	struct smb2_sid sids[LSARPC_MAX_SIDS];
	struct smb2_fileid pipe;
	bool pipe_open;
	uint8_t handle[LSARPC_HANDLE_LEN];
	uint32_t call_id;
	const char *step; /* for the log line of a failure */
};

struct smb_sidmap {
	pthread_mutex_t lock;
	struct ent *ents;
	size_t n, cap;
	struct waiter *waiters;
	bool busy;         /* a batch is out */
	uint32_t ipc_tree; /* of the session ipc_session */
	uint64_t ipc_session;
	uint64_t fail_logged_ms;
	unsigned lookups, failures; /* for the log */
};

static bool sid_eq(const struct smb2_sid *a, const struct smb2_sid *b)
{
	return a->revision == b->revision && a->nsub == b->nsub && a->authority == b->authority &&
	       memcmp(a->sub, b->sub, sizeof(a->sub[0]) * a->nsub) == 0;
}

/* A domain account: S-1-5-21-<three>-<rid>. */
static bool lookable(const struct smb2_sid *s)
{
	return s->revision == 1 && s->authority == 5 && s->nsub >= 5 && s->sub[0] == 21;
}

static int sidmap_destroy(struct smb_sidmap *m)
{
	pthread_mutex_destroy(&m->lock);
	return 0;
}

/* The client's map, made on first use; it goes with the client (a talloc
 * child, waiters and entries its children). */
static struct smb_sidmap *sidmap(struct smb_client *c)
{
	struct smb_sidmap *m = __atomic_load_n(&c->sidmap, __ATOMIC_ACQUIRE);
	if (m)
		return m;
	m = talloc_zero(c, struct smb_sidmap);
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	talloc_set_destructor(m, sidmap_destroy);
	struct smb_sidmap *none = NULL;
	if (!__atomic_compare_exchange_n(&c->sidmap, &none, m, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		talloc_free(m);
		return none;
	}
	return m;
}

static bool closing(struct smb_client *c)
{
	return __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE);
}

/* Under the lock. */
static struct ent *find(struct smb_sidmap *m, const struct smb2_sid *s)
{
	for (size_t i = 0; i < m->n; i++)
		if (sid_eq(&m->ents[i].sid, s))
			return &m->ents[i];
	return NULL;
}

/* Under the lock: is the entry an answer still good at now? */
static bool fresh(const struct ent *e, uint64_t now)
{
	return e->state == ENT_DONE && now < e->expires_ms;
}

bool smb_sidmap_get(struct smb_client *c, const struct smb2_sid *sid, bool group, uint32_t *id)
{
	*id = SMB2_POSIX_ID_NONE;
	if (!lookable(sid))
		return true;
	struct smb_sidmap *m = sidmap(c);
	if (!m)
		return true;
	bool known = false;
	pthread_mutex_lock(&m->lock);
	struct ent *e = find(m, sid);
	if (e && e->state == ENT_DONE) {
		/* a stale answer stands until the next lookup replaces it */
		*id = group ? e->gid : e->uid;
		known = fresh(e, ev_now_ms());
	}
	pthread_mutex_unlock(&m->lock);
	return known;
}

/* ---- NSS ------------------------------------------------------------------------------ */

static uint32_t local_id(const char *domain, const char *name, bool group)
{
	char buf[16384], full[2 * LSARPC_NAME_BUF + 2];
	const char *tries[2] = {name, NULL};
	if (domain[0] && snprintf(full, sizeof(full), "%s\\%s", domain, name) < (int)sizeof(full))
		tries[1] = full;
	for (int i = 0; i < 2 && tries[i] && name[0]; i++) {
		if (group) {
			struct group g, *res = NULL;
			if (getgrnam_r(tries[i], &g, buf, sizeof(buf), &res) == 0 && res)
				return (uint32_t)res->gr_gid;
		} else {
			struct passwd p, *res = NULL;
			if (getpwnam_r(tries[i], &p, buf, sizeof(buf), &res) == 0 && res)
				return (uint32_t)res->pw_uid;
		}
	}
	return SMB2_POSIX_ID_NONE;
}

/* ---- one lookup ---------------------------------------------------------------------- */

static void batch_start(struct smb_client *c, struct smb_sidmap *m);

/* Settle the batch's SIDs (names[i] NULL: not mapped), start the next
 * batch if SIDs wait, and call the waiters whose SIDs are all settled. */
static void batch_end(struct batch *b, const struct lsarpc_name *names, const char *why)
{
	struct smb_client *c = b->c;
	struct smb_sidmap *m = c->sidmap;
	uint64_t now = ev_now_ms();
	uint32_t ids[LSARPC_MAX_SIDS][2];
	for (uint32_t i = 0; i < b->n; i++) {
		ids[i][0] = ids[i][1] = SMB2_POSIX_ID_NONE;
		if (!names)
			continue;
		uint16_t t = names[i].type;
		if (t == LSA_SID_TYPE_USER)
			ids[i][0] = local_id(names[i].domain, names[i].name, false);
		else if (t == LSA_SID_TYPE_GROUP || t == LSA_SID_TYPE_ALIAS ||
		         t == LSA_SID_TYPE_WELL_KNOWN)
			ids[i][1] = local_id(names[i].domain, names[i].name, true);
		smb_debug("%s: SID of %s%s%s (type %u): uid %d gid %d", c->host, names[i].domain,
		          names[i].domain[0] ? "\\" : "", names[i].name, (unsigned)t,
		          (int)ids[i][0], (int)ids[i][1]);
	}
	struct waiter *ready = NULL;
	bool log_fail = false;
	unsigned lookups, failures;
	pthread_mutex_lock(&m->lock);
	lookups = ++m->lookups;
	failures = m->failures + (why != NULL);
	if (why) {
		m->failures++;
		if (!m->fail_logged_ms || now - m->fail_logged_ms >= FAIL_LOG_MS) {
			m->fail_logged_ms = now ? now : 1;
			log_fail = true;
		}
	}
	for (uint32_t i = 0; i < b->n; i++) {
		struct ent *e = find(m, &b->sids[i]);
		if (!e)
			continue;
		e->state = ENT_DONE;
		e->uid = ids[i][0];
		e->gid = ids[i][1];
		bool mapped = e->uid != SMB2_POSIX_ID_NONE || e->gid != SMB2_POSIX_ID_NONE;
		e->expires_ms = now + (mapped ? MAPPED_TTL_MS : NONE_TTL_MS);
	}
	for (struct waiter **pw = &m->waiters; *pw;) {
		struct waiter *w = *pw;
		bool settled = true;
		for (int i = 0; i < w->n && settled; i++) {
			struct ent *e = find(m, &w->sids[i]);
			settled = !e || e->state == ENT_DONE;
		}
		if (settled) {
			*pw = w->next;
			w->next = ready;
			ready = w;
		} else {
			pw = &w->next;
		}
	}
	m->busy = false;
	batch_start(c, m);
	pthread_mutex_unlock(&m->lock);
	if (log_fail)
		smb_warn("%s: cannot look up the names of owners and groups on the server (%s; "
		         "%u of %u lookups failed); those show as uid=/gid= for a while",
		         c->host, why, failures, lookups);
	while (ready) {
		struct waiter *w = ready;
		ready = w->next;
		w->done(w->arg);
		talloc_free(w);
	}
	talloc_free(b);
}

static void pipe_closed(struct smb_req *req)
{
	smb_req_put(req);
}

/* The batch is over: close the pipe (no waiting for it) and settle. */
static void batch_finish(struct batch *b, const struct lsarpc_name *names, const char *why)
{
	if (b->pipe_open && !closing(b->c)) {
		struct smb_req *req = smb_client_req(b->c, NULL);
		struct smb2_close_req cl = {.fileid = b->pipe};
		uint8_t *body = req ? smb_req_begin_pdu(req, SMB2_CLOSE, 24) : NULL;
		if (req) {
			req->tree_id = b->c->sidmap->ipc_tree;
			req->no_replay = true;
			req->done = pipe_closed;
		}
		if (!body || smb_req_end_pdu(req, smb2_close_req_encode(body, 24, &cl)) < 0 ||
		    smb_conn_submit(req->conn, req) < 0) {
			if (req)
				smb_req_put(req);
		}
	}
	batch_end(b, names, why);
}

/* A request of the batch on the IPC$ tree (tree 0 for its TREE_CONNECT). */
static struct smb_req *batch_req(struct batch *b, uint32_t tree)
{
	struct smb_req *req = smb_client_req(b->c, NULL);
	if (req) {
		req->tree_id = tree;
		req->no_replay = true;
		req->arg = b;
	}
	return req;
}

static void batch_submit(struct batch *b, struct smb_req *req, int err,
                         void (*done)(struct smb_req *))
{
	if (!err) {
		req->done = done;
		err = smb_conn_submit(req->conn, req);
	}
	if (err) {
		smb_req_put(req);
		batch_finish(b, NULL, b->step);
	}
}

/* Did the step fail (no answer, or not STATUS_SUCCESS)?  Said at debug
 * level; the batch's one warning names the step (b->step). */
static bool batch_failed(struct batch *b, struct smb_req *req)
{
	if (req->err) {
		smb_debug("%s: SID lookup: %s: %s", b->c->host, b->step, strerror(-req->err));
		return true;
	}
	uint32_t st = req->pdu[0].rsp_hdr.status;
	if (st != STATUS_SUCCESS) {
		smb_debug("%s: SID lookup: %s: %s", b->c->host, b->step, smb2_status_str(st));
		return true;
	}
	return false;
}

static void send_transceive(struct batch *b, const uint8_t *in, ssize_t len,
                            void (*done)(struct smb_req *));

static void lookup_done(struct smb_req *req)
{
	struct batch *b = req->arg;
	struct smb2_ioctl_rsp r;
	uint32_t status = 0;
	struct lsarpc_name *names = NULL;
	const char *why = b->step;
	if (!batch_failed(b, req) &&
	    smb2_ioctl_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &r) == 0) {
		names = talloc_array(b, struct lsarpc_name, b->n);
		int rc = names ? lsarpc_lookup_sids_decode(r.output, r.output_len, b->call_id,
		                                           names, b->n, &status)
		               : -ENOMEM;
		/* SOME_NOT_MAPPED and NONE_MAPPED still answer for each SID
		 * (type Unknown for those it has no name of) */
		if (rc == 0 &&
		    (status == STATUS_SUCCESS || status == 0x00000107u || status == 0xC0000073u))
			why = NULL;
		else
			smb_debug("%s: SID lookup: %s: %d, status 0x%08x", b->c->host, b->step, rc,
			          status);
	}
	smb_req_put(req);
	batch_finish(b, why ? NULL : names, why);
}

static void open_policy_done(struct smb_req *req)
{
	struct batch *b = req->arg;
	struct smb2_ioctl_rsp r;
	uint32_t status = 0;
	bool ok = !batch_failed(b, req) &&
	          smb2_ioctl_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &r) == 0 &&
	          lsarpc_open_policy2_decode(r.output, r.output_len, b->call_id, b->handle,
	                                     &status) == 0 &&
	          status == STATUS_SUCCESS;
	smb_req_put(req);
	if (!ok) {
		batch_finish(b, NULL, b->step);
		return;
	}
	uint8_t pdu[LSARPC_MAX_FRAG];
	b->step = "LsarLookupSids";
	b->call_id++;
	send_transceive(
	    b, pdu,
	    lsarpc_lookup_sids_encode(pdu, sizeof(pdu), b->call_id, b->handle, b->sids, b->n),
	    lookup_done);
}

static void bind_done(struct smb_req *req)
{
	struct batch *b = req->arg;
	struct smb2_ioctl_rsp r;
	bool ok = !batch_failed(b, req) &&
	          smb2_ioctl_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &r) == 0 &&
	          lsarpc_bind_ack_decode(r.output, r.output_len, b->call_id) == 0;
	smb_req_put(req);
	if (!ok) {
		batch_finish(b, NULL, b->step);
		return;
	}
	uint8_t pdu[128];
	b->step = "LsarOpenPolicy2";
	b->call_id++;
	send_transceive(b, pdu, lsarpc_open_policy2_encode(pdu, sizeof(pdu), b->call_id),
	                open_policy_done);
}

static void send_transceive(struct batch *b, const uint8_t *in, ssize_t len,
                            void (*done)(struct smb_req *))
{
	struct smb_req *req = batch_req(b, b->c->sidmap->ipc_tree);
	if (!req || len < 0) {
		if (req)
			smb_req_put(req);
		batch_finish(b, NULL, b->step);
		return;
	}
	struct smb2_ioctl_req io = {
	    .ctl_code = FSCTL_PIPE_TRANSCEIVE_,
	    .fileid = b->pipe,
	    .input = in,
	    .input_len = (uint32_t)len,
	    .max_output_response = LSARPC_MAX_FRAG,
	    .flags = SMB2_0_IOCTL_IS_FSCTL,
	};
	size_t cap = 56 + (size_t)len + 8;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_IOCTL, cap);
	int err = body ? smb_req_end_pdu(req, smb2_ioctl_req_encode(body, cap, &io)) : -ENOMEM;
	batch_submit(b, req, err, done);
}

static void create_done(struct smb_req *req)
{
	struct batch *b = req->arg;
	struct smb2_create_rsp cr;
	bool ok = !batch_failed(b, req) &&
	          smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &cr) == 0;
	smb_req_put(req);
	if (!ok) {
		batch_finish(b, NULL, b->step);
		return;
	}
	b->pipe = cr.fileid;
	b->pipe_open = true;
	uint8_t pdu[128];
	b->step = "the bind to lsarpc";
	send_transceive(b, pdu, lsarpc_bind_encode(pdu, sizeof(pdu), b->call_id), bind_done);
}

static void send_create(struct batch *b)
{
	struct smb_req *req = batch_req(b, b->c->sidmap->ipc_tree);
	if (!req) {
		batch_finish(b, NULL, b->step);
		return;
	}
	b->step = "opening the pipe lsarpc";
	struct smb2_create_req cr = {
	    .requested_oplock_level = SMB2_OPLOCK_LEVEL_NONE,
	    .impersonation_level = SMB2_IMPERSONATION_IMPERSONATION,
	    .desired_access = PIPE_ACCESS,
	    .share_access = FILE_SHARE_READ | FILE_SHARE_WRITE,
	    .create_disposition = FILE_OPEN,
	    .name = "lsarpc",
	};
	size_t cap = 64 + 2 * 6 + 16;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_CREATE, cap);
	int err = body ? smb_req_end_pdu(req, smb2_create_req_encode(body, cap, &cr)) : -ENOMEM;
	batch_submit(b, req, err, create_done);
}

static void tcon_done(struct smb_req *req)
{
	struct batch *b = req->arg;
	struct smb2_tree_connect_rsp tr;
	bool ok = !batch_failed(b, req) &&
	          smb2_tree_connect_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &tr) == 0 &&
	          tr.share_type == SMB2_SHARE_TYPE_PIPE;
	if (ok) {
		struct smb_sidmap *m = b->c->sidmap;
		pthread_mutex_lock(&m->lock);
		m->ipc_tree = req->pdu[0].rsp_hdr.tree_id;
		m->ipc_session = req->session_id;
		pthread_mutex_unlock(&m->lock);
	}
	smb_req_put(req);
	if (ok)
		send_create(b);
	else
		batch_finish(b, NULL, b->step);
}

static void send_tcon(struct batch *b)
{
	struct smb_client *c = b->c;
	struct smb_req *req = batch_req(b, 0);
	if (!req) {
		batch_finish(b, NULL, b->step);
		return;
	}
	b->step = "TREE_CONNECT to IPC$";
	/* [MS-SMB2] 3.2.4.1.1: with 3.1.1, TREE_CONNECT is always signed. */
	req->force_sign = c->sess.dialect == SMB2_DIALECT_0311;
	char path[300];
	snprintf(path, sizeof(path), "\\\\%s\\IPC$", c->host);
	struct smb2_tree_connect_req tr = {.path = path};
	size_t cap = 16 + 4 * strlen(path) + 8;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_TREE_CONNECT, cap);
	int err =
	    body ? smb_req_end_pdu(req, smb2_tree_connect_req_encode(body, cap, &tr)) : -ENOMEM;
	batch_submit(b, req, err, tcon_done);
}

static void send_tcon_call(void *arg)
{
	send_tcon(arg);
}

static void send_create_call(void *arg)
{
	send_create(arg);
}

/* Under the lock, on the loop thread: send the SIDs that wait, if none are
 * out.  (It goes on after the lock is let go: the requests' answers come on
 * this thread, later.) */
static void send_tcon_call(void *arg);
static void send_create_call(void *arg);

static void batch_start(struct smb_client *c, struct smb_sidmap *m)
{
	if (m->busy || closing(c))
		return;
	struct batch *b = talloc_zero(NULL, struct batch);
	if (!b)
		return;
	b->c = c;
	b->call_id = 1;
	for (size_t i = 0; i < m->n && b->n < LSARPC_MAX_SIDS; i++) {
		if (m->ents[i].state != ENT_QUEUED)
			continue;
		m->ents[i].state = ENT_PENDING;
		b->sids[b->n++] = m->ents[i].sid;
	}
	if (!b->n) {
		talloc_free(b);
		return;
	}
	bool tcon = !m->ipc_tree || m->ipc_session != c->sess.session_id;
	/* the requests go out from the loop, not under our lock */
	if (ev_call(c->loop, tcon ? send_tcon_call : send_create_call, b) < 0) {
		for (uint32_t i = 0; i < b->n; i++)
			find(m, &b->sids[i])->state = ENT_QUEUED;
		talloc_free(b);
		return;
	}
	m->busy = true;
}

int smb_sidmap_lookup(struct smb_client *c, const struct smb2_sid *sids, int n,
                      void (*done)(void *arg), void *arg)
{
	struct smb_sidmap *m = sidmap(c);
	if (!m || n <= 0)
		return 0;
	uint64_t now = ev_now_ms();
	int k = 0, wait = 0;
	pthread_mutex_lock(&m->lock);
	struct waiter *w =
	    talloc_size(m, sizeof(struct waiter) + (size_t)n * sizeof(struct smb2_sid));
	if (!w) {
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	if (m->n + (size_t)n > MAX_ENTRIES) {
		/* forget the settled answers */
		size_t j = 0;
		for (size_t i = 0; i < m->n; i++)
			if (m->ents[i].state != ENT_DONE)
				m->ents[j++] = m->ents[i];
		m->n = j;
	}
	for (int i = 0; i < n; i++) {
		if (!lookable(&sids[i]))
			continue;
		struct ent *e = find(m, &sids[i]);
		if (e && fresh(e, now))
			continue;
		if (!e) {
			if (m->n == m->cap) {
				size_t cap = m->cap ? 2 * m->cap : 16;
				struct ent *ne = talloc_realloc(m, m->ents, struct ent, cap);
				if (!ne)
					continue;
				m->ents = ne;
				m->cap = cap;
			}
			e = &m->ents[m->n++];
			*e = (struct ent){
			    .sid = sids[i], .uid = SMB2_POSIX_ID_NONE, .gid = SMB2_POSIX_ID_NONE};
			e->state = ENT_QUEUED;
		} else if (e->state == ENT_DONE) {
			e->state = ENT_QUEUED; /* stale: ask again */
		}
		w->sids[k++] = sids[i];
		wait++;
	}
	if (wait) {
		batch_start(c, m);
		if (!m->busy) {
			/* no lookup could start (out of memory, the client
			 * closing): these SIDs have no id this time */
			for (int i = 0; i < k; i++) {
				struct ent *e = find(m, &w->sids[i]);
				if (e && e->state == ENT_QUEUED) {
					e->state = ENT_DONE;
					e->expires_ms = now;
				}
			}
			wait = 0;
		}
	}
	if (wait) {
		w->n = k;
		w->done = done;
		w->arg = arg;
		w->next = m->waiters;
		m->waiters = w;
	} else {
		talloc_free(w);
	}
	pthread_mutex_unlock(&m->lock);
	return wait ? 1 : 0;
}
