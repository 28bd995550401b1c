/* fuse/ring.c — FUSE over io_uring (see ring.h and uring_abi.h). */
#include "fuse/ring.h"

#include "common/evloop.h"
#include "common/log.h"
#include "fuse/uring_abi.h"

#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sizeof(struct fuse_in_header) / sizeof(struct fuse_out_header). */
#define IN_HDR  40u
#define OUT_HDR 16u
/* Room before each payload buffer: an in-header and the largest per-opcode
 * struct, so a request is rebuilt contiguous without moving the payload. */
#define HEADROOM 4096u

struct ring_ent {
	struct fuse_ring *r;
	struct fuse_uring_req_header *hdr; /* HEADROOM-aligned, registered */
	uint8_t *buf;                      /* HEADROOM + payload */
	uint8_t *payload;                  /* buf + HEADROOM, registered */
	struct iovec iov[2];
	uint16_t qid;
	bool in_user;      /* holds a request we have not answered (under lock) */
	uint64_t unique;   /* that request's */
	uint32_t last_cmd; /* for a resubmission after -EAGAIN/-EINTR */
};

struct fuse_ring {
	pthread_mutex_t lock; /* the SQ, entries' in_user, the counters, stopped */
	struct io_uring ring;
	bool ring_up;
	struct ev_loop *loop;
	struct ev_fd *evf;
	struct fuse_session *se;
	int fuse_fd;
	unsigned queues, depth;
	size_t payload;
	struct ring_ent *ents;
	unsigned nents;
	uint8_t *mem; /* every entry's HEADROOM + payload, one after the other */
	size_t memlen;
	bool offered, running, stopped;
	bool batching; /* loop thread inside the CQE batch: submit at its end */
	/* The entry whose request is being dispatched: a reply to it is kept
	 * here and committed when the dispatch returns, for the handler may
	 * still read the request's payload after replying (a write answered
	 * before it is sent copies the data after the answer). */
	struct ring_ent *dispatching;
	struct fuse_out_header stash_out;
	uint8_t *stash;
	size_t stash_len, stash_cap;
	bool stashed;
	bool submit_due; /* commits prepared, a call to submit them queued (submit_cb) */
	uint64_t init_unique;
	uint64_t requests, commits, dev_replies, errors;
	uint64_t qreq[FUSE_RING_INFO_QUEUES]; /* requests per queue */
	char state[96];
	/* set up from the loop thread (fuse_ring_start) */
	int start_rc;
	char *start_err;
	size_t start_errlen;
};

unsigned fuse_ring_queues(void)
{
	/* "0-1", "0-3,5", "0": the highest index plus one */
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char buf[256] = "";
	unsigned hi = 0;
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	for (const char *p = buf; *p;) {
		if (*p < '0' || *p > '9') {
			p++; /* '-', ',' and the newline */
			continue;
		}
		unsigned long v = 0;
		while (*p >= '0' && *p <= '9' && v < 1u << 20)
			v = v * 10 + (unsigned long)(*p++ - '0');
		if (v > hi && v < 1u << 20)
			hi = (unsigned)v;
	}
	if (!buf[0]) {
		long n = sysconf(_SC_NPROCESSORS_CONF);
		return n > 0 ? (unsigned)n : 1;
	}
	return hi + 1;
}

int fuse_ring_kernel_may_offer(char *why, size_t len)
{
	FILE *f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	char c = 0;
	if (!f) {
		snprintf(why, len,
		         "the kernel has no FUSE over io_uring "
		         "(/sys/module/fuse/parameters/enable_uring is missing)");
		return -EOPNOTSUPP;
	}
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	if (c != 'Y' && c != '1') {
		snprintf(why, len,
		         "the fuse module's enable_uring is N (as root: echo Y > "
		         "/sys/module/fuse/parameters/enable_uring)");
		return -EOPNOTSUPP;
	}
	return 0;
}

struct fuse_ring *fuse_ring_new(unsigned depth)
{
	struct fuse_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->fuse_fd = -1;
	r->queues = fuse_ring_queues();
	if (!depth) {
		/* about 1 MiB per entry */
		unsigned fit = FUSE_RING_MEM_DEFAULT / (1u << 20) / r->queues;
		depth = fit < FUSE_RING_DEPTH_DEFAULT ? (fit ? fit : 1) : FUSE_RING_DEPTH_DEFAULT;
	}
	r->depth = depth;
	snprintf(r->state, sizeof(r->state), "not offered by the kernel");
	return r;
}

bool fuse_ring_init_request(struct fuse_ring *r, const void *req, size_t len)
{
	const struct fuse_in_header *in = req;
	struct fuse_init_in init;
	if (!r || len < IN_HDR + 20 || in->opcode != FUSE_INIT)
		return false;
	memcpy(&init, (const uint8_t *)req + IN_HDR, 20);
	/* flags2 is there from 7.36, meant when FUSE_INIT_EXT is set */
	uint64_t flags = init.flags;
	if (init.major == 7 && init.minor >= 36 && (init.flags & FUSE_INIT_EXT))
		flags |= (uint64_t)init.flags2 << 32;
	r->offered = (flags & FUSE_OVER_IO_URING) != 0;
	r->init_unique = in->unique;
	if (!r->offered)
		snprintf(r->state, sizeof(r->state), "not offered by the kernel's INIT");
	return r->offered;
}

/* libfuse's INIT answer, with FUSE_OVER_IO_URING added; the payload size
 * the kernel will require noted (its max_payload_sz: the largest of 8 KiB,
 * max_write and max_pages pages). */
static ssize_t init_reply(struct fuse_ring *r, int fd, const struct iovec *iov, int count)
{
	struct fuse_out_header out;
	struct fuse_init_out io;
	size_t n = count > 1 ? iov[1].iov_len : 0;

	memcpy(&out, iov[0].iov_base, OUT_HDR);
	if (count != 2 || out.error || n < 24 || n > sizeof(io))
		return writev(fd, iov, count);
	memset(&io, 0, sizeof(io));
	memcpy(&io, iov[1].iov_base, n);
	long pg = sysconf(_SC_PAGESIZE);
	size_t pages = (io.flags & FUSE_MAX_PAGES) && n >= 40 && io.max_pages ? io.max_pages : 32;
	size_t payload = 8192, paged = pages * (size_t)(pg > 0 ? pg : 4096);
	if (io.max_write > payload)
		payload = io.max_write;
	if (paged > payload)
		payload = paged;
	r->payload = payload;
	if (n >= 40) {
		io.flags |= FUSE_INIT_EXT;
		io.flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	}
	struct iovec v[2] = {{&out, OUT_HDR}, {&io, n}};
	return writev(fd, v, 2);
}

/* Under lock: the SQE of ent's next command (REGISTER or COMMIT_AND_FETCH). */
static int prep_cmd(struct fuse_ring *r, struct ring_ent *e, uint32_t cmd, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return -EBUSY; /* cannot be: one SQE per entry, and as many slots */
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = r->fuse_fd;
	sqe->cmd_op = cmd;
	io_uring_sqe_set_data(sqe, e);
	if (cmd == FUSE_IO_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	}
	struct fuse_uring_cmd_req *req = (struct fuse_uring_cmd_req *)sqe->cmd;
	req->qid = e->qid;
	req->commit_id = commit_id;
	e->last_cmd = cmd;
	return 0;
}

static void submit_locked(struct fuse_ring *r)
{
	int rc = io_uring_submit(&r->ring);
	if (rc < 0) {
		smb_err("FUSE ring: submitting: %s", strerror(-rc));
		r->errors++;
	}
}

/* Loop thread: the commits prepared since the last submission go out. */
static void handle_cqes(struct fuse_ring *r);

static void submit_cb(void *arg)
{
	struct fuse_ring *r = arg;
	bool more = false;
	pthread_mutex_lock(&r->lock);
	r->submit_due = false;
	if (r->ring_up && !r->stopped) {
		submit_locked(r);
		more = io_uring_cq_ready(&r->ring) > 0;
	}
	pthread_mutex_unlock(&r->lock);
	/* the commits' io_uring_enter may have brought the next requests:
	 * take them now rather than after another epoll_wait */
	if (more)
		handle_cqes(r);
}

/* Under lock: the entry holding the request `unique`, if any. */
static struct ring_ent *find_ent(struct fuse_ring *r, uint64_t unique)
{
	for (unsigned i = 0; i < r->nents; i++)
		if (r->ents[i].in_user && r->ents[i].unique == unique)
			return &r->ents[i];
	return NULL;
}

/* Under lock: put the reply (out, then the payload in iov[0..count)) in e
 * and prepare its commit, submitted at the end of the CQE batch or from a
 * call queued on the loop (submit_cb). */
static void commit_locked(struct fuse_ring *r, struct ring_ent *e, struct fuse_out_header out,
                          const struct iovec *iov, int count)
{
	size_t len = 0;
	for (int i = 0; i < count; i++)
		len += iov[i].iov_len;
	if (len > r->payload) {
		smb_err("FUSE ring: a reply of %zu bytes to request %llu exceeds the entry's %zu",
		        len, (unsigned long long)out.unique, r->payload);
		out.error = -EIO;
		len = 0;
	} else {
		size_t off = 0;
		for (int i = 0; i < count; i++) {
			/* a READ that landed in the entry (fuse_ring_payload) is in place */
			if (iov[i].iov_base != e->payload + off)
				memmove(e->payload + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	out.len = (uint32_t)(OUT_HDR + len);
	memcpy(e->hdr->in_out, &out, OUT_HDR);
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)len;
	if (prep_cmd(r, e, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, e->unique) < 0) {
		smb_err("FUSE ring: no SQE for the reply to request %llu",
		        (unsigned long long)out.unique);
		r->errors++;
		return;
	}
	r->commits++;
	/* Submitted at the end of the CQE batch when made inside it; else
	 * from a call after the current callback, so the replies one callback
	 * makes (the answers one receive brought) go in one io_uring_enter. */
	if (r->batching && ev_on_loop_thread(r->loop))
		return;
	if (!r->submit_due) {
		r->submit_due = true;
		ev_call(r->loop, submit_cb, r);
	}
}

ssize_t fuse_ring_writev(struct fuse_ring *r, int fd, const struct iovec *iov, int count)
{
	struct fuse_out_header out;

	if (!r || count < 1 || iov[0].iov_len < OUT_HDR)
		return writev(fd, iov, count);
	memcpy(&out, iov[0].iov_base, OUT_HDR);
	if (r->init_unique && out.unique == r->init_unique) {
		r->init_unique = 0;
		if (r->offered)
			return init_reply(r, fd, iov, count);
		return writev(fd, iov, count);
	}
	pthread_mutex_lock(&r->lock);
	struct ring_ent *e = out.unique ? find_ent(r, out.unique) : NULL;
	if (!e) {
		r->dev_replies++;
		pthread_mutex_unlock(&r->lock);
		return writev(fd, iov, count);
	}
	size_t total = OUT_HDR, len = 0;
	for (int i = 1; i < count; i++)
		len += iov[i].iov_len;
	total += len;
	e->in_user = false;
	if (r->stopped) {
		/* the kernel ended the request when the ring stopped */
		pthread_mutex_unlock(&r->lock);
		return (ssize_t)total;
	}
	if (e == r->dispatching) {
		if (len > r->stash_cap) {
			uint8_t *n = realloc(r->stash, len);
			if (!n) {
				out.error = -ENOMEM;
				len = 0;
			} else {
				r->stash = n;
				r->stash_cap = len;
			}
		}
		size_t off = 0;
		for (int i = 1; i < count && len; i++) {
			memcpy(r->stash + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		r->stash_out = out;
		r->stash_len = len;
		r->stashed = true;
	} else {
		commit_locked(r, e, out, iov + 1, count - 1);
	}
	pthread_mutex_unlock(&r->lock);
	return (ssize_t)total;
}

/* A request the kernel put in e: laid out as /dev/fuse would have it, just
 * before the payload, and dispatched.  Loop thread, lock not held. */
static void take_request(struct fuse_ring *r, struct ring_ent *e)
{
	struct fuse_in_header in;
	const struct fuse_uring_ent_in_out *eio = &e->hdr->ring_ent_in_out;

	memcpy(&in, e->hdr->in_out, IN_HDR);
	size_t psz = eio->payload_sz;
	size_t op = in.len >= IN_HDR + psz ? in.len - IN_HDR - psz : SIZE_MAX;
	pthread_mutex_lock(&r->lock);
	e->in_user = true;
	e->unique = eio->commit_id;
	r->requests++;
	if (e->qid < FUSE_RING_INFO_QUEUES)
		r->qreq[e->qid]++;
	pthread_mutex_unlock(&r->lock);
	if (psz > r->payload || op > FUSE_URING_OP_IN_OUT_SZ || eio->commit_id != in.unique) {
		smb_err("FUSE ring: a malformed request (opcode %u, length %u, payload %zu): "
		        "answered EIO",
		        in.opcode, in.len, psz);
		struct fuse_out_header out = {OUT_HDR, -EIO, eio->commit_id};
		struct iovec v = {&out, OUT_HDR};
		fuse_ring_writev(r, r->fuse_fd, &v, 1);
		return;
	}
	uint8_t *start = e->payload - IN_HDR - op;
	memcpy(start, &in, IN_HDR);
	memcpy(start + IN_HDR, e->hdr->op_in, op);
	struct fuse_buf fb = {.size = in.len, .mem = start};
	pthread_mutex_lock(&r->lock);
	r->dispatching = e;
	pthread_mutex_unlock(&r->lock);
	fuse_session_process_buf(r->se, &fb);
	pthread_mutex_lock(&r->lock);
	r->dispatching = NULL;
	if (r->stashed) {
		r->stashed = false;
		struct iovec v = {r->stash, r->stash_len};
		if (!r->stopped)
			commit_locked(r, e, r->stash_out, &v, r->stash_len ? 1 : 0);
	}
	pthread_mutex_unlock(&r->lock);
}

/* One pass over the completions there are: requests dispatched, the
 * commits made meanwhile submitted.  Loop thread.  True when that
 * submission left more completions (the kernel hands the next request to
 * an entry within the io_uring_enter that committed it). */
static bool cqe_pass(struct fuse_ring *r)
{
	struct ring_ent *got[256];
	int res[256];
	unsigned n = 0;

	pthread_mutex_lock(&r->lock);
	struct io_uring_cqe *cqe;
	unsigned head;
	io_uring_for_each_cqe(&r->ring, head, cqe)
	{
		if (n == sizeof(got) / sizeof(got[0]))
			break;
		got[n] = io_uring_cqe_get_data(cqe);
		res[n++] = cqe->res;
	}
	io_uring_cq_advance(&r->ring, n);
	r->batching = true;
	pthread_mutex_unlock(&r->lock);

	for (unsigned i = 0; i < n; i++) {
		struct ring_ent *e = got[i];
		if (!e)
			continue;
		if (res[i] == 0) {
			if (!r->stopped)
				take_request(r, e);
			continue;
		}
		pthread_mutex_lock(&r->lock);
		if (res[i] == -EAGAIN || res[i] == -EINTR) {
			prep_cmd(r, e, e->last_cmd, e->unique);
		} else {
			/* -ENOTCONN / -ECONNABORTED / -ECANCELED: the connection
			 * or the ring went away (unmount); anything else is a
			 * fault of ours */
			bool gone =
			    res[i] == -ENOTCONN || res[i] == -ECONNABORTED || res[i] == -ECANCELED;
			if (!gone)
				r->errors++;
			if (r->running && !gone)
				smb_err("FUSE ring: queue %u entry failed: %s", e->qid,
				        strerror(-res[i]));
			if (r->running) {
				r->running = false;
				snprintf(r->state, sizeof(r->state), "ended: %s",
				         gone ? "the connection closed" : strerror(-res[i]));
			}
		}
		pthread_mutex_unlock(&r->lock);
	}

	pthread_mutex_lock(&r->lock);
	r->batching = false;
	bool more = false;
	if (!r->stopped && io_uring_sq_ready(&r->ring)) {
		submit_locked(r);
		more = io_uring_cq_ready(&r->ring) > 0;
	}
	pthread_mutex_unlock(&r->lock);
	return more;
}

/* Bounded, so SMB replies are not starved by a stream of requests; the
 * descriptor stays readable (level-triggered) for what is left. */
static void handle_cqes(struct fuse_ring *r)
{
	for (int i = 0; i < 8 && cqe_pass(r); i++)
		;
}

static void ring_readable(struct ev_fd *f, uint32_t events, void *arg)
{
	(void)f;
	(void)events;
	handle_cqes(arg);
}

static int setup(struct fuse_ring *r, char *err, size_t errlen)
{
	unsigned n = r->queues * r->depth;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	/* No DEFER_TASKRUN, COOP_TASKRUN or SINGLE_ISSUER, measured
	 * (issue 24, a serial getxattr loop the daemon answers itself, and
	 * 4 of them in parallel; perf stat -e raw_syscalls:sys_enter on the
	 * daemon).  As it is, the kernel hands a request to an entry in task
	 * work that interrupts the loop thread (an epoll_wait ends with EINTR,
	 * or the work runs as a commit's io_uring_enter returns, when the
	 * next request is already there): 1.2-2.6 system calls per request,
	 * about one fewer than /dev/fuse in every run (2.2-3.5: epoll_wait,
	 * read, a read finding nothing, writev).  DEFER_TASKRUN runs that
	 * work only in an enter with GETEVENTS, so it needs an eventfd, an
	 * epoll wake-up and such an enter before each request: 3 per request.  COOP_TASKRUN (no IPI
	 * while the thread runs) and SINGLE_ISSUER (the ring then made on the
	 * loop thread) changed neither the count nor, beyond this machine's
	 * noise, the time. */
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
	p.cq_entries = 2 * n;
	int rc = io_uring_queue_init_params(n, &r->ring, &p);
	if (rc < 0) {
		snprintf(err, errlen, "io_uring_setup: %s", strerror(-rc));
		return rc;
	}
	r->ring_up = true;
	r->ents = calloc(n, sizeof(*r->ents));
	if (!r->ents) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	r->nents = n;
	/* one allocation for every payload, so an RDMA mount registers it once */
	size_t slot = HEADROOM + (r->payload + HEADROOM - 1) / HEADROOM * HEADROOM;
	r->memlen = slot * n;
	if (posix_memalign((void **)&r->mem, HEADROOM, r->memlen)) {
		r->mem = NULL;
		snprintf(err, errlen, "%u ring entries of %zu bytes: %s", n, r->payload,
		         strerror(ENOMEM));
		return -ENOMEM;
	}
	memset(r->mem, 0, r->memlen); /* faulted in now: registration pins what is there */
	for (unsigned i = 0; i < n; i++) {
		struct ring_ent *e = &r->ents[i];
		e->r = r;
		e->qid = (uint16_t)(i / r->depth);
		if (posix_memalign((void **)&e->hdr, HEADROOM, HEADROOM)) {
			snprintf(err, errlen, "%u ring entries: %s", n, strerror(ENOMEM));
			return -ENOMEM;
		}
		memset(e->hdr, 0, HEADROOM);
		e->buf = r->mem + slot * i;
		e->payload = e->buf + HEADROOM;
		e->iov[0] = (struct iovec){e->hdr, sizeof(struct fuse_uring_req_header)};
		e->iov[1] = (struct iovec){e->payload, r->payload};
	}
	return 0;
}

/* Loop thread: register every entry. */
static void start_cb(void *arg)
{
	struct fuse_ring *r = arg;
	char *err = r->start_err;
	size_t errlen = r->start_errlen;

	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < r->nents; i++) {
		int rc = prep_cmd(r, &r->ents[i], FUSE_IO_URING_CMD_REGISTER, 0);
		if (rc < 0) {
			snprintf(err, errlen, "no SQE to register entry %u", i);
			r->start_rc = rc;
			pthread_mutex_unlock(&r->lock);
			return;
		}
	}
	int rc = io_uring_submit(&r->ring);
	if (rc < 0 || (unsigned)rc != r->nents) {
		snprintf(err, errlen, "registering %u ring entries: %s", r->nents,
		         rc < 0 ? strerror(-rc) : "short submit");
		r->start_rc = rc < 0 ? rc : -EIO;
		pthread_mutex_unlock(&r->lock);
		return;
	}
	r->running = true;
	snprintf(r->state, sizeof(r->state), "running");
	pthread_mutex_unlock(&r->lock);
	r->start_rc = ev_fd_add(r->loop, r->ring.ring_fd, EPOLLIN, ring_readable, r, &r->evf);
	if (r->start_rc < 0)
		snprintf(err, errlen, "watching the ring: %s", strerror(-r->start_rc));
}

int fuse_ring_start(struct fuse_ring *r, struct fuse_session *se, int fuse_fd, struct ev_loop *loop,
                    char *err, size_t errlen)
{
	if (!r->offered) {
		snprintf(err, errlen, "%s", r->state);
		return -EOPNOTSUPP;
	}
	if (!r->payload) {
		snprintf(err, errlen, "the INIT answer was not seen");
		return -EPROTO;
	}
	r->se = se;
	r->fuse_fd = fuse_fd;
	r->loop = loop;
	int rc = setup(r, err, errlen);
	if (rc == 0) {
		r->start_err = err;
		r->start_errlen = errlen;
		r->start_rc = 0;
		rc = ev_call_wait(loop, start_cb, r);
		if (rc == 0)
			rc = r->start_rc;
	}
	if (rc < 0) {
		/* The kernel has seen our INIT answer: the requests it does not
		 * send to the ring (it never got them all registered) keep
		 * coming through /dev/fuse. */
		pthread_mutex_lock(&r->lock);
		r->running = false;
		snprintf(r->state, sizeof(r->state), "failed: %.80s", err);
		pthread_mutex_unlock(&r->lock);
	}
	return rc;
}

void fuse_ring_stop(struct fuse_ring *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopped = true;
	if (r->running) {
		r->running = false;
		snprintf(r->state, sizeof(r->state), "stopped");
	}
	pthread_mutex_unlock(&r->lock);
	if (r->evf) {
		ev_fd_del(r->evf);
		r->evf = NULL;
	}
}

void fuse_ring_free(struct fuse_ring *r)
{
	if (!r)
		return;
	/* Closing the ring cancels the commands still with the kernel. */
	if (r->ring_up)
		io_uring_queue_exit(&r->ring);
	for (unsigned i = 0; i < r->nents; i++)
		free(r->ents[i].hdr);
	free(r->ents);
	free(r->mem);
	free(r->stash);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void *fuse_ring_payload(struct fuse_ring *r, size_t *cap)
{
	/* r->dispatching is written on the loop thread only */
	struct ring_ent *e = r ? r->dispatching : NULL;
	if (!e)
		return NULL;
	*cap = r->payload;
	return e->payload;
}

bool fuse_ring_holds(struct fuse_ring *r, const void *p, size_t len)
{
	struct ring_ent *e = r ? r->dispatching : NULL;
	const uint8_t *d = p;
	return e && d >= e->payload && d <= e->payload + r->payload &&
	       len <= (size_t)(e->payload + r->payload - d);
}

void *fuse_ring_mem(struct fuse_ring *r, size_t *len)
{
	*len = r ? r->memlen : 0;
	return r ? r->mem : NULL;
}

void fuse_ring_info(struct fuse_ring *r, struct fuse_ring_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!r) {
		snprintf(out->state, sizeof(out->state), "not asked for (noio_uring)");
		return;
	}
	pthread_mutex_lock(&r->lock);
	out->offered = r->offered;
	out->running = r->running;
	out->queues = r->queues;
	out->depth = r->depth;
	out->payload = r->payload;
	out->requests = r->requests;
	out->commits = r->commits;
	out->dev_replies = r->dev_replies;
	out->errors = r->errors;
	memcpy(out->queue_requests, r->qreq, sizeof(r->qreq));
	snprintf(out->state, sizeof(out->state), "%s", r->state);
	pthread_mutex_unlock(&r->lock);
}
