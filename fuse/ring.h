/* fuse/ring.h — FUSE requests from io_uring rather than read(2) on /dev/fuse.
 *
 * Linux 6.14 and later (CONFIG_FUSE_IO_URING, with the fuse module's
 * enable_uring parameter set) hand requests to a daemon through per-CPU
 * queues of ring entries (fuse/uring_abi.h): one io_uring submission answers
 * a request and asks for the next, where /dev/fuse takes a write(2), a
 * read(2) and a wake-up.  libfuse 3.14 knows nothing of it; this module fits
 * it around libfuse:
 *   - INIT: fuse/main.c shows us the kernel's INIT (fuse_ring_init_request)
 *     and libfuse's answer passes through fuse_ring_writev(), which adds
 *     FUSE_OVER_IO_URING when the kernel offered it and notes the payload
 *     size the kernel will require;
 *   - requests: each entry's payload buffer has room before it, so a request
 *     from the ring is laid out there exactly as /dev/fuse would have
 *     delivered it (in-header, per-opcode struct, payload: the payload is
 *     never copied) and handed to fuse_session_process_buf();
 *   - replies: every reply of the session goes through fuse_ring_writev()
 *     (fuse_session_custom_io()); one whose unique is a ring entry's is put
 *     in that entry and committed, any other goes to /dev/fuse;
 *   - /dev/fuse stays served by the pump (fuse/main.c): INIT, FORGET,
 *     INTERRUPT, requests sent before the ring was complete, and our
 *     notifications all use it, and it reports the unmount.
 * A payload the kernel wrote into an entry stays there until the reply
 * commits the entry; a handler that keeps data past its reply (a write
 * answered early) must copy it (reqbuf_lend() refuses ring memory).
 *
 * Threading: the CQEs are handled on the client's loop thread (an ev_fd on
 * the ring's descriptor), requests dispatched there.  fuse_ring_writev() may
 * be called from any thread; `lock` guards the submission queue and the
 * entries' state.  Every command is submitted from the loop thread (the
 * kernel copies the next request into an entry in the context of the task
 * that submitted the entry's command): a reply made while the CQEs are
 * handled at the end of that batch, any other from a call queued after the
 * callback that made it, so the replies one callback makes go out in one
 * io_uring_enter.
 * Lifetime: fuse_ring_new() before INIT is served; fuse_ring_start() after
 * the INIT answer, from any thread but the loop's; fuse_ring_stop() on the
 * loop thread at unmount (replies after it are dropped: the kernel has ended
 * those requests); fuse_ring_free() once no reply can come (after
 * smb_client_destroy()).
 */
#ifndef SMBRDMA_FUSE_RING_H
#define SMBRDMA_FUSE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_ring;
struct fuse_session;
struct ev_loop;

/* Entries per queue when io_uring_depth= is not given: 8, fewer when the
 * machine has many possible CPUs (every queue must have its entries, each
 * with a payload buffer of the largest request, about 1 MiB): the ring
 * holds at most FUSE_RING_MEM_DEFAULT of them. */
#define FUSE_RING_DEPTH_DEFAULT 8u
#define FUSE_RING_MEM_DEFAULT   (64u << 20)

/* Queues the kernel will want: one per possible CPU
 * (/sys/devices/system/cpu/possible). */
unsigned fuse_ring_queues(void);

/* Whether this kernel may offer the ring: 0, or -errno with the reason in
 * why ("the fuse module's enable_uring is N", ...).  The INIT decides. */
int fuse_ring_kernel_may_offer(char *why, size_t len);

/* depth: entries per queue, 0 for the default.  NULL on ENOMEM. */
struct fuse_ring *fuse_ring_new(unsigned depth);
void fuse_ring_free(struct fuse_ring *r);

/* The kernel's INIT request, as read from /dev/fuse, before libfuse sees
 * it: true when it offers the ring (then libfuse's answer is amended). */
bool fuse_ring_init_request(struct fuse_ring *r, const void *req, size_t len);

/* The session's writev (fuse_session_custom_io()): see above.  r may be
 * NULL (plain writev). */
ssize_t fuse_ring_writev(struct fuse_ring *r, int fd, const struct iovec *iov, int count);

/* After INIT was answered with the ring: set it up and register every
 * entry, from the loop thread (the caller waits).  0, or -errno with a
 * reason in err (the mount then keeps to /dev/fuse, or fails if the ring
 * was required). */
int fuse_ring_start(struct fuse_ring *r, struct fuse_session *se, int fuse_fd, struct ev_loop *loop,
                    char *err, size_t errlen);
/* Loop thread: take no more requests from the ring; replies are dropped. */
void fuse_ring_stop(struct fuse_ring *r);

/* Loop thread, inside a handler of a request from the ring: the payload
 * buffer of its entry (*cap bytes), where a READ can have its data land so
 * that its reply needs no copy (fuse_ring_writev() sees it in place), or
 * NULL (no ring, or the request came through /dev/fuse).  Valid until the
 * request's reply. */
void *fuse_ring_payload(struct fuse_ring *r, size_t *cap);
/* Loop thread, inside a handler: whether [p, p+len) lies in the payload of
 * the ring entry being dispatched.  Such memory stays put until the reply,
 * so a WRITE not answered before it is sent may lend it to the engine
 * (smb_write_lent()). */
bool fuse_ring_holds(struct fuse_ring *r, const void *p, size_t len);
/* Every entry's payload buffer lies in [*mem, *mem + *len) (for
 * smb_client_region_add() on an RDMA mount), once started; NULL before. */
void *fuse_ring_mem(struct fuse_ring *r, size_t *len);

#define FUSE_RING_INFO_QUEUES 64
struct fuse_ring_info {
	bool offered; /* the kernel's INIT offered the ring */
	bool running; /* started and not stopped or failed */
	unsigned queues, depth;
	size_t payload;       /* bytes per entry's payload buffer */
	uint64_t requests;    /* taken from the ring */
	uint64_t commits;     /* replies committed to it */
	uint64_t dev_replies; /* replies that went to /dev/fuse instead */
	uint64_t errors;      /* entries the kernel completed with an error */
	uint64_t queue_requests[FUSE_RING_INFO_QUEUES]; /* per queue (the first ones) */
	char state[96]; /* "running", "not offered by the kernel", ... */
};
void fuse_ring_info(struct fuse_ring *r, struct fuse_ring_info *out);

#endif
