/* fuse/cache.c — what the kernel may cache, driven by the server's oplocks
 * (cache=strict).
 *
 * Every open asks for a batch oplock (client/ops.c smb_open).  An open that
 * gets one (or level II) is served through the page cache, as before: no
 * other client writes the file meanwhile without the server telling us.
 * An open that gets none is opened with direct_io: its reads and writes go
 * to the server.  When the server breaks an oplock (another client opened
 * the file), smbfs_on_break() has the kernel drop the inode's cached pages
 * and attributes, and a break to none marks the handle "uncached": from
 * then on attributes of its inode are never cached (timeout 0), so every
 * read revalidates them and the kernel's auto_inval_data drops pages the
 * server's mtime or size says are stale.
 *
 * The kernel's invalidation must not run on the loop thread: it waits for
 * page locks that reads in flight hold until the loop thread answers them.
 * So each break starts a short-lived thread that makes the call; breaks are
 * rare.  fs->notifiers counts them; teardown waits for none to be left.
 *
 * Threads: smbfs_on_break runs on the loop thread (or the reconnect
 * thread); handles are read under fs->handles_lock.
 */
#include "fuse/smbfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/proto/smb2_const.h"
#include "common/log.h"

struct inval_job {
	struct smbfs *fs;
	uint64_t nodeid;
};

static void *inval_thread(void *arg)
{
	struct inval_job *j = arg;
	struct smbfs *fs = j->fs;
	/* offset 0, length 0: every cached page and the attributes */
	int rc = fuse_lowlevel_notify_inval_inode(fs->se, j->nodeid, 0, 0);
	if (rc < 0 && rc != -ENOENT && rc != -ENODEV)
		smb_debug("%s: dropping the cache of inode %llu: %s", fs->source,
		          (unsigned long long)j->nodeid, strerror(-rc));
	free(j);
	__atomic_sub_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

static void drop_kernel_cache(struct smbfs *fs, uint64_t nodeid)
{
	struct inval_job *j = malloc(sizeof(*j));
	pthread_attr_t at;
	pthread_t t;
	if (!j || !fs->se) {
		free(j);
		return;
	}
	j->fs = fs;
	j->nodeid = nodeid;
	__atomic_add_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, inval_thread, j) != 0) {
		smb_warn("%s: cannot start a thread to drop the cache of inode %llu", fs->source,
		         (unsigned long long)nodeid);
		free(j);
		__atomic_sub_fetch(&fs->notifiers, 1, __ATOMIC_ACQ_REL);
	}
	pthread_attr_destroy(&at);
}

void smbfs_on_break(void *arg, struct smb2_fileid fid, uint8_t level)
{
	struct smbfs *fs = arg;
	uint64_t nodeid = 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f; f = f->next) {
		if (f->fid.persistent != fid.persistent || f->fid.volatile_ != fid.volatile_)
			continue;
		f->oplock = level;
		if (level == SMB2_OPLOCK_LEVEL_NONE && !fs->keep_cache)
			f->uncached = true;
		nodeid = f->nodeid;
		break;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	if (nodeid && !fs->direct_io) {
		smb_debug("%s: oplock of inode %llu broken to level %u: dropping its cache",
		          fs->source, (unsigned long long)nodeid, level);
		drop_kernel_cache(fs, nodeid);
	}
}

double smbfs_attr_timeout(struct smbfs *fs, uint64_t nodeid)
{
	bool uncached = false;
	if (fs->timeout == 0)
		return 0;
	pthread_mutex_lock(&fs->handles_lock);
	for (struct smbfs_file *f = fs->handles; f && !uncached; f = f->next)
		uncached = f->nodeid == nodeid && f->uncached;
	pthread_mutex_unlock(&fs->handles_lock);
	return uncached ? 0 : fs->timeout;
}

void smbfs_wait_notifiers(struct smbfs *fs)
{
	for (int i = 0; i < 1000 && __atomic_load_n(&fs->notifiers, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
}
