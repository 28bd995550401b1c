/* client/client.h — the asynchronous SMB client engine, as fuse/ and lib/
 * (libsmbrdma) see it.
 *
 * One struct smb_client is one mount: the connection(s) to one server, the
 * session, and the tree connect to one share.  Paths are UTF-8, relative to
 * the share root, '/'-separated, with no leading '/'; "" is the root.
 *
 * Threading and completion
 *  - smb_client_connect() is synchronous and must not be called on the loop
 *    thread.  Everything else is asynchronous: each smb_*() call either fails
 *    synchronously (returns -errno, never calls back) or returns 0 and calls
 *    its callback exactly once.
 *  - Callbacks run on the client's event-loop thread; they must not block, may
 *    call any smb_*() function again, and are never called with a client lock
 *    held.  Every smb_*() function is thread-safe.
 *  - A callback's (err, status): err is 0 or a local -errno (-ECONNABORTED
 *    when the connection died, -ETIMEDOUT when the server did not answer in
 *    time, -EIO when a signature failed to verify or the reply was malformed,
 *    -ENOMEM); when err is 0, status is the server's NTSTATUS (which may itself
 *    be an error).  Pointers handed to a callback are valid only during it.
 *  - smb_client_destroy() fails every pending request (their callbacks run
 *    with -ECONNABORTED before it returns), logs off, and frees the client.
 */
#ifndef SMBRDMA_CLIENT_CLIENT_H
#define SMBRDMA_CLIENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2.h"

struct smb_client;
struct ev_loop;

enum { SMB_SEC_NTLMSSP = 0, SMB_SEC_KRB5 = 1 };

/* The lowest dialect offered unless smb_client_opts.min_dialect says
 * otherwise: 3.0, the first with a signed check of the negotiation. */
#define SMB_CLIENT_MIN_DIALECT SMB2_DIALECT_0300

/* SMB Direct channels per RDMA interface when rdma_channels is 0: two, as
 * Windows opens (ConnectionCountPerRdmaNetworkInterface).  Soft-RoCE runs a
 * queue pair on one CPU at a time, and the guest benchmark
 * (bench/results/20261126-175632-vm-compare-baseline.txt) has two beating
 * one on 1 MiB write, read and 4 KiB reads. */
#define SMB_RDMA_CHANNELS_DEFAULT 2u

struct smb_client_opts {
	const char *host; /* name or address: the server's name in the UNC, in
	                     Kerberos and in messages */
	const char *addr; /* a numeric address to connect to instead of resolving
	                     host (ip=); NULL = resolve host */
	uint16_t port;    /* 0 = 445 */
	const char *share;
	const char *user;
	const char *password;
	const char *domain;          /* NULL = "" */
	uint16_t min_dialect;        /* 0 = SMB_CLIENT_MIN_DIALECT (3.0): SMB 2.0.2 and 2.1
	                                have no protection against a downgrade by the
	                                path and are offered only when asked for */
	uint16_t max_dialect;        /* 0 = 0x0311 */
	bool guest;                  /* a guest or anonymous session is what the caller
	                                wants (`guest`, sec=none).  Otherwise a server that
	                                answers SESSION_SETUP with IS_GUEST or IS_NULL is
	                                refused when credentials were given: it proved no
	                                knowledge of the password (see smb_client_connect) */
	bool require_signing;        /* sign even if the server does not demand it (`sign`) */
	bool require_encryption;     /* `seal`: encrypt everything; fail the mount when the
	                                server cannot encrypt */
	int sec;                     /* SMB_SEC_NTLMSSP (default) or SMB_SEC_KRB5 */
	const char *keytab;          /* sec=krb5: client keytab; NULL = the caller's
	                                credential cache (KRB5CCNAME) */
	unsigned timeout_ms;         /* per request (timeout=); 0 = 60000; requests waiting
	                                for a reconnect fail with ETIMEDOUT after it too */
	bool hard;                   /* requests never time out: they wait for the server's
	                                answer, and across reconnects, until it comes or
	                                smb_client_destroy(); timeout_ms then bounds only
	                                each step of (re)connecting */
	unsigned max_read;           /* cap on bytes per READ (rsize=); 0 = what the server
	                                and transport allow */
	unsigned max_write;          /* the same for WRITE (wsize=) */
	unsigned echo_ms;            /* keepalive ECHO after this much silence
	                                (echo_interval=); 0 = 60000 */
	bool no_durable;             /* do not ask for durable handles */
	bool no_lease;               /* nolease: ask for no lease and no oplock (and so no
	                                durable handle, which needs one) */
	unsigned connect_timeout_ms; /* 0 = 15000 */
	bool rdma;                   /* carry the channel over SMB Direct instead of TCP */
	const char *transport;       /* "quic": SMB over QUIC; "auto": race TCP and QUIC,
	                                keep the first to connect; NULL/"tcp": TCP (or
	                                SMB Direct with .rdma) */
	uint16_t quic_port;          /* UDP port for QUIC; 0 = 443 */
	const char *cafile;          /* QUIC: trust only these CA certificates (PEM);
	                                NULL = the system trust store */
	const char *certfile;        /* QUIC: client certificate (PEM); NULL = none */
	const char *keyfile;         /* its private key; NULL = in certfile */
	unsigned rdma_threshold;     /* READ/WRITE above this go by RDMA offload; 0 = 4096 */
	bool multichannel;           /* open more channels to the server's interfaces */
	unsigned max_channels;       /* channels in all with multichannel; 0 = 2 */
	unsigned rdma_channels;      /* SMB Direct channels per RDMA interface; 0 =
	                              * SMB_RDMA_CHANNELS_DEFAULT.  Above 1 without
	                              * multichannel: that many to the mount's own address
	                              * (needs the server's MULTI_CHANNEL; else one) */
	unsigned mc_requery_s;       /* re-query the interface list; 0 = 600 s */
	bool no_rdma_channels;       /* multichannel: TCP channels only */
	unsigned mc_echo_ms;         /* multichannel keepalive per channel; 0 = 5000 */
	const char *mc_interfaces;   /* "eth1:eth2": extra channels only via these local
	                                interfaces; NULL = any */
	bool nodfs;                  /* nodfs: do not follow DFS referrals: a link in a DFS
	                                namespace is then an error (EREMOTE), as mount.cifs */
	unsigned dfs_depth;          /* set by the engine, 0 from callers: how many DFS
	                                links were followed to reach this share; from
	                                SMB_DFS_MAX_DEPTH on its own links are not */
	bool posix;                  /* offer the SMB3 POSIX extensions (3.1.1); they are
	                                used when the server accepts them: see smb_attr */
	bool witness;                /* witness: register with the server's Service Witness
	                                ([MS-SWN], a clustered server) and move the channels
	                                when it says (multichannel/witness.c) */
};

/* SMB Direct channels per RDMA interface the options ask for. */
static inline unsigned smb_rdma_channels(const struct smb_client_opts *o)
{
	return o->rdma_channels ? o->rdma_channels : SMB_RDMA_CHANNELS_DEFAULT;
}

/* Connect, negotiate, authenticate, tree connect.  On failure returns -errno
 * and writes a one-line human explanation into errbuf (e.g. "logon failure
 * (STATUS_LOGON_FAILURE): wrong user name or password for 127.0.0.1",
 * "connection refused by 127.0.0.1 port 445"). */
int smb_client_connect(const struct smb_client_opts *opts, struct smb_client **out, char *errbuf,
                       size_t errlen);
void smb_client_destroy(struct smb_client *c);

struct smb_client_info {
	uint16_t dialect;
	bool signing;
	uint16_t signing_alg;
	bool encryption;              /* session or share traffic is sealed */
	uint16_t cipher;              /* SMB2_ENCRYPTION_AES*; 0 when nothing is sealed */
	uint32_t max_read, max_write; /* bytes per READ/WRITE request */
	uint32_t share_type;
	bool posix; /* the SMB3 POSIX extensions are in use on this mount */
	/* They were asked for and the server offers them, but not on this
	 * share (Samba: smb3 unix extensions = no in the share's section). */
	bool posix_share_off;
};
void smb_client_get_info(struct smb_client *c, struct smb_client_info *out);

/* The DFS namespace the mount's share roots (smbrdmactl dfs): what was
 * asked, and each link followed.  Strings are "\\server\share[\path]"
 * and the link's path in the mount ('/'-separated, no leading '/'). */
#define SMB_DFS_TARGETS_MAX 8
/* Links followed one inside another's target, at most (cifs.ko: 8). */
#define SMB_DFS_MAX_DEPTH 4
struct smb_dfs_info {
	uint64_t referrals;         /* referral requests sent */
	uint64_t referral_failures; /* ... that gave no link to follow */
	int nlinks;                 /* links followed (may exceed what was filled) */
};
struct smb_dfs_link_info {
	char path[256];
	char current[320]; /* the target in use now */
	char targets[SMB_DFS_TARGETS_MAX][320];
	int ntargets;   /* in referral order */
	uint32_t ttl;   /* seconds the referral said it holds */
	bool expired;   /* that long has passed since it was asked */
	uint64_t moves; /* times the link moved to another target */
};
/* Fills *info and out[0..max).  0, or -ENOENT when the share is in no
 * DFS namespace (or the mount has nodfs).  Any thread. */
int smb_client_dfs_links(struct smb_client *c, struct smb_dfs_info *info,
                         struct smb_dfs_link_info *out, int max);

/* Drop every live channel now (any thread; smbrdmactl reconnect): requests
 * wait while the session is built again, as after a lost connection.
 * Returns how many channels were dropped. */
int smb_client_reconnect_now(struct smb_client *c, const char *why);

/* An oplock of ours was broken: the handle smb_open() gave as fid may now
 * cache only what level allows (SMB2_OPLOCK_LEVEL_II: reads;
 * SMB2_OPLOCK_LEVEL_NONE: nothing).  Called on the loop thread just before
 * the engine acknowledges the break, and on the channel manager thread with
 * LEVEL_NONE for each handle reopened after a reconnect; it must not block.
 * Set once, before the first smb_open(). */
typedef void (*smb_break_cb)(void *arg, struct smb2_fileid fid, uint8_t level);
void smb_client_set_break_cb(struct smb_client *c, smb_break_cb cb, void *arg);

/* Byte-range locks outlive a connection: every lock a LOCK request took
 * (and no UNLOCK gave back) is remembered with its handle, and when a
 * reconnect reopens the handle by path (the server forgot it; a durable
 * reconnect keeps its locks, [MS-SMB2] 3.3.5.9.7) each is taken again with
 * FAIL_IMMEDIATELY before any parked request goes out.  A lock that cannot
 * be taken again (another client took the range meanwhile) is lost: cb is
 * called for it (on the channel manager thread; it must not block), and
 * every request on the handle but its CLOSE fails with -EIO from then on,
 * as the kernel reports a lost lock.  Without cb the engine logs the path
 * and the range itself.  Set once, before the first smb_open(). */
typedef void (*smb_lock_lost_cb)(void *arg, struct smb2_fileid fid, const char *path, uint64_t off,
                                 uint64_t len, bool exclusive, uint32_t status);
void smb_client_set_lock_lost_cb(struct smb_client *c, smb_lock_lost_cb cb, void *arg);
/* Was fid's handle lost in a reconnect, or one of its locks (above)?  Its
 * requests fail with -EIO then (but its CLOSE).  Any thread. */
bool smb_file_failed(struct smb_client *c, struct smb2_fileid fid);

/* Leases ([MS-SMB2] 3.2.4.3.2): smb_open() with args->lease_id != 0 asks for
 * a lease instead of an oplock when the server offers leasing (2.1 and up;
 * on directories only with directory leasing): R|W|H on a file, R|H on a
 * directory.  Every open with one lease_id shares one lease (fuse/ uses the
 * inode), so opens of one file never break each other.  smb_attr.lease says
 * what was granted (the lease's state now, for all its opens).
 *
 * When the server breaks a lease, cb gets the lease_id, the state it had
 * and the state it keeps (new_state, a subset), and an ack token.  cb runs
 * on the loop thread and must not block: it starts dropping what it cached
 * beyond new_state (writing back dirty data first when W goes) and, when
 * that is done, calls smb_lease_break_done(ack) once, from any thread; the
 * engine acknowledges the break then, if the server asked for it.  Until
 * then the server holds back the open that caused the break.  Without a cb
 * the engine acknowledges at once.  Set once, before the first smb_open(). */
struct smb_lease_ack;
typedef void (*smb_lease_break_cb)(void *arg, uint64_t lease_id, uint32_t old_state,
                                   uint32_t new_state, struct smb_lease_ack *ack);
void smb_client_set_lease_break_cb(struct smb_client *c, smb_lease_break_cb cb, void *arg);
/* Any thread, before smb_client_destroy() returned; frees ack. */
void smb_lease_break_done(struct smb_lease_ack *ack);
/* Frees ack without acknowledging (any time: a teardown that cannot wait). */
void smb_lease_break_drop(struct smb_lease_ack *ack);

/* The event loop the client's callbacks run on.  Owned by the client (valid
 * until smb_client_destroy()); a caller may add its own fds and calls to it
 * (fuse/ serves /dev/fuse from it, so a request and its reply never change
 * threads), under the rules of common/evloop.h. */
struct ev_loop *smb_client_loop(struct smb_client *c);

/* ---- statistics (smbrdmactl stats) ------------------------------------------- */
#define SMB_CLIENT_MAX_CHANNELS 32
#define SMB_STATS_COMMANDS      19 /* SMB2 command codes 0x00..0x12 */
/* Request latency, from submission to a channel to its answer, in log2
 * microsecond buckets: bucket k < SMB_LAT_BUCKETS - 1 counts the requests
 * answered in at most 2^k us (and more than 2^(k-1) us; bucket 0: at most
 * 1 us); the last bucket counts the slower ones (over 2^24 us, 16.8 s). */
#define SMB_LAT_BUCKETS 26
struct smb_channel_stats {
	char transport[8];          /* "tcp", "rdma" */
	char local[64], remote[64]; /* address:port */
	char state[16];             /* "up", "dead" */
	uint64_t requests;          /* SMB2 messages sent */
	/* PDUs sent by command code (SMB2_NEGOTIATE .. SMB2_OPLOCK_BREAK): a
	 * compound counts once in requests and once per PDU here */
	uint64_t commands[SMB_STATS_COMMANDS];
	uint64_t bytes_sent, bytes_received; /* carried inline, SMB2 framing included */
	uint64_t rdma_read_bytes, rdma_write_bytes;
	uint32_t credits;                    /* SMB2 credits available now */
	uint32_t send_credits, recv_credits; /* transport credits (SMB Direct) */
	uint64_t mw_bound, mw_invalidated_remote, mw_invalidated_local;
	uint64_t reconnects;
	uint64_t failovers;               /* requests this channel lost that went to another */
	uint64_t replays;                 /* requests replayed on this channel */
	uint64_t offload_fallback_inline; /* READ/WRITEs meant for RDMA sent inline: the
	                                     transport gave no per-I/O token */
	uint64_t offload_reused;          /* offloaded READ/WRITEs whose pool buffer came uncleared
	                                     from the same open's I/O before (client/offload.h) */
	/* SMB2 messages sent and unanswered, and requests waiting for credits */
	uint32_t in_flight;
	/* requests answered (not failed locally), by latency (SMB_LAT_BUCKETS),
	 * and the sum of their latencies in microseconds */
	uint64_t latency_buckets[SMB_LAT_BUCKETS];
	uint64_t latency_sum_us;
};
/* The Service Witness client of a mount with `witness` (multichannel/
 * witness.c): what it is doing and what the server told it.  Strings are
 * NUL-terminated; "" when not known. */
struct smb_witness_info {
	bool on;                /* the mount asked for it */
	char state[32];         /* "registered", "waiting to retry", ... */
	char server[48];        /* the witness server's address */
	char registered[48];    /* the address registered for: the mount's */
	char error[160];        /* the last failure, "" if none */
	char last_event[160];   /* the last notification, as logged */
	uint64_t events, moves; /* notifications; those that moved the mount */
	uint64_t held;          /* requests held during planned moves (never failed
	                           or sent twice: sent after the move) */
	uint64_t drain_replays; /* requests still in flight when a move cut its
	                           channels after waiting (replayed after it) */
};

struct smb_client_stats {
	uint16_t dialect;
	bool signing;
	int nchannels;
	struct smb_channel_stats channels[SMB_CLIENT_MAX_CHANNELS];
	uint64_t payload_bytes_copied; /* READ/WRITE payload bytes the engine copied */
	uint64_t leases_granted;       /* opens granted a lease */
	uint64_t lease_breaks;         /* LEASE_BREAK notifications received */
	uint64_t lease_break_acks;     /* ... acknowledged, and the server agreed */
	struct smb_witness_info witness;
};
/* A snapshot; any thread. */
void smb_client_get_stats(struct smb_client *c, struct smb_client_stats *out);

/* ---- attributes --------------------------------------------------------------- */
struct smb_attr {
	uint64_t file_id; /* server's IndexNumber / FileId; 0 if unknown */
	uint64_t creation_time, last_access_time, last_write_time, change_time; /* NT time */
	uint64_t end_of_file;
	uint64_t allocation_size;
	uint32_t file_attributes; /* FILE_ATTRIBUTE_* */
	uint32_t nlink;           /* 0 if unknown */
	bool symlink;             /* never set by the engine: fuse/ marks mfsymlinks */
	uint8_t oplock;           /* smb_open only: the oplock granted (SMB2_OPLOCK_LEVEL_*) */
	uint32_t lease;           /* smb_open only, oplock SMB2_OPLOCK_LEVEL_LEASE: the lease
	                             state granted (SMB2_LEASE_*, client/proto/smb2_const.h) */
	/* With the SMB3 POSIX extensions in use (smb_client_info.posix) every
	 * smb_attr the engine hands out has posix set and these filled from
	 * the server's POSIX information; file_id is then its inode number. */
	bool posix;
	uint32_t mode;     /* S_IFMT type bits | permission bits (07777) */
	uint32_t uid, gid; /* SMB2_POSIX_ID_NONE (client/proto/smb2_const.h): a SID
	                      with no Unix id */
	uint32_t rdev;     /* device number of a character or block device, as
	                      SMB_ATTR_RDEV() makes it: the POSIX information's
	                      DeviceId (ksmbd: the Linux kernel's dev_t) */
};
/* The Linux kernel's dev_t: major << 20 | minor (20 bits). */
#define SMB_ATTR_RDEV(major, minor) ((uint32_t)(major) << 20 | ((uint32_t)(minor)&0xfffffu))

struct smb_fsinfo {
	uint64_t total_units, avail_units, free_units;
	uint32_t bytes_per_unit; /* sectors_per_unit * bytes_per_sector */
};

typedef void (*smb_status_cb)(void *arg, int err, uint32_t status);
typedef void (*smb_attr_cb)(void *arg, int err, uint32_t status, const struct smb_attr *attr);
typedef void (*smb_open_cb)(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                            const struct smb_attr *attr);
typedef void (*smb_read_cb)(void *arg, int err, uint32_t status, const void *data, size_t len);
typedef void (*smb_write_cb)(void *arg, int err, uint32_t status, size_t written);
typedef void (*smb_fsinfo_cb)(void *arg, int err, uint32_t status, const struct smb_fsinfo *fs);

/* One directory entry; name is UTF-8 and NUL-terminated. */
struct smb_dirent {
	const char *name;
	struct smb_attr attr;
};
/* Called once per QUERY_DIRECTORY reply with all the entries in it (count may
 * be 0).  status STATUS_NO_MORE_FILES means the listing is complete. */
typedef void (*smb_dir_cb)(void *arg, int err, uint32_t status, const struct smb_dirent *ents,
                           size_t count);

/* ---- path operations (each one round trip, compounded inside) ------------------ */

/* create+query(FileAllInformation)+close: attributes of a path.  One
 * related compound, or, where the server serves compounds slower than
 * SPLIT_FACTOR lone requests (client/ops.c, "lookups in steps"), CREATE,
 * QUERY_INFO and CLOSE one after the other; either way the handle is
 * closed before cb runs, once. */
int smb_stat(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
/* How smb_stat() goes: AUTO (the default) decides by the round trips it
 * measures; NEVER always as the compound; ALWAYS in steps once the server
 * has answered QFid (tests).  Set before the first smb_stat(). */
enum smb_meta_split { SMB_META_SPLIT_AUTO, SMB_META_SPLIT_NEVER, SMB_META_SPLIT_ALWAYS };
void smb_client_set_meta_split(struct smb_client *c, enum smb_meta_split mode);
/* The choice smb_stat() makes in AUTO from the two running means (0: no
 * sample yet) for its nth lookup (pure; exposed for tests). */
bool smb_stat_split_wanted(uint64_t compound_us, uint64_t single_us, uint64_t nth);

struct smb_open_args {
	uint32_t desired_access;     /* FILE_READ_DATA | ... or GENERIC_* */
	uint32_t share_access;       /* 0 = FILE_SHARE_ALL */
	uint32_t create_disposition; /* FILE_OPEN, FILE_CREATE, FILE_OPEN_IF, FILE_OVERWRITE_IF */
	uint32_t create_options;     /* FILE_DIRECTORY_FILE, FILE_NON_DIRECTORY_FILE, ... */
	uint32_t file_attributes;    /* for new files; 0 = FILE_ATTRIBUTE_NORMAL */
	uint64_t lease_id;           /* smb_open: not 0 = ask for a lease keyed by it (see
	                                smb_client_set_lease_break_cb) instead of an oplock */
	uint64_t parent_lease_id;    /* with lease_id, on 3.x with directory leasing: the
	                                lease_id of the directory the path is in
	                                (ParentLeaseKey): a change this open makes there
	                                does not break that directory's lease */
	bool set_mode;               /* with the POSIX extensions in use: a file this
	                                create makes gets mode's permission bits (the
	                                POSIX create context); ignored otherwise */
	uint32_t mode;
};
/* Does the server grant directory leases on this session (3.x and
 * SMB2_GLOBAL_CAP_DIRECTORY_LEASING)? */
bool smb_client_leases_dirs(const struct smb_client *c);
/* create (+ query FileAllInformation for the file id and link count), keeping
 * the handle open; close it with smb_close().  Without the POSIX extensions a
 * FILE_CREATE, FILE_OPEN or FILE_OVERWRITE open of a non-directory asks QFid
 * too, and once the server has answered QFid such opens go as the CREATE
 * alone: attr then has the CREATE response's times, sizes and attributes,
 * QFid's file id, and nlink 1 for a file the open made, 0 ("unknown") for one
 * it found. */
int smb_open(struct smb_client *c, const char *path, const struct smb_open_args *args,
             smb_open_cb cb, void *arg);
int smb_close(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg);
/* Close n handles in one round trip, a compound of unrelated CLOSEs.
 * mtimes may be NULL; else a nonzero mtimes[i] (NT time) is set as the
 * file's LastWriteTime just before its CLOSE (a SET_INFO in the same
 * compound, its outcome ignored): the time a stat showed while the file
 * was open stays, where the server would move it to the time of the
 * CLOSE (Samba, Windows).  The compound carries at most
 * SMB_CLOSE_BATCH_MAX PDUs: n plus the nonzero mtimes.  cb runs once for
 * each handle, in order, with args[i] and that CLOSE's own status (or
 * err, the same for all, when the round trip failed).  -errno: nothing
 * was sent and cb will not run (close them one by one then). */
#define SMB_CLOSE_BATCH_MAX 6
static inline int smb_close_batch_pdus(const uint64_t *mtimes, int n)
{
	int npdu = n;
	for (int i = 0; mtimes && i < n; i++)
		npdu += mtimes[i] != 0;
	return npdu;
}
int smb_close_batch(struct smb_client *c, const struct smb2_fileid *fids, const uint64_t *mtimes,
                    void *const *args, int n, smb_status_cb cb);

/* create an empty file (FILE_CREATE) + query + close: mknod(S_IFREG). */
int smb_create_file(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
/* create directory (FILE_CREATE) + query + close. */
int smb_mkdir(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);
/* smb_mkdir() (dir) or smb_create_file() (!dir) whose new file gets the
 * permission bits of mode when the POSIX extensions are in use (else the
 * server's default, as those two). */
int smb_create_mode(struct smb_client *c, const char *path, bool dir, uint32_t mode, smb_attr_cb cb,
                    void *arg);
/* The same, set_mode saying whether mode is given, the open asking for a
 * lease keyed by lease_id that names the lease of the directory the path
 * is in (parent_lease_id, 0: none; as smb_unlink_in()): our own mkdir and
 * mknod do not break our own lease on that directory. */
int smb_create_in(struct smb_client *c, const char *path, bool dir, bool set_mode, uint32_t mode,
                  uint64_t lease_id, uint64_t parent_lease_id, smb_attr_cb cb, void *arg);
/* Delete a file (is_dir false) or an empty directory (true): create with
 * DELETE + FILE_DELETE_ON_CLOSE, then close. */
int smb_unlink(struct smb_client *c, const char *path, bool is_dir, smb_status_cb cb, void *arg);
/* The same, the open asking for a lease keyed by lease_id that names the
 * lease of the directory the path is in (parent_lease_id, 0: none): the
 * delete does not break this client's own lease on that directory. */
int smb_unlink_in(struct smb_client *c, const char *path, bool is_dir, uint64_t lease_id,
                  uint64_t parent_lease_id, smb_status_cb cb, void *arg);
/* create(DELETE) + set FileRenameInformation + close. */
int smb_rename(struct smb_client *c, const char *from, const char *to, bool replace,
               smb_status_cb cb, void *arg);

/* What to change in smb_setattr(); fields not flagged are ignored. */
enum {
	SMB_SET_SIZE = 1u << 0,
	SMB_SET_ATIME = 1u << 1,
	SMB_SET_MTIME = 1u << 2,
	SMB_SET_CTIME = 1u << 3,
	SMB_SET_ATTRIBUTES = 1u << 4, /* file_attributes (e.g. READONLY) */
	/* POSIX extensions only (-EOPNOTSUPP otherwise): a security
	 * descriptor the way the extensions carry chmod and chown
	 * (client/proto/smb2_posix.h).  By path, except SMB_SET_MODE alone
	 * on a handle opened with WRITE_DAC (-EINVAL otherwise). */
	SMB_SET_MODE = 1u << 5, /* mode's permission bits */
	SMB_SET_UID = 1u << 6,  /* owner S-1-22-1-uid */
	SMB_SET_GID = 1u << 7,  /* group S-1-22-2-gid */
};
struct smb_setattr_args {
	unsigned which;
	uint64_t size;
	uint64_t atime, mtime, ctime; /* NT time */
	uint32_t file_attributes;
	uint32_t mode, uid, gid;
	/* By path only: the file's lease key and its directory's, so that a
	 * change of ours does not break our own lease on the directory
	 * (ParentLeaseKey; ignored where the session cannot carry it, as
	 * smb_unlink_in()).  0: no lease asked. */
	uint64_t lease_id, parent_lease_id;
};
/* On an open handle when fid != NULL (no create/close), else by path.
 * Replies with the attributes after the change. */
int smb_setattr(struct smb_client *c, const char *path, const struct smb2_fileid *fid,
                const struct smb_setattr_args *args, smb_attr_cb cb, void *arg);

int smb_statfs(struct smb_client *c, smb_fsinfo_cb cb, void *arg);

/* ---- handle operations --------------------------------------------------------- */

/* Attributes by handle (QUERY_INFO FileAllInformation). */
int smb_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg);

/* Read up to len bytes.  len may exceed max_read: the engine splits it and
 * calls back once with the whole result (short only at end of file; 0 bytes
 * and status STATUS_SUCCESS at or past EOF). */
int smb_read(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, size_t len,
             smb_read_cb cb, void *arg);
/* Write len bytes; the engine copies what it needs before returning, so data
 * may be reused at once.  Split above max_write; calls back once with the
 * total written. */
int smb_write(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
              size_t len, smb_write_cb cb, void *arg);
/* Like smb_write(), but data is lent, not copied: sent in place inline (TCP,
 * QUIC, small or sealed writes: the transport reads it, or the sealing
 * encrypts from it), or, offloaded from a region given to
 * smb_client_region_add(), RDMA-Read by the server from data itself.  Only
 * an offloaded write from outside every region is copied, into the offload
 * pool.  The caller keeps data valid and unchanged until cb has run, which
 * is never before every transport has let go of it (conn.h payload_lent). */
int smb_write_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                   size_t len, smb_write_cb cb, void *arg);

/* A small write, then new times on the same handle, in one round trip
 * (a compound of WRITE and SET_INFO FileBasicInformation): what a
 * buffered write followed by futimens() or utime() needs (tar, cp -p).
 * len is at most SMB_WRITE_TIMES_MAX and more than 0; data is copied
 * before the call returns.  times->which holds SMB_SET_ATIME and/or
 * SMB_SET_MTIME only.  cb gets the bytes written and the status of the
 * first of the two that failed (the SET_INFO runs only after the WRITE
 * succeeded: a related chain). */
#define SMB_WRITE_TIMES_MAX 65536u
int smb_write_times(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                    size_t len, const struct smb_setattr_args *times, smb_write_cb cb, void *arg);

/* Like smb_read(), but the data lands in buf and cb gets data == buf: when
 * the read can be offloaded into a region given to smb_client_region_add()
 * the server RDMA-Writes it there; over TCP it is received straight into
 * buf; else (encrypted, QUIC) the engine copies it there once.  On RDMA
 * outside a region (or too small, too large, a failover) cb may get the data
 * in the engine's buffer, valid during cb only, and the caller copies it.
 * buf must stay valid until cb has run; after a failure its contents are
 * unspecified. */
int smb_read_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, void *buf,
                  size_t len, smb_read_cb cb, void *arg);

/* Register [addr, addr+len) once with the mount's RDMA channel (the
 * registration cache), so smb_write_lent() and smb_read_lent() inside it
 * move no payload through the daemon.  0; -EOPNOTSUPP when the mount does not offload
 * (TCP, or offload set-up failed); -errno.  The memory must stay allocated
 * until smb_client_destroy() returned.  Any thread; at most
 * SMB_CLIENT_MAX_REGIONS regions. */
#define SMB_CLIENT_MAX_REGIONS 8
int smb_client_region_add(struct smb_client *c, void *addr, size_t len);
int smb_flush(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg);

/* List a directory opened with smb_open(FILE_DIRECTORY_FILE, FILE_LIST_DIRECTORY).
 * restart asks the server to start over.  Entries "." and ".." are passed on
 * as the server sends them. */
int smb_readdir(struct smb_client *c, struct smb2_fileid fid, bool restart, smb_dir_cb cb,
                void *arg);

/* ---- extended attributes, hard links, small whole files ------------------------- */

/* A buffer the server sent (valid during the call only). */
typedef void (*smb_buf_cb)(void *arg, int err, uint32_t status, const uint8_t *buf, size_t len);

/* The EAs of path as a FILE_FULL_EA_INFORMATION chain (iterate with
 * smb2_ea_next() of client/proto/smb2_fsctl.h), all of them or only name's.
 * One round trip (CREATE + QUERY_INFO + CLOSE), at most 64 KiB of them. */
int smb_query_eas(struct smb_client *c, const char *path, const char *name, smb_buf_cb cb,
                  void *arg);
/* Set EA name on path to value (len 0 removes it).  One round trip. */
int smb_set_ea(struct smb_client *c, const char *path, const char *name, const void *value,
               size_t len, smb_status_cb cb, void *arg);
/* A hard link: to becomes another name of the file from (never replacing). */
int smb_link(struct smb_client *c, const char *from, const char *to, smb_status_cb cb, void *arg);
/* Create path (it must not exist) holding data (1..64 KiB): CREATE + WRITE +
 * CLOSE in one round trip (mfsymlinks). */
int smb_put_small(struct smb_client *c, const char *path, const void *data, size_t len,
                  smb_status_cb cb, void *arg);
/* The first max (1..64 KiB) bytes of path: CREATE + READ + CLOSE. */
int smb_get_small(struct smb_client *c, const char *path, size_t max, smb_buf_cb cb, void *arg);
/* The reparse point of path itself (a symbolic link, a special file):
 * CREATE (FILE_OPEN_REPARSE_POINT) + FSCTL_GET_REPARSE_POINT + CLOSE, the
 * REPARSE_DATA_BUFFER (at most SMB_REPARSE_MAX bytes) to cb; a file that
 * is none gets STATUS_NOT_A_REPARSE_POINT. */
#define SMB_REPARSE_MAX 16384
int smb_get_reparse(struct smb_client *c, const char *path, smb_buf_cb cb, void *arg);

/* One FSCTL on an open handle (IOCTL with SMB2_0_IOCTL_IS_FSCTL): cb gets the
 * output buffer, with status SUCCESS, BUFFER_OVERFLOW (output cut at
 * max_out) or INVALID_PARAMETER (SRV_COPYCHUNK: the output holds the
 * server's limits), or the failing status and no buffer.  Input and output
 * layouts: client/proto/smb2_fsctl.h. */
int smb_fsctl(struct smb_client *c, struct smb2_fileid fid, uint32_t code, const void *in,
              size_t inlen, uint32_t max_out, smb_buf_cb cb, void *arg);
/* Byte-range locks: one LOCK request with n (1..64) elements. */
struct smb2_lock_elem;
int smb_lock(struct smb_client *c, struct smb2_fileid fid, const struct smb2_lock_elem *e,
             uint16_t n, smb_status_cb cb, void *arg);

/* ---- the public constants ------------------------------------------------------------ *
 * This header is all fuse/ and lib/ include of the engine.  The numbers they
 * need (STATUS_*, FILE_ATTRIBUTE_*, FILE_* access and create values,
 * SMB2_OPLOCK_LEVEL_*, SMB2_LEASE_*, SMB2_POSIX_ID_NONE, dialects, ciphers)
 * come with it from client/proto/smb2_const.h, through the
 * client/proto/smb2.h included above for struct smb2_fileid and the name and
 * time helpers.  smb2_const.h holds #defines and enums only, no code, so it
 * serves as the public constants header as it is; a second copy of the
 * numbers here could only drift from it.  The codec's encoders and decoders
 * that smb2.h also declares are not for fuse/ or lib/: every PDU and payload
 * is built and parsed in client/ (the calls below). */

/* ---- byte ranges, EA lists, locks and links as parsed values ---------------------- *
 * (client/ops_fsctl.c.)  fuse/ and lib/ use these rather than smb_fsctl(),
 * smb_query_eas(), smb_lock() and smb_get_reparse() with a payload they would
 * encode or decode themselves: every SMB2 structure is built and parsed in
 * the engine.  The rules at the top of this file hold: a call fails
 * synchronously (-errno, no callback) or calls back exactly once on the loop
 * thread; any thread may call them.  Every pointer handed to a callback is
 * valid during it only (the engine's talloc memory, freed after the callback
 * returns; copy what is to be kept).  A payload the server sent that does not
 * parse is logged and reported as err -EIO. */

/* Server-side copy of len (> 0, else -EINVAL) bytes from src at src_off to
 * dst at dst_off, clamped to the source's end of file: QUERY_INFO on src,
 * FSCTL_SRV_REQUEST_RESUME_KEY on src, then FSCTL_SRV_COPYCHUNK_WRITE on dst
 * (dst opened with read access too) in requests of at most 16 chunks of
 * 1 MiB (Samba's limits; a server that answers STATUS_INVALID_PARAMETER
 * with lower ones gets the request again within them), until done or the
 * server copies less than asked.  cb gets copied, the bytes copied (a
 * partial copy is one: report it like a short write), and the (err,
 * status) that stopped the copy (0/STATUS_SUCCESS when it ended normally,
 * also when the source ends at src_off: copied 0).
 * no_offload: the failure came from the resume key request, i.e. the server
 * does no server-side copy from this handle (the caller falls back to read
 * and write). */
typedef void (*smb_copy_cb)(void *arg, int err, uint32_t status, uint64_t copied, bool no_offload);
int smb_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                   struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                   void *arg);

/* Zero [off, off+len) of an open file: FSCTL_SET_ZERO_DATA.  punch: first
 * FSCTL_SET_SPARSE (its result ignored: without sparse files the range just
 * stays allocated), so the range is deallocated.  The size never changes.
 * -EINVAL if off + len overflows. */
int smb_zero_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   bool punch, smb_status_cb cb, void *arg);

/* The allocated (data) ranges of an open file inside [off, off+len):
 * FSCTL_QUERY_ALLOCATED_RANGES, at most 64 KiB of answer (4096 ranges).
 * cb gets them in ascending, non-overlapping order with status
 * STATUS_SUCCESS, or STATUS_BUFFER_OVERFLOW when the server cut the list
 * (the ranges given are still valid); any other status with none
 * (STATUS_INVALID_DEVICE_REQUEST, STATUS_NOT_SUPPORTED: the server or file
 * system keeps no such list). */
struct smb_range {
	uint64_t off, len;
};
typedef void (*smb_ranges_cb)(void *arg, int err, uint32_t status, const struct smb_range *r,
                              size_t n);
int smb_query_ranges(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                     smb_ranges_cb cb, void *arg);

/* Extended attributes as a list.  An EA with no value does not exist
 * (Windows semantics: setting one to "" removes it), so such entries are
 * left out; a file with no EAs (STATUS_NO_EAS_ON_FILE, or
 * STATUS_NONEXISTENT_EA_ENTRY when name is asked for) is an empty list with
 * STATUS_SUCCESS.  name is NUL-terminated at name_len and holds no NUL; the
 * server compares names case-insensitively (so should the caller). */
#define SMB_EA_NAME_MAX  255   /* EaNameLength is one byte */
#define SMB_EA_VALUE_MAX 65535 /* EaValueLength is two */
struct smb_ea_entry {
	const char *name;
	size_t name_len;
	const uint8_t *value;
	size_t value_len; /* > 0 */
};
typedef void (*smb_eas_cb)(void *arg, int err, uint32_t status, const struct smb_ea_entry *eas,
                           size_t n);
/* All EAs of path, or only name's (NULL: all): smb_query_eas(), parsed. */
int smb_list_eas(struct smb_client *c, const char *path, const char *name, smb_eas_cb cb,
                 void *arg);

/* The default of smb_client_opts.rdma_threshold: READ/WRITE of at most
 * this many bytes go inline (a lent buffer is sent in place). */
#define SMB_CLIENT_RDMA_THRESHOLD 4096

/* Byte-range locks: one LOCK request with one element.  flags: SMB_LOCK_SHARED
 * or SMB_LOCK_EXCLUSIVE, with SMB_LOCK_FAIL_IMMEDIATELY not to wait on the
 * server; or SMB_LOCK_UNLOCK alone. */
#define SMB_LOCK_SHARED           0x01u
#define SMB_LOCK_EXCLUSIVE        0x02u
#define SMB_LOCK_UNLOCK           0x04u
#define SMB_LOCK_FAIL_IMMEDIATELY 0x10u
int smb_lock_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   uint32_t flags, smb_status_cb cb, void *arg);

/* Minshall+French symlink files ("mfsymlinks", as cifs.ko): a regular file
 * of exactly SMB_MFSYMLINK_SIZE bytes holding the target and its MD5. */
#define SMB_MFSYMLINK_SIZE       1067
#define SMB_MFSYMLINK_TARGET_MAX 1024
/* Create path (it must not exist) as an mfsymlink to target (1 ..
 * SMB_MFSYMLINK_TARGET_MAX bytes, else -EINVAL): smb_put_small(). */
int smb_mfsymlink_create(struct smb_client *c, const char *path, const char *target,
                         smb_status_cb cb, void *arg);
/* Read path as an mfsymlink: smb_get_small() of SMB_MFSYMLINK_SIZE bytes.
 * target (NUL-terminated) is NULL, with STATUS_SUCCESS, when the file is
 * none (not in the format, or its MD5 does not match). */
typedef void (*smb_target_cb)(void *arg, int err, uint32_t status, const char *target);
int smb_mfsymlink_read(struct smb_client *c, const char *path, smb_target_cb cb, void *arg);
/* The target of a symbolic link the server keeps as one (its symlink
 * reparse point: smb_get_reparse()): its substitute name in UTF-8, as the
 * server wrote it (at most PATH_MAX - 1 bytes); err -EINVAL when path is
 * no symbolic link (any more). */
int smb_read_symlink(struct smb_client *c, const char *path, smb_target_cb cb, void *arg);
/* The device numbers of a device node from its NFS reparse point
 * (smb_get_reparse(); Samba 4.22 describes its share's devices so):
 * rdev as SMB_ATTR_RDEV() makes it; err -EOPNOTSUPP when the reparse
 * point is well formed but no character or block device's. */
typedef void (*smb_rdev_cb)(void *arg, int err, uint32_t status, uint32_t rdev);
int smb_read_rdev(struct smb_client *c, const char *path, smb_rdev_cb cb, void *arg);

/* ---- time helpers ----------------------------------------------------------- */
/* See smb_nttime_to_timespec() in client/proto/smb2.h. */

#endif
