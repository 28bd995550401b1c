/* fuse/ops.c — the fuse_lowlevel_ops table, init/destroy/statfs and the
 * helpers every op shares. */
#include "fuse/smbfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "client/proto/smb2_errno.h"

uint64_t smbfs_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t smbfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void smbfs_post_init(struct smbfs *fs)
{
	char kb[16];
	int fd, n;

	if (__atomic_load_n(&fs->post_init_done, __ATOMIC_ACQUIRE) ||
	    __atomic_exchange_n(&fs->post_init_done, true, __ATOMIC_ACQ_REL))
		return;
	if (!fs->readahead_knob[0])
		return;
	n = snprintf(kb, sizeof(kb), "%u", fs->readahead_kb);
	fd = open(fs->readahead_knob, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, kb, (size_t)n) != n)
		smb_debug("%s: cannot raise read-ahead in %s: %s", fs->source, fs->readahead_knob,
		          strerror(errno));
	if (fd >= 0)
		close(fd);
}

void smbfs_reply_status(fuse_req_t req, int err, uint32_t status)
{
	fuse_reply_err(req, smb_errno(err, status));
}

void smbfs_fill_entry(struct smbfs *fs, uint64_t nodeid, uint64_t st_ino,
                      const struct smb_attr *attr, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = nodeid;
	/* nodeids are never reused, so generation can stay 0. */
	e->attr_timeout = smbfs_attr_timeout(fs, nodeid);
	e->entry_timeout = fs->timeout;
	struct smb_attr a = *attr;
	a.nlink = smb_inode_nlink(fs->inodes, nodeid, attr->nlink);
	smb_attr_to_stat(&a, &fs->policy, st_ino, &e->attr);
	smbfs_wb_clamp_size(fs, nodeid, &e->attr);
}

int smbfs_check_name(const struct smbfs *fs, const char *name)
{
	size_t len = strlen(name);

	if (len > SMBFS_NAME_MAX)
		return -ENAMETOOLONG;
	/* '\\' is the separator on the wire: "a\\b" would name a path.  Not
	 * in the POSIX pathnames of the SMB3 POSIX extensions, where '/'
	 * separates (client/ops.c) and '\\' is a character of a name. */
	if (!fs->posix && strchr(name, '\\'))
		return -EINVAL;
	return 0;
}

static void enable_if_capable(struct fuse_conn_info *conn, unsigned cap)
{
	/* libfuse aborts the mount if we want what the kernel cannot do. */
	if (conn->capable & cap)
		conn->want |= cap;
}

static void smbfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct smbfs *fs = userdata;

	enable_if_capable(conn, FUSE_CAP_ASYNC_READ);
	enable_if_capable(conn, FUSE_CAP_READDIRPLUS);
	enable_if_capable(conn, FUSE_CAP_READDIRPLUS_AUTO);
	enable_if_capable(conn, FUSE_CAP_PARALLEL_DIROPS);
	enable_if_capable(conn, FUSE_CAP_ASYNC_DIO);
	enable_if_capable(conn, FUSE_CAP_ATOMIC_O_TRUNC);
	/* flock and POSIX locks go to the server (ops_lock.c); with nobrl the
	 * kernel keeps POSIX locks, per mount */
	enable_if_capable(conn, FUSE_CAP_FLOCK_LOCKS);
	if (fs->nobrl)
		conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS;
	else
		enable_if_capable(conn, FUSE_CAP_POSIX_LOCKS);
	/* FS_IOC_GETFLAGS on directories too (lsattr -d) */
	enable_if_capable(conn, FUSE_CAP_IOCTL_DIR);
	/* Another client may change the file behind our back: the kernel must
	 * not keep dirty pages we have not sent. */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;

	/* libfuse 3.14 sizes its buffer for 256 pages (FUSE_MAX_MAX_PAGES) and,
	 * when the kernel offers FUSE_MAX_PAGES, answers with max_pages derived
	 * from max_write; before init it has already clamped max_write to what
	 * the buffer holds (128 KiB on kernels without FUSE_MAX_PAGES). */
	if (conn->max_write > fs->max_write)
		conn->max_write = fs->max_write;
	/* Must equal the max_read= mount option given to fuse_session_new(). */
	conn->max_read = fs->max_read;
	/* The kernel offers its bdi read-ahead and keeps the smaller value;
	 * smbfs_post_init() raises the bdi's read_ahead_kb afterwards. */
	if (conn->max_readahead > SMBFS_MAX_IO)
		conn->max_readahead = SMBFS_MAX_IO;
	/* Write-only opens bypass the page cache (set_open_flags()) where a
	 * direct write drops the cached pages of its range first: 7.39 on. */
	fs->wronly_direct = conn->proto_major > 7 || conn->proto_minor >= 39;
	/* NT time has a 100 ns tick. */
	conn->time_gran = 100;
	smb_info("%s: FUSE %u.%u, max_write %u, max_readahead %u, want 0x%x", fs->source,
	         conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead,
	         conn->want);
}

static void smbfs_destroy(void *userdata)
{
	struct smbfs *fs = userdata;

	/* The client outlives the session loop and is torn down by main(),
	 * which also fails its pending requests; nothing to do here. */
	smb_debug("%s: FUSE session ends", fs->source);
}

static void statfs_done(void *arg, int err, uint32_t status, const struct smb_fsinfo *info)
{
	fuse_req_t req = arg;
	int e = smb_errno(err, status);
	struct statvfs st;

	if (e) {
		fuse_reply_err(req, e);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = info->bytes_per_unit ? info->bytes_per_unit : 4096;
	st.f_frsize = st.f_bsize;
	st.f_blocks = info->total_units;
	st.f_bfree = info->free_units;
	st.f_bavail = info->avail_units;
	st.f_namemax = SMBFS_NAME_MAX;
	fuse_reply_statfs(req, &st);
}

void smbfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	int rc;

	smbfs_post_init(smbfs_of(req));
	rc = smb_statfs(smbfs_of(req)->client, statfs_done, req);

	if (rc < 0)
		fuse_reply_err(req, -rc);
}

const struct fuse_lowlevel_ops smbfs_ops = {
    .init = smbfs_init,
    .destroy = smbfs_destroy,
    .lookup = smbfs_lookup,
    .forget = smbfs_forget,
    .forget_multi = smbfs_forget_multi,
    .getattr = smbfs_getattr,
    .setattr = smbfs_setattr,
    .mkdir = smbfs_mkdir,
    .unlink = smbfs_unlink,
    .rmdir = smbfs_rmdir,
    .rename = smbfs_rename,
    .open = smbfs_open,
    .create = smbfs_create,
    .read = smbfs_read,
    .write = smbfs_write,
    .flush = smbfs_flush,
    .fsync = smbfs_fsync,
    .release = smbfs_release,
    .opendir = smbfs_opendir,
    .readdir = smbfs_readdir,
    .readdirplus = smbfs_readdirplus,
    .releasedir = smbfs_releasedir,
    .statfs = smbfs_statfs,
    .symlink = smbfs_symlink,
    .mknod = smbfs_mknod,
    .readlink = smbfs_readlink,
    .link = smbfs_link,
    .setxattr = smbfs_setxattr,
    .getxattr = smbfs_getxattr,
    .listxattr = smbfs_listxattr,
    .removexattr = smbfs_removexattr,
    .copy_file_range = smbfs_copy_file_range,
    .fallocate = smbfs_fallocate,
    .lseek = smbfs_lseek,
    .flock = smbfs_flock,
    .getlk = smbfs_getlk,
    .setlk = smbfs_setlk,
    .access = smbfs_access,
    .fsyncdir = smbfs_fsyncdir,
    .ioctl = smbfs_ioctl,
};
