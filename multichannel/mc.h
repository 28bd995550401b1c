/* multichannel/mc.h — more channels for a session ([MS-SMB2] 3.2.4.1.7 ff.).
 *
 * After the first session set-up, FSCTL_QUERY_NETWORK_INTERFACE_INFO lists
 * the server's interfaces; we open a channel to each (SMB Direct where the
 * interface says RDMA and this host can reach it, else TCP), up to
 * max_channels in all, and bind each to the session with a signed binding
 * SESSION_SETUP.  A thread of ours does it (binding is synchronous I/O,
 * which the loop thread must not do): first at mount, then every
 * requery_s seconds and at once when a channel dies, re-querying the list
 * and replacing what is missing.
 *
 * Lifetime: smb_mc_start() after the tree connect; smb_mc_stop() from
 * smb_client_destroy() before the channels close (joins the thread).
 * smb_mc_channel_died() runs on the loop thread, never blocks.
 */
#ifndef SMBRDMA_MULTICHANNEL_MC_H
#define SMBRDMA_MULTICHANNEL_MC_H

#include <stdint.h>

struct smb_client;
struct smb_chan;
struct smb_client_opts;

/* Bind the first extra channels now (errors are logged: the mount works
 * with the channels it got), then keep them up in the background.
 * 0, or -errno when the thread cannot start. */
int smb_mc_start(struct smb_client *c); /* uses c->opts */
void smb_mc_stop(struct smb_client *c);
void smb_mc_channel_died(struct smb_client *c, struct smb_chan *ch);
/* Look for channels now (any thread; after a reconnect). */
void smb_mc_kick(struct smb_client *c);

#endif
