/* tests/unit/fuse/test_unc.c — parsing //HOST[:PORT]/SHARE[/PATH]. */
#include <errno.h>

#include "fuse/unc.h"
#include "tests/unit/check.h"

static void expect_ok(const char *src, const char *host, unsigned port, const char *share,
                      const char *prefix)
{
	struct smb_unc u;
	char err[256] = "";
	int rc = smb_unc_parse(src, &u, err, sizeof(err));

	CHECK_EQ(rc, 0);
	if (rc) {
		fprintf(stderr, "  %s: %s\n", src, err);
		return;
	}
	CHECK(strcmp(u.host, host) == 0);
	CHECK_EQ(u.port, port);
	CHECK(strcmp(u.share, share) == 0);
	CHECK(strcmp(u.prefix, prefix) == 0);
	smb_unc_free(&u);
}

static void expect_bad(const char *src, const char *needle)
{
	struct smb_unc u;
	char err[256] = "";

	CHECK_EQ(smb_unc_parse(src, &u, err, sizeof(err)), -EINVAL);
	CHECK(err[0] != '\0');
	if (needle && !strstr(err, needle)) {
		fprintf(stderr, "  %s: '%s' lacks '%s'\n", src, err, needle);
		CHECK(strstr(err, needle) != NULL);
	}
	CHECK(u.host == NULL && u.share == NULL && u.prefix == NULL);
}

static void test_good(void)
{
	expect_ok("//server/share", "server", 0, "share", "");
	expect_ok("//server/share/", "server", 0, "share", "");
	expect_ok("//127.0.0.1:4445/data", "127.0.0.1", 4445, "data", "");
	expect_ok("//[::1]:445/share", "::1", 445, "share", "");
	expect_ok("//[fe80::1%eth0]/s", "fe80::1%eth0", 0, "s", "");
	expect_ok("\\\\server\\share", "server", 0, "share", "");
	expect_ok("//h/s/sub//dir/", "h", 0, "s", "sub/dir");
	expect_ok("//h/My Share", "h", 0, "My Share", "");
}

static void test_bad(void)
{
	expect_bad("server/share", "//HOST");
	expect_bad("//server", "share");
	expect_bad("//server/", "share");
	expect_bad("///share", NULL);
	expect_bad("//:445/share", "host");
	expect_bad("//h:0/s", "port");
	expect_bad("//h:65536/s", "port");
	expect_bad("//h:x/s", "port");
	expect_bad("//h:/s", "port");
	expect_bad("//::1/share", "brackets");
	expect_bad("//[::1/share", "]");
	expect_bad("//[::1]x/share", NULL);
	expect_bad("//h/s/../etc", "..");
	expect_bad("//h/s\n", "control");
	expect_bad("", NULL);
}

int main(void)
{
	RUN(test_good);
	RUN(test_bad);
	return check_report();
}
