/* tests/unit/fuse/fake_client.c — a stand-in for the engine of client.h,
 * serving a local directory, so the FUSE daemon can be mounted and driven
 * by the tests without a server.
 *
 * It keeps the contract that matters to fuse/ (client.h): every call either
 * fails at once or returns 0 and calls back exactly once, later, on the
 * event-loop thread smb_client_loop() hands fuse/ (which serves the FUSE
 * requests there and locks nothing of its own on that account); its worker
 * thread takes the jobs in order and runs each there (the file operation
 * and the callback); smb_client_destroy() fails what is still queued with
 * -ECONNABORTED.  The directory is $SMBRDMA_FAKE_ROOT; the password "wrong"
 * fails the logon and the host "unreachable" fails the connection, with the
 * engine's kind of message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include "common/evloop.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "client/client.h"

enum fake_op {
	OP_STAT,
	OP_OPEN,
	OP_CLOSE,
	OP_MKDIR,
	OP_UNLINK,
	OP_RENAME,
	OP_SETATTR,
	OP_STATFS,
	OP_FSTAT,
	OP_READ,
	OP_WRITE,
	OP_FLUSH,
	OP_READDIR,
};

struct job {
	enum fake_op op;
	char *path, *path2;
	struct smb2_fileid fid;
	bool has_fid, flag;
	struct smb_open_args open;
	struct smb_setattr_args set;
	uint64_t offset;
	size_t len;
	void *data;
	void *cb;
	void *arg;
	struct job *next;
};

#define MAX_FDS 4096

struct smb_client {
	char *root;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, **tail;
	bool stop;
	DIR *dirs[MAX_FDS];     /* by fd, for readdir; loop thread only */
	struct ev_loop *evloop; /* what smb_client_loop() hands fuse/ */
};

static uint32_t errno_to_status(int e)
{
	switch (e) {
	case 0:
		return STATUS_SUCCESS;
	case ENOENT:
		return STATUS_OBJECT_NAME_NOT_FOUND;
	case EEXIST:
		return STATUS_OBJECT_NAME_COLLISION;
	case EACCES:
	case EPERM:
		return STATUS_ACCESS_DENIED;
	case ENOTEMPTY:
		return STATUS_DIRECTORY_NOT_EMPTY;
	case ENOTDIR:
		return STATUS_NOT_A_DIRECTORY;
	case EISDIR:
		return STATUS_FILE_IS_A_DIRECTORY;
	case ENOSPC:
		return STATUS_DISK_FULL;
	case EBADF:
		return STATUS_INVALID_HANDLE;
	default:
		return STATUS_UNSUCCESSFUL;
	}
}

static char *full_path(struct smb_client *c, const char *path)
{
	char *p;

	if (asprintf(&p, "%s/%s", c->root, path) < 0)
		return NULL;
	return p;
}

static void to_attr(const struct stat *st, struct smb_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->file_id = st->st_ino;
	a->creation_time = smb_timespec_to_nttime(&st->st_ctim);
	a->last_access_time = smb_timespec_to_nttime(&st->st_atim);
	a->last_write_time = smb_timespec_to_nttime(&st->st_mtim);
	a->change_time = smb_timespec_to_nttime(&st->st_ctim);
	a->end_of_file = (uint64_t)st->st_size;
	a->allocation_size = (uint64_t)st->st_blocks * 512;
	if (S_ISDIR(st->st_mode))
		a->file_attributes = FILE_ATTRIBUTE_DIRECTORY;
	else
		a->file_attributes = FILE_ATTRIBUTE_ARCHIVE;
	if (!(st->st_mode & S_IWUSR))
		a->file_attributes |= FILE_ATTRIBUTE_READONLY;
	a->nlink = (uint32_t)st->st_nlink;
}

static int fid_fd(struct smb2_fileid fid)
{
	return (int)fid.persistent;
}

static int apply_setattr(int fd, const char *path, const struct smb_setattr_args *s)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};

	if (s->which & SMB_SET_SIZE) {
		if ((fd >= 0 ? ftruncate(fd, (off_t)s->size) : truncate(path, (off_t)s->size)) < 0)
			return errno;
	}
	if (s->which & SMB_SET_ATIME)
		smb_nttime_to_timespec(s->atime, &ts[0]);
	if (s->which & SMB_SET_MTIME)
		smb_nttime_to_timespec(s->mtime, &ts[1]);
	if (s->which & (SMB_SET_ATIME | SMB_SET_MTIME)) {
		if ((fd >= 0 ? futimens(fd, ts) : utimensat(AT_FDCWD, path, ts, 0)) < 0)
			return errno;
	}
	if (s->which & SMB_SET_ATTRIBUTES) {
		struct stat st;
		if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) < 0)
			return errno;
		mode_t m = st.st_mode & 07777;
		m = (s->file_attributes & FILE_ATTRIBUTE_READONLY) ? (m & ~0222u) : (m | 0200);
		if ((fd >= 0 ? fchmod(fd, m) : chmod(path, m)) < 0)
			return errno;
	}
	return 0;
}

/* Long for a reason: one case per engine call the fake serves, each a few
 * lines against the local directory. */
static void run_job(struct smb_client *c, struct job *j, int fail)
{
	char *p = j->path ? full_path(c, j->path) : NULL;
	struct stat st;
	struct smb_attr attr;
	int e = 0, fd = -1;

	if (fail) {
		switch (j->op) {
		case OP_STAT:
		case OP_MKDIR:
		case OP_SETATTR:
		case OP_FSTAT:
			((smb_attr_cb)j->cb)(j->arg, fail, 0, NULL);
			break;
		case OP_OPEN:
			((smb_open_cb)j->cb)(j->arg, fail, 0, (struct smb2_fileid){0}, NULL);
			break;
		case OP_STATFS:
			((smb_fsinfo_cb)j->cb)(j->arg, fail, 0, NULL);
			break;
		case OP_READ:
			((smb_read_cb)j->cb)(j->arg, fail, 0, NULL, 0);
			break;
		case OP_WRITE:
			((smb_write_cb)j->cb)(j->arg, fail, 0, 0);
			break;
		case OP_READDIR:
			((smb_dir_cb)j->cb)(j->arg, fail, 0, NULL, 0);
			break;
		default:
			((smb_status_cb)j->cb)(j->arg, fail, 0);
		}
		goto out;
	}
	switch (j->op) {
	case OP_STAT:
		e = lstat(p, &st) < 0 ? errno : 0;
		if (!e)
			to_attr(&st, &attr);
		((smb_attr_cb)j->cb)(j->arg, 0, errno_to_status(e), e ? NULL : &attr);
		break;
	case OP_FSTAT:
		e = fstat(fid_fd(j->fid), &st) < 0 ? errno : 0;
		if (!e)
			to_attr(&st, &attr);
		((smb_attr_cb)j->cb)(j->arg, 0, errno_to_status(e), e ? NULL : &attr);
		break;
	case OP_OPEN: {
		const struct smb_open_args *o = &j->open;
		int flags = O_CLOEXEC | O_NOFOLLOW;
		bool rd = o->desired_access & (GENERIC_READ | FILE_READ_DATA | GENERIC_ALL);
		bool wr = o->desired_access & (GENERIC_WRITE | FILE_WRITE_DATA | GENERIC_ALL);
		if (o->create_options & FILE_DIRECTORY_FILE)
			flags |= O_DIRECTORY | O_RDONLY;
		else
			flags |= wr ? (rd ? O_RDWR : O_WRONLY) : O_RDONLY;
		switch (o->create_disposition) {
		case FILE_CREATE:
			flags |= O_CREAT | O_EXCL;
			break;
		case FILE_OPEN_IF:
			flags |= O_CREAT;
			break;
		case FILE_OVERWRITE_IF:
		case FILE_SUPERSEDE:
			flags |= O_CREAT | O_TRUNC;
			break;
		case FILE_OVERWRITE:
			flags |= O_TRUNC;
			break;
		}
		mode_t mode = (o->file_attributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0644;
		e = 0;
		if ((o->create_options & FILE_DIRECTORY_FILE) && (flags & O_CREAT)) {
			/* a directory made open (smbfs_mkdir): open(2) cannot */
			if (mkdir(p, 0755) < 0 && (errno != EEXIST || (flags & O_EXCL)))
				e = errno;
			flags &= ~(O_CREAT | O_EXCL | O_TRUNC);
		}
		fd = e ? -1 : open(p, flags, mode);
		e = e ? e : fd < 0 ? errno : 0;
		if (!e && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    (o->create_options & FILE_NON_DIRECTORY_FILE)) {
			close(fd);
			e = EISDIR;
		}
		if (!e && fd >= MAX_FDS) {
			close(fd);
			e = EMFILE;
		}
		if (!e)
			to_attr(&st, &attr);
		struct smb2_fileid fid = {(uint64_t)fd, (uint64_t)fd};
		((smb_open_cb)j->cb)(j->arg, 0, errno_to_status(e), fid, e ? NULL : &attr);
		break;
	}
	case OP_CLOSE:
		fd = fid_fd(j->fid);
		if (fd >= 0 && fd < MAX_FDS && c->dirs[fd]) {
			closedir(c->dirs[fd]);
			c->dirs[fd] = NULL;
		}
		e = close(fd) < 0 ? errno : 0;
		((smb_status_cb)j->cb)(j->arg, 0, errno_to_status(e));
		break;
	case OP_MKDIR:
		e = mkdir(p, 0755) < 0 ? errno : 0;
		if (!e && lstat(p, &st) < 0)
			e = errno;
		if (!e)
			to_attr(&st, &attr);
		((smb_attr_cb)j->cb)(j->arg, 0, errno_to_status(e), e ? NULL : &attr);
		break;
	case OP_UNLINK:
		/* like Samba: no deleting a READONLY (here: 0444) file */
		if (!j->flag && lstat(p, &st) == 0 && !(st.st_mode & S_IWUSR)) {
			((smb_status_cb)j->cb)(j->arg, 0, STATUS_CANNOT_DELETE);
			break;
		}
		e = (j->flag ? rmdir(p) : unlink(p)) < 0 ? errno : 0;
		((smb_status_cb)j->cb)(j->arg, 0, errno_to_status(e));
		break;
	case OP_RENAME: {
		char *q = full_path(c, j->path2);
		e = renameat2(AT_FDCWD, p, AT_FDCWD, q, j->flag ? 0 : RENAME_NOREPLACE) < 0 ? errno
		                                                                            : 0;
		free(q);
		((smb_status_cb)j->cb)(j->arg, 0, errno_to_status(e));
		break;
	}
	case OP_SETATTR:
		fd = j->has_fid ? fid_fd(j->fid) : -1;
		e = apply_setattr(fd, p, &j->set);
		if (!e && (fd >= 0 ? fstat(fd, &st) : lstat(p, &st)) < 0)
			e = errno;
		if (!e)
			to_attr(&st, &attr);
		((smb_attr_cb)j->cb)(j->arg, 0, errno_to_status(e), e ? NULL : &attr);
		break;
	case OP_STATFS: {
		struct statvfs sv;
		struct smb_fsinfo fi = {0};
		e = statvfs(c->root, &sv) < 0 ? errno : 0;
		fi.bytes_per_unit = (uint32_t)sv.f_frsize;
		fi.total_units = sv.f_blocks;
		fi.free_units = sv.f_bfree;
		fi.avail_units = sv.f_bavail;
		((smb_fsinfo_cb)j->cb)(j->arg, 0, errno_to_status(e), e ? NULL : &fi);
		break;
	}
	case OP_READ: {
		void *buf = malloc(j->len ? j->len : 1);
		ssize_t n = buf ? pread(fid_fd(j->fid), buf, j->len, (off_t)j->offset) : -1;
		e = n < 0 ? (buf ? errno : ENOMEM) : 0;
		((smb_read_cb)j->cb)(j->arg, 0, errno_to_status(e), buf, n < 0 ? 0 : (size_t)n);
		free(buf);
		break;
	}
	case OP_WRITE: {
		ssize_t n = pwrite(fid_fd(j->fid), j->data, j->len, (off_t)j->offset);
		e = n < 0 ? errno : 0;
		if (!e && j->set.which) /* smb_write_times() */
			e = apply_setattr(fid_fd(j->fid), NULL, &j->set);
		((smb_write_cb)j->cb)(j->arg, 0, errno_to_status(e), n < 0 ? 0 : (size_t)n);
		break;
	}
	case OP_FLUSH:
		e = fsync(fid_fd(j->fid)) < 0 ? errno : 0;
		((smb_status_cb)j->cb)(j->arg, 0, errno_to_status(e));
		break;
	case OP_READDIR: {
		fd = fid_fd(j->fid);
		DIR *d = fd >= 0 && fd < MAX_FDS ? c->dirs[fd] : NULL;
		if (!d && fd >= 0 && fd < MAX_FDS) {
			int dfd = dup(fd);
			d = dfd >= 0 ? fdopendir(dfd) : NULL;
			c->dirs[fd] = d;
		}
		if (!d) {
			((smb_dir_cb)j->cb)(j->arg, 0, STATUS_INVALID_HANDLE, NULL, 0);
			break;
		}
		if (j->flag)
			rewinddir(d);
		/* a few entries per reply, to exercise the daemon's refetching */
		struct smb_dirent ents[7];
		char names[7][256];
		size_t n = 0;
		struct dirent *de;
		while (n < 7 && (de = readdir(d))) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			snprintf(names[n], sizeof(names[n]), "%s", de->d_name);
			ents[n].name = names[n];
			to_attr(&st, &ents[n].attr);
			n++;
		}
		((smb_dir_cb)j->cb)(j->arg, 0, n ? STATUS_SUCCESS : STATUS_NO_MORE_FILES, ents, n);
		break;
	}
	}
out:
	free(p);
	free(j->path);
	free(j->path2);
	free(j->data);
	free(j);
}

struct run {
	struct smb_client *c;
	struct job *j;
	int fail;
};

static void run_on_loop(void *arg)
{
	struct run *r = arg;
	run_job(r->c, r->j, r->fail);
}

static void *loop(void *arg)
{
	struct smb_client *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->head && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		struct job *j = c->head;
		if (!j)
			break;
		c->head = j->next;
		if (!c->head)
			c->tail = &c->head;
		bool stop = c->stop;
		pthread_mutex_unlock(&c->lock);
		struct run r = {c, j, stop ? -ECONNABORTED : 0};
		/* on the loop thread, as the engine calls back; a loop that
		 * is gone (teardown) runs no more jobs: fail it here */
		if (ev_call_wait(c->evloop, run_on_loop, &r) != 0)
			run_job(c, j, -ECONNABORTED);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int submit(struct smb_client *c, struct job *j)
{
	pthread_mutex_lock(&c->lock);
	if (c->stop) {
		pthread_mutex_unlock(&c->lock);
		free(j->path);
		free(j->path2);
		free(j->data);
		free(j);
		return -ECONNABORTED;
	}
	j->next = NULL;
	*c->tail = j;
	c->tail = &j->next;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static struct job *new_job(enum fake_op op, const char *path, void *cb, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->op = op;
	j->cb = cb;
	j->arg = arg;
	if (path && !(j->path = strdup(path))) {
		free(j);
		return NULL;
	}
	return j;
}

int smb_client_connect(const struct smb_client_opts *opts, struct smb_client **out, char *errbuf,
                       size_t errlen)
{
	const char *root = getenv("SMBRDMA_FAKE_ROOT");
	struct smb_client *c;

	if (strcmp(opts->host, "unreachable") == 0) {
		snprintf(errbuf, errlen, "connection refused by %s port %u", opts->host,
		         opts->port ? opts->port : 445);
		return -ECONNREFUSED;
	}
	if (opts->password && strcmp(opts->password, "wrong") == 0) {
		snprintf(errbuf, errlen,
		         "logon failure (STATUS_LOGON_FAILURE): wrong user name or password for %s",
		         opts->host);
		return -EACCES;
	}
	if (!root) {
		snprintf(errbuf, errlen, "SMBRDMA_FAKE_ROOT is not set");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->root = strdup(root))) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->tail = &c->head;
	if (ev_loop_new(&c->evloop) < 0) {
		free(c->root);
		free(c);
		return -ENOMEM;
	}
	pthread_create(&c->thread, NULL, loop, c);
	*out = c;
	return 0;
}

void smb_client_destroy(struct smb_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	ev_loop_free(c->evloop);
	for (int i = 0; i < MAX_FDS; i++)
		if (c->dirs[i])
			closedir(c->dirs[i]);
	free(c->root);
	free(c);
}

struct ev_loop *smb_client_loop(struct smb_client *c)
{
	return c->evloop;
}

/* One TCP channel that looks alive; counters are plausible, not measured. */
void smb_client_get_stats(struct smb_client *c, struct smb_client_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->dialect = SMB2_DIALECT_0311;
	out->nchannels = 1;
	struct smb_channel_stats *ch = &out->channels[0];
	snprintf(ch->transport, sizeof(ch->transport), "tcp");
	snprintf(ch->local, sizeof(ch->local), "127.0.0.1:40000");
	snprintf(ch->remote, sizeof(ch->remote), "127.0.0.1:445");
	snprintf(ch->state, sizeof(ch->state), "up");
	ch->requests = 1;
	ch->bytes_sent = 64;
	ch->bytes_received = 64;
	ch->credits = 512;
}

void smb_client_get_info(struct smb_client *c, struct smb_client_info *out)
{
	memset(out, 0, sizeof(*out));
	out->dialect = SMB2_DIALECT_0311;
	out->max_read = out->max_write = 1 << 20;
	out->share_type = SMB2_SHARE_TYPE_DISK;
}

int smb_client_reconnect_now(struct smb_client *c, const char *why)
{
	(void)c;
	(void)why;
	return 0; /* the fake has no channels to drop */
}

int smb_client_dfs_links(struct smb_client *c, struct smb_dfs_info *info,
                         struct smb_dfs_link_info *out, int max)
{
	(void)c, (void)info, (void)out, (void)max;
	return -ENOENT; /* a local directory is in no DFS namespace */
}

static int submit_or_enomem(struct smb_client *c, struct job *j)
{
	return j ? submit(c, j) : -ENOMEM;
}
#define SUBMIT(j) return submit_or_enomem(c, (j))

int smb_stat(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	SUBMIT(new_job(OP_STAT, path, (void *)cb, arg));
}

int smb_open(struct smb_client *c, const char *path, const struct smb_open_args *args,
             smb_open_cb cb, void *arg)
{
	struct job *j = new_job(OP_OPEN, path, (void *)cb, arg);

	if (j)
		j->open = *args;
	SUBMIT(j);
}

int smb_close(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	struct job *j = new_job(OP_CLOSE, NULL, (void *)cb, arg);

	if (j)
		j->fid = fid;
	SUBMIT(j);
}

/* One job per handle: the fake has no compounds (and nothing to save). */
int smb_close_batch(struct smb_client *c, const struct smb2_fileid *fids, const uint64_t *mtimes,
                    void *const *args, int n, smb_status_cb cb)
{
	if (n < 1 || smb_close_batch_pdus(mtimes, n) > SMB_CLOSE_BATCH_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		int rc = smb_close(c, fids[i], cb, args[i]);
		if (rc < 0) {
			/* the ones already queued run; this one and the rest fail */
			for (int k = i; k < n; k++)
				cb(args[k], rc, 0);
			return 0;
		}
	}
	return 0;
}

int smb_mkdir(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	SUBMIT(new_job(OP_MKDIR, path, (void *)cb, arg));
}

int smb_unlink(struct smb_client *c, const char *path, bool is_dir, smb_status_cb cb, void *arg)
{
	struct job *j = new_job(OP_UNLINK, path, (void *)cb, arg);

	if (j)
		j->flag = is_dir;
	SUBMIT(j);
}

/* No leases here: the parent's lease is nothing to keep. */
int smb_unlink_in(struct smb_client *c, const char *path, bool is_dir, uint64_t lease_id,
                  uint64_t parent_lease_id, smb_status_cb cb, void *arg)
{
	(void)lease_id;
	(void)parent_lease_id;
	return smb_unlink(c, path, is_dir, cb, arg);
}

int smb_rename(struct smb_client *c, const char *from, const char *to, bool replace,
               smb_status_cb cb, void *arg)
{
	struct job *j = new_job(OP_RENAME, from, (void *)cb, arg);

	if (j) {
		j->flag = replace;
		j->path2 = strdup(to);
		if (!j->path2) {
			free(j->path);
			free(j);
			j = NULL;
		}
	}
	SUBMIT(j);
}

int smb_setattr(struct smb_client *c, const char *path, const struct smb2_fileid *fid,
                const struct smb_setattr_args *args, smb_attr_cb cb, void *arg)
{
	struct job *j = new_job(OP_SETATTR, path, (void *)cb, arg);

	if (j) {
		j->set = *args;
		if (fid) {
			j->has_fid = true;
			j->fid = *fid;
		}
	}
	SUBMIT(j);
}

int smb_statfs(struct smb_client *c, smb_fsinfo_cb cb, void *arg)
{
	SUBMIT(new_job(OP_STATFS, NULL, (void *)cb, arg));
}

int smb_fstat(struct smb_client *c, struct smb2_fileid fid, smb_attr_cb cb, void *arg)
{
	struct job *j = new_job(OP_FSTAT, NULL, (void *)cb, arg);

	if (j)
		j->fid = fid;
	SUBMIT(j);
}

int smb_read(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, size_t len,
             smb_read_cb cb, void *arg)
{
	struct job *j = new_job(OP_READ, NULL, (void *)cb, arg);

	if (j) {
		j->fid = fid;
		j->offset = offset;
		j->len = len;
	}
	SUBMIT(j);
}

/* A WRITE, with new times after it when times is not NULL. */
static int write_job(struct smb_client *c, struct smb2_fileid fid, uint64_t offset,
                     const void *data, size_t len, const struct smb_setattr_args *times,
                     smb_write_cb cb, void *arg)
{
	struct job *j = new_job(OP_WRITE, NULL, (void *)cb, arg);

	if (j) {
		j->fid = fid;
		j->offset = offset;
		j->len = len;
		if (times)
			j->set = *times;
		j->data = malloc(len ? len : 1);
		if (!j->data) {
			free(j);
			return -ENOMEM;
		}
		memcpy(j->data, data, len);
	}
	SUBMIT(j);
}

int smb_write(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
              size_t len, smb_write_cb cb, void *arg)
{
	return write_job(c, fid, offset, data, len, NULL, cb, arg);
}

int smb_write_times(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                    size_t len, const struct smb_setattr_args *times, smb_write_cb cb, void *arg)
{
	return write_job(c, fid, offset, data, len, times, cb, arg);
}

/* No RDMA here: a lent write is an ordinary (copied) one. */
int smb_write_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, const void *data,
                   size_t len, smb_write_cb cb, void *arg)
{
	return smb_write(c, fid, offset, data, len, cb, arg);
}

/* The data in the engine's buffer, valid during cb: allowed by client.h
 * (the caller copies it); buf is not used. */
int smb_read_lent(struct smb_client *c, struct smb2_fileid fid, uint64_t offset, void *buf,
                  size_t len, smb_read_cb cb, void *arg)
{
	(void)buf;
	return smb_read(c, fid, offset, len, cb, arg);
}

int smb_client_region_add(struct smb_client *c, void *addr, size_t len)
{
	(void)c;
	(void)addr;
	(void)len;
	return -EOPNOTSUPP;
}

int smb_flush(struct smb_client *c, struct smb2_fileid fid, smb_status_cb cb, void *arg)
{
	struct job *j = new_job(OP_FLUSH, NULL, (void *)cb, arg);

	if (j)
		j->fid = fid;
	SUBMIT(j);
}

int smb_readdir(struct smb_client *c, struct smb2_fileid fid, bool restart, smb_dir_cb cb,
                void *arg)
{
	struct job *j = new_job(OP_READDIR, NULL, (void *)cb, arg);

	if (j) {
		j->fid = fid;
		j->flag = restart;
	}
	SUBMIT(j);
}

/* Not served by the fake: EAs, hard links, mfsymlinks (the integration
 * tests cover them against Samba).  fuse/ calls none of smb_fsctl,
 * smb_lock, smb_query_eas, smb_get_reparse, smb_get_small and
 * smb_put_small (it has the parsed-value calls of client/ops_fsctl.c), so
 * the fake defines none: the daemon would not link if it did. */

int smb_set_ea(struct smb_client *c, const char *path, const char *name, const void *value,
               size_t len, smb_status_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_create_file(struct smb_client *c, const char *path, smb_attr_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_create_in(struct smb_client *c, const char *path, bool dir, bool set_mode, uint32_t mode,
                  uint64_t lease_id, uint64_t parent_lease_id, smb_attr_cb cb, void *arg)
{
	(void)lease_id;
	(void)parent_lease_id;
	if (set_mode)
		return smb_create_mode(c, path, dir, mode, cb, arg);
	return dir ? smb_mkdir(c, path, cb, arg) : smb_create_file(c, path, cb, arg);
}

int smb_create_mode(struct smb_client *c, const char *path, bool dir, uint32_t mode, smb_attr_cb cb,
                    void *arg)
{
	return -EOPNOTSUPP;
}

int smb_link(struct smb_client *c, const char *from, const char *to, smb_status_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

/* Nor the calls of client/ops_fsctl.c. */
int smb_copy_range(struct smb_client *c, struct smb2_fileid src, uint64_t src_off,
                   struct smb2_fileid dst, uint64_t dst_off, uint64_t len, smb_copy_cb cb,
                   void *arg)
{
	return -EOPNOTSUPP;
}

int smb_zero_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   bool punch, smb_status_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_query_ranges(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                     smb_ranges_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_list_eas(struct smb_client *c, const char *path, const char *name, smb_eas_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_lock_range(struct smb_client *c, struct smb2_fileid fid, uint64_t off, uint64_t len,
                   uint32_t flags, smb_status_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_mfsymlink_create(struct smb_client *c, const char *path, const char *target,
                         smb_status_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_mfsymlink_read(struct smb_client *c, const char *path, smb_target_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_read_symlink(struct smb_client *c, const char *path, smb_target_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

int smb_read_rdev(struct smb_client *c, const char *path, smb_rdev_cb cb, void *arg)
{
	return -EOPNOTSUPP;
}

void smb_client_set_break_cb(struct smb_client *c, smb_break_cb cb, void *arg)
{
	/* the fake grants no oplocks and breaks none */
}

void smb_client_set_lock_lost_cb(struct smb_client *c, smb_lock_lost_cb cb, void *arg)
{
	/* the fake never reconnects */
}

bool smb_file_failed(struct smb_client *c, struct smb2_fileid fid)
{
	return false;
}

bool smb_client_leases_dirs(const struct smb_client *c)
{
	(void)c;
	return false; /* nor directory leases */
}

void smb_client_set_lease_break_cb(struct smb_client *c, smb_lease_break_cb cb, void *arg)
{
	/* nor leases */
}

void smb_lease_break_done(struct smb_lease_ack *ack)
{
}

void smb_lease_break_drop(struct smb_lease_ack *ack)
{
}
