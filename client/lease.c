/* client/lease.c — leases: the key each open asks with, the RqLs context,
 * and the answer to a LEASE_BREAK.
 *
 * A lease key is the caller's lease_id (8 bytes, little-endian) followed by
 * the first 8 bytes of this client's ClientGuid, so a break names its
 * lease_id without a table, and two mounts of one share never share a key
 * (the server keys leases by ClientGuid too, but it costs nothing).  The
 * state granted lives with the caller (fuse/ keeps it per inode); the
 * engine only counts.
 *
 * A break goes to the caller's smb_lease_break_cb with an ack token; the
 * acknowledgment leaves only when the caller says its caches are gone
 * (smb_lease_break_done()), so nothing stale is served and no dirty page is
 * lost once the server lets the other client in.  A break the server does
 * not want acknowledged (e.g. R to none) gets none: an ack would draw an
 * error.
 *
 * Threads: smb_lease_on_break runs on the loop thread; smb_lease_break_done
 * on any.  The token is malloc'd (not talloc: it changes threads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/conn.h"
#include "client/lease.h"
#include "client/opens.h"
#include "client/request.h"
#include "client/session.h"
#include "client/proto/smb2_lease.h"
#include "common/log.h"

struct smb_lease_ack {
	struct smb_client *c;
	uint8_t key[SMB2_LEASE_KEY_LEN];
	uint32_t new_state;
	bool required;
};

static void lease_key(const struct smb_client *c, uint64_t id, uint8_t key[16])
{
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(id >> (8 * i));
	memcpy(key + 8, c->sess.client_guid, 8);
}

/* The lease_id of a key of ours, or 0 for a key we never made. */
static uint64_t lease_id_of(const struct smb_client *c, const uint8_t key[16])
{
	uint64_t id = 0;
	if (memcmp(key + 8, c->sess.client_guid, 8) != 0)
		return 0;
	for (int i = 0; i < 8; i++)
		id |= (uint64_t)key[i] << (8 * i);
	return id;
}

bool smb_client_leases_dirs(const struct smb_client *c)
{
	return smb_lease_names_parent(c);
}

bool smb_lease_names_parent(const struct smb_client *c)
{
	/* v2 leases (3.x) carry the key; a server without directory leases
	 * has no parent lease to keep */
	return c->sess.dialect >= SMB2_DIALECT_0300 &&
	       (c->sess.server_caps & SMB2_GLOBAL_CAP_DIRECTORY_LEASING);
}

bool smb_lease_ctx(struct smb_client *c, const struct smb_open_args *a, uint8_t buf[52],
                   struct smb2_create_ctx *ctx)
{
	bool dir = a->create_options & FILE_DIRECTORY_FILE;
	if (!a->lease_id || c->no_lease || c->sess.dialect < SMB2_DIALECT_0210 ||
	    !(c->sess.server_caps & SMB2_GLOBAL_CAP_LEASING))
		return false;
	/* Directory leases are 3.x only ([MS-SMB2] 3.2.4.3.8).  An open
	 * may name its parent's lease (parent_lease_id: smb_unlink_in()); a
	 * change made through any other (rename, mkdir, ...) breaks this
	 * mount's own lease on the directory too: a round trip and a dropped
	 * listing, never a stale one. */
	if (dir && (c->sess.dialect < SMB2_DIALECT_0300 ||
	            !(c->sess.server_caps & SMB2_GLOBAL_CAP_DIRECTORY_LEASING)))
		return false;
	/* A file's lease has no H under the SMB3 POSIX extensions: Samba 4.22
	 * breaks the H of an open below a directory being renamed and then
	 * waits for that open to close (35 s, then ACCESS_DENIED), while it
	 * lets the rename go past a POSIX open without H (smb2_oplock.c,
	 * delay_for_handle_lease_break_below_fn).  H buys nothing here: no
	 * durable handles are asked for under the extensions (ops.c). */
	uint32_t file_state =
	    c->sess.posix ? SMB2_LEASE_READ_CACHING | SMB2_LEASE_WRITE_CACHING : SMB2_LEASE_RWH;
	/* v1 for files once the server showed it breaks our directory's
	 * lease at their close whatever the key (files_v1 in lease.h) */
	bool v1_file = !dir && __atomic_load_n(&c->leases.files_v1, __ATOMIC_RELAXED);
	struct smb2_lease l = {
	    .state = dir ? SMB2_LEASE_READ_CACHING | SMB2_LEASE_HANDLE_CACHING : file_state,
	    .version = c->sess.dialect >= SMB2_DIALECT_0300 && !v1_file ? 2 : 1,
	};
	lease_key(c, a->lease_id, l.key);
	/* ParentLeaseKey ([MS-SMB2] 2.2.13.2.10): the server does not break
	 * the lease of that key for a change made through this open (Samba
	 * 4.22: dirlease_should_break()). */
	if (l.version == 2 && a->parent_lease_id && smb_lease_names_parent(c)) {
		l.flags |= SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET;
		lease_key(c, a->parent_lease_id, l.parent_key);
	}
	ssize_t n = smb2_rqls_encode(buf, SMB2_RQLS_V2_LEN, &l);
	if (n < 0)
		return false;
	*ctx = (struct smb2_create_ctx){"RqLs", buf, (uint32_t)n};
	return true;
}

uint32_t smb_lease_granted(struct smb_client *c, const uint8_t *ctxs, uint32_t ctxs_len)
{
	uint32_t dlen;
	const uint8_t *data;
	struct smb2_lease l;
	if (smb2_create_ctx_find(ctxs, ctxs_len, "RqLs", &data, &dlen) != 1)
		return 0;
	if (smb2_rqls_rsp_decode(data, dlen, &l) < 0) {
		smb_warn("%s: malformed lease context in a CREATE response ignored", c->host);
		return 0;
	}
	if (l.state)
		__atomic_add_fetch(&c->leases.granted, 1, __ATOMIC_RELAXED);
	return l.state & SMB2_LEASE_RWH;
}

void smb_client_set_lease_break_cb(struct smb_client *c, smb_lease_break_cb cb, void *arg)
{
	if (c->dfs)
		smb_dfs_set_lease_break_cb(c, cb, arg);
	c->leases.on_break = cb;
	c->leases.on_break_arg = arg;
}

void smb_lease_stats(struct smb_client *c, struct smb_client_stats *out)
{
	out->leases_granted = __atomic_load_n(&c->leases.granted, __ATOMIC_RELAXED);
	out->lease_breaks = __atomic_load_n(&c->leases.breaks, __ATOMIC_RELAXED);
	out->lease_break_acks = __atomic_load_n(&c->leases.break_acks, __ATOMIC_RELAXED);
}

static void ack_done(struct smb_req *req)
{
	struct smb_client *c = smb_req_client(req);
	uint32_t st = req->pdu[0].have_rsp ? req->pdu[0].rsp_hdr.status : 0;
	uint8_t key[16];
	uint32_t state;
	if (req->err || st != STATUS_SUCCESS)
		smb_debug("%s: lease break acknowledgment: %s", c->host,
		          req->err ? strerror(-req->err) : smb2_status_str(st));
	else if (smb2_lease_break_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, key, &state) < 0)
		smb_warn("%s: malformed LEASE_BREAK response ignored", c->host);
	else
		__atomic_add_fetch(&c->leases.break_acks, 1, __ATOMIC_RELAXED);
	smb_req_put(req);
}

void smb_lease_break_done(struct smb_lease_ack *ack)
{
	struct smb_client *c = ack->c;
	if (!ack->required) {
		free(ack);
		return;
	}
	struct smb_req *req = smb_client_req(c, NULL);
	uint8_t *body =
	    req ? smb_req_begin_pdu(req, SMB2_OPLOCK_BREAK, SMB2_LEASE_BREAK_ACK_LEN) : NULL;
	int err =
	    body ? smb_req_end_pdu(req, smb2_lease_break_ack_encode(body, SMB2_LEASE_BREAK_ACK_LEN,
	                                                            ack->key, ack->new_state))
	         : -ENOMEM;
	if (!err) {
		/* the bytes where an oplock ack has its FileId hold the lease
		 * key: nothing to patch (smb_req_fix_fids) */
		req->pdu[0].fid_known = true;
		req->pdu[0].orig_fid = (struct smb2_fileid){0, 0};
		req->done = ack_done;
		err = smb_conn_submit(req->conn, req);
	}
	if (err) {
		smb_warn("%s: cannot acknowledge a lease break: %s", c->host, strerror(-err));
		if (req)
			smb_req_put(req);
	} else {
		smb_debug("%s: lease break to state 0x%x acknowledged", c->host, ack->new_state);
	}
	free(ack);
}

void smb_lease_break_drop(struct smb_lease_ack *ack)
{
	free(ack);
}

void smb_lease_on_break(struct smb_client *c, const uint8_t *pdu, size_t len)
{
	struct smb2_lease_break b;
	if (smb2_lease_break_decode(pdu, len, &b) < 0) {
		smb_warn("%s: malformed LEASE_BREAK notification ignored", c->host);
		return;
	}
	struct smb_lease_ack *ack = malloc(sizeof(*ack));
	if (!ack) {
		__atomic_add_fetch(&c->leases.breaks, 1, __ATOMIC_RELAXED);
		smb_warn("%s: out of memory: a lease break is not acknowledged", c->host);
		return;
	}
	ack->c = c;
	memcpy(ack->key, b.key, SMB2_LEASE_KEY_LEN);
	ack->new_state = b.new_state & SMB2_LEASE_RWH;
	ack->required = b.flags & SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED;
	uint64_t id = lease_id_of(c, b.key);
	smb_debug("%s: lease %llu broken from 0x%x to 0x%x%s", c->host, (unsigned long long)id,
	          b.current_state, b.new_state, ack->required ? " (ack required)" : "");
	/* A directory's lease broken while we close a file we opened below
	 * it naming that lease: the server does not keep a change made under
	 * ParentLeaseKey from breaking it ([MS-SMB2] 3.3.4.7, 3.3.5.9.11).
	 * ksmbd (6.12) does so at the close of any file written under a v2
	 * lease, and never for a v1 one: files ask for v1 from now on, so
	 * that this mount's own work keeps its directory leases.  Another
	 * client's change at that moment would set it as well; it costs only
	 * the parent keys, which such a server does not honour anyway. */
	if (id && !__atomic_load_n(&c->leases.files_v1, __ATOMIC_RELAXED) &&
	    smb_opens_closing_below(c, id) &&
	    !__atomic_exchange_n(&c->leases.files_v1, true, __ATOMIC_RELAXED))
		smb_log(LOG_NOTICE,
		        "%s: the server broke a directory's lease at the close of a file "
		        "opened below it under that lease's key; files ask for v1 leases "
		        "(without the parent's key) from now on",
		        c->host);
	/* counted once the caller has seen it: a test that sees the count
	 * knows the caller marked its cache stale */
	if (id && c->leases.on_break)
		c->leases.on_break(c->leases.on_break_arg, id, b.current_state & SMB2_LEASE_RWH,
		                   ack->new_state, ack);
	else
		smb_lease_break_done(ack);
	__atomic_add_fetch(&c->leases.breaks, 1, __ATOMIC_RELAXED);
}
