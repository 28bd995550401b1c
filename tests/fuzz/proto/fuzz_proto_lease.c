/* Fuzz: what leases read from the server: the LEASE_BREAK notification
 * ([MS-SMB2] 2.2.23.2; an oplock break, StructureSize 24, is refused with
 * -EPROTO), the LEASE_BREAK response (2.2.25.2), and the RqLs response
 * context (2.2.14.2.10 / 2.2.14.2.11), found by walking a CREATE response's
 * context chain as client/ops.c does, and on the bare input.  Checks:
 * verdicts follow the StructureSize and length rules, and fields come from
 * their offsets. */
#include <errno.h>

#include "client/proto/smb2_lease.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

#define BODY SMB2_HDR_SIZE

static void rqls(const uint8_t *d, uint32_t n)
{
	struct smb2_lease l;
	int rc = smb2_rqls_rsp_decode(d, n, &l);
	if (n < SMB2_RQLS_V1_LEN) {
		if (rc != -EBADMSG)
			abort();
		return;
	}
	if (rc != 0 || memcmp(l.key, d, 16) != 0 || l.state != smb_le32(d + 16) ||
	    l.flags != smb_le32(d + 20) || l.version != (n >= SMB2_RQLS_V2_LEN ? 2 : 1))
		abort();
	if (l.version == 2 &&
	    (memcmp(l.parent_key, d + 32, 16) != 0 || l.epoch != smb_le16(d + 48)))
		abort();
	/* what we decoded encodes back to the same length */
	uint8_t out[SMB2_RQLS_V2_LEN];
	if (smb2_rqls_encode(out, sizeof(out), &l) != (l.version == 2 ? 52 : 32))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;

	struct smb2_lease_break b;
	int rc = smb2_lease_break_decode(m, size, &b);
	uint16_t ss = size >= BODY + 2 ? smb_le16(m + BODY) : 0;
	int want = size < BODY + 2    ? -EBADMSG
	           : ss == 24         ? -EPROTO
	           : ss != 44         ? -EBADMSG
	           : size < BODY + 44 ? -EBADMSG
	                              : 0;
	if (rc != want)
		abort();
	if (rc == 0 &&
	    (b.new_epoch != smb_le16(m + BODY + 2) || b.flags != smb_le32(m + BODY + 4) ||
	     memcmp(b.key, m + BODY + 8, 16) != 0 || b.current_state != smb_le32(m + BODY + 24) ||
	     b.new_state != smb_le32(m + BODY + 28)))
		abort();

	uint8_t key[16];
	uint32_t state = 0;
	rc = smb2_lease_break_rsp_decode(m, size, key, &state);
	want = size >= BODY + 36 && ss == 36 ? 0 : -EBADMSG;
	if (rc != want ||
	    (rc == 0 && (memcmp(key, m + BODY + 8, 16) != 0 || state != smb_le32(m + BODY + 24))))
		abort();

	fuzz_each_create_ctx(m, size, "RqLs", rqls);
	free(m);
	return 0;
}
