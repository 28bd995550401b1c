/* fuse/privs.h — least privilege for mount.smbrdma.
 *
 * Started by root, the daemon gives root up before it opens its first
 * connection, so no byte a server sends is ever parsed with privileges; a
 * monitor it forks first keeps what the mount itself needs:
 *
 *   mount.smbrdma (root, one thread)
 *     smb_privs_begin(): fork the monitor; bound RLIMIT_MEMLOCK; copy the
 *     │  Kerberos credentials and the files the engine reopens at every
 *     │  connection into memory; no_new_privs; empty capability bounding
 *     │  set; become the user; not dumpable
 *     ├── monitor (uid 0; CAP_SYS_ADMIN, CAP_DAC_OVERRIDE and
 *     │     CAP_DAC_READ_SEARCH alone; sealed, not dumpable): does, once
 *     │     each and only when asked, the FUSE mount (handing /dev/fuse
 *     │     over), the bdi read-ahead, the control socket file; removes
 *     │     them when asked or when the daemon is gone
 *     └── daemon (the user, no capability): connect (threads start),
 *         smb_privs_mount(), INIT, smb_privs_readahead(),
 *         smb_privs_ctl_socket(), serve, smb_privs_unmount(),
 *         smb_privs_end() (waits for the monitor)
 *
 * Why before the first connection and not after the mount: the kernel
 * refuses write(2) on a uverbs descriptor from a thread whose credentials
 * are not the very ones it was opened with (ib_safe_file_access()), and
 * soft-RoCE and soft-iWARP ring their doorbells that way; librdmacm keeps
 * the device contexts it opened for the life of the process.  Credentials
 * changed by glibc's setxid broadcast also differ per thread.  So the
 * credentials are final before any thread or RDMA device exists, and every
 * thread shares them.  And no capability is kept: TCP, QUIC, SMB Direct
 * (/dev/infiniband is world-usable), interfaces= (a route check) and
 * Kerberos (kept copies) need none.  Memory registration counts against
 * RLIMIT_MEMLOCK instead of CAP_IPC_LOCK, bounded here by what the mount's
 * SMB Direct channels can pin.
 *
 * The user: opts->user, else "smbrdma" when that system user exists, else
 * "nobody".  "root" (or 0) keeps root and everything, no monitor (for
 * debugging).  Started by a non-root user (fusermount3 mounts) there is
 * nothing to drop: no monitor, no no_new_privs (libfuse unmounts through
 * the set-uid fusermount3).  Either way the process is not dumpable from
 * smb_privs_begin() on: no core file, no ptrace by its user, /proc/PID
 * owned by root; passwords, session keys and the copies stay out of reach.
 *
 * Without a monitor (smb_privs_mount() and the others return -ENOTCONN)
 * the caller does these itself, as root or through fusermount3.  All calls
 * come from the daemon's main thread.  libsmbrdma never uses this: a library
 * does not change its caller's privileges.
 */
#ifndef SMBRDMA_FUSE_PRIVS_H
#define SMBRDMA_FUSE_PRIVS_H

#include <stdbool.h>
#include <stddef.h>

struct smb_auth_krb5_opts;
struct smb_privs;

#define SMB_PRIVS_MAX_FILES 4

struct smb_privs_opts {
	const char *user;       /* NULL: smbrdma, else nobody; "root" or "0": keep root */
	const char *mountpoint; /* absolute; the only path the monitor mounts on */
	/* Most SMB Direct channels the mount may have at once (0: none), for
	 * RLIMIT_MEMLOCK. */
	unsigned rdma_channels;
	/* The mount's Kerberos options (NULL without sec=krb5): the cache or
	 * keytab they name is copied into memory (auth/krb5.h). */
	const struct smb_auth_krb5_opts *krb5;
	/* Paths the engine opens again at every connection (QUIC's cafile=,
	 * certfile=, keyfile=; NULL entries and NULL *files[i] are skipped):
	 * each file is copied into a sealed memfd and *files[i] becomes its
	 * "/proc/self/fd/N", which the daemon can open whatever the file's
	 * owner, mode and directory.  The strings live until smb_privs_end(). */
	const char **files[SMB_PRIVS_MAX_FILES];
	/* In the monitor, on the daemon's smb_privs_mount(): mount the file
	 * system on mountpoint, return its /dev/fuse descriptor or -errno with
	 * a reason in err. */
	int (*mount)(void *arg, char *err, size_t errlen);
	void *mount_arg;
	unsigned readahead_kb; /* what smb_privs_readahead() writes to the bdi */
	bool foreground;       /* the monitor keeps stderr (else /dev/null, as the daemon's) */
	/* The daemon's argv, rewritten in the monitor so that ps(1) and
	 * pgrep -f tell it from the daemon (no mount point in it). */
	char **argv;
	int argc;
	/* Called in the monitor right after the fork, to wipe what it must
	 * not keep (the password); may be NULL. */
	void (*forget)(void *arg);
	void *forget_arg;
};

/* Before any thread starts (before smb_client_connect()), with SIGINT,
 * SIGTERM and SIGHUP blocked (the monitor keeps them blocked: it ends with
 * the daemon, not on a signal).  On return the process is the user (when
 * smb_privs_dropped()).  Returns 0 with *out set (free it with
 * smb_privs_end()), or -errno with a one-line reason in err: an unknown
 * user, a failed fork, prctl, setrlimit or set*id. */
int smb_privs_begin(const struct smb_privs_opts *opts, struct smb_privs **out, char *err,
                    size_t errlen);

/* Whether smb_privs_begin() left root (a monitor then runs). */
bool smb_privs_dropped(const struct smb_privs *p);

/* Have the monitor mount (once): returns the /dev/fuse descriptor to hand
 * libfuse as "/dev/fd/N", or -ENOTCONN without a monitor (mount yourself),
 * or -errno with a reason in err. */
int smb_privs_mount(struct smb_privs *p, char *err, size_t errlen);

/* After INIT is answered: the monitor raises the mount's bdi read-ahead to
 * opts->readahead_kb (INIT can only lower it).  0, -ENOTCONN, -errno. */
int smb_privs_readahead(struct smb_privs *p);

/* The monitor makes the control socket file (smb_ctl_listen(), fuse/ctl.h)
 * and hands its listening descriptor over, for smb_ctl_start_on().
 * -ENOTCONN without a monitor, or -errno with a reason in err. */
int smb_privs_ctl_socket(struct smb_privs *p, char *err, size_t errlen);

/* Have the monitor remove the control socket file and, if it is still
 * there, the mount (lazily, as libfuse does); waits for it.  0, -ENOTCONN
 * without a monitor (or when it died), -errno. */
int smb_privs_unmount(struct smb_privs *p);

/* Let the monitor go (it removes whatever smb_privs_unmount() did not) and
 * wait for it, so no process outlives the daemon; free p.  NULL is fine. */
void smb_privs_end(struct smb_privs *p);

#endif
