/* client/proto/witness.c — the [MS-SWN] witness client's NDR stubs (see
 * witness.h for the layouts and the contract). */
#include "client/proto/witness.h"

#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

const struct dcerpc_syntax witness_syntax = {
    .uuid = {0x74, 0xc0, 0xd8, 0xcc, 0xe5, 0xd0, 0x40, 0x4a, 0x92, 0xb4, 0xd0, 0x74, 0xfa, 0xa6,
             0xba, 0x28},
    .major = 1,
    .minor = 1,
};

/* WITNESS_INTERFACE_INFO: InterfaceGroupName(520) Version(4) State(2)
 * pad(2) IPV4(4) IPV6(16) Flags(4) */
#define IFACE_INFO_LEN 552
/* IPADDR_INFO: Flags(4) IPV4(4) IPV6(16) */
#define IPADDR_INFO_LEN 24
/* IPADDR_INFO_LIST: Length(4) Reserved(4) IPAddrInstances(4) */
#define IPADDR_LIST_HDR 12
/* RESOURCE_CHANGE: Length(4) ChangeType(4) */
#define RESOURCE_HDR 8

/* The referent ids of the pointers we send: any non-zero value */
#define REF_FIRST 0x00020000u

/* The stub is whole: nothing may follow the WERROR. */
static int stub_end(struct smb_rd *r, uint32_t *werror)
{
	*werror = smb_rd_u32(r);
	return r->err || smb_rd_left(r) ? -EBADMSG : 0;
}

/* ---- WitnessrGetInterfaceList -------------------------------------------- */

/* The units of b[0, bytes) up to the first NUL one (or all of them). */
static size_t units_to_nul(const uint8_t *b, size_t bytes)
{
	size_t i = 0;
	while (i + 2 <= bytes && smb_le16(b + i) != 0)
		i += 2;
	return i;
}

static int iface_get(const uint8_t *p, struct witness_interface *o)
{
	size_t n = units_to_nul(p, 2 * WITNESS_GROUP_NAME_UNITS);
	o->group_name[0] = '\0';
	if (n && smb_utf16le_to_utf8(p, n, o->group_name, sizeof(o->group_name)) < 0)
		return -EBADMSG; /* only an unpaired surrogate: the room is enough */
	o->version = smb_le32(p + 520);
	o->state = smb_le16(p + 524);
	memcpy(o->ipv4, p + 528, 4);
	memcpy(o->ipv6, p + 532, 16);
	o->flags = smb_le32(p + 548);
	return 0;
}

int witness_get_interface_list_decode(const uint8_t *stub, size_t len,
                                      struct witness_interface *out, size_t max, uint32_t *count,
                                      uint32_t *werror)
{
	if (!count || !werror || (!out && max))
		return -EINVAL;
	if (!stub)
		return -EBADMSG;
	struct smb_rd r;
	smb_rd_init(&r, stub, len);
	*count = 0;
	const uint8_t *arr = NULL;
	if (smb_rd_u32(&r)) { /* InterfaceList */
		uint32_t num = smb_rd_u32(&r);
		uint32_t ptr = smb_rd_u32(&r);
		if (ptr) {
			uint32_t conf = smb_rd_u32(&r);
			if (r.err || conf != num || num > smb_rd_left(&r) / IFACE_INFO_LEN)
				return -EBADMSG;
			arr = smb_rd_ptr(&r, (size_t)num * IFACE_INFO_LEN);
		} else if (num) {
			return -EBADMSG;
		}
		*count = num;
	}
	if (stub_end(&r, werror))
		return -EBADMSG;
	for (size_t i = 0; i < *count; i++) {
		struct witness_interface x;
		if (iface_get(arr + i * IFACE_INFO_LEN, &x))
			return -EBADMSG;
		if (i < max)
			out[i] = x;
	}
	return *count > max ? -E2BIG : 0;
}

/* ---- WitnessrRegister(Ex), WitnessrUnRegister ---------------------------- */

static ssize_t register_encode(uint8_t *stub, size_t cap, const struct witness_register *a, bool ex)
{
	if (!a)
		return -EINVAL;
	struct smb_wr w;
	uint32_t ref = REF_FIRST;
	smb_wr_init(&w, stub, cap);
	smb_wr_u32(&w, a->version);
	ndr_wr_ptr_string(&w, a->net_name, &ref);
	if (ex)
		ndr_wr_ptr_string(&w, a->share_name, &ref);
	ndr_wr_ptr_string(&w, a->ip_address, &ref);
	ndr_wr_ptr_string(&w, a->client_name, &ref);
	if (ex) {
		smb_wr_u32(&w, a->flags);
		smb_wr_u32(&w, a->keep_alive_timeout);
	}
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

ssize_t witness_register_ex_encode(uint8_t *stub, size_t cap, const struct witness_register *a)
{
	return register_encode(stub, cap, a, true);
}

ssize_t witness_register_encode(uint8_t *stub, size_t cap, const struct witness_register *a)
{
	return register_encode(stub, cap, a, false);
}

int witness_register_decode(const uint8_t *stub, size_t len, uint8_t handle[WITNESS_HANDLE_LEN],
                            uint32_t *werror)
{
	if (!handle || !werror)
		return -EINVAL;
	struct smb_rd r;
	smb_rd_init(&r, stub, stub ? len : 0);
	smb_rd_bytes(&r, handle, WITNESS_HANDLE_LEN);
	return stub_end(&r, werror);
}

ssize_t witness_handle_encode(uint8_t *stub, size_t cap, const uint8_t handle[WITNESS_HANDLE_LEN])
{
	if (!handle)
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, stub, cap);
	smb_wr_bytes(&w, handle, WITNESS_HANDLE_LEN);
	return w.err ? w.err : (ssize_t)smb_wr_len(&w);
}

int witness_unregister_decode(const uint8_t *stub, size_t len, uint32_t *werror)
{
	if (!werror)
		return -EINVAL;
	struct smb_rd r;
	smb_rd_init(&r, stub, stub ? len : 0);
	return stub_end(&r, werror);
}

/* ---- WitnessrAsyncNotify -------------------------------------------------- */

/* Where the decoded messages go; counts run on past full arrays. */
struct notify_out {
	struct witness_notify *n;
	struct witness_msg *msgs;
	size_t max_msgs;
	struct witness_ipaddr *addrs;
	size_t max_addrs;
	char *strbuf;
	size_t strcap;
};

/* A RESOURCE_CHANGE at m[0, left): its Length, or -EBADMSG. */
static ssize_t resource_change(const uint8_t *m, size_t left, struct notify_out *o,
                               struct witness_msg *msg)
{
	if (left < RESOURCE_HDR)
		return -EBADMSG;
	uint32_t l = smb_le32(m);
	if (l < RESOURCE_HDR || l > left)
		return -EBADMSG;
	msg->change_type = smb_le32(m + 4);
	const uint8_t *name = m + RESOURCE_HDR;
	size_t bytes = l - RESOURCE_HDR;
	size_t n = units_to_nul(name, bytes);
	if (n + 2 > bytes)
		return -EBADMSG; /* no NUL inside the message */
	ssize_t u8 = smb_utf16le_utf8_len(name, n);
	if (u8 < 0)
		return -EBADMSG;
	size_t need = (size_t)u8 + 1, at = o->n->str_len;
	o->n->str_len += need;
	if (o->strbuf && need <= o->strcap && at <= o->strcap - need) {
		if (smb_utf16le_to_utf8(name, n, o->strbuf + at, need) != u8)
			return -EBADMSG; /* the two walks disagree */
		msg->resource_name = o->strbuf + at;
	}
	return l;
}

/* An IPADDR_INFO_LIST at m[0, left): its size, or -EBADMSG. */
static ssize_t ipaddr_list(const uint8_t *m, size_t left, struct notify_out *o,
                           struct witness_msg *msg)
{
	if (left < IPADDR_LIST_HDR)
		return -EBADMSG;
	uint32_t k = smb_le32(m + 8);
	if (k > (left - IPADDR_LIST_HDR) / IPADDR_INFO_LEN)
		return -EBADMSG;
	msg->addr_first = o->n->naddrs;
	msg->addr_count = k;
	for (uint32_t i = 0; i < k; i++) {
		const uint8_t *e = m + IPADDR_LIST_HDR + (size_t)i * IPADDR_INFO_LEN;
		size_t at = o->n->naddrs++;
		if (at >= o->max_addrs)
			continue;
		struct witness_ipaddr *a = &o->addrs[at];
		a->flags = smb_le32(e);
		memcpy(a->ipv4, e + 4, 4);
		memcpy(a->ipv6, e + 8, 16);
	}
	return IPADDR_LIST_HDR + (ssize_t)k * IPADDR_INFO_LEN;
}

static int messages(const uint8_t *buf, size_t len, struct notify_out *o)
{
	size_t off = 0;
	for (uint32_t i = 0; i < o->n->num; i++) {
		struct witness_msg msg = {0};
		ssize_t l = o->n->type == WITNESS_NOTIFY_RESOURCE_CHANGE
		                ? resource_change(buf + off, len - off, o, &msg)
		                : ipaddr_list(buf + off, len - off, o, &msg);
		if (l < 0)
			return -EBADMSG;
		if (i < o->max_msgs)
			o->msgs[i] = msg;
		off += (size_t)l; /* l <= len - off */
	}
	return 0;
}

int witness_async_notify_decode(const uint8_t *stub, size_t len, struct witness_notify *n,
                                struct witness_msg *msgs, size_t max_msgs,
                                struct witness_ipaddr *addrs, size_t max_addrs, char *strbuf,
                                size_t strcap)
{
	if (!n || (!msgs && max_msgs) || (!addrs && max_addrs) || (!strbuf && strcap))
		return -EINVAL;
	if (!stub)
		return -EBADMSG;
	memset(n, 0, sizeof(*n));
	struct smb_rd r;
	smb_rd_init(&r, stub, len);
	const uint8_t *buf = NULL;
	uint32_t blen = 0;
	if (smb_rd_u32(&r)) { /* pResp */
		n->present = true;
		n->type = smb_rd_u32(&r);
		blen = smb_rd_u32(&r);
		n->num = smb_rd_u32(&r);
		uint32_t ptr = smb_rd_u32(&r);
		if (r.err || n->type < WITNESS_NOTIFY_RESOURCE_CHANGE ||
		    n->type > WITNESS_NOTIFY_IP_CHANGE)
			return -EBADMSG;
		if (ptr) {
			if (smb_rd_u32(&r) != blen) /* conformance: size_is(Length) */
				return -EBADMSG;
			buf = smb_rd_ptr(&r, blen);
			ndr_rd_align(&r, 4);
		} else if (blen || n->num) {
			return -EBADMSG;
		}
	}
	if (stub_end(&r, &n->werror))
		return -EBADMSG;
	struct notify_out o = {n, msgs, max_msgs, addrs, max_addrs, strbuf, strcap};
	if (n->num && messages(buf, blen, &o))
		return -EBADMSG;
	if (n->num > max_msgs || n->naddrs > max_addrs || n->str_len > strcap)
		return -E2BIG;
	return 0;
}
