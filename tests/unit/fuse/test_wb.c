/* tests/unit/fuse/test_wb.c — the table of WRITEs in flight (fuse/wb.h). */
#include "fuse/wb.h"
#include "tests/unit/check.h"

#include <stdlib.h>

#define MIB (1ull << 20)

static struct wb_write *answered_log[16];
static unsigned answered_n;

static void on_answer(struct wb_write *w)
{
	CHECK(w->answered);
	if (answered_n < 16)
		answered_log[answered_n++] = w;
}

static void w_init(struct wb_write *w, uint64_t nodeid, uint64_t off, uint64_t len, bool may)
{
	w->nodeid = nodeid;
	w->off = off;
	w->len = len;
	w->may_answer = may;
	w->answered = false;
}

/* Room is max_bytes of writes in flight; the write past it is held and
 * answered, oldest first, once a completion makes room. */
static void test_room_and_held_writes(void)
{
	struct wb_table *t = wb_new(2 * MIB, 64);
	struct wb_write w[4];
	answered_n = 0;
	for (int i = 0; i < 4; i++)
		w_init(&w[i], 7, (uint64_t)i * MIB, MIB, true);
	CHECK(wb_add(t, &w[0]));
	CHECK(wb_add(t, &w[1]));
	CHECK(!wb_add(t, &w[2])); /* 3 MiB in flight: held */
	CHECK(!wb_add(t, &w[3]));
	CHECK_EQ(wb_in_flight(t), 4);
	CHECK_EQ(wb_in_flight_of(t, 7), 4);
	CHECK_EQ(wb_in_flight_of(t, 8), 0);
	CHECK_EQ(wb_end(t, 7), 2 * MIB); /* what the kernel was told */
	wb_done(t, &w[0], on_answer);    /* 3 MiB: still no room */
	CHECK_EQ(answered_n, 0);
	wb_done(t, &w[1], on_answer); /* 2 MiB: both held ones fit */
	CHECK_EQ(answered_n, 2);
	CHECK(answered_log[0] == &w[2]);
	CHECK(answered_log[1] == &w[3]);
	CHECK_EQ(wb_end(t, 7), 4 * MIB);
	wb_done(t, &w[2], on_answer);
	wb_done(t, &w[3], on_answer);
	CHECK_EQ(answered_n, 2); /* never twice */
	CHECK_EQ(wb_in_flight(t), 0);
	CHECK_EQ(wb_in_flight_of(t, 7), 0);
	CHECK_EQ(wb_end(t, 7), 0);
	CHECK_EQ(wb_answered_early(t), 4);
	wb_free(t);
}

/* A write that may not be answered early (O_DIRECT, no W lease) is only
 * ever answered by its own completion, but still orders others. */
static void test_write_through_is_never_answered_early(void)
{
	struct wb_table *t = wb_new(8 * MIB, 64);
	struct wb_write a, b;
	answered_n = 0;
	w_init(&a, 1, 0, 4096, false);
	CHECK(!wb_add(t, &a));
	CHECK(wb_must_wait(t, 1, 100, 1));
	CHECK(!wb_must_wait(t, 1, 4096, 4096)); /* adjacent, not overlapping */
	CHECK(!wb_must_wait(t, 2, 0, 4096));    /* another inode */
	CHECK_EQ(wb_end(t, 1), 0);              /* the kernel was not told yet */
	w_init(&b, 1, 4096, 4096, true);
	CHECK(wb_add(t, &b));
	wb_done(t, &b, on_answer);
	wb_done(t, &a, on_answer);
	CHECK_EQ(answered_n, 0);
	CHECK(!a.answered);
	wb_free(t);
}

/* The count limit holds as the byte limit does. */
static void test_count_limit(void)
{
	struct wb_table *t = wb_new(64 * MIB, 2);
	struct wb_write w[3];
	answered_n = 0;
	for (int i = 0; i < 3; i++)
		w_init(&w[i], 3, (uint64_t)i * 4096, 4096, true);
	CHECK(wb_add(t, &w[0]));
	CHECK(wb_add(t, &w[1]));
	CHECK(!wb_add(t, &w[2]));
	wb_done(t, &w[1], on_answer);
	CHECK_EQ(answered_n, 1);
	CHECK(answered_log[0] == &w[2]);
	wb_done(t, &w[0], on_answer);
	wb_done(t, &w[2], on_answer);
	wb_free(t);
}

static int order[8], norder;
static void note(void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
}

/* Waiters run when their inode has nothing in flight, in the order they
 * came; another inode's writes do not hold them; a write arriving while
 * one waits must wait too. */
static void test_waiters(void)
{
	struct wb_table *t = wb_new(8 * MIB, 64);
	struct wb_write a, b, c;
	struct wb_waiter q1, q2, q3;
	norder = 0;
	w_init(&a, 5, 0, MIB, true);
	w_init(&b, 5, MIB, MIB, true);
	w_init(&c, 6, 0, MIB, true);
	CHECK(!wb_when_idle(t, &q1, 5, note, (void *)1)); /* idle: no wait */
	wb_add(t, &a);
	wb_add(t, &b);
	wb_add(t, &c);
	CHECK(wb_when_idle(t, &q1, 5, note, (void *)1));
	CHECK(wb_when_idle(t, &q2, 6, note, (void *)2));
	CHECK(wb_when_idle(t, &q3, 5, note, (void *)3));
	CHECK(wb_must_wait(t, 5, 10 * MIB, 1)); /* no overlap, but q1 waits */
	wb_done(t, &a, on_answer);
	CHECK_EQ(norder, 0);
	wb_done(t, &c, on_answer); /* inode 6 idle: q2 only */
	CHECK_EQ(norder, 1);
	CHECK_EQ(order[0], 2);
	wb_done(t, &b, on_answer);
	CHECK_EQ(norder, 3);
	CHECK_EQ(order[1], 1);
	CHECK_EQ(order[2], 3);
	CHECK(!wb_must_wait(t, 5, 0, MIB));
	wb_free(t);
}

int main(void)
{
	RUN(test_room_and_held_writes);
	RUN(test_write_through_is_never_answered_early);
	RUN(test_count_limit);
	RUN(test_waiters);
	return check_report();
}
