/* tools/smbrdmactl.c — ask a mount's daemon for its statistics, channels and
 * session state, through the control socket of fuse/ctl.h.
 *
 *   smbrdmactl stats|channels|debug|reconnect|dfs MOUNTPOINT [--json]
 *   smbrdmactl stats MOUNTPOINT --prometheus
 *   smbrdmactl top MOUNTPOINT [--interval SECONDS] [--count N]
 *
 * The socket is found from the mount alone: stat(MOUNTPOINT).st_dev names
 * /run/smbrdma/MAJOR:MINOR.sock.  The daemon formats the JSON, the table and
 * the Prometheus text, so this tool only checks, asks and prints; `top`
 * asks for the Prometheus text every interval and prints rates computed
 * from two successive answers.  Exit status: 0 done, 1 failed (message on
 * stderr), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include "common/mountinfo.h"

#include "config.h"

#define PROG      "smbrdmactl"
#define CTL_DIR   "/run/smbrdma" /* as fuse/ctl.h */
#define TIMEOUT_S 10
#define REPLY_MAX (1u << 20)

static void usage(FILE *out)
{
	fprintf(out, "usage: " PROG " stats|channels|debug|reconnect|dfs MOUNTPOINT [--json]\n"
	             "       " PROG " stats MOUNTPOINT --prometheus\n"
	             "       " PROG " top MOUNTPOINT [--interval SECONDS] [--count N]\n"
	             "  stats     per-channel counters and payload bytes copied\n"
	             "  channels  the channel table: transport, addresses, state, credits\n"
	             "  debug     dialect, signing, limits and per-channel state\n"
	             "  reconnect drop every channel; the session is built again\n"
	             "  dfs       the DFS links followed and their targets\n"
	             "  top       a refreshing per-channel view: IOPS, MiB/s, latency,\n"
	             "            credits, in flight, RDMA and inline MiB/s, failovers\n"
	             "  --json        print JSON instead of a table\n"
	             "  --prometheus  stats in the Prometheus text exposition format\n"
	             "  --interval S  top: seconds between refreshes (default 1)\n"
	             "  --count N     top: exit after N refreshes\n"
	             "See smbrdmactl(8).\n");
}

struct dev_type {
	unsigned maj, min;
	bool found;
};

static bool is_smbrdma(const struct mountinfo_ent *e, void *arg)
{
	struct dev_type *q = arg;
	q->found = e->maj == q->maj && e->min == q->min && strcmp(e->fstype, "fuse.smbrdma") == 0;
	return q->found;
}

/* Is some mount with device maj:min an smbrdma one? */
static bool is_smbrdma_dev(unsigned maj, unsigned min)
{
	struct dev_type q = {.maj = maj, .min = min};
	return mountinfo_each(is_smbrdma, &q) == 0 && q.found;
}

/* The device of the mount whose mount point is exactly path (made absolute
 * without touching it).  No stat() of the mount point: a dead daemon
 * answers that with an error, and the stats of a dead mount are exactly
 * what one wants to see.  true if found. */
static bool mount_dev_of(const char *path, unsigned *maj, unsigned *min)
{
	char want[2 * PATH_MAX + 2], cwd[PATH_MAX];
	if (strlen(path) >= PATH_MAX)
		return false;
	if (path[0] == '/')
		snprintf(want, sizeof(want), "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(want, sizeof(want), "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
	else
		return false;
	size_t wl = strlen(want);
	while (wl > 1 && want[wl - 1] == '/')
		want[--wl] = '\0';
	return mountinfo_dev(want, maj, min) == 0;
}

/* Send one request line, read the whole reply into a malloc'd string.
 * Returns 0 or -errno. */
static int ask(const char *path, const char *request, char **reply)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = TIMEOUT_S};
	size_t len = 0, cap = 4096, off = 0, rlen = strlen(request);
	char *buf;
	int fd, e;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	while (off < rlen) {
		ssize_t n = send(fd, request + off, rlen - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		off += (size_t)n;
	}
	buf = malloc(cap);
	if (!buf) {
		errno = ENOMEM;
		goto fail;
	}
	for (;;) {
		if (len + 1 == cap) {
			char *p = cap < REPLY_MAX ? realloc(buf, cap * 2) : NULL;
			if (!p) {
				free(buf);
				errno = cap < REPLY_MAX ? ENOMEM : EMSGSIZE;
				goto fail;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EAGAIN)
				errno = ETIMEDOUT;
			free(buf);
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (len == 0) {
		free(buf);
		return -ECONNRESET; /* closed without an answer: busy or going away */
	}
	*reply = buf;
	return 0;
fail:
	e = errno;
	close(fd);
	return -e;
}

/* ---- top ------------------------------------------------------------------------ */

#define TOP_MAX_CHANNELS 64
#define TOP_MAX_BUCKETS  64
#define MIB              (1024.0 * 1024.0)

/* What top reads of one channel from the Prometheus text. */
struct top_chan {
	bool seen;
	char transport[16], remote[72], state[16];
	double requests, sent, received, rdma_read, rdma_write;
	double credits, in_flight, failovers;
	int nbuckets;
	double le[TOP_MAX_BUCKETS];  /* bucket upper bounds, seconds; INFINITY last */
	double cum[TOP_MAX_BUCKETS]; /* cumulative counts */
};

struct top_snap {
	double t; /* CLOCK_MONOTONIC, seconds */
	int nchannels;
	struct top_chan ch[TOP_MAX_CHANNELS];
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One label value of a sample line's {...}: copies the value of key into
 * out (unescaped); false when absent. */
static bool label(const char *labels, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	const char *p = labels;

	while (*p && *p != '}') {
		const char *eq = strchr(p, '=');
		if (!eq || eq[1] != '"')
			return false;
		bool match = (size_t)(eq - p) == kl && strncmp(p, key, kl) == 0;
		size_t n = 0;
		for (p = eq + 2; *p && *p != '"'; p++) {
			char c = *p;
			if (c == '\\' && p[1]) {
				c = *++p;
				if (c == 'n')
					c = '\n';
			}
			if (match && n + 1 < cap)
				out[n++] = c;
		}
		if (match) {
			out[n] = '\0';
			return true;
		}
		if (*p == '"')
			p++;
		if (*p == ',')
			p++;
	}
	return false;
}

/* The plain channel metrics top reads (after "smbrdma_channel_") and where. */
static const struct {
	const char *name;
	size_t off;
} top_fields[] = {
    {"requests_total", offsetof(struct top_chan, requests)},
    {"sent_bytes_total", offsetof(struct top_chan, sent)},
    {"received_bytes_total", offsetof(struct top_chan, received)},
    {"rdma_read_bytes_total", offsetof(struct top_chan, rdma_read)},
    {"rdma_write_bytes_total", offsetof(struct top_chan, rdma_write)},
    {"credits", offsetof(struct top_chan, credits)},
    {"in_flight", offsetof(struct top_chan, in_flight)},
    {"failovers_total", offsetof(struct top_chan, failovers)},
};

/* Parse the daemon's Prometheus text into snap (only what top shows). */
static void top_parse(char *text, struct top_snap *snap)
{
	memset(snap, 0, sizeof(*snap));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char chbuf[16], le[32];
		if (line[0] == '#' || strncmp(line, "smbrdma_channel_", 16) != 0)
			continue;
		char *brace = strchr(line, '{'), *close = brace ? strrchr(brace, '}') : NULL;
		if (!close || !label(brace + 1, "channel", chbuf, sizeof(chbuf)))
			continue;
		*brace = '\0';
		const char *name = line + 16, *labels = brace + 1;
		double v = strtod(close + 1, NULL);
		int i = atoi(chbuf);
		if (i < 0 || i >= TOP_MAX_CHANNELS)
			continue;
		struct top_chan *c = &snap->ch[i];
		if (!c->seen) {
			c->seen = true;
			label(labels, "transport", c->transport, sizeof(c->transport));
			if (i + 1 > snap->nchannels)
				snap->nchannels = i + 1;
		}
		if (strcmp(name, "info") == 0) {
			label(labels, "remote", c->remote, sizeof(c->remote));
			label(labels, "state", c->state, sizeof(c->state));
		} else if (strcmp(name, "request_latency_seconds_bucket") == 0) {
			if (label(labels, "le", le, sizeof(le)) && c->nbuckets < TOP_MAX_BUCKETS) {
				c->le[c->nbuckets] =
				    strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
				c->cum[c->nbuckets++] = v;
			}
		} else {
			for (size_t k = 0; k < sizeof(top_fields) / sizeof(top_fields[0]); k++)
				if (strcmp(name, top_fields[k].name) == 0)
					*(double *)((char *)c + top_fields[k].off) = v;
		}
	}
}

static double pos_delta(double now, double before)
{
	return now > before ? now - before : 0;
}

/* The q-quantile of the requests counted by the cumulative bucket counts
 * d[] (bounds le[]), interpolated linearly inside its bucket; NAN for none. */
static double quantile(const double *le, const double *d, int n, double q)
{
	if (n == 0 || d[n - 1] <= 0)
		return NAN;
	double rank = q * d[n - 1];
	for (int k = 0; k < n; k++) {
		if (d[k] < rank)
			continue;
		double lo = k ? le[k - 1] : 0, below = k ? d[k - 1] : 0;
		if (isinf(le[k]))
			return lo;
		double in = d[k] - below;
		return lo + (le[k] - lo) * (in > 0 ? (rank - below) / in : 1);
	}
	return le[n - 1];
}

/* A latency in milliseconds for a column: "-" when nothing was answered. */
static void fmt_ms(char *out, size_t cap, double seconds)
{
	if (isnan(seconds))
		snprintf(out, cap, "-");
	else
		snprintf(out, cap, "%.2f", seconds * 1e3);
}

struct top_row {
	double iops, rd, wr, rdma, inl, credits, in_flight, failovers;
	double dcum[TOP_MAX_BUCKETS];
};

static void top_print_row(const char *ch, const char *transport, const char *remote,
                          const struct top_row *r, const double *le, int nb)
{
	char p50[16], p99[16];

	fmt_ms(p50, sizeof(p50), quantile(le, r->dcum, nb, 0.50));
	fmt_ms(p99, sizeof(p99), quantile(le, r->dcum, nb, 0.99));
	printf("%-3s %-9s %-22s %8.0f %9.2f %9.2f %8s %8s %7.0f %8.0f %10.2f %12.2f %9.0f\n", ch,
	       transport, remote, r->iops, r->rd, r->wr, p50, p99, r->credits, r->in_flight,
	       r->rdma, r->inl, r->failovers);
}

static void top_frame(const char *mountpoint, double interval, const struct top_snap *a,
                      const struct top_snap *b, bool tty)
{
	double dt = b->t - a->t;
	struct top_row tot = {0};
	const double *le = NULL;
	int nb = 0;
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	if (dt <= 0)
		dt = interval;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("%s  %s  every %g s\n", mountpoint, when, interval);
	printf("%-3s %-9s %-22s %8s %9s %9s %8s %8s %7s %8s %10s %12s %9s\n", "CH", "TRANSPORT",
	       "REMOTE", "IOPS", "RD_MiB/s", "WR_MiB/s", "P50_ms", "P99_ms", "CREDITS", "INFLIGHT",
	       "RDMA_MiB/s", "INLINE_MiB/s", "FAILOVERS");
	for (int i = 0; i < b->nchannels; i++) {
		const struct top_chan *n = &b->ch[i], *o = &a->ch[i];
		struct top_row r = {0};
		char chs[12]; /* an int in decimal */
		if (!n->seen)
			continue;
		if (!o->seen || strcmp(o->remote, n->remote) != 0)
			o = &(const struct top_chan){0}; /* a new channel: from 0 */
		r.iops = pos_delta(n->requests, o->requests) / dt;
		r.rd = (pos_delta(n->received, o->received) +
		        pos_delta(n->rdma_write, o->rdma_write)) /
		       dt / MIB;
		r.wr = (pos_delta(n->sent, o->sent) + pos_delta(n->rdma_read, o->rdma_read)) / dt /
		       MIB;
		r.rdma = (pos_delta(n->rdma_read, o->rdma_read) +
		          pos_delta(n->rdma_write, o->rdma_write)) /
		         dt / MIB;
		r.inl =
		    (pos_delta(n->sent, o->sent) + pos_delta(n->received, o->received)) / dt / MIB;
		r.credits = n->credits;
		r.in_flight = n->in_flight;
		r.failovers = n->failovers;
		for (int k = 0; k < n->nbuckets; k++)
			r.dcum[k] =
			    pos_delta(n->cum[k], o->nbuckets == n->nbuckets ? o->cum[k] : 0);
		snprintf(chs, sizeof(chs), "%d", i);
		top_print_row(chs, n->transport,
		              n->state[0] && strcmp(n->state, "up") != 0 ? n->state : n->remote, &r,
		              n->le, n->nbuckets);
		tot.iops += r.iops;
		tot.rd += r.rd;
		tot.wr += r.wr;
		tot.rdma += r.rdma;
		tot.inl += r.inl;
		tot.credits += r.credits;
		tot.in_flight += r.in_flight;
		tot.failovers += r.failovers;
		if (!le || nb == n->nbuckets) {
			le = n->le;
			nb = n->nbuckets;
			for (int k = 0; k < nb; k++)
				tot.dcum[k] += r.dcum[k];
		}
	}
	top_print_row("ALL", "", "", &tot, le, nb);
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s,
	                      .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One snapshot for top; 0, or 1 after saying on stderr why the mount is
 * gone. */
static int top_snapshot(const char *mountpoint, const char *sock, unsigned maj, unsigned min,
                        struct top_snap *snap)
{
	char *reply = NULL;
	int rc;

	if (!is_smbrdma_dev(maj, min)) {
		fprintf(stderr, PROG ": %s: the mount is gone\n", mountpoint);
		return 1;
	}
	rc = ask(sock, "stats prometheus\n", &reply);
	if (rc < 0) {
		fprintf(stderr, PROG ": %s: the mount is gone: cannot reach its daemon: %s (%s)\n",
		        mountpoint, rc == -ENOENT ? "it has no control socket" : strerror(-rc),
		        sock);
		return 1;
	}
	if (strncmp(reply, "error: ", 7) == 0) {
		fprintf(stderr, PROG ": the daemon of %s answered: %s", mountpoint, reply + 7);
		free(reply);
		return 1;
	}
	snap->t = mono_now();
	top_parse(reply, snap);
	free(reply);
	return 0;
}

static int top(const char *mountpoint, const char *sock, unsigned maj, unsigned min,
               double interval, unsigned long count)
{
	static struct top_snap snaps[2]; /* ~70 KiB each */
	bool tty = isatty(STDOUT_FILENO);
	int cur = 0;

	if (top_snapshot(mountpoint, sock, maj, min, &snaps[cur]))
		return 1;
	for (unsigned long n = 0; count == 0 || n < count; n++) {
		sleep_s(interval);
		if (top_snapshot(mountpoint, sock, maj, min, &snaps[!cur]))
			return 1;
		top_frame(mountpoint, interval, &snaps[cur], &snaps[!cur], tty);
		if (ferror(stdout))
			return 1;
		cur = !cur;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"prometheus", no_argument, NULL, 'p'},
	    {"interval", required_argument, NULL, 'i'},
	    {"count", required_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], request[64];
	const char *cmd, *mountpoint;
	bool json = false, prometheus = false, top_opts = false;
	double interval = 1;
	unsigned long count = 0;
	struct stat st;
	char *reply = NULL, *end;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "jpi:n:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'p':
			prometheus = true;
			break;
		case 'i':
			errno = 0;
			interval = strtod(optarg, &end);
			if (errno || end == optarg || *end ||
			    !(interval >= 0.05 && interval <= 3600)) {
				fprintf(stderr,
				        PROG ": --interval wants seconds from 0.05 to 3600\n");
				return 2;
			}
			top_opts = true;
			break;
		case 'n':
			errno = 0;
			count = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || count == 0) {
				fprintf(stderr,
				        PROG ": --count wants a number of refreshes, 1 or more\n");
				return 2;
			}
			top_opts = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " " SMBRDMA_VERSION "\n");
			return 0;
		default:
			if (optopt && strchr("in", optopt))
				fprintf(stderr, PROG ": option '%s' wants a value\n",
				        argv[optind - 1]);
			else
				fprintf(stderr, PROG ": unknown option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	mountpoint = argv[optind + 1];
	if (strcmp(cmd, "stats") != 0 && strcmp(cmd, "channels") != 0 &&
	    strcmp(cmd, "debug") != 0 && strcmp(cmd, "reconnect") != 0 && strcmp(cmd, "dfs") != 0 &&
	    strcmp(cmd, "top") != 0) {
		fprintf(stderr, PROG ": unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	bool is_top = strcmp(cmd, "top") == 0;
	if ((prometheus && strcmp(cmd, "stats") != 0) || (prometheus && json) ||
	    (top_opts && !is_top) || (is_top && json)) {
		fprintf(stderr, PROG ": %s does not go with %s\n",
		        prometheus && json ? "--prometheus" : cmd,
		        prometheus ? (json ? "--json" : "--prometheus")
		        : top_opts ? "--interval or --count"
		                   : "--json");
		usage(stderr);
		return 2;
	}
	unsigned maj, min;
	if (!mount_dev_of(mountpoint, &maj, &min)) {
		/* Not a mount point as written (a path inside one, a symlink):
		 * ask the file system. */
		if (stat(mountpoint, &st) < 0) {
			fprintf(stderr, PROG ": %s: %s\n", mountpoint, strerror(errno));
			return 1;
		}
		maj = major(st.st_dev);
		min = minor(st.st_dev);
	}
	if (!is_smbrdma_dev(maj, min)) {
		fprintf(stderr, PROG ": %s is not an smbrdma mount\n", mountpoint);
		return 1;
	}
	snprintf(path, sizeof(path), CTL_DIR "/%u:%u.sock", maj, min);
	if (is_top)
		return top(mountpoint, path, maj, min, interval, count);
	snprintf(request, sizeof(request), "%s %s\n", cmd,
	         prometheus ? "prometheus"
	         : json     ? "json"
	                    : "text");
	rc = ask(path, request, &reply);
	if (rc < 0) {
		fprintf(stderr, PROG ": cannot reach the daemon of %s: %s (%s)\n", mountpoint,
		        rc == -ENOENT ? "it has no control socket" : strerror(-rc), path);
		return 1;
	}
	if (strncmp(reply, "error: ", 7) == 0) {
		fprintf(stderr, PROG ": the daemon of %s answered: %s", mountpoint, reply + 7);
		free(reply);
		return 1;
	}
	fputs(reply, stdout);
	free(reply);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
