/* tools/smbprobe.c — drive the client engine without FUSE: connect, list the
 * share root, write a file, read it back, stat, rename, delete.  A debugging
 * aid for developers:  smbprobe //HOST[:PORT]/SHARE USER PASSWORD [-v] */
#include "client/client.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct waiter {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	int err;
	uint32_t status;
	struct smb2_fileid fid;
	struct smb_attr attr;
	size_t n;
	uint8_t *data;
};

static void wait_init(struct waiter *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->m, NULL);
	pthread_cond_init(&w->cv, NULL);
}

static void wake(struct waiter *w, int err, uint32_t st)
{
	pthread_mutex_lock(&w->m);
	w->err = err;
	w->status = st;
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

static int wait_for(struct waiter *w, int submit_rc, const char *what)
{
	if (submit_rc) {
		fprintf(stderr, "%s: submit failed: %s\n", what, strerror(-submit_rc));
		return -1;
	}
	pthread_mutex_lock(&w->m);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->m);
	pthread_mutex_unlock(&w->m);
	if (w->err || w->status) {
		fprintf(stderr, "%s: err=%s status=%s\n", what, w->err ? strerror(-w->err) : "0",
		        smb2_status_str(w->status));
		return -1;
	}
	printf("%s: ok\n", what);
	return 0;
}

static void wait_for_quiet(struct waiter *w)
{
	pthread_mutex_lock(&w->m);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->m);
	pthread_mutex_unlock(&w->m);
}

static void st_cb(void *arg, int err, uint32_t st)
{
	wake(arg, err, st);
}

static void attr_cb(void *arg, int err, uint32_t st, const struct smb_attr *a)
{
	struct waiter *w = arg;
	if (a)
		w->attr = *a;
	wake(w, err, st);
}

static void open_cb(void *arg, int err, uint32_t st, struct smb2_fileid fid,
                    const struct smb_attr *a)
{
	struct waiter *w = arg;
	w->fid = fid;
	if (a)
		w->attr = *a;
	wake(w, err, st);
}

static void read_cb(void *arg, int err, uint32_t st, const void *data, size_t len)
{
	struct waiter *w = arg;
	w->data = malloc(len ? len : 1);
	memcpy(w->data, data, len);
	w->n = len;
	wake(w, err, st);
}

static void write_cb(void *arg, int err, uint32_t st, size_t n)
{
	struct waiter *w = arg;
	w->n = n;
	wake(w, err, st);
}

static void dir_cb(void *arg, int err, uint32_t st, const struct smb_dirent *e, size_t n)
{
	struct waiter *w = arg;
	for (size_t i = 0; i < n; i++)
		printf("  %-30s %10llu attr=0x%x id=%llu\n", e[i].name,
		       (unsigned long long)e[i].attr.end_of_file, e[i].attr.file_attributes,
		       (unsigned long long)e[i].attr.file_id);
	w->n = n;
	wake(w, err, st);
}

/* Long for a reason: the probe is one linear session - connect, then each
 * operation in turn with its printout - and reads best top to bottom. */
int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: smbprobe //HOST[:PORT]/SHARE USER PASSWORD [-v]\n");
		return 2;
	}
	smb_log_init("smbprobe", false, argc > 4 ? LOG_DEBUG : LOG_NOTICE);
	char host[256], share[256];
	unsigned port = 445;
	if (sscanf(argv[1], "//%255[^/:]:%u/%255s", host, &port, share) != 3 &&
	    sscanf(argv[1], "//%255[^/]/%255s", host, share) != 2) {
		fprintf(stderr, "bad UNC\n");
		return 2;
	}
	struct smb_client_opts o = {
	    .host = host,
	    .port = (uint16_t)port,
	    .share = share,
	    .user = argv[2],
	    .password = argv[3],
	};
	o.rdma = getenv("SMBPROBE_RDMA") != NULL;
	const char *vers = getenv("SMBPROBE_DIALECT"); /* e.g. 0x0300 */
	if (vers)
		o.min_dialect = o.max_dialect = (uint16_t)strtoul(vers, NULL, 16);
	char errbuf[512];
	struct smb_client *c;
	int err = smb_client_connect(&o, &c, errbuf, sizeof(errbuf));
	if (err) {
		fprintf(stderr, "connect: %s\n", errbuf);
		return 1;
	}
	struct smb_client_info info;
	smb_client_get_info(c, &info);
	printf("connected: dialect 0x%04x signing %d max_read %u max_write %u\n", info.dialect,
	       info.signing, info.max_read, info.max_write);
	struct waiter w;
	int rc = 0;

	wait_init(&w);
	struct smb_open_args da = {.desired_access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES,
	                           .create_disposition = FILE_OPEN,
	                           .create_options = FILE_DIRECTORY_FILE};
	rc |= wait_for(&w, smb_open(c, "", &da, open_cb, &w), "open root");
	struct smb2_fileid dfid = w.fid;
	do {
		wait_init(&w);
		smb_readdir(c, dfid, false, dir_cb, &w);
		pthread_mutex_lock(&w.m);
		while (!w.done)
			pthread_cond_wait(&w.cv, &w.m);
		pthread_mutex_unlock(&w.m);
	} while (!w.err && w.status == STATUS_SUCCESS);
	printf("readdir end: %s\n", smb2_status_str(w.status));
	wait_init(&w);
	rc |= wait_for(&w, smb_close(c, dfid, st_cb, &w), "close root");

	size_t len = getenv("SMBPROBE_SIZE") ? strtoul(getenv("SMBPROBE_SIZE"), NULL, 0) : 3u << 20;
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 12));
	wait_init(&w);
	struct smb_open_args fa = {.desired_access = GENERIC_READ | GENERIC_WRITE,
	                           .create_disposition = FILE_OVERWRITE_IF,
	                           .create_options = FILE_NON_DIRECTORY_FILE};
	rc |= wait_for(&w, smb_open(c, "probe.dat", &fa, open_cb, &w), "create probe.dat");
	struct smb2_fileid fid = w.fid;
	wait_init(&w);
	rc |= wait_for(&w, smb_write(c, fid, 0, buf, len, write_cb, &w), "write 3 MiB");
	printf("  wrote %zu\n", w.n);
	wait_init(&w);
	rc |= wait_for(&w, smb_read(c, fid, 0, len + 100, read_cb, &w), "read back");
	printf("  read %zu, %s\n", w.n,
	       w.n == len && !memcmp(w.data, buf, len) ? "equal" : "DIFFERENT");
	if (w.n != len || memcmp(w.data, buf, len))
		rc = 1;
	free(w.data);
	if (getenv("SMBPROBE_META")) {
		int n = atoi(getenv("SMBPROBE_META"));
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		struct smb_open_args ca = {.desired_access = GENERIC_WRITE,
		                           .create_disposition = FILE_CREATE,
		                           .create_options = FILE_NON_DIRECTORY_FILE};
		for (int i = 0; i < n; i++) {
			char name[64];
			snprintf(name, sizeof(name), "meta%06d", i);
			wait_init(&w);
			smb_stat(c, name, attr_cb, &w); /* the negative lookup */
			wait_for_quiet(&w);
			wait_init(&w);
			smb_open(c, name, &ca, open_cb, &w);
			wait_for_quiet(&w);
			struct smb2_fileid f = w.fid;
			wait_init(&w);
			smb_close(c, f, st_cb, &w);
			wait_for_quiet(&w);
			wait_init(&w);
			smb_unlink(c, name, false, st_cb, &w);
			wait_for_quiet(&w);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("metadata: %d files in %.2f s = %.0f files/s (4 round trips each)\n", n, s,
		       n / s);
	}
	if (getenv("SMBPROBE_LAT")) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int n = 2000;
		for (int i = 0; i < n; i++) {
			wait_init(&w);
			smb_read(c, fid, (uint64_t)(i % 700) * 4096, 4096, read_cb, &w);
			pthread_mutex_lock(&w.m);
			while (!w.done)
				pthread_cond_wait(&w.cv, &w.m);
			pthread_mutex_unlock(&w.m);
			free(w.data);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
		printf("4k read latency: %.1f us\n", us);
	}
	wait_init(&w);
	struct smb_setattr_args sa = {.which = SMB_SET_SIZE, .size = 1000};
	rc |= wait_for(&w, smb_setattr(c, NULL, &fid, &sa, attr_cb, &w), "truncate to 1000");
	printf("  size now %llu\n", (unsigned long long)w.attr.end_of_file);
	wait_init(&w);
	rc |= wait_for(&w, smb_flush(c, fid, st_cb, &w), "flush");
	wait_init(&w);
	rc |= wait_for(&w, smb_close(c, fid, st_cb, &w), "close");
	wait_init(&w);
	rc |= wait_for(&w, smb_mkdir(c, "probedir", attr_cb, &w), "mkdir");
	wait_init(&w);
	rc |= wait_for(&w, smb_rename(c, "probe.dat", "probedir/moved.dat", false, st_cb, &w),
	               "rename");
	wait_init(&w);
	rc |= wait_for(&w, smb_stat(c, "probedir/moved.dat", attr_cb, &w), "stat moved");
	printf("  size %llu nlink %u id %llu\n", (unsigned long long)w.attr.end_of_file,
	       w.attr.nlink, (unsigned long long)w.attr.file_id);
	wait_init(&w);
	rc |= wait_for(&w, smb_unlink(c, "probedir/moved.dat", false, st_cb, &w), "unlink");
	wait_init(&w);
	rc |= wait_for(&w, smb_unlink(c, "probedir", true, st_cb, &w), "rmdir");
	wait_init(&w);
	wait_for(&w, smb_stat(c, "probedir", attr_cb, &w), "stat removed (expect NOT_FOUND)");
	free(buf);
	struct smb_client_stats st;
	smb_client_get_stats(c, &st);
	for (int i = 0; i < st.nchannels; i++)
		printf("channel %d: %s %s -> %s requests %llu inline sent %llu received %llu rdma "
		       "read %llu write %llu\n",
		       i, st.channels[i].transport, st.channels[i].local, st.channels[i].remote,
		       (unsigned long long)st.channels[i].requests,
		       (unsigned long long)st.channels[i].bytes_sent,
		       (unsigned long long)st.channels[i].bytes_received,
		       (unsigned long long)st.channels[i].rdma_read_bytes,
		       (unsigned long long)st.channels[i].rdma_write_bytes);
	printf("payload bytes copied: %llu\n", (unsigned long long)st.payload_bytes_copied);
	smb_client_destroy(c);
	printf("%s\n", rc ? "FAILED" : "ALL OK");
	return rc ? 1 : 0;
}
