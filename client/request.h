/* client/request.h — internal to client/ and the channel manager above it:
 * requests to a client's tree (client/session.c, client/ops.c).
 *
 * A request here is a struct smb_req of conn.h (its life, its locks and
 * when done() runs are that header's contract) on one of the client's
 * channels, with the session id and tree id of the moment it is made
 * (a reconnect may change them: the rebind before a resend fixes them,
 * session.h).  Its owner is whoever made it until it is submitted, then
 * conn.h's rules.  Threads: any, except where a call says.
 */
#ifndef SMBRDMA_CLIENT_REQUEST_H
#define SMBRDMA_CLIENT_REQUEST_H

#include <stdint.h>

#include "client/chan.h" /* smb_req_client() reads req->conn->chan->c */
#include "client/conn.h"

struct smb_client;
struct smb_open_args;
struct smb2_create_ctx;

/* A request to this client's tree on the channel the scheduler picks for a
 * small (metadata) request. */
struct smb_req *smb_client_req(struct smb_client *c, void *talloc_parent);
/* The client a request belongs to (through its channel). */
static inline struct smb_client *smb_req_client(const struct smb_req *req)
{
	return req->conn->chan->c;
}

/* A request to this client's tree on channel ch. */
struct smb_req *smb_chan_req(struct smb_chan *ch, void *talloc_parent);
/* Submit on req->conn and wait (not on the loop thread).  Returns req->err. */
int smb_client_submit_sync(struct smb_client *c, struct smb_req *req);

/* Append a CREATE to req (ops.c): the args as smb_open() takes them, the
 * oplock level to ask for, and at most one create context (copied). */
int smb_req_add_create(struct smb_req *req, const char *path, const struct smb_open_args *a,
                       uint8_t oplock, const struct smb2_create_ctx *ctx);

/* The same with n (0..SMB2_MAX_CREATE_CTX) create contexts. */
int smb_req_add_create_ctxs(struct smb_req *req, const char *path, const struct smb_open_args *a,
                            uint8_t oplock, const struct smb2_create_ctx *ctx, int n);

#endif
