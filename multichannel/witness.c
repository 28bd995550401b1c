/* multichannel/witness.c — the Service Witness Protocol client of one mount
 * ([MS-SWN] 3.2): a clustered server tells the client when the address it
 * is connected to goes away or where to move, and the channel manager
 * acts on it.
 *
 * One thread per mount with `witness`, started by the channel manager
 * (chanmgr.c) and joined when it stops.  It does blocking I/O only on its
 * own DCE/RPC connections (client/rpc_tcp.h), never on a channel except
 * the short ECHO probes below, and never on the loop thread.  One
 * registration's life ([MS-SWN] 3.2.4.1):
 *
 *   1. the endpoint mapper of the address channel 0 is connected to gives
 *      the witness interface's port; a bind there (NTLMSSP with the mount's
 *      credentials, auth level privacy) and WitnessrGetInterfaceList;
 *   2. an interface that is AVAILABLE, flagged WITNESS_IF (it can witness
 *      for the others: another node) and not the address the mount uses,
 *      is bound to the same way;
 *   3. WitnessrRegisterEx (version 2; NetName the group name the server
 *      answered for our address, ShareName the share, IpAddress our
 *      address) or, where the server has no RegisterEx, WitnessrRegister;
 *   4. WitnessrAsyncNotify, again and again (a long poll, KeepAliveTimeout
 *      bounded), and for each notification:
 *        RESOURCE_CHANGE unavailable for our address: each channel to it
 *          is probed with an ECHO; the ones that do not answer within
 *          WITNESS_PROBE_MS are cut, so the reconnect starts now instead of
 *          after the keepalive gives up (a node that died without closing
 *          its connections);
 *        RESOURCE_CHANGE available: a reconnect waiting in its backoff is
 *          woken;
 *        CLIENT_MOVE, SHARE_MOVE: a planned move to the first address
 *          given (smb_mgr_move(): new requests are held, the ones in flight
 *          finish, the channels close and the session moves there);
 *        IP_CHANGE: channels to an address said offline are probed as for
 *          RESOURCE_CHANGE.
 *      After a move the registration is made again for the new address.
 *   5. any error: the connection is dropped, and after a pause (1 s,
 *      doubling to 60 s) the thread starts at 1 again.
 *
 * Everything the server sends is decoded by client/proto/witness.c, which
 * bounds every count and string; an address the server names is used only
 * as a numeric IPv4 address (an IPv6 one is logged and ignored: the
 * channels here are IPv4).  What the thread did is in the client's witness
 * info (smbrdmactl channels / stats), under c->witness_lock.
 */
#include "client/chan.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/proto/dcerpc.h"
#include "client/proto/smb2.h"
#include "client/proto/witness.h"
#include "client/request.h"
#include "client/rpc_tcp.h"
#include "client/session.h"
#include "common/evloop.h"
#include "common/log.h"
#include "multichannel/mgr_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <talloc.h>
#include <unistd.h>

#define WITNESS_CALL_MS       15000u /* a call other than AsyncNotify */
#define WITNESS_KEEPALIVE_S   120u   /* RegisterEx KeepAliveTimeout */
#define WITNESS_PROBE_MS      2000u  /* an ECHO a live channel answers */
#define WITNESS_RETRY_FIRST_S 1u
#define WITNESS_RETRY_MAX_S   60u
#define WITNESS_MAX_IFACES    64
#define WITNESS_STUB_MAX      (256u * 1024u)
#define WERR_OK               0u
#define WERR_TIMEOUT          1460u /* ERROR_TIMEOUT */
#define WERR_NOT_FOUND        1168u /* ERROR_NOT_FOUND */
#define NCA_OP_RNG_ERROR      0x1c010002u
#define RPC_PROCNUM_OOR       0x6d1u /* RPC_S_PROCNUM_OUT_OF_RANGE */

struct smb_witness {
	struct smb_client *c;
	struct smb_chanmgr *m;
	pthread_t thread;
	bool started;
	int cancel_fd; /* eventfd: written once by smb_witness_stop() */
	void *mem;     /* talloc parent of each registration's objects */
	uint8_t *stub; /* WITNESS_STUB_MAX: the answers */
	char client_name[64];
};

/* ---- the witness info (smbrdmactl) ------------------------------------------------- */

static void info_set(struct smb_witness *w, const char *state, const char *server,
                     const char *registered)
{
	struct smb_client *c = w->c;
	pthread_mutex_lock(&c->witness_lock);
	snprintf(c->witness.state, sizeof(c->witness.state), "%s", state);
	if (server)
		snprintf(c->witness.server, sizeof(c->witness.server), "%s", server);
	if (registered)
		snprintf(c->witness.registered, sizeof(c->witness.registered), "%s", registered);
	pthread_mutex_unlock(&c->witness_lock);
}

static void info_event(struct smb_witness *w, bool move, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void info_event(struct smb_witness *w, bool move, const char *fmt, ...)
{
	struct smb_client *c = w->c;
	char buf[sizeof(c->witness.last_event)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->witness_lock);
	c->witness.events++;
	if (move)
		c->witness.moves++;
	memcpy(c->witness.last_event, buf, sizeof(buf));
	pthread_mutex_unlock(&c->witness_lock);
	smb_info("%s: witness: %s", c->host, buf);
}

/* ---- helpers ---------------------------------------------------------------------------- */

static bool stopping(struct smb_witness *w)
{
	struct pollfd p = {.fd = w->cancel_fd, .events = POLLIN};
	return poll(&p, 1, 0) > 0 || __atomic_load_n(&w->c->closing, __ATOMIC_ACQUIRE);
}

/* Sleep s seconds; false when stopping. */
static bool pause_s(struct smb_witness *w, unsigned s)
{
	struct pollfd p = {.fd = w->cancel_fd, .events = POLLIN};
	int rc = poll(&p, 1, (int)(s * 1000u));
	return rc == 0 && !stopping(w);
}

/* The numeric address channel 0 (or the first live channel) talks to. */
static bool mount_addr(struct smb_client *c, char *out, size_t cap)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		if (!__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE) &&
		    smb_mgr_chan_ipv4(ch, out, cap))
			return true;
	}
	return false;
}

static void ipv4_str(const uint8_t ip[4], char *out, size_t cap)
{
	snprintf(out, cap, "%u.%u.%u.%u", ip[0], ip[1], ip[2], ip[3]);
}

/* Connect to addr's witness interface: the endpoint mapper, then a bind
 * with the mount's credentials at privacy level. */
static int witness_connect(struct smb_witness *w, const char *addr, struct rpc_tcp **out, char *why,
                           size_t whylen)
{
	struct smb_client *c = w->c;
	const struct smb_client_opts *o = c->opts;
	unsigned tmo = c->timeout_ms < WITNESS_CALL_MS ? c->timeout_ms : WITNESS_CALL_MS;
	uint16_t port = 0;
	int err =
	    rpc_tcp_epm_map(w->mem, addr, &witness_syntax, tmo, w->cancel_fd, &port, why, whylen);
	if (err)
		return err;
	struct rpc_tcp *r = NULL;
	err = rpc_tcp_connect(w->mem, addr, port, tmo, w->cancel_fd, &r, why, whylen);
	if (err)
		return err;
	const struct rpc_tcp_auth auth = {
	    .user = o->user ? o->user : "",
	    .password = o->password ? o->password : "",
	    .domain = o->domain ? o->domain : "",
	    .workstation = w->client_name,
	    .level = 6,
	};
	err = rpc_tcp_bind(r, &witness_syntax, &auth, tmo, why, whylen);
	if (err) {
		rpc_tcp_close(r);
		return err;
	}
	*out = r;
	return 0;
}

static const char *werr_str(uint32_t werr)
{
	switch (werr) {
	case 0:
		return "WERR_OK";
	case 5:
		return "WERR_ACCESS_DENIED";
	case 87:
		return "WERR_INVALID_PARAMETER";
	case 1168:
		return "WERR_NOT_FOUND";
	case 1306:
		return "WERR_REVISION_MISMATCH";
	case 1460:
		return "WERR_TIMEOUT";
	case 5023:
		return "WERR_INVALID_STATE";
	default:
		return "a Windows error";
	}
}

/* ---- acting on a notification ------------------------------------------------------------ */

/* Probe every live channel to addr with an ECHO; cut the ones that do not
 * answer.  Returns how many were cut. */
static int probe_channels(struct smb_witness *w, const char *addr, const char *why)
{
	struct smb_client *c = w->c;
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE), cut = 0;
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		char ra[INET_ADDRSTRLEN];
		if (__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE) ||
		    !smb_mgr_chan_ipv4(ch, ra, sizeof(ra)) || strcmp(ra, addr) != 0)
			continue;
		struct smb_req *req = smb_chan_req(ch, NULL);
		uint8_t *body = req ? smb_req_begin_pdu(req, SMB2_ECHO, 8) : NULL;
		int err = -ENOMEM;
		if (body && smb_req_end_pdu(req, smb2_echo_req_encode(body, 8)) == 0) {
			req->deadline_ms = ev_now_ms() + WITNESS_PROBE_MS;
			err = smb_client_submit_sync(c, req);
		}
		if (req)
			smb_req_put(req);
		if (err == 0)
			continue;
		smb_warn("%s: witness: channel %d to %s does not answer (%s) after %s: cutting it",
		         c->host, i, addr, strerror(-err), why);
		smb_conn_abort(ch->conn, why);
		cut++;
	}
	if (cut)
		smb_client_wake_mgr(c);
	return cut;
}

/* One notification; true when the registration must be made again (the
 * mount moved). */
static bool act(struct smb_witness *w, const char *our_addr, const struct witness_notify *n,
                const struct witness_msg *msgs, const struct witness_ipaddr *addrs)
{
	struct smb_client *c = w->c;
	bool again = false;
	for (uint32_t i = 0; i < n->num; i++) {
		const struct witness_msg *m = &msgs[i];
		if (n->type == WITNESS_NOTIFY_RESOURCE_CHANGE) {
			const char *what =
			    m->change_type == WITNESS_RESOURCE_AVAILABLE     ? "available"
			    : m->change_type == WITNESS_RESOURCE_UNAVAILABLE ? "unavailable"
			                                                     : "unknown";
			info_event(w, false, "RESOURCE_CHANGE %s %s", m->resource_name, what);
			if (m->change_type == WITNESS_RESOURCE_AVAILABLE) {
				smb_client_wake_mgr(c);
			} else {
				char why[96];
				snprintf(why, sizeof(why), "witness: %s %s", m->resource_name,
				         what);
				probe_channels(w, our_addr, why);
			}
			continue;
		}
		/* CLIENT_MOVE, SHARE_MOVE, IP_CHANGE: an IPADDR_INFO_LIST */
		const char *type = n->type == WITNESS_NOTIFY_CLIENT_MOVE  ? "CLIENT_MOVE"
		                   : n->type == WITNESS_NOTIFY_SHARE_MOVE ? "SHARE_MOVE"
		                                                          : "IP_CHANGE";
		char to[INET_ADDRSTRLEN] = "";
		for (uint32_t k = 0; k < m->addr_count; k++) {
			const struct witness_ipaddr *a = &addrs[m->addr_first + k];
			char s[INET_ADDRSTRLEN];
			if (!(a->flags & WITNESS_IPADDR_V4)) {
				smb_info("%s: witness: %s names an IPv6 address; ignored", c->host,
				         type);
				continue;
			}
			ipv4_str(a->ipv4, s, sizeof(s));
			if (n->type == WITNESS_NOTIFY_IP_CHANGE) {
				bool off = a->flags & WITNESS_IPADDR_OFFLINE;
				info_event(w, false, "IP_CHANGE %s %s", s,
				           off ? "offline" : "online");
				if (off)
					probe_channels(w, s, "witness: address offline");
				continue;
			}
			if (!to[0] && (!(a->flags & WITNESS_IPADDR_OFFLINE)))
				snprintf(to, sizeof(to), "%s", s);
		}
		if (n->type == WITNESS_NOTIFY_IP_CHANGE)
			continue;
		if (!to[0]) {
			info_event(w, false, "%s with no IPv4 address online: ignored", type);
			continue;
		}
		if (strcmp(to, our_addr) == 0) {
			info_event(w, false, "%s to %s, where the mount already is", type, to);
			continue;
		}
		char why[96];
		snprintf(why, sizeof(why), "witness: %s to %s", type, to);
		info_event(w, true, "%s to %s", type, to);
		int err = smb_mgr_move(w->m, to, why);
		if (err)
			smb_warn(
			    "%s: witness: the move to %s failed (%s); the mount stays where it was",
			    c->host, to, strerror(-err));
		again = true;
	}
	return again;
}

/* ---- one registration ------------------------------------------------------------------ */

/* 0 after a move or a registration the server dropped (start again now),
 * -errno on errors (start again after a pause). */
static int registration(struct smb_witness *w, bool *long_lived)
{
	struct smb_client *c = w->c;
	char why[256] = "", our_addr[INET_ADDRSTRLEN] = "";
	struct rpc_tcp *r = NULL;
	uint32_t fault = 0, werr = 0;
	size_t len = 0;
	int err;

	*long_lived = false;
	if (!mount_addr(c, our_addr, sizeof(our_addr))) {
		info_set(w, "waiting for a channel", NULL, NULL);
		return -ENOTCONN;
	}
	info_set(w, "asking the interface list", our_addr, our_addr);
	err = witness_connect(w, our_addr, &r, why, sizeof(why));
	if (err)
		goto fail;
	err = rpc_tcp_call(r, WITNESS_OPNUM_GET_INTERFACE_LIST, NULL, 0, w->stub, WITNESS_STUB_MAX,
	                   &len, WITNESS_CALL_MS, &fault, why, sizeof(why));
	struct witness_interface *ifs =
	    talloc_array(w->mem, struct witness_interface, WITNESS_MAX_IFACES);
	uint32_t nifs = 0;
	if (!err && !ifs)
		err = -ENOMEM;
	if (!err)
		err = witness_get_interface_list_decode(w->stub, len, ifs, WITNESS_MAX_IFACES,
		                                        &nifs, &werr);
	rpc_tcp_close(r);
	r = NULL;
	if (err) {
		if (!why[0])
			snprintf(why, sizeof(why), "the interface list: %s", strerror(-err));
		goto fail;
	}
	if (werr) {
		snprintf(why, sizeof(why), "GetInterfaceList answered %s (%u)", werr_str(werr),
		         werr);
		err = -EREMOTEIO;
		goto fail;
	}
	/* our group name, and a witness for it */
	const char *net_name = NULL;
	char witness_addr[INET_ADDRSTRLEN] = "";
	for (uint32_t i = 0; i < nifs; i++) {
		char a[INET_ADDRSTRLEN];
		if (!(ifs[i].flags & WITNESS_INFO_IPV4_VALID))
			continue;
		ipv4_str(ifs[i].ipv4, a, sizeof(a));
		if (strcmp(a, our_addr) == 0)
			net_name = ifs[i].group_name;
		else if (!witness_addr[0] && (ifs[i].flags & WITNESS_INFO_WITNESS_IF) &&
		         ifs[i].state == WITNESS_STATE_AVAILABLE)
			snprintf(witness_addr, sizeof(witness_addr), "%s", a);
	}
	if (!net_name) {
		snprintf(why, sizeof(why),
		         "the server's interface list (%u entries) does not name %s, the address "
		         "the mount uses",
		         nifs, our_addr);
		err = -ENOENT;
		goto fail;
	}
	if (!witness_addr[0]) {
		snprintf(why, sizeof(why),
		         "no other interface of %.100s offers to witness (none AVAILABLE with "
		         "WITNESS_IF)",
		         net_name);
		err = -ENOENT;
		goto fail;
	}
	info_set(w, "registering", witness_addr, our_addr);
	err = witness_connect(w, witness_addr, &r, why, sizeof(why));
	if (err)
		goto fail;
	uint8_t req[2048], handle[WITNESS_HANDLE_LEN];
	struct witness_register reg = {
	    .version = WITNESS_V2,
	    .net_name = net_name,
	    .share_name = c->tree.share,
	    .ip_address = our_addr,
	    .client_name = w->client_name,
	    .flags = WITNESS_REGISTER_NONE,
	    .keep_alive_timeout = WITNESS_KEEPALIVE_S,
	};
	bool v2 = true;
	ssize_t rl = witness_register_ex_encode(req, sizeof(req), &reg);
	err = rl < 0
	          ? (int)rl
	          : rpc_tcp_call(r, WITNESS_OPNUM_REGISTER_EX, req, (size_t)rl, w->stub,
	                         WITNESS_STUB_MAX, &len, WITNESS_CALL_MS, &fault, why, sizeof(why));
	if (err == -EREMOTEIO && (fault == NCA_OP_RNG_ERROR || fault == RPC_PROCNUM_OOR)) {
		/* a version 1 server: Register, and AsyncNotify without a keepalive */
		v2 = false;
		reg.version = WITNESS_V1;
		why[0] = 0;
		rl = witness_register_encode(req, sizeof(req), &reg);
		err = rl < 0 ? (int)rl
		             : rpc_tcp_call(r, WITNESS_OPNUM_REGISTER, req, (size_t)rl, w->stub,
		                            WITNESS_STUB_MAX, &len, WITNESS_CALL_MS, &fault, why,
		                            sizeof(why));
	}
	if (!err)
		err = witness_register_decode(w->stub, len, handle, &werr);
	if (!err && werr) {
		snprintf(why, sizeof(why), "Register%s for %s answered %s (%u)", v2 ? "Ex" : "",
		         our_addr, werr_str(werr), werr);
		err = -EREMOTEIO;
	}
	if (err)
		goto fail;
	smb_info("%s: witness: %s witnesses %s (%.100s, share %s)", c->host, witness_addr, our_addr,
	         net_name, c->tree.share);
	info_set(w, "registered", witness_addr, our_addr);
	uint64_t since = ev_now_ms();
	struct witness_msg msgs[16];
	struct witness_ipaddr addrs[64];
	char strbuf[2048];
	for (;;) {
		if (stopping(w))
			break;
		ssize_t hl = witness_handle_encode(req, sizeof(req), handle);
		if (hl < 0) {
			err = (int)hl;
			break;
		}
		/* the server answers WERR_TIMEOUT after KeepAliveTimeout; a v1
		 * server never: wait as long as it takes */
		unsigned tmo = v2 ? (WITNESS_KEEPALIVE_S + 30u) * 1000u : 0;
		err = rpc_tcp_call(r, WITNESS_OPNUM_ASYNC_NOTIFY, req, (size_t)hl, w->stub,
		                   WITNESS_STUB_MAX, &len, tmo, &fault, why, sizeof(why));
		if (err)
			break;
		struct witness_notify n;
		err = witness_async_notify_decode(w->stub, len, &n, msgs, 16, addrs, 64, strbuf,
		                                  sizeof(strbuf));
		if (err) {
			snprintf(why, sizeof(why), "a notification that does not decode (%s)",
			         strerror(-err));
			break;
		}
		if (n.werror == WERR_TIMEOUT)
			continue;
		if (n.werror == WERR_NOT_FOUND) {
			smb_info(
			    "%s: witness: the server dropped the registration; registering again",
			    c->host);
			err = 0;
			break;
		}
		if (n.werror) {
			snprintf(why, sizeof(why), "AsyncNotify answered %s (%u)",
			         werr_str(n.werror), n.werror);
			err = -EREMOTEIO;
			break;
		}
		if (!n.present)
			continue;
		if (act(w, our_addr, &n, msgs, addrs)) {
			err = 0;
			break;
		}
	}
	*long_lived = ev_now_ms() - since > 60000;
	if (!stopping(w) && (err == 0 || err == -ETIMEDOUT)) {
		/* a clean end: unregister (best effort) */
		ssize_t hl = witness_handle_encode(req, sizeof(req), handle);
		char ignore[64];
		if (hl > 0 &&
		    rpc_tcp_call(r, WITNESS_OPNUM_UNREGISTER, req, (size_t)hl, w->stub,
		                 WITNESS_STUB_MAX, &len, 2000, &fault, ignore, sizeof(ignore)) == 0)
			(void)witness_unregister_decode(w->stub, len, &werr);
	}
	rpc_tcp_close(r);
	if (err && !stopping(w))
		goto fail_logged;
	return err;
fail:
	if (r)
		rpc_tcp_close(r);
	if (stopping(w))
		return err;
fail_logged:;
	/* the same failure again (a server without a witness, retried every
	 * minute) is logged once, then at debug level */
	const char *msg = why[0] ? why : strerror(-err);
	pthread_mutex_lock(&c->witness_lock);
	bool again = strncmp(c->witness.error, msg, sizeof(c->witness.error) - 1) == 0;
	snprintf(c->witness.error, sizeof(c->witness.error), "%s", msg);
	pthread_mutex_unlock(&c->witness_lock);
	if (again)
		smb_debug("%s: witness: %s (again)", c->host, msg);
	else
		smb_warn("%s: witness: %s", c->host, msg);
	return err ? err : -EIO;
}

static void *witness_thread(void *arg)
{
	struct smb_witness *w = arg;
	unsigned pause = WITNESS_RETRY_FIRST_S;
	while (!stopping(w)) {
		bool long_lived = false;
		w->mem = talloc_new(w);
		int err = w->mem ? registration(w, &long_lived) : -ENOMEM;
		TALLOC_FREE(w->mem);
		if (stopping(w))
			break;
		if (err == 0 || long_lived)
			pause = WITNESS_RETRY_FIRST_S;
		if (err == 0)
			continue;
		info_set(w, "waiting to retry", NULL, NULL);
		if (!pause_s(w, pause))
			break;
		pause = pause * 2 > WITNESS_RETRY_MAX_S ? WITNESS_RETRY_MAX_S : pause * 2;
	}
	info_set(w, "stopped", NULL, NULL);
	return NULL;
}

int smb_witness_start(struct smb_client *c, struct smb_chanmgr *m, struct smb_witness **out)
{
	const struct smb_client_opts *o = c->opts;
	*out = NULL;
	if (o->sec == SMB_SEC_KRB5 || o->guest || !o->user || !o->user[0]) {
		/* the witness bind is NTLMSSP with the mount's password */
		const char *why =
		    o->sec == SMB_SEC_KRB5
		        ? "the witness client needs a user and password (NTLMSSP); not "
		          "with sec=krb5"
		        : "the witness client needs a user and password; not as guest";
		smb_warn("%s: %s", c->host, why);
		pthread_mutex_lock(&c->witness_lock);
		c->witness.on = true;
		snprintf(c->witness.state, sizeof(c->witness.state), "unavailable");
		snprintf(c->witness.error, sizeof(c->witness.error), "%s", why);
		pthread_mutex_unlock(&c->witness_lock);
		return 0;
	}
	struct smb_witness *w = talloc_zero(c, struct smb_witness);
	if (!w)
		return -ENOMEM;
	w->c = c;
	w->m = m;
	w->stub = talloc_size(w, WITNESS_STUB_MAX);
	w->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!w->stub || w->cancel_fd < 0) {
		int err = w->stub ? -errno : -ENOMEM;
		if (w->cancel_fd >= 0)
			close(w->cancel_fd);
		talloc_free(w);
		return err;
	}
	if (gethostname(w->client_name, sizeof(w->client_name) - 1) != 0 || !w->client_name[0])
		snprintf(w->client_name, sizeof(w->client_name), "smbrdma");
	pthread_mutex_lock(&c->witness_lock);
	c->witness.on = true;
	pthread_mutex_unlock(&c->witness_lock);
	info_set(w, "starting", NULL, NULL);
	int err = pthread_create(&w->thread, NULL, witness_thread, w);
	if (err) {
		close(w->cancel_fd);
		talloc_free(w);
		return -err;
	}
	w->started = true;
	*out = w;
	return 0;
}

void smb_witness_stop(struct smb_witness *w)
{
	if (!w)
		return;
	uint64_t one = 1;
	if (write(w->cancel_fd, &one, sizeof(one)) < 0)
		smb_debug("witness: cannot signal the thread: %s", strerror(errno));
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = false;
	close(w->cancel_fd);
	w->cancel_fd = -1;
	talloc_free(w);
}
