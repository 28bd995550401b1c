/* client/proto/smb2_posix.c — SMB3 POSIX extensions payloads (see
 * smb2_posix.h for the layouts and the contract). */
#include "client/proto/smb2_posix.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "client/proto/smb2.h"
#include "client/proto/smb2_fsctl.h"

const char smb2_posix_ctx_name[17] = {SMB2_POSIX_GUID_BYTES, 0};

/* [MS-FSCC] 2.1.2.1 reparse tags of WSL special files */
#define IO_REPARSE_TAG_AF_UNIX 0x80000023u
#define IO_REPARSE_TAG_LX_FIFO 0x80000024u
#define IO_REPARSE_TAG_LX_CHR  0x80000025u
#define IO_REPARSE_TAG_LX_BLK  0x80000026u

/* SMB2_FILE_POSIX_INFORMATION up to the SIDs: six times, attributes, inode,
 * device, a zero, then what the create context's response holds. */
#define POSIX_INFO_FIXED 80
#define POSIX_DIRENT_HDR 8 /* NextEntryOffset, 4 ignored bytes */

/* [MS-DTYP] 2.4.6 control bits, 2.4.3 / 2.4.4.1 ACL and ACE */
#define SD_SELF_RELATIVE    0x8000u
#define SD_DACL_PRESENT     0x0004u
#define ACL_REVISION        2
#define ACCESS_ALLOWED_TYPE 0
#define OWNER_SECINFO       0x1u
#define GROUP_SECINFO       0x2u
#define DACL_SECINFO        0x4u

void smb2_posix_create_req_encode(uint8_t out[SMB2_POSIX_CREATE_REQ_LEN], uint32_t mode)
{
	smb_put_le32(out, mode & 07777);
}

/* ---- SIDs ------------------------------------------------------------------------- */

int smb2_sid_decode(const uint8_t *b, size_t len, struct smb2_sid *s, size_t *used)
{
	if (len < 8 || b[0] != 1 || b[1] > SMB2_SID_MAX_SUB || len < 8 + 4 * (size_t)b[1])
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->revision = b[0];
	s->nsub = b[1];
	for (int i = 0; i < 6; i++)
		s->authority = (s->authority << 8) | b[2 + i];
	for (int i = 0; i < s->nsub; i++)
		s->sub[i] = smb_le32(b + 8 + 4 * i);
	*used = 8 + 4 * (size_t)s->nsub;
	return 0;
}

ssize_t smb2_sid_encode(uint8_t *b, size_t cap, const struct smb2_sid *s)
{
	if (s->nsub > SMB2_SID_MAX_SUB)
		return -EINVAL;
	size_t n = 8 + 4 * (size_t)s->nsub;
	if (cap < n)
		return -ENOSPC;
	b[0] = 1;
	b[1] = s->nsub;
	for (int i = 0; i < 6; i++)
		b[2 + i] = (uint8_t)(s->authority >> (8 * (5 - i)));
	for (int i = 0; i < s->nsub; i++)
		smb_put_le32(b + 8 + 4 * i, s->sub[i]);
	return (ssize_t)n;
}

void smb2_sid_unix(struct smb2_sid *s, bool group, uint32_t id)
{
	memset(s, 0, sizeof(*s));
	s->revision = 1;
	s->nsub = 2;
	s->authority = 22;
	s->sub[0] = group ? 2 : 1;
	s->sub[1] = id;
}

uint32_t smb2_sid_unix_id(const struct smb2_sid *s, bool group)
{
	if (s->revision != 1 || s->nsub != 2 || s->authority != 22 ||
	    s->sub[0] != (group ? 2u : 1u))
		return SMB2_POSIX_ID_NONE;
	return s->sub[1];
}

/* Owner then group SID at b; *used gets the bytes of both. */
static int decode_owner_group(const uint8_t *b, size_t len, struct smb2_posix_ids *o, size_t *used)
{
	size_t n1, n2;
	if (smb2_sid_decode(b, len, &o->owner, &n1) < 0 ||
	    smb2_sid_decode(b + n1, len - n1, &o->group, &n2) < 0)
		return -EBADMSG;
	o->uid = smb2_sid_unix_id(&o->owner, false);
	o->gid = smb2_sid_unix_id(&o->group, true);
	*used = n1 + n2;
	return 0;
}

/* HardLinks, ReparseTag, Mode, owner, group at b. */
static int decode_ids(const uint8_t *b, size_t len, struct smb2_posix_ids *o, size_t *used)
{
	if (len < 12)
		return -EBADMSG;
	o->nlink = smb_le32(b);
	o->reparse_tag = smb_le32(b + 4);
	o->wire_mode = smb_le32(b + 8);
	o->mode = o->wire_mode & 07777;
	size_t n;
	if (decode_owner_group(b + 12, len - 12, o, &n) < 0)
		return -EBADMSG;
	*used = 12 + n;
	return 0;
}

/* ---- create context ----------------------------------------------------------------- */

int smb2_posix_create_rsp_decode(const uint8_t *data, uint32_t len, struct smb2_posix_ids *o)
{
	size_t used;
	return decode_ids(data, len, o, &used);
}

int smb2_posix_create_rsp_find(const uint8_t *chain, uint32_t chain_len, struct smb2_posix_ids *o)
{
	uint32_t off = 0, dlen;
	uint16_t nlen;
	const uint8_t *name, *data;
	int rc;
	while ((rc = smb2_create_ctx_next_raw(chain, chain_len, &off, &name, &nlen, &data,
	                                      &dlen)) == 1) {
		if (nlen == 16 && memcmp(name, smb2_posix_ctx_name, 16) == 0)
			return smb2_posix_create_rsp_decode(data, dlen, o) < 0 ? -EBADMSG : 1;
	}
	return rc < 0 ? -EBADMSG : 0;
}

/* ---- SMB2_FILE_POSIX_INFORMATION ------------------------------------------------------- */

/* The fixed part and SIDs at b; *used gets their length. */
static int decode_info(const uint8_t *b, size_t len, struct smb2_posix_info *o, size_t *used)
{
	if (len < POSIX_INFO_FIXED)
		return -EBADMSG;
	memset(o, 0, sizeof(*o));
	o->creation_time = smb_le64(b);
	o->last_access_time = smb_le64(b + 8);
	o->last_write_time = smb_le64(b + 16);
	o->change_time = smb_le64(b + 24);
	o->end_of_file = smb_le64(b + 32);
	o->allocation_size = smb_le64(b + 40);
	o->file_attributes = smb_le32(b + 48);
	o->inode = smb_le64(b + 52);
	o->device_id = smb_le32(b + 60);
	/* b + 64: a zero */
	size_t n;
	if (decode_ids(b + 68, len - 68, &o->ids, &n) < 0)
		return -EBADMSG;
	*used = 68 + n;
	return 0;
}

int smb2_posix_info_decode(const uint8_t *b, size_t len, struct smb2_posix_info *o)
{
	size_t used;
	return decode_info(b, len, o, &used);
}

int smb2_posix_dirent_next(const uint8_t *buf, uint32_t len, uint32_t *off,
                           struct smb2_posix_info *o, const uint8_t **name16, uint32_t *name16_len)
{
	if (*off == UINT32_MAX || *off >= len || (len && !buf))
		return 0;
	const uint8_t *e = buf + *off;
	size_t left = len - *off, used;
	if (left < POSIX_DIRENT_HDR ||
	    decode_info(e + POSIX_DIRENT_HDR, left - POSIX_DIRENT_HDR, o, &used) < 0)
		return -EBADMSG;
	size_t at = POSIX_DIRENT_HDR + used;
	if (left - at < 4)
		return -EBADMSG;
	uint32_t nl = smb_le32(e + at);
	at += 4;
	if (nl > left - at || (nl & 1))
		return -EBADMSG;
	*name16 = e + at;
	*name16_len = nl;
	at += nl;
	uint32_t next = smb_le32(e);
	if (next == 0) {
		*off = UINT32_MAX; /* this was the last */
	} else {
		/* forward by a whole entry, and the next one must start inside */
		if (next < at || next >= left)
			return -EBADMSG;
		*off += next;
	}
	return 1;
}

uint32_t smb2_posix_file_type(uint32_t file_attributes, uint32_t reparse_tag, uint32_t wire_mode)
{
	static const uint32_t unix_types[] = {S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR,
	                                      S_IFBLK, S_IFIFO, S_IFSOCK};
	if (file_attributes & FILE_ATTRIBUTE_DIRECTORY)
		return S_IFDIR;
	if (wire_mode & 0100000) {
		/* S_IFMT itself (early ksmbd) */
		uint32_t t = wire_mode & S_IFMT;
		if (t == S_IFREG || t == S_IFLNK || t == S_IFSOCK)
			return t;
	} else {
		uint32_t t = (wire_mode >> 12) & 7;
		if (t > 0 && t < sizeof(unix_types) / sizeof(unix_types[0]))
			return unix_types[t];
	}
	if (!(file_attributes & FILE_ATTRIBUTE_REPARSE_POINT))
		return S_IFREG;
	switch (reparse_tag) {
	case IO_REPARSE_TAG_SYMLINK:
		return S_IFLNK;
	case IO_REPARSE_TAG_LX_FIFO:
		return S_IFIFO;
	case IO_REPARSE_TAG_LX_CHR:
		return S_IFCHR;
	case IO_REPARSE_TAG_LX_BLK:
		return S_IFBLK;
	case IO_REPARSE_TAG_AF_UNIX:
		return S_IFSOCK;
	default:
		return S_IFREG;
	}
}

/* ---- security descriptors ---------------------------------------------------------------- */

ssize_t smb2_posix_sd_encode(uint8_t *buf, size_t cap, const struct smb2_posix_sd *sd,
                             uint32_t *secinfo)
{
	if (!sd->set_mode && !sd->set_uid && !sd->set_gid)
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	uint32_t info = 0;
	/* header: Revision, Sbz1, Control, owner, group, SACL, DACL offsets */
	smb_wr_u8(&w, 1);
	smb_wr_u8(&w, 0);
	smb_wr_u16(&w, (uint16_t)(SD_SELF_RELATIVE | (sd->set_mode ? SD_DACL_PRESENT : 0)));
	uint8_t *offsets = w.p;
	smb_wr_zero(&w, 16);
	if (w.err)
		return w.err;
	if (sd->set_mode) {
		struct smb2_sid mode_sid = {
		    .revision = 1, .nsub = 3, .authority = 5, .sub = {88, 3, sd->mode & 07777}};
		smb_put_le32(offsets + 12, (uint32_t)smb_wr_len(&w));
		uint16_t ace_len = (uint16_t)(8 + 8 + 4 * mode_sid.nsub);
		smb_wr_u8(&w, ACL_REVISION);
		smb_wr_u8(&w, 0);
		smb_wr_u16(&w, (uint16_t)(8 + ace_len));
		smb_wr_u16(&w, 1); /* AceCount */
		smb_wr_u16(&w, 0);
		smb_wr_u8(&w, ACCESS_ALLOWED_TYPE);
		smb_wr_u8(&w, 0); /* AceFlags */
		smb_wr_u16(&w, ace_len);
		smb_wr_u32(&w, 0); /* Mask: the SID says it all */
		uint8_t tmp[8 + 4 * 3];
		smb_wr_bytes(&w, tmp, (size_t)smb2_sid_encode(tmp, sizeof(tmp), &mode_sid));
		info |= DACL_SECINFO;
	}
	for (int g = 0; g < 2; g++) {
		bool set = g ? sd->set_gid : sd->set_uid;
		if (!set)
			continue;
		struct smb2_sid s;
		if (!g && sd->owner_sid)
			s = *sd->owner_sid;
		else
			smb2_sid_unix(&s, g, g ? sd->gid : sd->uid);
		uint8_t tmp[8 + 4 * SMB2_SID_MAX_SUB];
		ssize_t n = smb2_sid_encode(tmp, sizeof(tmp), &s);
		if (n < 0)
			return n;
		if (!w.err)
			smb_put_le32(offsets + 4 * g, (uint32_t)smb_wr_len(&w));
		smb_wr_bytes(&w, tmp, (size_t)n);
		info |= g ? GROUP_SECINFO : OWNER_SECINFO;
	}
	if (w.err)
		return w.err;
	*secinfo = info;
	return (ssize_t)smb_wr_len(&w);
}
