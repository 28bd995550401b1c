/* fuse/options.c — parse mount.smbrdma's -o string into struct smb_mount_opts. */
#include "fuse/options.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/proto/smb2_const.h"

void smb_mount_opts_init(struct smb_mount_opts *o, uid_t uid, gid_t gid)
{
	memset(o, 0, sizeof(*o));
	o->uid = uid;
	o->gid = gid;
	o->file_mode = 0644;
	o->dir_mode = 0755;
	o->actimeo = SMB_ACTIMEO_DEFAULT;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void smb_mount_opts_free(struct smb_mount_opts *o)
{
	free(o->user);
	wipe_free(o->password);
	free(o->domain);
	free(o->interfaces);
	o->user = o->password = o->domain = o->interfaces = NULL;
}

static const struct {
	const char *name;
	uint16_t min, max;
} vers_table[] = {
    {"2.0", SMB2_DIALECT_0202, SMB2_DIALECT_0202},
    {"2.1", SMB2_DIALECT_0210, SMB2_DIALECT_0210},
    {"3", SMB2_DIALECT_0300, SMB2_DIALECT_0311},
    {"3.0", SMB2_DIALECT_0300, SMB2_DIALECT_0300},
    {"3.02", SMB2_DIALECT_0302, SMB2_DIALECT_0302},
    {"3.0.2", SMB2_DIALECT_0302, SMB2_DIALECT_0302},
    {"3.1.1", SMB2_DIALECT_0311, SMB2_DIALECT_0311},
    {"3.11", SMB2_DIALECT_0311, SMB2_DIALECT_0311},
    {"default", 0, 0},
};

int smb_parse_vers(const char *s, uint16_t *min_dialect, uint16_t *max_dialect)
{
	for (size_t i = 0; i < sizeof(vers_table) / sizeof(vers_table[0]); i++) {
		if (strcmp(s, vers_table[i].name) == 0) {
			*min_dialect = vers_table[i].min;
			*max_dialect = vers_table[i].max;
			return 0;
		}
	}
	return -EINVAL;
}

/* Unsigned decimal (base 10) or octal (base 8) in [0, max]. */
static int parse_unsigned(const char *s, int base, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uid(const char *s, uid_t *uid)
{
	unsigned long v;
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (parse_unsigned(s, 10, (uid_t)-2, &v) == 0) {
		*uid = (uid_t)v;
		return 0;
	}
	if (getpwnam_r(s, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return -EINVAL;
	*uid = res->pw_uid;
	return 0;
}

static int parse_gid(const char *s, gid_t *gid)
{
	unsigned long v;
	struct group gr, *res = NULL;
	char buf[4096];

	if (parse_unsigned(s, 10, (gid_t)-2, &v) == 0) {
		*gid = (gid_t)v;
		return 0;
	}
	if (getgrnam_r(s, &gr, buf, sizeof(buf), &res) != 0 || !res)
		return -EINVAL;
	*gid = res->gr_gid;
	return 0;
}

/* Options that mount(8), fstab or systemd hand us and that mean nothing to
 * this file system. */
static const char *const ignored_flags[] = {
    "defaults",    "auto",          "noauto",   "nofail",     "_netdev",  "user",
    "users",       "nouser",        "owner",    "group",      "relatime", "norelatime",
    "strictatime", "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime",
    "silent",      "loud",          "iversion", "noiversion", "mand",     "nomand",
};

/* Flags the kernel understands on a FUSE mount (libfuse passes them on). */
static const char *const kernel_flags[] = {
    "nosuid", "suid",  "nodev",   "dev",   "noexec",  "exec",
    "sync",   "async", "dirsync", "atime", "noatime",
};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int add_kernel_flag(struct smb_mount_opts *o, const char *flag, char *err, size_t errlen)
{
	size_t used = strlen(o->kernel_flags);
	int n = snprintf(o->kernel_flags + used, sizeof(o->kernel_flags) - used, "%s%s",
	                 used ? "," : "", flag);

	if (n < 0 || (size_t)n >= sizeof(o->kernel_flags) - used) {
		o->kernel_flags[used] = '\0';
		snprintf(err, errlen, "too many mount flags");
		return -EINVAL;
	}
	return 0;
}

static int set_string(char **slot, const char *value, bool secret)
{
	char *copy = strdup(value);

	if (!copy)
		return -ENOMEM;
	if (secret)
		wipe_free(*slot);
	else
		free(*slot);
	*slot = copy;
	return 0;
}

/* One "key" or "key=value" option.  value is NULL when there was no '='. */
static int apply_option(struct smb_mount_opts *o, const char *key, const char *value, bool sloppy,
                        char *err, size_t errlen)
{
	unsigned long v;

#define NEEDS_VALUE()                                                                          \
	do {                                                                                   \
		if (!value) {                                                                  \
			snprintf(err, errlen, "mount option '%s' needs a value (%s=...)", key, \
			         key);                                                         \
			return -EINVAL;                                                        \
		}                                                                              \
	} while (0)
#define BAD_VALUE()                                                                        \
	do {                                                                               \
		snprintf(err, errlen, "bad value '%s' for mount option '%s'", value, key); \
		return -EINVAL;                                                            \
	} while (0)

	if (strcmp(key, "username") == 0 || (strcmp(key, "user") == 0 && value)) {
		return set_string(&o->user, value ? value : "", false);
	} else if (strcmp(key, "password") == 0 || strcmp(key, "pass") == 0) {
		return set_string(&o->password, value ? value : "", true);
	} else if (strcmp(key, "domain") == 0 || strcmp(key, "dom") == 0 ||
	           strcmp(key, "workgroup") == 0) {
		return set_string(&o->domain, value ? value : "", false);
	} else if (strcmp(key, "port") == 0) {
		NEEDS_VALUE();
		if (parse_unsigned(value, 10, 65535, &v) < 0 || v == 0)
			BAD_VALUE();
		o->port = (uint16_t)v;
	} else if (strcmp(key, "vers") == 0) {
		NEEDS_VALUE();
		if (smb_parse_vers(value, &o->min_dialect, &o->max_dialect) < 0) {
			snprintf(err, errlen,
			         "bad value '%s' for mount option 'vers' (use 2.0, 2.1, 3, 3.0, "
			         "3.02, 3.1.1 or default)",
			         value);
			return -EINVAL;
		}
	} else if (strcmp(key, "uid") == 0) {
		NEEDS_VALUE();
		if (parse_uid(value, &o->uid) < 0)
			BAD_VALUE();
	} else if (strcmp(key, "gid") == 0) {
		NEEDS_VALUE();
		if (parse_gid(value, &o->gid) < 0)
			BAD_VALUE();
	} else if (strcmp(key, "file_mode") == 0 || strcmp(key, "dir_mode") == 0) {
		NEEDS_VALUE();
		if (parse_unsigned(value, 8, 07777, &v) < 0)
			BAD_VALUE();
		if (key[0] == 'f')
			o->file_mode = (mode_t)v;
		else
			o->dir_mode = (mode_t)v;
	} else if (strcmp(key, "actimeo") == 0) {
		NEEDS_VALUE();
		if (parse_unsigned(value, 10, SMB_ACTIMEO_MAX, &v) < 0)
			BAD_VALUE();
		o->actimeo = (unsigned)v;
	} else if (strcmp(key, "ro") == 0 && !value) {
		o->ro = true;
	} else if (strcmp(key, "rw") == 0 && !value) {
		o->ro = false;
	} else if (strcmp(key, "debug") == 0 && !value) {
		o->debug = true;
	} else if (strcmp(key, "rdma") == 0 && !value) {
		o->rdma = true;
	} else if (strcmp(key, "rdma_threshold") == 0) {
		NEEDS_VALUE();
		if (parse_unsigned(value, 10, 1u << 30, &v) < 0)
			BAD_VALUE();
		o->rdma_threshold = (unsigned)v;
	} else if (strcmp(key, "multichannel") == 0 && !value) {
		o->multichannel = true;
	} else if (strcmp(key, "nomultichannel") == 0 && !value) {
		o->multichannel = false;
	} else if (strcmp(key, "interfaces") == 0) {
		/* Local interface names, ':'-separated (',' separates options). */
		NEEDS_VALUE();
		if (!*value || strlen(value) > 255)
			BAD_VALUE();
		free(o->interfaces);
		if (!(o->interfaces = strdup(value))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	} else if (strcmp(key, "max_channels") == 0) {
		/* As mount.cifs: 1..32; a value above 1 implies multichannel. */
		NEEDS_VALUE();
		if (parse_unsigned(value, 10, 32, &v) < 0 || v < 1)
			BAD_VALUE();
		o->max_channels = (unsigned)v;
		if (v > 1)
			o->multichannel = true;
	} else if (!value && in_list(key, kernel_flags, ARRAY_LEN(kernel_flags))) {
		return add_kernel_flag(o, key, err, errlen);
	} else if (!value && in_list(key, ignored_flags, ARRAY_LEN(ignored_flags))) {
		/* accepted, nothing to do */
	} else if (strncmp(key, "x-", 2) == 0 || strcmp(key, "comment") == 0) {
		/* userspace-only options of mount(8)/systemd */
	} else if (!sloppy) {
		snprintf(err, errlen, "unknown mount option '%s'", key);
		return -EINVAL;
	}
	return 0;
#undef NEEDS_VALUE
#undef BAD_VALUE
}

static bool is_password_key(const char *key, size_t len)
{
	return (len == 8 && memcmp(key, "password", 8) == 0) ||
	       (len == 4 && memcmp(key, "pass", 4) == 0);
}

int smb_mount_opts_parse(struct smb_mount_opts *o, const char *optstr, bool sloppy, char *err,
                         size_t errlen)
{
	/* Worst case every byte is copied once; ",," only shrinks. */
	size_t cap = strlen(optstr) + 1;
	char *tok = malloc(cap);
	const char *p = optstr;
	int rc = 0;

	if (!tok)
		return -ENOMEM;
	while (*p && rc == 0) {
		size_t n = 0;
		bool in_password = false;

		/* Copy one option into tok; in a password value ",," is a ','. */
		for (; *p; p++) {
			if (*p == '=' && !memchr(tok, '=', n))
				in_password = is_password_key(tok, n);
			if (*p == ',') {
				if (!in_password || p[1] != ',')
					break;
				p++;
			}
			tok[n++] = *p;
		}
		tok[n] = '\0';
		if (*p == ',')
			p++;
		if (n == 0)
			continue;
		char *value = strchr(tok, '=');
		if (value)
			*value++ = '\0';
		rc = apply_option(o, tok, value, sloppy, err, errlen);
	}
	explicit_bzero(tok, cap);
	free(tok);
	return rc;
}

void smb_mount_opts_scrub(char *optstr)
{
	char *p = optstr;

	while (*p) {
		size_t key_len = strcspn(p, "=,");
		bool secret = p[key_len] == '=' && is_password_key(p, key_len);

		p += key_len;
		if (*p == '=') {
			/* the same scan as smb_mount_opts_parse(): ",," stays inside */
			for (p++; *p; p++) {
				if (*p == ',') {
					if (!secret || p[1] != ',')
						break;
					if (secret)
						*p = '*';
					p++;
				}
				if (secret)
					*p = '*';
			}
		}
		if (*p == ',')
			p++;
	}
}
