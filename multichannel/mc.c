/* multichannel/mc.c — more channels for a session ([MS-SMB2] 3.2.4.1.7 ff.).
 *
 * After the first session set-up, FSCTL_QUERY_NETWORK_INTERFACE_INFO lists
 * the server's interfaces; we open a channel to each (SMB Direct where the
 * interface says RDMA and this host can reach it, else TCP), up to
 * max_channels in all, and bind each to the session with a signed binding
 * SESSION_SETUP.  The channel manager's thread (chanmgr.c) runs each pass:
 * first at mount, then every requery_s seconds, when a channel dies and
 * when a local link comes up (see mgr_int.h).
 */
#include "client/chan.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/request.h"
#include "client/session.h"
#include "client/proto/smb2.h"
#include "client/proto/smb2_const.h"
#include "common/evloop.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>
#include <time.h>

#define MC_MAX_IFACES 64

struct smb_mc {
	struct smb_client *c;
	const struct smb_client_opts *opts; /* c->opts */
	unsigned max_channels;
	unsigned rdma_per_iface; /* rdma_channels=: SMB Direct channels per RDMA interface */
	bool addr_only;          /* no multichannel: extra channels only to channel 0's address */
	unsigned requery_s;
	unsigned echo_ms;
	struct smb_setup_slot *slot; /* the manager's: the channel being bound */
	struct smb_park *park;       /* the manager's: released after a bind */
	/* The last interface list the server gave (manager thread only): with
	 * every channel down there is no channel to ask on. */
	struct smb2_netif cache[MC_MAX_IFACES];
	size_t ncache;
	int nl_fd;         /* NETLINK_ROUTE, link changes; -1 if unavailable */
	bool said_no_rdma; /* manager thread: rdma_allowed() said why, once */
};

/* FSCTL_QUERY_NETWORK_INTERFACE_INFO on a live channel.  Not on the loop.
 *
 * The list decides where this client connects and authenticates next, so
 * it is believed only from the server itself: the request is signed even
 * when signing is not required (the server then signs its answer, [MS-SMB2]
 * 3.3.4.1.1) and conn.c fails an answer that is unsigned or does not verify;
 * on a sealed session the answer must come encrypted. */
static int query_ifaces(struct smb_client *c, struct smb2_netif *out, size_t max, size_t *n)
{
	if (!c->sess.signing.have_key && !smb_client_sealed(c)) {
		smb_warn("%s: no session key to verify the interface list with; one channel",
		         c->host);
		return -EPERM;
	}
	struct smb_req *req = smb_client_req(c, NULL);
	if (!req)
		return -ENOMEM;
	req->force_sign = true;
	struct smb2_ioctl_req r = {
	    .ctl_code = FSCTL_QUERY_NETWORK_INTERFACE_INFO,
	    .fileid = {UINT64_MAX, UINT64_MAX},
	    .max_output_response = 65536,
	    .flags = SMB2_0_IOCTL_IS_FSCTL,
	};
	req->no_replay = true; /* never parked: this thread is the one that rebinds */
	uint8_t *body = smb_req_begin_pdu(req, SMB2_IOCTL, 64);
	int err = body ? smb_req_end_pdu(req, smb2_ioctl_req_encode(body, 64, &r)) : -ENOMEM;
	if (!err)
		req->pdu[0].credit_charge = smb_credit_charge(req->conn, 65536);
	if (!err)
		err = smb_client_submit_sync(c, req);
	if (!err) {
		uint32_t st = req->pdu[0].rsp_hdr.status;
		struct smb2_ioctl_rsp rsp;
		if (st != STATUS_SUCCESS) {
			smb_warn("%s: the server lists no network interfaces (%s)", c->host,
			         smb2_status_str(st));
			err = -EOPNOTSUPP;
		} else if (smb2_ioctl_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &rsp) < 0 ||
		           smb2_netif_decode(rsp.output, rsp.output_len, out, max, n) < 0) {
			smb_err("%s: malformed network interface list; no more channels", c->host);
			err = -EBADMSG;
		}
	}
	smb_req_put(req);
	return err;
}

static void netif_sockaddr(const struct smb2_netif *f, uint16_t port, struct sockaddr_storage *ss,
                           socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (f->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		memcpy(&a->sin_addr, f->addr, 4);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		memcpy(&a->sin6_addr, f->addr, 16);
		a->sin6_scope_id = f->scope_id;
		*len = sizeof(*a);
	}
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		               &((const struct sockaddr_in *)b)->sin_addr, 4);
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		               &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

/* How many live channels of this kind go to this address? */
static unsigned count_channels(struct smb_client *c, const struct sockaddr_storage *ss, bool rdma)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	unsigned k = 0;
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		if (__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE) || ch->rdma != rdma)
			continue;
		struct smb_transport_info ti;
		ch->conn->transport->ops->info(ch->conn->transport, &ti);
		if (same_addr(&ti.remote, ss))
			k++;
	}
	return k;
}

static bool have_channel(struct smb_client *c, const struct sockaddr_storage *ss, bool rdma)
{
	return count_channels(c, ss, rdma) > 0;
}

static bool netif_loopback(const struct smb2_netif *f)
{
	static const uint8_t lo6[16] = {[15] = 1};
	if (f->family == AF_INET)
		return f->addr[0] == 127;
	return f->family == AF_INET6 && !memcmp(f->addr, lo6, 16);
}

static bool sockaddr_loopback(const struct sockaddr_storage *ss)
{
	static const uint8_t lo6[16] = {[15] = 1};
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, lo6, 16);
}

/* Channel 0 went to loopback: the server runs on this machine. */
static bool mount_on_loopback(struct smb_client *c)
{
	struct smb_transport_info ti;
	c->chans[0]->conn->transport->ops->info(c->chans[0]->conn->transport, &ti);
	return sockaddr_loopback(&ti.remote);
}

static bool usable_addr(const struct smb2_netif *f, bool loopback_ok)
{
	static const uint8_t zero[16];
	/* A server on another machine has no business sending us to this
	 * one's own services. */
	if (netif_loopback(f) && !loopback_ok)
		return false;
	if (f->family == AF_INET)
		return memcmp(f->addr, zero, 4) && (f->addr[0] & 0xf0) != 0xe0;
	/* Link-local IPv6 needs our interface's scope, which the list cannot
	 * give: skipped. */
	if (f->family == AF_INET6)
		return memcmp(f->addr, zero, 16) && f->addr[0] != 0xff &&
		       !(f->addr[0] == 0xfe && (f->addr[1] & 0xc0) == 0x80);
	return false;
}

/* SMB Direct carries SMB in the clear: a mount that came over QUIC (TLS)
 * moves to it only if the session itself is sealed. */
static bool rdma_allowed(struct smb_mc *mc)
{
	struct smb_client *c = mc->c;
	if (mc->opts->no_rdma_channels)
		return false;
	if (c->stream_kind != SMB_TRANSPORT_QUIC || smb_client_sealed(c))
		return true;
	if (!mc->said_no_rdma) {
		mc->said_no_rdma = true;
		smb_info("%s: no SMB Direct channels: the mount came over QUIC and the session is "
		         "not sealed (-o seal), so SMB Direct would carry it in the clear",
		         c->host);
	}
	return false;
}

/* Has a live channel to the server interface with this IfIndex? */
static bool have_iface(struct smb_client *c, uint32_t if_index)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (!__atomic_load_n(&c->chans[i]->dead, __ATOMIC_ACQUIRE) &&
		    c->chans[i]->if_index == if_index)
			return true;
	return false;
}

/* interfaces=: would a connection to ss leave through one of the allowed
 * local interfaces?  (The kernel's route choice, read back from a
 * connected UDP socket: nothing is sent.) */
static bool route_allowed(struct smb_mc *mc, const struct sockaddr_storage *ss, socklen_t sl)
{
	const char *list = mc->opts->mc_interfaces;
	if (!list || !*list)
		return true;
	struct sockaddr_storage probe = *ss, local;
	socklen_t ll = sizeof(local);
	if (probe.ss_family == AF_INET)
		((struct sockaddr_in *)&probe)->sin_port = htons(9);
	else
		((struct sockaddr_in6 *)&probe)->sin6_port = htons(9);
	int fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr *)&probe, sl) == 0 &&
	          getsockname(fd, (struct sockaddr *)&local, &ll) == 0;
	close(fd);
	if (!ok)
		return false;
	struct ifaddrs *ifa0 = NULL;
	bool allowed = false;
	if (getifaddrs(&ifa0) < 0)
		return false;
	for (struct ifaddrs *ifa = ifa0; ifa && !allowed; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != local.ss_family)
			continue;
		struct sockaddr_storage a = {0};
		memcpy(&a, ifa->ifa_addr,
		       local.ss_family == AF_INET ? sizeof(struct sockaddr_in)
		                                  : sizeof(struct sockaddr_in6));
		if (!same_addr(&a, &local))
			continue;
		size_t nl = strlen(ifa->ifa_name);
		for (const char *p = list; *p;) {
			const char *e = strchr(p, ':');
			size_t l = e ? (size_t)(e - p) : strlen(p);
			if (l == nl && !memcmp(p, ifa->ifa_name, l))
				allowed = true;
			p += l + (e ? 1 : 0);
		}
	}
	freeifaddrs(ifa0);
	return allowed;
}

/* Open, negotiate and bind one channel; publish it.  Not on the loop. */
static int bind_one(struct smb_mc *mc, const struct smb2_netif *f, bool rdma)
{
	struct smb_client *c = mc->c;
	struct sockaddr_storage ss;
	socklen_t sl;
	char host[INET6_ADDRSTRLEN] = "?", peer[96], err[256] = "";
	/* Non-RDMA channels go the way channel 0 went (TCP or QUIC). */
	enum smb_transport_kind kind = rdma ? SMB_TRANSPORT_RDMA : c->stream_kind;
	netif_sockaddr(f, rdma ? 0 : smb_client_kind_port(c, kind), &ss, &sl);
	inet_ntop(f->family, f->addr, host, sizeof(host));
	if (!route_allowed(mc, &ss, sl)) {
		smb_debug("%s: %s is not reached through interfaces=%s; no channel", c->host, host,
		          mc->opts->mc_interfaces);
		return -ENETUNREACH;
	}
	snprintf(peer, sizeof(peer), "%s %s channel", host, smb_transport_kind_name(kind));

	void *mem = talloc_new(NULL);
	struct smb_chan *ch = NULL;
	uint8_t *blob = NULL;
	size_t blob_len = 0;
	int rc = mem ? smb_chan_open(
	                   c, kind, (struct sockaddr *)&ss, sl, peer,
	                   mc->opts->connect_timeout_ms ? mc->opts->connect_timeout_ms : 15000, &ch)
	             : -ENOMEM;
	if (!rc && !smb_setup_slot_set(mc->slot, ch))
		rc = -ECANCELED;
	if (!rc) {
		ch->link_speed = f->link_speed;
		ch->if_index = f->if_index;
		rc = smb_chan_negotiate(c, ch, mc->opts, &blob, &blob_len, mem, err, sizeof(err));
	}
	if (!rc)
		rc = smb_chan_session_setup(c, ch, mc->opts, true, blob, blob_len, mem, err,
		                            sizeof(err));
	if (!rc) {
		ch->conn->echo_ms = mc->echo_ms;
		rc = smb_chan_publish(c, ch);
	}
	talloc_free(mem);
	smb_setup_slot_set(mc->slot, NULL);
	if (rc) {
		smb_warn("%s: no %s channel to %s: %s", c->host, rdma ? "SMB Direct" : "TCP", host,
		         err[0] ? err : strerror(-rc));
		smb_chan_discard(ch);
		return rc;
	}
	smb_info("%s: channel %d over %s to %s (%llu Mb/s advertised)", c->host, ch->index,
	         rdma ? "SMB Direct" : "TCP", host, (unsigned long long)(f->link_speed / 1000000));
	smb_park_release(mc->park);
	return 0;
}

/* Bind SMB Direct channels to f until it has mc->rdma_per_iface of them or
 * the mount has max_channels; stops at the first failure. */
static void fill_rdma_iface(struct smb_mc *mc, const struct smb2_netif *f)
{
	struct smb_client *c = mc->c;
	struct sockaddr_storage ss;
	socklen_t sl;
	netif_sockaddr(f, 0, &ss, &sl);
	while (count_channels(c, &ss, true) < mc->rdma_per_iface &&
	       (unsigned)smb_client_live_channels(c) < mc->max_channels)
		if (bind_one(mc, f, true) < 0)
			break;
}

/* rdma_channels= without multichannel: more SMB Direct channels to the
 * address the mount's live SMB Direct channel goes to; no interface list. */
static void mc_pass_addr(struct smb_mc *mc)
{
	struct smb_client *c = mc->c;
	struct smb2_netif f = {.capability = SMB2_NETIF_CAP_RDMA, .if_index = UINT32_MAX};
	bool found = false;
	int nch = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int k = 0; k < nch && !found; k++) {
		struct smb_chan *ch = c->chans[k];
		if (__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE) || !ch->rdma)
			continue;
		struct smb_transport_info ti;
		ch->conn->transport->ops->info(ch->conn->transport, &ti);
		f.family = ti.remote.ss_family;
		if (f.family == AF_INET) {
			memcpy(f.addr, &((const struct sockaddr_in *)&ti.remote)->sin_addr, 4);
		} else if (f.family == AF_INET6) {
			const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ti.remote;
			memcpy(f.addr, &a6->sin6_addr, 16);
			f.scope_id = a6->sin6_scope_id;
		} else {
			continue;
		}
		f.if_index = ch->if_index;
		f.link_speed = ch->link_speed;
		found = true;
	}
	if (found)
		fill_rdma_iface(mc, &f);
}

/* One pass: query, then fill up to max_channels live channels. */
void smb_mc_pass(struct smb_mc *mc)
{
	struct smb_client *c = mc->c;
	struct smb2_netif ifs[MC_MAX_IFACES];
	size_t n = 0;
	if ((unsigned)smb_client_live_channels(c) >= mc->max_channels)
		return;
	if (mc->addr_only) {
		mc_pass_addr(mc);
		return;
	}
	if (query_ifaces(c, ifs, MC_MAX_IFACES, &n) == 0) {
		if (n > MC_MAX_IFACES)
			n = MC_MAX_IFACES;
		memcpy(mc->cache, ifs, n * sizeof(ifs[0]));
		mc->ncache = n;
	} else if (mc->ncache && smb_client_live_channels(c) == 0) {
		n = mc->ncache;
		memcpy(ifs, mc->cache, n * sizeof(ifs[0]));
	} else {
		return;
	}
	/* Drop what no channel can go to: unspecified (ksmbd lists interfaces
	 * without an address as 0.0.0.0), multicast and link-local IPv6. */
	size_t kept = 0;
	bool loopback_ok = mount_on_loopback(c);
	for (size_t i = 0; i < n; i++) {
		char a[INET6_ADDRSTRLEN] = "?";
		inet_ntop(ifs[i].family, ifs[i].addr, a, sizeof(a));
		bool usable = usable_addr(&ifs[i], loopback_ok);
		smb_debug("%s: server interface %u %s%s%s, %llu Mb/s%s", c->host, ifs[i].if_index,
		          a, ifs[i].capability & SMB2_NETIF_CAP_RDMA ? " RDMA" : "",
		          ifs[i].capability & SMB2_NETIF_CAP_RSS ? " RSS" : "",
		          (unsigned long long)(ifs[i].link_speed / 1000000),
		          usable ? "" : " (not usable)");
		if (usable)
			ifs[kept++] = ifs[i];
	}
	n = kept;
	/* Channels opened before the list (channel 0) learn their speed. */
	int nch = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int k = 0; k < nch; k++) {
		struct smb_chan *ch = c->chans[k];
		struct smb_transport_info ti;
		ch->conn->transport->ops->info(ch->conn->transport, &ti);
		for (size_t i = 0; i < n && ch->if_index == UINT32_MAX; i++) {
			struct sockaddr_storage ss;
			socklen_t sl;
			netif_sockaddr(&ifs[i], 0, &ss, &sl);
			if (same_addr(&ss, &ti.remote)) {
				ch->link_speed = ifs[i].link_speed;
				ch->if_index = ifs[i].if_index;
			}
		}
	}
	/* RDMA-capable interfaces first, then by advertised speed, IPv4 before
	 * IPv6 (an interface's link-local IPv6 address needs its scope). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			const struct smb2_netif *a = &ifs[j - 1], *b = &ifs[j];
			bool ra = a->capability & SMB2_NETIF_CAP_RDMA,
			     rb = b->capability & SMB2_NETIF_CAP_RDMA;
			if (ra > rb || (ra == rb && a->link_speed > b->link_speed) ||
			    (ra == rb && a->link_speed == b->link_speed &&
			     (a->family == AF_INET || b->family != AF_INET)))
				break;
			struct smb2_netif t = ifs[j - 1];
			ifs[j - 1] = ifs[j];
			ifs[j] = t;
		}
	/* One channel per server interface first. */
	for (size_t i = 0; i < n && (unsigned)smb_client_live_channels(c) < mc->max_channels; i++) {
		const struct smb2_netif *f = &ifs[i];
		if ((f->family != AF_INET && f->family != AF_INET6) || have_iface(c, f->if_index))
			continue;
		struct sockaddr_storage ss;
		socklen_t sl;
		netif_sockaddr(f, 0, &ss, &sl);
		bool rdma = (f->capability & SMB2_NETIF_CAP_RDMA) && rdma_allowed(mc);
		if (rdma && !have_channel(c, &ss, true) && bind_one(mc, f, true) == 0)
			continue;
		if (!have_channel(c, &ss, false) && !have_channel(c, &ss, true))
			bind_one(mc, f, false);
	}
	/* Then each RDMA interface up to rdma_channels= SMB Direct channels. */
	for (size_t i = 0; i < n && mc->rdma_per_iface > 1 && rdma_allowed(mc); i++)
		if (ifs[i].capability & SMB2_NETIF_CAP_RDMA &&
		    (ifs[i].family == AF_INET || ifs[i].family == AF_INET6))
			fill_rdma_iface(mc, &ifs[i]);
	/* Room left: RSS-capable interfaces take more than one connection
	 * (the server spreads them over its queues), round robin. */
	for (int tries = 0; tries < 2 * SMB_CLIENT_MAX_CHANNELS &&
	                    (unsigned)smb_client_live_channels(c) < mc->max_channels;
	     tries++) {
		const struct smb2_netif *f = &ifs[tries % (n ? n : 1)];
		if (!n)
			break;
		if (!(f->capability & SMB2_NETIF_CAP_RSS) ||
		    (f->family != AF_INET && f->family != AF_INET6))
			continue;
		bool rdma = (f->capability & SMB2_NETIF_CAP_RDMA) && rdma_allowed(mc);
		if (bind_one(mc, f, rdma) < 0 && (!rdma || bind_one(mc, f, false) < 0))
			break;
	}
}

/* Addresses of the local interface ifindex (getifaddrs: addresses stay
 * while a link is down). */
static int iface_addrs(int ifindex, struct sockaddr_storage *out, int max)
{
	struct ifaddrs *ifa0 = NULL;
	int n = 0;
	if (getifaddrs(&ifa0) < 0)
		return 0;
	for (struct ifaddrs *ifa = ifa0; ifa && n < max; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr ||
		    (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6))
			continue;
		if ((int)if_nametoindex(ifa->ifa_name) != ifindex)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		memcpy(&out[n], ifa->ifa_addr,
		       ifa->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
		                                           : sizeof(struct sockaddr_in6));
		n++;
	}
	freeifaddrs(ifa0);
	return n;
}

/* A local link lost its carrier (or was set down): the channels leaving
 * through it are dead now - waiting for their keepalive would stall the
 * I/O queued on them for seconds. */
static void link_down(struct smb_mc *mc, int ifindex, const char *name)
{
	struct smb_client *c = mc->c;
	struct sockaddr_storage addrs[16];
	int na = iface_addrs(ifindex, addrs, 16);
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && na; i++) {
		struct smb_chan *ch = c->chans[i];
		if (__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE))
			continue;
		struct smb_transport_info ti;
		ch->conn->transport->ops->info(ch->conn->transport, &ti);
		for (int k = 0; k < na; k++) {
			if (!same_addr(&ti.local, &addrs[k]))
				continue;
			char why[96];
			snprintf(why, sizeof(why), "local link %s is down", name);
			smb_conn_abort(ch->conn, why);
			break;
		}
	}
}

bool smb_mc_netlink_read(struct smb_mc *mc)
{
	char buf[8192];
	bool came_up = false;
	for (;;) {
		ssize_t len = recv(mc->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (len <= 0)
			return came_up;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK)
				continue;
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
				continue;
			struct ifinfomsg *ifi = NLMSG_DATA(h);
			char name[IF_NAMESIZE] = "?";
			if_indextoname((unsigned)ifi->ifi_index, name);
			bool up = h->nlmsg_type == RTM_NEWLINK && (ifi->ifi_flags & IFF_UP) &&
			          (ifi->ifi_flags & IFF_RUNNING);
			if (!up)
				link_down(mc, ifi->ifi_index, name);
			else
				came_up = true; /* a link came (back): look for channels */
		}
	}
}

int smb_mc_new(struct smb_client *c, struct smb_setup_slot *slot, struct smb_park *park,
               struct smb_mc **out)
{
	const struct smb_client_opts *o = c->opts;
	/* Only the default rdma_channels brought us here: a server that cannot
	 * bind a second channel is no news worth a warning. */
	int level = o->multichannel || o->rdma_channels > 1 ? LOG_WARNING : LOG_INFO;
	*out = NULL;
	if (c->sess.dialect < SMB2_DIALECT_0300 ||
	    !(c->sess.server_caps & SMB2_GLOBAL_CAP_MULTI_CHANNEL)) {
		smb_log(level, "%s: the server does not offer multichannel (SMB %s%s); one channel",
		        c->host, smb2_dialect_str(c->sess.dialect),
		        c->sess.dialect >= SMB2_DIALECT_0300 ? ", no MULTI_CHANNEL capability"
		                                             : "");
		return 0;
	}
	if (c->sess.guest) {
		smb_log(level, "%s: a guest session cannot bind channels; one channel", c->host);
		return 0;
	}
	struct smb_mc *mc = talloc_zero(c, struct smb_mc);
	if (!mc)
		return -ENOMEM;
	mc->c = c;
	mc->opts = o;
	mc->slot = slot;
	mc->park = park;
	mc->rdma_per_iface = smb_rdma_channels(o);
	mc->addr_only = !o->multichannel;
	if (mc->addr_only)
		mc->max_channels = mc->rdma_per_iface;
	else
		mc->max_channels = o->max_channels ? o->max_channels : 2;
	if (mc->max_channels > SMB_CLIENT_MAX_CHANNELS)
		mc->max_channels = SMB_CLIENT_MAX_CHANNELS;
	mc->requery_s = o->mc_requery_s ? o->mc_requery_s : 600;
	/* A channel that stops answering must be found out quickly: its
	 * requests move only once it is declared dead. */
	mc->echo_ms = o->mc_echo_ms ? o->mc_echo_ms : 5000;
	c->chans[0]->conn->echo_ms = mc->echo_ms;
	/* Link changes in our network namespace: a link going down kills the
	 * channels over it at once. */
	mc->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	struct sockaddr_nl snl = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	if (mc->nl_fd >= 0 && bind(mc->nl_fd, (struct sockaddr *)&snl, sizeof(snl)) < 0) {
		close(mc->nl_fd);
		mc->nl_fd = -1;
	}
	if (mc->nl_fd < 0)
		smb_warn("%s: no link notifications (%s); a dead link is found by the keepalive",
		         c->host, strerror(errno));
	*out = mc;
	smb_mc_pass(mc); /* the first channels before the mount is announced */
	return 0;
}

uint64_t smb_mc_requery_ms(const struct smb_mc *mc)
{
	return (uint64_t)mc->requery_s * 1000;
}

int smb_mc_netlink_fd(const struct smb_mc *mc)
{
	return mc->nl_fd;
}

void smb_mc_close(struct smb_mc *mc)
{
	if (mc && mc->nl_fd >= 0)
		close(mc->nl_fd);
	if (mc)
		mc->nl_fd = -1;
}
