/* fuse/unc.h — the mount source: //HOST[:PORT]/SHARE[/PATH].
 *
 * Pure: no I/O, no name resolution.  Backslashes are accepted as separators
 * (\\host\share), an IPv6 address goes in brackets (//[::1]:445/share).
 */
#ifndef SMBRDMA_FUSE_UNC_H
#define SMBRDMA_FUSE_UNC_H

#include <stddef.h>
#include <stdint.h>

struct smb_unc {
	char *host;    /* without brackets */
	uint16_t port; /* 0 when the source names none */
	char *share;
	char *prefix; /* path inside the share: no leading or trailing '/', "" for the root */
};

/* Fills *out (strings are malloc'd; release with smb_unc_free()) and returns
 * 0, or returns -EINVAL with a one-line reason in err, or -ENOMEM. */
int smb_unc_parse(const char *src, struct smb_unc *out, char *err, size_t errlen);
void smb_unc_free(struct smb_unc *u);

#endif
