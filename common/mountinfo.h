/* common/mountinfo.h — reading /proc/self/mountinfo.
 *
 * Nothing here waits on a mount point's file system: mountinfo_dev() only
 * reads /proc, and mountinfo_id() asks statx() not to sync (no request
 * reaches a FUSE daemon, which may be our own, not yet serving, or gone).
 * Pure libc; any thread.
 */
#ifndef SMBRDMA_COMMON_MOUNTINFO_H
#define SMBRDMA_COMMON_MOUNTINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* What one line says: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - TYPE ...". */
struct mountinfo_ent {
	unsigned maj, min;
	char mountpoint[PATH_MAX]; /* unescaped (mountinfo writes \ooo) */
	char fstype[64];           /* "" if the line had none */
};

/* fn(e, arg) for each line, in order, until it returns true.  0, or -errno
 * when the file cannot be read. */
int mountinfo_each(bool (*fn)(const struct mountinfo_ent *e, void *arg), void *arg);

/* The device of the topmost mount whose mount point is exactly path.
 * 0, -ENOENT when nothing is mounted there, or -errno. */
int mountinfo_dev(const char *path, unsigned *maj, unsigned *min);

/* Which mount the path shows (the topmost one at a mount point), as an ID
 * that tells one mount from the next one made at the same place.  A device
 * number cannot: an unmounted FUSE mount's anonymous device (0:N) is given
 * to the next FUSE mount at once.  On Linux 6.8 and later the ID is the
 * 64-bit one the kernel never reuses (STATX_MNT_ID_UNIQUE, *unique set);
 * before, the classic mount ID (reused once freed, as the device is) and
 * *unique clear.  0, or -errno. */
int mountinfo_id(const char *path, uint64_t *id, bool *unique);

#endif
