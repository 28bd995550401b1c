/* common/evloop.h — an epoll event loop running on one thread of its own.
 *
 * One loop serves every channel of a mount.  Callbacks (fd readiness, timers,
 * deferred calls) all run on the loop thread, one at a time, so state touched
 * only from callbacks needs no lock.  Any thread may call ev_call(),
 * ev_timer_*() and ev_fd_*(); they take the loop's internal lock briefly.
 *
 * Lifetime: ev_loop_new() creates and starts the thread; ev_loop_free() stops
 * it (after running the calls already queued) and joins it.  Never call
 * ev_loop_free() from the loop thread.  A callback must not block.
 */
#ifndef SMBRDMA_COMMON_EVLOOP_H
#define SMBRDMA_COMMON_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h> /* EPOLLIN, EPOLLOUT for the events masks */

struct ev_loop;
struct ev_fd;
struct ev_timer;

/* events: EPOLLIN / EPOLLOUT bits.  Called on the loop thread. */
typedef void (*ev_fd_fn)(struct ev_fd *f, uint32_t events, void *arg);
typedef void (*ev_fn)(void *arg);

int ev_loop_new(struct ev_loop **out);
void ev_loop_free(struct ev_loop *loop);
bool ev_on_loop_thread(const struct ev_loop *loop);

/* Watch fd.  The loop does not own fd; ev_fd_del() before closing it.  After
 * ev_fd_del() returns on the loop thread, fn is not called again; from another
 * thread the removal takes effect before the loop's next wait. */
int ev_fd_add(struct ev_loop *loop, int fd, uint32_t events, ev_fd_fn fn, void *arg,
              struct ev_fd **out);
int ev_fd_mod(struct ev_fd *f, uint32_t events);
void ev_fd_del(struct ev_fd *f);

/* Run fn(arg) on the loop thread soon (FIFO order).  Safe from any thread,
 * including the loop thread itself (then it runs after the current callback). */
int ev_call(struct ev_loop *loop, ev_fn fn, void *arg);
/* ev_call(), then wait until fn(arg) has returned (fn may be NULL: a
 * barrier, every call queued before has run).  Not from the loop thread
 * (it would wait for itself).  0, or ev_call()'s -errno (fn not run). */
int ev_call_wait(struct ev_loop *loop, ev_fn fn, void *arg);

/* One-shot timer, milliseconds from now; ev_timer_cancel() before it fires
 * frees it and guarantees fn is not called (when called on the loop thread;
 * from another thread, fn may already be running).  A fired timer frees itself
 * after fn returns: do not cancel it after that. */
int ev_timer_add(struct ev_loop *loop, uint64_t ms, ev_fn fn, void *arg, struct ev_timer **out);
void ev_timer_cancel(struct ev_timer *t);

/* Monotonic milliseconds. */
uint64_t ev_now_ms(void);

#endif
