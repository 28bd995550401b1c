/* client/proto/smb2_netif.c — NETWORK_INTERFACE_INFO chains ([MS-SMB2] 2.2.32.5). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "client/proto/smb2.h"
#include "client/proto/smb2_const.h"

/* Next(4) IfIndex(4) Capability(4) Reserved(4) LinkSpeed(8) SockAddr_Storage(128) */
#define NETIF_ENTRY_SIZE 152
#define NETIF_ADDR_OFF   24
/* SockAddr_Storage Family values, 2.2.32.5.1 */
#define SS_INET  0x0002
#define SS_INET6 0x0017

/* Past Family, SOCKADDR_IN and SOCKADDR_IN6 are in network byte order. */
static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int smb2_netif_decode(const uint8_t *buf, size_t len, struct smb2_netif *out, size_t max,
                      size_t *count)
{
	size_t off = 0, n = 0;
	*count = 0;
	/* Samba answers with an empty output when no interface qualifies. */
	if (len == 0)
		return 0;
	if (!buf)
		return -EBADMSG;
	for (;;) {
		if (len - off < NETIF_ENTRY_SIZE)
			return -EBADMSG;
		const uint8_t *e = buf + off;
		uint32_t next = smb_le32(e);
		const uint8_t *sa = e + NETIF_ADDR_OFF;
		uint16_t fam = smb_le16(sa);
		struct smb2_netif f = {
		    .if_index = smb_le32(e + 4),
		    .capability = smb_le32(e + 8),
		    .link_speed = smb_le64(e + 16),
		    .port = be16(sa + 2),
		};
		bool known = true;
		if (fam == SS_INET) {
			/* Family(2) Port(2) IPv4Address(4) Reserved(8) */
			f.family = AF_INET;
			memcpy(f.addr, sa + 4, 4);
		} else if (fam == SS_INET6) {
			/* Family(2) Port(2) FlowInfo(4) IPv6Address(16) ScopeId(4) */
			f.family = AF_INET6;
			memcpy(f.addr, sa + 8, 16);
			f.scope_id = be32(sa + 24);
		} else {
			known = false;
		}
		if (known) {
			if (n < max)
				out[n] = f;
			n++;
		}
		if (next == 0)
			break;
		/* Forward by at least a whole entry: no loops, no overlap.  The
		 * entry it points at must then fit (checked at the loop top). */
		if (next < NETIF_ENTRY_SIZE || next > len - off)
			return -EBADMSG;
		off += next;
	}
	*count = n;
	return 0;
}
