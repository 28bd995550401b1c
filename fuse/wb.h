/* fuse/wb.h — the table of WRITEs in flight, for write-behind.
 *
 * A buffered write(2) on a file the mount holds a write-caching lease on
 * (R|W|H: no other client can see or change the file without breaking it
 * first) is answered as soon as its WRITE is sent; the data goes on to the
 * server while the kernel hands us the next piece, so a `cp` pipelines
 * like fio at queue depth 8 instead of waiting out each 1 MiB.  This table
 * holds every WRITE the mount has in flight, answered early or not, so
 * that what must wait for them can:
 *  - room: at most max_bytes of WRITEs (or max_writes of them) are in
 *    flight with their write(2) already answered; a write past that is
 *    answered when it completes or when the table has room again, oldest
 *    first (wb_done());
 *  - order: a write overlapping one in flight for the same inode, or
 *    arriving while another waits, waits for the inode to be idle, so two
 *    WRITEs to one range never race over two channels (wb_must_wait());
 *  - barriers: read, flush, fsync, release, setattr, fallocate, lseek,
 *    copy_file_range and a lease break's acknowledgement wait until the
 *    inode has nothing in flight (wb_when_idle());
 *  - size: attributes the server sends while answered writes are still on
 *    their way say the file ends before them; wb_end() is the end the
 *    kernel was told, which a reply's st_size must not fall below.
 * An error of a WRITE answered early goes to its owner (the handle, in
 * fuse/ops_file.c), which reports it on the next write, flush or fsync.
 *
 * Pure: no FUSE, no engine; the caller sends, answers and runs waiters.
 * Threads: every call takes the table's own mutex, so a lease break on the
 * channel manager's thread may register a waiter while the loop thread
 * completes writes.  Callbacks run with no lock held, on the thread that
 * called wb_done() (or wb_when_idle() never calls its fn itself).
 * Ownership: entries and waiters are the caller's memory, embedded in its
 * request contexts; they must stay valid until wb_done() returns them
 * (writes) or fn is called (waiters).
 */
#ifndef SMBRDMA_FUSE_WB_H
#define SMBRDMA_FUSE_WB_H

#include <stdbool.h>
#include <stdint.h>

struct wb_table;

struct wb_write {
	uint64_t nodeid;
	uint64_t off, len;
	bool may_answer; /* in: may be answered before it completes */
	bool answered;   /* out: it was (by wb_add() or through wb_done()'s answer) */
	/* the table's, under its lock */
	struct wb_write *prev, *next;
};

struct wb_waiter {
	uint64_t nodeid;
	void (*fn)(void *arg);
	void *arg;
	struct wb_waiter *next; /* the table's */
};

/* NULL on ENOMEM. */
struct wb_table *wb_new(uint64_t max_bytes, unsigned max_writes);
/* Nothing may be in flight or waiting. */
void wb_free(struct wb_table *t);

/* Must a write to [off, off+len) of nodeid wait (wb_when_idle) before it is
 * sent: one in flight overlaps it, or other work already waits on nodeid. */
bool wb_must_wait(struct wb_table *t, uint64_t nodeid, uint64_t off, uint64_t len);
/* w was sent: enter it.  Returns w->answered: true when the caller answers
 * the write(2) now (w->may_answer and there is room). */
bool wb_add(struct wb_table *t, struct wb_write *w);
/* w, in the table and not sent yet, takes add bytes more (a gathered write,
 * ops_file.c): true, or false when that would leave no room (w unchanged). */
bool wb_grow(struct wb_table *t, struct wb_write *w, uint64_t add);
/* w completed: it leaves the table.  Then answer() is called for each
 * write still in flight that may now be answered (oldest first; each is
 * marked answered before), and then each waiter whose inode has nothing
 * left in flight is taken off and its fn called.  w itself is not passed
 * to answer(): the caller sees w->answered and acts. */
void wb_done(struct wb_table *t, struct wb_write *w, void (*answer)(struct wb_write *w));
/* If nodeid has nothing in flight: false, and fn is not called.  Else
 * true, and fn(arg) is called once, from wb_done(), when it has none;
 * waiters run in the order they came. */
bool wb_when_idle(struct wb_table *t, struct wb_waiter *w, uint64_t nodeid, void (*fn)(void *arg),
                  void *arg);
/* Has nodeid a WRITE in flight? */
bool wb_busy(struct wb_table *t, uint64_t nodeid);
/* How many WRITEs of nodeid are in the table (gathered ones included). */
unsigned wb_in_flight_of(struct wb_table *t, uint64_t nodeid);
/* The end of the furthest answered write of nodeid in flight, 0 if none. */
uint64_t wb_end(struct wb_table *t, uint64_t nodeid);
/* Counts, for the log and the tests. */
unsigned wb_in_flight(struct wb_table *t);
uint64_t wb_answered_early(struct wb_table *t); /* writes answered before they completed */

#endif
