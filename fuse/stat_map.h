/* fuse/stat_map.h — SMB attributes -> struct stat, under the mount's policy. */
#ifndef SMBRDMA_FUSE_STAT_MAP_H
#define SMBRDMA_FUSE_STAT_MAP_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "client/client.h"

/* Preferred I/O size reported in st_blksize: one full FUSE request. */
#define SMB_STAT_BLKSIZE (1u << 20)

struct smb_stat_policy {
	uid_t uid;
	gid_t gid;
	mode_t file_mode; /* permission bits of files */
	mode_t dir_mode;  /* permission bits of directories */
	bool force_uid;   /* forceuid: uid even when the server sends an owner */
	bool force_gid;   /* forcegid: the same for gid */
};

/* Symlinks (a->symlink) get S_IFLNK | 0777.  With POSIX attributes
 * (a->posix: the SMB3 POSIX extensions) the type, permission bits, owner,
 * group (unless force_uid/force_gid, or the server's SID has no Unix id:
 * then uid/gid) and st_rdev are the server's.  Without them directories
 * get S_IFDIR | dir_mode, everything else S_IFREG | file_mode
 * with the write bits cleared when FILE_ATTRIBUTE_READONLY is set, and
 * the owner is uid/gid.  Size is
 * end_of_file, st_blocks allocation_size / 512, times from the NT times,
 * st_nlink from the server or 2 (directories) / 1 (files) when unknown. */
void smb_attr_to_stat(const struct smb_attr *a, const struct smb_stat_policy *p, uint64_t ino,
                      struct stat *st);

#endif
