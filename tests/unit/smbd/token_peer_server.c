/* tests/unit/smbd/token_peer_server.c — a hostile SMB Direct peer that tries
 * to reuse an RDMA token after its I/O (the client is test_smbd_token_dead.c;
 * tests/vm/guest/test_smbd_token_dead.py runs both in the test guest).
 *
 * ksmbd cannot be made to RDMA-Read or -Write with a token it already used,
 * so this small server (SMB Direct from peer_rdma.c) takes data transfer
 * messages whose payload is this test's own protocol (below; keep the
 * client's copy in sync) and answers with data transfer messages.
 *
 *   READ  desc, seed          RDMA Read desc, check the pattern, answer DONE
 *   WRITE desc, seed          RDMA Write the pattern into desc, answer DONE
 *                             (DONE by Send-with-Invalidate of desc's token
 *                             when the request says so: the client's channel
 *                             was RDMA_V1_INVALIDATE; else a plain send)
 *   RETRY_READ  old, new      RDMA Read with the fresh token (must work: the
 *                             buffer is reachable), then with the OLD one:
 *                             that must fail.
 *   RETRY_WRITE old, new      the same with RDMA Writes (patterns seed and
 *                             seed ^ 0xa5); a Write with a dead token may
 *                             complete here before the remote refuses it
 *                             (iWARP Writes are not acknowledged), so the peer
 *                             then sends CHECK and the refusal shows as the
 *                             connection dying; a client that still answers
 *                             (WRITTEN / INTACT) means the old token worked.
 *
 * Verdict on stdout: "old rkey 0x... refused: <why>" and exit 0, or
 * "FAIL: old rkey 0x... still works" (or another FAIL line) and exit 1.  The
 * refused access moves both QPs to the error state: that is expected.  Every
 * wait is bounded (PEER_TIMEOUT_S for the whole run).
 *
 * Usage: token_peer_server ADDR PORT
 */
#include "peer_rdma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEER_TIMEOUT_S 30

/* ---- the test's protocol (keep in sync with test_smbd_token_dead.c) ---- */
#define TK_MAGIC       "TKD1"
#define TK_REQ_SIZE    44
#define TK_OP_READ     1
#define TK_OP_WRITE    2
#define TK_OP_RETRY_RD 3
#define TK_OP_RETRY_WR 4
#define TK_FLAG_INV    1 /* answer DONE by Send-with-Invalidate of desc's token */

static uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)(i ^ (i >> 8) ^ (i >> 16));
	return (uint8_t)(x * 31u + seed * 17u + 5u);
}

/* Next request of the test's protocol: 0 (req holds TK_REQ_SIZE bytes), 1 (a
 * text answer to our CHECK, NUL-terminated in req), or what peer_next_data
 * returned. */
static int next_request(uint8_t *req, int ms, bool *conn_gone)
{
	uint8_t m[PEER_MAX_RECV_SIZE];
	int n = peer_next_data(m, sizeof(m), ms, conn_gone);
	if (n < 0)
		return n;
	if (n < TK_REQ_SIZE || memcmp(m, TK_MAGIC, 4)) {
		size_t k = n < 63 ? (size_t)n : 63;
		memcpy(req, m, k);
		req[k] = 0;
		return 1;
	}
	memcpy(req, m, TK_REQ_SIZE);
	return 0;
}

static int send_text(const char *s, uint32_t inv_rkey)
{
	return peer_send_msg(s, strlen(s), inv_rkey);
}

static bool check_pattern(uint32_t seed, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (P.rdma_mem[i] != pattern(seed, i))
			return false;
	return true;
}

static void fill_pattern(uint32_t seed, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		P.rdma_mem[i] = pattern(seed, i);
}

static int decode_desc(const uint8_t *b, struct smbd_buffer_desc_v1 *d)
{
	size_t n = 0;
	if (smbd_buffer_desc_v1_decode(b, 16, d, 1, &n) != 16 || n != 1 || !d->length ||
	    d->length > PEER_RDMA_BUF_MAX)
		return -1;
	return 0;
}

/* READ or WRITE: one I/O with a live token, answered DONE. */
static int serve_io(uint8_t op, uint8_t flags, uint32_t seed, const struct smbd_buffer_desc_v1 *d)
{
	const char *what = op == TK_OP_READ ? "read" : "write";
	int st;
	if (op == TK_OP_READ) {
		memset(P.rdma_mem, 0, d->length);
		st = peer_do_rdma(IBV_WR_RDMA_READ, d, d->length);
	} else {
		fill_pattern(seed, d->length);
		st = peer_do_rdma(IBV_WR_RDMA_WRITE, d, d->length);
	}
	if (st != IBV_WC_SUCCESS) {
		printf("FAIL: RDMA %s of %u B with live rkey 0x%08x: %s\n", what, d->length,
		       d->token, peer_status_str(st));
		return -1;
	}
	if (op == TK_OP_READ && !check_pattern(seed, d->length)) {
		printf("FAIL: RDMA read with rkey 0x%08x: wrong data\n", d->token);
		send_text("ERR wrong data", 0);
		return -1;
	}
	printf("RDMA %s of %u B with rkey 0x%08x at 0x%llx: ok%s\n", what, d->length, d->token,
	       (unsigned long long)d->offset, op == TK_OP_READ ? ", pattern checked" : "");
	bool inv = flags & TK_FLAG_INV;
	if (send_text("DONE", inv ? d->token : 0))
		return -1;
	if (inv)
		printf("answered DONE by Send-with-Invalidate of rkey 0x%08x\n", d->token);
	else
		printf("answered DONE by plain send (the client invalidates)\n");
	return 0;
}

/* RETRY_READ / RETRY_WRITE: 0 when the old token was refused, 1 when it worked. */
static int serve_retry(uint8_t op, uint32_t seed, const struct smbd_buffer_desc_v1 *old,
                       const struct smbd_buffer_desc_v1 *fresh)
{
	bool rd = op == TK_OP_RETRY_RD;
	const char *what = rd ? "read" : "write";
	printf("retry (%s): old rkey 0x%08x, fresh rkey 0x%08x over 0x%llx+%u\n", what, old->token,
	       fresh->token, (unsigned long long)fresh->offset, fresh->length);
	if (old->offset != fresh->offset || old->length != fresh->length) {
		printf("FAIL: the fresh token is not over the same buffer\n");
		return -1;
	}
	/* 1. The fresh token works: the buffer is there, the connection alive. */
	int st;
	if (rd) {
		memset(P.rdma_mem, 0, fresh->length);
		st = peer_do_rdma(IBV_WR_RDMA_READ, fresh, fresh->length);
	} else {
		fill_pattern(seed, fresh->length);
		st = peer_do_rdma(IBV_WR_RDMA_WRITE, fresh, fresh->length);
	}
	if (st != IBV_WC_SUCCESS || (rd && !check_pattern(seed, fresh->length))) {
		printf("FAIL: RDMA %s with the fresh rkey 0x%08x: %s\n", what, fresh->token,
		       st == IBV_WC_SUCCESS ? "wrong data" : peer_status_str(st));
		return -1;
	}
	printf("fresh rkey 0x%08x: RDMA %s of %u B ok\n", fresh->token, what, fresh->length);

	/* 2. The old token must not. */
	if (rd) {
		memset(P.rdma_mem, 0, old->length);
		st = peer_do_rdma(IBV_WR_RDMA_READ, old, old->length);
	} else {
		fill_pattern(seed ^ 0xa5, old->length);
		st = peer_do_rdma(IBV_WR_RDMA_WRITE, old, old->length);
	}
	if (st == -1 || st == -2) {
		printf("FAIL: old rkey 0x%08x: %s\n", old->token, peer_status_str(st));
		return -1;
	}
	if (st != IBV_WC_SUCCESS) {
		printf("old rkey 0x%08x refused: %s (wc status %d)\n", old->token,
		       peer_status_str(st), st);
		return 0;
	}
	if (rd) {
		printf("FAIL: old rkey 0x%08x still works: read %u B%s\n", old->token, old->length,
		       check_pattern(seed, old->length) ? ", the buffer's data" : "");
		send_text("FAIL old rkey still works", 0);
		return 1;
	}
	/* A Write completed: on iWARP that only means it left.  Ask the client. */
	printf("old rkey 0x%08x: RDMA write completed locally; asking the client\n", old->token);
	if (send_text("CHECK", 0)) {
		printf("old rkey 0x%08x refused: the connection died after the write (%s%s)\n",
		       old->token, P.qp_dead ? ibv_wc_status_str(P.dead_status) : "",
		       P.disconnected ? ", disconnected" : "");
		return 0;
	}
	uint8_t ans[64];
	bool gone;
	int r = next_request(ans, PEER_OP_TIMEOUT_MS, &gone);
	if (r < 0 && gone) {
		printf("old rkey 0x%08x refused: the client's QP terminated the connection "
		       "(%s%s)\n",
		       old->token, P.qp_dead ? ibv_wc_status_str(P.dead_status) : "",
		       P.disconnected ? ", disconnected" : "");
		return 0;
	}
	if (r == 1) {
		printf("FAIL: old rkey 0x%08x still works: the client answers %s\n", old->token,
		       (char *)ans);
		return 1;
	}
	printf("FAIL: old rkey 0x%08x: no verdict (%s)\n", old->token,
	       r < 0 ? "timeout" : "unexpected request");
	return -1;
}

static int serve(void)
{
	for (;;) {
		uint8_t req[64];
		bool gone;
		int r = next_request(req, 20000, &gone);
		if (r < 0) {
			printf("FAIL: %s before the retry\n",
			       gone ? "the connection died" : "no request");
			return 1;
		}
		if (r == 1) {
			printf("FAIL: unexpected message '%s'\n", (char *)req);
			return 1;
		}
		uint8_t op = req[4], flags = req[5];
		uint32_t seed = (uint32_t)req[8] | (uint32_t)req[9] << 8 | (uint32_t)req[10] << 16 |
		                (uint32_t)req[11] << 24;
		struct smbd_buffer_desc_v1 d, d2;
		if (decode_desc(req + 12, &d)) {
			printf("FAIL: bad descriptor\n");
			return 1;
		}
		switch (op) {
		case TK_OP_READ:
		case TK_OP_WRITE:
			if (serve_io(op, flags, seed, &d))
				return 1;
			break;
		case TK_OP_RETRY_RD:
		case TK_OP_RETRY_WR:
			if (decode_desc(req + 28, &d2)) {
				printf("FAIL: bad fresh descriptor\n");
				return 1;
			}
			return serve_retry(op, seed, &d, &d2) ? 1 : 0;
		default:
			printf("FAIL: unknown op %u\n", op);
			return 1;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	peer_alarm(PEER_TIMEOUT_S);
	int rc = 1;
	if (peer_listen(argv[1], argv[2]) == 0 && peer_accept() == 0 && peer_negotiate() == 0)
		rc = serve();
	if (P.qp_dead)
		printf("peer QP in error (%s): expected after a refused access\n",
		       ibv_wc_status_str(P.dead_status));
	peer_teardown();
	printf("peer exit %d\n", rc);
	return rc;
}
