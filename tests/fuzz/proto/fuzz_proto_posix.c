/* Fuzz: what the SMB3 POSIX extensions read from the server: the POSIX
 * create context found in a CREATE response's chain, SMB2_FILE_POSIX_
 * INFORMATION as QUERY_INFO's output, the same class as a QUERY_DIRECTORY
 * buffer, and SIDs.  Checks: names point inside the input, the walk always
 * moves forward, a decoded SID encodes back to the same bytes, and the
 * file type is one of the eight of <sys/stat.h>.  Also the LSA pipe's answers
 * (client/proto/lsarpc.h) that name the owners of account SIDs: names
 * come back NUL-terminated within their buffers. */
#include <errno.h>
#include <sys/stat.h>

#include "client/proto/lsarpc.h"
#include "client/proto/smb2_posix.h"
#include "tests/fuzz/proto/fuzz_proto_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *m = fuzz_dup(data, size);
	if (!m || size > UINT32_MAX) {
		free(m);
		return 0;
	}
	uint32_t len = (uint32_t)size;

	struct smb2_create_rsp cr;
	struct smb2_posix_ids ids;
	if (smb2_create_rsp_decode(m, size, &cr) == 0) {
		int rc = smb2_posix_create_rsp_find(cr.contexts, cr.contexts_len, &ids);
		if (rc != 0 && rc != 1 && rc != -EBADMSG)
			abort();
		if (rc == 1 && ids.mode > 07777)
			abort();
	}
	if (smb2_posix_create_rsp_decode(m, len, &ids) == 0 && (len < 28 || ids.mode > 07777))
		abort();

	struct smb2_posix_info pi;
	if (smb2_posix_info_decode(m, size, &pi) == 0) {
		if (size < 96 || pi.ids.mode > 07777)
			abort();
		uint32_t t =
		    smb2_posix_file_type(pi.file_attributes, pi.ids.reparse_tag, pi.ids.wire_mode);
		if (t != S_IFREG && t != S_IFDIR && t != S_IFLNK && t != S_IFIFO && t != S_IFCHR &&
		    t != S_IFBLK && t != S_IFSOCK)
			abort();
	}

	uint32_t off = 0, prev = 0, nl;
	const uint8_t *name;
	int rc;
	int n = 0;
	while ((rc = smb2_posix_dirent_next(m, len, &off, &pi, &name, &nl)) == 1) {
		fuzz_in(name, nl, m, size);
		if (off != UINT32_MAX && off <= prev)
			abort(); /* the walk must move forward */
		prev = off;
		if (++n > (int)(size / 8) + 1)
			abort();
	}
	if (rc != 0 && rc != -EBADMSG)
		abort();

	struct smb2_sid s;
	size_t used;
	if (smb2_sid_decode(m, size, &s, &used) == 0) {
		uint8_t back[8 + 4 * SMB2_SID_MAX_SUB];
		if (used > size || smb2_sid_encode(back, sizeof(back), &s) != (ssize_t)used ||
		    memcmp(back, m, used) != 0)
			abort();
	}
	(void)lsarpc_bind_ack_decode(m, size, 1);
	uint8_t handle[LSARPC_HANDLE_LEN];
	uint32_t status;
	(void)lsarpc_open_policy2_decode(m, size, 1, handle, &status);
	static struct lsarpc_name names[LSARPC_MAX_SIDS];
	for (uint32_t k = 1; k <= LSARPC_MAX_SIDS; k *= 2) {
		if (lsarpc_lookup_sids_decode(m, size, 1, names, k, &status) != 0)
			continue;
		for (uint32_t i = 0; i < k; i++)
			if (!memchr(names[i].name, 0, sizeof(names[i].name)) ||
			    !memchr(names[i].domain, 0, sizeof(names[i].domain)))
				abort();
	}
	/* the stub-only decoders (client/rpc_tcp.c's answers) */
	int ro = lsarpc_open_policy2_stub_decode(m, size, handle, &status);
	if (ro != 0 && ro != -EBADMSG)
		abort();
	for (uint32_t k = 1; k <= LSARPC_MAX_SIDS; k *= 2) {
		int rl = lsarpc_lookup_sids_stub_decode(m, size, names, k, &status);
		if (rl != 0 && rl != -EBADMSG)
			abort();
		if (rl != 0)
			continue;
		for (uint32_t i = 0; i < k; i++)
			if (!memchr(names[i].name, 0, sizeof(names[i].name)) ||
			    !memchr(names[i].domain, 0, sizeof(names[i].domain)))
				abort();
	}
	free(m);
	return 0;
}
