/* tools/smbrdma-bench.c — a load generator on libsmbrdma (see smbrdma-bench(1)).
 *
 * fio-like jobs straight on the library, no FUSE: sequential or random,
 * read, write or mixed, any block size, queue depth and number of jobs (one
 * file each), for a runtime or a size, with --verify, and a JSON report with
 * IOPS, MiB/s, latency percentiles and CPU time per GiB.
 *
 * Threads: main submits each job's first iodepth I/Os, then sleeps until the
 * runtime is over; every later I/O is submitted from the completion of the
 * previous one, on the library's thread.  A job's state is under its lock
 * (the two threads meet only at the start and at the stop flag).
 */
#include "smbrdma.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_JOBS  64
#define MAX_DEPTH 1024

/* ---- latency histogram: 2^k ns ranges, 32 linear steps in each ---------------- */

#define HIST_SUB 32
#define HIST_MAJ 40
struct hist {
	uint64_t n, sum_ns, min_ns, max_ns;
	uint64_t b[HIST_MAJ][HIST_SUB];
};

/* Bucket i of major 0 holds [i, i+1) ns; major m > 0 holds
 * [HIST_SUB << (m-1), HIST_SUB << m) in steps of 2^(m-1). */
static void hist_bucket(unsigned m, uint64_t *lo, uint64_t *step)
{
	*lo = m ? (uint64_t)HIST_SUB << (m - 1) : 0;
	*step = m ? (uint64_t)1 << (m - 1) : 1;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	unsigned m = 0;
	while (m + 1 < HIST_MAJ && ns >= (uint64_t)HIST_SUB << m)
		m++;
	uint64_t lo, step;
	hist_bucket(m, &lo, &step);
	uint64_t sub = (ns - lo) / step;
	h->b[m][sub < HIST_SUB ? sub : HIST_SUB - 1]++;
	if (!h->n || ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->n++;
	h->sum_ns += ns;
}

static void hist_merge(struct hist *to, const struct hist *from)
{
	if (!from->n)
		return;
	if (!to->n || from->min_ns < to->min_ns)
		to->min_ns = from->min_ns;
	if (from->max_ns > to->max_ns)
		to->max_ns = from->max_ns;
	to->n += from->n;
	to->sum_ns += from->sum_ns;
	for (int i = 0; i < HIST_MAJ; i++)
		for (int j = 0; j < HIST_SUB; j++)
			to->b[i][j] += from->b[i][j];
}

/* The mean, in ns; 0 when empty. */
static double hist_mean_ns(const struct hist *h)
{
	return h->n ? (double)h->sum_ns / (double)h->n : 0;
}

/* The upper edge of the bucket holding the q-quantile, in ns. */
static uint64_t hist_pct(const struct hist *h, double q)
{
	if (!h->n)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)h->n), seen = 0;
	if (!want)
		want = 1;
	for (unsigned i = 0; i < HIST_MAJ; i++) {
		uint64_t lo, step;
		hist_bucket(i, &lo, &step);
		for (unsigned j = 0; j < HIST_SUB; j++) {
			seen += h->b[i][j];
			if (seen >= want) {
				uint64_t edge = lo + (j + 1) * step;
				return edge > h->max_ns ? h->max_ns : edge;
			}
		}
	}
	return h->max_ns;
}

/* ---- the verify pattern: a function of the file offset alone ------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t pattern_seed = 0x5eed;

static void pattern_fill(uint8_t *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64((off + i) ^ pattern_seed);
		memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
	}
}

/* Offset of the first byte that differs, or -1. */
static int64_t pattern_check(const uint8_t *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64((off + i) ^ pattern_seed);
		if (memcmp(buf + i, &w, len - i < 8 ? len - i : 8) != 0)
			return (int64_t)(off + i);
	}
	return -1;
}

/* ---- configuration and jobs ---------------------------------------------------- */

struct cfg {
	struct smbrdma_params p;
	const char *path;
	bool rand, do_read, do_write;
	const char *rw_name;
	unsigned mixread; /* percent of reads in a mixed job */
	size_t bs;
	unsigned depth, jobs;
	double runtime;
	uint64_t size; /* per job */
	bool time_based, verify, json, no_register, keep;
	unsigned meta; /* --meta=N: the metadata job instead of I/O */
};

struct slot {
	struct job *job;
	uint8_t *buf;
	uint64_t off;
	bool is_read;
	struct timespec t0;
};

struct job {
	struct cfg *cfg;
	struct smbrdma_file *f;
	char path[512];
	pthread_mutex_t lock;
	uint64_t next_off; /* sequential */
	uint64_t rng;
	uint64_t issued_bytes;
	unsigned inflight;
	bool done; /* no more submissions */
	struct hist rlat, wlat;
	uint64_t rbytes, wbytes, mismatches, errors;
	int first_err;
	uint8_t *written; /* --verify on writes: a bit per block written */
	struct slot slots[];
};

static atomic_bool stop_flag;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_cv = PTHREAD_COND_INITIALIZER;
static unsigned all_inflight;

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static uint64_t ns_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec -
	       (uint64_t)t0->tv_nsec;
}

static void io_done(void *arg, ssize_t res);

/* Under j->lock: choose and start the slot's next I/O.  false when the job
 * has nothing more to do (or could not submit). */
static bool job_next_locked(struct job *j, struct slot *s)
{
	struct cfg *c = j->cfg;
	if (j->done || atomic_load(&stop_flag))
		return false;
	if (!c->time_based && j->issued_bytes >= c->size) {
		j->done = true;
		return false;
	}
	uint64_t nblocks = c->size / c->bs;
	if (c->rand) {
		s->off = (xorshift(&j->rng) % nblocks) * c->bs;
	} else {
		if (j->next_off >= c->size)
			j->next_off = 0;
		s->off = j->next_off;
		j->next_off += c->bs;
	}
	if (c->do_read && c->do_write)
		s->is_read = xorshift(&j->rng) % 100 < c->mixread;
	else
		s->is_read = c->do_read;
	if (!s->is_read) {
		if (c->verify)
			pattern_fill(s->buf, c->bs, s->off);
		if (j->written) {
			uint64_t b = s->off / c->bs;
			j->written[b / 8] |= (uint8_t)(1u << (b % 8));
		}
	}
	j->issued_bytes += c->bs;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	int rc = s->is_read ? smbrdma_read(j->f, s->buf, c->bs, s->off, io_done, s)
	                    : smbrdma_write(j->f, s->buf, c->bs, s->off, io_done, s);
	if (rc) {
		if (!j->first_err)
			j->first_err = rc;
		j->errors++;
		j->done = true;
		return false;
	}
	j->inflight++;
	pthread_mutex_lock(&all_lock);
	all_inflight++;
	pthread_mutex_unlock(&all_lock);
	return true;
}

static void io_done(void *arg, ssize_t res)
{
	struct slot *s = arg;
	struct job *j = s->job;
	struct cfg *c = j->cfg;
	uint64_t ns = ns_since(&s->t0);

	pthread_mutex_lock(&j->lock);
	j->inflight--;
	if (res < 0 || (size_t)res != c->bs) {
		/* short only past the end of a file we laid out: an error too */
		if (!j->first_err)
			j->first_err = res < 0 ? (int)res : -EIO;
		j->errors++;
		j->done = true;
	} else if (s->is_read) {
		hist_add(&j->rlat, ns);
		j->rbytes += c->bs;
		if (c->verify && pattern_check(s->buf, c->bs, s->off) >= 0)
			j->mismatches++;
	} else {
		hist_add(&j->wlat, ns);
		j->wbytes += c->bs;
	}
	job_next_locked(j, s);
	pthread_mutex_unlock(&j->lock);

	pthread_mutex_lock(&all_lock);
	if (--all_inflight == 0)
		pthread_cond_broadcast(&all_cv);
	pthread_mutex_unlock(&all_lock);
}

/* ---- set-up: open (and lay out) each job's file -------------------------------- */

static int layout(struct job *j, uint8_t *buf, size_t bufsz)
{
	struct cfg *c = j->cfg;
	struct smbrdma_stat st;
	int rc = smbrdma_fstat(j->f, &st);
	if (rc)
		return rc;
	/* Reads need the data there: a file too short gets the pattern.  One
	 * long enough is read as it is (--verify then checks it holds the
	 * pattern, as a file written with --verify does). */
	if (!c->do_read || st.size >= c->size)
		return 0;
	for (uint64_t off = 0; off < c->size; off += bufsz) {
		size_t n = c->size - off < bufsz ? (size_t)(c->size - off) : bufsz;
		pattern_fill(buf, n, off);
		ssize_t w = smbrdma_pwrite(j->f, buf, n, off);
		if (w < 0)
			return (int)w;
		if ((size_t)w != n)
			return -EIO;
	}
	return 0;
}

/* After a write job with --verify: read back every block written. */
static void verify_written(struct job *j, uint8_t *buf)
{
	struct cfg *c = j->cfg;
	uint64_t nblocks = c->size / c->bs;
	for (uint64_t b = 0; b < nblocks; b++) {
		if (!(j->written[b / 8] & (1u << (b % 8))))
			continue;
		ssize_t r = smbrdma_pread(j->f, buf, c->bs, b * c->bs);
		if (r != (ssize_t)c->bs) {
			j->errors++;
			if (!j->first_err)
				j->first_err = r < 0 ? (int)r : -EIO;
			return;
		}
		if (pattern_check(buf, c->bs, b * c->bs) >= 0)
			j->mismatches++;
	}
}

/* ---- options --------------------------------------------------------------------- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mul = 1;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1ull << 40;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_unc(const char *unc, struct cfg *c, char **host, char **share)
{
	/* //server[:port]/share/path */
	if (strncmp(unc, "//", 2) != 0)
		return -1;
	const char *h = unc + 2, *slash = strchr(h, '/');
	if (!slash || slash == h)
		return -1;
	const char *sh = slash + 1, *slash2 = strchr(sh, '/');
	if (!slash2 || slash2 == sh || !slash2[1])
		return -1;
	*host = strndup(h, (size_t)(slash - h));
	*share = strndup(sh, (size_t)(slash2 - sh));
	c->path = slash2 + 1;
	char *colon = strrchr(*host, ':');
	if (colon && !strchr(colon, ']')) {
		*colon = '\0';
		c->p.port = (unsigned)atoi(colon + 1);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: smbrdma-bench //SERVER[:PORT]/SHARE/PATH [options]\n"
	        "  --rw=read|write|randread|randwrite|rw|randrw  (default read)\n"
	        "  --rwmixread=PCT  --bs=SIZE (4k)  --iodepth=N (1)  --numjobs=N (1)\n"
	        "  --size=SIZE (per job, 64m)  --runtime=SECONDS  --time_based\n"
	        "  --verify  --json  --no-register  --keep\n"
	        "  --user=U  --password=P (or $PASSWD)  --domain=D  --rdma  --multichannel\n"
	        "  --max-channels=N  --sign  --seal  --krb5  --timeout=MS  --rdma-threshold=N\n"
	        "  --meta=N  instead of I/O: create+stat+unlink N files in the directory PATH\n");
}

static uint16_t dialect_of(const char *v)
{
	if (strcmp(v, "2.0") == 0 || strcmp(v, "2.02") == 0)
		return 0x0202;
	if (strcmp(v, "2.1") == 0)
		return 0x0210;
	if (strcmp(v, "3.0") == 0)
		return 0x0300;
	if (strcmp(v, "3.02") == 0 || strcmp(v, "3.0.2") == 0)
		return 0x0302;
	if (strcmp(v, "3.1.1") == 0 || strcmp(v, "3.11") == 0)
		return 0x0311;
	return 0;
}

/* The command line, checked.  Long for a reason: one getopt case per option
 * of smbrdma-bench(1), in the man page's order; nothing else happens here. */
static int parse_args(int argc, char **argv, struct cfg *c)
{
	enum {
		O_RW = 256,
		O_MIX,
		O_BS,
		O_DEPTH,
		O_JOBS,
		O_SIZE,
		O_RUNTIME,
		O_TB,
		O_VERIFY,
		O_JSON,
		O_NOREG,
		O_KEEP,
		O_USER,
		O_PASS,
		O_DOM,
		O_RDMA,
		O_MC,
		O_MAXCH,
		O_SIGN,
		O_SEAL,
		O_KRB5,
		O_TIMEOUT,
		O_THRESH,
		O_VERS,
		O_META,
		O_HELP
	};
	static const struct option opts[] = {
	    {"rw", 1, 0, O_RW},
	    {"rwmixread", 1, 0, O_MIX},
	    {"bs", 1, 0, O_BS},
	    {"iodepth", 1, 0, O_DEPTH},
	    {"numjobs", 1, 0, O_JOBS},
	    {"size", 1, 0, O_SIZE},
	    {"runtime", 1, 0, O_RUNTIME},
	    {"time_based", 0, 0, O_TB},
	    {"verify", 0, 0, O_VERIFY},
	    {"json", 0, 0, O_JSON},
	    {"no-register", 0, 0, O_NOREG},
	    {"keep", 0, 0, O_KEEP},
	    {"user", 1, 0, O_USER},
	    {"password", 1, 0, O_PASS},
	    {"domain", 1, 0, O_DOM},
	    {"rdma", 0, 0, O_RDMA},
	    {"multichannel", 0, 0, O_MC},
	    {"max-channels", 1, 0, O_MAXCH},
	    {"sign", 0, 0, O_SIGN},
	    {"seal", 0, 0, O_SEAL},
	    {"krb5", 0, 0, O_KRB5},
	    {"timeout", 1, 0, O_TIMEOUT},
	    {"rdma-threshold", 1, 0, O_THRESH},
	    {"vers", 1, 0, O_VERS},
	    {"meta", 1, 0, O_META},
	    {"help", 0, 0, O_HELP},
	    {0, 0, 0, 0},
	};
	uint64_t v;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_RW:
			c->rw_name = optarg;
			c->rand = strncmp(optarg, "rand", 4) == 0;
			{
				const char *k = optarg + (c->rand ? 4 : 0);
				c->do_read = strcmp(k, "read") == 0 || strcmp(k, "rw") == 0;
				c->do_write = strcmp(k, "write") == 0 || strcmp(k, "rw") == 0;
				if (!c->do_read && !c->do_write) {
					fprintf(stderr,
					        "smbrdma-bench: --rw=%s: not one of read, write, "
					        "randread, randwrite, rw, randrw\n",
					        optarg);
					return -1;
				}
			}
			break;
		case O_MIX:
			if (parse_size(optarg, &v) || v > 100)
				goto bad;
			c->mixread = (unsigned)v;
			break;
		case O_BS:
			if (parse_size(optarg, &v) || !v || v > (64u << 20))
				goto bad;
			c->bs = (size_t)v;
			break;
		case O_DEPTH:
			if (parse_size(optarg, &v) || !v || v > MAX_DEPTH)
				goto bad;
			c->depth = (unsigned)v;
			break;
		case O_JOBS:
			if (parse_size(optarg, &v) || !v || v > MAX_JOBS)
				goto bad;
			c->jobs = (unsigned)v;
			break;
		case O_SIZE:
			if (parse_size(optarg, &v) || !v)
				goto bad;
			c->size = v;
			break;
		case O_RUNTIME: {
			char *end;
			c->runtime = strtod(optarg, &end);
			if (*end || c->runtime <= 0)
				goto bad;
			break;
		}
		case O_TB:
			c->time_based = true;
			break;
		case O_VERIFY:
			c->verify = true;
			break;
		case O_JSON:
			c->json = true;
			break;
		case O_NOREG:
			c->no_register = true;
			break;
		case O_KEEP:
			c->keep = true;
			break;
		case O_USER:
			c->p.user = optarg;
			break;
		case O_PASS:
			c->p.password = optarg;
			break;
		case O_DOM:
			c->p.domain = optarg;
			break;
		case O_RDMA:
			c->p.flags |= SMBRDMA_F_RDMA;
			break;
		case O_MC:
			c->p.flags |= SMBRDMA_F_MULTICHANNEL;
			break;
		case O_MAXCH:
			if (parse_size(optarg, &v) || !v || v > 32)
				goto bad;
			c->p.max_channels = (unsigned)v;
			c->p.flags |= v > 1 ? SMBRDMA_F_MULTICHANNEL : 0;
			break;
		case O_SIGN:
			c->p.flags |= SMBRDMA_F_SIGN;
			break;
		case O_SEAL:
			c->p.flags |= SMBRDMA_F_SEAL;
			break;
		case O_KRB5:
			c->p.sec = SMBRDMA_SEC_KRB5;
			break;
		case O_TIMEOUT:
			if (parse_size(optarg, &v) || !v || v > 3600000)
				goto bad;
			c->p.timeout_ms = (unsigned)v;
			break;
		case O_THRESH:
			if (parse_size(optarg, &v) || v > (8u << 20))
				goto bad;
			c->p.rdma_threshold = (unsigned)v;
			break;
		case O_VERS:
			c->p.min_dialect = c->p.max_dialect = dialect_of(optarg);
			if (!c->p.min_dialect)
				goto bad;
			break;
		case O_META:
			if (parse_size(optarg, &v) || !v || v > 1000000)
				goto bad;
			c->meta = (unsigned)v;
			break;
		case O_HELP:
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		continue;
	bad:
		fprintf(stderr, "smbrdma-bench: bad value for --%s: %s\n", opts[o - O_RW].name,
		        optarg);
		return -1;
	}
	if (optind != argc - 1) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* ---- report ------------------------------------------------------------------------ */

static void json_dir(FILE *f, const char *name, uint64_t bytes, const struct hist *h, double secs,
                     bool last)
{
	fprintf(f,
	        "  \"%s\": {\"ios\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"iops\": %.1f, "
	        "\"mib_s\": %.2f, \"lat_us\": {\"min\": %.1f, \"mean\": %.1f, \"p50\": %.1f, "
	        "\"p99\": %.1f, \"p99.9\": %.1f, \"max\": %.1f}}%s\n",
	        name, h->n, bytes, secs > 0 ? (double)h->n / secs : 0,
	        secs > 0 ? (double)bytes / secs / 1048576.0 : 0, h->min_ns / 1e3,
	        hist_mean_ns(h) / 1e3, hist_pct(h, 0.50) / 1e3, hist_pct(h, 0.99) / 1e3,
	        hist_pct(h, 0.999) / 1e3, h->max_ns / 1e3, last ? "" : ",");
}

static void text_dir(const char *name, uint64_t bytes, const struct hist *h, double secs)
{
	if (!h->n)
		return;
	printf("%-5s: %8.0f IOPS  %9.2f MiB/s  lat us: mean %.1f p50 %.1f p99 %.1f "
	       "p99.9 %.1f max %.1f\n",
	       name, (double)h->n / secs, (double)bytes / secs / 1048576.0, hist_mean_ns(h) / 1e3,
	       hist_pct(h, 0.50) / 1e3, hist_pct(h, 0.99) / 1e3, hist_pct(h, 0.999) / 1e3,
	       h->max_ns / 1e3);
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* ---- --meta: create + stat + unlink, one file after the other ------------------------ */

/* The metadata job of bench/metaloop.py with no FUSE: in the directory
 * c->path (created, and removed at the end), N times: open a new file
 * (O_CREAT | O_EXCL), close it, stat it, unlink it.  Each call waits for
 * the server, so this is the least a client can spend on the job. */
static int run_meta(struct smbrdma *s, const struct cfg *c, const char *target)
{
	struct hist lat[3] = {0}; /* create+close, stat, unlink */
	static const char *const names[3] = {"create", "stat", "unlink"};
	char path[600];
	int rc = smbrdma_mkdir(s, c->path);
	if (rc && rc != -EEXIST) {
		fprintf(stderr, "smbrdma-bench: mkdir %s: %s\n", c->path, strerror(-rc));
		return 1;
	}
	double cpu0 = cpu_seconds();
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned done = 0;
	for (; done < c->meta; done++) {
		snprintf(path, sizeof(path), "%s/f%06u", c->path, done);
		struct smbrdma_file *f;
		struct smbrdma_stat st;
		const char *what = names[0];
		clock_gettime(CLOCK_MONOTONIC, &t);
		rc = smbrdma_open(s, path, O_WRONLY | O_CREAT | O_EXCL, &f);
		if (!rc)
			rc = smbrdma_close(f);
		hist_add(&lat[0], (uint64_t)ns_since(&t));
		if (!rc) {
			what = names[1];
			clock_gettime(CLOCK_MONOTONIC, &t);
			rc = smbrdma_stat(s, path, &st);
			hist_add(&lat[1], (uint64_t)ns_since(&t));
		}
		if (!rc) {
			what = names[2];
			clock_gettime(CLOCK_MONOTONIC, &t);
			rc = smbrdma_unlink(s, path);
			hist_add(&lat[2], (uint64_t)ns_since(&t));
		}
		if (rc) {
			fprintf(stderr, "smbrdma-bench: %s %s: %s\n", what, path, strerror(-rc));
			break;
		}
	}
	double secs = ns_since(&t0) / 1e9, cpu = cpu_seconds() - cpu0;
	int rrc = smbrdma_rmdir(s, c->path);
	if (rrc && !rc)
		fprintf(stderr, "smbrdma-bench: rmdir %s: %s\n", c->path, strerror(-rrc));
	if (c->json) {
		printf(
		    "{\n  \"tool\": \"smbrdma-bench\", \"version\": \"%s\",\n  \"target\": "
		    "\"%s\", \"meta\": {\"files\": %u, \"seconds\": %.3f, \"files_per_s\": %.1f, "
		    "\"cpu_s\": %.3f,\n",
		    smbrdma_version(), target, done, secs, secs > 0 ? done / secs : 0, cpu);
		for (int i = 0; i < 3; i++)
			printf("    \"%s_us\": {\"mean\": %.1f, \"p50\": %.1f, \"p99\": %.1f}%s\n",
			       names[i], hist_mean_ns(&lat[i]) / 1e3, hist_pct(&lat[i], 0.50) / 1e3,
			       hist_pct(&lat[i], 0.99) / 1e3, i < 2 ? "," : "");
		printf("  },\n  \"error\": \"%s\"\n}\n", rc ? strerror(-rc) : "");
	} else {
		printf("smbrdma-bench %s: %s create+stat+unlink of %u files, %.2f s: %.0f files/s; "
		       "CPU %.2f s\n",
		       smbrdma_version(), target, done, secs, secs > 0 ? done / secs : 0, cpu);
		for (int i = 0; i < 3; i++)
			printf("%-6s: lat us: mean %.1f p50 %.1f p99 %.1f\n", names[i],
			       hist_mean_ns(&lat[i]) / 1e3, hist_pct(&lat[i], 0.50) / 1e3,
			       hist_pct(&lat[i], 0.99) / 1e3);
	}
	return rc || rrc ? 1 : 0;
}

/* What every job did, summed. */
struct totals {
	struct hist rl, wl;
	uint64_t rbytes, wbytes, mism, errors;
	int first_err;
};

static void totals_add(struct totals *t, const struct job *j)
{
	hist_merge(&t->rl, &j->rlat);
	hist_merge(&t->wl, &j->wlat);
	t->rbytes += j->rbytes;
	t->wbytes += j->wbytes;
	t->mism += j->mismatches;
	t->errors += j->errors;
	if (!t->first_err)
		t->first_err = j->first_err;
}

/* The result, as JSON (--json) or text, and the errors on stderr. */
static void print_report(const struct cfg *c, const char *target, const struct totals *t,
                         const struct smbrdma_info *before, const struct smbrdma_info *after,
                         bool registered, double secs, double cpu)
{
	double gib = (double)(t->rbytes + t->wbytes) / (1u << 30);
	if (c->json) {
		printf("{\n  \"tool\": \"smbrdma-bench\", \"version\": \"%s\",\n",
		       smbrdma_version());
		printf("  \"target\": \"%s\", \"rw\": \"%s\", \"bs\": %zu, \"iodepth\": %u, "
		       "\"numjobs\": %u, \"size\": %" PRIu64 ", \"runtime_s\": %.3f,\n",
		       target, c->rw_name, c->bs, c->depth, c->jobs, c->size, secs);
		printf("  \"session\": {\"dialect\": \"0x%04x\", \"channels\": %u, "
		       "\"rdma_channels\": %u, \"signing\": %s, \"encryption\": %s, "
		       "\"registered\": %s},\n",
		       after->dialect, after->channels, after->rdma_channels,
		       after->signing ? "true" : "false", after->encryption ? "true" : "false",
		       registered ? "true" : "false");
		json_dir(stdout, "read", t->rbytes, &t->rl, secs, false);
		json_dir(stdout, "write", t->wbytes, &t->wl, secs, false);
		printf("  \"bytes\": {\"rdma\": %" PRIu64 ", \"inline\": %" PRIu64
		       ", \"copied\": %" PRIu64 "},\n",
		       after->rdma_bytes - before->rdma_bytes,
		       after->inline_bytes - before->inline_bytes,
		       after->copied_bytes - before->copied_bytes);
		printf("  \"cpu_s\": %.3f, \"cpu_s_per_gib\": %.3f,\n", cpu,
		       gib > 0 ? cpu / gib : 0);
		printf("  \"verify\": %s, \"mismatches\": %" PRIu64 ", \"errors\": %" PRIu64
		       ", \"first_error\": \"%s\"\n}\n",
		       c->verify ? "true" : "false", t->mism, t->errors,
		       t->first_err ? strerror(-t->first_err) : "");
	} else {
		printf("smbrdma-bench %s: %s %s bs=%zu iodepth=%u numjobs=%u, %.2f s, dialect "
		       "0x%04x, %u channel(s), %u RDMA, buffers %sregistered\n",
		       smbrdma_version(), target, c->rw_name, c->bs, c->depth, c->jobs, secs,
		       after->dialect, after->channels, after->rdma_channels,
		       registered ? "" : "not ");
		text_dir("read", t->rbytes, &t->rl, secs);
		text_dir("write", t->wbytes, &t->wl, secs);
		printf("bytes by RDMA %" PRIu64 ", inline %" PRIu64 ", copied %" PRIu64
		       "; CPU %.2f s (%.2f s/GiB)\n",
		       after->rdma_bytes - before->rdma_bytes,
		       after->inline_bytes - before->inline_bytes,
		       after->copied_bytes - before->copied_bytes, cpu, gib > 0 ? cpu / gib : 0);
		if (c->verify)
			printf("verify: %" PRIu64 " mismatching block(s)\n", t->mism);
	}
	if (t->errors)
		fprintf(stderr, "smbrdma-bench: %" PRIu64 " I/O error(s); the first: %s\n",
		        t->errors, strerror(-t->first_err));
	if (t->mism)
		fprintf(stderr, "smbrdma-bench: verify failed: %" PRIu64 " block(s) differ\n",
		        t->mism);
}

/* ---- main --------------------------------------------------------------------------- */

/* Open and lay out each job's file, its slots on its share of mem.  0, or
 * 1 when one failed (said why; what was made is in jobs[] to free). */
static int jobs_setup(struct smbrdma *s, struct cfg *c, uint8_t *mem, struct job **jobs)
{
	for (unsigned i = 0; i < c->jobs; i++) {
		struct job *j = calloc(1, sizeof(*j) + c->depth * sizeof(struct slot));
		if (!j)
			return 1;
		jobs[i] = j;
		j->cfg = c;
		j->rng = 0x9e3779b97f4a7c15ULL ^ (i + 1);
		pthread_mutex_init(&j->lock, NULL);
		if (c->jobs > 1)
			snprintf(j->path, sizeof(j->path), "%s.%u", c->path, i);
		else
			snprintf(j->path, sizeof(j->path), "%s", c->path);
		if (c->verify && c->do_write) {
			j->written = calloc(c->size / c->bs / 8 + 1, 1);
			if (!j->written)
				return 1;
		}
		int rc = smbrdma_open(s, j->path, O_RDWR | O_CREAT, &j->f);
		if (!rc)
			rc =
			    layout(j, mem + (size_t)i * c->depth * c->bs, (size_t)c->depth * c->bs);
		for (unsigned k = 0; k < c->depth; k++) {
			j->slots[k].job = j;
			j->slots[k].buf = mem + ((size_t)i * c->depth + k) * c->bs;
		}
		if (rc) {
			fprintf(stderr, "smbrdma-bench: %s: %s\n", j->path, strerror(-rc));
			return 1;
		}
	}
	return 0;
}

/* Wait for runtime seconds, or until every job ran out of work; then stop
 * them and wait for what is in flight. */
static void wait_done(double runtime)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	double whole = floor(runtime < 1e8 ? runtime : 1e8);
	deadline.tv_sec += (time_t)whole;
	deadline.tv_nsec += (long)((runtime < 1e8 ? runtime - whole : 0) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&all_lock);
	while (all_inflight && pthread_cond_timedwait(&all_cv, &all_lock, &deadline) == 0)
		;
	atomic_store(&stop_flag, true);
	while (all_inflight)
		pthread_cond_wait(&all_cv, &all_lock);
	pthread_mutex_unlock(&all_lock);
}

int main(int argc, char **argv)
{
	struct cfg c = {.bs = 4096,
	                .depth = 1,
	                .jobs = 1,
	                .size = 64u << 20,
	                .do_read = true,
	                .rw_name = "read",
	                .mixread = 50};
	smbrdma_params_init(&c.p);
	if (parse_args(argc, argv, &c))
		return 2;
	char *host = NULL, *share = NULL;
	if (parse_unc(argv[optind], &c, &host, &share)) {
		fprintf(stderr, "smbrdma-bench: %s: expected //SERVER[:PORT]/SHARE/PATH\n",
		        argv[optind]);
		return 2;
	}
	const char *bad = c.size % c.bs || c.size < c.bs   ? "--size must be a multiple of --bs"
	                  : c.time_based && c.runtime <= 0 ? "--time_based needs --runtime"
	                                                   : NULL;
	if (bad) {
		fprintf(stderr, "smbrdma-bench: %s\n", bad);
		free(host);
		free(share);
		return 2;
	}
	if (c.runtime <= 0)
		c.runtime = 1e9; /* until --size is done */
	c.p.server = host;
	c.p.share = share;
	if (!c.p.password)
		c.p.password = getenv("PASSWD");

	char err[512];
	struct smbrdma *s;
	int rc = smbrdma_connect(&c.p, &s, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "smbrdma-bench: %s\n", err);
		free(host);
		free(share);
		return 1;
	}
	if (c.meta) {
		int mrc = run_meta(s, &c, argv[optind]);
		smbrdma_disconnect(s);
		free(host);
		free(share);
		return mrc;
	}

	size_t slab = (size_t)c.jobs * c.depth * c.bs;
	uint8_t *mem = NULL;
	if (posix_memalign((void **)&mem, 4096, slab)) {
		fprintf(stderr, "smbrdma-bench: cannot allocate %zu bytes of buffers\n", slab);
		smbrdma_disconnect(s);
		free(host);
		free(share);
		return 1;
	}
	memset(mem, 0, slab);
	int reg = c.no_register ? -EOPNOTSUPP : smbrdma_register(s, mem, slab);

	struct job *jobs[MAX_JOBS] = {0};
	int status = jobs_setup(s, &c, mem, jobs);
	struct smbrdma_info before;
	smbrdma_get_info(s, &before);
	double cpu0 = cpu_seconds();
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < c.jobs && !status; i++) {
		pthread_mutex_lock(&jobs[i]->lock);
		for (unsigned k = 0; k < c.depth; k++)
			if (!job_next_locked(jobs[i], &jobs[i]->slots[k]))
				break;
		pthread_mutex_unlock(&jobs[i]->lock);
	}
	wait_done(c.runtime);
	double secs = ns_since(&t0) / 1e9;
	double cpu = cpu_seconds() - cpu0;
	struct smbrdma_info after;
	smbrdma_get_info(s, &after);

	struct totals t = {0};
	for (unsigned i = 0; i < c.jobs && jobs[i]; i++) {
		struct job *j = jobs[i];
		if (j->f && j->written && !status)
			verify_written(j, j->slots[0].buf);
		totals_add(&t, j);
	}
	print_report(&c, argv[optind], &t, &before, &after, reg == 0, secs, cpu);
	for (unsigned i = 0; i < c.jobs && jobs[i]; i++) {
		if (jobs[i]->f) {
			smbrdma_close(jobs[i]->f);
			if (!c.keep && c.do_write)
				smbrdma_unlink(s, jobs[i]->path);
		}
		pthread_mutex_destroy(&jobs[i]->lock);
		free(jobs[i]->written);
		free(jobs[i]);
	}
	smbrdma_disconnect(s);
	free(mem);
	free(host);
	free(share);
	return status || t.errors || t.mism ? 1 : 0;
}
