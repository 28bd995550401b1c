/* client/proto/smb2_fsctl.c — EAs, copychunk, ranges, LOCK, symlinks (smb2_fsctl.h). */
#include <errno.h>
#include <string.h>

#include "client/proto/smb2_fsctl.h"

static ssize_t wr_result(const struct smb_wr *w)
{
	return w->err ? w->err : (ssize_t)smb_wr_len(w);
}

/* ---- extended attributes ------------------------------------------------------ */

static bool ea_name_ok(const char *name, size_t len)
{
	return name && len && len <= SMB2_EA_NAME_MAX && !memchr(name, '\0', len);
}

ssize_t smb2_ea_list_encode(uint8_t *buf, size_t cap, const struct smb2_ea *eas, size_t n)
{
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	for (size_t i = 0; i < n; i++) {
		const struct smb2_ea *e = &eas[i];
		if (!ea_name_ok(e->name, e->name_len) || e->value_len > SMB2_EA_VALUE_MAX ||
		    (e->value_len && !e->value))
			return -EINVAL;
		size_t entry = 8 + e->name_len + 1 + e->value_len;
		size_t padded = (entry + 3) & ~(size_t)3;
		smb_wr_u32(&w, i + 1 < n ? (uint32_t)padded : 0);
		smb_wr_u8(&w, e->flags);
		smb_wr_u8(&w, (uint8_t)e->name_len);
		smb_wr_u16(&w, (uint16_t)e->value_len);
		smb_wr_bytes(&w, e->name, e->name_len);
		smb_wr_u8(&w, 0);
		smb_wr_bytes(&w, e->value, e->value_len);
		if (i + 1 < n)
			smb_wr_zero(&w, padded - entry);
	}
	return wr_result(&w);
}

ssize_t smb2_get_ea_encode(uint8_t *buf, size_t cap, const char *name, size_t name_len)
{
	if (!ea_name_ok(name, name_len))
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_u32(&w, 0); /* NextEntryOffset: one entry */
	smb_wr_u8(&w, (uint8_t)name_len);
	smb_wr_bytes(&w, name, name_len);
	smb_wr_u8(&w, 0);
	return wr_result(&w);
}

int smb2_ea_next(const uint8_t *buf, size_t len, uint32_t *off, struct smb2_ea *out)
{
	/* *off == UINT32_MAX: the last entry was returned */
	if (*off == UINT32_MAX || len == 0)
		return 0;
	if (!buf || *off > len || len - *off < 8)
		return -EBADMSG;
	struct smb_rd r;
	smb_rd_init(&r, buf + *off, len - *off);
	uint32_t next = smb_rd_u32(&r);
	uint8_t flags = smb_rd_u8(&r);
	uint8_t nlen = smb_rd_u8(&r);
	uint16_t vlen = smb_rd_u16(&r);
	const uint8_t *name = smb_rd_ptr(&r, nlen);
	uint8_t nul = smb_rd_u8(&r);
	const uint8_t *value = smb_rd_ptr(&r, vlen);
	if (r.err || nul != 0 || nlen == 0 || memchr(name, '\0', nlen))
		return -EBADMSG;
	size_t used = 8 + (size_t)nlen + 1 + vlen;
	if (next) {
		/* the next entry starts after this one, aligned, inside the buffer */
		if (next < used || next % 4 || next > len - *off)
			return -EBADMSG;
	}
	*out = (struct smb2_ea){.name = (const char *)name,
	                        .name_len = nlen,
	                        .value = vlen ? value : NULL,
	                        .value_len = vlen,
	                        .flags = flags};
	*off = next ? *off + next : UINT32_MAX;
	return 1;
}

int smb2_ea_list_decode(const uint8_t *buf, size_t len, struct smb2_ea *out, size_t max,
                        size_t *count)
{
	/* every entry but the last takes at least 12 bytes (8, a name, its
	 * NUL, 4-aligned), the last at least 10: SMB2_EA_LIST_MAX */
	uint32_t off = 0;
	struct smb2_ea e;
	size_t n = 0;
	int rc;
	*count = 0;
	while ((rc = smb2_ea_next(buf, len, &off, &e)) == 1) {
		if (!e.value_len)
			continue;
		if (n < max)
			out[n] = e;
		n++;
	}
	if (rc < 0)
		return rc;
	*count = n;
	return 0;
}

/* ---- server-side copy ----------------------------------------------------------- */

int smb2_resume_key_decode(const uint8_t *buf, size_t len, uint8_t key[SMB2_RESUME_KEY_LEN])
{
	/* ResumeKey(24) ContextLength(4) Context(variable, ignored) */
	if (!buf || len < SMB2_RESUME_KEY_LEN + 4)
		return -EBADMSG;
	memcpy(key, buf, SMB2_RESUME_KEY_LEN);
	return 0;
}

ssize_t smb2_copychunk_encode(uint8_t *buf, size_t cap, const uint8_t key[SMB2_RESUME_KEY_LEN],
                              const struct smb2_chunk *chunks, uint32_t n)
{
	if (!n)
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_bytes(&w, key, SMB2_RESUME_KEY_LEN);
	smb_wr_u32(&w, n);
	smb_wr_u32(&w, 0);
	for (uint32_t i = 0; i < n; i++) {
		smb_wr_u64(&w, chunks[i].src_off);
		smb_wr_u64(&w, chunks[i].dst_off);
		smb_wr_u32(&w, chunks[i].len);
		smb_wr_u32(&w, 0);
	}
	return wr_result(&w);
}

int smb2_copychunk_rsp_decode(const uint8_t *buf, size_t len, struct smb2_copychunk_rsp *o)
{
	struct smb_rd r;
	smb_rd_init(&r, buf, len);
	o->chunks_written = smb_rd_u32(&r);
	o->chunk_bytes_written = smb_rd_u32(&r);
	o->total_bytes_written = smb_rd_u32(&r);
	return r.err;
}

/* ---- ranges ------------------------------------------------------------------------- */

ssize_t smb2_range_encode(uint8_t *buf, size_t cap, uint64_t off, uint64_t len)
{
	struct smb_wr w;
	smb_wr_init(&w, buf, cap);
	smb_wr_u64(&w, off);
	smb_wr_u64(&w, len);
	return wr_result(&w);
}

ssize_t smb2_zero_data_encode(uint8_t *buf, size_t cap, uint64_t off, uint64_t len)
{
	if (len > UINT64_MAX - off)
		return -EINVAL;
	return smb2_range_encode(buf, cap, off, off + len);
}

int smb2_ranges_decode(const uint8_t *buf, size_t len, struct smb2_range *out, size_t max,
                       size_t *count)
{
	*count = 0;
	if (len % 16 || (len && !buf))
		return -EBADMSG;
	uint64_t end_prev = 0;
	for (size_t i = 0; i < len / 16; i++) {
		uint64_t off = smb_le64(buf + i * 16), l = smb_le64(buf + i * 16 + 8);
		if (l > UINT64_MAX - off || (i && off < end_prev))
			return -EBADMSG;
		end_prev = off + l;
		if (i < max)
			out[i] = (struct smb2_range){.off = off, .len = l};
	}
	*count = len / 16;
	return 0;
}

/* ---- LOCK ----------------------------------------------------------------------------- */

ssize_t smb2_lock_req_encode(uint8_t *body, size_t cap, struct smb2_fileid fid,
                             uint32_t lock_sequence, const struct smb2_lock_elem *e, uint16_t n)
{
	if (n == 0 || n > 64)
		return -EINVAL;
	struct smb_wr w;
	smb_wr_init(&w, body, cap);
	smb_wr_u16(&w, 48);
	smb_wr_u16(&w, n);
	smb_wr_u32(&w, lock_sequence);
	smb_wr_u64(&w, fid.persistent);
	smb_wr_u64(&w, fid.volatile_);
	for (uint16_t i = 0; i < n; i++) {
		smb_wr_u64(&w, e[i].offset);
		smb_wr_u64(&w, e[i].length);
		smb_wr_u32(&w, e[i].flags);
		smb_wr_u32(&w, 0);
	}
	return wr_result(&w);
}

int smb2_lock_rsp_decode(const uint8_t *msg, size_t len)
{
	if (!msg || len < SMB2_HDR_SIZE + 4)
		return -EBADMSG;
	return smb_le16(msg + SMB2_HDR_SIZE) == 4 ? 0 : -EPROTO;
}

/* ---- symbolic links ------------------------------------------------------------------ */

int smb2_symlink_reparse_decode(const uint8_t *buf, size_t len, struct smb2_symlink *out)
{
	/* ReparseTag(4) ReparseDataLength(2) Reserved(2), then for a symlink:
	 * SubstituteNameOffset(2) SubstituteNameLength(2) PrintNameOffset(2)
	 * PrintNameLength(2) Flags(4) PathBuffer; offsets from PathBuffer. */
	struct smb_rd r;
	smb_rd_init(&r, buf, len);
	uint32_t tag = smb_rd_u32(&r);
	uint16_t dlen = smb_rd_u16(&r);
	smb_rd_skip(&r, 2);
	if (r.err || dlen > smb_rd_left(&r))
		return -EBADMSG;
	if (tag != IO_REPARSE_TAG_SYMLINK)
		return -EOPNOTSUPP;
	uint16_t so = smb_rd_u16(&r), sl = smb_rd_u16(&r);
	uint16_t po = smb_rd_u16(&r), pl = smb_rd_u16(&r);
	uint32_t flags = smb_rd_u32(&r);
	if (r.err || dlen < 12 || (so | sl | po | pl) & 1)
		return -EBADMSG;
	const uint8_t *path = buf + 20;
	size_t plen = (size_t)dlen - 12;
	if ((size_t)so + sl > plen || (size_t)po + pl > plen || sl == 0)
		return -EBADMSG;
	*out = (struct smb2_symlink){.subst16 = path + so,
	                             .subst16_len = sl,
	                             .print16 = pl ? path + po : NULL,
	                             .print16_len = pl,
	                             .relative = flags & SYMLINK_FLAG_RELATIVE};
	return 0;
}

int smb2_nfs_reparse_decode(const uint8_t *buf, size_t len, struct smb2_nfs_reparse *out)
{
	/* ReparseTag(4) ReparseDataLength(2) Reserved(2), then Type(8) and,
	 * for a device, Major(4) Minor(4) */
	struct smb_rd r;
	smb_rd_init(&r, buf, len);
	uint32_t tag = smb_rd_u32(&r);
	uint16_t dlen = smb_rd_u16(&r);
	smb_rd_skip(&r, 2);
	if (r.err || dlen > smb_rd_left(&r))
		return -EBADMSG;
	if (tag != IO_REPARSE_TAG_NFS)
		return -EOPNOTSUPP;
	if (dlen < 8)
		return -EBADMSG;
	*out = (struct smb2_nfs_reparse){.type = smb_rd_u64(&r)};
	if (out->type == NFS_SPECFILE_CHR || out->type == NFS_SPECFILE_BLK) {
		if (dlen < 16)
			return -EBADMSG;
		out->major = smb_rd_u32(&r);
		out->minor = smb_rd_u32(&r);
	}
	return r.err ? -EBADMSG : 0;
}

ssize_t smb2_symlink_reparse_encode(uint8_t *buf, size_t cap, const char *target, size_t target_len,
                                    bool relative)
{
	if (!target_len || cap < 20)
		return -ENOSPC;
	/* the name goes in twice: write it once after the fixed part, copy it */
	ssize_t n = smb_utf8_to_utf16le(target, target_len, buf + 20, (cap - 20) / 2, true);
	if (n < 0)
		return n;
	if (n == 0 || 12 + 2 * (size_t)n > UINT16_MAX)
		return -EINVAL;
	memcpy(buf + 20 + n, buf + 20, (size_t)n);
	struct smb_wr w;
	smb_wr_init(&w, buf, 20);
	smb_wr_u32(&w, IO_REPARSE_TAG_SYMLINK);
	smb_wr_u16(&w, (uint16_t)(12 + 2 * n));
	smb_wr_u16(&w, 0);
	smb_wr_u16(&w, 0);           /* SubstituteNameOffset */
	smb_wr_u16(&w, (uint16_t)n); /* SubstituteNameLength */
	smb_wr_u16(&w, (uint16_t)n); /* PrintNameOffset */
	smb_wr_u16(&w, (uint16_t)n); /* PrintNameLength */
	smb_wr_u32(&w, relative ? SYMLINK_FLAG_RELATIVE : 0);
	return w.err ? w.err : 20 + 2 * n;
}

/* ---- mfsymlinks ------------------------------------------------------------------------ */

#define MF_LEN_OFF    5 /* after "XSym\n" */
#define MF_MD5_OFF    (MF_LEN_OFF + 5)
#define MF_TARGET_OFF (MF_MD5_OFF + 33)

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

ssize_t smb_mfsymlink_encode(uint8_t *buf, size_t cap, const char *target, size_t target_len,
                             const char md5_hex[32])
{
	if (!target_len || target_len > SMB_MFSYMLINK_TARGET_MAX ||
	    memchr(target, '\0', target_len))
		return -EINVAL;
	for (int i = 0; i < 32; i++)
		if (!is_hex(md5_hex[i]))
			return -EINVAL;
	if (cap < SMB_MFSYMLINK_SIZE)
		return -ENOSPC;
	memset(buf, ' ', SMB_MFSYMLINK_SIZE);
	memcpy(buf, "XSym\n", 5);
	size_t l = target_len;
	for (int i = 3; i >= 0; i--, l /= 10)
		buf[MF_LEN_OFF + i] = (uint8_t)('0' + l % 10);
	buf[MF_LEN_OFF + 4] = '\n';
	memcpy(buf + MF_MD5_OFF, md5_hex, 32);
	buf[MF_MD5_OFF + 32] = '\n';
	memcpy(buf + MF_TARGET_OFF, target, target_len);
	if (MF_TARGET_OFF + target_len < SMB_MFSYMLINK_SIZE)
		buf[MF_TARGET_OFF + target_len] = '\n';
	return SMB_MFSYMLINK_SIZE;
}

int smb_mfsymlink_decode(const uint8_t *buf, size_t len, const char **target, size_t *target_len,
                         const char **md5_hex)
{
	if (len != SMB_MFSYMLINK_SIZE || !buf)
		return -EINVAL;
	if (memcmp(buf, "XSym\n", 5) != 0)
		return -EBADMSG;
	size_t l = 0;
	for (int i = 0; i < 4; i++) {
		uint8_t c = buf[MF_LEN_OFF + i];
		if (c < '0' || c > '9')
			return -EBADMSG;
		l = l * 10 + (size_t)(c - '0');
	}
	if (buf[MF_LEN_OFF + 4] != '\n' || l == 0 || l > SMB_MFSYMLINK_TARGET_MAX)
		return -EBADMSG;
	for (int i = 0; i < 32; i++)
		if (!is_hex((char)buf[MF_MD5_OFF + i]))
			return -EBADMSG;
	if (buf[MF_MD5_OFF + 32] != '\n' || memchr(buf + MF_TARGET_OFF, '\0', l))
		return -EBADMSG;
	*target = (const char *)buf + MF_TARGET_OFF;
	*target_len = l;
	*md5_hex = (const char *)buf + MF_MD5_OFF;
	return 0;
}
