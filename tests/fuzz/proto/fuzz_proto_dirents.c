/* Fuzz: the directory-entry iterator on a bare QUERY_DIRECTORY output buffer
 * ([MS-FSCC] 2.4: NextEntryOffset chains).  Byte 0 picks the information
 * class, any value (the iterator must refuse the ones it does not know); the
 * rest is the buffer.  Checks: each entry's fixed part and name lie inside
 * the buffer and inside the entry's NextEntryOffset extent; the walk moves
 * forward by whole 8-aligned entries and ends; the fields come from the
 * offsets of the class; a refusal leaves the cursor where it was. */
#include <errno.h>

#include "tests/fuzz/proto/fuzz_proto_common.h"

/* Where FileName starts in each class: the layouts of [MS-FSCC] 2.4.10,
 * 2.4.14, 2.4.8, 2.4.17 and 2.4.18, written out again here on purpose. */
static int fixed_part(uint8_t info_class)
{
	switch (info_class) {
	case FileDirectoryInformation:
		return 64;
	case FileFullDirectoryInformation:
		return 68;
	case FileBothDirectoryInformation:
		return 94;
	case FileIdBothDirectoryInformation:
		return 104;
	case FileIdFullDirectoryInformation:
		return 80;
	default:
		return -1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char name[3 * 32768 + 1];
	if (size < 1 || size - 1 > UINT32_MAX)
		return 0;
	uint8_t info_class = data[0];
	uint32_t len = (uint32_t)(size - 1);
	uint8_t *buf = fuzz_dup(data + 1, len);
	if (!buf)
		return 0;
	int fixed = fixed_part(info_class);
	uint32_t off = 0, steps = 0;
	struct smb2_dirent e;
	int rc;

	for (;;) {
		uint32_t start = off;
		rc = smb2_dirent_next(info_class, buf, len, &off, &e);
		if (rc != 1) {
			if (off != start)
				abort(); /* a refusal or the end leaves the cursor alone */
			break;
		}
		if (fixed < 0 || start >= len || len - start < (uint32_t)fixed)
			abort();
		const uint8_t *p = buf + start;
		uint32_t next = smb_le32(p);
		uint32_t extent = next ? next : len - start;
		if (next && (next % 8 || next < (uint32_t)fixed || off != start + next ||
		             len - off < (uint32_t)fixed))
			abort();
		if (!next && off != len)
			abort();
		if (e.name16 != p + fixed || e.name16_len % 2 ||
		    e.name16_len > extent - (uint32_t)fixed)
			abort();
		fuzz_in(e.name16, e.name16_len, buf, len);
		if (e.file_index != smb_le32(p + 4) || e.end_of_file != smb_le64(p + 40) ||
		    e.file_attributes != smb_le32(p + 56))
			abort();
		if ((info_class == FileIdBothDirectoryInformation &&
		     e.file_id != smb_le64(p + 96)) ||
		    (info_class == FileIdFullDirectoryInformation && e.file_id != smb_le64(p + 72)))
			abort();
		fuzz_touch(e.name16, e.name16_len);
		(void)smb_utf16le_to_utf8(e.name16, e.name16_len, name, sizeof(name));
		if (++steps > len / 64 + 1)
			abort(); /* every entry took at least 64 bytes */
	}
	if (fixed < 0 ? rc != -EINVAL : rc != 0 && rc != -EBADMSG)
		abort();
	free(buf);
	return 0;
}
