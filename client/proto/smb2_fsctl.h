/* client/proto/smb2_fsctl.h — the payloads of POSIX-completing operations:
 * extended attributes ([MS-FSCC] 2.4.15 FILE_FULL_EA_INFORMATION, 2.4.15.1
 * FILE_GET_EA_INFORMATION), server-side copy ([MS-SMB2] 2.2.31.1
 * SRV_COPYCHUNK_COPY, 2.2.32.1/2 resume key and copychunk responses),
 * allocated ranges and zeroing ([MS-FSCC] 2.3.33/2.3.34, 2.3.67), byte-range
 * locks ([MS-SMB2] 2.2.26 LOCK), symbolic-link reparse data ([MS-FSCC]
 * 2.1.2.4) and Minshall+French symlink files (the `mfsymlinks` format of
 * cifs.ko).
 *
 * Pure codec, like smb2.h: no I/O, no allocation.  Decoders take untrusted
 * bytes, check every length and offset against the buffer, and return
 * -EBADMSG for anything malformed; output pointers point into the input.
 */
#ifndef SMBRDMA_PROTO_SMB2_FSCTL_H
#define SMBRDMA_PROTO_SMB2_FSCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2.h"

/* ---- extended attributes ------------------------------------------------------ */

#define SMB2_EA_NAME_MAX  255   /* EaNameLength is one byte */
#define SMB2_EA_VALUE_MAX 65535 /* EaValueLength is two */

/* One EA.  name is ASCII, not NUL-terminated in the wire buffer (name_len
 * bytes); value may be empty (value_len 0: the EA is removed on a set). */
struct smb2_ea {
	const char *name;
	size_t name_len;
	const uint8_t *value;
	size_t value_len;
	uint8_t flags; /* FILE_NEED_EA 0x80 */
};

/* A FILE_FULL_EA_INFORMATION chain of n entries (each 4-byte aligned, as
 * SET_INFO FileFullEaInformation wants).  Bytes written, or -ENOSPC,
 * -EINVAL (a name empty, longer than 255 or holding a NUL; a value longer
 * than 65535). */
ssize_t smb2_ea_list_encode(uint8_t *buf, size_t cap, const struct smb2_ea *eas, size_t n);

/* A FILE_GET_EA_INFORMATION list naming one EA (QUERY_INFO input buffer). */
ssize_t smb2_get_ea_encode(uint8_t *buf, size_t cap, const char *name, size_t name_len);

/* Iterate a FILE_FULL_EA_INFORMATION chain: *off starts at 0.  Returns 1 with
 * *out filled and *off advanced, 0 at the end, -EBADMSG if malformed (an
 * entry past the end, a NextEntryOffset that does not advance or is not
 * 4-byte aligned, an empty name or one without its NUL). */
int smb2_ea_next(const uint8_t *buf, size_t len, uint32_t *off, struct smb2_ea *out);

/* A whole FILE_FULL_EA_INFORMATION chain (smb2_ea_next() over all of it),
 * keeping only the EAs with a value (one without does not exist).  Fills
 * up to max (out may be NULL when max is 0) and sets *count to how many
 * the chain holds; -EBADMSG (and *count 0) if any entry is malformed.
 * SMB2_EA_LIST_MAX(len) entries always suffice. */
#define SMB2_EA_LIST_MAX(len) ((len) / 12 + 1)
int smb2_ea_list_decode(const uint8_t *buf, size_t len, struct smb2_ea *out, size_t max,
                        size_t *count);

/* ---- server-side copy ----------------------------------------------------------- */

#define SMB2_RESUME_KEY_LEN       24
#define SMB2_COPYCHUNK_CHUNK_SIZE 24 /* SourceOffset(8) TargetOffset(8) Length(4) Reserved(4) */

/* FSCTL_SRV_REQUEST_RESUME_KEY output: ResumeKey(24) ContextLength(4). */
int smb2_resume_key_decode(const uint8_t *buf, size_t len, uint8_t key[SMB2_RESUME_KEY_LEN]);

struct smb2_chunk {
	uint64_t src_off, dst_off;
	uint32_t len;
};
/* SRV_COPYCHUNK_COPY input for FSCTL_SRV_COPYCHUNK(_WRITE). */
ssize_t smb2_copychunk_encode(uint8_t *buf, size_t cap, const uint8_t key[SMB2_RESUME_KEY_LEN],
                              const struct smb2_chunk *chunks, uint32_t n);

/* SRV_COPYCHUNK_RESPONSE.  On STATUS_INVALID_PARAMETER the same layout says
 * the server's limits: chunks_written = max chunks, chunk_bytes_written =
 * max bytes per chunk, total_bytes_written = max total. */
struct smb2_copychunk_rsp {
	uint32_t chunks_written, chunk_bytes_written, total_bytes_written;
};
int smb2_copychunk_rsp_decode(const uint8_t *buf, size_t len, struct smb2_copychunk_rsp *r);

/* ---- ranges: allocated ranges, zero data ------------------------------------- */

struct smb2_range {
	uint64_t off, len;
};
/* FILE_ALLOCATED_RANGE_BUFFER (QUERY_ALLOCATED_RANGES input): 16 bytes. */
ssize_t smb2_range_encode(uint8_t *buf, size_t cap, uint64_t off, uint64_t len);
/* FILE_ZERO_DATA_INFORMATION (FSCTL_SET_ZERO_DATA input): FileOffset and
 * BeyondFinalZero = off + len.  -EINVAL if that overflows. */
ssize_t smb2_zero_data_encode(uint8_t *buf, size_t cap, uint64_t off, uint64_t len);
/* QUERY_ALLOCATED_RANGES output: an array of FILE_ALLOCATED_RANGE_BUFFER.
 * Fills up to max (out may be NULL when max is 0) and sets *count to how many
 * the buffer holds.  -EBADMSG if len is not a multiple of 16, a range ends
 * past 2^64 or ranges are not in ascending, non-overlapping order. */
int smb2_ranges_decode(const uint8_t *buf, size_t len, struct smb2_range *out, size_t max,
                       size_t *count);

/* ---- LOCK --------------------------------------------------------------------------- */

#define SMB2_LOCKFLAG_SHARED_LOCK      0x01u
#define SMB2_LOCKFLAG_EXCLUSIVE_LOCK   0x02u
#define SMB2_LOCKFLAG_UNLOCK           0x04u
#define SMB2_LOCKFLAG_FAIL_IMMEDIATELY 0x10u

struct smb2_lock_elem {
	uint64_t offset, length;
	uint32_t flags;
};
/* LOCK request body: StructureSize 48, n elements (1..64 here). */
ssize_t smb2_lock_req_encode(uint8_t *body, size_t cap, struct smb2_fileid fid,
                             uint32_t lock_sequence, const struct smb2_lock_elem *e, uint16_t n);
/* LOCK response: StructureSize 4.  0 or -EBADMSG. */
int smb2_lock_rsp_decode(const uint8_t *msg, size_t len);

/* ---- symbolic links ------------------------------------------------------------------ */

#define IO_REPARSE_TAG_SYMLINK 0xA000000Cu
#define SYMLINK_FLAG_RELATIVE  0x00000001u

/* A REPARSE_DATA_BUFFER with a symbolic link: the substitute and print names
 * (UTF-16LE, in the input), whether it is relative. */
struct smb2_symlink {
	const uint8_t *subst16, *print16;
	size_t subst16_len, print16_len;
	bool relative;
};
/* Decode FSCTL_GET_REPARSE_POINT output, or the SYMLINK_ERROR_RESPONSE's
 * reparse buffer.  -EBADMSG if malformed, -EOPNOTSUPP (well formed, another
 * tag). */
int smb2_symlink_reparse_decode(const uint8_t *buf, size_t len, struct smb2_symlink *out);
/* An NFS-style special file ([MS-FSCC] 2.1.2.6, IO_REPARSE_TAG_NFS): the
 * type and, for a device, its numbers.  Samba (4.22) describes the FIFOs,
 * sockets and device nodes of its share so over the SMB3 POSIX
 * extensions. */
#define IO_REPARSE_TAG_NFS 0x80000014u
#define NFS_SPECFILE_LNK   0x00000000014B4E4Cull
#define NFS_SPECFILE_CHR   0x0000000000524843ull
#define NFS_SPECFILE_BLK   0x00000000004B4C42ull
#define NFS_SPECFILE_FIFO  0x000000004F464946ull
#define NFS_SPECFILE_SOCK  0x000000004B434F53ull
struct smb2_nfs_reparse {
	uint64_t type;
	uint32_t major, minor; /* CHR and BLK only */
};
/* 0, -EBADMSG (malformed, or a device without its numbers), -EOPNOTSUPP
 * (well formed, another tag). */
int smb2_nfs_reparse_decode(const uint8_t *buf, size_t len, struct smb2_nfs_reparse *out);
/* Encode a symlink REPARSE_DATA_BUFFER (FSCTL_SET_REPARSE_POINT input) for a
 * UTF-8 target ('/' becomes '\\'); substitute and print name are the same. */
ssize_t smb2_symlink_reparse_encode(uint8_t *buf, size_t cap, const char *target, size_t target_len,
                                    bool relative);

/* Minshall+French symlink files ("mfsymlinks"): a regular file of exactly
 * 1067 bytes: "XSym\n", the target length as 4 decimal digits and "\n", the
 * MD5 of the target as 32 lower-case hex digits and "\n", the target (at
 * most 1024 bytes), then "\n" and spaces to fill. */
#define SMB_MFSYMLINK_SIZE       1067
#define SMB_MFSYMLINK_TARGET_MAX 1024
/* md5_hex: 32 hex digits of the target's MD5 (the caller computes it). */
ssize_t smb_mfsymlink_encode(uint8_t *buf, size_t cap, const char *target, size_t target_len,
                             const char md5_hex[32]);
/* Parse one: target (into buf) and its length, and the recorded MD5 for the
 * caller to check.  -EBADMSG if not in the format (wrong size, magic,
 * length field, a target with a NUL, non-hex MD5); -EINVAL if not even an
 * mfsymlink candidate (len != 1067: an ordinary file). */
int smb_mfsymlink_decode(const uint8_t *buf, size_t len, const char **target, size_t *target_len,
                         const char **md5_hex);

#endif
