/* client/session.h — internal to client/ and the channel manager above it:
 * a client's session and tree connect, and the calls that set a channel
 * up in them (client/session.c).
 *
 * Owner: both objects are embedded in struct smb_client (c->sess,
 * c->tree; client_int.h) and live as long as it.  Their writers are named
 * at each struct: smb_client_open() before the mount is used, then only
 * the channel manager's reconnect.  The set-up calls are used for channel
 * 0 by smb_client_open() and for further channels (binding, or a new
 * session after a reconnect) by multichannel/; they block, so never on
 * the loop thread.
 */
#ifndef SMBRDMA_CLIENT_SESSION_H
#define SMBRDMA_CLIENT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/conn.h" /* struct smb_signing, struct smb_crypt */

struct smb_client;
struct smb_chan;
struct smb_client_opts;

/* The session ([MS-SMB2] 3.2.1.3): what NEGOTIATE and SESSION_SETUP on
 * channel 0 settled.  One writer at a time: smb_client_open() (client/
 * session.c) before the mount is used, then the channel manager's
 * reconnect (multichannel/reconnect.c) on its thread, only while no
 * channel lives (so no request is being built on a live one).  Read on
 * any thread, without a lock: a request built during a reconnect may
 * carry the old session id, which the rebind before its resend fixes
 * (multichannel/failover.c req_rebind). */
struct smb_session {
	uint16_t dialect;
	uint16_t server_security_mode;
	uint32_t server_caps;
	uint8_t client_guid[16]; /* the same on every channel (binding needs it) */
	/* What channel 0's NEGOTIATE said, for FSCTL_VALIDATE_NEGOTIATE_INFO. */
	uint32_t neg_caps;
	uint16_t neg_security_mode;
	uint16_t neg_dialects[8];
	int neg_ndialects;
	uint8_t server_guid[16];
	uint32_t max_read, max_write, max_transact;
	uint64_t session_id;
	uint64_t previous_session_id; /* set by reconnect for its SESSION_SETUP */
	struct smb_signing signing;   /* Session.SigningKey */
	uint8_t session_key[16];      /* Session.SessionKey (binding may need it) */
	struct smb_crypt crypt;       /* Session.EncryptionKey/DecryptionKey, cipher */
	bool guest;
	uint16_t channel_sequence; /* Session.ChannelSequence (atomic) */
	bool posix;                /* SMB3 POSIX extensions negotiated (set once, before
	                              the mount is used; re-checked on reconnect) */
	bool posix_share_off;      /* ... but the share does not use them
	                              (smb_posix_probe()): posix stays false */
};

/* The tree connect ([MS-SMB2] 3.2.1.4): the share's name, set once by
 * smb_client_open(), and what its TREE_CONNECT answered, rewritten by
 * the same writers as struct smb_session under the same rule. */
struct smb_tree {
	char *share, *unc;
	uint32_t tree_id;
	uint32_t share_type;
	uint32_t share_flags, share_caps; /* ShareFlags, Capabilities (SMB2_SHAREFLAG_*,
	                                     SMB2_SHARE_CAP_*): DFS, encryption */
	bool ipc; /* the share is IPC$ (a pipe share: client/dfs_ns.c asks its
	             referrals there), set once by smb_client_open() */
};

/* Channel set-up (session.c), used for channel 0 by smb_client_connect()
 * and for further channels by multichannel/.  Not on the loop thread. */
int smb_chan_negotiate(struct smb_client *c, struct smb_chan *ch, const struct smb_client_opts *o,
                       uint8_t **sec_blob, size_t *sec_len, void *mem, char *errbuf, size_t errlen);
/* binding: bind ch to the existing session (SMB2_SESSION_FLAG_BINDING). */
int smb_chan_session_setup(struct smb_client *c, struct smb_chan *ch,
                           const struct smb_client_opts *o, bool binding, const uint8_t *blob,
                           size_t blob_len, void *mem, char *errbuf, size_t errlen);

/* TREE_CONNECT on ch (the share of c), then (3.0/3.0.2) the negotiation
 * validated.  Not on the loop thread. */
int smb_chan_tree_connect(struct smb_client *c, struct smb_chan *ch, void *mem, char *errbuf,
                          size_t errlen);

/* With the SMB3 POSIX extensions negotiated: does the share use them?  A
 * CREATE of its root with the POSIX context, whose answer must carry one
 * (Samba answers the context on a share with smb3 unix extensions = yes
 * only); if not, c->sess.posix goes false for good and posix_share_off
 * true.  On ch, not on the loop thread, before the mount is used. */
void smb_posix_probe(struct smb_client *c, struct smb_chan *ch, void *mem);

/* A DFS link's targets for c (client_int.h, alts): hosts[i] and shares[i]
 * for n targets, cur the one c is connected to.  Any thread, again when
 * the referral is asked again (under chans_lock, as smb_client_retarget()
 * reads them).  0 or -ENOMEM. */
int smb_client_set_targets(struct smb_client *c, const char *const *hosts,
                           const char *const *shares, int n, int cur);
/* After a failed reconnect attempt (the channel manager's thread, no
 * channel alive): point c at its next target, if it has more than one.
 * host, tree.share, tree.unc, addr and the QUIC server name change (each
 * string stays allocated until c is freed, so a reader on another thread
 * sees the old target's or the new one's).  true when it moved. */
bool smb_client_retarget(struct smb_client *c);

#endif
