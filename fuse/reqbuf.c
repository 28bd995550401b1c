/* fuse/reqbuf.c — request buffers lent to writes (see reqbuf.h). */
#include "fuse/reqbuf.h"

#include <stdlib.h>
#include <string.h>

struct reqbuf_pool {
	uint8_t *mem; /* nbuf * REQBUF_SIZE, page aligned */
	uint8_t *spare;
	unsigned nbuf;
	unsigned cur; /* index of the current buffer; nbuf = the spare */
	bool lendable;
	unsigned nlent;
	unsigned *lent; /* per buffer: outstanding loans */
};

struct reqbuf_pool *reqbuf_pool_new(unsigned nbuf)
{
	struct reqbuf_pool *p = calloc(1, sizeof(*p));
	if (!p || !nbuf)
		goto fail;
	p->nbuf = nbuf;
	if (posix_memalign((void **)&p->mem, 4096, (size_t)nbuf * REQBUF_SIZE))
		p->mem = NULL;
	p->spare = malloc(REQBUF_SIZE);
	p->lent = calloc(nbuf, sizeof(*p->lent));
	if (!p->mem || !p->spare || !p->lent)
		goto fail;
	/* Fault the pages in now: registration pins what is there. */
	memset(p->mem, 0, (size_t)nbuf * REQBUF_SIZE);
	return p;
fail:
	reqbuf_pool_free(p);
	return NULL;
}

void reqbuf_pool_free(struct reqbuf_pool *p)
{
	if (!p)
		return;
	free(p->mem);
	free(p->spare);
	free(p->lent);
	free(p);
}

void *reqbuf_pool_mem(struct reqbuf_pool *p, size_t *len)
{
	*len = (size_t)p->nbuf * REQBUF_SIZE;
	return p->mem;
}

void reqbuf_pool_set_lendable(struct reqbuf_pool *p, bool on)
{
	p->lendable = on;
}

uint8_t *reqbuf_current(struct reqbuf_pool *p)
{
	return p->cur < p->nbuf ? p->mem + (size_t)p->cur * REQBUF_SIZE : p->spare;
}

void reqbuf_advance(struct reqbuf_pool *p)
{
	if (p->cur < p->nbuf && !p->lent[p->cur])
		return;
	/* The current one is lent (or we are on the spare): the first free. */
	for (unsigned i = 0; i < p->nbuf; i++) {
		unsigned j = (p->cur + 1 + i) % p->nbuf;
		if (!p->lent[j]) {
			p->cur = j;
			return;
		}
	}
	p->cur = p->nbuf;
}

int reqbuf_lend(struct reqbuf_pool *p, const void *data, size_t len)
{
	if (!p || !p->lendable || p->cur >= p->nbuf)
		return -1;
	const uint8_t *b = p->mem + (size_t)p->cur * REQBUF_SIZE, *d = data;
	if (d < b || d > b + REQBUF_SIZE || len > (size_t)(b + REQBUF_SIZE - d))
		return -1;
	p->lent[p->cur]++;
	p->nlent++;
	return (int)p->cur;
}

void reqbuf_return(struct reqbuf_pool *p, int id)
{
	if (id < 0 || (unsigned)id >= p->nbuf || !p->lent[id])
		return;
	p->lent[id]--;
	p->nlent--;
	/* The buffer just given back is the warmest in the cache (the kernel
	 * wrote it, the transport just read it): the next request goes there
	 * rather than to a cold one.  At one write at a time this keeps every
	 * write in the same 1 MiB, where going round all of them had every
	 * write's two copies touch memory not used for nbuf writes.  Safe
	 * between requests, and during a dispatch too: a handler lends only
	 * from the buffer its request is in, which reqbuf_lend() checks. */
	if (!p->lent[id])
		p->cur = (unsigned)id;
}

unsigned reqbuf_lent_now(const struct reqbuf_pool *p)
{
	return p->nlent;
}
