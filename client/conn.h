/* client/conn.h — internal to client/: one channel and the requests on it.
 *
 * A struct smb_conn owns one transport.  A struct smb_req is one message we
 * send: one PDU, or a compound chain of up to SMB_REQ_MAX_PDU PDUs, plus the
 * responses that come back for it.
 *
 * Request life:  smb_req_new() -> smb_req_add_pdu()... -> smb_conn_submit()
 *   submit either fails (returns -errno; nothing is called back; the caller
 *   still owns the req and frees it with smb_req_put()) or returns 0, after
 *   which req->done(req) is called exactly once on the loop thread, with
 *   req->err = 0 and every pdu[i].rsp filled, or req->err < 0.  done() must end
 *   with smb_req_put(req) (or hand the req on and put it later).
 *
 * Locks: conn->lock guards the credit counters, next_msgid, the pending hash,
 *   the wait queue and state.  Never held while calling back, signing, or
 *   calling into the transport.  Lock order: conn->lock is a leaf.
 *
 * Lent receive buffers (smb_req_lend_rx): a READ PDU may lend the buffer its
 *   payload is to land in.  Over a stream transport that can (TCP), the
 *   payload of a plain (unencrypted, not compounded) successful answer is
 *   received straight into it and pdu.rsp_placed says how many bytes; else
 *   the answer comes whole in rsp as usual and the reader copies (once).
 *   The buffer is the conn's to write into from smb_conn_submit() until done()
 *   is called - not a moment longer: a request that leaves the pending table
 *   without its answer (timeout, channel death, failed send) revokes the loan
 *   under conn->lock on the loop thread (the only thread the transport
 *   receives on) before done() runs, and the bytes still to come are dropped.
 *   A replay lends the same buffer again on the new channel.  What the buffer
 *   holds after a failed request is unspecified.
 *
 * Credits ([MS-SMB2] 3.2.4.1.5 / 3.2.5.1.4): a PDU with CreditCharge n uses n
 *   credits and n MessageIds; requests wait in FIFO order for credits; every
 *   response's CreditResponse is added back.
 */
#ifndef SMBRDMA_CLIENT_CONN_H
#define SMBRDMA_CLIENT_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/proto/smb2.h"
#include "common/transport.h"

struct ev_loop;
struct smb_chan; /* chan.h: the channel a connection carries */

#define SMB_REQ_MAX_PDU 6

/* Signing state shared by the requests of one session on one channel. */
struct smb_signing {
	bool active;   /* sign every request, verify responses */
	bool have_key; /* key is valid (requests with force_sign) */
	uint16_t alg;  /* SMB2_SIGNING_* */
	uint8_t key[16];
};

/* Encryption state of one session, shared by all its channels ([MS-SMB2]
 * 3.1.4.3).  Written by session set-up / tree connect before `active` is
 * set (release) and read-only after, except nonce_ctr (atomic).  Nonces
 * are the counter (little-endian, 8 bytes) then the random salt, so none
 * repeats under one key however many channels send. */
struct smb_crypt {
	bool active;     /* seal every request that carries the session id */
	bool have_key;   /* keys valid (requests with force_seal) */
	uint16_t cipher; /* SMB2_ENCRYPTION_* */
	uint64_t session_id;
	uint8_t enc_key[32], dec_key[32];
	uint8_t salt[4];
	uint64_t nonce_ctr;
};

/* SMB2 command codes 0x00..0x12, counted per conn (SMB_STATS_COMMANDS in
 * client.h, checked equal in session.c) */
#define SMB_CONN_COMMANDS    19
#define SMB_CONN_LAT_BUCKETS 26 /* = SMB_LAT_BUCKETS (client/client.h) */

struct smb_pdu {
	uint8_t *buf; /* header + body (+ pad), owned by the req */
	size_t len;
	size_t cap;
	const void *payload; /* sent right after buf (WRITE data) */
	size_t payload_len;
	uint16_t command;
	uint16_t credit_charge; /* as on the wire (0 before 2.1) */
	uint64_t msgid;
	bool async;
	uint64_t async_id;
	struct smb_req *req;
	struct smb_pdu *hnext;       /* pending hash chain, conn->lock */
	struct smb2_fileid orig_fid; /* the body's FileId as first built (opens.c) */
	bool fid_known;
	void *rx_buf; /* lent for the READ payload (smb_req_lend_rx), or NULL */
	size_t rx_cap;
	bool rx_any; /* lent "any buffer": the conn allocates rx_buf */
	/* response */
	bool have_rsp;
	struct smb2_hdr rsp_hdr;
	const uint8_t *rsp; /* this PDU's bytes, header first */
	size_t rsp_len;
	/* READ payload bytes received straight into rx_buf (rsp then ends
	 * where they start), of which copied came through a transport buffer. */
	size_t rsp_placed, rsp_copied;
};

struct smb_req {
	struct smb_conn *conn;
	int npdu;
	struct smb_pdu pdu[SMB_REQ_MAX_PDU];
	bool related;     /* PDUs 2..n carry SMB2_FLAGS_RELATED_OPERATIONS */
	bool no_sign;     /* session setup: never sign this request */
	bool force_sign;  /* sign even when signing is not active (3.1.1 TREE_CONNECT) */
	bool no_verify;   /* caller verifies response signatures itself */
	bool sealed;      /* went out encrypted: its answer must come so */
	bool replay;      /* resent after its channel died: SMB2_FLAGS_REPLAY_OPERATION */
	bool no_replay;   /* channel-bound (session setup): never move it */
	bool held;        /* parked by a planned move before it was ever sent
	                     (multichannel/failover.c): not a replay when it goes */
	bool maybe_twice; /* replayed after a send the server may have carried out */
	int sends;        /* sends the transport took (atomic; see maybe_twice) */
	/* A PDU's payload is the caller's memory, not the request's
	 * (smb_req_set_payload_lent()): done() then runs only once no transport
	 * holds a send of it - a request that times out or dies while its
	 * bytes still wait in a transport's queue is finished when the
	 * transport lets go (smb_req_finish()). */
	bool payload_lent;
	bool done_waiting;   /* atomic: finished, done() deferred to the last tx_done */
	uint16_t sent_seq;   /* ChannelSequence it went out with */
	uint8_t seq_retries; /* resent for STATUS_FILE_NOT_AVAILABLE */
	uint64_t session_id;
	uint32_t tree_id;
	uint64_t deadline_ms; /* 0: none */
	uint64_t t0_us;       /* submitted (monotonic), for the latency estimate */
	int err;
	int received;
	void (*done)(struct smb_req *req);
	void *arg;  /* the submitter's */
	void *priv; /* the submitter's */
	int refs;   /* atomic */
	/* Two, so a replay can be sent while the dead transport may still
	 * hold the first (it calls done() when it lets go; tx_busy, atomic). */
	struct smb_txbuf txs[2];
	bool tx_busy[2];
	int txi;
	struct smb_txbuf *tx;  /* the one of the latest send */
	uint8_t *sealbuf[2];   /* TRANSFORM + ciphertext behind txs[i] (talloc) */
	struct smb_req *wnext; /* credit wait queue, conn->lock */
	struct smb_req *dnext; /* completion list, loop thread */
	const void *last_rx;   /* receive buffer last referenced, loop thread */
	/* Waiting to be sent again (resend_stale()): its timer and its link in
	 * conn->resend_waiting, both under conn->lock. */
	struct smb_conn_timer *resend_timer;
	struct smb_req *rnext;
};

enum smb_conn_state {
	SMB_CONN_NEW = 0,
	SMB_CONN_UP,
	SMB_CONN_DEAD,
};

/* The clock, timers and deferred calls of a conn: conn.c reads no clock and
 * arms no timer of its own, it asks its env (the first step of making it
 * sans-I/O like smbd/smbd_conn.c; what is not injected yet is in
 * docs/ARCHITECTURE.md).  smb_conn_open() uses smb_conn_env_evloop() on its
 * loop; smb_conn_open_env() takes another (unit tests: a fake clock and
 * timers advanced by hand).  Every member is required; ctx is passed to
 * each.  The env is copied into the conn; ctx must outlive it.
 *
 * "The loop thread" below is the thread the transport calls the conn on
 * (recv, dead, place): timer and call callbacks must run there, one at a
 * time with the transport's callbacks, never inside the env call that
 * armed or posted them.  The conn may call timer_add and timer_cancel with
 * conn->lock held: they must not block or call into the conn.
 *
 *  member        caller, thread                         how often
 *  ------------  -------------------------------------  ------------------------
 *  now_us        smb_conn_submit() (any thread); the     once a submit, once a
 *                thread that completes a request (the    completion, once a
 *                loop thread, or a submitter's for a     received message, once
 *                failed send); the loop thread           a tick
 *                (receive, interim answer, tick)
 *  timer_add     smb_conn_open_env() (opener thread);    the tick: armed at open,
 *                the loop thread (tick, resend)          re-armed by each tick
 *                                                        (CONN_TICK_MS, 1 s); one
 *                                                        per STATUS_FILE_NOT_
 *                                                        AVAILABLE resent later
 *  timer_cancel  the loop thread (death report)          once a conn: the tick,
 *                                                        and each resend still
 *                                                        waiting then
 *  call          any thread (submit; the transport's     a request that waits for
 *                send completions)                       credits with none out; a
 *                                                        lent payload let go late
 */
struct smb_conn_timer; /* the env's handle of one armed timer */
struct smb_conn_env {
	/* Monotonic microseconds (deadlines, keepalive and the latency
	 * estimate all come from it; deadlines in ms are now_us / 1000). */
	uint64_t (*now_us)(void *ctx);
	/* Run fn(arg) once on the loop thread, ms from now.  *out is the
	 * handle for timer_cancel, valid until fn starts.  0 or -errno (then
	 * fn is never called). */
	int (*timer_add)(void *ctx, uint64_t ms, void (*fn)(void *arg), void *arg,
	                 struct smb_conn_timer **out);
	/* On the loop thread, for a timer whose fn has not started: fn is
	 * never called, the handle is gone. */
	void (*timer_cancel)(void *ctx, struct smb_conn_timer *t);
	/* Run fn(arg) on the loop thread soon, FIFO, after the current
	 * callback when called from it.  0 or -errno (then it never runs). */
	int (*call)(void *ctx, void (*fn)(void *arg), void *arg);
	void *ctx;
};

/* The env of smb_conn_open(): common/evloop.h on loop (ev_timer_add,
 * ev_timer_cancel, ev_call; CLOCK_MONOTONIC, the clock ev timers run on). */
struct smb_conn_env smb_conn_env_evloop(struct ev_loop *loop);

#define SMB_PENDING_BUCKETS 1024

struct smb_conn {
	struct ev_loop *loop; /* the transport's; conn.c itself uses env only */
	struct smb_conn_env env;
	struct smb_transport *transport;
	char *peer; /* "host port N", for log lines */
	unsigned timeout_ms;
	bool large_mtu;                      /* dialect >= 2.1 with LARGE_MTU: credit charges */
	struct smb_signing *signing;         /* the session's; NULL before session setup */
	struct smb_crypt *crypt;             /* the session's; NULL before session setup */
	void (*on_dead)(void *arg, int err); /* optional, loop thread */
	void *on_dead_arg;                   /* the argument of every on_* callback */
	/* The channel (chan.h) this connection carries, set with the
	 * callbacks by its creator; NULL for a bare connection (unit tests).
	 * Never changes afterwards. */
	struct smb_chan *chan;
	/* Optional, loop thread, from the death report, before on_dead: offered
	 * each request the death would fail; returns true if it took the req
	 * (and resubmitted it elsewhere), false to let it fail here. */
	bool (*on_orphan)(void *arg, struct smb_req *req);
	/* Optional, the submitter's thread: a request refused while *hold is
	 * set (below); true if it took it.  Unlike on_orphan the channel is
	 * not gone. */
	bool (*on_held)(void *arg, struct smb_req *req);
	/* Optional, loop thread: an OPLOCK_BREAK notification (the PDU). */
	void (*on_break)(void *arg, const uint8_t *pdu, size_t len);
	/* Keepalive: when nothing came for echo_ms, send an ECHO; when that is
	 * not answered within another echo_ms, the channel is dead (transport
	 * shut down, its requests failed or replayed).  0: off.  Set before
	 * the channel carries requests. */
	unsigned echo_ms;
	uint64_t last_rx_ms;   /* atomic */
	uint64_t echo_sent_ms; /* under lock; 0: no ECHO outstanding */
	/* 3.x: ChannelSequence for every request (the session's, may change). */
	const uint16_t *channel_sequence;
	/* The client's planned-move flag (NULL: none).  While *hold is true
	 * (atomic), smb_conn_submit() refuses requests that may be replayed
	 * (not no_replay) and hands them to on_held, which parks them in the
	 * manager instead of sending them here.  Set before the channel
	 * carries requests. */
	const bool *hold;

	pthread_mutex_t lock;
	/* under lock (state and outstanding: written under it with atomic
	 * stores, so they may also be read without it, atomically, for a
	 * snapshot: the scheduler's): */
	enum smb_conn_state state;
	int dead_err;
	char dead_why[160]; /* why it died, for messages ("" while up) */
	uint64_t next_msgid;
	uint32_t credits;     /* granted and unused */
	uint32_t outstanding; /* credits of requests awaiting a response */
	struct smb_pdu *pending[SMB_PENDING_BUCKETS];
	unsigned npending;
	struct smb_req *wait_head, *wait_tail;
	unsigned nreads; /* big READs pending (CONN_EXACT_READ; atomic reads without the lock) */
	/* The message being received in place (loop thread; place_pdu and
	 * place.buf also under lock): place_pdu is the PDU that lent place.buf,
	 * NULL once revoked; placing until the message is delivered. */
	bool placing;
	struct smb_pdu *place_pdu;
	struct smb_rx_place place;
	size_t place_len;
	struct smb_conn_timer *tick; /* under lock */
	/* Requests refused as stale, waiting for their resend timer (chained
	 * by rnext, under lock): the conn's death takes them as in flight. */
	struct smb_req *resend_waiting;
	bool closing;
	bool dead_done; /* conn_dead() has finished (dead_cv) */
	pthread_cond_t dead_cv;

	/* statistics (atomic) */
	uint64_t st_requests, st_bytes_sent, st_bytes_received;
	uint64_t st_commands[SMB_CONN_COMMANDS]; /* PDUs sent, by command (atomic) */
	uint64_t st_lat_ewma_us; /* recent round trip of small requests (1/8 EWMA) */
	/* Every request answered on this conn (req->err 0 at completion): its
	 * time from smb_conn_submit() to its completion, in the log2 buckets
	 * of SMB_LAT_BUCKETS (client/client.h), and the sum in us.  Written by
	 * the completing thread (the loop thread) and read by
	 * smb_client_get_stats() from any thread, all with relaxed atomics and
	 * no lock: a snapshot may see a bucket bumped before the sum. */
	uint64_t st_lat_buckets[SMB_CONN_LAT_BUCKETS];
	uint64_t st_lat_sum_us;
};

/* The transports a channel can run on.  smb_conn_open() builds one from a
 * table of constructors (client/transport_tcp.c, client/transport_quic.c,
 * smbd/smbd_transport.c); nothing above conn.c compares names. */
enum smb_transport_kind {
	SMB_TRANSPORT_TCP,
	SMB_TRANSPORT_QUIC,
	SMB_TRANSPORT_RDMA,
	SMB_TRANSPORT_KINDS
};
/* "tcp", "quic", "rdma": for messages and option values. */
const char *smb_transport_kind_name(enum smb_transport_kind kind);
/* The kind an option value names ("tcp", "quic", "rdma"), or -1. */
int smb_transport_kind_parse(const char *name);

/* Allocate a conn and connect its transport (blocking, not on the loop).
 * quic: what a QUIC transport needs (NULL for the others).  cancel_fd:
 * readable abandons the connect (-ECANCELED; struct smb_transport_up), -1
 * none. */
struct smb_quic_params;
int smb_conn_open(struct ev_loop *loop, enum smb_transport_kind kind,
                  const struct smb_quic_params *quic, const struct sockaddr *addr,
                  socklen_t addrlen, const char *peer, unsigned connect_timeout_ms,
                  unsigned timeout_ms, int cancel_fd, struct smb_conn **out);
/* The same with env for clock, timers and calls (NULL: smb_conn_env_evloop
 * on loop); loop still carries the transport. */
int smb_conn_open_env(struct ev_loop *loop, const struct smb_conn_env *env,
                      enum smb_transport_kind kind, const struct smb_quic_params *quic,
                      const struct sockaddr *addr, socklen_t addrlen, const char *peer,
                      unsigned connect_timeout_ms, unsigned timeout_ms, int cancel_fd,
                      struct smb_conn **out);
/* Fail everything pending with -ECONNABORTED, shut the transport down, wait
 * for its death report, free.  Not on the loop thread. */
void smb_conn_close(struct smb_conn *c);

struct smb_req *smb_req_new(struct smb_conn *c, void *talloc_parent);
/* Append a PDU: smb_req_begin_pdu() returns where its body goes (body_cap
 * bytes available, right after the 64-byte header); encode into it and call
 * smb_req_end_pdu() with the encoder's result (a negative result is passed
 * back).  Returns NULL / -errno when out of memory or PDUs. */
uint8_t *smb_req_begin_pdu(struct smb_req *req, uint16_t command, size_t body_cap);
int smb_req_end_pdu(struct smb_req *req, ssize_t body_len);
void smb_req_set_payload(struct smb_req *req, int i, const void *data, size_t len,
                         uint16_t credit_charge);
/* Lend buf (len bytes) for PDU i's READ payload: see "Lent receive buffers".
 * buf NULL: the conn may receive the payload into a buffer of its own
 * (talloc child of req, rx_buf then points at it) rather than into the
 * response message. */
void smb_req_lend_rx(struct smb_req *req, int i, void *buf, size_t len);
int smb_conn_submit(struct smb_conn *c, struct smb_req *req);
/* Requests sent and not yet answered, and those waiting for credits (any
 * thread; a snapshot under c->lock). */
unsigned smb_conn_inflight(struct smb_conn *c);
/* Like smb_req_set_payload(), but data is the submitter's, valid until
 * done(): sets payload_lent. */
void smb_req_set_payload_lent(struct smb_req *req, int i, const void *data, size_t len,
                              uint16_t credit_charge);
/* Run req->done(req) for a request that is over (req->err set or its
 * responses in): at once, or - payload_lent and a transport still holds
 * one of its sends - on the loop thread when that send is let go.  Every
 * completion goes through here, so a lent buffer is never handed back
 * while bytes may still be read from it.  Any thread. */
void smb_req_finish(struct smb_req *req);
/* Make a req that was in flight on a dead channel sendable again: no
 * responses, no error, flagged as a replay when a transport ever took a
 * send of it (else it goes out as new).  The caller resubmits it. */
int smb_req_reset_for_replay(struct smb_req *req); /* 0, or -EBUSY */

/* Replays.  A request in flight on a channel that dies is sent again: on
 * another channel of the session (3.x multichannel), or parked and sent on
 * the new session after a reconnect (multichannel/failover.c, through
 * the channel manager's orphan call).  3.x sends it with SMB2_FLAGS_REPLAY_OPERATION and
 * the session's ChannelSequence, bumped once per lost channel ([MS-SMB2]
 * 3.2.4.1.1, 3.2.5.1.x); the server uses them to order it against what it
 * still runs of the first try (3.3.5.2.10: STATUS_FILE_NOT_AVAILABLE, sent
 * again by conn.c), but carries the replay out like any request - except a
 * CREATE whose durable v2 CreateGuid names an open it holds (3.3.5.9.10),
 * and a LOCK on a durable handle whose LockSequence it has seen (3.3.5.14).
 * When the reply was lost the first try may have been carried out, so
 * whether a replay is harmless depends on the request.  Its class, decided
 * here only (smb_req_replay_class(), from the PDUs):
 *
 *  class    requests                         a replay after the first try was done
 *  -------  -------------------------------  -----------------------------------------
 *  FREE     READ, WRITE (same bytes, same    does it again to the same effect: its
 *           offset), QUERY_INFO, QUERY_DIR   answer is the answer
 *           with RESTART/REOPEN, FLUSH, ECHO,
 *           IOCTL (FSCTLs we send: reparse,
 *           sparse, zero, copychunk, server-
 *           side copy), SET_INFO of times,
 *           size, security; CREATE that opens
 *           or opens-or-makes (FILE_OPEN[_IF],
 *           OVERWRITE[_IF], SUPERSEDE); a
 *           compound's own CLOSE (RELATED)
 *  KNOWN    CREATE FILE_CREATE with a DH2Q   the server knows the replay: it answers
 *           (durable v2) CreateGuid; LOCK     the create with the open the first made
 *           with a LockSequence (durable      (3.3.5.9.10), the lock with success
 *           handles, client/opens.c)          (3.3.5.14) - when it granted durability
 *                                             and keeps that state; else as CHECKED
 *  CHECKED  SET_INFO rename, link,           the caller, who knows the intent, reads
 *           disposition (unlink, rmdir);      the replay's failure (client/ops.c):
 *           CREATE FILE_CREATE without a      unlink/rmdir: NAME_NOT_FOUND or
 *           CreateGuid (mkdir, mknod) or      DELETE_PENDING = done; rename:
 *           with DELETE_ON_CLOSE; CLOSE of    NAME_NOT_FOUND and then the source gone
 *           a handle; LOCK without a          and the target there = done; link:
 *           LockSequence; QUERY_DIRECTORY     COLLISION and both names one file id =
 *           that continues a listing          done; CLOSE: FILE_CLOSED = done;
 *                                             exclusive create/mkdir: COLLISION stays
 *                                             EEXIST (whose it is cannot be told),
 *                                             logged as a lost reply.  unlock:
 *                                             RANGE_NOT_LOCKED is taken as done by
 *                                             fuse/ops_lock.c.  A lock meets its own
 *                                             first grant, and a continued listing
 *                                             skips a batch: not read yet
 *  NEVER    no_replay (session setup, binding, pipe transceive, RDMA-registered
 *           buffers): fails with its channel
 *
 * A caller reinterprets only when smb_req_replayed(): maybe_twice, set when
 * a send the transport took came before the replay (a request that never
 * left, refused by a dead transport, is sent again as new). */
enum smb_replay_class {
	SMB_REPLAY_FREE = 0,
	SMB_REPLAY_KNOWN,
	SMB_REPLAY_CHECKED,
	SMB_REPLAY_NEVER,
};
enum smb_replay_class smb_req_replay_class(const struct smb_req *req);
const char *smb_replay_class_str(enum smb_replay_class k);
/* Sent again after a send of it may have been carried out (any thread
 * once done() runs). */
bool smb_req_replayed(const struct smb_req *req);
void smb_req_get(struct smb_req *req);
void smb_req_put(struct smb_req *req);

/* Why the channel died, as " (reason)" to append to an error message; ""
 * if it has not died or gave no reason.  Any thread. */
void smb_conn_dead_why(struct smb_conn *c, char *out, size_t len);

/* Drop the channel now (any thread): its transport is shut down and the
 * death is reported as usual (requests fail or move to other channels). */
void smb_conn_abort(struct smb_conn *c, const char *why);

/* Credit charge for a READ/WRITE of len bytes ([MS-SMB2] 3.1.5.2). */
uint16_t smb_credit_charge(const struct smb_conn *c, size_t len);

/* Verify the signature of one received PDU with the given signing state:
 * 0, or -EIO (logged). */
int smb_verify_pdu(const struct smb_signing *s, const uint8_t *pdu, size_t len);

#endif
