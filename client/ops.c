/* client/ops.c — the smb_*() file operations of client.h.
 *
 * Each operation builds one request (often a related compound such as
 * CREATE+QUERY_INFO+CLOSE, one round trip), submits it, and decodes the
 * replies in its done() handler on the loop thread, where it calls the
 * caller back exactly once.  The per-operation context hangs off the request
 * (talloc) and goes with it.  READ/WRITE larger than the negotiated maximum
 * are split into parallel requests and joined before the single callback.
 */
#include "client/chan.h"
#include "client/chanmgr.h"
#include "client/client.h"
#include "client/client_int.h"
#include "client/dfs_ns.h"
#include "client/conn.h"
#include "client/lease.h"
#include "client/offload.h"
#include "client/opens.h"
#include "client/request.h"
#include "client/session.h"
#include "client/sidmap.h"
#include "client/proto/smb2_fsctl.h"
#include "client/proto/smb2_lease.h"
#include "client/proto/smb2_posix.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

#define ALLINFO_OUT 8192
#define DIR_OUT     65536

/* ---- PDU builders ------------------------------------------------------------------ */

int smb_req_add_create(struct smb_req *req, const char *path, const struct smb_open_args *a,
                       uint8_t oplock, const struct smb2_create_ctx *ctx)
{
	return smb_req_add_create_ctxs(req, path, a, oplock, ctx, ctx ? 1 : 0);
}

/* The mode in a POSIX context: the caller's, else what a create with no
 * mode of its own makes (an mfsymlink file, say): 0644, 0755 for a
 * directory, as a umask of 022 leaves 0666 and 0777.  An open that makes
 * nothing never uses it. */
static uint32_t posix_create_mode(const struct smb_open_args *a)
{
	if (a->set_mode)
		return a->mode & 07777;
	return (a->create_options & FILE_DIRECTORY_FILE) ? 0755 : 0644;
}

int smb_req_add_create_ctxs(struct smb_req *req, const char *path, const struct smb_open_args *a,
                            uint8_t oplock, const struct smb2_create_ctx *ctx, int n)
{
	struct smb2_create_req cr = {
	    .requested_oplock_level = oplock,
	    .impersonation_level = SMB2_IMPERSONATION_IMPERSONATION,
	    .desired_access = a->desired_access,
	    .file_attributes = a->file_attributes,
	    .share_access = a->share_access ? a->share_access : FILE_SHARE_ALL,
	    .create_disposition = a->create_disposition,
	    .create_options = a->create_options,
	    .name = path,
	};
	if (n < 0 || n > SMB2_MAX_CREATE_CTX)
		return -EINVAL;
	size_t cap = 64 + 2 * strlen(path) + 16;
	for (int i = 0; i < n; i++) {
		cr.contexts[i] = ctx[i];
		cap += 32 + ctx[i].data_len;
	}
	cr.context_count = n;
	/* SMB3 POSIX extensions: every CREATE carries the POSIX context, with
	 * the mode of what it makes.  Samba (4.22) answers the POSIX
	 * information class only on a handle opened with it (smb2_getinfo.c:
	 * STATUS_INVALID_LEVEL otherwise), and takes the name as a POSIX
	 * pathname then: '/' separates ('\\' is a character), case matters,
	 * no symbolic link is followed (smb2_create.c). */
	uint8_t posix_mode[SMB2_POSIX_CREATE_REQ_LEN];
	if (smb_req_client(req)->sess.posix) {
		if (cr.context_count >= SMB2_MAX_CREATE_CTX)
			return -EINVAL;
		cr.posix_path = true;
		/* Nothing here means to follow a symbolic link (the kernel
		 * resolves them): a stat, unlink or rename of a link is of the
		 * link (Samba refuses a POSIX open of one without this flag:
		 * STATUS_STOPPED_ON_SYMLINK). */
		cr.create_options |= FILE_OPEN_REPARSE_POINT;
		smb2_posix_create_req_encode(posix_mode, posix_create_mode(a));
		cr.contexts[cr.context_count++] =
		    (struct smb2_create_ctx){smb2_posix_ctx_name, posix_mode, sizeof(posix_mode)};
		cap += 48 + sizeof(posix_mode);
	}
	uint8_t *body = smb_req_begin_pdu(req, SMB2_CREATE, cap);
	return body ? smb_req_end_pdu(req, smb2_create_req_encode(body, cap, &cr)) : -ENOMEM;
}

static int add_create(struct smb_req *req, const char *path, const struct smb_open_args *a)
{
	return smb_req_add_create(req, path, a, SMB2_OPLOCK_LEVEL_NONE, NULL);
}

static int add_query_info(struct smb_req *req, struct smb2_fileid fid, uint8_t type, uint8_t cls,
                          uint32_t outlen)
{
	struct smb2_query_info_req q = {
	    .info_type = type,
	    .file_info_class = cls,
	    .output_buffer_length = outlen,
	    .fileid = fid,
	};
	uint8_t *body = smb_req_begin_pdu(req, SMB2_QUERY_INFO, 48);
	return body ? smb_req_end_pdu(req, smb2_query_info_req_encode(body, 48, &q)) : -ENOMEM;
}

/* The query that fills a struct smb_attr: the POSIX information when the
 * extensions are in use, else FileAllInformation (decode_attr() reads
 * either). */
static int add_query_attr(struct smb_req *req, struct smb2_fileid fid)
{
	bool posix = smb_req_client(req)->sess.posix;
	return add_query_info(req, fid, SMB2_0_INFO_FILE,
	                      posix ? SMB2_FILE_POSIX_INFORMATION : FileAllInformation,
	                      ALLINFO_OUT);
}

static int add_set_info_of(struct smb_req *req, struct smb2_fileid fid, uint8_t type, uint8_t cls,
                           uint32_t addl, const uint8_t *buf, size_t len)
{
	struct smb2_set_info_req s = {
	    .info_type = type,
	    .file_info_class = cls,
	    .buffer = buf,
	    .buffer_len = (uint32_t)len,
	    .additional_information = addl,
	    .fileid = fid,
	};
	size_t cap = 40 + len + 8;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_SET_INFO, cap);
	return body ? smb_req_end_pdu(req, smb2_set_info_req_encode(body, cap, &s)) : -ENOMEM;
}

static int add_set_info(struct smb_req *req, struct smb2_fileid fid, uint8_t cls,
                        const uint8_t *buf, size_t len)
{
	return add_set_info_of(req, fid, SMB2_0_INFO_FILE, cls, 0, buf, len);
}

/* SET_INFO FileBasicInformation with what of a's times and attributes
 * a->which names (the rest 0: left unchanged). */
static int add_set_basic(struct smb_req *req, struct smb2_fileid fid,
                         const struct smb_setattr_args *a)
{
	struct smb2_file_basic_info bi = {0};
	if (a->which & SMB_SET_ATIME)
		bi.last_access_time = a->atime;
	if (a->which & SMB_SET_MTIME)
		bi.last_write_time = a->mtime;
	if (a->which & SMB_SET_CTIME)
		bi.change_time = a->ctime;
	if (a->which & SMB_SET_ATTRIBUTES)
		bi.file_attributes =
		    a->file_attributes ? a->file_attributes : FILE_ATTRIBUTE_NORMAL;
	uint8_t *b = talloc_size(req, 48);
	ssize_t l = b ? smb2_file_basic_info_encode(b, 48, &bi) : -ENOMEM;
	return l < 0 ? (int)l : add_set_info(req, fid, FileBasicInformation, b, (size_t)l);
}

/* SET_INFO of a security descriptor carrying a POSIX chmod/chown. */
static int add_set_posix_sd(struct smb_req *req, struct smb2_fileid fid,
                            const struct smb_setattr_args *a)
{
	struct smb2_posix_sd sd = {
	    .set_mode = a->which & SMB_SET_MODE,
	    .set_uid = a->which & SMB_SET_UID,
	    .set_gid = a->which & SMB_SET_GID,
	    .mode = a->mode,
	    .uid = a->uid,
	    .gid = a->gid,
	};
	uint32_t secinfo = 0;
	uint8_t *b = talloc_size(req, SMB2_POSIX_SD_MAX);
	ssize_t l = b ? smb2_posix_sd_encode(b, SMB2_POSIX_SD_MAX, &sd, &secinfo) : -ENOMEM;
	return l < 0 ? (int)l
	             : add_set_info_of(req, fid, SMB2_0_INFO_SECURITY, 0, secinfo, b, (size_t)l);
}

static int add_close(struct smb_req *req, struct smb2_fileid fid)
{
	struct smb2_close_req cl = {.fileid = fid};
	uint8_t *body = smb_req_begin_pdu(req, SMB2_CLOSE, 24);
	return body ? smb_req_end_pdu(req, smb2_close_req_encode(body, 24, &cl)) : -ENOMEM;
}

/* ---- common plumbing ----------------------------------------------------------------- */

struct op {
	struct smb_client *c;
	void *cb;
	void *arg;
	int kind;
	/* smb_open: what a reopen needs; smb_close: the handle */
	char *path;
	struct smb_open_args oa;
	uint8_t create_guid[16];
	bool want_durable;
	struct smb2_fileid fid;
	bool sids_asked;              /* sids_defer() ran a lookup for this answer */
	uint8_t kind_cls;             /* set_info_chain(): the SET_INFO's class */
	struct close_batch *batch;    /* smb_close_batch() */
	char *path2;                  /* set_info_chain(): a rename's or link's target */
	uint32_t lock_seq;            /* smb_lock(): the LockSequence sent (0: none) */
	struct smb2_lock_elem *locks; /* smb_lock(): its elements (on op), nlocks of them */
	uint16_t nlocks;
	bool timed; /* attr_chain() for smb_stat(): its round trip goes into meta_lat */
};

static struct smb_req *op_req(struct smb_client *c, void *cb, void *arg, struct op **out)
{
	struct smb_req *req = smb_client_req(c, NULL);
	if (!req)
		return NULL;
	struct op *op = talloc_zero(req, struct op);
	if (!op) {
		smb_req_put(req);
		return NULL;
	}
	op->c = c;
	op->cb = cb;
	op->arg = arg;
	req->arg = op;
	*out = op;
	return req;
}

static int op_submit(struct smb_req *req, int err, void (*done)(struct smb_req *))
{
	if (!err)
		err = smb_req_fix_fids(smb_req_client(req), req);
	if (!err) {
		req->done = done;
		err = smb_conn_submit(req->conn, req);
	}
	if (err)
		smb_req_put(req);
	return err;
}

/* First failing status along a compound (a failed CREATE fails what follows). */
static uint32_t chain_status(const struct smb_req *req, int upto)
{
	for (int i = 0; i < upto && i < req->npdu; i++) {
		uint32_t st = req->pdu[i].rsp_hdr.status;
		if (st != STATUS_SUCCESS && st != STATUS_BUFFER_OVERFLOW)
			return st;
	}
	return STATUS_SUCCESS;
}

/* ---- owners and groups sent as account SIDs (client/sidmap.c) ---------------------- */

/* The Unix ids of ids' owner and group: their Unix SIDs', else what the
 * SID map knows. */
static void posix_ids(struct smb_client *c, const struct smb2_posix_ids *ids, struct smb_attr *a)
{
	a->uid = ids->uid;
	a->gid = ids->gid;
	if (a->uid == SMB2_POSIX_ID_NONE)
		smb_sidmap_get(c, &ids->owner, false, &a->uid);
	if (a->gid == SMB2_POSIX_ID_NONE)
		smb_sidmap_get(c, &ids->group, true, &a->gid);
}

#define SIDS_DEFER_MAX 128

/* Add ids' owner and group to sids[*n] if the map must look them up. */
static void sids_note(struct smb_client *c, const struct smb2_posix_ids *ids, struct smb2_sid *sids,
                      int *n)
{
	uint32_t id;
	if (ids->uid == SMB2_POSIX_ID_NONE && *n < SIDS_DEFER_MAX &&
	    !smb_sidmap_get(c, &ids->owner, false, &id))
		sids[(*n)++] = ids->owner;
	if (ids->gid == SMB2_POSIX_ID_NONE && *n < SIDS_DEFER_MAX &&
	    !smb_sidmap_get(c, &ids->group, true, &id))
		sids[(*n)++] = ids->group;
}

static void sids_resume(void *arg)
{
	struct smb_req *req = arg;
	req->done(req);
}

/* At the start of a done handler that reads POSIX information from req's
 * answer (the QUERY_INFO at pdu[qi], or with dir the QUERY_DIRECTORY
 * there): if an owner or group in it must be looked up first, start that
 * and run the handler again when it is over (true: return now, the
 * request stays).  Once per request; what the lookup could not map shows
 * as uid=/gid=. */
static bool sids_defer(struct smb_req *req, int qi, bool dir)
{
	struct op *op = req->arg;
	struct smb_client *c = op->c;
	if (!c->sess.posix || op->sids_asked || req->err || qi >= req->npdu ||
	    !req->pdu[qi].have_rsp || req->pdu[qi].rsp_hdr.status != STATUS_SUCCESS)
		return false;
	const struct smb_pdu *p = &req->pdu[qi];
	struct smb2_sid *sids = talloc_array(req, struct smb2_sid, SIDS_DEFER_MAX);
	struct smb2_posix_info pi;
	int n = 0;
	if (!sids)
		return false;
	if (dir) {
		struct smb2_query_directory_rsp qr;
		const uint8_t *name16;
		uint32_t off = 0, nl;
		if (smb2_query_directory_rsp_decode(p->rsp, p->rsp_len, &qr) == 0)
			while (smb2_posix_dirent_next(qr.buffer, qr.buffer_len, &off, &pi, &name16,
			                              &nl) == 1)
				sids_note(c, &pi.ids, sids, &n);
	} else {
		struct smb2_query_info_rsp q;
		if (smb2_query_info_rsp_decode(p->rsp, p->rsp_len, &q) == 0 &&
		    smb2_posix_info_decode(q.buffer, q.buffer_len, &pi) == 0)
			sids_note(c, &pi.ids, sids, &n);
	}
	op->sids_asked = n > 0;
	bool deferred = n > 0 && smb_sidmap_lookup(c, sids, n, sids_resume, req) == 1;
	talloc_free(sids);
	return deferred;
}

static void posix_to_attr(struct smb_client *c, const struct smb2_posix_info *pi,
                          struct smb_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->file_id = pi->inode;
	a->creation_time = pi->creation_time;
	a->last_access_time = pi->last_access_time;
	a->last_write_time = pi->last_write_time;
	a->change_time = pi->change_time;
	a->file_attributes = pi->file_attributes;
	a->end_of_file = pi->end_of_file;
	a->allocation_size = pi->allocation_size;
	a->nlink = pi->ids.nlink;
	a->posix = true;
	a->mode =
	    smb2_posix_file_type(pi->file_attributes, pi->ids.reparse_tag, pi->ids.wire_mode) |
	    pi->ids.mode;
	posix_ids(c, &pi->ids, a);
	a->rdev = pi->device_id;
}

/* A QUERY_INFO response of add_query_attr()'s class. */
static int decode_attr(struct smb_client *c, const struct smb_pdu *p, struct smb_attr *a)
{
	struct smb2_query_info_rsp q;
	struct smb2_file_all_info fa;
	struct smb2_posix_info pi;
	if (smb2_query_info_rsp_decode(p->rsp, p->rsp_len, &q) < 0)
		return -EIO;
	if (c->sess.posix) {
		if (smb2_posix_info_decode(q.buffer, q.buffer_len, &pi) < 0)
			return -EIO;
		posix_to_attr(c, &pi, a);
		return 0;
	}
	if (smb2_file_all_info_decode(q.buffer, q.buffer_len, &fa) < 0)
		return -EIO;
	memset(a, 0, sizeof(*a));
	a->file_id = fa.index_number;
	a->creation_time = fa.basic.creation_time;
	a->last_access_time = fa.basic.last_access_time;
	a->last_write_time = fa.basic.last_write_time;
	a->change_time = fa.basic.change_time;
	a->file_attributes = fa.basic.file_attributes;
	a->end_of_file = fa.standard.end_of_file;
	a->allocation_size = fa.standard.allocation_size;
	a->nlink = fa.standard.number_of_links;
	return 0;
}

static void log_malformed(struct smb_client *c, const char *what)
{
	smb_err("%s: malformed %s response from the server; failing the call with EIO", c->host,
	        what);
}

/* ---- does the share speak POSIX? ------------------------------------------------------ */

void smb_posix_probe(struct smb_client *c, struct smb_chan *ch, void *mem)
{
	struct smb_req *req = smb_chan_req(ch, mem);
	if (!req)
		return;
	req->related = true;
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_DIRECTORY_FILE,
	};
	int err = add_create(req, "", &oa);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	if (!err)
		err = smb_client_submit_sync(c, req);
	struct smb2_create_rsp cr;
	struct smb2_posix_ids ids;
	/* Not known (no answer, no access to the root): left as negotiated. */
	if (!err && req->pdu[0].rsp_hdr.status == STATUS_SUCCESS &&
	    smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &cr) == 0 &&
	    smb2_posix_create_rsp_find(cr.contexts, cr.contexts_len, &ids) == 0) {
		c->sess.posix = false;
		c->sess.posix_share_off = true;
		smb_info("%s: the server offers the SMB3 POSIX extensions, but not on this share "
		         "(no POSIX context in its answer)",
		         c->tree.unc);
	}
	smb_req_put(req);
}

/* ---- stat / open / mkdir: CREATE + QUERY_INFO(all) [+ CLOSE] -------------------------- */

/* ---- a new file's POSIX mode, made right ------------------------------------------ */

/* ksmbd (6.1) gives every file it creates an access ACL whose mask is rwx,
 * so a file made with mode 0640 shows 0670.  When the mode a create came
 * back with differs from the one asked for, one chmod (which drops that
 * ACL) follows before the caller hears of the file. */
struct mode_fix {
	void *cb;
	void *arg;
	bool open; /* cb is an smb_open_cb for fid, else an smb_attr_cb */
	struct smb2_fileid fid;
	struct smb_attr a; /* what the create said */
	char *host;
};

static void mode_fix_done(void *arg, int err, uint32_t status, const struct smb_attr *now)
{
	struct mode_fix *m = arg;
	struct smb_attr out = m->a;
	if (!err && status == STATUS_SUCCESS && now)
		out = *now;
	else
		smb_warn("%s: a new file keeps mode %04o: the chmod to its mode failed (%s)",
		         m->host, (unsigned)(m->a.mode & 07777),
		         err ? strerror(-err) : smb2_status_str(status));
	out.oplock = m->a.oplock;
	if (m->open)
		((smb_open_cb)m->cb)(m->arg, 0, STATUS_SUCCESS, m->fid, &out);
	else
		((smb_attr_cb)m->cb)(m->arg, 0, STATUS_SUCCESS, &out);
	free(m);
}

/* Start the chmod when a (a file op's create just made, with the handle
 * fid when open) has another mode than asked for; true when it went out
 * and mode_fix_done() will call the caller back instead. */
static bool mode_fix(struct op *op, const struct smb2_fileid *fid, const struct smb_attr *a)
{
	if (!op->oa.set_mode || !a->posix || !op->path ||
	    (a->mode & 07777) == (op->oa.mode & 07777))
		return false;
	if (fid && !(op->oa.desired_access & WRITE_DAC)) {
		smb_debug("%s: %s made with mode %04o, not %04o: left so (no WRITE_DAC on the "
		          "handle)",
		          op->c->host, op->path, (unsigned)(a->mode & 07777),
		          (unsigned)(op->oa.mode & 07777));
		return false;
	}
	struct mode_fix *m = calloc(1, sizeof(*m));
	if (!m)
		return false;
	*m = (struct mode_fix){
	    op->cb, op->arg, fid != NULL, fid ? *fid : (struct smb2_fileid){0}, *a, op->c->host};
	struct smb_setattr_args s = {.which = SMB_SET_MODE, .mode = op->oa.mode & 07777};
	if (smb_setattr(op->c, op->path, fid, &s, mode_fix_done, m) < 0) {
		free(m);
		return false;
	}
	return true;
}

/* An exclusive create (FILE_CREATE) sent again after its reply was lost
 * whose replay meets the name taken (the CHECKED / KNOWN rows of the table
 * in client/conn.h): the first try may have made it, or another client;
 * nothing here tells them apart (a CreateGuid the server kept would have
 * answered with our open instead), so the caller gets the collision
 * (EEXIST), and the log says why. */
static void replay_collision(const struct op *op, const struct smb_req *req)
{
	if (smb_req_replayed(req) && op->oa.create_disposition == FILE_CREATE && op->path &&
	    req->pdu[0].rsp_hdr.status == STATUS_OBJECT_NAME_COLLISION)
		smb_warn("%s: create of %s: the reply was lost and its replay (%s) finds the name "
		         "taken, by the first try or by someone else: cannot tell; EEXIST",
		         op->c->host, op->path, smb_replay_class_str(smb_req_replay_class(req)));
}

/* A running mean of round trips in us, 1/8 weight to req's, from its
 * submission (smb_req.t0_us, the connection's clock) to now; nothing for a
 * request that failed or was never timed.  Relaxed: a lost race loses a
 * sample, nothing else. */
static void lat_note(uint64_t *mean, const struct smb_req *req)
{
	const struct smb_conn *conn = req->conn;
	if (req->err || !conn || !req->t0_us)
		return;
	uint64_t sample = conn->env.now_us(conn->env.ctx) - req->t0_us;
	uint64_t m = __atomic_load_n(mean, __ATOMIC_RELAXED);
	m = m ? m - m / 8 + sample / 8 : sample;
	__atomic_store_n(mean, m ? m : 1, __ATOMIC_RELAXED); /* 0 reads "no sample" */
}

/* What a CREATE response tells of the file (times, sizes, attributes);
 * the rest of *a is zero. */
static void attr_from_create(const struct smb2_create_rsp *cr, struct smb_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->creation_time = cr->creation_time;
	a->last_access_time = cr->last_access_time;
	a->last_write_time = cr->last_write_time;
	a->change_time = cr->change_time;
	a->end_of_file = cr->end_of_file;
	a->allocation_size = cr->allocation_size;
	a->file_attributes = cr->file_attributes;
}

static void attr_chain_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_attr_cb cb = (smb_attr_cb)op->cb;
	struct smb_attr a;
	if (sids_defer(req, 1, false))
		return;
	if (op->timed)
		lat_note(&op->c->meta_lat.compound_us, req);
	if (req->err) {
		cb(op->arg, req->err, 0, NULL);
	} else {
		uint32_t st = chain_status(req, 2);
		replay_collision(op, req);
		if (st != STATUS_SUCCESS)
			cb(op->arg, 0, st, NULL);
		else if (decode_attr(op->c, &req->pdu[1], &a) < 0) {
			log_malformed(op->c, "QUERY_INFO");
			cb(op->arg, -EIO, 0, NULL);
		} else if (!mode_fix(op, NULL, &a))
			cb(op->arg, 0, STATUS_SUCCESS, &a);
	}
	smb_req_put(req);
}

/* timed: smb_stat()'s compound, whose round trip goes into
 * meta_lat.compound_us ("lookups in steps" below). */
static int attr_chain(struct smb_client *c, const char *path, const struct smb_open_args *oa,
                      bool timed, smb_attr_cb cb, void *arg)
{
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	op->timed = timed;
	/* a lease only to name the parent's (smb_create_in()) */
	uint8_t rqls[SMB2_RQLS_V2_LEN];
	struct smb2_create_ctx lctx;
	int err = oa->lease_id && smb_lease_ctx(c, oa, rqls, &lctx)
	              ? smb_req_add_create(req, path, oa, SMB2_OPLOCK_LEVEL_LEASE, &lctx)
	              : add_create(req, path, oa);
	if ((oa->set_mode && c->sess.posix) || oa->create_disposition == FILE_CREATE) {
		/* mode_fix() may need them, and replay_collision() */
		op->oa = *oa;
		op->path = talloc_strdup(op, path);
		err = err ? err : op->path ? 0 : -ENOMEM;
	}
	if (!err)
		err = add_query_attr(req, SMB2_FILEID_RELATED);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, attr_chain_done);
}

/* ---- lookups in steps ---------------------------------------------------------------
 *
 * smb_stat() is one related compound, CREATE+QUERY_INFO+CLOSE: one round
 * trip.  A server may serve a compound far slower than its parts: ksmbd
 * zeroes a response buffer of its max trans size (1 MiB by default) for
 * every compound and every FileAllInformation query, which under emulation
 * takes longer than three round trips.  So the client keeps two running
 * means (meta_lat in client_int.h): the latency of smb_stat()'s compounds
 * and that of requests that go alone (a CREATE under QFid, the steps
 * below).  While a compound costs more than SPLIT_FACTOR lone requests,
 * smb_stat() goes in steps, each alone and each after the one before:
 * CREATE (with QFid: the file id), QUERY_INFO FileStandardInformation (the
 * link count; no large buffer), CLOSE; the handle is closed before the
 * caller is answered, as with the compound.  Every SPLIT_PROBE-th lookup
 * goes the other way, so that both means stay current and the choice
 * follows the server.  Not under the POSIX extensions (their information
 * class is the one query), nor before the server has answered QFid. */
#define SPLIT_FACTOR 4
#define SPLIT_PROBE  16

static uint64_t qfid_of(struct smb_client *c, const struct smb2_create_rsp *cr);

bool smb_stat_split_wanted(uint64_t compound_us, uint64_t single_us, uint64_t nth)
{
	bool split = compound_us && single_us && compound_us > SPLIT_FACTOR * single_us;
	return nth % SPLIT_PROBE == SPLIT_PROBE - 1 ? !split : split;
}

void smb_client_set_meta_split(struct smb_client *c, enum smb_meta_split mode)
{
	if (c->dfs)
		smb_dfs_set_meta_split(c, mode);
	c->meta_split = mode;
}

struct stat_steps {
	struct smb_client *c;
	smb_attr_cb cb;
	void *arg;
	struct smb2_fileid fid;
	struct smb_attr a;
	char path[];
};

static void steps_end(struct stat_steps *s, int err, uint32_t status, const struct smb_attr *a)
{
	s->cb(s->arg, err, status, a);
	free(s);
}

static int steps_send(struct stat_steps *s, int (*add)(struct smb_req *, struct stat_steps *),
                      void (*done)(struct smb_req *))
{
	struct smb_req *req = smb_client_req(s->c, NULL);
	if (!req)
		return -ENOMEM;
	req->arg = s;
	return op_submit(req, add(req, s), done);
}

/* The step's round trip, into the lone requests' mean. */
static void steps_timed(struct stat_steps *s, const struct smb_req *req)
{
	lat_note(&s->c->meta_lat.single_us, req);
}

static void steps_closed(struct smb_req *req)
{
	struct stat_steps *s = req->arg;
	steps_timed(s, req);
	smb_req_put(req);
	/* the compound does not look at its CLOSE's status either */
	steps_end(s, 0, STATUS_SUCCESS, &s->a);
}

static int add_steps_close(struct smb_req *req, struct stat_steps *s)
{
	return add_close(req, s->fid);
}

static void steps_compound(struct stat_steps *s);

static void steps_queried(struct smb_req *req)
{
	struct stat_steps *s = req->arg;
	struct smb2_query_info_rsp q;
	struct smb2_file_standard_info std;
	uint32_t st = req->err ? 0 : req->pdu[0].rsp_hdr.status;
	bool ok = !req->err && st == STATUS_SUCCESS &&
	          smb2_query_info_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &q) == 0 &&
	          smb2_file_standard_info_decode(q.buffer, q.buffer_len, &std) == 0;
	if (ok) {
		steps_timed(s, req);
		s->a.nlink = std.number_of_links;
	}
	smb_req_put(req);
	if (!ok) {
		/* lost with its channel, or refused: close it (if it still is
		 * one) and ask the one way that survives a reconnect */
		smb_close(s->c, s->fid, NULL, NULL);
		steps_compound(s);
		return;
	}
	if (steps_send(s, add_steps_close, steps_closed) < 0) {
		smb_close(s->c, s->fid, NULL, NULL);
		steps_end(s, 0, STATUS_SUCCESS, &s->a);
	}
}

static int add_steps_query(struct smb_req *req, struct stat_steps *s)
{
	return add_query_info(req, s->fid, SMB2_0_INFO_FILE, FileStandardInformation, 64);
}

static void steps_created(struct smb_req *req)
{
	struct stat_steps *s = req->arg;
	struct smb2_create_rsp cr;
	if (req->err) {
		smb_req_put(req);
		steps_compound(s);
		return;
	}
	uint32_t st = req->pdu[0].rsp_hdr.status;
	if (st != STATUS_SUCCESS) {
		steps_timed(s, req);
		smb_req_put(req);
		steps_end(s, 0, st, NULL);
		return;
	}
	if (smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &cr) < 0) {
		log_malformed(s->c, "CREATE");
		smb_req_put(req);
		steps_end(s, -EIO, 0, NULL);
		return;
	}
	steps_timed(s, req);
	s->fid = cr.fileid;
	attr_from_create(&cr, &s->a);
	s->a.file_id = qfid_of(s->c, &cr);
	smb_req_put(req);
	if (steps_send(s, add_steps_query, steps_queried) < 0) {
		smb_close(s->c, s->fid, NULL, NULL);
		steps_compound(s);
	}
}

/* What smb_stat() opens a path with, either way. */
static const struct smb_open_args stat_oa = {
    .desired_access = FILE_READ_ATTRIBUTES,
    .create_disposition = FILE_OPEN,
};

static int add_steps_create(struct smb_req *req, struct stat_steps *s)
{
	struct smb2_create_ctx qfid = {"QFid", NULL, 0};
	return smb_req_add_create_ctxs(req, s->path, &stat_oa, SMB2_OPLOCK_LEVEL_NONE, &qfid, 1);
}

static int stat_compound(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg);

/* A step failed where the compound would have been sent again (a channel
 * lost): the lookup goes as the compound. */
static void steps_compound(struct stat_steps *s)
{
	int rc = stat_compound(s->c, s->path, s->cb, s->arg);
	if (rc < 0)
		s->cb(s->arg, rc, 0, NULL);
	free(s);
}

static int stat_steps(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	size_t n = strlen(path) + 1;
	struct stat_steps *s = malloc(sizeof(*s) + n);
	if (!s)
		return -ENOMEM;
	*s = (struct stat_steps){.c = c, .cb = cb, .arg = arg};
	memcpy(s->path, path, n);
	int rc = steps_send(s, add_steps_create, steps_created);
	if (rc < 0)
		free(s);
	return rc;
}

/* smb_stat()'s compound, timed where the choice may use it. */
static int stat_compound(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	bool timed = !c->sess.posix && c->meta_split == SMB_META_SPLIT_AUTO;
	return attr_chain(c, path, &stat_oa, timed, cb, arg);
}

int smb_stat(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_stat(c, path, cb, arg);
	bool split = false;
	if (!c->sess.posix && __atomic_load_n(&c->qfid_answered, __ATOMIC_RELAXED)) {
		if (c->meta_split == SMB_META_SPLIT_ALWAYS)
			split = true;
		else if (c->meta_split == SMB_META_SPLIT_AUTO)
			split = smb_stat_split_wanted(
			    __atomic_load_n(&c->meta_lat.compound_us, __ATOMIC_RELAXED),
			    __atomic_load_n(&c->meta_lat.single_us, __ATOMIC_RELAXED),
			    __atomic_fetch_add(&c->meta_lat.lookups, 1, __ATOMIC_RELAXED));
	}
	return split ? stat_steps(c, path, cb, arg) : stat_compound(c, path, cb, arg);
}

int smb_create_file(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_create_file(c, path, cb, arg);
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_CREATE,
	    .create_options = FILE_NON_DIRECTORY_FILE,
	};
	return attr_chain(c, path, &oa, false, cb, arg);
}

int smb_create_mode(struct smb_client *c, const char *path, bool dir, uint32_t mode, smb_attr_cb cb,
                    void *arg)
{
	return smb_create_in(c, path, dir, true, mode, 0, 0, cb, arg);
}

int smb_create_in(struct smb_client *c, const char *path, bool dir, bool set_mode, uint32_t mode,
                  uint64_t lease_id, uint64_t parent_lease_id, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_create_in(c, path, dir, set_mode, mode, lease_id, parent_lease_id,
		                         cb, arg);
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_CREATE,
	    .create_options = dir ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE,
	    .file_attributes = dir ? FILE_ATTRIBUTE_DIRECTORY : 0,
	    .set_mode = set_mode,
	    .mode = mode,
	};
	if (parent_lease_id && smb_lease_names_parent(c)) {
		oa.lease_id = lease_id;
		oa.parent_lease_id = parent_lease_id;
	}
	return attr_chain(c, path, &oa, false, cb, arg);
}

int smb_mkdir(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_mkdir(c, path, cb, arg);
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_CREATE,
	    .create_options = FILE_DIRECTORY_FILE,
	    .file_attributes = FILE_ATTRIBUTE_DIRECTORY,
	};
	return attr_chain(c, path, &oa, false, cb, arg);
}

/* Was a durable handle granted?  (A DH2Q context in the CREATE response.) */
static bool durable_granted(const struct smb2_create_rsp *cr)
{
	uint32_t dlen, timeout;
	const uint8_t *data;
	return smb2_create_ctx_find(cr->contexts, cr->contexts_len, "DH2Q", &data, &dlen) == 1 &&
	       smb2_dh2q_rsp_decode(data, dlen, &timeout) == 0;
}

/* With the POSIX extensions, what the CREATE response's POSIX context
 * says (when it has one) fills the POSIX part of a. */
static void posix_from_create(struct smb_client *c, const struct smb2_create_rsp *cr,
                              struct smb_attr *a)
{
	struct smb2_posix_ids ids;
	if (!c->sess.posix || smb2_posix_create_rsp_find(cr->contexts, cr->contexts_len, &ids) != 1)
		return;
	a->posix = true;
	a->nlink = ids.nlink;
	a->mode =
	    smb2_posix_file_type(cr->file_attributes, ids.reparse_tag, ids.wire_mode) | ids.mode;
	posix_ids(c, &ids, a);
}

/* The file id a QFid context in the CREATE response gives, 0 if none; the
 * first one seen tells smb_open() the server answers QFid. */
static uint64_t qfid_of(struct smb_client *c, const struct smb2_create_rsp *cr)
{
	uint32_t dlen;
	const uint8_t *data;
	uint64_t id;
	if (smb2_create_ctx_find(cr->contexts, cr->contexts_len, "QFid", &data, &dlen) != 1 ||
	    smb2_qfid_rsp_decode(data, dlen, &id) < 0 || !id)
		return 0;
	if (!__atomic_load_n(&c->qfid_answered, __ATOMIC_RELAXED))
		__atomic_store_n(&c->qfid_answered, true, __ATOMIC_RELAXED);
	return id;
}

static void open_record(struct op *op, const struct smb2_create_rsp *cr)
{
	bool durable = op->want_durable && durable_granted(cr);
	smb_opens_add(op->c, cr->fileid, op->path, &op->oa, op->create_guid, durable);
	smb_opens_set_oplock(op->c, cr->fileid, cr->oplock_level);
}

/* What the caller may cache: the oplock, or the lease it stands for. */
static void open_grant(struct op *op, const struct smb2_create_rsp *cr, struct smb_attr *a)
{
	a->oplock = cr->oplock_level;
	a->lease = cr->oplock_level == SMB2_OPLOCK_LEVEL_LEASE
	               ? smb_lease_granted(op->c, cr->contexts, cr->contexts_len)
	               : 0;
}

static void open_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_open_cb cb = (smb_open_cb)op->cb;
	struct smb2_fileid none = {0, 0};
	struct smb_attr a;
	struct smb2_create_rsp cr;

	if (sids_defer(req, 1, false))
		return;
	if (req->err) {
		cb(op->arg, req->err, 0, none, NULL);
		/* If the CREATE got through, the handle would leak: close it. */
		if (req->pdu[0].have_rsp && req->pdu[0].rsp_hdr.status == STATUS_SUCCESS &&
		    smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &cr) == 0)
			smb_close(op->c, cr.fileid, NULL, NULL);
		smb_req_put(req);
		return;
	}
	uint32_t st = req->pdu[0].rsp_hdr.status;
	replay_collision(op, req);
	if (st != STATUS_SUCCESS) {
		cb(op->arg, 0, st, none, NULL);
	} else if (smb2_create_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &cr) < 0) {
		log_malformed(op->c, "CREATE");
		cb(op->arg, -EIO, 0, none, NULL);
	} else if (req->npdu == 1 || (req->pdu[1].rsp_hdr.status != STATUS_SUCCESS &&
	                              req->pdu[1].rsp_hdr.status != STATUS_BUFFER_OVERFLOW)) {
		/* Opened, and no attributes asked for (a file made or found
		 * under QFid) or none given: report what CREATE told us. */
		attr_from_create(&cr, &a);
		a.file_id = qfid_of(op->c, &cr);
		if (cr.create_action == FILE_CREATED)
			a.nlink = 1;
		if (req->npdu == 1) /* a lone CREATE's round trip */
			lat_note(&op->c->meta_lat.single_us, req);
		open_grant(op, &cr, &a);
		posix_from_create(op->c, &cr, &a);
		open_record(op, &cr);
		cb(op->arg, 0, STATUS_SUCCESS, cr.fileid, &a);
	} else if (decode_attr(op->c, &req->pdu[1], &a) < 0) {
		log_malformed(op->c, "QUERY_INFO");
		cb(op->arg, -EIO, 0, none, NULL);
		smb_close(op->c, cr.fileid, NULL, NULL);
	} else {
		(void)qfid_of(op->c, &cr);
		open_grant(op, &cr, &a);
		open_record(op, &cr);
		if (cr.create_action != FILE_CREATED || !mode_fix(op, &cr.fileid, &a))
			cb(op->arg, 0, STATUS_SUCCESS, cr.fileid, &a);
	}
	smb_req_put(req);
}

int smb_open(struct smb_client *c, const char *path, const struct smb_open_args *args,
             smb_open_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_open(c, path, args, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	struct smb_open_args oa = *args;
	oa.desired_access |= FILE_READ_ATTRIBUTES;
	/* A file this open surely makes may need mode_fix(), on this very
	 * handle: a second open of it meeting our batch oplock has crashed
	 * ksmbd 6.1 (list corruption in smb2_open).  Only FILE_CREATE: on a
	 * file that exists, WRITE_DAC could be refused where the open would
	 * not. */
	if (oa.set_mode && c->sess.posix && oa.create_disposition == FILE_CREATE)
		oa.desired_access |= WRITE_DAC;
	op->oa = oa;
	op->path = talloc_strdup(op, path);
	int err = op->path ? 0 : -ENOMEM;
	/* What the caller may cache depends on the lease (or, without one,
	 * the oplock) granted: smb_attr.lease, smb_attr.oplock. */
	struct smb2_create_ctx ctx[3];
	int nctx = 0;
	uint8_t rqls[SMB2_RQLS_V2_LEN], dh2q[SMB2_DH2Q_LEN];
	bool lease = smb_lease_ctx(c, &oa, rqls, &ctx[nctx]);
	nctx += lease;
	/* No durable handle under the SMB3 POSIX extensions: a server must
	 * refuse a durable reconnect that carries the POSIX create context
	 * ([MS-SMB2] 3.3.5.9.12, Samba 4.22 does), and one without it gives
	 * back a handle that is no POSIX one (Samba 4.22: QUERY_INFO of the
	 * POSIX class then fails).  Such opens are opened again by path after
	 * a reconnect (client/opens.c). */
	if (c->durable && !c->sess.posix) {
		/* A durable v2 handle survives a lost connection ([MS-SMB2]
		 * 3.2.4.3.5); servers grant it under a batch oplock or a
		 * lease with H. */
		op->want_durable = true;
		smb_opens_new_guid(op->create_guid);
		smb2_dh2q_encode(dh2q, 0, op->create_guid);
		ctx[nctx++] = (struct smb2_create_ctx){"DH2Q", dh2q, sizeof(dh2q)};
	}
	/* The CREATE response carries the times, the sizes and the
	 * attributes; of what QUERY_INFO adds, QFid ([MS-SMB2] 2.2.13.2.9)
	 * brings the file id, and the link count is 1 for a file the open
	 * made (FILE_CREATE: tar x, cp, git checkout, mkstemp) and not needed
	 * for one it opened or overwrote by name (FILE_OPEN, FILE_OVERWRITE:
	 * open(2) of an existing file; smb_attr.nlink 0, "unknown", and the
	 * caller keeps the count it knew).  So once the server has answered
	 * QFid such a CREATE goes alone: one request less for the server to
	 * run, and no compound (ksmbd zeroes a response buffer of its max
	 * trans size, 1 MiB by default, for every compound and every
	 * FileAllInformation query).  Opens whose attributes are replied as
	 * an entry (FILE_OPEN_IF, FILE_OVERWRITE_IF: O_CREAT) and directory
	 * opens still ask for them; with the POSIX extensions the POSIX
	 * information is asked for as before. */
	bool alone = false;
	if (!c->sess.posix && !(oa.create_options & FILE_DIRECTORY_FILE) &&
	    (oa.create_disposition == FILE_CREATE || oa.create_disposition == FILE_OPEN ||
	     oa.create_disposition == FILE_OVERWRITE)) {
		ctx[nctx++] = (struct smb2_create_ctx){"QFid", NULL, 0};
		alone = __atomic_load_n(&c->qfid_answered, __ATOMIC_RELAXED);
	}
	uint8_t oplock = SMB2_OPLOCK_LEVEL_BATCH;
	if (lease)
		oplock = SMB2_OPLOCK_LEVEL_LEASE;
	else if (c->no_lease)
		oplock = SMB2_OPLOCK_LEVEL_NONE;
	if (!err)
		err = smb_req_add_create_ctxs(req, path, &oa, oplock, ctx, nctx);
	if (!err && !alone)
		err = add_query_attr(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, open_done);
}

/* ---- status-only chains: close, unlink, rename, flush ------------------------------ */

static void status_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_status_cb cb = (smb_status_cb)op->cb;
	if (cb) {
		if (req->err)
			cb(op->arg, req->err, 0);
		else
			cb(op->arg, 0, chain_status(req, op->kind ? op->kind : req->npdu));
	}
	smb_req_put(req);
}

struct rename_what {
	bool replace;
	bool posix; /* the target is a POSIX pathname, as the handle's own */
	const char *to;
};

/* ---- a replay's failure read in light of the lost first try --------------------------- */

/* The CHECKED rows of the table in client/conn.h for rename and link: the
 * replay failed as it would if the first try had been done; look whether
 * it was.  rename: the source is gone and the target there; link: both
 * names are one file (file ids). */
struct replay_check {
	struct smb_client *c;
	smb_status_cb cb;
	void *arg;
	uint32_t st; /* the replay's answer: what the caller gets if the check fails */
	bool link;
	uint64_t from_id;
	char *from, *to;
};

static void replay_check_end(struct replay_check *k, bool done)
{
	if (done)
		smb_log(LOG_NOTICE,
		        "%s: %s %s -> %s: the reply was lost; its replay failed (0x%08x) but the "
		        "first try was carried out: done",
		        k->c->host, k->link ? "link" : "rename", k->from, k->to, k->st);
	else
		smb_warn("%s: %s %s -> %s: the reply was lost and its replay failed (0x%08x); not "
		         "done as far as the server shows",
		         k->c->host, k->link ? "link" : "rename", k->from, k->to, k->st);
	if (k->cb)
		k->cb(k->arg, 0, done ? STATUS_SUCCESS : k->st);
	talloc_free(k);
}

static void replay_check_to(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct replay_check *k = arg;
	bool there = !err && status == STATUS_SUCCESS && a;
	replay_check_end(k, there && (!k->link || (a->file_id && a->file_id == k->from_id)));
}

static void replay_check_from(void *arg, int err, uint32_t status, const struct smb_attr *a)
{
	struct replay_check *k = arg;
	bool ok = k->link ? !err && status == STATUS_SUCCESS && a && a->file_id
	                  : !err && status == STATUS_OBJECT_NAME_NOT_FOUND;
	if (ok && k->link)
		k->from_id = a->file_id;
	if (!ok || smb_stat(k->c, k->to, replay_check_to, k) < 0)
		replay_check_end(k, false);
}

/* set_info_chain()'s done handler: unlink, rename, link (and EAs). */
static void set_info_done(struct smb_req *req)
{
	struct op *op = req->arg;
	uint32_t st0 = req->pdu[0].rsp_hdr.status, st = chain_status(req, 2);
	uint8_t cls = op->kind_cls;
	if (req->err || !smb_req_replayed(req) || st == STATUS_SUCCESS) {
		status_done(req);
		return;
	}
	if (cls == FileDispositionInformation &&
	    (st0 == STATUS_OBJECT_NAME_NOT_FOUND || st == STATUS_DELETE_PENDING)) {
		/* gone, or going: what was asked */
		smb_debug("%s: unlink of %s: the reply was lost; its replay finds it %s: done",
		          op->c->host, op->path,
		          st == STATUS_DELETE_PENDING ? "being deleted" : "gone");
		if (op->cb)
			((smb_status_cb)op->cb)(op->arg, 0, STATUS_SUCCESS);
		smb_req_put(req);
		return;
	}
	bool rename = cls == FileRenameInformation && st0 == STATUS_OBJECT_NAME_NOT_FOUND;
	bool link = cls == FileLinkInformation && st == STATUS_OBJECT_NAME_COLLISION;
	struct replay_check *k = rename || link ? talloc_zero(NULL, struct replay_check) : NULL;
	if (k) {
		*k = (struct replay_check){.c = op->c,
		                           .cb = (smb_status_cb)op->cb,
		                           .arg = op->arg,
		                           .st = st,
		                           .link = link};
		k->from = talloc_strdup(k, op->path);
		k->to = talloc_strdup(k, op->path2);
	}
	if (!k || !k->from || !k->to || smb_stat(op->c, k->from, replay_check_from, k) < 0) {
		talloc_free(k);
		status_done(req);
		return;
	}
	smb_req_put(req);
}

/* CREATE path + SET_INFO cls + CLOSE, one round trip; the SET_INFO's status
 * is the result.  encode writes the info into buf (cap bytes, owned by the
 * request) and returns its length or -errno. */
static int set_info_chain(struct smb_client *c, const char *path, const struct smb_open_args *oa,
                          uint8_t cls, size_t cap,
                          ssize_t (*encode)(uint8_t *buf, size_t cap, const void *what),
                          const void *what, smb_status_cb cb, void *arg)
{
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	op->kind = 2; /* the close's status does not matter */
	/* what set_info_done() needs to read a replay's failure */
	op->kind_cls = cls;
	op->path = talloc_strdup(op, path);
	if (cls == FileRenameInformation || cls == FileLinkInformation)
		op->path2 = talloc_strdup(op, ((const struct rename_what *)what)->to);
	uint8_t *info = talloc_size(req, cap);
	ssize_t ilen = info ? encode(info, cap, what) : -ENOMEM;
	/* a lease only to name the parent's (smb_unlink_in()) */
	uint8_t rqls[SMB2_RQLS_V2_LEN];
	struct smb2_create_ctx lctx;
	bool lease = oa->lease_id && smb_lease_ctx(c, oa, rqls, &lctx);
	int err = ilen < 0 ? (int)ilen
	          : lease  ? smb_req_add_create(req, path, oa, SMB2_OPLOCK_LEVEL_LEASE, &lctx)
	                   : add_create(req, path, oa);
	if (!err)
		err = add_set_info(req, SMB2_FILEID_RELATED, cls, info, (size_t)ilen);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, set_info_done);
}

static ssize_t enc_disposition(uint8_t *buf, size_t cap, const void *what)
{
	return smb2_file_disposition_info_encode(buf, cap, true);
}

static ssize_t enc_rename(uint8_t *buf, size_t cap, const void *what)
{
	const struct rename_what *r = what;
	return r->posix ? smb2_file_rename_info_encode_posix(buf, cap, r->replace, r->to)
	                : smb2_file_rename_info_encode(buf, cap, r->replace, r->to);
}

static ssize_t enc_ea(uint8_t *buf, size_t cap, const void *what)
{
	return smb2_ea_list_encode(buf, cap, what, 1);
}

static void close_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_opens_remove(op->c, op->fid);
	/* sent again after its reply was lost: the first closed it */
	if (!req->err && smb_req_replayed(req) &&
	    req->pdu[0].rsp_hdr.status == STATUS_FILE_CLOSED) {
		smb_debug("%s: CLOSE: the reply was lost; its replay finds the handle closed: done",
		          op->c->host);
		req->pdu[0].rsp_hdr.status = STATUS_SUCCESS;
	}
	status_done(req);
}

int smb_close(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_close(c, fid, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	op->fid = fid;
	smb_opens_closing(c, fid);
	int err = op_submit(req, add_close(req, fid), close_done);
	if (err)
		smb_opens_remove(c, fid); /* lost in a reconnect, or never sent */
	return err;
}

_Static_assert(SMB_CLOSE_BATCH_MAX <= SMB_REQ_MAX_PDU, "a batch of CLOSEs is one request");

struct close_batch {
	int n;
	struct smb2_fileid fids[SMB_CLOSE_BATCH_MAX];
	void *args[SMB_CLOSE_BATCH_MAX];
	int pdu[SMB_CLOSE_BATCH_MAX]; /* the index of each one's CLOSE */
};

static void close_batch_done(struct smb_req *req)
{
	struct op *op = req->arg;
	struct close_batch *b = op->batch;
	smb_status_cb cb = (smb_status_cb)op->cb;
	for (int i = 0; i < b->n; i++) {
		uint32_t st = req->err ? 0 : req->pdu[b->pdu[i]].rsp_hdr.status;
		smb_opens_remove(op->c, b->fids[i]);
		/* sent again after its reply was lost: the first closed it */
		if (!req->err && smb_req_replayed(req) && st == STATUS_FILE_CLOSED)
			st = STATUS_SUCCESS;
		cb(b->args[i], req->err, st);
	}
	smb_req_put(req);
}

int smb_close_batch(struct smb_client *c, const struct smb2_fileid *fids, const uint64_t *mtimes,
                    void *const *args, int n, smb_status_cb cb)
{
	if (smb_dfs_routes(c))
		return smb_dfs_close_batch(c, fids, mtimes, args, n, cb);
	if (n < 1 || smb_close_batch_pdus(mtimes, n) > SMB_CLOSE_BATCH_MAX)
		return -EINVAL;
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, NULL, &op);
	if (!req)
		return -ENOMEM;
	struct close_batch *b = talloc_zero(op, struct close_batch);
	int err = b ? 0 : -ENOMEM;
	op->batch = b;
	for (int i = 0; i < n && !err; i++) {
		b->fids[i] = fids[i];
		b->args[i] = args[i];
		if (mtimes && mtimes[i]) {
			struct smb_setattr_args t = {.which = SMB_SET_MTIME, .mtime = mtimes[i]};
			err = add_set_basic(req, fids[i], &t);
		}
		b->pdu[i] = req->npdu;
		if (!err) {
			smb_opens_closing(c, fids[i]);
			err = add_close(req, fids[i]);
		}
	}
	if (b)
		b->n = n;
	return op_submit(req, err, close_batch_done);
}

int smb_unlink(struct smb_client *c, const char *path, bool is_dir, smb_status_cb cb, void *arg)
{
	return smb_unlink_in(c, path, is_dir, 0, 0, cb, arg);
}

int smb_unlink_in(struct smb_client *c, const char *path, bool is_dir, uint64_t lease_id,
                  uint64_t parent_lease_id, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_unlink_in(c, path, is_dir, lease_id, parent_lease_id, cb, arg);
	/* Set the disposition explicitly rather than FILE_DELETE_ON_CLOSE: only
	 * SET_INFO reports STATUS_DIRECTORY_NOT_EMPTY for a non-empty directory
	 * (a delete-on-close open of one succeeds and the delete quietly does not
	 * happen). */
	struct smb_open_args oa = {
	    .desired_access = DELETE_ACCESS | FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	    .create_options = is_dir ? FILE_DIRECTORY_FILE : FILE_NON_DIRECTORY_FILE,
	};
	/* A lease only to name the parent's, where the server leases
	 * directories (elsewhere it would be one more grant for nothing). */
	if (parent_lease_id && smb_lease_names_parent(c)) {
		oa.lease_id = lease_id;
		oa.parent_lease_id = parent_lease_id;
	}
	return set_info_chain(c, path, &oa, FileDispositionInformation, 8, enc_disposition, NULL,
	                      cb, arg);
}

int smb_rename(struct smb_client *c, const char *from, const char *to, bool replace,
               smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_rename(c, from, to, replace, cb, arg);
	struct smb_open_args oa = {
	    .desired_access = DELETE_ACCESS | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
	    .create_disposition = FILE_OPEN,
	};
	struct rename_what r = {replace, c->sess.posix, to};
	return set_info_chain(c, from, &oa, FileRenameInformation, 24 + 2 * strlen(to) + 8,
	                      enc_rename, &r, cb, arg);
}

int smb_flush(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_flush(c, fid, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_FLUSH, 24);
	int err = body ? smb_req_end_pdu(req, smb2_flush_req_encode(body, 24, &fid)) : -ENOMEM;
	return op_submit(req, err, status_done);
}

/* ---- setattr ------------------------------------------------------------------------ */

static void setattr_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_attr_cb cb = (smb_attr_cb)op->cb;
	struct smb_attr a;
	int q = op->kind; /* index of the QUERY_INFO */
	if (sids_defer(req, q, false))
		return;
	if (req->err) {
		cb(op->arg, req->err, 0, NULL);
	} else {
		uint32_t st = chain_status(req, q + 1);
		if (st != STATUS_SUCCESS)
			cb(op->arg, 0, st, NULL);
		else if (decode_attr(op->c, &req->pdu[q], &a) < 0) {
			log_malformed(op->c, "QUERY_INFO");
			cb(op->arg, -EIO, 0, NULL);
		} else
			cb(op->arg, 0, STATUS_SUCCESS, &a);
	}
	smb_req_put(req);
}

int smb_setattr(struct smb_client *c, const char *path, const struct smb2_fileid *fid,
                const struct smb_setattr_args *args, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_setattr(c, path, fid, args, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	unsigned sec = args->which & (SMB_SET_MODE | SMB_SET_UID | SMB_SET_GID);
	if (sec && (!c->sess.posix || (fid && sec != SMB_SET_MODE))) {
		smb_req_put(req);
		return c->sess.posix ? -EINVAL : -EOPNOTSUPP;
	}
	struct smb2_fileid f = fid ? *fid : SMB2_FILEID_RELATED;
	int err = 0;
	if (!fid) {
		req->related = true;
		struct smb_open_args oa = {
		    .desired_access =
		        FILE_READ_ATTRIBUTES |
		        /* not for a chmod/chown alone: ksmbd opens for writing
		         * then, which a file without owner write refuses */
		        ((args->which & ~sec) ? FILE_WRITE_ATTRIBUTES : 0) |
		        ((args->which & SMB_SET_SIZE) ? FILE_WRITE_DATA : 0) |
		        ((args->which & SMB_SET_MODE) ? WRITE_DAC : 0) |
		        ((args->which & (SMB_SET_UID | SMB_SET_GID)) ? WRITE_OWNER : 0),
		    .create_disposition = FILE_OPEN,
		};
		/* a lease only to name the parent's (as smb_unlink_in()) */
		if (args->parent_lease_id && smb_lease_names_parent(c)) {
			oa.lease_id = args->lease_id;
			oa.parent_lease_id = args->parent_lease_id;
		}
		uint8_t rqls[SMB2_RQLS_V2_LEN];
		struct smb2_create_ctx lctx;
		if (oa.lease_id && smb_lease_ctx(c, &oa, rqls, &lctx))
			err = smb_req_add_create(req, path, &oa, SMB2_OPLOCK_LEVEL_LEASE, &lctx);
		else
			err = add_create(req, path, &oa);
	}
	if (!err && sec)
		err = add_set_posix_sd(req, f, args);
	if (!err && (args->which & SMB_SET_SIZE)) {
		uint8_t *b = talloc_size(req, 8);
		ssize_t l = b ? smb2_file_eof_info_encode(b, 8, args->size) : -ENOMEM;
		err = l < 0 ? (int)l : add_set_info(req, f, FileEndOfFileInformation, b, (size_t)l);
	}
	if (!err &&
	    (args->which & (SMB_SET_ATIME | SMB_SET_MTIME | SMB_SET_CTIME | SMB_SET_ATTRIBUTES)))
		err = add_set_basic(req, f, args);
	if (!err) {
		op->kind = req->npdu;
		err = add_query_attr(req, f);
	}
	if (!err && !fid)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, setattr_done);
}

/* ---- statfs / fstat ------------------------------------------------------------------ */

static void statfs_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_fsinfo_cb cb = (smb_fsinfo_cb)op->cb;
	if (req->err) {
		cb(op->arg, req->err, 0, NULL);
	} else {
		uint32_t st = chain_status(req, 2);
		struct smb2_query_info_rsp q;
		struct smb2_fs_full_size_info fs;
		if (st != STATUS_SUCCESS) {
			cb(op->arg, 0, st, NULL);
		} else if (smb2_query_info_rsp_decode(req->pdu[1].rsp, req->pdu[1].rsp_len, &q) <
		               0 ||
		           smb2_fs_full_size_info_decode(q.buffer, q.buffer_len, &fs) < 0) {
			log_malformed(op->c, "QUERY_INFO (file system)");
			cb(op->arg, -EIO, 0, NULL);
		} else {
			struct smb_fsinfo out = {
			    .total_units = fs.total_allocation_units,
			    .avail_units = fs.caller_available_allocation_units,
			    .free_units = fs.actual_available_allocation_units,
			    .bytes_per_unit = fs.sectors_per_allocation_unit * fs.bytes_per_sector,
			};
			cb(op->arg, 0, STATUS_SUCCESS, &out);
		}
	}
	smb_req_put(req);
}

int smb_statfs(struct smb_client *c, smb_fsinfo_cb cb, void *arg)
{
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_DIRECTORY_FILE,
	};
	int err = add_create(req, "", &oa);
	if (!err)
		err = add_query_info(req, SMB2_FILEID_RELATED, SMB2_0_INFO_FILESYSTEM,
		                     FileFsFullSizeInformation, 64);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, statfs_done);
}

static void fstat_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_attr_cb cb = (smb_attr_cb)op->cb;
	struct smb_attr a;
	if (sids_defer(req, 0, false))
		return;
	if (req->err)
		cb(op->arg, req->err, 0, NULL);
	else if (chain_status(req, 1) != STATUS_SUCCESS)
		cb(op->arg, 0, chain_status(req, 1), NULL);
	else if (decode_attr(op->c, &req->pdu[0], &a) < 0) {
		log_malformed(op->c, "QUERY_INFO");
		cb(op->arg, -EIO, 0, NULL);
	} else
		cb(op->arg, 0, STATUS_SUCCESS, &a);
	smb_req_put(req);
}

int smb_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_fstat(c, fid, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	int err = add_query_attr(req, fid);
	return op_submit(req, err, fstat_done);
}

/* ---- READ --------------------------------------------------------------------------- */

/* What split READs and WRITEs share: pieces finish on the loop thread while
 * the submitter may still hold its extra reference on another thread, so the
 * count is atomic and the submitter's error lives in its own field until the
 * last reference goes. */
struct join_base {
	int left;
	int err, submit_err;
	uint32_t status; /* first failing server status */
};

/* Record one piece's outcome; ok_status is a second status that counts as
 * success (STATUS_END_OF_FILE for reads). */
static void join_note(struct join_base *b, int err, uint32_t st, uint32_t ok_status)
{
	if (err && !b->err)
		b->err = err;
	else if (!err && st != STATUS_SUCCESS && st != ok_status && !b->status)
		b->status = st;
}

/* Drop one reference; true for the last, with submit_err folded in. */
static bool join_drop(struct join_base *b)
{
	if (__atomic_sub_fetch(&b->left, 1, __ATOMIC_ACQ_REL))
		return false;
	if (b->submit_err && !b->err)
		b->err = b->submit_err;
	return true;
}

/* Where READ payload goes, decided in one place (read_submit):
 *  - RDMA offload: the server writes it into a registered buffer (offload.c);
 *  - a destination (the caller's lent buffer, or the slice of a split read's
 *    buffer): the PDU lends it (smb_req_lend_rx) and TCP receives the payload
 *    straight into it; when that cannot be (encrypted, compounded, QUIC, an
 *    odd answer) read_done() copies it there once, counted;
 *  - no destination (smb_read of one piece): the caller gets the payload
 *    where the transport received it, in the response message (with TCP
 *    reading ahead no further than a message's head while READs are out,
 *    that is where recvmsg() put it).
 * payload_bytes_copied counts every copy of READ payload, including bytes
 * the transport had read ahead into its own buffer. */

/* A read split into pieces: the pieces land in one buffer and the caller hears once. */
struct read_join {
	struct join_base b;
	struct smb_client *c;
	smb_read_cb cb;
	void *arg;
	uint8_t *buf;
	size_t len;
	size_t chunk;
	int npieces;
	size_t *got; /* per piece */
};

struct read_piece {
	struct read_join *join; /* NULL: a single, unsplit read */
	int index;
	size_t len; /* bytes this piece asked for */
	void *dest; /* where its payload must land, or NULL (see above) */
	struct smb_client *c;
	smb_read_cb cb;
	void *arg;
};

static void read_join_release(struct read_join *j);

/* A piece is in (read_done put its bytes in place). */
static void read_join_piece(struct read_join *j, int index, int err, uint32_t st, size_t len)
{
	join_note(&j->b, err, st, STATUS_END_OF_FILE);
	if (!err && st == STATUS_SUCCESS)
		j->got[index] = len;
	read_join_release(j);
}

static void read_join_release(struct read_join *j)
{
	if (!join_drop(&j->b))
		return;
	if (j->b.err) {
		j->cb(j->arg, j->b.err, 0, NULL, 0);
	} else if (j->b.status) {
		j->cb(j->arg, 0, j->b.status, NULL, 0);
	} else {
		/* Contiguous bytes from the start: stop at the first short piece. */
		size_t total = 0;
		for (int i = 0; i < j->npieces; i++) {
			total += j->got[i];
			size_t want =
			    i == j->npieces - 1 ? j->len - (size_t)i * j->chunk : j->chunk;
			if (j->got[i] < want)
				break;
		}
		j->cb(j->arg, 0, STATUS_SUCCESS, j->buf, total);
	}
	talloc_free(j);
}

static void read_done(struct smb_req *req)
{
	struct read_piece *rp = req->arg;
	int err = req->err;
	uint32_t st = 0;
	struct smb2_read_rsp rr = {0};
	const void *data = NULL;
	size_t len = 0, copied = 0;

	if (!err) {
		st = req->pdu[0].rsp_hdr.status;
		if (req->pdu[0].rsp_placed) {
			/* conn_place() checked the body; the bytes are in place */
			data = req->pdu[0].rx_buf;
			len = req->pdu[0].rsp_placed;
			copied = req->pdu[0].rsp_copied;
		} else if (st == STATUS_SUCCESS || st == STATUS_BUFFER_OVERFLOW) {
			if (smb2_read_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &rr) < 0) {
				log_malformed(rp->c, "READ");
				err = -EIO;
			} else if (rr.data_length > rp->len) {
				smb_err("%s: READ response carries %u bytes, %zu were asked for; "
				        "failing the call with EIO",
				        rp->c->host, rr.data_length, rp->len);
				err = -EIO;
			} else {
				data = rr.data;
				len = rr.data_length;
				st = STATUS_SUCCESS;
			}
		} else if (st == STATUS_END_OF_FILE) {
			st = STATUS_SUCCESS;
		}
	}
	if (!err && len && rp->dest && data != rp->dest) {
		/* Not received in place: the one copy. */
		memcpy(rp->dest, data, len);
		copied = len;
		data = rp->dest;
	}
	if (copied)
		__atomic_add_fetch(&rp->c->payload_bytes_copied, copied, __ATOMIC_RELAXED);
	if (rp->join) {
		read_join_piece(rp->join, rp->index, err, st, len);
	} else if (err) {
		rp->cb(rp->arg, err, 0, NULL, 0);
	} else {
		rp->cb(rp->arg, 0, st, data, len);
	}
	smb_req_put(req);
}

static int read_submit(struct smb_chan *ch, struct smb2_fileid fid, uint64_t off, size_t len,
                       struct read_piece *tmpl)
{
	struct smb_req *req = smb_chan_req(ch, NULL);
	if (!req)
		return -ENOMEM;
	struct read_piece *rp = talloc(req, struct read_piece);
	if (!rp) {
		smb_req_put(req);
		return -ENOMEM;
	}
	*rp = *tmpl;
	rp->len = len;
	req->arg = rp;
	struct smb2_read_req r = {
	    .length = (uint32_t)len,
	    .offset = off,
	    .fileid = fid,
	};
	uint8_t *body = smb_req_begin_pdu(req, SMB2_READ, 56);
	int err = body ? smb_req_end_pdu(req, smb2_read_req_encode(body, 56, &r)) : -ENOMEM;
	if (!err) {
		req->pdu[0].credit_charge = smb_credit_charge(ch->conn, len);
		smb_req_lend_rx(req, 0, rp->dest, len); /* dest NULL: any buffer */
	}
	return op_submit(req, err, read_done);
}

/* smb_read(), with dest (len bytes, or NULL) where the payload must land. */
static int read_into(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, size_t len,
                     void *dest, smb_read_cb cb, void *arg)
{
	struct smb_client *c = ch->c;
	struct read_piece tmpl = {.c = c, .cb = cb, .arg = arg, .dest = dest};
	/* Offloaded when it fits a pool buffer and max_read and one buffer is
	 * free; otherwise inline, in pieces no larger than one message carries
	 * nor max_read (with offload, the inline limit may be above it). */
	size_t chunk = ch->inline_max_read && ch->inline_max_read < ch->max_read
	                   ? ch->inline_max_read
	                   : ch->max_read;
	if (smb_offload_wanted(ch, len, true)) {
		int rc = smb_offload_read(ch, fid, offset, len, cb, arg);
		if (rc != -EAGAIN)
			return rc;
	}
	if (len <= chunk)
		return read_submit(ch, fid, offset, len, &tmpl);

	struct read_join *j = talloc_zero(NULL, struct read_join);
	if (!j)
		return -ENOMEM;
	j->c = c;
	j->cb = cb;
	j->arg = arg;
	j->len = len;
	j->chunk = chunk;
	j->npieces = (int)((len + j->chunk - 1) / j->chunk);
	j->buf = dest ? dest : talloc_size(j, len);
	j->got = talloc_zero_array(j, size_t, (size_t)j->npieces);
	if (!j->buf || !j->got) {
		talloc_free(j);
		return -ENOMEM;
	}
	/* One extra reference so a failing submit cannot finish the join early. */
	j->b.left = j->npieces + 1;
	int submitted = 0, err = 0;
	for (int i = 0; i < j->npieces; i++) {
		size_t off = (size_t)i * j->chunk;
		size_t l = len - off < j->chunk ? len - off : j->chunk;
		tmpl.join = j;
		tmpl.index = i;
		tmpl.dest = j->buf + off;
		err = read_submit(ch, fid, offset + off, l, &tmpl);
		if (err) {
			__atomic_sub_fetch(&j->b.left, j->npieces - i, __ATOMIC_ACQ_REL);
			break;
		}
		submitted++;
	}
	if (!submitted) {
		talloc_free(j);
		return err;
	}
	j->b.submit_err = err;
	read_join_release(j); /* drop the extra reference */
	return 0;
}

int smb_read(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, size_t len,
             smb_read_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_read(c, fid, offset, len, cb, arg);
	return read_into(smb_client_pick(c, SMB_SCHED_BULK, len), fid, offset, len, NULL, cb, arg);
}

/* ---- WRITE -------------------------------------------------------------------------- */

struct write_join {
	struct join_base b;
	smb_write_cb cb;
	void *arg;
	size_t written;
};

struct write_piece {
	struct write_join *join;
	struct smb_client *c;
	size_t want;
};

static void write_join_release(struct write_join *j);

static void write_join_piece(struct write_join *j, int err, uint32_t st, size_t n)
{
	join_note(&j->b, err, st, STATUS_SUCCESS);
	if (!err && st == STATUS_SUCCESS)
		j->written += n;
	write_join_release(j);
}

static void write_join_release(struct write_join *j)
{
	if (!join_drop(&j->b))
		return;
	if (j->b.err)
		j->cb(j->arg, j->b.err, 0, 0);
	else if (j->b.status)
		j->cb(j->arg, 0, j->b.status, 0);
	else
		j->cb(j->arg, 0, STATUS_SUCCESS, j->written);
	talloc_free(j);
}

static void write_done(struct smb_req *req)
{
	struct write_piece *wp = req->arg;
	int err = req->err;
	uint32_t st = 0;
	size_t n = 0;
	if (!err) {
		st = req->pdu[0].rsp_hdr.status;
		struct smb2_write_rsp wr;
		if (st == STATUS_SUCCESS) {
			if (smb2_write_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &wr) < 0) {
				log_malformed(wp->c, "WRITE");
				err = -EIO;
			} else {
				n = wr.count > wp->want ? wp->want : wr.count;
			}
		}
	}
	write_join_piece(wp->join, err, st, n);
	smb_req_put(req);
}

/* WRITEs carried inline on ch (split at its inline limit or max_write).  lent: data
 * stays valid until cb (smb_write_lent()) and goes out in place; else each
 * piece is copied first. */
static int write_inline(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset,
                        const void *data, size_t len, bool lent, smb_write_cb cb, void *arg)
{
	struct smb_client *c = ch->c;
	size_t chunk = ch->inline_max_write && ch->inline_max_write < ch->max_write
	                   ? ch->inline_max_write
	                   : ch->max_write;
	struct write_join *j = talloc_zero(NULL, struct write_join);
	if (!j)
		return -ENOMEM;
	j->cb = cb;
	j->arg = arg;
	int npieces = len ? (int)((len + chunk - 1) / chunk) : 1;
	j->b.left = npieces + 1;
	int submitted = 0, err = 0;
	for (int i = 0; i < npieces; i++) {
		size_t off = (size_t)i * chunk;
		size_t l = len - off < chunk ? len - off : chunk;
		struct smb_req *req = smb_chan_req(ch, NULL);
		struct write_piece *wp = req ? talloc(req, struct write_piece) : NULL;
		const void *payload = (const uint8_t *)data + off;
		if (wp && !lent) {
			payload = talloc_memdup(req, payload, l ? l : 1);
			if (payload)
				__atomic_add_fetch(&c->payload_bytes_copied, l, __ATOMIC_RELAXED);
		}
		if (!wp || !payload) {
			if (req)
				smb_req_put(req);
			err = -ENOMEM;
		} else {
			wp->join = j;
			wp->c = c;
			wp->want = l;
			req->arg = wp;
			struct smb2_write_req w = {
			    .data_length = (uint32_t)l,
			    .offset = offset + off,
			    .fileid = fid,
			};
			uint8_t *body = smb_req_begin_pdu(req, SMB2_WRITE, 56);
			err = body ? smb_req_end_pdu(req, smb2_write_req_encode(body, 56, &w))
			           : -ENOMEM;
			if (!err && lent)
				smb_req_set_payload_lent(req, 0, payload, l,
				                         smb_credit_charge(ch->conn, l));
			else if (!err)
				smb_req_set_payload(req, 0, payload, l,
				                    smb_credit_charge(ch->conn, l));
			err = op_submit(req, err, write_done);
		}
		if (err) {
			__atomic_sub_fetch(&j->b.left, npieces - i, __ATOMIC_ACQ_REL);
			break;
		}
		submitted++;
	}
	if (!submitted) {
		talloc_free(j);
		return err;
	}
	j->b.submit_err = err;
	write_join_release(j); /* drop the extra reference */
	return 0;
}

/* One channel pick per write: offloaded on it when that can be, else inline
 * on the same channel. */
/* A WRITE on ch: through the offload pool when it can be, else inline
 * (data sent in place when lent, else copied). */
static int write_on(struct smb_chan *ch, struct smb2_fileid fid, uint64_t offset, const void *data,
                    size_t len, bool lent, smb_write_cb cb, void *arg)
{
	if (smb_offload_wanted(ch, len, false)) {
		int rc = smb_offload_write(ch, fid, offset, data, len, cb, arg);
		if (rc != -EAGAIN)
			return rc;
	}
	return write_inline(ch, fid, offset, data, len, lent, cb, arg);
}

int smb_write(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
              size_t len, smb_write_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_write(c, fid, offset, data, len, false, cb, arg);
	return write_on(smb_client_pick(c, SMB_SCHED_BULK, len), fid, offset, data, len, false, cb,
	                arg);
}

int smb_write_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                   size_t len, smb_write_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_write(c, fid, offset, data, len, true, cb, arg);
	struct smb_chan *ch = smb_client_pick(c, SMB_SCHED_BULK, len);
	int rc = smb_offload_write_lent(ch, fid, offset, data, len, cb, arg);
	if (rc != -EAGAIN)
		return rc;
	/* Not lendable to the server (TCP, sealed, small, outside a region):
	 * still sent from data in place, or through the offload pool. */
	return write_on(ch, fid, offset, data, len, true, cb, arg);
}

/* A WRITE of len (> 0) bytes carried in its own body (DataOffset right
 * after it), not as a payload: in a chain every PDU but the last must end
 * where NextCommand says. */
static int add_write_in_body(struct smb_req *req, struct smb2_fileid fid, uint64_t offset,
                             const void *data, size_t len)
{
	struct smb2_write_req w = {.data_length = (uint32_t)len, .offset = offset, .fileid = fid};
	uint8_t *body = smb_req_begin_pdu(req, SMB2_WRITE, 48 + len);
	ssize_t n = body ? smb2_write_req_encode(body, 48, &w) : -ENOMEM;
	if (n == 48)
		memcpy(body + 48, data, len);
	return smb_req_end_pdu(req, n == 48 ? (ssize_t)(48 + len) : n < 0 ? n : -EIO);
}

static void write_times_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_write_cb cb = (smb_write_cb)op->cb;
	size_t n = 0;
	uint32_t st = 0;
	int err = req->err;
	if (!err) {
		struct smb2_write_rsp wr;
		st = chain_status(req, req->npdu);
		if (req->pdu[0].rsp_hdr.status == STATUS_SUCCESS) {
			if (smb2_write_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &wr) < 0) {
				log_malformed(op->c, "WRITE");
				err = -EIO;
			} else {
				n = wr.count > (uint32_t)op->kind ? (size_t)op->kind : wr.count;
			}
		}
	}
	cb(op->arg, err, st, n);
	smb_req_put(req);
}

int smb_write_times(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                    size_t len, const struct smb_setattr_args *times, smb_write_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_write_times(c, fid, offset, data, len, times, cb, arg);
	if (!len || len > SMB_WRITE_TIMES_MAX ||
	    (times->which & ~(unsigned)(SMB_SET_ATIME | SMB_SET_MTIME)) ||
	    !(times->which & (SMB_SET_ATIME | SMB_SET_MTIME)))
		return -EINVAL;
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	/* A related chain: the SET_INFO runs after the WRITE, and not at all
	 * if it failed.  It names the handle itself rather than the chain's
	 * (ksmbd takes a chained FileId only from a CREATE). */
	req->related = true;
	op->kind = (int)len; /* what the WRITE asked for */
	int err = add_write_in_body(req, fid, offset, data, len);
	if (!err)
		err = add_set_basic(req, fid, times);
	return op_submit(req, err, write_times_done);
}

int smb_read_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, void *buf,
                  size_t len, smb_read_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_read_lent(c, fid, offset, buf, len, cb, arg);
	struct smb_chan *ch = smb_client_pick(c, SMB_SCHED_BULK, len);
	int rc = smb_offload_read_lent(ch, fid, offset, buf, len, cb, arg);
	return rc == -EAGAIN ? read_into(ch, fid, offset, len, buf, cb, arg) : rc;
}

/* ---- extended attributes, hard links, small whole files ------------------------------ */

#define EA_OUT   65536
#define SMALL_IO 65536

/* CREATE + <one PDU on the related handle> + CLOSE; the middle PDU's
 * response goes to cb (smb_buf_cb) or its status alone (smb_status_cb). */
static void buf_chain_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_buf_cb cb = (smb_buf_cb)op->cb;
	if (req->err) {
		cb(op->arg, req->err, 0, NULL, 0);
		smb_req_put(req);
		return;
	}
	uint32_t st = chain_status(req, 2);
	const struct smb_pdu *p = &req->pdu[1];
	if (st != STATUS_SUCCESS && st != STATUS_END_OF_FILE) {
		cb(op->arg, 0, st, NULL, 0);
	} else if (p->command == SMB2_QUERY_INFO) {
		struct smb2_query_info_rsp q;
		if (smb2_query_info_rsp_decode(p->rsp, p->rsp_len, &q) < 0) {
			log_malformed(op->c, "QUERY_INFO");
			cb(op->arg, -EIO, 0, NULL, 0);
		} else {
			cb(op->arg, 0, STATUS_SUCCESS, q.buffer, q.buffer_len);
		}
	} else if (p->command == SMB2_IOCTL) {
		struct smb2_ioctl_rsp r;
		if (smb2_ioctl_rsp_decode(p->rsp, p->rsp_len, &r) < 0) {
			log_malformed(op->c, "IOCTL");
			cb(op->arg, -EIO, 0, NULL, 0);
		} else {
			cb(op->arg, 0, STATUS_SUCCESS, r.output, r.output_len);
		}
	} else if (st == STATUS_END_OF_FILE) {
		cb(op->arg, 0, STATUS_SUCCESS, NULL, 0); /* an empty file */
	} else {
		struct smb2_read_rsp rr;
		if (smb2_read_rsp_decode(p->rsp, p->rsp_len, &rr) < 0 ||
		    rr.data_length > (uint32_t)op->kind) {
			log_malformed(op->c, "READ");
			cb(op->arg, -EIO, 0, NULL, 0);
		} else {
			cb(op->arg, 0, STATUS_SUCCESS, rr.data, rr.data_length);
		}
	}
	smb_req_put(req);
}

int smb_query_eas(struct smb_client *c, const char *path, const char *name, smb_buf_cb cb,
                  void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_query_eas(c, path, name, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_EA | FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	};
	uint8_t *in = NULL;
	ssize_t inlen = 0;
	if (name) {
		size_t cap = 8 + strlen(name) + 1;
		in = talloc_size(req, cap);
		inlen = in ? smb2_get_ea_encode(in, cap, name, strlen(name)) : -ENOMEM;
	}
	int err = inlen < 0 ? (int)inlen : add_create(req, path, &oa);
	if (!err) {
		struct smb2_query_info_req q = {
		    .info_type = SMB2_0_INFO_FILE,
		    .file_info_class = FileFullEaInformation,
		    .output_buffer_length = EA_OUT,
		    .input = in,
		    .input_len = (uint32_t)inlen,
		    .fileid = SMB2_FILEID_RELATED,
		};
		size_t cap = 48 + (size_t)inlen;
		uint8_t *body = smb_req_begin_pdu(req, SMB2_QUERY_INFO, cap);
		err = body ? smb_req_end_pdu(req, smb2_query_info_req_encode(body, cap, &q))
		           : -ENOMEM;
	}
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, buf_chain_done);
}

int smb_set_ea(struct smb_client *c, const char *path, const char *name, const void *value,
               size_t len, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_set_ea(c, path, name, value, len, cb, arg);
	struct smb_open_args oa = {
	    .desired_access = FILE_WRITE_EA | FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	};
	struct smb2_ea ea = {
	    .name = name, .name_len = strlen(name), .value = value, .value_len = len};
	return set_info_chain(c, path, &oa, FileFullEaInformation, 8 + ea.name_len + 1 + len,
	                      enc_ea, &ea, cb, arg);
}

int smb_link(struct smb_client *c, const char *from, const char *to, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_link(c, from, to, cb, arg);
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES | SYNCHRONIZE,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_NON_DIRECTORY_FILE,
	};
	/* FILE_LINK_INFORMATION has FILE_RENAME_INFORMATION's layout. */
	struct rename_what r = {false, c->sess.posix, to};
	return set_info_chain(c, from, &oa, FileLinkInformation, 24 + 2 * strlen(to) + 8,
	                      enc_rename, &r, cb, arg);
}

int smb_put_small(struct smb_client *c, const char *path, const void *data, size_t len,
                  smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_put_small(c, path, data, len, cb, arg);
	if (len == 0 || len > SMALL_IO)
		return -EINVAL;
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	struct smb_open_args oa = {
	    .desired_access = FILE_WRITE_DATA | FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_CREATE,
	    .create_options = FILE_NON_DIRECTORY_FILE,
	};
	int err = add_create(req, path, &oa);
	if (!err)
		err = add_write_in_body(req, SMB2_FILEID_RELATED, 0, data, len);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, status_done);
}

int smb_get_small(struct smb_client *c, const char *path, size_t max, smb_buf_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_get_small(c, path, max, cb, arg);
	if (max == 0 || max > SMALL_IO)
		return -EINVAL;
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	op->kind = (int)max; /* buf_chain_done: the most the READ may carry */
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_DATA | FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_NON_DIRECTORY_FILE,
	};
	int err = add_create(req, path, &oa);
	if (!err) {
		struct smb2_read_req r = {.length = (uint32_t)max, .fileid = SMB2_FILEID_RELATED};
		uint8_t *body = smb_req_begin_pdu(req, SMB2_READ, 56);
		err = body ? smb_req_end_pdu(req, smb2_read_req_encode(body, 56, &r)) : -ENOMEM;
	}
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, buf_chain_done);
}

static int add_ioctl(struct smb_req *req, struct smb2_fileid fid, uint32_t code, const uint8_t *in,
                     size_t inlen, uint32_t max_out);

int smb_get_reparse(struct smb_client *c, const char *path, smb_buf_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_get_reparse(c, path, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	req->related = true;
	struct smb_open_args oa = {
	    .desired_access = FILE_READ_ATTRIBUTES,
	    .create_disposition = FILE_OPEN,
	    .create_options = FILE_OPEN_REPARSE_POINT,
	};
	int err = add_create(req, path, &oa);
	if (!err)
		err = add_ioctl(req, SMB2_FILEID_RELATED, FSCTL_GET_REPARSE_POINT, NULL, 0,
		                SMB_REPARSE_MAX);
	if (!err)
		err = add_close(req, SMB2_FILEID_RELATED);
	return op_submit(req, err, buf_chain_done);
}

/* ---- FSCTLs on a handle, LOCK ------------------------------------------------------- */

static int add_ioctl(struct smb_req *req, struct smb2_fileid fid, uint32_t code, const uint8_t *in,
                     size_t inlen, uint32_t max_out)
{
	struct smb2_ioctl_req r = {
	    .ctl_code = code,
	    .fileid = fid,
	    .input = in,
	    .input_len = (uint32_t)inlen,
	    .max_output_response = max_out,
	    .flags = SMB2_0_IOCTL_IS_FSCTL,
	};
	size_t cap = 56 + inlen + 8;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_IOCTL, cap);
	return body ? smb_req_end_pdu(req, smb2_ioctl_req_encode(body, cap, &r)) : -ENOMEM;
}

static void ioctl_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_buf_cb cb = (smb_buf_cb)op->cb;
	struct smb2_ioctl_rsp r;
	uint32_t st = req->err ? 0 : req->pdu[0].rsp_hdr.status;
	if (req->err) {
		cb(op->arg, req->err, 0, NULL, 0);
	} else if (st != STATUS_SUCCESS && st != STATUS_BUFFER_OVERFLOW &&
	           st != STATUS_INVALID_PARAMETER) {
		cb(op->arg, 0, st, NULL, 0);
	} else if (smb2_ioctl_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &r) < 0) {
		/* STATUS_INVALID_PARAMETER may come as an error body (no IOCTL
		 * response): then it is just that status */
		if (st == STATUS_INVALID_PARAMETER) {
			cb(op->arg, 0, st, NULL, 0);
		} else {
			log_malformed(op->c, "IOCTL");
			cb(op->arg, -EIO, 0, NULL, 0);
		}
	} else {
		cb(op->arg, 0, st, r.output, r.output_len);
	}
	smb_req_put(req);
}

int smb_fsctl(struct smb_client *c, struct smb2_fileid fid, uint32_t code, const void *in,
              size_t inlen, uint32_t max_out, smb_buf_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_fsctl(c, fid, code, in, inlen, max_out, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	return op_submit(req, add_ioctl(req, fid, code, in, inlen, max_out), ioctl_done);
}

/* A LOCK sent again after its reply was lost carries the LockSequence of
 * the first ([MS-SMB2] 3.3.5.14: a durable handle's server answers it
 * without locking twice); the bucket is free again once it is answered. */
static void lock_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_opens_lock_seq_done(op->c, op->fid, op->lock_seq);
	if (!req->err && req->pdu[0].have_rsp && req->pdu[0].rsp_hdr.status == STATUS_SUCCESS)
		smb_opens_locks_done(op->c, op->fid, op->locks, op->nlocks);
	status_done(req);
}

int smb_lock(struct smb_client *c, struct smb2_fileid fid, const struct smb2_lock_elem *e,
             uint16_t n, smb_status_cb cb, void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_lock(c, fid, e, n, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	op->fid = fid;
	op->locks = n ? talloc_memdup(op, e, (size_t)n * sizeof(*e)) : NULL;
	if (n && !op->locks) {
		smb_req_put(req);
		return -ENOMEM;
	}
	op->nlocks = n;
	uint32_t seq = c->sess.dialect >= SMB2_DIALECT_0300 ? smb_opens_lock_seq_take(c, fid) : 0;
	op->lock_seq = seq;
	size_t cap = 24 + 24 * (size_t)n;
	uint8_t *body = smb_req_begin_pdu(req, SMB2_LOCK, cap);
	int err =
	    body ? smb_req_end_pdu(req, smb2_lock_req_encode(body, cap, fid, seq, e, n)) : -ENOMEM;
	err = op_submit(req, err, lock_done);
	if (err) /* never sent: lock_done() will not run */
		smb_opens_lock_seq_done(c, fid, seq);
	return err;
}

/* ---- QUERY_DIRECTORY ---------------------------------------------------------------- */

/* An entry's name in UTF-8 (on mem), or NULL (logged) to skip the entry. */
/* NULL (and *bad counted) for a name that is not valid UTF-16 or holds a
 * NUL: one log line per reply says how many (dirent_names_skipped), not one
 * per entry, so a hostile listing cannot flood the log. */
static char *dirent_name(void *mem, const uint8_t *name16, uint32_t len, size_t *bad)
{
	size_t cap = (size_t)len * 2 + 1;
	char *name = talloc_size(mem, cap);
	if (!name || smb_utf16le_to_utf8(name16, len, name, cap) < 0) {
		(*bad)++;
		return NULL;
	}
	return name;
}

static void dirent_names_skipped(struct smb_client *c, size_t bad)
{
	if (bad)
		smb_warn("%s: skipping %zu directory %s whose name is not valid UTF-16", c->host,
		         bad, bad == 1 ? "entry" : "entries");
}

/* Hand the caller the k entries of one reply (ents NULL: out of memory). */
static void readdir_reply(struct smb_req *req, const struct smb_dirent *ents, size_t k)
{
	struct op *op = req->arg;
	smb_dir_cb cb = (smb_dir_cb)op->cb;
	if (!ents)
		cb(op->arg, -ENOMEM, 0, NULL, 0);
	else
		cb(op->arg, 0, STATUS_SUCCESS, ents, k);
	smb_req_put(req);
}

/* Fail a listing whose buffer would not decode. */
static void readdir_malformed(struct smb_req *req, const char *what)
{
	struct op *op = req->arg;
	log_malformed(op->c, what);
	((smb_dir_cb)op->cb)(op->arg, -EIO, 0, NULL, 0);
	smb_req_put(req);
}

/* The same for SMB2_FILE_POSIX_INFORMATION entries. */
static void readdir_posix(struct smb_req *req, const struct smb2_query_directory_rsp *qr)
{
	struct op *op = req->arg;
	struct smb2_posix_info pi;
	const uint8_t *name16;
	uint32_t off = 0, name16_len;
	size_t n = 0, k = 0, bad = 0;
	int rc;
	while ((rc = smb2_posix_dirent_next(qr->buffer, qr->buffer_len, &off, &pi, &name16,
	                                    &name16_len)) == 1)
		n++;
	if (rc < 0) {
		readdir_malformed(req, "QUERY_DIRECTORY (POSIX) entry list");
		return;
	}
	struct smb_dirent *ents = talloc_zero_array(req, struct smb_dirent, n ? n : 1);
	off = 0;
	while (ents && k < n &&
	       smb2_posix_dirent_next(qr->buffer, qr->buffer_len, &off, &pi, &name16,
	                              &name16_len) == 1) {
		char *name = dirent_name(ents, name16, name16_len, &bad);
		if (!name)
			continue;
		ents[k].name = name;
		posix_to_attr(op->c, &pi, &ents[k].attr);
		k++;
	}
	dirent_names_skipped(op->c, bad);
	readdir_reply(req, ents, k);
}

static void readdir_done(struct smb_req *req)
{
	struct op *op = req->arg;
	smb_dir_cb cb = (smb_dir_cb)op->cb;
	if (op->kind && sids_defer(req, 0, true))
		return;
	if (req->err) {
		cb(op->arg, req->err, 0, NULL, 0);
		smb_req_put(req);
		return;
	}
	uint32_t st = req->pdu[0].rsp_hdr.status;
	if (st != STATUS_SUCCESS) {
		cb(op->arg, 0, st, NULL, 0);
		smb_req_put(req);
		return;
	}
	struct smb2_query_directory_rsp qr;
	if (smb2_query_directory_rsp_decode(req->pdu[0].rsp, req->pdu[0].rsp_len, &qr) < 0) {
		log_malformed(op->c, "QUERY_DIRECTORY");
		cb(op->arg, -EIO, 0, NULL, 0);
		smb_req_put(req);
		return;
	}
	if (op->kind) {
		readdir_posix(req, &qr);
		return;
	}
	/* Count, then convert. */
	size_t n = 0;
	uint32_t off = 0;
	struct smb2_dirent e;
	int rc;
	while ((rc = smb2_dirent_next(FileIdBothDirectoryInformation, qr.buffer, qr.buffer_len,
	                              &off, &e)) == 1)
		n++;
	if (rc < 0) {
		readdir_malformed(req, "QUERY_DIRECTORY entry list");
		return;
	}
	struct smb_dirent *ents = talloc_zero_array(req, struct smb_dirent, n ? n : 1);
	size_t k = 0, bad = 0;
	off = 0;
	while (ents && k < n &&
	       smb2_dirent_next(FileIdBothDirectoryInformation, qr.buffer, qr.buffer_len, &off,
	                        &e) == 1) {
		char *name = dirent_name(ents, e.name16, e.name16_len, &bad);
		if (!name)
			continue;
		struct smb_attr *a = &ents[k].attr;
		ents[k].name = name;
		a->file_id = e.file_id;
		a->creation_time = e.creation_time;
		a->last_access_time = e.last_access_time;
		a->last_write_time = e.last_write_time;
		a->change_time = e.change_time;
		a->end_of_file = e.end_of_file;
		a->allocation_size = e.allocation_size;
		a->file_attributes = e.file_attributes;
		k++;
	}
	dirent_names_skipped(op->c, bad);
	readdir_reply(req, ents, k);
}

int smb_readdir(struct smb_client *c, struct smb2_fileid fid, bool restart, smb_dir_cb cb,
                void *arg)
{
	if (smb_dfs_routes(c))
		return smb_dfs_readdir(c, fid, restart, cb, arg);
	struct op *op;
	struct smb_req *req = op_req(c, (void *)cb, arg, &op);
	if (!req)
		return -ENOMEM;
	uint32_t outlen = c->sess.max_transact < DIR_OUT ? c->sess.max_transact : DIR_OUT;
	op->kind = c->sess.posix; /* readdir_done(): which class came back */
	struct smb2_query_directory_req q = {
	    .info_class =
	        c->sess.posix ? SMB2_FILE_POSIX_INFORMATION : FileIdBothDirectoryInformation,
	    .flags = restart ? SMB2_RESTART_SCANS : 0,
	    .fileid = fid,
	    .pattern = "*",
	    .output_buffer_length = outlen,
	};
	uint8_t *body = smb_req_begin_pdu(req, SMB2_QUERY_DIRECTORY, 48);
	int err =
	    body ? smb_req_end_pdu(req, smb2_query_directory_req_encode(body, 48, &q)) : -ENOMEM;
	if (!err)
		req->pdu[0].credit_charge = smb_credit_charge(req->conn, outlen);
	return op_submit(req, err, readdir_done);
}
