/* fuse/ctl.c — the control socket (see ctl.h): its file, its connections on
 * the event loop, and the JSON and text replies.
 *
 * A connection goes READING -> WRITING -> closed.  Each has a deadline
 * (CTL_CONN_TIMEOUT_MS) so a client that never finishes its line cannot hold
 * an fd forever, and at most CTL_MAX_CONNS are open at once.  All state
 * below is touched only on the loop thread, except in smb_ctl_start() before
 * the listening fd is registered and in smb_ctl_stop() after the loop thread
 * has dropped it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/client.h"
#include "common/evloop.h"
#include "common/log.h"
#include "fuse/ctl.h"
#include "fuse/ring.h"
#include "common/mountinfo.h"

#define CTL_MAX_CONNS       16
#define CTL_CONN_TIMEOUT_MS 5000
#define CTL_REQ_MAX         128

struct ctl_conn {
	struct smb_ctl *ctl;
	int fd;
	struct ev_fd *evf;
	struct ev_timer *timer;
	char req[CTL_REQ_MAX];
	size_t req_len;
	char *reply; /* malloc'd; set once the request is complete */
	size_t reply_len, reply_off;
	struct ctl_conn *prev, *next;
};

struct smb_ctl {
	struct smb_client *client;
	struct ev_loop *loop;
	int listen_fd;
	struct ev_fd *listen_evf;
	struct ctl_conn *conns; /* loop thread only */
	int nconns;
	char server[256], share[256], mountpoint[PATH_MAX];
	uint16_t port;          /* TCP; 0 = 445 */
	uint16_t quic_port;     /* UDP; 0 = 443 */
	bool quic, quic_only;   /* transport=auto / transport=quic */
	struct fuse_ring *ring; /* smb_ctl_mount's */
	const char *ring_why;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t sock_dev; /* the socket file we created, so stop removes only ours */
	ino_t sock_ino;
	/* smb_ctl_stop() waits on these for the loop thread */
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopped; /* under stop_lock */
};

/* ---- a growing output buffer and the JSON writer ------------------------------ */

struct outbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void out_add(struct outbuf *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 1024;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *p = realloc(o->p, cap);
		if (!p) {
			o->oom = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void out_printf(struct outbuf *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(struct outbuf *o, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	out_add(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A JSON string: quotes, backslash and every control character escaped;
 * other bytes (UTF-8 included) pass through. */
static void json_str(struct outbuf *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	out_add(o, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '"':
			out_add(o, "\\\"", 2);
			break;
		case '\\':
			out_add(o, "\\\\", 2);
			break;
		case '\n':
			out_add(o, "\\n", 2);
			break;
		case '\r':
			out_add(o, "\\r", 2);
			break;
		case '\t':
			out_add(o, "\\t", 2);
			break;
		default:
			if (ch < 0x20 || ch == 0x7f) {
				char u[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
				out_add(o, u, sizeof(u));
			} else {
				out_add(o, s, 1);
			}
		}
	}
	out_add(o, "\"", 1);
}

/* One "key": value member; first is cleared after the first member. */
static void json_key(struct outbuf *o, bool *first, const char *key)
{
	if (!*first)
		out_add(o, ",", 1);
	*first = false;
	json_str(o, key);
	out_add(o, ":", 1);
}

static void json_kstr(struct outbuf *o, bool *first, const char *key, const char *val)
{
	json_key(o, first, key);
	json_str(o, val);
}

static void json_ku64(struct outbuf *o, bool *first, const char *key, uint64_t val)
{
	json_key(o, first, key);
	out_printf(o, "%" PRIu64, val);
}

static void json_kbool(struct outbuf *o, bool *first, const char *key, bool val)
{
	json_key(o, first, key);
	out_add(o, val ? "true" : "false", val ? 4 : 5);
}

/* ---- the Prometheus text exposition format (stats prometheus) ------------------ */

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

enum prom_id {
	M_MOUNT_INFO,
	M_PAYLOAD_COPIED,
	M_LEASES_GRANTED,
	M_LEASE_BREAKS,
	M_LEASE_BREAK_ACKS,
	M_WITNESS_EVENTS,
	M_WITNESS_MOVES,
	M_CH_INFO,
	M_CH_UP,
	M_CH_REQUESTS,
	M_CH_COMMANDS,
	M_CH_SENT,
	M_CH_RECEIVED,
	M_CH_RDMA_READ,
	M_CH_RDMA_WRITE,
	M_CH_CREDITS,
	M_CH_SEND_CREDITS,
	M_CH_RECV_CREDITS,
	M_CH_IN_FLIGHT,
	M_CH_MW_BOUND,
	M_CH_MW_INV_REMOTE,
	M_CH_MW_INV_LOCAL,
	M_CH_FALLBACK,
	M_CH_REUSED,
	M_CH_RECONNECTS,
	M_CH_FAILOVERS,
	M_CH_REPLAYS,
	M_CH_LATENCY,
	M_COUNT
};

/* Every metric of `stats prometheus`, in output order: the one list.
 * smbrdmactl(8) documents each under PROMETHEUS METRICS and
 * tests/integration/test_smbrdmactl.py checks this table, the man page and
 * the output against each other (it reads the names from the lines below:
 * keep one {"smbrdma_...", PROM_...} per line). */
static const struct {
	const char *name;
	enum prom_type type;
	const char *help;
} prom_metrics[M_COUNT] = {
    [M_MOUNT_INFO] = {"smbrdma_mount_info", PROM_GAUGE, "The mount: always 1, facts as labels."},
    [M_PAYLOAD_COPIED] = {"smbrdma_payload_copied_bytes_total", PROM_COUNTER,
                          "READ and WRITE payload the daemon copied between buffers."},
    [M_LEASES_GRANTED] = {"smbrdma_leases_granted_total", PROM_COUNTER,
                          "Opens the server granted a lease."},
    [M_LEASE_BREAKS] = {"smbrdma_lease_breaks_total", PROM_COUNTER,
                        "Lease break notifications received."},
    [M_LEASE_BREAK_ACKS] = {"smbrdma_lease_break_acks_total", PROM_COUNTER,
                            "Lease breaks acknowledged and accepted by the server."},
    [M_WITNESS_EVENTS] = {"smbrdma_witness_events_total", PROM_COUNTER,
                          "Service Witness notifications received."},
    [M_WITNESS_MOVES] = {"smbrdma_witness_moves_total", PROM_COUNTER,
                         "Witness notifications that moved the session to another address."},
    [M_CH_INFO] = {"smbrdma_channel_info", PROM_GAUGE,
                   "A channel: always 1, its addresses and state as labels."},
    [M_CH_UP] = {"smbrdma_channel_up", PROM_GAUGE, "1 while the channel carries requests."},
    [M_CH_REQUESTS] = {"smbrdma_channel_requests_total", PROM_COUNTER,
                       "SMB2 messages sent on the channel."},
    [M_CH_COMMANDS] = {"smbrdma_channel_commands_total", PROM_COUNTER,
                       "SMB2 commands sent on the channel, by command."},
    [M_CH_SENT] = {"smbrdma_channel_sent_bytes_total", PROM_COUNTER,
                   "Bytes sent inline, SMB2 headers included."},
    [M_CH_RECEIVED] = {"smbrdma_channel_received_bytes_total", PROM_COUNTER,
                       "Bytes received inline, SMB2 headers included."},
    [M_CH_RDMA_READ] = {"smbrdma_channel_rdma_read_bytes_total", PROM_COUNTER,
                        "WRITE payload the server moved by RDMA Read."},
    [M_CH_RDMA_WRITE] = {"smbrdma_channel_rdma_write_bytes_total", PROM_COUNTER,
                         "READ payload the server moved by RDMA Write."},
    [M_CH_CREDITS] = {"smbrdma_channel_credits", PROM_GAUGE, "SMB2 credits available now."},
    [M_CH_SEND_CREDITS] = {"smbrdma_channel_send_credits", PROM_GAUGE,
                           "SMB Direct send credits available now."},
    [M_CH_RECV_CREDITS] = {"smbrdma_channel_recv_credits", PROM_GAUGE,
                           "SMB Direct receive credits granted to the server now."},
    [M_CH_IN_FLIGHT] = {"smbrdma_channel_in_flight", PROM_GAUGE,
                        "SMB2 messages sent and unanswered, or waiting for credits."},
    [M_CH_MW_BOUND] = {"smbrdma_channel_mw_bound_total", PROM_COUNTER,
                       "Memory windows bound for one I/O's buffer."},
    [M_CH_MW_INV_REMOTE] = {"smbrdma_channel_mw_invalidated_remote_total", PROM_COUNTER,
                            "Memory windows the server invalidated."},
    [M_CH_MW_INV_LOCAL] = {"smbrdma_channel_mw_invalidated_local_total", PROM_COUNTER,
                           "Memory windows the client invalidated itself."},
    [M_CH_FALLBACK] = {"smbrdma_channel_offload_fallback_inline_total", PROM_COUNTER,
                       "READs and WRITEs meant for RDMA that went inline."},
    [M_CH_REUSED] = {"smbrdma_channel_offload_reused_total", PROM_COUNTER,
                     "RDMA READs and WRITEs whose buffer the same open's I/O left, uncleared."},
    [M_CH_RECONNECTS] = {"smbrdma_channel_reconnects_total", PROM_COUNTER,
                         "1 when the channel was opened by a reconnect."},
    [M_CH_FAILOVERS] = {"smbrdma_channel_failovers_total", PROM_COUNTER,
                        "Requests in flight when the channel died, replayed on another."},
    [M_CH_REPLAYS] = {"smbrdma_channel_replays_total", PROM_COUNTER,
                      "Requests taken over from a dead channel and sent again here."},
    [M_CH_LATENCY] = {"smbrdma_channel_request_latency_seconds", PROM_HISTOGRAM,
                      "Time from submission to answer of the requests answered."},
};

static const char *const command_names[SMB_STATS_COMMANDS] = {
    "NEGOTIATE",     "SESSION_SETUP", "LOGOFF",   "TREE_CONNECT", "TREE_DISCONNECT",
    "CREATE",        "CLOSE",         "FLUSH",    "READ",         "WRITE",
    "LOCK",          "IOCTL",         "CANCEL",   "ECHO",         "QUERY_DIRECTORY",
    "CHANGE_NOTIFY", "QUERY_INFO",    "SET_INFO", "OPLOCK_BREAK"};

/* A label value: backslash, double quote and newline escaped. */
static void prom_value_str(struct outbuf *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			out_add(o, "\\\\", 2);
		else if (*s == '"')
			out_add(o, "\\\"", 2);
		else if (*s == '\n')
			out_add(o, "\\n", 2);
		else
			out_add(o, s, 1);
	}
}

static void prom_head(struct outbuf *o, enum prom_id id)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};

	out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", prom_metrics[id].name, prom_metrics[id].help,
	           prom_metrics[id].name, types[prom_metrics[id].type]);
}

/* One sample: NAME SUFFIX{mount="...",channel="...",transport="...",
 * k="v"...} VALUE, with ch < 0 for a mount-wide one; kv is NULL-ended
 * name, value pairs (may be NULL). */
static void prom_sample(struct outbuf *o, const struct smb_ctl *ctl, enum prom_id id,
                        const char *suffix, int ch, const struct smb_channel_stats *cs,
                        const char *const *kv, const char *value)
{
	out_add(o, prom_metrics[id].name, strlen(prom_metrics[id].name));
	out_add(o, suffix, strlen(suffix));
	out_add(o, "{mount=\"", 8);
	prom_value_str(o, ctl->mountpoint);
	out_add(o, "\"", 1);
	if (ch >= 0) {
		out_printf(o, ",channel=\"%d\",transport=\"", ch);
		prom_value_str(o, cs->transport);
		out_add(o, "\"", 1);
	}
	for (; kv && kv[0]; kv += 2) {
		out_printf(o, ",%s=\"", kv[0]);
		prom_value_str(o, kv[1]);
		out_add(o, "\"", 1);
	}
	out_printf(o, "} %s\n", value);
}

static void prom_u64(struct outbuf *o, const struct smb_ctl *ctl, enum prom_id id, int ch,
                     const struct smb_channel_stats *cs, uint64_t v)
{
	char val[24];

	snprintf(val, sizeof(val), "%" PRIu64, v);
	prom_sample(o, ctl, id, "", ch, cs, NULL, val);
}

/* Microseconds as seconds, exactly: "0.000512". */
static void us_to_s(char *out, size_t cap, uint64_t us)
{
	snprintf(out, cap, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);
}

/* The mount's value of a plain (counter or gauge) mount metric. */
static uint64_t mount_value(enum prom_id id, const struct smb_client_stats *st)
{
	switch (id) {
	case M_PAYLOAD_COPIED:
		return st->payload_bytes_copied;
	case M_LEASES_GRANTED:
		return st->leases_granted;
	case M_LEASE_BREAKS:
		return st->lease_breaks;
	case M_LEASE_BREAK_ACKS:
		return st->lease_break_acks;
	case M_WITNESS_EVENTS:
		return st->witness.events;
	case M_WITNESS_MOVES:
		return st->witness.moves;
	default:
		return 0;
	}
}

/* A channel's value of a plain (counter or gauge) channel metric. */
static uint64_t chan_value(enum prom_id id, const struct smb_channel_stats *c)
{
	switch (id) {
	case M_CH_UP:
		return strcmp(c->state, "up") == 0;
	case M_CH_REQUESTS:
		return c->requests;
	case M_CH_SENT:
		return c->bytes_sent;
	case M_CH_RECEIVED:
		return c->bytes_received;
	case M_CH_RDMA_READ:
		return c->rdma_read_bytes;
	case M_CH_RDMA_WRITE:
		return c->rdma_write_bytes;
	case M_CH_CREDITS:
		return c->credits;
	case M_CH_SEND_CREDITS:
		return c->send_credits;
	case M_CH_RECV_CREDITS:
		return c->recv_credits;
	case M_CH_IN_FLIGHT:
		return c->in_flight;
	case M_CH_MW_BOUND:
		return c->mw_bound;
	case M_CH_MW_INV_REMOTE:
		return c->mw_invalidated_remote;
	case M_CH_MW_INV_LOCAL:
		return c->mw_invalidated_local;
	case M_CH_FALLBACK:
		return c->offload_fallback_inline;
	case M_CH_REUSED:
		return c->offload_reused;
	case M_CH_RECONNECTS:
		return c->reconnects;
	case M_CH_FAILOVERS:
		return c->failovers;
	case M_CH_REPLAYS:
		return c->replays;
	default:
		return 0;
	}
}

static void render_prometheus(struct outbuf *o, const struct smb_ctl *ctl,
                              const struct smb_client_stats *st)
{
	char dialect[16];

	snprintf(dialect, sizeof(dialect), "%s", smb2_dialect_str(st->dialect));
	for (int id = 0; id < M_COUNT; id++) {
		prom_head(o, (enum prom_id)id);
		switch ((enum prom_id)id) {
		case M_MOUNT_INFO: {
			const char *kv[] = {
			    "server",  ctl->server, "share",   ctl->share,
			    "dialect", dialect,     "signing", st->signing ? "true" : "false",
			    NULL};
			prom_sample(o, ctl, M_MOUNT_INFO, "", -1, NULL, kv, "1");
			break;
		}
		case M_PAYLOAD_COPIED:
		case M_LEASES_GRANTED:
		case M_LEASE_BREAKS:
		case M_LEASE_BREAK_ACKS:
		case M_WITNESS_EVENTS:
		case M_WITNESS_MOVES:
			prom_u64(o, ctl, (enum prom_id)id, -1, NULL,
			         mount_value((enum prom_id)id, st));
			break;
		case M_CH_INFO:
			for (int i = 0; i < st->nchannels; i++) {
				const struct smb_channel_stats *c = &st->channels[i];
				const char *kv[] = {"local", c->local, "remote", c->remote,
				                    "state", c->state, NULL};
				prom_sample(o, ctl, M_CH_INFO, "", i, c, kv, "1");
			}
			break;
		case M_CH_COMMANDS:
			for (int i = 0; i < st->nchannels; i++) {
				const struct smb_channel_stats *c = &st->channels[i];
				for (int k = 0; k < SMB_STATS_COMMANDS; k++) {
					const char *kv[] = {"command", command_names[k], NULL};
					char val[24];
					if (!c->commands[k])
						continue;
					snprintf(val, sizeof(val), "%" PRIu64, c->commands[k]);
					prom_sample(o, ctl, M_CH_COMMANDS, "", i, c, kv, val);
				}
			}
			break;
		case M_CH_LATENCY:
			for (int i = 0; i < st->nchannels; i++) {
				const struct smb_channel_stats *c = &st->channels[i];
				uint64_t cum = 0;
				char le[32], val[24];
				for (int k = 0; k < SMB_LAT_BUCKETS; k++) {
					const char *kv[] = {"le", le, NULL};
					cum += c->latency_buckets[k];
					if (k < SMB_LAT_BUCKETS - 1)
						us_to_s(le, sizeof(le), UINT64_C(1) << k);
					else
						snprintf(le, sizeof(le), "+Inf");
					snprintf(val, sizeof(val), "%" PRIu64, cum);
					prom_sample(o, ctl, M_CH_LATENCY, "_bucket", i, c, kv, val);
				}
				us_to_s(val, sizeof(val), c->latency_sum_us);
				prom_sample(o, ctl, M_CH_LATENCY, "_sum", i, c, NULL, val);
				snprintf(val, sizeof(val), "%" PRIu64, cum);
				prom_sample(o, ctl, M_CH_LATENCY, "_count", i, c, NULL, val);
			}
			break;
		default:
			for (int i = 0; i < st->nchannels; i++)
				prom_u64(o, ctl, (enum prom_id)id, i, &st->channels[i],
				         chan_value((enum prom_id)id, &st->channels[i]));
			break;
		}
	}
}

/* "commands": {"CREATE": n, ...}, the commands sent at least once. */
static void json_commands(struct outbuf *o, bool *first, const uint64_t *n)
{
	bool f = true;

	json_key(o, first, "commands");
	out_add(o, "{", 1);
	for (int i = 0; i < SMB_STATS_COMMANDS; i++)
		if (n[i])
			json_ku64(o, &f, command_names[i], n[i]);
	out_add(o, "}", 1);
}

/* ---- what the replies say ------------------------------------------------------ */

static const char *share_type_str(uint32_t t)
{
	switch (t) {
	case SMB2_SHARE_TYPE_DISK:
		return "disk";
	case SMB2_SHARE_TYPE_PIPE:
		return "pipe";
	case SMB2_SHARE_TYPE_PRINT:
		return "print";
	default:
		return "unknown";
	}
}

enum ctl_cmd { CTL_STATS, CTL_CHANNELS, CTL_DEBUG, CTL_RECONNECT, CTL_DFS };

/* The DFS namespace for `smbrdmactl dfs` (loop thread only: static). */
#define CTL_DFS_LINKS 64
static struct smb_dfs_link_info ctl_dfs_links[CTL_DFS_LINKS];

/* Fills info and ctl_dfs_links; false when the mount is no namespace. */
static bool ctl_dfs(const struct smb_ctl *ctl, struct smb_dfs_info *info)
{
	return smb_client_dfs_links(ctl->client, info, ctl_dfs_links, CTL_DFS_LINKS) == 0;
}

static unsigned ctl_tcp_port(const struct smb_ctl *ctl)
{
	return ctl->port ? ctl->port : 445;
}

static unsigned ctl_quic_port(const struct smb_ctl *ctl)
{
	return ctl->quic_port ? ctl->quic_port : 443;
}

static void json_mount(struct outbuf *o, bool *first, const struct smb_ctl *ctl,
                       const struct smb_client_stats *st)
{
	char dialect[16];

	snprintf(dialect, sizeof(dialect), "%s", smb2_dialect_str(st->dialect));
	json_kstr(o, first, "server", ctl->server);
	/* The port the mount connects to: UDP for transport=quic. */
	json_ku64(o, first, "port", ctl->quic_only ? ctl_quic_port(ctl) : ctl_tcp_port(ctl));
	json_ku64(o, first, "quic_port", ctl->quic ? ctl_quic_port(ctl) : 0);
	json_kstr(o, first, "share", ctl->share);
	json_kstr(o, first, "mountpoint", ctl->mountpoint);
	json_kstr(o, first, "dialect", dialect);
	json_kbool(o, first, "signing", st->signing);
}

static void render_json(struct outbuf *o, const struct smb_ctl *ctl, enum ctl_cmd cmd,
                        const struct smb_client_stats *st, const struct smb_client_info *info,
                        int dropped)
{
	bool first = true;

	out_add(o, "{", 1);
	json_mount(o, &first, ctl, st);
	if (cmd == CTL_RECONNECT)
		json_ku64(o, &first, "channels_dropped", (uint64_t)dropped);
	if (cmd == CTL_STATS) {
		json_ku64(o, &first, "payload_bytes_copied", st->payload_bytes_copied);
		json_ku64(o, &first, "leases_granted", st->leases_granted);
		json_ku64(o, &first, "lease_breaks", st->lease_breaks);
		json_ku64(o, &first, "lease_break_acks", st->lease_break_acks);
	}
	if (cmd == CTL_STATS || cmd == CTL_CHANNELS) {
		/* the Service Witness client (`witness`) */
		const struct smb_witness_info *w = &st->witness;
		bool f = true;
		json_key(o, &first, "witness");
		out_add(o, "{", 1);
		json_kbool(o, &f, "on", w->on);
		json_kstr(o, &f, "state", w->on ? w->state : "off");
		json_kstr(o, &f, "server", w->server);
		json_kstr(o, &f, "registered", w->registered);
		json_kstr(o, &f, "error", w->error);
		json_kstr(o, &f, "last_event", w->last_event);
		json_ku64(o, &f, "events", w->events);
		json_ku64(o, &f, "moves", w->moves);
		json_ku64(o, &f, "held", w->held);
		json_ku64(o, &f, "drain_replays", w->drain_replays);
		out_add(o, "}", 1);
	}
	if (cmd == CTL_DEBUG) {
		json_kstr(o, &first, "signing_algorithm",
		          st->signing ? smb2_signing_alg_str(info->signing_alg) : "none");
		json_kbool(o, &first, "encryption", info->encryption);
		json_kstr(o, &first, "cipher", smb2_cipher_str(info->cipher));
		json_ku64(o, &first, "max_read", info->max_read);
		json_ku64(o, &first, "max_write", info->max_write);
		json_kstr(o, &first, "share_type", share_type_str(info->share_type));
		/* the kernel-to-daemon hop (fuse/ring.h) */
		struct fuse_ring_info ri;
		bool f = true;
		fuse_ring_info(ctl->ring, &ri);
		json_kstr(o, &first, "fuse_transport", ri.running ? "io_uring" : "/dev/fuse");
		json_key(o, &first, "fuse_ring");
		out_add(o, "{", 1);
		json_kstr(o, &f, "state", ri.state);
		json_kstr(
		    o, &f, "why_not",
		    ri.running ? "" : (ctl->ring_why && *ctl->ring_why ? ctl->ring_why : ri.state));
		json_ku64(o, &f, "queues", ri.queues);
		json_ku64(o, &f, "depth", ri.depth);
		json_ku64(o, &f, "payload_bytes", ri.payload);
		json_ku64(o, &f, "requests", ri.requests);
		json_ku64(o, &f, "commits", ri.commits);
		json_ku64(o, &f, "dev_replies", ri.dev_replies);
		json_ku64(o, &f, "errors", ri.errors);
		json_key(o, &f, "queue_requests");
		out_add(o, "[", 1);
		for (unsigned q = 0; q < ri.queues && q < FUSE_RING_INFO_QUEUES; q++)
			out_printf(o, "%s%" PRIu64, q ? "," : "", ri.queue_requests[q]);
		out_add(o, "]", 1);
		out_add(o, "}", 1);
	}
	if (cmd == CTL_DFS) {
		struct smb_dfs_info di;
		bool on = ctl_dfs(ctl, &di);
		json_kbool(o, &first, "dfs", on);
		json_ku64(o, &first, "dfs_referrals", on ? di.referrals : 0);
		json_ku64(o, &first, "dfs_referral_failures", on ? di.referral_failures : 0);
		json_key(o, &first, "dfs_links");
		out_add(o, "[", 1);
		for (int i = 0; on && i < di.nlinks && i < CTL_DFS_LINKS; i++) {
			const struct smb_dfs_link_info *l = &ctl_dfs_links[i];
			bool f = true;
			out_add(o, i ? ",{" : "{", i ? 2 : 1);
			json_kstr(o, &f, "path", l->path);
			json_kstr(o, &f, "current", l->current);
			json_key(o, &f, "targets");
			out_add(o, "[", 1);
			for (int t = 0; t < l->ntargets; t++) {
				if (t)
					out_add(o, ",", 1);
				json_str(o, l->targets[t]);
			}
			out_add(o, "]", 1);
			json_ku64(o, &f, "ttl", l->ttl);
			json_kbool(o, &f, "expired", l->expired);
			json_ku64(o, &f, "moves", l->moves);
			out_add(o, "}", 1);
		}
		out_add(o, "]", 1);
	}
	json_key(o, &first, "channels");
	out_add(o, "[", 1);
	for (int i = 0; i < st->nchannels; i++) {
		const struct smb_channel_stats *ch = &st->channels[i];
		bool f = true;
		if (i)
			out_add(o, ",", 1);
		out_add(o, "{", 1);
		json_ku64(o, &f, "index", (uint64_t)i);
		json_kstr(o, &f, "transport", ch->transport);
		json_kstr(o, &f, "local", ch->local);
		json_kstr(o, &f, "remote", ch->remote);
		json_kstr(o, &f, "state", ch->state);
		json_ku64(o, &f, "credits", ch->credits);
		json_ku64(o, &f, "send_credits", ch->send_credits);
		json_ku64(o, &f, "recv_credits", ch->recv_credits);
		if (cmd == CTL_STATS || cmd == CTL_DEBUG)
			json_ku64(o, &f, "requests", ch->requests);
		if (cmd == CTL_STATS) {
			json_commands(o, &f, ch->commands);
			json_ku64(o, &f, "bytes_sent", ch->bytes_sent);
			json_ku64(o, &f, "bytes_received", ch->bytes_received);
			json_ku64(o, &f, "rdma_read_bytes", ch->rdma_read_bytes);
			json_ku64(o, &f, "rdma_write_bytes", ch->rdma_write_bytes);
			json_ku64(o, &f, "mw_bound", ch->mw_bound);
			json_ku64(o, &f, "mw_invalidated_remote", ch->mw_invalidated_remote);
			json_ku64(o, &f, "mw_invalidated_local", ch->mw_invalidated_local);
			json_ku64(o, &f, "offload_fallback_inline", ch->offload_fallback_inline);
			json_ku64(o, &f, "offload_reused", ch->offload_reused);
			json_ku64(o, &f, "in_flight", ch->in_flight);
			json_key(o, &f, "latency_us_buckets");
			for (int k = 0; k < SMB_LAT_BUCKETS; k++)
				out_printf(o, "%s%" PRIu64, k ? "," : "[", ch->latency_buckets[k]);
			out_add(o, "]", 1);
			json_ku64(o, &f, "latency_us_sum", ch->latency_sum_us);
		}
		json_ku64(o, &f, "reconnects", ch->reconnects);
		json_ku64(o, &f, "failovers", ch->failovers);
		json_ku64(o, &f, "replays", ch->replays);
		out_add(o, "}", 1);
	}
	out_add(o, "]}\n", 3);
}

/* ---- the human form: aligned columns ------------------------------------------ */

#define TABLE_MAX_COLS 18

struct table {
	int ncols, nrows;
	const char *head[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS]; /* numbers align right */
	char cell[SMB_CLIENT_MAX_CHANNELS][TABLE_MAX_COLS][72];
};

static void table_col(struct table *t, const char *head, bool right)
{
	t->head[t->ncols] = head;
	t->right[t->ncols] = right;
	t->ncols++;
}

static void table_print(struct outbuf *o, const struct table *t)
{
	int width[TABLE_MAX_COLS];

	for (int c = 0; c < t->ncols; c++) {
		width[c] = (int)strlen(t->head[c]);
		for (int r = 0; r < t->nrows; r++)
			if ((int)strlen(t->cell[r][c]) > width[c])
				width[c] = (int)strlen(t->cell[r][c]);
	}
	for (int r = -1; r < t->nrows; r++) {
		char line[TABLE_MAX_COLS * 80];
		size_t n = 0;
		for (int c = 0; c < t->ncols; c++) {
			const char *s = r < 0 ? t->head[c] : t->cell[r][c];
			bool last = c == t->ncols - 1;
			int w = r >= 0 && !t->right[c] && last ? 0 : width[c];
			int k = snprintf(line + n, sizeof(line) - n,
			                 t->right[c] ? "%s%*s" : "%s%-*s", c ? "  " : "", w, s);
			if (k > 0 && (size_t)k < sizeof(line) - n)
				n += (size_t)k;
		}
		while (n && line[n - 1] == ' ')
			n--;
		line[n++] = '\n';
		out_add(o, line, n);
	}
}

static void render_text(struct outbuf *o, const struct smb_ctl *ctl, enum ctl_cmd cmd,
                        const struct smb_client_stats *st, const struct smb_client_info *info)
{
	static struct table t; /* loop thread only; too big for its stack */
	char dialect[16];

	memset(&t, 0, sizeof(t));
	snprintf(dialect, sizeof(dialect), "%s", smb2_dialect_str(st->dialect));
	out_printf(o, "mount     %s\n", ctl->mountpoint);
	if (ctl->quic_only)
		out_printf(o, "server    %s udp port %u (quic), share %s\n", ctl->server,
		           ctl_quic_port(ctl), ctl->share);
	else if (ctl->quic)
		out_printf(o, "server    %s port %u or udp port %u (quic), share %s\n", ctl->server,
		           ctl_tcp_port(ctl), ctl_quic_port(ctl), ctl->share);
	else
		out_printf(o, "server    %s port %u, share %s\n", ctl->server, ctl_tcp_port(ctl),
		           ctl->share);
	out_printf(o, "dialect   %s, signing %s\n", dialect,
	           st->signing ? smb2_signing_alg_str(info->signing_alg) : "off");
	if (cmd == CTL_STATS) {
		out_printf(o, "payload bytes copied by the daemon: %" PRIu64 "\n",
		           st->payload_bytes_copied);
		out_printf(o,
		           "leases granted %" PRIu64 ", lease breaks %" PRIu64
		           ", acknowledged %" PRIu64 "\n",
		           st->leases_granted, st->lease_breaks, st->lease_break_acks);
	}
	if ((cmd == CTL_STATS || cmd == CTL_CHANNELS) && st->witness.on) {
		const struct smb_witness_info *w = &st->witness;
		out_printf(o, "witness   %s%s%s%s%s; %" PRIu64 " event%s, %" PRIu64 " move%s\n",
		           w->state, w->server[0] ? ", server " : "", w->server,
		           w->registered[0] ? ", for " : "", w->registered, w->events,
		           w->events == 1 ? "" : "s", w->moves, w->moves == 1 ? "" : "s");
		if (w->last_event[0])
			out_printf(o, "          last event: %s\n", w->last_event);
		if (w->error[0])
			out_printf(o, "          last error: %s\n", w->error);
		if (cmd == CTL_STATS)
			out_printf(o,
			           "          requests held by moves %" PRIu64
			           ", in flight at a move's cut %" PRIu64 "\n",
			           w->held, w->drain_replays);
	}
	if (cmd == CTL_DFS) {
		struct smb_dfs_info di;
		if (!ctl_dfs(ctl, &di)) {
			out_printf(o, "dfs       the share is in no DFS namespace (or nodfs)\n");
		} else {
			out_printf(o,
			           "dfs       %d link%s followed; %" PRIu64
			           " referral%s asked, %" PRIu64 " failed\n",
			           di.nlinks, di.nlinks == 1 ? "" : "s", di.referrals,
			           di.referrals == 1 ? "" : "s", di.referral_failures);
			for (int i = 0; i < di.nlinks && i < CTL_DFS_LINKS; i++) {
				const struct smb_dfs_link_info *l = &ctl_dfs_links[i];
				out_printf(o,
				           "link      /%s -> %s (ttl %" PRIu32 " s%s, %" PRIu64
				           " move%s)\n",
				           l->path, l->current, l->ttl,
				           l->expired ? ", expired" : "", l->moves,
				           l->moves == 1 ? "" : "s");
				for (int k = 0; k < l->ntargets; k++)
					out_printf(
					    o, "          target %d: %s%s\n", k + 1, l->targets[k],
					    strcmp(l->targets[k], l->current) == 0 ? " *" : "");
			}
		}
	}
	if (cmd == CTL_DEBUG) {
		out_printf(o,
		           "encryption %s, max read %" PRIu32 " bytes, max write %" PRIu32
		           " bytes, share type %s\n",
		           info->encryption ? smb2_cipher_str(info->cipher) : "off", info->max_read,
		           info->max_write, share_type_str(info->share_type));
		struct fuse_ring_info ri;
		fuse_ring_info(ctl->ring, &ri);
		if (ri.running)
			out_printf(o,
			           "fuse      io_uring: %u queue%s of %u entries; %" PRIu64
			           " requests, %" PRIu64 " answers on the ring, %" PRIu64
			           " through /dev/fuse\n",
			           ri.queues, ri.queues == 1 ? "" : "s", ri.depth, ri.requests,
			           ri.commits, ri.dev_replies);
		else
			out_printf(o, "fuse      /dev/fuse (%s)\n",
			           ctl->ring_why && *ctl->ring_why ? ctl->ring_why : ri.state);
	}
	out_add(o, "\n", 1);

	table_col(&t, "CH", true);
	table_col(&t, "TRANSPORT", false);
	table_col(&t, "STATE", false);
	if (cmd != CTL_STATS) {
		table_col(&t, "LOCAL", false);
		table_col(&t, "REMOTE", false);
	}
	if (cmd != CTL_CHANNELS)
		table_col(&t, "REQUESTS", true);
	if (cmd == CTL_STATS) {
		table_col(&t, "SENT", true);
		table_col(&t, "RECEIVED", true);
		table_col(&t, "RDMA_READ", true);
		table_col(&t, "RDMA_WRITE", true);
	}
	table_col(&t, "CREDITS", true);
	table_col(&t, "SEND_CR", true);
	table_col(&t, "RECV_CR", true);
	if (cmd == CTL_STATS) {
		table_col(&t, "MW_BOUND", true);
		table_col(&t, "MW_INV_REMOTE", true);
		table_col(&t, "MW_INV_LOCAL", true);
		table_col(&t, "INLINE_FALLBACK", true);
	}
	table_col(&t, "RECONNECTS", true);
	table_col(&t, "FAILOVERS", true);
	table_col(&t, "REPLAYS", true);
	for (int i = 0; i < st->nchannels; i++) {
		const struct smb_channel_stats *ch = &st->channels[i];
		int c = 0;
#define CELL(...) snprintf(t.cell[i][c++], sizeof(t.cell[i][0]), __VA_ARGS__)
		CELL("%d", i);
		CELL("%s", ch->transport);
		CELL("%s", ch->state);
		if (cmd != CTL_STATS) {
			CELL("%s", ch->local);
			CELL("%s", ch->remote);
		}
		if (cmd != CTL_CHANNELS)
			CELL("%" PRIu64, ch->requests);
		if (cmd == CTL_STATS) {
			CELL("%" PRIu64, ch->bytes_sent);
			CELL("%" PRIu64, ch->bytes_received);
			CELL("%" PRIu64, ch->rdma_read_bytes);
			CELL("%" PRIu64, ch->rdma_write_bytes);
		}
		CELL("%" PRIu32, ch->credits);
		CELL("%" PRIu32, ch->send_credits);
		CELL("%" PRIu32, ch->recv_credits);
		if (cmd == CTL_STATS) {
			CELL("%" PRIu64, ch->mw_bound);
			CELL("%" PRIu64, ch->mw_invalidated_remote);
			CELL("%" PRIu64, ch->mw_invalidated_local);
			CELL("%" PRIu64, ch->offload_fallback_inline);
		}
		CELL("%" PRIu64, ch->reconnects);
		CELL("%" PRIu64, ch->failovers);
		CELL("%" PRIu64, ch->replays);
#undef CELL
		t.nrows++;
	}
	table_print(o, &t);
}

/* The reply to one request line; malloc'd, never NULL unless out of memory. */
static char *answer(struct smb_ctl *ctl, const char *line, size_t *len)
{
	static struct smb_client_stats st; /* loop thread only; ~7 KiB */
	struct smb_client_info info;
	struct outbuf o = {0};
	char cmd[16] = "", fmt[16] = "", extra[2] = "";
	enum ctl_cmd c;
	int n = sscanf(line, "%15s %15s %1s", cmd, fmt, extra);

	if (n >= 1 && strcmp(cmd, "stats") == 0)
		c = CTL_STATS;
	else if (n >= 1 && strcmp(cmd, "channels") == 0)
		c = CTL_CHANNELS;
	else if (n >= 1 && strcmp(cmd, "debug") == 0)
		c = CTL_DEBUG;
	else if (n >= 1 && strcmp(cmd, "reconnect") == 0)
		c = CTL_RECONNECT;
	else if (n >= 1 && strcmp(cmd, "dfs") == 0)
		c = CTL_DFS;
	else {
		out_printf(&o, "error: unknown request (known: stats, channels, debug, reconnect, "
		               "dfs)\n");
		goto done;
	}
	bool prom = n == 2 && strcmp(fmt, "prometheus") == 0;
	if (n > 2 || (n == 2 && strcmp(fmt, "json") != 0 && strcmp(fmt, "text") != 0 && !prom)) {
		out_printf(&o, "error: unknown format (known: json, text, prometheus)\n");
		goto done;
	}
	if (prom && c != CTL_STATS) {
		out_printf(&o, "error: only stats has the prometheus format\n");
		goto done;
	}
	int dropped = -1;
	if (c == CTL_RECONNECT)
		dropped =
		    smb_client_reconnect_now(ctl->client, "reconnect requested by smbrdmactl");
	smb_client_get_stats(ctl->client, &st);
	smb_client_get_info(ctl->client, &info);
	if (prom) {
		render_prometheus(&o, ctl, &st);
	} else if (n == 2 && strcmp(fmt, "text") == 0) {
		if (dropped >= 0)
			out_printf(&o, "%d channel%s dropped; the session is being built again\n\n",
			           dropped, dropped == 1 ? "" : "s");
		render_text(&o, ctl, c, &st, &info);
	} else {
		render_json(&o, ctl, c, &st, &info, dropped);
	}
done:
	if (o.oom) {
		free(o.p);
		return NULL;
	}
	*len = o.len;
	return o.p;
}

/* ---- connections ----------------------------------------------------------------- */

static void conn_close(struct ctl_conn *cc)
{
	struct smb_ctl *ctl = cc->ctl;

	if (cc->timer)
		ev_timer_cancel(cc->timer);
	if (cc->evf)
		ev_fd_del(cc->evf);
	close(cc->fd);
	if (cc->prev)
		cc->prev->next = cc->next;
	else
		ctl->conns = cc->next;
	if (cc->next)
		cc->next->prev = cc->prev;
	ctl->nconns--;
	free(cc->reply);
	free(cc);
}

static void conn_timeout(void *arg)
{
	struct ctl_conn *cc = arg;

	cc->timer = NULL; /* a fired timer frees itself */
	conn_close(cc);
}

/* Returns true when the connection is finished (closed). */
static bool conn_write(struct ctl_conn *cc)
{
	while (cc->reply_off < cc->reply_len) {
		ssize_t n = send(cc->fd, cc->reply + cc->reply_off, cc->reply_len - cc->reply_off,
		                 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			ev_fd_mod(cc->evf, EPOLLOUT);
			return false;
		}
		if (n <= 0)
			break; /* the peer went away: nothing to tell it */
		cc->reply_off += (size_t)n;
	}
	conn_close(cc);
	return true;
}

static void conn_event(struct ev_fd *f, uint32_t events, void *arg)
{
	struct ctl_conn *cc = arg;
	bool complete = false;

	if (cc->reply) {
		conn_write(cc);
		return;
	}
	for (;;) {
		ssize_t n =
		    recv(cc->fd, cc->req + cc->req_len, sizeof(cc->req) - 1 - cc->req_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			conn_close(cc);
			return;
		}
		if (n == 0) { /* EOF ends the line too */
			complete = true;
			break;
		}
		cc->req_len += (size_t)n;
		cc->req[cc->req_len] = '\0';
		if (memchr(cc->req, '\n', cc->req_len) || cc->req_len == sizeof(cc->req) - 1) {
			complete = true;
			break;
		}
	}
	if (!complete)
		return;
	cc->req[cc->req_len] = '\0';
	cc->req[strcspn(cc->req, "\r\n")] = '\0';
	cc->reply = answer(cc->ctl, cc->req, &cc->reply_len);
	if (!cc->reply) {
		smb_warn("control socket %s: out of memory answering '%s'", cc->ctl->path, cc->req);
		conn_close(cc);
		return;
	}
	conn_write(cc);
}

static void listen_event(struct ev_fd *f, uint32_t events, void *arg)
{
	struct smb_ctl *ctl = arg;

	for (;;) {
		int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				smb_warn("control socket %s: accept: %s", ctl->path,
				         strerror(errno));
			return;
		}
		if (ctl->nconns >= CTL_MAX_CONNS) {
			close(fd); /* the client sees EOF and says so */
			continue;
		}
		struct ctl_conn *cc = calloc(1, sizeof(*cc));
		if (!cc) {
			close(fd);
			continue;
		}
		cc->ctl = ctl;
		cc->fd = fd;
		if (ev_fd_add(ctl->loop, fd, EPOLLIN, conn_event, cc, &cc->evf) < 0) {
			close(fd);
			free(cc);
			continue;
		}
		cc->next = ctl->conns;
		if (cc->next)
			cc->next->prev = cc;
		ctl->conns = cc;
		ctl->nconns++;
		if (ev_timer_add(ctl->loop, CTL_CONN_TIMEOUT_MS, conn_timeout, cc, &cc->timer) < 0)
			cc->timer = NULL; /* then only the connection limit bounds it */
	}
}

/* ---- the socket file ----------------------------------------------------------- */

int smb_mount_dev(const char *mountpoint, char *out, size_t cap)
{
	unsigned maj, min;
	int rc = mountinfo_dev(mountpoint, &maj, &min);
	if (rc == 0)
		snprintf(out, cap, "%u:%u", maj, min);
	return rc;
}

/* /run/smbrdma, 0755, a real directory owned by us (never one someone else
 * prepared for us). */
static int make_dir(char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(SMB_CTL_DIR, 0755) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", SMB_CTL_DIR, strerror(e));
		return -e;
	}
	if (lstat(SMB_CTL_DIR, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", SMB_CTL_DIR, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s is not a directory owned by uid %u", SMB_CTL_DIR,
		         (unsigned)geteuid());
		return -EPERM;
	}
	if ((st.st_mode & 07777) != 0755 && chmod(SMB_CTL_DIR, 0755) < 0) {
		int e = errno;
		snprintf(err, errlen, "chmod %s: %s", SMB_CTL_DIR, strerror(e));
		return -e;
	}
	return 0;
}

/* Bind under a temporary name, make it 0600, then rename it into place, so
 * the final name is never reachable with looser permissions.  Any socket
 * already at that name is a dead daemon's: the device is ours now. */
static int make_socket(struct smb_ctl *ctl, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int e;

	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%ld.tmp", ctl->path, (long)getpid()) >=
	    (int)sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", ctl->path);
		return -ENAMETOOLONG;
	}
	unlink(sa.sun_path);
	if (bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		snprintf(err, errlen, "bind %s: %s", sa.sun_path, strerror(e));
		return -e;
	}
	if (chmod(sa.sun_path, 0600) < 0 || listen(ctl->listen_fd, CTL_MAX_CONNS) < 0 ||
	    rename(sa.sun_path, ctl->path) < 0 || lstat(ctl->path, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: %s", ctl->path, strerror(e));
		unlink(sa.sun_path);
		return -e;
	}
	ctl->sock_dev = st.st_dev;
	ctl->sock_ino = st.st_ino;
	return 0;
}

static void remove_socket_file(struct smb_ctl *ctl)
{
	struct stat st;

	if (ctl->sock_ino && lstat(ctl->path, &st) == 0 && st.st_dev == ctl->sock_dev &&
	    st.st_ino == ctl->sock_ino)
		unlink(ctl->path);
	ctl->sock_ino = 0;
}

static void remove_socket(struct smb_ctl *ctl)
{
	remove_socket_file(ctl);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	ctl->listen_fd = -1;
}

static void ctl_free(struct smb_ctl *ctl)
{
	remove_socket(ctl);
	pthread_mutex_destroy(&ctl->stop_lock);
	pthread_cond_destroy(&ctl->stop_cond);
	free(ctl);
}

int smb_ctl_listen(const char *mountpoint, dev_t *dev, ino_t *ino, char *err, size_t errlen)
{
	struct smb_ctl tmp = {.listen_fd = -1};
	char mdev[32];
	int rc = smb_mount_dev(mountpoint, mdev, sizeof(mdev));

	if (rc < 0) {
		snprintf(err, errlen, "%s not found in /proc/self/mountinfo: %s", mountpoint,
		         strerror(-rc));
		return rc;
	}
	snprintf(tmp.path, sizeof(tmp.path), "%s/%s.sock", SMB_CTL_DIR, mdev);
	rc = make_dir(err, errlen);
	if (rc == 0)
		rc = make_socket(&tmp, err, errlen);
	if (rc < 0) {
		if (tmp.listen_fd >= 0)
			close(tmp.listen_fd);
		return rc;
	}
	*dev = tmp.sock_dev;
	*ino = tmp.sock_ino;
	return tmp.listen_fd;
}

/* listen_fd >= 0: made by smb_ctl_listen() elsewhere; its file is not ours. */
static int ctl_start(struct smb_client *client, const struct smb_ctl_mount *m, int listen_fd,
                     struct smb_ctl **out, char *err, size_t errlen)
{
	struct smb_ctl *ctl;
	char dev[32];
	int rc;

	*out = NULL;
	rc = smb_mount_dev(m->mountpoint, dev, sizeof(dev));
	if (rc < 0) {
		snprintf(err, errlen, "%s not found in /proc/self/mountinfo: %s", m->mountpoint,
		         strerror(-rc));
		if (listen_fd >= 0)
			close(listen_fd);
		return rc;
	}
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		if (listen_fd >= 0)
			close(listen_fd);
		return -ENOMEM;
	}
	ctl->client = client;
	ctl->loop = smb_client_loop(client);
	ctl->listen_fd = -1;
	ctl->port = m->port;
	ctl->quic_port = m->quic_port;
	ctl->quic_only = m->transport && strcmp(m->transport, "quic") == 0;
	ctl->ring = m->ring;
	ctl->ring_why = m->ring_why;
	ctl->quic = ctl->quic_only || (m->transport && strcmp(m->transport, "auto") == 0);
	snprintf(ctl->server, sizeof(ctl->server), "%s", m->server ? m->server : "");
	snprintf(ctl->share, sizeof(ctl->share), "%s", m->share ? m->share : "");
	snprintf(ctl->mountpoint, sizeof(ctl->mountpoint), "%s", m->mountpoint);
	snprintf(ctl->path, sizeof(ctl->path), "%s/%s.sock", SMB_CTL_DIR, dev);
	pthread_mutex_init(&ctl->stop_lock, NULL);
	pthread_cond_init(&ctl->stop_cond, NULL);

	if (listen_fd >= 0) {
		ctl->listen_fd = listen_fd;
		rc = 0;
	} else {
		rc = make_dir(err, errlen);
		if (rc == 0)
			rc = make_socket(ctl, err, errlen);
	}
	if (rc == 0) {
		rc = ev_fd_add(ctl->loop, ctl->listen_fd, EPOLLIN, listen_event, ctl,
		               &ctl->listen_evf);
		if (rc < 0)
			snprintf(err, errlen, "watching %s: %s", ctl->path, strerror(-rc));
	}
	if (rc < 0) {
		ctl_free(ctl);
		return rc;
	}
	smb_info("control socket %s", ctl->path);
	*out = ctl;
	return 0;
}

int smb_ctl_start(struct smb_client *client, const struct smb_ctl_mount *m, struct smb_ctl **out,
                  char *err, size_t errlen)
{
	return ctl_start(client, m, -1, out, err, errlen);
}

int smb_ctl_start_on(struct smb_client *client, const struct smb_ctl_mount *m, int listen_fd,
                     struct smb_ctl **out, char *err, size_t errlen)
{
	return ctl_start(client, m, listen_fd, out, err, errlen);
}

/* Loop thread: drop the listener and every connection, then wake the
 * waiting smb_ctl_stop(). */
static void stop_on_loop(void *arg)
{
	struct smb_ctl *ctl = arg;

	ev_fd_del(ctl->listen_evf);
	ctl->listen_evf = NULL;
	while (ctl->conns)
		conn_close(ctl->conns);
	pthread_mutex_lock(&ctl->stop_lock);
	ctl->stopped = true;
	pthread_cond_signal(&ctl->stop_cond);
	pthread_mutex_unlock(&ctl->stop_lock);
}

void smb_ctl_stop(struct smb_ctl *ctl)
{
	if (!ctl)
		return;
	if (ev_call(ctl->loop, stop_on_loop, ctl) == 0) {
		pthread_mutex_lock(&ctl->stop_lock);
		while (!ctl->stopped)
			pthread_cond_wait(&ctl->stop_cond, &ctl->stop_lock);
		pthread_mutex_unlock(&ctl->stop_lock);
		ctl_free(ctl);
		return;
	}
	/* Cannot queue the call (out of memory): remove the file and leak the
	 * rest rather than free what a running callback may still touch. */
	smb_warn("control socket %s: cannot stop it cleanly, leaking it", ctl->path);
	remove_socket_file(ctl);
}
