/* fuse/privs.c — giving up root before the first connection, and the
 * monitor that keeps it for the mount (see privs.h).
 *
 * Everything here is raw prctl(2), capset(2) and set*id(2): no libcap.
 * The monitor talks to the daemon over a SOCK_SEQPACKET pair: one
 * struct privs_req per request, one struct privs_reply per answer, with a
 * descriptor attached (SCM_RIGHTS) to a successful mount or control socket.
 * The daemon is untrusted from the moment it exists as the user: it can
 * only ask, once each, for what the monitor was set up to do at the fork
 * (the mount point, the mount options, the read-ahead value are fixed
 * then), and for the removal of its own mount.
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
#include <sys/mman.h>
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
#include "common/secret.h"
#include "common/mountinfo.h"
#include "fuse/ctl.h" /* smb_ctl_listen(), SMB_CTL_DIR: the monitor makes the socket file */

#define PRIVS_IDENT         "mount.smbrdma"
#define PRIVS_MONITOR_TITLE "mount.smbrdma [priv]"
#define PRIVS_DEFAULT_USER  "smbrdma"
#define PRIVS_FALLBACK_USER "nobody"
#define PRIVS_MAX_GROUPS    64
#define PRIVS_CALL_WAIT_MS  60000 /* a mount, an unmount: seconds at worst */

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

enum privs_op {
	PRIVS_MOUNT = 'M',     /* reply: the /dev/fuse descriptor */
	PRIVS_READAHEAD = 'R', /* raise the bdi's read-ahead */
	PRIVS_CTL = 'C',       /* reply: the control socket's listening descriptor */
	PRIVS_UNMOUNT = 'U',   /* remove the socket file and the mount */
};

struct privs_req {
	char op; /* enum privs_op */
};

struct privs_reply {
	char op;
	int err; /* 0 or -errno */
	char text[256];
};

struct smb_privs {
	bool dropped; /* smb_privs_begin() became the user; a monitor runs */
	uid_t uid;
	gid_t gid;
	gid_t groups[PRIVS_MAX_GROUPS];
	int ngroups;
	char user[64];
	char mountpoint[PATH_MAX];
	pid_t monitor;                      /* 0: none (or reaped) */
	int fd;                             /* our end of the monitor's socket; -1: none */
	char kept[SMB_PRIVS_MAX_FILES][32]; /* "/proc/self/fd/N" of the kept files */
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

/* ---- files kept readable -------------------------------------------------------- */

/* A sealed memfd copy of *path; *path becomes "/proc/self/fd/N" (slot),
 * which opens the copy for this process alone (/proc/PID/fd of a process
 * that is not dumpable is root's).  A file that cannot be read is left as
 * it is: the engine then names it in its own error. */
static void keep_file(const char **path, char slot[32])
{
	char buf[65536];
	ssize_t n = 0;
	int in = open(*path, O_RDONLY | O_CLOEXEC);
	int mfd = in < 0 ? -1 : memfd_create("smbrdma-kept", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	while (mfd >= 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(mfd, buf, (size_t)n) != n)
			break;
	}
	smb_wipe(buf, sizeof(buf)); /* a private key may have passed through */
	if (in >= 0)
		close(in);
	if (mfd < 0 || n != 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		smb_debug("cannot keep %s in memory: %s", *path, strerror(errno));
		if (mfd >= 0)
			close(mfd);
		return;
	}
	smb_debug("%s kept in memory as /proc/self/fd/%d", *path, mfd);
	snprintf(slot, 32, "/proc/self/fd/%d", mfd); /* open until the process ends */
	*path = slot;
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
	const struct smb_privs_opts *o;
	const char *mountpoint;
	bool mount_asked, ra_done, ctl_asked;
	bool mounted; /* our mount exists (maj:min, and mnt_id when have_id) */
	unsigned maj, min;
	bool have_id, id_unique;
	uint64_t mnt_id;
	bool sock; /* the control socket file we made (dev, ino) */
	dev_t sock_dev;
	ino_t sock_ino;
};

/* Is the mount on top of the mount point still the one we made?  The
 * device alone cannot tell: after `umount` the kernel hands our 0:N to the
 * next FUSE mount, and `umount X; mount.smbrdma ... X` makes that mount
 * on the same path while this daemon is still going down.  The mount ID
 * tells them apart (for certain with the 64-bit unique ID of Linux 6.8 and
 * later; the classic ID is reused as the device is). */
static bool still_ours(const struct monitor *mo)
{
	unsigned maj, min;
	uint64_t id;
	bool unique;

	if (mountinfo_dev(mo->mountpoint, &maj, &min) < 0 || maj != mo->maj || min != mo->min)
		return false;
	if (!mo->have_id)
		return true;
	return mountinfo_id(mo->mountpoint, &id, &unique) == 0 && unique == mo->id_unique &&
	       id == mo->mnt_id;
}

/* Remove our control socket file (only the very file we made) and our
 * mount (only while the mount point still shows that very mount on top). */
static void monitor_cleanup(struct monitor *mo)
{
	char path[PATH_MAX];
	struct stat st;

	if (mo->sock) {
		snprintf(path, sizeof(path), "%s/%u:%u.sock", SMB_CTL_DIR, mo->maj, mo->min);
		if (lstat(path, &st) == 0 && st.st_dev == mo->sock_dev &&
		    st.st_ino == mo->sock_ino && unlink(path) < 0)
			smb_warn("privileged helper: removing %s: %s", path, strerror(errno));
		mo->sock = false;
	}
	if (!mo->mounted)
		return;
	mo->mounted = false;
	if (!still_ours(mo)) {
		smb_info("privileged helper: %s no longer shows our mount; nothing to unmount",
		         mo->mountpoint);
		return;
	}
	if (umount2(mo->mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
		smb_warn("privileged helper: unmounting %s: %s", mo->mountpoint, strerror(errno));
	else
		smb_info("privileged helper: unmounted %s", mo->mountpoint);
}

/* The requests that come once, after the mount: true when this one may
 * run now (and is marked done), else false with r->err set. */
static bool first_after_mount(const struct monitor *mo, bool *done, struct privs_reply *r)
{
	if (!mo->mounted || *done) {
		r->err = mo->mounted ? -EALREADY : -ENOENT;
		return false;
	}
	*done = true;
	return true;
}

/* Answers one request; *fd (-1: none) goes with the reply. */
static void monitor_serve(struct monitor *mo, char op, struct privs_reply *r, int *fd)
{
	char path[PATH_MAX], kb[16];
	int kfd, res = 0; /* with made: the descriptor made here, or -errno */
	bool made = false;

	switch (op) {
	case PRIVS_MOUNT:
		if (mo->mount_asked) {
			r->err = -EALREADY;
			break;
		}
		mo->mount_asked = true;
		res = mo->o->mount ? mo->o->mount(mo->o->mount_arg, r->text, sizeof(r->text))
		                   : -EOPNOTSUPP;
		made = true;
		if (res >= 0 && (r->err = mountinfo_dev(mo->mountpoint, &mo->maj, &mo->min)) < 0) {
			/* cannot tell our mount later: take it down now */
			umount2(mo->mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW);
			close(res);
			res = r->err;
		}
		/* no request reaches the daemon, which waits for this reply */
		if (res >= 0)
			mo->have_id =
			    mountinfo_id(mo->mountpoint, &mo->mnt_id, &mo->id_unique) == 0;
		mo->mounted = res >= 0;
		/* Made or failed, the mount point's lookups are done: leave
		 * the mount helper's session, as the daemon does once it has
		 * answered (fuse/main.c main(): under a systemd automount a
		 * lookup from a new session would have waited for this very
		 * mount; from now on a terminal's hangup must not reach us).
		 * Not in the foreground, where the daemon keeps its session. */
		if (!mo->o->foreground)
			setsid();
		break;
	case PRIVS_READAHEAD:
		if (!first_after_mount(mo, &mo->ra_done, r))
			break;
		snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", mo->maj,
		         mo->min);
		snprintf(kb, sizeof(kb), "%u", mo->o->readahead_kb);
		kfd = open(path, O_WRONLY | O_CLOEXEC);
		if (kfd < 0 || write(kfd, kb, strlen(kb)) != (ssize_t)strlen(kb))
			r->err = -errno;
		if (kfd >= 0)
			close(kfd);
		break;
	case PRIVS_CTL:
		if (!first_after_mount(mo, &mo->ctl_asked, r))
			break;
		res = smb_ctl_listen(mo->mountpoint, &mo->sock_dev, &mo->sock_ino, r->text,
		                     sizeof(r->text));
		made = true;
		mo->sock = res >= 0;
		break;
	case PRIVS_UNMOUNT:
		monitor_cleanup(mo);
		break;
	default:
		r->err = -EINVAL;
	}
	if (made && res < 0)
		r->err = res;
	else if (made)
		*fd = res;
	if (r->err && !r->text[0])
		snprintf(r->text, sizeof(r->text), "%s", strerror(-r->err));
}

static void monitor_reply(int sock, const struct privs_reply *r, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)r, sizeof(*r)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

static _Noreturn void monitor_run(int sock, const struct smb_privs_opts *o, const char *mountpoint)
{
	struct monitor mo = {.o = o, .mountpoint = mountpoint};
	char err[256];

	retitle(o->argv, o->argc, PRIVS_MONITOR_TITLE);
	if (o->forget)
		o->forget(o->forget_arg);
	closelog();
	sock = monitor_fds(sock, o->foreground);
	if (sock < 0)
		_exit(1);
	if (!o->foreground)
		smb_log_init(PRIVS_IDENT, true, smb_log_level());
	/* The FUSE mount and umount2() take CAP_SYS_ADMIN; reaching a mount
	 * point in someone's private directory, writing sysfs and root's
	 * /run/smbrdma, the DAC overrides.  Nothing else (the bounding set goes
	 * first: that takes CAP_SETPCAP). */
	if (seal_exec(err, sizeof(err)) < 0)
		smb_warn("privileged helper: %s", err);
	else if (set_caps(1u << CAP_SYS_ADMIN | 1u << CAP_DAC_OVERRIDE |
	                  1u << CAP_DAC_READ_SEARCH) < 0)
		smb_warn("privileged helper: capset: %s", strerror(errno));
	for (;;) {
		struct privs_req q;
		ssize_t n = recv(sock, &q, sizeof(q), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the daemon is gone */
		if (n != (ssize_t)sizeof(q))
			continue;
		struct privs_reply r = {.op = q.op};
		int fd = -1;
		monitor_serve(&mo, q.op, &r, &fd);
		monitor_reply(sock, &r, fd);
		if (fd >= 0)
			close(fd);
	}
	monitor_cleanup(&mo);
	_exit(0); /* not exit(): nothing of the daemon's (atexit, LeakSanitizer) runs here */
}

/* ---- the daemon's side --------------------------------------------------------- */

/* Become p's user: every credential final before any thread exists. */
static int become_user(struct smb_privs *p, char *err, size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	int rc = seal_exec(err, errlen);

	if (rc)
		return rc;
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
	return 0;
}

int smb_privs_begin(const struct smb_privs_opts *o, struct smb_privs **out, char *err,
                    size_t errlen)
{
	struct smb_privs *p = calloc(1, sizeof(*p));
	char kerr[512];
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
	if (o->user && (strcmp(o->user, "root") == 0 || strcmp(o->user, "0") == 0)) {
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
	/* What the daemon will read again after it is the user: copies. */
	if (o->krb5 && (rc = smb_auth_krb5_keep(o->krb5, kerr, sizeof(kerr))) < 0)
		smb_info("%s (%s); Kerberos will look for credentials as user %s", kerr,
		         strerror(-rc), p->user);
	for (int i = 0; i < SMB_PRIVS_MAX_FILES; i++)
		if (o->files[i] && *o->files[i])
			keep_file(o->files[i], p->kept[i]);
	rc = become_user(p, err, errlen);
	if (rc)
		goto fail;
	p->dropped = true;
	smb_info("running as user %s (uid %u, gid %u) without capabilities; the privileged "
	         "helper (pid %ld) mounts and unmounts",
	         p->user, (unsigned)p->uid, (unsigned)p->gid, (long)p->monitor);
	*out = p;
	return 0;
fail:
	smb_privs_end(p);
	return rc;
}

bool smb_privs_dropped(const struct smb_privs *p)
{
	return p && p->dropped;
}

/* One request, its reply and the descriptor that may come with it (*fd,
 * -1 if none; fd NULL: none expected). */
static int monitor_call(struct smb_privs *p, char op, int *fd, char *err, size_t errlen)
{
	const struct privs_req q = {.op = op};
	struct privs_reply r;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {&r, sizeof(r)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct pollfd pfd = {.fd = p ? p->fd : -1, .events = POLLIN};
	ssize_t n;

	if (fd)
		*fd = -1;
	if (!p || p->fd < 0)
		return -ENOTCONN;
	do
		n = send(p->fd, &q, sizeof(q), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(q))
		goto gone;
	do
		n = poll(&pfd, 1, PRIVS_CALL_WAIT_MS);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		snprintf(err, errlen, "the privileged helper (pid %ld) did not answer",
		         (long)p->monitor);
		return -ETIMEDOUT;
	}
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(p->fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(r) || r.op != op)
		goto gone;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int got;
		memcpy(&got, CMSG_DATA(c), sizeof(int));
		if (fd && *fd < 0)
			*fd = got;
		else
			close(got);
	}
	r.text[sizeof(r.text) - 1] = '\0';
	if (r.err < 0 && fd && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	if (r.err < 0)
		snprintf(err, errlen, "%s", r.text);
	else if (fd && *fd < 0)
		r.err = -EPROTO;
	return r.err;
gone:
	snprintf(err, errlen, "the privileged helper (pid %ld) is gone", (long)p->monitor);
	return -ENOTCONN;
}

/* A request answered with a descriptor: the descriptor, or -errno. */
static int monitor_fd(struct smb_privs *p, char op, char *err, size_t errlen)
{
	int fd, rc = monitor_call(p, op, &fd, err, errlen);

	return rc < 0 ? rc : fd;
}

int smb_privs_mount(struct smb_privs *p, char *err, size_t errlen)
{
	return monitor_fd(p, PRIVS_MOUNT, err, errlen);
}

int smb_privs_ctl_socket(struct smb_privs *p, char *err, size_t errlen)
{
	return monitor_fd(p, PRIVS_CTL, err, errlen);
}

int smb_privs_readahead(struct smb_privs *p)
{
	char err[256];

	return monitor_call(p, PRIVS_READAHEAD, NULL, err, sizeof(err));
}

int smb_privs_unmount(struct smb_privs *p)
{
	char err[256];

	return monitor_call(p, PRIVS_UNMOUNT, NULL, err, sizeof(err));
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
