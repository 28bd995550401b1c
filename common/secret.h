/* common/secret.h — wiping secrets: passwords, NT hashes, session,
 * signing and cipher keys, NTLM proofs.
 *
 * smb_wipe() is the one way this project clears memory that held a secret:
 * a plain memset() before free() or at the end of a scope is a dead store
 * the compiler may drop; explicit_bzero() is not.  Callable from any thread,
 * on any memory (NULL with n == 0 is fine).  Inline, so that the pure
 * pieces (auth/, fuse/options.c) need no library to use it.
 */
#ifndef SMBRDMA_COMMON_SECRET_H
#define SMBRDMA_COMMON_SECRET_H

#include <stddef.h>
#include <string.h>

static inline void smb_wipe(void *p, size_t n)
{
	if (p && n)
		explicit_bzero(p, n);
}

#endif
