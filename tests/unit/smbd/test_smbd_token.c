/* tests/unit/smbd/test_smbd_token.c — the registration cache's range lookup
 * and the per-I/O token state machine, driven through a fake verbs layer. */
#include "../check.h"
#include "client/proto/smb2_const.h"
#include "smbd/smbd_proto.h"
#include "smbd/smbd_token.h"

#include <errno.h>
#include <stdlib.h>

struct fake {
	uint64_t wrq[1024]; /* posted bind/invalidate WRs, completed in order */
	unsigned wrq_head, wrq_tail;
	int regs, deregs, mws, binds, invs, scheduled;
	int fail_reg, fail_bind;
	uint32_t next_key;
	uint64_t last_wr;
	uint32_t last_bind_rkey, last_inv_rkey;
	size_t last_bind_len;
	int last_reg_access, last_bind_access;
	size_t last_reg_len;
	/* Every access mask reg_mr and post_bind were called with, OR'ed, by
	 * kind: what a server could ever be granted. */
	int region_access_seen, io_access_seen;
};

static int f_reg(void *arg, void *addr, size_t len, int access, void **mr, uint32_t *rkey)
{
	struct fake *f = arg;
	f->last_reg_access = access;
	f->last_reg_len = len;
	if (f->fail_reg)
		return -ENOMEM;
	f->regs++;
	*mr = malloc(1);
	*rkey = (f->next_key++ << 8) | 0x10;
	return 0;
}
static void f_dereg(void *arg, void *mr)
{
	((struct fake *)arg)->deregs++;
	free(mr);
}
static int f_alloc_mw(void *arg, void **mw, uint32_t *rkey)
{
	struct fake *f = arg;
	f->mws++;
	*mw = malloc(1);
	*rkey = (0x800u + (uint32_t)f->mws) << 8;
	return 0;
}
static void f_dealloc_mw(void *arg, void *mw)
{
	free(mw);
}
static int f_bind(void *arg, void *mw, void *mr, uint32_t rkey, uint64_t addr, size_t len,
                  int access, uint64_t wr_id)
{
	struct fake *f = arg;
	f->last_bind_access = access;
	if (f->fail_bind)
		return -EIO;
	f->binds++;
	f->wrq[f->wrq_tail++ % 1024] = wr_id;
	f->last_wr = wr_id;
	f->last_bind_rkey = rkey;
	f->last_bind_len = len;
	return 0;
}
static int f_inv(void *arg, uint32_t rkey, uint64_t wr_id)
{
	struct fake *f = arg;
	f->invs++;
	f->wrq[f->wrq_tail++ % 1024] = wr_id;
	f->last_wr = wr_id;
	f->last_inv_rkey = rkey;
	return 0;
}
static void f_schedule(void *arg)
{
	((struct fake *)arg)->scheduled++;
}

static const struct smbd_verbs_ops fops = {f_reg,  f_dereg, f_alloc_mw, f_dealloc_mw,
                                           f_bind, f_inv,   f_schedule};

static int done_count;
static void on_done(void *arg)
{
	done_count++;
	*(int *)arg += 1;
}

static void decode(const uint8_t desc[16], struct smbd_buffer_desc_v1 *d)
{
	size_t n = 0;
	CHECK_EQ(smbd_buffer_desc_v1_decode(desc, 16, d, 1, &n), 16);
	CHECK_EQ(n, 1);
}

static void test_region_lookup(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[65536];
	CHECK_EQ(smbd_tokens_new(&fops, &f, true, 4, &tt), 0);
	CHECK_EQ(smbd_tokens_region_add(tt, mem + 4096, 4096), 0);
	CHECK_EQ(smbd_tokens_region_add(tt, mem + 16384, 8192), 0);
	CHECK_EQ(smbd_tokens_region_add(tt, mem, 1024), 0);
	CHECK_EQ(smbd_tokens_region_add(tt, mem + 8000, 200), -EEXIST); /* overlaps 2nd */
	CHECK_EQ(smbd_tokens_region_add(tt, mem + 16000, 1000), -EEXIST);
	CHECK_EQ(smbd_tokens_region_add(tt, mem, 0), -EINVAL);
	CHECK_EQ(f.regs, 5);
	CHECK_EQ(f.deregs, 2); /* the rejected ones */
	CHECK(smbd_tokens_region_covers(tt, mem + 4096, 4096));
	CHECK(smbd_tokens_region_covers(tt, mem + 5000, 100));
	CHECK(!smbd_tokens_region_covers(tt, mem + 5000, 4096)); /* runs off the end */
	CHECK(!smbd_tokens_region_covers(tt, mem + 2048, 10));   /* in a gap */
	CHECK(smbd_tokens_region_covers(tt, mem, 1024));
	CHECK(!smbd_tokens_region_covers(tt, mem + 1024, 1));
	CHECK(smbd_tokens_region_covers(tt, mem + 16384 + 8191, 1));
	CHECK(!smbd_tokens_region_covers(tt, mem + 16384 + 8192, 1));
	CHECK(!smbd_tokens_region_covers(tt, mem + 16384, 0));
	CHECK_EQ(smbd_tokens_region_remove(tt, mem + 5000), -ENOENT);
	CHECK_EQ(smbd_tokens_region_remove(tt, mem + 4096), 0);
	CHECK(!smbd_tokens_region_covers(tt, mem + 5000, 1));
	smbd_tokens_free(tt); /* deregisters the two left */
	CHECK_EQ(f.deregs, 5);
}

static void test_mw_remote_invalidate(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[1 << 20];
	struct smbd_io_token *tok;
	uint8_t desc[16];
	uint32_t channel = 0;
	struct smbd_buffer_desc_v1 d;
	int done = 0;

	CHECK_EQ(smbd_tokens_new(&fops, &f, true, 2, &tt), 0);
	smbd_tokens_set_dialect(tt, 0x0311);
	CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
	CHECK_EQ(
	    smbd_tokens_get(tt, mem + 4096, 65536, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel),
	    0);
	CHECK_EQ(channel, SMB2_CHANNEL_RDMA_V1_INVALIDATE);
	CHECK_EQ(f.binds, 1);
	CHECK_EQ(f.last_bind_len, 65536);
	decode(desc, &d);
	CHECK_EQ(d.offset, (uintptr_t)(mem + 4096));
	CHECK_EQ(d.length, 65536);
	CHECK_EQ(d.token, f.last_bind_rkey);
	uint32_t first_rkey = d.token;
	smbd_tokens_wr_done(tt, f.last_wr, true); /* bind completed */

	/* The response came by Send-with-Invalidate, before the caller's put. */
	CHECK_EQ(smbd_tokens_remote_inv(tt, first_rkey), 0);
	CHECK_EQ(smbd_tokens_remote_inv(tt, first_rkey), -ENOENT); /* twice: not ours now */
	smbd_tokens_set_moved(tok, 60000);
	smbd_tokens_put(tt, tok, on_done, &done);
	CHECK_EQ(done, 0); /* never from inside put */
	CHECK_EQ(f.invs, 0);
	CHECK_EQ(f.scheduled, 1);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 1);

	/* The window is reused with a new rkey. */
	CHECK_EQ(smbd_tokens_get(tt, mem, 4096, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel), 0);
	decode(desc, &d);
	CHECK(d.token != first_rkey);
	CHECK_EQ(d.token >> 8, first_rkey >> 8);
	CHECK_EQ(f.mws, 1);
	smbd_tokens_wr_done(tt, f.last_wr, true);
	smbd_tokens_remote_inv(tt, d.token);
	smbd_tokens_set_moved(tok, 4096);
	smbd_tokens_put(tt, tok, on_done, &done);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 2);

	struct smbd_token_stats st;
	smbd_tokens_get_stats(tt, &st);
	CHECK_EQ(st.mw_bound, 2);
	CHECK_EQ(st.mw_inv_remote, 2);
	CHECK_EQ(st.mw_inv_local, 0);
	CHECK_EQ(st.rdma_write_bytes, 60000);
	CHECK_EQ(st.rdma_read_bytes, 4096);
	CHECK_EQ(st.unknown_remote_inv, 1);
	CHECK_EQ(st.tokens_active, 0);
	CHECK_EQ(smbd_tokens_region_remove(tt, mem), 0);
	smbd_tokens_free(tt);
}

static void test_mw_local_invalidate(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[65536];
	struct smbd_io_token *tok, *tok2, *tok3;
	uint8_t desc[16];
	uint32_t channel = 0;
	int done = 0;

	CHECK_EQ(smbd_tokens_new(&fops, &f, true, 2, &tt), 0);
	/* Default dialect 3.0: windows still, but RDMA_V1. */
	CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
	CHECK_EQ(smbd_tokens_get(tt, mem, 8192, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel), 0);
	CHECK_EQ(channel, SMB2_CHANNEL_RDMA_V1);
	uint64_t wr = f.last_wr;
	uint32_t rkey = f.last_bind_rkey;
	/* Error reply, no invalidation; and put before the bind's completion
	 * was reaped. */
	CHECK_EQ(smbd_tokens_region_remove(tt, mem), -EBUSY);
	smbd_tokens_put(tt, tok, on_done, &done);
	CHECK_EQ(f.invs, 1); /* queued behind the bind on the same send queue */
	CHECK_EQ(f.last_inv_rkey, rkey);
	smbd_tokens_wr_done(tt, wr, true); /* the bind */
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 0); /* not until the local invalidate completed */
	smbd_tokens_wr_done(tt, wr, true);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 1);

	/* Pool of 2: the third concurrent I/O falls back to a per-I/O MR. */
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel), 0);
	CHECK_EQ(
	    smbd_tokens_get(tt, mem + 100, 100, SMBD_ACCESS_REMOTE_WRITE, &tok2, desc, &channel),
	    0);
	int regs = f.regs;
	CHECK_EQ(
	    smbd_tokens_get(tt, mem + 200, 100, SMBD_ACCESS_REMOTE_WRITE, &tok3, desc, &channel),
	    0);
	CHECK_EQ(channel, SMB2_CHANNEL_RDMA_V1);
	CHECK_EQ(f.regs, regs + 1);
	CHECK_EQ(f.mws, 2);

	/* The channel dies: outstanding binds never complete; puts still finish. */
	smbd_tokens_set_dead(tt);
	smbd_tokens_put(tt, tok, on_done, &done);
	smbd_tokens_put(tt, tok2, on_done, &done);
	smbd_tokens_put(tt, tok3, on_done, &done);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 4);
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel),
	         -ECONNABORTED);
	smbd_tokens_free(tt);
	CHECK_EQ(f.regs, f.deregs);
}

static void test_no_mw_fallbacks(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[65536];
	struct smbd_io_token *tok;
	uint8_t desc[16];
	uint32_t channel = 0;
	struct smbd_buffer_desc_v1 d;
	int done = 0;

	CHECK_EQ(smbd_tokens_new(&fops, &f, false, 128, &tt), 0);
	smbd_tokens_set_dialect(tt, 0x0302);
	CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
	CHECK_EQ(f.regs, 0); /* without windows a region is not registered */
	/* siw: a per-I/O registration, never INVALIDATE. */
	CHECK_EQ(
	    smbd_tokens_get(tt, mem + 10, 1000, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel), 0);
	CHECK_EQ(channel, SMB2_CHANNEL_RDMA_V1);
	CHECK_EQ(f.binds, 0);
	CHECK_EQ(f.regs, 1);
	decode(desc, &d);
	CHECK_EQ(d.token, (1u << 8) | 0x10);
	smbd_tokens_put(tt, tok, on_done, &done);
	CHECK_EQ(f.deregs, 1); /* dereg'd at put */
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 1);

	/* A buffer outside every region also gets a per-I/O registration. */
	static uint8_t other[512];
	CHECK_EQ(smbd_tokens_get(tt, other, 512, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel), 0);
	smbd_tokens_put(tt, tok, on_done, &done);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 2);

	/* Registration fails: no token at all, inside a region or not (the
	 * caller goes inline), and no descriptor. */
	f.fail_reg = 1;
	tok = NULL;
	memset(desc, 0, sizeof(desc));
	CHECK_EQ(
	    smbd_tokens_get(tt, mem + 10, 1000, SMBD_ACCESS_REMOTE_WRITE, &tok, desc, &channel),
	    -ENOMEM);
	CHECK(tok == NULL);
	decode(desc, &d);
	CHECK_EQ(d.token, 0);
	CHECK_EQ(smbd_tokens_get(tt, other, 512, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel),
	         -ENOMEM);
	CHECK_EQ(smbd_tokens_get(tt, mem, 0, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel),
	         -EINVAL);
	CHECK_EQ(smbd_tokens_get(tt, mem, 10, 3, &tok, desc, &channel), -EINVAL);
	f.fail_reg = 0;
	struct smbd_token_stats st;
	smbd_tokens_get_stats(tt, &st);
	CHECK_EQ(st.mr_per_io, 2);
	CHECK_EQ(st.regs_failed, 2);
	CHECK_EQ(st.mw_bound, 0);
	CHECK_EQ(st.tokens_active, 0);
	smbd_tokens_free(tt);
	CHECK_EQ(f.regs, f.deregs);
}

static void test_bind_failure(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[4096];
	struct smbd_io_token *tok;
	uint8_t desc[16];
	uint32_t channel;
	int done = 0;

	CHECK_EQ(smbd_tokens_new(&fops, &f, true, 1, &tt), 0);
	CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
	/* A bind that cannot be posted: a per-I/O registration instead... */
	f.fail_bind = 1;
	int regs0 = f.regs;
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel), 0);
	CHECK_EQ(f.regs, regs0 + 1);
	CHECK_EQ(f.last_reg_access, SMBD_ACCESS_REMOTE_READ);
	CHECK_EQ(channel, SMB2_CHANNEL_RDMA_V1);
	smbd_tokens_put(tt, tok, on_done, &done);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 1);
	/* ... and when that fails too, no token: the I/O goes inline. */
	f.fail_reg = 1;
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel),
	         -ENOMEM);
	f.fail_reg = 0;
	f.fail_bind = 0;
	struct smbd_token_stats st;
	smbd_tokens_get_stats(tt, &st);
	CHECK_EQ(st.binds_failed, 2);
	CHECK_EQ(st.regs_failed, 1);
	CHECK_EQ(st.tokens_active, 0);
	done = 0;
	/* The bind is posted but completes in error: the window is retired. */
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel), 0);
	smbd_tokens_wr_done(tt, f.last_wr, false);
	smbd_tokens_put(tt, tok, on_done, &done);
	CHECK_EQ(f.invs, 0);
	smbd_tokens_run_done(tt);
	CHECK_EQ(done, 1);
	/* Pool of one, retired: the next I/O gets a per-I/O registration. */
	int regs = f.regs;
	CHECK_EQ(smbd_tokens_get(tt, mem, 100, SMBD_ACCESS_REMOTE_READ, &tok, desc, &channel), 0);
	CHECK_EQ(f.regs, regs + 1);
	smbd_tokens_put(tt, tok, on_done, &done);
	smbd_tokens_run_done(tt);
	smbd_tokens_free(tt);
}

/* Random interleavings of get / send-with-invalidate / WR completions / put /
 * run_done / death, checking: done exactly once per put and never before it;
 * a window token is done only after its invalidation (remote, local, or the
 * QP's death); no rkey is handed out while an earlier holder of it is not done. */
#define STRESS_SLOTS 8
struct stress_io {
	struct smbd_io_token *tok;
	uint32_t rkey;
	bool live, put, remote_ok, done;
	int dones;
};
static struct stress_io ios[STRESS_SLOTS];
static struct fake *stress_fake;
static bool stress_dead;

static void stress_done(void *arg)
{
	struct stress_io *io = arg;
	CHECK(io->put);
	io->dones++;
	io->done = true;
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static void test_stress(void)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[1 << 16], other[4096];
	stress_fake = &f;
	for (int round = 0; round < 200; round++) {
		memset(ios, 0, sizeof(ios));
		stress_dead = false;
		f.wrq_head = f.wrq_tail = 0;
		CHECK_EQ(smbd_tokens_new(&fops, &f, round % 4 != 3, 1 + round % 5, &tt), 0);
		smbd_tokens_set_dialect(tt, round % 2 ? 0x0302 : 0x0300);
		CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
		for (int step = 0; step < 400; step++) {
			struct stress_io *io = &ios[rnd(STRESS_SLOTS)];
			switch (rnd(6)) {
			case 0: /* get */
				if (!io->live && !stress_dead) {
					uint8_t desc[16];
					uint32_t ch;
					void *buf = rnd(4) ? mem + rnd(1000) : other;
					f.fail_reg = rnd(10) == 0;
					int r = smbd_tokens_get(tt, buf, 100 + rnd(1000),
					                        rnd(2) ? SMBD_ACCESS_REMOTE_READ
					                               : SMBD_ACCESS_REMOTE_WRITE,
					                        &io->tok, desc, &ch);
					f.fail_reg = 0;
					if (r)
						break;
					struct smbd_buffer_desc_v1 d;
					decode(desc, &d);
					for (int i = 0; i < STRESS_SLOTS; i++)
						if (ios[i].live && !ios[i].done &&
						    ios[i].rkey == d.token &&
						    ch == SMB2_CHANNEL_RDMA_V1_INVALIDATE)
							CHECK(!"rkey handed out twice");
					*io = (struct stress_io){
					    .tok = io->tok,
					    .rkey = d.token,
					    .live = true,
					    .remote_ok = ch == SMB2_CHANNEL_RDMA_V1_INVALIDATE};
				}
				break;
			case 1: /* the response came by Send-with-Invalidate */
				if (io->live && io->remote_ok && !io->put && !stress_dead) {
					smbd_tokens_remote_inv(tt, io->rkey);
					io->remote_ok = false;
				}
				break;
			case 2: /* the oldest bind/invalidate completes */
				if (f.wrq_head != f.wrq_tail)
					smbd_tokens_wr_done(tt, f.wrq[f.wrq_head++ % 1024],
					                    !stress_dead);
				break;
			case 3: /* put */
				if (io->live && !io->put) {
					io->put = true;
					smbd_tokens_put(tt, io->tok, stress_done, io);
					CHECK_EQ(io->dones, 0);
				}
				break;
			case 4:
				smbd_tokens_run_done(tt);
				for (int i = 0; i < STRESS_SLOTS; i++) {
					CHECK(ios[i].dones <= 1);
					if (ios[i].done)
						ios[i].live = false;
				}
				break;
			case 5:
				if (rnd(50) == 0 && !stress_dead) {
					stress_dead = true;
					smbd_tokens_set_dead(tt);
				}
				break;
			}
		}
		/* Drain: put everything, complete every WR, run the callbacks. */
		for (int i = 0; i < STRESS_SLOTS; i++)
			if (ios[i].live && !ios[i].put) {
				ios[i].put = true;
				smbd_tokens_put(tt, ios[i].tok, stress_done, &ios[i]);
			}
		while (f.wrq_head != f.wrq_tail)
			smbd_tokens_wr_done(tt, f.wrq[f.wrq_head++ % 1024], !stress_dead);
		smbd_tokens_run_done(tt);
		for (int i = 0; i < STRESS_SLOTS; i++)
			if (ios[i].live)
				CHECK_EQ(ios[i].dones, 1);
		struct smbd_token_stats st;
		smbd_tokens_get_stats(tt, &st);
		CHECK_EQ(st.tokens_active, 0);
		CHECK_EQ(smbd_tokens_region_remove(tt, mem), 0);
		smbd_tokens_free(tt);
	}
	CHECK_EQ(f.regs, f.deregs);
}

/* No standing exposure: a region is registered with no remote access (the
 * window-bind right where windows exist; not registered at all without),
 * and every token carries exactly the one remote access its I/O needs, over
 * exactly its bytes. */
static void check_access(bool has_mw)
{
	struct fake f = {.next_key = 1};
	struct smbd_tokens *tt;
	static uint8_t mem[1 << 16];
	struct smbd_io_token *tok;
	uint8_t desc[16];
	uint32_t channel;
	int done = 0;

	CHECK_EQ(smbd_tokens_new(&fops, &f, has_mw, 4, &tt), 0);
	smbd_tokens_set_dialect(tt, 0x0311);
	f.last_reg_access = -1;
	CHECK_EQ(smbd_tokens_region_add(tt, mem, sizeof(mem)), 0);
	if (has_mw) {
		CHECK_EQ(f.regs, 1);
		CHECK_EQ(f.last_reg_access, SMBD_ACCESS_MW_BIND);
		CHECK_EQ(f.last_reg_len, sizeof(mem));
		CHECK(smbd_tokens_region_mr(tt, mem) != NULL);
	} else {
		CHECK_EQ(f.regs, 0); /* nothing registered for the connection's life */
		CHECK(smbd_tokens_region_mr(tt, mem) == NULL);
		CHECK(smbd_tokens_region_covers(tt, mem + 100, 100));
	}
	static const int dirs[2] = {SMBD_ACCESS_REMOTE_WRITE, SMBD_ACCESS_REMOTE_READ};
	for (int i = 0; i < 2; i++) {
		int regs = f.regs, binds = f.binds;
		f.last_bind_access = f.last_reg_access = -1;
		CHECK_EQ(smbd_tokens_get(tt, mem + 4096, 8192, dirs[i], &tok, desc, &channel), 0);
		if (has_mw) {
			CHECK_EQ(f.binds, binds + 1);
			CHECK_EQ(f.regs, regs);
			CHECK_EQ(f.last_bind_access, dirs[i]);
			CHECK_EQ(f.last_bind_len, 8192);
			smbd_tokens_wr_done(tt, f.last_wr, true);
			smbd_tokens_remote_inv(tt, f.last_bind_rkey);
		} else {
			CHECK_EQ(f.regs, regs + 1);
			CHECK_EQ(f.last_reg_access, dirs[i]);
			CHECK_EQ(f.last_reg_len, 8192);
		}
		smbd_tokens_put(tt, tok, on_done, &done);
		smbd_tokens_run_done(tt);
	}
	CHECK_EQ(done, 2);
	smbd_tokens_free(tt);
	CHECK_EQ(f.regs, f.deregs);
}

static void test_region_has_no_remote_access(void)
{
	check_access(true);  /* rxe: windows */
	check_access(false); /* siw: per-I/O registrations */
}

int main(void)
{
	RUN(test_region_lookup);
	RUN(test_mw_remote_invalidate);
	RUN(test_mw_local_invalidate);
	RUN(test_no_mw_fallbacks);
	RUN(test_bind_failure);
	RUN(test_region_has_no_remote_access);
	RUN(test_stress);
	return check_report();
}
