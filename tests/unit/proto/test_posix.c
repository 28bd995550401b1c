/* tests/unit/proto/test_posix.c — SMB3 POSIX extensions payloads: SIDs, the
 * create context, SMB2_FILE_POSIX_INFORMATION (QUERY_INFO and directory
 * entries, laid out as ksmbd sends them), file types, chmod/chown SDs. */
#include <errno.h>
#include <sys/stat.h>

#include "client/proto/smb2.h"
#include "client/proto/smb2_posix.h"
#include "tests/unit/check.h"

/* S-1-22-<kind>-<id>: 16 bytes */
static size_t put_unix_sid(uint8_t *b, int kind, uint32_t id)
{
	const uint8_t head[8] = {1, 2, 0, 0, 0, 0, 0, 22};
	memcpy(b, head, 8);
	smb_put_le32(b + 8, (uint32_t)kind);
	smb_put_le32(b + 12, id);
	return 16;
}

/* SMB2_FILE_POSIX_INFORMATION's fixed 80 bytes + two Unix SIDs */
static size_t put_info(uint8_t *b, uint32_t attrs, uint64_t ino, uint32_t dev, uint32_t nlink,
                       uint32_t tag, uint32_t mode, uint32_t uid, uint32_t gid)
{
	memset(b, 0, 80);
	for (int i = 0; i < 4; i++)
		smb_put_le64(b + 8 * i, 0x01d0000000000000ull + (uint64_t)i);
	smb_put_le64(b + 32, 12345); /* EndOfFile */
	smb_put_le64(b + 40, 16384); /* AllocationSize */
	smb_put_le32(b + 48, attrs);
	smb_put_le64(b + 52, ino);
	smb_put_le32(b + 60, dev);
	smb_put_le32(b + 68, nlink);
	smb_put_le32(b + 72, tag);
	smb_put_le32(b + 76, mode);
	size_t n = 80;
	n += put_unix_sid(b + n, 1, uid);
	n += put_unix_sid(b + n, 2, gid);
	return n;
}

static void test_sid(void)
{
	uint8_t b[80];
	struct smb2_sid s, d;
	size_t used;
	smb2_sid_unix(&s, false, 1001);
	CHECK_EQ(smb2_sid_encode(b, sizeof(b), &s), 16);
	CHECK_EQ(b[0], 1);
	CHECK_EQ(b[1], 2);
	CHECK_EQ(b[7], 22);
	CHECK_EQ(smb_le32(b + 8), 1);
	CHECK_EQ(smb_le32(b + 12), 1001);
	CHECK_EQ(smb2_sid_decode(b, 16, &d, &used), 0);
	CHECK_EQ(used, 16);
	CHECK_EQ(smb2_sid_unix_id(&d, false), 1001);
	CHECK_EQ(smb2_sid_unix_id(&d, true), SMB2_POSIX_ID_NONE); /* a user is no group */
	smb2_sid_unix(&s, true, 0);
	CHECK_EQ(smb2_sid_encode(b, sizeof(b), &s), 16);
	CHECK_EQ(smb2_sid_decode(b, 16, &d, &used), 0);
	CHECK_EQ(smb2_sid_unix_id(&d, true), 0);
	/* a domain SID (what ksmbd's create context gives as the owner) has no Unix id */
	struct smb2_sid dom = {
	    .revision = 1, .nsub = 5, .authority = 5, .sub = {21, 1, 2, 3, 1001}};
	CHECK_EQ(smb2_sid_encode(b, sizeof(b), &dom), 28);
	CHECK_EQ(smb2_sid_decode(b, 28, &d, &used), 0);
	CHECK(d.nsub == 5 && d.authority == 5 && d.sub[4] == 1001);
	CHECK_EQ(smb2_sid_unix_id(&d, false), SMB2_POSIX_ID_NONE);
	/* short, bad revision, too many sub-authorities */
	CHECK_EQ(smb2_sid_decode(b, 27, &d, &used), -EBADMSG);
	CHECK_EQ(smb2_sid_decode(b, 7, &d, &used), -EBADMSG);
	b[0] = 2;
	CHECK_EQ(smb2_sid_decode(b, 28, &d, &used), -EBADMSG);
	b[0] = 1;
	b[1] = 16;
	CHECK_EQ(smb2_sid_decode(b, 80, &d, &used), -EBADMSG);
	CHECK_EQ(smb2_sid_encode(b, 15, &s), -ENOSPC);
	dom.nsub = 16;
	CHECK_EQ(smb2_sid_encode(b, sizeof(b), &dom), -EINVAL);
}

static void test_create_ctx(void)
{
	uint8_t req[SMB2_POSIX_CREATE_REQ_LEN];
	smb2_posix_create_req_encode(req, 0100640);
	CHECK_EQ(smb_le32(req), 0640); /* permission bits only */
	CHECK_EQ(strlen(smb2_posix_ctx_name), 16);
	CHECK_EQ((uint8_t)smb2_posix_ctx_name[0], 0x93);
	CHECK_EQ((uint8_t)smb2_posix_ctx_name[15], 0x7c);

	/* the response data, as ksmbd sends it: owner a domain SID, group Unix */
	uint8_t d[56];
	smb_put_le32(d, 2);
	smb_put_le32(d + 4, 7); /* ksmbd: the handle's volatile id */
	smb_put_le32(d + 8, 0640);
	struct smb2_sid dom = {
	    .revision = 1, .nsub = 5, .authority = 5, .sub = {21, 1, 2, 3, 1001}};
	CHECK_EQ(smb2_sid_encode(d + 12, 28, &dom), 28);
	put_unix_sid(d + 40, 2, 1002);
	struct smb2_posix_ids ids;
	CHECK_EQ(smb2_posix_create_rsp_decode(d, sizeof(d), &ids), 0);
	CHECK(ids.nlink == 2 && ids.mode == 0640 && ids.reparse_tag == 7);
	CHECK_EQ(ids.uid, SMB2_POSIX_ID_NONE);
	CHECK_EQ(ids.gid, 1002);
	for (uint32_t n = 0; n < sizeof(d); n++)
		CHECK_EQ(smb2_posix_create_rsp_decode(d, n, &ids), -EBADMSG);

	/* found in a chain after another context */
	uint8_t chain[32 + 32 + 56];
	memset(chain, 0, sizeof(chain));
	smb_put_le32(chain, 32);      /* Next */
	smb_put_le16(chain + 4, 16);  /* NameOffset */
	smb_put_le16(chain + 6, 4);   /* NameLength */
	smb_put_le16(chain + 10, 24); /* DataOffset */
	smb_put_le32(chain + 12, 8);  /* DataLength */
	memcpy(chain + 16, "MxAc", 4);
	uint8_t *p = chain + 32;
	smb_put_le16(p + 4, 16);
	smb_put_le16(p + 6, 16);
	smb_put_le16(p + 10, 32);
	smb_put_le32(p + 12, 56);
	memcpy(p + 16, smb2_posix_ctx_name, 16);
	memcpy(p + 32, d, 56);
	memset(&ids, 0, sizeof(ids));
	CHECK_EQ(smb2_posix_create_rsp_find(chain, sizeof(chain), &ids), 1);
	CHECK(ids.nlink == 2 && ids.gid == 1002);
	uint8_t alone[32];
	memcpy(alone, chain, 32);
	smb_put_le32(alone, 0);
	CHECK_EQ(smb2_posix_create_rsp_find(alone, 32, &ids), 0);        /* MxAc alone */
	CHECK_EQ(smb2_posix_create_rsp_find(chain, 32, &ids), -EBADMSG); /* Next past the end */
	smb_put_le32(p + 12, 20); /* a POSIX context too short for its SIDs */
	CHECK_EQ(smb2_posix_create_rsp_find(chain, sizeof(chain), &ids), -EBADMSG);
}

static void test_info(void)
{
	uint8_t b[128];
	size_t n = put_info(b, FILE_ATTRIBUTE_ARCHIVE, 0x1122334455ull, 0, 3, 0, 0640, 1001, 1002);
	CHECK_EQ(n, 112);
	struct smb2_posix_info pi;
	CHECK_EQ(smb2_posix_info_decode(b, n, &pi), 0);
	CHECK_EQ(pi.inode, 0x1122334455ull);
	CHECK_EQ(pi.end_of_file, 12345);
	CHECK_EQ(pi.allocation_size, 16384);
	CHECK_EQ(pi.last_write_time, 0x01d0000000000002ull);
	CHECK_EQ(pi.change_time, 0x01d0000000000003ull);
	CHECK(pi.ids.nlink == 3 && pi.ids.mode == 0640 && pi.ids.uid == 1001 && pi.ids.gid == 1002);
	CHECK_EQ(smb2_posix_file_type(pi.file_attributes, pi.ids.reparse_tag, pi.ids.wire_mode),
	         S_IFREG);
	/* every cut is refused */
	for (size_t k = 0; k < n; k++)
		CHECK_EQ(smb2_posix_info_decode(b, k, &pi), -EBADMSG);
	/* mode bits above 07777 are dropped */
	smb_put_le32(b + 76, 0170755);
	CHECK_EQ(smb2_posix_info_decode(b, n, &pi), 0);
	CHECK_EQ(pi.ids.mode, 0755);
	CHECK_EQ(pi.ids.wire_mode, 0170755);
}

static void test_file_type(void)
{
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_DIRECTORY, 0, 0), S_IFDIR);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0x80000024u, 0), S_IFIFO);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0x80000025u, 0), S_IFCHR);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0x80000026u, 0), S_IFBLK);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0x80000023u, 0), S_IFSOCK);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0xA000000Cu, 0), S_IFLNK);
	/* a tag without the attribute is noise (ksmbd's create context) */
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0x80000024u, 0), S_IFREG);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0xA000000Cu, 0), S_IFREG);
	/* Samba's type in Mode (UNIX_TYPE_* << 12), over any reparse tag */
	static const uint32_t want[] = {S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR,
	                                S_IFBLK, S_IFIFO, S_IFSOCK};
	for (uint32_t t = 0; t < 7; t++)
		CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_REPARSE_POINT, 0x80000014u,
		                              (t << 12) | 0644),
		         t ? want[t] : S_IFREG);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0, 5u << 12), S_IFIFO);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0, 7u << 12), S_IFREG);
	/* the directory attribute wins */
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_DIRECTORY, 0, 2u << 12), S_IFDIR);
	/* S_IFMT as early ksmbd sent it */
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0, S_IFREG | 0644), S_IFREG);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0, S_IFLNK | 0777), S_IFLNK);
	CHECK_EQ(smb2_posix_file_type(FILE_ATTRIBUTE_ARCHIVE, 0, S_IFSOCK | 0755), S_IFSOCK);
}

/* One directory entry: header, info, name length, name, padded to 8 */
static size_t put_dirent(uint8_t *b, const char *name, uint32_t attrs, uint64_t ino, bool last)
{
	size_t n = 8 + put_info(b + 8, attrs, ino, 0, 1, 0, 0755, 0, 0);
	size_t nl = strlen(name);
	smb_put_le32(b + n, (uint32_t)(2 * nl));
	n += 4;
	for (size_t i = 0; i < nl; i++) {
		b[n++] = (uint8_t)name[i];
		b[n++] = 0;
	}
	size_t padded = (n + 7) & ~(size_t)7;
	memset(b + n, 0, padded - n);
	smb_put_le32(b, last ? 0 : (uint32_t)padded);
	smb_put_le32(b + 4, 0);
	return padded;
}

static void test_dirents(void)
{
	uint8_t b[512];
	size_t n1 = put_dirent(b, ".", FILE_ATTRIBUTE_DIRECTORY, 10, false);
	size_t n2 = put_dirent(b + n1, "file", FILE_ATTRIBUTE_ARCHIVE, 11, false);
	size_t n3 = put_dirent(b + n1 + n2, "dir", FILE_ATTRIBUTE_DIRECTORY, 12, true);
	uint32_t len = (uint32_t)(n1 + n2 + n3), off = 0, nl;
	struct smb2_posix_info pi;
	const uint8_t *name;
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), 1);
	CHECK(nl == 2 && name[0] == '.' && pi.inode == 10);
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), 1);
	CHECK(nl == 8 && name[0] == 'f' && pi.inode == 11 && pi.ids.mode == 0755);
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), 1);
	CHECK(nl == 6 && pi.inode == 12 && (pi.file_attributes & FILE_ATTRIBUTE_DIRECTORY));
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), 0);
	off = 0;
	CHECK_EQ(smb2_posix_dirent_next(b, 0, &off, &pi, &name, &nl), 0); /* empty */

	/* a name running past the buffer */
	off = 0;
	CHECK_EQ(smb2_posix_dirent_next(b, (uint32_t)n1 - 8, &off, &pi, &name, &nl), -EBADMSG);
	/* NextEntryOffset pointing into the entry itself, or past the end */
	smb_put_le32(b, 16);
	off = 0;
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), -EBADMSG);
	smb_put_le32(b, len);
	off = 0;
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), -EBADMSG);
	/* an odd name length */
	smb_put_le32(b, (uint32_t)n1);
	smb_put_le32(b + 8 + 112, 3);
	off = 0;
	CHECK_EQ(smb2_posix_dirent_next(b, len, &off, &pi, &name, &nl), -EBADMSG);
}

static void test_sd(void)
{
	uint8_t b[SMB2_POSIX_SD_MAX];
	uint32_t info = 0;
	/* chmod: the layout of the SMB3 POSIX spec's example */
	struct smb2_posix_sd sd = {.set_mode = true, .mode = 0666};
	ssize_t n = smb2_posix_sd_encode(b, sizeof(b), &sd, &info);
	CHECK_EQ(n, 20 + 36);
	CHECK_EQ(info, 4); /* DACL_SECURITY_INFORMATION */
	CHECK_EQ(b[0], 1);
	CHECK_EQ(smb_le16(b + 2), 0x8004);
	CHECK_EQ(smb_le32(b + 4), 0);  /* no owner */
	CHECK_EQ(smb_le32(b + 8), 0);  /* no group */
	CHECK_EQ(smb_le32(b + 12), 0); /* no SACL */
	CHECK_EQ(smb_le32(b + 16), 20);
	CHECK_EQ(b[20], 2);             /* AclRevision */
	CHECK_EQ(smb_le16(b + 22), 36); /* AclSize */
	CHECK_EQ(smb_le16(b + 24), 1);  /* AceCount */
	CHECK_EQ(b[28], 0);             /* ACCESS_ALLOWED */
	CHECK_EQ(smb_le16(b + 30), 28); /* AceSize */
	CHECK_EQ(smb_le32(b + 32), 0);  /* Mask */
	CHECK(b[36] == 1 && b[37] == 3 && b[43] == 5);
	CHECK_EQ(smb_le32(b + 44), 88);
	CHECK_EQ(smb_le32(b + 48), 3);
	CHECK_EQ(smb_le32(b + 52), 0666); /* S-1-5-88-3-438 */

	/* chown + chgrp with the mode kept */
	sd = (struct smb2_posix_sd){.set_mode = true,
	                            .mode = 0640,
	                            .set_uid = true,
	                            .uid = 1001,
	                            .set_gid = true,
	                            .gid = 1002};
	n = smb2_posix_sd_encode(b, sizeof(b), &sd, &info);
	CHECK_EQ(n, 20 + 36 + 16 + 16);
	CHECK_EQ(info, 7);
	CHECK_EQ(smb_le32(b + 4), 56);
	CHECK_EQ(smb_le32(b + 8), 72);
	struct smb2_sid s;
	size_t used;
	CHECK_EQ(smb2_sid_decode(b + 56, 16, &s, &used), 0);
	CHECK_EQ(smb2_sid_unix_id(&s, false), 1001);
	CHECK_EQ(smb2_sid_decode(b + 72, 16, &s, &used), 0);
	CHECK_EQ(smb2_sid_unix_id(&s, true), 1002);

	/* the owner as a given SID (a server's domain SID) */
	struct smb2_sid dom = {.revision = 1, .nsub = 5, .authority = 5, .sub = {21, 1, 2, 3, 7}};
	sd = (struct smb2_posix_sd){.set_uid = true, .owner_sid = &dom};
	n = smb2_posix_sd_encode(b, sizeof(b), &sd, &info);
	CHECK_EQ(n, 20 + 28);
	CHECK_EQ(info, 1);
	CHECK_EQ(smb_le16(b + 2), 0x8000);
	CHECK_EQ(smb_le32(b + 16), 0);
	CHECK_EQ(smb_le32(b + 20 + 24), 7);

	sd = (struct smb2_posix_sd){0};
	CHECK_EQ(smb2_posix_sd_encode(b, sizeof(b), &sd, &info), -EINVAL);
	sd.set_mode = true;
	for (size_t cap = 0; cap < 56; cap++)
		CHECK_EQ(smb2_posix_sd_encode(b, cap, &sd, &info), -ENOSPC);
}

int main(void)
{
	RUN(test_sid);
	RUN(test_create_ctx);
	RUN(test_info);
	RUN(test_file_type);
	RUN(test_dirents);
	RUN(test_sd);
	return check_report();
}
