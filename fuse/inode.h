/* fuse/inode.h — the table of inodes the kernel knows about.
 *
 * A FUSE nodeid is our own counter (1 = the root, never reused).  One inode
 * stands for one server file: every name that leads to the same server
 * file id (and type) is the same inode, so hard links share a nodeid as
 * POSIX wants.  An inode holds its names, each a (parent inode, name)
 * link; a hash map finds (parent, name) -> link, another finds a server
 * file id -> inode.  A path is built by walking up from an inode's first
 * name (the one linked, looked up or renamed to last), so a rename moves
 * one name and a directory's whole subtree follows.  A directory has one
 * name.  nlookup counts exactly the entries handed to the kernel (lookup,
 * create, mkdir, link, readdirplus) minus its forgets; an inode is freed
 * when nlookup is 0 and no name has it as parent (the root is never
 * freed), and its names with it.  A name that goes (unlink, replaced by a
 * rename, found to be another file) leaves the name map; an inode whose
 * last name went keeps that one, off the map, to build paths from until
 * it is forgotten, and is no longer found by its file id (a server may
 * give the id of a deleted file to a new one).
 *
 * Each inode also caches the server's attributes; they are "fresh" for
 * attr_timeout after they were stored and kept (stale) after that, for
 * callers that only need the file attributes or type.
 *
 * Locking: one mutex per table guards every field of every inode and name
 * and the three hash maps.  It is a leaf lock: nothing else is taken while
 * it is held, and no callback or FUSE reply happens under it.  Callers may
 * hold their own lock (e.g. a directory handle's) when they call in here.
 */
#ifndef SMBRDMA_FUSE_INODE_H
#define SMBRDMA_FUSE_INODE_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"

#define SMB_ROOT_NODEID 1

struct smb_inode_table;

/* root_prefix is the path of the mount root inside the share ("" for the
 * share root); attr_timeout_ns is how long stored attributes stay fresh. */
struct smb_inode_table *smb_inode_table_new(const char *root_prefix, uint64_t attr_timeout_ns);
void smb_inode_table_free(struct smb_inode_table *t);

/* The inode named (parent, name), with nlookup + 1 and the given attributes
 * stored at time now_ns.  If the name maps to an inode whose server file id
 * or type differs from attr, the name leaves that inode (it is another file
 * now).  An unknown name joins the live inode of attr's file id if there is
 * one (a hard link, or a directory another client moved, which then loses
 * its old name), else a new inode.  attr->nlink 0 (a directory listing
 * carries no link count) keeps the count stored before for the same file.
 * Returns 0 and the nodeid and st_ino to hand to the kernel, or -ENOENT if
 * parent is unknown, -ENOMEM. */
int smb_inode_link(struct smb_inode_table *t, uint64_t parent, const char *name,
                   const struct smb_attr *attr, uint64_t now_ns, uint64_t *nodeid,
                   uint64_t *st_ino);

/* nlookup -= n; frees the inode (and then any parent left unreferenced)
 * when it drops to 0.  Unknown nodeids are ignored.  Returns false when n
 * exceeds the count: our bookkeeping and the kernel's disagree, which is a
 * bug (libfuse's passthrough_hp aborts there).  The count is clamped to 0
 * so the mount goes on; the caller (smbfs_forget_count()) logs it as a
 * "BUG:" line, which fails every integration test that meets it. */
bool smb_inode_forget(struct smb_inode_table *t, uint64_t nodeid, uint64_t n);

/* Path of nodeid inside the share, with "/child" appended when child is not
 * NULL; malloc'd into *path.  -ENOENT for an unknown nodeid, -ENOMEM,
 * -ENAMETOOLONG past 32 KiB. */
int smb_inode_path(struct smb_inode_table *t, uint64_t nodeid, const char *child, char **path);

/* Cached attributes of nodeid.  Returns 0 with *fresh telling whether they
 * are within attr_timeout, -ENODATA if none were ever stored, -ENOENT for an
 * unknown nodeid.  st_ino may be NULL. */
int smb_inode_get_attr(struct smb_inode_table *t, uint64_t nodeid, uint64_t now_ns,
                       struct smb_attr *attr, bool *fresh, uint64_t *st_ino);
void smb_inode_set_attr(struct smb_inode_table *t, uint64_t nodeid, const struct smb_attr *attr,
                        uint64_t now_ns);
/* Keep the attributes but mark them stale (after a write, a create in a
 * directory, ...). */
void smb_inode_invalidate_attr(struct smb_inode_table *t, uint64_t nodeid);
/* Were attributes stored for nodeid at or after since_ns and not
 * invalidated since (however old they are)?  For a caller that knows by
 * other means (a lease held since since_ns) that the server's have not
 * changed. */
bool smb_inode_attr_valid_since(struct smb_inode_table *t, uint64_t nodeid, uint64_t since_ns);
/* A directory we changed (entry created, removed or renamed): like a local
 * file system, set its cached mtime and ctime to now (now_ns is wall-clock
 * ns since 1970) and keep the cache entry as fresh as it was, so the
 * kernel's permission checks on the parent do not each cost a round trip.
 * The server's own times replace these at the next refresh (actimeo). */
void smb_inode_dir_changed(struct smb_inode_table *t, uint64_t nodeid, uint64_t now_ns);

/* st_ino for nodeid: the server's file id, or the nodeid when the server
 * gave none.  0 for an unknown nodeid. */
uint64_t smb_inode_st_ino(struct smb_inode_table *t, uint64_t nodeid);

/* The lease key this mount opens nodeid with, when it is not the nodeid
 * itself (a directory we made gets a fresh one before it has a nodeid, and
 * keeps it: one lease per directory, whatever opens it); 0 when none was
 * set (or nodeid is unknown).  It goes with the inode.  Not for files: a
 * server ties a lease to the name it was first opened by ([MS-SMB2]
 * 3.3.5.9.8), and a file with two names (hard links) opened through both
 * under one key is refused (STATUS_INVALID_PARAMETER). */
uint64_t smb_inode_lease_key(struct smb_inode_table *t, uint64_t nodeid);
void smb_inode_set_lease_key(struct smb_inode_table *t, uint64_t nodeid, uint64_t key);

/* The parent of nodeid's first name (the one its path goes through); 0
 * for the root or an unknown nodeid. */
uint64_t smb_inode_parent(struct smb_inode_table *t, uint64_t nodeid);

/* The name (parent, name) is gone on the server: it leaves its inode,
 * whose cached attributes turn stale (a link count stored above 1 drops by
 * one meanwhile). */
void smb_inode_unlink(struct smb_inode_table *t, uint64_t parent, const char *name);
/* (oldparent, oldname) is now (newparent, newname), and becomes the name
 * paths of its inode use; the new name leaves the inode that had it (as
 * smb_inode_unlink).  The attributes of both inodes turn stale (ctime,
 * link count).  Returns 0, or -ENOMEM (the old name is then dropped too;
 * a lookup of the new one finds the inode again by its file id). */
int smb_inode_rename(struct smb_inode_table *t, uint64_t oldparent, const char *oldname,
                     uint64_t newparent, const char *newname);

/* Has every name of nodeid gone (unlinked, or replaced by a rename)?  The
 * root never goes; false for an unknown nodeid. */
bool smb_inode_unlinked(struct smb_inode_table *t, uint64_t nodeid);

/* This mount deleted the file's one and only name (it had a link count of
 * 1 when its name was moved out of sight and marked for deletion, see
 * fuse/ops_node.c): its true link count is 0 from then on, whatever the
 * server counts.  Servers differ on a name that is delete-pending until the
 * last close: FileStandardInformation leaves it out, ksmbd's SMB2 POSIX
 * information (HardLinks = i_nlink) counts it.  The mark is per inode and
 * stays (nothing gives the file a name again). */
void smb_inode_mark_last_name_deleted(struct smb_inode_table *t, uint64_t nodeid);
/* Marked, and every name gone; false for an unknown nodeid. */
bool smb_inode_last_name_deleted(struct smb_inode_table *t, uint64_t nodeid);

/* One more name of nodeid (not a directory) was moved out of sight and
 * marked for deletion while the file is open here: the server keeps it
 * until the file's last close, and may count it in a link count or not
 * (Samba 4.22 counts it when asked by another name, and leaves it out
 * when asked by the handle opened by it; servers differ).  Until
 * smb_inode_handles_closed(), a count n the server tells is taken as
 * somewhere in [n - hidden, n]: the count the table kept (one less at
 * each unlink) when it is in that range, else the nearest end.  Loop
 * thread and kernel request threads. */
void smb_inode_name_hidden(struct smb_inode_table *t, uint64_t nodeid);
/* Has nodeid names hidden since its last smb_inode_handles_closed()?  A
 * close asks before it looks for the inode's other handles. */
bool smb_inode_has_hidden_names(struct smb_inode_table *t, uint64_t nodeid);
/* This mount closed its last handle of nodeid: the server deleted the
 * hidden names, and its counts are the truth again. */
void smb_inode_handles_closed(struct smb_inode_table *t, uint64_t nodeid);
/* The link count to tell the kernel for nodeid when the server told
 * `told` (0: unknown) and the attributes were stored already: told, or
 * the table's count while hidden names may be in told. */
uint32_t smb_inode_nlink(struct smb_inode_table *t, uint64_t nodeid, uint32_t told);

/* The names of parent's children the table holds now (those in the name
 * map: not the ones gone), e.g. for the kernel's entries of a directory to
 * be dropped: *names is a malloc'd array of *n malloc'd strings, NULL when
 * *n is 0 (an unknown parent, or one without children); free it with
 * smb_inode_names_free().  0, or -ENOMEM (then none). */
int smb_inode_child_names(struct smb_inode_table *t, uint64_t parent, char ***names, size_t *n);
void smb_inode_names_free(char **names, size_t n);

/* For tests and debug logs: nlookup of nodeid (0 if unknown), the nodeid
 * bound to (parent, name) (0 if none), and the number of live inodes. */
uint64_t smb_inode_nlookup(struct smb_inode_table *t, uint64_t nodeid);
uint64_t smb_inode_find(struct smb_inode_table *t, uint64_t parent, const char *name);
/* A lookup answered from the table: (parent, name) is linked to an inode
 * whose attributes were stored at or after since_ns and not invalidated
 * since; then nlookup + 1 (as smb_inode_link), its attributes, nodeid and
 * st_ino, and 0.  -ESTALE otherwise (ask the server). */
int smb_inode_lookup_kept(struct smb_inode_table *t, uint64_t parent, const char *name,
                          uint64_t since_ns, struct smb_attr *attr, uint64_t *nodeid,
                          uint64_t *st_ino);
uint64_t smb_inode_count(struct smb_inode_table *t);

#endif
