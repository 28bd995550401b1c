/* auth/krb5.h — Kerberos credentials kept in the process's own memory.
 *
 * A daemon that gives up root once its mount is live (mount.smbrdma, see
 * fuse/privs.h) can no longer read the root-owned credential cache or keytab
 * when a reconnect, or a new channel's session binding, runs a SESSION_SETUP
 * again.  smb_auth_krb5_keep(), called once while it still can, copies what
 * the mount's sessions use into MEMORY: ones that live as long as the
 * process; from then on smb_auth_krb5_new() (auth/auth.h) with the same user,
 * domain and keytab takes its credentials from those copies:
 *   - keytab=: the keys of the one principal in use (o->user's, else the
 *     keytab's first entry's), so GSS can still get a new TGT when the old
 *     one runs out;
 *   - no keytab: the whole credential cache the mount used (its TGT and
 *     service tickets), so reconnects authenticate until that TGT expires;
 *     a later kinit is not seen by the running mount.
 * The copies hold keys and tickets in the heap: the process must not be
 * dumpable (PR_SET_DUMPABLE 0) for them to stay out of core files.  They
 * are never freed (MIT frees a MEMORY keytab with its last handle).
 *
 * A library never calls this: its caller's own files stay the source.
 */
#ifndef SMBRDMA_AUTH_KRB5_H
#define SMBRDMA_AUTH_KRB5_H

#include <stddef.h>

#include "auth/auth.h"

/* o->server_name is not used.  Once per kind (keytab or cache) per process,
 * from any thread: smb_auth_krb5_new() calls running at the same time see
 * either the files or the copies.  Returns 0; -EALREADY when that kind is
 * kept already; -ENOKEY when there is nothing to copy (no cache for the
 * principal, no key for it in the keytab); -EOPNOTSUPP without Kerberos; or
 * another -errno, with a one-line reason in errbuf. */
int smb_auth_krb5_keep(const struct smb_auth_krb5_opts *o, char *errbuf, size_t errlen);

#endif
