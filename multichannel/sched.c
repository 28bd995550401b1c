/* multichannel/sched.c — the channel policy (see sched.h). */
#include "multichannel/sched.h"
#include "client/chan.h"
#include "client/client_int.h"

#define DEFAULT_SPEED (1000000000ull) /* 1 Gb/s when the server says nothing */

int smb_sched_policy(const struct smb_sched_view *v, int n, enum smb_sched_kind kind, size_t len,
                     uint32_t threshold, unsigned start)
{
	bool want_offload = false;
	if (kind == SMB_SCHED_BULK && len > threshold)
		for (int i = 0; i < n; i++)
			want_offload |= v[i].alive && v[i].offload;
	int best = -1;
	/* Bulk: minimise (inflight + len) / speed, compared without division:
	 * a/sa < b/sb  <=>  a*sb < b*sa (128-bit to be safe). */
	unsigned __int128 best_a = 0, best_s = 1;
	uint64_t best_lat = 0;
	/* Scanning from a rotating start spreads ties (idle channels). */
	for (int k = 0; k < n; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)n);
		if (!v[i].alive || (want_offload && !v[i].offload))
			continue;
		if (kind == SMB_SCHED_META) {
			/* Unmeasured counts as best, so each channel gets measured. */
			if (best < 0 || v[i].lat_us < best_lat) {
				best = i;
				best_lat = v[i].lat_us;
			}
			continue;
		}
		unsigned __int128 a = (unsigned __int128)v[i].inflight + len;
		unsigned __int128 sp = v[i].speed ? v[i].speed : DEFAULT_SPEED;
		if (best < 0 || a * best_s < best_a * sp) {
			best = i;
			best_a = a;
			best_s = sp;
		}
	}
	return best;
}

struct smb_chan *smb_sched_pick(struct smb_client *c, enum smb_sched_kind kind, size_t len)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	if (n <= 1)
		return c->chans[0];
	struct smb_sched_view v[SMB_CLIENT_MAX_CHANNELS];
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		struct smb_conn *cn = ch->conn;
		v[i].alive = !__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE);
		v[i].offload = ch->pool.mem != NULL;
		v[i].speed = ch->link_speed;
		/* a snapshot, without cn->lock (conn.h): a pick takes no lock */
		v[i].alive =
		    v[i].alive && __atomic_load_n(&cn->state, __ATOMIC_ACQUIRE) == SMB_CONN_UP;
		v[i].inflight =
		    (uint64_t)__atomic_load_n(&cn->outstanding, __ATOMIC_RELAXED) * 65536u;
		v[i].lat_us = __atomic_load_n(&cn->st_lat_ewma_us, __ATOMIC_RELAXED);
	}
	static unsigned rr; /* tie-breaker only: races are harmless */
	unsigned start = __atomic_fetch_add(&rr, 1, __ATOMIC_RELAXED);
	int i = smb_sched_policy(v, n, kind, len, c->rdma_threshold, start);
	return c->chans[i < 0 ? 0 : i];
}
