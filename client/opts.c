/* client/opts.c — the deep copy of struct smb_client_opts that
 * smb_client_connect() keeps in c->opts, once, for the threads which
 * outlive it (reconnect.c, multichannel/): a libsmbrdma caller may free its
 * strings as soon as smb_client_connect() returns. */
#include "client/client.h"
#include "client/client_int.h"
#include "common/secret.h"

#include <errno.h>
#include <string.h>
#include <talloc.h>

static int opts_destructor(struct smb_client_opts *o)
{
	if (o->password)
		smb_wipe((char *)o->password, strlen(o->password));
	return 0;
}

struct smb_client_opts *smb_client_opts_dup(void *ctx, const struct smb_client_opts *o)
{
	struct smb_client_opts *d = talloc(ctx, struct smb_client_opts);
	if (!d)
		return NULL;
	*d = *o;
	d->password = NULL;
	talloc_set_destructor(d, opts_destructor);
	/* Where NULL means "" to the engine, the copy says "" outright. */
	struct {
		const char **slot;
		const char *src;
		bool empty_if_null;
	} strs[] = {
	    {&d->host, o->host, true},         {&d->addr, o->addr, false},
	    {&d->share, o->share, true},       {&d->user, o->user, true},
	    {&d->password, o->password, true}, {&d->domain, o->domain, true},
	    {&d->keytab, o->keytab, false},    {&d->transport, o->transport, false},
	    {&d->cafile, o->cafile, false},    {&d->certfile, o->certfile, false},
	    {&d->keyfile, o->keyfile, false},  {&d->mc_interfaces, o->mc_interfaces, false},
	};
	int err = 0;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]) && !err; i++) {
		*strs[i].slot = NULL;
		if (strs[i].src || strs[i].empty_if_null) {
			*strs[i].slot = talloc_strdup(d, strs[i].src ? strs[i].src : "");
			err = *strs[i].slot ? 0 : -ENOMEM;
		}
	}
	if (err) {
		talloc_free(d);
		return NULL;
	}
	return d;
}
