/* common/mountinfo.c — reading /proc/self/mountinfo (see mountinfo.h). */
#include "common/mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x4000U /* Linux 6.8 */
#endif

/* mountinfo writes ' ', '\t', '\n', '\\' in a path as \ooo. */
static void unescape(const char *in, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; in[i] && j + 1 < cap; i++) {
		if (in[i] == '\\' && in[i + 1] >= '0' && in[i + 1] <= '3' && in[i + 2] &&
		    in[i + 3]) {
			out[j++] = (char)(((in[i + 1] - '0') << 6) | ((in[i + 2] - '0') << 3) |
			                  (in[i + 3] - '0'));
			i += 3;
		} else {
			out[j++] = in[i];
		}
	}
	out[j] = '\0';
}

int mountinfo_each(bool (*fn)(const struct mountinfo_ent *e, void *arg), void *arg)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192], mnt[PATH_MAX];
	struct mountinfo_ent e;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &e.maj, &e.min, mnt) != 3)
			continue;
		unescape(mnt, e.mountpoint, sizeof(e.mountpoint));
		const char *sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%63s", e.fstype) != 1)
			e.fstype[0] = '\0';
		if (fn(&e, arg))
			break;
	}
	fclose(f);
	return 0;
}

struct dev_query {
	const char *path;
	unsigned maj, min;
	bool found;
};

static bool dev_match(const struct mountinfo_ent *e, void *arg)
{
	struct dev_query *q = arg;
	if (strcmp(e->mountpoint, q->path) == 0) {
		q->maj = e->maj; /* keep going: the last one is on top */
		q->min = e->min;
		q->found = true;
	}
	return false;
}

int mountinfo_dev(const char *path, unsigned *maj, unsigned *min)
{
	struct dev_query q = {.path = path};
	int rc = mountinfo_each(dev_match, &q);
	if (rc)
		return rc;
	if (!q.found)
		return -ENOENT;
	*maj = q.maj;
	*min = q.min;
	return 0;
}

int mountinfo_id(const char *path, uint64_t *id, bool *unique)
{
	struct statx stx;

	/* AT_STATX_DONT_SYNC: FUSE answers from what it has, sending nothing. */
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
	          STATX_MNT_ID_UNIQUE, &stx) < 0)
		return -errno;
	if (!(stx.stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE)))
		return -EOPNOTSUPP;
	*id = stx.stx_mnt_id;
	*unique = (stx.stx_mask & STATX_MNT_ID_UNIQUE) != 0;
	return 0;
}
