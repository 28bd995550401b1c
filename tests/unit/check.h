/* tests/unit/check.h — the smallest test harness that can fail.
 *
 * Each test is a function; CHECK* record failures with file:line and keep
 * going; check_main() returns non-zero if anything failed.  Usage:
 *   static void test_foo(void) { CHECK_EQ(1 + 1, 2); }
 *   int main(void) { RUN(test_foo); return check_report(); }
 */
#ifndef SMBRDMA_TESTS_CHECK_H
#define SMBRDMA_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		check_count++;                                                                   \
		if (!(cond)) {                                                                   \
			check_failures++;                                                        \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		}                                                                                \
	} while (0)

#define CHECK_EQ(a, b)                                                                      \
	do {                                                                                \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);             \
		check_count++;                                                              \
		if (check_a_ != check_b_) {                                                 \
			check_failures++;                                                   \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
			        __LINE__, #a, #b, check_a_, check_b_);                      \
		}                                                                           \
	} while (0)

#define CHECK_MEM(a, b, n)                                                                         \
	do {                                                                                       \
		check_count++;                                                                     \
		if (memcmp((a), (b), (n)) != 0) {                                                  \
			check_failures++;                                                          \
			fprintf(stderr, "%s:%d: memcmp(%s, %s, %s) differs\n", __FILE__, __LINE__, \
			        #a, #b, #n);                                                       \
		}                                                                                  \
	} while (0)

#define RUN(fn)                                                                               \
	do {                                                                                  \
		int before_ = check_failures;                                                 \
		fn();                                                                         \
		fprintf(stderr, "%s %s\n", check_failures == before_ ? "ok  " : "FAIL", #fn); \
	} while (0)

static inline int check_report(void)
{
	fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
	return check_failures ? 1 : 0;
}

/* Parse a hex string (spaces allowed) into out; returns bytes. */
static inline size_t check_hex(const char *hex, unsigned char *out, size_t cap)
{
	size_t n = 0;
	unsigned v = 0;
	int half = 0;
	for (; *hex; hex++) {
		int c = *hex, d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			continue;
		v = (v << 4) | (unsigned)d;
		if (++half == 2) {
			if (n < cap)
				out[n] = (unsigned char)v;
			n++;
			half = 0;
			v = 0;
		}
	}
	return n;
}

#endif
