/* common/transport.c — the -EOPNOTSUPP defaults every transport starts from. */
#include "common/transport.h"

#include <errno.h>

int transport_default_connect(struct smb_transport *t, const struct sockaddr *addr,
                              socklen_t addrlen, unsigned timeout_ms)
{
	return -EOPNOTSUPP;
}

int transport_default_send(struct smb_transport *t, struct smb_txbuf *buf)
{
	return -EOPNOTSUPP;
}

void transport_default_shutdown(struct smb_transport *t)
{
}

int transport_default_get_stats(struct smb_transport *t, struct smb_transport_stats *out)
{
	return -EOPNOTSUPP;
}

void transport_default_set_dialect(struct smb_transport *t, uint16_t dialect)
{
}

int transport_default_region_add(struct smb_transport *t, void *addr, size_t len)
{
	return -EOPNOTSUPP;
}

int transport_default_io_token_get(struct smb_transport *t, void *addr, size_t len,
                                   enum smb_io_dir dir, struct smb_io_token **tok, uint8_t desc[16],
                                   uint32_t *channel)
{
	return -EOPNOTSUPP;
}

void transport_default_io_token_put(struct smb_transport *t, struct smb_io_token *tok, size_t moved,
                                    void (*done)(void *arg), void *arg)
{
	done(arg);
}
