/* fuse/negcache.h — names a LOOKUP just found missing, for the LOOKUP of
 * the same name that follows.
 *
 * `tar x` and `git checkout` lstat(2) a name, then create it with
 * open(O_CREAT|O_EXCL); the kernel revalidates a negative entry for an
 * exclusive create (LOOKUP_EXCL), so FUSE sends a second LOOKUP of the name
 * a moment after the first, and mkdir -p and git's directory walk look a
 * missing name up two or three times.  Where the directory's whole listing
 * is not held under a lease (smbfs_dir_lacks(): ksmbd breaks a directory's
 * lease at the close of every file written in it), each was a round trip.
 *
 * What it keeps: the last NEGC_SLOTS answers "name is not in directory
 * parent", each good for ttl_ns after the answer was asked for (the mount
 * uses min(actimeo, 1 s): cifs.ko trusts a negative dentry 1 s for a
 * lookup that creates nothing).  Any change this mount makes to a name
 * (create, mkdir, mknod, symlink, link, rename; smbfs_dir_known_add()) and
 * any oplock or lease break forgets them all (negc_changed()): an answer
 * asked for before a change is never stored after it (the epoch taken when
 * the LOOKUP went out must still be current when its answer lands).  A
 * create is never wrong for it: its CREATE disposition (FILE_CREATE for
 * O_EXCL) is the server's to answer.  What it may hide, for at most ttl_ns,
 * is a name another client made meanwhile without breaking a lease of
 * ours: as cifs.ko does for a second.
 *
 * Names are compared byte for byte (a differently cased name misses, which
 * costs a round trip, never a wrong answer).  Threads: any; one mutex
 * guards the slots, the epoch is atomic.
 */
#ifndef SMBRDMA_FUSE_NEGCACHE_H
#define SMBRDMA_FUSE_NEGCACHE_H

#include <stdbool.h>
#include <stdint.h>

#define NEGC_SLOTS 64

struct negc;

/* NULL when out of memory (the mount then keeps no negative answers). */
struct negc *negc_new(void);
void negc_free(struct negc *nc);

/* The epoch to give negc_add() for a LOOKUP sent now. */
uint64_t negc_epoch(struct negc *nc);
/* A LOOKUP sent at epoch (negc_epoch()) and at now_ns found name missing
 * in parent: kept, unless something changed since it was sent. */
void negc_add(struct negc *nc, uint64_t parent, const char *name, uint64_t epoch, uint64_t now_ns);
/* Did a LOOKUP asked for less than ttl_ns before now_ns, with nothing
 * changed since, find name missing in parent? */
bool negc_lacks(struct negc *nc, uint64_t parent, const char *name, uint64_t now_ns,
                uint64_t ttl_ns);
/* A name may have appeared: forget every answer. */
void negc_changed(struct negc *nc);

#endif
