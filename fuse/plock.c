/* fuse/plock.c — see plock.h. */
#include "fuse/plock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>

static bool overlaps(const struct plock_seg *g, uint64_t start, uint64_t end)
{
	return g->start <= end && start <= g->end;
}

const struct plock_seg *plock_conflict(const struct plock_set *s, uint64_t owner, uint64_t start,
                                       uint64_t end, int type)
{
	for (const struct plock_seg *g = s->segs; g; g = g->next)
		if (g->owner != owner && overlaps(g, start, end) &&
		    (type == F_WRLCK || g->type == F_WRLCK))
			return g;
	return NULL;
}

static int cmp_start(const void *a, const void *b)
{
	const struct plock_seg *x = *(struct plock_seg *const *)a,
	                       *y = *(struct plock_seg *const *)b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* owner's segments over [start, end] (of `type`, or of any type when -1),
 * sorted by start, in a malloc'd array; *n their number. */
static int owned(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end, int type,
                 struct plock_seg ***out, size_t *n)
{
	size_t k = 0;
	for (const struct plock_seg *g = s->segs; g; g = g->next)
		if (g->owner == owner && overlaps(g, start, end) && (type < 0 || g->type == type))
			k++;
	*out = NULL;
	*n = 0;
	if (!k)
		return 0;
	struct plock_seg **v = malloc(k * sizeof(*v));
	if (!v)
		return -ENOMEM;
	k = 0;
	for (struct plock_seg *g = s->segs; g; g = g->next)
		if (g->owner == owner && overlaps(g, start, end) && (type < 0 || g->type == type))
			v[k++] = g;
	qsort(v, k, sizeof(*v), cmp_start);
	*out = v;
	*n = k;
	return 0;
}

/* The gaps of [start, end] left by v[0..n) (sorted, not overlapping each
 * other), through fn; stops early when fn returns non-zero. */
static int each_gap(struct plock_seg **v, size_t n, uint64_t start, uint64_t end,
                    int (*fn)(void *arg, uint64_t a, uint64_t b), void *arg)
{
	uint64_t at = start;
	bool done = false;
	for (size_t i = 0; i < n && !done; i++) {
		if (v[i]->start > at) {
			uint64_t b = v[i]->start - 1 < end ? v[i]->start - 1 : end;
			int rc = fn(arg, at, b);
			if (rc)
				return rc;
		}
		if (v[i]->end >= end)
			done = true;
		else if (v[i]->end + 1 > at)
			at = v[i]->end + 1;
	}
	return done ? 0 : fn(arg, at, end);
}

static struct plock_seg *seg_new(const struct plock_seg *like, uint64_t start, uint64_t end)
{
	struct plock_seg *g = malloc(sizeof(*g));
	if (g) {
		*g = *like;
		g->start = start;
		g->end = end;
		g->next = NULL;
	}
	return g;
}

static int plan_add(struct plock_plan *p, const struct plock_seg *like, uint64_t start,
                    uint64_t end)
{
	struct plock_seg *g = seg_new(like, start, end);
	if (!g)
		return -ENOMEM;
	g->next = p->add;
	p->add = g;
	p->nadd++;
	return 0;
}

struct gap_add {
	struct plock_plan *p;
	const struct plock_seg *like;
};

static int gap_add(void *arg, uint64_t a, uint64_t b)
{
	struct gap_add *g = arg;
	return plan_add(g->p, g->like, a, b);
}

int plock_plan(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end, int type,
               uint32_t pid, void *fh, struct plock_plan *plan)
{
	*plan = (struct plock_plan){0};
	struct plock_seg **v;
	size_t n;
	if (owned(s, owner, start, end, -1, &v, &n))
		return -ENOMEM;
	int rc = 0;
	if (n && !(plan->drop = malloc(n * sizeof(*plan->drop))))
		rc = -ENOMEM;
	/* What the request replaces: all of the owner's locks over the range
	 * for F_UNLCK, those of the other type for a lock.  Their parts outside
	 * the range stay, as new segments. */
	struct plock_seg **keep = v; /* kept same-type segments, compacted in v */
	size_t nkeep = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		struct plock_seg *g = v[i];
		if (type != F_UNLCK && g->type == type) {
			keep[nkeep++] = g;
			continue;
		}
		plan->drop[plan->ndrop++] = g;
		if (g->start < start)
			rc = plan_add(plan, g, g->start, start - 1);
		if (!rc && g->end > end)
			rc = plan_add(plan, g, end + 1, g->end);
	}
	if (!rc && type != F_UNLCK) {
		struct plock_seg like = {.owner = owner, .type = type, .pid = pid, .fh = fh};
		struct gap_add ga = {plan, &like};
		rc = each_gap(keep, nkeep, start, end, gap_add, &ga);
	}
	free(v);
	if (rc)
		plock_plan_free(plan);
	return rc;
}

void plock_commit(struct plock_set *s, struct plock_plan *plan)
{
	for (size_t i = 0; i < plan->ndrop; i++)
		for (struct plock_seg **pp = &s->segs; *pp; pp = &(*pp)->next)
			if (*pp == plan->drop[i]) {
				struct plock_seg *g = *pp;
				*pp = g->next;
				free(g);
				break;
			}
	while (plan->add) {
		struct plock_seg *g = plan->add;
		plan->add = g->next;
		g->next = s->segs;
		s->segs = g;
	}
	plan->nadd = 0;
	free(plan->drop);
	plan->drop = NULL;
	plan->ndrop = 0;
}

void plock_plan_free(struct plock_plan *plan)
{
	while (plan->add) {
		struct plock_seg *g = plan->add;
		plan->add = g->next;
		free(g);
	}
	free(plan->drop);
	*plan = (struct plock_plan){0};
}

struct gap_out {
	uint64_t (*out)[2];
	size_t max, n;
};

static int gap_out(void *arg, uint64_t a, uint64_t b)
{
	struct gap_out *g = arg;
	if (g->n == g->max) {
		g->n++;
		return 1;
	}
	g->out[g->n][0] = a;
	g->out[g->n][1] = b;
	g->n++;
	return 0;
}

size_t plock_gaps(const struct plock_set *s, uint64_t owner, uint64_t start, uint64_t end,
                  uint64_t (*out)[2], size_t max)
{
	struct plock_seg **v;
	size_t n;
	struct gap_out g = {out, max, 0};
	if (owned(s, owner, start, end, -1, &v, &n))
		return max + 1;
	each_gap(v, n, start, end, gap_out, &g);
	free(v);
	return g.n;
}

size_t plock_drop_fh(struct plock_set *s, const void *fh)
{
	size_t n = 0;
	for (struct plock_seg **pp = &s->segs; *pp;) {
		struct plock_seg *g = *pp;
		if (g->fh == fh) {
			*pp = g->next;
			free(g);
			n++;
		} else {
			pp = &g->next;
		}
	}
	return n;
}

void plock_clear(struct plock_set *s)
{
	while (s->segs) {
		struct plock_seg *g = s->segs;
		s->segs = g->next;
		free(g);
	}
}
