/* tests/unit/smbd/relay_peer_server.c — an SMB Direct front for a scripted
 * SMB2 server, so that a test can make a server that moves RDMA payloads
 * its own way (tests/vm/guest/test_smbrdma_short_read.py runs it in the test
 * guest in front of tests/lib/hostile_server.py).
 *
 * ksmbd RDMA-Writes exactly the DataRemaining it announces; a hostile server
 * may write less.  The relay accepts one SMB Direct connection from our
 * client (peer_rdma.c) and connects to an SMB2 server over Direct TCP:
 *
 *   client -> server  every SMB2 message (fragments reassembled) goes on as
 *                     one Direct TCP frame, untouched (signatures hold);
 *   server -> client  a Direct TCP frame (first byte 0x00) goes to the client
 *                     as one SMB Direct message (fragmented to its receive
 *                     size); a frame whose first byte is 0xFE is an order
 *                     for the relay, not relayed:
 *
 *       0xFE, length (3 bytes, big-endian: what follows), op (1 byte),
 *       Buffer Descriptor V1 (16 bytes, [MS-SMBD] 2.2.3.1), data
 *
 *       op 1  RDMA-Write data to the descriptor (any length up to the
 *             descriptor's: a short write is the point)
 *       op 2  send the next message to the client by Send-with-Invalidate
 *             of the descriptor's token (RDMA_V1_INVALIDATE)
 *
 * The server sends the orders of a READ before its response, so the data is
 * placed before the client sees the response (one QP: in order).  A client
 * WRITE with an RDMA channel is relayed as it is; this relay does not pull
 * its data (the tests only read).
 *
 * Prints one line per order ("RDMA write of N B of the M granted with rkey
 * 0x...: ok" or the failure).  Exits 0 when either side closes after at least
 * one message went each way, 1 on any failure; PEER_TIMEOUT_S bounds the run.
 *
 * Usage: relay_peer_server RDMA_ADDR PORT TCP_ADDR TCP_PORT
 */
#include "peer_rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PEER_TIMEOUT_S 300
#define ORDER_MARK     0xFE
#define ORDER_WRITE    1
#define ORDER_INV_NEXT 2
#define ORDER_HDR      (1 + 16) /* op, descriptor */
#define FRAME_MAX      (PEER_MAX_FRAGMENTED + 4096)

static uint8_t client_msg[PEER_MAX_FRAGMENTED];
static uint8_t frame[FRAME_MAX];

static int tcp_connect(const char *addr, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		printf("FAIL: bad TCP address %s\n", addr);
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("FAIL: cannot reach the SMB2 server at %s:%s: %s\n", addr, port,
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Read exactly len bytes (the server writes whole frames at once).  0, or -1
 * at EOF, error or PEER_OP_TIMEOUT_MS without progress. */
static int read_full(int fd, uint8_t *p, size_t len)
{
	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, PEER_OP_TIMEOUT_MS) <= 0)
			return -1;
		ssize_t n = read(fd, p, len);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int to_server(int fd, const uint8_t *msg, size_t len)
{
	uint8_t hdr[4] = {0, (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
	if (write_full(fd, hdr, 4) || write_full(fd, msg, len)) {
		printf("relay: the SMB2 server went away (%s)\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* One order from the server; *inv_next set by ORDER_INV_NEXT. */
static int order(const uint8_t *p, size_t len, uint32_t *inv_next)
{
	struct smbd_buffer_desc_v1 d;
	size_t nd = 0;
	if (len < ORDER_HDR || smbd_buffer_desc_v1_decode(p + 1, 16, &d, 1, &nd) != 16 || nd != 1) {
		printf("FAIL: a malformed order (%zu bytes)\n", len);
		return -1;
	}
	if (p[0] == ORDER_INV_NEXT) {
		*inv_next = d.token;
		return 0;
	}
	uint32_t n = (uint32_t)(len - ORDER_HDR);
	if (p[0] != ORDER_WRITE || n > d.length || n > PEER_RDMA_BUF_MAX) {
		printf("FAIL: order %u of %u B for a %u-byte descriptor\n", p[0], n, d.length);
		return -1;
	}
	memcpy(P.rdma_mem, p + ORDER_HDR, n);
	int st = n ? peer_do_rdma(IBV_WR_RDMA_WRITE, &d, n) : IBV_WC_SUCCESS;
	printf("RDMA write of %u B of the %u granted with rkey 0x%08x at 0x%llx: %s\n", n, d.length,
	       d.token, (unsigned long long)d.offset, peer_status_str(st));
	return st == IBV_WC_SUCCESS ? 0 : -1;
}

/* One frame from the server: relayed, or obeyed.  1 at the server's EOF. */
static int from_server(int fd, uint32_t *inv_next, unsigned *relayed)
{
	uint8_t hdr[4];
	if (read_full(fd, hdr, 4))
		return 1;
	size_t len = (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if ((hdr[0] != 0 && hdr[0] != ORDER_MARK) || len > sizeof(frame) ||
	    read_full(fd, frame, len)) {
		printf("FAIL: a bad frame from the SMB2 server (first byte 0x%02x, %zu B)\n",
		       hdr[0], len);
		return -1;
	}
	if (hdr[0] == ORDER_MARK)
		return order(frame, len, inv_next);
	int r = peer_send_data(frame, len, *inv_next);
	if (*inv_next)
		printf("answered by Send-with-Invalidate of rkey 0x%08x\n", *inv_next);
	*inv_next = 0;
	(*relayed)++;
	return r ? -1 : 0;
}

static int relay(int fd)
{
	struct peer_asm a = {.buf = client_msg, .cap = sizeof(client_msg)};
	uint32_t inv_next = 0;
	unsigned up = 0, down = 0;
	for (;;) {
		struct peer_rx *m = peer_wait_msg(0);
		if (m) {
			int r = peer_asm_feed(&a, m);
			if (r < 0)
				return 1;
			if (r) {
				if (to_server(fd, a.buf, a.have))
					return 1;
				a.have = 0;
				up++;
			}
			continue;
		}
		if (P.qp_dead || P.disconnected) {
			printf("relay: the client is gone (%s) after %u messages up, %u down\n",
			       P.qp_dead ? ibv_wc_status_str(P.dead_status) : "disconnected", up,
			       down);
			return up && down ? 0 : 1;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, 0) > 0) {
			int r = from_server(fd, &inv_next, &down);
			if (r < 0)
				return 1;
			if (r) {
				printf(
				    "relay: the SMB2 server closed after %u messages up, %u down\n",
				    up, down);
				return up && down ? 0 : 1;
			}
			continue;
		}
		peer_pump_once();
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s RDMA_ADDR PORT TCP_ADDR TCP_PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	peer_alarm(PEER_TIMEOUT_S);
	int rc = 1, fd = -1;
	if (peer_listen(argv[1], argv[2]) == 0 && peer_accept() == 0 && peer_negotiate() == 0 &&
	    (fd = tcp_connect(argv[3], argv[4])) >= 0)
		rc = relay(fd);
	if (fd >= 0)
		close(fd);
	peer_teardown();
	printf("relay exit %d\n", rc);
	return rc;
}
