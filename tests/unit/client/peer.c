/* tests/unit/client/peer.c — the scripted SMB2 peer of peer.h and the fake
 * transport that connects the client engine to it (smb_transport_tcp_new).
 * Protocol facts as in tests/lib/hostile_server.py, which it mirrors. */
#include "tests/unit/client/peer.h"

#include "auth/ntlmssp.h"
#include "auth/spnego.h"
#include "client/proto/smb2.h"
#include "client/proto/smb2_lease.h"
#include "client/transport_quic.h"
#include "common/crypto.h"
#include "common/cursor.h"
#include "common/evloop.h"
#include "common/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <talloc.h>

#define HDR         64
#define PATH_MAX_   128
#define MAX_NODES   64
#define MAX_OPENS   64
#define MAX_CONNS   32
#define MAX_SESS    4
#define MAX_HOOKS   16
#define MAX_RECS    4096
#define MAX_PDUS    16
#define MAX_IFACES  4
#define MAX_REGIONS 16
#define MAX_TOKENS  128
#define FILE_OPENED 1

struct node {
	bool used, is_dir;
	char path[PATH_MAX_];
	uint8_t *data;
	size_t len;
	uint64_t file_id, mtime;
};

struct popen {
	bool used, durable, delete_on_close;
	uint64_t pid, vid;
	int node;
	int conn; /* the connection it belongs to; 0 = disconnected (durable) */
	uint64_t session_id;
	uint8_t guid[16];
	uint32_t action;
	/* a lease (RqLs granted): its key, state, and a break sent not yet acked */
	bool lease, breaking;
	uint8_t lease_key[16];
	uint32_t lease_state, break_to;
};

/* A session as one connection (channel) knows it: each channel of a
 * multichannel session has its own entry, with the session's id, keys and
 * tree copied, and its own preauth hash and signing key. */
struct psess {
	bool used;
	bool binding; /* this channel was bound to an existing session */
	uint64_t id;
	int state; /* 0 new, 1 challenged, 2 valid */
	uint8_t challenge[8];
	uint8_t preauth[64];
	uint8_t signing_key[16];      /* this channel's (Channel.SigningKey) */
	uint8_t sess_signing_key[16]; /* the session's (Session.SigningKey) */
	uint8_t session_key[16];      /* Session.SessionKey */
	bool have_key;
	uint32_t tree_id;
};

/* The transport of one connection (defined with its ops below). */
struct fake {
	struct smb_transport base;
	struct peer *p;
	struct pconn *pc;
	bool dead;                      /* under p->m */
	struct sockaddr_storage remote; /* what connect() was given */
	/* emulated SMB Direct (smb_transport_rdma_new); under p->m */
	bool rdma;
	uint32_t max_rw; /* info's max_read_write */
	uint16_t dialect;
	struct {
		uint8_t *addr;
		size_t len;
	} regions[MAX_REGIONS];
	int nregions;
	uint64_t rdma_read_bytes, rdma_write_bytes; /* the moved of io_token_put */
	sem_t torn_down;                            /* destroy(): the loop is done with it */
};

/* A per-I/O token of the emulated SMB Direct: [addr, addr+len) of client
 * memory, named to the server by rkey, from io_token_get until its done()
 * has been called (put: io_token_put came; held: peer_rdma_hold kept it). */
struct ptoken {
	struct peer *p;
	struct fake *f; /* its connection's; never dereferenced once destroyed */
	uint32_t rkey, channel;
	uint8_t *addr;
	size_t len;
	enum smb_io_dir dir;
	bool put, held;
	void (*done)(void *arg);
	void *arg;
};

struct pconn {
	int number;
	bool closed;
	char addr[INET6_ADDRSTRLEN]; /* the address the client dialled */
	uint16_t dialect;
	uint8_t preauth[64];
	struct psess sess[MAX_SESS];
	struct fake *fake; /* NULL once the transport is destroyed */
};

struct hook {
	bool armed;
	struct peer_match m;
	char path[PATH_MAX_];
	enum peer_action action;
	uint32_t status; /* PEER_STATUS: the status; the READ/WRITE actions: n */
	int fired;
};

struct peer {
	pthread_mutex_t m;
	bool durable;
	bool leasing;     /* SMB2_GLOBAL_CAP_LEASING, RqLs granted */
	bool qfid;        /* QFid answered (peer_set_qfid()) */
	bool dir_leasing; /* SMB2_GLOBAL_CAP_DIRECTORY_LEASING too */
	bool refuse;      /* connect() refused */
	uint8_t last_ack_key[16];
	uint32_t last_ack_state;
	uint8_t guid[16];
	struct node nodes[MAX_NODES];
	struct popen opens[MAX_OPENS];
	struct pconn *conns[MAX_CONNS];
	int nconns;
	struct hook hooks[MAX_HOOKS];
	int nhooks;
	struct peer_rec *recs;
	int nrecs;
	struct peer_stats st;
	char violation[256];
	uint64_t next_session, next_fid, next_file_id, clock;
	uint32_t next_tree;
	struct in_addr ifaces[MAX_IFACES]; /* FSCTL_QUERY_NETWORK_INTERFACE_INFO */
	int nifaces;
	uint32_t max_read, max_write; /* NEGOTIATE's; above: refused */
	/* emulated SMB Direct */
	uint32_t rdma_max_rw;   /* the transport's max_read_write */
	size_t rdma_max_region; /* region_add refuses larger: -ENOMEM */
	int token_fail_n, token_fail_err;
	bool rdma_hold;
	struct ptoken *tokens[MAX_TOKENS]; /* not yet done */
	int ntokens;
	uint32_t next_rkey;
};

static struct peer *g_peer;

/* ---- the file tree ---------------------------------------------------------------- */

static void norm(const char *in, char *out, size_t cap)
{
	while (*in == '/' || *in == '\\')
		in++;
	size_t n = 0;
	for (; *in && n + 1 < cap; in++)
		out[n++] = *in == '\\' ? '/' : *in;
	while (n && out[n - 1] == '/')
		n--;
	out[n] = 0;
}

static int node_find(struct peer *p, const char *path)
{
	for (int i = 0; i < MAX_NODES; i++)
		if (p->nodes[i].used && strcmp(p->nodes[i].path, path) == 0)
			return i;
	return -1;
}

static int node_add(struct peer *p, const char *path, bool dir)
{
	for (int i = 0; i < MAX_NODES; i++) {
		struct node *n = &p->nodes[i];
		if (n->used)
			continue;
		memset(n, 0, sizeof(*n));
		n->used = true;
		n->is_dir = dir;
		snprintf(n->path, sizeof(n->path), "%s", path);
		n->file_id = ++p->next_file_id;
		n->mtime = ++p->clock;
		return i;
	}
	return -1;
}

static void node_del(struct peer *p, int i)
{
	free(p->nodes[i].data);
	memset(&p->nodes[i], 0, sizeof(p->nodes[i]));
}

static void parent_of(const char *path, char *out, size_t cap)
{
	snprintf(out, cap, "%s", path);
	char *s = strrchr(out, '/');
	if (s)
		*s = 0;
	else
		out[0] = 0;
}

static bool has_children(struct peer *p, const char *path)
{
	size_t l = strlen(path);
	for (int i = 0; i < MAX_NODES; i++) {
		const char *q = p->nodes[i].path;
		if (p->nodes[i].used && q[0] &&
		    (l == 0 || (strncmp(q, path, l) == 0 && q[l] == '/')))
			return true;
	}
	return false;
}

static void mkdirs(struct peer *p, const char *path)
{
	char buf[PATH_MAX_];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf; (s = strchr(s, '/')) != NULL; s++) {
		*s = 0;
		if (node_find(p, buf) < 0)
			node_add(p, buf, true);
		*s = '/';
	}
}

struct peer *peer_new(void)
{
	struct peer *p = calloc(1, sizeof(*p));
	pthread_mutex_init(&p->m, NULL);
	p->durable = true;
	p->recs = calloc(MAX_RECS, sizeof(*p->recs));
	smb_random_bytes(p->guid, sizeof(p->guid));
	p->next_session = 0x1000;
	p->next_file_id = 1000;
	p->clock = 132000000000000000ull;
	node_add(p, "", true);
	peer_set_limits(p, &(struct peer_limits){0});
	g_peer = p;
	return p;
}

void peer_free(struct peer *p)
{
	if (!p)
		return;
	for (int i = 0; i < MAX_NODES; i++)
		free(p->nodes[i].data);
	for (int i = 0; i < p->nconns; i++)
		free(p->conns[i]);
	for (int i = 0; i < p->ntokens; i++)
		free(p->tokens[i]);
	free(p->recs);
	pthread_mutex_destroy(&p->m);
	if (g_peer == p)
		g_peer = NULL;
	free(p);
}

void peer_set_durable(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->durable = on;
	pthread_mutex_unlock(&p->m);
}

void peer_set_qfid(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->qfid = on;
	pthread_mutex_unlock(&p->m);
}

void peer_set_leasing(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->leasing = on;
	pthread_mutex_unlock(&p->m);
}

void peer_set_dir_leasing(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->dir_leasing = on;
	pthread_mutex_unlock(&p->m);
}

void peer_set_refuse(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->refuse = on;
	pthread_mutex_unlock(&p->m);
}

void peer_set_limits(struct peer *p, const struct peer_limits *l)
{
	pthread_mutex_lock(&p->m);
	p->max_read = l->max_read ? l->max_read : 1u << 20;
	p->max_write = l->max_write ? l->max_write : 1u << 20;
	p->rdma_max_rw = l->rdma_max_read_write ? l->rdma_max_read_write : 65536;
	p->rdma_max_region = l->rdma_max_region ? l->rdma_max_region : SIZE_MAX;
	pthread_mutex_unlock(&p->m);
}

void peer_rdma_fail_tokens(struct peer *p, int n, int err)
{
	pthread_mutex_lock(&p->m);
	p->token_fail_n = n;
	p->token_fail_err = err;
	pthread_mutex_unlock(&p->m);
}

int peer_rdma_tokens_live(struct peer *p)
{
	pthread_mutex_lock(&p->m);
	int n = p->ntokens;
	pthread_mutex_unlock(&p->m);
	return n;
}

void peer_set_interfaces(struct peer *p, const char *const *ipv4, int n)
{
	pthread_mutex_lock(&p->m);
	p->nifaces = 0;
	for (int i = 0; i < n && p->nifaces < MAX_IFACES; i++)
		if (inet_pton(AF_INET, ipv4[i], &p->ifaces[p->nifaces]) == 1)
			p->nifaces++;
	pthread_mutex_unlock(&p->m);
}

void peer_add_file(struct peer *p, const char *path, const void *data, size_t len)
{
	char n[PATH_MAX_];
	norm(path, n, sizeof(n));
	pthread_mutex_lock(&p->m);
	mkdirs(p, n);
	int i = node_add(p, n, false);
	if (i >= 0 && len) {
		p->nodes[i].data = malloc(len);
		memcpy(p->nodes[i].data, data, len);
		p->nodes[i].len = len;
	}
	pthread_mutex_unlock(&p->m);
}

void peer_add_dir(struct peer *p, const char *path)
{
	char n[PATH_MAX_ + 2];
	norm(path, n, PATH_MAX_);
	pthread_mutex_lock(&p->m);
	strcat(n, "/");
	mkdirs(p, n);
	pthread_mutex_unlock(&p->m);
}

bool peer_exists(struct peer *p, const char *path)
{
	char n[PATH_MAX_];
	norm(path, n, sizeof(n));
	pthread_mutex_lock(&p->m);
	bool r = node_find(p, n) >= 0;
	pthread_mutex_unlock(&p->m);
	return r;
}

long peer_file_data(struct peer *p, const char *path, void *out, size_t cap)
{
	char n[PATH_MAX_];
	norm(path, n, sizeof(n));
	pthread_mutex_lock(&p->m);
	int i = node_find(p, n);
	long r = -1;
	if (i >= 0) {
		r = (long)p->nodes[i].len;
		if (p->nodes[i].len)
			memcpy(out, p->nodes[i].data,
			       p->nodes[i].len < cap ? p->nodes[i].len : cap);
	}
	pthread_mutex_unlock(&p->m);
	return r;
}

/* ---- hooks, records, stats ------------------------------------------------------- */

int peer_on(struct peer *p, const struct peer_match *m, enum peer_action a, uint32_t arg)
{
	pthread_mutex_lock(&p->m);
	int id = p->nhooks < MAX_HOOKS ? p->nhooks++ : -1;
	if (id >= 0) {
		struct hook *h = &p->hooks[id];
		*h = (struct hook){.armed = true, .m = *m, .action = a, .status = arg};
		if (m->path) {
			norm(m->path, h->path, sizeof(h->path));
			h->m.path = h->path;
		}
	}
	pthread_mutex_unlock(&p->m);
	return id;
}

int peer_hook_fired(struct peer *p, int id)
{
	pthread_mutex_lock(&p->m);
	int r = id >= 0 && id < p->nhooks ? p->hooks[id].fired : 0;
	pthread_mutex_unlock(&p->m);
	return r;
}

int peer_records(struct peer *p, int from, struct peer_rec *out, int max)
{
	pthread_mutex_lock(&p->m);
	int n = 0;
	for (int i = from; i < p->nrecs && n < max; i++)
		out[n++] = p->recs[i];
	pthread_mutex_unlock(&p->m);
	return n;
}

int peer_nrecords(struct peer *p)
{
	pthread_mutex_lock(&p->m);
	int n = p->nrecs;
	pthread_mutex_unlock(&p->m);
	return n;
}

void peer_get_stats(struct peer *p, struct peer_stats *out)
{
	pthread_mutex_lock(&p->m);
	*out = p->st;
	pthread_mutex_unlock(&p->m);
}

bool peer_conn_info(struct peer *p, int conn, char *addr, size_t cap, uint64_t *session_id,
                    bool *live)
{
	pthread_mutex_lock(&p->m);
	struct pconn *pc = conn >= 1 && conn <= p->nconns ? p->conns[conn - 1] : NULL;
	if (pc) {
		if (addr)
			snprintf(addr, cap, "%s", pc->addr);
		if (session_id) {
			*session_id = 0;
			for (int i = 0; i < MAX_SESS && !*session_id; i++)
				if (pc->sess[i].used)
					*session_id = pc->sess[i].id;
		}
		if (live)
			*live = !pc->closed;
	}
	pthread_mutex_unlock(&p->m);
	return pc != NULL;
}

void peer_last_violation(struct peer *p, char *out, size_t cap)
{
	pthread_mutex_lock(&p->m);
	snprintf(out, cap, "%s", p->violation);
	pthread_mutex_unlock(&p->m);
}

static void violation(struct peer *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->violation, sizeof(p->violation), fmt, ap);
	va_end(ap);
	p->st.violations++;
	fprintf(stderr, "peer: violation: %s\n", p->violation);
}

/* ---- one PDU ------------------------------------------------------------------------- */

/* A response under construction. */
struct rsp {
	uint32_t status;
	uint8_t body[1024];
	size_t body_len;
	const uint8_t *data; /* READ payload after body */
	size_t data_len;
	uint8_t *owned; /* data, when it is ours to free */
	uint64_t session_id;
	uint32_t tree_id;
	int preauth; /* hash the bytes as sent into: 1 the connection's, 2 the session's */
	struct psess *sess;
};

/* What the PDUs of one message share. */
struct frame {
	struct peer *p;
	struct pconn *pc;
	const uint8_t *pdu; /* this PDU and its length (up to NextCommand) */
	size_t len;
	struct smb2_hdr h;
	const uint8_t *b; /* its body */
	size_t blen;
	bool related;
	int last_fid; /* open index of the chain's last CREATE, -1 none */
	bool bad_sig; /* signed, and it did not verify (a violation) */
	uint32_t last_status;
	struct peer_rec *rec;
	const struct hook *hook; /* the hook that fired on this PDU, or NULL */
};

static void rsp_status(struct rsp *r, uint32_t st)
{
	r->status = st;
	memset(r->body, 0, 9);
	smb_put_le16(r->body, 9);
	r->body_len = 9;
}

static struct psess *sess_find(struct pconn *pc, uint64_t id)
{
	for (int i = 0; i < MAX_SESS; i++)
		if (pc->sess[i].used && pc->sess[i].id == id)
			return &pc->sess[i];
	return NULL;
}

/* ---- sessions across channels (multichannel) ---------------------------------------- */

/* The session id on a live connection other than except, valid: the
 * session a binding joins, or where a lost channel's opens go. */
static struct psess *sess_elsewhere(struct peer *p, uint64_t id, const struct pconn *except)
{
	for (int i = 0; i < p->nconns; i++) {
		struct pconn *c = p->conns[i];
		if (c == except || c->closed)
			continue;
		struct psess *s = sess_find(c, id);
		if (s && s->state == 2)
			return s;
	}
	return NULL;
}

static int sess_conn_number(struct peer *p, const struct psess *s)
{
	for (int i = 0; i < p->nconns; i++)
		if (s >= p->conns[i]->sess && s < p->conns[i]->sess + MAX_SESS)
			return p->conns[i]->number;
	return 0;
}

/* A session-wide change on every channel: its tree (0: disconnected), or
 * its end (LOGOFF). */
static void sess_set_tree(struct peer *p, uint64_t id, uint32_t tree_id)
{
	for (int i = 0; i < p->nconns; i++) {
		struct psess *s = p->conns[i]->closed ? NULL : sess_find(p->conns[i], id);
		if (s)
			s->tree_id = tree_id;
	}
}

static void sess_end(struct peer *p, uint64_t id)
{
	for (int i = 0; i < p->nconns; i++) {
		struct psess *s = sess_find(p->conns[i], id);
		if (s)
			s->used = false;
	}
}

static int open_find(struct peer *p, uint64_t pid, uint64_t vid)
{
	for (int i = 0; i < MAX_OPENS; i++)
		if (p->opens[i].used && p->opens[i].pid == pid && p->opens[i].vid == vid)
			return i;
	return -1;
}

static void open_close(struct peer *p, int i)
{
	struct popen *o = &p->opens[i];
	if (o->delete_on_close && p->nodes[o->node].used) {
		node_del(p, o->node);
		p->st.deletes++;
	}
	memset(o, 0, sizeof(*o));
}

/* The open a request's FileId (at off in the body) names, or -1. */
static int req_open(struct frame *f, size_t off)
{
	if (f->blen < off + 16)
		return -1;
	uint64_t pid = smb_le64(f->b + off), vid = smb_le64(f->b + off + 8);
	if (pid == UINT64_MAX && vid == UINT64_MAX && f->related)
		return f->last_fid;
	return open_find(f->p, pid, vid);
}

static ssize_t utf16_to_path(const uint8_t *in, size_t len, char *out, size_t cap)
{
	char tmp[PATH_MAX_ * 2];
	ssize_t n = smb_utf16le_to_utf8(in, len, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	norm(tmp, out, cap);
	return 0;
}

static void negotiate(struct frame *f, struct rsp *r)
{
	struct pconn *pc = f->pc;
	if (f->blen < 36) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	uint16_t count = smb_le16(f->b + 2);
	bool have = false;
	for (int i = 0; i < count && 36 + 2 * i + 2 <= (int)f->blen; i++)
		have |= smb_le16(f->b + 36 + 2 * i) == SMB2_DIALECT_0311;
	if (!have) {
		rsp_status(r, STATUS_NOT_SUPPORTED);
		return;
	}
	pc->dialect = SMB2_DIALECT_0311;
	/* NegTokenInit2 naming NTLMSSP only (hostile_server.spnego_neg_token_init) */
	static const uint8_t sec[] = {0x60, 0x1c, 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02,
	                              0xa0, 0x12, 0x30, 0x10, 0xa0, 0x0e, 0x30, 0x0c, 0x06, 0x0a,
	                              0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a};
	uint8_t *b = r->body;
	memset(b, 0, sizeof(r->body));
	smb_put_le16(b, 65);
	smb_put_le16(b + 2, SMB2_NEGOTIATE_SIGNING_ENABLED | SMB2_NEGOTIATE_SIGNING_REQUIRED);
	smb_put_le16(b + 4, SMB2_DIALECT_0311);
	smb_put_le16(b + 6, 2); /* contexts */
	memcpy(b + 8, f->p->guid, 16);
	smb_put_le32(
	    b + 24,
	    SMB2_GLOBAL_CAP_LARGE_MTU | SMB2_GLOBAL_CAP_MULTI_CHANNEL |
	        (f->p->leasing ? SMB2_GLOBAL_CAP_LEASING : 0) |
	        (f->p->leasing && f->p->dir_leasing ? SMB2_GLOBAL_CAP_DIRECTORY_LEASING : 0));
	smb_put_le32(b + 28, 1u << 20);
	smb_put_le32(b + 32, f->p->max_read);
	smb_put_le32(b + 36, f->p->max_write);
	smb_put_le64(b + 40, f->p->clock);
	smb_put_le16(b + 56, HDR + 64);
	smb_put_le16(b + 58, sizeof(sec));
	memcpy(b + 64, sec, sizeof(sec));
	size_t off = 64 + sizeof(sec);
	off = (off + 7) & ~(size_t)7;
	smb_put_le32(b + 60, (uint32_t)(HDR + off));
	/* PREAUTH_INTEGRITY_CAPABILITIES: SHA-512, a 32-byte salt */
	smb_put_le16(b + off, SMB2_PREAUTH_INTEGRITY_CAPABILITIES);
	smb_put_le16(b + off + 2, 6 + 32);
	smb_put_le16(b + off + 8, 1);
	smb_put_le16(b + off + 10, 32);
	smb_put_le16(b + off + 12, SMB2_PREAUTH_INTEGRITY_SHA512);
	smb_random_bytes(b + off + 14, 32);
	off += 8 + 6 + 32;
	off = (off + 7) & ~(size_t)7;
	smb_put_le16(b + off, SMB2_SIGNING_CAPABILITIES);
	smb_put_le16(b + off + 2, 4);
	smb_put_le16(b + off + 8, 1);
	smb_put_le16(b + off + 10, SMB2_SIGNING_AES_CMAC);
	off += 8 + 4;
	r->body_len = off;
	r->status = STATUS_SUCCESS;
	r->session_id = 0;
	uint8_t zero[64] = {0};
	struct iovec iov[2] = {{zero, 64}, {(void *)f->pdu, f->len}};
	smb_sha512(iov, 2, pc->preauth);
	r->preauth = 1;
}

/* NTLMSSP CHALLENGE (hostile_server.ntlm_challenge, and KEY_EXCH). */
static size_t ntlm_challenge(const uint8_t challenge[8], uint8_t *out)
{
	static const uint8_t name[] = {'P', 0, 'E', 0, 'E', 0, 'R', 0};
	uint8_t ti[64];
	size_t tl = 0;
	for (int id = 2; id >= 1; id--) {
		smb_put_le16(ti + tl, (uint16_t)id);
		smb_put_le16(ti + tl + 2, sizeof(name));
		memcpy(ti + tl + 4, name, sizeof(name));
		tl += 4 + sizeof(name);
	}
	memset(ti + tl, 0, 4);
	tl += 4;
	uint32_t flags = 0x00000001 | 0x00000004 | 0x00000010 | 0x00000200 | 0x00008000 |
	                 0x00010000 | 0x00080000 | 0x00800000 | 0x02000000 | 0x20000000 |
	                 NTLMSSP_NEGOTIATE_KEY_EXCH | 0x80000000;
	memset(out, 0, 56);
	memcpy(out, "NTLMSSP", 8);
	smb_put_le32(out + 8, 2);
	smb_put_le16(out + 12, sizeof(name));
	smb_put_le16(out + 14, sizeof(name));
	smb_put_le32(out + 16, 56);
	smb_put_le32(out + 20, flags);
	memcpy(out + 24, challenge, 8);
	smb_put_le16(out + 40, (uint16_t)tl);
	smb_put_le16(out + 42, (uint16_t)tl);
	smb_put_le32(out + 44, 56 + sizeof(name));
	out[48] = 6;
	out[49] = 1;
	smb_put_le16(out + 50, 7601);
	out[55] = 15;
	memcpy(out + 56, name, sizeof(name));
	memcpy(out + 56 + sizeof(name), ti, tl);
	return 56 + sizeof(name) + tl;
}

static bool secbuf(const uint8_t *tok, size_t len, size_t at, const uint8_t **v, size_t *vlen)
{
	if (at + 8 > len)
		return false;
	uint16_t l = smb_le16(tok + at);
	uint32_t o = smb_le32(tok + at + 4);
	if (o > len || l > len - o)
		return false;
	*v = tok + o;
	*vlen = l;
	return true;
}

/* The AUTHENTICATE: NTLMv2 checked against PEER_USER/PEER_PASSWORD; the
 * session key (ExportedSessionKey) into key.  0, or -EACCES. */
static int ntlm_verify(const struct psess *s, const uint8_t *tok, size_t len, uint8_t key[16])
{
	const uint8_t *nt, *dom, *usr, *ek;
	size_t ntl, doml, usrl, ekl;
	if (len < 64 || memcmp(tok, "NTLMSSP", 8) != 0 || smb_le32(tok + 8) != 3 ||
	    !secbuf(tok, len, 20, &nt, &ntl) || !secbuf(tok, len, 28, &dom, &doml) ||
	    !secbuf(tok, len, 36, &usr, &usrl) || !secbuf(tok, len, 52, &ek, &ekl) || ntl <= 16)
		return -EACCES;
	uint32_t flags = smb_le32(tok + 60);
	char user[64], domain[64];
	if (smb_utf16le_to_utf8(usr, usrl, user, sizeof(user)) < 0 ||
	    smb_utf16le_to_utf8(dom, doml, domain, sizeof(domain)) < 0 ||
	    strcasecmp(user, PEER_USER) != 0)
		return -EACCES;
	uint8_t nth[16], owf[16], proof[16], base[16];
	if (ntlmssp_nt_hash(PEER_PASSWORD, nth) || ntlmssp_ntowfv2(nth, user, domain, owf))
		return -EACCES;
	struct iovec iov[2] = {{(void *)s->challenge, 8}, {(void *)(nt + 16), ntl - 16}};
	if (smb_hmac_md5(owf, 16, iov, 2, proof) || memcmp(proof, nt, 16) != 0)
		return -EACCES;
	struct iovec pv = {proof, 16};
	if (smb_hmac_md5(owf, 16, &pv, 1, base))
		return -EACCES;
	if (flags & NTLMSSP_NEGOTIATE_KEY_EXCH) {
		if (ekl != 16 || smb_rc4(base, 16, ek, key, 16))
			return -EACCES;
	} else {
		memcpy(key, base, 16);
	}
	return 0;
}

/* A free session entry on pc, zeroed and marked used; NULL if none. */
static struct psess *sess_slot(struct pconn *pc)
{
	for (int i = 0; i < MAX_SESS; i++) {
		struct psess *s = &pc->sess[i];
		if (s->used)
			continue;
		memset(s, 0, sizeof(*s));
		s->used = true;
		memcpy(s->preauth, pc->preauth, 64);
		smb_random_bytes(s->challenge, 8);
		return s;
	}
	return NULL;
}

/* The first SESSION_SETUP of a binding ([MS-SMB2] 3.3.5.5.2): the session
 * must live on another connection (else USER_SESSION_DELETED, *status) and
 * the request be signed with its key (checked in peer_message).  The new
 * channel's entry carries the session's id, keys and tree; its preauth
 * hash starts from this connection's NEGOTIATE. */
static struct psess *bind_begin(struct frame *f, uint32_t *status)
{
	struct peer *p = f->p;
	const struct psess *o = sess_elsewhere(p, f->h.session_id, f->pc);
	struct psess *s = NULL;
	*status = STATUS_USER_SESSION_DELETED;
	if (!o) {
		p->st.bind_refusals++;
		return NULL;
	}
	if (!(f->h.flags & SMB2_FLAGS_SIGNED) || f->bad_sig) {
		if (!f->bad_sig)
			violation(p, "conn %d: binding SESSION_SETUP unsigned", f->pc->number);
		*status = STATUS_ACCESS_DENIED;
		return NULL;
	}
	if (!(s = sess_slot(f->pc))) {
		*status = STATUS_INSUFFICIENT_RESOURCES;
		return NULL;
	}
	s->binding = true;
	s->id = o->id;
	s->tree_id = o->tree_id;
	memcpy(s->session_key, o->session_key, 16);
	memcpy(s->sess_signing_key, o->sess_signing_key, 16);
	return s;
}

/* The binding authenticated: Channel.SigningKey from Session.SessionKey and
 * this channel's preauth hash ([MS-SMB2] 3.3.5.5.3; Samba would take the
 * binding's own session key, which the client also accepts). */
static void bind_finish(struct peer *p, struct psess *s)
{
	static const uint8_t label[] = "SMBSigningKey";
	smb_kdf(s->session_key, 16, label, sizeof(label), s->preauth, 64, s->signing_key, 16);
	s->have_key = true;
	s->state = 2;
	p->st.bindings++;
}

static void session_setup(struct frame *f, struct rsp *r)
{
	struct peer *p = f->p;
	struct pconn *pc = f->pc;
	if (!pc->dialect || f->blen < 24) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	bool binding = f->b[2] & SMB2_SESSION_FLAG_BINDING;
	const uint8_t *blob;
	size_t bl;
	uint16_t off = smb_le16(f->b + 12), len = smb_le16(f->b + 14);
	if (off > f->len || len > f->len - off) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	blob = f->pdu + off;
	bl = len;
	struct psess *s = NULL;
	if (f->h.session_id) {
		uint32_t st = STATUS_USER_SESSION_DELETED;
		s = sess_find(pc, f->h.session_id);
		if (!s && binding) {
			s = bind_begin(f, &st);
		} else if (s && binding && f->bad_sig) {
			s = NULL; /* a binding's later round, badly signed */
			st = STATUS_ACCESS_DENIED;
		}
		if (!s) {
			rsp_status(r, st);
			return;
		}
	} else {
		if (!(s = sess_slot(pc))) {
			rsp_status(r, STATUS_INVALID_PARAMETER);
			return;
		}
		p->next_session += 0x10001;
		s->id = p->next_session;
	}
	r->session_id = s->id;
	r->sess = s;
	struct iovec iov[2] = {{s->preauth, 64}, {(void *)f->pdu, f->len}};
	smb_sha512(iov, 2, s->preauth);
	const uint8_t *tok = NULL;
	size_t tl = 0;
	if (bl >= 8 && memcmp(blob, "NTLMSSP", 8) == 0) {
		tok = blob;
		tl = bl;
	} else if (s->state == 0) {
		struct spnego_init in;
		if (spnego_decode_init(blob, bl, &in) == 0) {
			tok = in.mech_token;
			tl = in.mech_token_len;
		}
	} else {
		struct spnego_resp in;
		if (spnego_decode_resp(blob, bl, &in) == 0) {
			tok = in.response_token;
			tl = in.response_token_len;
		}
	}
	if (s->state == 0) {
		if (!tok || tl < 12 || memcmp(tok, "NTLMSSP", 8) != 0 || smb_le32(tok + 8) != 1) {
			s->used = false;
			rsp_status(r, STATUS_LOGON_FAILURE);
			return;
		}
		uint8_t chal[160];
		size_t cl = ntlm_challenge(s->challenge, chal);
		ssize_t n = spnego_encode_resp(r->body + 8, sizeof(r->body) - 8,
		                               SPNEGO_ACCEPT_INCOMPLETE, spnego_oid_ntlmssp,
		                               sizeof(spnego_oid_ntlmssp), chal, cl, NULL, 0);
		s->state = 1;
		r->status = STATUS_MORE_PROCESSING_REQUIRED;
		memset(r->body, 0, 8);
		smb_put_le16(r->body, 9);
		smb_put_le16(r->body + 4, HDR + 8);
		smb_put_le16(r->body + 6, (uint16_t)n);
		r->body_len = 8 + (size_t)n;
		r->preauth = 2;
		return;
	}
	uint8_t key[16];
	if (s->state != 1 || !tok || ntlm_verify(s, tok, tl, key) != 0) {
		s->used = false;
		rsp_status(r, STATUS_LOGON_FAILURE);
		return;
	}
	if (s->binding) {
		bind_finish(p, s);
	} else {
		static const uint8_t label[] = "SMBSigningKey";
		smb_kdf(key, 16, label, sizeof(label), s->preauth, 64, s->signing_key, 16);
		memcpy(s->sess_signing_key, s->signing_key, 16);
		memcpy(s->session_key, key, 16);
		s->have_key = true;
		s->state = 2;
		p->st.sessions++;
	}
	ssize_t n = spnego_encode_resp(r->body + 8, sizeof(r->body) - 8, SPNEGO_ACCEPT_COMPLETED,
	                               NULL, 0, NULL, 0, NULL, 0);
	r->status = STATUS_SUCCESS;
	memset(r->body, 0, 8);
	smb_put_le16(r->body, 9);
	smb_put_le16(r->body + 4, HDR + 8);
	smb_put_le16(r->body + 6, (uint16_t)n);
	r->body_len = 8 + (size_t)n;
}

static void tree_connect(struct frame *f, struct psess *s, struct rsp *r)
{
	uint16_t off = f->blen >= 8 ? smb_le16(f->b + 4) : 0,
	         len = f->blen >= 8 ? smb_le16(f->b + 6) : 0;
	char path[256];
	if (!off || off > f->len || len > f->len - off ||
	    smb_utf16le_to_utf8(f->pdu + off, len, path, sizeof(path)) < 0) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	const char *share = strrchr(path, '\\');
	share = share ? share + 1 : path;
	if (strcasecmp(share, PEER_SHARE) != 0) {
		rsp_status(r, STATUS_BAD_NETWORK_NAME);
		return;
	}
	s->tree_id = ++f->p->next_tree;
	sess_set_tree(f->p, s->id, s->tree_id);
	r->tree_id = s->tree_id;
	memset(r->body, 0, 16);
	smb_put_le16(r->body, 16);
	r->body[2] = SMB2_SHARE_TYPE_DISK;
	smb_put_le32(r->body + 12, 0x001F01FF);
	r->body_len = 16;
	r->status = STATUS_SUCCESS;
}

/* Append a create context (name: 4 characters) to the CREATE response
 * in r (its contexts end the body). */
static void create_ctx_add(struct rsp *r, const char *name, const void *data, uint32_t dlen)
{
	uint8_t *b = r->body;
	uint32_t coff = smb_le32(b + 80);
	size_t at = coff ? r->body_len : 88;
	at = (at + 7) & ~(size_t)7;
	if (coff) {
		size_t o = coff - HDR;
		while (smb_le32(b + o))
			o += smb_le32(b + o);
		smb_put_le32(b + o, (uint32_t)(at - o)); /* Next of the last one */
	} else {
		smb_put_le32(b + 80, HDR + 88);
	}
	uint8_t *c = b + at;
	memset(c, 0, 24 + dlen);
	smb_put_le16(c + 4, 16); /* NameOffset */
	smb_put_le16(c + 6, 4);
	smb_put_le16(c + 10, 24); /* DataOffset */
	smb_put_le32(c + 12, dlen);
	memcpy(c + 16, name, 4);
	memcpy(c + 24, data, dlen);
	r->body_len = at + 24 + dlen;
	smb_put_le32(b + 84, (uint32_t)(r->body_len - (smb_le32(b + 80) - HDR)));
}

static void create_rsp(struct frame *f, struct rsp *r, int oi, uint8_t oplock, bool dh2q)
{
	struct popen *o = &f->p->opens[oi];
	struct node *n = &f->p->nodes[o->node];
	uint8_t *b = r->body;
	memset(b, 0, 89);
	smb_put_le16(b, 89);
	b[2] = oplock;
	smb_put_le32(b + 4, o->action);
	for (int i = 0; i < 4; i++)
		smb_put_le64(b + 8 + 8 * i, n->mtime);
	smb_put_le64(b + 40, (n->len + 4095) & ~(size_t)4095);
	smb_put_le64(b + 48, n->len);
	smb_put_le32(b + 56, n->is_dir ? FILE_ATTRIBUTE_DIRECTORY : FILE_ATTRIBUTE_ARCHIVE);
	smb_put_le64(b + 64, o->pid);
	smb_put_le64(b + 72, o->vid);
	r->body_len = 89;
	if (dh2q) {
		uint8_t d[8] = {0};
		smb_put_le32(d, 60000); /* Timeout */
		create_ctx_add(r, "DH2Q", d, sizeof(d));
	}
	r->status = STATUS_SUCCESS;
	f->last_fid = oi;
}

/* ---- leases ([MS-SMB2] 3.3.5.9.8, 3.3.4.7, 3.3.5.22.2) --------------------------------- */

/* Grant what an RqLs asks (R|W|H at most; R|H on a directory): the CREATE
 * response says OPLOCK_LEVEL_LEASE and carries the lease context back (v2,
 * epoch 1, when asked with v2). */
static void lease_grant(struct peer *p, struct rsp *r, struct popen *op, const uint8_t *rqls,
                        uint32_t len)
{
	bool dir = p->nodes[op->node].is_dir;
	op->lease = true;
	memcpy(op->lease_key, rqls, 16);
	op->lease_state =
	    smb_le32(rqls + 16) &
	    (dir ? SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING : SMB2_LEASE_RWH);
	p->st.leases_granted++;
	uint8_t ctx[SMB2_RQLS_V2_LEN] = {0};
	uint32_t n = len >= SMB2_RQLS_V2_LEN ? SMB2_RQLS_V2_LEN : SMB2_RQLS_V1_LEN;
	memcpy(ctx, op->lease_key, 16);
	smb_put_le32(ctx + 16, op->lease_state);
	if (n == SMB2_RQLS_V2_LEN)
		smb_put_le16(ctx + 48, 1); /* Epoch */
	r->body[2] = SMB2_OPLOCK_LEVEL_LEASE;
	create_ctx_add(r, "RqLs", ctx, n);
}

/* The lease break acknowledgment (OPLOCK_BREAK with StructureSize 36): the
 * lease must be breaking, to at most the state it is broken to. */
static void lease_break_ack(struct frame *f, struct rsp *r)
{
	struct peer *p = f->p;
	if (f->blen < SMB2_LEASE_BREAK_ACK_LEN || smb_le16(f->b) != SMB2_LEASE_BREAK_ACK_LEN) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	const uint8_t *key = f->b + 8;
	uint32_t state = smb_le32(f->b + 24);
	struct popen *o = NULL;
	for (int i = 0; i < MAX_OPENS && !o; i++)
		if (p->opens[i].used && p->opens[i].lease &&
		    !memcmp(p->opens[i].lease_key, key, 16))
			o = &p->opens[i];
	if (!o || !o->breaking) {
		rsp_status(r, o ? STATUS_UNSUCCESSFUL : STATUS_OBJECT_NAME_NOT_FOUND);
		return;
	}
	if (state & ~o->break_to) {
		rsp_status(r, STATUS_REQUEST_NOT_ACCEPTED);
		return;
	}
	o->breaking = false;
	o->lease_state = state;
	memcpy(p->last_ack_key, key, 16);
	p->last_ack_state = state;
	p->st.lease_acks++;
	memset(r->body, 0, SMB2_LEASE_BREAK_ACK_LEN);
	smb_put_le16(r->body, SMB2_LEASE_BREAK_ACK_LEN);
	memcpy(r->body + 8, key, 16);
	smb_put_le32(r->body + 24, state);
	r->body_len = SMB2_LEASE_BREAK_ACK_LEN;
	r->status = STATUS_SUCCESS;
}

static int open_new(struct peer *p, int node, int conn)
{
	for (int i = 0; i < MAX_OPENS; i++) {
		struct popen *o = &p->opens[i];
		if (o->used)
			continue;
		memset(o, 0, sizeof(*o));
		o->used = true;
		o->node = node;
		o->conn = conn;
		p->next_fid++;
		o->pid = 0x100 + p->next_fid;
		o->vid = 0x200 + p->next_fid;
		return i;
	}
	return -1;
}

static void create(struct frame *f, struct rsp *r)
{
	struct peer *p = f->p;
	const uint8_t *b = f->b;
	if (f->blen < 56) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	uint8_t oplock = b[3];
	uint32_t disp = smb_le32(b + 36), opts = smb_le32(b + 40);
	uint16_t noff = smb_le16(b + 44), nlen = smb_le16(b + 46);
	uint32_t coff = smb_le32(b + 48), clen = smb_le32(b + 52);
	char path[PATH_MAX_];
	if ((nlen && (noff > f->len || nlen > f->len - noff)) || coff > f->len ||
	    clen > f->len - coff ||
	    (nlen && utf16_to_path(f->pdu + noff, nlen, path, sizeof(path)) < 0)) {
		rsp_status(r, STATUS_OBJECT_NAME_INVALID);
		return;
	}
	if (!nlen)
		path[0] = 0;
	const uint8_t *dh2q = NULL, *dh2c = NULL, *rqls = NULL;
	bool qfid = false;
	uint32_t o = 0, rqls_len = 0;
	char name[5];
	const uint8_t *data;
	uint32_t dlen;
	while (clen && smb2_create_ctx_next(f->pdu + coff, clen, &o, name, &data, &dlen) == 1) {
		if (strcmp(name, "DH2Q") == 0 && dlen >= 32)
			dh2q = data;
		else if (strcmp(name, "DH2C") == 0 && dlen >= 32)
			dh2c = data;
		else if (strcmp(name, "QFid") == 0)
			qfid = true;
		else if (strcmp(name, "RqLs") == 0 && dlen >= SMB2_RQLS_V1_LEN) {
			rqls = data;
			rqls_len = dlen;
		}
	}
	if (dh2c) {
		int oi = open_find(p, smb_le64(dh2c), smb_le64(dh2c + 8));
		if (oi < 0 || !p->opens[oi].durable || memcmp(p->opens[oi].guid, dh2c + 16, 16)) {
			rsp_status(r, STATUS_OBJECT_NAME_NOT_FOUND);
			return;
		}
		p->opens[oi].conn = f->pc->number;
		p->opens[oi].session_id = f->h.session_id;
		p->opens[oi].action = FILE_OPENED;
		p->st.durable_reconnects++;
		create_rsp(f, r, oi, SMB2_OPLOCK_LEVEL_BATCH, true);
		return;
	}
	if (dh2q && (f->h.flags & SMB2_FLAGS_REPLAY_OPERATION)) {
		/* [MS-SMB2] 3.3.5.9.10: the open the first try made */
		for (int i = 0; i < MAX_OPENS; i++) {
			if (p->opens[i].used && p->opens[i].durable &&
			    memcmp(p->opens[i].guid, dh2q + 16, 16) == 0) {
				p->st.replayed_creates++;
				p->opens[i].conn = f->pc->number;
				p->opens[i].session_id = f->h.session_id;
				create_rsp(f, r, i, SMB2_OPLOCK_LEVEL_BATCH, true);
				return;
			}
		}
	}
	char parent[PATH_MAX_];
	parent_of(path, parent, sizeof(parent));
	int pn = node_find(p, parent);
	if (path[0] && (pn < 0 || !p->nodes[pn].is_dir)) {
		rsp_status(r, STATUS_OBJECT_PATH_NOT_FOUND);
		return;
	}
	int ni = node_find(p, path);
	uint32_t action = FILE_OPENED;
	if (ni < 0) {
		if (disp == FILE_OPEN || disp == FILE_OVERWRITE) {
			rsp_status(r, STATUS_OBJECT_NAME_NOT_FOUND);
			return;
		}
		ni = node_add(p, path, opts & FILE_DIRECTORY_FILE);
		if (ni < 0) {
			rsp_status(r, STATUS_ACCESS_DENIED);
			return;
		}
		p->st.creates++;
		action = FILE_CREATED;
	} else {
		struct node *n = &p->nodes[ni];
		if (disp == FILE_CREATE) {
			rsp_status(r, STATUS_OBJECT_NAME_COLLISION);
			return;
		}
		if ((opts & FILE_DIRECTORY_FILE) && !n->is_dir) {
			rsp_status(r, STATUS_NOT_A_DIRECTORY);
			return;
		}
		if ((opts & FILE_NON_DIRECTORY_FILE) && n->is_dir) {
			rsp_status(r, STATUS_FILE_IS_A_DIRECTORY);
			return;
		}
		if ((disp == FILE_SUPERSEDE || disp == FILE_OVERWRITE ||
		     disp == FILE_OVERWRITE_IF) &&
		    !n->is_dir) {
			free(n->data);
			n->data = NULL;
			n->len = 0;
			action = disp == FILE_SUPERSEDE ? FILE_SUPERSEDED : 3;
		}
	}
	int oi = open_new(p, ni, f->pc->number);
	if (oi < 0) {
		rsp_status(r, STATUS_ACCESS_DENIED);
		return;
	}
	struct popen *op = &p->opens[oi];
	op->session_id = f->h.session_id;
	op->action = action;
	op->delete_on_close = opts & FILE_DELETE_ON_CLOSE;
	op->durable = dh2q && p->durable && oplock == SMB2_OPLOCK_LEVEL_BATCH;
	if (dh2q)
		memcpy(op->guid, dh2q + 16, 16);
	create_rsp(f, r, oi, op->durable ? SMB2_OPLOCK_LEVEL_BATCH : 0, op->durable);
	if (rqls && p->leasing && oplock == SMB2_OPLOCK_LEVEL_LEASE) {
		if (rqls_len < SMB2_RQLS_V2_LEN)
			p->st.lease_v1_asks++;
		else if (smb_le32(rqls + 20) & SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET)
			p->st.lease_parent_keyed++;
		lease_grant(p, r, op, rqls, rqls_len);
	}
	if (qfid && p->qfid) {
		uint8_t d[SMB2_QFID_RSP_LEN] = {0};
		smb_put_le64(d, p->nodes[ni].file_id); /* DiskFileId; VolumeId 0 */
		create_ctx_add(r, "QFid", d, sizeof(d));
	}
}

static void close_file(struct frame *f, struct rsp *r)
{
	int oi = req_open(f, 8);
	if (oi < 0) {
		rsp_status(r, STATUS_FILE_CLOSED);
		return;
	}
	uint16_t flags = smb_le16(f->b + 2);
	struct node *n = &f->p->nodes[f->p->opens[oi].node];
	uint8_t *b = r->body;
	memset(b, 0, 60);
	smb_put_le16(b, 60);
	smb_put_le16(b + 2, flags & 1);
	if (flags & 1) {
		for (int i = 0; i < 4; i++)
			smb_put_le64(b + 8 + 8 * i, n->mtime);
		smb_put_le64(b + 40, (n->len + 4095) & ~(size_t)4095);
		smb_put_le64(b + 48, n->len);
		smb_put_le32(b + 56, n->is_dir ? FILE_ATTRIBUTE_DIRECTORY : FILE_ATTRIBUTE_ARCHIVE);
	}
	r->body_len = 60;
	r->status = STATUS_SUCCESS;
	open_close(f->p, oi);
}

static size_t put_basic(uint8_t *b, const struct node *n)
{
	for (int i = 0; i < 4; i++)
		smb_put_le64(b + 8 * i, n->mtime);
	smb_put_le32(b + 32, n->is_dir ? FILE_ATTRIBUTE_DIRECTORY : FILE_ATTRIBUTE_ARCHIVE);
	smb_put_le32(b + 36, 0);
	return 40;
}

static size_t put_standard(uint8_t *b, const struct node *n, bool delete_pending)
{
	smb_put_le64(b, (n->len + 4095) & ~(size_t)4095);
	smb_put_le64(b + 8, n->len);
	smb_put_le32(b + 16, 1);
	b[20] = delete_pending;
	b[21] = n->is_dir;
	smb_put_le16(b + 22, 0);
	return 24;
}

static void query_info(struct frame *f, struct rsp *r)
{
	if (f->blen < 40) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	uint8_t type = f->b[2], cls = f->b[3];
	uint32_t outlen = smb_le32(f->b + 4);
	int oi = req_open(f, 24);
	if (oi < 0) {
		rsp_status(r, STATUS_FILE_CLOSED);
		return;
	}
	struct popen *o = &f->p->opens[oi];
	const struct node *n = &f->p->nodes[o->node];
	uint8_t buf[400];
	size_t l = 0;
	memset(buf, 0, sizeof(buf));
	if (type != SMB2_0_INFO_FILE) {
		rsp_status(r, STATUS_NOT_SUPPORTED);
		return;
	}
	switch (cls) {
	case FileAllInformation: {
		l = put_basic(buf, n);
		l += put_standard(buf + l, n, o->delete_on_close);
		smb_put_le64(buf + l, n->file_id);
		l += 8;
		l += 4;                            /* EaSize */
		smb_put_le32(buf + l, 0x001F01FF); /* AccessFlags */
		l += 4 + 8 + 4 + 4;                /* position, mode, alignment */
		char wn[PATH_MAX_ + 2];
		snprintf(wn, sizeof(wn), "\\%s", n->path);
		ssize_t nl =
		    smb_utf8_to_utf16le(wn, strlen(wn), buf + l + 4, sizeof(buf) - l - 4, true);
		smb_put_le32(buf + l, (uint32_t)(nl < 0 ? 0 : nl));
		l += 4 + (size_t)(nl < 0 ? 0 : nl);
		break;
	}
	case FileBasicInformation:
		l = put_basic(buf, n);
		break;
	case FileStandardInformation:
		l = put_standard(buf, n, o->delete_on_close);
		break;
	case FileInternalInformation:
		smb_put_le64(buf, n->file_id);
		l = 8;
		break;
	case FileNetworkOpenInformation:
		for (int i = 0; i < 4; i++)
			smb_put_le64(buf + 8 * i, n->mtime);
		smb_put_le64(buf + 32, (n->len + 4095) & ~(size_t)4095);
		smb_put_le64(buf + 40, n->len);
		smb_put_le32(buf + 48,
		             n->is_dir ? FILE_ATTRIBUTE_DIRECTORY : FILE_ATTRIBUTE_ARCHIVE);
		l = 56;
		break;
	default:
		rsp_status(r, STATUS_INVALID_INFO_CLASS);
		return;
	}
	r->status = STATUS_SUCCESS;
	if (l > outlen) {
		l = outlen;
		r->status = STATUS_BUFFER_OVERFLOW;
	}
	memset(r->body, 0, 8);
	smb_put_le16(r->body, 9);
	smb_put_le16(r->body + 2, HDR + 8);
	smb_put_le32(r->body + 4, (uint32_t)l);
	memcpy(r->body + 8, buf, l);
	r->body_len = 8 + (l ? l : 1);
}

static void do_rename(struct peer *p, const char *src, const char *dst)
{
	size_t l = strlen(src);
	for (int i = 0; i < MAX_NODES; i++) {
		struct node *n = &p->nodes[i];
		if (!n->used || strncmp(n->path, src, l) != 0 || (n->path[l] && n->path[l] != '/'))
			continue;
		char np[PATH_MAX_ * 2];
		snprintf(np, sizeof(np), "%s%s", dst, n->path + l);
		if (strlen(np) >= sizeof(n->path))
			np[sizeof(n->path) - 1] = 0;
		memcpy(n->path, np, strlen(np) + 1);
	}
	p->st.renames++;
}

static void set_info(struct frame *f, struct rsp *r)
{
	struct peer *p = f->p;
	if (f->blen < 32) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	uint8_t type = f->b[2], cls = f->b[3];
	uint32_t blen = smb_le32(f->b + 4);
	uint16_t boff = smb_le16(f->b + 8);
	int oi = req_open(f, 16);
	if (oi < 0) {
		rsp_status(r, STATUS_FILE_CLOSED);
		return;
	}
	if (boff > f->len || blen > f->len - boff || type != SMB2_0_INFO_FILE) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	const uint8_t *buf = f->pdu + boff;
	struct popen *o = &p->opens[oi];
	struct node *n = &p->nodes[o->node];
	r->status = STATUS_SUCCESS;
	memset(r->body, 0, 2);
	smb_put_le16(r->body, 2);
	r->body_len = 2;
	switch (cls) {
	case FileEndOfFileInformation: {
		uint64_t size = blen >= 8 ? smb_le64(buf) : 0;
		if (!n->is_dir && size <= (1u << 24)) {
			n->data = realloc(n->data, size ? size : 1);
			if (size > n->len)
				memset(n->data + n->len, 0, size - n->len);
			n->len = size;
			n->mtime = ++p->clock;
		}
		return;
	}
	case FileBasicInformation:
		return;
	case FileDispositionInformation:
		if (blen >= 1 && buf[0] && n->is_dir && has_children(p, n->path)) {
			rsp_status(r, STATUS_DIRECTORY_NOT_EMPTY);
			return;
		}
		o->delete_on_close = blen >= 1 && buf[0];
		return;
	case FileRenameInformation: {
		if (blen < 20 || smb_le32(buf + 16) > blen - 20) {
			rsp_status(r, STATUS_INVALID_PARAMETER);
			return;
		}
		char to[PATH_MAX_];
		if (utf16_to_path(buf + 20, smb_le32(buf + 16), to, sizeof(to)) < 0) {
			rsp_status(r, STATUS_OBJECT_NAME_INVALID);
			return;
		}
		int t = node_find(p, to);
		if (t >= 0 && !buf[0]) {
			rsp_status(r, STATUS_OBJECT_NAME_COLLISION);
			return;
		}
		if (t >= 0 && t != o->node)
			node_del(p, t);
		char from[PATH_MAX_];
		snprintf(from, sizeof(from), "%s", n->path);
		do_rename(p, from, to);
		return;
	}
	default:
		rsp_status(r, STATUS_INVALID_INFO_CLASS);
	}
}

/* ---- READ and WRITE, inline or by (emulated) RDMA ------------------------------------ */

/* The memory the Buffer Descriptor V1 of a READ/WRITE with channel names,
 * as an RNIC and a server would check it: a live token of this connection,
 * for the I/O's direction and Channel, covering the descriptor, which
 * covers need bytes.  NULL after a violation. */
static uint8_t *rdma_target(struct frame *f, uint32_t channel, uint16_t ci_off, uint16_t ci_len,
                            enum smb_io_dir dir, size_t need)
{
	struct peer *p = f->p;
	struct fake *fk = f->pc->fake;
	const char *what = dir == SMB_IO_SERVER_WRITES ? "READ" : "WRITE";
	if (!fk || !fk->rdma) {
		violation(p, "conn %d: %s with Channel %u on a connection without SMB Direct",
		          f->pc->number, what, channel);
		return NULL;
	}
	if (channel != SMB2_CHANNEL_RDMA_V1 && channel != SMB2_CHANNEL_RDMA_V1_INVALIDATE) {
		violation(p, "conn %d: %s with unknown Channel %u", f->pc->number, what, channel);
		return NULL;
	}
	if (ci_len != 16 || ci_off < HDR + 48 || ci_off > f->len || ci_len > f->len - ci_off) {
		violation(p, "conn %d: %s channel info at %u, %u bytes: not one descriptor",
		          f->pc->number, what, ci_off, ci_len);
		return NULL;
	}
	const uint8_t *d = f->pdu + ci_off;
	uint64_t addr = smb_le64(d);
	uint32_t rkey = smb_le32(d + 8), len = smb_le32(d + 12);
	struct ptoken *k = NULL;
	for (int i = 0; i < p->ntokens && !k; i++)
		if (p->tokens[i]->f == fk && p->tokens[i]->rkey == rkey)
			k = p->tokens[i];
	if (!k || k->put) {
		violation(p, "conn %d: %s names token %#x, %s", f->pc->number, what, rkey,
		          k ? "put already" : "not a live token of this connection");
		return NULL;
	}
	if (k->dir != dir || k->channel != channel) {
		violation(p,
		          "conn %d: %s with Channel %u names token %#x of the other direction or "
		          "Channel %u",
		          f->pc->number, what, channel, rkey, k->channel);
		return NULL;
	}
	uintptr_t lo = (uintptr_t)k->addr;
	if (addr < lo || addr - lo > k->len || len > k->len - (addr - lo)) {
		violation(p, "conn %d: %s descriptor %#llx+%u outside its token's memory",
		          f->pc->number, what, (unsigned long long)addr, len);
		return NULL;
	}
	if (need > len) {
		violation(p, "conn %d: %s of %zu bytes with a %u-byte descriptor", f->pc->number,
		          what, need, len);
		return NULL;
	}
	return k->addr + (addr - lo);
}

/* A READ/WRITE of length bytes above the max NEGOTIATE said: refused, and
 * a violation. */
static bool too_long(struct frame *f, struct rsp *r, uint32_t length, uint32_t max)
{
	if (length <= max)
		return false;
	violation(f->p, "conn %d: %s of %u bytes above the %u NEGOTIATE allows", f->pc->number,
	          smb2_command_str(f->h.command), length, max);
	rsp_status(r, STATUS_INVALID_PARAMETER);
	return true;
}

/* The hook's n if it is action a, else -1. */
static long hook_n(const struct frame *f, enum peer_action a)
{
	return f->hook && f->hook->action == a ? (long)f->hook->status : -1;
}

static void read_file(struct frame *f, struct rsp *r)
{
	int oi = f->blen >= 48 ? req_open(f, 16) : -1;
	if (oi < 0) {
		rsp_status(r, STATUS_FILE_CLOSED);
		return;
	}
	const struct node *n = &f->p->nodes[f->p->opens[oi].node];
	uint32_t length = smb_le32(f->b + 4);
	uint64_t offset = smb_le64(f->b + 8);
	uint32_t channel = smb_le32(f->b + 36);
	if (n->is_dir) {
		rsp_status(r, STATUS_INVALID_DEVICE_REQUEST);
		return;
	}
	if (too_long(f, r, length, f->p->max_read))
		return;
	uint8_t *dst = NULL;
	if (channel != SMB2_CHANNEL_NONE &&
	    !(dst = rdma_target(f, channel, smb_le16(f->b + 44), smb_le16(f->b + 46),
	                        SMB_IO_SERVER_WRITES, length))) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	f->p->st.reads++;
	size_t got = offset < n->len ? n->len - offset : 0;
	if (got > length)
		got = length;
	if (!got && length) {
		rsp_status(r, STATUS_END_OF_FILE);
		return;
	}
	memset(r->body, 0, 16);
	smb_put_le16(r->body, 17);
	r->body[2] = HDR + 16;
	r->body_len = 16;
	r->status = STATUS_SUCCESS;
	long extra = hook_n(f, PEER_READ_INLINE);
	if (dst && extra < 0) {
		/* RDMA-Write it, say how much in DataRemaining */
		long short_n = hook_n(f, PEER_RDMA_SHORT), over = hook_n(f, PEER_RDMA_OVERCLAIM);
		size_t moved = short_n >= 0 && (size_t)short_n < got ? (size_t)short_n : got;
		memcpy(dst, n->data + offset, moved);
		f->p->st.rdma_pushed += moved;
		smb_put_le32(r->body + 8, (uint32_t)(got + (over > 0 ? (size_t)over : 0)));
		return;
	}
	r->data = n->data + offset;
	r->data_len = got;
	if (extra > 0) {
		r->owned = calloc(1, got + (size_t)extra);
		memcpy(r->owned, r->data, got);
		r->data = r->owned;
		r->data_len = got + (size_t)extra;
	}
	smb_put_le32(r->body + 4, (uint32_t)r->data_len);
}

static void write_file(struct frame *f, struct rsp *r)
{
	int oi = f->blen >= 48 ? req_open(f, 16) : -1;
	if (oi < 0) {
		rsp_status(r, STATUS_FILE_CLOSED);
		return;
	}
	struct node *n = &f->p->nodes[f->p->opens[oi].node];
	uint16_t doff = smb_le16(f->b + 2);
	uint32_t length = smb_le32(f->b + 4);
	uint64_t offset = smb_le64(f->b + 8);
	uint32_t channel = smb_le32(f->b + 32);
	const uint8_t *src = f->pdu + doff;
	if (channel != SMB2_CHANNEL_NONE) {
		if (length) {
			violation(f->p, "conn %d: WRITE with Channel %u carries %u bytes inline",
			          f->pc->number, channel, length);
			rsp_status(r, STATUS_INVALID_PARAMETER);
			return;
		}
		length = smb_le32(f->b + 36); /* RemainingBytes: what to RDMA-Read */
		src = rdma_target(f, channel, smb_le16(f->b + 40), smb_le16(f->b + 42),
		                  SMB_IO_SERVER_READS, length);
		if (!src) {
			rsp_status(r, STATUS_INVALID_PARAMETER);
			return;
		}
	} else if (doff > f->len || length > f->len - doff) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	if (too_long(f, r, length, f->p->max_write))
		return;
	if (offset + length > (1u << 24)) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	size_t moved = length, said = length;
	if (channel != SMB2_CHANNEL_NONE) {
		long short_n = hook_n(f, PEER_RDMA_SHORT), over = hook_n(f, PEER_RDMA_OVERCLAIM);
		if (short_n >= 0 && (size_t)short_n < moved)
			moved = (size_t)short_n;
		if (over > 0)
			said += (size_t)over;
		f->p->st.rdma_pulled += moved;
	}
	f->p->st.writes++;
	if (offset + moved > n->len) {
		n->data = realloc(n->data, offset + moved);
		memset(n->data + n->len, 0, offset + moved - n->len);
		n->len = offset + moved;
	}
	if (moved)
		memcpy(n->data + offset, src, moved);
	n->mtime = ++f->p->clock;
	memset(r->body, 0, 16);
	smb_put_le16(r->body, 17);
	smb_put_le32(r->body + 4, (uint32_t)said);
	r->body_len = 16;
	r->status = STATUS_SUCCESS;
}

/* FSCTL_QUERY_NETWORK_INTERFACE_INFO's output ([MS-SMB2] 2.2.32.5): one
 * NETWORK_INTERFACE_INFO (152 bytes) per interface of peer_set_interfaces,
 * IfIndex 1, 2, ..., 10 Gb/s, no RSS or RDMA. */
static size_t put_interfaces(struct peer *p, uint8_t *out)
{
	enum { ENTRY = 152 };
	memset(out, 0, (size_t)p->nifaces * ENTRY);
	for (int i = 0; i < p->nifaces; i++) {
		uint8_t *e = out + (size_t)i * ENTRY;
		smb_put_le32(e, i + 1 < p->nifaces ? ENTRY : 0); /* Next */
		smb_put_le32(e + 4, (uint32_t)i + 1);            /* IfIndex */
		smb_put_le64(e + 16, 10000000000ull);            /* LinkSpeed */
		smb_put_le16(e + 24, 0x0002);                    /* Family: InterNetwork */
		memcpy(e + 28, &p->ifaces[i], 4);                /* network order */
	}
	return (size_t)p->nifaces * ENTRY;
}

/* IOCTL: FSCTL_QUERY_NETWORK_INTERFACE_INFO only (signed like every
 * response of a session with a key). */
static void ioctl_fsctl(struct frame *f, struct rsp *r)
{
	if (f->blen < 56) {
		rsp_status(r, STATUS_INVALID_PARAMETER);
		return;
	}
	uint32_t code = smb_le32(f->b + 4);
	if (code != FSCTL_QUERY_NETWORK_INTERFACE_INFO) {
		rsp_status(r, STATUS_NOT_SUPPORTED);
		return;
	}
	f->p->st.netif_queries++;
	uint8_t *b = r->body;
	memset(b, 0, 48);
	smb_put_le16(b, 49);
	smb_put_le32(b + 4, code);
	memcpy(b + 8, f->b + 8, 16);    /* FileId */
	smb_put_le32(b + 24, HDR + 48); /* InputOffset */
	smb_put_le32(b + 32, HDR + 48); /* OutputOffset */
	size_t n = put_interfaces(f->p, b + 48);
	smb_put_le32(b + 36, (uint32_t)n); /* OutputCount */
	r->body_len = 48 + (n ? n : 1);
	r->status = STATUS_SUCCESS;
}

static void simple_ok(struct rsp *r)
{
	memset(r->body, 0, 4);
	smb_put_le16(r->body, 4);
	r->body_len = 4;
	r->status = STATUS_SUCCESS;
}

static void dispatch(struct frame *f, struct rsp *r)
{
	uint16_t cmd = f->h.command;
	r->session_id = f->h.session_id;
	r->tree_id = f->h.tree_id;
	if (cmd == SMB2_NEGOTIATE) {
		negotiate(f, r);
		return;
	}
	if (cmd == SMB2_SESSION_SETUP) {
		session_setup(f, r);
		return;
	}
	if (cmd == SMB2_ECHO) {
		simple_ok(r);
		return;
	}
	struct psess *s = sess_find(f->pc, f->h.session_id);
	r->sess = s;
	if (!s || s->state != 2) {
		rsp_status(r, STATUS_USER_SESSION_DELETED);
		return;
	}
	if (cmd == SMB2_LOGOFF) {
		simple_ok(r);
		sess_end(f->p, s->id); /* signed with the key it still has */
		return;
	}
	if (cmd == SMB2_TREE_CONNECT) {
		tree_connect(f, s, r);
		return;
	}
	if (!s->tree_id || f->h.tree_id != s->tree_id) {
		rsp_status(r, STATUS_NETWORK_NAME_DELETED);
		return;
	}
	if (f->related && f->last_status != STATUS_SUCCESS && cmd != SMB2_CREATE &&
	    f->last_fid < 0) {
		rsp_status(r, f->last_status); /* [MS-SMB2] 3.3.5.2.7.2 */
		return;
	}
	switch (cmd) {
	case SMB2_TREE_DISCONNECT:
		sess_set_tree(f->p, s->id, 0);
		simple_ok(r);
		return;
	case SMB2_CREATE:
		create(f, r);
		return;
	case SMB2_CLOSE:
		close_file(f, r);
		return;
	case SMB2_FLUSH:
	case SMB2_LOCK: /* granted, whatever the range (a hook refuses one) */
		if (req_open(f, 8) < 0)
			rsp_status(r, STATUS_FILE_CLOSED);
		else
			simple_ok(r);
		return;
	case SMB2_READ:
		read_file(f, r);
		return;
	case SMB2_WRITE:
		write_file(f, r);
		return;
	case SMB2_QUERY_INFO:
		query_info(f, r);
		return;
	case SMB2_SET_INFO:
		set_info(f, r);
		return;
	case SMB2_IOCTL:
		ioctl_fsctl(f, r);
		return;
	case SMB2_OPLOCK_BREAK:
		lease_break_ack(f, r);
		return;
	default:
		rsp_status(r, STATUS_NOT_SUPPORTED);
	}
}

/* Fill rec's path / info class / disposition (hook predicates). */
static void annotate(struct frame *f, struct peer_rec *rec)
{
	rec->info_class = -1;
	rec->disposition = -1;
	rec->path[0] = 0;
	uint16_t cmd = f->h.command;
	rec->binding =
	    cmd == SMB2_SESSION_SETUP && f->blen >= 3 && (f->b[2] & SMB2_SESSION_FLAG_BINDING);
	if (cmd == SMB2_CREATE && f->blen >= 56) {
		uint16_t noff = smb_le16(f->b + 44), nlen = smb_le16(f->b + 46);
		rec->disposition = (int)smb_le32(f->b + 36);
		if (nlen && noff <= f->len && nlen <= f->len - noff)
			utf16_to_path(f->pdu + noff, nlen, rec->path, sizeof(rec->path));
		return;
	}
	if ((cmd == SMB2_SET_INFO || cmd == SMB2_QUERY_INFO) && f->blen >= 4)
		rec->info_class = f->b[3];
	if ((cmd == SMB2_READ || cmd == SMB2_WRITE) && f->blen >= 48) {
		bool rd = cmd == SMB2_READ;
		rec->channel = smb_le32(f->b + (rd ? 36 : 32));
		rec->length = smb_le32(f->b + 4);
		if (!rd && rec->channel != SMB2_CHANNEL_NONE)
			rec->length = smb_le32(f->b + 36);
		uint16_t ci_off = smb_le16(f->b + (rd ? 44 : 40)),
		         ci_len = smb_le16(f->b + (rd ? 46 : 42));
		if (ci_len >= 16 && ci_off <= f->len && ci_len <= f->len - ci_off) {
			rec->rdma_offset = smb_le64(f->pdu + ci_off);
			rec->rdma_length = smb_le32(f->pdu + ci_off + 12);
		}
	}
	int off = smb2_req_fileid_offset(cmd);
	int oi = off >= 0 ? req_open(f, (size_t)off) : -1;
	if (oi >= 0)
		snprintf(rec->path, sizeof(rec->path), "%s",
		         f->p->nodes[f->p->opens[oi].node].path);
}

static void lease_break_send(struct peer *p, struct popen *o, uint32_t new_state);

/* PEER_BREAK_PARENT: break to none the lease of an open of path's parent
 * directory (caller holds p->m). */
static void break_parent_lease(struct peer *p, const char *path)
{
	char parent[PATH_MAX_];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash)
		*slash = 0;
	else
		parent[0] = 0;
	int ni = node_find(p, parent);
	for (int i = 0; i < MAX_OPENS && ni >= 0; i++) {
		struct popen *o = &p->opens[i];
		if (o->used && o->lease && o->node == ni && !o->breaking && o->lease_state) {
			lease_break_send(p, o, 0);
			return;
		}
	}
}

static struct hook *hook_for(struct peer *p, const struct peer_rec *rec)
{
	for (int i = 0; i < p->nhooks; i++) {
		struct hook *h = &p->hooks[i];
		if (!h->armed || h->m.command != rec->command)
			continue;
		if (h->m.info_class >= 0 && h->m.info_class != rec->info_class)
			continue;
		if (h->m.disposition >= 0 && h->m.disposition != rec->disposition)
			continue;
		if (h->m.replay_only && !(rec->flags & SMB2_FLAGS_REPLAY_OPERATION))
			continue;
		if (h->m.path && strcmp(h->m.path, rec->path) != 0)
			continue;
		h->armed = false;
		h->fired++;
		return h;
	}
	return NULL;
}

/* The connection is gone, and its channels with it.  An open whose
 * session has another channel moves there; the others end with their
 * session but the durable ones (kept for a reconnect). */
static void conn_gone(struct peer *p, struct pconn *pc)
{
	if (pc->closed)
		return;
	pc->closed = true;
	for (int i = 0; i < MAX_OPENS; i++) {
		struct popen *o = &p->opens[i];
		if (!o->used || o->conn != pc->number)
			continue;
		const struct psess *to = sess_elsewhere(p, o->session_id, pc);
		if (to)
			o->conn = sess_conn_number(p, to);
		else if (o->durable)
			o->conn = 0;
		else
			open_close(p, i);
	}
	memset(pc->sess, 0, sizeof(pc->sess));
}

/* The key request f must be signed with (NULL: none known): its channel's,
 * or for a binding SESSION_SETUP the session's, Session.SigningKey
 * ([MS-SMB2] 3.3.5.5.2), which the channel has no key of its own before. */
static const uint8_t *request_key(struct peer *p, const struct frame *f, const struct psess *s)
{
	bool binding = f->h.command == SMB2_SESSION_SETUP && f->blen >= 3 &&
	               (f->b[2] & SMB2_SESSION_FLAG_BINDING);
	if (binding && s)
		return s->sess_signing_key;
	if (binding) {
		const struct psess *o = sess_elsewhere(p, f->h.session_id, f->pc);
		return o ? o->sess_signing_key : NULL;
	}
	return s && s->have_key ? s->signing_key : NULL;
}

/* A growing output buffer. */
struct obuf {
	uint8_t *b;
	size_t len, cap;
};
static uint8_t *obuf_grow(struct obuf *o, size_t n)
{
	if (o->len + n > o->cap) {
		size_t c = o->cap ? o->cap : 4096;
		while (c < o->len + n)
			c *= 2;
		o->b = realloc(o->b, c);
		o->cap = c;
	}
	uint8_t *r = o->b + o->len;
	memset(r, 0, n);
	o->len += n;
	return r;
}

static void rsps_free(struct rsp *rs, int n)
{
	for (int i = 0; i < n; i++)
		free(rs[i].owned);
	free(rs);
}

/* One message from the client: its answer into out (out->len 0: none).
 * *kill: close the connection after it.  Called with p->m held. */
static void peer_message(struct peer *p, struct pconn *pc, const uint8_t *msg, size_t len,
                         struct obuf *out, bool *kill)
{
	struct rsp *rs = calloc(MAX_PDUS, sizeof(*rs));
	size_t starts[MAX_PDUS];
	struct smb2_hdr hs[MAX_PDUS];
	int n = 0;
	struct frame f = {.p = p, .pc = pc, .last_fid = -1, .last_status = STATUS_SUCCESS};
	size_t off = 0;
	*kill = false;
	while (n < MAX_PDUS && len - off >= HDR && smb_le32(msg + off) == SMB2_PROTOCOL_ID) {
		uint32_t next = smb_le32(msg + off + 20);
		size_t end = next ? off + next : len;
		if (end > len || (next && next < HDR)) {
			violation(p, "conn %d: bad NextCommand %u", pc->number, next);
			end = len;
			next = 0;
		}
		f.pdu = msg + off;
		f.len = end - off;
		smb2_hdr_decode(f.pdu, f.len, &f.h);
		f.b = f.pdu + HDR;
		f.blen = f.len - HDR;
		f.related = f.h.flags & SMB2_FLAGS_RELATED_OPERATIONS;
		f.bad_sig = false;
		if (!f.related) {
			f.last_fid = -1;
			f.last_status = STATUS_SUCCESS;
		}
		struct peer_rec rec = {.conn = pc->number,
		                       .command = f.h.command,
		                       .flags = f.h.flags,
		                       .channel_sequence = (uint16_t)(f.h.status & 0xffff),
		                       .message_id = f.h.message_id,
		                       .session_id = f.h.session_id,
		                       .status = 0xFFFFFFFFu};
		annotate(&f, &rec);
		struct hook *h = hook_for(p, &rec);
		rec.hooked = h != NULL;
		f.hook = h;
		struct rsp *r = &rs[n];
		/* signed requests must verify with the channel's key */
		struct psess *s = sess_find(pc, f.h.session_id);
		const uint8_t *key = request_key(p, &f, s);
		if ((f.h.flags & SMB2_FLAGS_SIGNED) && key) {
			uint8_t *copy = malloc(f.len), sig[16];
			memcpy(copy, f.pdu, f.len);
			memset(copy + 48, 0, 16);
			struct iovec iov = {copy, f.len};
			smb_sign_pdu(SMB2_SIGNING_AES_CMAC, key, &iov, 1, sig);
			f.bad_sig = memcmp(sig, f.pdu + 48, 16) != 0;
			if (f.bad_sig)
				violation(p, "conn %d: %s MessageId %llu: bad signature",
				          pc->number, smb2_command_str(f.h.command),
				          (unsigned long long)f.h.message_id);
			free(copy);
		} else if (s && s->state == 2 && f.h.command != SMB2_CANCEL &&
		           f.h.command != SMB2_NEGOTIATE) {
			violation(p, "conn %d: %s MessageId %llu unsigned on a signed session",
			          pc->number, smb2_command_str(f.h.command),
			          (unsigned long long)f.h.message_id);
		}
		if (f.h.command == SMB2_CANCEL) {
			if (p->nrecs < MAX_RECS)
				p->recs[p->nrecs++] = rec;
		} else {
			r->session_id = f.h.session_id;
			r->tree_id = f.h.tree_id;
			if (h && h->action == PEER_STATUS) {
				rsp_status(r, h->status);
				r->sess = s;
			} else {
				if (h && h->action == PEER_BREAK_PARENT)
					break_parent_lease(p, rec.path);
				dispatch(&f, r);
			}
			if (f.h.command == SMB2_CREATE && r->status != STATUS_SUCCESS)
				f.last_fid = -1;
			f.last_status = r->status;
			bool silent = h && h->action == PEER_NO_REPLY;
			if (h && h->action == PEER_LOST_REPLY)
				*kill = true;
			else if (!silent)
				rec.status = r->status;
			if (p->nrecs < MAX_RECS)
				p->recs[p->nrecs++] = rec;
			if (silent) {
				free(r->owned);
				memset(r, 0, sizeof(*r));
			} else {
				hs[n] = f.h;
				n++;
			}
		}
		if (!next)
			break;
		off = end;
	}
	if (*kill) {
		conn_gone(p, pc);
		rsps_free(rs, n);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct rsp *r = &rs[i];
		if (i) {
			/* pad the previous to 8 and chain it */
			size_t pad = (8 - out->len % 8) % 8;
			obuf_grow(out, pad);
			smb_put_le32(out->b + starts[i - 1] + 20,
			             (uint32_t)(out->len - starts[i - 1]));
		}
		starts[i] = out->len;
		uint8_t *hb = obuf_grow(out, HDR + r->body_len + r->data_len);
		uint16_t credits = hs[i].credits ? hs[i].credits : 1;
		struct smb2_hdr h = {
		    .credit_charge = hs[i].credit_charge,
		    .status = r->status,
		    .command = hs[i].command,
		    .credits = credits,
		    .flags =
		        SMB2_FLAGS_SERVER_TO_REDIR | (hs[i].flags & SMB2_FLAGS_RELATED_OPERATIONS),
		    .message_id = hs[i].message_id,
		    .tree_id = r->tree_id,
		    .session_id = r->session_id,
		};
		smb2_hdr_encode(hb, HDR, &h);
		memcpy(hb + HDR, r->body, r->body_len);
		if (r->data_len)
			memcpy(hb + HDR + r->body_len, r->data, r->data_len);
	}
	/* sign each PDU as it goes out; hash what 3.1.1 hashes */
	for (int i = 0; i < n; i++) {
		struct rsp *r = &rs[i];
		size_t end = i + 1 < n ? starts[i + 1] : out->len;
		uint8_t *pdu = out->b + starts[i];
		size_t plen = end - starts[i];
		if (r->preauth == 1) {
			struct iovec iov[2] = {{pc->preauth, 64}, {pdu, plen}};
			smb_sha512(iov, 2, pc->preauth);
		} else if (r->preauth == 2 && r->sess) {
			struct iovec iov[2] = {{r->sess->preauth, 64}, {pdu, plen}};
			smb_sha512(iov, 2, r->sess->preauth);
		}
		if (r->sess && r->sess->have_key && r->status != STATUS_MORE_PROCESSING_REQUIRED) {
			smb_put_le32(pdu + 16, smb_le32(pdu + 16) | SMB2_FLAGS_SIGNED);
			struct iovec iov = {pdu, plen};
			smb_sign_pdu(SMB2_SIGNING_AES_CMAC, r->sess->signing_key, &iov, 1,
			             pdu + 48);
		}
	}
	rsps_free(rs, n);
}

/* ---- the fake transport ------------------------------------------------------------ */

struct delivery {
	struct fake *f;
	uint8_t *msg;
	size_t len;
};

static void deliver_cb(void *arg)
{
	struct delivery *d = arg;
	d->f->base.up.recv(d->f->base.up.arg, d->msg, d->len);
	free(d);
}

static void dead_cb(void *arg)
{
	struct fake *f = arg;
	f->base.up.dead(f->base.up.arg, -ECONNRESET);
}

/* With p->m held. */
static void fake_kill(struct fake *f)
{
	if (f->dead)
		return;
	f->dead = true;
	conn_gone(f->p, f->pc);
	ev_call(f->base.loop, dead_cb, f);
}

static int fake_connect(struct smb_transport *t, const struct sockaddr *a, socklen_t l, unsigned ms)
{
	struct fake *f = (struct fake *)t;
	struct peer *p = f->p;
	pthread_mutex_lock(&p->m);
	if (p->nconns >= MAX_CONNS || p->refuse) {
		pthread_mutex_unlock(&p->m);
		return -ECONNREFUSED;
	}
	struct pconn *pc = calloc(1, sizeof(*pc));
	pc->number = ++p->st.connections;
	pc->fake = f;
	if (l <= sizeof(f->remote))
		memcpy(&f->remote, a, l);
	if (a->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, pc->addr,
		          sizeof(pc->addr));
	else if (a->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, pc->addr,
		          sizeof(pc->addr));
	p->conns[p->nconns++] = pc;
	f->pc = pc;
	pthread_mutex_unlock(&p->m);
	return 0;
}

static int fake_send(struct smb_transport *t, struct smb_txbuf *b)
{
	struct fake *f = (struct fake *)t;
	struct peer *p = f->p;
	pthread_mutex_lock(&p->m);
	if (f->dead) {
		pthread_mutex_unlock(&p->m);
		return -ECONNABORTED;
	}
	uint8_t *msg = malloc(b->len ? b->len : 1);
	size_t len = 0;
	for (int i = 0; i < b->iovcnt; i++) {
		memcpy(msg + len, b->iov[i].iov_base, b->iov[i].iov_len);
		len += b->iov[i].iov_len;
	}
	struct obuf out = {0};
	bool kill = false;
	peer_message(p, f->pc, msg, len, &out, &kill);
	free(msg);
	if (out.len) {
		struct delivery *d = malloc(sizeof(*d));
		d->f = f;
		d->msg = talloc_memdup(NULL, out.b, out.len);
		d->len = out.len;
		ev_call(t->loop, deliver_cb, d);
	}
	free(out.b);
	if (kill)
		fake_kill(f);
	pthread_mutex_unlock(&p->m);
	b->done(b, 0);
	return 0;
}

static void fake_shutdown(struct smb_transport *t)
{
	struct fake *f = (struct fake *)t;
	pthread_mutex_lock(&f->p->m);
	fake_kill(f);
	pthread_mutex_unlock(&f->p->m);
}

static void rdma_teardown(struct fake *f);

static void fake_destroy(struct smb_transport *t)
{
	struct fake *f = (struct fake *)t;
	if (f->rdma)
		rdma_teardown(f);
	pthread_mutex_lock(&f->p->m);
	if (f->pc)
		f->pc->fake = NULL;
	pthread_mutex_unlock(&f->p->m);
	free(f);
}

/* The remote address is the one dialled: multichannel/mc.c matches the
 * server's interfaces against it. */
static void fake_info(struct smb_transport *t, struct smb_transport_info *o)
{
	const struct fake *f = (const struct fake *)t;
	memset(o, 0, sizeof(*o));
	o->kind = "tcp";
	o->remote = f->remote;
	if (f->rdma) {
		o->kind = "rdma";
		o->caps = SMB_TRANSPORT_CAP_RDMA;
		o->max_read_write = f->max_rw;
		o->max_inline_send = o->max_inline_recv = 1u << 20;
	}
}

/* ---- SMB Direct, emulated ----------------------------------------------------------
 * The offload ops of every fake; without rdma they are the defaults'. */

static int rdma_get_stats(struct smb_transport *t, struct smb_transport_stats *out)
{
	struct fake *f = (struct fake *)t;
	if (!f->rdma)
		return transport_default_get_stats(t, out);
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&f->p->m);
	out->rdma_read_bytes = f->rdma_read_bytes;
	out->rdma_write_bytes = f->rdma_write_bytes;
	pthread_mutex_unlock(&f->p->m);
	return 0;
}

static void rdma_set_dialect(struct smb_transport *t, uint16_t dialect)
{
	struct fake *f = (struct fake *)t;
	pthread_mutex_lock(&f->p->m);
	f->dialect = dialect;
	pthread_mutex_unlock(&f->p->m);
}

static bool overlaps(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	return (uintptr_t)a < (uintptr_t)b + blen && (uintptr_t)b < (uintptr_t)a + alen;
}

static int rdma_region_add(struct smb_transport *t, void *addr, size_t len)
{
	struct fake *f = (struct fake *)t;
	struct peer *p = f->p;
	if (!f->rdma)
		return transport_default_region_add(t, addr, len);
	int err = 0;
	pthread_mutex_lock(&p->m);
	if (ev_on_loop_thread(t->loop))
		violation(p, "conn %d: region_add on the loop thread", f->pc->number);
	if (f->dead)
		err = -ENOTCONN;
	else if (!addr || !len)
		err = -EINVAL;
	else if (len > p->rdma_max_region)
		err = -ENOMEM; /* as a registration over RLIMIT_MEMLOCK */
	else if (f->nregions == MAX_REGIONS)
		err = -ENOSPC;
	for (int i = 0; i < f->nregions && !err; i++)
		if (overlaps(addr, len, f->regions[i].addr, f->regions[i].len))
			err = -EEXIST;
	if (!err) {
		f->regions[f->nregions].addr = addr;
		f->regions[f->nregions].len = len;
		f->nregions++;
	}
	pthread_mutex_unlock(&p->m);
	return err;
}

/* Under p->m. */
static bool in_region(const struct fake *f, const uint8_t *a, size_t len)
{
	for (int i = 0; i < f->nregions; i++) {
		uintptr_t r = (uintptr_t)f->regions[i].addr;
		if ((uintptr_t)a >= r && (uintptr_t)a - r <= f->regions[i].len &&
		    len <= f->regions[i].len - ((uintptr_t)a - r))
			return true;
	}
	return false;
}

/* Under p->m: why f may not have a token over [addr, addr+len) for dir
 * (-errno; a violation where the client should have known better). */
static int token_refused(struct fake *f, const uint8_t *addr, size_t len, enum smb_io_dir dir)
{
	struct peer *p = f->p;
	if (f->dead)
		return -ECONNABORTED;
	if (p->token_fail_n > 0) {
		p->token_fail_n--;
		return p->token_fail_err;
	}
	if (!addr || !len || len > UINT32_MAX ||
	    (dir != SMB_IO_SERVER_WRITES && dir != SMB_IO_SERVER_READS))
		return -EINVAL;
	if (!in_region(f, addr, len)) {
		violation(p, "conn %d: io_token_get of %zu bytes outside every registered region",
		          f->pc->number, len);
		return -EINVAL;
	}
	if (p->ntokens == MAX_TOKENS) {
		violation(p, "conn %d: %d tokens live at once", f->pc->number, MAX_TOKENS);
		return -ENOMEM;
	}
	for (int i = 0; i < p->ntokens; i++) {
		const struct ptoken *k = p->tokens[i];
		if (k->f == f && (k->dir == SMB_IO_SERVER_WRITES || dir == SMB_IO_SERVER_WRITES) &&
		    overlaps(addr, len, k->addr, k->len))
			violation(p,
			          "conn %d: io_token_get over the memory of token %#x, which the "
			          "server may still write or read",
			          f->pc->number, k->rkey);
	}
	return 0;
}

static int rdma_io_token_get(struct smb_transport *t, void *addr, size_t len, enum smb_io_dir dir,
                             struct smb_io_token **tok, uint8_t desc[16], uint32_t *channel)
{
	struct fake *f = (struct fake *)t;
	struct peer *p = f->p;
	if (!f->rdma)
		return transport_default_io_token_get(t, addr, len, dir, tok, desc, channel);
	pthread_mutex_lock(&p->m);
	int err = token_refused(f, addr, len, dir);
	if (!err) {
		struct ptoken *k = calloc(1, sizeof(*k));
		*k = (struct ptoken){
		    .p = p,
		    .f = f,
		    .rkey = 0x1000 + ++p->next_rkey,
		    .channel = f->dialect >= SMB2_DIALECT_0302 ? SMB2_CHANNEL_RDMA_V1_INVALIDATE
		                                               : SMB2_CHANNEL_RDMA_V1,
		    .addr = addr,
		    .len = len,
		    .dir = dir,
		};
		p->tokens[p->ntokens++] = k;
		p->st.tokens_got++;
		smb_put_le64(desc, (uintptr_t)addr);
		smb_put_le32(desc + 8, k->rkey);
		smb_put_le32(desc + 12, (uint32_t)len);
		*channel = k->channel;
		*tok = (struct smb_io_token *)k;
	}
	pthread_mutex_unlock(&p->m);
	return err;
}

/* Under p->m: k is done; false if it was not live. */
static bool token_drop(struct peer *p, const struct ptoken *k)
{
	for (int i = 0; i < p->ntokens; i++)
		if (p->tokens[i] == k) {
			p->tokens[i] = p->tokens[--p->ntokens];
			p->st.tokens_done++;
			return true;
		}
	return false;
}

/* On the loop: the token is done. */
static void token_done(void *arg)
{
	struct ptoken *k = arg;
	pthread_mutex_lock(&k->p->m);
	token_drop(k->p, k);
	pthread_mutex_unlock(&k->p->m);
	k->done(k->arg);
	free(k);
}

static void rdma_io_token_put(struct smb_transport *t, struct smb_io_token *tok, size_t moved,
                              void (*done)(void *arg), void *arg)
{
	struct fake *f = (struct fake *)t;
	struct peer *p = f->p;
	if (!f->rdma) {
		transport_default_io_token_put(t, tok, moved, done, arg);
		return;
	}
	pthread_mutex_lock(&p->m);
	if (!ev_on_loop_thread(t->loop))
		violation(p, "conn %d: io_token_put off the loop thread", f->pc->number);
	struct ptoken *k = NULL;
	for (int i = 0; i < p->ntokens && !k; i++)
		if ((struct smb_io_token *)p->tokens[i] == tok)
			k = p->tokens[i];
	if (!k || k->f != f || k->put) {
		violation(p, "conn %d: io_token_put of a token %s", f->pc->number,
		          k && k->put ? "put already" : "this connection did not hand out");
		pthread_mutex_unlock(&p->m);
		return;
	}
	if (moved > k->len)
		violation(p, "conn %d: io_token_put says %zu bytes moved through a %zu-byte token",
		          f->pc->number, moved, k->len);
	if (k->dir == SMB_IO_SERVER_READS)
		f->rdma_read_bytes += moved;
	else
		f->rdma_write_bytes += moved;
	k->put = true;
	k->done = done;
	k->arg = arg;
	if (p->rdma_hold)
		k->held = true;
	else
		ev_call(t->loop, token_done, k);
	pthread_mutex_unlock(&p->m);
}

void peer_rdma_hold(struct peer *p, bool on)
{
	pthread_mutex_lock(&p->m);
	p->rdma_hold = on;
	for (int i = 0; i < p->ntokens && !on; i++)
		if (p->tokens[i]->held) {
			p->tokens[i]->held = false;
			ev_call(p->tokens[i]->f->base.loop, token_done, p->tokens[i]);
		}
	pthread_mutex_unlock(&p->m);
}

/* On the loop, after every done() queued before (the real transport's
 * barrier): the connection is gone, so are the server's rights to its
 * memory: held tokens are done; one never put is a violation. */
static void rdma_teardown_cb(void *arg)
{
	struct fake *f = arg;
	struct peer *p = f->p;
	struct ptoken *gone[MAX_TOKENS];
	int n = 0;
	pthread_mutex_lock(&p->m);
	for (int i = 0; i < p->ntokens; i++)
		if (p->tokens[i]->f == f && (!p->tokens[i]->put || p->tokens[i]->held))
			gone[n++] = p->tokens[i];
	for (int i = 0; i < n; i++) {
		token_drop(p, gone[i]);
		if (!gone[i]->put)
			violation(p, "conn %d: token %#x never put", f->pc->number, gone[i]->rkey);
	}
	pthread_mutex_unlock(&p->m);
	for (int i = 0; i < n; i++) {
		if (gone[i]->put)
			gone[i]->done(gone[i]->arg);
		free(gone[i]);
	}
	sem_post(&f->torn_down);
}

static void rdma_teardown(struct fake *f)
{
	sem_init(&f->torn_down, 0, 0);
	if (ev_on_loop_thread(f->base.loop) || ev_call(f->base.loop, rdma_teardown_cb, f))
		rdma_teardown_cb(f);
	while (sem_wait(&f->torn_down) && errno == EINTR)
		;
	sem_destroy(&f->torn_down);
}

static const struct smb_transport_ops fake_ops = {
    .name = "peer",
    .connect = fake_connect,
    .send = fake_send,
    .shutdown = fake_shutdown,
    .destroy = fake_destroy,
    .info = fake_info,
    .get_stats = rdma_get_stats,
    .set_dialect = rdma_set_dialect,
    .region_add = rdma_region_add,
    .io_token_get = rdma_io_token_get,
    .io_token_put = rdma_io_token_put,
};

void peer_drop_connections(struct peer *p)
{
	pthread_mutex_lock(&p->m);
	for (int i = 0; i < p->nconns; i++)
		if (p->conns[i]->fake)
			fake_kill(p->conns[i]->fake);
	pthread_mutex_unlock(&p->m);
}

/* A LEASE_BREAK notification ([MS-SMB2] 2.2.23.2), unsolicited: MessageId
 * all ones, no session, unsigned; on the connection of the open. */
static void lease_break_send(struct peer *p, struct popen *o, uint32_t new_state)
{
	struct pconn *pc = o->conn >= 1 && o->conn <= p->nconns ? p->conns[o->conn - 1] : NULL;
	if (!pc || pc->closed || !pc->fake)
		return;
	size_t len = HDR + 44;
	uint8_t *msg = talloc_zero_size(NULL, len);
	struct smb2_hdr h = {
	    .command = SMB2_OPLOCK_BREAK,
	    .flags = SMB2_FLAGS_SERVER_TO_REDIR,
	    .message_id = UINT64_MAX,
	};
	smb2_hdr_encode(msg, HDR, &h);
	uint8_t *b = msg + HDR;
	smb_put_le16(b, 44);
	smb_put_le16(b + 2, 2); /* NewEpoch */
	smb_put_le32(b + 4, SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED);
	memcpy(b + 8, o->lease_key, 16);
	smb_put_le32(b + 24, o->lease_state);
	smb_put_le32(b + 28, new_state);
	o->breaking = true;
	o->break_to = new_state;
	p->st.lease_breaks++;
	struct delivery *d = malloc(sizeof(*d));
	*d = (struct delivery){pc->fake, msg, len};
	ev_call(pc->fake->base.loop, deliver_cb, d);
}

bool peer_break_lease(struct peer *p, const char *path, uint32_t new_state)
{
	char n[PATH_MAX_];
	norm(path, n, sizeof(n));
	pthread_mutex_lock(&p->m);
	int ni = node_find(p, n);
	bool sent = false;
	for (int i = 0; i < MAX_OPENS && ni >= 0 && !sent; i++) {
		struct popen *o = &p->opens[i];
		if (o->used && o->lease && o->node == ni && !o->breaking) {
			lease_break_send(p, o, new_state);
			sent = o->breaking;
		}
	}
	pthread_mutex_unlock(&p->m);
	return sent;
}

bool peer_last_lease_ack(struct peer *p, uint8_t key[16], uint32_t *state)
{
	pthread_mutex_lock(&p->m);
	bool any = p->st.lease_acks > 0;
	memcpy(key, p->last_ack_key, 16);
	*state = p->last_ack_state;
	pthread_mutex_unlock(&p->m);
	return any;
}

bool peer_drop_connection(struct peer *p, int conn)
{
	pthread_mutex_lock(&p->m);
	struct pconn *pc = conn >= 1 && conn <= p->nconns ? p->conns[conn - 1] : NULL;
	bool live = pc && !pc->closed && pc->fake;
	if (live)
		fake_kill(pc->fake);
	pthread_mutex_unlock(&p->m);
	return live;
}

/* client/conn.c builds its transports through these; the test links them
 * instead of client/transport_tcp.c, client/transport_quic.c and smbd/'s
 * SMB Direct (whose smb_transport_rdma_new() the linker then never takes from
 * libsmbrdma_smbd: nothing else of its object is used). */
int smb_transport_tcp_new(struct ev_loop *loop, const struct smb_transport_up *up,
                          struct smb_transport **out)
{
	if (!g_peer)
		return -ECONNREFUSED;
	struct fake *f = calloc(1, sizeof(*f));
	f->base.ops = &fake_ops;
	f->base.loop = loop;
	f->base.up = *up;
	f->p = g_peer;
	*out = &f->base;
	return 0;
}

int smb_transport_quic_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           const struct smb_quic_params *p, struct smb_transport **out)
{
	return -EOPNOTSUPP;
}

/* The emulated SMB Direct: a connection to the peer like the others, whose
 * transport offers RDMA offload (a mount with smb_client_opts.rdma). */
int smb_transport_rdma_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           struct smb_transport **out)
{
	int err = smb_transport_tcp_new(loop, up, out);
	if (err)
		return err;
	struct fake *f = (struct fake *)*out;
	f->rdma = true;
	pthread_mutex_lock(&f->p->m);
	f->max_rw = f->p->rdma_max_rw;
	pthread_mutex_unlock(&f->p->m);
	return 0;
}
