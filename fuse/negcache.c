/* fuse/negcache.c — see negcache.h. */
#include "fuse/negcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NEGC_NAME_MAX 255

struct negc_slot {
	uint64_t parent;
	uint64_t epoch; /* 0: empty (epochs count from 1) */
	uint64_t asked_ns;
	char name[NEGC_NAME_MAX + 1];
};

struct negc {
	uint64_t epoch; /* atomic */
	pthread_mutex_t lock;
	struct negc_slot slots[NEGC_SLOTS]; /* guarded by lock */
};

struct negc *negc_new(void)
{
	struct negc *nc = calloc(1, sizeof(*nc));
	if (!nc)
		return NULL;
	nc->epoch = 1;
	pthread_mutex_init(&nc->lock, NULL);
	return nc;
}

void negc_free(struct negc *nc)
{
	if (!nc)
		return;
	pthread_mutex_destroy(&nc->lock);
	free(nc);
}

uint64_t negc_epoch(struct negc *nc)
{
	return __atomic_load_n(&nc->epoch, __ATOMIC_ACQUIRE);
}

void negc_changed(struct negc *nc)
{
	__atomic_add_fetch(&nc->epoch, 1, __ATOMIC_ACQ_REL);
}

/* FNV-1a over the parent's id and the name. */
static struct negc_slot *slot_of(struct negc *nc, uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= (parent >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ull;
	}
	return &nc->slots[h % NEGC_SLOTS];
}

void negc_add(struct negc *nc, uint64_t parent, const char *name, uint64_t epoch, uint64_t now_ns)
{
	if (strlen(name) > NEGC_NAME_MAX)
		return;
	pthread_mutex_lock(&nc->lock);
	/* under the lock: a negc_changed() after this check forgets it */
	if (epoch == negc_epoch(nc)) {
		struct negc_slot *s = slot_of(nc, parent, name);
		s->parent = parent;
		s->epoch = epoch;
		s->asked_ns = now_ns;
		strcpy(s->name, name);
	}
	pthread_mutex_unlock(&nc->lock);
}

bool negc_lacks(struct negc *nc, uint64_t parent, const char *name, uint64_t now_ns,
                uint64_t ttl_ns)
{
	if (strlen(name) > NEGC_NAME_MAX)
		return false;
	pthread_mutex_lock(&nc->lock);
	const struct negc_slot *s = slot_of(nc, parent, name);
	bool lacks = s->epoch && s->epoch == negc_epoch(nc) && s->parent == parent &&
	             now_ns >= s->asked_ns && now_ns - s->asked_ns < ttl_ns &&
	             strcmp(s->name, name) == 0;
	pthread_mutex_unlock(&nc->lock);
	return lacks;
}
