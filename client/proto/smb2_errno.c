/* client/proto/smb2_errno.c — the one NTSTATUS -> errno table.
 *
 * Choices follow what a POSIX program expects from a local file system, and
 * where that is ambiguous, what cifs.ko returns for the same status, so that
 * scripts behave the same on both mounts.
 */
#include "client/proto/smb2_errno.h"

#include <errno.h>
#include <stddef.h>

#include "client/proto/smb2_const.h"

struct status_errno {
	uint32_t status;
	int err;
};

static const struct status_errno status_table[] = {
    {STATUS_SUCCESS, 0},
    /* A completion must never carry PENDING: the engine waits for the
     * final response.  Seeing it here is a bug; fail the call. */
    {STATUS_PENDING, EIO},
    {STATUS_NOTIFY_ENUM_DIR, 0},
    {STATUS_BUFFER_OVERFLOW, EOVERFLOW},
    {STATUS_NO_MORE_FILES, ENODATA},
    /* an xattr name the server will not store (Samba: one with '/'), as cifs.ko */
    {STATUS_INVALID_EA_NAME, EINVAL},
    {STATUS_EA_LIST_INCONSISTENT, EINVAL},
    /* Symbolic links are not followed or presented yet. */
    {STATUS_STOPPED_ON_SYMLINK, EOPNOTSUPP},
    {STATUS_UNSUCCESSFUL, EIO},
    {STATUS_NOT_IMPLEMENTED, EOPNOTSUPP},
    {STATUS_INVALID_INFO_CLASS, EOPNOTSUPP},
    {STATUS_INFO_LENGTH_MISMATCH, EIO},
    {STATUS_INVALID_HANDLE, EBADF},
    {STATUS_INVALID_PARAMETER, EINVAL},
    {STATUS_NO_SUCH_DEVICE, ENODEV},
    {STATUS_NO_SUCH_FILE, ENOENT},
    {STATUS_INVALID_DEVICE_REQUEST, EOPNOTSUPP},
    /* read() turns this into a 0-byte reply before it gets here. */
    {STATUS_END_OF_FILE, ENODATA},
    {STATUS_MORE_PROCESSING_REQUIRED, EIO},
    {STATUS_NO_MEMORY, ENOMEM},
    {STATUS_ACCESS_DENIED, EACCES},
    {STATUS_BUFFER_TOO_SMALL, EIO},
    /* A name the server cannot store (e.g. containing ':'): cifs.ko says
     * ENOENT, so that stat() of such a name reports "does not exist". */
    {STATUS_OBJECT_NAME_INVALID, ENOENT},
    {STATUS_OBJECT_NAME_NOT_FOUND, ENOENT},
    {STATUS_OBJECT_NAME_COLLISION, EEXIST},
    {STATUS_OBJECT_PATH_INVALID, ENOTDIR},
    {STATUS_OBJECT_PATH_NOT_FOUND, ENOENT},
    {STATUS_OBJECT_PATH_SYNTAX_BAD, EINVAL},
    /* A DFS link the client could not follow (cifs.ko: EREMOTE). */
    {STATUS_PATH_NOT_COVERED, EREMOTE},
    {STATUS_DATA_ERROR, EIO},
    {STATUS_SHARING_VIOLATION, EBUSY},
    {STATUS_EA_TOO_LARGE, E2BIG},
    {STATUS_NONEXISTENT_EA_ENTRY, ENODATA},
    {STATUS_NO_EAS_ON_FILE, ENODATA},
    {STATUS_FILE_LOCK_CONFLICT, EACCES},
    {STATUS_LOCK_NOT_GRANTED, EAGAIN},
    {STATUS_DELETE_PENDING, ENOENT},
    {STATUS_PRIVILEGE_NOT_HELD, EPERM},
    {STATUS_WRONG_PASSWORD, EACCES},
    {STATUS_LOGON_FAILURE, EACCES},
    {STATUS_ACCOUNT_RESTRICTION, EACCES},
    {STATUS_INVALID_LOGON_HOURS, EACCES},
    {STATUS_PASSWORD_EXPIRED, EKEYEXPIRED},
    {STATUS_ACCOUNT_DISABLED, EACCES},
    {STATUS_DISK_FULL, ENOSPC},
    {STATUS_INSUFFICIENT_RESOURCES, ENOMEM},
    {STATUS_FILE_IS_A_DIRECTORY, EISDIR},
    {STATUS_NOT_SUPPORTED, EOPNOTSUPP},
    /* The tree or session went away under us: the same errno the engine
     * uses for a dead connection. */
    {STATUS_NETWORK_NAME_DELETED, ECONNABORTED},
    {STATUS_BAD_NETWORK_NAME, ENOENT},
    {STATUS_REQUEST_NOT_ACCEPTED, EAGAIN},
    {STATUS_NOT_SAME_DEVICE, EXDEV},
    {STATUS_FILE_RENAMED, ESTALE},
    {STATUS_DIRECTORY_NOT_EMPTY, ENOTEMPTY},
    {STATUS_NOT_A_DIRECTORY, ENOTDIR},
    {STATUS_NAME_TOO_LONG, ENAMETOOLONG},
    {STATUS_CANCELLED, ECANCELED},
    /* e.g. deleting a file with FILE_ATTRIBUTE_READONLY */
    {STATUS_CANNOT_DELETE, EACCES},
    {STATUS_FILE_DELETED, ENOENT},
    {STATUS_FILE_CLOSED, EBADF},
    {STATUS_INVALID_LEVEL, EOPNOTSUPP},
    {STATUS_PASSWORD_MUST_CHANGE, EKEYEXPIRED},
    {STATUS_NOT_FOUND, ENOENT},
    {STATUS_IO_TIMEOUT, ETIMEDOUT},
    {STATUS_USER_SESSION_DELETED, ECONNABORTED},
    {STATUS_NETWORK_SESSION_EXPIRED, ECONNABORTED},
    {STATUS_ACCOUNT_LOCKED_OUT, EACCES},
    {STATUS_CONNECTION_DISCONNECTED, ECONNABORTED},
    {STATUS_CONNECTION_RESET, ECONNABORTED},
    {STATUS_INVALID_DEVICE_STATE, EIO},
    {STATUS_NETWORK_ACCESS_DENIED, EACCES},
    {STATUS_BAD_IMPERSONATION_LEVEL, EACCES},
    {STATUS_QUOTA_EXCEEDED, EDQUOT},
    {STATUS_MEDIA_WRITE_PROTECTED, EROFS},
    {STATUS_IO_REPARSE_TAG_NOT_HANDLED, EOPNOTSUPP},
    /* readlink() on something that is not a link */
    {STATUS_NOT_A_REPARSE_POINT, EINVAL},
    {STATUS_RANGE_NOT_LOCKED, ENOLCK},
    {STATUS_INVALID_NETWORK_RESPONSE, EIO},
    {STATUS_TOO_MANY_OPENED_FILES, EMFILE},
    {STATUS_HOST_UNREACHABLE, EHOSTUNREACH},
    {STATUS_SMB_BAD_CLUSTER_DIALECT, EOPNOTSUPP},
    {STATUS_FS_DRIVER_REQUIRED, EOPNOTSUPP},
    {STATUS_NO_SUCH_USER, EACCES},
    /* a write under an old ChannelSequence (multichannel): try again */
    {STATUS_FILE_NOT_AVAILABLE, EAGAIN},
};

static const struct status_errno *status_find(uint32_t status)
{
	for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
		if (status_table[i].status == status)
			return &status_table[i];
	return NULL;
}

int smb_status_to_errno(uint32_t status)
{
	const struct status_errno *row = status_find(status);

	if (row)
		return row->err;
	/* [MS-ERREF] 2.3: the top two bits are the severity; 0 (success) and
	 * 1 (informational) are not failures. */
	if ((status >> 30) <= 1)
		return 0;
	return EIO;
}

int smb_errno(int err, uint32_t status)
{
	return err ? -err : smb_status_to_errno(status);
}

bool smb_status_in_table(uint32_t status)
{
	return status_find(status) != NULL;
}
