/* fuse/options.h — the -o option string of mount.smbrdma.
 *
 * Pure apart from uid=/gid= given as names, which are looked up with
 * getpwnam_r()/getgrnam_r().  Options accepted (see mount.smbrdma(8)):
 *   username= user=   password= pass=   domain= dom= workgroup=
 *   port=  vers=  uid=  gid=  file_mode=  dir_mode=  actimeo=  ro rw  debug
 *   rdma  rdma_threshold=  multichannel nomultichannel  max_channels=
 * and, from mount(8) and fstab, accepted and ignored: defaults auto noauto
 * nofail _netdev user (without '=') users nouser owner group relatime ...,
 * x-* and comment=; nosuid/suid/nodev/dev/noexec/exec/sync/async/dirsync/
 * atime/noatime are handed on to the kernel mount.
 * A ',' inside a password is written ",," (as for mount.cifs).
 */
#ifndef SMBRDMA_FUSE_OPTIONS_H
#define SMBRDMA_FUSE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SMB_ACTIMEO_DEFAULT 1u
#define SMB_ACTIMEO_MAX     (30u * 24 * 3600)

struct smb_mount_opts {
	char *user;           /* NULL: not given */
	char *password;       /* NULL: not given; wiped by smb_mount_opts_free() */
	char *domain;         /* NULL: not given */
	uint16_t port;        /* 0: not given */
	uint16_t min_dialect; /* 0: engine default (lowest it speaks) */
	uint16_t max_dialect; /* 0: engine default (highest) */
	uid_t uid;
	gid_t gid;
	mode_t file_mode;
	mode_t dir_mode;
	bool ro;
	bool rdma;               /* SMB Direct instead of TCP */
	unsigned rdma_threshold; /* 0: the engine's default (4096) */
	bool multichannel;       /* more channels to the server's interfaces */
	unsigned max_channels;   /* 0: the engine's default (2); 1..32 */
	char *interfaces;        /* "eth1:eth2" or NULL: local interfaces for channels */
	unsigned actimeo;        /* seconds */
	bool debug;
	/* Mount flags for the kernel, comma-separated, in the order given. */
	char kernel_flags[256];
};

/* Defaults: uid/gid as given (the mounting user), file_mode 0644,
 * dir_mode 0755, rw, actimeo 1, highest common dialect. */
void smb_mount_opts_init(struct smb_mount_opts *o, uid_t uid, gid_t gid);

/* Parse one -o string into *o (may be called again for another -o; later
 * values win).  sloppy (mount -s) ignores unknown options instead of failing.
 * Returns 0, or -EINVAL with a one-line reason naming the option in err, or
 * -ENOMEM. */
int smb_mount_opts_parse(struct smb_mount_opts *o, const char *optstr, bool sloppy, char *err,
                         size_t errlen);

void smb_mount_opts_free(struct smb_mount_opts *o);

/* Overwrite the value of every password=/pass= option in optstr with '*',
 * in place and keeping its length, so that it does not show in
 * /proc/PID/cmdline once parsed. */
void smb_mount_opts_scrub(char *optstr);

/* "3.1.1" etc. -> [min, max] dialect; "default" -> 0, 0.  -EINVAL if unknown. */
int smb_parse_vers(const char *s, uint16_t *min_dialect, uint16_t *max_dialect);

#endif
