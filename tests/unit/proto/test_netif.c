/* tests/unit/proto/test_netif.c — NETWORK_INTERFACE_INFO chains. */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "client/proto/smb2.h"
#include "client/proto/smb2_const.h"
#include "tests/unit/check.h"

#define ENTRY 152

/* One entry as a server puts it on the wire: family in little-endian, the
 * rest of the SOCKADDR in network order. */
static size_t entry(uint8_t *b, uint32_t next, uint32_t idx, uint32_t cap, uint64_t speed,
                    int family, const char *addr, uint32_t scope)
{
	memset(b, 0, ENTRY);
	smb_put_le32(b, next);
	smb_put_le32(b + 4, idx);
	smb_put_le32(b + 8, cap);
	smb_put_le64(b + 16, speed);
	uint8_t *sa = b + 24;
	if (family == AF_INET) {
		smb_put_le16(sa, 0x0002);
		inet_pton(AF_INET, addr, sa + 4);
	} else if (family == AF_INET6) {
		uint32_t be = htonl(scope);
		smb_put_le16(sa, 0x0017);
		inet_pton(AF_INET6, addr, sa + 8);
		memcpy(sa + 24, &be, 4);
	} else {
		smb_put_le16(sa, (uint16_t)family);
	}
	return ENTRY;
}

/* What a two-link server says: a 10 Gb/s RDMA (and RSS) IPv4 interface and a
 * 1 Gb/s RSS IPv6 one. */
static size_t two(uint8_t *b)
{
	size_t n = entry(b, ENTRY, 3, SMB2_NETIF_CAP_RDMA | SMB2_NETIF_CAP_RSS, 10000000000ull,
	                 AF_INET, "10.77.1.1", 0);
	return n + entry(b + n, 0, 4, SMB2_NETIF_CAP_RSS, 1000000000ull, AF_INET6, "fd00::7", 5);
}

static void test_two_entries(void)
{
	uint8_t b[2 * ENTRY];
	size_t len = two(b), n = 0;
	struct smb2_netif f[4];
	CHECK_EQ(len, sizeof(b));
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[0].family, AF_INET);
	CHECK_EQ(f[0].if_index, 3);
	CHECK_EQ(f[0].capability, SMB2_NETIF_CAP_RDMA | SMB2_NETIF_CAP_RSS);
	CHECK(f[0].link_speed == 10000000000ull);
	CHECK_EQ(f[0].port, 0);
	uint8_t a4[4];
	inet_pton(AF_INET, "10.77.1.1", a4);
	CHECK_MEM(f[0].addr, a4, 4);
	CHECK_EQ(f[1].family, AF_INET6);
	CHECK_EQ(f[1].if_index, 4);
	CHECK_EQ(f[1].capability, SMB2_NETIF_CAP_RSS);
	CHECK(f[1].link_speed == 1000000000ull);
	CHECK_EQ(f[1].scope_id, 5);
	uint8_t a6[16];
	inet_pton(AF_INET6, "fd00::7", a6);
	CHECK_MEM(f[1].addr, a6, 16);
}

/* max smaller than the chain: counted, not written. */
static void test_more_than_max(void)
{
	uint8_t b[2 * ENTRY];
	size_t len = two(b), n = 0;
	struct smb2_netif f[2];
	memset(f, 0xa5, sizeof(f));
	CHECK_EQ(smb2_netif_decode(b, len, f, 1, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[0].if_index, 3);
	CHECK_EQ(f[1].if_index, 0xa5a5a5a5u); /* untouched */
	n = 0;
	CHECK_EQ(smb2_netif_decode(b, len, NULL, 0, &n), 0);
	CHECK_EQ(n, 2);
}

static void test_every_truncation(void)
{
	uint8_t b[2 * ENTRY];
	size_t len = two(b), n;
	struct smb2_netif f[4];
	/* An empty output is a list of no interfaces, not a broken one. */
	n = 9;
	CHECK_EQ(smb2_netif_decode(b, 0, f, 4, &n), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(smb2_netif_decode(NULL, 0, f, 4, &n), 0);
	CHECK_EQ(n, 0);
	for (size_t l = 1; l < len; l++) {
		n = 9;
		CHECK_EQ(smb2_netif_decode(b, l, f, 4, &n), -EBADMSG);
		CHECK_EQ(n, 0);
	}
	CHECK_EQ(smb2_netif_decode(NULL, ENTRY, f, 4, &n), -EBADMSG);
}

static void test_bad_next(void)
{
	uint8_t b[3 * ENTRY];
	size_t len = two(b), n;
	struct smb2_netif f[4];
	static const uint32_t bad[] = {
	    1,
	    8,
	    ENTRY - 1, /* inside its own entry */
	    ENTRY + 1, /* next entry would end past the buffer */
	    2 * ENTRY,
	    400,              /* past the end */
	    (uint32_t)-ENTRY, /* backwards, if it were signed */
	    UINT32_MAX,
	    0x80000000, /* wraps a 32-bit offset */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		smb_put_le32(b, bad[i]);
		n = 9;
		CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
		CHECK_EQ(n, 0);
	}
	smb_put_le32(b, ENTRY);
	/* the last entry's Next points past the last byte */
	smb_put_le32(b + ENTRY, ENTRY);
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
	/* or back at the first one: a loop */
	smb_put_le32(b + ENTRY, (uint32_t)-ENTRY);
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), -EBADMSG);
	/* a Next that only reaches the buffer's end but not a whole entry */
	entry(b + 2 * ENTRY, 0, 9, 0, 1, AF_INET, "10.0.0.9", 0);
	smb_put_le32(b + ENTRY, ENTRY);
	CHECK_EQ(smb2_netif_decode(b, 3 * ENTRY - 1, f, 4, &n), -EBADMSG);
	/* ... and with the whole third entry there, three */
	CHECK_EQ(smb2_netif_decode(b, 3 * ENTRY, f, 4, &n), 0);
	CHECK_EQ(n, 3);
	smb_put_le32(b + ENTRY, 0);
	CHECK_EQ(smb2_netif_decode(b, len, f, 4, &n), 0);
	CHECK_EQ(n, 2);
}

/* Entries are 8-byte aligned; a server may leave a gap between them. */
static void test_padded_next(void)
{
	uint8_t b[ENTRY + 8 + ENTRY];
	memset(b, 0xee, sizeof(b));
	entry(b, ENTRY + 8, 1, 0, 1, AF_INET, "10.77.1.1", 0);
	entry(b + ENTRY + 8, 0, 2, 0, 2, AF_INET, "10.77.2.1", 0);
	struct smb2_netif f[4];
	size_t n;
	CHECK_EQ(smb2_netif_decode(b, sizeof(b), f, 4, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[1].if_index, 2);
	CHECK(f[1].link_speed == 2);
	/* trailing bytes after the last entry are ignored */
	uint8_t c[ENTRY + 16];
	entry(c, 0, 5, 0, 1, AF_INET, "10.77.5.1", 0);
	CHECK_EQ(smb2_netif_decode(c, sizeof(c), f, 4, &n), 0);
	CHECK_EQ(n, 1);
}

static void test_unknown_family_skipped(void)
{
	uint8_t b[4 * ENTRY];
	size_t l = entry(b, ENTRY, 1, 0, 0, 0x4242, NULL, 0), n;
	l += entry(b + l, ENTRY, 2, SMB2_NETIF_CAP_RSS, 1, AF_INET, "127.0.0.1", 0);
	l += entry(b + l, ENTRY, 3, 0, 1, 0 /* AF_UNSPEC */, NULL, 0);
	l += entry(b + l, 0, 4, 0, 1, 0x0001 /* AF_UNIX */, NULL, 0);
	struct smb2_netif f[4];
	CHECK_EQ(smb2_netif_decode(b, l, f, 4, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(f[0].if_index, 2);
	/* a chain of nothing usable is still well formed */
	CHECK_EQ(smb2_netif_decode(b, ENTRY, f, 4, &n), -EBADMSG); /* Next says more */
	smb_put_le32(b, 0);
	CHECK_EQ(smb2_netif_decode(b, ENTRY, f, 4, &n), 0);
	CHECK_EQ(n, 0);
}

/* Port and ScopeId are in network order ([MS-SMB2] 2.2.32.5.1). */
static void test_port_and_scope(void)
{
	uint8_t b[2 * ENTRY];
	entry(b, ENTRY, 1, 0, 1, AF_INET, "192.0.2.1", 0);
	entry(b + ENTRY, 0, 2, 0, 1, AF_INET6, "fe80::1", 0x01020304);
	b[24 + 2] = 0x01; /* port 445 */
	b[24 + 3] = 0xbd;
	b[ENTRY + 24 + 2] = 0x15; /* port 5445 */
	b[ENTRY + 24 + 3] = 0x45;
	struct smb2_netif f[2];
	size_t n;
	CHECK_EQ(smb2_netif_decode(b, sizeof(b), f, 2, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(f[0].port, 445);
	CHECK_EQ(f[1].port, 5445);
	CHECK_EQ(f[1].scope_id, 0x01020304);
}

int main(void)
{
	RUN(test_two_entries);
	RUN(test_more_than_max);
	RUN(test_every_truncation);
	RUN(test_bad_next);
	RUN(test_padded_next);
	RUN(test_unknown_family_skipped);
	RUN(test_port_and_scope);
	return check_report();
}
