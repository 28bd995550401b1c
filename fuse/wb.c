/* fuse/wb.c — the table of WRITEs in flight (wb.h). */
#include "fuse/wb.h"

#include <pthread.h>
#include <stdlib.h>

struct wb_table {
	pthread_mutex_t lock;
	uint64_t max_bytes;
	unsigned max_writes;
	/* under lock: */
	struct wb_write *head, *tail; /* in the order they were sent */
	struct wb_waiter *waiters, *waiters_tail;
	uint64_t bytes; /* of every write in flight */
	unsigned count;
	uint64_t early;
};

struct wb_table *wb_new(uint64_t max_bytes, unsigned max_writes)
{
	struct wb_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->max_bytes = max_bytes;
	t->max_writes = max_writes;
	return t;
}

void wb_free(struct wb_table *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static bool overlaps(const struct wb_write *w, uint64_t nodeid, uint64_t off, uint64_t len)
{
	return w->nodeid == nodeid && off < w->off + w->len && w->off < off + len;
}

bool wb_must_wait(struct wb_table *t, uint64_t nodeid, uint64_t off, uint64_t len)
{
	bool wait = false;

	pthread_mutex_lock(&t->lock);
	for (const struct wb_write *w = t->head; w && !wait; w = w->next)
		wait = overlaps(w, nodeid, off, len ? len : 1);
	for (const struct wb_waiter *q = t->waiters; q && !wait; q = q->next)
		wait = q->nodeid == nodeid;
	pthread_mutex_unlock(&t->lock);
	return wait;
}

static bool room(const struct wb_table *t)
{
	return t->bytes <= t->max_bytes && t->count <= t->max_writes;
}

bool wb_add(struct wb_table *t, struct wb_write *w)
{
	pthread_mutex_lock(&t->lock);
	w->next = NULL;
	w->prev = t->tail;
	if (t->tail)
		t->tail->next = w;
	else
		t->head = w;
	t->tail = w;
	t->bytes += w->len;
	t->count++;
	w->answered = w->may_answer && room(t);
	if (w->answered)
		t->early++;
	pthread_mutex_unlock(&t->lock);
	return w->answered;
}

bool wb_grow(struct wb_table *t, struct wb_write *w, uint64_t add)
{
	pthread_mutex_lock(&t->lock);
	bool ok = t->bytes + add <= t->max_bytes;
	if (ok) {
		w->len += add;
		t->bytes += add;
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

static bool busy(const struct wb_table *t, uint64_t nodeid)
{
	for (const struct wb_write *w = t->head; w; w = w->next)
		if (w->nodeid == nodeid)
			return true;
	return false;
}

void wb_done(struct wb_table *t, struct wb_write *w, void (*answer)(struct wb_write *w))
{
	struct wb_write *now[64];
	unsigned n = 0;
	struct wb_waiter *run = NULL, **run_tail = &run;

	pthread_mutex_lock(&t->lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		t->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		t->tail = w->prev;
	w->prev = w->next = NULL;
	t->bytes -= w->len;
	t->count--;
	/* Writes held for room, oldest first, while there is room.  They are
	 * answered outside the lock, in batches of what fits in now[]; a
	 * write answered is marked first, so it is never answered twice. */
	for (struct wb_write *h = t->head; h && room(t) && n < 64; h = h->next) {
		if (h->may_answer && !h->answered) {
			h->answered = true;
			t->early++;
			now[n++] = h;
		}
	}
	/* Waiters of an inode left idle, in the order they came. */
	struct wb_waiter **pp = &t->waiters;
	t->waiters_tail = NULL;
	while (*pp) {
		struct wb_waiter *q = *pp;
		if (!busy(t, q->nodeid)) {
			*pp = q->next;
			q->next = NULL;
			*run_tail = q;
			run_tail = &q->next;
		} else {
			t->waiters_tail = q;
			pp = &q->next;
		}
	}
	pthread_mutex_unlock(&t->lock);
	for (unsigned i = 0; i < n; i++)
		answer(now[i]);
	while (run) {
		struct wb_waiter *q = run;
		run = q->next;
		q->fn(q->arg); /* may free q */
	}
}

bool wb_when_idle(struct wb_table *t, struct wb_waiter *w, uint64_t nodeid, void (*fn)(void *arg),
                  void *arg)
{
	bool wait;

	pthread_mutex_lock(&t->lock);
	wait = busy(t, nodeid);
	if (wait) {
		w->nodeid = nodeid;
		w->fn = fn;
		w->arg = arg;
		w->next = NULL;
		if (t->waiters_tail)
			t->waiters_tail->next = w;
		else
			t->waiters = w;
		t->waiters_tail = w;
	}
	pthread_mutex_unlock(&t->lock);
	return wait;
}

bool wb_busy(struct wb_table *t, uint64_t nodeid)
{
	pthread_mutex_lock(&t->lock);
	bool b = busy(t, nodeid);
	pthread_mutex_unlock(&t->lock);
	return b;
}

unsigned wb_in_flight_of(struct wb_table *t, uint64_t nodeid)
{
	unsigned n = 0;

	pthread_mutex_lock(&t->lock);
	for (const struct wb_write *w = t->head; w; w = w->next)
		n += w->nodeid == nodeid;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t wb_end(struct wb_table *t, uint64_t nodeid)
{
	uint64_t end = 0;

	pthread_mutex_lock(&t->lock);
	for (const struct wb_write *w = t->head; w; w = w->next)
		if (w->nodeid == nodeid && w->answered && w->off + w->len > end)
			end = w->off + w->len;
	pthread_mutex_unlock(&t->lock);
	return end;
}

unsigned wb_in_flight(struct wb_table *t)
{
	pthread_mutex_lock(&t->lock);
	unsigned n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t wb_answered_early(struct wb_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint64_t n = t->early;
	pthread_mutex_unlock(&t->lock);
	return n;
}
