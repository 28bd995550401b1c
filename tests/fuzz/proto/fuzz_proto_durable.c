/* Fuzz: what durable handles and oplocks read from the server: the
 * OPLOCK_BREAK notification ([MS-SMB2] 2.2.23.1; a lease break, 2.2.23.2,
 * must be refused with -EPROTO) and the DH2Q response context (2.2.14.2.12)
 * and the QFid one (2.2.14.2.9) found by walking a CREATE response's
 * context chain, as client/ops.c does.
 * Checks: verdicts follow the StructureSize and length rules, and fields
 * come from their offsets. */
#include <errno.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

#define BODY SMB2_HDR_SIZE

static void dh2q(const uint8_t *d, uint32_t n)
{
	uint32_t timeout = 0;
	int rc = smb2_dh2q_rsp_decode(d, n, &timeout);
	if (n >= 8 ? rc != 0 || timeout != smb_le32(d) : rc != -EBADMSG)
		abort();
}

static void qfid(const uint8_t *d, uint32_t n)
{
	uint64_t id = 0;
	int rc = smb2_qfid_rsp_decode(d, n, &id);
	if (n >= 16 ? rc != 0 || id != smb_le64(d) : rc != -EBADMSG)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m)
		return 0;

	struct smb2_oplock_break b;
	int rc = smb2_oplock_break_decode(m, size, &b);
	int want = size < BODY + 2            ? -EBADMSG
	           : smb_le16(m + BODY) != 24 ? -EPROTO
	           : size < BODY + 24         ? -EBADMSG
	                                      : 0;
	if (rc != want)
		abort();
	if (rc == 0 &&
	    (b.oplock_level != m[BODY + 2] || b.fileid.persistent != smb_le64(m + BODY + 8) ||
	     b.fileid.volatile_ != smb_le64(m + BODY + 16)))
		abort();

	fuzz_each_create_ctx(m, size, "DH2Q", dh2q);
	fuzz_each_create_ctx(m, size, "QFid", qfid);

	int fo = smb2_req_fileid_offset(size >= 2 ? smb_le16(m) : 0);
	if (fo != -1 && fo != 8 && fo != 16 && fo != 24)
		abort();
	free(m);
	return 0;
}
