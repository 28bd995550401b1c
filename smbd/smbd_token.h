/* smbd/smbd_token.h — the registration cache and the per-I/O token machine
 * of RDMA offload, with no verbs: smbd_transport.c drives it with real verbs
 * through struct smbd_verbs_ops, tests/unit/smbd/test_smbd_token.c with fakes.
 * The public contract is smbd/smbd_offload.h; this is its engine.
 *
 * Threading: every function takes tt->lock itself.  ops->alloc_mw,
 * post_bind and post_local_inv are called with it held (they must not call
 * back into the table); reg_mr, dereg_mr and schedule without it.  get,
 * set_dialect and region_* may run on any thread; put, wr_done, remote_inv,
 * run_done and set_dead belong on the loop thread (put elsewhere is safe but
 * may miss a remote invalidation not yet reaped).  Done callbacks run only
 * from smbd_tokens_run_done(), never from inside put(), without the lock.
 */
#ifndef SMBRDMA_SMBD_TOKEN_H
#define SMBRDMA_SMBD_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smbd/smbd_offload.h"

/* Internal access bit for reg_mr: the region may carry memory windows. */
#define SMBD_ACCESS_MW_BIND (1 << 8)

/* What reg_mr and post_bind are asked for (the access rules of the engine):
 *  - a cached region: SMBD_ACCESS_MW_BIND, never a remote bit, so the
 *    region's own rkey opens nothing (the implementation adds local write
 *    access, which windows require); only where the device has windows:
 *    without, a region is a remembered range, never registered;
 *  - a per-I/O registration and a window bind: exactly one of
 *    SMBD_ACCESS_REMOTE_WRITE (an SMB2 READ: the server writes) or
 *    SMBD_ACCESS_REMOTE_READ (an SMB2 WRITE: the server reads), over exactly
 *    the I/O's bytes. */

struct smbd_verbs_ops {
	/* Register [addr, addr+len) with SMBD_ACCESS_* bits (+MW_BIND). */
	int (*reg_mr)(void *arg, void *addr, size_t len, int access, void **mr, uint32_t *rkey);
	void (*dereg_mr)(void *arg, void *mr);
	int (*alloc_mw)(void *arg, void **mw, uint32_t *rkey);
	void (*dealloc_mw)(void *arg, void *mw);
	/* Post a signalled bind of mw over [addr, addr+len) of mr with rkey
	 * new_rkey; its completion comes back through smbd_tokens_wr_done(wr_id). */
	int (*post_bind)(void *arg, void *mw, void *mr, uint32_t new_rkey, uint64_t addr,
	                 size_t len, int access, uint64_t wr_id);
	/* Post a signalled IBV_WR_LOCAL_INV of rkey; completion as above. */
	int (*post_local_inv)(void *arg, uint32_t rkey, uint64_t wr_id);
	/* Ask for smbd_tokens_run_done() on the loop thread soon. */
	void (*schedule)(void *arg);
};

struct smbd_tokens;

/* has_mw: the device binds type-2 windows; max_mw: pool size (the caller
 * sized its send queue for a bind and an invalidate outstanding per window). */
int smbd_tokens_new(const struct smbd_verbs_ops *ops, void *arg, bool has_mw, uint32_t max_mw,
                    struct smbd_tokens **out);
/* Deregisters every region and window; tokens still held are freed (warned). */
void smbd_tokens_free(struct smbd_tokens *tt);

void smbd_tokens_set_dialect(struct smbd_tokens *tt, uint16_t dialect);

/* Registration cache. */
int smbd_tokens_region_add(struct smbd_tokens *tt, void *addr, size_t len);
int smbd_tokens_region_remove(struct smbd_tokens *tt, void *addr);
/* The reg_mr handle of the region starting at addr, or NULL (none, or not
 * registered: no windows).  Tests: valid until that region is removed. */
void *smbd_tokens_region_mr(struct smbd_tokens *tt, const void *addr);
/* true if [addr, addr+len) lies inside one registered region. */
bool smbd_tokens_region_covers(struct smbd_tokens *tt, const void *addr, size_t len);

/* A window bound over buf (buf inside a region, windows free), else a per-I/O
 * registration of buf; when both fail, the registration's error (the caller
 * then moves the I/O inline: no token ever names a region's own key). */
int smbd_tokens_get(struct smbd_tokens *tt, void *buf, size_t len, int access,
                    struct smbd_io_token **tok, uint8_t desc[16], uint32_t *channel);
void smbd_tokens_set_moved(struct smbd_io_token *tok, size_t bytes);
void smbd_tokens_put(struct smbd_tokens *tt, struct smbd_io_token *tok, void (*done)(void *arg),
                     void *arg);
/* A bind or local-invalidate work request completed (ok false: error/flush). */
void smbd_tokens_wr_done(struct smbd_tokens *tt, uint64_t wr_id, bool ok);
/* A receive came by Send-with-Invalidate on rkey.  0, or -ENOENT if no bound
 * window of ours has that rkey. */
int smbd_tokens_remote_inv(struct smbd_tokens *tt, uint32_t rkey);
/* The QP is in error (or gone): nobody remote can reach our memory any more. */
void smbd_tokens_set_dead(struct smbd_tokens *tt);
void smbd_tokens_run_done(struct smbd_tokens *tt);

struct smbd_token_stats {
	uint64_t mw_bound, mw_inv_remote, mw_inv_local;
	uint64_t mr_per_io;
	uint64_t binds_failed; /* a bind could not be posted: a per-I/O registration instead */
	uint64_t regs_failed;  /* a per-I/O registration failed: get() gave no token */
	uint64_t rdma_read_bytes, rdma_write_bytes;
	uint64_t unknown_remote_inv;
	uint32_t tokens_active;
};
void smbd_tokens_get_stats(struct smbd_tokens *tt, struct smbd_token_stats *out);

#endif
