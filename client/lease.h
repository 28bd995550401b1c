/* client/lease.h — internal to client/: leases (client/lease.c).
 *
 * lease.c owns what a client knows of leases: the key each open asks with
 * (its caller's lease_id and the session's ClientGuid), the RqLs context,
 * the answer to a LEASE_BREAK, and the counts in the stats.  The state a
 * lease grants lives with the caller (fuse/ keeps it per inode); the
 * engine only counts.  Everything here takes the client, alive.
 *
 * Owner: lease.c owns struct smb_leases, embedded in struct smb_client
 * (c->leases, so it lives as long as the client); no other file reads or
 * writes it.  No lock: the callback is set once, before the first
 * smb_open() (client.h), and the counts are atomic.
 *
 * Threads: smb_lease_ctx() where an open's CREATE is built (the caller's
 * thread; the channel manager's when it reopens a handle);
 * smb_lease_granted() where its answer is read (the loop thread; the
 * manager's for a reopen); smb_lease_on_break() on the loop thread.
 */
#ifndef SMBRDMA_CLIENT_LEASE_H
#define SMBRDMA_CLIENT_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h" /* smb_lease_break_cb, struct smb_client_stats */

struct smb_open_args;
struct smb2_create_ctx;

/* A client's lease state (c->leases): lease.c's alone. */
struct smb_leases {
	smb_lease_break_cb on_break; /* smb_client_set_lease_break_cb() */
	void *on_break_arg;
	uint64_t granted, breaks, break_acks; /* atomic (stats) */
	/* Files ask for v1 leases, without ParentLeaseKey: set once (atomic)
	 * by smb_lease_on_break() when the server broke a directory's lease
	 * while a CLOSE of a file opened below it under that key was on its
	 * way (ksmbd breaks the parent's leases at the close of any file
	 * written under a v2 lease; it leaves v1 alone).  Never cleared. */
	bool files_v1;
};

/* The RqLs context an open with args a asks for, written into buf (its data)
 * and *ctx: true, or false when this open gets no lease (no lease_id, or
 * the server does not lease this kind of object). */
bool smb_lease_ctx(struct smb_client *c, const struct smb_open_args *a, uint8_t buf[52],
                   struct smb2_create_ctx *ctx);
/* Does an open's lease request carry its parent_lease_id (ParentLeaseKey)
 * on this session? */
bool smb_lease_names_parent(const struct smb_client *c);
/* The lease state a CREATE response granted (its RqLs context), counted in
 * the stats; 0 when there is none. */
uint32_t smb_lease_granted(struct smb_client *c, const uint8_t *ctxs, uint32_t ctxs_len);
/* A LEASE_BREAK notification arrived (loop thread). */
void smb_lease_on_break(struct smb_client *c, const uint8_t *pdu, size_t len);
/* The lease counts, into out's leases_granted, lease_breaks and
 * lease_break_acks (any thread; smb_client_get_stats()). */
void smb_lease_stats(struct smb_client *c, struct smb_client_stats *out);

#endif
