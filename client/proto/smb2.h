/* client/proto/smb2.h — the pure SMB2/3 codec: bytes <-> structs, no I/O.
 *
 * Contract (sans-I/O, like nghttp2):
 *  - No sockets, threads, clocks, randomness or heap allocation in here.
 *  - Encoders write into a caller's buffer and return the number of bytes
 *    written, or -ENOSPC if the buffer is too small, -EINVAL for bad input.
 *  - Request encoders write the command BODY only, starting right after the
 *    64-byte header; every offset they put on the wire is counted from the
 *    start of the header (body offset 0 == header offset 64).  The header is
 *    written separately with smb2_hdr_encode().
 *  - Response decoders take one PDU (@msg points at its SMB2 header, @len is
 *    its length: up to NextCommand for a compound member, else the rest) and
 *    return 0 or -EBADMSG (malformed / out of bounds) / -EPROTO (wrong
 *    structure size).  Output pointers point INTO @msg and live as long as it.
 *    Lengths, offsets and counts from the wire are never trusted: every
 *    decoder checks each against @len before use.
 *  - Strings on our side are UTF-8; the codec converts to/from UTF-16LE.  Path
 *    encoders turn '/' into '\\'.
 */
#ifndef SMBRDMA_PROTO_SMB2_H
#define SMBRDMA_PROTO_SMB2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/proto/smb2_const.h"
#include "common/cursor.h"

/* The bounds-checked cursors smb_rd / smb_wr and the little-endian helpers
 * are common/cursor.h. */

/* ---- strings ---------------------------------------------------------------- */

/* UTF-8 -> UTF-16LE.  path != 0 maps '/' to '\\'.  Returns bytes written or
 * -EINVAL (invalid UTF-8) / -ENOSPC. */
ssize_t smb_utf8_to_utf16le(const char *in, size_t inlen, uint8_t *out, size_t cap, bool path);
/* UTF-16LE -> UTF-8, NUL-terminated.  Unpaired surrogates are -EILSEQ.
 * Returns bytes written excluding the NUL, or -errno. */
ssize_t smb_utf16le_to_utf8(const uint8_t *in, size_t inlen, char *out, size_t cap);
/* The bytes of UTF-8 (no NUL) smb_utf16le_to_utf8() makes of in[0, inlen)
 * up to its first NUL unit: -EINVAL for an odd inlen, -EILSEQ for an
 * unpaired surrogate before that NUL. */
ssize_t smb_utf16le_utf8_len(const uint8_t *in, size_t inlen);

/* ---- header [MS-SMB2] 2.2.1 ----------------------------------------------- */

struct smb2_hdr {
	uint16_t credit_charge;
	uint32_t status; /* ChannelSequence(16)+Reserved in requests (3.x) */
	uint16_t command;
	uint16_t credits; /* CreditRequest / CreditResponse */
	uint32_t flags;
	uint32_t next_command;
	uint64_t message_id;
	uint64_t async_id;   /* valid when flags has ASYNC_COMMAND */
	uint32_t process_id; /* sync form */
	uint32_t tree_id;    /* sync form */
	uint64_t session_id;
	uint8_t signature[16];
};
/* Writes exactly 64 bytes. */
ssize_t smb2_hdr_encode(uint8_t *buf, size_t cap, const struct smb2_hdr *h);
/* Checks ProtocolId and StructureSize (64). */
int smb2_hdr_decode(const uint8_t *buf, size_t len, struct smb2_hdr *h);
/* Offset of Signature inside the header (48) and of NextCommand (20). */
#define SMB2_HDR_SIGNATURE_OFF   48
#define SMB2_HDR_CREDITS_OFF     14 /* CreditRequest / CreditResponse */
#define SMB2_HDR_NEXTCOMMAND_OFF 20
#define SMB2_HDR_FLAGS_OFF       16

/* Walk a received compound: returns the length of the PDU that starts at
 * msg[off] (NextCommand, or the remainder when it is 0), or -EBADMSG when
 * NextCommand is not 8-aligned, < 64, or points past len. */
ssize_t smb2_compound_next(const uint8_t *msg, size_t len, size_t off);

/* ---- ERROR response [MS-SMB2] 2.2.2 -------------------------------------- */
struct smb2_error_rsp {
	uint8_t error_context_count;
	uint32_t byte_count;
	const uint8_t *error_data;
};
int smb2_error_rsp_decode(const uint8_t *msg, size_t len, struct smb2_error_rsp *r);
/* True when the body is an error body (StructureSize 9) rather than the
 * command's own; some statuses (BUFFER_OVERFLOW, MORE_PROCESSING_REQUIRED)
 * come with the command's body. */
bool smb2_is_error_body(const uint8_t *msg, size_t len);

/* ---- TRANSFORM_HEADER [MS-SMB2] 2.2.41 ------------------------------------ */
struct smb2_transform_hdr {
	uint8_t signature[16]; /* the AEAD tag */
	uint8_t nonce[16];     /* 11 (CCM) or 12 (GCM) bytes used, the rest zero */
	uint32_t original_size;
	uint16_t flags; /* SMB2_TRANSFORM_FLAG_ENCRYPTED */
	uint64_t session_id;
};
void smb2_transform_hdr_encode(uint8_t out[SMB2_TRANSFORM_HDR_SIZE],
                               const struct smb2_transform_hdr *h);
/* @msg/@len: the whole received message.  0 when it is a well-formed
 * transform whose OriginalMessageSize is exactly what follows the header
 * (and holds at least an SMB2 header); -EBADMSG / -EPROTO (unknown flags). */
int smb2_transform_hdr_decode(const uint8_t *msg, size_t len, struct smb2_transform_hdr *h);

/* ---- NEGOTIATE [MS-SMB2] 2.2.3 / 2.2.4 ------------------------------------- */
#define SMB2_MAX_DIALECTS 8
#define SMB2_MAX_CIPHERS  8
#define SMB2_MAX_SIGNALGS 4
struct smb2_negotiate_req {
	uint16_t dialects[SMB2_MAX_DIALECTS];
	int dialect_count;
	uint16_t security_mode;
	uint32_t capabilities;
	uint8_t client_guid[16];
	/* 3.1.1 contexts: written only when 0x0311 is among the dialects */
	uint8_t preauth_salt[32];
	uint16_t ciphers[SMB2_MAX_CIPHERS];
	int cipher_count; /* 0: no encryption context */
	uint16_t signing_algs[SMB2_MAX_SIGNALGS];
	int signing_alg_count; /* 0: no signing context */
	const char *netname;   /* NULL: no netname context */
	bool posix_extensions; /* send SMB2_POSIX_EXTENSIONS_AVAILABLE */
	bool rdma_transform;   /* reserved for smbd/; not yet written */
};
ssize_t smb2_negotiate_req_encode(uint8_t *body, size_t cap, const struct smb2_negotiate_req *r);

struct smb2_negotiate_rsp {
	uint16_t security_mode;
	uint16_t dialect;
	uint8_t server_guid[16];
	uint32_t capabilities;
	uint32_t max_transact_size;
	uint32_t max_read_size;
	uint32_t max_write_size;
	uint64_t system_time;
	uint64_t server_start_time;
	const uint8_t *security_buffer;
	uint16_t security_buffer_len;
	/* 3.1.1 contexts (each *_seen false when absent) */
	bool preauth_seen;
	uint16_t preauth_hash_alg;
	bool cipher_seen;
	uint16_t cipher; /* 0 = server chose none */
	bool signing_seen;
	uint16_t signing_alg;
	bool posix_seen;
	int context_count;
};
int smb2_negotiate_rsp_decode(const uint8_t *msg, size_t len, struct smb2_negotiate_rsp *r);

/* ---- SESSION_SETUP 2.2.5 / 2.2.6, LOGOFF 2.2.7 / 2.2.8 -------------------- */
struct smb2_session_setup_req {
	uint8_t flags; /* SMB2_SESSION_FLAG_BINDING */
	uint8_t security_mode;
	uint32_t capabilities;
	uint64_t previous_session_id;
	const uint8_t *security_buffer;
	uint16_t security_buffer_len;
};
ssize_t smb2_session_setup_req_encode(uint8_t *body, size_t cap,
                                      const struct smb2_session_setup_req *r);
struct smb2_session_setup_rsp {
	uint16_t session_flags;
	const uint8_t *security_buffer;
	uint16_t security_buffer_len;
};
int smb2_session_setup_rsp_decode(const uint8_t *msg, size_t len, struct smb2_session_setup_rsp *r);

ssize_t smb2_logoff_req_encode(uint8_t *body, size_t cap);
int smb2_logoff_rsp_decode(const uint8_t *msg, size_t len);

/* ---- TREE_CONNECT 2.2.9 / 2.2.10, TREE_DISCONNECT 2.2.11 / 2.2.12 -------- */
struct smb2_tree_connect_req {
	uint16_t flags;
	const char *path; /* UTF-8 "\\\\server\\share" */
};
ssize_t smb2_tree_connect_req_encode(uint8_t *body, size_t cap,
                                     const struct smb2_tree_connect_req *r);
struct smb2_tree_connect_rsp {
	uint8_t share_type;
	uint32_t share_flags;
	uint32_t capabilities;
	uint32_t maximal_access;
};
int smb2_tree_connect_rsp_decode(const uint8_t *msg, size_t len, struct smb2_tree_connect_rsp *r);
ssize_t smb2_tree_disconnect_req_encode(uint8_t *body, size_t cap);
int smb2_tree_disconnect_rsp_decode(const uint8_t *msg, size_t len);

/* ---- CREATE 2.2.13 / 2.2.14 ------------------------------------------------ */
struct smb2_fileid {
	uint64_t persistent;
	uint64_t volatile_;
};
/* For related compound members: "use the FileId from the previous create". */
#define SMB2_FILEID_RELATED ((struct smb2_fileid){UINT64_MAX, UINT64_MAX})

struct smb2_create_ctx {
	const char *name; /* e.g. "MxAc", "QFid", "DH2Q", "RqLs" (4 ASCII chars) */
	const uint8_t *data;
	uint32_t data_len;
};
#define SMB2_MAX_CREATE_CTX 8
struct smb2_create_req {
	uint8_t requested_oplock_level;
	uint32_t impersonation_level;
	uint32_t desired_access;
	uint32_t file_attributes;
	uint32_t share_access;
	uint32_t create_disposition;
	uint32_t create_options;
	const char *name; /* UTF-8 path relative to the share, '/' separated, "" = root */
	struct smb2_create_ctx contexts[SMB2_MAX_CREATE_CTX];
	int context_count;
	/* SMB3 POSIX pathname: sent with its '/' separators as they are, so a
	 * '\\' stays a character of a name (a server takes a CREATE with the
	 * POSIX context so); otherwise '/' becomes '\\'. */
	bool posix_path;
};
ssize_t smb2_create_req_encode(uint8_t *body, size_t cap, const struct smb2_create_req *r);

struct smb2_create_rsp {
	uint8_t oplock_level;
	uint8_t flags;
	uint32_t create_action;
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint64_t allocation_size;
	uint64_t end_of_file;
	uint32_t file_attributes;
	struct smb2_fileid fileid;
	const uint8_t *contexts; /* raw chain, walk with smb2_create_ctx_next() */
	uint32_t contexts_len;
};
int smb2_create_rsp_decode(const uint8_t *msg, size_t len, struct smb2_create_rsp *r);
/* Iterate a create-context chain: *off starts at 0; fills name (4 chars + NUL)
 * and data; returns 1 for an entry, 0 at the end, -EBADMSG on a bad chain. */
int smb2_create_ctx_next(const uint8_t *chain, uint32_t chain_len, uint32_t *off, char name[5],
                         const uint8_t **data, uint32_t *data_len);

/* The first context of the chain named tag (4 chars): 1 with its data,
 * 0 if there is none (or the chain goes bad before one). */
int smb2_create_ctx_find(const uint8_t *chain, uint32_t chain_len, const char *tag,
                         const uint8_t **data, uint32_t *data_len);

/* The same walk for contexts whose name is not a 4-character tag (e.g. the
 * 16-byte GUID of the POSIX create context): *name points into the chain. */
int smb2_create_ctx_next_raw(const uint8_t *chain, uint32_t chain_len, uint32_t *off,
                             const uint8_t **name, uint16_t *name_len, const uint8_t **data,
                             uint32_t *data_len);

/* Where a request body carries its FileId (bytes from the start of the body),
 * or -1 for commands that have none: CLOSE, FLUSH, READ, WRITE, LOCK, IOCTL,
 * QUERY_DIRECTORY, CHANGE_NOTIFY, QUERY_INFO, SET_INFO, OPLOCK_BREAK. */
int smb2_req_fileid_offset(uint16_t command);

/* ---- durable handles v2 [MS-SMB2] 2.2.13.2.11 / 2.2.13.2.12 / 2.2.14.2.12 -- */
#define SMB2_DH2Q_LEN 32 /* Timeout, Flags, Reserved, CreateGuid */
#define SMB2_DH2C_LEN 36 /* FileId, CreateGuid, Flags */
void smb2_dh2q_encode(uint8_t out[SMB2_DH2Q_LEN], uint32_t timeout_ms,
                      const uint8_t create_guid[16]);
void smb2_dh2c_encode(uint8_t out[SMB2_DH2C_LEN], struct smb2_fileid fid,
                      const uint8_t create_guid[16]);
/* The DH2Q response context's data: 0 (and the granted timeout), or -EBADMSG. */
int smb2_dh2q_rsp_decode(const uint8_t *data, uint32_t len, uint32_t *timeout_ms);

/* ---- SMB2_CREATE_QUERY_ON_DISK_ID ("QFid") [MS-SMB2] 2.2.13.2.9 / 2.2.14.2.9
 * The request context carries no data; the response's is DiskFileId (8),
 * VolumeId (8) and 16 reserved bytes.  Servers fill DiskFileId with the
 * file's IndexNumber (Samba, ksmbd: the inode number).  0, or -EBADMSG
 * when data is shorter than DiskFileId and VolumeId. */
#define SMB2_QFID_RSP_LEN 32
int smb2_qfid_rsp_decode(const uint8_t *data, uint32_t len, uint64_t *disk_file_id);

/* ---- OPLOCK_BREAK notification / acknowledgment 2.2.23.1 / 2.2.24.1 ------ */
struct smb2_oplock_break {
	uint8_t oplock_level;
	struct smb2_fileid fileid;
};
/* A notification body (StructureSize 24); -EPROTO for a lease break (44). */
int smb2_oplock_break_decode(const uint8_t *msg, size_t len, struct smb2_oplock_break *b);
ssize_t smb2_oplock_break_ack_encode(uint8_t *body, size_t cap, const struct smb2_oplock_break *b);

/* ---- CLOSE 2.2.15 / 2.2.16 ----------------------------------------------- */
struct smb2_close_req {
	uint16_t flags;
	struct smb2_fileid fileid;
};
ssize_t smb2_close_req_encode(uint8_t *body, size_t cap, const struct smb2_close_req *r);
struct smb2_close_rsp {
	uint16_t flags;
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint64_t allocation_size;
	uint64_t end_of_file;
	uint32_t file_attributes;
};
int smb2_close_rsp_decode(const uint8_t *msg, size_t len, struct smb2_close_rsp *r);

/* ---- FLUSH 2.2.17 / 2.2.18 ----------------------------------------------- */
ssize_t smb2_flush_req_encode(uint8_t *body, size_t cap, const struct smb2_fileid *fid);
int smb2_flush_rsp_decode(const uint8_t *msg, size_t len);

/* ---- READ 2.2.19 / 2.2.20 -------------------------------------------------- */
struct smb2_read_req {
	uint8_t flags;
	uint32_t length;
	uint64_t offset;
	struct smb2_fileid fileid;
	uint32_t minimum_count;
	uint32_t channel;
	uint32_t remaining_bytes;
	const uint8_t *channel_info; /* Buffer Descriptor V1 array for RDMA */
	uint16_t channel_info_len;
};
ssize_t smb2_read_req_encode(uint8_t *body, size_t cap, const struct smb2_read_req *r);
struct smb2_read_rsp {
	const uint8_t *data; /* NULL when data_length == 0 */
	uint32_t data_length;
	uint32_t data_remaining;
	uint8_t data_offset;
};
int smb2_read_rsp_decode(const uint8_t *msg, size_t len, struct smb2_read_rsp *r);

/* ---- WRITE 2.2.21 / 2.2.22 ------------------------------------------------- */
/* The encoder writes the fixed part and channel info only; DataOffset points
 * right after them, and the caller sends data_length payload bytes next (as a
 * separate iovec, so no copy).  Returns body length without the payload. */
struct smb2_write_req {
	uint32_t data_length;
	uint64_t offset;
	struct smb2_fileid fileid;
	uint32_t channel;
	uint32_t remaining_bytes;
	uint32_t flags;
	const uint8_t *channel_info;
	uint16_t channel_info_len;
};
ssize_t smb2_write_req_encode(uint8_t *body, size_t cap, const struct smb2_write_req *r);
struct smb2_write_rsp {
	uint32_t count;
	uint32_t remaining;
};
int smb2_write_rsp_decode(const uint8_t *msg, size_t len, struct smb2_write_rsp *r);

/* ---- IOCTL 2.2.31 / 2.2.32 ------------------------------------------------- */
struct smb2_ioctl_req {
	uint32_t ctl_code;
	struct smb2_fileid fileid;
	const uint8_t *input;
	uint32_t input_len;
	uint32_t max_input_response;
	uint32_t max_output_response;
	uint32_t flags; /* SMB2_0_IOCTL_IS_FSCTL */
};
ssize_t smb2_ioctl_req_encode(uint8_t *body, size_t cap, const struct smb2_ioctl_req *r);
struct smb2_ioctl_rsp {
	uint32_t ctl_code;
	struct smb2_fileid fileid;
	const uint8_t *input;
	uint32_t input_len;
	const uint8_t *output;
	uint32_t output_len;
	uint32_t flags;
};
int smb2_ioctl_rsp_decode(const uint8_t *msg, size_t len, struct smb2_ioctl_rsp *r);

/* ---- ECHO 2.2.28 / 2.2.29, CANCEL 2.2.30 --------------------------------- */
ssize_t smb2_echo_req_encode(uint8_t *body, size_t cap);
int smb2_echo_rsp_decode(const uint8_t *msg, size_t len);
ssize_t smb2_cancel_req_encode(uint8_t *body, size_t cap);

/* ---- QUERY_DIRECTORY 2.2.33 / 2.2.34 -------------------------------------- */
struct smb2_query_directory_req {
	uint8_t info_class; /* FileIdBothDirectoryInformation, ... */
	uint8_t flags;
	uint32_t file_index;
	struct smb2_fileid fileid;
	const char *pattern; /* UTF-8, e.g. "*" */
	uint32_t output_buffer_length;
};
ssize_t smb2_query_directory_req_encode(uint8_t *body, size_t cap,
                                        const struct smb2_query_directory_req *r);
struct smb2_query_directory_rsp {
	const uint8_t *buffer;
	uint32_t buffer_len;
};
int smb2_query_directory_rsp_decode(const uint8_t *msg, size_t len,
                                    struct smb2_query_directory_rsp *r);

/* One entry of FileIdBothDirectoryInformation / FileIdFullDirectoryInformation
 * / FileDirectoryInformation / FileFullDirectoryInformation ([MS-FSCC] 2.4). */
struct smb2_dirent {
	uint32_t file_index;
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint64_t end_of_file;
	uint64_t allocation_size;
	uint32_t file_attributes;
	uint32_t ea_size;      /* or reparse tag when FILE_ATTRIBUTE_REPARSE_POINT */
	uint64_t file_id;      /* 0 for classes without FileId */
	const uint8_t *name16; /* UTF-16LE, not terminated */
	uint32_t name16_len;
};
/* Iterate the buffer: *off starts at 0.  Returns 1 with *e filled, 0 at the
 * end, -EBADMSG on a malformed chain (NextEntryOffset not advancing, not
 * 8-aligned where it must be, or a name outside the buffer). */
int smb2_dirent_next(uint8_t info_class, const uint8_t *buf, uint32_t len, uint32_t *off,
                     struct smb2_dirent *e);

/* ---- QUERY_INFO 2.2.37 / 2.2.38 ------------------------------------------- */
struct smb2_query_info_req {
	uint8_t info_type;
	uint8_t file_info_class;
	uint32_t output_buffer_length;
	const uint8_t *input;
	uint32_t input_len;
	uint32_t additional_information;
	uint32_t flags;
	struct smb2_fileid fileid;
};
ssize_t smb2_query_info_req_encode(uint8_t *body, size_t cap, const struct smb2_query_info_req *r);
struct smb2_query_info_rsp {
	const uint8_t *buffer;
	uint32_t buffer_len;
};
int smb2_query_info_rsp_decode(const uint8_t *msg, size_t len, struct smb2_query_info_rsp *r);

/* Info-class payload decoders ([MS-FSCC]); each checks the length. */
struct smb2_file_basic_info {
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint32_t file_attributes;
};
struct smb2_file_standard_info {
	uint64_t allocation_size, end_of_file;
	uint32_t number_of_links;
	uint8_t delete_pending, directory;
};
struct smb2_file_all_info { /* 2.4.2: the fixed parts we use */
	struct smb2_file_basic_info basic;
	struct smb2_file_standard_info standard;
	uint64_t index_number; /* FileInternalInformation */
	uint32_t ea_size;
	uint32_t access_flags;
	uint64_t current_byte_offset;
	uint32_t mode;
	uint32_t alignment_requirement;
};
struct smb2_file_network_open_info { /* 2.4.29 */
	uint64_t creation_time, last_access_time, last_write_time, change_time;
	uint64_t allocation_size, end_of_file;
	uint32_t file_attributes;
};
struct smb2_fs_full_size_info { /* 2.5.4 */
	uint64_t total_allocation_units;
	uint64_t caller_available_allocation_units;
	uint64_t actual_available_allocation_units;
	uint32_t sectors_per_allocation_unit;
	uint32_t bytes_per_sector;
};
int smb2_file_basic_info_decode(const uint8_t *b, size_t len, struct smb2_file_basic_info *o);
int smb2_file_standard_info_decode(const uint8_t *b, size_t len, struct smb2_file_standard_info *o);
int smb2_file_internal_info_decode(const uint8_t *b, size_t len, uint64_t *index_number);
int smb2_file_all_info_decode(const uint8_t *b, size_t len, struct smb2_file_all_info *o);
int smb2_file_network_open_info_decode(const uint8_t *b, size_t len,
                                       struct smb2_file_network_open_info *o);
int smb2_fs_full_size_info_decode(const uint8_t *b, size_t len, struct smb2_fs_full_size_info *o);

/* ---- SET_INFO 2.2.39 / 2.2.40 --------------------------------------------- */
struct smb2_set_info_req {
	uint8_t info_type;
	uint8_t file_info_class;
	const uint8_t *buffer;
	uint32_t buffer_len;
	uint32_t additional_information;
	struct smb2_fileid fileid;
};
ssize_t smb2_set_info_req_encode(uint8_t *body, size_t cap, const struct smb2_set_info_req *r);
int smb2_set_info_rsp_decode(const uint8_t *msg, size_t len);

/* Info-class payload encoders for SET_INFO; return bytes written or -errno. */
/* FileBasicInformation: a time of 0 means "leave unchanged"; attributes 0 likewise. */
ssize_t smb2_file_basic_info_encode(uint8_t *buf, size_t cap, const struct smb2_file_basic_info *i);
ssize_t smb2_file_eof_info_encode(uint8_t *buf, size_t cap, uint64_t end_of_file);
ssize_t smb2_file_disposition_info_encode(uint8_t *buf, size_t cap, bool delete_pending);
/* FileRenameInformation type 2 (SMB2): target is UTF-8, relative to the share. */
ssize_t smb2_file_rename_info_encode(uint8_t *buf, size_t cap, bool replace_if_exists,
                                     const char *target);
/* The same with the target as an SMB3 POSIX pathname (see smb2_create_req's
 * posix_path): for a handle opened with the POSIX context. */
ssize_t smb2_file_rename_info_encode_posix(uint8_t *buf, size_t cap, bool replace_if_exists,
                                           const char *target);

/* ---- names for log lines --------------------------------------------------- */
const char *smb2_command_str(uint16_t command);
/* "3.1.1" etc.; "0x0abc" (static per-thread buffer) for unknown dialects. */
const char *smb2_dialect_str(uint16_t dialect);
/* "AES-GMAC" etc. ([MS-SMB2] 2.2.3.1.7); "unknown" otherwise. */
const char *smb2_signing_alg_str(uint16_t alg);
const char *smb2_cipher_str(uint16_t cipher); /* "AES-128-GCM"...; "none" for 0 */
/* "STATUS_LOGON_FAILURE" etc.; "STATUS_0xC00000XX" form (static per-thread
 * buffer) for values it does not know. */
const char *smb2_status_str(uint32_t status);

/* ---- time ----------------------------------------------------------------- */
/* NT time (100 ns since 1601) <-> Unix timespec. */
#define SMB_NT_EPOCH_DELTA 11644473600ULL
struct timespec;
void smb_nttime_to_timespec(uint64_t nt, struct timespec *ts);
uint64_t smb_timespec_to_nttime(const struct timespec *ts);

/* ---- FSCTL_QUERY_NETWORK_INTERFACE_INFO output, 2.2.32.5 ------------------- */
/* One NETWORK_INTERFACE_INFO entry.  addr is in network byte order. */
struct smb2_netif {
	uint32_t if_index;   /* the same for every address of one interface */
	uint32_t capability; /* SMB2_NETIF_CAP_RSS | SMB2_NETIF_CAP_RDMA */
	uint64_t link_speed; /* bits per second */
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];    /* 4 bytes used for AF_INET */
	/* Host order.  2.2.32.5.1 says servers SHOULD send 0 and clients MUST
	 * ignore both: connect to the port the session already uses. */
	uint16_t port;
	uint32_t scope_id; /* AF_INET6 */
};
/* Walk the Next chain of buf, the IOCTL's output (len bytes; an empty output,
 * which Samba sends when no interface qualifies, is a chain of none).
 * Writes the first max usable entries to out[0..max) and sets *count to how
 * many usable entries the chain holds, which may exceed max: the caller sees
 * how many it missed.  Entries of an address family other than IPv4 (0x0002)
 * and IPv6 (0x0017) are skipped, not an error.
 * Every entry must lie wholly inside buf, and each nonzero Next must move
 * forward by at least one whole entry (152 bytes) and stay inside buf, so a
 * chain cannot loop.  Returns 0, or -EBADMSG with *count = 0 (out may then be
 * partly written).  No allocation: out is the caller's (NULL when max is 0)
 * and nothing points into buf afterwards. */
int smb2_netif_decode(const uint8_t *buf, size_t len, struct smb2_netif *out, size_t max,
                      size_t *count);

#endif
