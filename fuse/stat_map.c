/* fuse/stat_map.c — SMB attributes -> struct stat. */
#include "fuse/stat_map.h"

#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

/* The server's owner and group (SMB3 POSIX), where they have Unix ids. */
static void posix_ids(const struct smb_attr *a, const struct smb_stat_policy *p, struct stat *st)
{
	st->st_uid = !p->force_uid && a->uid != SMB2_POSIX_ID_NONE ? (uid_t)a->uid : p->uid;
	st->st_gid = !p->force_gid && a->gid != SMB2_POSIX_ID_NONE ? (gid_t)a->gid : p->gid;
}

/* The server's view of type, mode, owner and device (SMB3 POSIX). */
static void posix_to_stat(const struct smb_attr *a, const struct smb_stat_policy *p,
                          struct stat *st)
{
	st->st_mode = (mode_t)a->mode;
	if (!(st->st_mode & S_IFMT))
		st->st_mode |= S_IFREG;
	st->st_nlink = a->nlink ? a->nlink : S_ISDIR(st->st_mode) ? 2 : 1;
	posix_ids(a, p, st);
	/* the Linux kernel's own dev_t (SMB_ATTR_RDEV) */
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		st->st_rdev = makedev(a->rdev >> 20, a->rdev & 0xfffff);
}

void smb_attr_to_stat(const struct smb_attr *a, const struct smb_stat_policy *p, uint64_t ino,
                      struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)ino;
	st->st_uid = p->uid;
	st->st_gid = p->gid;
	if (a->symlink) {
		/* an mfsymlink: a link to the kernel, a file on the server */
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		if (a->posix)
			posix_ids(a, p, st);
	} else if (a->posix) {
		posix_to_stat(a, p, st);
	} else if (a->file_attributes & FILE_ATTRIBUTE_DIRECTORY) {
		st->st_mode = S_IFDIR | (p->dir_mode & 07777);
		/* Samba and Windows count a directory's links as 1 ("not
		 * counted", as btrfs, which find(1) takes as such), and a
		 * listing carries no count: 1 for both, so that a listing
		 * and a stat agree. */
		st->st_nlink = a->nlink ? a->nlink : 1;
	} else {
		st->st_mode = S_IFREG | (p->file_mode & 07777);
		/* Like cifs.ko: READONLY means no one may write, whatever
		 * file_mode says. */
		if (a->file_attributes & FILE_ATTRIBUTE_READONLY)
			st->st_mode &= ~(mode_t)(S_IWUSR | S_IWGRP | S_IWOTH);
		st->st_nlink = a->nlink ? a->nlink : 1;
	}
	st->st_size = (off_t)a->end_of_file;
	st->st_blocks = (blkcnt_t)(a->allocation_size / 512);
	st->st_blksize = SMB_STAT_BLKSIZE;
	smb_nttime_to_timespec(a->last_access_time, &st->st_atim);
	smb_nttime_to_timespec(a->last_write_time, &st->st_mtim);
	smb_nttime_to_timespec(a->change_time, &st->st_ctim);
}
