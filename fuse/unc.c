/* fuse/unc.c — parse the mount source //HOST[:PORT]/SHARE[/PATH]. */
#include "fuse/unc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool bad_char(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}

static char *dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long v = 0;

	if (n == 0 || n > 5)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* Collapse repeated '/', drop a trailing '/', refuse "." and "..". */
static int normalise_prefix(const char *in, char *out)
{
	char *o = out;

	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		const char *comp = in;
		while (*in && *in != '/')
			in++;
		size_t len = (size_t)(in - comp);
		if ((len == 1 && comp[0] == '.') || (len == 2 && comp[0] == '.' && comp[1] == '.'))
			return -EINVAL;
		if (o != out)
			*o++ = '/';
		memcpy(o, comp, len);
		o += len;
	}
	*o = '\0';
	return 0;
}

#define UNC_USAGE "expected //HOST[:PORT]/SHARE"

int smb_unc_parse(const char *src, struct smb_unc *out, char *err, size_t errlen)
{
	char *s = NULL, *p, *host_end, *share;
	const char *host;
	size_t host_len;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!src) {
		snprintf(err, errlen, "no source given: " UNC_USAGE);
		return -EINVAL;
	}
	s = strdup(src);
	if (!s)
		return -ENOMEM;
	for (p = s; *p; p++) {
		if (bad_char(*p)) {
			snprintf(err, errlen, "bad source '%s': control character", src);
			goto out;
		}
		if (*p == '\\')
			*p = '/';
	}
	if (s[0] != '/' || s[1] != '/' || s[2] == '/') {
		snprintf(err, errlen, "bad source '%s': " UNC_USAGE, src);
		goto out;
	}
	p = s + 2;
	if (*p == '[') {
		host = p + 1;
		host_end = strchr(p, ']');
		if (!host_end) {
			snprintf(err, errlen, "bad source '%s': missing ']' after IPv6 address",
			         src);
			goto out;
		}
		host_len = (size_t)(host_end - host);
		p = host_end + 1;
		if (*p != ':' && *p != '/' && *p != '\0') {
			snprintf(err, errlen, "bad source '%s': " UNC_USAGE, src);
			goto out;
		}
	} else {
		size_t authority_len = strcspn(p, "/");
		unsigned colons = 0;
		for (size_t i = 0; i < authority_len; i++)
			colons += p[i] == ':';
		if (colons > 1) {
			snprintf(err, errlen,
			         "bad source '%s': put an IPv6 address in brackets, e.g. "
			         "//[::1]/share",
			         src);
			goto out;
		}
		host = p;
		p += strcspn(p, ":/");
		host_len = (size_t)(p - host);
	}
	if (host_len == 0) {
		snprintf(err, errlen, "bad source '%s': no host name; " UNC_USAGE, src);
		goto out;
	}
	if (*p == ':') {
		const char *port = p + 1;
		size_t port_len = strcspn(port, "/");
		if (parse_port(port, port_len, &out->port) < 0) {
			snprintf(err, errlen, "bad source '%s': port '%.*s' is not 1-65535", src,
			         (int)port_len, port);
			goto out;
		}
		p = (char *)port + port_len;
	}
	if (*p != '/' || p[1] == '\0' || p[1] == '/') {
		snprintf(err, errlen, "bad source '%s': no share name; " UNC_USAGE, src);
		goto out;
	}
	share = p + 1;
	p = share + strcspn(share, "/");
	out->host = dup_range(host, host_len);
	out->share = dup_range(share, (size_t)(p - share));
	out->prefix = malloc(strlen(p) + 1);
	if (!out->host || !out->share || !out->prefix) {
		rc = -ENOMEM;
		goto out;
	}
	if (normalise_prefix(p, out->prefix) < 0) {
		snprintf(err, errlen, "bad source '%s': '.' and '..' are not allowed in the path",
		         src);
		goto out;
	}
	rc = 0;
out:
	free(s);
	if (rc < 0)
		smb_unc_free(out);
	return rc;
}

void smb_unc_free(struct smb_unc *u)
{
	free(u->host);
	free(u->share);
	free(u->prefix);
	memset(u, 0, sizeof(*u));
}
