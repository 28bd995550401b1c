/* tests/unit/fuse/test_inode.c — nodeids, nlookup counts, paths, renames,
 * the attribute cache. */
#include <errno.h>
#include <stdlib.h>

#include "fuse/inode.h"
#include "tests/unit/check.h"

#define SEC 1000000000ull

static struct smb_attr file_attr(uint64_t file_id)
{
	struct smb_attr a = {.file_id = file_id, .end_of_file = 42};
	return a;
}

static struct smb_attr dir_attr(uint64_t file_id)
{
	struct smb_attr a = {.file_id = file_id, .file_attributes = FILE_ATTRIBUTE_DIRECTORY};
	return a;
}

static uint64_t link_(struct smb_inode_table *t, uint64_t parent, const char *name,
                      struct smb_attr a)
{
	uint64_t nodeid = 0, st_ino = 0;

	CHECK_EQ(smb_inode_link(t, parent, name, &a, 0, &nodeid, &st_ino), 0);
	return nodeid;
}

static void check_path(struct smb_inode_table *t, uint64_t nodeid, const char *child,
                       const char *want)
{
	char *p = NULL;

	CHECK_EQ(smb_inode_path(t, nodeid, child, &p), 0);
	if (p && strcmp(p, want) != 0) {
		fprintf(stderr, "  path of %llu + %s: '%s', want '%s'\n",
		        (unsigned long long)nodeid, child ? child : "(none)", p, want);
		CHECK(strcmp(p, want) == 0);
	}
	free(p);
}

static void test_lookup_counts(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t a, a2, b;

	a = link_(t, SMB_ROOT_NODEID, "a", file_attr(100));
	CHECK(a > SMB_ROOT_NODEID);
	a2 = link_(t, SMB_ROOT_NODEID, "a", file_attr(100));
	CHECK_EQ(a2, a);
	CHECK_EQ(smb_inode_nlookup(t, a), 2);
	b = link_(t, SMB_ROOT_NODEID, "b", file_attr(101));
	CHECK(b != a);
	CHECK_EQ(smb_inode_count(t), 3);

	CHECK(smb_inode_forget(t, a, 1));
	CHECK_EQ(smb_inode_nlookup(t, a), 1);
	CHECK(smb_inode_forget(t, a, 1));
	CHECK_EQ(smb_inode_nlookup(t, a), 0);
	CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, "a"), 0);
	CHECK_EQ(smb_inode_count(t), 2);
	/* forgetting an unknown or the root does nothing */
	CHECK(smb_inode_forget(t, a, 5));
	CHECK(smb_inode_forget(t, SMB_ROOT_NODEID, 5));
	/* more forgets than lookups: reported, clamped to 0, the inode freed */
	CHECK_EQ(smb_inode_nlookup(t, b), 1);
	CHECK(!smb_inode_forget(t, b, 3));
	CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, "b"), 0);
	CHECK_EQ(smb_inode_nlookup(t, SMB_ROOT_NODEID), 1);
	/* nodeids are not reused */
	CHECK(link_(t, SMB_ROOT_NODEID, "a", file_attr(100)) > b);
	/* unknown parent */
	struct smb_attr fa = file_attr(1);
	uint64_t n, ino;
	CHECK_EQ(smb_inode_link(t, 9999, "x", &fa, 0, &n, &ino), -ENOENT);
	smb_inode_table_free(t);
}

static void test_paths(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t d, e, f;
	char *p;

	check_path(t, SMB_ROOT_NODEID, NULL, "");
	check_path(t, SMB_ROOT_NODEID, "x", "x");
	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	e = link_(t, d, "e", dir_attr(2));
	f = link_(t, e, "f", file_attr(3));
	check_path(t, f, NULL, "d/e/f");
	check_path(t, e, "new", "d/e/new");
	CHECK_EQ(smb_inode_path(t, 12345, NULL, &p), -ENOENT);
	/* the directory a path goes through, for ParentLeaseKey */
	CHECK_EQ(smb_inode_parent(t, f), e);
	CHECK_EQ(smb_inode_parent(t, e), d);
	CHECK_EQ(smb_inode_parent(t, d), SMB_ROOT_NODEID);
	CHECK_EQ(smb_inode_parent(t, SMB_ROOT_NODEID), 0);
	CHECK_EQ(smb_inode_parent(t, 12345), 0);
	smb_inode_table_free(t);

	t = smb_inode_table_new("sub/dir", SEC);
	check_path(t, SMB_ROOT_NODEID, NULL, "sub/dir");
	check_path(t, SMB_ROOT_NODEID, "x", "sub/dir/x");
	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	check_path(t, d, "y", "sub/dir/d/y");
	smb_inode_table_free(t);
}

static void test_rename_subtree(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t a, b, c, x, other;

	a = link_(t, SMB_ROOT_NODEID, "a", dir_attr(1));
	b = link_(t, a, "b", dir_attr(2));
	c = link_(t, b, "c", file_attr(3));
	x = link_(t, SMB_ROOT_NODEID, "x", dir_attr(4));
	other = link_(t, x, "b2", file_attr(5)); /* will be replaced */

	CHECK_EQ(smb_inode_rename(t, a, "b", x, "b2"), 0);
	check_path(t, b, NULL, "x/b2");
	check_path(t, c, NULL, "x/b2/c");
	CHECK_EQ(smb_inode_find(t, x, "b2"), b);
	CHECK_EQ(smb_inode_find(t, a, "b"), 0);
	/* the replaced inode left the name map but lives until forgotten */
	CHECK_EQ(smb_inode_nlookup(t, other), 1);
	check_path(t, other, NULL, "x/b2");
	smb_inode_forget(t, other, 1);
	CHECK_EQ(smb_inode_nlookup(t, other), 0);
	/* the new name resolves to the moved inode afterwards */
	CHECK_EQ(link_(t, x, "b2", dir_attr(2)), b);
	CHECK_EQ(smb_inode_nlookup(t, b), 2);
	/* renaming a name we never looked up is fine */
	CHECK_EQ(smb_inode_rename(t, a, "ghost", x, "g"), 0);
	smb_inode_table_free(t);
}

static void test_parent_kept_alive(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t d, f;

	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	f = link_(t, d, "f", file_attr(2));
	/* the kernel forgets the directory while the file is still known */
	smb_inode_forget(t, d, 1);
	CHECK_EQ(smb_inode_count(t), 3);
	check_path(t, f, NULL, "d/f");
	/* a fresh lookup of d finds the same inode */
	CHECK_EQ(link_(t, SMB_ROOT_NODEID, "d", dir_attr(1)), d);
	smb_inode_forget(t, d, 1);
	smb_inode_forget(t, f, 1);
	CHECK_EQ(smb_inode_count(t), 1); /* both gone, root stays */
	smb_inode_table_free(t);
}

static void test_unlink_and_replace(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t f, g, h;

	f = link_(t, SMB_ROOT_NODEID, "f", file_attr(10));
	smb_inode_unlink(t, SMB_ROOT_NODEID, "f");
	CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, "f"), 0);
	CHECK_EQ(smb_inode_nlookup(t, f), 1);
	g = link_(t, SMB_ROOT_NODEID, "f", file_attr(11));
	CHECK(g != f);
	/* same name, another server file id: another inode */
	h = link_(t, SMB_ROOT_NODEID, "f", file_attr(12));
	CHECK(h != g);
	/* same name, now a directory: another inode */
	CHECK(link_(t, SMB_ROOT_NODEID, "f", dir_attr(12)) != h);
	smb_inode_table_free(t);
}

/* Two names of one server file are one inode (one nodeid, one st_ino):
 * the kernel then sees link(2) raise the link count of the name it had. */
static void test_hard_links(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t d, e, a, b, c, n, ino;
	struct smb_attr two = file_attr(500), got;
	bool fresh;

	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	e = link_(t, SMB_ROOT_NODEID, "e", dir_attr(2));
	a = link_(t, d, "a", file_attr(500));
	two.nlink = 2;
	CHECK_EQ(smb_inode_link(t, e, "b", &two, 0, &b, &ino), 0);
	CHECK_EQ(b, a);
	CHECK_EQ(ino, 500);
	CHECK_EQ(smb_inode_nlookup(t, a), 2);
	CHECK_EQ(smb_inode_find(t, d, "a"), a);
	CHECK_EQ(smb_inode_find(t, e, "b"), a);
	CHECK_EQ(smb_inode_count(t), 4);
	/* paths use the name seen last */
	check_path(t, a, NULL, "e/b");
	CHECK_EQ(link_(t, d, "a", file_attr(500)), a);
	check_path(t, a, NULL, "d/a");
	/* a listing (no link count) keeps the count we knew */
	CHECK_EQ(link_(t, d, "a", file_attr(500)), a);
	CHECK_EQ(smb_inode_get_attr(t, a, 0, &got, &fresh, NULL), 0);
	CHECK_EQ(got.nlink, 2);
	/* unlink of one name: the other still works, the count drops and
	 * is stale */
	smb_inode_unlink(t, d, "a");
	CHECK_EQ(smb_inode_find(t, d, "a"), 0);
	check_path(t, a, NULL, "e/b");
	CHECK_EQ(smb_inode_get_attr(t, a, 0, &got, &fresh, NULL), 0);
	CHECK_EQ(got.nlink, 1);
	CHECK(!fresh);
	/* link again, rename one name: the other is untouched */
	c = link_(t, d, "c", file_attr(500));
	CHECK_EQ(c, a);
	CHECK_EQ(smb_inode_rename(t, d, "c", SMB_ROOT_NODEID, "top"), 0);
	CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, "top"), a);
	CHECK_EQ(smb_inode_find(t, e, "b"), a);
	check_path(t, a, NULL, "top");
	smb_inode_unlink(t, SMB_ROOT_NODEID, "top");
	check_path(t, a, NULL, "e/b");
	/* the last name goes: the inode keeps it for paths, but is not
	 * found by its file id any more (the server may reuse the id) */
	smb_inode_unlink(t, e, "b");
	check_path(t, a, NULL, "e/b");
	n = link_(t, d, "new", file_attr(500));
	CHECK(n != a);
	/* forgetting frees the inode, and directories only it kept */
	smb_inode_forget(t, d, 1);
	smb_inode_forget(t, e, 1);
	CHECK_EQ(smb_inode_count(t), 5);
	smb_inode_forget(t, a, 5);
	CHECK_EQ(smb_inode_count(t), 3); /* root, d (kept by new), new */
	smb_inode_forget(t, n, 1);
	CHECK_EQ(smb_inode_count(t), 1);
	smb_inode_table_free(t);
}

/* A name hidden and delete-pending while the file is open: the server's
 * counts may or may not include it, and the count kept decides within the
 * range [n - hidden, n] until the last handle closes. */
static void test_hidden_name_counts(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	struct smb_attr a = file_attr(700), got;
	bool fresh;
	uint64_t f;

	a.nlink = 2;
	f = link_(t, SMB_ROOT_NODEID, "a", a);
	CHECK_EQ(link_(t, SMB_ROOT_NODEID, "b", a), f);
	/* "a" moved out of sight and marked: one name less */
	smb_inode_unlink(t, SMB_ROOT_NODEID, "a");
	CHECK(!smb_inode_has_hidden_names(t, f));
	smb_inode_name_hidden(t, f);
	CHECK(smb_inode_has_hidden_names(t, f));
	CHECK_EQ(smb_inode_nlink(t, f, 2), 1);
	/* asked by "b", the server counts the hidden name: 1 is kept */
	smb_inode_set_attr(t, f, &a, 0);
	CHECK_EQ(smb_inode_get_attr(t, f, 0, &got, &fresh, NULL), 0);
	CHECK_EQ(got.nlink, 1);
	CHECK_EQ(smb_inode_nlink(t, f, 2), 1);
	/* a link made meanwhile: 3 with the hidden name, so at least 2 */
	a.nlink = 3;
	CHECK_EQ(link_(t, SMB_ROOT_NODEID, "c", a), f);
	CHECK_EQ(smb_inode_nlink(t, f, 3), 2);
	/* a server that leaves it out: 2, in range, and kept */
	a.nlink = 2;
	smb_inode_set_attr(t, f, &a, 0);
	CHECK_EQ(smb_inode_nlink(t, f, 2), 2);
	/* another client unlinked "c": 1 is the truth, whatever we kept */
	a.nlink = 1;
	smb_inode_set_attr(t, f, &a, 0);
	CHECK_EQ(smb_inode_nlink(t, f, 1), 1);
	/* a listing (no count) changes nothing */
	a.nlink = 0;
	smb_inode_set_attr(t, f, &a, 0);
	CHECK_EQ(smb_inode_nlink(t, f, 0), 0);
	/* the last handle closed: the server's count is the truth again */
	smb_inode_handles_closed(t, f);
	CHECK(!smb_inode_has_hidden_names(t, f));
	a.nlink = 3;
	smb_inode_set_attr(t, f, &a, 0);
	CHECK_EQ(smb_inode_nlink(t, f, 3), 3);
	CHECK_EQ(smb_inode_get_attr(t, f, 0, &got, &fresh, NULL), 0);
	CHECK_EQ(got.nlink, 3);
	smb_inode_table_free(t);
}

/* A file with names in two directories: forgetting it frees both
 * directories when nothing else holds them. */
static void test_hard_link_release(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t d, e, f;

	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	e = link_(t, SMB_ROOT_NODEID, "e", dir_attr(2));
	f = link_(t, d, "f", file_attr(9));
	CHECK_EQ(link_(t, e, "g", file_attr(9)), f);
	CHECK_EQ(link_(t, d, "h", file_attr(9)), f);
	smb_inode_forget(t, d, 1);
	smb_inode_forget(t, e, 1);
	CHECK_EQ(smb_inode_count(t), 4);
	smb_inode_forget(t, f, 3);
	CHECK_EQ(smb_inode_count(t), 1);
	smb_inode_table_free(t);
}

/* Another client renamed a directory: the new name is the same inode and
 * the old name goes (a directory has one name). */
static void test_dir_moved_elsewhere(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t d, f;

	d = link_(t, SMB_ROOT_NODEID, "old", dir_attr(7));
	f = link_(t, d, "f", file_attr(8));
	CHECK_EQ(link_(t, SMB_ROOT_NODEID, "new", dir_attr(7)), d);
	CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, "old"), 0);
	check_path(t, f, NULL, "new/f");
	/* a file and a directory with one id are never one inode */
	CHECK(link_(t, SMB_ROOT_NODEID, "file7", file_attr(7)) != d);
	smb_inode_table_free(t);
}

static void test_attr_cache(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", 2 * SEC);
	struct smb_attr a = file_attr(77), got;
	uint64_t n, ino, st_ino;
	bool fresh;

	CHECK_EQ(smb_inode_get_attr(t, SMB_ROOT_NODEID, 0, &got, &fresh, NULL), -ENODATA);
	CHECK_EQ(smb_inode_link(t, SMB_ROOT_NODEID, "f", &a, 10 * SEC, &n, &ino), 0);
	CHECK_EQ(ino, 77);
	CHECK_EQ(smb_inode_get_attr(t, n, 11 * SEC, &got, &fresh, &st_ino), 0);
	CHECK(fresh);
	CHECK_EQ(got.end_of_file, 42);
	CHECK_EQ(st_ino, 77);
	CHECK_EQ(smb_inode_get_attr(t, n, 12 * SEC, &got, &fresh, NULL), 0);
	CHECK(!fresh);
	a.end_of_file = 43;
	smb_inode_set_attr(t, n, &a, 12 * SEC);
	CHECK_EQ(smb_inode_get_attr(t, n, 13 * SEC, &got, &fresh, NULL), 0);
	CHECK(fresh);
	CHECK_EQ(got.end_of_file, 43);
	smb_inode_invalidate_attr(t, n);
	CHECK_EQ(smb_inode_get_attr(t, n, 13 * SEC, &got, &fresh, NULL), 0);
	CHECK(!fresh);
	CHECK_EQ(smb_inode_get_attr(t, 4242, 0, &got, &fresh, NULL), -ENOENT);
	/* no server id: st_ino falls back to the nodeid */
	struct smb_attr noid = file_attr(0);
	CHECK_EQ(smb_inode_link(t, SMB_ROOT_NODEID, "g", &noid, 0, &n, &ino), 0);
	CHECK_EQ(ino, n);
	CHECK_EQ(smb_inode_st_ino(t, n), n);
	smb_inode_table_free(t);

	/* actimeo=0: never fresh */
	t = smb_inode_table_new("", 0);
	CHECK_EQ(smb_inode_link(t, SMB_ROOT_NODEID, "f", &a, 10 * SEC, &n, &ino), 0);
	CHECK_EQ(smb_inode_get_attr(t, n, 10 * SEC, &got, &fresh, NULL), 0);
	CHECK(!fresh);
	smb_inode_table_free(t);
}

static void test_many(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	uint64_t ids[5000];
	char name[32];

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ids[i] = link_(t, SMB_ROOT_NODEID, name, file_attr((uint64_t)i + 1));
	}
	CHECK_EQ(smb_inode_count(t), 5001);
	for (int i = 0; i < 5000; i += 7) {
		snprintf(name, sizeof(name), "n%d", i);
		CHECK_EQ(smb_inode_find(t, SMB_ROOT_NODEID, name), ids[i]);
	}
	for (int i = 0; i < 5000; i++)
		smb_inode_forget(t, ids[i], 1);
	CHECK_EQ(smb_inode_count(t), 1);
	smb_inode_table_free(t);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The live names under one directory (a directory lease break drops the
 * kernel's entries for them): not the gone ones, not other directories'. */
static void test_child_names(void)
{
	struct smb_inode_table *t = smb_inode_table_new("", SEC);
	char **names = NULL;
	size_t n = 99;
	uint64_t d, e;

	d = link_(t, SMB_ROOT_NODEID, "d", dir_attr(1));
	e = link_(t, SMB_ROOT_NODEID, "e", dir_attr(2));
	CHECK_EQ(smb_inode_child_names(t, d, &names, &n), 0);
	CHECK_EQ(n, 0);
	CHECK(names == NULL);
	for (int i = 0; i < 40; i++) { /* past the first growth of the array */
		char name[16];
		snprintf(name, sizeof(name), "f%02d", i);
		link_(t, d, name, file_attr(100 + (uint64_t)i));
	}
	link_(t, e, "other", file_attr(200));
	smb_inode_unlink(t, d, "f00");
	CHECK_EQ(smb_inode_rename(t, d, "f01", e, "moved"), 0);
	CHECK_EQ(smb_inode_rename(t, d, "f02", d, "renamed"), 0);
	CHECK_EQ(smb_inode_child_names(t, d, &names, &n), 0);
	CHECK_EQ(n, 38);
	if (names && n == 38) {
		qsort(names, n, sizeof(*names), cmp_name);
		CHECK(strcmp(names[0], "f03") == 0);
		CHECK(strcmp(names[36], "f39") == 0);
		CHECK(strcmp(names[37], "renamed") == 0);
	}
	smb_inode_names_free(names, n);
	CHECK_EQ(smb_inode_child_names(t, e, &names, &n), 0);
	CHECK_EQ(n, 2);
	smb_inode_names_free(names, n);
	/* a file, an unknown nodeid: none */
	CHECK_EQ(smb_inode_child_names(t, smb_inode_find(t, e, "other"), &names, &n), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(smb_inode_child_names(t, 12345, &names, &n), 0);
	CHECK_EQ(n, 0);
	smb_inode_table_free(t);
}

int main(void)
{
	RUN(test_lookup_counts);
	RUN(test_paths);
	RUN(test_rename_subtree);
	RUN(test_parent_kept_alive);
	RUN(test_unlink_and_replace);
	RUN(test_hard_links);
	RUN(test_hidden_name_counts);
	RUN(test_hard_link_release);
	RUN(test_dir_moved_elsewhere);
	RUN(test_attr_cache);
	RUN(test_many);
	RUN(test_child_names);
	return check_report();
}
