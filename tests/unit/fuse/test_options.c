/* tests/unit/fuse/test_options.c — the -o option string, credentials files,
 * and the credentials settled from the environment. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* transport=, quic_port=, cafile=: later values win; rdma is transport=rdma. */
static void test_transport(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "transport=quic,quic_port=8443,cafile=/etc/hostname", false, err,
	               sizeof(err)),
	         0);
	CHECK(o.transport && strcmp(o.transport, "quic") == 0 && !o.rdma);
	CHECK_EQ(o.quic_port, 8443);
	CHECK(o.cafile && strcmp(o.cafile, "/etc/hostname") == 0);
	smb_mount_opts_free(&o);
	/* each file in its own slot */
	CHECK_EQ(parse(&o, "keyfile=/etc/group,certfile=/etc/passwd,cafile=/etc/hostname", false,
	               err, sizeof(err)),
	         0);
	CHECK(o.cafile && strcmp(o.cafile, "/etc/hostname") == 0);
	CHECK(o.certfile && strcmp(o.certfile, "/etc/passwd") == 0);
	CHECK(o.keyfile && strcmp(o.keyfile, "/etc/group") == 0);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "transport=auto,transport=rdma", false, err, sizeof(err)), 0);
	CHECK(o.rdma && o.transport == NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "rdma,transport=tcp", false, err, sizeof(err)), 0);
	CHECK(!o.rdma && strcmp(o.transport, "tcp") == 0);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "transport=udp", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'transport'") != NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "quic_port=0", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "cafile=/no/such/ca.pem", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "/no/such/ca.pem") != NULL);
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
	    {"daemon_user=", "daemon_user"},
	    {"daemon_user", "needs a value"},
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
	    {"username=bob%pw,ro", "username=bob%**,ro"},
	    {"user=D/bob%p=q,uid=1", "user=D/bob%***,uid=1"},
	    {"user,username=bob", "user,username=bob"},
	    {"domain=a%b", "domain=a%b"},
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

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void show_str(const char *expr, const char *a, const char *b, int line)
{
	if (!streq(a, b))
		fprintf(stderr, "  line %d: %s is '%s', want '%s'\n", line, expr, a ? a : "(null)",
		        b);
}

#define CHECK_STR(a, b)                           \
	do {                                      \
		CHECK(streq((a), (b)));           \
		show_str(#a, (a), (b), __LINE__); \
	} while (0)

/* The variables smb_mount_opts_finish() reads, cleared for each case. */
static void clear_env(void)
{
	unsetenv("USER");
	unsetenv("PASSWD");
	unsetenv("PASSWD_FD");
	unsetenv("PASSWD_FILE");
}

static int finish(struct smb_mount_opts *o, const char *s, char *err, size_t len)
{
	int rc = parse(o, s, false, err, len);
	return rc < 0 ? rc : smb_mount_opts_finish(o, err, len);
}

static char tmpdir[] = "/tmp/smbrdma-test-options.XXXXXX";

static const char *write_file(const char *name, const char *text, mode_t mode)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
	return path;
}

static void test_sec(void)
{
	static const struct {
		const char *opts;
		enum smb_mount_sec sec;
		bool signing;
	} cases[] = {
	    {"", SMB_MOUNT_SEC_NTLMSSP, false},
	    {"sec=ntlmssp", SMB_MOUNT_SEC_NTLMSSP, false},
	    {"sec=ntlmsspi", SMB_MOUNT_SEC_NTLMSSP, true},
	    {"sec=krb5", SMB_MOUNT_SEC_KRB5, false},
	    {"sec=krb5i", SMB_MOUNT_SEC_KRB5, true},
	    {"sec=none", SMB_MOUNT_SEC_NONE, false},
	    {"sec=krb5i,sec=krb5", SMB_MOUNT_SEC_KRB5, false},
	    {"sign,sec=krb5", SMB_MOUNT_SEC_KRB5, true},
	};
	static const char *const bad[] = {"sec=ntlm", "sec=ntlmv2i", "sec=krb5p",
	                                  "sec=KRB5", "sec=",        "sec=lanman"};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), 0);
		CHECK_EQ(o.sec, cases[i].sec);
		CHECK_EQ(smb_mount_opts_signing(&o), cases[i].signing);
		smb_mount_opts_free(&o);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "'sec'") &&
		      strstr(err, "ntlmssp, ntlmsspi, krb5, krb5i or none"));
		smb_mount_opts_free(&o);
	}
	CHECK_EQ(parse(&o, "sec", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "needs a value") != NULL);
	smb_mount_opts_free(&o);
	CHECK_STR(smb_mount_sec_str(SMB_MOUNT_SEC_KRB5), "krb5");
}

static void test_sign_seal_guest(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK(!o.sign && !o.seal && !o.guest);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "sign,seal,guest", false, err, sizeof(err)), 0);
	CHECK(o.sign && o.seal && o.guest);
	CHECK(smb_mount_opts_signing(&o));
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "seal", false, err, sizeof(err)), 0);
	CHECK(o.seal && !smb_mount_opts_signing(&o));
	smb_mount_opts_free(&o);
	/* flags take no value; mount.cifs has no "nosign" */
	CHECK_EQ(parse(&o, "sign=1", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "nosign", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
	/* seal needs SMB 3 */
	clear_env();
	CHECK_EQ(finish(&o, "seal,vers=2.1,username=u,password=p", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'seal' (encryption) needs SMB 3") != NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "seal,vers=3,username=u,password=p", err, sizeof(err)), 0);
	smb_mount_opts_free(&o);
}

static void test_creds_file(void)
{
	struct smb_mount_opts o;
	char err[512] = "", opt[PATH_MAX + 16];
	const char *path = write_file("creds",
	                              "# a comment line\n"
	                              "\n"
	                              "  username=alice\n"
	                              "\tpassword=p=a,ss w#rd \n"
	                              "domain=CORP\n"
	                              "frobnicate=1\n"
	                              "#password=not-this\n"
	                              "no equals sign here\n",
	                              0600);

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), 0);
	CHECK_STR(o.user, "alice");
	CHECK_STR(o.password, "p=a,ss w#rd "); /* verbatim to the end of the line */
	CHECK_STR(o.domain, "CORP");
	CHECK_STR(o.password_from, "credentials file");
	smb_mount_opts_free(&o);

	/* the option, and its alias; other options around it */
	snprintf(opt, sizeof(opt), "ro,credentials=%s,uid=3", path);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), 0);
	CHECK(o.ro && o.uid == 3);
	CHECK_STR(o.user, "alice");
	smb_mount_opts_free(&o);
	snprintf(opt, sizeof(opt), "cred=%s", path);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), 0);
	CHECK_STR(o.password, "p=a,ss w#rd ");
	smb_mount_opts_free(&o);

	/* options and the file's lines take effect in order: later wins */
	snprintf(opt, sizeof(opt), "credentials=%s,username=bob,password=pw2", path);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), 0);
	CHECK_STR(o.user, "bob");
	CHECK_STR(o.password, "pw2");
	CHECK_STR(o.domain, "CORP");
	CHECK_STR(o.password_from, "password=");
	smb_mount_opts_free(&o);
	snprintf(opt, sizeof(opt), "username=bob,password=pw2,credentials=%s", path);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), 0);
	CHECK_STR(o.user, "alice");
	CHECK_STR(o.password, "p=a,ss w#rd ");
	smb_mount_opts_free(&o);

	/* mount.cifs's key matching: by prefix, any case; CR LF line ends */
	path = write_file("creds-crlf",
	                  "User=carol\r\nPASS=x y\r\nworkgroup=WG\r\npassword2=no\r\n", 0600);
	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), 0);
	CHECK_STR(o.user, "carol");
	CHECK_STR(o.password, "x y");
	CHECK_STR(o.domain, "WG");
	smb_mount_opts_free(&o);
	path = write_file("creds-short", "usr=nobody\ndom=D2\npassword=last-line-no-newline", 0600);
	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), 0);
	CHECK(o.user == NULL);
	CHECK_STR(o.domain, "D2");
	CHECK_STR(o.password, "last-line-no-newline");
	smb_mount_opts_free(&o);
}

/* daemon_user= is kept as given (fuse/privs.c resolves it); a credentials
 * file others can read draws a warning, one of mode 600 none. */
static void test_daemon_user_and_creds_warning(void)
{
	struct smb_mount_opts o;
	char err[512] = "";

	CHECK_EQ(parse(&o, "daemon_user=nobody,daemon_user=root", false, err, sizeof(err)), 0);
	CHECK_STR(o.daemon_user, "root");
	smb_mount_opts_free(&o);
	CHECK(o.daemon_user == NULL);

	const char *path = write_file("creds-mode", "username=u\npassword=p\n", 0600);
	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), 0);
	CHECK_STR(o.warning, "");
	smb_mount_opts_free(&o);
	CHECK_EQ(chmod(path, 0644), 0);
	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), 0);
	CHECK(strstr(o.warning, "is readable by everyone (mode 0644)") != NULL);
	smb_mount_opts_free(&o);
}

static void test_creds_file_errors(void)
{
	struct smb_mount_opts o;
	char err[512] = "", want[PATH_MAX + 64], opt[PATH_MAX + 16];
	char missing[PATH_MAX];

	snprintf(missing, sizeof(missing), "%s/no-such-file", tmpdir);
	snprintf(opt, sizeof(opt), "credentials=%s", missing);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "credentials file %s: %s", missing, strerror(ENOENT));
	CHECK_STR(err, want);
	smb_mount_opts_free(&o);

	snprintf(opt, sizeof(opt), "credentials=%s", tmpdir);
	CHECK(parse(&o, opt, false, err, sizeof(err)) < 0); /* a directory */
	CHECK(strstr(err, "credentials file") != NULL);
	smb_mount_opts_free(&o);

	if (geteuid() != 0) { /* root reads a mode-000 file anyway */
		const char *path = write_file("creds-000", "username=u\n", 0);
		snprintf(opt, sizeof(opt), "credentials=%s", path);
		CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), -EACCES);
		CHECK(strstr(err, strerror(EACCES)) != NULL);
		smb_mount_opts_free(&o);
	}

	CHECK_EQ(parse(&o, "credentials", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "needs a value") != NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "credentials=", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);

	/* a line longer than any password is refused, not cut */
	size_t n = SMB_PASSWORD_MAX + 5000;
	char *big = malloc(n + 16);
	CHECK(big != NULL);
	if (big) {
		memcpy(big, "password=", 9);
		memset(big + 9, 'x', n - 9);
		strcpy(big + n, "\n");
		const char *path = write_file("creds-long", big, 0600);
		CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
		CHECK_EQ(smb_creds_file_parse(&o, path, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "line 1 is longer") != NULL);
		smb_mount_opts_free(&o);
		free(big);
	}
}

static void test_username_forms(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	clear_env();
	CHECK_EQ(finish(&o, "username=bob%se,,ro", err, sizeof(err)), 0);
	CHECK_STR(o.user, "bob");
	CHECK_STR(o.password, "se"); /* ",," escapes only inside password= */
	CHECK(o.ro);
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "username=bob%p=w d,ro", err, sizeof(err)), 0);
	CHECK_STR(o.user, "bob");
	CHECK_STR(o.password, "p=w d");
	CHECK_STR(o.password_from, "username=user%password");
	CHECK(o.ro);
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "domain=X,username=CORP/alice,password=pw", err, sizeof(err)), 0);
	CHECK_STR(o.user, "alice");
	CHECK_STR(o.domain, "CORP");
	CHECK_STR(o.password, "pw");
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "user=CORP\\alice%pw", err, sizeof(err)), 0);
	CHECK_STR(o.user, "alice");
	CHECK_STR(o.domain, "CORP");
	CHECK_STR(o.password, "pw");
	smb_mount_opts_free(&o);
	/* from a credentials file too */
	char opt[PATH_MAX + 16];
	snprintf(opt, sizeof(opt), "credentials=%s",
	         write_file("creds-forms", "username=DOM/dave%pw2\n", 0600));
	CHECK_EQ(finish(&o, opt, err, sizeof(err)), 0);
	CHECK_STR(o.user, "dave");
	CHECK_STR(o.domain, "DOM");
	CHECK_STR(o.password, "pw2");
	smb_mount_opts_free(&o);
	/* Kerberos: the name is a principal, taken whole; no password */
	CHECK_EQ(finish(&o, "sec=krb5,username=host/srv%x@REALM,password=pw", err, sizeof(err)), 0);
	CHECK_STR(o.user, "host/srv%x@REALM");
	CHECK(o.password == NULL && o.password_from == NULL && o.domain == NULL);
	CHECK(!smb_mount_opts_need_password(&o));
	smb_mount_opts_free(&o);
}

static void test_env(void)
{
	struct smb_mount_opts o;
	char err[512] = "", want[PATH_MAX + 64];
	int fds[2];

	/* USER names the user; PASSWD gives the password, and is wiped */
	clear_env();
	setenv("USER", "envuser", 1);
	setenv("PASSWD", "env-secret", 1);
	CHECK_EQ(finish(&o, "", err, sizeof(err)), 0);
	CHECK_STR(o.user, "envuser");
	CHECK_STR(o.password, "env-secret");
	CHECK_STR(o.password_from, "PASSWD");
	CHECK(getenv("PASSWD") == NULL);
	smb_mount_opts_free(&o);

	/* options win over the environment; PASSWD is wiped all the same */
	setenv("PASSWD", "env-secret", 1);
	CHECK_EQ(finish(&o, "username=u,password=opt", err, sizeof(err)), 0);
	CHECK_STR(o.user, "u");
	CHECK_STR(o.password, "opt");
	CHECK(getenv("PASSWD") == NULL);
	smb_mount_opts_free(&o);

	/* USER is taken as it is (mount.cifs does not split it) */
	setenv("USER", "D/x%y", 1);
	CHECK_EQ(finish(&o, "password=p", err, sizeof(err)), 0);
	CHECK_STR(o.user, "D/x%y");
	smb_mount_opts_free(&o);

	/* no USER: the name of the real uid */
	clear_env();
	struct passwd *pw = getpwuid(getuid());
	CHECK_EQ(finish(&o, "", err, sizeof(err)), 0);
	if (pw)
		CHECK_STR(o.user, pw->pw_name);
	CHECK(o.password == NULL);
	CHECK(smb_mount_opts_need_password(&o));
	smb_mount_opts_free(&o);

	/* PASSWD_FD: one line from the descriptor */
	CHECK_EQ(pipe(fds), 0);
	CHECK(write(fds[1], "fd pass,=\r\nsecond line\n", 23) == 23);
	close(fds[1]);
	snprintf(want, sizeof(want), "%d", fds[0]);
	setenv("PASSWD_FD", want, 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), 0);
	CHECK_STR(o.password, "fd pass,=");
	CHECK_STR(o.password_from, "PASSWD_FD");
	smb_mount_opts_free(&o);
	close(fds[0]);
	setenv("PASSWD_FD", "x3", 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "PASSWD_FD=x3") != NULL);
	smb_mount_opts_free(&o);
	setenv("PASSWD_FD", "987", 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), -EBADF);
	CHECK(strstr(err, "PASSWD_FD=987") && strstr(err, strerror(EBADF)));
	smb_mount_opts_free(&o);
	unsetenv("PASSWD_FD");

	/* PASSWD_FILE: its first line */
	const char *path = write_file("pwfile", "file pass w=rd\nnot this\n", 0600);
	setenv("PASSWD_FILE", path, 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), 0);
	CHECK_STR(o.password, "file pass w=rd");
	CHECK_STR(o.password_from, "PASSWD_FILE");
	smb_mount_opts_free(&o);
	/* PASSWD comes before PASSWD_FD and PASSWD_FILE */
	setenv("PASSWD", "first", 1);
	setenv("PASSWD_FD", "987", 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), 0);
	CHECK_STR(o.password, "first");
	smb_mount_opts_free(&o);
	unsetenv("PASSWD_FD");
	char missing[PATH_MAX];
	snprintf(missing, sizeof(missing), "%s/no-pw-file", tmpdir);
	setenv("PASSWD_FILE", missing, 1);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "PASSWD_FILE=%s: %s", missing, strerror(ENOENT));
	CHECK_STR(err, want);
	smb_mount_opts_free(&o);
	clear_env();
}

static void test_guest_and_none(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	clear_env();
	setenv("USER", "envuser", 1);
	setenv("PASSWD", "env-secret", 1);
	/* guest: no password, no USER, no prompt */
	CHECK_EQ(finish(&o, "guest", err, sizeof(err)), 0);
	CHECK_STR(o.user, "");
	CHECK_STR(o.password, "");
	CHECK(!smb_mount_opts_need_password(&o));
	CHECK(getenv("PASSWD") == NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "guest,username=g,password=ignored", err, sizeof(err)), 0);
	CHECK_STR(o.user, "g");
	CHECK_STR(o.password, "");
	smb_mount_opts_free(&o);
	/* sec=none: anonymous, whatever else was given */
	CHECK_EQ(finish(&o, "username=u,password=p,domain=d,sec=none", err, sizeof(err)), 0);
	CHECK_STR(o.user, "");
	CHECK_STR(o.password, "");
	CHECK_STR(o.domain, "");
	CHECK(!smb_mount_opts_need_password(&o));
	smb_mount_opts_free(&o);
	/* krb5: no USER default, no PASSWD, no prompt */
	setenv("PASSWD", "env-secret", 1);
	CHECK_EQ(finish(&o, "sec=krb5", err, sizeof(err)), 0);
	CHECK(o.user == NULL && o.password == NULL);
	CHECK(!smb_mount_opts_need_password(&o));
	CHECK(getenv("PASSWD") == NULL);
	smb_mount_opts_free(&o);
	clear_env();
	/* a password given as empty is a password: no prompt */
	CHECK_EQ(finish(&o, "username=u,password=", err, sizeof(err)), 0);
	CHECK_STR(o.password, "");
	CHECK(!smb_mount_opts_need_password(&o));
	smb_mount_opts_free(&o);
	CHECK_EQ(finish(&o, "username=u", err, sizeof(err)), 0);
	CHECK(smb_mount_opts_need_password(&o));
	smb_mount_opts_free(&o);
}

static void test_keytab(void)
{
	struct smb_mount_opts o;
	char err[512] = "", opt[PATH_MAX + 32], cwd[PATH_MAX], want[PATH_MAX + 64];
	const char *path = write_file("client.keytab", "\x05\x02", 0600);

	clear_env();
	snprintf(opt, sizeof(opt), "keytab=%s", path);
	CHECK_EQ(parse(&o, opt, false, err, sizeof(err)), 0);
	CHECK_STR(o.keytab, path);
	CHECK_EQ(smb_mount_opts_finish(&o, err, sizeof(err)), 0);
	CHECK_EQ(o.sec, SMB_MOUNT_SEC_KRB5); /* implied */
	smb_mount_opts_free(&o);
	snprintf(opt, sizeof(opt), "sec=krb5i,keytab=%s", path);
	CHECK_EQ(finish(&o, opt, err, sizeof(err)), 0);
	CHECK(o.sec == SMB_MOUNT_SEC_KRB5 && smb_mount_opts_signing(&o));
	smb_mount_opts_free(&o);

	/* a relative path is made absolute: the daemon works from "/" */
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK_EQ(chdir(tmpdir), 0);
	CHECK_EQ(finish(&o, "keytab=client.keytab", err, sizeof(err)), 0);
	CHECK_STR(o.keytab, path);
	smb_mount_opts_free(&o);
	CHECK_EQ(chdir(cwd), 0);

	snprintf(opt, sizeof(opt), "sec=ntlmssp,keytab=%s", path);
	CHECK_EQ(finish(&o, opt, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "'keytab' needs sec=krb5") != NULL);
	smb_mount_opts_free(&o);
	snprintf(opt, sizeof(opt), "keytab=%s/none", tmpdir);
	CHECK_EQ(finish(&o, opt, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "keytab %s/none: %s", tmpdir, strerror(ENOENT));
	CHECK_STR(err, want);
	smb_mount_opts_free(&o);
	snprintf(opt, sizeof(opt), "keytab=%s", tmpdir);
	CHECK_EQ(finish(&o, opt, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "not a regular file") != NULL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "keytab", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "keytab=", false, err, sizeof(err)), -EINVAL);
	smb_mount_opts_free(&o);
}

static void test_redact(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"username=u,password=secret,ro", "username=u,password=***,ro"},
	    {"pass=a,,b,uid=1", "pass=***,uid=1"},
	    {"ro,password=", "ro,password="},
	    {"username=bob%pw,domain=D", "username=bob%***,domain=D"},
	    {"user=bob%", "user=bob%"},
	    {"credentials=/etc/c,sec=krb5", "credentials=/etc/c,sec=krb5"},
	    {"password=******,ro", "password=***,ro"}, /* already scrubbed */
	};
	char buf[128], small[12];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		smb_mount_opts_redact(cases[i].in, buf, sizeof(buf));
		CHECK_STR(buf, cases[i].out);
	}
	smb_mount_opts_redact("username=u,password=secret", small, sizeof(small));
	CHECK_STR(small, "username=u,");
}

static void test_cache(void)
{
	static const struct {
		const char *opts;
		enum smb_mount_cache cache;
	} cases[] = {
	    {"", SMB_MOUNT_CACHE_STRICT},
	    {"cache=strict", SMB_MOUNT_CACHE_STRICT},
	    {"cache=none", SMB_MOUNT_CACHE_NONE},
	    {"cache=loose", SMB_MOUNT_CACHE_LOOSE},
	    {"cache=none,cache=strict", SMB_MOUNT_CACHE_STRICT},
	};
	static const char *const bad[] = {"cache=", "cache=ro", "cache=singleclient", "cache=LOOSE",
	                                  "cache=strict,cache=nonee"};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), 0);
		CHECK_EQ(o.cache, cases[i].cache);
		smb_mount_opts_free(&o);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "'cache'") && strstr(err, "strict, none or loose"));
		smb_mount_opts_free(&o);
	}
	CHECK_EQ(parse(&o, "cache", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "needs a value") != NULL);
	smb_mount_opts_free(&o);
	CHECK_STR(smb_mount_cache_str(SMB_MOUNT_CACHE_LOOSE), "loose");
	CHECK_STR(smb_mount_cache_str(SMB_MOUNT_CACHE_NONE), "none");
	CHECK_STR(smb_mount_cache_str(SMB_MOUNT_CACHE_STRICT), "strict");
}

/* handlecache (the default) / nohandlecache and max_cached_dirs=, as mount.cifs. */
static void test_handlecache(void)
{
	struct smb_mount_opts o;
	char err[256];

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK(!o.nohandlecache);
	CHECK_EQ(o.cached_dirs, SMB_MAX_CACHED_DIRS_DEFAULT);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "nohandlecache,max_cached_dirs=16", false, err, sizeof(err)), 0);
	CHECK(o.nohandlecache);
	CHECK_EQ(o.cached_dirs, 16u);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "nohandlecache,handlecache,max_cached_dirs=0", false, err, sizeof(err)),
	         0);
	CHECK(!o.nohandlecache);
	CHECK_EQ(o.cached_dirs, 0u);
	smb_mount_opts_free(&o);
	err[0] = '\0';
	CHECK_EQ(parse(&o, "max_cached_dirs=65537", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "max_cached_dirs") != NULL);
	smb_mount_opts_free(&o);
}

/* io_uring / noio_uring (last wins; by name it is required) and io_uring_depth=. */
static void test_io_uring(void)
{
	struct smb_mount_opts o;
	char err[256];

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK(!o.noio_uring);
	CHECK(!o.io_uring_required);
	CHECK_EQ(o.uring_depth, 0u);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "io_uring,io_uring_depth=4", false, err, sizeof(err)), 0);
	CHECK(!o.noio_uring);
	CHECK(o.io_uring_required);
	CHECK_EQ(o.uring_depth, 4u);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "io_uring,noio_uring", false, err, sizeof(err)), 0);
	CHECK(o.noio_uring);
	CHECK(!o.io_uring_required);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "noio_uring,io_uring", false, err, sizeof(err)), 0);
	CHECK(!o.noio_uring);
	CHECK(o.io_uring_required);
	smb_mount_opts_free(&o);
	err[0] = '\0';
	CHECK_EQ(parse(&o, "io_uring_depth=0", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "io_uring_depth") != NULL);
	smb_mount_opts_free(&o);
}

static void test_rsize_wsize(void)
{
	static const struct {
		const char *opts;
		unsigned rsize, wsize;
	} cases[] = {
	    {"", 0, 0},
	    {"rsize=65536,wsize=131072", 65536, 131072},
	    {"rsize=1,wsize=4095", 4096, 4096},                      /* below 4096: 4096 */
	    {"rsize=70000,wsize=8191", 69632, 4096},                 /* rounded down to 4 KiB */
	    {"rsize=16777216,wsize=4294967295", 8u << 20, 8u << 20}, /* at most 8 MiB */
	    {"rsize=8388608", 8u << 20, 0},
	};
	static const char *const bad[] = {
	    "rsize=0",  "wsize=0",      "rsize=",           "wsize=-4096",
	    "rsize=1k", "wsize=0x1000", "rsize=4294967296", "wsize= 4096"};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), 0);
		CHECK_EQ(o.rsize, cases[i].rsize);
		CHECK_EQ(o.wsize, cases[i].wsize);
		smb_mount_opts_free(&o);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, bad[i][0] == 'r' ? "'rsize'" : "'wsize'") != NULL);
		smb_mount_opts_free(&o);
	}
	CHECK_EQ(parse(&o, "wsize", false, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "needs a value") != NULL);
	smb_mount_opts_free(&o);
}

/* rasize=: bytes of read-ahead, as mount.cifs's. */
static void test_rasize(void)
{
	static const struct {
		const char *opts;
		unsigned rasize;
	} cases[] = {
	    {"", 0},                          /* the default, SMB_RASIZE_DEFAULT */
	    {"rasize=4194304", 4u << 20},     /* as given */
	    {"rasize=1", 4096},               /* below 4096: 4096 */
	    {"rasize=1050000", 1048576},      /* rounded down to 4 KiB */
	    {"rasize=4294967295", 64u << 20}, /* at most 64 MiB */
	};
	static const char *const bad[] = {"rasize=0", "rasize=", "rasize=2M", "rasize=-1",
	                                  "rasize=4294967296"};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), 0);
		CHECK_EQ(o.rasize, cases[i].rasize);
		smb_mount_opts_free(&o);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "'rasize'") != NULL);
		smb_mount_opts_free(&o);
	}
}

static void test_ip(void)
{
	static const struct {
		const char *opts, *ip;
	} cases[] = {
	    {"ip=127.0.0.1", "127.0.0.1"},
	    {"addr=10.1.2.3", "10.1.2.3"},
	    {"ip=::1", "::1"},
	    {"ip=[fe80::1]", "fe80::1"},
	    {"ip=1.2.3.4,addr=5.6.7.8", "5.6.7.8"}, /* the later one */
	};
	static const char *const bad[] = {
	    "ip=", "ip=localhost", "ip=1.2.3.4.5", "addr=300.1.1.1", "ip=[]", "ip=host.example"};
	struct smb_mount_opts o;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ(parse(&o, cases[i].opts, false, err, sizeof(err)), 0);
		CHECK_STR(o.ip, cases[i].ip);
		smb_mount_opts_free(&o);
		CHECK(o.ip == NULL);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, bad[i][0] == 'i' ? "'ip'" : "'addr'") &&
		      strstr(err, "numeric IPv4 or IPv6"));
		smb_mount_opts_free(&o);
	}
	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK(o.ip == NULL);
	smb_mount_opts_free(&o);
}

static void test_cifs_flags(void)
{
	struct smb_mount_opts o;
	char err[256] = "";

	CHECK_EQ(parse(&o, "", false, err, sizeof(err)), 0);
	CHECK(!o.hard && !o.noperm && !o.forceuid && !o.forcegid && !o.nosharesock &&
	      !o.nosubtype && !o.nobrl);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "hard,noperm,forceuid,forcegid,nosharesock,nosubtype,nobrl", false, err,
	               sizeof(err)),
	         0);
	CHECK(o.hard && o.noperm && o.forceuid && o.forcegid && o.nosharesock && o.nosubtype &&
	      o.nobrl);
	smb_mount_opts_free(&o);
	/* the later of a pair wins */
	CHECK_EQ(parse(&o,
	               "hard,soft,noperm,perm,forceuid,noforceuid,forcegid,noforcegid,nobrl,brl",
	               false, err, sizeof(err)),
	         0);
	CHECK(!o.hard && !o.noperm && !o.forceuid && !o.forcegid && !o.nobrl);
	smb_mount_opts_free(&o);
	CHECK_EQ(parse(&o, "soft,hard", false, err, sizeof(err)), 0);
	CHECK(o.hard);
	smb_mount_opts_free(&o);
	/* flags take no value, and say so */
	static const char *const bad[] = {"hard=1",     "soft=yes",     "noperm=0",      "perm=1",
	                                  "forceuid=0", "noforcegid=1", "nosharesock=1", "seal=1",
	                                  "nosuid=1",   "_netdev=1",    "nosubtype=1",   "nobrl=1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char key[32];
		snprintf(key, sizeof(key), "'%.*s'", (int)strcspn(bad[i], "="), bad[i]);
		err[0] = '\0';
		CHECK_EQ(parse(&o, bad[i], false, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, key) && strstr(err, "takes no value"));
		smb_mount_opts_free(&o);
		/* sloppy does not excuse it either */
		CHECK_EQ(parse(&o, bad[i], true, err, sizeof(err)), -EINVAL);
		smb_mount_opts_free(&o);
	}
	/* user= is username=, not the fstab flag given a value */
	CHECK_EQ(parse(&o, "user=bob", false, err, sizeof(err)), 0);
	CHECK_STR(o.user, "bob");
	smb_mount_opts_free(&o);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_defaults);
	RUN(test_all_options);
	RUN(test_aliases);
	RUN(test_transport);
	RUN(test_vers);
	RUN(test_password_commas);
	RUN(test_mount8_options);
	RUN(test_errors);
	RUN(test_sloppy);
	RUN(test_names);
	RUN(test_scrub);
	RUN(test_sec);
	RUN(test_sign_seal_guest);
	RUN(test_creds_file);
	RUN(test_daemon_user_and_creds_warning);
	RUN(test_creds_file_errors);
	RUN(test_username_forms);
	RUN(test_env);
	RUN(test_guest_and_none);
	RUN(test_keytab);
	RUN(test_redact);
	RUN(test_cache);
	RUN(test_handlecache);
	RUN(test_io_uring);
	RUN(test_rsize_wsize);
	RUN(test_rasize);
	RUN(test_ip);
	RUN(test_cifs_flags);

	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return check_report();
}
