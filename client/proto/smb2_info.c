/* client/proto/smb2_info.c — [MS-FSCC] information classes: the directory
 * entry iterator for QUERY_DIRECTORY buffers, decoders for QUERY_INFO
 * buffers, and encoders for SET_INFO buffers. */
#include <errno.h>
#include <string.h>

#include "client/proto/smb2.h"

/* ---- directory entries [MS-FSCC] 2.4 ------------------------------------ */

/* Where FileName starts in each directory class (its fixed part). */
static int dirent_name_off(uint8_t info_class)
{
	switch (info_class) {
	case FileDirectoryInformation: /* 2.4.10 */
		return 64;
	case FileFullDirectoryInformation: /* 2.4.14 */
		return 68;
	case FileBothDirectoryInformation: /* 2.4.8 */
		return 94;
	case FileIdBothDirectoryInformation: /* FILE_ID_BOTH_DIR_INFORMATION */
		return 104;
	case FileIdFullDirectoryInformation: /* FILE_ID_FULL_DIR_INFORMATION */
		return 80;
	default:
		return -1;
	}
}

int smb2_dirent_next(uint8_t info_class, const uint8_t *buf, uint32_t len, uint32_t *off,
                     struct smb2_dirent *e)
{
	int fixed = dirent_name_off(info_class);
	uint32_t o = *off;

	if (fixed < 0)
		return -EINVAL;
	if (!buf || o >= len)
		return 0;
	uint32_t limit = len - o; /* this entry's extent */
	if (limit < (uint32_t)fixed)
		return -EBADMSG;
	const uint8_t *p = buf + o;
	uint32_t next = smb_le32(p);
	if (next) {
		/* Entries are 8-aligned and each must hold its fixed part,
		 * so the chain always advances and cannot loop. */
		if (next % 8 || next < (uint32_t)fixed || next > limit ||
		    limit - next < (uint32_t)fixed)
			return -EBADMSG;
		limit = next;
	}
	uint32_t name_len = smb_le32(p + 60);
	if (name_len % 2 || name_len > limit - (uint32_t)fixed)
		return -EBADMSG;

	memset(e, 0, sizeof(*e));
	e->file_index = smb_le32(p + 4);
	e->creation_time = smb_le64(p + 8);
	e->last_access_time = smb_le64(p + 16);
	e->last_write_time = smb_le64(p + 24);
	e->change_time = smb_le64(p + 32);
	e->end_of_file = smb_le64(p + 40);
	e->allocation_size = smb_le64(p + 48);
	e->file_attributes = smb_le32(p + 56);
	if (info_class != FileDirectoryInformation)
		e->ea_size = smb_le32(p + 64);
	if (info_class == FileIdBothDirectoryInformation)
		e->file_id = smb_le64(p + 96);
	else if (info_class == FileIdFullDirectoryInformation)
		e->file_id = smb_le64(p + 72);
	e->name16 = p + fixed;
	e->name16_len = name_len;
	*off = next ? o + next : len;
	return 1;
}

/* ---- QUERY_INFO payloads ---------------------------------------------------- */

static void basic_read(const uint8_t *b, struct smb2_file_basic_info *o)
{
	o->creation_time = smb_le64(b);
	o->last_access_time = smb_le64(b + 8);
	o->last_write_time = smb_le64(b + 16);
	o->change_time = smb_le64(b + 24);
	o->file_attributes = smb_le32(b + 32);
}

static void standard_read(const uint8_t *b, struct smb2_file_standard_info *o)
{
	o->allocation_size = smb_le64(b);
	o->end_of_file = smb_le64(b + 8);
	o->number_of_links = smb_le32(b + 16);
	o->delete_pending = b[20];
	o->directory = b[21];
}

/* The lengths below are the structures up to their last field we read;
 * trailing Reserved bytes are not required. */

int smb2_file_basic_info_decode(const uint8_t *b, size_t len, struct smb2_file_basic_info *o)
{
	if (!b || len < 36) /* 2.4.7: 40 with Reserved */
		return -EBADMSG;
	basic_read(b, o);
	return 0;
}

int smb2_file_standard_info_decode(const uint8_t *b, size_t len, struct smb2_file_standard_info *o)
{
	if (!b || len < 22) /* 2.4.41: 24 with Reserved */
		return -EBADMSG;
	standard_read(b, o);
	return 0;
}

int smb2_file_internal_info_decode(const uint8_t *b, size_t len, uint64_t *index_number)
{
	if (!b || len < 8) /* 2.4.22 */
		return -EBADMSG;
	*index_number = smb_le64(b);
	return 0;
}

int smb2_file_all_info_decode(const uint8_t *b, size_t len, struct smb2_file_all_info *o)
{
	/* 2.4.2: Basic(40) Standard(24) Internal(8) Ea(4) Access(4)
	 * Position(8) Mode(4) Alignment(4), then FileNameInformation. */
	if (!b || len < 96)
		return -EBADMSG;
	basic_read(b, &o->basic);
	standard_read(b + 40, &o->standard);
	o->index_number = smb_le64(b + 64);
	o->ea_size = smb_le32(b + 72);
	o->access_flags = smb_le32(b + 76);
	o->current_byte_offset = smb_le64(b + 80);
	o->mode = smb_le32(b + 88);
	o->alignment_requirement = smb_le32(b + 92);
	return 0;
}

int smb2_file_network_open_info_decode(const uint8_t *b, size_t len,
                                       struct smb2_file_network_open_info *o)
{
	if (!b || len < 52) /* 2.4.29: 56 with Reserved */
		return -EBADMSG;
	o->creation_time = smb_le64(b);
	o->last_access_time = smb_le64(b + 8);
	o->last_write_time = smb_le64(b + 16);
	o->change_time = smb_le64(b + 24);
	o->allocation_size = smb_le64(b + 32);
	o->end_of_file = smb_le64(b + 40);
	o->file_attributes = smb_le32(b + 48);
	return 0;
}

int smb2_fs_full_size_info_decode(const uint8_t *b, size_t len, struct smb2_fs_full_size_info *o)
{
	if (!b || len < 32) /* 2.5.4 */
		return -EBADMSG;
	o->total_allocation_units = smb_le64(b);
	o->caller_available_allocation_units = smb_le64(b + 8);
	o->actual_available_allocation_units = smb_le64(b + 16);
	o->sectors_per_allocation_unit = smb_le32(b + 24);
	o->bytes_per_sector = smb_le32(b + 28);
	return 0;
}

/* ---- SET_INFO payloads ------------------------------------------------------ */

static ssize_t wr_result(const struct smb_wr *w)
{
	return w->err ? w->err : (ssize_t)smb_wr_len(w);
}

ssize_t smb2_file_basic_info_encode(uint8_t *buf, size_t cap, const struct smb2_file_basic_info *i)
{
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_u64(&w, i->creation_time);
	smb_wr_u64(&w, i->last_access_time);
	smb_wr_u64(&w, i->last_write_time);
	smb_wr_u64(&w, i->change_time);
	smb_wr_u32(&w, i->file_attributes);
	smb_wr_u32(&w, 0);
	return wr_result(&w);
}

ssize_t smb2_file_eof_info_encode(uint8_t *buf, size_t cap, uint64_t end_of_file)
{
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_u64(&w, end_of_file);
	return wr_result(&w);
}

ssize_t smb2_file_disposition_info_encode(uint8_t *buf, size_t cap, bool delete_pending)
{
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_u8(&w, delete_pending ? 1 : 0);
	return wr_result(&w);
}

static ssize_t rename_info_encode(uint8_t *buf, size_t cap, bool replace_if_exists,
                                  const char *target, bool posix_path)
{
	struct smb_wr w;

	if (!target)
		return -EINVAL;
	while (*target == '/') /* relative to the share, like CREATE names */
		target++;
	if (!*target)
		return -EINVAL;
	smb_wr_init(&w, buf, cap);
	smb_wr_u8(&w, replace_if_exists ? 1 : 0);
	smb_wr_zero(&w, 7);
	smb_wr_u64(&w, 0); /* RootDirectory */
	uint8_t *len_field = w.p;
	smb_wr_u32(&w, 0);
	if (w.err)
		return w.err;
	size_t n = 0;
	ssize_t rc =
	    smb_utf8_to_utf16le(target, strlen(target), w.p, (size_t)(w.end - w.p), !posix_path);
	if (rc < 0)
		return rc;
	n = (size_t)rc;
	if (n)
		w.p += n;
	smb_put_le32(len_field, (uint32_t)n);
	/* A UTF-16 NUL after the name, not counted in FileNameLength: Windows
	 * checks the buffer against sizeof(FILE_RENAME_INFORMATION) (24), which
	 * a one-character name would otherwise miss. */
	smb_wr_u16(&w, 0);
	if (!w.err && smb_wr_len(&w) < 24)
		smb_wr_zero(&w, 24 - smb_wr_len(&w));
	return wr_result(&w);
}

ssize_t smb2_file_rename_info_encode(uint8_t *buf, size_t cap, bool replace_if_exists,
                                     const char *target)
{
	return rename_info_encode(buf, cap, replace_if_exists, target, false);
}

ssize_t smb2_file_rename_info_encode_posix(uint8_t *buf, size_t cap, bool replace_if_exists,
                                           const char *target)
{
	return rename_info_encode(buf, cap, replace_if_exists, target, true);
}
