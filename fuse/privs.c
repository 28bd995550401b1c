/* fuse/privs.c — giving up root after the mount, and the monitor that
 * keeps it for the unmount (see privs.h).
 *
 * Everything here is raw prctl(2), capset(2) and set*id(2): no libcap.
 * The monitor talks to the daemon over a SOCK_SEQPACKET pair, one
 * fixed-size struct privs_msg per message, and trusts only the first 'M'
 * (sent while the daemon is still root): after the drop the daemon can ask
 * for nothing but the removal of its own mount.
 */
#include "fuse/privs.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/krb5.h"
#include "common/log.h"
#include "common/mountinfo.h"
#include "fuse/ctl.h" /* SMB_CTL_DIR: the monitor removes our socket file */

#define PRIVS_IDENT           "mount.smbrdma"
#define PRIVS_MONITOR_TITLE   "mount.smbrdma [priv]"
#define PRIVS_DEFAULT_USER    "smbrdma"
#define PRIVS_FALLBACK_USER   "nobody"
#define PRIVS_MAX_GROUPS      64
#define PRIVS_UNMOUNT_WAIT_MS 20000

/* RLIMIT_MEMLOCK: what one SMB Direct channel can pin.  ibv_reg_mr()
 * counts every registration against the limit (soft-iWARP even for root,
 * soft-RoCE and hardware once CAP_IPC_LOCK is gone): the offload pool (32
 * buffers of up to 1 MiB, client/offload.c), the FUSE request buffers
 * registered on every channel (32 of 1 MiB + 4 KiB, fuse/reqbuf.h), as
 * much again for soft-iWARP's per-I/O registrations, and the transport's
 * send and receive slots (well under 4 MiB).  One channel more than the
 * mount may have, for a reconnect that overlaps the channel it replaces. */
#define PRIVS_MEMLOCK_PER_RDMA_CHANNEL (160ull << 20)
/* Below that, what a process gets when nothing raised its limit. */
#define PRIVS_MEMLOCK_BASE (8ull << 20)

struct privs_msg {
	char op;                     /* 'M' mounted, 'U' unmount; the reply: 'D' done */
	unsigned maj, min;           /* 'M': the mount's device */
	uint64_t sock_dev, sock_ino; /* 'M': the control socket file; sock_ino 0: none */
};

struct smb_privs {
	bool drop;    /* root, and not told to stay root: a monitor runs */
	bool dropped; /* smb_privs_drop() became the user */
	uid_t uid;
	gid_t gid;
	gid_t groups[PRIVS_MAX_GROUPS];
	int ngroups;
	char user[64];
	char mountpoint[PATH_MAX];
	pid_t monitor; /* 0: none (or reaped) */
	int fd;        /* our end of the monitor's socket; -1: none */
};

/* ---- the user -------------------------------------------------------------------- */

/* Fills p->uid, gid, user and the groups of `name` (a name or a number).
 * 0, -ENOENT (no such user), or -errno. */
static int lookup_user(struct smb_privs *p, const char *name)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long n;
	int rc;

	errno = 0;
	n = strtoul(name, &end, 10);
	if (*name && !*end && n < UINT32_MAX)
		rc = getpwuid_r((uid_t)n, &pw, buf, sizeof(buf), &res);
	else
		rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
	if (rc)
		return -rc;
	if (!res)
		return -ENOENT;
	p->uid = pw.pw_uid;
	p->gid = pw.pw_gid;
	snprintf(p->user, sizeof(p->user), "%s", pw.pw_name);
	/* Its supplementary groups (an admin may grant a dedicated user a
	 * device group), looked up now: NSS is better not run in a
	 * multi-threaded process. */
	p->ngroups = PRIVS_MAX_GROUPS;
	if (getgrouplist(pw.pw_name, pw.pw_gid, p->groups, &p->ngroups) < 0) {
		p->groups[0] = pw.pw_gid;
		p->ngroups = 1;
	}
	return 0;
}

static int pick_user(struct smb_privs *p, const char *want, char *err, size_t errlen)
{
	int rc;

	if (want) {
		rc = lookup_user(p, want);
		if (rc)
			snprintf(err, errlen, "daemon user '%s': %s", want,
			         rc == -ENOENT ? "no such user" : strerror(-rc));
		return rc;
	}
	rc = lookup_user(p, PRIVS_DEFAULT_USER);
	if (rc == -ENOENT)
		rc = lookup_user(p, PRIVS_FALLBACK_USER);
	if (rc)
		snprintf(err, errlen,
		         "no user to run the daemon as: neither '" PRIVS_DEFAULT_USER
		         "' nor '" PRIVS_FALLBACK_USER "' exists (%s)",
		         rc == -ENOENT ? "create the system user " PRIVS_DEFAULT_USER
		                       : strerror(-rc));
	return rc;
}

/* ---- process-wide limits ---------------------------------------------------------- */

/* RLIMIT_MEMLOCK: root sets soft = hard = the bound, so the unprivileged
 * daemon can never raise it; anyone else raises the soft limit toward it
 * as far as the hard one allows. */
static void bound_memlock(unsigned rdma_channels, bool root)
{
	struct rlimit rl;
	rlim_t want;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return;
	want = rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 0 ? rl.rlim_cur : PRIVS_MEMLOCK_BASE;
	if (rdma_channels)
		want += (rlim_t)(rdma_channels + 1) * PRIVS_MEMLOCK_PER_RDMA_CHANNEL;
	if (root) {
		rl.rlim_cur = rl.rlim_max = want;
	} else {
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= want)
			return;
		rl.rlim_cur =
		    rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
	}
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		smb_info("cannot set RLIMIT_MEMLOCK to %llu bytes: %s", (unsigned long long)want,
		         strerror(errno));
	else
		smb_debug("RLIMIT_MEMLOCK %llu bytes (%u SMB Direct channels at most)",
		          (unsigned long long)rl.rlim_cur, rdma_channels);
}

/* Every capability out of the bounding set, none ambient, no privilege
 * ever again through execve().  Per thread: call before threads start. */
static int seal_exec(char *err, size_t errlen)
{
	for (unsigned long cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			snprintf(err, errlen, "dropping capability %lu from the bounding set: %s",
			         cap, strerror(errno));
			return -errno;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
		snprintf(err, errlen, "clearing the ambient capabilities: %s", strerror(errno));
		return -errno;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int set_caps(uint32_t keep)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{.effective = keep, .permitted = keep}};

	return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

/* Any capability left in this thread (effective, permitted, inheritable)? */
static bool holds_caps(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {{0}};

	if (syscall(SYS_capget, &hdr, data) < 0)
		return true;
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted || data[i].inheritable)
			return true;
	return false;
}

/* ---- the monitor ----------------------------------------------------------------- */

/* Overwrite the whole argv area (getopt may have reordered the pointers,
 * not the strings) so /proc/PID/cmdline reads `title`. */
static void retitle(char **argv, int argc, const char *title)
{
	char *start = NULL, *end = NULL;

	for (int i = 0; argv && i < argc; i++) {
		if (!argv[i])
			continue;
		char *e = argv[i] + strlen(argv[i]) + 1;
		if (!start || argv[i] < start)
			start = argv[i];
		if (!end || e > end)
			end = e;
	}
	if (!start)
		return;
	memset(start, 0, (size_t)(end - start));
	snprintf(start, (size_t)(end - start), "%s", title);
}

/* Only fd (as 3) and, in the foreground, stdout and stderr stay open: the
 * pipe mount.smbrdma's parent reads for "ok", the terminal and the
 * caller's pipes must see EOF when the daemon goes. */
static int monitor_fds(int fd, bool foreground)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null < 0 || dup2(null, STDIN_FILENO) < 0)
		return -1;
	if (!foreground && (dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0))
		return -1;
	if (fd != 3 && (dup2(fd, 3) < 0 || close(fd) < 0))
		return -1;
	if (null > 3)
		close(null);
	return close_range(4, ~0u, 0) < 0 ? -1 : 3;
}

struct monitor {
	const char *mountpoint;
	bool known; /* the first 'M' came */
	bool cleaned;
	struct privs_msg m;
};

/* Remove our control socket file (only the very file the daemon made) and
 * our mount (only while the mount point still shows our device on top). */
static void monitor_cleanup(struct monitor *mo)
{
	char path[PATH_MAX];
	struct stat st;
	unsigned maj, min;

	if (!mo->known || mo->cleaned)
		return;
	mo->cleaned = true;
	snprintf(path, sizeof(path), "%s/%u:%u.sock", SMB_CTL_DIR, mo->m.maj, mo->m.min);
	if (mo->m.sock_ino && lstat(path, &st) == 0 && (uint64_t)st.st_dev == mo->m.sock_dev &&
	    (uint64_t)st.st_ino == mo->m.sock_ino && unlink(path) < 0)
		smb_warn("privileged helper: removing %s: %s", path, strerror(errno));
	if (mountinfo_dev(mo->mountpoint, &maj, &min) < 0 || maj != mo->m.maj || min != mo->m.min)
		return;
	if (umount2(mo->mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		smb_warn("privileged helper: unmounting %s: %s", mo->mountpoint, strerror(errno));
	else
		smb_info("privileged helper: unmounted %s", mo->mountpoint);
}

static _Noreturn void monitor_run(int fd, const struct smb_privs_opts *o, const char *mountpoint)
{
	struct monitor mo = {.mountpoint = mountpoint};
	const struct privs_msg done = {.op = 'D'};

	retitle(o->argv, o->argc, PRIVS_MONITOR_TITLE);
	if (o->forget)
		o->forget(o->forget_arg);
	closelog();
	fd = monitor_fds(fd, o->foreground);
	if (fd < 0)
		_exit(1);
	if (!o->foreground)
		smb_log_init(PRIVS_IDENT, true, smb_log_level());
	/* umount2() takes CAP_SYS_ADMIN; unlinking in root's /run/smbrdma
	 * only uid 0.  Nothing else (the bounding set goes first: that takes
	 * CAP_SETPCAP). */
	char err[256];
	if (seal_exec(err, sizeof(err)) < 0)
		smb_warn("privileged helper: %s", err);
	else if (set_caps(1u << CAP_SYS_ADMIN) < 0)
		smb_warn("privileged helper: capset: %s", strerror(errno));
	for (;;) {
		struct privs_msg m;
		ssize_t n = recv(fd, &m, sizeof(m), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the daemon is gone */
		if (n != (ssize_t)sizeof(m))
			continue;
		if (m.op == 'M' && !mo.known) {
			mo.m = m;
			mo.known = true;
		} else if (m.op == 'U') {
			monitor_cleanup(&mo);
			send(fd, &done, sizeof(done), MSG_NOSIGNAL);
		}
	}
	monitor_cleanup(&mo);
	_exit(0); /* not exit(): nothing of the daemon's (atexit, LeakSanitizer) runs here */
}

/* ---- the daemon's side --------------------------------------------------------- */

int smb_privs_begin(const struct smb_privs_opts *o, struct smb_privs **out, char *err,
                    size_t errlen)
{
	struct smb_privs *p = calloc(1, sizeof(*p));
	int sv[2], rc;

	*out = NULL;
	if (!p) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	p->fd = -1;
	snprintf(p->mountpoint, sizeof(p->mountpoint), "%s", o->mountpoint);
	/* From here on no core file and no ptrace by our own user: the
	 * password is in memory, and soon session keys. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		rc = -errno;
		snprintf(err, errlen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
		goto fail;
	}
	bound_memlock(o->rdma_channels, geteuid() == 0);
	if (geteuid() != 0) {
		smb_debug("not started as root: nothing to drop");
		*out = p;
		return 0;
	}
	bool keep_root = o->user && (strcmp(o->user, "root") == 0 || strcmp(o->user, "0") == 0);
	if (keep_root) {
		smb_info("daemon user root: keeping every privilege (for debugging)");
		*out = p;
		return 0;
	}
	rc = pick_user(p, o->user, err, errlen);
	if (rc)
		goto fail;
	if (p->uid == 0) {
		snprintf(err, errlen, "daemon user '%s' has uid 0: use 'root' to keep root",
		         p->user);
		rc = -EINVAL;
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	p->monitor = fork();
	if (p->monitor < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		goto fail;
	}
	if (p->monitor == 0) {
		close(sv[0]);
		monitor_run(sv[1], o, p->mountpoint);
	}
	close(sv[1]);
	p->fd = sv[0];
	p->drop = true;
	rc = seal_exec(err, errlen);
	if (rc)
		goto fail;
	*out = p;
	return 0;
fail:
	smb_privs_end(p);
	return rc;
}

static int monitor_send(struct smb_privs *p, const struct privs_msg *m)
{
	if (p->fd < 0)
		return -ENOTCONN;
	for (;;) {
		ssize_t n = send(p->fd, m, sizeof(*m), MSG_NOSIGNAL);
		if (n == (ssize_t)sizeof(*m))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
}

/* Tell the monitor which mount and socket file are ours. */
static int monitor_mounted(struct smb_privs *p, char *err, size_t errlen)
{
	struct privs_msg m = {.op = 'M'};
	char path[PATH_MAX];
	struct stat st;
	int rc = mountinfo_dev(p->mountpoint, &m.maj, &m.min);

	if (rc < 0) {
		snprintf(err, errlen, "%s not found in /proc/self/mountinfo: %s", p->mountpoint,
		         strerror(-rc));
		return rc;
	}
	snprintf(path, sizeof(path), "%s/%u:%u.sock", SMB_CTL_DIR, m.maj, m.min);
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		m.sock_dev = st.st_dev;
		m.sock_ino = st.st_ino;
	}
	rc = monitor_send(p, &m);
	if (rc < 0)
		snprintf(err, errlen, "the privileged helper (pid %ld) is gone: %s",
		         (long)p->monitor, strerror(-rc));
	return rc;
}

int smb_privs_drop(struct smb_privs *p, const struct smb_auth_krb5_opts *krb5, char *err,
                   size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	char kerr[512];
	int rc;

	if (!p->drop)
		return 0;
	rc = monitor_mounted(p, err, errlen);
	if (rc)
		return rc;
	if (krb5 && smb_auth_krb5_keep(krb5, kerr, sizeof(kerr)) < 0)
		smb_warn("%s; reconnects will fail to authenticate as user %s", kerr, p->user);
	/* glibc applies each of these to every thread of the process. */
	if (setgroups((size_t)p->ngroups, p->groups) < 0 || setresgid(p->gid, p->gid, p->gid) < 0 ||
	    setresuid(p->uid, p->uid, p->uid) < 0) {
		rc = -errno;
		snprintf(err, errlen, "becoming user %s (uid %u, gid %u): %s", p->user,
		         (unsigned)p->uid, (unsigned)p->gid, strerror(errno));
		return rc;
	}
	/* The uid change reset it to fs.suid_dumpable. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		rc = -errno;
		snprintf(err, errlen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
		return rc;
	}
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != p->uid ||
	    eu != p->uid || su != p->uid || rg != p->gid || eg != p->gid || sg != p->gid ||
	    holds_caps() || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		snprintf(err, errlen, "still privileged after becoming user %s", p->user);
		return -EPERM;
	}
	p->dropped = true;
	smb_info("serving as user %s (uid %u, gid %u) without capabilities; the privileged "
	         "helper (pid %ld) unmounts",
	         p->user, (unsigned)p->uid, (unsigned)p->gid, (long)p->monitor);
	return 0;
}

bool smb_privs_dropped(const struct smb_privs *p)
{
	return p && p->dropped;
}

int smb_privs_unmount(struct smb_privs *p)
{
	const struct privs_msg m = {.op = 'U'};
	struct privs_msg reply;
	struct pollfd pfd;
	int rc;

	if (!p || p->fd < 0)
		return -ENOTCONN;
	rc = monitor_send(p, &m);
	if (rc)
		return rc;
	pfd = (struct pollfd){.fd = p->fd, .events = POLLIN};
	for (;;) {
		int n = poll(&pfd, 1, PRIVS_UNMOUNT_WAIT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -ETIMEDOUT;
		if (n < 0)
			return -errno;
		ssize_t r = recv(p->fd, &reply, sizeof(reply), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == (ssize_t)sizeof(reply) && reply.op == 'D')
			return 0;
		return r < 0 ? -errno : -ENOTCONN;
	}
}

void smb_privs_end(struct smb_privs *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	while (p->monitor > 0 && waitpid(p->monitor, NULL, 0) < 0 && errno == EINTR)
		;
	free(p);
}
