/* fuse/main.c — mount.smbrdma: arguments, daemonizing, the FUSE session.
 *
 *   mount.smbrdma //HOST[:PORT]/SHARE MOUNTPOINT [-o OPTIONS] [-f] [-d] [-s] [-n] [-v]
 *
 * Start-up, in this order:
 *   1. parse arguments and options (errors go straight to stderr, exit 1),
 *      settle the credentials (credentials files, USER, PASSWD...), and ask
 *      for a password on the terminal if none came and one is needed; the
 *      secrets are scrubbed from argv and PASSWD from the environment here,
 *      before the fork, so the daemon never shows them in /proc;
 *   2. unless -f/-d: fork FIRST.  The engine's loop thread started by
 *      smb_client_connect() and libfuse's threads would not survive a fork,
 *      so the child does everything below and the parent only waits on a
 *      pipe for "ok" or an error message, prints "mount error: ..." and exits
 *      0 or 1;
 *   3. with SIGINT/SIGTERM/SIGHUP blocked (so that the engine's thread
 *      inherits a mask that leaves them to this thread), and before any
 *      thread starts: smb_privs_begin() (fuse/privs.h) forks the
 *      privileged monitor and becomes the daemon's user; then connect;
 *   4. fuse_session_new, the mount (by the monitor), answer INIT, raise
 *      the read-ahead, start the control socket, report "ok";
 *   5. serve /dev/fuse from the engine's loop thread (fuse_pump_*) while
 *      this thread waits for a signal or the unmount;
 *   6. smb_client_destroy() (pending requests fail and are answered while
 *      the session still exists), unmount (through the monitor once root
 *      is gone), destroy the session, let the monitor go.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "config.h"
#include "auth/auth.h" /* struct smb_auth_krb5_opts, for smb_privs_begin() */
#include "common/evloop.h"
#include "common/log.h"
#include "common/secret.h"
#include "fuse/ctl.h" /* smbrdmactl: control socket */
#include "fuse/options.h"
#include "fuse/privs.h"
#include "fuse/reqbuf.h"
#include "fuse/ring.h"
#include "fuse/smbfs.h"
#include "fuse/unc.h"

#define PROG "mount.smbrdma"

_Static_assert(REQBUF_MAX_WRITE == SMBFS_MAX_IO, "request buffers hold the largest WRITE");

struct mount_args {
	struct smb_unc unc;
	struct smb_mount_opts opts;
	char source[512];  /* //host/share as given, for messages and fsname */
	char optlog[1024]; /* the -o strings with their secrets as "***", for the log */
	char *mountpoint;  /* absolute */
	char **argv;       /* main()'s, for the monitor's title (privs.h) */
	int argc;
	bool foreground;
	bool fuse_debug;
	bool verbose;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: " PROG " //HOST[:PORT]/SHARE MOUNTPOINT [-o OPTIONS] [-f] [-d] [-s] [-v]\n"
	    "  -o OPTIONS  comma-separated: username=, password=, domain=, credentials=,\n"
	    "              sec=, keytab=, guest, sign, seal, port=, ip=, vers=, uid=, gid=,\n"
	    "              file_mode=, dir_mode=, noperm, ro, rw, actimeo=, cache=,\n"
	    "              rsize=, wsize=, rasize=, soft, hard, timeout=, echo_interval=, rdma,\n"
	    "              rdma_threshold=, rdma_channels=, multichannel, max_channels=,\n"
	    "              interfaces=, nolease, nodfs, witness, nohandlecache, max_cached_dirs=,\n"
	    "              daemon_user=, nosubtype, debug\n"
	    "  -f          stay in the foreground, log to stderr\n"
	    "  -d          foreground with FUSE and engine debug output\n"
	    "  -s          sloppy: ignore unknown options\n"
	    "  -v          verbose\n"
	    "  -n          accepted for mount(8), ignored\n"
	    "See mount.smbrdma(8).\n");
}

/* ---- reporting to the waiting parent ----------------------------------------- */

static int report_fd = -1; /* write end of the pipe; -1 in the foreground */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (report_fd < 0) {
		if (strcmp(msg, "ok") != 0)
			fprintf(stderr, "mount error: %s\n", msg);
		return;
	}
	if (strcmp(msg, "ok") != 0)
		smb_err("%s", msg);
	size_t len = strlen(msg), off = 0;
	while (off < len) {
		ssize_t n = write(report_fd, msg + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(report_fd);
	report_fd = -1;
}

/* Parent side: wait for the child's verdict. */
static int wait_for_child(pid_t pid, int fd)
{
	char msg[1024];
	size_t len = 0;
	int status;

	for (;;) {
		ssize_t n = read(fd, msg + len, sizeof(msg) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(msg) - 1)
			break;
	}
	msg[len] = '\0';
	close(fd);
	if (strcmp(msg, "ok") == 0)
		return 0;
	if (len == 0) {
		if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status))
			fprintf(stderr, "mount error: " PROG " daemon was killed by signal %d\n",
			        WTERMSIG(status));
		else
			fprintf(stderr,
			        "mount error: " PROG " daemon exited before mounting (see the "
			        "system log)\n");
		return 1;
	}
	fprintf(stderr, "mount error: %s\n", msg);
	/* Let the child finish its teardown, so that no daemon outlives the
	 * failed command; do not wait forever on one that hangs. */
	for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(50 * 1000);
	return 1;
}

/* ---- libfuse log lines into ours ------------------------------------------- */

static char last_fuse_error[256];

static void fuse_log_to_smb(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	if (level <= FUSE_LOG_ERR)
		snprintf(last_fuse_error, sizeof(last_fuse_error), "%s", line);
	smb_log((int)level, "%s", line);
}

/* ---- asking for the password ----------------------------------------------------
 *
 * As getpass(3) did (it is obsolete): on /dev/tty, echo off, one line.  A
 * signal that ends us while echo is off puts the terminal back first.
 */

static int prompt_fd = -1;
static struct termios prompt_saved;

static void prompt_signal(int sig)
{
	tcsetattr(prompt_fd, TCSANOW, &prompt_saved);
	if (write(prompt_fd, "\n", 1) < 0) {
		/* nothing to do: we are on the way out */
	}
	signal(sig, SIG_DFL);
	raise(sig); /* delivered when this handler returns */
}

/* Returns 0 with the line (without its newline) in buf, or -errno: -ENXIO
 * without a controlling terminal, -EMSGSIZE for a line that does not fit. */
static int prompt_password(const char *prompt, char *buf, size_t cap)
{
	static const int fatal[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
	struct sigaction sa = {.sa_handler = prompt_signal}, old[4], old_tstp;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	struct termios quiet;
	size_t n = 0;
	bool too_long = false;
	int rc = 0;

	prompt_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (prompt_fd < 0)
		return -errno;
	if (tcgetattr(prompt_fd, &prompt_saved) < 0) {
		rc = -errno;
		close(prompt_fd);
		prompt_fd = -1;
		return rc;
	}
	sigemptyset(&sa.sa_mask);
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, &old[i]);
	/* stopped with echo off, the shell would be left without echo */
	sigaction(SIGTSTP, &ign, &old_tstp);
	quiet = prompt_saved;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
	tcsetattr(prompt_fd, TCSAFLUSH, &quiet);
	if (write(prompt_fd, prompt, strlen(prompt)) < 0)
		rc = -errno;
	while (rc == 0) {
		char c;
		ssize_t r = read(prompt_fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = -errno;
		if (r <= 0 || c == '\n')
			break;
		if (n + 1 < cap)
			buf[n++] = c;
		else
			too_long = true;
	}
	buf[n] = '\0';
	tcsetattr(prompt_fd, TCSAFLUSH, &prompt_saved);
	if (write(prompt_fd, "\n", 1) < 0) {
		/* the line was read; a lost newline does not matter */
	}
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &old[i], NULL);
	sigaction(SIGTSTP, &old_tstp, NULL);
	close(prompt_fd);
	prompt_fd = -1;
	if (rc == 0 && too_long)
		rc = -EMSGSIZE;
	if (rc < 0)
		explicit_bzero(buf, cap);
	return rc;
}

/* No password came from anywhere: ask, if stdin is a terminal (as
 * mount.cifs; without one, e.g. from a script or CI, go on without). */
static int ask_password(struct mount_args *a, const char *source)
{
	char prompt[1024], buf[SMB_PASSWORD_MAX + 1];
	int rc;

	if (!smb_mount_opts_need_password(&a->opts) || !isatty(STDIN_FILENO))
		return 0;
	snprintf(prompt, sizeof(prompt), "Password for %s@%s: ", a->opts.user, source);
	rc = prompt_password(prompt, buf, sizeof(buf));
	if (rc == -ENXIO)
		return 0; /* stdin is a terminal, but not ours: as without one */
	if (rc < 0) {
		if (rc == -EMSGSIZE)
			fprintf(stderr, "mount error: the password is longer than %d bytes\n",
			        SMB_PASSWORD_MAX);
		else
			fprintf(stderr, "mount error: reading the password: %s\n", strerror(-rc));
		return -1;
	}
	a->opts.password = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	if (!a->opts.password) {
		fprintf(stderr, "mount error: keeping the password read from the terminal: %s\n",
		        strerror(ENOMEM));
		return -1;
	}
	a->opts.password_from = "the terminal";
	return 0;
}

/* ---- arguments --------------------------------------------------------------- */

static int parse_args(int argc, char **argv, struct mount_args *a)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	char err[512];
	char *optstrs[32];
	size_t nopt = 0;
	bool sloppy = false;
	char resolved[PATH_MAX];
	struct stat st;
	int c, rc;

	smb_mount_opts_init(&a->opts, getuid(), getgid());
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:fdsnvt:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (nopt == sizeof(optstrs) / sizeof(optstrs[0])) {
				fprintf(stderr, "mount error: too many -o arguments\n");
				return -1;
			}
			optstrs[nopt++] = optarg;
			break;
		case 'f':
			a->foreground = true;
			break;
		case 'd':
			a->foreground = true;
			a->fuse_debug = true;
			break;
		case 's':
			sloppy = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'n': /* no mtab: there is none to write */
		case 't': /* mount(8) may name the type */
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PROG " " SMBRDMA_VERSION "\n");
			exit(0);
		default:
			fprintf(stderr, "mount error: unknown flag '%s'\n", argv[optind - 1]);
			usage(stderr);
			return -1;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return -1;
	}
	for (size_t i = 0; i < nopt; i++) {
		size_t used = strlen(a->optlog);

		if (used + 2 < sizeof(a->optlog)) {
			if (used)
				a->optlog[used++] = ',';
			smb_mount_opts_redact(optstrs[i], a->optlog + used,
			                      sizeof(a->optlog) - used);
		}
		err[0] = '\0';
		rc = smb_mount_opts_parse(&a->opts, optstrs[i], sloppy, err, sizeof(err));
		/* keep the secrets out of ps(1) and /proc/PID/cmdline, which the
		 * forked daemon inherits; also when parsing failed */
		smb_mount_opts_scrub(optstrs[i]);
		if (rc < 0) {
			if (err[0])
				fprintf(stderr, "mount error: %s\n", err);
			else
				fprintf(stderr, "mount error: mount options: %s\n", strerror(-rc));
			return -1;
		}
	}
	err[0] = '\0';
	rc = smb_mount_opts_finish(&a->opts, err, sizeof(err));
	if (rc < 0) {
		if (err[0])
			fprintf(stderr, "mount error: %s\n", err);
		else
			fprintf(stderr, "mount error: settling the credentials: %s\n",
			        strerror(-rc));
		return -1;
	}
	/* -f: the log is stderr already (run() says it there) */
	if (a->opts.warning[0] && !a->foreground)
		fprintf(stderr, PROG ": warning: %s\n", a->opts.warning);
#if !HAVE_KRB5
	if (a->opts.sec == SMB_MOUNT_SEC_KRB5) {
		fprintf(stderr, "mount error: sec=krb5: this " PROG " was built without Kerberos "
		                "(krb5-gssapi)\n");
		return -1;
	}
#endif
	rc = smb_unc_parse(argv[optind], &a->unc, err, sizeof(err));
	if (rc < 0) {
		if (rc == -ENOMEM)
			fprintf(stderr, "mount error: source %s: %s\n", argv[optind],
			        strerror(ENOMEM));
		else
			fprintf(stderr, "mount error: %s\n", err);
		return -1;
	}
	snprintf(a->source, sizeof(a->source), "//%s%s%s/%s%s%s",
	         strchr(a->unc.host, ':') ? "[" : "", a->unc.host,
	         strchr(a->unc.host, ':') ? "]" : "", a->unc.share, a->unc.prefix[0] ? "/" : "",
	         a->unc.prefix);
	if (!realpath(argv[optind + 1], resolved) || stat(resolved, &st) < 0) {
		fprintf(stderr, "mount error: mount point %s: %s\n", argv[optind + 1],
		        strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "mount error: mount point %s is not a directory\n",
		        argv[optind + 1]);
		return -1;
	}
	a->mountpoint = strdup(resolved);
	if (!a->mountpoint)
		return -1;
	return ask_password(a, argv[optind]);
}

/* "a,b\c" -> "a\,b\\c": a value inside libfuse's -o list. */
static void opt_escape(char *out, size_t cap, const char *in)
{
	size_t n = 0;

	for (; *in && n + 2 < cap; in++) {
		if (*in == ',' || *in == '\\')
			out[n++] = '\\';
		out[n++] = *in;
	}
	out[n] = '\0';
}

/* rasize= in KiB, or the default (fuse/options.h). */
static unsigned readahead_kb(const struct smb_mount_opts *o)
{
	return (o->rasize ? o->rasize : SMB_RASIZE_DEFAULT) / 1024;
}

/* The bdi of our mount, "/sys/class/bdi/MAJ:MIN/read_ahead_kb", found
 * through /proc/self/mountinfo (no FUSE request involved).  "" if not found. */
static void find_readahead_knob(const char *mountpoint, char *out, size_t cap)
{
	char dev[32];

	out[0] = '\0';
	if (smb_mount_dev(mountpoint, dev, sizeof(dev)) == 0)
		snprintf(out, cap, "/sys/class/bdi/%s/read_ahead_kb", dev);
}

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* ---- serving /dev/fuse from the client's event loop ---------------------------
 *
 * Requests are read and handled on the same thread that receives the SMB
 * replies and answers the kernel, so a request and its reply never hop
 * between threads: on these machines a thread wake-up costs more than the
 * work itself (measured: libfuse's worker pool spent half the daemon's time
 * switching).  Handlers never block (they submit and return), so one thread
 * serves both directions.  The main thread only waits for a signal or for
 * the pump to see the unmount.
 */
struct fuse_pump {
	struct fuse_session *se;
	struct reqbuf_pool *bufs; /* requests are read into these (reqbuf.h) */
	int fd;
	struct ev_fd *evf;
	bool done; /* atomic: the session ended (unmounted or failed) */
};

/* sizeof(struct fuse_in_header) of the kernel ABI. */
#define FUSE_IN_HEADER_SIZE 40
/* Requests larger than this end a pump pass (see fuse_pump_readable). */
#define PUMP_YIELD_BYTES (64u * 1024u)

static void fuse_pump_readable(struct ev_fd *f, uint32_t events, void *arg)
{
	struct fuse_pump *p = arg;

	/* We read /dev/fuse ourselves rather than through
	 * fuse_session_receive_buf(), so each request lands in a buffer we
	 * chose: one the engine registered, that a write can borrow.  Bounded,
	 * so SMB replies are not starved by a stream of requests. */
	for (int i = 0; i < 64; i++) {
		uint8_t *mem = reqbuf_current(p->bufs);
		ssize_t res = read(p->fd, mem, REQBUF_SIZE);
		int err = res < 0 ? errno : 0;
		if (err == EAGAIN)
			return;
		if (err == EINTR || err == ENOENT) /* ENOENT: the request was aborted */
			continue;
		if (res >= 0 && res < FUSE_IN_HEADER_SIZE && res != 0) {
			smb_err("reading /dev/fuse: short read of %zd bytes", res);
			err = EIO;
		}
		if (err || res == 0 || fuse_session_exited(p->se)) {
			/* ENODEV: unmounted.  Anything else ends the session too. */
			if (err && err != ENODEV)
				smb_err("reading /dev/fuse: %s", strerror(err));
			ev_fd_del(f);
			p->evf = NULL;
			__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
			return;
		}
		struct fuse_buf fb = {.size = (size_t)res, .mem = mem};
		fuse_session_process_buf(p->se, &fb);
		reqbuf_advance(p->bufs);
		if (fuse_session_exited(p->se)) {
			ev_fd_del(f);
			p->evf = NULL;
			__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
			return;
		}
		/* A request that carried a payload (a WRITE) has queued its SMB
		 * request with the transport, which sends from the loop's call
		 * queue, run after this callback returns.  Return now, so it
		 * goes out before the next request is read: reading one copies
		 * up to 1 MiB, and with several WRITEs pending the server would
		 * otherwise wait for all of those copies before it saw the
		 * first request.  The fd stays readable (level-triggered), so
		 * the loop comes straight back. */
		if ((size_t)res > PUMP_YIELD_BYTES)
			return;
	}
}

static int fuse_pump_start(struct fuse_pump *p, struct fuse_session *se, struct reqbuf_pool *bufs,
                           struct ev_loop *loop)
{
	int fd = fuse_session_fd(se);
	int fl = fcntl(fd, F_GETFL);

	p->se = se;
	p->bufs = bufs;
	p->fd = fd;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return ev_fd_add(loop, fd, EPOLLIN, fuse_pump_readable, p, &p->evf);
}

/* Loop thread: stop watching /dev/fuse (if the pump has not already). */
static void fuse_pump_stop_cb(void *arg)
{
	struct fuse_pump *p = arg;
	if (p->evf) {
		ev_fd_del(p->evf);
		p->evf = NULL;
	}
}

/* Loop thread, at unmount (ev_call_wait()). */
static void quiesce_cb(void *arg)
{
	smbfs_quiesce(arg);
}

/* Wait for a blocked signal (returned) or the end of the session (0). */
static int fuse_pump_wait(struct fuse_pump *p, const sigset_t *sigs)
{
	for (;;) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		int sig = sigtimedwait(sigs, NULL, &ts);
		if (sig > 0)
			return sig;
		if (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
			return 0;
	}
}

/* The kernel's INIT, read and answered here before the pump starts: the
 * reply settles the bdi's read-ahead, which smbfs_post_init() then raises
 * through sysfs while the daemon may still write there. */
static int serve_init(struct fuse_session *se, struct smbfs *fs)
{
	uint8_t *mem = reqbuf_current(fs->reqbufs);
	ssize_t res;

	do
		res = read(fuse_session_fd(se), mem, REQBUF_SIZE);
	while (res < 0 && errno == EINTR);
	if (res < 0)
		return -errno;
	if (res < FUSE_IN_HEADER_SIZE)
		return -EIO;
	struct fuse_buf fb = {.size = (size_t)res, .mem = mem};
	fuse_ring_init_request(fs->ring, mem, (size_t)res);
	fuse_session_process_buf(se, &fb);
	reqbuf_advance(fs->reqbufs);
	if (fuse_session_exited(se))
		return -EPROTO;
	smbfs_post_init(fs);
	return 0;
}

/* ---- privileges (fuse/privs.h) ------------------------------------------------ */

/* The most SMB Direct channels the mount may hold at once (RLIMIT_MEMLOCK
 * is sized by it): multichannel may bind RDMA interfaces even without
 * `rdma`. */
static unsigned rdma_channels_max(const struct smb_client_opts *o)
{
	if (o->multichannel)
		return o->max_channels ? o->max_channels : 2;
	if (o->rdma)
		return smb_rdma_channels(o);
	return 0;
}

/* In the monitor: it never needs the password. */
static void forget_password(void *arg)
{
	struct mount_args *a = arg;

	if (a->opts.password)
		smb_wipe(a->opts.password, strlen(a->opts.password));
}

/* What the monitor mounts, fixed before it is forked. */
struct mount_req {
	char *mntopts; /* libfuse's -o, as the daemon's own session gets it */
	const char *mountpoint;
};

/* In the monitor (privs.h), on the daemon's request: libfuse mounts as
 * root, as it would in the daemon; the daemon gets the descriptor and
 * hands libfuse "/dev/fd/N". */
static int mount_in_monitor(void *arg, char *err, size_t errlen)
{
	static const struct fuse_lowlevel_ops no_ops;
	struct mount_req *m = arg;
	char *fargv[] = {PROG, "-o", m->mntopts, NULL};
	struct fuse_args fargs = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se;
	int fd;

	last_fuse_error[0] = '\0';
	se = fuse_session_new(&fargs, &no_ops, sizeof(no_ops), NULL);
	fuse_opt_free_args(&fargs);
	if (!se) {
		snprintf(err, errlen, "FUSE session: %s",
		         last_fuse_error[0] ? last_fuse_error : "failed");
		return -EINVAL;
	}
	if (fuse_session_mount(se, m->mountpoint) < 0) {
		snprintf(err, errlen, "%s",
		         last_fuse_error[0] ? last_fuse_error : "FUSE mount failed");
		fuse_session_destroy(se);
		return -EIO;
	}
	fd = fcntl(fuse_session_fd(se), F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		snprintf(err, errlen, "dup of /dev/fuse: %s", strerror(errno));
	fd = fd < 0 ? -errno : fd;
	/* Closes its descriptor and leaves the mount: ours now has the only
	 * other one, and the monitor unmounts when asked. */
	fuse_session_destroy(se);
	return fd;
}

/* Mount: through the monitor when there is one, else here (as root, or
 * through fusermount3).  0, or -1 with the error reported. */
static int mount_fs(struct fuse_session *se, struct smb_privs *privs, const struct mount_args *a)
{
	char err[512] = "", devfd[32];
	int fd = smb_privs_mount(privs, err, sizeof(err));

	last_fuse_error[0] = '\0';
	if (fd == -ENOTCONN && !smb_privs_dropped(privs)) {
		if (fuse_session_mount(se, a->mountpoint) == 0)
			return 0;
		snprintf(err, sizeof(err), "%s",
		         last_fuse_error[0] ? last_fuse_error : "FUSE mount failed");
	} else if (fd >= 0) {
		snprintf(devfd, sizeof(devfd), "/dev/fd/%d", fd);
		if (fuse_session_mount(se, devfd) == 0)
			return 0;
		close(fd);
		smb_privs_unmount(privs);
		snprintf(err, sizeof(err), "%s",
		         last_fuse_error[0] ? last_fuse_error : "FUSE mount failed");
	}
	report("could not mount %s on %s: %s", a->source, a->mountpoint, err);
	return -1;
}

/* ---- the mount itself -------------------------------------------------------- */

/* Say once whether ownership and modes come from the server (SMB3 POSIX
 * extensions) or from uid=/gid=/file_mode=/dir_mode=. */
static void log_posix(struct smbfs *fs, const struct mount_args *a)
{
	struct smb_client_info info;
	smb_client_get_info(fs->client, &info);
	fs->posix = info.posix;
	if (info.posix)
		smb_log(LOG_NOTICE,
		        "%s: SMB3 POSIX extensions in use: modes, owners, link counts and inode "
		        "numbers from the server",
		        a->source);
	else
		smb_log(
		    LOG_NOTICE,
		    "%s: %s: owner uid=%u gid=%u, file_mode=%04o dir_mode=%04o for every file",
		    a->source,
		    a->opts.noposix ? "noposix"
		    : info.posix_share_off
		        ? "posix: the server offers the SMB3 POSIX extensions, but not on this "
		          "share (Samba: smb3 unix extensions = no for it)"
		        : "posix: the server lacks the SMB3 POSIX extensions (SMB 3.1.1 with the "
		          "POSIX negotiate context; Samba: smb3 unix extensions = yes in [global])",
		    (unsigned)a->opts.uid, (unsigned)a->opts.gid, (unsigned)a->opts.file_mode,
		    (unsigned)a->opts.dir_mode);
}

/* The engine's options from the mount's (strings are borrowed from a). */
static void client_opts_from(const struct mount_args *a, struct smb_client_opts *copts)
{
	copts->host = a->unc.host;
	copts->addr = a->opts.ip;
	copts->port = a->opts.port ? a->opts.port : a->unc.port;
	copts->share = a->unc.share;
	copts->user = a->opts.user;
	copts->password = a->opts.password;
	copts->domain = a->opts.domain;
	copts->min_dialect = a->opts.min_dialect;
	copts->max_dialect = a->opts.max_dialect;
	copts->guest = a->opts.guest || a->opts.sec == SMB_MOUNT_SEC_NONE;
	copts->require_signing = smb_mount_opts_signing(&a->opts);
	copts->require_encryption = a->opts.seal;
	copts->sec = a->opts.sec == SMB_MOUNT_SEC_KRB5 ? SMB_SEC_KRB5 : SMB_SEC_NTLMSSP;
	copts->keytab = a->opts.keytab;
	copts->rdma = a->opts.rdma;
	copts->transport = a->opts.transport;
	copts->quic_port = a->opts.quic_port;
	copts->cafile = a->opts.cafile;
	copts->certfile = a->opts.certfile;
	copts->keyfile = a->opts.keyfile;
	copts->rdma_threshold = a->opts.rdma_threshold;
	copts->echo_ms = a->opts.echo_interval * 1000;
	copts->timeout_ms = a->opts.timeout * 1000;
	copts->hard = a->opts.hard;
	copts->max_read = a->opts.rsize;
	copts->max_write = a->opts.wsize;
	copts->multichannel = a->opts.multichannel;
	copts->max_channels = a->opts.max_channels;
	copts->rdma_channels = a->opts.rdma_channels;
	copts->no_lease = a->opts.nolease;
	copts->nodfs = a->opts.nodfs;
	copts->witness = a->opts.witness;
	copts->mc_interfaces = a->opts.interfaces;
	copts->posix = !a->opts.noposix;
}

/* Where and how we connect, and the options, in the log. */
static void log_connect(const struct mount_args *a, const struct smb_client_opts *copts)
{
	/* The port of the transport that will be tried: UDP for QUIC. */
	bool quic_only = copts->transport && strcmp(copts->transport, "quic") == 0;
	bool quic_too = copts->transport && strcmp(copts->transport, "auto") == 0;
	char ports[64];
	if (quic_only)
		snprintf(ports, sizeof(ports), "udp port %u (quic)",
		         copts->quic_port ? copts->quic_port : 443);
	else if (quic_too)
		snprintf(ports, sizeof(ports), "port %u or udp port %u (quic)",
		         copts->port ? copts->port : 445,
		         copts->quic_port ? copts->quic_port : 443);
	else
		snprintf(ports, sizeof(ports), "port %u", copts->port ? copts->port : 445);
	smb_info("connecting to %s %s as '%s'%s%s, dialects 0x%04x-0x%04x", a->source, ports,
	         copts->user ? copts->user : "", copts->domain ? " domain " : "",
	         copts->domain ? copts->domain : "",
	         copts->min_dialect ? copts->min_dialect : SMB_CLIENT_MIN_DIALECT,
	         copts->max_dialect ? copts->max_dialect : SMB2_DIALECT_0311);
	smb_debug("mount options: %s", a->optlog[0] ? a->optlog : "(none)");
	if (a->opts.warning[0])
		smb_warn("%s", a->opts.warning);
	smb_debug("%s: cache=%s, %s, %s, rsize %u, wsize %u (0: as negotiated)%s%s", a->source,
	          smb_mount_cache_str(a->opts.cache), a->opts.hard ? "hard" : "soft",
	          a->opts.noperm ? "noperm" : "perm", a->opts.rsize, a->opts.wsize,
	          a->opts.ip ? ", connecting to " : "", a->opts.ip ? a->opts.ip : "");
	smb_debug("%s: sec=%s%s%s%s%s, password from %s", a->source, smb_mount_sec_str(a->opts.sec),
	          copts->require_signing ? ", signing required" : "",
	          copts->require_encryption ? ", encryption required" : "",
	          copts->keytab ? ", keytab " : "", copts->keytab ? copts->keytab : "",
	          a->opts.sec == SMB_MOUNT_SEC_KRB5 ? "nowhere (Kerberos needs none)"
	          : a->opts.password_from           ? a->opts.password_from
	                                            : "nowhere (empty)");
}

/* Register memory the kernel's payloads arrive in with the engine (an
 * RDMA mount's server then reads and writes it directly); without it, such
 * I/O is copied once through the engine's buffers. */
static void add_region(struct smbfs *fs, const struct mount_args *a, void *mem, size_t len,
                       const char *what)
{
	int err = smb_client_region_add(fs->client, mem, len);
	if (err)
		smb_info("%s: %s not registered (%s): offloaded I/O through them is copied once "
		         "into the engine's buffers",
		         a->source, what, strerror(-err));
}

/* The daemon's side of the mount once the session is up: the inode table,
 * the request buffers, the ownership policy and the cache settings.  0, or
 * -1 after reporting why. */
static int fs_setup(struct smbfs *fs, const struct mount_args *a,
                    const struct smb_client_opts *copts)
{
	/* cache=none: attributes are never kept, here nor in the kernel. */
	unsigned actimeo = a->opts.cache == SMB_MOUNT_CACHE_NONE ? 0 : a->opts.actimeo;
	fs->inodes = smb_inode_table_new(a->unc.prefix, (uint64_t)actimeo * 1000000000u);
	fs->negc = actimeo ? negc_new() : NULL; /* none: every LOOKUP asks */
	if (!fs->inodes) {
		report("could not mount %s: %s", a->source, strerror(ENOMEM));
		return -1;
	}
	/* Request buffers that writes borrow until their WRITE is answered
	 * (reqbuf.h): the payload leaves from the buffer the kernel wrote it
	 * into - inline on TCP, by the server's RDMA Read from the registered
	 * pool on an RDMA mount (32 buffers there: deep queues of offloaded
	 * writes; 16 on TCP). */
	fs->reqbufs = reqbuf_pool_new(copts->rdma ? 32 : 16);
	/* Write-behind (ops_file.c): up to 8 MiB (or 32 WRITEs) in flight
	 * with their write(2) answered - fewer than the request buffers, so
	 * those writes still leave from the buffer they arrived in. */
	fs->wb = wb_new(8u << 20, 32);
	if (!fs->reqbufs || !fs->wb) {
		report("could not mount %s: %s", a->source, strerror(ENOMEM));
		return -1;
	}
	if (copts->rdma) {
		size_t len;
		void *mem = reqbuf_pool_mem(fs->reqbufs, &len);
		add_region(fs, a, mem, len, "request buffers");
	}
	reqbuf_pool_set_lendable(fs->reqbufs, true);
	fs->policy.uid = a->opts.uid;
	fs->policy.gid = a->opts.gid;
	fs->policy.file_mode = a->opts.file_mode;
	fs->policy.dir_mode = a->opts.dir_mode;
	fs->policy.force_uid = a->opts.forceuid;
	fs->policy.force_gid = a->opts.forcegid;
	log_posix(fs, a);
	fs->timeout = (double)actimeo;
	fs->ro = a->opts.ro;
	fs->direct_io = a->opts.cache == SMB_MOUNT_CACHE_NONE;
	fs->keep_cache = a->opts.cache == SMB_MOUNT_CACHE_LOOSE;
	fs->write_behind = !fs->direct_io;
	/* closes in batches are handles kept a few ms (handlecache) */
	fs->batch_closes = !fs->direct_io && !a->opts.nohandlecache;
	fs->max_cached_dirs =
	    fs->direct_io || a->opts.nohandlecache || a->opts.nolease ? 0 : a->opts.cached_dirs;
	fs->mfsymlinks = a->opts.mfsymlinks;
	fs->nobrl = a->opts.nobrl;
	snprintf(fs->source, sizeof(fs->source), "%s", a->source);
	return 0;
}

/* smbrdmactl: the control socket, started before the first FUSE request
 * is served; without it the mount still works (NULL, and a warning).
 * /run/smbrdma is root's: the monitor makes the socket file when there is
 * one. */
static struct smb_ctl *start_ctl(struct smbfs *fs, struct smb_privs *privs,
                                 const struct mount_args *a, const struct smb_client_opts *copts)
{
	struct smb_ctl *ctl = NULL;
	char errbuf[512] = "";
	int rc;
	struct smb_ctl_mount ctl_mount = {a->unc.host,      copts->port,  copts->transport,
	                                  copts->quic_port, a->unc.share, a->mountpoint,
	                                  fs->ring,         fs->ring_why};
	int lfd = smb_privs_ctl_socket(privs, errbuf, sizeof(errbuf));
	if (lfd >= 0)
		rc = smb_ctl_start_on(fs->client, &ctl_mount, lfd, &ctl, errbuf, sizeof(errbuf));
	else if (lfd == -ENOTCONN && !smb_privs_dropped(privs))
		rc = smb_ctl_start(fs->client, &ctl_mount, &ctl, errbuf, sizeof(errbuf));
	else
		rc = lfd;
	if (rc < 0)
		smb_warn("%s: no control socket for smbrdmactl: %s", a->source, errbuf);
	return rc < 0 ? NULL : ctl;
}

/* The kernel's side of the mount: FUSE's mount options (mntopts), and the
 * request sizes it may send. */
static void fuse_mount_opts(struct smbfs *fs, const struct mount_args *a, char *mntopts, size_t len)
{
	char fsname[1100];
	/* rsize=/wsize= bound the kernel's requests too, not only the
	 * engine's: an application's read(2) turns into READs of that size. */
	fs->max_read = a->opts.rsize && a->opts.rsize < SMBFS_MAX_IO ? a->opts.rsize : SMBFS_MAX_IO;
	fs->max_write =
	    a->opts.wsize && a->opts.wsize < SMBFS_MAX_IO ? a->opts.wsize : SMBFS_MAX_IO;
	opt_escape(fsname, sizeof(fsname), a->source);
	/* noperm: no default_permissions, so the kernel checks no mode bits
	 * and the server alone decides. */
	/* nosubtype: no subtype= at all, so /proc/mounts says "fuse" (libfuse
	 * adds none of its own when given fsname=). */
	snprintf(mntopts, len, "fsname=%s%s%s,max_read=%u%s%s%s%s", fsname,
	         a->opts.nosubtype ? "" : ",subtype=smbrdma",
	         a->opts.noperm ? "" : ",default_permissions", fs->max_read,
	         geteuid() == 0 ? ",allow_other" : "", a->opts.ro ? ",ro" : "",
	         a->opts.kernel_flags[0] ? "," : "", a->opts.kernel_flags);
}

/* ---- FUSE over io_uring (fuse/ring.h) ------------------------------------------ */

/* The session's I/O (fuse_session_custom_io()): replies go through the
 * ring's writev, which sends those of ring requests to the ring. */
static ssize_t session_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct smbfs *fs = userdata;
	return fuse_ring_writev(fs->ring, fd, iov, count);
}

static ssize_t session_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	return read(fd, buf, len);
}

/* Before INIT: the ring object, unless noio_uring, and libfuse's replies
 * routed through it.  0, or -1 after reporting why (io_uring was required
 * and this kernel cannot). */
static int ring_prepare(struct smbfs *fs, struct fuse_session *se, const struct mount_args *a)
{
	static const struct fuse_custom_io io = {.writev = session_writev, .read = session_read};
	char why[160];

	if (a->opts.noio_uring) {
		snprintf(fs->ring_why, sizeof(fs->ring_why), "noio_uring");
		return 0;
	}
	if (fuse_ring_kernel_may_offer(why, sizeof(why)) < 0) {
		if (a->opts.io_uring_required) {
			report("could not mount %s: io_uring: %s", a->source, why);
			return -1;
		}
		snprintf(fs->ring_why, sizeof(fs->ring_why), "%s", why);
		return 0;
	}
	fs->ring = fuse_ring_new(a->opts.uring_depth);
	if (!fs->ring || fuse_session_custom_io(se, &io, fuse_session_fd(se)) < 0) {
		report("could not mount %s: io_uring: %s", a->source, strerror(ENOMEM));
		return -1;
	}
	return 0;
}

/* After INIT: start the ring if the kernel took it.  0, or -1 after
 * reporting why (io_uring was required). */
static int ring_start(struct smbfs *fs, struct fuse_session *se, const struct mount_args *a)
{
	char err[160] = "";
	int rc = -EOPNOTSUPP;

	if (fs->ring)
		rc = fuse_ring_start(fs->ring, se, fuse_session_fd(se), smb_client_loop(fs->client),
		                     err, sizeof(err));
	if (rc == 0) {
		struct fuse_ring_info ri;
		fuse_ring_info(fs->ring, &ri);
		fs->ring_why[0] = '\0';
		if (a->opts.rdma) {
			/* reads land in, and writes leave from, the ring entries:
			 * on RDMA the server moves them there directly */
			size_t len;
			void *mem = fuse_ring_mem(fs->ring, &len);
			add_region(fs, a, mem, len, "FUSE ring buffers");
		}
		smb_log(LOG_NOTICE,
		        "%s: FUSE requests through io_uring (%u queue%s of %u entr%s, %zu KiB "
		        "each)",
		        a->source, ri.queues, ri.queues == 1 ? "" : "s", ri.depth,
		        ri.depth == 1 ? "y" : "ies", ri.payload / 1024);
		return 0;
	}
	if (fs->ring)
		snprintf(fs->ring_why, sizeof(fs->ring_why), "%s", err);
	if (a->opts.io_uring_required) {
		report("could not mount %s on %s: io_uring: %s", a->source, a->mountpoint,
		       fs->ring_why);
		return -1;
	}
	smb_log(LOG_NOTICE, "%s: FUSE requests through /dev/fuse (%s)", a->source, fs->ring_why);
	return 0;
}

/* Loop thread, at unmount. */
static void ring_stop_cb(void *arg)
{
	fuse_ring_stop(arg);
}

static int run(struct mount_args *a)
{
	struct smbfs fs = {0};
	struct smb_client_opts copts = {0};
	struct fuse_session *se = NULL;
	struct smb_ctl *ctl = NULL; /* smbrdmactl: control socket */
	struct smb_privs *privs = NULL;
	struct fuse_pump pump = {0};
	char errbuf[512] = "", mntopts[1600];
	sigset_t block, old;
	int rc, ret = 1;

	pthread_mutex_init(&fs.handles_lock, NULL);
	pthread_mutex_init(&fs.ack_lock, NULL);

	client_opts_from(a, &copts);
	log_connect(a, &copts);

	fuse_mount_opts(&fs, a, mntopts, sizeof(mntopts));

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);

	/* Root goes here, before any byte from the server (fuse/privs.h). */
	struct smb_auth_krb5_opts kopts = {a->unc.host, copts.user, copts.domain, copts.keytab};
	struct mount_req mreq = {mntopts, a->mountpoint};
	struct smb_privs_opts popts = {
	    .user = a->opts.daemon_user,
	    .mountpoint = a->mountpoint,
	    .rdma_channels = rdma_channels_max(&copts),
	    .krb5 = copts.sec == SMB_SEC_KRB5 ? &kopts : NULL,
	    .files = {&copts.cafile, &copts.certfile, &copts.keyfile},
	    .mount = mount_in_monitor,
	    .mount_arg = &mreq,
	    .readahead_kb = readahead_kb(&a->opts),
	    .foreground = a->foreground,
	    .argv = a->argv,
	    .argc = a->argc,
	    .forget = forget_password,
	    .forget_arg = a,
	};
	rc = smb_privs_begin(&popts, &privs, errbuf, sizeof(errbuf));
	if (rc < 0) {
		report("could not mount %s: %s", a->source, errbuf);
		goto out;
	}
	rc = smb_client_connect(&copts, &fs.client, errbuf, sizeof(errbuf));
	if (rc < 0) {
		report("could not mount %s: %s", a->source, errbuf[0] ? errbuf : strerror(-rc));
		goto out;
	}
	if (fs_setup(&fs, a, &copts) < 0)
		goto out;

	char *fargv[] = {PROG, "-o", mntopts, a->fuse_debug ? "-d" : NULL, NULL};
	struct fuse_args fargs = FUSE_ARGS_INIT(a->fuse_debug ? 4 : 3, fargv);

	last_fuse_error[0] = '\0';
	se = fuse_session_new(&fargs, &smbfs_ops, sizeof(smbfs_ops), &fs);
	fuse_opt_free_args(&fargs);
	if (!se) {
		report("could not mount %s: FUSE session: %s", a->source,
		       last_fuse_error[0] ? last_fuse_error : "failed");
		goto out;
	}
	fs.se = se;
	smb_client_set_break_cb(fs.client, smbfs_on_break, &fs);
	smb_client_set_lease_break_cb(fs.client, smbfs_on_lease_break, &fs);
	smb_client_set_lock_lost_cb(fs.client, smbfs_on_lock_lost, &fs);
	if (fuse_set_signal_handlers(se) < 0) {
		report("could not mount %s: cannot install signal handlers", a->source);
		goto out;
	}
	if (mount_fs(se, privs, a) < 0) {
		fuse_remove_signal_handlers(se);
		goto out;
	}
	if (ring_prepare(&fs, se, a) < 0)
		goto unmount;
	/* Read-ahead is raised after INIT (smbfs_post_init() here as root,
	 * else the monitor). */
	if (geteuid() == 0) {
		find_readahead_knob(a->mountpoint, fs.readahead_knob, sizeof(fs.readahead_knob));
		fs.readahead_kb = readahead_kb(&a->opts);
	}
	rc = serve_init(se, &fs);
	if (rc < 0) {
		report("could not mount %s on %s: FUSE INIT: %s", a->source, a->mountpoint,
		       strerror(-rc));
		goto unmount;
	}
	if (ring_start(&fs, se, a) < 0)
		goto unmount;
	if ((rc = smb_privs_readahead(privs)) < 0 && rc != -ENOTCONN)
		smb_debug("%s: cannot raise the read-ahead: %s", a->source, strerror(-rc));
	ctl = start_ctl(&fs, privs, a, &copts);
	smb_log(LOG_NOTICE, "mounted %s on %s", a->source, a->mountpoint);
	report("ok");
	if (!a->foreground) {
		detach_stdio();
		setsid(); /* mounted: leave the mount helper's session (see main()) */
	}
	/* Signals stay blocked: fuse_pump_wait() takes them synchronously. */

	rc = fuse_pump_start(&pump, se, fs.reqbufs, smb_client_loop(fs.client));
	if (rc == 0)
		rc = fuse_pump_wait(&pump, &block);
	/* 0: unmounted; > 0: the signal that stopped us; < 0: -errno */
	ret = rc < 0 ? 1 : 0;
	if (rc < 0)
		smb_err("%s: FUSE loop failed: %s", a->source, strerror(-rc));
	else if (rc > 0)
		smb_log(LOG_NOTICE, "%s: %s, unmounting", a->source, strsignal(rc));

unmount:
	/* Stop reading requests, then fail what is still pending while the
	 * session can take replies. */
	ev_call(smb_client_loop(fs.client), fuse_pump_stop_cb, &pump);
	if (fs.ring)
		ev_call(smb_client_loop(fs.client), ring_stop_cb, fs.ring);
	/* and nothing on the loop may start a request after this: a
	 * deferred CLOSE's or a kept directory's timer firing while
	 * smb_client_destroy() takes the connections away would build one
	 * on a connection gone */
	ev_call_wait(smb_client_loop(fs.client), quiesce_cb, &fs);
	smb_ctl_stop(ctl); /* smbrdmactl: before the client goes */
	smb_log(LOG_NOTICE,
	        "%s: %llu writes were answered before they reached the server (write-behind)",
	        a->source, (unsigned long long)wb_answered_early(fs.wb));
	pthread_mutex_lock(&fs.ack_lock); /* cache.c's threads ack no more */
	fs.client_gone = true;
	pthread_mutex_unlock(&fs.ack_lock);
	smb_client_destroy(fs.client);
	fs.client = NULL;
	smbfs_wait_notifiers(&fs);
	smbfs_free_handles(&fs);
	smbfs_plocks_free(&fs);
	/* The monitor unmounts what it mounted (libfuse, given "/dev/fd/N",
	 * has no mount point to unmount then). */
	rc = smb_privs_unmount(privs);
	if (rc < 0 && (rc != -ENOTCONN || smb_privs_dropped(privs)))
		smb_err("%s: the privileged helper did not unmount %s (%s): umount it by hand",
		        a->source, a->mountpoint, strerror(-rc));
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	smb_log(LOG_NOTICE, "unmounted %s from %s", a->source, a->mountpoint);
out:
	if (se)
		fuse_session_destroy(se);
	if (fs.client)
		smb_client_destroy(fs.client);
	smbfs_free_handles(&fs);
	smbfs_plocks_free(&fs);
	pthread_mutex_destroy(&fs.handles_lock);
	pthread_mutex_destroy(&fs.ack_lock);
	smb_inode_table_free(fs.inodes);
	negc_free(fs.negc);
	reqbuf_pool_free(fs.reqbufs);
	fuse_ring_free(fs.ring); /* after the session: no reply can come now */
	wb_free(fs.wb);
	smb_privs_end(privs);
	return ret;
}

static void free_args(struct mount_args *a)
{
	smb_mount_opts_free(&a->opts);
	smb_unc_free(&a->unc);
	free(a->mountpoint);
	a->mountpoint = NULL;
}

int main(int argc, char **argv)
{
	struct mount_args args = {0};
	int pipefd[2], rc = 1;
	pid_t pid;

	if (parse_args(argc, argv, &args) < 0)
		goto out;
	args.argv = argv;
	args.argc = argc;

	if (!args.foreground) {
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			fprintf(stderr, "mount error: pipe: %s\n", strerror(errno));
			goto out;
		}
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "mount error: fork: %s\n", strerror(errno));
			goto out;
		}
		if (pid > 0) {
			close(pipefd[1]);
			rc = wait_for_child(pid, pipefd[0]);
			goto out;
		}
		close(pipefd[0]);
		report_fd = pipefd[1];
		/* No setsid() yet: until the mount is made the daemon (and the
		 * privileged helper it forks, which mounts) stays in the process
		 * group of the mount helper that started it.  Under a systemd
		 * automount a lookup of the mount point from a new session
		 * waits for the pending automount, the one being made here
		 * (libfuse's stat() of it did: a deadlock until the automount's
		 * 60 s timeout, tests/integration/test_package.py); from the
		 * mount helper's group it does not.  run() calls setsid() once
		 * mounted. */
		if (chdir("/") < 0) {
			/* cannot happen; the mount point is absolute anyway */
		}
	}
	smb_log_init(PROG, !args.foreground,
	             args.opts.debug || args.fuse_debug ? LOG_DEBUG
	             : args.verbose                     ? LOG_INFO
	                                                : LOG_NOTICE);
	fuse_set_log_func(fuse_log_to_smb);
	rc = run(&args);
	if (report_fd >= 0)
		report("could not mount %s: internal error", args.source);
out:
	free_args(&args);
	return rc;
}
