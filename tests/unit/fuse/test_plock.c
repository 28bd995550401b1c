/* tests/unit/fuse/test_plock.c — POSIX record-lock bookkeeping (fuse/plock.c):
 * conflicts, extension without merging, conversion, partial unlock, gaps,
 * handles going away. */
#include <fcntl.h>
#include <stdlib.h>

#include "fuse/plock.h"
#include "tests/unit/check.h"

#define A 1
#define B 2
static int fh1, fh2;

static int do_lock(struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end, int type,
                   void *fh, size_t *ndrop, size_t *nadd)
{
	struct plock_plan p;
	int rc = plock_plan(s, owner, start, end, type, 7, fh, &p);
	if (rc)
		return rc;
	if (ndrop)
		*ndrop = p.ndrop;
	if (nadd)
		*nadd = p.nadd;
	plock_commit(s, &p);
	CHECK(p.add == NULL && p.drop == NULL);
	return 0;
}

/* How many bytes of [start, end] owner holds with `type`; -1 if its segments
 * overlap each other there. */
static long long held(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end,
                      int type)
{
	long long n = 0;
	for (uint64_t x = start; x <= end; x++) {
		int k = 0;
		for (const struct plock_seg *g = s->segs; g; g = g->next)
			if (g->owner == owner && g->start <= x && x <= g->end) {
				k++;
				if (g->type == type)
					n++;
			}
		if (k > 1)
			return -1;
	}
	return n;
}

static size_t count(const struct plock_set *s)
{
	size_t n = 0;
	for (const struct plock_seg *g = s->segs; g; g = g->next)
		n++;
	return n;
}

static void test_conflicts(void)
{
	struct plock_set s = {0};
	CHECK_EQ(do_lock(&s, A, 10, 19, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK(plock_conflict(&s, B, 0, 100, F_RDLCK) == NULL); /* readers share */
	CHECK(plock_conflict(&s, B, 15, 15, F_WRLCK) != NULL); /* a writer does not */
	CHECK(plock_conflict(&s, B, 20, 30, F_WRLCK) == NULL); /* next to it is free */
	CHECK(plock_conflict(&s, A, 10, 19, F_WRLCK) == NULL); /* own locks never conflict */
	CHECK_EQ(do_lock(&s, B, 30, PLOCK_MAX, F_WRLCK, &fh2, NULL, NULL), 0);
	const struct plock_seg *g = plock_conflict(&s, A, 1000000, 1000000, F_RDLCK);
	CHECK(g && g->owner == B && g->type == F_WRLCK && g->pid == 7);
	plock_clear(&s);
	CHECK(s.segs == NULL);
}

static void test_extend_adds_only_the_gaps(void)
{
	struct plock_set s = {0};
	size_t nd, na;
	CHECK_EQ(do_lock(&s, A, 10, 19, F_WRLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(nd, 0);
	CHECK_EQ(na, 1);
	CHECK_EQ(do_lock(&s, A, 30, 39, F_WRLCK, &fh1, NULL, NULL), 0);
	/* over both and the hole between and around: nothing held is touched */
	CHECK_EQ(do_lock(&s, A, 5, 44, F_WRLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(nd, 0);
	CHECK_EQ(na, 3); /* 5-9, 20-29, 40-44 */
	CHECK_EQ(held(&s, A, 0, 50, F_WRLCK), 40);
	/* the same again changes nothing */
	CHECK_EQ(do_lock(&s, A, 5, 44, F_WRLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(nd + na, 0);
	plock_clear(&s);
}

static void test_conversion_and_split(void)
{
	struct plock_set s = {0};
	size_t nd, na;
	CHECK_EQ(do_lock(&s, A, 0, 99, F_RDLCK, &fh1, NULL, NULL), 0);
	/* upgrade the middle: the read lock is dropped, its outer parts come back */
	CHECK_EQ(do_lock(&s, A, 40, 59, F_WRLCK, &fh2, &nd, &na), 0);
	CHECK_EQ(nd, 1);
	CHECK_EQ(na, 3);
	CHECK_EQ(held(&s, A, 0, 99, F_RDLCK), 80);
	CHECK_EQ(held(&s, A, 40, 59, F_WRLCK), 20);
	for (const struct plock_seg *g = s.segs; g; g = g->next)
		CHECK(g->fh == (g->type == F_WRLCK ? (void *)&fh2 : (void *)&fh1));
	/* unlock across the border of two segments */
	CHECK_EQ(do_lock(&s, A, 30, 49, F_UNLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(nd, 2);
	CHECK_EQ(na, 2); /* 0-29 read, 50-59 write */
	CHECK_EQ(held(&s, A, 0, 99, F_RDLCK), 70);
	CHECK_EQ(held(&s, A, 0, 99, F_WRLCK), 10);
	CHECK_EQ(held(&s, A, 30, 49, F_RDLCK) + held(&s, A, 30, 49, F_WRLCK), 0);
	/* unlock all */
	CHECK_EQ(do_lock(&s, A, 0, PLOCK_MAX, F_UNLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(na, 0);
	CHECK(s.segs == NULL);
}

static void test_unlock_of_nothing(void)
{
	struct plock_set s = {0};
	size_t nd = 9, na = 9;
	CHECK_EQ(do_lock(&s, A, 0, PLOCK_MAX, F_UNLCK, &fh1, &nd, &na), 0);
	CHECK_EQ(nd + na, 0);
	CHECK_EQ(do_lock(&s, B, 0, 9, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, A, 0, 9, F_UNLCK, &fh1, &nd, &na), 0); /* not A's */
	CHECK_EQ(nd + na, 0);
	CHECK_EQ(count(&s), 1);
	plock_clear(&s);
}

static void test_gaps(void)
{
	struct plock_set s = {0};
	uint64_t g[4][2];
	CHECK_EQ(plock_gaps(&s, A, 0, PLOCK_MAX, g, 4), 1);
	CHECK(g[0][0] == 0 && g[0][1] == PLOCK_MAX);
	CHECK_EQ(do_lock(&s, A, 10, 19, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, A, 20, 29, F_WRLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, A, 40, 49, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, B, 0, 100, F_RDLCK, &fh2, NULL, NULL), 0); /* not A's */
	CHECK_EQ(plock_gaps(&s, A, 0, 100, g, 4), 3);
	CHECK(g[0][0] == 0 && g[0][1] == 9);
	CHECK(g[1][0] == 30 && g[1][1] == 39);
	CHECK(g[2][0] == 50 && g[2][1] == 100);
	CHECK_EQ(plock_gaps(&s, A, 12, 45, g, 4), 1);
	CHECK(g[0][0] == 30 && g[0][1] == 39);
	CHECK_EQ(plock_gaps(&s, A, 12, 28, g, 4), 0);
	CHECK_EQ(plock_gaps(&s, A, 0, 100, g, 2), 3); /* more than fit: max + 1 */
	plock_clear(&s);
}

static void test_drop_fh(void)
{
	struct plock_set s = {0};
	CHECK_EQ(do_lock(&s, A, 0, 9, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, B, 0, 9, F_RDLCK, &fh1, NULL, NULL), 0);
	CHECK_EQ(do_lock(&s, A, 20, 29, F_WRLCK, &fh2, NULL, NULL), 0);
	CHECK_EQ(plock_drop_fh(&s, &fh1), 2);
	CHECK_EQ(count(&s), 1);
	CHECK(s.segs->fh == &fh2);
	CHECK_EQ(plock_drop_fh(&s, &fh1), 0);
	plock_clear(&s);
}

/* Random requests against a byte map: the set always says what the owners
 * hold, never overlaps one owner's segments, never lets a conflict in. */
static void test_random_against_a_map(void)
{
	enum { N = 64, OWNERS = 3 };
	int map[OWNERS][N] = {{0}};
	struct plock_set s = {0};
	srand(12345);
	for (int step = 0; step < 4000; step++) {
		uint64_t owner = (uint64_t)(rand() % OWNERS);
		uint64_t a = (uint64_t)(rand() % N), b = (uint64_t)(rand() % N);
		if (a > b) {
			uint64_t t = a;
			a = b;
			b = t;
		}
		int types[] = {F_RDLCK, F_WRLCK, F_UNLCK};
		int type = types[rand() % 3];
		if (type != F_UNLCK && plock_conflict(&s, owner, a, b, type))
			continue;
		CHECK_EQ(do_lock(&s, owner, a, b, type, &fh1, NULL, NULL), 0);
		for (uint64_t x = a; x <= b; x++)
			map[owner][x] = type == F_UNLCK ? 0 : type + 1; /* F_RDLCK is 0 */
		for (uint64_t o = 0; o < OWNERS; o++)
			for (uint64_t x = 0; x < N; x++) {
				int k = 0, t = 0;
				for (const struct plock_seg *g = s.segs; g; g = g->next)
					if (g->owner == o && g->start <= x && x <= g->end) {
						k++;
						t = g->type + 1;
					}
				if (k > 1 || t != map[o][x]) {
					CHECK(k <= 1 && t == map[o][x]);
					plock_clear(&s);
					return;
				}
			}
	}
	for (uint64_t x = 0; x < N; x++) {
		int writers = 0, readers = 0;
		for (int o = 0; o < OWNERS; o++) {
			writers += map[o][x] == F_WRLCK + 1;
			readers += map[o][x] == F_RDLCK + 1;
		}
		CHECK(writers == 0 || (writers == 1 && readers == 0));
	}
	plock_clear(&s);
}

int main(void)
{
	RUN(test_conflicts);
	RUN(test_extend_adds_only_the_gaps);
	RUN(test_conversion_and_split);
	RUN(test_unlock_of_nothing);
	RUN(test_gaps);
	RUN(test_drop_fh);
	RUN(test_random_against_a_map);
	return check_report();
}
