/* client/sidmap.h — internal to client/: Unix ids for owners and groups
 * sent as account SIDs (client/sidmap.c).
 *
 * Owner: sidmap.c.  Its cache (struct smb_sidmap, opaque outside
 * sidmap.c) hangs off c->sidmap, made on first use (published with an
 * atomic compare-and-swap), a talloc child of c freed with it.  Lock: the
 * cache's own mutex, taken inside these calls only.  Threads: any may ask
 * (smb_sidmap_get); lookups start and end on the loop thread.
 */
#ifndef SMBRDMA_CLIENT_SIDMAP_H
#define SMBRDMA_CLIENT_SIDMAP_H

#include <stdbool.h>
#include <stdint.h>

struct smb_client;
struct smb2_sid;

/* The Unix id of sid as owner (group false) or group: true with *id (maybe
 * SMB2_POSIX_ID_NONE) when the cache knows it, or when it never will (a
 * SID that is no domain account: *id NONE); false when it must be looked
 * up first (*id is what a stale answer said, or NONE). */
bool smb_sidmap_get(struct smb_client *c, const struct smb2_sid *sid, bool group, uint32_t *id);
/* Look up those of sids[0..n) the cache has no fresh answer for.  0: none
 * to look up (done is not called); 1: done(arg) runs on the loop thread
 * once they are all settled (an id, or none for a while);
 * -ENOMEM.  Call it on the loop thread. */
int smb_sidmap_lookup(struct smb_client *c, const struct smb2_sid *sids, int n,
                      void (*done)(void *arg), void *arg);

#endif
