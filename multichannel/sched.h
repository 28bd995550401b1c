/* multichannel/sched.h — which channel carries a request.
 *
 * The policy is one pure function over a snapshot of the channels
 * (smb_sched_policy), so it can be replaced or unit-tested alone;
 * smb_sched_pick() takes the snapshot and applies it.
 *
 * Policy: bulk READ/WRITE above the RDMA threshold prefer channels that
 * offload by RDMA; among the candidates the one whose in-flight work,
 * weighted by its interface's advertised speed, is least (a channel of
 * twice the speed takes twice the bytes).  Small (metadata) requests go to
 * the channel with the lowest recent round-trip time.  Dead channels take
 * nothing; per-channel credits are honoured by each channel's own queue
 * (in-flight credits count as in-flight work here).
 *
 * Threading: any thread; takes no lock: it reads each channel's state and
 * outstanding credits atomically (a snapshot: a channel that dies just
 * after is the failover's business).  The returned channel lives as long
 * as the client.
 */
#ifndef SMBRDMA_MULTICHANNEL_SCHED_H
#define SMBRDMA_MULTICHANNEL_SCHED_H

#include "client/chanmgr.h" /* enum smb_sched_kind */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smb_client;
struct smb_chan;

/* What the policy sees of one channel. */
struct smb_sched_view {
	bool alive;
	bool offload;      /* moves payloads by RDMA */
	uint64_t speed;    /* bits/s advertised; 0 = unknown */
	uint64_t inflight; /* bytes (credits x 64 KiB) in flight */
	uint64_t lat_us;   /* recent round trip; 0 = not measured yet */
};

/* Index of the channel for a request of this kind and len, or -1 if no
 * channel is alive.  threshold: the RDMA offload threshold; start: where
 * the scan begins, so that equal channels take turns. */
int smb_sched_policy(const struct smb_sched_view *v, int n, enum smb_sched_kind kind, size_t len,
                     uint32_t threshold, unsigned start);

/* The channel to use; channel 0 when none is alive (its requests then fail
 * with the channel's error).  The manager's pick (chanmgr.h). */
struct smb_chan *smb_sched_pick(struct smb_client *c, enum smb_sched_kind kind, size_t len);

#endif
