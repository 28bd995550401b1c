/* tests/libsmbrdma/apitest.c — every call of smbrdma.h against a real server.
 *
 * usage: apitest SERVER PORT SHARE USER PASSWORD
 * Prints one line per check and "apitest: N checks, M failed"; exits 1 if
 * any failed.  Leaves "keep.bin" (1 MiB, byte i = (i * 7 + 3) & 0xff) on the
 * share for the caller to compare with what the server stored.
 */
#include "smbrdma.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failed;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		checks++;                                                      \
		if (!(cond)) {                                                 \
			failed++;                                              \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		} else {                                                       \
			printf("ok   %s\n", #cond);                            \
		}                                                              \
	} while (0)

/* ---- asynchronous writes, qd 16 ---------------------------------------------- */

struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int left, errors;
	ssize_t bytes;
};

static void batch_done(void *arg, ssize_t res)
{
	struct batch *b = arg;
	pthread_mutex_lock(&b->lock);
	if (res < 0)
		b->errors++;
	else
		b->bytes += res;
	if (--b->left == 0)
		pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->lock);
}

static void batch_wait(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->left)
		pthread_cond_wait(&b->cv, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

/* ---- a synchronous call from a callback must refuse ----------------------------- */

struct nested {
	struct smbrdma_file *f;
	ssize_t inner;
	struct batch b;
};

static void nested_done(void *arg, ssize_t res)
{
	struct nested *n = arg;
	char c;
	n->inner = smbrdma_pread(n->f, &c, 1, 0);
	batch_done(&n->b, res);
}

struct listing {
	char names[16][64];
	int n;
	uint64_t sizes[16];
};

static int collect(void *arg, const char *name, const struct smbrdma_stat *st)
{
	struct listing *l = arg;
	if (l->n < 16) {
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
		l->sizes[l->n] = st->size;
	}
	l->n++;
	return 0;
}

static int stop_at_first(void *arg, const char *name, const struct smbrdma_stat *st)
{
	(*(int *)arg)++;
	return 42;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: apitest SERVER PORT SHARE USER PASSWORD\n");
		return 2;
	}
	struct smbrdma_params p;
	smbrdma_params_init(&p);
	p.server = argv[1];
	p.port = (unsigned)atoi(argv[2]);
	p.share = argv[3];
	p.user = argv[4];
	p.password = "not-the-password";
	p.timeout_ms = 20000;

	char err[512] = "";
	struct smbrdma *s = NULL;
	int rc = smbrdma_connect(&p, &s, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "logon failure"), "rc %d, err \"%s\"", rc, err);

	p.password = argv[5];
	rc = smbrdma_connect(&p, &s, err, sizeof(err));
	CHECK(rc == 0, "connect: %s", err);
	if (rc)
		return 1;
	printf("version %s\n", smbrdma_version());
	struct smbrdma_info info;
	smbrdma_get_info(s, &info);
	CHECK(info.dialect == 0x0311 && info.channels == 1 && info.max_write >= 65536,
	      "dialect 0x%04x channels %u max_write %u", info.dialect, info.channels,
	      info.max_write);

	size_t big = 1 << 20;
	uint8_t *buf = malloc(big), *back = malloc(big);
	for (size_t i = 0; i < big; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	rc = smbrdma_register(s, buf, big);
	CHECK(rc == -EOPNOTSUPP, "register over TCP: %d", rc);

	CHECK(smbrdma_mkdir(s, "d") == 0, "mkdir");
	CHECK(smbrdma_mkdir(s, "d") == -EEXIST, "mkdir again");
	struct smbrdma_file *f = NULL;
	rc = smbrdma_open(s, "d/f", O_RDWR | O_CREAT | O_EXCL, &f);
	CHECK(rc == 0, "open O_CREAT|O_EXCL: %d", rc);
	struct smbrdma_file *f2 = NULL;
	rc = smbrdma_open(s, "d/f", O_RDWR | O_CREAT | O_EXCL, &f2);
	CHECK(rc == -EEXIST, "open O_EXCL of an existing file: %d", rc);
	rc = smbrdma_open(s, "nosuch/file", O_RDONLY, &f2);
	CHECK(rc == -ENOENT, "open of a missing path: %d", rc);

	/* 16 writes of 64 KiB in flight at once */
	struct batch b = {.left = 16};
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cv, NULL);
	int started = 0;
	for (int i = 0; i < 16; i++)
		started += smbrdma_write(f, buf + i * 65536, 65536, (uint64_t)i * 65536, batch_done,
		                         &b) == 0;
	CHECK(started == 16, "%d writes started", started);
	batch_wait(&b);
	CHECK(b.errors == 0 && b.bytes == (ssize_t)big, "errors %d bytes %zd", b.errors, b.bytes);

	memset(back, 0, big);
	ssize_t n = smbrdma_pread(f, back, big, 0);
	CHECK(n == (ssize_t)big && memcmp(back, buf, big) == 0, "pread %zd", n);
	n = smbrdma_pread(f, back, 4096, big - 100);
	CHECK(n == 100 && memcmp(back, buf + big - 100, 100) == 0, "short read at EOF: %zd", n);
	n = smbrdma_pread(f, back, 4096, big + 4096);
	CHECK(n == 0, "read past EOF: %zd", n);
	/* async reads, 8 at once, into distinct parts of back: over plain TCP
	 * received straight there, no byte copied (issue 20) */
	struct smbrdma_info i0, i1;
	smbrdma_get_info(s, &i0);
	memset(back, 0, big);
	struct batch rb = {.left = 8};
	pthread_mutex_init(&rb.lock, NULL);
	pthread_cond_init(&rb.cv, NULL);
	for (int i = 0; i < 8; i++)
		if (smbrdma_read(f, back + i * 131072, 131072, (uint64_t)i * 131072, batch_done,
		                 &rb) != 0)
			batch_done(&rb, -EIO);
	batch_wait(&rb);
	CHECK(rb.errors == 0 && rb.bytes == (ssize_t)big && memcmp(back, buf, big) == 0,
	      "async reads: errors %d bytes %zd", rb.errors, rb.bytes);
	smbrdma_get_info(s, &i1);
	CHECK(i0.encryption || i0.rdma_channels || i1.copied_bytes == i0.copied_bytes,
	      "async reads over TCP copied %llu bytes",
	      (unsigned long long)(i1.copied_bytes - i0.copied_bytes));

	struct nested nest = {.f = f, .b = {.left = 1}};
	pthread_mutex_init(&nest.b.lock, NULL);
	pthread_cond_init(&nest.b.cv, NULL);
	rc = smbrdma_read(f, back, 10, 0, nested_done, &nest);
	CHECK(rc == 0, "read for the nested call: %d", rc);
	batch_wait(&nest.b);
	CHECK(nest.inner == -EDEADLK, "pread from a callback: %zd", nest.inner);

	struct smbrdma_stat st;
	CHECK(smbrdma_fstat(f, &st) == 0 && st.size == big && !st.is_dir, "fstat size %llu",
	      (unsigned long long)st.size);
	CHECK(smbrdma_ftruncate(f, 1000) == 0, "ftruncate");
	CHECK(smbrdma_fsync(f) == 0, "fsync");
	CHECK(smbrdma_stat(s, "d/f", &st) == 0 && st.size == 1000 && st.mtime.tv_sec > 0,
	      "stat after truncate: %llu", (unsigned long long)st.size);
	CHECK(smbrdma_stat(s, "d", &st) == 0 && st.is_dir, "stat of a directory");
	CHECK(smbrdma_close(f) == 0, "close");

	struct listing l = {0};
	CHECK(smbrdma_readdir(s, "d", collect, &l) == 0 && l.n == 1 &&
	          strcmp(l.names[0], "f") == 0 && l.sizes[0] == 1000,
	      "readdir: %d entries, first \"%s\"", l.n, l.names[0]);
	CHECK(smbrdma_rename(s, "d/f", "d/g") == 0, "rename");
	CHECK(smbrdma_stat(s, "d/f", &st) == -ENOENT, "old name gone");
	int seen = 0;
	CHECK(smbrdma_readdir(s, "d", stop_at_first, &seen) == 42 && seen == 1,
	      "readdir stops when told: %d", seen);
	CHECK(smbrdma_rmdir(s, "d") == -ENOTEMPTY, "rmdir of a non-empty directory");
	CHECK(smbrdma_unlink(s, "d/g") == 0, "unlink");
	CHECK(smbrdma_unlink(s, "d/g") == -ENOENT, "unlink again");
	CHECK(smbrdma_rmdir(s, "d") == 0, "rmdir");

	/* the file the caller checks on the server's disk; left open on purpose:
	 * disconnect closes it */
	rc = smbrdma_open(s, "keep.bin", O_WRONLY | O_CREAT | O_TRUNC, &f);
	CHECK(rc == 0, "open keep.bin: %d", rc);
	if (!rc)
		CHECK(smbrdma_pwrite(f, buf, big, 0) == (ssize_t)big, "pwrite keep.bin");
	smbrdma_get_info(s, &info);
	CHECK(info.requests > 20 && info.inline_bytes > 3 * big, "requests %llu inline %llu",
	      (unsigned long long)info.requests, (unsigned long long)info.inline_bytes);
	smbrdma_disconnect(s);
	free(buf);
	free(back);
	printf("apitest: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
