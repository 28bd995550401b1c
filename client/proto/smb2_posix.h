/* client/proto/smb2_posix.h — the SMB3 POSIX extensions' payloads: the POSIX
 * create context, the POSIX information class (QUERY_INFO and
 * QUERY_DIRECTORY), Unix SIDs, and the security descriptors that carry a
 * chmod or chown.
 *
 * Layouts: the Samba "SMB3 POSIX Extensions" specification (the POSIX
 * create context, FileInformationClass 100 SMB2_FILE_POSIX_INFORMATION
 * and its directory form), [MS-DTYP] 2.4.2.2 (SID), 2.4.5 (ACL), 2.4.4.2
 * (ACCESS_ALLOWED_ACE), 2.4.6 (SECURITY_DESCRIPTOR, self-relative).
 *
 * Contract: the rules of client/proto/smb2.h (sans-I/O, no allocation; the
 * decoders check every length, offset and count against the buffer they are
 * given and return -EBADMSG when anything lies outside it).  Output pointers
 * point into the caller's buffer and live as long as it.
 *
 * Ids: owner and group travel as SIDs.  S-1-22-1-<uid> and S-1-22-2-<gid>
 * are Unix ids (Samba's and ksmbd's mapping); any other SID has no Unix id
 * here and decodes to SMB2_POSIX_ID_NONE.
 */
#ifndef SMBRDMA_PROTO_SMB2_POSIX_H
#define SMBRDMA_PROTO_SMB2_POSIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2_const.h"

/* FileInformationClass of the POSIX information, for QUERY_INFO and
 * QUERY_DIRECTORY alike. */
#define SMB2_FILE_POSIX_INFORMATION 100

/* An owner or group the server sent with no Unix id we know:
 * SMB2_POSIX_ID_NONE, in smb2_const.h. */

/* The POSIX create context's name: the 16 bytes of SMB2_POSIX_GUID_BYTES
 * followed by a NUL (none of the 16 is 0), so it can stand as the name of a
 * struct smb2_create_ctx.  Its request data is SMB2_POSIX_CREATE_REQ_LEN
 * bytes: the mode of a file the CREATE makes. */
extern const char smb2_posix_ctx_name[17];
#define SMB2_POSIX_CREATE_REQ_LEN 4
void smb2_posix_create_req_encode(uint8_t out[SMB2_POSIX_CREATE_REQ_LEN], uint32_t mode);

/* [MS-DTYP] 2.4.2.2: at most 15 sub-authorities. */
#define SMB2_SID_MAX_SUB 15
struct smb2_sid {
	uint8_t revision;
	uint8_t nsub;
	uint64_t authority; /* 48 bits, big-endian on the wire */
	uint32_t sub[SMB2_SID_MAX_SUB];
};
/* One SID at b (len bytes): 0 with *used = its length, or -EBADMSG (short,
 * revision not 1, more than 15 sub-authorities). */
int smb2_sid_decode(const uint8_t *b, size_t len, struct smb2_sid *s, size_t *used);
/* Bytes written (8 + 4 * nsub) or -ENOSPC / -EINVAL (nsub > 15). */
ssize_t smb2_sid_encode(uint8_t *b, size_t cap, const struct smb2_sid *s);
/* S-1-22-1-<id> (user) / S-1-22-2-<id> (group). */
void smb2_sid_unix(struct smb2_sid *s, bool group, uint32_t id);
/* The id of S-1-22-1-<id> (group false) or S-1-22-2-<id> (group true);
 * SMB2_POSIX_ID_NONE for any other SID. */
uint32_t smb2_sid_unix_id(const struct smb2_sid *s, bool group);

/* What the POSIX information and the create context's response share. */
struct smb2_posix_ids {
	uint32_t nlink;
	uint32_t reparse_tag;
	uint32_t mode;                /* permission bits (07777); other bits dropped */
	uint32_t wire_mode;           /* Mode as sent, file type bits and all */
	uint32_t uid, gid;            /* from the owner / group SIDs, or SMB2_POSIX_ID_NONE */
	struct smb2_sid owner, group; /* as sent */
};

/* The data of the POSIX create context in a CREATE response: HardLinks,
 * ReparseTag, Mode, owner SID, group SID.  0 or -EBADMSG. */
int smb2_posix_create_rsp_decode(const uint8_t *data, uint32_t len, struct smb2_posix_ids *o);
/* Find and decode the POSIX context in a CREATE response's context chain:
 * 1 when found and well formed, 0 when absent, -EBADMSG for a bad chain or
 * a bad POSIX context. */
int smb2_posix_create_rsp_find(const uint8_t *chain, uint32_t chain_len, struct smb2_posix_ids *o);

/* SMB2_FILE_POSIX_INFORMATION (QUERY_INFO's output, or one directory entry
 * after its NextEntryOffset and 4 ignored bytes). */
struct smb2_posix_info {
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint64_t end_of_file, allocation_size;
	uint32_t file_attributes;
	uint64_t inode;
	uint32_t device_id; /* rdev of a device file */
	struct smb2_posix_ids ids;
};
/* QUERY_INFO's output buffer.  0 or -EBADMSG. */
int smb2_posix_info_decode(const uint8_t *b, size_t len, struct smb2_posix_info *o);
/* Walk a QUERY_DIRECTORY buffer of class 100: *off starts at 0.  Returns 1
 * with *o and the entry's UTF-16LE name (not terminated) filled, 0 at the
 * end, -EBADMSG when an entry, its SIDs or its name leave the buffer or
 * NextEntryOffset does not move forward by a whole entry. */
int smb2_posix_dirent_next(const uint8_t *buf, uint32_t len, uint32_t *off,
                           struct smb2_posix_info *o, const uint8_t **name16, uint32_t *name16_len);

/* The file type (S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO, ...) of POSIX
 * information: the directory attribute; else the type in Mode, as Samba
 * (4.22) and newer ksmbd send it (smb3posix.idl: UNIX_TYPE_* << 12, FILE 0,
 * DIR 1, SYMLINK 2, CHARDEV 3, BLKDEV 4, FIFO 5, SOCKET 6), or as early
 * ksmbd sent <sys/stat.h>'s S_IFMT (0100000 set: S_IFREG, S_IFLNK,
 * S_IFSOCK); else, for a reparse point, its tag (a symlink, WSL's
 * LX_FIFO/LX_CHR/LX_BLK and AF_UNIX); else S_IFREG.  The tag counts only
 * with FILE_ATTRIBUTE_REPARSE_POINT (ksmbd 6.1, which sends no type in
 * Mode, puts a handle number in the create context's ReparseTag). */
uint32_t smb2_posix_file_type(uint32_t file_attributes, uint32_t reparse_tag, uint32_t wire_mode);

/* A self-relative SECURITY_DESCRIPTOR for SET_INFO(SMB2_0_INFO_SECURITY)
 * that changes only what is flagged: the mode as one ACCESS_ALLOWED ACE
 * for S-1-5-88-3-<mode> in the DACL (how the extensions carry a chmod),
 * the owner as S-1-22-1-<uid> or owner_sid when given, the group as
 * S-1-22-2-<gid>.  *secinfo gets the AdditionalInformation bits
 * (OWNER/GROUP/DACL_SECURITY_INFORMATION).  Bytes written, -ENOSPC, or
 * -EINVAL when nothing is flagged. */
struct smb2_posix_sd {
	bool set_mode, set_uid, set_gid;
	uint32_t mode, uid, gid;
	const struct smb2_sid *owner_sid; /* NULL: S-1-22-1-<uid> */
};
#define SMB2_POSIX_SD_MAX (20 + 8 + 28 + 2 * (8 + 4 * SMB2_SID_MAX_SUB))
ssize_t smb2_posix_sd_encode(uint8_t *buf, size_t cap, const struct smb2_posix_sd *sd,
                             uint32_t *secinfo);

#endif
