/* tests/unit/multichannel/test_sched.c — the channel policy alone. */
#include "multichannel/sched.h"
#include "tests/unit/check.h"

#define GB 1000000000ull

static void test_none_alive(void)
{
	struct smb_sched_view v[2] = {{.alive = false}, {.alive = false}};
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 0), -1);
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_META, 0, 4096, 0), -1);
	CHECK_EQ(smb_sched_policy(v, 0, SMB_SCHED_META, 0, 4096, 0), -1);
}

static void test_dead_takes_nothing(void)
{
	struct smb_sched_view v[3] = {
	    {.alive = false, .speed = 100 * GB},
	    {.alive = true, .speed = GB, .inflight = 50 << 20},
	    {.alive = false},
	};
	for (unsigned s = 0; s < 6; s++) {
		CHECK_EQ(smb_sched_policy(v, 3, SMB_SCHED_BULK, 1 << 20, 4096, s), 1);
		CHECK_EQ(smb_sched_policy(v, 3, SMB_SCHED_META, 0, 4096, s), 1);
	}
}

static void test_bulk_prefers_rdma(void)
{
	struct smb_sched_view v[2] = {
	    {.alive = true, .offload = false, .speed = 100 * GB},
	    {.alive = true, .offload = true, .speed = GB, .inflight = 64 << 20},
	};
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 0), 1);
	/* At or below the threshold it is not bulk by RDMA: speed decides. */
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 4096, 4096, 1), 0);
}

static void test_bulk_weighs_speed_and_load(void)
{
	struct smb_sched_view v[2] = {
	    {.alive = true, .speed = 2 * GB, .inflight = 3 << 20},
	    {.alive = true, .speed = GB, .inflight = 1 << 20},
	};
	/* (3+1)/2 = 2 vs (1+1)/1 = 2: equal, the scan start decides */
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 0), 0);
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 1), 1);
	v[0].inflight = 1 << 20; /* (1+1)/2 < 2 */
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 1), 0);
	/* Unknown speed counts as 1 Gb/s. */
	v[1].speed = 0;
	v[1].inflight = 0;
	v[0].inflight = 4 << 20;
	CHECK_EQ(smb_sched_policy(v, 2, SMB_SCHED_BULK, 1 << 20, 4096, 0), 1);
}

static void test_bulk_spreads_over_equal_channels(void)
{
	struct smb_sched_view v[3];
	int taken[3] = {0};
	for (int i = 0; i < 3; i++)
		v[i] = (struct smb_sched_view){.alive = true, .speed = GB};
	for (unsigned s = 0; s < 30; s++) {
		int i = smb_sched_policy(v, 3, SMB_SCHED_BULK, 1 << 20, 4096, s);
		CHECK(i >= 0 && i < 3);
		if (i >= 0) {
			taken[i]++;
			v[i].inflight += 1 << 20;
		}
	}
	CHECK_EQ(taken[0], 10);
	CHECK_EQ(taken[1], 10);
	CHECK_EQ(taken[2], 10);
}

static void test_meta_lowest_latency(void)
{
	struct smb_sched_view v[3] = {
	    {.alive = true, .lat_us = 900},
	    {.alive = true, .lat_us = 150},
	    {.alive = true, .lat_us = 400},
	};
	for (unsigned s = 0; s < 3; s++)
		CHECK_EQ(smb_sched_policy(v, 3, SMB_SCHED_META, 0, 4096, s), 1);
	v[2].lat_us = 0; /* not measured yet: tried first */
	CHECK_EQ(smb_sched_policy(v, 3, SMB_SCHED_META, 0, 4096, 0), 2);
}

int main(void)
{
	RUN(test_none_alive);
	RUN(test_dead_takes_nothing);
	RUN(test_bulk_prefers_rdma);
	RUN(test_bulk_weighs_speed_and_load);
	RUN(test_bulk_spreads_over_equal_channels);
	RUN(test_meta_lowest_latency);
	return check_report();
}
