/* tests/unit/proto/test_witness.c — the [MS-SWN] witness stubs
 * (client/proto/witness.h): WitnessrRegisterEx against bytes laid out by
 * hand from the IDL and NDR, the answers of GetInterfaceList, RegisterEx,
 * UnRegister and AsyncNotify built field by field, cut at every length and
 * bent every way, and one call through the DCE/RPC PDUs. */
#include <errno.h>
#include <stdbool.h>

#include "client/proto/smb2.h"
#include "client/proto/witness.h"
#include "tests/unit/check.h"
#include "tests/unit/proto/rpc_build.h"

/* UTF-16LE of an ASCII or UTF-8 string, and a NUL unit when nul. */
static void put_u16(struct smb_wr *w, const char *s, bool nul)
{
	uint8_t u[1200];
	ssize_t n = smb_utf8_to_utf16le(s, strlen(s), u, sizeof(u), false);
	smb_wr_bytes(w, u, n > 0 ? (size_t)n : 0);
	if (nul)
		smb_wr_u16(w, 0);
}

static void test_uuid(void)
{
	uint8_t u[16];
	CHECK_EQ(dcerpc_uuid_parse("ccd8c074-d0e5-4a40-92b4-d074faa6ba28", u), 0);
	CHECK_MEM(u, witness_syntax.uuid, 16);
	CHECK(witness_syntax.major == 1 && witness_syntax.minor == 1);
}

/* ---- RegisterEx, Register ------------------------------------------------- */

static void test_register_ex(void)
{
	/* Version 2; NetName "SRV": referent 0x20000, max_count 4, offset 0,
	 * actual_count 4, S R V NUL; ShareName "sh": referent 0x20001, 3 units
	 * and 2 bytes of padding; IpAddress NULL; ClientComputerName "c":
	 * referent 0x20002, 2 units; Flags 1; KeepAliveTimeout 120 */
	static const uint8_t want[84] = {
	    0,   0, 2,   0,                                       /* Version */
	    0,   0, 2,   0, 4,   0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, /* NetName */
	    'S', 0, 'R', 0, 'V', 0, 0, 0,                         /* */
	    1,   0, 2,   0, 3,   0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, /* ShareName */
	    's', 0, 'h', 0, 0,   0, 0, 0,                         /* */
	    0,   0, 0,   0,                                       /* IpAddress */
	    2,   0, 2,   0, 2,   0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, /* ClientComputerName */
	    'c', 0, 0,   0,                                       /* */
	    1,   0, 0,   0,                                       /* Flags */
	    120, 0, 0,   0};                                      /* KeepAliveTimeout */
	struct witness_register a = {
	    .version = WITNESS_V2,
	    .net_name = "SRV",
	    .share_name = "sh",
	    .client_name = "c",
	    .flags = WITNESS_REGISTER_IP_NOTIFICATION,
	    .keep_alive_timeout = 120,
	};
	uint8_t b[256];
	CHECK_EQ(witness_register_ex_encode(b, sizeof(b), &a), 84);
	CHECK_MEM(b, want, 84);
	for (size_t cap = 0; cap < 84; cap++)
		CHECK_EQ(witness_register_ex_encode(b, cap, &a), -ENOSPC);
	/* Register: no ShareName, Flags, KeepAliveTimeout; the referents
	 * still count up */
	CHECK_EQ(witness_register_encode(b, sizeof(b), &a), 84 - 24 - 8);
	CHECK_MEM(b, want, 28);
	CHECK_MEM(b + 28, want + 52, 4);
	CHECK_EQ(smb_le32(b + 32), 0x20001);
	a.ip_address = "10.0.0.1\xff";
	CHECK_EQ(witness_register_ex_encode(b, sizeof(b), &a), -EINVAL);
	CHECK_EQ(witness_register_ex_encode(b, sizeof(b), NULL), -EINVAL);

	/* the context handle of UnRegister and AsyncNotify */
	uint8_t h[WITNESS_HANDLE_LEN];
	for (int i = 0; i < WITNESS_HANDLE_LEN; i++)
		h[i] = (uint8_t)i;
	CHECK_EQ(witness_handle_encode(b, sizeof(b), h), 20);
	CHECK_MEM(b, h, 20);
	CHECK_EQ(witness_handle_encode(b, 19, h), -ENOSPC);
}

static void test_register_answers(void)
{
	uint8_t b[24], h[WITNESS_HANDLE_LEN];
	uint32_t werr = 1;
	for (int i = 0; i < 20; i++)
		b[i] = (uint8_t)(0xa0 + i);
	smb_put_le32(b + 20, 0);
	CHECK_EQ(witness_register_decode(b, 24, h, &werr), 0);
	CHECK_MEM(h, b, 20);
	CHECK_EQ(werr, 0);
	for (size_t l = 0; l < 24; l++)
		CHECK_EQ(witness_register_decode(b, l, h, &werr), -EBADMSG);
	uint8_t c[25] = {0};
	memcpy(c, b, 24);
	CHECK_EQ(witness_register_decode(c, 25, h, &werr), -EBADMSG); /* a byte left */
	smb_put_le32(b + 20, 0x490);                                  /* ERROR_NOT_FOUND */
	CHECK_EQ(witness_register_decode(b, 24, h, &werr), 0);
	CHECK_EQ(werr, 0x490);

	CHECK_EQ(witness_unregister_decode(b + 20, 4, &werr), 0);
	CHECK_EQ(werr, 0x490);
	for (size_t l = 0; l < 4; l++)
		CHECK_EQ(witness_unregister_decode(b + 20, l, &werr), -EBADMSG);
	CHECK_EQ(witness_unregister_decode(b + 19, 5, &werr), -EBADMSG);
	CHECK_EQ(witness_unregister_decode(NULL, 4, &werr), -EBADMSG);
}

/* ---- GetInterfaceList -------------------------------------------------------- */

struct iface {
	const char *name;
	uint32_t version;
	uint16_t state;
	uint8_t ipv4[4];
	uint8_t ipv6[16];
	uint32_t flags;
};

/* A unique pointer to WITNESS_INTERFACE_LIST (NumberOfInterfaces, a
 * unique pointer to the array), the array's max_count, the 552-byte
 * entries, the WERROR. */
static size_t iface_list(uint8_t *b, size_t cap, const struct iface *e, uint32_t n)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	smb_wr_u32(&w, 0x20000);
	smb_wr_u32(&w, n);
	smb_wr_u32(&w, 0x20004);
	smb_wr_u32(&w, n);
	for (uint32_t i = 0; i < n; i++) {
		size_t at = smb_wr_len(&w);
		put_u16(&w, e[i].name, true);
		/* the rest of the 260 units: garbage after the NUL */
		while (smb_wr_len(&w) < at + 520)
			smb_wr_u8(&w, 0x41);
		smb_wr_u32(&w, e[i].version);
		smb_wr_u16(&w, e[i].state);
		smb_wr_u16(&w, 0); /* to the 4-byte alignment of IPV4 */
		smb_wr_bytes(&w, e[i].ipv4, 4);
		smb_wr_bytes(&w, e[i].ipv6, 16);
		smb_wr_u32(&w, e[i].flags);
	}
	smb_wr_u32(&w, 0);
	return w.err ? 0 : smb_wr_len(&w);
}

static const struct iface ifaces[2] = {
    {.name = "clu\xc3\xa9ster",
     .version = WITNESS_V2,
     .state = WITNESS_STATE_AVAILABLE,
     .ipv4 = {192, 168, 1, 10},
     .flags = WITNESS_INFO_IPV4_VALID},
    {.name = "node2",
     .version = WITNESS_V1,
     .state = WITNESS_STATE_UNAVAILABLE,
     .ipv6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
     .flags = WITNESS_INFO_IPV6_VALID | WITNESS_INFO_WITNESS_IF},
};

static struct witness_interface iout[4];

static void test_interface_list(void)
{
	static uint8_t b[2048];
	uint32_t count = 0, werr = 1;
	size_t n = iface_list(b, sizeof(b), ifaces, 2);
	CHECK_EQ(n, 16 + 2 * 552 + 4);
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), 0);
	CHECK_EQ(count, 2);
	CHECK_EQ(werr, 0);
	CHECK(strcmp(iout[0].group_name, "clu\xc3\xa9ster") == 0 && iout[0].version == WITNESS_V2 &&
	      iout[0].state == 1 && iout[0].flags == 1 &&
	      memcmp(iout[0].ipv4, ifaces[0].ipv4, 4) == 0);
	CHECK(strcmp(iout[1].group_name, "node2") == 0 && iout[1].state == 0xff &&
	      iout[1].flags == 6 && memcmp(iout[1].ipv6, ifaces[1].ipv6, 16) == 0);
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 1, &count, &werr), -E2BIG);
	CHECK_EQ(count, 2);
	CHECK_EQ(witness_get_interface_list_decode(b, n, NULL, 0, &count, &werr), -E2BIG);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(witness_get_interface_list_decode(b, l, iout, 4, &count, &werr), -EBADMSG);
	CHECK_EQ(witness_get_interface_list_decode(b, n + 1, iout, 4, &count, &werr), -EBADMSG);

	/* a name of all 260 units, no NUL */
	uint8_t *name = b + 16;
	for (int i = 0; i < 260; i++)
		smb_put_le16(name + 2 * i, 0x20ac); /* the euro sign: 3 bytes of UTF-8 */
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), 0);
	CHECK_EQ(strlen(iout[0].group_name), 780);
	/* an unpaired surrogate */
	smb_put_le16(name, 0xd800);
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);

	/* counts out of range */
	n = iface_list(b, sizeof(b), ifaces, 2);
	smb_put_le32(b + 4, 3); /* NumberOfInterfaces != max_count */
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);
	smb_put_le32(b + 12, 3); /* both: past the stub */
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);
	smb_put_le32(b + 4, 0xffffffffu);
	smb_put_le32(b + 12, 0xffffffffu);
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);
	smb_put_le32(b + 4, 1); /* one fewer: a whole entry left over */
	smb_put_le32(b + 12, 1);
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);
	smb_put_le32(b + 4, 2);
	smb_put_le32(b + 8, 0); /* a NULL array of 2 */
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), -EBADMSG);

	/* a NULL list and an error */
	smb_put_le32(b, 0);
	smb_put_le32(b + 4, 0x5aa); /* ERROR_NO_SYSTEM_RESOURCES */
	CHECK_EQ(witness_get_interface_list_decode(b, 12, iout, 4, &count, &werr), -EBADMSG);
	CHECK_EQ(witness_get_interface_list_decode(b, 4, iout, 4, &count, &werr), -EBADMSG);
	CHECK_EQ(witness_get_interface_list_decode(b, 8, iout, 4, &count, &werr), 0);
	CHECK(count == 0 && werr == 0x5aa);
	/* an empty list: a NULL array */
	n = iface_list(b, sizeof(b), ifaces, 0);
	smb_put_le32(b + 8, 0);
	memmove(b + 12, b + 16, 4);
	CHECK_EQ(witness_get_interface_list_decode(b, n - 4, iout, 4, &count, &werr), 0);
	CHECK_EQ(count, 0);
}

/* ---- AsyncNotify ----------------------------------------------------------- */

/* A unique pointer to RESP_ASYNC_NOTIFY (MessageType, Length,
 * NumberOfMessages, a unique pointer to MessageBuffer), the buffer's
 * max_count and bytes, padding to 4, the WERROR. */
static size_t notify(uint8_t *b, size_t cap, uint32_t type, uint32_t num, const uint8_t *msg,
                     size_t mlen)
{
	struct smb_wr w;
	smb_wr_init(&w, b, cap);
	smb_wr_u32(&w, 0x20000);
	smb_wr_u32(&w, type);
	smb_wr_u32(&w, (uint32_t)mlen);
	smb_wr_u32(&w, num);
	smb_wr_u32(&w, 0x20004);
	smb_wr_u32(&w, (uint32_t)mlen);
	smb_wr_bytes(&w, msg, mlen);
	smb_wr_align(&w, 4);
	smb_wr_u32(&w, 0);
	return w.err ? 0 : smb_wr_len(&w);
}

/* RESOURCE_CHANGE: Length (all of it), ChangeType, the name and a NUL. */
static void put_resource(struct smb_wr *w, uint32_t change, const char *name)
{
	size_t at = smb_wr_len(w);
	smb_wr_u32(w, 0);
	smb_wr_u32(w, change);
	put_u16(w, name, true);
	smb_put_le32(w->base + at, (uint32_t)(smb_wr_len(w) - at));
}

/* IPADDR_INFO_LIST: Length (of the whole list), Reserved, the count,
 * then Flags, IPV4, IPV6 of each, addresses in network order. */
static void put_addrs(struct smb_wr *w, uint32_t n, const uint8_t (*v4)[4])
{
	smb_wr_u32(w, 12 + 24 * n);
	smb_wr_u32(w, 0);
	smb_wr_u32(w, n);
	for (uint32_t i = 0; i < n; i++) {
		smb_wr_u32(w, WITNESS_IPADDR_V4 | WITNESS_IPADDR_ONLINE);
		smb_wr_bytes(w, v4[i], 4);
		smb_wr_zero(w, 16);
	}
}

static struct witness_notify nt;
static struct witness_msg msgs[4];
static struct witness_ipaddr addrs[4];
static char strs[256];

static int nd(const uint8_t *b, size_t len)
{
	return witness_async_notify_decode(b, len, &nt, msgs, 4, addrs, 4, strs, sizeof(strs));
}

/* Two resource changes: "\\srv\share" unavailable, "fs1" available. */
static size_t resource_notify(uint8_t *b, size_t cap)
{
	uint8_t m[128];
	struct smb_wr w;
	smb_wr_init(&w, m, sizeof(m));
	put_resource(&w, WITNESS_RESOURCE_UNAVAILABLE, "\\\\srv\\share");
	put_resource(&w, WITNESS_RESOURCE_AVAILABLE, "fs1");
	return notify(b, cap, WITNESS_NOTIFY_RESOURCE_CHANGE, 2, m, smb_wr_len(&w));
}

static void test_resource_change(void)
{
	uint8_t b[256];
	size_t n = resource_notify(b, sizeof(b));
	/* 24 of NDR, 8 + 24 and 8 + 8 of messages, 4 of WERROR */
	CHECK_EQ(n, 24 + 48 + 4);
	CHECK_EQ(nd(b, n), 0);
	CHECK(nt.present && nt.type == 1 && nt.num == 2 && nt.werror == 0 && nt.naddrs == 0);
	CHECK_EQ(nt.str_len, 12 + 4);
	CHECK(msgs[0].change_type == 0xff && strcmp(msgs[0].resource_name, "\\\\srv\\share") == 0);
	CHECK(msgs[1].change_type == 1 && strcmp(msgs[1].resource_name, "fs1") == 0);
	for (size_t l = 0; l < n; l++)
		CHECK_EQ(nd(b, l), -EBADMSG);
	CHECK_EQ(nd(b, n + 1), -EBADMSG);
	/* room: messages, strings */
	CHECK_EQ(witness_async_notify_decode(b, n, &nt, msgs, 1, addrs, 4, strs, sizeof(strs)),
	         -E2BIG);
	CHECK_EQ(witness_async_notify_decode(b, n, &nt, msgs, 4, addrs, 4, strs, 15), -E2BIG);
	CHECK_EQ(nt.str_len, 16);
	CHECK_EQ(witness_async_notify_decode(b, n, &nt, msgs, 4, addrs, 4, strs, 16), 0);
	CHECK_EQ(witness_async_notify_decode(b, n, &nt, NULL, 0, NULL, 0, NULL, 0), -E2BIG);
	CHECK(nt.num == 2 && nt.str_len == 16);

	uint8_t c[256];
#define MUT(stmt, want)                   \
	do {                              \
		memcpy(c, b, n);          \
		uint8_t *m = c;           \
		stmt;                     \
		CHECK_EQ(nd(c, n), want); \
	} while (0)
	/* the messages start at 24: Length 32, ChangeType, 12 units */
	MUT(smb_put_le32(m + 24, 7), -EBADMSG);  /* Length shorter than its header */
	MUT(smb_put_le32(m + 24, 49), -EBADMSG); /* past the buffer */
	MUT(smb_put_le32(m + 24, 0x7fffffff), -EBADMSG);
	MUT(smb_put_le32(m + 24, 30), -EBADMSG); /* the NUL outside the message */
	MUT(smb_put_le32(m + 12, 3), -EBADMSG);  /* NumberOfMessages: a third one */
	MUT(smb_put_le32(m + 12, 1), 0);         /* one: the rest is ignored */
	MUT(smb_put_le32(m + 4, 0), -EBADMSG);   /* MessageType */
	MUT(smb_put_le32(m + 4, 5), -EBADMSG);
	MUT(smb_put_le32(m + 8, 47), -EBADMSG); /* Length != max_count */
	MUT(smb_put_le32(m + 20, 47), -EBADMSG);
	MUT(smb_put_le16(m + 32, 0xdc00), -EBADMSG); /* an unpaired surrogate */
	MUT(smb_put_le32(m + 16, 0), -EBADMSG);      /* a NULL buffer with Length */
#undef MUT
	/* a NULL answer: the pointer, the WERROR */
	memset(c, 0, 8);
	smb_put_le32(c + 4, 0x5);
	CHECK_EQ(nd(c, 8), 0);
	CHECK(!nt.present && nt.werror == 5 && nt.num == 0);
}

static void test_ip_change(void)
{
	const uint8_t v4[3][4] = {{10, 0, 0, 1}, {10, 0, 0, 2}, {172, 16, 0, 9}};
	uint8_t m[256], b[512];
	struct smb_wr w;
	smb_wr_init(&w, m, sizeof(m));
	put_addrs(&w, 2, v4);
	put_addrs(&w, 1, v4 + 2);
	size_t ml = smb_wr_len(&w);
	CHECK_EQ(ml, 12 + 48 + 12 + 24);
	for (uint32_t type = 2; type <= 4; type++) {
		size_t n = notify(b, sizeof(b), type, 2, m, ml);
		CHECK_EQ(nd(b, n), 0);
		CHECK(nt.type == type && nt.num == 2 && nt.naddrs == 3 && nt.str_len == 0);
		CHECK(msgs[0].addr_first == 0 && msgs[0].addr_count == 2 &&
		      msgs[1].addr_first == 2 && msgs[1].addr_count == 1);
		CHECK(addrs[0].flags == 9 && memcmp(addrs[0].ipv4, v4[0], 4) == 0 &&
		      memcmp(addrs[1].ipv4, v4[1], 4) == 0 && memcmp(addrs[2].ipv4, v4[2], 4) == 0);
		CHECK_EQ(witness_async_notify_decode(b, n, &nt, msgs, 4, addrs, 2, NULL, 0),
		         -E2BIG);
		CHECK_EQ(nt.naddrs, 3);
		for (size_t l = 0; l < n; l++)
			CHECK_EQ(nd(b, l), -EBADMSG);
	}
	size_t n = notify(b, sizeof(b), WITNESS_NOTIFY_CLIENT_MOVE, 2, m, ml);
	uint8_t c[512];
	memcpy(c, b, n);
	smb_put_le32(c + 24 + 8, 4); /* IPAddrInstances past the buffer */
	CHECK_EQ(nd(c, n), -EBADMSG);
	smb_put_le32(c + 24 + 8, 0xffffffffu);
	CHECK_EQ(nd(c, n), -EBADMSG);
	memcpy(c, b, n);
	smb_put_le32(c + 24, 24); /* Length as older Samba servers send it */
	CHECK_EQ(nd(c, n), 0);
	smb_put_le32(c + 24, 0xffffffffu); /* or anything: not read */
	CHECK_EQ(nd(c, n), 0);
	/* a buffer of 13 bytes: one empty list and one byte more, padded */
	smb_wr_init(&w, m, sizeof(m));
	put_addrs(&w, 0, v4);
	smb_wr_u8(&w, 0xee);
	n = notify(b, sizeof(b), WITNESS_NOTIFY_IP_CHANGE, 1, m, smb_wr_len(&w));
	CHECK_EQ(n, 24 + 16 + 4);
	CHECK_EQ(nd(b, n), 0);
	CHECK(nt.num == 1 && nt.naddrs == 0 && msgs[0].addr_count == 0);
}

/* The shapes of a Windows server's answers, as Samba's NDR tests keep
 * them (source4/torture/ndr/witness.c), laid out here field by field. */
static void test_server_answers(void)
{
	uint8_t b[2048];
	struct smb_wr w;

	/* a CLIENT_MOVE to 192.168.3.45: RESP_ASYNC_NOTIFY (type 2, Length
	 * 36, one message), the buffer's max_count, IPADDR_INFO_LIST (Length
	 * 36: the whole list, Reserved, one entry: IPADDR_V4, c0 a8 03 2d,
	 * and an IPv6 field the server left uninitialised), no padding, the
	 * WERROR: 64 bytes */
	static const uint8_t junk6[16] = {0,    0, 0, 0, 0x38, 0xe8, 0xeb, 0x26,
	                                  0x8e, 0, 0, 0, 0,    0x9e, 0x60, 0x26};
	smb_wr_init(&w, b, sizeof(b));
	smb_wr_u32(&w, 0x20000);
	smb_wr_u32(&w, WITNESS_NOTIFY_CLIENT_MOVE);
	smb_wr_u32(&w, 36);
	smb_wr_u32(&w, 1);
	smb_wr_u32(&w, 0x20004);
	smb_wr_u32(&w, 36);
	smb_wr_u32(&w, 36);
	smb_wr_u32(&w, 0);
	smb_wr_u32(&w, 1);
	smb_wr_u32(&w, WITNESS_IPADDR_V4);
	const uint8_t ip[4] = {0xc0, 0xa8, 0x03, 0x2d};
	smb_wr_bytes(&w, ip, 4);
	smb_wr_bytes(&w, junk6, 16);
	smb_wr_u32(&w, 0);
	CHECK_EQ(smb_wr_len(&w), 64);
	CHECK_EQ(nd(b, 64), 0);
	const uint8_t want[4] = {192, 168, 3, 45};
	CHECK(nt.type == 2 && nt.num == 1 && nt.naddrs == 1 && msgs[0].addr_count == 1 &&
	      addrs[0].flags == WITNESS_IPADDR_V4 && memcmp(addrs[0].ipv4, want, 4) == 0);

	/* SOFS unavailable: type 1, Length 18, one RESOURCE_CHANGE (Length
	 * 18, 0xff, "SOFS" and its NUL), 2 bytes of NDR padding, the WERROR:
	 * 48 bytes */
	smb_wr_init(&w, b, sizeof(b));
	smb_wr_u32(&w, 0x20000);
	smb_wr_u32(&w, WITNESS_NOTIFY_RESOURCE_CHANGE);
	smb_wr_u32(&w, 18);
	smb_wr_u32(&w, 1);
	smb_wr_u32(&w, 0x20004);
	smb_wr_u32(&w, 18);
	smb_wr_u32(&w, 18);
	smb_wr_u32(&w, WITNESS_RESOURCE_UNAVAILABLE);
	put_u16(&w, "SOFS", true);
	smb_wr_zero(&w, 2);
	smb_wr_u32(&w, 0);
	CHECK_EQ(smb_wr_len(&w), 48);
	CHECK_EQ(nd(b, 48), 0);
	CHECK(nt.num == 1 && msgs[0].change_type == 0xff &&
	      strcmp(msgs[0].resource_name, "SOFS") == 0);

	/* the interface list: NODE2 192.168.3.44 (c0 a8 03 2c) with the
	 * witness flag, NODE1 192.168.3.45, both Version 0xffffffff,
	 * AVAILABLE; the rest of each name zero */
	const struct iface two[2] = {
	    {.name = "NODE2",
	     .version = WITNESS_UNSPECIFIED_VERSION,
	     .state = WITNESS_STATE_AVAILABLE,
	     .ipv4 = {0xc0, 0xa8, 0x03, 0x2c},
	     .flags = WITNESS_INFO_IPV4_VALID | WITNESS_INFO_WITNESS_IF},
	    {.name = "NODE1",
	     .version = WITNESS_UNSPECIFIED_VERSION,
	     .state = WITNESS_STATE_AVAILABLE,
	     .ipv4 = {0xc0, 0xa8, 0x03, 0x2d},
	     .flags = WITNESS_INFO_IPV4_VALID},
	};
	size_t n = iface_list(b, sizeof(b), two, 2);
	CHECK_EQ(n, 1124);
	for (size_t i = 0; i < 2; i++) /* zeros after the names, as captured */
		memset(b + 16 + 552 * i + 12, 0, 520 - 12);
	uint32_t count, werr;
	CHECK_EQ(witness_get_interface_list_decode(b, n, iout, 4, &count, &werr), 0);
	const uint8_t ip44[4] = {192, 168, 3, 44};
	CHECK(count == 2 && strcmp(iout[0].group_name, "NODE2") == 0 &&
	      iout[0].version == 0xffffffffu && iout[0].flags == 5 &&
	      memcmp(iout[0].ipv4, ip44, 4) == 0 && strcmp(iout[1].group_name, "NODE1") == 0);
}

/* Every one-byte change: only documented verdicts, strings NUL-terminated
 * inside strs. */
static void check_all_bytes(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t keep = b[i];
		for (int v = 0; v < 256; v += 17) {
			b[i] = (uint8_t)v;
			int rc = nd(b, n);
			CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
			if (rc == 0)
				for (uint32_t k = 0; k < nt.num && nt.type == 1; k++)
					CHECK(msgs[k].resource_name >= strs &&
					      msgs[k].resource_name < strs + nt.str_len &&
					      strs[nt.str_len - 1] == '\0');
			uint32_t count, werr;
			rc = witness_get_interface_list_decode(b, n, iout, 4, &count, &werr);
			CHECK(rc == 0 || rc == -EBADMSG || rc == -E2BIG);
		}
		b[i] = keep;
	}
}

static void test_mutations(void)
{
	static uint8_t b[2048];
	size_t n = resource_notify(b, sizeof(b));
	check_all_bytes(b, n);
	n = iface_list(b, sizeof(b), ifaces, 1);
	check_all_bytes(b, n);
}

/* ---- through the PDUs ------------------------------------------------------- */

static void test_through_pdus(void)
{
	uint8_t stub[256], pdu[512];
	struct witness_register a = {.version = WITNESS_V2,
	                             .net_name = "fs",
	                             .share_name = "data",
	                             .ip_address = "192.168.1.10",
	                             .client_name = "me",
	                             .keep_alive_timeout = 300};
	ssize_t sl = witness_register_ex_encode(stub, sizeof(stub), &a);
	CHECK(sl > 0);
	struct dcerpc_request req = {
	    .pfc_flags = 3, .call_id = 4, .opnum = WITNESS_OPNUM_REGISTER_EX};
	struct dcerpc_auth auth = {.type = 9, .level = 6, .token_len = 16};
	ssize_t pl = dcerpc_request_encode(pdu, sizeof(pdu), &req, stub, (size_t)sl, &auth);
	CHECK(pl > 0 && (pl - 16 - 8 - 24) % 16 == 0);
	struct dcerpc_pdu p;
	CHECK_EQ(dcerpc_pdu_decode(pdu, (size_t)pl, &p), pl);
	CHECK(p.body_len == 8 + (size_t)sl && memcmp(p.body + 8, stub, (size_t)sl) == 0);
	CHECK_EQ(smb_le16(p.body + 6), WITNESS_OPNUM_REGISTER_EX);

	/* the answer: response PDU, its stub to the decoder */
	struct smb_wr w;
	smb_wr_init(&w, pdu, sizeof(pdu));
	put_response_head(&w, DCERPC_PTYPE_RESPONSE, 3, 4, 24, 0);
	for (int i = 0; i < 20; i++)
		smb_wr_u8(&w, (uint8_t)(i + 1));
	smb_wr_u32(&w, 0);
	size_t rl = end_pdu(&w);
	struct dcerpc_response rsp;
	CHECK_EQ(dcerpc_pdu_decode(pdu, rl, &p), 48);
	CHECK_EQ(dcerpc_response_decode(&p, &rsp), 0);
	uint8_t handle[WITNESS_HANDLE_LEN];
	uint32_t werr = 1;
	CHECK_EQ(witness_register_decode(rsp.stub, rsp.stub_len, handle, &werr), 0);
	CHECK(werr == 0 && handle[0] == 1 && handle[19] == 20);
}

int main(void)
{
	RUN(test_uuid);
	RUN(test_register_ex);
	RUN(test_register_answers);
	RUN(test_interface_list);
	RUN(test_resource_change);
	RUN(test_ip_change);
	RUN(test_server_answers);
	RUN(test_mutations);
	RUN(test_through_pdus);
	return check_report();
}
