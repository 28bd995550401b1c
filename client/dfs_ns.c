/* client/dfs_ns.c — a DFS namespace under one mount: referrals, the links'
 * clients, and the calls routed to them.  The contract is client/dfs_ns.h.
 */
#include "client/dfs_ns.h"

#include "client/chanmgr.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/proto/dfs.h"
#include "client/proto/smb2.h"
#include "client/session.h"
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <talloc.h>
#include <time.h>

/* Links a namespace follows at most, and targets kept per link. */
#define DFS_MAX_LINKS   64
#define DFS_MAX_TARGETS 8
/* Times one call may be sent again after a referral (a link below a
 * link of another namespace needs two). */
#define DFS_MAX_RESOLVES 4
/* The answer to a referral request, at most. */
#define DFS_REFERRAL_MAX 65536u
/* resolve(): the server says no link covers the path (not an errno). */
#define DFS_NO_LINK 1
/* A link's file ids are XORed with its number times this (odd) constant. */
#define DFS_FILE_ID_MIX 0x9e3779b97f4a7c15ull

struct dfs_target {
	char *server, *share, *path; /* path inside the share: "" or "a/b" */
};

/* A link: the paths below prefix go to client, connected to
 * targets[cur].  Made by the worker, freed by smb_dfs_destroy(). */
struct dfs_link {
	struct smb_dfs *ns;
	int num; /* 1.. (0 is the root) */
	char *prefix;
	size_t prefix_len;
	struct dfs_target targets[DFS_MAX_TARGETS];
	int ntargets, cur;
	uint32_t ttl;
	uint64_t expires_ms;
	bool refreshing;       /* its referral is being asked again (refresh()) */
	bool said_not_covered; /* logged a PATH_NOT_COVERED from its target */
	struct smb_client *client;
};

/* A virtual FileId's record (dfs_ns.h). */
struct dfs_vfid {
	uint64_t serial;
	struct smb_client *client;
	struct dfs_link *link; /* NULL: the root */
	struct smb2_fileid real;
	struct dfs_vfid *next;
};
#define DFS_VFID_BUCKETS 1024

struct dfs_call;

struct smb_dfs {
	struct smb_client *root;
	struct dfs_link root_link; /* num 0: what the trampolines of the root use */
	pthread_mutex_t lock;      /* links, nlinks, vfids, queue, worker state */
	struct dfs_link *links[DFS_MAX_LINKS];
	int nlinks;
	uint64_t generation; /* bumped when a link is added */
	struct dfs_vfid *vfids[DFS_VFID_BUCKETS];
	uint64_t next_serial;
	/* the worker: referrals and link set-up */
	pthread_t worker;
	bool worker_started, stopping;
	pthread_cond_t cond;
	struct dfs_call *queue, **queue_tail;
	/* the caller's callbacks (set before the first open) */
	smb_break_cb break_cb;
	void *break_arg;
	smb_lock_lost_cb lock_lost_cb;
	void *lock_lost_arg;
	smb_lease_break_cb lease_cb;
	void *lease_arg;
	enum smb_meta_split meta_split;
	bool meta_split_set;
	uint64_t referrals, referral_failures;
};

/* Set while the namespace runs a call on its root (dfs_ns.h, Hooks). */
static _Thread_local int dfs_on_root;

bool smb_dfs_routes(const struct smb_client *c)
{
	return c->dfs && !dfs_on_root;
}

bool smb_dfs_tree_is_dfs(const struct smb_client *c)
{
	return (c->tree.share_flags & (SMB2_SHAREFLAG_DFS | SMB2_SHAREFLAG_DFS_ROOT)) ||
	       (c->tree.share_caps & SMB2_SHARE_CAP_DFS);
}

/* ---- paths ------------------------------------------------------------------ */

/* Is prefix (len n) the whole of path or a run of its leading components?
 * SMB names compare without regard to case (ASCII here; the server
 * decides the rest and answers PATH_NOT_COVERED again if we missed). */
static bool under(const char *path, const char *prefix, size_t n)
{
	return strncasecmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The longest link whose prefix path is under; NULL: the root.  *rest is
 * what follows the prefix (no leading '/'). */
static struct dfs_link *route_locked(struct smb_dfs *ns, const char *path, const char **rest)
{
	struct dfs_link *best = NULL;
	for (int i = 0; i < ns->nlinks; i++) {
		struct dfs_link *l = ns->links[i];
		if (l->client && under(path, l->prefix, l->prefix_len) &&
		    (!best || l->prefix_len > best->prefix_len))
			best = l;
	}
	*rest = path;
	if (best) {
		*rest = path + best->prefix_len;
		if (**rest == '/')
			(*rest)++;
	}
	return best;
}

/* The path to send to link l's client for rest: its target's path, then
 * rest.  A talloc child of ctx. */
static char *link_path(void *ctx, const struct dfs_link *l, const char *rest)
{
	const char *tp = l->targets[l->cur].path;
	if (!*tp)
		return talloc_strdup(ctx, rest);
	if (!*rest)
		return talloc_strdup(ctx, tp);
	return talloc_asprintf(ctx, "%s/%s", tp, rest);
}

/* ---- virtual FileIds --------------------------------------------------------- */

static bool is_vfid(struct smb2_fileid f)
{
	return f.volatile_ == DFS_VFID_TAG;
}

static struct smb2_fileid vfid_add(struct smb_dfs *ns, struct smb_client *cl, struct dfs_link *l,
                                   struct smb2_fileid real)
{
	struct dfs_vfid *v = talloc_zero(ns, struct dfs_vfid);
	if (!v)
		return (struct smb2_fileid){0, 0};
	pthread_mutex_lock(&ns->lock);
	v->serial = ++ns->next_serial;
	v->client = cl;
	v->link = l;
	v->real = real;
	struct dfs_vfid **b = &ns->vfids[v->serial % DFS_VFID_BUCKETS];
	v->next = *b;
	*b = v;
	pthread_mutex_unlock(&ns->lock);
	return (struct smb2_fileid){v->serial, DFS_VFID_TAG};
}

/* The client and real FileId behind f.  A FileId that is no virtual one is
 * the root's own (dfs_ns.h).  false: a virtual one we do not know. */
static bool vfid_find(struct smb_dfs *ns, struct smb2_fileid f, struct smb_client **cl,
                      struct dfs_link **l, struct smb2_fileid *real)
{
	if (!is_vfid(f)) {
		*cl = ns->root;
		*l = NULL;
		*real = f;
		return true;
	}
	bool found = false;
	pthread_mutex_lock(&ns->lock);
	for (struct dfs_vfid *v = ns->vfids[f.persistent % DFS_VFID_BUCKETS]; v; v = v->next) {
		if (v->serial == f.persistent) {
			*cl = v->client;
			*l = v->link;
			*real = v->real;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ns->lock);
	return found;
}

static void vfid_remove(struct smb_dfs *ns, struct smb2_fileid f)
{
	if (!is_vfid(f))
		return;
	struct dfs_vfid *gone = NULL;
	pthread_mutex_lock(&ns->lock);
	for (struct dfs_vfid **pp = &ns->vfids[f.persistent % DFS_VFID_BUCKETS]; *pp;
	     pp = &(*pp)->next) {
		if ((*pp)->serial == f.persistent) {
			gone = *pp;
			*pp = gone->next;
			break;
		}
	}
	pthread_mutex_unlock(&ns->lock);
	talloc_free(gone);
}

/* The virtual FileId of (cl, real); real itself when none is recorded. */
static struct smb2_fileid vfid_of(struct smb_dfs *ns, struct smb_client *cl,
                                  struct smb2_fileid real)
{
	struct smb2_fileid out = real;
	pthread_mutex_lock(&ns->lock);
	for (int b = 0; b < DFS_VFID_BUCKETS; b++)
		for (struct dfs_vfid *v = ns->vfids[b]; v; v = v->next)
			if (v->client == cl && v->real.persistent == real.persistent &&
			    v->real.volatile_ == real.volatile_) {
				out = (struct smb2_fileid){v->serial, DFS_VFID_TAG};
				goto done;
			}
done:
	pthread_mutex_unlock(&ns->lock);
	return out;
}

static void mix_attr(const struct dfs_link *l, struct smb_attr *a)
{
	if (l && l->num && a->file_id)
		a->file_id ^= (uint64_t)l->num * DFS_FILE_ID_MIX;
}

/* attr as the caller sees it: a copy in *out, its file id mixed for link
 * l (mix_attr); NULL stays NULL. */
static const struct smb_attr *mixed(const struct dfs_link *l, const struct smb_attr *attr,
                                    struct smb_attr *out)
{
	if (!attr)
		return NULL;
	*out = *attr;
	mix_attr(l, out);
	return out;
}

/* ---- the calls --------------------------------------------------------------- */

enum dfs_op {
	OP_STAT,
	OP_OPEN,
	OP_CREATE_FILE,
	OP_MKDIR,
	OP_CREATE_IN,
	OP_UNLINK_IN,
	OP_RENAME,
	OP_SETATTR,
	OP_QUERY_EAS,
	OP_SET_EA,
	OP_LINK,
	OP_PUT_SMALL,
	OP_GET_SMALL,
	OP_GET_REPARSE,
	OP_REFRESH, /* the worker asks link's referral again (no caller) */
};

/* One path call, kept until its callback ran: it may go out again after a
 * referral.  A talloc child of the namespace. */
struct dfs_call {
	struct smb_dfs *ns;
	enum dfs_op op;
	char *path, *path2, *name;
	void *data;
	size_t len;
	bool flag, set_mode;
	uint32_t mode;
	uint64_t lease_id, parent_lease_id;
	struct smb_open_args oargs;
	struct smb_setattr_args sargs;
	void (*cb)(void);
	void *arg;
	int resolves;
	int fail_err;          /* the worker could not follow the link: this */
	uint64_t generation;   /* ns->generation when it went out */
	struct dfs_link *link; /* where it went (NULL: the root) */
	struct dfs_call *next; /* on the worker's queue */
};

static void call_requeue(struct dfs_call *k);

/* Did the root say the path crosses a link we have not followed yet? */
static bool not_covered(struct dfs_call *k, int err, uint32_t status)
{
	/* A link's own client follows its own namespace, if any (dfs_ns.h);
	 * when it does not (nodfs below, or too deep) the status stands. */
	if (k->link && !err && status == STATUS_PATH_NOT_COVERED && !k->link->said_not_covered) {
		k->link->said_not_covered = true;
		smb_warn("%s: DFS link %s: its target answers STATUS_PATH_NOT_COVERED for %s (a "
		         "further link not followed): EREMOTE",
		         k->ns->root->tree.unc, k->link->prefix, k->path);
	}
	if (k->link || err || status != STATUS_PATH_NOT_COVERED || k->resolves >= DFS_MAX_RESOLVES)
		return false;
	call_requeue(k);
	return true;
}

static void attr_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct dfs_call *k = arg;
	if (not_covered(k, err, status))
		return;
	struct smb_attr a;
	((smb_attr_cb)k->cb)(k->arg, err, status, mixed(k->link, attr, &a));
	talloc_free(k);
}

static void closed_anyway(void *arg, int err, uint32_t status)
{
	(void)arg, (void)err, (void)status;
}

static void open_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                      const struct smb_attr *attr)
{
	struct dfs_call *k = arg;
	if (not_covered(k, err, status))
		return;
	struct smb_attr a;
	const struct smb_attr *ma = mixed(k->link, attr, &a);
	struct smb2_fileid vf = fid;
	if (!err && status == STATUS_SUCCESS) {
		struct smb_client *cl = k->link ? k->link->client : k->ns->root;
		vf = vfid_add(k->ns, cl, k->link, fid);
		if (!vf.volatile_) {
			/* no memory for the record: give the handle back */
			smb_close(cl, fid, closed_anyway, NULL);
			err = -ENOMEM;
		}
	}
	((smb_open_cb)k->cb)(k->arg, err, status, vf, ma);
	talloc_free(k);
}

static void status_done(void *arg, int err, uint32_t status)
{
	struct dfs_call *k = arg;
	if (not_covered(k, err, status))
		return;
	if (k->cb)
		((smb_status_cb)k->cb)(k->arg, err, status);
	talloc_free(k);
}

static void buf_done(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct dfs_call *k = arg;
	if (not_covered(k, err, status))
		return;
	((smb_buf_cb)k->cb)(k->arg, err, status, buf, len);
	talloc_free(k);
}

/* Send k where its path leads now.  -errno: it went nowhere (its callback
 * will not run for this try). */
static int call_send(struct dfs_call *k)
{
	struct smb_dfs *ns = k->ns;
	const char *rest, *rest2 = NULL;
	void *tmp = talloc_new(k);
	if (!tmp)
		return -ENOMEM;
	pthread_mutex_lock(&ns->lock);
	struct dfs_link *l = route_locked(ns, k->path, &rest);
	struct dfs_link *l2 = k->path2 ? route_locked(ns, k->path2, &rest2) : l;
	k->generation = ns->generation;
	/* the paths on the link's share (its targets may be refreshed) */
	const char *p = l ? link_path(tmp, l, rest) : k->path;
	const char *p2 = k->path2 ? (l ? link_path(tmp, l, rest2) : k->path2) : NULL;
	if (l && l == l2 && !l->refreshing && ev_now_ms() >= l->expires_ms) {
		struct dfs_call *r = talloc_zero(ns, struct dfs_call);
		if (r) {
			r->ns = ns;
			r->op = OP_REFRESH;
			r->link = l;
			r->path = l->prefix;
			l->refreshing = true;
			*ns->queue_tail = r;
			ns->queue_tail = &r->next;
			pthread_cond_signal(&ns->cond);
		}
	}
	pthread_mutex_unlock(&ns->lock);
	if (l != l2) {
		talloc_free(tmp);
		return -EXDEV; /* two servers: the caller copies */
	}
	k->link = l;
	struct smb_client *cl = l ? l->client : ns->root;
	if (!p || (k->path2 && !p2)) {
		talloc_free(tmp);
		return -ENOMEM;
	}
	if (!l)
		dfs_on_root++;
	int err;
	switch (k->op) {
	case OP_STAT:
		err = smb_stat(cl, p, attr_done, k);
		break;
	case OP_OPEN:
		err = smb_open(cl, p, &k->oargs, open_done, k);
		break;
	case OP_CREATE_FILE:
		err = smb_create_file(cl, p, attr_done, k);
		break;
	case OP_MKDIR:
		err = smb_mkdir(cl, p, attr_done, k);
		break;
	case OP_CREATE_IN:
		err = smb_create_in(cl, p, k->flag, k->set_mode, k->mode, k->lease_id,
		                    k->parent_lease_id, attr_done, k);
		break;
	case OP_UNLINK_IN:
		err =
		    smb_unlink_in(cl, p, k->flag, k->lease_id, k->parent_lease_id, status_done, k);
		break;
	case OP_RENAME:
		err = smb_rename(cl, p, p2, k->flag, status_done, k);
		break;
	case OP_SETATTR:
		err = smb_setattr(cl, p, NULL, &k->sargs, attr_done, k);
		break;
	case OP_QUERY_EAS:
		err = smb_query_eas(cl, p, k->name, buf_done, k);
		break;
	case OP_SET_EA:
		err = smb_set_ea(cl, p, k->name, k->data, k->len, status_done, k);
		break;
	case OP_LINK:
		err = smb_link(cl, p, p2, status_done, k);
		break;
	case OP_PUT_SMALL:
		err = smb_put_small(cl, p, k->data, k->len, status_done, k);
		break;
	case OP_GET_SMALL:
		err = smb_get_small(cl, p, k->len, buf_done, k);
		break;
	case OP_GET_REPARSE:
		err = smb_get_reparse(cl, p, buf_done, k);
		break;
	default:
		err = -EINVAL;
	}
	if (!l)
		dfs_on_root--;
	talloc_free(tmp);
	return err;
}

static struct dfs_call *call_new(struct smb_client *c, enum dfs_op op, const char *path,
                                 void (*cb)(void), void *arg)
{
	struct dfs_call *k = talloc_zero(c->dfs, struct dfs_call);
	if (!k)
		return NULL;
	k->ns = c->dfs;
	k->op = op;
	k->cb = cb;
	k->arg = arg;
	k->path = talloc_strdup(k, path ? path : "");
	if (!k->path) {
		talloc_free(k);
		return NULL;
	}
	return k;
}

/* The first send: a synchronous failure is the caller's (k freed). */
static int call_start(struct dfs_call *k)
{
	if (!k)
		return -ENOMEM;
	int err = call_send(k);
	if (err)
		talloc_free(k);
	return err;
}

/* A failure after the first send goes to the callback, on the loop. */
static void call_fail(struct dfs_call *k, int err)
{
	switch (k->op) {
	case OP_OPEN:
		((smb_open_cb)k->cb)(k->arg, err, 0, (struct smb2_fileid){0, 0}, NULL);
		break;
	case OP_STAT:
	case OP_CREATE_FILE:
	case OP_MKDIR:
	case OP_CREATE_IN:
	case OP_SETATTR:
		((smb_attr_cb)k->cb)(k->arg, err, 0, NULL);
		break;
	case OP_QUERY_EAS:
	case OP_GET_SMALL:
	case OP_GET_REPARSE:
		((smb_buf_cb)k->cb)(k->arg, err, 0, NULL, 0);
		break;
	default:
		if (k->cb)
			((smb_status_cb)k->cb)(k->arg, err, 0);
	}
	talloc_free(k);
}

/* On the loop: send k again (after the worker resolved its path). */
static void call_resend(void *arg)
{
	struct dfs_call *k = arg;
	if (k->fail_err) {
		call_fail(k, k->fail_err);
		return;
	}
	int err = call_send(k);
	if (err)
		call_fail(k, err);
}

/* ---- the worker: referrals and link clients --------------------------------- */

struct fsctl_wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int err;
	uint32_t status;
	uint8_t *out;
	size_t len;
};

static void fsctl_waited(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len)
{
	struct fsctl_wait *w = arg;
	pthread_mutex_lock(&w->m);
	w->err = err;
	w->status = status;
	if (!err && buf && len) {
		w->out = malloc(len);
		if (w->out) {
			memcpy(w->out, buf, len);
			w->len = len;
		} else {
			w->err = -ENOMEM;
		}
	}
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

/* Ask the root's server for the referral of reqpath ("\host\share\a\b"),
 * on its IPC$ (a session of its own, made for the question and left at
 * once).  0 with *out (malloc'd) and *len; -errno, with why in log. */
static int ask_referral(struct smb_dfs *ns, const char *reqpath, uint8_t **out, size_t *len)
{
	struct smb_client *root = ns->root;
	struct smb_client_opts o = *root->opts;
	o.share = "IPC$";
	o.multichannel = false;
	o.nodfs = true;
	char errbuf[256] = "";
	struct smb_client *ipc = NULL;
	int err = smb_client_open(&o, NULL, &ipc, errbuf, sizeof(errbuf));
	if (err) {
		smb_warn("%s: DFS referral for %s: cannot reach IPC$: %s", root->tree.unc, reqpath,
		         errbuf[0] ? errbuf : strerror(-err));
		return err;
	}
	uint8_t req[8192];
	ssize_t n = dfs_referral_req_encode(req, sizeof(req), reqpath);
	if (n < 0) {
		smb_client_destroy(ipc);
		return (int)n;
	}
	struct fsctl_wait w = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct smb2_fileid all = {~0ull, ~0ull};
	err = smb_fsctl(ipc, all, FSCTL_DFS_GET_REFERRALS, req, (size_t)n, DFS_REFERRAL_MAX,
	                fsctl_waited, &w);
	if (!err) {
		pthread_mutex_lock(&w.m);
		while (!w.done)
			pthread_cond_wait(&w.cv, &w.m);
		pthread_mutex_unlock(&w.m);
		err = w.err;
		if (!err && w.status != STATUS_SUCCESS) {
			/* Not below a link, or a link with no target to give (Samba:
			 * OBJECT_PATH_NOT_FOUND, also for a link to a missing share):
			 * the path's PATH_NOT_COVERED stands (EREMOTE). */
			smb_warn("%s: DFS referral for %s: %s: the path is not followed",
			         root->tree.unc, reqpath, smb2_status_str(w.status));
			err = DFS_NO_LINK;
		}
	}
	smb_client_destroy(ipc);
	if (err) {
		free(w.out);
		return err;
	}
	*out = w.out;
	*len = w.len;
	return 0;
}

/* A target's NetworkAddress into t (talloc children of ctx): see
 * dfs_target_split().  false if it is not in that form. */
static bool parse_target(void *ctx, const char *addr, struct dfs_target *t)
{
	size_t cap = strlen(addr) + 3;
	char *buf = talloc_size(ctx, cap);
	const char *server, *share, *path;
	if (!buf || dfs_target_split(addr, buf, cap, &server, &share, &path) < 0)
		return false;
	t->server = (char *)server;
	t->share = (char *)share;
	t->path = (char *)path;
	return true;
}

static void link_break_tramp(void *arg, struct smb2_fileid fid, uint8_t level);
static void link_lock_lost_tramp(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                                 uint64_t len, bool exclusive, uint32_t status);

/* The targets link l's client may move to when the one in use stops
 * answering: those with the path of the one in use inside their share
 * (the handles reopen by path there), in referral order from it. */
static void link_set_alternates(struct smb_dfs *ns, struct dfs_link *l)
{
	struct smb_client *cl = l->client;
	const char *hosts[DFS_MAX_TARGETS], *shares[DFS_MAX_TARGETS];
	int nalt = 0;
	pthread_mutex_lock(&ns->lock);
	const char *host = __atomic_load_n(&cl->host, __ATOMIC_ACQUIRE);
	const char *share = __atomic_load_n(&cl->tree.share, __ATOMIC_ACQUIRE);
	int t = 0;
	for (int j = 0; j < l->ntargets; j++)
		if (strcasecmp(l->targets[j].server, host) == 0 &&
		    strcasecmp(l->targets[j].share, share) == 0)
			t = j;
	l->cur = t;
	for (int j = 0; j < l->ntargets; j++) {
		int u = (t + j) % l->ntargets;
		if (strcmp(l->targets[u].path, l->targets[t].path) != 0)
			continue;
		hosts[nalt] = l->targets[u].server;
		shares[nalt++] = l->targets[u].share;
	}
	pthread_mutex_unlock(&ns->lock);
	if (nalt > 1 && smb_client_set_targets(cl, hosts, shares, nalt, 0) < 0)
		smb_warn("%s: DFS link %s: out of memory: no failover to other targets",
		         ns->root->tree.unc, l->prefix);
}

/* Open the client of link l to its targets in order, from l->cur on. */
static int link_connect(struct smb_dfs *ns, struct dfs_link *l)
{
	struct smb_client *root = ns->root;
	int err = -EHOSTUNREACH;
	for (int i = 0; i < l->ntargets; i++) {
		int t = (l->cur + i) % l->ntargets;
		struct smb_client_opts o = *root->opts;
		o.dfs_depth = root->opts->dfs_depth + 1; /* bounds a circle of referrals */
		o.host = l->targets[t].server;
		o.share = l->targets[t].share;
		/* ip= names the root's server only */
		if (strcasecmp(o.host, root->host) != 0)
			o.addr = NULL;
		char errbuf[256] = "";
		struct smb_client *cl = NULL;
		err = smb_client_open_on(&o, root->mgr, root->loop, &cl, errbuf, sizeof(errbuf));
		if (err) {
			smb_warn("%s: DFS link %s: target \\\\%s\\%s: %s", root->tree.unc,
			         l->prefix, o.host, o.share, errbuf[0] ? errbuf : strerror(-err));
			continue;
		}
		l->cur = t;
		l->client = cl;
		link_set_alternates(ns, l);
		smb_client_set_break_cb(cl, link_break_tramp, l);
		smb_client_set_lock_lost_cb(cl, link_lock_lost_tramp, l);
		if (ns->lease_cb)
			smb_client_set_lease_break_cb(cl, ns->lease_cb, ns->lease_arg);
		if (ns->meta_split_set)
			smb_client_set_meta_split(cl, ns->meta_split);
		int nr = __atomic_load_n(&root->nregions, __ATOMIC_ACQUIRE);
		for (int r = 0; r < nr; r++)
			(void)smb_client_region_add(cl, root->regions[r].addr,
			                            root->regions[r].len);
		smb_info("%s: DFS link %s -> \\\\%s\\%s%s%s (target %d of %d)", root->tree.unc,
		         l->prefix, o.host, o.share, l->targets[t].path[0] ? "\\" : "",
		         l->targets[t].path, t + 1, l->ntargets);
		return 0;
	}
	return err;
}

/* Ask the root's server which link covers path (mount-relative) and fill
 * l's prefix, targets (talloc children of l) and ttl.  0; DFS_NO_LINK
 * when the server says no link covers it; another -errno when the answer
 * cannot be used (logged). */
static int ask_link(struct smb_dfs *ns, const char *path, struct dfs_link *l)
{
	struct smb_client *root = ns->root;
	void *tmp = talloc_new(ns);
	char *reqpath = talloc_asprintf(tmp, "\\%s\\%s%s%s", root->host, root->tree.share,
	                                *path ? "\\" : "", path);
	if (!reqpath) {
		talloc_free(tmp);
		return -ENOMEM;
	}
	for (char *p = reqpath; *p; p++)
		if (*p == '/')
			*p = '\\';
	size_t base = strlen(reqpath) - strlen(path); /* where the path starts */
	uint8_t *ans = NULL;
	size_t anslen = 0;
	__atomic_add_fetch(&ns->referrals, 1, __ATOMIC_RELAXED);
	int err = ask_referral(ns, reqpath, &ans, &anslen);
	if (err) {
		talloc_free(tmp);
		return err;
	}
	struct dfs_referral ents[DFS_MAX_TARGETS];
	struct dfs_referral_rsp rsp;
	char *strbuf = talloc_size(tmp, 16384);
	err = strbuf ? dfs_referral_rsp_decode(ans, anslen, reqpath, &rsp, ents, DFS_MAX_TARGETS,
	                                       strbuf, 16384)
	             : -ENOMEM;
	if (err == -E2BIG && rsp.count > DFS_MAX_TARGETS && rsp.str_len <= 16384) {
		/* more targets than we keep: take the first ones */
		struct dfs_referral *all = talloc_array(tmp, struct dfs_referral, rsp.count);
		char *sb = talloc_size(tmp, rsp.str_len ? rsp.str_len : 1);
		err = all && sb ? dfs_referral_rsp_decode(ans, anslen, reqpath, &rsp, all,
		                                          rsp.count, sb, rsp.str_len)
		                : -ENOMEM;
		if (!err) {
			memcpy(ents, all, sizeof(ents));
			rsp.count = DFS_MAX_TARGETS;
		}
	}
	free(ans);
	if (err) {
		smb_warn("%s: DFS referral for %s: %s", root->tree.unc, reqpath,
		         err == -EBADMSG ? "malformed answer" : strerror(-err));
		talloc_free(tmp);
		return err == -ENOENT ? DFS_NO_LINK : -EBADMSG;
	}
	/* What the link covers: whole components of the path, not the root. */
	size_t used = rsp.path_consumed;
	if (used <= base) {
		smb_warn("%s: DFS referral for %s covers only the share (%zu bytes): no link below "
		         "the root",
		         root->tree.unc, reqpath, used);
		talloc_free(tmp);
		return DFS_NO_LINK;
	}
	if (reqpath[used] != '\0' && reqpath[used] != '\\') {
		smb_warn(
		    "%s: DFS referral for %s covers %zu bytes, ending inside a name: malformed",
		    root->tree.unc, reqpath, used);
		talloc_free(tmp);
		return -EBADMSG;
	}
	l->prefix = talloc_strndup(l, path, used - base);
	l->prefix_len = used - base;
	l->ntargets = 0;
	l->ttl = 0;
	for (int i = 0; l->prefix && i < rsp.count && l->ntargets < DFS_MAX_TARGETS; i++) {
		const struct dfs_referral *r = &ents[i];
		struct dfs_target t;
		if (r->name_list || !r->network_address ||
		    !parse_target(l, r->network_address, &t)) {
			smb_warn("%s: DFS link %s: ignoring target %s", root->tree.unc, l->prefix,
			         r->network_address ? r->network_address : "(a name list)");
			continue;
		}
		/* A target back into this namespace at or above the link would
		 * send us around in a circle. */
		if (strcasecmp(t.server, root->host) == 0 &&
		    strcasecmp(t.share, root->tree.share) == 0 &&
		    (!*t.path || under(l->prefix, t.path, strlen(t.path)))) {
			smb_warn(
			    "%s: DFS link %s: target \\\\%s\\%s points back into the namespace: "
			    "ignored",
			    root->tree.unc, l->prefix, t.server, t.share);
			continue;
		}
		if (!l->ttl || (r->ttl && r->ttl < l->ttl))
			l->ttl = r->ttl;
		l->targets[l->ntargets++] = t;
	}
	talloc_free(tmp);
	if (!l->prefix)
		return -ENOMEM;
	if (!l->ntargets) {
		smb_warn("%s: DFS link %s: the referral names no usable target", root->tree.unc,
		         l->prefix);
		return -EBADMSG;
	}
	return 0;
}

/* Resolve path (mount-relative): 0 when a link covering it is in the
 * table now, DFS_NO_LINK when the server says no link covers it, another
 * -errno when the link cannot be followed. */
static int resolve(struct smb_dfs *ns, const char *path)
{
	struct smb_client *root = ns->root;
	struct dfs_link *l = talloc_zero(ns, struct dfs_link);
	if (!l)
		return -ENOMEM;
	l->ns = ns;
	int err = ask_link(ns, path, l);
	if (err) {
		talloc_free(l);
		return err;
	}
	l->expires_ms = ev_now_ms() + (uint64_t)l->ttl * 1000u;
	pthread_mutex_lock(&ns->lock);
	bool full = ns->nlinks == DFS_MAX_LINKS;
	l->num = ns->nlinks + 1;
	pthread_mutex_unlock(&ns->lock);
	if (full) {
		smb_warn("%s: DFS: more than %d links followed; %s is not", root->tree.unc,
		         DFS_MAX_LINKS, l->prefix);
		talloc_free(l);
		return -ENOSPC;
	}
	if ((err = link_connect(ns, l)) < 0) {
		talloc_free(l);
		return err;
	}
	pthread_mutex_lock(&ns->lock);
	ns->links[ns->nlinks++] = l;
	ns->generation++;
	pthread_mutex_unlock(&ns->lock);
	return 0;
}

/* The referral of link l outlived its TTL ([MS-DFSC] 3.1.5.1: ask again
 * when it is next used): ask again, and from then on l fails over along
 * the targets the server names now.  The call that noticed went on to the
 * target in use; a failed refresh is tried again a minute later. */
static void refresh(struct smb_dfs *ns, struct dfs_link *l)
{
	struct smb_client *root = ns->root;
	struct dfs_link *nl = talloc_zero(l, struct dfs_link); /* lives as long as l */
	int err = nl ? ask_link(ns, l->prefix, nl) : -ENOMEM;
	if (!err && strcasecmp(nl->prefix, l->prefix) != 0) {
		smb_warn("%s: DFS link %s: the server now names the link %s; keeping the old "
		         "referral",
		         root->tree.unc, l->prefix, nl->prefix);
		err = -EBADMSG;
	}
	pthread_mutex_lock(&ns->lock);
	if (!err) {
		memcpy(l->targets, nl->targets, sizeof(l->targets));
		l->ntargets = nl->ntargets;
		l->ttl = nl->ttl;
	}
	l->expires_ms = ev_now_ms() + (err ? 60000u : (uint64_t)l->ttl * 1000u);
	l->refreshing = false;
	pthread_mutex_unlock(&ns->lock);
	if (err) {
		smb_warn("%s: DFS link %s: asking its referral again failed (%s); kept",
		         root->tree.unc, l->prefix,
		         err == DFS_NO_LINK ? "no referral" : strerror(-err));
		return;
	}
	link_set_alternates(ns, l);
	smb_debug("%s: DFS link %s: referral asked again, %d target%s, ttl %u s", root->tree.unc,
	          l->prefix, l->ntargets, l->ntargets == 1 ? "" : "s", l->ttl);
}

static void call_requeue(struct dfs_call *k)
{
	struct smb_dfs *ns = k->ns;
	k->resolves++;
	pthread_mutex_lock(&ns->lock);
	k->next = NULL;
	*ns->queue_tail = k;
	ns->queue_tail = &k->next;
	pthread_cond_signal(&ns->cond);
	pthread_mutex_unlock(&ns->lock);
}

static void *worker_main(void *arg)
{
	struct smb_dfs *ns = arg;
	pthread_mutex_lock(&ns->lock);
	for (;;) {
		while (!ns->queue && !ns->stopping)
			pthread_cond_wait(&ns->cond, &ns->lock);
		if (ns->stopping)
			break;
		struct dfs_call *k = ns->queue;
		ns->queue = k->next;
		if (!ns->queue)
			ns->queue_tail = &ns->queue;
		if (k->op == OP_REFRESH) {
			pthread_mutex_unlock(&ns->lock);
			refresh(ns, k->link);
			talloc_free(k);
			pthread_mutex_lock(&ns->lock);
			continue;
		}
		/* A link added since k went out may already cover it. */
		bool moved = ns->generation != k->generation;
		pthread_mutex_unlock(&ns->lock);
		int err = 0;
		if (!moved) {
			err = resolve(ns, k->path);
			if (err == DFS_NO_LINK && k->path2)
				err = resolve(ns, k->path2);
			if (err)
				__atomic_add_fetch(&ns->referral_failures, 1, __ATOMIC_RELAXED);
		}
		/* DFS_NO_LINK: no link covers it after all: its PATH_NOT_COVERED is
		 * the answer (EREMOTE), as without DFS.  Else the link's own
		 * failure (no target answered: the last one's error). */
		if (err == DFS_NO_LINK)
			k->resolves = DFS_MAX_RESOLVES;
		else if (err)
			k->fail_err = err;
		if (ev_call(ns->root->loop, call_resend, k) < 0)
			call_fail(k, -ENOMEM); /* not on the loop, but it is going away */
		pthread_mutex_lock(&ns->lock);
	}
	/* stopping: what still waits fails */
	struct dfs_call *k = ns->queue;
	ns->queue = NULL;
	ns->queue_tail = &ns->queue;
	pthread_mutex_unlock(&ns->lock);
	while (k) {
		struct dfs_call *next = k->next;
		call_fail(k, -ECONNABORTED);
		k = next;
	}
	return NULL;
}

/* ---- set-up and teardown ----------------------------------------------------- */

static int dfs_destructor(struct smb_dfs *ns)
{
	pthread_mutex_destroy(&ns->lock);
	pthread_cond_destroy(&ns->cond);
	return 0;
}

int smb_dfs_init(struct smb_client *c)
{
	struct smb_dfs *ns = talloc_zero(c, struct smb_dfs);
	if (!ns)
		return -ENOMEM;
	ns->root = c;
	ns->root_link.ns = ns;
	ns->queue_tail = &ns->queue;
	pthread_mutex_init(&ns->lock, NULL);
	pthread_cond_init(&ns->cond, NULL);
	talloc_set_destructor(ns, dfs_destructor);
	if (pthread_create(&ns->worker, NULL, worker_main, ns) != 0) {
		talloc_free(ns);
		return -EAGAIN;
	}
	ns->worker_started = true;
	c->dfs = ns;
	smb_debug("%s: a DFS share (flags 0x%x, capabilities 0x%x): links are followed",
	          c->tree.unc, c->tree.share_flags, c->tree.share_caps);
	return 0;
}

void smb_dfs_destroy(struct smb_client *c)
{
	struct smb_dfs *ns = c->dfs;
	if (!ns)
		return;
	if (ns->worker_started) {
		pthread_mutex_lock(&ns->lock);
		ns->stopping = true;
		pthread_cond_signal(&ns->cond);
		pthread_mutex_unlock(&ns->lock);
		pthread_join(ns->worker, NULL);
	}
	for (int i = 0; i < ns->nlinks; i++) {
		smb_client_destroy(ns->links[i]->client);
		ns->links[i]->client = NULL;
	}
	/* Calls the root still runs keep their records until their callbacks:
	 * those run (failing) while the root goes down, after this. */
	c->dfs = NULL;
	talloc_steal(c, ns); /* freed with the root */
}

/* ---- the routed calls -------------------------------------------------------- */

#define CB(f) ((void (*)(void))(f))

int smb_dfs_stat(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	return call_start(call_new(c, OP_STAT, path, CB(cb), arg));
}

int smb_dfs_open(struct smb_client *c, const char *path, const struct smb_open_args *args,
                 smb_open_cb cb, void *arg)
{
	struct dfs_call *k = call_new(c, OP_OPEN, path, CB(cb), arg);
	if (k)
		k->oargs = *args;
	return call_start(k);
}

int smb_dfs_create_file(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	return call_start(call_new(c, OP_CREATE_FILE, path, CB(cb), arg));
}

int smb_dfs_mkdir(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	return call_start(call_new(c, OP_MKDIR, path, CB(cb), arg));
}

int smb_dfs_create_in(struct smb_client *c, const char *path, bool dir, bool set_mode,
                      uint32_t mode, uint64_t lease_id, uint64_t parent_lease_id, smb_attr_cb cb,
                      void *arg)
{
	struct dfs_call *k = call_new(c, OP_CREATE_IN, path, CB(cb), arg);
	if (k) {
		k->flag = dir;
		k->set_mode = set_mode;
		k->mode = mode;
		k->lease_id = lease_id;
		k->parent_lease_id = parent_lease_id;
	}
	return call_start(k);
}

int smb_dfs_unlink_in(struct smb_client *c, const char *path, bool is_dir, uint64_t lease_id,
                      uint64_t parent_lease_id, smb_status_cb cb, void *arg)
{
	struct dfs_call *k = call_new(c, OP_UNLINK_IN, path, CB(cb), arg);
	if (k) {
		k->flag = is_dir;
		k->lease_id = lease_id;
		k->parent_lease_id = parent_lease_id;
	}
	return call_start(k);
}

static struct dfs_call *call_two(struct smb_client *c, enum dfs_op op, const char *from,
                                 const char *to, void (*cb)(void), void *arg)
{
	struct dfs_call *k = call_new(c, op, from, cb, arg);
	if (k && !(k->path2 = talloc_strdup(k, to ? to : ""))) {
		talloc_free(k);
		k = NULL;
	}
	return k;
}

int smb_dfs_rename(struct smb_client *c, const char *from, const char *to, bool replace,
                   smb_status_cb cb, void *arg)
{
	struct dfs_call *k = call_two(c, OP_RENAME, from, to, CB(cb), arg);
	if (k)
		k->flag = replace;
	return call_start(k);
}

int smb_dfs_link(struct smb_client *c, const char *from, const char *to, smb_status_cb cb,
                 void *arg)
{
	return call_start(call_two(c, OP_LINK, from, to, CB(cb), arg));
}

int smb_dfs_query_eas(struct smb_client *c, const char *path, const char *name, smb_buf_cb cb,
                      void *arg)
{
	struct dfs_call *k = call_new(c, OP_QUERY_EAS, path, CB(cb), arg);
	if (k && name && !(k->name = talloc_strdup(k, name))) {
		talloc_free(k);
		k = NULL;
	}
	return call_start(k);
}

int smb_dfs_set_ea(struct smb_client *c, const char *path, const char *name, const void *value,
                   size_t len, smb_status_cb cb, void *arg)
{
	struct dfs_call *k = call_new(c, OP_SET_EA, path, CB(cb), arg);
	if (k && ((name && !(k->name = talloc_strdup(k, name))) ||
	          (len && !(k->data = talloc_memdup(k, value, len))))) {
		talloc_free(k);
		k = NULL;
	}
	if (k)
		k->len = len;
	return call_start(k);
}

int smb_dfs_put_small(struct smb_client *c, const char *path, const void *data, size_t len,
                      smb_status_cb cb, void *arg)
{
	struct dfs_call *k = call_new(c, OP_PUT_SMALL, path, CB(cb), arg);
	if (k && len && !(k->data = talloc_memdup(k, data, len))) {
		talloc_free(k);
		k = NULL;
	}
	if (k)
		k->len = len;
	return call_start(k);
}

int smb_dfs_get_small(struct smb_client *c, const char *path, size_t max, smb_buf_cb cb, void *arg)
{
	struct dfs_call *k = call_new(c, OP_GET_SMALL, path, CB(cb), arg);
	if (k)
		k->len = max;
	return call_start(k);
}

int smb_dfs_get_reparse(struct smb_client *c, const char *path, smb_buf_cb cb, void *arg)
{
	return call_start(call_new(c, OP_GET_REPARSE, path, CB(cb), arg));
}

/* ---- handle calls: translated and passed on ------------------------------------ */

/* A handle call's record while it runs, for what its answer carries. */
struct dfs_hcall {
	struct smb_dfs *ns;
	struct dfs_link *link;
	struct smb2_fileid vfid;
	void (*cb)(void);
	void *arg;
};

static struct dfs_hcall *hcall_new(struct smb_dfs *ns, struct dfs_link *l, struct smb2_fileid vf,
                                   void (*cb)(void), void *arg)
{
	struct dfs_hcall *h = talloc_zero(ns, struct dfs_hcall);
	if (h) {
		h->ns = ns;
		h->link = l;
		h->vfid = vf;
		h->cb = cb;
		h->arg = arg;
	}
	return h;
}

/* Look fid up into cl/l/real, or fail the call with -EBADF. */
#define LOOKUP(c, fid, cl, l, real)                      \
	struct smb_client *cl;                           \
	struct dfs_link *l;                              \
	struct smb2_fileid real;                         \
	if (!vfid_find((c)->dfs, (fid), &cl, &l, &real)) \
	return -EBADF

/* Run stmt with the root's own calls unrouted when cl is the root. */
#define ON(cl, c, stmt)                      \
	do {                                 \
		bool on_root_ = (cl) == (c); \
		if (on_root_)                \
			dfs_on_root++;       \
		stmt;                        \
		if (on_root_)                \
			dfs_on_root--;       \
	} while (0)

static void close_done(void *arg, int err, uint32_t status)
{
	struct dfs_hcall *h = arg;
	vfid_remove(h->ns, h->vfid);
	if (h->cb)
		((smb_status_cb)h->cb)(h->arg, err, status);
	talloc_free(h);
}

int smb_dfs_close(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	struct dfs_hcall *h = hcall_new(c->dfs, l, fid, CB(cb), arg);
	if (!h)
		return -ENOMEM;
	int err;
	ON(cl, c, err = smb_close(cl, real, close_done, h));
	if (err)
		talloc_free(h);
	return err;
}

int smb_dfs_close_batch(struct smb_client *c, const struct smb2_fileid *fids,
                        const uint64_t *mtimes, void *const *args, int n, smb_status_cb cb)
{
	/* One client for all of them: one compound there; else -EXDEV and the
	 * caller closes them one by one (client.h allows any -errno). */
	struct smb_client *cl0 = NULL;
	struct smb2_fileid real[SMB_CLOSE_BATCH_MAX];
	void *hargs[SMB_CLOSE_BATCH_MAX];
	if (n <= 0 || n > SMB_CLOSE_BATCH_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		struct smb_client *cl;
		struct dfs_link *l;
		if (!vfid_find(c->dfs, fids[i], &cl, &l, &real[i]))
			return -EBADF;
		if (cl0 && cl != cl0)
			return -EXDEV;
		cl0 = cl;
	}
	for (int i = 0; i < n; i++) {
		hargs[i] = hcall_new(c->dfs, NULL, fids[i], CB(cb), args[i]);
		if (!hargs[i]) {
			for (int j = 0; j < i; j++)
				talloc_free(hargs[j]);
			return -ENOMEM;
		}
	}
	int err;
	ON(cl0, c, err = smb_close_batch(cl0, real, mtimes, hargs, n, close_done));
	if (err)
		for (int i = 0; i < n; i++)
			talloc_free(hargs[i]);
	return err;
}

static void hattr_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct dfs_hcall *h = arg;
	struct smb_attr a;
	((smb_attr_cb)h->cb)(h->arg, err, status, mixed(h->link, attr, &a));
	talloc_free(h);
}

int smb_dfs_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	struct dfs_hcall *h = hcall_new(c->dfs, l, fid, CB(cb), arg);
	if (!h)
		return -ENOMEM;
	int err;
	ON(cl, c, err = smb_fstat(cl, real, hattr_done, h));
	if (err)
		talloc_free(h);
	return err;
}

int smb_dfs_setattr(struct smb_client *c, const char *path, const struct smb2_fileid *fid,
                    const struct smb_setattr_args *args, smb_attr_cb cb, void *arg)
{
	if (!fid) {
		struct dfs_call *k = call_new(c, OP_SETATTR, path, CB(cb), arg);
		if (k)
			k->sargs = *args;
		return call_start(k);
	}
	LOOKUP(c, *fid, cl, l, real);
	struct dfs_hcall *h = hcall_new(c->dfs, l, *fid, CB(cb), arg);
	if (!h)
		return -ENOMEM;
	int err;
	ON(cl, c, err = smb_setattr(cl, path, &real, args, hattr_done, h));
	if (err)
		talloc_free(h);
	return err;
}

int smb_dfs_read(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, size_t len,
                 smb_read_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_read(cl, real, offset, len, cb, arg));
	return err;
}

int smb_dfs_read_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, void *buf,
                      size_t len, smb_read_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_read_lent(cl, real, offset, buf, len, cb, arg));
	return err;
}

int smb_dfs_write(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                  size_t len, bool lent, smb_write_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	if (lent)
		ON(cl, c, err = smb_write_lent(cl, real, offset, data, len, cb, arg));
	else
		ON(cl, c, err = smb_write(cl, real, offset, data, len, cb, arg));
	return err;
}

int smb_dfs_write_times(struct smb_client *c, struct smb2_fileid fid, uint64_t offset,
                        const void *data, size_t len, const struct smb_setattr_args *times,
                        smb_write_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_write_times(cl, real, offset, data, len, times, cb, arg));
	return err;
}

int smb_dfs_flush(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_flush(cl, real, cb, arg));
	return err;
}

static void dir_done(void *arg, int err, uint32_t status, const struct smb_dirent *ents,
                     size_t count)
{
	struct dfs_hcall *h = arg;
	if (h->link && h->link->num && count) {
		struct smb_dirent *mixed = talloc_array(h, struct smb_dirent, count);
		if (!mixed) {
			((smb_dir_cb)h->cb)(h->arg, -ENOMEM, 0, NULL, 0);
			talloc_free(h);
			return;
		}
		for (size_t i = 0; i < count; i++) {
			mixed[i] = ents[i];
			mix_attr(h->link, &mixed[i].attr);
		}
		((smb_dir_cb)h->cb)(h->arg, err, status, mixed, count);
		talloc_free(mixed);
	} else {
		((smb_dir_cb)h->cb)(h->arg, err, status, ents, count);
	}
	talloc_free(h); /* one callback per smb_readdir() (client.h) */
}

int smb_dfs_readdir(struct smb_client *c, struct smb2_fileid fid, bool restart, smb_dir_cb cb,
                    void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	if (!l) {
		int err;
		ON(cl, c, err = smb_readdir(cl, real, restart, cb, arg));
		return err;
	}
	struct dfs_hcall *h = hcall_new(c->dfs, l, fid, CB(cb), arg);
	if (!h)
		return -ENOMEM;
	int err = smb_readdir(cl, real, restart, dir_done, h);
	if (err)
		talloc_free(h);
	return err;
}

int smb_dfs_fsctl(struct smb_client *c, struct smb2_fileid fid, uint32_t code, const void *in,
                  size_t inlen, uint32_t max_out, smb_buf_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_fsctl(cl, real, code, in, inlen, max_out, cb, arg));
	return err;
}

int smb_dfs_lock(struct smb_client *c, struct smb2_fileid fid, const struct smb2_lock_elem *e,
                 uint16_t n, smb_status_cb cb, void *arg)
{
	LOOKUP(c, fid, cl, l, real);
	(void)l;
	int err;
	ON(cl, c, err = smb_lock(cl, real, e, n, cb, arg));
	return err;
}

int smb_dfs_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                       struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                       void *arg)
{
	LOOKUP(c, src, cl, l, real);
	struct smb_client *cl2;
	struct dfs_link *l2;
	struct smb2_fileid real2;
	(void)l;
	if (!vfid_find(c->dfs, dst, &cl2, &l2, &real2))
		return -EBADF;
	if (cl2 != cl)
		return -EXDEV; /* no server-side copy between two servers */
	int err;
	ON(cl, c, err = smb_copy_range(cl, real, src_off, real2, dst_off, len, cb, arg));
	return err;
}

bool smb_dfs_file_failed(struct smb_client *c, struct smb2_fileid fid)
{
	struct smb_client *cl;
	struct dfs_link *l;
	struct smb2_fileid real;
	if (!vfid_find(c->dfs, fid, &cl, &l, &real))
		return true;
	bool failed;
	ON(cl, c, failed = smb_file_failed(cl, real));
	return failed;
}

/* ---- callbacks ---------------------------------------------------------------- */

static void link_break_tramp(void *arg, struct smb2_fileid fid, uint8_t level)
{
	struct dfs_link *l = arg;
	struct smb_dfs *ns = l->ns;
	struct smb_client *cl = l->num ? l->client : ns->root;
	if (ns->break_cb)
		ns->break_cb(ns->break_arg, vfid_of(ns, cl, fid), level);
}

static void link_lock_lost_tramp(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                                 uint64_t len, bool exclusive, uint32_t status)
{
	struct dfs_link *l = arg;
	struct smb_dfs *ns = l->ns;
	struct smb_client *cl = l->num ? l->client : ns->root;
	if (ns->lock_lost_cb)
		ns->lock_lost_cb(ns->lock_lost_arg, vfid_of(ns, cl, fid), path, off, len, exclusive,
		                 status);
	else
		smb_warn("%s: lost the lock on %s [%llu, +%llu) in a reconnect", cl->tree.unc, path,
		         (unsigned long long)off, (unsigned long long)len);
}

void smb_dfs_set_break_cb(struct smb_client *c, smb_break_cb cb, void *arg)
{
	c->dfs->break_cb = cb;
	c->dfs->break_arg = arg;
	dfs_on_root++;
	smb_client_set_break_cb(c, link_break_tramp, &c->dfs->root_link);
	dfs_on_root--;
}

void smb_dfs_set_lock_lost_cb(struct smb_client *c, smb_lock_lost_cb cb, void *arg)
{
	c->dfs->lock_lost_cb = cb;
	c->dfs->lock_lost_arg = arg;
	dfs_on_root++;
	smb_client_set_lock_lost_cb(c, link_lock_lost_tramp, &c->dfs->root_link);
	dfs_on_root--;
}

void smb_dfs_set_lease_break_cb(struct smb_client *c, smb_lease_break_cb cb, void *arg)
{
	c->dfs->lease_cb = cb;
	c->dfs->lease_arg = arg;
}

void smb_dfs_set_meta_split(struct smb_client *c, enum smb_meta_split mode)
{
	c->dfs->meta_split = mode;
	c->dfs->meta_split_set = true;
}

void smb_dfs_region_add(struct smb_client *c, void *addr, size_t len)
{
	struct smb_dfs *ns = c->dfs;
	pthread_mutex_lock(&ns->lock);
	int n = ns->nlinks;
	pthread_mutex_unlock(&ns->lock);
	for (int i = 0; i < n; i++)
		(void)smb_client_region_add(ns->links[i]->client, addr, len);
}

int smb_dfs_reconnect_now(struct smb_client *c, const char *why)
{
	struct smb_dfs *ns = c->dfs;
	pthread_mutex_lock(&ns->lock);
	int n = ns->nlinks, dropped = 0;
	pthread_mutex_unlock(&ns->lock);
	for (int i = 0; i < n; i++)
		dropped += smb_client_reconnect_now(ns->links[i]->client, why);
	return dropped;
}

/* ---- what smbrdmactl dfs shows ------------------------------------------------ */

int smb_client_dfs_links(struct smb_client *c, struct smb_dfs_info *info,
                         struct smb_dfs_link_info *out, int max)
{
	struct smb_dfs *ns = c->dfs;
	if (!ns)
		return -ENOENT;
	memset(info, 0, sizeof(*info));
	info->referrals = __atomic_load_n(&ns->referrals, __ATOMIC_RELAXED);
	info->referral_failures = __atomic_load_n(&ns->referral_failures, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ns->lock);
	uint64_t now = ev_now_ms();
	info->nlinks = ns->nlinks;
	for (int i = 0; i < ns->nlinks && i < max; i++) {
		struct dfs_link *l = ns->links[i];
		struct smb_dfs_link_info *o = &out[i];
		memset(o, 0, sizeof(*o));
		snprintf(o->path, sizeof(o->path), "%s", l->prefix);
		snprintf(o->current, sizeof(o->current), "%s",
		         __atomic_load_n(&l->client->tree.unc, __ATOMIC_ACQUIRE));
		for (int t = 0; t < l->ntargets && t < SMB_DFS_TARGETS_MAX; t++) {
			const struct dfs_target *tg = &l->targets[t];
			snprintf(o->targets[t], sizeof(o->targets[t]), "\\\\%s\\%s%s%s", tg->server,
			         tg->share, tg->path[0] ? "\\" : "", tg->path);
			o->ntargets++;
		}
		o->ttl = l->ttl;
		o->expired = now >= l->expires_ms;
		o->moves = __atomic_load_n(&l->client->retargets, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ns->lock);
	return 0;
}
