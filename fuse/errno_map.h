/* fuse/errno_map.h — NTSTATUS -> errno, in one table (errno_map.c).
 *
 * The engine hands every completion an (err, status) pair: err is 0 or a
 * local -errno, and when it is 0, status is the server's NTSTATUS.  FUSE
 * wants a positive errno.  Nothing outside this file maps statuses.
 */
#ifndef SMBRDMA_FUSE_ERRNO_MAP_H
#define SMBRDMA_FUSE_ERRNO_MAP_H

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
