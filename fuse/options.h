/* fuse/options.h — the -o option string of mount.smbrdma.
 *
 * Pure apart from uid=/gid= given as names, which are looked up with
 * getpwnam_r()/getgrnam_r(), credentials= files, which are read where the
 * option stands, and smb_mount_opts_finish(), which reads the environment.
 * Options accepted (see mount.smbrdma(8)):
 *   username= user=   password= pass=   domain= dom= workgroup=
 *   credentials= cred=   sec=  keytab=  guest  sign  seal
 *   port=  vers=  uid=  gid=  file_mode=  dir_mode=  actimeo=  ro rw  debug
 *   rdma  rdma_threshold=  rdma_channels=  multichannel nomultichannel  max_channels=
 *   transport=  quic_port=  cafile=  certfile=  keyfile=
 *   interfaces=  echo_interval=  timeout=  soft hard  cache=  rsize= wsize= rasize=
 *   ip= addr=  noperm perm  forceuid noforceuid forcegid noforcegid
 *   nosharesock  mfsymlinks nomfsymlinks  nosubtype  posix noposix (unix nounix)  brl nobrl
 *   nolease  nodfs  witness  daemon_user=
 *   handlecache nohandlecache  max_cached_dirs=
 *   io_uring noio_uring  io_uring_depth=
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

/* Directory handles kept open after their last close while the server's
 * directory lease says nothing changed (handlecache, fuse/ops_dir.c). */
#define SMB_MAX_CACHED_DIRS_DEFAULT 1024u
#define SMB_MAX_CACHED_DIRS_MAX     65536u

/* rsize=/wsize= are rounded down to a multiple of SMB_IO_SIZE_MIN (a
 * value below it becomes it, as cifs.ko does for wsize) and lowered to
 * SMB_IO_SIZE_MAX, the most the engine puts in one READ/WRITE. */
#define SMB_IO_SIZE_MIN 4096u
#define SMB_IO_SIZE_MAX (8u << 20)

/* rasize=: the mount's read-ahead (the kernel's bdi read_ahead_kb), in
 * bytes, rounded down to a multiple of 4096 (below it: 4096), at most
 * SMB_RASIZE_MAX.  The default keeps two of FUSE's largest READs (1 MiB)
 * in flight for a file read in order, as cifs.ko reads ahead more than one
 * rsize (bench/results/20261129-060649-0648fc2-readahead.txt). */
#define SMB_RASIZE_DEFAULT (2u << 20)
#define SMB_RASIZE_MAX     (64u << 20)

/* Longest password read from a file, a descriptor or the terminal. */
#define SMB_PASSWORD_MAX 1024

/* sec=: how the session is authenticated. */
enum smb_mount_sec {
	SMB_MOUNT_SEC_NTLMSSP = 0, /* the default: NTLMv2 in NTLMSSP, user and password */
	SMB_MOUNT_SEC_KRB5,        /* Kerberos: a ticket or keytab=, no password */
	SMB_MOUNT_SEC_NONE,        /* anonymous: no user name, no password */
};

const char *smb_mount_sec_str(enum smb_mount_sec sec);

/* cache=: what the kernel may keep (mount.cifs's names). */
enum smb_mount_cache {
	SMB_MOUNT_CACHE_STRICT = 0, /* the default: the page cache, dropped at each open
	                               (close-to-open); attributes kept for actimeo */
	SMB_MOUNT_CACHE_NONE,       /* direct I/O on every open, attributes never kept */
	SMB_MOUNT_CACHE_LOOSE,      /* the page cache kept across opens; attributes for
	                               actimeo */
};

const char *smb_mount_cache_str(enum smb_mount_cache cache);

struct smb_mount_opts {
	char *user;     /* NULL: not given */
	char *password; /* NULL: not given; wiped by smb_mount_opts_free() */
	char *domain;   /* NULL: not given */
	/* Where the password came from, for log lines ("password=", "PASSWD",
	 * "the terminal", ...); NULL while there is none.  Static strings. */
	const char *password_from;
	/* A warning for the user once parsing is done ("credentials file X is
	 * readable by others ..."); "" when none.  mount.smbrdma prints it. */
	char warning[384];
	enum smb_mount_sec sec;
	bool sec_given;       /* sec= was given (keytab= implies krb5 otherwise) */
	bool sec_integrity;   /* sec=ntlmsspi / krb5i: signing is required */
	bool sign;            /* `sign`: require signing */
	bool seal;            /* `seal`: require encryption */
	bool guest;           /* `guest`: no password, never prompt */
	char *keytab;         /* keytab=: absolute once smb_mount_opts_finish() ran */
	uint16_t port;        /* 0: not given */
	uint16_t min_dialect; /* 0: engine default (SMB 3.0: 2.x only when named) */
	uint16_t max_dialect; /* 0: engine default (highest) */
	uid_t uid;
	gid_t gid;
	mode_t file_mode;
	mode_t dir_mode;
	bool ro;
	bool rdma;                /* SMB Direct instead of TCP (also transport=rdma) */
	const char *transport;    /* transport=: "tcp", "quic", "auto" (static strings);
	                             NULL: not given (tcp, or rdma with `rdma`) */
	uint16_t quic_port;       /* quic_port=; 0: not given (443) */
	char *cafile;             /* cafile=: absolute path; NULL: the system trust store */
	char *certfile, *keyfile; /* certfile=/keyfile=: client certificate (QUIC) */
	unsigned rdma_threshold;  /* 0: the engine's default (4096) */
	unsigned echo_interval;   /* s, echo_interval=; 0: the engine's default (60) */
	unsigned timeout;         /* s, timeout=; 0: the engine's default (60) */
	bool multichannel;        /* more channels to the server's interfaces */
	unsigned max_channels;    /* 0: the engine's default (2); 1..32 */
	unsigned rdma_channels;   /* 0: the engine's default (2); 1..8 */
	char *interfaces;         /* "eth1:eth2" or NULL: local interfaces for channels */
	char *daemon_user;        /* daemon_user=: who the daemon runs as (fuse/privs.h);
	                             NULL: smbrdma, else nobody; "root": keep root */
	unsigned actimeo;         /* seconds */
	enum smb_mount_cache cache;
	unsigned rsize, wsize;   /* bytes per READ/WRITE; 0: as negotiated; else a multiple
	                            of SMB_IO_SIZE_MIN up to SMB_IO_SIZE_MAX */
	unsigned rasize;         /* rasize=: read-ahead bytes; 0: SMB_RASIZE_DEFAULT */
	char *ip;                /* ip=/addr=: a numeric address to connect to instead of
	                            resolving the source's host name; NULL: resolve */
	bool hard;               /* requests wait for the server however long it takes */
	bool noperm;             /* no client-side permission check (no default_permissions) */
	bool forceuid, forcegid; /* with the SMB3 POSIX extensions: show uid=/gid= instead
	                            of the server's owner/group; without them ownership
	                            is always uid=/gid= */
	bool noposix;            /* do not offer the SMB3 POSIX extensions: the
	                            default; posix/unix offer them */
	bool nosharesock;        /* accepted; every mount has its own connection anyway */
	bool mfsymlinks;         /* symlinks as Minshall+French symlink files */
	bool nobrl;              /* fcntl locks stay in this mount's kernel (not sent) */
	bool nolease;            /* opens ask for no lease and no oplock */
	bool nodfs;              /* DFS links are not followed (EREMOTE) */
	bool witness;            /* register with the cluster's witness service ([MS-SWN]) */
	bool nohandlecache;      /* a closed directory's handle is not kept under its lease */
	unsigned cached_dirs;    /* max_cached_dirs=: directory handles kept at most */
	/* FUSE over io_uring (fuse/ring.h): by default used where the kernel
	 * offers it; `io_uring` makes its absence an error, `noio_uring` keeps
	 * to /dev/fuse.  The last of the two given wins. */
	bool io_uring_required;
	bool noio_uring;
	unsigned uring_depth; /* io_uring_depth=: entries per ring queue (0: the default) */
	bool nosubtype;       /* the kernel's type reads "fuse", not "fuse.smbrdma"
	                         (xfstests' FSTYP=fuse compares it) */
	bool debug;
	/* Mount flags for the kernel, comma-separated, in the order given. */
	char kernel_flags[256];
};

/* Defaults: uid/gid as given (the mounting user), file_mode 0644,
 * dir_mode 0755, rw, actimeo 1, highest common dialect, cache=strict, soft,
 * perm, rsize/wsize as negotiated. */
void smb_mount_opts_init(struct smb_mount_opts *o, uid_t uid, gid_t gid);

/* Parse one -o string into *o (may be called again for another -o; later
 * values win).  sloppy (mount -s) ignores unknown options instead of failing.
 * Returns 0, or -EINVAL with a one-line reason naming the option in err, or
 * -ENOMEM, or what smb_creds_file_parse() returns for a credentials= file. */
int smb_mount_opts_parse(struct smb_mount_opts *o, const char *optstr, bool sloppy, char *err,
                         size_t errlen);

void smb_mount_opts_free(struct smb_mount_opts *o);

/* Read a credentials file (mount.cifs's format) into *o, as credentials=
 * does: one "key=value" a line, leading blanks ignored; username= (or any
 * key that starts with "user"), password= ("pass..."), domain= ("dom...",
 * or workgroup=), case-insensitive; the value runs verbatim to the end of
 * the line (a line may end in CR LF); lines starting with '#' and lines
 * with any other key are ignored.  Values replace what *o held.  Returns 0,
 * or -errno with "credentials file PATH: <reason>" in err. */
int smb_creds_file_parse(struct smb_mount_opts *o, const char *path, char *err, size_t errlen);

/* Once every -o string is parsed: settle the credentials as mount.cifs does.
 *   - sec=krb5 (or keytab= alone, which implies it): no password; keytab
 *     must be a readable regular file and is made absolute;
 *   - sec=none: empty user, password and domain (anonymous);
 *   - else a user name "DOMAIN/user" or "DOMAIN\user" sets the domain and a
 *     user name "user%password" the password;
 *   - guest: empty password, and an empty user unless one was given;
 *   - no user name: $USER, else the name of the real uid (not for krb5);
 *   - no password: $PASSWD, else a line read from descriptor $PASSWD_FD,
 *     else the first line of file $PASSWD_FILE;
 *   - seal with vers= allowing only SMB 2 is an error.
 * The value of PASSWD is wiped from the environment (and from
 * /proc/PID/environ) in every case.  Returns 0, or -errno with a one-line
 * reason in err. */
int smb_mount_opts_finish(struct smb_mount_opts *o, char *err, size_t errlen);

/* After smb_mount_opts_finish(): true when nothing gave a password and one
 * should be asked for (sec=ntlmssp, not guest, a non-empty user name). */
bool smb_mount_opts_need_password(const struct smb_mount_opts *o);

/* Signing is required (`sign`, or sec=ntlmsspi / krb5i). */
bool smb_mount_opts_signing(const struct smb_mount_opts *o);

/* Overwrite the secrets in optstr with '*', in place and keeping its length,
 * so that they do not show in /proc/PID/cmdline once parsed: the value of
 * every password=/pass= option and what follows '%' in a username=/user=
 * value. */
void smb_mount_opts_scrub(char *optstr);

/* Copy optstr into out (truncated to cap) with each secret that
 * smb_mount_opts_scrub() would hide written as "***": for log lines. */
void smb_mount_opts_redact(const char *optstr, char *out, size_t cap);

/* "3.1.1" etc. -> [min, max] dialect; "default" -> 0, 0.  -EINVAL if unknown. */
int smb_parse_vers(const char *s, uint16_t *min_dialect, uint16_t *max_dialect);

#endif
