/* fuse/ctl.h — the daemon's control socket, which smbrdmactl(8) talks to.
 *
 * One Unix stream socket per mount, /run/smbrdma/MAJOR:MINOR.sock, where
 * MAJOR:MINOR is the st_dev of the mounted file system (what stat(2) of any
 * path inside the mount returns), so a tool finds the daemon from the mount
 * point alone.  Directory 0755, socket 0600: root only.
 *
 * Protocol: one request line per connection ("stats", "channels", "debug",
 * "reconnect" or "dfs", optionally followed by " json" (the default),
 * " text" or, for "stats" only, " prometheus": the Prometheus text
 * exposition format, whose metrics fuse/ctl.c lists in prom_metrics[]), one
 * reply, then the daemon closes.  A reply that starts with "error: " is a
 * failure.  Replies never carry a password or key material.
 *
 * Everything is served on the client's event loop thread and never blocks.
 */
#ifndef SMBRDMA_FUSE_CTL_H
#define SMBRDMA_FUSE_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct smb_client;
struct smb_ctl;

#define SMB_CTL_DIR "/run/smbrdma"

/* What the replies say about the mount; the strings are copied. */
struct smb_ctl_mount {
	const char *server;    /* host as the source names it */
	uint16_t port;         /* TCP port; 0 = 445 */
	const char *transport; /* "quic", "auto" or NULL/other (TCP or RDMA); static */
	uint16_t quic_port;    /* UDP port for QUIC; 0 = 443 */
	const char *share;
	const char *mountpoint; /* absolute; must be mounted already */
	/* How the kernel's requests arrive (fuse/ring.h): the ring (NULL with
	 * noio_uring), and why they come through /dev/fuse when not through
	 * it (a string that lives as long as the mount; may be NULL).  Both
	 * are read by `debug`. */
	struct fuse_ring *ring;
	const char *ring_why;
};

/* Find our mount's device in /proc/self/mountinfo (no FUSE request, so safe
 * before the session serves anything), create the socket and serve it on
 * smb_client_loop(client).  Returns 0, or -errno with a one-line reason in
 * err.  client must outlive the returned handle. */
/* "MAJ:MIN" of the topmost mount on mountpoint, read from
 * /proc/self/mountinfo (no FUSE request involved, so the daemon may call it
 * on its own mount).  0, -ENOENT when not mounted, or -errno. */
int smb_mount_dev(const char *mountpoint, char *out, size_t cap);

int smb_ctl_start(struct smb_client *client, const struct smb_ctl_mount *m, struct smb_ctl **out,
                  char *err, size_t errlen);

/* The socket file alone, for a daemon that can no longer write SMB_CTL_DIR:
 * its privileged helper (fuse/privs.h) makes it and hands the descriptor
 * over.  Returns the listening fd (non-blocking, close-on-exec) with the
 * file's *dev and *ino (to remove only that very file later), or -errno with
 * a one-line reason in err. */
int smb_ctl_listen(const char *mountpoint, dev_t *dev, ino_t *ino, char *err, size_t errlen);

/* smb_ctl_start() on a socket from smb_ctl_listen(): listen_fd is taken
 * over (closed on failure too); its file is left for its maker to remove. */
int smb_ctl_start_on(struct smb_client *client, const struct smb_ctl_mount *m, int listen_fd,
                     struct smb_ctl **out, char *err, size_t errlen);

/* Stop serving (waits for the loop thread to drop every connection), remove
 * the socket and free ctl.  Not from the loop thread; NULL is a no-op.  Call
 * before smb_client_destroy(). */
void smb_ctl_stop(struct smb_ctl *ctl);

#endif
