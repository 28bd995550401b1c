/* fuse/options.c — parse mount.smbrdma's -o string into struct smb_mount_opts,
 * and settle the credentials from credentials files and the environment. */
#include "fuse/options.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "common/secret.h"

void smb_mount_opts_init(struct smb_mount_opts *o, uid_t uid, gid_t gid)
{
	memset(o, 0, sizeof(*o));
	o->uid = uid;
	o->gid = gid;
	o->file_mode = 0644;
	o->dir_mode = 0755;
	/* POSIX extensions on request only, for now: with them a ksmbd share's
	 * root lists empty (mount.smbrdma(8), posix). */
	o->noposix = true;
	o->actimeo = SMB_ACTIMEO_DEFAULT;
	o->cached_dirs = SMB_MAX_CACHED_DIRS_DEFAULT;
}

static void wipe_free(char *s)
{
	if (s) {
		smb_wipe(s, strlen(s));
		free(s);
	}
}

void smb_mount_opts_free(struct smb_mount_opts *o)
{
	free(o->user);
	wipe_free(o->password);
	free(o->domain);
	free(o->interfaces);
	free(o->daemon_user);
	free(o->keytab);
	free(o->ip);
	free(o->cafile);
	free(o->certfile);
	free(o->keyfile);
	o->user = o->password = o->domain = o->interfaces = o->keytab = o->ip = NULL;
	o->cafile = o->certfile = o->keyfile = o->daemon_user = NULL;
	o->password_from = NULL;
}

const char *smb_mount_sec_str(enum smb_mount_sec sec)
{
	switch (sec) {
	case SMB_MOUNT_SEC_NTLMSSP:
		return "ntlmssp";
	case SMB_MOUNT_SEC_KRB5:
		return "krb5";
	case SMB_MOUNT_SEC_NONE:
		return "none";
	}
	return "?";
}

const char *smb_mount_cache_str(enum smb_mount_cache cache)
{
	switch (cache) {
	case SMB_MOUNT_CACHE_STRICT:
		return "strict";
	case SMB_MOUNT_CACHE_NONE:
		return "none";
	case SMB_MOUNT_CACHE_LOOSE:
		return "loose";
	}
	return "?";
}

/* sec= values.  mount.cifs's ntlm and ntlmv2 (and their 'i' forms) and the
 * kernel's krb5p / ntlmsspp are not offered: they fail like any unknown
 * value, with a message listing these. */
static const struct {
	const char *name;
	enum smb_mount_sec sec;
	bool integrity;
} sec_table[] = {
    {"ntlmssp", SMB_MOUNT_SEC_NTLMSSP, false}, {"ntlmsspi", SMB_MOUNT_SEC_NTLMSSP, true},
    {"krb5", SMB_MOUNT_SEC_KRB5, false},       {"krb5i", SMB_MOUNT_SEC_KRB5, true},
    {"none", SMB_MOUNT_SEC_NONE, false},
};

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

/* rsize=/wsize= (max SMB_IO_SIZE_MAX), rasize= (max SMB_RASIZE_MAX): bytes,
 * 1..UINT32_MAX, rounded down to a multiple of SMB_IO_SIZE_MIN (a value
 * below it becomes it) and lowered to max. */
static int parse_size(const char *s, unsigned max, unsigned *out)
{
	unsigned long v;

	if (parse_unsigned(s, 10, UINT32_MAX, &v) < 0 || v == 0)
		return -EINVAL;
	v -= v % SMB_IO_SIZE_MIN;
	if (v < SMB_IO_SIZE_MIN)
		v = SMB_IO_SIZE_MIN;
	if (v > max)
		v = max;
	*out = (unsigned)v;
	return 0;
}

/* ip=/addr=: a numeric IPv4 or IPv6 address (brackets and a %scope
 * allowed); never a name, so nothing is looked up. */
static int parse_ip(const char *s, char **out)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	size_t len = strlen(s);
	char *bare;

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if (len == 0 || len > 255)
		return -EINVAL;
	bare = strndup(s, len);
	if (!bare)
		return -ENOMEM;
	if (getaddrinfo(bare, NULL, &hints, &res) != 0) {
		free(bare);
		return -EINVAL;
	}
	freeaddrinfo(res);
	free(*out);
	*out = bare;
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

/* Options of ours that are flags: `name` stores `set` into a bool field.
 * Given a value, they are an error that says so. */
static const struct flag_opt {
	const char *name;
	size_t field; /* offsetof(struct smb_mount_opts, <bool>) */
	bool set;
} flag_opts[] = {
#define FLAG(n, f, v)                                    \
	{                                                \
		n, offsetof(struct smb_mount_opts, f), v \
	}
    FLAG("guest", guest, true),
    FLAG("sign", sign, true),
    FLAG("seal", seal, true),
    FLAG("ro", ro, true),
    FLAG("rw", ro, false),
    FLAG("debug", debug, true),
    FLAG("rdma", rdma, true),
    FLAG("multichannel", multichannel, true),
    FLAG("nomultichannel", multichannel, false),
    FLAG("soft", hard, false),
    FLAG("hard", hard, true),
    FLAG("noperm", noperm, true),
    FLAG("perm", noperm, false),
    FLAG("forceuid", forceuid, true),
    FLAG("noforceuid", forceuid, false),
    FLAG("forcegid", forcegid, true),
    FLAG("noforcegid", forcegid, false),
    FLAG("nosharesock", nosharesock, true),
    FLAG("mfsymlinks", mfsymlinks, true),
    FLAG("nomfsymlinks", mfsymlinks, false),
    FLAG("nosubtype", nosubtype, true),
    FLAG("posix", noposix, false),
    FLAG("noposix", noposix, true),
    FLAG("unix", noposix, false),
    FLAG("nounix", noposix, true),
    FLAG("brl", nobrl, false),
    FLAG("nobrl", nobrl, true),
    FLAG("nolease", nolease, true),
    FLAG("nodfs", nodfs, true),
    FLAG("witness", witness, true),
    FLAG("nowitness", witness, false),
    FLAG("handlecache", nohandlecache, false),
    FLAG("nohandlecache", nohandlecache, true),
    FLAG("io_uring", noio_uring, false),
    FLAG("noio_uring", noio_uring, true),
#undef FLAG
};

/* Options of ours that take a number in [min, max] (base 10) into an
 * unsigned or uint16_t field; hint, when set, ends the error message. */
static const struct num_opt {
	const char *name;
	size_t field; /* offsetof(struct smb_mount_opts, <field>) */
	size_t size;  /* sizeof the field */
	unsigned long min, max;
	const char *hint;
} num_opts[] = {
#define NUM(n, f, lo, hi, h)                                                                    \
	{                                                                                       \
		n, offsetof(struct smb_mount_opts, f), sizeof(((struct smb_mount_opts *)0)->f), \
		    lo, hi, h                                                                   \
	}
    NUM("port", port, 1, 65535, " (1-65535)"),
    NUM("quic_port", quic_port, 1, 65535, " (1-65535)"),
    NUM("actimeo", actimeo, 0, SMB_ACTIMEO_MAX, NULL),
    /* As mount.cifs: seconds, 1..600. */
    NUM("echo_interval", echo_interval, 1, 600, NULL),
    /* Seconds a request may wait for its answer (or for a reconnect). */
    NUM("timeout", timeout, 1, 3600, NULL),
    NUM("rdma_threshold", rdma_threshold, 0, 1u << 30, NULL),
    /* SMB Direct connections per RDMA interface, as Windows'
     * ConnectionCountPerRdmaNetworkInterface. */
    NUM("rdma_channels", rdma_channels, 1, 8, NULL),
    /* As mount.cifs: 1..32; a value above 1 implies multichannel. */
    NUM("max_channels", max_channels, 1, 32, NULL),
    /* As mount.cifs (6.6 and later), with our own default. */
    NUM("max_cached_dirs", cached_dirs, 0, SMB_MAX_CACHED_DIRS_MAX, NULL),
    /* Entries per FUSE ring queue (one queue per possible CPU, fuse/ring.h). */
    NUM("io_uring_depth", uring_depth, 1, 64, NULL),
#undef NUM
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

/* A file the daemon reads later, after it left the caller's directory:
 * stored as an absolute path; it must exist now. */
static int set_path(char **slot, const char *key, const char *value, char *err, size_t errlen)
{
	char resolved[PATH_MAX];
	if (!*value || !realpath(value, resolved)) {
		snprintf(err, errlen, "mount option '%s': %s: %s", key, value,
		         *value ? strerror(errno) : "empty path");
		return -EINVAL;
	}
	return set_string(slot, resolved, false);
}

static int set_password(struct smb_mount_opts *o, const char *value, const char *from)
{
	int rc = set_string(&o->password, value, true);

	if (rc == 0)
		o->password_from = from;
	return rc;
}

static const struct flag_opt *find_flag(const char *key)
{
	for (size_t i = 0; i < ARRAY_LEN(flag_opts); i++)
		if (strcmp(key, flag_opts[i].name) == 0)
			return &flag_opts[i];
	return NULL;
}

/* A num_opts option: 1 if key is one (then 0 or -EINVAL in *rc), else 0. */
static int apply_num(struct smb_mount_opts *o, const char *key, const char *value, int *rc,
                     char *err, size_t errlen)
{
	const struct num_opt *n = NULL;
	for (size_t i = 0; i < ARRAY_LEN(num_opts) && !n; i++)
		if (strcmp(key, num_opts[i].name) == 0)
			n = &num_opts[i];
	if (!n)
		return 0;
	unsigned long v;
	*rc = -EINVAL;
	if (!value)
		snprintf(err, errlen, "mount option '%s' needs a value (%s=...)", key, key);
	else if (parse_unsigned(value, 10, n->max, &v) < 0 || v < n->min)
		snprintf(err, errlen, "bad value '%s' for mount option '%s'%s", value, key,
		         n->hint ? n->hint : "");
	else
		*rc = 0;
	if (*rc)
		return 1;
	uint8_t *f = (uint8_t *)o + n->field;
	if (n->size == sizeof(uint16_t)) {
		uint16_t u = (uint16_t)v;
		memcpy(f, &u, sizeof(u));
	} else {
		unsigned u = (unsigned)v;
		memcpy(f, &u, sizeof(u));
	}
	if (strcmp(key, "max_channels") == 0 && v > 1)
		o->multichannel = true;
	return 1;
}

/* sec=: the security mode and whether it demands signing. */
static int apply_sec(struct smb_mount_opts *o, const char *value, char *err, size_t errlen)
{
	for (size_t i = 0; i < ARRAY_LEN(sec_table); i++)
		if (strcmp(value, sec_table[i].name) == 0) {
			o->sec = sec_table[i].sec;
			o->sec_integrity = sec_table[i].integrity;
			o->sec_given = true;
			return 0;
		}
	snprintf(err, errlen,
	         "unsupported value '%s' for mount option 'sec' (use ntlmssp, ntlmsspi, krb5, "
	         "krb5i or none)",
	         value);
	return -EINVAL;
}

static int apply_cache(struct smb_mount_opts *o, const char *value, char *err, size_t errlen)
{
	if (strcmp(value, "strict") == 0)
		o->cache = SMB_MOUNT_CACHE_STRICT;
	else if (strcmp(value, "none") == 0)
		o->cache = SMB_MOUNT_CACHE_NONE;
	else if (strcmp(value, "loose") == 0)
		o->cache = SMB_MOUNT_CACHE_LOOSE;
	else {
		snprintf(err, errlen,
		         "bad value '%s' for mount option 'cache' (use strict, none or loose)",
		         value);
		return -EINVAL;
	}
	return 0;
}

static int apply_transport(struct smb_mount_opts *o, const char *value, char *err, size_t errlen)
{
	if (strcmp(value, "rdma") == 0) {
		o->rdma = true;
		o->transport = NULL;
	} else if (strcmp(value, "tcp") == 0 || strcmp(value, "quic") == 0 ||
	           strcmp(value, "auto") == 0) {
		o->rdma = false;
		o->transport = value[0] == 't' ? "tcp" : value[0] == 'q' ? "quic" : "auto";
	} else {
		snprintf(err, errlen,
		         "bad value '%s' for mount option 'transport' (tcp, rdma, quic or auto)",
		         value);
		return -EINVAL;
	}
	return 0;
}

static int apply_ip(struct smb_mount_opts *o, const char *key, const char *value, char *err,
                    size_t errlen)
{
	int rc = parse_ip(value, &o->ip);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (rc < 0)
		snprintf(err, errlen,
		         "bad value '%s' for mount option '%s' (a numeric IPv4 or IPv6 address)",
		         value, key);
	return rc < 0 ? rc : 0;
}

/* Options that are not ours to act on: the kernel's flags (passed on), what
 * mount(8) and systemd use, and any of those or our flags given a value. */
static int apply_foreign(struct smb_mount_opts *o, const char *key, const char *value, bool sloppy,
                         char *err, size_t errlen)
{
	if (!value && in_list(key, kernel_flags, ARRAY_LEN(kernel_flags)))
		return add_kernel_flag(o, key, err, errlen);
	if (!value && in_list(key, ignored_flags, ARRAY_LEN(ignored_flags)))
		return 0; /* accepted, nothing to do */
	if (strncmp(key, "x-", 2) == 0 || strcmp(key, "comment") == 0)
		return 0; /* userspace-only options of mount(8)/systemd */
	if (value && (find_flag(key) || in_list(key, kernel_flags, ARRAY_LEN(kernel_flags)) ||
	              in_list(key, ignored_flags, ARRAY_LEN(ignored_flags)))) {
		/* "user" is not here: user= is username= */
		snprintf(err, errlen, "mount option '%s' takes no value ('%s', not '%s=%s')", key,
		         key, key, value);
		return -EINVAL;
	}
	if (!sloppy) {
		snprintf(err, errlen, "unknown mount option '%s'", key);
		return -EINVAL;
	}
	return 0;
}

/* One "key" or "key=value" option.  value is NULL when there was no '='.
 * Flags and numbers come from the tables above; the rest needs code. */
static int apply_option(struct smb_mount_opts *o, const char *key, const char *value, bool sloppy,
                        char *err, size_t errlen)
{
	unsigned long v;
	int rc;

	const struct flag_opt *flag = value ? NULL : find_flag(key);
	if (flag) {
		*(bool *)((uint8_t *)o + flag->field) = flag->set;
		if (flag->field == offsetof(struct smb_mount_opts, noio_uring))
			o->io_uring_required = !flag->set; /* asked for by name, or not at all */
		return 0;
	}
	if (apply_num(o, key, value, &rc, err, errlen))
		return rc;
	/* Options that work without a value. */
	if (strcmp(key, "username") == 0 || (strcmp(key, "user") == 0 && value))
		return set_string(&o->user, value ? value : "", false);
	if (strcmp(key, "password") == 0 || strcmp(key, "pass") == 0)
		return set_password(o, value ? value : "", "password=");
	if (strcmp(key, "domain") == 0 || strcmp(key, "dom") == 0 || strcmp(key, "workgroup") == 0)
		return set_string(&o->domain, value ? value : "", false);

	static const char *const valued[] = {
	    "credentials", "cred",   "sec",      "keytab",  "vers",       "uid",         "gid",
	    "cache",       "rsize",  "wsize",    "ip",      "addr",       "file_mode",   "dir_mode",
	    "transport",   "cafile", "certfile", "keyfile", "interfaces", "daemon_user", "rasize",
	};
	if (!in_list(key, valued, ARRAY_LEN(valued)))
		return apply_foreign(o, key, value, sloppy, err, errlen);
	if (!value) {
		snprintf(err, errlen, "mount option '%s' needs a value (%s=...)", key, key);
		return -EINVAL;
	}
	bool bad = false;
	if (strcmp(key, "credentials") == 0 || strcmp(key, "cred") == 0) {
		if (!*value)
			bad = true;
		else
			return smb_creds_file_parse(o, value, err, errlen);
	} else if (strcmp(key, "sec") == 0) {
		return apply_sec(o, value, err, errlen);
	} else if (strcmp(key, "keytab") == 0) {
		if (!*value)
			bad = true;
		else
			return set_string(&o->keytab, value, false);
	} else if (strcmp(key, "vers") == 0) {
		if (smb_parse_vers(value, &o->min_dialect, &o->max_dialect) < 0) {
			snprintf(err, errlen,
			         "bad value '%s' for mount option 'vers' (use 2.0, 2.1, 3, 3.0, "
			         "3.02, 3.1.1 or default)",
			         value);
			return -EINVAL;
		}
	} else if (strcmp(key, "uid") == 0 || strcmp(key, "gid") == 0) {
		bool u = key[0] == 'u';
		if ((u ? parse_uid(value, &o->uid) : parse_gid(value, &o->gid)) < 0) {
			snprintf(err, errlen,
			         "bad value '%s' for mount option '%s' (no such %s, nor a number)",
			         value, key, u ? "user" : "group");
			return -EINVAL;
		}
	} else if (strcmp(key, "file_mode") == 0 || strcmp(key, "dir_mode") == 0) {
		if (parse_unsigned(value, 8, 07777, &v) < 0)
			bad = true;
		else if (key[0] == 'f')
			o->file_mode = (mode_t)v;
		else
			o->dir_mode = (mode_t)v;
	} else if (strcmp(key, "cache") == 0) {
		return apply_cache(o, value, err, errlen);
	} else if (strcmp(key, "rsize") == 0 || strcmp(key, "wsize") == 0) {
		bad = parse_size(value, SMB_IO_SIZE_MAX, key[0] == 'r' ? &o->rsize : &o->wsize) < 0;
	} else if (strcmp(key, "rasize") == 0) {
		bad = parse_size(value, SMB_RASIZE_MAX, &o->rasize) < 0;
	} else if (strcmp(key, "ip") == 0 || strcmp(key, "addr") == 0) {
		return apply_ip(o, key, value, err, errlen);
	} else if (strcmp(key, "transport") == 0) {
		return apply_transport(o, value, err, errlen);
	} else if (strcmp(key, "cafile") == 0 || strcmp(key, "certfile") == 0 ||
	           strcmp(key, "keyfile") == 0) {
		char **slot = strcmp(key, "cafile") == 0     ? &o->cafile
		              : strcmp(key, "certfile") == 0 ? &o->certfile
		                                             : &o->keyfile;
		return set_path(slot, key, value, err, errlen);
	} else {
		/* interfaces=: local interface names, ':'-separated (',' separates
		 * options); daemon_user=: a user name or number (fuse/privs.h). */
		bool ifs = key[0] == 'i';
		if (!*value || strlen(value) > (ifs ? 255u : 63u))
			bad = true;
		else if (set_string(ifs ? &o->interfaces : &o->daemon_user, value, false) < 0) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	if (bad) {
		snprintf(err, errlen, "bad value '%s' for mount option '%s'", value, key);
		return -EINVAL;
	}
	return 0;
}

static bool is_password_key(const char *key, size_t len)
{
	return (len == 8 && memcmp(key, "password", 8) == 0) ||
	       (len == 4 && memcmp(key, "pass", 4) == 0);
}

static bool is_username_key(const char *key, size_t len)
{
	return (len == 8 && memcmp(key, "username", 8) == 0) ||
	       (len == 4 && memcmp(key, "user", 4) == 0);
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
	smb_wipe(tok, cap);
	free(tok);
	return rc;
}

/* ---- credentials files ---------------------------------------------------------- */

/* Longest line of a credentials file (mount.cifs reads 4096 bytes). */
#define CREDS_LINE_MAX (SMB_PASSWORD_MAX + 4096)

/* mount.cifs matches the start of the key: "user", "pass", "dom". */
static bool key_starts(const char *key, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && strncasecmp(key, prefix, n) == 0;
}

static bool key_is(const char *key, size_t len, const char *name)
{
	return len == strlen(name) && strncasecmp(key, name, len) == 0;
}

/* One line, its end of line already cut off. */
static int creds_line(struct smb_mount_opts *o, char *line)
{
	char *key = line + strspn(line, " \t");
	char *value = strchr(key, '=');
	size_t key_len;

	if (*key == '#' || !value)
		return 0;
	key_len = (size_t)(value - key);
	while (key_len && (key[key_len - 1] == ' ' || key[key_len - 1] == '\t'))
		key_len--;
	value++;
	if (key_starts(key, key_len, "user"))
		return set_string(&o->user, value, false);
	/* password2= is mount.cifs's alternate password (tried when the
	 * first fails, for password rotation); there is none here. */
	if (key_starts(key, key_len, "pass") && !key_is(key, key_len, "pass2") &&
	    !key_is(key, key_len, "password2"))
		return set_password(o, value, "credentials file");
	if (key_starts(key, key_len, "dom") || key_is(key, key_len, "workgroup"))
		return set_string(&o->domain, value, false);
	return 0;
}

int smb_creds_file_parse(struct smb_mount_opts *o, const char *path, char *err, size_t errlen)
{
	char line[CREDS_LINE_MAX + 2];
	char iobuf[4096]; /* stdio's buffer, ours so that it can be wiped */
	unsigned lineno = 0;
	FILE *f = fopen(path, "re");
	int rc = 0;

	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "credentials file %s: %s", path, strerror(-rc));
		return rc;
	}
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	/* As ssh does for private keys: say so when others can read it. */
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)))
		snprintf(o->warning, sizeof(o->warning),
		         "credentials file %s is readable by %s (mode %04o): anyone who can read "
		         "it has the password; chmod 600 %s",
		         path, (st.st_mode & S_IROTH) ? "everyone" : "its group",
		         (unsigned)(st.st_mode & 07777), path);
	for (;;) {
		errno = 0;
		if (!fgets(line, sizeof(line), f)) {
			if (ferror(f)) {
				rc = errno ? -errno : -EIO;
				snprintf(err, errlen, "credentials file %s: %s", path,
				         strerror(-rc));
			}
			break;
		}
		lineno++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(f)) {
			rc = -EINVAL;
			snprintf(err, errlen,
			         "credentials file %s: line %u is longer than %d bytes", path,
			         lineno, CREDS_LINE_MAX);
			break;
		}
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		rc = creds_line(o, line);
		if (rc < 0) {
			snprintf(err, errlen, "credentials file %s: %s", path, strerror(-rc));
			break;
		}
	}
	fclose(f);
	smb_wipe(line, sizeof(line));
	smb_wipe(iobuf, sizeof(iobuf));
	return rc;
}

/* ---- the credentials once every option is in --------------------------------- */

/* Wipe PASSWD's value where it lies, in the block /proc/PID/environ shows
 * (or wherever setenv() put it), then drop the variable, so neither this
 * process nor the daemon it forks shows it. */
static void scrub_env_password(void)
{
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "PASSWD=", 7) == 0)
			smb_wipe(*e + 7, strlen(*e + 7));
	unsetenv("PASSWD");
}

/* One line from fd into buf (at most cap - 1 bytes, without its LF or
 * CR LF), for PASSWD_FD and PASSWD_FILE.  Returns 0, -errno, or -EMSGSIZE
 * for a line that does not fit. */
static int read_password_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	for (;;) {
		if (n == cap - 1)
			return -EMSGSIZE;
		ssize_t r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0 || buf[n] == '\n')
			break;
		n++;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return 0;
}

/* PASSWD, PASSWD_FD, PASSWD_FILE: the first set wins, as for mount.cifs. */
static int password_from_env(struct smb_mount_opts *o, char *err, size_t errlen)
{
	char buf[SMB_PASSWORD_MAX + 1];
	const char *v, *what;
	unsigned long fdnum;
	int fd, rc;

	if ((v = getenv("PASSWD")))
		return set_password(o, v, "PASSWD");
	if ((v = getenv("PASSWD_FD"))) {
		what = "PASSWD_FD";
		if (parse_unsigned(v, 10, INT_MAX, &fdnum) < 0) {
			snprintf(err, errlen, "PASSWD_FD=%s is not a file descriptor number", v);
			return -EINVAL;
		}
		fd = (int)fdnum;
		rc = read_password_line(fd, buf, sizeof(buf));
	} else if ((v = getenv("PASSWD_FILE"))) {
		what = "PASSWD_FILE";
		fd = open(v, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
		} else {
			rc = read_password_line(fd, buf, sizeof(buf));
			close(fd);
		}
	} else {
		return 0;
	}
	if (rc == 0)
		rc = set_password(o, buf, what);
	else if (rc == -EMSGSIZE)
		snprintf(err, errlen, "%s=%s: the password is longer than %d bytes", what, v,
		         SMB_PASSWORD_MAX);
	else
		snprintf(err, errlen, "%s=%s: %s", what, v, strerror(-rc));
	smb_wipe(buf, sizeof(buf));
	return rc;
}

/* $USER, else the name of the real uid; stays NULL (anonymous) without either. */
static int default_user(struct smb_mount_opts *o)
{
	const char *name = getenv("USER");
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (!name && getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res)
		name = res->pw_name;
	return name ? set_string(&o->user, name, false) : 0;
}

/* "DOMAIN/user%password" (or with '\'), as mount.cifs read username= up
 * to cifs-utils 5.9 (and smbclient -U still does). */
static int split_user(struct smb_mount_opts *o)
{
	char *pct = strchr(o->user, '%');
	char *slash;
	int rc;

	if (pct) {
		rc = set_password(o, pct + 1, "username=user%password");
		smb_wipe(pct, strlen(pct));
		if (rc < 0)
			return rc;
	}
	slash = strpbrk(o->user, "/\\");
	if (slash) {
		*slash = '\0';
		rc = set_string(&o->domain, o->user, false);
		if (rc < 0)
			return rc;
		memmove(o->user, slash + 1, strlen(slash + 1) + 1);
	}
	return 0;
}

/* keytab= names a readable regular file; made absolute, since the daemon
 * works from "/". */
static int check_keytab(struct smb_mount_opts *o, char *err, size_t errlen)
{
	char resolved[PATH_MAX];
	struct stat st;
	int fd = open(o->keytab, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && !realpath(o->keytab, resolved))
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "keytab %s: %s", o->keytab,
		         rc == -EINVAL ? "not a regular file" : strerror(-rc));
		return rc;
	}
	return set_string(&o->keytab, resolved, false);
}

static int finish_creds(struct smb_mount_opts *o, char *err, size_t errlen)
{
	int rc;

	if (o->keytab) {
		if (!o->sec_given) {
			o->sec = SMB_MOUNT_SEC_KRB5;
		} else if (o->sec != SMB_MOUNT_SEC_KRB5) {
			snprintf(err, errlen,
			         "mount option 'keytab' needs sec=krb5 or krb5i, not sec=%s",
			         smb_mount_sec_str(o->sec));
			return -EINVAL;
		}
		rc = check_keytab(o, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (o->seal && o->max_dialect && o->max_dialect < SMB2_DIALECT_0300) {
		snprintf(err, errlen,
		         "mount option 'seal' (encryption) needs SMB 3, but vers= allows only SMB "
		         "2, which cannot encrypt");
		return -EINVAL;
	}
	switch (o->sec) {
	case SMB_MOUNT_SEC_KRB5:
		/* The ticket authenticates; a password given anyway is dropped,
		 * and the user name is a principal, taken whole. */
		wipe_free(o->password);
		o->password = NULL;
		o->password_from = NULL;
		return 0;
	case SMB_MOUNT_SEC_NONE:
		if ((rc = set_string(&o->user, "", false)) < 0 ||
		    (rc = set_password(o, "", "sec=none")) < 0 ||
		    (rc = set_string(&o->domain, "", false)) < 0)
			return rc;
		return 0;
	case SMB_MOUNT_SEC_NTLMSSP:
		break;
	}
	if (o->user && (rc = split_user(o)) < 0)
		return rc;
	if (o->guest) {
		if ((rc = set_password(o, "", "guest")) < 0)
			return rc;
		if (!o->user && (rc = set_string(&o->user, "", false)) < 0)
			return rc;
	}
	if (!o->user && (rc = default_user(o)) < 0)
		return rc;
	if (!o->password)
		return password_from_env(o, err, errlen);
	return 0;
}

int smb_mount_opts_finish(struct smb_mount_opts *o, char *err, size_t errlen)
{
	int rc = finish_creds(o, err, errlen);

	if (rc == -ENOMEM && err[0] == '\0')
		snprintf(err, errlen, "%s", strerror(ENOMEM));
	scrub_env_password();
	return rc;
}

bool smb_mount_opts_need_password(const struct smb_mount_opts *o)
{
	return o->sec == SMB_MOUNT_SEC_NTLMSSP && !o->guest && !o->password && o->user &&
	       o->user[0];
}

bool smb_mount_opts_signing(const struct smb_mount_opts *o)
{
	return o->sign || o->sec_integrity;
}

/* ---- secrets inside an option string -------------------------------------------- */

/* The option at p, split as smb_mount_opts_parse() splits it: [*secret,
 * *secret_end) is what to hide (empty when nothing); returns the start of
 * the next option. */
static const char *next_option(const char *p, const char **secret, const char **secret_end)
{
	size_t key_len = strcspn(p, "=,");
	bool password = p[key_len] == '=' && is_password_key(p, key_len);
	bool username = p[key_len] == '=' && is_username_key(p, key_len);

	*secret = *secret_end = p;
	p += key_len;
	if (*p == '=') {
		const char *value = ++p;

		/* the same scan as smb_mount_opts_parse(): ",," stays inside */
		for (; *p; p++) {
			if (*p == ',') {
				if (!password || p[1] != ',')
					break;
				p++;
			}
		}
		if (password) {
			*secret = value;
			*secret_end = p;
		} else if (username) {
			const char *pct = memchr(value, '%', (size_t)(p - value));
			if (pct) {
				*secret = pct + 1;
				*secret_end = p;
			}
		}
	}
	if (*p == ',')
		p++;
	return p;
}

void smb_mount_opts_scrub(char *optstr)
{
	const char *p = optstr, *secret, *end;

	while (*p) {
		p = next_option(p, &secret, &end);
		memset(optstr + (secret - optstr), '*', (size_t)(end - secret));
	}
}

static void append(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
	if (*n + 1 >= cap)
		return;
	if (len > cap - 1 - *n)
		len = cap - 1 - *n;
	memcpy(out + *n, s, len);
	*n += len;
	out[*n] = '\0';
}

void smb_mount_opts_redact(const char *optstr, char *out, size_t cap)
{
	const char *p = optstr, *secret, *end;
	size_t n = 0;

	if (cap == 0)
		return;
	out[0] = '\0';
	while (*p) {
		const char *start = p;

		p = next_option(p, &secret, &end);
		if (secret == end) {
			append(out, cap, &n, start, (size_t)(p - start));
			continue;
		}
		append(out, cap, &n, start, (size_t)(secret - start));
		append(out, cap, &n, "***", 3);
		append(out, cap, &n, end, (size_t)(p - end));
	}
}
