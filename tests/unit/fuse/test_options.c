/* tests/unit/fuse/test_options.c — the -o option string. */
#include <errno.h>

#include "client/proto/smb2_const.h"
#include "fuse/options.h"
#include "tests/unit/check.h"

static int parse(struct smb_mount_opts *o, const char *s, bool sloppy, char *err, size_t len)
{
	smb_mount_opts_init(o, 1000, 1001);
	return smb_mount_opts_parse(o, s, sloppy, err, len);
}

static void test_defaults(void)
{
	struct smb_mount_opts o;
	char err[256];

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(o.uid, 1000);
	CHECK_EQ(o.gid, 1001);
	CHECK_EQ(o.file_mode, 0644);
	CHECK_EQ(o.dir_mode, 0755);
	CHECK_EQ(o.actimeo, 1);
	CHECK(!o.ro && !o.debug);
	CHECK(o.user == NULL && o.password == NULL && o.domain == NULL);
	CHECK_EQ(o.min_dialect, 0);
	CHECK_EQ(o.max_dialect, 0);
	CHECK_EQ(o.port, 0);
	smb_mount_opts_free(&o);
}

static void test_all_options(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(
	    parse(&o,
	          "username=alice,password=s3cret,domain=CORP,port=4445,vers=3.0,uid=0,"
	          "gid=0,file_mode=0600,dir_mode=700,ro,actimeo=30,debug,rdma,rdma_threshold=65536",
	          false, err, sizeof(err)),
	    0);
	CHECK(o.user && strcmp(o.user, "alice") == 0);
	CHECK(o.password && strcmp(o.password, "s3cret") == 0);
	CHECK(o.domain && strcmp(o.domain, "CORP") == 0);
	CHECK_EQ(o.port, 4445);
	CHECK_EQ(o.min_dialect, SMB2_DIALECT_0300);
	CHECK_EQ(o.max_dialect, SMB2_DIALECT_0300);
	CHECK_EQ(o.uid, 0);
	CHECK_EQ(o.gid, 0);
	CHECK_EQ(o.file_mode, 0600);
	CHECK_EQ(o.dir_mode, 0700);
	CHECK(o.ro);
	CHECK_EQ(o.actimeo, 30);
	CHECK(o.debug);
	CHECK(o.rdma);
	CHECK_EQ(o.rdma_threshold, 65536);
	smb_mount_opts_free(&o);
	CHECK(o.password == NULL);
}

static void test_aliases(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "user=bob,pass=pw,dom=D", false, err, sizeof(err)), 0);
	CHECK(strcmp(o.user, "bob") == 0 && strcmp(o.password, "pw") == 0 &&
	      strcmp(o.domain, "D") == 0);
	CHECK_EQ(smb_mount_opts_parse(&o, "workgroup=W,rw", false, err, sizeof(err)), 0);
	CHECK(strcmp(o.domain, "W") == 0);
	CHECK(!o.ro);
	smb_mount_opts_free(&o);
}

static void test_vers(void)
{
	static const struct {
		const char *s;
		uint16_t min, max;
	} cases[] = {
	    {"2.0", 0x0202, 0x0202},  {"2.1", 0x0210, 0x0210},   {"3.0", 0x0300, 0x0300},
	    {"3.02", 0x0302, 0x0302}, {"3.1.1", 0x0311, 0x0311}, {"3", 0x0300, 0x0311},
	    {"default", 0, 0},
	};
	uint16_t mn, mx;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(smb_parse_vers(cases[i].s, &mn, &mx), 0);
		CHECK_EQ(mn, cases[i].min);
		CHECK_EQ(mx, cases[i].max);
	}
	CHECK_EQ(smb_parse_vers("1.0", &mn, &mx), -EINVAL);
	CHECK_EQ(smb_parse_vers("3.1", &mn, &mx), -EINVAL);
}

static void test_password_commas(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "password=a,,b,,,uid=5", false, err, sizeof(err)), 0);
	CHECK(o.password && strcmp(o.password, "a,b,") == 0);
	CHECK_EQ(o.uid, 5);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "username=x,,ro", false, err, sizeof(err)), 0);
	CHECK(strcmp(o.user, "x") == 0 && o.ro); /* ",," only escapes inside a password */
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "pass=p=q,ro", false, err, sizeof(err)), 0);
	CHECK(strcmp(o.password, "p=q") == 0 && o.ro);
	smb_mount_opts_free(&o);
}

static void test_mount8_options(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o,
	               "defaults,rw,_netdev,noauto,user,nofail,auto,users,relatime,"
	               "x-systemd.automount,comment=foo,nosuid,nodev,noexec,noatime",
	               false, err, sizeof(err)),
	         0);
	CHECK(o.user == NULL); /* "user" without '=' is mount(8)'s flag */
	CHECK(strcmp(o.kernel_flags, "nosuid,nodev,noexec,noatime") == 0);
	smb_mount_opts_free(&o);
}

static void test_errors(void)
{
	static const struct {
		const char *opts;
		const char *needle;
	} cases[] = {
	    {"bogus", "unknown mount option 'bogus'"},
	    {"ro,frobnicate=1", "'frobnicate'"},
	    {"port=0", "port"},
	    {"port=65536", "port"},
	    {"port=", "port"},
	    {"port", "needs a value"},
	    {"vers=1.0", "vers"},
	    {"uid=-1", "uid"},
	    {"uid=no-such-user-xyzzy", "uid"},
	    {"gid=", "gid"},
	    {"file_mode=0999", "file_mode"},
	    {"dir_mode=17777", "dir_mode"},
	    {"actimeo=-1", "actimeo"},
	    {"actimeo=abc", "actimeo"},
	    {"actimeo=99999999999", "actimeo"},
	    {"ro=1", "'ro'"},
	};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].needle)) {
			fprintf(stderr, "  '%s': message '%s' lacks '%s'\n", cases[i].opts, err,
			        cases[i].needle);
			CHECK(strstr(err, cases[i].needle) != NULL);
		}
		smb_mount_opts_free(&o);
	}
}

static void test_sloppy(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "bogus,uid=7,whatever=3", true, err, sizeof(err)), 0);
	CHECK_EQ(o.uid, 7);
	/* sloppy does not excuse a bad value of a known option */
	CHECK_EQ(smb_mount_opts_parse(&o, "uid=x1", true, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
}

static void test_names(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "uid=root,gid=root", false, err, sizeof(err)), 0);
	CHECK_EQ(o.uid, 0);
	CHECK_EQ(o.gid, 0);
	smb_mount_opts_free(&o);
}

static void test_scrub(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"username=u,password=secret,ro", "username=u,password=******,ro"},
	    {"pass=a,,b,uid=1", "pass=****,uid=1"},
	    {"ro,password=", "ro,password="},
	    {"password=x", "password=*"},
	    {"user=a,,b,pass=c", "user=a,,b,pass=*"},
	    {"passwordx=1,pass", "passwordx=1,pass"},
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		smb_mount_opts_scrub(buf);
		CHECK(strcmp(buf, cases[i].out) == 0);
		if (strcmp(buf, cases[i].out) != 0)
			fprintf(stderr, "  scrub '%s' -> '%s', want '%s'\n", cases[i].in, buf,
			        cases[i].out);
	}
}

int main(void)
{
	RUN(test_defaults);
	RUN(test_all_options);
	RUN(test_aliases);
	RUN(test_vers);
	RUN(test_password_commas);
	RUN(test_mount8_options);
	RUN(test_errors);
	RUN(test_sloppy);
	RUN(test_names);
	RUN(test_scrub);
	return check_report();
}
