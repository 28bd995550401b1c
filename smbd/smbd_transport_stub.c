/* smbd/smbd_transport_stub.c — built when rdma-core is absent: no SMB Direct. */
#include "common/transport.h"
#include "smbd/smbd_offload.h"

#include <errno.h>

int smb_transport_rdma_new(struct ev_loop *loop, const struct smb_transport_up *up,
                           struct smb_transport **out)
{
	return -EOPNOTSUPP;
}

int smbd_offload_caps(struct smb_transport *t, struct smbd_offload_caps *out)
{
	return -EOPNOTSUPP;
}

int smbd_mr_cache_keys(struct smb_transport *t, const void *addr, uint32_t *lkey, uint32_t *rkey)
{
	return -EOPNOTSUPP;
}

int smbd_transport_get_stats(struct smb_transport *t, struct smbd_transport_stats *out)
{
	return -EOPNOTSUPP;
}

int smbd_offload_set_dialect(struct smb_transport *t, uint16_t dialect)
{
	return -EOPNOTSUPP;
}

int smbd_mr_cache_add(struct smb_transport *t, void *addr, size_t len)
{
	return -EOPNOTSUPP;
}

int smbd_mr_cache_remove(struct smb_transport *t, void *addr)
{
	return -EOPNOTSUPP;
}

int smbd_io_token_get(struct smb_transport *t, void *buf, size_t len, int access,
                      struct smbd_io_token **tok, uint8_t desc[16], uint32_t *channel)
{
	return -EOPNOTSUPP;
}

void smbd_io_token_set_moved(struct smbd_io_token *tok, size_t bytes)
{
}

void smbd_io_token_put(struct smb_transport *t, struct smbd_io_token *tok, void (*done)(void *arg),
                       void *arg)
{
}
