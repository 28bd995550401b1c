/* client/client_int.h — internal to client/: what a struct smb_client holds.
 *
 * Immutable after smb_client_connect() returns, except where noted; the
 * channel (conn) has its own lock.  Lifetime: smb_client_destroy() frees it.
 */
#ifndef SMBRDMA_CLIENT_CLIENT_INT_H
#define SMBRDMA_CLIENT_CLIENT_INT_H

#include "client/client.h"
#include "client/conn.h"
#include "client/offload.h"

struct smb_client {
	char *host, *share, *user, *domain, *unc;
	uint16_t port;
	bool rdma;
	unsigned timeout_ms;
	struct ev_loop *loop;
	struct smb_conn *conn;

	uint16_t dialect;
	uint16_t server_security_mode;
	uint32_t server_caps;
	uint32_t max_read, max_write, max_transact;
	uint64_t session_id;
	uint32_t tree_id;
	uint32_t share_type;
	struct smb_signing signing;
	uint8_t preauth[64];           /* connection's, then the session's preauth hash */
	uint64_t payload_bytes_copied; /* atomic */
	/* What one SMB2 message may carry inline (0 = no transport limit), and
	 * the offload pool when the transport can move payloads by RDMA. */
	uint32_t inline_max_read, inline_max_write;
	uint32_t rdma_threshold;
	struct smb_offload_pool pool;
	/* Caller regions registered by smb_client_region_add(); set before
	 * the I/O that uses them, read on any thread (nregions is atomic). */
	struct {
		uintptr_t addr;
		size_t len;
	} regions[SMB_CLIENT_MAX_REGIONS];
	int nregions;
};

/* A request to this client's tree on its channel. */
struct smb_req *smb_client_req(struct smb_client *c, void *talloc_parent);
/* Submit and wait (not on the loop thread).  Returns req->err. */
int smb_client_submit_sync(struct smb_client *c, struct smb_req *req);

#endif
