/* tests/unit/fuse/test_reqbuf.c — request buffers lent to writes. */
#include "fuse/reqbuf.h"
#include "tests/unit/check.h"

#include <stdlib.h>

static void test_not_lendable_until_registered(void)
{
	struct reqbuf_pool *p = reqbuf_pool_new(2);
	CHECK(p != NULL);
	uint8_t *b = reqbuf_current(p);
	CHECK_EQ(reqbuf_lend(p, b + 80, 4096), -1); /* not registered yet */
	reqbuf_pool_set_lendable(p, true);
	CHECK_EQ(reqbuf_lend(p, b + 80, 4096), 0);
	reqbuf_return(p, 0);
	CHECK_EQ(reqbuf_lent_now(p), 0);
	reqbuf_pool_free(p);
}

/* One write at a time: the buffer given back is read into next, so the
 * requests stay in one (cache-warm) buffer instead of going round all. */
static void test_returned_buffer_is_reused_first(void)
{
	struct reqbuf_pool *p = reqbuf_pool_new(8);
	reqbuf_pool_set_lendable(p, true);
	uint8_t *b0 = reqbuf_current(p);
	for (int i = 0; i < 20; i++) {
		uint8_t *b = reqbuf_current(p);
		int id = reqbuf_lend(p, b + 80, REQBUF_MAX_WRITE);
		CHECK(id >= 0);
		reqbuf_advance(p); /* the next request would go elsewhere... */
		CHECK(reqbuf_current(p) != b);
		reqbuf_return(p, id); /* ...but the write is done first */
		CHECK(reqbuf_current(p) == b0);
	}
	CHECK_EQ(reqbuf_lent_now(p), 0);
	reqbuf_pool_free(p);
}

static void test_lent_buffer_is_not_read_into(void)
{
	struct reqbuf_pool *p = reqbuf_pool_new(3);
	reqbuf_pool_set_lendable(p, true);
	size_t len;
	uint8_t *mem = reqbuf_pool_mem(p, &len);
	CHECK_EQ(len, 3 * (size_t)REQBUF_SIZE);

	uint8_t *b0 = reqbuf_current(p);
	CHECK(b0 == mem);
	reqbuf_advance(p); /* nothing lent: stay */
	CHECK(reqbuf_current(p) == b0);

	int id0 = reqbuf_lend(p, b0 + 80, REQBUF_MAX_WRITE);
	CHECK_EQ(id0, 0);
	reqbuf_advance(p);
	uint8_t *b1 = reqbuf_current(p);
	CHECK(b1 != b0 && b1 >= mem && b1 < mem + len);

	int id1 = reqbuf_lend(p, b1 + 80, 100);
	reqbuf_advance(p);
	uint8_t *b2 = reqbuf_current(p);
	CHECK(b2 != b0 && b2 != b1);
	int id2 = reqbuf_lend(p, b2 + 80, 100);
	CHECK_EQ(reqbuf_lent_now(p), 3);
	reqbuf_advance(p);
	/* All lent: the spare, which cannot be lent (it is not registered). */
	uint8_t *spare = reqbuf_current(p);
	CHECK(spare < mem || spare >= mem + len);
	CHECK_EQ(reqbuf_lend(p, spare + 80, 100), -1);

	reqbuf_return(p, id1);
	reqbuf_advance(p);
	CHECK(reqbuf_current(p) == b1);
	reqbuf_return(p, id0);
	reqbuf_return(p, id2);
	reqbuf_return(p, id2); /* a second return is ignored */
	CHECK_EQ(reqbuf_lent_now(p), 0);
	reqbuf_pool_free(p);
}

static void test_data_outside_current_buffer(void)
{
	struct reqbuf_pool *p = reqbuf_pool_new(2);
	reqbuf_pool_set_lendable(p, true);
	uint8_t *b = reqbuf_current(p);
	uint8_t other[16];
	CHECK_EQ(reqbuf_lend(p, other, sizeof(other)), -1);
	/* Running past the end of the buffer. */
	CHECK_EQ(reqbuf_lend(p, b + REQBUF_SIZE - 10, 11), -1);
	CHECK_EQ(reqbuf_lend(p, b + REQBUF_SIZE - 10, 10), 0);
	/* The other pooled buffer is not the current one. */
	CHECK_EQ(reqbuf_lend(p, b + REQBUF_SIZE + 80, 10), -1);
	reqbuf_return(p, 0);
	reqbuf_return(p, -1);
	reqbuf_return(p, 7);
	CHECK_EQ(reqbuf_lent_now(p), 0);
	CHECK_EQ(reqbuf_lend(NULL, b, 1), -1);
	reqbuf_pool_free(p);
}

int main(void)
{
	RUN(test_not_lendable_until_registered);
	RUN(test_lent_buffer_is_not_read_into);
	RUN(test_returned_buffer_is_reused_first);
	RUN(test_data_outside_current_buffer);
	return check_report();
}
