/* client/offload.h — internal to client/: RDMA offload of READ/WRITE payloads
 * (see offload.c for the pool and the life of one offloaded I/O). */
#ifndef SMBRDMA_CLIENT_OFFLOAD_H
#define SMBRDMA_CLIENT_OFFLOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"

#define SMB_OFFLOAD_MAX_BUFS 64

/* Buffers registered once with the transport; lock guards the free stack
 * and the dirty list.  A free buffer is all zeros.  A buffer back from its
 * I/O goes on the dirty list tagged with the open it served
 * (smb_opens_serial(), opens.h); the next I/O of that same open may take
 * it as it is, and any other I/O gets a cleared one.  So a server that
 * RDMA-Writes less than it announces leaves zeros or bytes that one open
 * already moved (which that open's reader may read, and the server had),
 * never the bytes of another open's I/O.  A sequential read of one file
 * then clears nothing: under TCG the 1 MiB memset per READ was a tenth of
 * the daemon's CPU.
 *
 * The clearing is off the loop thread: the pool's cleaner thread (started
 * by smb_offload_setup(), joined by smb_offload_teardown(); one per pool,
 * it only ever clears dirty buffers and pushes them on the free stack)
 * clears the oldest dirty buffer whenever fewer than half the buffers are
 * free (or smb_offload_wait_clean() asks).  When the free stack is empty,
 * the thread taking a buffer clears a dirty one itself, so a buffer is
 * never handed to another open uncleared and an I/O never waits for the
 * cleaner.  Without a cleaner (pthread_create failed) buffers are cleared
 * where they come back, as before. */
struct smb_offload_pool {
	uint8_t *mem; /* NULL: no offload on this mount */
	size_t bufsize;
	int nbuf;
	pthread_mutex_t lock;
	int nfree;
	int free_stack[SMB_OFFLOAD_MAX_BUFS];
	/* Back from their I/O, not yet cleared, oldest first: index, bytes to
	 * clear, and the serial of the open whose I/O left them (0: none;
	 * taken uncleared by no I/O). */
	int ndirty;
	int dirty[SMB_OFFLOAD_MAX_BUFS];
	size_t dirty_len[SMB_OFFLOAD_MAX_BUFS];
	uint64_t dirty_open[SMB_OFFLOAD_MAX_BUFS];
	int clearing;        /* taken off the dirty list, being cleared */
	int draining;        /* in smb_offload_wait_clean(): the cleaner clears all */
	uint64_t reused;     /* I/Os that took their own open's dirty buffer */
	pthread_cond_t cond; /* the cleaner's: the dirty list grew, or stop */
	pthread_cond_t idle; /* nothing dirty and nothing being cleared */
	pthread_t cleaner;
	bool cleaner_up, stop;
	bool paused; /* tests: smb_offload_pause_cleaner() */
	/* Atomic.  READ/WRITEs meant for offload that went inline because the
	 * transport could give no per-I/O token; the first is logged. */
	uint64_t fallback_inline;
	bool fallback_logged;
};

struct smb_chan;

/* At channel set-up, not on the loop thread: allocate and register the pool
 * with ch's transport.  -errno (e.g. -EOPNOTSUPP on TCP) leaves the channel
 * without offload. */
int smb_offload_setup(struct smb_chan *ch, size_t bufsize);
void smb_offload_teardown(struct smb_chan *ch);
/* The channel's offload counters into out (any thread). */
struct smb_channel_stats;
void smb_offload_stats(struct smb_chan *ch, struct smb_channel_stats *out);
/* Should a READ (is_read) or WRITE of len bytes on ch be offloaded?  (A
 * pool exists, len is above the threshold and fits a pool buffer and the
 * channel's max_read or max_write: the server's MaxReadSize/MaxWriteSize,
 * rsize=/wsize=.) */
bool smb_offload_wanted(const struct smb_chan *ch, size_t len, bool is_read);
/* Like smb_read()/smb_write() for one offloadable I/O on ch.  -EAGAIN when
 * every pool buffer is busy, or when the transport gives no per-I/O token
 * (a failed registration or bind: counted in fallback_inline, logged once per
 * channel; a dead channel: not counted): the caller then sends it inline
 * (on a dead channel: parked for the reconnect like any request), and no
 * callback comes from here.  A read's data handed to cb is exactly what the
 * server was granted and announced (DataLength or DataRemaining, at most
 * len: more is -EIO), from a buffer that held zeros, or bytes of the same
 * open's earlier I/O (the pool above), before the server wrote into it. */
int smb_offload_read(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, size_t len,
                     smb_read_cb cb, void *arg);
int smb_offload_write(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset,
                      const void *data, size_t len, smb_write_cb cb, void *arg);
/* A write whose data lies in a region of smb_client_region_add() and fits
 * one offloaded I/O on ch: the server reads data in place (no pool buffer,
 * no copy); data stays the caller's, untouched until cb.  -EAGAIN when it
 * does not qualify (the caller then takes another path); no callback then. */
int smb_offload_write_lent(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset,
                           const void *data, size_t len, smb_write_cb cb, void *arg);
/* The same for a read into buf: the server RDMA-Writes straight into it; cb
 * gets data == buf (or another buffer, if the read had to go another way).
 * buf is zeroed before the server is granted it (what a server that writes
 * less than it announces leaves behind). */
int smb_offload_read_lent(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, void *buf,
                          size_t len, smb_read_cb cb, void *arg);
/* Until every buffer back from an I/O has been cleared and is free (tests:
 * which buffer the next I/O gets is then the top of the free stack; the
 * cleaner clears them all meanwhile, not only below half free). */
void smb_offload_wait_clean(struct smb_chan *ch);
/* Tests: hold the cleaner (buffers back stay dirty, so the next I/O that
 * finds the free stack empty clears one itself), or let it go on. */
void smb_offload_pause_cleaner(struct smb_chan *ch, bool paused);
/* Register with ch's transport every caller region it does not have yet
 * (called under c->chans_lock). */
int smb_offload_regions_sync(struct smb_chan *ch);

#endif
