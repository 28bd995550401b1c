/* fuse/plock.h — the POSIX (fcntl) record locks this mount holds on one file.
 *
 * Pure bookkeeping: no FUSE, no engine.  ops_lock.c keeps one plock_set per
 * inode that has locks and mirrors every segment on the server as an SMB2
 * byte-range lock taken through the segment's handle.
 *
 * A segment is an inclusive byte range [start, end] held by one lock owner
 * (the kernel's fl_owner, FUSE's lock_owner), of one type (F_RDLCK or
 * F_WRLCK), taken through one handle (`fh`, opaque here).  Invariants:
 *   - the segments of one owner never overlap;
 *   - segments of different owners overlap only when both are F_RDLCK.
 * Adjacent or overlapping segments of one owner and type are NOT merged:
 * each stands as it was locked on the server, and merging would mean
 * unlocking and relocking it there (a window in which another client could
 * take it).  So extending a lock adds only the missing pieces, and only a
 * conversion (F_RDLCK <-> F_WRLCK) or a partial unlock touches what is held.
 *
 * plock_plan() works out what a request changes without changing the set:
 * the owner's segments to drop (to unlock on the server) and the segments to
 * add (to lock), pieces of split segments included.  The caller does the
 * server's part, then plock_commit()s the plan, or plock_plan_free()s it.
 *
 * Ownership: the set owns its segments; a plan owns its `add` segments until
 * plock_commit() moves them into the set, and points at (does not own) the
 * set's `drop` segments, which stay valid until the set is changed.
 * Threads: none; the caller serialises every use of one set.
 */
#ifndef SMBRDMA_FUSE_PLOCK_H
#define SMBRDMA_FUSE_PLOCK_H

#include <stddef.h>
#include <stdint.h>

#define PLOCK_MAX UINT64_C(0x7FFFFFFFFFFFFFFF) /* OFFSET_MAX: "to the end of the file" */

struct plock_seg {
	uint64_t owner;
	uint64_t start, end; /* inclusive, end <= PLOCK_MAX */
	int type;            /* F_RDLCK or F_WRLCK */
	uint32_t pid;        /* who took it, for F_GETLK */
	void *fh;            /* the handle it is locked through on the server */
	struct plock_seg *next;
};

struct plock_set {
	struct plock_seg *segs; /* unordered */
};

struct plock_plan {
	struct plock_seg **drop; /* segments of the set to unlock and remove */
	size_t ndrop;
	struct plock_seg *add; /* new segments to lock and insert (a list) */
	size_t nadd;
};

/* A segment of another owner that conflicts with `type` over [start, end]
 * (F_WRLCK conflicts with anything, F_RDLCK with F_WRLCK), or NULL. */
const struct plock_seg *plock_conflict(const struct plock_set *s, uint64_t owner, uint64_t start,
                                       uint64_t end, int type);

/* What owner's request `type` (F_RDLCK, F_WRLCK or F_UNLCK) over [start, end]
 * through fh changes, into *plan (zeroed first).  Does not check conflicts
 * (plock_conflict() first).  0, or -ENOMEM (nothing allocated then). */
int plock_plan(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end, int type,
               uint32_t pid, void *fh, struct plock_plan *plan);

/* Apply a plan made on s with no change to s since: drop its `drop`
 * segments (freed), insert its `add` segments.  The plan is empty after. */
void plock_commit(struct plock_set *s, struct plock_plan *plan);

/* Forget a plan that will not be committed (frees its `add` segments). */
void plock_plan_free(struct plock_plan *plan);

/* The parts of [start, end] that none of owner's segments covers, at most
 * max of them, in order, into out[] as (start, end) pairs.  Their number, or
 * max + 1 when there are more. */
size_t plock_gaps(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end,
                  uint64_t (*out)[2], size_t max);

/* Remove every segment taken through fh (its handle is closed: the server
 * has dropped them); how many. */
size_t plock_drop_fh(struct plock_set *s, const void *fh);

/* Remove every segment; the set is empty after. */
void plock_clear(struct plock_set *s);

#endif
