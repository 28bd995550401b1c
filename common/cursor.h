/* common/cursor.h — the bounds-checked reader and writer, and little-endian
 * helpers, for every decoder of bytes from the wire (issue 20: one reader).
 *
 * Users: the SMB2 codec (client/proto/), the SMB Direct codec
 * (smbd/smbd_proto.c), NTLMSSP (auth/ntlmssp.c) and the DER reader of
 * auth/asn1.c (a tag-length layer over struct smb_rd, used by SPNEGO).
 * Pure: no allocation, no I/O; common/cursor.c.
 */
#ifndef SMBRDMA_COMMON_CURSOR_H
#define SMBRDMA_COMMON_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reader: getters never read past end; on overrun they set err = -EBADMSG
 * (sticky) and return 0.  Check err once at the end. */
struct smb_rd {
	const uint8_t *base; /* start of the message; offsets are from here */
	const uint8_t *p;
	const uint8_t *end;
	int err;
};
void smb_rd_init(struct smb_rd *r, const void *buf, size_t len);
uint8_t smb_rd_u8(struct smb_rd *r);
uint16_t smb_rd_u16(struct smb_rd *r);
uint32_t smb_rd_u32(struct smb_rd *r);
uint64_t smb_rd_u64(struct smb_rd *r);
void smb_rd_bytes(struct smb_rd *r, void *out, size_t n);
const uint8_t *smb_rd_ptr(struct smb_rd *r, size_t n); /* advance, return old p or NULL */
void smb_rd_skip(struct smb_rd *r, size_t n);
void smb_rd_seek(struct smb_rd *r, size_t off); /* absolute from base */
size_t smb_rd_left(const struct smb_rd *r);
/* Fields at fixed offsets: smb_rd_seek(r, off), then the getter.  Order-free,
 * so a whole structure can be read in a designated initializer. */
uint16_t smb_rd_u16_at(struct smb_rd *r, size_t off);
uint32_t smb_rd_u32_at(struct smb_rd *r, size_t off);
uint64_t smb_rd_u64_at(struct smb_rd *r, size_t off);
/* base[off, off+len) lies inside [base, end)?  (overflow-safe) */
bool smb_rd_range_ok(const struct smb_rd *r, uint64_t off, uint64_t len);

/* Writer: on overflow sets err = -ENOSPC (sticky) and writes nothing more. */
struct smb_wr {
	uint8_t *base;
	uint8_t *p;
	uint8_t *end;
	int err;
};
void smb_wr_init(struct smb_wr *w, void *buf, size_t cap);
void smb_wr_u8(struct smb_wr *w, uint8_t v);
void smb_wr_u16(struct smb_wr *w, uint16_t v);
void smb_wr_u32(struct smb_wr *w, uint32_t v);
void smb_wr_u64(struct smb_wr *w, uint64_t v);
void smb_wr_bytes(struct smb_wr *w, const void *src, size_t n);
void smb_wr_zero(struct smb_wr *w, size_t n);
void smb_wr_align(struct smb_wr *w, size_t a); /* zero-pad to a multiple of a from base */
size_t smb_wr_len(const struct smb_wr *w);

/* Little-endian helpers for fixed positions. */
static inline uint16_t smb_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t smb_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}
static inline uint64_t smb_le64(const uint8_t *p)
{
	return (uint64_t)smb_le32(p) | ((uint64_t)smb_le32(p + 4) << 32);
}
static inline void smb_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void smb_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void smb_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#endif
