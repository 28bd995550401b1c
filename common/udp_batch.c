/* common/udp_batch.c — UDP GSO sends and UDP_GRO reads (contract in
 * udp_batch.h). */
#include "common/udp_batch.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <string.h>

bool udp_batch_setup(int fd)
{
	int one = 1, zero = 0;
	setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	/* gso_size 0: no segmenting unless a send asks for it. */
	return setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
}

int udp_send_gso(int fd, const struct sockaddr *to, socklen_t tolen, const void *p, size_t n,
                 size_t seg)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(uint16_t))];
	} cb;
	memset(&cb, 0, sizeof(cb));
	struct iovec iov = {(void *)p, n};
	struct msghdr mh = {.msg_name = (void *)to,
	                    .msg_namelen = to ? tolen : 0,
	                    .msg_iov = &iov,
	                    .msg_iovlen = 1,
	                    .msg_control = cb.b,
	                    .msg_controllen = sizeof(cb.b)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	uint16_t seg16 = (uint16_t)seg;
	memcpy(CMSG_DATA(c), &seg16, sizeof(seg16));
	for (;;) {
		if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		if (errno != EINTR)
			break;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return 0;
	return -errno;
}

ssize_t udp_recv_gro(int fd, void *buf, size_t cap, struct sockaddr_storage *from,
                     socklen_t *fromlen, size_t *seg)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct iovec iov = {buf, cap};
	struct msghdr mh = {.msg_name = from,
	                    .msg_namelen = from ? sizeof(*from) : 0,
	                    .msg_iov = &iov,
	                    .msg_iovlen = 1,
	                    .msg_control = cb.b,
	                    .msg_controllen = sizeof(cb.b)};
	ssize_t r;
	do
		r = recvmsg(fd, &mh, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (fromlen)
		*fromlen = mh.msg_namelen;
	*seg = (size_t)r;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int gro;
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(gro))) {
			memcpy(&gro, CMSG_DATA(c), sizeof(gro));
			if (gro > 0)
				*seg = (size_t)gro;
		}
	}
	if (!*seg)
		*seg = 1; /* an empty datagram: callers step by seg */
	return r;
}
