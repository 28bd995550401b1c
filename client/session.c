/* client/session.c — bringing a mount up: resolve, connect, NEGOTIATE,
 * SESSION_SETUP (SPNEGO through auth/), key derivation and signing set-up,
 * TREE_CONNECT; and taking it down.  Everything here runs on the mounting
 * thread and waits for each reply; the file operations live in ops.c.
 */
#include "auth/auth.h"
#include "client/chan.h"
#include "client/chanmgr.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/conn.h"
#include "client/dfs_ns.h"
#include "client/dial_race.h"
#include "client/lease.h"
#include "client/offload.h"
#include "client/opens.h"
#include "client/request.h"
#include "client/session.h"
#include "client/transport_quic.h"
#include "common/crypto.h"
#include "common/evloop.h"
#include "common/log.h"
#include "common/secret.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <talloc.h>
#include <sys/eventfd.h>
#include <unistd.h>

static const uint16_t all_dialects[] = {SMB2_DIALECT_0202, SMB2_DIALECT_0210, SMB2_DIALECT_0300,
                                        SMB2_DIALECT_0302, SMB2_DIALECT_0311};

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!errbuf || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* ---- synchronous submission ------------------------------------------------------ */

struct sync_wait {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
};

static void sync_done(struct smb_req *req)
{
	struct sync_wait *w = req->priv;
	pthread_mutex_lock(&w->m);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

int smb_client_submit_sync(struct smb_client *c, struct smb_req *req)
{
	struct sync_wait w = {.m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	req->done = sync_done;
	req->priv = &w;
	/* The waiting thread is the one setting up a channel (or tearing the
	 * client down): its request is never parked for a channel that only
	 * it could bring back, and with `hard` (no deadline on the
	 * connection) it still gives up after timeout_ms. */
	req->no_replay = true;
	if (c->hard && !req->deadline_ms)
		req->deadline_ms = ev_now_ms() + c->timeout_ms;
	int err = smb_conn_submit(req->conn, req);
	if (err)
		return err;
	pthread_mutex_lock(&w.m);
	while (!w.done)
		pthread_cond_wait(&w.cv, &w.m);
	pthread_mutex_unlock(&w.m);
	return req->err;
}

struct smb_req *smb_chan_req(struct smb_chan *ch, void *talloc_parent)
{
	struct smb_req *req = smb_req_new(ch->conn, talloc_parent);
	if (req) {
		req->session_id = ch->c->sess.session_id;
		req->tree_id = ch->c->tree.tree_id;
	}
	return req;
}

struct smb_req *smb_client_req(struct smb_client *c, void *talloc_parent)
{
	return smb_chan_req(smb_client_pick(c, SMB_SCHED_META, 0), talloc_parent);
}

static int preauth_update(uint8_t hash[64], const uint8_t *msg, size_t len)
{
	struct iovec iov[2] = {{hash, 64}, {(void *)msg, len}};
	uint8_t out[64];
	int err = smb_sha512(iov, 2, out);
	if (!err)
		memcpy(hash, out, 64);
	return err;
}

/* ---- NEGOTIATE -------------------------------------------------------------------- */

#define SETUP_TIMEOUT_MS 20000u

static unsigned setup_timeout_ms(const struct smb_client *c)
{
	return c->timeout_ms && c->timeout_ms < SETUP_TIMEOUT_MS ? c->timeout_ms : SETUP_TIMEOUT_MS;
}

/* Send a set-up request on ch and wait for its answer.  Set-up has its own
 * patience: a server that accepts and never answers must not hold the mount
 * for a minute per step.  0, or -errno with "no <what> answer from <peer>"
 * and why the connection died in errbuf. */
static int setup_send(struct smb_client *c, struct smb_chan *ch, struct smb_req *req,
                      const char *what, const char *peer, char *errbuf, size_t errlen)
{
	req->deadline_ms = ev_now_ms() + setup_timeout_ms(c);
	int err = smb_client_submit_sync(c, req);
	if (err) {
		char why[168];
		smb_conn_dead_why(ch->conn, why, sizeof(why));
		set_err(errbuf, errlen, "no %s answer from %s: %s%s", what, peer, strerror(-err),
		        why);
	}
	return err;
}

static ssize_t enc_negotiate(uint8_t *b, size_t cap, const struct smb2_negotiate_req *r)
{
	return smb2_negotiate_req_encode(b, cap, r);
}

/* The NEGOTIATE request for channel ch: the dialects in [min, max], our
 * signing, capabilities, ClientGuid (the session's), preauth salt, signing
 * and cipher preferences.  0, or -EINVAL with the reason in errbuf. */
static int negotiate_request(struct smb_client *c, struct smb_chan *ch,
                             const struct smb_client_opts *o, struct smb2_negotiate_req *out,
                             char *errbuf, size_t errlen)
{
	bool primary = ch->index == 0;
	bool sign = o->require_signing;
	struct smb2_negotiate_req nr = {0};
	uint16_t lo = o->min_dialect ? o->min_dialect : SMB_CLIENT_MIN_DIALECT;
	uint16_t hi = o->max_dialect ? o->max_dialect : SMB2_DIALECT_0311;
	for (size_t i = 0; i < sizeof(all_dialects) / sizeof(all_dialects[0]); i++)
		if (all_dialects[i] >= lo && all_dialects[i] <= hi)
			nr.dialects[nr.dialect_count++] = all_dialects[i];
	if (!nr.dialect_count) {
		set_err(errbuf, errlen, "no SMB dialect in the requested range");
		return -EINVAL;
	}
	/* 2.0.2 and 2.1 have neither the preauth hash nor VALIDATE_NEGOTIATE:
	 * whoever sits in the path can strip signing from the NEGOTIATE, or
	 * the newer dialects, unseen.  They are offered only when asked. */
	if (primary && lo < SMB2_DIALECT_0300)
		smb_warn("%s: offering SMB %s (vers=): its negotiation is not protected "
		         "against tampering by the network path",
		         c->host, smb2_dialect_str(lo));
	nr.security_mode =
	    SMB2_NEGOTIATE_SIGNING_ENABLED | (sign ? SMB2_NEGOTIATE_SIGNING_REQUIRED : 0);
	nr.capabilities =
	    SMB2_GLOBAL_CAP_LARGE_MTU | (o->multichannel ? SMB2_GLOBAL_CAP_MULTI_CHANNEL : 0);
	/* Every channel of a session comes from the same client (Samba hands
	 * a binding connection to the process serving this ClientGuid). */
	if (primary)
		smb_random_bytes(c->sess.client_guid, sizeof(c->sess.client_guid));
	memcpy(nr.client_guid, c->sess.client_guid, sizeof(nr.client_guid));
	smb_random_bytes(nr.preauth_salt, sizeof(nr.preauth_salt));
	nr.signing_algs[0] = SMB2_SIGNING_AES_GMAC;
	nr.signing_algs[1] = SMB2_SIGNING_AES_CMAC;
	nr.signing_algs[2] = SMB2_SIGNING_HMAC_SHA256;
	nr.signing_alg_count = 3;
	/* Preference order; the server picks from its own list. */
	nr.ciphers[0] = SMB2_ENCRYPTION_AES128_GCM;
	nr.ciphers[1] = SMB2_ENCRYPTION_AES128_CCM;
	nr.ciphers[2] = SMB2_ENCRYPTION_AES256_GCM;
	nr.ciphers[3] = SMB2_ENCRYPTION_AES256_CCM;
	nr.cipher_count = 4;
	if (hi >= SMB2_DIALECT_0300)
		nr.capabilities |= SMB2_GLOBAL_CAP_ENCRYPTION; /* 3.0 / 3.0.2 */
	/* Directory leases are granted only to a client that says it takes
	 * them (Samba 4.22 answers DIRECTORY_LEASING only then; lease.c asks
	 * for R|H on a directory only when the server answered it). */
	if (!o->no_lease)
		nr.capabilities |=
		    SMB2_GLOBAL_CAP_LEASING |
		    (hi >= SMB2_DIALECT_0300 ? SMB2_GLOBAL_CAP_DIRECTORY_LEASING : 0);
	nr.posix_extensions = o->posix && hi >= SMB2_DIALECT_0311;
	*out = nr;
	return 0;
}

/* READ/WRITE sizes of channel ch from the server's, rsize=/wsize=, the
 * transport's message limits, and RDMA offload (set up here when the
 * transport has it).  0, or -EPROTO with the reason in errbuf. */
static int negotiate_sizes(struct smb_client *c, struct smb_chan *ch,
                           const struct smb_client_opts *o, const struct smb2_negotiate_rsp *rsp,
                           char *errbuf, size_t errlen)
{
	bool primary = ch->index == 0;
	ch->max_read = rsp->max_read_size;
	ch->max_write = rsp->max_write_size;
	/* rsize=/wsize=: only ever lower; the limits below lower further. */
	if (o->max_read && ch->max_read > o->max_read)
		ch->max_read = o->max_read;
	if (o->max_write && ch->max_write > o->max_write)
		ch->max_write = o->max_write;
	if (!(rsp->capabilities & SMB2_GLOBAL_CAP_LARGE_MTU) ||
	    c->sess.dialect == SMB2_DIALECT_0202) {
		ch->max_read = ch->max_read > 65536 ? 65536 : ch->max_read;
		ch->max_write = ch->max_write > 65536 ? 65536 : ch->max_write;
		if (primary)
			c->sess.max_transact =
			    c->sess.max_transact > 65536 ? 65536 : c->sess.max_transact;
	} else {
		ch->conn->large_mtu = true;
	}
	if (ch->max_read > (8u << 20))
		ch->max_read = 8u << 20;
	if (ch->max_write > (8u << 20))
		ch->max_write = 8u << 20;
	/* A transport that limits whole messages (SMB Direct without offload)
	 * bounds READ/WRITE/QUERY sizes: headers plus slack must fit too. */
	struct smb_transport_info ti;
	ch->conn->transport->ops->info(ch->conn->transport, &ti);
	if (ti.max_inline_recv) {
		uint32_t lim = ti.max_inline_recv > 512 ? (ti.max_inline_recv - 256) & ~4095u : 0;
		ch->inline_max_read = lim;
		if (primary && c->sess.max_transact > lim)
			c->sess.max_transact = lim;
	}
	if (ti.max_inline_send)
		ch->inline_max_write =
		    ti.max_inline_send > 512 ? (ti.max_inline_send - 256) & ~4095u : 0;
	/* With offload a READ/WRITE carries a buffer descriptor and may be as
	 * large as a pool buffer (the transport's MaxReadWriteSize, at most
	 * 1 MiB, FUSE's largest request); without it, what fits inline. */
	uint32_t bufsize =
	    ti.max_read_write && ti.max_read_write < (1u << 20) ? ti.max_read_write : (1u << 20);
	ch->conn->transport->ops->set_dialect(ch->conn->transport, c->sess.dialect);
	if (c->sess.dialect >= SMB2_DIALECT_0300)
		ch->conn->channel_sequence = &c->sess.channel_sequence;
	ch->conn->hold = &c->moving;
	ch->rdma = ti.caps & SMB_TRANSPORT_CAP_RDMA;
	int offload_err = -EOPNOTSUPP;
	if ((ti.caps & SMB_TRANSPORT_CAP_RDMA) && bufsize >= 65536) {
		offload_err = smb_offload_setup(ch, bufsize);
		if (offload_err)
			smb_warn("%s: no RDMA offload (registering the I/O buffers failed: %s); "
			         "READ/WRITE go inline",
			         ch->conn->peer, strerror(-offload_err));
	}
	if (offload_err == 0) {
		smb_info("%s: RDMA offload on for READ/WRITE above %u bytes (up to %u per I/O)",
		         ch->conn->peer, c->rdma_threshold, bufsize);
		if (ch->max_read > bufsize)
			ch->max_read = bufsize;
		if (ch->max_write > bufsize)
			ch->max_write = bufsize;
	} else {
		if (ch->inline_max_read && ch->max_read > ch->inline_max_read)
			ch->max_read = ch->inline_max_read;
		if (ch->inline_max_write && ch->max_write > ch->inline_max_write)
			ch->max_write = ch->inline_max_write;
	}
	if (ch->max_read < 4096 || ch->max_write < 4096) {
		set_err(errbuf, errlen, "%s offers unusable read/write sizes (%u/%u)",
		        ch->conn->peer, ch->max_read, ch->max_write);
		return -EPROTO;
	}
	if (primary) {
		c->sess.max_read = ch->max_read;
		c->sess.max_write = ch->max_write;
	}
	return 0;
}

/* Signing algorithm and cipher of channel ch ([MS-SMB2] 3.2.5.2), the 3.1.1
 * preauth hash started over the NEGOTIATE pair p, and every later channel
 * held to what the first chose.  0, or -errno with the reason in errbuf. */
static int negotiate_crypto(struct smb_client *c, struct smb_chan *ch,
                            const struct smb_client_opts *o, const struct smb2_negotiate_rsp *rsp,
                            const struct smb_pdu *p, char *errbuf, size_t errlen)
{
	bool primary = ch->index == 0;
	uint16_t alg =
	    c->sess.dialect >= SMB2_DIALECT_0300 ? SMB2_SIGNING_AES_CMAC : SMB2_SIGNING_HMAC_SHA256;
	if (c->sess.dialect == SMB2_DIALECT_0311) {
		if (!rsp->preauth_seen || rsp->preauth_hash_alg != SMB2_PREAUTH_INTEGRITY_SHA512) {
			set_err(errbuf, errlen,
			        "%s negotiated SMB 3.1.1 without SHA-512 preauth integrity",
			        c->host);
			return -EPROTO;
		}
		if (rsp->signing_seen)
			alg = rsp->signing_alg;
		memset(ch->preauth, 0, sizeof(ch->preauth));
		preauth_update(ch->preauth, p->buf, p->len);
		preauth_update(ch->preauth, p->rsp, p->rsp_len);
	}
	/* [MS-SMB2] 3.2.5.2: 3.1.1 names the cipher in a context; 3.0.x
	 * servers that can encrypt say so by a capability, and use CCM. */
	uint16_t cipher = 0;
	if (c->sess.dialect == SMB2_DIALECT_0311 && rsp->cipher_seen)
		cipher = rsp->cipher;
	else if (c->sess.dialect >= SMB2_DIALECT_0300 && c->sess.dialect < SMB2_DIALECT_0311 &&
	         (rsp->capabilities & SMB2_GLOBAL_CAP_ENCRYPTION))
		cipher = SMB2_ENCRYPTION_AES128_CCM;
	if (cipher && !smb_cipher_key_len(cipher)) {
		smb_warn("%s chose cipher 0x%04x, which was not offered; no encryption",
		         ch->conn->peer, cipher);
		cipher = 0;
	}
	if (primary) {
		c->sess.crypt.cipher = cipher;
		if (o->require_encryption && !cipher) {
			set_err(errbuf, errlen,
			        "seal: %s cannot encrypt (SMB %s, %s); mount without seal or "
			        "enable SMB3 encryption on the server",
			        c->host, smb2_dialect_str(c->sess.dialect),
			        c->sess.dialect < SMB2_DIALECT_0300 ? "SMB2 has no encryption"
			                                            : "no cipher in common");
			return -EPROTONOSUPPORT;
		}
	} else if (cipher != c->sess.crypt.cipher) {
		set_err(errbuf, errlen, "%s chose cipher %s on a new channel, %s on the first",
		        ch->conn->peer, smb2_cipher_str(cipher),
		        smb2_cipher_str(c->sess.crypt.cipher));
		return -EPROTO;
	}
	if (primary)
		c->sess.signing.alg = alg;
	else if (alg != c->sess.signing.alg) {
		set_err(errbuf, errlen, "%s chose signing %s on a new channel, %s on the first",
		        ch->conn->peer, smb2_signing_alg_str(alg),
		        smb2_signing_alg_str(c->sess.signing.alg));
		return -EPROTO;
	}
	ch->signing.alg = alg;
	return 0;
}

int smb_chan_negotiate(struct smb_client *c, struct smb_chan *ch, const struct smb_client_opts *o,
                       uint8_t **sec_blob, size_t *sec_len, void *mem, char *errbuf, size_t errlen)
{
	bool primary = ch->index == 0;
	struct smb2_negotiate_req nr;
	int err = negotiate_request(c, ch, o, &nr, errbuf, errlen);
	if (err)
		return err;

	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	req->no_replay = true;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_NEGOTIATE, 512);
	err = body ? smb_req_end_pdu(req, enc_negotiate(body, 512, &nr)) : -ENOMEM;
	if (err) {
		smb_req_put(req);
		return err;
	}
	char peer[300];
	snprintf(peer, sizeof(peer), "%s port %u", c->host, c->port);
	err = setup_send(c, ch, req, "NEGOTIATE", peer, errbuf, errlen);
	if (err) {
		smb_req_put(req);
		return err;
	}
	struct smb_pdu *p = &req->pdu[0];
	struct smb2_negotiate_rsp rsp;
	if (p->rsp_hdr.status != STATUS_SUCCESS) {
		set_err(errbuf, errlen, "%s refused every dialect offered (%s..%s): %s%s", c->host,
		        smb2_dialect_str(nr.dialects[0]),
		        smb2_dialect_str(nr.dialects[nr.dialect_count - 1]),
		        smb2_status_str(p->rsp_hdr.status),
		        o->min_dialect
		            ? ""
		            : "; SMB 2.0 and 2.1, which cannot be encrypted nor protect "
		              "the negotiation, are offered only with vers=2.0 or vers=2.1");
		smb_req_put(req);
		return -EPROTONOSUPPORT;
	}
	if (smb2_negotiate_rsp_decode(p->rsp, p->rsp_len, &rsp) < 0) {
		set_err(errbuf, errlen, "malformed NEGOTIATE response from %s", c->host);
		smb_req_put(req);
		return -EBADMSG;
	}
	bool offered = false;
	for (int i = 0; i < nr.dialect_count; i++)
		offered |= nr.dialects[i] == rsp.dialect;
	if (!offered) {
		set_err(errbuf, errlen, "%s chose dialect 0x%04x, which was not offered", c->host,
		        rsp.dialect);
		smb_req_put(req);
		return -EPROTO;
	}
	if (!primary && rsp.dialect != c->sess.dialect) {
		set_err(errbuf, errlen, "%s chose SMB %s on a new channel, SMB %s on the first",
		        ch->conn->peer, smb2_dialect_str(rsp.dialect),
		        smb2_dialect_str(c->sess.dialect));
		smb_req_put(req);
		return -EPROTO;
	}
	if (primary) {
		c->sess.neg_caps = nr.capabilities;
		c->sess.neg_security_mode = nr.security_mode;
		c->sess.neg_ndialects = nr.dialect_count;
		memcpy(c->sess.neg_dialects, nr.dialects, sizeof(c->sess.neg_dialects));
		memcpy(c->sess.server_guid, rsp.server_guid, 16);
		c->sess.dialect = rsp.dialect;
		c->sess.server_security_mode = rsp.security_mode;
		c->sess.server_caps = rsp.capabilities;
		c->sess.max_transact = rsp.max_transact_size;
		/* The server answers the POSIX context only when it will
		 * speak the extensions on this connection. */
		c->sess.posix = nr.posix_extensions && rsp.dialect == SMB2_DIALECT_0311 &&
		                rsp.posix_seen && !c->sess.posix_share_off;
	}
	err = negotiate_sizes(c, ch, o, &rsp, errbuf, errlen);
	if (!err)
		err = negotiate_crypto(c, ch, o, &rsp, p, errbuf, errlen);
	if (err) {
		smb_req_put(req);
		return err;
	}
	*sec_len = rsp.security_buffer_len;
	*sec_blob = *sec_len ? talloc_memdup(mem, rsp.security_buffer, *sec_len) : NULL;
	smb_info("%s: negotiated SMB %s, max read %u write %u, signing %s by server",
	         ch->conn->peer, smb2_dialect_str(c->sess.dialect), ch->max_read, ch->max_write,
	         rsp.security_mode & SMB2_NEGOTIATE_SIGNING_REQUIRED ? "required" : "optional");
	smb_req_put(req);
	return 0;
}

/* ---- SESSION_SETUP ---------------------------------------------------------------- */

static ssize_t enc_session_setup(uint8_t *b, size_t cap, const struct smb2_session_setup_req *r)
{
	return smb2_session_setup_req_encode(b, cap, r);
}

/* [MS-SMB2] 3.2.5.3.1: the signing key from a session key and (3.1.1) the
 * preauth hash of the SESSION_SETUP exchange. */
static int derive_signing_key(uint16_t dialect, const uint8_t key16[16], const uint8_t preauth[64],
                              uint8_t out[16])
{
	if (dialect < SMB2_DIALECT_0300) {
		memcpy(out, key16, 16);
		return 0;
	}
	if (dialect == SMB2_DIALECT_0311) {
		static const uint8_t label[] = "SMBSigningKey";
		return smb_kdf(key16, 16, label, sizeof(label), preauth, 64, out, 16);
	}
	static const uint8_t label[] = "SMB2AESCMAC";
	static const uint8_t ctx[] = "SmbSign";
	return smb_kdf(key16, 16, label, sizeof(label), ctx, sizeof(ctx), out, 16);
}

/* [MS-SMB2] 3.2.5.3.1: Session.EncryptionKey (client to server) and
 * DecryptionKey.  AES-256 ciphers derive 32 bytes from the whole session
 * key (Session.FullSessionKey); the others 16 from its first 16 bytes. */
static int derive_cipher_keys(uint16_t dialect, uint16_t cipher, const uint8_t *key, size_t keylen,
                              const uint8_t preauth[64], uint8_t enc[32], uint8_t dec[32])
{
	size_t klen = smb_cipher_key_len(cipher);
	uint8_t k16[16] = {0};
	if (!klen)
		return -EINVAL;
	if (klen == 16 || keylen < 16) {
		memcpy(k16, key, keylen < 16 ? keylen : 16);
		key = k16;
		keylen = 16;
	}
	int err;
	if (dialect == SMB2_DIALECT_0311) {
		static const uint8_t c2s[] = "SMBC2SCipherKey", s2c[] = "SMBS2CCipherKey";
		err = smb_kdf(key, keylen, c2s, sizeof(c2s), preauth, 64, enc, klen);
		if (!err)
			err = smb_kdf(key, keylen, s2c, sizeof(s2c), preauth, 64, dec, klen);
	} else {
		static const uint8_t label[] = "SMB2AESCCM";
		static const uint8_t in[] = "ServerIn ", out[] = "ServerOut";
		err = smb_kdf(key, keylen, label, sizeof(label), in, sizeof(in), enc, klen);
		if (!err)
			err =
			    smb_kdf(key, keylen, label, sizeof(label), out, sizeof(out), dec, klen);
	}
	smb_wipe(k16, sizeof(k16));
	return err;
}

/* Start sealing every request of the session (loop thread or set-up). */
static void crypt_activate(struct smb_client *c, const char *why)
{
	if (__atomic_load_n(&c->sess.crypt.active, __ATOMIC_ACQUIRE))
		return;
	/* No RDMA offload from now on: READ/WRITE sizes are what fits inline. */
	for (int i = 0; i < c->nchans; i++) {
		struct smb_chan *ch = c->chans[i];
		if (ch->inline_max_read && ch->max_read > ch->inline_max_read)
			ch->max_read = ch->inline_max_read;
		if (ch->inline_max_write && ch->max_write > ch->inline_max_write)
			ch->max_write = ch->inline_max_write;
		if (i == 0) {
			c->sess.max_read = ch->max_read;
			c->sess.max_write = ch->max_write;
		}
	}
	__atomic_store_n(&c->sess.crypt.active, true, __ATOMIC_RELEASE);
	smb_info("%s: encrypting with %s (%s)", c->host, smb2_cipher_str(c->sess.crypt.cipher),
	         why);
}

static const char *logon_hint(uint32_t st)
{
	switch (st) {
	case STATUS_LOGON_FAILURE:
	case STATUS_WRONG_PASSWORD:
	case STATUS_NO_SUCH_USER:
		return "logon failure: wrong user name or password";
	case STATUS_ACCOUNT_DISABLED:
		return "logon failure: the account is disabled";
	case STATUS_ACCOUNT_LOCKED_OUT:
		return "logon failure: the account is locked out";
	case STATUS_PASSWORD_EXPIRED:
	case STATUS_PASSWORD_MUST_CHANGE:
		return "logon failure: the password has expired";
	case STATUS_ACCOUNT_RESTRICTION:
	case STATUS_INVALID_LOGON_HOURS:
		return "logon failure: account restriction";
	default:
		return "session setup failed";
	}
}

/* The final SESSION_SETUP response of a binding is signed with the new
 * Channel.SigningKey.  [MS-SMB2] derives it from the session key; Samba
 * derives it from the key of the binding's own authentication.  Try that
 * one first, then the first authentication's, and keep what verifies. */
static int bind_channel_key(struct smb_client *c, struct smb_chan *ch, const uint8_t bind_key[16],
                            const uint8_t preauth[64], const struct smb_pdu *p)
{
	const uint8_t *keys[2] = {bind_key, c->sess.session_key};
	for (int k = 0; k < 2; k++) {
		struct smb_signing s = {.alg = c->sess.signing.alg, .have_key = true};
		if (derive_signing_key(c->sess.dialect, keys[k], preauth, s.key))
			return -EIO;
		if (smb_verify_pdu(&s, p->rsp, p->rsp_len) == 0) {
			memcpy(ch->signing.key, s.key, 16);
			ch->signing.have_key = true;
			ch->signing.active = c->sess.signing.active;
			smb_debug("%s: channel key from the %s authentication's session key",
			          ch->conn->peer, k ? "first" : "binding");
			smb_wipe(&s, sizeof(s));
			return 0;
		}
		smb_wipe(&s, sizeof(s));
	}
	return -EIO;
}

/* A guest or anonymous session is acceptable only when that is what was
 * asked for, or when there is nothing to prove: no user, no password, no
 * Kerberos. */
static bool guest_wanted(const struct smb_client_opts *o)
{
	if (o->guest)
		return true;
	return o->sec != SMB_SEC_KRB5 && (!o->user || !o->user[0]) &&
	       (!o->password || !o->password[0]);
}

/* The authentication mechanism the options ask for (Kerberos or NTLMSSP,
 * both inside SPNEGO), a talloc child of mem.  0, or -errno with the reason
 * in errbuf. */
static int auth_start(struct smb_client *c, const struct smb_client_opts *o,
                      const struct smb_auth_creds *creds, void *mem, struct smb_auth **auth,
                      char *errbuf, size_t errlen)
{
	int err;
	if (o->sec == SMB_SEC_KRB5) {
		struct smb_auth_krb5_opts ko = {
		    .server_name = c->host,
		    .user = o->user,
		    .domain = o->domain,
		    .keytab = o->keytab,
		};
		char why[512] = "";
		err = smb_auth_krb5_new(mem, &ko, auth, why, sizeof(why));
		if (err) {
			set_err(errbuf, errlen, "%s",
			        why[0] ? why : "sec=krb5: cannot start Kerberos authentication");
			return err;
		}
	} else {
		err = smb_auth_ntlmssp_new(mem, creds, auth);
		if (err) {
			set_err(errbuf, errlen, "cannot start NTLMSSP: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

/* The last SESSION_SETUP response (p, decoded in ssr) accepted us: derive
 * the keys from the mechanism's session key and the preauth hash, and make
 * the server prove it knows them - a binding's signature ([MS-SMB2]
 * 3.2.5.3.3), or the session's signed final response on 3.x - then turn on
 * signing and encryption as the options and the server ask.  0, or -errno
 * with the reason in errbuf. */
static int setup_done(struct smb_client *c, struct smb_chan *ch, const struct smb_client_opts *o,
                      bool binding, bool guest, struct smb_auth *auth,
                      const struct smb2_session_setup_rsp *ssr, const struct smb_pdu *p,
                      const uint8_t hash[64], const char *who, char *errbuf, size_t errlen)
{
	bool sign = o->require_signing;
	int err;
	uint8_t skey[64], key16[16] = {0};
	size_t skey_len = sizeof(skey);
	err = smb_auth_session_key(auth, skey, &skey_len);
	if (!err)
		memcpy(key16, skey, skey_len < 16 ? skey_len : 16);
	if (binding) {
		smb_wipe(skey, sizeof(skey));
		/* [MS-SMB2] 3.2.5.3.3 */
		if (!err && (guest || !(p->rsp_hdr.flags & SMB2_FLAGS_SIGNED))) {
			set_err(errbuf, errlen, "%s answered the channel binding %s",
			        ch->conn->peer, guest ? "as guest" : "unsigned");
			err = -EPROTO;
		} else if (!err && bind_channel_key(c, ch, key16, hash, p) < 0) {
			set_err(errbuf, errlen,
			        "the channel binding response from %s has a bad signature",
			        ch->conn->peer);
			err = -EIO;
		}
		smb_wipe(key16, sizeof(key16));
		if (err)
			return err;
		ch->conn->signing = &ch->signing;
		ch->conn->crypt = &c->sess.crypt;
		if (smb_client_sealed(c)) {
			if (ch->inline_max_read && ch->max_read > ch->inline_max_read)
				ch->max_read = ch->inline_max_read;
			if (ch->inline_max_write && ch->max_write > ch->inline_max_write)
				ch->max_write = ch->inline_max_write;
		}
		smb_info("%s: channel bound to session 0x%llx", ch->conn->peer,
		         (unsigned long long)c->sess.session_id);
		return 0;
	}
	if (!err && !guest) {
		memcpy(ch->preauth, hash, 64);
		memcpy(c->sess.session_key, key16, 16);
		err = derive_signing_key(c->sess.dialect, key16, hash, c->sess.signing.key);
		c->sess.signing.have_key = !err;
	}
	if (!err && !guest && c->sess.crypt.cipher) {
		err = derive_cipher_keys(c->sess.dialect, c->sess.crypt.cipher, skey, skey_len,
		                         hash, c->sess.crypt.enc_key, c->sess.crypt.dec_key);
		c->sess.crypt.session_id = c->sess.session_id;
		if (!err)
			err = smb_random_bytes(c->sess.crypt.salt, sizeof(c->sess.crypt.salt));
		c->sess.crypt.have_key = !err;
	}
	smb_wipe(skey, sizeof(skey));
	smb_wipe(key16, sizeof(key16));
	bool must_sign = sign || (c->sess.server_security_mode & SMB2_NEGOTIATE_SIGNING_REQUIRED);
	/* [MS-SMB2] 3.3.5.5.3: on 3.x a server signs the final response of
	 * a non-guest session with the key both sides derived; that
	 * signature is its proof that it knows the password (or holds the
	 * service key), whether or not signing is required afterwards. */
	bool prove = c->sess.dialect >= SMB2_DIALECT_0300 && !guest_wanted(o);
	if (!err && !guest && (prove || must_sign || (p->rsp_hdr.flags & SMB2_FLAGS_SIGNED))) {
		if (!(p->rsp_hdr.flags & SMB2_FLAGS_SIGNED) && prove) {
			set_err(errbuf, errlen,
			        "%s did not sign the final SESSION_SETUP response, so it has "
			        "not proved that it knows the password: refused",
			        c->host);
			err = -EACCES;
		} else if ((p->rsp_hdr.flags & SMB2_FLAGS_SIGNED) &&
		           smb_verify_pdu(&c->sess.signing, p->rsp, p->rsp_len) < 0) {
			set_err(errbuf, errlen,
			        "the final SESSION_SETUP response from %s has a bad "
			        "signature (wrong password, or tampering)",
			        c->host);
			err = -EACCES;
		}
	}
	if (!err && must_sign) {
		if (guest) {
			set_err(errbuf, errlen,
			        "%s logged us on as guest, and guest sessions cannot be signed",
			        c->host);
			err = -EACCES;
		} else {
			c->sess.signing.active = true;
		}
	}
	bool want_seal =
	    o->require_encryption || (ssr->session_flags & SMB2_SESSION_FLAG_ENCRYPT_DATA);
	if (!err && want_seal) {
		if (guest) {
			set_err(errbuf, errlen,
			        "%s logged us on as guest, and guest sessions cannot be "
			        "encrypted",
			        c->host);
			err = -EACCES;
		} else if (!c->sess.crypt.have_key) {
			set_err(errbuf, errlen,
			        "%s requires encryption for the session, but no cipher was "
			        "negotiated (SMB %s)",
			        c->host, smb2_dialect_str(c->sess.dialect));
			err = -EPROTONOSUPPORT;
		} else {
			crypt_activate(c, o->require_encryption
			                      ? "seal"
			                      : "the server requires it for the session");
		}
	}
	c->sess.guest = guest;
	if (err)
		return err;
	smb_info("%s: session 0x%llx set up for '%s' (%s), signing %s", c->host,
	         (unsigned long long)c->sess.session_id, who, guest ? "guest" : "user",
	         c->sess.signing.active ? "on" : "off");
	return 0;
}

/* Send one SESSION_SETUP carrying the mechanism's token out[outlen] on ch
 * (a binding's signed with the session's key) and wait for the answer:
 * 0 and the answered request in *reqp (the caller puts it), or -errno with
 * the reason in errbuf. */
static int setup_round(struct smb_client *c, struct smb_chan *ch, bool binding, bool sign,
                       const uint8_t *out, size_t outlen, void *mem, struct smb_req **reqp,
                       char *errbuf, size_t errlen)
{
	int err;
	struct smb2_session_setup_req sr = {
	    .flags = binding ? SMB2_SESSION_FLAG_BINDING : 0,
	    .security_mode = (uint8_t)(SMB2_NEGOTIATE_SIGNING_ENABLED |
	                               (sign ? SMB2_NEGOTIATE_SIGNING_REQUIRED : 0)),
	    .previous_session_id = binding ? 0 : c->sess.previous_session_id,
	    .security_buffer = out,
	    .security_buffer_len = (uint16_t)outlen,
	};
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	req->tree_id = 0;
	req->no_replay = true;
	if (binding)
		req->force_sign = true;
	else
		req->no_sign = true;
	req->no_verify = true;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_SESSION_SETUP, 64 + outlen);
	err = body ? smb_req_end_pdu(req, enc_session_setup(body, 64 + outlen, &sr)) : -ENOMEM;
	if (err) {
		smb_req_put(req);
		return err;
	}
	err = setup_send(c, ch, req, "SESSION_SETUP", ch->conn->peer, errbuf, errlen);
	if (err) {
		smb_req_put(req);
		return err;
	}
	*reqp = req;
	return 0;
}

int smb_chan_session_setup(struct smb_client *c, struct smb_chan *ch,
                           const struct smb_client_opts *o, bool binding, const uint8_t *blob,
                           size_t blob_len, void *mem, char *errbuf, size_t errlen)
{
	bool sign = o->require_signing;
	struct smb_auth *auth;
	struct smb_auth_creds creds = {
	    .user = o->user ? o->user : "",
	    .password = o->password ? o->password : "",
	    .domain = o->domain ? o->domain : "",
	    .workstation = "",
	    .server_name = c->host,
	};
	/* Who we log on as, for messages (Kerberos may take the ticket's). */
	const char *who = creds.user[0]            ? creds.user
	                  : o->sec == SMB_SEC_KRB5 ? "(the ticket's principal)"
	                                           : "";
	int err;
	err = auth_start(c, o, &creds, mem, &auth, errbuf, errlen);
	if (err)
		return err;
	uint8_t hash[64];
	memcpy(hash, ch->preauth, 64);
	const uint8_t *in = blob;
	size_t inlen = blob_len;
	/* A binding's requests are signed with Session.SigningKey. */
	if (binding) {
		ch->conn->signing = &c->sess.signing;
		/* A server that wants the session encrypted may seal its
		 * refusal of an unencrypted binding. */
		ch->conn->crypt = &c->sess.crypt;
	}

	for (int round = 0; round < 8; round++) {
		const uint8_t *out;
		size_t outlen;
		int step = smb_auth_step(auth, in, inlen, &out, &outlen);
		if (step < 0) {
			const char *why = smb_auth_last_error(auth);
			set_err(errbuf, errlen, "%s for user '%s' on %s (%s: %s)", logon_hint(0),
			        who, c->host, smb_auth_mech_name(auth),
			        why ? why : strerror(-step));
			smb_auth_free(auth);
			return step == -EACCES ? -EACCES : step;
		}
		if (step == SMB_AUTH_DONE && outlen == 0) {
			/* Nothing left to send, yet the server has not accepted us. */
			set_err(errbuf, errlen,
			        "authentication with %s ended before the server accepted it",
			        c->host);
			smb_auth_free(auth);
			return -EPROTO;
		}
		struct smb_req *req;
		err = setup_round(c, ch, binding, sign, out, outlen, mem, &req, errbuf, errlen);
		if (err) {
			smb_auth_free(auth);
			return err;
		}
		struct smb_pdu *p = &req->pdu[0];
		uint32_t st = p->rsp_hdr.status;
		if (c->sess.dialect == SMB2_DIALECT_0311)
			preauth_update(hash, p->buf, p->len);
		if (st != STATUS_SUCCESS && st != STATUS_MORE_PROCESSING_REQUIRED) {
			if (binding)
				set_err(errbuf, errlen, "%s refused to bind a channel: %s%s",
				        ch->conn->peer, smb2_status_str(st),
				        st == STATUS_ACCESS_DENIED && smb_client_sealed(c)
				            ? " (a server that requires the session encrypted "
				              "may refuse to bind channels to it; Samba does)"
				            : "");
			else
				set_err(errbuf, errlen, "%s (%s) for user '%s%s%s' on %s",
				        logon_hint(st), smb2_status_str(st),
				        creds.domain[0] ? creds.domain : "",
				        creds.domain[0] ? "\\" : "", who, c->host);
			smb_req_put(req);
			smb_auth_free(auth);
			return st == STATUS_LOGON_FAILURE || st == STATUS_WRONG_PASSWORD ? -EACCES
			                                                                 : -EPERM;
		}
		struct smb2_session_setup_rsp ssr;
		if (smb2_session_setup_rsp_decode(p->rsp, p->rsp_len, &ssr) < 0) {
			set_err(errbuf, errlen, "malformed SESSION_SETUP response from %s",
			        ch->conn->peer);
			smb_req_put(req);
			smb_auth_free(auth);
			return -EBADMSG;
		}
		if (!binding) {
			c->sess.session_id = p->rsp_hdr.session_id;
		} else if (p->rsp_hdr.session_id != c->sess.session_id) {
			set_err(errbuf, errlen, "%s bound the channel to another session",
			        ch->conn->peer);
			smb_req_put(req);
			smb_auth_free(auth);
			return -EPROTO;
		}
		if (st == STATUS_MORE_PROCESSING_REQUIRED) {
			if (c->sess.dialect == SMB2_DIALECT_0311)
				preauth_update(hash, p->rsp, p->rsp_len);
			in = talloc_memdup(mem, ssr.security_buffer, ssr.security_buffer_len);
			inlen = ssr.security_buffer_len;
			smb_req_put(req);
			continue;
		}
		/* STATUS_SUCCESS: let the mechanism check the final token (mechListMIC). */
		if (ssr.security_buffer_len) {
			const uint8_t *o2;
			size_t o2len;
			int fin = smb_auth_step(auth, ssr.security_buffer, ssr.security_buffer_len,
			                        &o2, &o2len);
			if (fin < 0) {
				set_err(errbuf, errlen,
				        "%s's final authentication token is invalid (%s)", c->host,
				        strerror(-fin));
				smb_req_put(req);
				smb_auth_free(auth);
				return -EACCES;
			}
		}
		bool guest =
		    ssr.session_flags & (SMB2_SESSION_FLAG_IS_GUEST | SMB2_SESSION_FLAG_IS_NULL);
		if (guest && !binding && !guest_wanted(o)) {
			/* No key: nothing after this (the signed TREE_CONNECT, the
			 * VALIDATE_NEGOTIATE) could tell the real server from anyone
			 * who took our NTLM response and waved us through. */
			set_err(
			    errbuf, errlen,
			    "logon failure: %s accepted user '%s%s%s' only as %s, which proves "
			    "nothing about the server (wrong password, or a server mapping bad "
			    "logons to guest, or an impostor); refused because credentials were "
			    "given (-o guest asks for a guest session)",
			    c->host, creds.domain[0] ? creds.domain : "",
			    creds.domain[0] ? "\\" : "", who,
			    ssr.session_flags & SMB2_SESSION_FLAG_IS_NULL ? "an anonymous session"
			                                                  : "a guest");
			smb_req_put(req);
			smb_auth_free(auth);
			return -EACCES;
		}
		err =
		    setup_done(c, ch, o, binding, guest, auth, &ssr, p, hash, who, errbuf, errlen);
		smb_req_put(req);
		smb_auth_free(auth);
		return err;
	}
	smb_auth_free(auth);
	set_err(errbuf, errlen, "authentication with %s did not finish", c->host);
	return -EPROTO;
}

/* ---- TREE_CONNECT ----------------------------------------------------------------- */

static ssize_t enc_tree_connect(uint8_t *b, size_t cap, const struct smb2_tree_connect_req *r)
{
	return smb2_tree_connect_req_encode(b, cap, r);
}

static int do_tree_connect(struct smb_client *c, struct smb_chan *ch, void *mem, char *errbuf,
                           size_t errlen)
{
	struct smb2_tree_connect_req tr = {.path = c->tree.unc};
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	/* [MS-SMB2] 3.2.4.1.1: with 3.1.1, TREE_CONNECT is always signed. */
	req->force_sign = c->sess.dialect == SMB2_DIALECT_0311;
	size_t cap = 16 + 4 * strlen(c->tree.unc) + 8;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_TREE_CONNECT, cap);
	int err = body ? smb_req_end_pdu(req, enc_tree_connect(body, cap, &tr)) : -ENOMEM;
	if (!err) {
		req->deadline_ms = ev_now_ms() + setup_timeout_ms(c);
		err = smb_client_submit_sync(c, req);
	}
	if (err) {
		char why[168];
		smb_conn_dead_why(ch->conn, why, sizeof(why));
		set_err(errbuf, errlen, "TREE_CONNECT to %s failed: %s%s", c->tree.unc,
		        strerror(-err), why);
		smb_req_put(req);
		return err;
	}
	struct smb_pdu *p = &req->pdu[0];
	uint32_t st = p->rsp_hdr.status;
	if (st != STATUS_SUCCESS) {
		if (st == STATUS_BAD_NETWORK_NAME)
			set_err(errbuf, errlen, "share '%s' does not exist on %s (%s)",
			        c->tree.share, c->host, smb2_status_str(st));
		else if (st == STATUS_ACCESS_DENIED || st == STATUS_NETWORK_ACCESS_DENIED)
			set_err(errbuf, errlen, "access to share '%s' on %s denied to %s%s%s (%s)",
			        c->tree.share, c->host, c->user[0] ? "user '" : "the guest session",
			        c->user, c->user[0] ? "'" : "", smb2_status_str(st));
		else
			set_err(errbuf, errlen, "cannot connect to share '%s' on %s: %s",
			        c->tree.share, c->host, smb2_status_str(st));
		smb_req_put(req);
		return st == STATUS_BAD_NETWORK_NAME ? -ENOENT : -EACCES;
	}
	struct smb2_tree_connect_rsp trs;
	if (smb2_tree_connect_rsp_decode(p->rsp, p->rsp_len, &trs) < 0) {
		set_err(errbuf, errlen, "malformed TREE_CONNECT response from %s", c->host);
		smb_req_put(req);
		return -EBADMSG;
	}
	c->tree.tree_id = p->rsp_hdr.tree_id;
	c->tree.share_type = trs.share_type;
	c->tree.share_flags = trs.share_flags;
	c->tree.share_caps = trs.capabilities;
	smb_req_put(req);
	if (c->tree.ipc && trs.share_type == SMB2_SHARE_TYPE_PIPE)
		return 0;
	if (trs.share_type != SMB2_SHARE_TYPE_DISK) {
		set_err(errbuf, errlen, "share '%s' on %s is not a disk share", c->tree.share,
		        c->host);
		return -ENOTDIR;
	}
	if ((trs.share_flags & SMB2_SHAREFLAG_ENCRYPT_DATA) && !smb_client_sealed(c)) {
		/* One tree per mount: sealing the whole session is sealing it. */
		if (!c->sess.crypt.have_key) {
			set_err(errbuf, errlen,
			        "share '%s' on %s requires encryption, but %s (SMB %s)",
			        c->tree.share, c->host,
			        c->sess.guest ? "a guest session cannot encrypt"
			                      : "no cipher was negotiated",
			        smb2_dialect_str(c->sess.dialect));
			return -EPROTONOSUPPORT;
		}
		crypt_activate(c, "the share requires it");
	}
	return 0;
}

/* [MS-SMB2] 3.2.5.5 / 2.2.31.4: with 3.0 and 3.0.2, ask the server over a
 * signed IOCTL what it negotiated, and compare with what we saw: an
 * attacker who stripped dialects or signing from the unsigned NEGOTIATE
 * cannot forge this answer.  3.1.1 has the preauth hash instead. */
static int validate_negotiate(struct smb_client *c, struct smb_chan *ch, void *mem, char *errbuf,
                              size_t errlen)
{
	if (c->sess.dialect != SMB2_DIALECT_0300 && c->sess.dialect != SMB2_DIALECT_0302)
		return 0;
	if (c->sess.guest || !c->sess.signing.have_key)
		return 0; /* nothing to sign it with */
	uint8_t in[24 + 2 * 8];
	struct smb_wr w;
	smb_wr_init(&w, in, sizeof(in));
	smb_wr_u32(&w, c->sess.neg_caps);
	smb_wr_bytes(&w, c->sess.client_guid, 16);
	smb_wr_u16(&w, c->sess.neg_security_mode);
	smb_wr_u16(&w, (uint16_t)c->sess.neg_ndialects);
	for (int i = 0; i < c->sess.neg_ndialects; i++)
		smb_wr_u16(&w, c->sess.neg_dialects[i]);
	struct smb2_ioctl_req r = {
	    .ctl_code = FSCTL_VALIDATE_NEGOTIATE_INFO,
	    .fileid = {UINT64_MAX, UINT64_MAX},
	    .input = in,
	    .input_len = (uint32_t)(w.p - w.base),
	    .max_output_response = 24,
	    .flags = SMB2_0_IOCTL_IS_FSCTL,
	};
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return -ENOMEM;
	req->force_sign = true;
	size_t cap = 64 + sizeof(in);
	uint8_t *body = smb_req_begin_pdu(req, SMB2_IOCTL, cap);
	int err = body ? smb_req_end_pdu(req, smb2_ioctl_req_encode(body, cap, &r)) : -ENOMEM;
	if (!err)
		err = smb_client_submit_sync(c, req);
	if (err) {
		set_err(errbuf, errlen,
		        "validating the negotiation with %s failed: %s (a bad signature means "
		        "tampering)",
		        c->host, strerror(-err));
		smb_req_put(req);
		return err == -EIO ? -EIO : err;
	}
	struct smb_pdu *p = &req->pdu[0];
	uint32_t st = p->rsp_hdr.status;
	struct smb2_ioctl_rsp rsp;
	if (st == STATUS_NOT_SUPPORTED || st == STATUS_INVALID_DEVICE_REQUEST ||
	    st == STATUS_FILE_CLOSED) {
		/* signed (verified above), so it is the server's own answer */
		smb_warn("%s does not validate negotiations (%s); going on", c->host,
		         smb2_status_str(st));
		smb_req_put(req);
		return 0;
	}
	if (st != STATUS_SUCCESS || smb2_ioctl_rsp_decode(p->rsp, p->rsp_len, &rsp) < 0 ||
	    rsp.output_len < 24) {
		set_err(errbuf, errlen, "%s answered FSCTL_VALIDATE_NEGOTIATE_INFO with %s",
		        c->host, st != STATUS_SUCCESS ? smb2_status_str(st) : "a malformed reply");
		smb_req_put(req);
		return -EPROTO;
	}
	struct smb_rd rd;
	smb_rd_init(&rd, rsp.output, rsp.output_len);
	uint32_t caps = smb_rd_u32(&rd);
	uint8_t guid[16];
	smb_rd_bytes(&rd, guid, 16);
	uint16_t mode = smb_rd_u16(&rd);
	uint16_t dialect = smb_rd_u16(&rd);
	smb_req_put(req);
	if (caps != c->sess.server_caps || memcmp(guid, c->sess.server_guid, 16) != 0 ||
	    mode != c->sess.server_security_mode || dialect != c->sess.dialect) {
		set_err(errbuf, errlen,
		        "%s's FSCTL_VALIDATE_NEGOTIATE_INFO answer does not match the NEGOTIATE "
		        "(dialect %s vs %s, capabilities 0x%x vs 0x%x, security mode 0x%x vs "
		        "0x%x): someone may have tampered with the negotiation",
		        c->host, smb2_dialect_str(dialect), smb2_dialect_str(c->sess.dialect), caps,
		        c->sess.server_caps, mode, c->sess.server_security_mode);
		return -EPROTO;
	}
	smb_debug("%s: negotiation validated", c->host);
	return 0;
}

int smb_chan_tree_connect(struct smb_client *c, struct smb_chan *ch, void *mem, char *errbuf,
                          size_t errlen)
{
	int err = do_tree_connect(c, ch, mem, errbuf, errlen);
	return err ? err : validate_negotiate(c, ch, mem, errbuf, errlen);
}

/* ---- channels ------------------------------------------------------------------- */

static void chan_dead(void *arg, int err)
{
	struct smb_chan *ch = arg;
	__atomic_store_n(&ch->dead, true, __ATOMIC_RELEASE);
	if (__atomic_load_n(&ch->c->closing, __ATOMIC_ACQUIRE))
		return; /* the logoff ended the session: the server drops channels */
	/* One that failed set-up (its opener reports why): no requery for it,
	 * or a server refusing to bind would have us reconnecting in a loop. */
	if (ch->index > 0 && !__atomic_load_n(&ch->published, __ATOMIC_ACQUIRE))
		return;
	if (ch->index > 0 || __atomic_load_n(&ch->c->nchans, __ATOMIC_ACQUIRE) > 1)
		smb_warn("%s: channel %d lost (%s); it takes no new requests", ch->conn->peer,
		         ch->index, strerror(-err));
	smb_client_wake_mgr(ch->c);
	if (!smb_client_live_channels(ch->c)) {
		uint64_t zero = 0, now = ev_now_ms();
		__atomic_compare_exchange_n(&ch->c->down_since_ms, &zero, now ? now : 1, false,
		                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		smb_warn("%s: the connection to the server is lost; reconnecting", ch->c->host);
	}
}

/* A request in flight on ch when it died, or refused by its dead
 * transport: the channel manager's to replay or park (chanmgr.h). */
static bool chan_orphan(void *arg, struct smb_req *req)
{
	struct smb_chan *ch = arg;
	struct smb_client *c = ch->c;
	__atomic_store_n(&ch->dead, true, __ATOMIC_RELEASE);
	return c->mgr && c->mgr->orphan(ch, req);
}

/* A request refused by ch while the client moves (conn->hold): the
 * manager parks it; ch itself lives until the move closes it. */
static bool chan_held(void *arg, struct smb_req *req)
{
	struct smb_chan *ch = arg;
	struct smb_client *c = ch->c;
	return c->mgr && c->mgr->hold && c->mgr->hold(ch, req);
}

static void chan_break(void *arg, const uint8_t *pdu, size_t len)
{
	struct smb_chan *ch = arg;
	smb_opens_on_break(ch->c, pdu, len);
}

/* Wrap a connected conn in a channel (talloc child of c); closes conn on
 * failure. */
static int chan_adopt(struct smb_client *c, struct smb_conn *conn, struct smb_chan **out)
{
	struct smb_chan *ch = talloc_zero(c, struct smb_chan);
	if (!ch) {
		smb_conn_close(conn);
		return -ENOMEM;
	}
	ch->c = c;
	ch->if_index = UINT32_MAX;
	ch->index = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	ch->conn = conn;
	ch->conn->on_dead = chan_dead;
	ch->conn->on_orphan = chan_orphan;
	ch->conn->on_held = chan_held;
	ch->conn->on_break = chan_break;
	ch->conn->on_dead_arg = ch;
	ch->conn->chan = ch;
	*out = ch;
	return 0;
}

int smb_chan_open(struct smb_client *c, enum smb_transport_kind kind, const struct sockaddr *addr,
                  socklen_t addrlen, const char *peer, unsigned connect_timeout_ms,
                  struct smb_chan **out)
{
	struct smb_conn *conn;
	/* hard: 0, so the connection puts no deadline on requests. */
	int err = smb_conn_open(c->loop, kind, &c->quic, addr, addrlen, peer, connect_timeout_ms,
	                        c->hard ? 0 : c->timeout_ms, c->cancel_fd, &conn);
	return err ? err : chan_adopt(c, conn, out);
}

uint16_t smb_client_kind_port(const struct smb_client *c, enum smb_transport_kind kind)
{
	return kind == SMB_TRANSPORT_QUIC ? c->quic_port : c->port;
}

int smb_chan_publish(struct smb_client *c, struct smb_chan *ch)
{
	pthread_mutex_lock(&c->chans_lock);
	int n = c->nchans;
	if (n == SMB_CLIENT_MAX_CHANNELS) {
		pthread_mutex_unlock(&c->chans_lock);
		smb_warn("%s: this mount has used all %d channel slots (dead channels keep "
		         "theirs); no new channel",
		         c->host, SMB_CLIENT_MAX_CHANNELS);
		return -ENOSPC;
	}
	ch->index = n;
	/* Regions the caller registered before this channel existed. */
	if (smb_offload_regions_sync(ch))
		smb_warn("%s: could not register the request buffers on this channel; its "
		         "writes are copied",
		         ch->conn->peer);
	c->chans[n] = ch;
	__atomic_store_n(&ch->published, true, __ATOMIC_RELEASE);
	__atomic_store_n(&c->down_since_ms, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->nchans, n + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->chans_lock);
	return 0;
}

void smb_chan_discard(struct smb_chan *ch)
{
	if (!ch)
		return;
	smb_conn_close(ch->conn);
	smb_offload_teardown(ch);
	smb_wipe(&ch->signing, sizeof(ch->signing));
	talloc_free(ch);
}

/* ---- connect / destroy ------------------------------------------------------------- */

/* One address of the server: the kind the mount asked for, or (auto) the
 * TCP/QUIC race.  peer is the server's name; the port is added here. */
static int dial_one(struct smb_client *c, const struct addrinfo *ai, const char *name,
                    unsigned ctimeout, struct smb_chan **out)
{
	struct sockaddr_storage tcp, quic;
	char tcp_peer[360], quic_peer[360];
	if (ai->ai_addrlen > sizeof(tcp))
		return -EINVAL;
	memcpy(&tcp, ai->ai_addr, ai->ai_addrlen);
	memcpy(&quic, ai->ai_addr, ai->ai_addrlen);
	uint16_t qport = htons(c->quic_port);
	if (quic.ss_family == AF_INET)
		((struct sockaddr_in *)&quic)->sin_port = qport;
	else if (quic.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&quic)->sin6_port = qport;
	snprintf(tcp_peer, sizeof(tcp_peer), "%s port %u", name, c->port);
	snprintf(quic_peer, sizeof(quic_peer), "%s udp port %u (quic)", name, c->quic_port);
	if (!c->dial_auto) {
		bool q = c->dial_kind == SMB_TRANSPORT_QUIC;
		int err = smb_chan_open(c, c->dial_kind, (struct sockaddr *)(q ? &quic : &tcp),
		                        ai->ai_addrlen, q ? quic_peer : tcp_peer, ctimeout, out);
		if (!err && c->dial_kind != SMB_TRANSPORT_RDMA)
			c->stream_kind = c->dial_kind;
		return err;
	}
	struct smb_dial_spec spec = {
	    .tcp_addr = (struct sockaddr *)&tcp,
	    .quic_addr = (struct sockaddr *)&quic,
	    .addrlen = ai->ai_addrlen,
	    .tcp_peer = tcp_peer,
	    .quic_peer = quic_peer,
	    .quic = &c->quic,
	    .connect_timeout_ms = ctimeout,
	    .timeout_ms = c->hard ? 0 : c->timeout_ms,
	    .cancel_fd = c->cancel_fd,
	};
	struct smb_conn *conn;
	enum smb_transport_kind kind;
	int err = smb_dial_race(c->loop, &c->racers, &spec, &conn, &kind);
	if (err)
		return err;
	c->stream_kind = kind;
	return chan_adopt(c, conn, out);
}

int smb_client_dial(struct smb_client *c, unsigned ctimeout, struct smb_chan **out,
                    const char **gai_error)
{
	/* ip=: that address, never a lookup of the name. */
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                         .ai_flags = c->addr ? AI_NUMERICHOST : AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%u", c->port);
	const char *host = c->addr ? c->addr : c->host;
	char bare[256];
	size_t hl = strlen(host);
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']' && hl < sizeof(bare)) {
		memcpy(bare, host + 1, hl - 2);
		bare[hl - 2] = 0;
		host = bare;
	}
	*gai_error = NULL;
	int gai = getaddrinfo(host, portstr, &hints, &res);
	if (gai) {
		*gai_error = gai_strerror(gai);
		return -EHOSTUNREACH;
	}
	int err = -EHOSTUNREACH;
	char peer[300];
	if (c->addr)
		snprintf(peer, sizeof(peer), "%s (%s)", c->host, c->addr);
	else
		snprintf(peer, sizeof(peer), "%s", c->host);
	struct smb_chan *ch = NULL;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		err = dial_one(c, ai, peer, ctimeout, &ch);
		if (!err)
			break;
	}
	freeaddrinfo(res);
	if (!err)
		*out = ch;
	return err;
}

static int resolve_and_connect(struct smb_client *c, unsigned ctimeout, char *errbuf, size_t errlen)
{
	struct smb_chan *ch = NULL;
	const char *gai_error;
	int err = smb_client_dial(c, ctimeout, &ch, &gai_error);
	bool dquic = !c->dial_auto && c->dial_kind == SMB_TRANSPORT_QUIC;
	const char *dport_what = dquic ? "udp port" : "port";
	unsigned dport = dquic ? c->quic_port : c->port;
	if (gai_error) {
		if (c->addr)
			set_err(errbuf, errlen, "bad address '%s' for %s: %s", c->addr, c->host,
			        gai_error);
		else
			set_err(errbuf, errlen, "cannot resolve host name '%s': %s", c->host,
			        gai_error);
		return err;
	}
	if (!err) {
		/* Channel 0 is published at once: session set-up runs on it. */
		smb_chan_publish(c, ch);
		c->conn = ch->conn;
	}
	if (c->rdma &&
	    (err == -ENODEV || err == -EADDRNOTAVAIL || err == -ENETUNREACH || err == -EOPNOTSUPP ||
	     err == -EINVAL)) /* rdma_cm: EINVAL when the device it picks cannot route there */
		set_err(errbuf, errlen, "no RDMA device can reach %s (%s)%s", c->host,
		        strerror(-err),
		        err == -EOPNOTSUPP ? ": this build has no SMB Direct support" : "");
	else if (c->rdma && err == -ECONNREFUSED)
		set_err(errbuf, errlen,
		        "%s refused SMB Direct on ports 5445 and 445 (is SMB Direct enabled on the "
		        "server?)",
		        c->host);
	else if (err == -EKEYREJECTED)
		set_err(errbuf, errlen,
		        "the TLS certificate of %s (QUIC, udp port %u) was refused: see the line "
		        "above for why; cafile= names the CA to trust",
		        c->host, c->quic_port);
	else if (c->dial_auto && err)
		set_err(errbuf, errlen,
		        "neither TCP port %u nor QUIC (udp port %u) of %s connected: %s", c->port,
		        c->quic_port, c->host, strerror(-err));
	else if (err == -ECONNREFUSED)
		set_err(errbuf, errlen,
		        "connection refused by %s %s %u (is the SMB server running?)", c->host,
		        dport_what, dport);
	else if (err == -ETIMEDOUT)
		set_err(errbuf, errlen, "no answer from %s %s %u within %u s", c->host, dport_what,
		        dport, ctimeout / 1000);
	else if (err)
		set_err(errbuf, errlen, "cannot connect to %s %s %u: %s", c->host, dport_what,
		        dport, strerror(-err));
	return err;
}

int smb_client_open(const struct smb_client_opts *o, const struct smb_chanmgr_ops *mgr,
                    struct smb_client **out, char *errbuf, size_t errlen)
{
	return smb_client_open_on(o, mgr, NULL, out, errbuf, errlen);
}

int smb_client_open_on(const struct smb_client_opts *o, const struct smb_chanmgr_ops *mgr,
                       struct ev_loop *loop, struct smb_client **out, char *errbuf, size_t errlen)
{
	int err = smb_crypto_init();
	if (err) {
		set_err(errbuf, errlen, "cannot initialise OpenSSL (legacy provider missing?)");
		return err;
	}
	if (!o->host || !*o->host || !o->share || !*o->share) {
		set_err(errbuf, errlen, "no server or share given");
		return -EINVAL;
	}
	struct smb_client *c = talloc_zero(NULL, struct smb_client);
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->chans_lock, NULL);
	pthread_mutex_init(&c->witness_lock, NULL);
	/* written once when the client closes: a connect in progress (of the
	 * channel manager's reconnect, of a transport=auto contestant) gives
	 * up; -1 (none) if there is no eventfd to be had */
	c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	void *mem = talloc_new(c);
	c->host = talloc_strdup(c, o->host);
	c->tree.share = talloc_strdup(c, o->share);
	c->tree.ipc = strcasecmp(o->share, "IPC$") == 0;
	c->user = talloc_strdup(c, o->user ? o->user : "");
	c->domain = talloc_strdup(c, o->domain ? o->domain : "");
	c->tree.unc = talloc_asprintf(c, "\\\\%s\\%s", o->host, o->share);
	c->port = o->port ? o->port : 445;
	c->rdma = o->rdma;
	c->quic_port = o->quic_port ? o->quic_port : 443;
	const char *dial = o->rdma ? "rdma" : o->transport ? o->transport : "tcp";
	int dial_kind = smb_transport_kind_parse(dial);
	c->dial_auto = strcmp(dial, "auto") == 0;
	c->dial_kind = dial_kind < 0 ? SMB_TRANSPORT_TCP : (enum smb_transport_kind)dial_kind;
	c->stream_kind = SMB_TRANSPORT_TCP;
	c->quic.server_name = c->host;
	c->quic.cafile = o->cafile ? talloc_strdup(c, o->cafile) : NULL;
	c->quic.certfile = o->certfile ? talloc_strdup(c, o->certfile) : NULL;
	c->quic.keyfile = o->keyfile ? talloc_strdup(c, o->keyfile) : NULL;
	c->quic.cancel_fd = c->cancel_fd;
	smb_dial_racers_init(&c->racers);
	if (dial_kind < 0 && !c->dial_auto) {
		set_err(errbuf, errlen, "unknown transport '%s' (tcp, rdma, quic or auto)", dial);
		err = -EINVAL;
		goto fail;
	}
	c->rdma_threshold = o->rdma_threshold ? o->rdma_threshold : 4096;
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : 60000;
	c->hard = o->hard;
	c->addr = o->addr ? talloc_strdup(c, o->addr) : NULL;
	if ((err = smb_opens_init(c)) < 0) {
		set_err(errbuf, errlen, "out of memory");
		goto fail;
	}
	unsigned ctimeout = o->connect_timeout_ms ? o->connect_timeout_ms : 15000;
	uint8_t *blob = NULL;
	size_t blob_len = 0;

	if (loop) {
		c->loop = loop;
		c->loop_borrowed = true;
	} else {
		err = ev_loop_new(&c->loop);
	}
	if (err) {
		set_err(errbuf, errlen, "cannot start the event loop: %s", strerror(-err));
		goto fail;
	}
	err = resolve_and_connect(c, ctimeout, errbuf, errlen);
	if (err)
		goto fail;
	/* Session set-up has its own, shorter patience: a server that accepts
	 * and never answers must not hold the mount for a minute per step. */
	err = smb_chan_negotiate(c, c->chans[0], o, &blob, &blob_len, mem, errbuf, errlen);
	if (err)
		goto fail;
	c->conn->signing = &c->sess.signing;
	c->conn->crypt = &c->sess.crypt;
	err = smb_chan_session_setup(c, c->chans[0], o, false, blob, blob_len, mem, errbuf, errlen);
	if (err)
		goto fail;
	err = smb_chan_tree_connect(c, c->chans[0], mem, errbuf, errlen);
	if (err)
		goto fail;
	if (c->sess.posix && !c->tree.ipc)
		smb_posix_probe(c, c->chans[0], mem);
	/* A durable handle is granted only under a batch oplock or a lease
	 * with H ([MS-SMB2] 3.3.5.9.10): none without either. */
	c->no_lease = o->no_lease;
	c->durable = c->sess.dialect >= SMB2_DIALECT_0300 && !o->no_durable && !o->no_lease;
	c->echo_ms = o->echo_ms ? o->echo_ms : 60000;
	c->chans[0]->conn->echo_ms = c->echo_ms;
	/* The one deep copy of the options, for the threads that outlive this
	 * call (a libsmbrdma caller may free its strings when we return). */
	c->opts = smb_client_opts_dup(c, o);
	if (!c->opts) {
		err = -ENOMEM;
		set_err(errbuf, errlen, "out of memory");
		goto fail;
	}
	c->mgr = mgr;
	if (mgr && (err = mgr->start(c)) < 0) {
		set_err(errbuf, errlen, "cannot start the channel manager: %s", strerror(-err));
		goto fail;
	}
	if (!c->tree.ipc && !o->nodfs && smb_dfs_tree_is_dfs(c) &&
	    o->dfs_depth >= SMB_DFS_MAX_DEPTH)
		smb_warn(
		    "%s: a DFS namespace %u links deep: its links are not followed (at most %d)",
		    c->tree.unc, o->dfs_depth, SMB_DFS_MAX_DEPTH);
	else if (!c->tree.ipc && !o->nodfs && smb_dfs_tree_is_dfs(c) &&
	         (err = smb_dfs_init(c)) < 0) {
		set_err(errbuf, errlen, "cannot set up DFS: %s", strerror(-err));
		goto fail;
	}
	talloc_free(mem);
	smb_info("mounted %s (SMB %s, signing %s, encryption %s%s)", c->tree.unc,
	         smb2_dialect_str(c->sess.dialect),
	         c->sess.signing.active ? smb2_signing_alg_str(c->sess.signing.alg) : "off",
	         smb_client_sealed(c) ? smb2_cipher_str(c->sess.crypt.cipher) : "off",
	         c->dfs ? ", a DFS namespace" : "");
	*out = c;
	return 0;
fail:
	smb_client_destroy(c);
	return err;
}

void smb_client_destroy(struct smb_client *c)
{
	if (!c)
		return;
	/* The targets of DFS links first: they run on our loop. */
	smb_dfs_destroy(c);
	__atomic_store_n(&c->closing, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (c->cancel_fd >= 0 && write(c->cancel_fd, &one, sizeof(one)) < 0)
		smb_debug("%s: cannot cancel the connects in progress: %s", c->host,
		          strerror(errno));
	smb_dial_racers_wait(&c->racers); /* they use the loop */
	if (c->conn) {
		if (c->sess.session_id && c->loop) {
			/* Best effort: tell the server we are leaving. */
			struct smb_req *req = smb_client_req(c, c);
			uint8_t *body = req ? smb_req_begin_pdu(req, SMB2_LOGOFF, 8) : NULL;
			if (body && smb_req_end_pdu(req, smb2_logoff_req_encode(body, 8)) == 0) {
				req->deadline_ms = ev_now_ms() + 2000;
				smb_client_submit_sync(c, req);
			}
			if (req)
				smb_req_put(req);
		}
	}
	if (c->mgr)
		c->mgr->stop(c);
	for (int i = 0; i < c->nchans; i++) {
		smb_conn_close(c->chans[i]->conn);
		c->chans[i]->conn = NULL;
		smb_offload_teardown(c->chans[i]);
		smb_wipe(&c->chans[i]->signing, sizeof(c->chans[i]->signing));
	}
	c->conn = NULL;
	if (c->loop && c->loop_borrowed)
		ev_call_wait(c->loop, NULL, NULL); /* calls queued for c have run */
	else if (c->loop)
		ev_loop_free(c->loop);
	smb_wipe(&c->sess.signing, sizeof(c->sess.signing));
	smb_wipe(c->sess.session_key, sizeof(c->sess.session_key));
	smb_wipe(&c->sess.crypt, sizeof(c->sess.crypt));
	pthread_mutex_destroy(&c->chans_lock);
	if (c->cancel_fd >= 0)
		close(c->cancel_fd);
	talloc_free(c);
}

static void addr_str(const struct sockaddr_storage *ss, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(out, cap, "%s:%u", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(out, cap, "[%s]:%u", host, port);
	} else {
		snprintf(out, cap, "-");
	}
}

void smb_client_get_stats(struct smb_client *c, struct smb_client_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->dialect = c->sess.dialect;
	out->signing = c->sess.signing.active;
	out->payload_bytes_copied = __atomic_load_n(&c->payload_bytes_copied, __ATOMIC_RELAXED);
	smb_lease_stats(c, out);
	pthread_mutex_lock(&c->witness_lock);
	out->witness = c->witness;
	pthread_mutex_unlock(&c->witness_lock);
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct smb_chan *chn = c->chans[i];
		struct smb_conn *cn = chn->conn;
		if (!cn)
			continue;
		struct smb_channel_stats *ch = &out->channels[out->nchannels++];
		struct smb_transport_info ti;
		cn->transport->ops->info(cn->transport, &ti);
		snprintf(ch->transport, sizeof(ch->transport), "%s", ti.kind ? ti.kind : "?");
		addr_str(&ti.local, ch->local, sizeof(ch->local));
		addr_str(&ti.remote, ch->remote, sizeof(ch->remote));
		pthread_mutex_lock(&cn->lock);
		snprintf(ch->state, sizeof(ch->state), "%s",
		         cn->state == SMB_CONN_UP ? "up" : "dead");
		ch->credits = cn->credits;
		ch->in_flight = cn->npending;
		for (struct smb_req *r = cn->wait_head; r; r = r->wnext)
			ch->in_flight++;
		pthread_mutex_unlock(&cn->lock);
		_Static_assert(SMB_LAT_BUCKETS == SMB_CONN_LAT_BUCKETS, "one count per bucket");
		for (int k = 0; k < SMB_LAT_BUCKETS; k++)
			ch->latency_buckets[k] =
			    __atomic_load_n(&cn->st_lat_buckets[k], __ATOMIC_RELAXED);
		ch->latency_sum_us = __atomic_load_n(&cn->st_lat_sum_us, __ATOMIC_RELAXED);
		ch->requests = __atomic_load_n(&cn->st_requests, __ATOMIC_RELAXED);
		_Static_assert(SMB_STATS_COMMANDS == SMB_CONN_COMMANDS, "one count per command");
		for (int k = 0; k < SMB_STATS_COMMANDS; k++)
			ch->commands[k] = __atomic_load_n(&cn->st_commands[k], __ATOMIC_RELAXED);
		ch->bytes_sent = __atomic_load_n(&cn->st_bytes_sent, __ATOMIC_RELAXED);
		ch->bytes_received = __atomic_load_n(&cn->st_bytes_received, __ATOMIC_RELAXED);
		ch->failovers = __atomic_load_n(&chn->failovers, __ATOMIC_RELAXED);
		ch->replays = __atomic_load_n(&chn->replays, __ATOMIC_RELAXED);
		smb_offload_stats(chn, ch);
		ch->reconnects = chn->reconnected;
		struct smb_transport_stats ts;
		if (cn->transport->ops->get_stats(cn->transport, &ts) == 0) {
			ch->rdma_read_bytes = ts.rdma_read_bytes;
			ch->rdma_write_bytes = ts.rdma_write_bytes;
			ch->send_credits = ts.send_credits;
			ch->recv_credits = ts.recv_credits;
			ch->mw_bound = ts.mw_bound;
			ch->mw_invalidated_remote = ts.mw_invalidated_remote;
			ch->mw_invalidated_local = ts.mw_invalidated_local;
		}
	}
}

struct ev_loop *smb_client_loop(struct smb_client *c)
{
	return c->loop;
}

int smb_client_reconnect_now(struct smb_client *c, const char *why)
{
	int n = __atomic_load_n(&c->nchans, __ATOMIC_ACQUIRE), dropped = 0;
	for (int i = 0; i < n; i++) {
		struct smb_chan *ch = c->chans[i];
		if (!__atomic_load_n(&ch->dead, __ATOMIC_ACQUIRE)) {
			smb_conn_abort(ch->conn, why);
			dropped++;
		}
	}
	if (c->dfs)
		dropped += smb_dfs_reconnect_now(c, why);
	return dropped;
}

int smb_client_set_targets(struct smb_client *c, const char *const *hosts,
                           const char *const *shares, int n, int cur)
{
	struct smb_alt_target *a = talloc_zero_array(c, struct smb_alt_target, n);
	if (!a)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		a[i].host = talloc_strdup(a, hosts[i]);
		a[i].share = talloc_strdup(a, shares[i]);
		a[i].unc = talloc_asprintf(a, "\\\\%s\\%s", hosts[i], shares[i]);
		/* ip= is the address of the target it came with only */
		a[i].addr = i == cur && c->addr ? talloc_strdup(a, c->addr) : NULL;
		if (!a[i].host || !a[i].share || !a[i].unc) {
			talloc_free(a);
			return -ENOMEM;
		}
	}
	/* a list it replaces stays allocated: c->host may point into it */
	pthread_mutex_lock(&c->chans_lock);
	c->alts = a;
	c->nalts = n;
	__atomic_store_n(&c->alt_cur, cur, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->chans_lock);
	return 0;
}

bool smb_client_retarget(struct smb_client *c)
{
	pthread_mutex_lock(&c->chans_lock);
	if (c->nalts < 2 || __atomic_load_n(&c->closing, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&c->chans_lock);
		return false;
	}
	int from = __atomic_load_n(&c->alt_cur, __ATOMIC_ACQUIRE), to = (from + 1) % c->nalts;
	struct smb_alt_target *t = &c->alts[to];
	smb_warn("%s: no answer from this DFS target; moving to %s (target %d of %d)", c->tree.unc,
	         t->unc, to + 1, c->nalts);
	__atomic_store_n(&c->addr, t->addr, __ATOMIC_RELEASE);
	__atomic_store_n(&c->host, t->host, __ATOMIC_RELEASE);
	__atomic_store_n(&c->quic.server_name, t->host, __ATOMIC_RELEASE);
	__atomic_store_n(&c->tree.share, t->share, __ATOMIC_RELEASE);
	__atomic_store_n(&c->tree.unc, t->unc, __ATOMIC_RELEASE);
	__atomic_store_n(&c->alt_cur, to, __ATOMIC_RELEASE);
	__atomic_add_fetch(&c->retargets, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->chans_lock);
	return true;
}

void smb_client_get_info(struct smb_client *c, struct smb_client_info *out)
{
	out->dialect = c->sess.dialect;
	out->signing = c->sess.signing.active;
	out->signing_alg = c->sess.signing.alg;
	out->encryption = smb_client_sealed(c);
	out->cipher = out->encryption ? c->sess.crypt.cipher : 0;
	out->max_read = c->sess.max_read;
	out->max_write = c->sess.max_write;
	out->share_type = c->tree.share_type;
	out->posix = c->sess.posix;
	out->posix_share_off = c->sess.posix_share_off;
}
