/* common/mountinfo.h — reading /proc/self/mountinfo.
 *
 * Nothing here touches a mount point itself (no stat()): a FUSE daemon may
 * look up its own mount, and smbrdmactl may look up a mount whose daemon no
 * longer answers.  Pure libc; any thread.
 */
#ifndef SMBRDMA_COMMON_MOUNTINFO_H
#define SMBRDMA_COMMON_MOUNTINFO_H

#include <limits.h>
#include <stdbool.h>

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

#endif
