/* client/proto/smb2_errno.h — NTSTATUS -> errno, in one table (smb2_errno.c).
 *
 * The engine hands every completion an (err, status) pair: err is 0 or a
 * local -errno, and when it is 0, status is the server's NTSTATUS.  FUSE
 * and libsmbrdma want a positive errno.  Nothing outside this file maps
 * statuses.  It lives in the codec (pure: a table and two lookups) so that
 * fuse/ and lib/ both link it from the layer below them.
 */
#ifndef SMBRDMA_PROTO_SMB2_ERRNO_H
#define SMBRDMA_PROTO_SMB2_ERRNO_H

#include <stdbool.h>
#include <stdint.h>

/* Positive errno for an NTSTATUS; 0 for success and informational statuses
 * that the table does not list; EIO for anything else it does not know. */
int smb_status_to_errno(uint32_t status);

/* err ? -err : smb_status_to_errno(status).  Positive, ready for
 * fuse_reply_err(); 0 means success. */
int smb_errno(int err, uint32_t status);

/* True when status has its own row in the table (for the unit test that
 * checks every STATUS_* in smb2_const.h is covered). */
bool smb_status_in_table(uint32_t status);

#endif
