/* bench/passthrough.c — the FUSE ceiling for bench/run-bench.
 *
 *     passthrough-fs BACKING_DIR MOUNTPOINT [-f] [fuse options]
 *
 * A minimal libfuse3 high-level filesystem that forwards every operation to
 * BACKING_DIR (a tmpfs in the benchmark): whatever it costs above the tmpfs
 * figure is the price of FUSE itself on this kernel — request round trips
 * through /dev/fuse, libfuse's path lookup and thread pool — with no network
 * and no SMB.  It is a measuring stick, not a filesystem to use: no
 * permission checks of its own (root runs it), no xattrs, no locks, no links.
 *
 * It asks the kernel for what mount.smbrdma asks for (fuse/ops.c
 * smbfs_init()): async reads and async direct I/O, 1 MiB reads and writes,
 * no writeback cache, and the max_read=1048576 mount option the daemon
 * gives (main() adds it).  O_DIRECT is dropped on the backing file: the
 * backing tmpfs keeps its data in the page cache either way.
 *
 * Ownership: every open file's backing descriptor lives in fi->fh from
 * open/create until release, which closes it.  Threads: libfuse's
 * multi-threaded loop calls the operations concurrently; they share nothing
 * but the backing directory's descriptor, set before fuse_main() and only
 * read after.  Not installed; built by bench/meson.build.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FUSE_USE_VERSION 35
#include <fuse.h>

#define PT_MAX_IO (1u << 20)

/* The backing directory, opened once before fuse_main(); read-only after. */
static int backing_fd = -1;

/* FUSE hands us "/a/b"; *at() calls want it relative to backing_fd. */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static int neg_errno(int rc)
{
	return rc < 0 ? -errno : rc;
}

static void *pt_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* must equal the max_read= that main() adds to the mount options */
	conn->max_read = PT_MAX_IO;
	if (conn->max_write > PT_MAX_IO)
		conn->max_write = PT_MAX_IO;
	if (conn->max_readahead > PT_MAX_IO)
		conn->max_readahead = PT_MAX_IO;
	cfg->use_ino = 1;
	/* unlink really unlinks: FUSE_RELEASE comes after close(2) returns,
	 * and a name hidden as .fuse_hidden* would fail the rmdir after a
	 * create+unlink loop */
	cfg->hard_remove = 1;
	/* the path is enough for every call; libfuse may pass NULL then */
	cfg->nullpath_ok = 1;
	return NULL;
}

static int pt_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(fstat((int)fi->fh, st));
	return neg_errno(fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int pt_open_flags(int flags)
{
	return flags & ~O_DIRECT;
}

static int pt_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), pt_open_flags(fi->flags) | O_CREAT, mode);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int pt_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), pt_open_flags(fi->flags));
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int pt_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int pt_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	ssize_t n = pwrite((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int pt_release(const char *path, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	return 0;
}

static int pt_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return neg_errno(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static int pt_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(ftruncate((int)fi->fh, size));
	int fd = openat(backing_fd, rel(path), O_WRONLY);
	if (fd < 0)
		return -errno;
	int rc = neg_errno(ftruncate(fd, size));
	close(fd);
	return rc;
}

static int pt_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	return neg_errno(fallocate((int)fi->fh, mode, off, len));
}

static int pt_unlink(const char *path)
{
	return neg_errno(unlinkat(backing_fd, rel(path), 0));
}

static int pt_mkdir(const char *path, mode_t mode)
{
	return neg_errno(mkdirat(backing_fd, rel(path), mode));
}

static int pt_rmdir(const char *path)
{
	return neg_errno(unlinkat(backing_fd, rel(path), AT_REMOVEDIR));
}

static int pt_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags)
		return -EINVAL;
	return neg_errno(renameat(backing_fd, rel(from), backing_fd, rel(to)));
}

static int pt_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(futimens((int)fi->fh, tv));
	return neg_errno(utimensat(backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int pt_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (fi)
		return neg_errno(fchmod((int)fi->fh, mode));
	return neg_errno(fchmodat(backing_fd, rel(path), mode, 0));
}

static int pt_statfs(const char *path, struct statvfs *sv)
{
	return neg_errno(fstatvfs(backing_fd, sv));
}

/* A directory's stream lives in fi->fh from opendir until releasedir
 * (readdir may get no path: nullpath_ok). */
static int pt_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return -err;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

/* Every entry in one call (offset 0: libfuse keeps the listing and answers
 * the kernel's later reads from it); with READDIR_PLUS their attributes
 * too, so ls -l costs no LOOKUP per entry. */
static int pt_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)path;
	(void)off;
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	bool plus = flags & FUSE_READDIR_PLUS;
	struct dirent *de;
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		struct stat st = {.st_ino = de->d_ino, .st_mode = (mode_t)DTTOIF(de->d_type)};
		bool attrs = plus && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (fill(buf, de->d_name, &st, 0, attrs ? FUSE_FILL_DIR_PLUS : 0))
			break;
	}
	return 0;
}

static int pt_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static const struct fuse_operations pt_ops = {
    .init = pt_init,
    .getattr = pt_getattr,
    .create = pt_create,
    .open = pt_open,
    .read = pt_read,
    .write = pt_write,
    .release = pt_release,
    .fsync = pt_fsync,
    .truncate = pt_truncate,
    .fallocate = pt_fallocate,
    .unlink = pt_unlink,
    .mkdir = pt_mkdir,
    .rmdir = pt_rmdir,
    .rename = pt_rename,
    .utimens = pt_utimens,
    .chmod = pt_chmod,
    .statfs = pt_statfs,
    .opendir = pt_opendir,
    .readdir = pt_readdir,
    .releasedir = pt_releasedir,
};

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s BACKING_DIR MOUNTPOINT [fuse options]\n", argv[0]);
		return 2;
	}
	backing_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (backing_fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	/* fuse_main() sees argv without BACKING_DIR, plus max_read= */
	char max_read[32];
	snprintf(max_read, sizeof(max_read), "-omax_read=%u", PT_MAX_IO);
	char **fargv = calloc((size_t)argc + 1, sizeof(*fargv));
	if (!fargv)
		return 1;
	fargv[0] = argv[0];
	for (int i = 2; i < argc; i++)
		fargv[i - 1] = argv[i];
	fargv[argc - 1] = max_read;
	int rc = fuse_main(argc, fargv, &pt_ops, NULL);
	free(fargv);
	close(backing_fd);
	return rc;
}
