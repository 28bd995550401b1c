/* tests/unit/fuse/test_negcache.c — names a LOOKUP found missing: kept for
 * the next LOOKUP of the same name, never past a change or their time. */
#include <stdio.h>
#include <string.h>

#include "fuse/negcache.h"
#include "tests/unit/check.h"

#define MS  1000000ull
#define TTL (1000 * MS)

static void test_kept_for_its_time(void)
{
	struct negc *nc = negc_new();
	CHECK(nc != NULL);
	uint64_t t0 = 5000 * MS;
	CHECK(!negc_lacks(nc, 7, "f1.c", t0, TTL));
	negc_add(nc, 7, "f1.c", negc_epoch(nc), t0);
	CHECK(negc_lacks(nc, 7, "f1.c", t0 + 1, TTL));
	CHECK(negc_lacks(nc, 7, "f1.c", t0 + TTL - 1, TTL));
	/* the time counts from when the LOOKUP went out */
	CHECK(!negc_lacks(nc, 7, "f1.c", t0 + TTL, TTL));
	/* another directory, another name, another case: not known */
	CHECK(!negc_lacks(nc, 8, "f1.c", t0 + 1, TTL));
	CHECK(!negc_lacks(nc, 7, "f1.cc", t0 + 1, TTL));
	CHECK(!negc_lacks(nc, 7, "F1.c", t0 + 1, TTL));
	/* a clock seen going back answers nothing */
	CHECK(!negc_lacks(nc, 7, "f1.c", t0 - 1, TTL));
	negc_free(nc);
}

static void test_a_change_forgets(void)
{
	struct negc *nc = negc_new();
	uint64_t t0 = 100 * MS;
	negc_add(nc, 7, "a", negc_epoch(nc), t0);
	negc_add(nc, 9, "b", negc_epoch(nc), t0);
	CHECK(negc_lacks(nc, 7, "a", t0 + MS, TTL));
	negc_changed(nc); /* a create, a rename, a break: every answer goes */
	CHECK(!negc_lacks(nc, 7, "a", t0 + MS, TTL));
	CHECK(!negc_lacks(nc, 9, "b", t0 + MS, TTL));
	/* an answer to a LOOKUP sent before a change is not stored after it */
	uint64_t before = negc_epoch(nc);
	negc_changed(nc);
	negc_add(nc, 7, "a", before, t0 + 2 * MS);
	CHECK(!negc_lacks(nc, 7, "a", t0 + 3 * MS, TTL));
	/* one sent after is */
	negc_add(nc, 7, "a", negc_epoch(nc), t0 + 2 * MS);
	CHECK(negc_lacks(nc, 7, "a", t0 + 3 * MS, TTL));
	negc_free(nc);
}

static void test_slots_are_overwritten_not_confused(void)
{
	struct negc *nc = negc_new();
	char name[32];
	uint64_t t0 = 100 * MS;
	/* many more names than slots: the newest ones are answered (or
	 * missed, never mistaken for another name) */
	for (int i = 0; i < 10 * NEGC_SLOTS; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		negc_add(nc, 3, name, negc_epoch(nc), t0);
	}
	int hits = 0;
	for (int i = 0; i < 10 * NEGC_SLOTS; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		hits += negc_lacks(nc, 3, name, t0 + 1, TTL);
	}
	CHECK(hits > 0 && hits <= NEGC_SLOTS);
	snprintf(name, sizeof(name), "n%d", 10 * NEGC_SLOTS - 1);
	CHECK(negc_lacks(nc, 3, name, t0 + 1, TTL)); /* the last one stays */
	CHECK(!negc_lacks(nc, 3, "never", t0 + 1, TTL));
	/* longer than a name can be: neither kept nor answered */
	char lng[300];
	memset(lng, 'x', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	negc_add(nc, 3, lng, negc_epoch(nc), t0);
	CHECK(!negc_lacks(nc, 3, lng, t0 + 1, TTL));
	negc_free(nc);
	negc_free(NULL);
}

int main(void)
{
	RUN(test_kept_for_its_time);
	RUN(test_a_change_forgets);
	RUN(test_slots_are_overwritten_not_confused);
	return check_report();
}
