/* fuse/privs.h — least privilege for mount.smbrdma.
 *
 * Started by root, the daemon is root only until its mount is live; it then
 * serves the kernel and parses what servers send as an unprivileged user,
 * with no capability in any thread:
 *
 *   mount.smbrdma (root, one thread)
 *     smb_privs_begin():  pick the user; fork the monitor; bound
 *     │                   RLIMIT_MEMLOCK; no_new_privs; empty the
 *     │                   capability bounding set; not dumpable
 *     ├── monitor (root, CAP_SYS_ADMIN alone): waits on a socket
 *     │     for the daemon's "unmount" or its end, then removes the
 *     │     mount and the control socket file, nothing else
 *     └── daemon: connect (threads start), mount, INIT, control socket
 *         smb_privs_drop():   tell the monitor what to remove; keep the
 *                             Kerberos credentials in memory; become the
 *                             user (every thread: glibc's setxid)
 *         ... serve ...
 *         smb_privs_unmount(): the monitor unmounts
 *         smb_privs_end():     the monitor exits; the daemon waits for it
 *
 * Every capability goes: SMB over TCP and QUIC, SMB Direct (rdma_cm and
 * verbs through /dev/infiniband, world-usable), interfaces= (a route
 * check, no SO_BINDTODEVICE), Kerberos (kept copies) and the control
 * socket (already listening) need none after the mount; what would need
 * one is done before (the bdi read-ahead in sysfs, after INIT) or by the
 * monitor (umount2, unlinking in /run/smbrdma).  Keeping any would not
 * even work: a capability kept by setresuid() with SECBIT_KEEP_CAPS stays
 * in the calling thread alone, and the engine's threads exist by then.
 * Memory registration counts against RLIMIT_MEMLOCK instead of
 * CAP_IPC_LOCK, bounded here by what the mount's SMB Direct channels can
 * pin.
 *
 * The user: opts->user, else "smbrdma" when that system user exists, else
 * "nobody".  "root" (or 0) keeps root: nothing is dropped, no monitor,
 * for debugging.  Started by a non-root user (through fusermount3) there is
 * nothing to drop: no monitor, no no_new_privs (libfuse unmounts through
 * the set-uid fusermount3), only the dumpable flag and RLIMIT_MEMLOCK's
 * soft limit change.  Either way the process is not dumpable from
 * smb_privs_begin() on: no core file, no ptrace by its user, /proc/PID
 * owned by root; passwords, session keys and Kerberos copies stay out of
 * reach.
 *
 * All calls come from the daemon's main thread, in the order above.
 * libsmbrdma never uses this: a library does not change its caller's
 * privileges.
 */
#ifndef SMBRDMA_FUSE_PRIVS_H
#define SMBRDMA_FUSE_PRIVS_H

#include <stdbool.h>
#include <stddef.h>

struct smb_auth_krb5_opts;
struct smb_privs;

struct smb_privs_opts {
	const char *user;       /* NULL: smbrdma, else nobody; "root" or "0": keep root */
	const char *mountpoint; /* absolute; the only path the monitor unmounts */
	/* Most SMB Direct channels the mount may have at once (0: none), for
	 * RLIMIT_MEMLOCK. */
	unsigned rdma_channels;
	bool foreground; /* the monitor keeps stderr (else /dev/null, as the daemon's) */
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
 * the daemon, not on a signal).  Returns 0 with *out set (free it with
 * smb_privs_end()), or -errno with a one-line reason in err: an unknown
 * user, a failed fork, prctl or setrlimit. */
int smb_privs_begin(const struct smb_privs_opts *opts, struct smb_privs **out, char *err,
                    size_t errlen);

/* The mount is live, INIT answered, the control socket made: become the
 * user.  krb5: the mount's Kerberos options (NULL without sec=krb5), whose
 * cache or keytab is copied into memory first (auth/krb5.h; a failure is
 * logged: reconnects will then fail).  Returns 0 (also when there was
 * nothing to drop), or -errno with a reason in err: the caller must not
 * serve then, but unmount (smb_privs_unmount() still works) and exit. */
int smb_privs_drop(struct smb_privs *p, const struct smb_auth_krb5_opts *krb5, char *err,
                   size_t errlen);

/* Whether smb_privs_drop() left root: then only smb_privs_unmount() can
 * take the mount down (libfuse's fuse_session_unmount() may follow; it
 * finds the mount gone). */
bool smb_privs_dropped(const struct smb_privs *p);

/* Have the monitor remove the control socket file and, if it is still
 * there, the mount (lazily, as libfuse does); waits for it.  0, -ENOTCONN
 * when there is no monitor (nothing was dropped, or it died), -errno. */
int smb_privs_unmount(struct smb_privs *p);

/* Let the monitor go (it removes whatever smb_privs_unmount() did not) and
 * wait for it, so no process outlives the daemon; free p.  NULL is fine. */
void smb_privs_end(struct smb_privs *p);

#endif
