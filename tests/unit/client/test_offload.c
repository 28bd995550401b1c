/* tests/unit/client/test_offload.c — RDMA offload of READ/WRITE payloads
 * (client/offload.c) through the public API, against the scripted peer of
 * peer.h over its emulated SMB Direct transport (a mount with .rdma), which
 * hands out tokens over the client's own memory and checks how they are
 * used (peer.h: a token outside registered memory, reused while live, put
 * twice or off the loop, or a descriptor that does not cover its I/O is a
 * violation).  Pool buffers are 64 KiB (the transport's max_read_write).
 *
 * The cases:
 *  - offloaded READ and WRITE move the right bytes (a short READ at end of
 *    file, a READ past it), with Channel RDMA_V1_INVALIDATE (3.1.1) and one
 *    descriptor of the I/O's length; what the engine copies
 *    (payload_bytes_copied: a WRITE's copy into the pool, no READ copy) and
 *    what the transport moved (rdma_*_bytes);
 *  - rdma_threshold: I/O of at most it, or larger than a pool buffer, goes
 *    inline (Channel none);
 *  - a server that RDMA-Writes less than it announces leaves zeros, not the
 *    bytes of the I/O the pool buffer served before, also when the buffer
 *    has just come back and the cleaner thread has not cleared it yet (the
 *    next I/O then clears it itself); DataRemaining or
 *    DataLength above the length asked is -EIO; an inline answer to an
 *    offloaded READ is copied and counted;
 *  - every pool buffer busy (the transport holds their tokens): the next
 *    READ goes inline and completes; the held ones complete when released;
 *    the pool shrinks to what registration allows (4 buffers here);
 *  - no token from the transport: the I/O goes inline, counted in
 *    offload_fallback_inline;
 *  - smb_write_lent / smb_read_lent inside a region of
 *    smb_client_region_add(): the descriptor names the caller's buffer, no
 *    copy; a lent READ written short leaves zeros; outside a region through
 *    the pool;
 *  - registration refused: a mount without offload (all inline;
 *    smb_client_region_add says -EOPNOTSUPP);
 *  - no READ/WRITE above the server's MaxReadSize/MaxWriteSize or
 *    rsize=/wsize=, whether below a pool buffer or not;
 *  - with the mount down (reconnecting), an offloadable READ and WRITE
 *    wait for it like any other, and succeed;
 *  - the connection lost under an offloaded READ or WRITE (carried out,
 *    the reply lost), the server away: each is sent again once the mount
 *    is back, and succeeds;
 *  - smb_client_destroy() with an offloaded READ unanswered: its callback
 *    runs (with an error) before destroy returns. */
#include "client/chan.h"
#include "client/client.h"
#include "client/client_int.h"
#include "common/log.h"
#include "tests/unit/check.h"
#include "tests/unit/client/engine.h"
#include "tests/unit/client/peer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#define BUF    65536u  /* a pool buffer: the emulated transport's max_read_write */
#define A_LEN  200000u /* a.bin */
#define IO     40000u  /* an offloadable I/O */
#define RD_CAP (256u * 1024)

static uint8_t a_data[A_LEN];

static void pattern(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7 + (i >> 9)) | 1; /* never 0 */
}

/* ---- a read's result, larger than struct wait holds ---------------------------------- */

struct rd {
	struct wait w;
	const void *ptr; /* the data pointer the callback got */
	size_t n;
	uint8_t data[RD_CAP];
};

static struct rd *rd_new(void)
{
	struct rd *r = calloc(1, sizeof(*r));
	w_init(&r->w);
	return r;
}

static void rd_cb(void *arg, int err, uint32_t status, const void *data, size_t len)
{
	struct rd *r = arg;
	r->ptr = data;
	r->n = len;
	if (data && len && len <= sizeof(r->data))
		memcpy(r->data, data, len);
	w_done(&r->w, err, status);
}

/* ---- the mount ------------------------------------------------------------------------ */

/* A peer with a.bin (A_LEN bytes of a pattern) and an empty w.bin. */
static struct peer *new_peer(void)
{
	struct peer *p = peer_new();
	pattern(a_data, A_LEN, 1);
	peer_add_file(p, "a.bin", a_data, A_LEN);
	peer_add_file(p, "w.bin", NULL, 0);
	return p;
}

static struct smb2_fileid open_file(struct env *e, const char *path)
{
	struct wait w;
	env_open(e, path, FILE_OPEN, &w);
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	return w.fid;
}

/* What a case works with: a mount over the emulated SMB Direct, a.bin and
 * w.bin open, a read's result, and data to write (3 * BUF bytes of a
 * pattern) with room to read it back. */
struct fx {
	struct env e;
	struct smb2_fileid fa, fw;
	struct rd *r;
	uint8_t *data, *got;
};

/* p NULL: new_peer(); o NULL: env_opts(). */
static bool fx_up(struct fx *x, struct peer *p, struct smb_client_opts *o)
{
	memset(x, 0, sizeof(*x));
	x->e.p = p ? p : new_peer();
	struct smb_client_opts d;
	if (!o) {
		env_opts(&d);
		o = &d;
	}
	o->rdma = true;
	if (!o->rdma_channels)
		o->rdma_channels = 1; /* these look at channels[0]: see test_two_by_default */
	if (!env_connect(&x->e, o))
		return false;
	static struct smb_client_stats st;
	smb_client_get_stats(x->e.c, &st);
	CHECK_EQ(st.nchannels, 1);
	CHECK(strcmp(st.channels[0].transport, "rdma") == 0);
	x->fa = open_file(&x->e, "a.bin");
	x->fw = open_file(&x->e, "w.bin");
	x->r = rd_new();
	x->data = malloc(3 * BUF);
	x->got = malloc(3 * BUF);
	pattern(x->data, 3 * BUF, 9);
	return true;
}

static void fx_free(struct fx *x)
{
	free(x->r);
	free(x->data);
	free(x->got);
}

/* Unmount (the files left open); then the peer saw nothing wrong, destroy
 * included, and every token it handed out is done. */
static void fx_unmount(struct fx *x)
{
	smb_client_destroy(x->e.c);
	env_check_peer(x->e.p);
	struct peer_stats st;
	peer_get_stats(x->e.p, &st);
	CHECK_EQ(peer_rdma_tokens_live(x->e.p), 0);
	CHECK_EQ(st.tokens_got, st.tokens_done);
	peer_free(x->e.p);
	fx_free(x);
}

static void fx_down(struct fx *x)
{
	env_close(&x->e, x->fa);
	env_close(&x->e, x->fw);
	fx_unmount(x);
}

/* ---- I/O and what the peer saw ---------------------------------------------------------- */

static void do_read(struct fx *x, struct smb2_fileid fid, uint64_t off, size_t len)
{
	struct rd *r = x->r;
	w_init(&r->w);
	r->ptr = NULL;
	r->n = 0;
	CHECK_EQ(smb_read(x->e.c, fid, off, len, rd_cb, r), 0);
	CHECK(w_wait(&r->w));
}

/* A read of a.bin that must succeed with its bytes [off, off+want). */
static void read_ok(struct fx *x, uint64_t off, size_t len, size_t want)
{
	do_read(x, x->fa, off, len);
	CHECK_EQ(x->r->w.err, 0);
	CHECK_EQ(x->r->w.status, STATUS_SUCCESS);
	CHECK_EQ(x->r->n, want);
	if (x->r->n == want && want)
		CHECK_MEM(x->r->data, a_data + off, want);
}

/* Every callback queued on the loop before has run, and what ran after it
 * (a pool buffer goes back after its I/O's callback): a small inline READ
 * answered there; then every buffer back is cleared (offload.h's cleaner). */
static void loop_passed(struct fx *x)
{
	struct wait w;
	w_init(&w);
	CHECK_EQ(smb_read(x->e.c, x->fa, 0, 16, read_cb, &w), 0);
	CHECK(w_wait(&w));
}

static void settle(struct fx *x)
{
	loop_passed(x);
	/* and the pools' cleaners have cleared what came back */
	for (int i = 0; i < __atomic_load_n(&x->e.c->nchans, __ATOMIC_ACQUIRE); i++)
		smb_offload_wait_clean(x->e.c->chans[i]);
}

/* A write of len bytes from data to w.bin at off (lent: smb_write_lent);
 * what it says was written. */
static size_t do_write(struct fx *x, uint64_t off, const void *data, size_t len, bool lent)
{
	struct wait w;
	w_init(&w);
	int rc = lent ? smb_write_lent(x->e.c, x->fw, off, data, len, write_cb, &w)
	              : smb_write(x->e.c, x->fw, off, data, len, write_cb, &w);
	CHECK_EQ(rc, 0);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.status, STATUS_SUCCESS);
	return w.n;
}

/* w.bin holds len bytes, those of data. */
static void check_w(struct fx *x, const void *data, size_t len)
{
	CHECK_EQ(peer_file_data(x->e.p, "w.bin", x->got, 3 * BUF), len);
	CHECK_MEM(x->got, data, len);
}

/* The last record of command cmd. */
static struct peer_rec last_rec(struct fx *x, uint16_t cmd)
{
	struct peer_rec r = {0};
	for (int i = peer_nrecords(x->e.p) - 1; i >= 0; i--)
		if (peer_records(x->e.p, i, &r, 1) == 1 && r.command == cmd)
			return r;
	CHECK(!"no such record");
	return (struct peer_rec){0};
}

static bool last_rdma(struct fx *x, uint16_t cmd)
{
	return last_rec(x, cmd).channel != SMB2_CHANNEL_NONE;
}

/* Records of cmd from index from: how many inline, how many with a
 * Channel, the largest Length. */
struct scan {
	int n_inline, n_rdma;
	uint32_t max_len;
};
static struct scan scan_recs(struct fx *x, int from, uint16_t cmd)
{
	struct scan s = {0};
	struct peer_rec r;
	for (int i = from; peer_records(x->e.p, i, &r, 1) == 1; i++) {
		if (r.command != cmd)
			continue;
		if (r.channel == SMB2_CHANNEL_NONE)
			s.n_inline++;
		else
			s.n_rdma++;
		if (r.length > s.max_len)
			s.max_len = r.length;
	}
	return s;
}

static struct smb_client_stats *stats(struct fx *x)
{
	static struct smb_client_stats st;
	smb_client_get_stats(x->e.c, &st);
	return &st;
}

static uint64_t copied(struct fx *x)
{
	return stats(x)->payload_bytes_copied;
}

static uint64_t fallbacks(struct fx *x)
{
	return stats(x)->channels[0].offload_fallback_inline;
}

static uint64_t reused(struct fx *x)
{
	return stats(x)->channels[0].offload_reused;
}

static int hook(struct fx *x, uint16_t cmd, enum peer_action a, uint32_t n)
{
	struct peer_match m = {.command = cmd, .info_class = -1, .disposition = -1};
	return peer_on(x->e.p, &m, a, n);
}

/* ---- the cases ---------------------------------------------------------------------------- */

static void test_read_offloaded(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	uint64_t c0 = copied(&x);
	read_ok(&x, 0, IO, IO);
	struct peer_rec rec = last_rec(&x, SMB2_READ);
	CHECK_EQ(rec.channel, SMB2_CHANNEL_RDMA_V1_INVALIDATE); /* 3.1.1 */
	CHECK_EQ(rec.length, IO);
	CHECK_EQ(rec.rdma_length, IO);
	CHECK(rec.rdma_offset != 0);
	CHECK_EQ(copied(&x), c0); /* handed over from the pool buffer */
	struct peer_stats st;
	peer_get_stats(x.e.p, &st);
	CHECK_EQ(st.rdma_pushed, IO);
	CHECK_EQ(stats(&x)->channels[0].rdma_write_bytes, IO);

	/* a whole pool buffer; short at end of file; past it */
	read_ok(&x, 1000, BUF, BUF);
	CHECK(last_rdma(&x, SMB2_READ));
	read_ok(&x, A_LEN - 10000, IO, 10000);
	CHECK(last_rdma(&x, SMB2_READ));
	read_ok(&x, A_LEN + 5, IO, 0);
	CHECK_EQ(copied(&x), c0);
	CHECK_EQ(fallbacks(&x), 0);
	fx_down(&x);
}

static void test_write_offloaded(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	uint64_t c0 = copied(&x);
	CHECK_EQ(do_write(&x, 100, x.data, IO, false), IO);
	struct peer_rec rec = last_rec(&x, SMB2_WRITE);
	CHECK_EQ(rec.channel, SMB2_CHANNEL_RDMA_V1_INVALIDATE);
	CHECK_EQ(rec.length, IO); /* RemainingBytes; no data inline */
	CHECK_EQ(rec.rdma_length, IO);
	CHECK(rec.rdma_offset != (uintptr_t)x.data); /* from a pool buffer... */
	CHECK_EQ(copied(&x), c0 + IO);               /* ...copied there once */
	uint8_t *want = calloc(1, IO + 100);
	memcpy(want + 100, x.data, IO);
	check_w(&x, want, IO + 100);
	free(want);
	struct peer_stats st;
	peer_get_stats(x.e.p, &st);
	CHECK_EQ(st.rdma_pulled, IO);
	CHECK_EQ(stats(&x)->channels[0].rdma_read_bytes, IO);
	fx_down(&x);
}

/* A read of len bytes of a.bin, a write of len to w.bin: right; offloaded
 * (every READ/WRITE the peer saw for it with a Channel) or inline (none). */
static bool read_rdma(struct fx *x, size_t len)
{
	int from = peer_nrecords(x->e.p);
	read_ok(x, 0, len, len);
	struct scan s = scan_recs(x, from, SMB2_READ);
	return s.n_rdma > 0 && s.n_inline == 0;
}

static bool write_rdma(struct fx *x, size_t len)
{
	int from = peer_nrecords(x->e.p);
	CHECK_EQ(do_write(x, 0, x->data, len, false), len);
	CHECK_EQ(peer_file_data(x->e.p, "w.bin", x->got, 3 * BUF) >= (long)len, 1);
	CHECK_MEM(x->got, x->data, len);
	struct scan s = scan_recs(x, from, SMB2_WRITE);
	return s.n_rdma > 0 && s.n_inline == 0;
}

static void test_threshold(void)
{
	struct fx x;
	if (fx_up(&x, NULL, NULL)) {
		/* the default threshold, 4096: above it only */
		CHECK(!read_rdma(&x, 4096));
		CHECK(read_rdma(&x, 4097));
		CHECK(!write_rdma(&x, 4096));
		CHECK(write_rdma(&x, 4097));
		/* larger than a pool buffer: inline (in pieces) */
		CHECK(!read_rdma(&x, 2 * BUF + 1000));
		CHECK(!write_rdma(&x, 2 * BUF + 1000));
		CHECK_EQ(fallbacks(&x), 0);
		fx_down(&x);
	}
	struct smb_client_opts o;
	env_opts(&o);
	o.rdma_threshold = 16384;
	if (fx_up(&x, NULL, &o)) {
		CHECK(!read_rdma(&x, 16384));
		CHECK(read_rdma(&x, 16385));
		CHECK(!write_rdma(&x, 16384));
		CHECK(write_rdma(&x, 16385));
		fx_down(&x);
	}
}

static bool all_of(const uint8_t *b, int v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* aa.bin on the peer: IO bytes of 0xAA, what a stale pool buffer would show. */
static void add_aa_file(struct peer *p)
{
	uint8_t *aa = malloc(IO);
	memset(aa, 0xAA, IO);
	peer_add_file(p, "aa.bin", aa, IO);
	free(aa);
}

static void test_short_rdma_write_leaves_zeros(void)
{
	struct peer *p = new_peer();
	add_aa_file(p);
	struct fx x;
	if (!fx_up(&x, p, NULL))
		return;
	struct smb2_fileid faa = open_file(&x.e, "aa.bin");
	/* 0xAA through a pool buffer, which goes back to the pool... */
	do_read(&x, faa, 0, IO);
	CHECK_EQ(x.r->n, IO);
	CHECK(all_of(x.r->data, 0xAA, IO));
	const void *buf = x.r->ptr;
	settle(&x);
	/* ...and serves the next read, which the server writes 1000 bytes of
	 * while announcing them all */
	int h = hook(&x, SMB2_READ, PEER_RDMA_SHORT, 1000);
	do_read(&x, x.fa, 0, IO);
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	CHECK(x.r->ptr == buf); /* the same buffer (the pool is a stack) */
	CHECK_EQ(x.r->w.err, 0);
	CHECK_EQ(x.r->n, IO);
	CHECK_MEM(x.r->data, a_data, 1000);
	CHECK(all_of(x.r->data + 1000, 0, IO - 1000)); /* not 0xAA */
	env_close(&x.e, faa);
	fx_down(&x);
}

/* A short READ of the open's into the buffer it read into before
 * (client/offload.h); returns what it read. */
static const uint8_t *short_read(struct fx *x, struct smb2_fileid fid, uint64_t off)
{
	int h = hook(x, SMB2_READ, PEER_RDMA_SHORT, 1000);
	do_read(x, fid, off, IO);
	CHECK_EQ(peer_hook_fired(x->e.p, h), 1);
	CHECK_EQ(x->r->w.err, 0);
	CHECK_EQ(x->r->n, IO);
	CHECK_MEM(x->r->data, a_data + off, 1000);
	return x->r->data;
}

/* A buffer back from an I/O serves the same open's next I/O as it is: no
 * clear, so a short RDMA Write there shows bytes that open read before.
 * Another open never gets it uncleared, a second open of the same file or
 * a new open after a close (the server may give it the same FileId)
 * included. */
static void test_same_open_takes_its_buffer_uncleared(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	uint64_t r0 = reused(&x);
	do_read(&x, x.fa, 0, IO);
	CHECK_EQ(x.r->n, IO);
	const void *buf = x.r->ptr;
	loop_passed(&x); /* back in the pool, dirty; not waiting for a clear */
	const uint8_t *d = short_read(&x, x.fa, IO);
	CHECK(x.r->ptr == buf);
	CHECK_EQ(reused(&x), r0 + 1);
	CHECK_MEM(d + 1000, a_data + 1000, IO - 1000); /* what the first read left */
	/* a second open of the file: a cleared buffer */
	struct smb2_fileid f2 = open_file(&x.e, "a.bin");
	loop_passed(&x);
	d = short_read(&x, f2, 0);
	CHECK(all_of(d + 1000, 0, IO - 1000));
	/* a read through it (in its own buffer again, back after the last
	 * read's callback), a close, an open again: cleared */
	loop_passed(&x);
	do_read(&x, f2, 2 * IO, IO);
	CHECK_MEM(x.r->data, a_data + 2 * IO, IO);
	CHECK_EQ(reused(&x), r0 + 2);
	env_close(&x.e, f2);
	struct smb2_fileid f3 = open_file(&x.e, "a.bin");
	loop_passed(&x);
	d = short_read(&x, f3, 0);
	CHECK(all_of(d + 1000, 0, IO - 1000));
	CHECK_EQ(reused(&x), r0 + 2);
	/* and the pool clears everything when asked */
	settle(&x);
	d = short_read(&x, x.fa, 0);
	CHECK(all_of(d + 1000, 0, IO - 1000));
	env_close(&x.e, f3);
	fx_down(&x);
}

static void test_overclaim_is_eio(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	/* DataRemaining one above what was asked */
	int h = hook(&x, SMB2_READ, PEER_RDMA_OVERCLAIM, 1);
	do_read(&x, x.fa, 0, IO);
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	CHECK_EQ(x.r->w.err, -EIO);
	CHECK_EQ(x.r->n, 0);
	/* DataLength one above (answered inline) */
	h = hook(&x, SMB2_READ, PEER_READ_INLINE, 1);
	do_read(&x, x.fa, 0, IO);
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	CHECK_EQ(x.r->w.err, -EIO);
	/* an honest inline answer: taken, and its copy counted */
	uint64_t c0 = copied(&x);
	h = hook(&x, SMB2_READ, PEER_READ_INLINE, 0);
	read_ok(&x, 0, IO, IO);
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	CHECK_EQ(copied(&x), c0 + IO);
	/* and the next is offloaded as before */
	read_ok(&x, 7, IO, IO);
	CHECK(last_rdma(&x, SMB2_READ));
	CHECK_EQ(copied(&x), c0 + IO);
	fx_down(&x);
}

/* The peer has carried out n READs. */
struct reads {
	struct peer *p;
	int n;
};
static bool reads_done(void *arg)
{
	const struct reads *r = arg;
	struct peer_stats st;
	peer_get_stats(r->p, &st);
	return st.reads >= r->n;
}

/* Buffers just back from their I/O, not yet cleared by the cleaner or
 * taken and cleared by the next I/O (the free stack empty: every buffer of a
 * 4-buffer pool was out): whichever way, a READ the server writes short
 * never shows the bytes of the I/O before.  Even rounds hold the cleaner,
 * so the next I/O must clear a dirty buffer itself; odd ones race it. */
static void test_dirty_buffers_cleared_before_reuse(void)
{
	struct peer *p = new_peer();
	peer_set_limits(p, &(struct peer_limits){.rdma_max_region = 4 * BUF});
	add_aa_file(p);
	struct fx x;
	if (!fx_up(&x, p, NULL))
		return;
	struct smb2_fileid faa = open_file(&x.e, "aa.bin");
	for (int round = 0; round < 12; round++) { /* the peer keeps 16 hooks */
		/* all four buffers out at once with 0xAA, then back together */
		struct rd *held[4];
		bool paused = round % 2 == 0;
		for (int i = 0; i < x.e.c->nchans; i++)
			smb_offload_pause_cleaner(x.e.c->chans[i], paused);
		peer_rdma_hold(x.e.p, true);
		for (int i = 0; i < 4; i++) {
			held[i] = rd_new();
			CHECK_EQ(smb_read(x.e.c, faa, 0, IO, rd_cb, held[i]), 0);
		}
		CHECK(poll_for(reads_done, &(struct reads){x.e.p, 4 * (round + 1)}));
		peer_rdma_hold(x.e.p, false);
		for (int i = 0; i < 4; i++) {
			CHECK(w_wait(&held[i]->w));
			CHECK_EQ(held[i]->n, IO);
			free(held[i]);
		}
		/* back in the pool (their I/Os' ends have run), but not waiting
		 * for the cleaner: a buffer dirty or just cleared */
		loop_passed(&x);
		int h = hook(&x, SMB2_READ, PEER_RDMA_SHORT, 1000);
		do_read(&x, x.fa, 0, IO);
		CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
		CHECK_EQ(x.r->w.err, 0);
		CHECK_EQ(x.r->n, IO);
		CHECK_MEM(x.r->data, a_data, 1000);
		CHECK(all_of(x.r->data + 1000, 0, IO - 1000));
		for (int i = 0; i < x.e.c->nchans; i++)
			smb_offload_pause_cleaner(x.e.c->chans[i], false);
		settle(&x);
	}
	env_close(&x.e, faa);
	fx_down(&x);
}

static void test_pool_busy_goes_inline(void)
{
	/* registration of more than 4 buffers refused: the pool shrinks to 4 */
	struct peer *p = new_peer();
	peer_set_limits(p, &(struct peer_limits){.rdma_max_region = 4 * BUF});
	struct fx x;
	if (!fx_up(&x, p, NULL))
		return;
	struct rd *held[4];
	peer_rdma_hold(x.e.p, true);
	int from = peer_nrecords(x.e.p);
	for (int i = 0; i < 4; i++) {
		held[i] = rd_new();
		CHECK_EQ(smb_read(x.e.c, x.fa, 1000u * i, IO, rd_cb, held[i]), 0);
	}
	CHECK(poll_for(reads_done, &(struct reads){x.e.p, 4}));
	CHECK_EQ(scan_recs(&x, from, SMB2_READ).n_rdma, 4);
	/* every pool buffer is the server's still: the fifth goes inline */
	from = peer_nrecords(x.e.p);
	read_ok(&x, 5000, IO, IO);
	struct scan s = scan_recs(&x, from, SMB2_READ);
	CHECK_EQ(s.n_inline, 1);
	CHECK_EQ(s.n_rdma, 0);
	for (int i = 0; i < 4; i++) {
		pthread_mutex_lock(&held[i]->w.m);
		CHECK(!held[i]->w.done); /* no callback before its token is done */
		pthread_mutex_unlock(&held[i]->w.m);
	}
	CHECK_EQ(fallbacks(&x), 0); /* busy is no fallback */
	peer_rdma_hold(x.e.p, false);
	for (int i = 0; i < 4; i++) {
		CHECK(w_wait(&held[i]->w));
		CHECK_EQ(held[i]->w.err, 0);
		CHECK_EQ(held[i]->n, IO);
		CHECK_MEM(held[i]->data, a_data + 1000u * i, IO);
		free(held[i]);
	}
	/* the buffers are back */
	settle(&x);
	CHECK(read_rdma(&x, IO));
	fx_down(&x);
}

static void test_no_token_falls_back_inline(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	peer_rdma_fail_tokens(x.e.p, 2, -ENOMEM);
	CHECK(!read_rdma(&x, IO));
	CHECK(!write_rdma(&x, IO));
	CHECK_EQ(fallbacks(&x), 2);
	/* tokens again: offloaded again */
	CHECK(read_rdma(&x, IO));
	CHECK_EQ(fallbacks(&x), 2);
	fx_down(&x);
}

static void do_read_lent(struct fx *x, uint64_t off, void *buf, size_t len)
{
	struct rd *r = x->r;
	w_init(&r->w);
	r->ptr = NULL;
	r->n = 0;
	CHECK_EQ(smb_read_lent(x->e.c, x->fa, off, buf, len, rd_cb, r), 0);
	CHECK(w_wait(&r->w));
	CHECK_EQ(r->w.err, 0);
	CHECK_EQ(r->w.status, STATUS_SUCCESS);
	CHECK_EQ(r->n, len);
}

static void test_lent(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	uint8_t *mem = NULL;
	CHECK_EQ(posix_memalign((void **)&mem, 4096, 4 * BUF), 0);
	CHECK_EQ(smb_client_region_add(x.e.c, mem, 4 * BUF), 0);

	/* a lent write: the server reads the caller's buffer, nothing copied */
	uint64_t c0 = copied(&x);
	uint8_t *wb = mem + 4096;
	pattern(wb, IO, 11);
	CHECK_EQ(do_write(&x, 0, wb, IO, true), IO);
	struct peer_rec rec = last_rec(&x, SMB2_WRITE);
	CHECK(rec.channel != SMB2_CHANNEL_NONE);
	CHECK_EQ(rec.rdma_offset, (uintptr_t)wb);
	CHECK_EQ(rec.rdma_length, IO);
	check_w(&x, wb, IO);
	CHECK_EQ(copied(&x), c0);

	/* a lent read: the server writes into the caller's buffer */
	uint8_t *rb = mem + BUF;
	memset(rb, 0xEE, IO);
	do_read_lent(&x, 3, rb, IO);
	CHECK(x.r->ptr == rb);
	CHECK_MEM(rb, a_data + 3, IO);
	CHECK_EQ(last_rec(&x, SMB2_READ).rdma_offset, (uintptr_t)rb);
	CHECK_EQ(copied(&x), c0);

	/* written short: the rest of the caller's buffer is zeros, not what
	 * it held */
	rb = mem + 2 * BUF;
	memset(rb, 0xEE, IO);
	int h = hook(&x, SMB2_READ, PEER_RDMA_SHORT, 1000);
	do_read_lent(&x, 0, rb, IO);
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	CHECK(x.r->ptr == rb);
	CHECK_MEM(rb, a_data, 1000);
	CHECK(all_of(rb + 1000, 0, IO - 1000));

	/* at most the threshold: inline, still in place */
	CHECK_EQ(do_write(&x, 0, wb, 4096, true), 4096);
	CHECK(!last_rdma(&x, SMB2_WRITE));
	CHECK_EQ(copied(&x), c0);

	/* outside every region: through the pool */
	CHECK_EQ(do_write(&x, 0, x.data, IO, true), IO);
	rec = last_rec(&x, SMB2_WRITE);
	CHECK(rec.channel != SMB2_CHANNEL_NONE);
	CHECK(rec.rdma_offset != (uintptr_t)x.data);
	CHECK_EQ(copied(&x), c0 + IO);
	check_w(&x, x.data, IO);
	do_read_lent(&x, 0, x.got, IO);
	CHECK_MEM(x.r->data, a_data, IO);
	rec = last_rec(&x, SMB2_READ);
	CHECK(rec.channel != SMB2_CHANNEL_NONE);
	CHECK(rec.rdma_offset != (uintptr_t)x.got);

	fx_down(&x);
	free(mem); /* after smb_client_destroy() */
}

static void test_registration_refused(void)
{
	struct peer *p = new_peer();
	peer_set_limits(p, &(struct peer_limits){.rdma_max_region = 4096}); /* not 4 buffers */
	struct fx x;
	if (!fx_up(&x, p, NULL))
		return;
	CHECK(!read_rdma(&x, IO));
	CHECK(!write_rdma(&x, IO));
	CHECK_EQ(smb_client_region_add(x.e.c, x.got, 8192), -EOPNOTSUPP);
	struct peer_stats st;
	peer_get_stats(x.e.p, &st);
	CHECK_EQ(st.tokens_got, 0);
	CHECK_EQ(fallbacks(&x), 0);
	fx_down(&x);
}

/* A READ and a WRITE of len on a mount whose READ/WRITE may be max_io at
 * most: right, in pieces no larger. */
static void io_within(struct fx *x, size_t len, uint32_t max_io)
{
	int from = peer_nrecords(x->e.p);
	read_ok(x, 0, len, len);
	CHECK_EQ(do_write(x, 0, x->data, len, false), len);
	check_w(x, x->data, len);
	CHECK(scan_recs(x, from, SMB2_READ).max_len <= max_io);
	CHECK(scan_recs(x, from, SMB2_WRITE).max_len <= max_io);
}

static void test_server_max_io(void)
{
	/* MaxReadSize and MaxWriteSize 64 KiB, pool buffers of 128 KiB */
	struct peer *p = new_peer();
	peer_set_limits(p, &(struct peer_limits){
	                       .max_read = BUF, .max_write = BUF, .rdma_max_read_write = 2 * BUF});
	struct fx x;
	if (fx_up(&x, p, NULL)) {
		io_within(&x, 100000, BUF);
		CHECK(read_rdma(&x, BUF)); /* up to the limit, still offloaded */
		CHECK(write_rdma(&x, BUF));
		fx_down(&x);
	}
	/* rsize=/wsize= 32 KiB, below the pool buffers */
	struct smb_client_opts o;
	env_opts(&o);
	o.max_read = o.max_write = 32768;
	if (fx_up(&x, NULL, &o)) {
		io_within(&x, IO, 32768);
		fx_down(&x);
	}
}

/* An rdma mount without rdma_channels= opens SMB_RDMA_CHANNELS_DEFAULT (two)
 * SMB Direct channels to the server's one address, the second bound to the
 * session (the guest suite moves I/O over both against ksmbd). */
static void test_two_by_default(void)
{
	struct env e = {.p = new_peer()};
	struct smb_client_opts o;
	env_opts(&o);
	o.rdma = true;
	if (!env_connect(&e, &o))
		return;
	static struct smb_client_stats st;
	smb_client_get_stats(e.c, &st);
	CHECK_EQ(st.nchannels, (int)SMB_RDMA_CHANNELS_DEFAULT);
	for (int i = 0; i < st.nchannels; i++) {
		CHECK(strcmp(st.channels[i].transport, "rdma") == 0);
		CHECK(strcmp(st.channels[i].state, "up") == 0);
		/* the same address (the emulated transport shows no port for a bound one) */
		CHECK(strncmp(st.channels[i].remote, "127.0.0.1:", 10) == 0);
	}
	env_unmount(&e);
}

static bool chan_dead(void *arg)
{
	return strcmp(stats(arg)->channels[0].state, "dead") == 0;
}

static void test_io_while_reconnecting(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	/* the server goes away, and stays away for now */
	peer_set_refuse(x.e.p, true);
	peer_drop_connections(x.e.p);
	CHECK(poll_for(chan_dead, &x));
	/* an offloadable READ and WRITE meanwhile wait for the reconnect, as
	 * smaller ones do */
	struct wait w;
	w_init(&w);
	w_init(&x.r->w);
	CHECK_EQ(smb_read(x.e.c, x.fa, 0, IO, rd_cb, x.r), 0);
	CHECK_EQ(smb_write(x.e.c, x.fw, 0, x.data, IO, write_cb, &w), 0);
	peer_set_refuse(x.e.p, false);
	CHECK(w_wait(&x.r->w));
	CHECK_EQ(x.r->w.err, 0);
	CHECK_EQ(x.r->n, IO);
	CHECK_MEM(x.r->data, a_data, IO);
	CHECK(w_wait(&w));
	CHECK_EQ(w.err, 0);
	CHECK_EQ(w.n, IO);
	check_w(&x, x.data, IO);
	CHECK_EQ(fallbacks(&x), 0);
	/* back: offloaded again */
	CHECK(read_rdma(&x, IO));
	fx_down(&x);
}

static bool no_tokens(void *arg)
{
	return peer_rdma_tokens_live(arg) == 0;
}

/* An offloaded I/O of cmd whose reply is lost with the connection (the
 * peer carried it out), the server away until its token is done (the
 * engine has decided by then what becomes of the I/O): sent again once
 * the mount is back, it succeeds. */
static void lost_under(struct fx *x, uint16_t cmd)
{
	struct wait w;
	w_init(&w);
	w_init(&x->r->w);
	peer_set_refuse(x->e.p, true);
	int h = hook(x, cmd, PEER_LOST_REPLY, 0);
	if (cmd == SMB2_READ)
		CHECK_EQ(smb_read(x->e.c, x->fa, 0, IO, rd_cb, x->r), 0);
	else
		CHECK_EQ(smb_write(x->e.c, x->fw, 0, x->data, IO, write_cb, &w), 0);
	CHECK(poll_for(chan_dead, x));
	CHECK(poll_for(no_tokens, x->e.p));
	CHECK_EQ(peer_hook_fired(x->e.p, h), 1);
	peer_set_refuse(x->e.p, false);
	struct wait *done = cmd == SMB2_READ ? &x->r->w : &w;
	CHECK(w_wait(done));
	CHECK_EQ(done->err, 0);
	CHECK_EQ(done->status, STATUS_SUCCESS);
}

static void test_conn_lost_under_io(void)
{
	struct fx x;
	if (!fx_up(&x, NULL, NULL))
		return;
	lost_under(&x, SMB2_READ);
	CHECK_EQ(x.r->n, IO);
	CHECK_MEM(x.r->data, a_data, IO);
	lost_under(&x, SMB2_WRITE);
	check_w(&x, x.data, IO);
	/* offload works on the new channel */
	read_ok(&x, 0, IO, IO);
	CHECK(last_rdma(&x, SMB2_READ));
	CHECK_EQ(fallbacks(&x), 0);
	fx_down(&x);
}

static void test_destroy_with_read_pending(void)
{
	struct rd *r = rd_new();
	struct fx x;
	if (!fx_up(&x, NULL, NULL)) {
		free(r);
		return;
	}
	int h = hook(&x, SMB2_READ, PEER_NO_REPLY, 0);
	CHECK_EQ(smb_read(x.e.c, x.fa, 0, IO, rd_cb, r), 0);
	CHECK(poll_for(reads_done, &(struct reads){x.e.p, 1}));
	CHECK_EQ(peer_hook_fired(x.e.p, h), 1);
	fx_unmount(&x); /* its callback runs before destroy returns */
	pthread_mutex_lock(&r->w.m);
	CHECK(r->w.done);
	CHECK(r->w.err != 0);
	pthread_mutex_unlock(&r->w.m);
	free(r);
}

int main(void)
{
	smb_log_init("test_offload", false, getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	RUN(test_read_offloaded);
	RUN(test_write_offloaded);
	RUN(test_threshold);
	RUN(test_short_rdma_write_leaves_zeros);
	RUN(test_dirty_buffers_cleared_before_reuse);
	RUN(test_same_open_takes_its_buffer_uncleared);
	RUN(test_overclaim_is_eio);
	RUN(test_pool_busy_goes_inline);
	RUN(test_no_token_falls_back_inline);
	RUN(test_lent);
	RUN(test_registration_refused);
	RUN(test_server_max_io);
	RUN(test_two_by_default);
	RUN(test_io_while_reconnecting);
	RUN(test_conn_lost_under_io);
	RUN(test_destroy_with_read_pending);
	return check_report();
}
