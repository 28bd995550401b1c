/* tools/smbrdmactl.c — ask a mount's daemon for its statistics, channels and
 * session state, through the control socket of fuse/ctl.h.
 *
 *   smbrdmactl stats|channels|debug|reconnect|dfs MOUNTPOINT [--json]
 *
 * The socket is found from the mount alone: stat(MOUNTPOINT).st_dev names
 * /run/smbrdma/MAJOR:MINOR.sock.  The daemon formats both the JSON and the
 * table, so this tool only checks, asks and prints.  Exit status: 0 done,
 * 1 failed (message on stderr), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
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
	             "  stats     per-channel counters and payload bytes copied\n"
	             "  channels  the channel table: transport, addresses, state, credits\n"
	             "  debug     dialect, signing, limits and per-channel state\n"
	             "  reconnect drop every channel; the session is built again\n"
	             "  dfs       the DFS links followed and their targets\n"
	             "  --json    print JSON instead of a table\n"
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], request[64];
	const char *cmd, *mountpoint;
	bool json = false;
	struct stat st;
	char *reply = NULL;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "jhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " " SMBRDMA_VERSION "\n");
			return 0;
		default:
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
	    strcmp(cmd, "debug") != 0 && strcmp(cmd, "reconnect") != 0 && strcmp(cmd, "dfs") != 0) {
		fprintf(stderr, PROG ": unknown command '%s'\n", cmd);
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
	snprintf(request, sizeof(request), "%s %s\n", cmd, json ? "json" : "text");
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
