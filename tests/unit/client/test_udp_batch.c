/* tests/unit/client/test_udp_batch.c — common/udp_batch against the real
 * kernel, over 127.0.0.1: a UDP GSO batch arrives as the datagrams it was
 * cut into, whether the receiver coalesces them (UDP_GRO) or not, and an
 * oversized batch is refused with the errors transport_quic.c sorts on.
 * Exits 77 (skip) on a kernel without UDP GSO, saying so. */
#include "common/udp_batch.h"
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static int udp_socket(struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(*addr);
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    getsockname(fd, (struct sockaddr *)addr, &len) < 0) {
		perror("udp socket");
		exit(1);
	}
	return fd;
}

/* Read datagrams until want bytes came (or 5 s of silence); record each
 * datagram's size as udp_recv_gro() delimits them, and how many reads it
 * took in *reads. */
static size_t read_datagrams(int fd, uint8_t *buf, size_t want, size_t *sizes, size_t max,
                             int *reads)
{
	size_t got = 0, n = 0;
	*reads = 0;
	while (got < want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			break;
		size_t seg;
		ssize_t r = udp_recv_gro(fd, buf + got, 65536, NULL, NULL, &seg);
		if (r < 0)
			break;
		++*reads;
		for (size_t off = 0; off < (size_t)r && n < max; off += seg)
			sizes[n++] = (size_t)r - off < seg ? (size_t)r - off : seg;
		got += (size_t)r;
	}
	return n;
}

static uint8_t out[6000], in[6000 + 65536];

static void batch_arrives_as_datagrams(bool gro_receiver)
{
	struct sockaddr_in ra, sa;
	int rx = udp_socket(&ra), tx = udp_socket(&sa);
	if (gro_receiver)
		udp_batch_setup(rx);
	CHECK(udp_batch_setup(tx));
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	/* Five datagrams of 1000 bytes and a sixth of 300. */
	CHECK_EQ(udp_send_gso(tx, (struct sockaddr *)&ra, sizeof(ra), out, 5300, 1000), 0);
	size_t sizes[16];
	int reads;
	size_t n = read_datagrams(rx, in, 5300, sizes, 16, &reads);
	CHECK_EQ(n, 6);
	/* Over loopback a GRO socket gets the batch whole (Linux 5.0+), so the
	 * splitting by the cmsg's size is what is tested; a plain one gets six. */
	CHECK(gro_receiver ? reads < 6 : reads == 6);
	for (size_t i = 0; i < n && i < 6; i++)
		CHECK_EQ(sizes[i], i < 5 ? 1000 : 300);
	CHECK_MEM(in, out, 5300);
	close(rx);
	close(tx);
}

static void test_batch_to_gro_receiver(void)
{
	batch_arrives_as_datagrams(true);
}

static void test_batch_to_plain_receiver(void)
{
	batch_arrives_as_datagrams(false);
}

/* More than a datagram can carry in total: refused, not silently cut. */
static void test_oversized_batch_refused(void)
{
	struct sockaddr_in ra, sa;
	int rx = udp_socket(&ra), tx = udp_socket(&sa);
	udp_batch_setup(tx);
	static uint8_t big[80000];
	int err = udp_send_gso(tx, (struct sockaddr *)&ra, sizeof(ra), big, sizeof(big), 40000);
	CHECK(err == -EINVAL || err == -EMSGSIZE);
	close(rx);
	close(tx);
}

int main(void)
{
	struct sockaddr_in a;
	int fd = udp_socket(&a);
	bool gso = udp_batch_setup(fd);
	close(fd);
	if (!gso) {
		fprintf(stderr, "skip: this kernel has no UDP GSO (UDP_SEGMENT)\n");
		return 77;
	}
	RUN(test_batch_to_gro_receiver);
	RUN(test_batch_to_plain_receiver);
	RUN(test_oversized_batch_refused);
	return check_report();
}
