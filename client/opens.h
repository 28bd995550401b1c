/* client/opens.h — internal to client/ and the channel manager above it:
 * the table of open handles, so they outlive a connection
 * (client/opens.c).
 *
 * Callers keep the FileId smb_open() gave them for the life of the handle;
 * after a reconnect every request is patched on its way out
 * (smb_req_fix_fids) to the handle's current FileId, and a handle that
 * could not be reopened is lost (its requests fail with -EIO).
 *
 * Oplock breaks are acknowledged here (a lease break goes to lease.h),
 * after the caller's smb_break_cb has seen them; that callback, set by
 * smb_client_set_break_cb() once before the first smb_open() (client.h),
 * is kept in the table too.
 *
 * Owner: opens.c.  The table (struct smb_opens, opaque outside opens.c)
 * hangs off c->opens: made by smb_opens_init() in smb_client_open()
 * before any channel, a talloc child of c freed with it.  Lock: the
 * table's own rwlock, taken inside these calls only, never held across a
 * call out.  Threads: any, except where a call says.
 */
#ifndef SMBRDMA_CLIENT_OPENS_H
#define SMBRDMA_CLIENT_OPENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/proto/smb2.h" /* struct smb2_fileid */

struct smb_client;
struct smb_chan;
struct smb_req;
struct smb_open_args;

int smb_opens_init(struct smb_client *c);
void smb_opens_new_guid(uint8_t guid[16]);
/* Record a handle smb_open() got (fid is what its caller keeps). */
void smb_opens_add(struct smb_client *c, struct smb2_fileid fid, const char *path,
                   const struct smb_open_args *args, const uint8_t create_guid[16], bool durable);
/* The oplock level (SMB2_OPLOCK_LEVEL_*) the handle holds now. */
void smb_opens_set_oplock(struct smb_client *c, struct smb2_fileid fid, uint8_t level);
void smb_opens_remove(struct smb_client *c, struct smb2_fileid fid);
/* A number for the open behind fid that no other open of this client has
 * had or will have, and that changes when a reconnect reopens it (it may be
 * another file then): what RDMA offload tags a pool buffer with (a buffer
 * back from an I/O of this open may serve its next I/O uncleared,
 * offload.h).  0 when fid is not in the table, lost, or closing. */
uint64_t smb_opens_serial(struct smb_client *c, struct smb2_fileid fid);
/* The handle's CLOSE is on its way (before it is submitted); the record
 * stays until smb_opens_remove() at its answer. */
void smb_opens_closing(struct smb_client *c, struct smb2_fileid fid);
/* Is a CLOSE on its way for a file (not a directory) whose open named
 * parent_lease_id as its parent's lease (ParentLeaseKey)?  Scans the table
 * only while some CLOSE is (lease.c, at a break; any thread). */
bool smb_opens_closing_below(struct smb_client *c, uint64_t parent_lease_id);
bool smb_opens_lost(struct smb_client *c, struct smb2_fileid fid);
/* A LOCK on fid succeeded (loop thread, at its answer): its elements are
 * what the server holds now for the handle; an element with
 * SMB2_LOCKFLAG_UNLOCK gives back one held lock of that exact range.  What
 * is held is taken again when a reconnect reopens the handle by path
 * (client.h, smb_client_set_lock_lost_cb). */
struct smb2_lock_elem;
void smb_opens_locks_done(struct smb_client *c, struct smb2_fileid fid,
                          const struct smb2_lock_elem *e, uint16_t n);
/* LockSequence for a LOCK on fid ([MS-SMB2] 2.2.26, 3.2.4.19): a bucket
 * of a durable handle, so that the server knows a replay of it by the
 * bucket's number (3.3.5.14) and does not lock twice; 0 (none) for other
 * handles, or when all 64 buckets are busy.  lock_seq_done() when the LOCK
 * is answered (or failed): the bucket is free, its number moves on. */
uint32_t smb_opens_lock_seq_take(struct smb_client *c, struct smb2_fileid fid);
void smb_opens_lock_seq_done(struct smb_client *c, struct smb2_fileid fid, uint32_t seq);
/* Point the request's FileIds at the handles' current ones (any thread,
 * before each submit).  -EIO when one refers to a handle lost in a
 * reconnect. */
int smb_req_fix_fids(struct smb_client *c, struct smb_req *req);
/* Reopen every handle on the new channel ch (channel manager thread). */
int smb_opens_reopen(struct smb_client *c, struct smb_chan *ch, void *mem, unsigned *n_durable,
                     unsigned *n_path, unsigned *n_lost);
/* An OPLOCK_BREAK notification arrived on ch (loop thread): acknowledge. */
void smb_opens_on_break(struct smb_client *c, const uint8_t *pdu, size_t len);

#endif
