/* lib/smbrdma.c — the public API of smbrdma.h over the engine (client/client.h).
 *
 * Synchronous calls submit an engine operation and wait on a struct wait
 * (mutex + condition variable) that the completion, on the loop thread,
 * fills in and signals.  Asynchronous I/O goes to smb_read_lent() /
 * smb_write_lent(), which use the caller's buffer in place when it lies in a
 * registered region and the I/O can be offloaded; a read answered in another
 * buffer is copied into the caller's (and counted as copied).
 */
#include "smbrdma.h"

#include "client/client.h"
#include "common/evloop.h"
#include "config.h"
#include "client/proto/smb2_errno.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct smbrdma {
	struct smb_client *c;
	pthread_mutex_t lock; /* protects files */
	struct smbrdma_file *files;
	uint64_t copied; /* read bytes copied here into callers' buffers (atomic) */
};

struct smbrdma_file {
	struct smbrdma *s;
	struct smb2_fileid fid;
	struct smbrdma_file *prev, *next; /* in s->files, under s->lock */
};

/* ---- waiting for one completion ---------------------------------------------- */

struct wait {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool done;
	int err; /* -errno, from err or the NT status */
	/* what the operation returned */
	struct smb_attr attr;
	struct smb2_fileid fid;
	size_t n;
};

static void wait_init(struct wait *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cv, NULL);
}

static void wait_signal(struct wait *w, int err, uint32_t status)
{
	pthread_mutex_lock(&w->lock);
	w->err = err ? err : status == STATUS_SUCCESS ? 0 : -smb_status_to_errno(status);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

/* rc: what the submitting call returned; nonzero means no callback comes. */
static int wait_for(struct wait *w, int rc)
{
	if (!rc) {
		pthread_mutex_lock(&w->lock);
		while (!w->done)
			pthread_cond_wait(&w->cv, &w->lock);
		pthread_mutex_unlock(&w->lock);
		rc = w->err;
	}
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->lock);
	return rc;
}

static bool on_loop(struct smbrdma *s)
{
	return ev_on_loop_thread(smb_client_loop(s->c));
}

static void status_done(void *arg, int err, uint32_t status)
{
	wait_signal(arg, err, status);
}

static void attr_done(void *arg, int err, uint32_t status, const struct smb_attr *attr)
{
	struct wait *w = arg;
	if (!err && status == STATUS_SUCCESS && attr)
		w->attr = *attr;
	wait_signal(w, err, status);
}

static void open_done(void *arg, int err, uint32_t status, struct smb2_fileid fid,
                      const struct smb_attr *attr)
{
	struct wait *w = arg;
	if (!err && status == STATUS_SUCCESS) {
		w->fid = fid;
		if (attr)
			w->attr = *attr;
	}
	wait_signal(w, err, status);
}

/* ---- connection ------------------------------------------------------------ */

void smbrdma_params_init_(struct smbrdma_params *p, size_t size)
{
	memset(p, 0, size);
	p->struct_size = size;
}

const char *smbrdma_version(void)
{
	return SMBRDMA_VERSION;
}

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

int smbrdma_connect(const struct smbrdma_params *caller, struct smbrdma **out, char *err,
                    size_t errlen)
{
	struct smbrdma_params p;
	smbrdma_params_init(&p);
	if (!caller || !out || caller->struct_size < offsetof(struct smbrdma_params, interfaces)) {
		set_err(err, errlen,
		        "smbrdma_connect: parameters not set up by smbrdma_params_init()");
		return -EINVAL;
	}
	memcpy(&p, caller, caller->struct_size < sizeof(p) ? caller->struct_size : sizeof(p));
	if (!p.server || !*p.server || !p.share || !*p.share) {
		set_err(err, errlen, "smbrdma_connect: server and share are required");
		return -EINVAL;
	}
	if (p.port > 65535 || p.max_channels > SMB_CLIENT_MAX_CHANNELS) {
		set_err(err, errlen, "smbrdma_connect: port or max_channels out of range");
		return -EINVAL;
	}
	struct smb_client_opts o = {
	    .host = p.server,
	    .port = (uint16_t)p.port,
	    .share = p.share,
	    .user = p.user ? p.user : "",
	    .password = p.password ? p.password : "",
	    .domain = p.domain,
	    .min_dialect = p.min_dialect,
	    .max_dialect = p.max_dialect,
	    .guest = p.flags & SMBRDMA_F_GUEST,
	    .require_signing = p.flags & SMBRDMA_F_SIGN,
	    .require_encryption = p.flags & SMBRDMA_F_SEAL,
	    .sec = p.sec == SMBRDMA_SEC_KRB5 ? SMB_SEC_KRB5 : SMB_SEC_NTLMSSP,
	    .keytab = p.keytab,
	    .timeout_ms = p.timeout_ms,
	    .rdma = p.flags & SMBRDMA_F_RDMA,
	    .rdma_threshold = p.rdma_threshold,
	    .multichannel = p.flags & SMBRDMA_F_MULTICHANNEL,
	    .max_channels = p.max_channels,
	    .mc_interfaces = p.interfaces,
	};
	struct smbrdma *s = calloc(1, sizeof(*s));
	if (!s) {
		set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	char buf[512] = "";
	int rc = smb_client_connect(&o, &s->c, buf, sizeof(buf));
	if (rc) {
		set_err(err, errlen, buf[0] ? buf : strerror(-rc));
		free(s);
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

void smbrdma_disconnect(struct smbrdma *s)
{
	if (!s)
		return;
	while (s->files)
		smbrdma_close(s->files);
	smb_client_destroy(s->c);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void smbrdma_get_info(struct smbrdma *s, struct smbrdma_info *out)
{
	struct smb_client_info info;
	struct smb_client_stats *st = malloc(sizeof(*st));
	memset(out, 0, sizeof(*out));
	smb_client_get_info(s->c, &info);
	out->dialect = info.dialect;
	out->signing = info.signing;
	out->encryption = info.encryption;
	out->max_read = info.max_read;
	out->max_write = info.max_write;
	if (!st)
		return;
	smb_client_get_stats(s->c, st);
	for (int i = 0; i < st->nchannels; i++) {
		const struct smb_channel_stats *ch = &st->channels[i];
		bool up = strcmp(ch->state, "up") == 0;
		out->channels += up;
		out->rdma_channels += up && strcmp(ch->transport, "rdma") == 0;
		out->rdma_bytes += ch->rdma_read_bytes + ch->rdma_write_bytes;
		out->inline_bytes += ch->bytes_sent + ch->bytes_received;
		out->requests += ch->requests;
	}
	out->copied_bytes =
	    st->payload_bytes_copied + __atomic_load_n(&s->copied, __ATOMIC_RELAXED);
	free(st);
}

int smbrdma_register(struct smbrdma *s, void *buf, size_t len)
{
	return smb_client_region_add(s->c, buf, len);
}

/* ---- files ------------------------------------------------------------------ */

static void open_args_for(int flags, struct smb_open_args *a)
{
	memset(a, 0, sizeof(*a));
	if (flags & O_DIRECTORY) {
		a->desired_access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES;
		a->create_options = FILE_DIRECTORY_FILE;
	} else {
		int acc = flags & O_ACCMODE;
		a->desired_access = acc == O_RDONLY   ? GENERIC_READ
		                    : acc == O_WRONLY ? GENERIC_WRITE | FILE_READ_ATTRIBUTES
		                                      : GENERIC_READ | GENERIC_WRITE;
		a->create_options = FILE_NON_DIRECTORY_FILE;
	}
	if ((flags & O_CREAT) && (flags & O_EXCL))
		a->create_disposition = FILE_CREATE;
	else if ((flags & O_CREAT) && (flags & O_TRUNC))
		a->create_disposition = FILE_OVERWRITE_IF;
	else if (flags & O_CREAT)
		a->create_disposition = FILE_OPEN_IF;
	else if (flags & O_TRUNC)
		a->create_disposition = FILE_OVERWRITE;
	else
		a->create_disposition = FILE_OPEN;
}

int smbrdma_open(struct smbrdma *s, const char *path, int flags, struct smbrdma_file **out)
{
	if (on_loop(s))
		return -EDEADLK;
	if ((flags & O_DIRECTORY) && (flags & (O_ACCMODE | O_TRUNC)))
		return -EINVAL;
	struct smbrdma_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	struct smb_open_args a;
	open_args_for(flags, &a);
	struct wait w;
	wait_init(&w);
	int rc = wait_for(&w, smb_open(s->c, path, &a, open_done, &w));
	if (rc) {
		free(f);
		return rc;
	}
	f->s = s;
	f->fid = w.fid;
	pthread_mutex_lock(&s->lock);
	f->next = s->files;
	if (s->files)
		s->files->prev = f;
	s->files = f;
	pthread_mutex_unlock(&s->lock);
	*out = f;
	return 0;
}

int smbrdma_close(struct smbrdma_file *f)
{
	struct smbrdma *s = f->s;
	if (on_loop(s))
		return -EDEADLK;
	pthread_mutex_lock(&s->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		s->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&s->lock);
	struct wait w;
	wait_init(&w);
	int rc = wait_for(&w, smb_close(s->c, f->fid, status_done, &w));
	free(f);
	return rc;
}

/* ---- I/O ---------------------------------------------------------------------- */

struct io {
	smbrdma_io_cb cb;
	void *arg;
	void *buf;         /* reads: the caller's buffer */
	struct smbrdma *s; /* reads: for the copy count */
};

static void read_done(void *arg, int err, uint32_t status, const void *data, size_t len)
{
	struct io *io = arg;
	ssize_t res;
	if (err)
		res = err;
	else if (status != STATUS_SUCCESS)
		res = -smb_status_to_errno(status);
	else {
		if (len && data != io->buf) {
			memcpy(io->buf, data, len);
			__atomic_add_fetch(&io->s->copied, len, __ATOMIC_RELAXED);
		}
		res = (ssize_t)len;
	}
	smbrdma_io_cb cb = io->cb;
	void *cbarg = io->arg;
	free(io);
	cb(cbarg, res);
}

static void write_done(void *arg, int err, uint32_t status, size_t written)
{
	struct io *io = arg;
	ssize_t res = err                        ? err
	              : status != STATUS_SUCCESS ? -smb_status_to_errno(status)
	                                         : (ssize_t)written;
	smbrdma_io_cb cb = io->cb;
	void *cbarg = io->arg;
	free(io);
	cb(cbarg, res);
}

int smbrdma_read(struct smbrdma_file *f, void *buf, size_t len, uint64_t offset, smbrdma_io_cb cb,
                 void *arg)
{
	if (!cb || (!buf && len) || len > SSIZE_MAX)
		return -EINVAL;
	struct io *io = malloc(sizeof(*io));
	if (!io)
		return -ENOMEM;
	*io = (struct io){.cb = cb, .arg = arg, .buf = buf, .s = f->s};
	int rc = smb_read_lent(f->s->c, f->fid, offset, buf, len, read_done, io);
	if (rc)
		free(io);
	return rc;
}

int smbrdma_write(struct smbrdma_file *f, const void *buf, size_t len, uint64_t offset,
                  smbrdma_io_cb cb, void *arg)
{
	if (!cb || (!buf && len) || len > SSIZE_MAX)
		return -EINVAL;
	struct io *io = malloc(sizeof(*io));
	if (!io)
		return -ENOMEM;
	*io = (struct io){.cb = cb, .arg = arg};
	int rc = smb_write_lent(f->s->c, f->fid, offset, buf, len, write_done, io);
	if (rc)
		free(io);
	return rc;
}

static void sync_io_done(void *arg, ssize_t result)
{
	struct wait *w = arg;
	pthread_mutex_lock(&w->lock);
	if (result < 0)
		w->err = (int)result;
	else
		w->n = (size_t)result;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->lock);
}

static ssize_t sync_io(struct smbrdma_file *f, void *buf, size_t len, uint64_t offset, bool write)
{
	if (on_loop(f->s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	int rc = wait_for(&w, write ? smbrdma_write(f, buf, len, offset, sync_io_done, &w)
	                            : smbrdma_read(f, buf, len, offset, sync_io_done, &w));
	return rc ? rc : (ssize_t)w.n;
}

ssize_t smbrdma_pread(struct smbrdma_file *f, void *buf, size_t len, uint64_t offset)
{
	return sync_io(f, buf, len, offset, false);
}

ssize_t smbrdma_pwrite(struct smbrdma_file *f, const void *buf, size_t len, uint64_t offset)
{
	return sync_io(f, (void *)buf, len, offset, true);
}

int smbrdma_fsync(struct smbrdma_file *f)
{
	if (on_loop(f->s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	return wait_for(&w, smb_flush(f->s->c, f->fid, status_done, &w));
}

int smbrdma_ftruncate(struct smbrdma_file *f, uint64_t size)
{
	if (on_loop(f->s))
		return -EDEADLK;
	struct smb_setattr_args a = {.which = SMB_SET_SIZE, .size = size};
	struct wait w;
	wait_init(&w);
	return wait_for(&w, smb_setattr(f->s->c, NULL, &f->fid, &a, attr_done, &w));
}

/* ---- metadata ----------------------------------------------------------------- */

static void stat_from(const struct smb_attr *a, struct smbrdma_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->size = a->end_of_file;
	st->allocated = a->allocation_size;
	st->file_id = a->file_id;
	st->nlink = a->nlink;
	st->attributes = a->file_attributes;
	st->is_dir = a->file_attributes & FILE_ATTRIBUTE_DIRECTORY;
	smb_nttime_to_timespec(a->creation_time, &st->btime);
	smb_nttime_to_timespec(a->last_access_time, &st->atime);
	smb_nttime_to_timespec(a->last_write_time, &st->mtime);
	smb_nttime_to_timespec(a->change_time, &st->ctime);
}

int smbrdma_stat(struct smbrdma *s, const char *path, struct smbrdma_stat *st)
{
	if (on_loop(s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	int rc = wait_for(&w, smb_stat(s->c, path, attr_done, &w));
	if (!rc)
		stat_from(&w.attr, st);
	return rc;
}

int smbrdma_fstat(struct smbrdma_file *f, struct smbrdma_stat *st)
{
	if (on_loop(f->s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	int rc = wait_for(&w, smb_fstat(f->s->c, f->fid, attr_done, &w));
	if (!rc)
		stat_from(&w.attr, st);
	return rc;
}

/* One QUERY_DIRECTORY answer at a time, copied by the loop thread (the
 * engine's entries live only during its callback) for the caller's thread. */
struct dir_wait {
	struct wait w;
	bool end;
	size_t count;
	struct smb_dirent *ents; /* malloc'd, names included */
};

static void dir_done(void *arg, int err, uint32_t status, const struct smb_dirent *ents,
                     size_t count)
{
	struct dir_wait *d = arg;
	if (status == STATUS_NO_MORE_FILES) {
		d->end = true;
		status = STATUS_SUCCESS;
		count = 0;
	}
	if (!err && status == STATUS_SUCCESS && count) {
		size_t bytes = count * sizeof(*ents);
		for (size_t i = 0; i < count; i++)
			bytes += strlen(ents[i].name) + 1;
		d->ents = malloc(bytes);
		if (!d->ents) {
			err = -ENOMEM;
		} else {
			char *names = (char *)(d->ents + count);
			for (size_t i = 0; i < count; i++) {
				size_t n = strlen(ents[i].name) + 1;
				memcpy(names, ents[i].name, n);
				d->ents[i].name = names;
				d->ents[i].attr = ents[i].attr;
				names += n;
			}
			d->count = count;
		}
	}
	wait_signal(&d->w, err, status);
}

static int list_dir(struct smbrdma *s, struct smb2_fileid fid, smbrdma_dirent_fn fn, void *arg)
{
	int stop = 0;
	for (bool restart = true; !stop; restart = false) {
		struct dir_wait d = {0};
		wait_init(&d.w);
		int rc = wait_for(&d.w, smb_readdir(s->c, fid, restart, dir_done, &d));
		for (size_t i = 0; !rc && i < d.count && !stop; i++) {
			const char *n = d.ents[i].name;
			if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
				continue;
			struct smbrdma_stat st;
			stat_from(&d.ents[i].attr, &st);
			stop = fn(arg, n, &st);
		}
		free(d.ents);
		if (rc)
			return rc;
		if (d.end)
			break;
	}
	return stop;
}

int smbrdma_readdir(struct smbrdma *s, const char *path, smbrdma_dirent_fn fn, void *arg)
{
	if (on_loop(s))
		return -EDEADLK;
	struct smbrdma_file *dir;
	int rc = smbrdma_open(s, path, O_DIRECTORY, &dir);
	if (rc)
		return rc;
	rc = list_dir(s, dir->fid, fn, arg);
	int crc = smbrdma_close(dir);
	return rc ? rc : crc;
}

int smbrdma_mkdir(struct smbrdma *s, const char *path)
{
	if (on_loop(s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	return wait_for(&w, smb_mkdir(s->c, path, attr_done, &w));
}

static int remove_path(struct smbrdma *s, const char *path, bool is_dir)
{
	if (on_loop(s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	return wait_for(&w, smb_unlink(s->c, path, is_dir, status_done, &w));
}

int smbrdma_rmdir(struct smbrdma *s, const char *path)
{
	return remove_path(s, path, true);
}

int smbrdma_unlink(struct smbrdma *s, const char *path)
{
	return remove_path(s, path, false);
}

int smbrdma_rename(struct smbrdma *s, const char *from, const char *to)
{
	if (on_loop(s))
		return -EDEADLK;
	struct wait w;
	wait_init(&w);
	return wait_for(&w, smb_rename(s->c, from, to, true, status_done, &w));
}
