/* tests/unit/proto/test_netif.c — NETWORK_INTERFACE_INFO chains. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "client/proto/smb2.h"
#include "client/proto/smb2_const.h"
#include "tests/unit/check.h"

static size_t entry(uint8_t *b, uint32_t next, uint32_t idx, uint32_t cap, uint64_t speed,
                    int family, const char *addr, uint32_t scope)
{
	memset(b, 0, 152);
	smb_put_le32(b, next);
	smb_put_le32(b + 4, idx);
	smb_put_le32(b + 8, cap);
	smb_put_le64(b + 16, speed);
	uint8_t *sa = b + 24;
	if (family == AF_INET) {
		smb_put_le16(sa, 0x0002);
		inet_pton(AF_INET, addr, sa + 4);
	} else if (family == AF_INET6) {
		smb_put_le16(sa, 0x0017);
		inet_pton(AF_INET6, addr, sa + 8);
		smb_put_le32(sa + 24, scope);
	} else {
		smb_put_le16(sa, 0x4242);
	}
	return 152;
}

static size_t two(uint8_t *b)
{
	size_t n = entry(b, 152, 3, SMB2_NETIF_CAP_RDMA | SMB2_NETIF_CAP_RSS, 10000000000ull,
	                 AF_INET, "10.77.1.1", 0);
	return n + entry(b + n, 0, 4, SMB2_NETIF_CAP_RSS, 1000000000ull, AF_INET6, "fd00::7", 5);
}

static void test_two_entries(void)
{
	uint8_t b[304];
	size_t len = two(b), n = 0;
	struct smb2_netif f[4];
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[0].family, AF_INET);
	CHECK_EQ(f[0].if_index, 3);
	CHECK_EQ(f[0].capability, SMB2_NETIF_CAP_RDMA | SMB2_NETIF_CAP_RSS);
	CHECK(f[0].link_speed == 10000000000ull);
	uint8_t a4[4];
	inet_pton(AF_INET, "10.77.1.1", a4);
	CHECK_MEM(f[0].addr, a4, 4);
	CHECK_EQ(f[1].family, AF_INET6);
	CHECK_EQ(f[1].scope_id, 5);
	uint8_t a6[16];
	inet_pton(AF_INET6, "fd00::7", a6);
	CHECK_MEM(f[1].addr, a6, 16);
	/* max smaller than the chain: counted, not written */
	n = 0;
	CHECK_EQ(smb2_netif_decode(b, len, f, 1, &n), 0);
	CHECK_EQ(n, 2);
}

static void test_every_truncation(void)
{
	uint8_t b[304];
	size_t len = two(b), n;
	struct smb2_netif f[4];
	for (size_t l = 0; l < len; l++)
		CHECK_EQ(smb2_netif_decode(b, l, f, 4, &n), -EBADMSG);
	CHECK_EQ(smb2_netif_decode(NULL, 0, f, 4, &n), -EBADMSG);
}

static void test_bad_next(void)
{
	uint8_t b[304];
	size_t len = two(b), n;
	struct smb2_netif f[4];
	smb_put_le32(b, 8); /* overlaps its own entry */
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
	smb_put_le32(b, 400); /* past the end */
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
	smb_put_le32(b, 152);
	smb_put_le32(b + 152, 152); /* points past the last byte */
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
	smb_put_le32(b + 152, 0);
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), 0);
}

static void test_unknown_family_skipped(void)
{
	uint8_t b[304];
	size_t l = entry(b, 152, 1, 0, 0, 0, NULL, 0), n;
	l += entry(b + l, 0, 2, SMB2_NETIF_CAP_RSS, 1, AF_INET, "127.0.0.1", 0);
	struct smb2_netif f[4];
	CHECK_EQ(smb2_netif_decode(b, l, f, 4, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(f[0].if_index, 2);
}

int main(void)
{
	RUN(test_two_entries);
	RUN(test_every_truncation);
	RUN(test_bad_next);
	RUN(test_unknown_family_skipped);
	return check_report();
}
