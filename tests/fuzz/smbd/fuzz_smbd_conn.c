/* tests/fuzz/smbd/fuzz_smbd_conn.c — the SMB Direct state machine fed an
 * arbitrary sequence of events by a fake verbs layer that, like real verbs,
 * completes only receives and sends that were posted.  Checks: death is
 * reported at most once (exactly once after a final failure), every txbuf
 * completes exactly once, no op after death, delivered messages are whole.
 *
 * Input: byte 0 bit 0 set = negotiate with a valid response granting byte 1
 * and requesting byte 2 credits; else the first receive is raw.  Then
 * records, each an op byte (low 3 bits) and its arguments:
 *   0 recv raw: u16 length, bytes      1 send completes     2 send fails
 *   3 timer: u16 time step (x100 ms)   4 upper send: u16 length
 *   5 disconnect   6 rdma_cm disconnected
 *   7 recv built: CreditsRequested, CreditsGranted, Flags (bytes),
 *     RemainingDataLength (u16), DataLength (u16) */
#include "common/log.h"
#include "smbd/smbd_conn.h"
#include "smbd/smbd_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TX 128

struct fz_tx {
	struct smb_txbuf b;
	int done;
};

struct fz {
	struct smbd_conn *c;
	long recv_posted, sends_posted;
	uint64_t now;
	int dead;
	struct fz_tx *tx[MAX_TX];
	int ntx;
};

static uint8_t pattern[65536];

static int fz_post_send(void *arg, const struct iovec *iov, int iovcnt, size_t len)
{
	struct fz *f = arg;
	size_t sum = 0;
	if (f->dead)
		abort();
	for (int i = 0; i < iovcnt; i++)
		sum += iov[i].iov_len;
	if (sum != len || len > 1364)
		abort();
	f->sends_posted++;
	return 0;
}

static int fz_post_recv(void *arg)
{
	struct fz *f = arg;
	if (f->dead)
		abort();
	if (f->recv_posted >= 256)
		return -ENOBUFS;
	f->recv_posted++;
	return 0;
}

static void fz_timer_set(void *arg, uint64_t ms)
{
}

static uint64_t fz_now(void *arg)
{
	return ((struct fz *)arg)->now;
}

static void fz_deliver(void *arg, uint8_t *msg, size_t len)
{
	struct fz *f = arg;
	if (f->dead || !len || talloc_get_size(msg) != len)
		abort();
	talloc_free(msg);
}

static void fz_disconnect(void *arg)
{
}

static void fz_dead(void *arg, int err)
{
	struct fz *f = arg;
	if (f->dead++ || err >= 0)
		abort();
}

static const struct smbd_conn_ops fz_ops = {
    .post_send = fz_post_send,
    .post_recv = fz_post_recv,
    .timer_set = fz_timer_set,
    .now_ms = fz_now,
    .deliver = fz_deliver,
    .disconnect = fz_disconnect,
    .dead = fz_dead,
};

static void fz_done(struct smb_txbuf *b, int err)
{
	struct fz_tx *t = (struct fz_tx *)b;
	if (t->done++)
		abort();
}

struct rd {
	const uint8_t *p;
	size_t n;
};

static unsigned rd8(struct rd *r)
{
	if (!r->n)
		return 0;
	r->n--;
	return *r->p++;
}

static unsigned rd16(struct rd *r)
{
	unsigned lo = rd8(r);
	return lo | (rd8(r) << 8);
}

static void fz_recv(struct fz *f, const uint8_t *buf, size_t len)
{
	if (!f->recv_posted)
		return; /* verbs completes only posted receives */
	f->recv_posted--;
	smbd_conn_recv(f->c, buf, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = {.now = 1000000};
	struct smbd_conn_params p;
	struct rd r = {data, size};

	if (!pattern[1]) {
		smb_log_set_level(LOG_EMERG);
		for (size_t i = 0; i < sizeof(pattern); i++)
			pattern[i] = (uint8_t)i;
	}
	smbd_conn_params_default(&p);
	p.send_slots = 8;
	if (smbd_conn_new(NULL, &p, &fz_ops, &f, &f.c))
		return 0;
	smbd_conn_start(f.c);
	smbd_conn_established(f.c);

	unsigned mode = rd8(&r);
	if (mode & 1) {
		struct smbd_negotiate_resp resp = {
		    .min_version = 0x0100,
		    .max_version = 0x0100,
		    .negotiated_version = 0x0100,
		    .credits_granted = (uint16_t)(rd8(&r) | 1),
		    .credits_requested = (uint16_t)(rd8(&r) | 1),
		    .max_read_write_size = 1 << 20,
		    .preferred_send_size = 1364,
		    .max_receive_size = 1364,
		    .max_fragmented_size = 1 << 20,
		};
		uint8_t buf[32];
		smbd_negotiate_resp_encode(&resp, buf, sizeof(buf));
		fz_recv(&f, buf, sizeof(buf));
	}
	while (r.n) {
		unsigned op = rd8(&r) & 7;
		switch (op) {
		case 0: {
			size_t len = rd16(&r) % 1400;
			if (len > r.n)
				len = r.n;
			uint8_t *copy = malloc(len ? len : 1); /* exact size for ASan */
			memcpy(copy, r.p, len);
			r.p += len;
			r.n -= len;
			fz_recv(&f, copy, len);
			free(copy);
			break;
		}
		case 1:
		case 2:
			if (f.sends_posted) {
				f.sends_posted--;
				smbd_conn_send_done(f.c, op == 1 ? 0 : -EIO);
			}
			break;
		case 3:
			f.now += (uint64_t)rd16(&r) * 100;
			smbd_conn_timer_fired(f.c);
			break;
		case 4: {
			if (f.ntx == MAX_TX)
				break;
			size_t len = rd16(&r);
			struct fz_tx *t = calloc(1, sizeof(*t));
			t->b.iov[0].iov_base = pattern;
			t->b.iov[0].iov_len = len;
			t->b.iovcnt = 1;
			t->b.len = len;
			t->b.done = fz_done;
			f.tx[f.ntx++] = t;
			smbd_conn_send(f.c, &t->b);
			break;
		}
		case 5:
			smbd_conn_disconnect(f.c);
			break;
		case 6:
			smbd_conn_disconnected(f.c);
			break;
		case 7: {
			struct smbd_data_hdr h = {
			    .credits_requested = (uint16_t)rd8(&r),
			    .credits_granted = (uint16_t)rd8(&r),
			    .flags = (uint16_t)rd8(&r),
			};
			h.remaining_data_length = rd16(&r);
			h.data_length = rd16(&r) % 1341;
			if (!h.data_length)
				h.remaining_data_length = 0;
			uint8_t buf[1364];
			int n = smbd_data_hdr_encode(&h, buf, sizeof(buf));
			if (n < 0)
				break;
			memcpy(buf + n, pattern, h.data_length);
			fz_recv(&f, buf, (size_t)n + h.data_length);
			break;
		}
		}
	}
	smbd_conn_fail(f.c, -EIO);
	if (f.dead != 1)
		abort();
	for (int i = 0; i < f.ntx; i++) {
		if (f.tx[i]->done != 1)
			abort();
		free(f.tx[i]);
	}
	talloc_free(f.c);
	return 0;
}
