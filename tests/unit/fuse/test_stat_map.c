/* tests/unit/fuse/test_stat_map.c — SMB attributes -> struct stat. */
#include <sys/stat.h>

#include "fuse/stat_map.h"
#include "tests/unit/check.h"

/* 2009-02-13 23:31:30 UTC (Unix 1234567890) + 0.5 s, in NT time */
#define NT_1234567890_5 ((1234567890ull + 11644473600ull) * 10000000ull + 5000000ull)

static const struct smb_stat_policy policy = {
    .uid = 1000, .gid = 100, .file_mode = 0644, .dir_mode = 0755};

static void test_file(void)
{
	struct smb_attr a = {.file_id = 9,
	                     .last_access_time = NT_1234567890_5,
	                     .last_write_time = NT_1234567890_5,
	                     .change_time = NT_1234567890_5,
	                     .end_of_file = 12345,
	                     .allocation_size = 16384,
	                     .file_attributes = FILE_ATTRIBUTE_ARCHIVE};
	struct stat st;

	smb_attr_to_stat(&a, &policy, 9, &st);
	CHECK_EQ(st.st_mode, S_IFREG | 0644);
	CHECK_EQ(st.st_ino, 9);
	CHECK_EQ(st.st_uid, 1000);
	CHECK_EQ(st.st_gid, 100);
	CHECK_EQ(st.st_size, 12345);
	CHECK_EQ(st.st_blocks, 32);
	CHECK_EQ(st.st_nlink, 1);
	CHECK_EQ(st.st_mtim.tv_sec, 1234567890);
	CHECK_EQ(st.st_mtim.tv_nsec, 500000000);
	CHECK_EQ(st.st_atim.tv_sec, 1234567890);
	CHECK_EQ(st.st_ctim.tv_sec, 1234567890);
	CHECK(st.st_blksize > 0);

	a.file_attributes |= FILE_ATTRIBUTE_READONLY;
	a.nlink = 3;
	smb_attr_to_stat(&a, &policy, 9, &st);
	CHECK_EQ(st.st_mode, S_IFREG | 0444);
	CHECK_EQ(st.st_nlink, 3);
}

static void test_dir(void)
{
	struct smb_attr a = {.file_attributes = FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_READONLY};
	struct stat st;

	smb_attr_to_stat(&a, &policy, 5, &st);
	/* READONLY on a directory means nothing to POSIX */
	CHECK_EQ(st.st_mode, S_IFDIR | 0755);
	CHECK_EQ(st.st_nlink, 1); /* a listing's: as Samba's and Windows' count */
	a.nlink = 4;
	smb_attr_to_stat(&a, &policy, 5, &st);
	CHECK_EQ(st.st_nlink, 4);
}

static void test_symlink(void)
{
	/* an mfsymlink: a 1067-byte READONLY file on the server, a link here */
	struct smb_attr a = {.file_attributes = FILE_ATTRIBUTE_READONLY,
	                     .end_of_file = 12,
	                     .nlink = 2,
	                     .symlink = true};
	struct stat st;

	smb_attr_to_stat(&a, &policy, 7, &st);
	CHECK_EQ(st.st_mode, S_IFLNK | 0777);
	CHECK_EQ(st.st_size, 12);
	CHECK_EQ(st.st_nlink, 1);
}

int main(void)
{
	RUN(test_file);
	RUN(test_dir);
	RUN(test_symlink);
	return check_report();
}
