/* client/dfs_ns.h — internal to client/: a DFS namespace under one mount
 * ([MS-DFSC]), so that a path below a DFS link reaches the share the link
 * points to (client/dfs_ns.c).
 *
 * The shape.  The mount's own client (the "root": the share the user
 * named, a DFS root) keeps serving every path that is not below a link.
 * When the root answers a path with STATUS_PATH_NOT_COVERED, the path
 * crosses a link: the namespace asks the root's server for a referral
 * (FSCTL_DFS_GET_REFERRALS on its IPC$, client/proto/dfs.h), learns how
 * much of the path the link covers (PathConsumed) and the link's targets
 * in the server's order, and opens a client of its own to the first
 * target that answers ("the link's client": the same options and
 * credentials as the mount, another server and share, the root's event
 * loop).  The call runs again there, and every later call whose path is
 * below the link goes there directly (the referral cache, longest prefix
 * first).  The link's client may itself be the root of a further
 * namespace: it has a namespace of its own then.
 *
 * What the caller of client.h sees does not change: the same calls, the
 * same callbacks on the same (root's) loop thread.  Two things are made
 * unique across the servers of a namespace:
 *  - FileIds: every handle smb_open() hands out while the namespace is on
 *    is a virtual one (volatile_ DFS_VFID_TAG, persistent a serial number)
 *    that names the client and the server's own FileId; the handle calls
 *    translate it, and the break and lock-lost callbacks get it back.  A
 *    FileId that is not virtual goes to the root as it is (the engine's
 *    own continuations pass real ones).
 *  - file ids (smb_attr.file_id, the inode numbers): a link's are mixed
 *    with its number (one odd constant times it, XORed), so that two
 *    servers' equal numbers stay two files.
 * A rename or hard link between two clients fails with -EXDEV (the
 * caller copies), as does a server-side copy between them.
 *
 * Hooks.  Each smb_*() call of client.h that takes a path or a handle and
 * builds requests itself begins with
 *     if (smb_dfs_routes(c)) return smb_dfs_<call>(c, ...);
 * smb_dfs_routes() is false on a client without a namespace and while
 * the namespace itself is running a call on its root (a thread-local
 * flag, set around that synchronous call only).
 *
 * Threads and locks.  Calls come from any thread (client.h).  Referrals
 * and the link clients' set-up block, so a worker thread of the namespace
 * does them, one at a time, and hands the waiting call back to the root's
 * loop to run again.  The namespace's mutex guards the link table, the
 * virtual FileId table and the worker's queue; no callback runs under it.
 * A link's client lives until smb_dfs_destroy().
 *
 * Lifetime: smb_dfs_init() at the end of smb_client_open() (the root
 * connected, its tree a DFS one), smb_dfs_destroy() first thing in
 * smb_client_destroy() (off the loop thread): the worker stops, the link
 * clients are destroyed (their requests fail with -ECONNABORTED), then
 * the root goes down as any client.
 */
#ifndef SMBRDMA_CLIENT_DFS_NS_H
#define SMBRDMA_CLIENT_DFS_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"

struct smb_client;
struct smb_dfs;

/* The volatile_ of a virtual FileId. */
#define DFS_VFID_TAG 0xd5f5f11e0000d5f5ull

/* Does the tree connect say the share is in a DFS namespace? */
bool smb_dfs_tree_is_dfs(const struct smb_client *c);
int smb_dfs_init(struct smb_client *c);
void smb_dfs_destroy(struct smb_client *c);
/* Route this call through the namespace (see Hooks above)? */
bool smb_dfs_routes(const struct smb_client *c);

/* The routed calls: each has its client.h namesake's contract. */
int smb_dfs_stat(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
int smb_dfs_open(struct smb_client *c, const char *path, const struct smb_open_args *args,
                 smb_open_cb cb, void *arg);
int smb_dfs_create_file(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
int smb_dfs_mkdir(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
int smb_dfs_create_in(struct smb_client *c, const char *path, bool dir, bool set_mode,
                      uint32_t mode, uint64_t lease_id, uint64_t parent_lease_id, smb_attr_cb cb,
                      void *arg);
int smb_dfs_unlink_in(struct smb_client *c, const char *path, bool is_dir, uint64_t lease_id,
                      uint64_t parent_lease_id, smb_status_cb cb, void *arg);
int smb_dfs_rename(struct smb_client *c, const char *from, const char *to, bool replace,
                   smb_status_cb cb, void *arg);
int smb_dfs_setattr(struct smb_client *c, const char *path, const struct smb2_fileid *fid,
                    const struct smb_setattr_args *args, smb_attr_cb cb, void *arg);
int smb_dfs_query_eas(struct smb_client *c, const char *path, const char *name, smb_buf_cb cb,
                      void *arg);
int smb_dfs_set_ea(struct smb_client *c, const char *path, const char *name, const void *value,
                   size_t len, smb_status_cb cb, void *arg);
int smb_dfs_link(struct smb_client *c, const char *from, const char *to, smb_status_cb cb,
                 void *arg);
int smb_dfs_put_small(struct smb_client *c, const char *path, const void *data, size_t len,
                      smb_status_cb cb, void *arg);
int smb_dfs_get_small(struct smb_client *c, const char *path, size_t max, smb_buf_cb cb, void *arg);
int smb_dfs_get_reparse(struct smb_client *c, const char *path, smb_buf_cb cb, void *arg);

int smb_dfs_close(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg);
int smb_dfs_close_batch(struct smb_client *c, const struct smb2_fileid *fids,
                        const uint64_t *mtimes, void *const *args, int n, smb_status_cb cb);
int smb_dfs_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg);
int smb_dfs_read(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, size_t len,
                 smb_read_cb cb, void *arg);
int smb_dfs_read_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, void *buf,
                      size_t len, smb_read_cb cb, void *arg);
int smb_dfs_write(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                  size_t len, bool lent, smb_write_cb cb, void *arg);
int smb_dfs_write_times(struct smb_client *c, struct smb2_fileid fid, uint64_t offset,
                        const void *data, size_t len, const struct smb_setattr_args *times,
                        smb_write_cb cb, void *arg);
int smb_dfs_flush(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg);
int smb_dfs_readdir(struct smb_client *c, struct smb2_fileid fid, bool restart, smb_dir_cb cb,
                    void *arg);
int smb_dfs_fsctl(struct smb_client *c, struct smb2_fileid fid, uint32_t code, const void *in,
                  size_t inlen, uint32_t max_out, smb_buf_cb cb, void *arg);
int smb_dfs_lock(struct smb_client *c, struct smb2_fileid fid, const struct smb2_lock_elem *e,
                 uint16_t n, smb_status_cb cb, void *arg);
int smb_dfs_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                       struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                       void *arg);
bool smb_dfs_file_failed(struct smb_client *c, struct smb2_fileid fid);

/* The callbacks set on the root, kept for the links' clients too (and,
 * for those that carry a FileId, set on the root as trampolines that
 * hand out the virtual one).  From the smb_client_set_*() calls. */
void smb_dfs_set_break_cb(struct smb_client *c, smb_break_cb cb, void *arg);
void smb_dfs_set_lock_lost_cb(struct smb_client *c, smb_lock_lost_cb cb, void *arg);
void smb_dfs_set_lease_break_cb(struct smb_client *c, smb_lease_break_cb cb, void *arg);
void smb_dfs_set_meta_split(struct smb_client *c, enum smb_meta_split mode);
/* Regions given to the root go to every link's client as well. */
void smb_dfs_region_add(struct smb_client *c, void *addr, size_t len);
/* smb_client_reconnect_now() on every link's client; how many channels. */
int smb_dfs_reconnect_now(struct smb_client *c, const char *why);

#endif
