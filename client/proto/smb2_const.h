/* client/proto/smb2_const.h — numbers from [MS-SMB2] and [MS-ERREF]/[MS-FSCC]. */
#ifndef SMBRDMA_PROTO_SMB2_CONST_H
#define SMBRDMA_PROTO_SMB2_CONST_H

/* [MS-SMB2] 2.2.1 */
#define SMB2_HDR_SIZE                 64
#define SMB2_PROTOCOL_ID              0x424d53feu /* "\xfeSMB" read little-endian */
#define SMB2_TRANSFORM_ID             0x424d53fdu /* "\xfdSMB" */
#define SMB2_TRANSFORM_HDR_SIZE       52
#define SMB2_TRANSFORM_AAD_OFF        20 /* the AAD is Nonce..SessionId: bytes 20..51 */
#define SMB2_TRANSFORM_FLAG_ENCRYPTED 0x0001

enum smb2_command {
	SMB2_NEGOTIATE = 0x0000,
	SMB2_SESSION_SETUP = 0x0001,
	SMB2_LOGOFF = 0x0002,
	SMB2_TREE_CONNECT = 0x0003,
	SMB2_TREE_DISCONNECT = 0x0004,
	SMB2_CREATE = 0x0005,
	SMB2_CLOSE = 0x0006,
	SMB2_FLUSH = 0x0007,
	SMB2_READ = 0x0008,
	SMB2_WRITE = 0x0009,
	SMB2_LOCK = 0x000A,
	SMB2_IOCTL = 0x000B,
	SMB2_CANCEL = 0x000C,
	SMB2_ECHO = 0x000D,
	SMB2_QUERY_DIRECTORY = 0x000E,
	SMB2_CHANGE_NOTIFY = 0x000F,
	SMB2_QUERY_INFO = 0x0010,
	SMB2_SET_INFO = 0x0011,
	SMB2_OPLOCK_BREAK = 0x0012,
};

/* header Flags */
#define SMB2_FLAGS_SERVER_TO_REDIR    0x00000001u
#define SMB2_FLAGS_ASYNC_COMMAND      0x00000002u
#define SMB2_FLAGS_RELATED_OPERATIONS 0x00000004u
#define SMB2_FLAGS_SIGNED             0x00000008u
#define SMB2_FLAGS_PRIORITY_MASK      0x00000070u
#define SMB2_FLAGS_DFS_OPERATIONS     0x10000000u
#define SMB2_FLAGS_REPLAY_OPERATION   0x20000000u

/* dialects */
#define SMB2_DIALECT_0202     0x0202
#define SMB2_DIALECT_0210     0x0210
#define SMB2_DIALECT_0300     0x0300
#define SMB2_DIALECT_0302     0x0302
#define SMB2_DIALECT_0311     0x0311
#define SMB2_DIALECT_WILDCARD 0x02FF

/* SecurityMode */
#define SMB2_NEGOTIATE_SIGNING_ENABLED  0x0001
#define SMB2_NEGOTIATE_SIGNING_REQUIRED 0x0002

/* Capabilities */
#define SMB2_GLOBAL_CAP_DFS                0x00000001u
#define SMB2_GLOBAL_CAP_LEASING            0x00000002u
#define SMB2_GLOBAL_CAP_LARGE_MTU          0x00000004u
#define SMB2_GLOBAL_CAP_MULTI_CHANNEL      0x00000008u
#define SMB2_GLOBAL_CAP_PERSISTENT_HANDLES 0x00000010u
#define SMB2_GLOBAL_CAP_DIRECTORY_LEASING  0x00000020u
#define SMB2_GLOBAL_CAP_ENCRYPTION         0x00000040u

/* negotiate contexts [MS-SMB2] 2.2.3.1 */
#define SMB2_PREAUTH_INTEGRITY_CAPABILITIES 0x0001
#define SMB2_ENCRYPTION_CAPABILITIES        0x0002
#define SMB2_COMPRESSION_CAPABILITIES       0x0003
#define SMB2_NETNAME_NEGOTIATE_CONTEXT_ID   0x0005
#define SMB2_TRANSPORT_CAPABILITIES         0x0006
#define SMB2_RDMA_TRANSFORM_CAPABILITIES    0x0007
#define SMB2_SIGNING_CAPABILITIES           0x0008
#define SMB2_POSIX_EXTENSIONS_AVAILABLE     0x0100
#define SMB2_PREAUTH_INTEGRITY_SHA512       0x0001
#define SMB2_ENCRYPTION_AES128_CCM          0x0001
#define SMB2_ENCRYPTION_AES128_GCM          0x0002
#define SMB2_ENCRYPTION_AES256_CCM          0x0003
#define SMB2_ENCRYPTION_AES256_GCM          0x0004
#define SMB2_SIGNING_HMAC_SHA256            0x0000
#define SMB2_SIGNING_AES_CMAC               0x0001
#define SMB2_SIGNING_AES_GMAC               0x0002

/* SMB3 POSIX extensions: the GUID that is both the data of the
 * SMB2_POSIX_EXTENSIONS_AVAILABLE negotiate context and the name of the
 * POSIX create context (93AD2550-9CB4-11E7-B423-83DE968BCD7C, as bytes). */
#define SMB2_POSIX_GUID_BYTES                                                                     \
	0x93, 0xAD, 0x25, 0x50, 0x9C, 0xB4, 0x11, 0xE7, 0xB4, 0x23, 0x83, 0xDE, 0x96, 0x8B, 0xCD, \
	    0x7C

/* READ: header offset at which a READ response carries its data (64 + 16),
 * sent as the request's Padding field. */
#define SMB2_READ_RSP_DATA_OFF 80

/* SESSION_SETUP */
#define SMB2_SESSION_FLAG_BINDING      0x01
#define SMB2_SESSION_FLAG_IS_GUEST     0x0001
#define SMB2_SESSION_FLAG_IS_NULL      0x0002
#define SMB2_SESSION_FLAG_ENCRYPT_DATA 0x0004

/* TREE_CONNECT */
#define SMB2_SHARE_TYPE_DISK                   0x01
#define SMB2_SHARE_TYPE_PIPE                   0x02
#define SMB2_SHARE_TYPE_PRINT                  0x03
#define SMB2_SHAREFLAG_DFS                     0x00000001u
#define SMB2_SHAREFLAG_DFS_ROOT                0x00000002u
#define SMB2_SHAREFLAG_ENCRYPT_DATA            0x00008000u
#define SMB2_SHARE_CAP_DFS                     0x00000008u
#define SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY 0x00000010u

/* CREATE */
#define SMB2_OPLOCK_LEVEL_NONE           0x00
#define SMB2_OPLOCK_LEVEL_II             0x01
#define SMB2_OPLOCK_LEVEL_EXCLUSIVE      0x08
#define SMB2_OPLOCK_LEVEL_BATCH          0x09
#define SMB2_OPLOCK_LEVEL_LEASE          0xFF
#define SMB2_IMPERSONATION_IMPERSONATION 0x00000002u

/* LeaseState bits ([MS-SMB2] 2.2.13.2.8): fuse/ reads them in smb_attr.lease
 * and in lease breaks. */
#define SMB2_LEASE_NONE           0x00u
#define SMB2_LEASE_READ_CACHING   0x01u
#define SMB2_LEASE_HANDLE_CACHING 0x02u
#define SMB2_LEASE_WRITE_CACHING  0x04u
#define SMB2_LEASE_RWH            0x07u

/* SMB3 POSIX extensions: an owner or group the server sent with no Unix id
 * we know (smb_attr.uid/gid; UINT32_MAX). */
#define SMB2_POSIX_ID_NONE 0xFFFFFFFFu

#define FILE_READ_DATA        0x00000001u
#define FILE_LIST_DIRECTORY   0x00000001u
#define FILE_WRITE_DATA       0x00000002u
#define FILE_ADD_FILE         0x00000002u
#define FILE_APPEND_DATA      0x00000004u
#define FILE_READ_EA          0x00000008u
#define FILE_WRITE_EA         0x00000010u
#define FILE_EXECUTE          0x00000020u
#define FILE_DELETE_CHILD     0x00000040u
#define FILE_READ_ATTRIBUTES  0x00000080u
#define FILE_WRITE_ATTRIBUTES 0x00000100u
#define DELETE_ACCESS         0x00010000u
#define READ_CONTROL          0x00020000u
#define WRITE_DAC             0x00040000u
#define WRITE_OWNER           0x00080000u
#define SYNCHRONIZE           0x00100000u
#define MAXIMUM_ALLOWED       0x02000000u
#define GENERIC_ALL           0x10000000u
#define GENERIC_EXECUTE       0x20000000u
#define GENERIC_WRITE         0x40000000u
#define GENERIC_READ          0x80000000u

#define FILE_SHARE_READ   0x00000001u
#define FILE_SHARE_WRITE  0x00000002u
#define FILE_SHARE_DELETE 0x00000004u
#define FILE_SHARE_ALL    0x00000007u

#define FILE_SUPERSEDE    0
#define FILE_OPEN         1
#define FILE_CREATE       2
#define FILE_OPEN_IF      3
#define FILE_OVERWRITE    4
#define FILE_OVERWRITE_IF 5

#define FILE_DIRECTORY_FILE            0x00000001u
#define FILE_WRITE_THROUGH             0x00000002u
#define FILE_SEQUENTIAL_ONLY           0x00000004u
#define FILE_NO_INTERMEDIATE_BUFFERING 0x00000008u
#define FILE_NON_DIRECTORY_FILE        0x00000040u
#define FILE_NO_EA_KNOWLEDGE           0x00000200u
#define FILE_RANDOM_ACCESS             0x00000800u
#define FILE_DELETE_ON_CLOSE           0x00001000u
#define FILE_OPEN_REPARSE_POINT        0x00200000u

#define FILE_SUPERSEDED  0
#define FILE_OPENED      1
#define FILE_CREATED     2
#define FILE_OVERWRITTEN 3

#define FILE_ATTRIBUTE_READONLY      0x00000001u
#define FILE_ATTRIBUTE_HIDDEN        0x00000002u
#define FILE_ATTRIBUTE_SYSTEM        0x00000004u
#define FILE_ATTRIBUTE_DIRECTORY     0x00000010u
#define FILE_ATTRIBUTE_ARCHIVE       0x00000020u
#define FILE_ATTRIBUTE_NORMAL        0x00000080u
#define FILE_ATTRIBUTE_TEMPORARY     0x00000100u
#define FILE_ATTRIBUTE_SPARSE_FILE   0x00000200u
#define FILE_ATTRIBUTE_REPARSE_POINT 0x00000400u
#define FILE_ATTRIBUTE_COMPRESSED    0x00000800u

/* CLOSE */
#define SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB 0x0001

/* READ/WRITE Channel */
#define SMB2_CHANNEL_NONE               0x00000000u
#define SMB2_CHANNEL_RDMA_V1            0x00000001u
#define SMB2_CHANNEL_RDMA_V1_INVALIDATE 0x00000002u
#define SMB2_READFLAG_READ_UNBUFFERED   0x01
#define SMB2_WRITEFLAG_WRITE_THROUGH    0x00000001u
#define SMB2_WRITEFLAG_WRITE_UNBUFFERED 0x00000002u

/* QUERY_INFO / SET_INFO */
#define SMB2_0_INFO_FILE       0x01
#define SMB2_0_INFO_FILESYSTEM 0x02
#define SMB2_0_INFO_SECURITY   0x03
#define SMB2_0_INFO_QUOTA      0x04

/* [MS-FSCC] 2.4 file information classes */
#define FileDirectoryInformation       1
#define FileFullDirectoryInformation   2
#define FileBothDirectoryInformation   3
#define FileBasicInformation           4
#define FileStandardInformation        5
#define FileInternalInformation        6
#define FileEaInformation              7
#define FileAccessInformation          8
#define FileNameInformation            9
#define FileRenameInformation          10
#define FileLinkInformation            11
#define FileNamesInformation           12
#define FileDispositionInformation     13
#define FilePositionInformation        14
#define FileFullEaInformation          15
#define FileModeInformation            16
#define FileAlignmentInformation       17
#define FileAllInformation             18
#define FileAllocationInformation      19
#define FileEndOfFileInformation       20
#define FileAlternateNameInformation   21
#define FileStreamInformation          22
#define FileCompressionInformation     28
#define FileNetworkOpenInformation     34
#define FileAttributeTagInformation    35
#define FileIdBothDirectoryInformation 37
#define FileIdFullDirectoryInformation 38
#define FileDispositionInformationEx   64
/* [MS-FSCC] 2.5 file system information classes */
#define FileFsVolumeInformation     1
#define FileFsSizeInformation       3
#define FileFsDeviceInformation     4
#define FileFsAttributeInformation  5
#define FileFsFullSizeInformation   7
#define FileFsSectorSizeInformation 11

/* QUERY_DIRECTORY Flags */
#define SMB2_RESTART_SCANS       0x01
#define SMB2_RETURN_SINGLE_ENTRY 0x02
#define SMB2_INDEX_SPECIFIED     0x04
#define SMB2_REOPEN              0x10

/* IOCTL */
#define SMB2_0_IOCTL_IS_FSCTL              0x00000001u
#define FSCTL_VALIDATE_NEGOTIATE_INFO      0x00140204u
#define FSCTL_QUERY_NETWORK_INTERFACE_INFO 0x001401FCu
/* NETWORK_INTERFACE_INFO Capability ([MS-SMB2] 2.2.32.5) */
#define SMB2_NETIF_CAP_RSS           0x00000001u
#define SMB2_NETIF_CAP_RDMA          0x00000002u
#define FSCTL_SET_SPARSE             0x000900C4u
#define FSCTL_SET_ZERO_DATA          0x000980C8u
#define FSCTL_QUERY_ALLOCATED_RANGES 0x000940CFu
#define FSCTL_SRV_COPYCHUNK          0x001440F2u
#define FSCTL_SRV_COPYCHUNK_WRITE    0x001480F2u
#define FSCTL_SRV_REQUEST_RESUME_KEY 0x00140078u
#define FSCTL_GET_REPARSE_POINT      0x000900A8u
#define FSCTL_SET_REPARSE_POINT      0x000900A4u

/* NTSTATUS values the client looks at ([MS-ERREF] 2.3.1) */
#define STATUS_SUCCESS                    0x00000000u
#define STATUS_PENDING                    0x00000103u
#define STATUS_NOTIFY_ENUM_DIR            0x0000010Cu
#define STATUS_BUFFER_OVERFLOW            0x80000005u
#define STATUS_NO_MORE_FILES              0x80000006u
#define STATUS_INVALID_EA_NAME            0x80000013u
#define STATUS_EA_LIST_INCONSISTENT       0x80000014u
#define STATUS_STOPPED_ON_SYMLINK         0x8000002Du
#define STATUS_UNSUCCESSFUL               0xC0000001u
#define STATUS_NOT_IMPLEMENTED            0xC0000002u
#define STATUS_INVALID_INFO_CLASS         0xC0000003u
#define STATUS_INFO_LENGTH_MISMATCH       0xC0000004u
#define STATUS_INVALID_HANDLE             0xC0000008u
#define STATUS_INVALID_PARAMETER          0xC000000Du
#define STATUS_NO_SUCH_DEVICE             0xC000000Eu
#define STATUS_NO_SUCH_FILE               0xC000000Fu
#define STATUS_INVALID_DEVICE_REQUEST     0xC0000010u
#define STATUS_END_OF_FILE                0xC0000011u
#define STATUS_MORE_PROCESSING_REQUIRED   0xC0000016u
#define STATUS_NO_MEMORY                  0xC0000017u
#define STATUS_ACCESS_DENIED              0xC0000022u
#define STATUS_BUFFER_TOO_SMALL           0xC0000023u
#define STATUS_OBJECT_NAME_INVALID        0xC0000033u
#define STATUS_OBJECT_NAME_NOT_FOUND      0xC0000034u
#define STATUS_OBJECT_NAME_COLLISION      0xC0000035u
#define STATUS_OBJECT_PATH_INVALID        0xC0000039u
#define STATUS_OBJECT_PATH_NOT_FOUND      0xC000003Au
#define STATUS_OBJECT_PATH_SYNTAX_BAD     0xC000003Bu
#define STATUS_DATA_ERROR                 0xC000003Eu
#define STATUS_SHARING_VIOLATION          0xC0000043u
#define STATUS_EA_TOO_LARGE               0xC0000050u
#define STATUS_NONEXISTENT_EA_ENTRY       0xC0000051u
#define STATUS_NO_EAS_ON_FILE             0xC0000052u
#define STATUS_FILE_LOCK_CONFLICT         0xC0000054u
#define STATUS_LOCK_NOT_GRANTED           0xC0000055u
#define STATUS_DELETE_PENDING             0xC0000056u
#define STATUS_PRIVILEGE_NOT_HELD         0xC0000061u
#define STATUS_WRONG_PASSWORD             0xC000006Au
#define STATUS_LOGON_FAILURE              0xC000006Du
#define STATUS_ACCOUNT_RESTRICTION        0xC000006Eu
#define STATUS_INVALID_LOGON_HOURS        0xC000006Fu
#define STATUS_PASSWORD_EXPIRED           0xC0000071u
#define STATUS_ACCOUNT_DISABLED           0xC0000072u
#define STATUS_DISK_FULL                  0xC000007Fu
#define STATUS_INSUFFICIENT_RESOURCES     0xC000009Au
#define STATUS_FILE_IS_A_DIRECTORY        0xC00000BAu
#define STATUS_NOT_SUPPORTED              0xC00000BBu
#define STATUS_NETWORK_NAME_DELETED       0xC00000C9u
#define STATUS_BAD_NETWORK_NAME           0xC00000CCu
#define STATUS_REQUEST_NOT_ACCEPTED       0xC00000D0u
#define STATUS_NOT_SAME_DEVICE            0xC00000D4u
#define STATUS_FILE_RENAMED               0xC00000D5u
#define STATUS_DIRECTORY_NOT_EMPTY        0xC0000101u
#define STATUS_NOT_A_DIRECTORY            0xC0000103u
#define STATUS_NAME_TOO_LONG              0xC0000106u
#define STATUS_CANCELLED                  0xC0000120u
#define STATUS_CANNOT_DELETE              0xC0000121u
#define STATUS_FILE_DELETED               0xC0000123u
#define STATUS_FILE_CLOSED                0xC0000128u
#define STATUS_INVALID_LEVEL              0xC0000148u
#define STATUS_PASSWORD_MUST_CHANGE       0xC0000224u
#define STATUS_NOT_FOUND                  0xC0000225u
#define STATUS_IO_TIMEOUT                 0xC00000B5u
#define STATUS_USER_SESSION_DELETED       0xC0000203u
#define STATUS_NETWORK_SESSION_EXPIRED    0xC000035Cu
#define STATUS_ACCOUNT_LOCKED_OUT         0xC0000234u
#define STATUS_CONNECTION_DISCONNECTED    0xC000020Cu
#define STATUS_CONNECTION_RESET           0xC000020Du
#define STATUS_INVALID_DEVICE_STATE       0xC0000184u
#define STATUS_NETWORK_ACCESS_DENIED      0xC00000CAu
#define STATUS_BAD_IMPERSONATION_LEVEL    0xC00000A5u
#define STATUS_QUOTA_EXCEEDED             0xC0000044u
#define STATUS_MEDIA_WRITE_PROTECTED      0xC00000A2u
#define STATUS_IO_REPARSE_TAG_NOT_HANDLED 0xC0000279u
#define STATUS_NOT_A_REPARSE_POINT        0xC0000275u
#define STATUS_RANGE_NOT_LOCKED           0xC000007Eu
#define STATUS_INVALID_NETWORK_RESPONSE   0xC00000C3u
#define STATUS_TOO_MANY_OPENED_FILES      0xC000011Fu
#define STATUS_HOST_UNREACHABLE           0xC000023Du
#define STATUS_PATH_NOT_COVERED           0xC0000257u
#define STATUS_SMB_BAD_CLUSTER_DIALECT    0xC05D0001u
#define STATUS_FS_DRIVER_REQUIRED         0xC000019Cu
#define STATUS_NO_SUCH_USER               0xC0000064u
#define STATUS_FILE_NOT_AVAILABLE         0xC0000467u

#endif
