/* common/evloop.c — epoll + eventfd loop on its own thread.
 *
 * Lock: loop->lock protects the call queue, the timer list and the free list.
 * It is never held while a callback runs.  ev_fd objects are freed only at the
 * end of a loop iteration (deferred), so a callback may delete any fd,
 * including one whose event is later in the same epoll batch.
 */
#include "common/evloop.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct ev_fd {
	struct ev_loop *loop;
	int fd;
	ev_fd_fn fn;
	void *arg;
	bool deleted;
	struct ev_fd *next_free;
};

struct ev_timer {
	struct ev_loop *loop;
	uint64_t due_ms;
	ev_fn fn;
	void *arg;
	struct ev_timer *next;
};

struct ev_call_item {
	ev_fn fn;
	void *arg;
	struct ev_call_item *next;
};

struct ev_loop {
	int epfd;
	int wakefd;
	pthread_t thread;
	pthread_mutex_t lock;
	/* under lock: */
	struct ev_call_item *calls_head, *calls_tail;
	struct ev_timer *timers; /* sorted by due_ms */
	struct ev_fd *free_list;
	bool stop;
};

uint64_t ev_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void loop_wake(struct ev_loop *loop)
{
	uint64_t one = 1;
	ssize_t n = write(loop->wakefd, &one, sizeof(one));
	(void)n; /* EAGAIN means a wake-up is already pending */
}

bool ev_on_loop_thread(const struct ev_loop *loop)
{
	return pthread_equal(pthread_self(), loop->thread);
}

static int next_timeout(struct ev_loop *loop)
{
	int timeout = -1;
	pthread_mutex_lock(&loop->lock);
	if (loop->calls_head)
		timeout = 0;
	else if (loop->timers) {
		uint64_t now = ev_now_ms();
		timeout = loop->timers->due_ms <= now ? 0 : (int)(loop->timers->due_ms - now);
	}
	pthread_mutex_unlock(&loop->lock);
	return timeout;
}

static void run_timers(struct ev_loop *loop)
{
	uint64_t now = ev_now_ms();
	for (;;) {
		pthread_mutex_lock(&loop->lock);
		struct ev_timer *t = loop->timers;
		if (!t || t->due_ms > now) {
			pthread_mutex_unlock(&loop->lock);
			return;
		}
		loop->timers = t->next;
		pthread_mutex_unlock(&loop->lock);
		t->fn(t->arg);
		free(t);
	}
}

static void run_calls(struct ev_loop *loop)
{
	pthread_mutex_lock(&loop->lock);
	struct ev_call_item *c = loop->calls_head;
	loop->calls_head = loop->calls_tail = NULL;
	pthread_mutex_unlock(&loop->lock);
	while (c) {
		struct ev_call_item *next = c->next;
		c->fn(c->arg);
		free(c);
		c = next;
	}
}

static void free_deleted(struct ev_loop *loop)
{
	pthread_mutex_lock(&loop->lock);
	struct ev_fd *f = loop->free_list;
	loop->free_list = NULL;
	pthread_mutex_unlock(&loop->lock);
	while (f) {
		struct ev_fd *next = f->next_free;
		free(f);
		f = next;
	}
}

static void *loop_main(void *arg)
{
	struct ev_loop *loop = arg;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(loop->epfd, evs, 64, next_timeout(loop));
		if (n < 0 && errno != EINTR) {
			smb_err("event loop: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			struct ev_fd *f = evs[i].data.ptr;
			if (!f) {
				uint64_t v;
				ssize_t r = read(loop->wakefd, &v, sizeof(v));
				(void)r;
				continue;
			}
			if (!__atomic_load_n(&f->deleted, __ATOMIC_ACQUIRE))
				f->fn(f, evs[i].events, f->arg);
		}
		run_timers(loop);
		run_calls(loop);
		free_deleted(loop);
		pthread_mutex_lock(&loop->lock);
		bool stop = loop->stop && !loop->calls_head;
		pthread_mutex_unlock(&loop->lock);
		if (stop)
			break;
	}
	return NULL;
}

int ev_loop_new(struct ev_loop **out)
{
	struct ev_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->epfd < 0 || loop->wakefd < 0)
		goto fail;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) < 0)
		goto fail;
	pthread_mutex_init(&loop->lock, NULL);
	int rc = pthread_create(&loop->thread, NULL, loop_main, loop);
	if (rc) {
		pthread_mutex_destroy(&loop->lock);
		errno = rc;
		goto fail;
	}
	*out = loop;
	return 0;
fail:;
	int err = errno ? -errno : -ENOMEM;
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->wakefd >= 0)
		close(loop->wakefd);
	free(loop);
	return err;
}

void ev_loop_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	pthread_mutex_lock(&loop->lock);
	loop->stop = true;
	pthread_mutex_unlock(&loop->lock);
	loop_wake(loop);
	pthread_join(loop->thread, NULL);
	run_calls(loop);
	free_deleted(loop);
	struct ev_timer *t = loop->timers;
	while (t) {
		struct ev_timer *next = t->next;
		free(t);
		t = next;
	}
	close(loop->epfd);
	close(loop->wakefd);
	pthread_mutex_destroy(&loop->lock);
	free(loop);
}

int ev_fd_add(struct ev_loop *loop, int fd, uint32_t events, ev_fd_fn fn, void *arg,
              struct ev_fd **out)
{
	struct ev_fd *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->loop = loop;
	f->fd = fd;
	f->fn = fn;
	f->arg = arg;
	struct epoll_event ev = {.events = events, .data.ptr = f};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		free(f);
		return err;
	}
	*out = f;
	return 0;
}

int ev_fd_mod(struct ev_fd *f, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = f};
	return epoll_ctl(f->loop->epfd, EPOLL_CTL_MOD, f->fd, &ev) < 0 ? -errno : 0;
}

void ev_fd_del(struct ev_fd *f)
{
	if (!f)
		return;
	struct ev_loop *loop = f->loop;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, f->fd, NULL);
	__atomic_store_n(&f->deleted, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&loop->lock);
	f->next_free = loop->free_list;
	loop->free_list = f;
	pthread_mutex_unlock(&loop->lock);
	if (!ev_on_loop_thread(loop))
		loop_wake(loop);
}

int ev_call(struct ev_loop *loop, ev_fn fn, void *arg)
{
	struct ev_call_item *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->next = NULL;
	pthread_mutex_lock(&loop->lock);
	bool was_empty = !loop->calls_head;
	if (loop->calls_tail)
		loop->calls_tail->next = c;
	else
		loop->calls_head = c;
	loop->calls_tail = c;
	pthread_mutex_unlock(&loop->lock);
	if (was_empty && !ev_on_loop_thread(loop))
		loop_wake(loop);
	return 0;
}

struct call_wait {
	ev_fn fn;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
};

static void call_wait_cb(void *arg)
{
	struct call_wait *w = arg;
	if (w->fn)
		w->fn(w->arg);
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

int ev_call_wait(struct ev_loop *loop, ev_fn fn, void *arg)
{
	struct call_wait w = {fn, arg, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	int rc = ev_call(loop, call_wait_cb, &w);
	if (rc == 0) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cv, &w.lock);
		pthread_mutex_unlock(&w.lock);
	}
	return rc;
}

int ev_timer_add(struct ev_loop *loop, uint64_t ms, ev_fn fn, void *arg, struct ev_timer **out)
{
	struct ev_timer *t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	t->due_ms = ev_now_ms() + ms;
	t->fn = fn;
	t->arg = arg;
	pthread_mutex_lock(&loop->lock);
	struct ev_timer **pp = &loop->timers;
	while (*pp && (*pp)->due_ms <= t->due_ms)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	bool first = loop->timers == t;
	pthread_mutex_unlock(&loop->lock);
	if (first && !ev_on_loop_thread(loop))
		loop_wake(loop);
	if (out)
		*out = t;
	return 0;
}

void ev_timer_cancel(struct ev_timer *t)
{
	if (!t)
		return;
	struct ev_loop *loop = t->loop;
	bool found = false;
	pthread_mutex_lock(&loop->lock);
	for (struct ev_timer **pp = &loop->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&loop->lock);
	/* Not on the list: it has fired (or is firing) and frees itself. */
	if (found)
		free(t);
}
