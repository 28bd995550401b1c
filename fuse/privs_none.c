/* fuse/privs_none.c — fuse/privs.h for mount.smbrdma-fake: nothing is
 * dropped and there is no monitor, so main.c mounts itself.  The fake
 * engine (tests/unit/fuse/fake_client.c) serves a local directory with the
 * rights of whoever runs it, and its test (tests/unit/fuse/mount_test.sh)
 * makes that directory root's; giving up root is tested on the real engine
 * (tests/integration/test_privileges.py).
 */
#include "fuse/privs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct smb_privs {
	int unused;
};

int smb_privs_begin(const struct smb_privs_opts *opts, struct smb_privs **out, char *err,
                    size_t errlen)
{
	(void)opts;
	*out = calloc(1, sizeof(**out));
	if (!*out) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

bool smb_privs_dropped(const struct smb_privs *p)
{
	(void)p;
	return false;
}

int smb_privs_mount(struct smb_privs *p, char *err, size_t errlen)
{
	(void)p;
	(void)err;
	(void)errlen;
	return -ENOTCONN;
}

int smb_privs_readahead(struct smb_privs *p)
{
	(void)p;
	return -ENOTCONN;
}

int smb_privs_ctl_socket(struct smb_privs *p, char *err, size_t errlen)
{
	return smb_privs_mount(p, err, errlen);
}

int smb_privs_unmount(struct smb_privs *p)
{
	return smb_privs_readahead(p);
}

void smb_privs_end(struct smb_privs *p)
{
	free(p);
}
