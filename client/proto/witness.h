/* client/proto/witness.h — the NDR stubs of the Service Witness Protocol
 * client: which interfaces a cluster has, registering for a share's
 * resource, and the notifications that say it moved.
 *
 * Layouts: [MS-SWN] 2.2 and 3.2 (the interface ccd8c074-d0e5-4a40-92b4-
 * d074faa6ba28 v1.1 over ncacn_ip_tcp, its port from the endpoint mapper:
 * client/proto/dcerpc.h): WitnessrGetInterfaceList (opnum 0,
 * WITNESS_INTERFACE_LIST 2.2.2.6 of WITNESS_INTERFACE_INFO 2.2.2.5),
 * WitnessrRegister (1), WitnessrUnRegister (2), WitnessrAsyncNotify (3,
 * RESP_ASYNC_NOTIFY 2.2.2.4 with RESOURCE_CHANGE and IPADDR_INFO_LIST of
 * IPADDR_INFO 2.2.2.1), WitnessrRegisterEx (4); the methods in 3.1.4.
 * The stubs are NDR 2.0; the MessageBuffer of RESP_ASYNC_NOTIFY is a byte
 * array whose structures are little-endian fixed layouts, packed back to
 * back, not NDR.
 *
 * Contract: the rules of client/proto/dcerpc.h.  Encoders write a request's
 * stub (the caller wraps it with dcerpc_request_encode()), decoders read a
 * response's whole stub (reassembled: dcerpc_reasm_add()) and check every
 * pointer, count, length and string against it; -EBADMSG when anything
 * lies outside it or bytes are left after the WERROR.  Strings come out as
 * UTF-8 copies; nothing points into the stub afterwards.  The call's own
 * result (WERROR) is handed back, not turned into an errno.
 *
 * Addresses are in network order on the wire and come out so: the IDL's
 * ULONG IPV4 and USHORT IPV6[8] hold the bytes of in_addr / in6_addr, in
 * WITNESS_INTERFACE_INFO and in IPADDR_INFO alike (the server answers
 * kept in Samba's source4/torture/ndr/witness.c: c0 a8 03 2c for
 * 192.168.3.44 in an interface list, c0 a8 03 2d for 192.168.3.45 in a
 * CLIENT_MOVE).
 */
#ifndef SMBRDMA_PROTO_WITNESS_H
#define SMBRDMA_PROTO_WITNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/dcerpc.h"

/* ccd8c074-d0e5-4a40-92b4-d074faa6ba28 v1.1 */
extern const struct dcerpc_syntax witness_syntax;

#define WITNESS_OPNUM_GET_INTERFACE_LIST 0
#define WITNESS_OPNUM_REGISTER           1
#define WITNESS_OPNUM_UNREGISTER         2
#define WITNESS_OPNUM_ASYNC_NOTIFY       3
#define WITNESS_OPNUM_REGISTER_EX        4

#define WITNESS_V1 0x00010001u
#define WITNESS_V2 0x00020000u
/* the Version of a WITNESS_INTERFACE_INFO from a server that does not say */
#define WITNESS_UNSPECIFIED_VERSION 0xFFFFFFFFu

#define WITNESS_HANDLE_LEN NDR_CONTEXT_HANDLE_LEN

/* ---- WitnessrGetInterfaceList -------------------------------------------- */

/* WITNESS_INTERFACE_INFO State */
#define WITNESS_STATE_UNKNOWN     0x0000
#define WITNESS_STATE_AVAILABLE   0x0001
#define WITNESS_STATE_UNAVAILABLE 0x00ff
/* WITNESS_INTERFACE_INFO Flags */
#define WITNESS_INFO_IPV4_VALID 0x00000001u
#define WITNESS_INFO_IPV6_VALID 0x00000002u
#define WITNESS_INFO_WITNESS_IF 0x00000004u

#define WITNESS_GROUP_NAME_UNITS 260
#define WITNESS_GROUP_NAME_BUF   (WITNESS_GROUP_NAME_UNITS * 3 + 1)
struct witness_interface {
	char group_name[WITNESS_GROUP_NAME_BUF]; /* up to the first NUL unit, UTF-8 */
	uint32_t version;
	uint16_t state;
	uint32_t flags;
	uint8_t ipv4[4];
	uint8_t ipv6[16];
};
/* The request has no stub: no encoder.  The answer: a unique pointer to
 * WITNESS_INTERFACE_LIST (NumberOfInterfaces, a unique pointer to the
 * conformant array of 552-byte WITNESS_INTERFACE_INFO), then the WERROR.
 * Returns 0 with *count entries in out[0..*count) and *werror; -E2BIG when
 * *count > max (out unspecified); -EBADMSG.  A NULL list is *count 0. */
int witness_get_interface_list_decode(const uint8_t *stub, size_t len,
                                      struct witness_interface *out, size_t max, uint32_t *count,
                                      uint32_t *werror);

/* ---- WitnessrRegister(Ex), WitnessrUnRegister ---------------------------- */

#define WITNESS_REGISTER_NONE            0x00000000u
#define WITNESS_REGISTER_IP_NOTIFICATION 0x00000001u

/* The strings are UTF-8; NULL goes as a NULL pointer.  share_name, flags
 * and keep_alive_timeout (seconds) only in RegisterEx. */
struct witness_register {
	uint32_t version; /* WITNESS_V1 / WITNESS_V2 */
	const char *net_name;
	const char *share_name;
	const char *ip_address;
	const char *client_name;
	uint32_t flags;
	uint32_t keep_alive_timeout;
};
/* WitnessrRegisterEx (opnum 4): Version, NetName, ShareName, IpAddress,
 * ClientComputerName as unique pointers to conformant varying strings,
 * Flags, KeepAliveTimeout.  -EINVAL for invalid UTF-8. */
ssize_t witness_register_ex_encode(uint8_t *stub, size_t cap, const struct witness_register *a);
/* WitnessrRegister (opnum 1): Version, NetName, IpAddress,
 * ClientComputerName. */
ssize_t witness_register_encode(uint8_t *stub, size_t cap, const struct witness_register *a);
/* The answer to either: the context handle and the WERROR. */
int witness_register_decode(const uint8_t *stub, size_t len, uint8_t handle[WITNESS_HANDLE_LEN],
                            uint32_t *werror);

/* The request of WitnessrUnRegister (opnum 2) and of WitnessrAsyncNotify
 * (opnum 3): the context handle alone. */
ssize_t witness_handle_encode(uint8_t *stub, size_t cap, const uint8_t handle[WITNESS_HANDLE_LEN]);
/* The answer to WitnessrUnRegister: the WERROR alone. */
int witness_unregister_decode(const uint8_t *stub, size_t len, uint32_t *werror);

/* ---- WitnessrAsyncNotify -------------------------------------------------- */

/* MessageType */
#define WITNESS_NOTIFY_RESOURCE_CHANGE 1
#define WITNESS_NOTIFY_CLIENT_MOVE     2
#define WITNESS_NOTIFY_SHARE_MOVE      3
#define WITNESS_NOTIFY_IP_CHANGE       4
/* RESOURCE_CHANGE ChangeType */
#define WITNESS_RESOURCE_UNKNOWN     0x00000000u
#define WITNESS_RESOURCE_AVAILABLE   0x00000001u
#define WITNESS_RESOURCE_UNAVAILABLE 0x000000ffu
/* IPADDR_INFO Flags */
#define WITNESS_IPADDR_V4      0x00000001u
#define WITNESS_IPADDR_V6      0x00000002u
#define WITNESS_IPADDR_ONLINE  0x00000008u
#define WITNESS_IPADDR_OFFLINE 0x00000010u

struct witness_ipaddr {
	uint32_t flags;
	uint8_t ipv4[4];
	uint8_t ipv6[16];
};
/* One message of the MessageBuffer. */
struct witness_msg {
	/* RESOURCE_CHANGE: ChangeType and ResourceName (UTF-8 in the
	 * caller's string buffer) */
	uint32_t change_type;
	const char *resource_name;
	/* the other types: an IPADDR_INFO_LIST, its IPAddrInstances entries
	 * at addrs[addr_first, addr_first + addr_count) */
	size_t addr_first;
	uint32_t addr_count;
};
struct witness_notify {
	uint32_t werror;
	bool present;   /* the RESP_ASYNC_NOTIFY pointer was not NULL */
	uint32_t type;  /* MessageType, 1..4 */
	uint32_t num;   /* NumberOfMessages */
	size_t naddrs;  /* IPADDR_INFO entries in all messages */
	size_t str_len; /* bytes the names take in the string buffer, NULs included */
};
/* The answer: a unique pointer to RESP_ASYNC_NOTIFY (MessageType, Length,
 * NumberOfMessages, a unique pointer to Length bytes of MessageBuffer),
 * then the WERROR.  The MessageBuffer holds NumberOfMessages messages back
 * to back: a RESOURCE_CHANGE of its own Length (8 bytes and the
 * NUL-terminated UTF-16 name, which must end inside it), or an
 * IPADDR_INFO_LIST of 12 + 24 * IPAddrInstances bytes.  That list's own
 * Length is not read: [MS-SWN] and the captured answers make it the
 * list's size, older Samba servers the size of its entries alone; the
 * entries are bounded by IPAddrInstances and the buffer.  Bytes after the
 * last message are ignored.
 *
 * Returns 0 (n, msgs[0..n->num), addrs[0..n->naddrs), strbuf set); -E2BIG
 * when more messages than max_msgs, addresses than max_addrs or string
 * bytes than strcap (n says what a retry needs); -EBADMSG (an unknown
 * MessageType too).  The arrays may be NULL with a zero capacity. */
int witness_async_notify_decode(const uint8_t *stub, size_t len, struct witness_notify *n,
                                struct witness_msg *msgs, size_t max_msgs,
                                struct witness_ipaddr *addrs, size_t max_addrs, char *strbuf,
                                size_t strcap);

#endif
