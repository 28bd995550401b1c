/* client/proto/smb2_names.c — names of commands and NTSTATUS values for log
 * lines, and NT time conversion. */
#include <stdio.h>
#include <time.h>

#include "client/proto/smb2.h"

const char *smb2_command_str(uint16_t command)
{
	switch (command) {
	case SMB2_NEGOTIATE:
		return "NEGOTIATE";
	case SMB2_SESSION_SETUP:
		return "SESSION_SETUP";
	case SMB2_LOGOFF:
		return "LOGOFF";
	case SMB2_TREE_CONNECT:
		return "TREE_CONNECT";
	case SMB2_TREE_DISCONNECT:
		return "TREE_DISCONNECT";
	case SMB2_CREATE:
		return "CREATE";
	case SMB2_CLOSE:
		return "CLOSE";
	case SMB2_FLUSH:
		return "FLUSH";
	case SMB2_READ:
		return "READ";
	case SMB2_WRITE:
		return "WRITE";
	case SMB2_LOCK:
		return "LOCK";
	case SMB2_IOCTL:
		return "IOCTL";
	case SMB2_CANCEL:
		return "CANCEL";
	case SMB2_ECHO:
		return "ECHO";
	case SMB2_QUERY_DIRECTORY:
		return "QUERY_DIRECTORY";
	case SMB2_CHANGE_NOTIFY:
		return "CHANGE_NOTIFY";
	case SMB2_QUERY_INFO:
		return "QUERY_INFO";
	case SMB2_SET_INFO:
		return "SET_INFO";
	case SMB2_OPLOCK_BREAK:
		return "OPLOCK_BREAK";
	}
	return "UNKNOWN_COMMAND";
}

/* Long for a reason: one case per NTSTATUS we name - a table the compiler
 * checks for duplicate values. */
const char *smb2_status_str(uint32_t status)
{
	static _Thread_local char unknown[32];

	switch (status) {
	case STATUS_SUCCESS:
		return "STATUS_SUCCESS";
	case STATUS_PENDING:
		return "STATUS_PENDING";
	case STATUS_NOTIFY_ENUM_DIR:
		return "STATUS_NOTIFY_ENUM_DIR";
	case STATUS_BUFFER_OVERFLOW:
		return "STATUS_BUFFER_OVERFLOW";
	case STATUS_NO_MORE_FILES:
		return "STATUS_NO_MORE_FILES";
	case STATUS_STOPPED_ON_SYMLINK:
		return "STATUS_STOPPED_ON_SYMLINK";
	case STATUS_UNSUCCESSFUL:
		return "STATUS_UNSUCCESSFUL";
	case STATUS_NOT_IMPLEMENTED:
		return "STATUS_NOT_IMPLEMENTED";
	case STATUS_INVALID_INFO_CLASS:
		return "STATUS_INVALID_INFO_CLASS";
	case STATUS_INFO_LENGTH_MISMATCH:
		return "STATUS_INFO_LENGTH_MISMATCH";
	case STATUS_INVALID_HANDLE:
		return "STATUS_INVALID_HANDLE";
	case STATUS_INVALID_PARAMETER:
		return "STATUS_INVALID_PARAMETER";
	case STATUS_NO_SUCH_DEVICE:
		return "STATUS_NO_SUCH_DEVICE";
	case STATUS_NO_SUCH_FILE:
		return "STATUS_NO_SUCH_FILE";
	case STATUS_INVALID_DEVICE_REQUEST:
		return "STATUS_INVALID_DEVICE_REQUEST";
	case STATUS_END_OF_FILE:
		return "STATUS_END_OF_FILE";
	case STATUS_MORE_PROCESSING_REQUIRED:
		return "STATUS_MORE_PROCESSING_REQUIRED";
	case STATUS_NO_MEMORY:
		return "STATUS_NO_MEMORY";
	case STATUS_ACCESS_DENIED:
		return "STATUS_ACCESS_DENIED";
	case STATUS_BUFFER_TOO_SMALL:
		return "STATUS_BUFFER_TOO_SMALL";
	case STATUS_OBJECT_NAME_INVALID:
		return "STATUS_OBJECT_NAME_INVALID";
	case STATUS_OBJECT_NAME_NOT_FOUND:
		return "STATUS_OBJECT_NAME_NOT_FOUND";
	case STATUS_OBJECT_NAME_COLLISION:
		return "STATUS_OBJECT_NAME_COLLISION";
	case STATUS_OBJECT_PATH_INVALID:
		return "STATUS_OBJECT_PATH_INVALID";
	case STATUS_OBJECT_PATH_NOT_FOUND:
		return "STATUS_OBJECT_PATH_NOT_FOUND";
	case STATUS_OBJECT_PATH_SYNTAX_BAD:
		return "STATUS_OBJECT_PATH_SYNTAX_BAD";
	case STATUS_DATA_ERROR:
		return "STATUS_DATA_ERROR";
	case STATUS_SHARING_VIOLATION:
		return "STATUS_SHARING_VIOLATION";
	case STATUS_EA_TOO_LARGE:
		return "STATUS_EA_TOO_LARGE";
	case STATUS_NONEXISTENT_EA_ENTRY:
		return "STATUS_NONEXISTENT_EA_ENTRY";
	case STATUS_NO_EAS_ON_FILE:
		return "STATUS_NO_EAS_ON_FILE";
	case STATUS_FILE_LOCK_CONFLICT:
		return "STATUS_FILE_LOCK_CONFLICT";
	case STATUS_LOCK_NOT_GRANTED:
		return "STATUS_LOCK_NOT_GRANTED";
	case STATUS_DELETE_PENDING:
		return "STATUS_DELETE_PENDING";
	case STATUS_PRIVILEGE_NOT_HELD:
		return "STATUS_PRIVILEGE_NOT_HELD";
	case STATUS_WRONG_PASSWORD:
		return "STATUS_WRONG_PASSWORD";
	case STATUS_LOGON_FAILURE:
		return "STATUS_LOGON_FAILURE";
	case STATUS_ACCOUNT_RESTRICTION:
		return "STATUS_ACCOUNT_RESTRICTION";
	case STATUS_INVALID_LOGON_HOURS:
		return "STATUS_INVALID_LOGON_HOURS";
	case STATUS_PASSWORD_EXPIRED:
		return "STATUS_PASSWORD_EXPIRED";
	case STATUS_ACCOUNT_DISABLED:
		return "STATUS_ACCOUNT_DISABLED";
	case STATUS_DISK_FULL:
		return "STATUS_DISK_FULL";
	case STATUS_INSUFFICIENT_RESOURCES:
		return "STATUS_INSUFFICIENT_RESOURCES";
	case STATUS_FILE_IS_A_DIRECTORY:
		return "STATUS_FILE_IS_A_DIRECTORY";
	case STATUS_NOT_SUPPORTED:
		return "STATUS_NOT_SUPPORTED";
	case STATUS_NETWORK_NAME_DELETED:
		return "STATUS_NETWORK_NAME_DELETED";
	case STATUS_BAD_NETWORK_NAME:
		return "STATUS_BAD_NETWORK_NAME";
	case STATUS_REQUEST_NOT_ACCEPTED:
		return "STATUS_REQUEST_NOT_ACCEPTED";
	case STATUS_NOT_SAME_DEVICE:
		return "STATUS_NOT_SAME_DEVICE";
	case STATUS_FILE_RENAMED:
		return "STATUS_FILE_RENAMED";
	case STATUS_DIRECTORY_NOT_EMPTY:
		return "STATUS_DIRECTORY_NOT_EMPTY";
	case STATUS_NOT_A_DIRECTORY:
		return "STATUS_NOT_A_DIRECTORY";
	case STATUS_NAME_TOO_LONG:
		return "STATUS_NAME_TOO_LONG";
	case STATUS_CANCELLED:
		return "STATUS_CANCELLED";
	case STATUS_CANNOT_DELETE:
		return "STATUS_CANNOT_DELETE";
	case STATUS_FILE_DELETED:
		return "STATUS_FILE_DELETED";
	case STATUS_FILE_CLOSED:
		return "STATUS_FILE_CLOSED";
	case STATUS_INVALID_LEVEL:
		return "STATUS_INVALID_LEVEL";
	case STATUS_PASSWORD_MUST_CHANGE:
		return "STATUS_PASSWORD_MUST_CHANGE";
	case STATUS_NOT_FOUND:
		return "STATUS_NOT_FOUND";
	case STATUS_IO_TIMEOUT:
		return "STATUS_IO_TIMEOUT";
	case STATUS_USER_SESSION_DELETED:
		return "STATUS_USER_SESSION_DELETED";
	case STATUS_NETWORK_SESSION_EXPIRED:
		return "STATUS_NETWORK_SESSION_EXPIRED";
	case STATUS_ACCOUNT_LOCKED_OUT:
		return "STATUS_ACCOUNT_LOCKED_OUT";
	case STATUS_CONNECTION_DISCONNECTED:
		return "STATUS_CONNECTION_DISCONNECTED";
	case STATUS_CONNECTION_RESET:
		return "STATUS_CONNECTION_RESET";
	case STATUS_INVALID_DEVICE_STATE:
		return "STATUS_INVALID_DEVICE_STATE";
	case STATUS_NETWORK_ACCESS_DENIED:
		return "STATUS_NETWORK_ACCESS_DENIED";
	case STATUS_BAD_IMPERSONATION_LEVEL:
		return "STATUS_BAD_IMPERSONATION_LEVEL";
	case STATUS_QUOTA_EXCEEDED:
		return "STATUS_QUOTA_EXCEEDED";
	case STATUS_MEDIA_WRITE_PROTECTED:
		return "STATUS_MEDIA_WRITE_PROTECTED";
	case STATUS_IO_REPARSE_TAG_NOT_HANDLED:
		return "STATUS_IO_REPARSE_TAG_NOT_HANDLED";
	case STATUS_NOT_A_REPARSE_POINT:
		return "STATUS_NOT_A_REPARSE_POINT";
	case STATUS_RANGE_NOT_LOCKED:
		return "STATUS_RANGE_NOT_LOCKED";
	case STATUS_INVALID_NETWORK_RESPONSE:
		return "STATUS_INVALID_NETWORK_RESPONSE";
	case STATUS_TOO_MANY_OPENED_FILES:
		return "STATUS_TOO_MANY_OPENED_FILES";
	case STATUS_HOST_UNREACHABLE:
		return "STATUS_HOST_UNREACHABLE";
	case STATUS_PATH_NOT_COVERED:
		return "STATUS_PATH_NOT_COVERED";
	case STATUS_SMB_BAD_CLUSTER_DIALECT:
		return "STATUS_SMB_BAD_CLUSTER_DIALECT";
	case STATUS_FS_DRIVER_REQUIRED:
		return "STATUS_FS_DRIVER_REQUIRED";
	case STATUS_NO_SUCH_USER:
		return "STATUS_NO_SUCH_USER";
	case STATUS_FILE_NOT_AVAILABLE:
		return "STATUS_FILE_NOT_AVAILABLE";
	}
	snprintf(unknown, sizeof(unknown), "STATUS_0x%08X", (unsigned)status);
	return unknown;
}

void smb_nttime_to_timespec(uint64_t nt, struct timespec *ts)
{
	/* nt / 10^7 < 1.9e12, so the subtraction cannot overflow int64_t. */
	ts->tv_sec = (time_t)((int64_t)(nt / 10000000u) - (int64_t)SMB_NT_EPOCH_DELTA);
	ts->tv_nsec = (long)(nt % 10000000u) * 100;
}

uint64_t smb_timespec_to_nttime(const struct timespec *ts)
{
	int64_t sec = ts->tv_sec;
	long nsec = ts->tv_nsec;

	/* Normalise a tv_nsec outside [0, 1e9). */
	if (nsec < 0 || nsec >= 1000000000L) {
		long carry = nsec / 1000000000L;
		nsec -= carry * 1000000000L;
		if (nsec < 0) {
			nsec += 1000000000L;
			carry--;
		}
		if ((carry > 0 && sec > INT64_MAX - carry) ||
		    (carry < 0 && sec < INT64_MIN - carry))
			return carry > 0 ? (uint64_t)INT64_MAX : 0;
		sec += carry;
	}
	/* Before 1601 there is nothing to say: clamp to the epoch. */
	if (sec < -(int64_t)SMB_NT_EPOCH_DELTA)
		return 0;
	uint64_t s = (uint64_t)sec + SMB_NT_EPOCH_DELTA;
	/* NT times are signed on the wire (FILETIME/LARGE_INTEGER): clamp. */
	if (s > ((uint64_t)INT64_MAX - 9999999u) / 10000000u)
		return (uint64_t)INT64_MAX;
	return s * 10000000u + (uint64_t)nsec / 100u;
}

const char *smb2_dialect_str(uint16_t dialect)
{
	static _Thread_local char buf[8];

	switch (dialect) {
	case SMB2_DIALECT_0202:
		return "2.0.2";
	case SMB2_DIALECT_0210:
		return "2.1";
	case SMB2_DIALECT_0300:
		return "3.0";
	case SMB2_DIALECT_0302:
		return "3.0.2";
	case SMB2_DIALECT_0311:
		return "3.1.1";
	}
	snprintf(buf, sizeof(buf), "0x%04x", dialect);
	return buf;
}

const char *smb2_signing_alg_str(uint16_t alg)
{
	switch (alg) {
	case SMB2_SIGNING_HMAC_SHA256:
		return "HMAC-SHA256";
	case SMB2_SIGNING_AES_CMAC:
		return "AES-CMAC";
	case SMB2_SIGNING_AES_GMAC:
		return "AES-GMAC";
	}
	return "unknown";
}

const char *smb2_cipher_str(uint16_t cipher)
{
	switch (cipher) {
	case 0:
		return "none";
	case SMB2_ENCRYPTION_AES128_CCM:
		return "AES-128-CCM";
	case SMB2_ENCRYPTION_AES128_GCM:
		return "AES-128-GCM";
	case SMB2_ENCRYPTION_AES256_CCM:
		return "AES-256-CCM";
	case SMB2_ENCRYPTION_AES256_GCM:
		return "AES-256-GCM";
	}
	return "unknown";
}
