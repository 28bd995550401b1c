/* Fuzz: connection-oriented DCE/RPC (client/proto/dcerpc.h).  The input is
 * read three ways: as a stream of PDUs (each framed by dcerpc_pdu_decode(),
 * then given to the decoder of its type, responses reassembled), as the stub
 * of an ept_map answer, and as a tower.  Checks: frag_length moves the
 * stream forward and stays inside it; the body, its auth padding and the
 * token lie inside the fragment in that order; results and the secondary
 * address lie inside the body, and only 0 turns into -E2BIG when there is
 * less room; a response's stub lies inside its body and the reassembled
 * stub is the fragments' stubs end to end; dcerpc_auth_span() puts the
 * sealed region after the fixed header and before the trailer and the
 * signed one up to the token; ept_map gives an answer only for
 * the interface it was asked about and its port round-trips through a
 * tower; a decoded tower encodes to one that decodes the same. */
#include <errno.h>

#include "client/proto/dcerpc.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

/* ccd8c074-d0e5-4a40-92b4-d074faa6ba28 v1.1, the interface the seeds ask for */
static const struct dcerpc_syntax witness = {
    .uuid = {0x74, 0xc0, 0xd8, 0xcc, 0xe5, 0xd0, 0x40, 0x4a, 0x92, 0xb4, 0xd0, 0x74, 0xfa, 0xa6,
             0xba, 0x28},
    .major = 1,
    .minor = 1,
};

static void one_ack(const struct dcerpc_pdu *pdu)
{
	struct dcerpc_bind_ack a, b, n;
	struct dcerpc_result *big = malloc(255 * sizeof(*big)), *one = malloc(sizeof(*one));
	if (!big || !one)
		goto out;
	int rb = dcerpc_bind_ack_decode(pdu, &a, big, 255);
	int r1 = dcerpc_bind_ack_decode(pdu, &b, one, 1);
	int rn = dcerpc_bind_ack_decode(pdu, &n, NULL, 0);
	if (rb != 0 && rb != -EBADMSG)
		abort();
	if (rb == -EBADMSG) {
		if (r1 != rb || rn != rb)
			abort();
		goto out;
	}
	if (a.n_results != b.n_results || a.n_results != n.n_results ||
	    (r1 != (a.n_results > 1 ? -E2BIG : 0)) || (rn != (a.n_results ? -E2BIG : 0)))
		abort();
	/* the secondary address and the results inside the body */
	fuzz_in(a.sec_addr, a.sec_addr_len, pdu->body, pdu->body_len);
	if (!a.sec_addr != !a.sec_addr_len)
		abort();
	if (10 + (size_t)a.sec_addr_len + 4 + 24 * (size_t)a.n_results > pdu->body_len)
		abort();
	fuzz_touch(a.sec_addr, a.sec_addr_len);
out:
	free(big);
	free(one);
}

static void one_pdu(const struct dcerpc_pdu *pdu, const uint8_t *frag, size_t flen,
                    struct dcerpc_reasm *ra, size_t *want)
{
	/* the body first, its padding, the trailer, the token */
	fuzz_in(pdu->body, pdu->body_len, frag, flen);
	if (pdu->body != frag + DCERPC_HDR_LEN)
		abort();
	if (pdu->has_auth) {
		if (!pdu->hdr.auth_length || pdu->auth.token_len != pdu->hdr.auth_length ||
		    pdu->auth.token + pdu->auth.token_len != frag + flen ||
		    pdu->body + pdu->body_len + pdu->auth.pad_length + DCERPC_AUTH_HDR !=
		        pdu->auth.token)
			abort();
		fuzz_touch(pdu->auth.token, pdu->auth.token_len);
	} else if (pdu->hdr.auth_length || pdu->body_len != flen - DCERPC_HDR_LEN) {
		abort();
	}
	/* the protected regions: the sealed one after the fixed header and
	 * before the trailer, the signed one up to the token, which ends the
	 * fragment */
	struct dcerpc_auth_span sp;
	int ra_rc = dcerpc_auth_span(frag, flen, &sp);
	if (ra_rc != 0 && ra_rc != -EBADMSG)
		abort();
	if (ra_rc == 0) {
		uint8_t t = pdu->hdr.ptype;
		if (!pdu->has_auth ||
		    (t != DCERPC_PTYPE_REQUEST && t != DCERPC_PTYPE_RESPONSE &&
		     t != DCERPC_PTYPE_FAULT) ||
		    sp.stub_off < DCERPC_REQ_HDR_LEN ||
		    sp.stub_off + sp.stub_len + DCERPC_AUTH_HDR != sp.signed_len ||
		    sp.token_off != sp.signed_len || sp.token_len != pdu->auth.token_len ||
		    frag + sp.token_off != pdu->auth.token || sp.token_off + sp.token_len != flen ||
		    frag + sp.stub_off > pdu->body + pdu->body_len)
			abort();
		fuzz_touch(frag + sp.stub_off, sp.stub_len);
	} else if (pdu->has_auth && pdu->hdr.ptype == DCERPC_PTYPE_RESPONSE && pdu->body_len >= 8) {
		abort(); /* a response with a trailer and its fixed part always spans */
	}
	uint16_t reason;
	struct dcerpc_response rsp;
	int rc;
	switch (pdu->hdr.ptype) {
	case DCERPC_PTYPE_BIND_ACK:
	case DCERPC_PTYPE_ALTER_CONTEXT_RESP:
		one_ack(pdu);
		break;
	case DCERPC_PTYPE_BIND_NAK:
		rc = dcerpc_bind_nak_decode(pdu, &reason);
		if (rc != 0 && rc != -EBADMSG)
			abort();
		break;
	case DCERPC_PTYPE_RESPONSE:
	case DCERPC_PTYPE_FAULT:
		rc = dcerpc_response_decode(pdu, &rsp);
		if (rc == -EBADMSG)
			break;
		if (rc != (pdu->hdr.ptype == DCERPC_PTYPE_FAULT ? -EREMOTEIO : 0))
			abort();
		fuzz_in(rsp.stub, rsp.stub_len, pdu->body, pdu->body_len);
		if (rsp.stub + rsp.stub_len != pdu->body + pdu->body_len)
			abort();
		if (rc == 0) {
			size_t before = ra->len;
			uint8_t *at = ra->buf + before;
			rc = dcerpc_reasm_add(ra, &rsp);
			if (rc < 0 && rc != -EBADMSG && rc != -E2BIG)
				abort();
			if (rc >= 0) {
				if (ra->len != before + rsp.stub_len ||
				    (rsp.stub_len && memcmp(at, rsp.stub, rsp.stub_len)))
					abort();
				*want += rsp.stub_len;
			} else if (ra->len != before) {
				abort();
			}
		}
		break;
	default:
		rc = dcerpc_response_decode(pdu, &rsp);
		if (rc != -EBADMSG)
			abort();
	}
}

static void stream(const uint8_t *m, size_t size)
{
	size_t off = 0, want = 0;
	uint8_t *buf = malloc(size ? size : 1);
	struct dcerpc_reasm ra;
	if (!buf)
		return;
	dcerpc_reasm_init(&ra, buf, size);
	while (off < size) {
		struct dcerpc_pdu pdu;
		ssize_t n = dcerpc_pdu_decode(m + off, size - off, &pdu);
		if (n == -EBADMSG)
			break;
		if (n < DCERPC_HDR_LEN || (size_t)n > size - off || n != pdu.hdr.frag_length)
			abort();
		one_pdu(&pdu, m + off, (size_t)n, &ra, &want);
		off += (size_t)n;
	}
	if (ra.len != want)
		abort();
	free(buf);
}

static void epm(const uint8_t *m, size_t size)
{
	uint16_t port = 0;
	uint8_t ip[4] = {0};
	uint32_t st = 0;
	int rc = dcerpc_epm_map_decode(m, size, &witness, &port, ip, &st);
	if (rc != 0 && rc != -ENOENT && rc != -EBADMSG)
		abort();
	if (rc == 0) {
		if (st != 0)
			abort();
		/* the answer goes back into a tower and out again */
		struct dcerpc_tower t = {
		    .iface = witness, .transfer = dcerpc_ndr_syntax, .port = port};
		memcpy(t.ipv4, ip, 4);
		uint8_t tw[128];
		struct dcerpc_tower d;
		ssize_t n = dcerpc_tower_encode(tw, sizeof(tw), &t);
		if (n != 75 || dcerpc_tower_decode(tw, (size_t)n, &d) != 0 || d.port != port ||
		    memcmp(d.ipv4, ip, 4) != 0)
			abort();
	}
	/* another interface never finds what this one did unless the towers
	 * name both */
	struct dcerpc_syntax other = witness;
	other.uuid[15] ^= 0xff;
	int ro = dcerpc_epm_map_decode(m, size, &other, &port, ip, &st);
	if ((rc == -EBADMSG) != (ro == -EBADMSG))
		abort();
}

static void tower(const uint8_t *m, size_t size)
{
	struct dcerpc_tower t, d;
	int rc = dcerpc_tower_decode(m, size, &t);
	if (rc != 0 && rc != -ENOENT && rc != -EBADMSG)
		abort();
	if (rc == 0) {
		uint8_t tw[128];
		ssize_t n = dcerpc_tower_encode(tw, sizeof(tw), &t);
		if (n != 75 || (size_t)n != size || dcerpc_tower_decode(tw, (size_t)n, &d) != 0 ||
		    memcmp(&d, &t, sizeof(d)) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;
	stream(m, size);
	epm(m, size);
	tower(m, size);
	free(m);
	return 0;
}
