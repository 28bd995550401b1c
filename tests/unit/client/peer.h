/* tests/unit/client/peer.h — a scripted SMB2 server in C, in-process, for
 * unit tests of the whole client engine (client/session.c, ops.c, opens.c,
 * reconnect) with no sockets and no Samba.
 *
 * peer.c also defines smb_transport_tcp_new() and smb_transport_rdma_new()
 * (and a stub for QUIC), so a test links it instead of client/transport_tcp.c
 * and smbd/: every channel the client opens, whatever its address, is a new
 * connection to the one peer.  The transport hands each message the client sends to the peer
 * at once (inside send()) and delivers the peer's answers on the client's
 * loop thread, as a socket would.
 *
 * The peer mirrors tests/lib/hostile_server.py: SMB 3.1.1 (preauth integrity
 * SHA-512, AES-CMAC signing, SIGNING_REQUIRED), NTLMSSP (NTLMv2 checked
 * against a known user and password, KEY_EXCH), one disk share, a small file
 * tree, durable v2 handles under a batch oplock (DH2Q, DH2C, a replayed
 * CREATE known by its CreateGuid, [MS-SMB2] 3.3.5.9.10), LOCK granted on
 * any open handle (no lock is kept: a hook refuses one).  Every response of
 * a session with a key is signed; signed requests are verified (a bad one is
 * a violation).  Hooks script faults; every request header is recorded.
 *
 * Multichannel ([MS-SMB2] 3.3.5.5.2): the peer offers MULTI_CHANNEL, lists
 * the interfaces of peer_set_interfaces() to FSCTL_QUERY_NETWORK_INTERFACE_INFO,
 * and accepts a binding SESSION_SETUP (signed with Session.SigningKey) to a
 * session that still has a live connection; the bound channel's responses
 * are signed with its own Channel.SigningKey (derived from the session's
 * SessionKey and the binding's preauth hash).  Every channel of a session
 * shares its tree and opens; a connection's loss ends the session only with
 * its last channel (a binding to it is then refused, USER_SESSION_DELETED).
 *
 * SMB Direct, emulated (a mount with smb_client_opts.rdma): the transport
 * says kind "rdma" with SMB_TRANSPORT_CAP_RDMA and implements region_add,
 * io_token_get and io_token_put over the client's own memory; in-process,
 * RDMA is memcpy.  A READ whose Channel is RDMA_V1(_INVALIDATE) is answered
 * by writing the data into the memory its Buffer Descriptor V1 names and
 * DataLength 0, DataRemaining the bytes; a WRITE's data is read from there.
 * The peer checks what an RNIC and a server would: a token lies in a
 * registered region, no two live tokens share memory the server writes, a
 * descriptor names a live token of this connection, of the I/O's direction
 * and Channel, and covers the Length; io_token_put comes once, on the loop
 * thread; a token is done (its done() queued on the loop) only after it.
 * Anything else is a violation.
 *
 * One peer at a time (the transport constructor finds it through a global).
 * All functions are thread-safe. */
#ifndef SMBRDMA_TESTS_UNIT_CLIENT_PEER_H
#define SMBRDMA_TESTS_UNIT_CLIENT_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_USER     "tester"
#define PEER_PASSWORD "peer-pw"
#define PEER_DOMAIN   "PEERDOM"
#define PEER_SHARE    "share"

struct peer;

struct peer *peer_new(void);
void peer_free(struct peer *p);

/* Grant durable v2 handles (default true); off: a server that keeps no
 * CreateGuid, so a replayed exclusive create meets its own first try. */
void peer_set_durable(struct peer *p, bool on);

/* Answer a CREATE's QFid context ([MS-SMB2] 2.2.14.2.9) with the file's
 * id, as QUERY_INFO FileAllInformation gives it (default off: a server
 * that ignores the context). */
void peer_set_qfid(struct peer *p, bool on);

/* Offer leasing (SMB2_GLOBAL_CAP_LEASING; default off): a CREATE asking
 * for a lease (RqLs, OPLOCK_LEVEL_LEASE) is granted what it asks, R|W|H at
 * most. */
void peer_set_leasing(struct peer *p, bool on);
/* With leasing, offer directory leases too (SMB2_GLOBAL_CAP_DIRECTORY_LEASING;
 * default off): a directory's lease is granted R|H at most. */
void peer_set_dir_leasing(struct peer *p, bool on);
/* Send a LEASE_BREAK notification (ACK_REQUIRED) to new_state for the
 * lease of an open of path, on that open's connection; false if there is
 * no such lease (or it is breaking already). */
bool peer_break_lease(struct peer *p, const char *path, uint32_t new_state);
/* The key and state of the last lease break acknowledgment accepted;
 * false if none. */
bool peer_last_lease_ack(struct peer *p, uint8_t key[16], uint32_t *state);

/* Limits; 0 keeps a field's default.  For mounts made after. */
struct peer_limits {
	/* NEGOTIATE's MaxReadSize and MaxWriteSize (default 1 MiB); a READ or
	 * WRITE above is refused (STATUS_INVALID_PARAMETER), a violation */
	uint32_t max_read, max_write;
	/* the emulated SMB Direct's MaxReadWriteSize (info max_read_write;
	 * default 65536, so the client's pool buffers are 64 KiB) */
	uint32_t rdma_max_read_write;
	/* the largest region region_add registers; larger: -ENOMEM, as a
	 * RLIMIT_MEMLOCK refusal (default: no limit) */
	size_t rdma_max_region;
};
void peer_set_limits(struct peer *p, const struct peer_limits *l);
/* The next n io_token_get calls fail with err (e.g. -ENOMEM: no window to
 * bind, no registration). */
void peer_rdma_fail_tokens(struct peer *p, int n, int err);
/* on: io_token_put holds the token (its done() is not queued): the memory
 * stays the server's.  off: every held token is done. */
void peer_rdma_hold(struct peer *p, bool on);
/* Tokens handed out and not yet done. */
int peer_rdma_tokens_live(struct peer *p);

/* The server's interfaces for FSCTL_QUERY_NETWORK_INTERFACE_INFO: IPv4
 * addresses (IfIndex 1, 2, ... in this order; up to 4).  Default: none
 * (an empty list). */
void peer_set_interfaces(struct peer *p, const char *const *ipv4, int n);

/* The file tree; paths '/'-separated, relative to the share root. */
void peer_add_file(struct peer *p, const char *path, const void *data, size_t len);
void peer_add_dir(struct peer *p, const char *path);
bool peer_exists(struct peer *p, const char *path);
/* Copies up to cap bytes of the file into out; its size, or -1 if none. */
long peer_file_data(struct peer *p, const char *path, void *out, size_t cap);

/* ---- hooks ------------------------------------------------------------------ */
enum peer_action {
	PEER_LOST_REPLY = 1, /* carry the whole message out, answer nothing, and
	                        close the connection */
	PEER_STATUS,         /* answer the matching PDU with status (not carried out) */
	PEER_NO_REPLY,       /* carry it out and answer nothing; the connection
	                        stays (a lone PDU only) */
	/* READ/WRITE; n is peer_on()'s last argument: */
	PEER_RDMA_SHORT,     /* with a Channel: move only n bytes by RDMA, announce
	                        (DataRemaining, Count) all it would have moved */
	PEER_RDMA_OVERCLAIM, /* with a Channel: move it all, announce n bytes more */
	PEER_BREAK_PARENT,   /* carry it out, first breaking to none the lease of
	                        an open of the parent directory of its path (as
	                        ksmbd at the CLOSE of a file written under a v2
	                        lease, whatever its ParentLeaseKey) */
	PEER_READ_INLINE,    /* READ: answer inline (DataLength), whatever the
	                        Channel, with n zero bytes after the file's data */
};
struct peer_match {
	uint16_t command;
	int info_class;   /* SET_INFO / QUERY_INFO: -1 any */
	const char *path; /* the CREATE's name, or the open's path; NULL any */
	int disposition;  /* CREATE: -1 any */
	bool replay_only; /* only one flagged SMB2_FLAGS_REPLAY_OPERATION */
};
/* Arm a hook that fires on the next matching request (once).  arg: the
 * status of PEER_STATUS, the n of the READ/WRITE actions.  Returns its id. */
int peer_on(struct peer *p, const struct peer_match *m, enum peer_action a, uint32_t arg);
int peer_hook_fired(struct peer *p, int id);
/* on: every new connection is refused (ECONNREFUSED), as a server that is
 * down; off: accepted again. */
void peer_set_refuse(struct peer *p, bool on);
/* Close every live connection now (as a network cut). */
void peer_drop_connections(struct peer *p);
/* Close connection conn (1, 2, ...) only; false if it is not live. */
bool peer_drop_connection(struct peer *p, int conn);

/* ---- what the peer saw ------------------------------------------------------ */
struct peer_rec {
	int conn; /* 1, 2, ...: which connection */
	uint16_t command;
	uint32_t flags;
	uint16_t channel_sequence;
	uint64_t message_id;
	uint64_t session_id;
	int info_class;  /* SET_INFO / QUERY_INFO, else -1 */
	int disposition; /* CREATE, else -1 */
	char path[128];  /* as peer_match.path */
	uint32_t status; /* the status answered (0xFFFFFFFF: none, lost) */
	bool hooked;     /* a hook fired on it */
	bool binding;    /* a SESSION_SETUP with SMB2_SESSION_FLAG_BINDING */
	/* READ/WRITE: the Channel; Length (a WRITE with a Channel:
	 * RemainingBytes); the first Buffer Descriptor V1's Offset (the
	 * client's address) and Length (0 0: none) */
	uint32_t channel, length;
	uint64_t rdma_offset;
	uint32_t rdma_length;
};
/* A copy of the records [from, from+max); returns how many. */
int peer_records(struct peer *p, int from, struct peer_rec *out, int max);
int peer_nrecords(struct peer *p);

struct peer_stats {
	int connections;      /* accepted so far */
	int sessions;         /* set up so far */
	int violations;       /* bad request signatures and the like */
	int renames;          /* renames carried out */
	int deletes;          /* files and directories deleted */
	int creates;          /* files and directories made */
	int replayed_creates; /* CREATEs answered from their CreateGuid */
	int durable_reconnects;
	int writes, reads; /* WRITE / READ requests carried out */
	int bindings;      /* channels bound to a session (binding SESSION_SETUPs done) */
	int bind_refusals; /* bindings refused: no such session (USER_SESSION_DELETED) */
	int netif_queries; /* FSCTL_QUERY_NETWORK_INTERFACE_INFO answered */
	int leases_granted, lease_breaks, lease_acks; /* lease acks accepted */
	int lease_v1_asks;                            /* RqLs asked in the v1 form */
	int lease_parent_keyed;                       /* RqLs v2 asked with a ParentLeaseKey */
	/* emulated SMB Direct: payload bytes the peer RDMA-Wrote into (READ)
	 * and RDMA-Read from (WRITE) client memory; tokens handed out, done */
	uint64_t rdma_pushed, rdma_pulled;
	int tokens_got, tokens_done;
};
void peer_get_stats(struct peer *p, struct peer_stats *out);
/* The address connection conn (1, 2, ...) dialled ("127.0.0.2"), into
 * out; its session (0 none yet) into *session_id if not NULL, and whether
 * it is live.  false if there is no such connection. */
bool peer_conn_info(struct peer *p, int conn, char *addr, size_t cap, uint64_t *session_id,
                    bool *live);

/* The last violation, for messages ("" if none). */
void peer_last_violation(struct peer *p, char *out, size_t cap);

#endif
