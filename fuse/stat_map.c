/* fuse/stat_map.c — SMB attributes -> struct stat. */
#include "fuse/stat_map.h"

#include <string.h>
#include <time.h>

#include "client/proto/smb2.h"

void smb_attr_to_stat(const struct smb_attr *a, const struct smb_stat_policy *p, uint64_t ino,
                      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)ino;
	if (a->symlink) {
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
	} else if (a->file_attributes & FILE_ATTRIBUTE_DIRECTORY) {
		st->st_mode = S_IFDIR | (p->dir_mode & 07777);
		st->st_nlink = a->nlink ? a->nlink : 2;
	} else {
		st->st_mode = S_IFREG | (p->file_mode & 07777);
		/* Like cifs.ko: READONLY means no one may write, whatever
		 * file_mode says. */
		if (a->file_attributes & FILE_ATTRIBUTE_READONLY)
			st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
		st->st_nlink = a->nlink ? a->nlink : 1;
	}
	st->st_uid = p->uid;
	st->st_gid = p->gid;
	st->st_size = (off_t)a->end_of_file;
	st->st_blocks = (blkcnt_t)(a->allocation_size / 512);
	st->st_blksize = SMB_STAT_BLKSIZE;
	smb_nttime_to_timespec(a->last_access_time, &st->st_atim);
	smb_nttime_to_timespec(a->last_write_time, &st->st_mtim);
	smb_nttime_to_timespec(a->change_time, &st->st_ctim);
}
