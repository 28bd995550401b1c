/* fuse/reqbuf.h — the buffers /dev/fuse requests are read into.
 *
 * One allocation holds nbuf buffers of REQBUF_SIZE bytes (a request header
 * plus the largest WRITE payload).  A WRITE's payload leaves from the buffer
 * the kernel wrote it into: the write handler lends the buffer to the engine
 * (reqbuf_lend, smb_write_lent()) and the write's callback gives it back
 * (reqbuf_return).  Over TCP the engine sends it in place; on an RDMA mount
 * the whole allocation is also registered once with the engine
 * (smb_client_region_add), so the server RDMA-Reads the payload from it.  A
 * lent buffer is not read into again until it is back; when every buffer is
 * lent, requests go to a spare buffer and writes are copied.
 *
 * Threading: everything runs on the client's loop thread (the pump reads
 * and dispatches there, handlers run inside reqbuf-dispatch, engine
 * callbacks come back there), so nothing is locked.
 * Lifetime: reqbuf_pool_free() after smb_client_destroy() (which fails every
 * outstanding write, returning every buffer, and deregisters the memory).
 */
#ifndef SMBRDMA_FUSE_REQBUF_H
#define SMBRDMA_FUSE_REQBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest WRITE the kernel sends (SMBFS_MAX_IO; main.c checks they
 * agree), plus FUSE's request header allowance (FUSE_BUFFER_HEADER_SIZE). */
#define REQBUF_MAX_WRITE (1u << 20)
#define REQBUF_SIZE      (REQBUF_MAX_WRITE + 4096u)

struct reqbuf_pool;

/* nbuf >= 1 buffers, plus the spare.  NULL on ENOMEM. */
struct reqbuf_pool *reqbuf_pool_new(unsigned nbuf);
void reqbuf_pool_free(struct reqbuf_pool *p);
/* The registrable memory (the nbuf buffers, not the spare). */
void *reqbuf_pool_mem(struct reqbuf_pool *p, size_t *len);
/* Writes may borrow buffers from now on: fuse/main.c turns it on for every
 * mount once the pool exists (registered or not: a TCP mount sends a lent
 * buffer in place). */
void reqbuf_pool_set_lendable(struct reqbuf_pool *p, bool on);

/* The buffer the next request is read into (never NULL: the spare when
 * every pooled buffer is lent). */
uint8_t *reqbuf_current(struct reqbuf_pool *p);
/* After the current buffer's request was dispatched: if a handler lent it,
 * move on to a free one. */
void reqbuf_advance(struct reqbuf_pool *p);

/* A handler holding data that lies in the current buffer: keep that buffer
 * until reqbuf_return(id).  Returns the id (>= 0), or -1 when data is not in
 * a lendable buffer (the caller must then not keep data).  A buffer given
 * back with no loan left becomes the current one (the warmest). */
int reqbuf_lend(struct reqbuf_pool *p, const void *data, size_t len);
void reqbuf_return(struct reqbuf_pool *p, int id);

/* Counts for tests and the log. */
unsigned reqbuf_lent_now(const struct reqbuf_pool *p);

#endif
