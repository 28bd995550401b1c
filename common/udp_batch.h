/* common/udp_batch.h — bursts of UDP datagrams in one syscall: UDP GSO on
 * the way out (UDP_SEGMENT), UDP_GRO on the way in.  For QUIC, whose bursts
 * are many datagrams of one size; used by client/transport_quic.c and the
 * test relay (tests/quic/relay.c).
 *
 * Pure libc + Linux socket options, no logging, no state: any thread, on
 * any UDP socket the caller owns.
 */
#ifndef SMBRDMA_COMMON_UDP_BATCH_H
#define SMBRDMA_COMMON_UDP_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Turn on UDP_GRO for fd (coalesced reads; harmless where unknown) and say
 * whether the kernel knows UDP_SEGMENT (4.18+).  Only then may
 * udp_send_gso() be used: an older kernel ignores the cmsg and would send a
 * batch as one datagram. */
bool udp_batch_setup(int fd);

/* Send n bytes of datagrams of seg bytes each (the last may be shorter) in
 * one sendmsg() with UDP_SEGMENT; to = NULL on a connected socket.
 * Non-blocking.  Returns 0 when sent, or dropped for a full socket buffer
 * (EAGAIN, ENOBUFS: to QUIC that is loss); -EIO when the device cannot
 * checksum segments (stop using GSO on this socket); -EINVAL/-EMSGSIZE when
 * a segment is larger than the route allows (send those one by one);
 * another -errno (an ICMP error from an earlier datagram, say). */
int udp_send_gso(int fd, const struct sockaddr *to, socklen_t tolen, const void *p, size_t n,
                 size_t seg);

/* recvmsg() of one read into buf, non-blocking; from/fromlen as
 * recvfrom() (from may be NULL).  *seg is the size of each datagram in it,
 * the last maybe shorter (the UDP_GRO cmsg; the whole read when none).
 * Returns the bytes read or -errno. */
ssize_t udp_recv_gro(int fd, void *buf, size_t cap, struct sockaddr_storage *from,
                     socklen_t *fromlen, size_t *seg);

#endif
