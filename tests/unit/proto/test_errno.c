/* tests/unit/proto/test_errno.c — the NTSTATUS -> errno table. */
#include <errno.h>
#include <stdlib.h>

#include "client/proto/smb2_const.h"
#include "client/proto/smb2_errno.h"
#include "tests/unit/check.h"

static const char *source_root = ".";

static void test_required_mappings(void)
{
	CHECK_EQ(smb_status_to_errno(STATUS_SUCCESS), 0);
	CHECK_EQ(smb_status_to_errno(STATUS_OBJECT_NAME_NOT_FOUND), ENOENT);
	CHECK_EQ(smb_status_to_errno(STATUS_OBJECT_PATH_NOT_FOUND), ENOENT);
	CHECK_EQ(smb_status_to_errno(STATUS_NO_SUCH_FILE), ENOENT);
	CHECK_EQ(smb_status_to_errno(STATUS_OBJECT_NAME_COLLISION), EEXIST);
	CHECK_EQ(smb_status_to_errno(STATUS_ACCESS_DENIED), EACCES);
	CHECK_EQ(smb_status_to_errno(STATUS_DIRECTORY_NOT_EMPTY), ENOTEMPTY);
	CHECK_EQ(smb_status_to_errno(STATUS_NOT_A_DIRECTORY), ENOTDIR);
	CHECK_EQ(smb_status_to_errno(STATUS_FILE_IS_A_DIRECTORY), EISDIR);
	CHECK_EQ(smb_status_to_errno(STATUS_SHARING_VIOLATION), EBUSY);
	CHECK_EQ(smb_status_to_errno(STATUS_DISK_FULL), ENOSPC);
	CHECK_EQ(smb_status_to_errno(STATUS_QUOTA_EXCEEDED), EDQUOT);
	CHECK_EQ(smb_status_to_errno(STATUS_NOT_SUPPORTED), EOPNOTSUPP);
	CHECK_EQ(smb_status_to_errno(STATUS_INVALID_PARAMETER), EINVAL);
	CHECK_EQ(smb_status_to_errno(STATUS_INVALID_EA_NAME), EINVAL);
	CHECK_EQ(smb_status_to_errno(STATUS_EA_LIST_INCONSISTENT), EINVAL);
	CHECK_EQ(smb_status_to_errno(STATUS_DELETE_PENDING), ENOENT);
	CHECK_EQ(smb_status_to_errno(STATUS_NAME_TOO_LONG), ENAMETOOLONG);
	CHECK_EQ(smb_status_to_errno(STATUS_MEDIA_WRITE_PROTECTED), EROFS);
	CHECK_EQ(smb_status_to_errno(STATUS_IO_TIMEOUT), ETIMEDOUT);
	CHECK_EQ(smb_status_to_errno(STATUS_NETWORK_NAME_DELETED), ECONNABORTED);
	CHECK_EQ(smb_status_to_errno(STATUS_USER_SESSION_DELETED), ECONNABORTED);
	CHECK_EQ(smb_status_to_errno(STATUS_CONNECTION_DISCONNECTED), ECONNABORTED);
	CHECK_EQ(smb_status_to_errno(STATUS_CONNECTION_RESET), ECONNABORTED);
}

static void test_unknown_statuses(void)
{
	/* severity success / informational: not a failure */
	CHECK_EQ(smb_status_to_errno(0x00000123u), 0);
	CHECK_EQ(smb_status_to_errno(0x40000000u), 0);
	/* warning and error severities default to EIO */
	CHECK_EQ(smb_status_to_errno(0x80001234u), EIO);
	CHECK_EQ(smb_status_to_errno(0xC0FF0001u), EIO);
	CHECK(!smb_status_in_table(0xC0FF0001u));
}

static void test_smb_errno(void)
{
	/* a local error wins over any status */
	CHECK_EQ(smb_errno(-ECONNABORTED, STATUS_SUCCESS), ECONNABORTED);
	CHECK_EQ(smb_errno(-ETIMEDOUT, STATUS_ACCESS_DENIED), ETIMEDOUT);
	CHECK_EQ(smb_errno(0, STATUS_ACCESS_DENIED), EACCES);
	CHECK_EQ(smb_errno(0, STATUS_SUCCESS), 0);
}

/* Every STATUS_* that smb2_const.h defines has its own row: a status added
 * there must be given a deliberate errno here. */
static void test_table_covers_header(void)
{
	char path[4096], line[512];
	unsigned seen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/client/proto/smb2_const.h", source_root);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[128];
		unsigned value;
		if (sscanf(line, "#define STATUS_%127s %x", name, &value) != 2)
			continue;
		seen++;
		if (!smb_status_in_table(value)) {
			fprintf(stderr, "STATUS_%s (0x%08X) has no row in smb2_errno.c\n", name,
			        value);
			CHECK(smb_status_in_table(value));
		}
	}
	fclose(f);
	CHECK(seen > 50);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		source_root = argv[1];
	RUN(test_required_mappings);
	RUN(test_unknown_statuses);
	RUN(test_smb_errno);
	RUN(test_table_covers_header);
	return check_report();
}
