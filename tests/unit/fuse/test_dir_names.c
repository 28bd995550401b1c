/* tests/unit/fuse/test_dir_names.c — which names of a server's listing reach
 * the kernel, the one log line about the others, and its rate limit. */
#include <errno.h>
#include <stdlib.h>

#include "fuse/dir_names.h"
#include "tests/unit/check.h"

static void test_check(void)
{
	char name[DIR_NAME_MAX + 2];

	CHECK_EQ(dir_name_check("hello.txt"), DIR_NAME_OK);
	CHECK_EQ(dir_name_check("..."), DIR_NAME_OK);
	CHECK_EQ(dir_name_check(".hidden"), DIR_NAME_OK);
	CHECK_EQ(dir_name_check("a b\tc\n"), DIR_NAME_OK); /* Linux takes these */
	CHECK_EQ(dir_name_check("\xe6\x97\xa5\xe6\x9c\xac"), DIR_NAME_OK);
	/* "." and ".." are the listing's business */
	CHECK_EQ(dir_name_check("."), DIR_NAME_OK);
	CHECK_EQ(dir_name_check(".."), DIR_NAME_OK);
	CHECK_EQ(dir_name_check(""), DIR_NAME_EMPTY);
	CHECK_EQ(dir_name_check("a/b"), DIR_NAME_SLASH);
	CHECK_EQ(dir_name_check("/"), DIR_NAME_SLASH);
	CHECK_EQ(dir_name_check("../etc"), DIR_NAME_SLASH);
	CHECK_EQ(dir_name_check("a\\b"), DIR_NAME_BACKSLASH);
	/* a character of a POSIX pathname */
	CHECK_EQ(dir_name_check_posix("a\\b"), DIR_NAME_OK);
	CHECK_EQ(dir_name_check_posix("a/b"), DIR_NAME_SLASH);
	CHECK_EQ(dir_name_check_posix(""), DIR_NAME_EMPTY);

	memset(name, 'x', DIR_NAME_MAX);
	name[DIR_NAME_MAX] = '\0';
	CHECK_EQ(dir_name_check(name), DIR_NAME_OK);
	name[DIR_NAME_MAX] = 'x';
	name[DIR_NAME_MAX + 1] = '\0';
	CHECK_EQ(dir_name_check(name), DIR_NAME_TOO_LONG);
	/* bytes count, not characters: 86 three-byte characters are 258 bytes */
	char wide[3 * 86 + 1];
	for (int i = 0; i < 86; i++)
		memcpy(wide + 3 * i, "\xe6\x97\xa5", 3);
	wide[3 * 86] = '\0';
	CHECK_EQ(dir_name_check(wide), DIR_NAME_TOO_LONG);
	wide[3 * 85] = '\0';
	CHECK_EQ(dir_name_check(wide), DIR_NAME_OK);

	for (int v = 0; v <= DIR_NAME_VERDICTS; v++)
		CHECK(dir_name_verdict_str((enum dir_name_verdict)v)[0] != '\0');
}

static void test_set(void)
{
	struct dir_name_set s = {0};
	enum { N = 5000 };
	static char names[N][16];

	CHECK(!dir_name_set_has(&s, "a"));
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		CHECK(!dir_name_set_has(&s, names[i]));
		CHECK_EQ(dir_name_set_add(&s, names[i]), 0);
		CHECK(dir_name_set_has(&s, names[i]));
	}
	CHECK_EQ(s.used, N);
	CHECK(s.used * 2 <= s.mask + 1);
	for (int i = 0; i < N; i++) {
		char copy[16];
		memcpy(copy, names[i], sizeof(copy));
		CHECK(dir_name_set_has(&s, copy)); /* by content, not pointer */
	}
	CHECK(!dir_name_set_has(&s, "f5000"));
	CHECK(!dir_name_set_has(&s, "F1")); /* case matters: Samba shares can hold both */
	CHECK(!dir_name_set_has(&s, ""));
	dir_name_set_free(&s);
	CHECK(s.slots == NULL && s.used == 0);
	CHECK(!dir_name_set_has(&s, "f1"));
	CHECK_EQ(dir_name_set_add(&s, "f1"), 0);
	CHECK(dir_name_set_has(&s, "f1"));
	dir_name_set_free(&s);
	dir_name_set_free(&s);
}

static void test_drops(void)
{
	struct dir_drops d = {0};
	char line[1024];

	dir_drops_note(&d, "a/b", DIR_NAME_SLASH);
	dir_drops_note(&d, "", DIR_NAME_EMPTY);
	dir_drops_note(&d, "ok", DIR_NAME_OK); /* not a drop */
	int n = dir_drops_format(&d, line, sizeof(line));
	CHECK_EQ(n, (int)strlen(line));
	CHECK(strcmp(line, "2 entries: \"a/b\" (holding '/'), \"\" (empty)") == 0);
	fprintf(stderr, "  %s\n", line);

	dir_drops_note(&d, ".", DIR_NAME_DOT);
	dir_drops_note(&d, "dup", DIR_NAME_DUPLICATE);
	dir_drops_note(&d, "a\\\"\x01\xff", DIR_NAME_BACKSLASH);
	char longname[300];
	memset(longname, 'L', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	dir_drops_note(&d, longname, DIR_NAME_TOO_LONG);
	for (int i = 0; i < 7; i++)
		dir_drops_note(&d, "x/y", DIR_NAME_SLASH);
	dir_drops_note(&d, "again", DIR_NAME_DUPLICATE);
	CHECK_EQ(d.total, 14);
	CHECK_EQ(d.shown, DIR_DROPS_SHOWN);
	n = dir_drops_format(&d, line, sizeof(line));
	fprintf(stderr, "  %s\n", line);
	CHECK_EQ(n, (int)strlen(line));
	CHECK(
	    strncmp(line,
	            "14 entries: \"a/b\" (holding '/'), \"\" (empty), \".\" (a second . or ..), "
	            "\"dup\" (listed twice), \"a\\\\\\\"\\x01\\xff\" (holding '\\'), \"LLL",
	            strlen("14 entries: \"a/b\" (holding '/'), \"\" (empty), \".\" (a second . or "
	                   "..), \"dup\" (listed twice), \"a\\\\\\\"\\x01\\xff\" (holding '\\'), "
	                   "\"LLL")) == 0);
	CHECK(strstr(line, "LLL...\" (longer than NAME_MAX), and 8 more (7 holding '/', 1 listed "
	                   "twice)") != NULL);
	/* a quoted name is cut to its slot */
	CHECK(strlen(d.names[5]) < sizeof(d.names[5]));

	/* cut to the caller's buffer, terminated, the length still told */
	char small[20];
	memset(small, '#', sizeof(small));
	CHECK_EQ(dir_drops_format(&d, small, sizeof(small)), n);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	CHECK(strncmp(small, line, sizeof(small) - 1) == 0);
	CHECK_EQ(dir_drops_format(&d, small, 1), n);
	CHECK_EQ(small[0], '\0');
}

static void test_rate_limit(void)
{
	struct dir_log_limit l = {0};
	const uint64_t s = 1000000000u, w = 60 * s;
	unsigned sup = 99;
	uint64_t t = 5 * s;

	for (int i = 0; i < 3; i++) {
		CHECK(dir_log_allow(&l, t + (uint64_t)i, w, 3, &sup));
		CHECK_EQ(sup, 0);
	}
	for (int i = 0; i < 1000; i++)
		CHECK(!dir_log_allow(&l, t + 10 * s, w, 3, &sup));
	/* a new window: the next line says how many were left out */
	CHECK(dir_log_allow(&l, t + w, w, 3, &sup));
	CHECK_EQ(sup, 1000);
	CHECK(dir_log_allow(&l, t + w + 1, w, 3, &sup));
	CHECK_EQ(sup, 0);
}

static void test_fold(void)
{
	struct dir_fold_set s = {0};

	/* what may be answered from a set at all */
	CHECK(dir_fold_plain("Makefile"));
	CHECK(dir_fold_plain("a b.c"));
	CHECK(!dir_fold_plain(""));
	CHECK(!dir_fold_plain("PROGRA~1"));    /* an 8.3 short name */
	CHECK(!dir_fold_plain("file:stream")); /* a stream */
	CHECK(!dir_fold_plain("a*"));
	CHECK(!dir_fold_plain("trailing.")); /* Windows strips the dot */
	CHECK(!dir_fold_plain("trailing "));
	CHECK(!dir_fold_plain("caf\xc3\xa9"));
	CHECK(!dir_fold_plain("back\\slash"));

	/* an empty set lacks every name; names match without regard to case */
	CHECK(!dir_fold_may_have(&s, "x"));
	CHECK_EQ(dir_fold_add(&s, "Foo.TXT"), 0);
	CHECK_EQ(dir_fold_add(&s, "foo.txt"), 0); /* the same, once */
	CHECK(dir_fold_may_have(&s, "foo.txt"));
	CHECK(dir_fold_may_have(&s, "FOO.txt"));
	CHECK(!dir_fold_may_have(&s, "foo.tx"));
	for (int i = 0; i < 500; i++) { /* growth keeps every name */
		char n[16];
		snprintf(n, sizeof(n), "N%d", i);
		CHECK_EQ(dir_fold_add(&s, n), 0);
	}
	CHECK(dir_fold_may_have(&s, "n499"));
	CHECK(dir_fold_may_have(&s, "foo.txt"));
	CHECK(!dir_fold_may_have(&s, "n500"));
	/* a name past ASCII makes the set unsure: it lacks nothing then
	 * (U+017F upper-cases to 'S') */
	CHECK_EQ(dir_fold_add(&s, "\xc5\xbf"), 0);
	CHECK(s.unsure);
	CHECK(dir_fold_may_have(&s, "s"));
	CHECK(dir_fold_may_have(&s, "zzz"));
	dir_fold_free(&s);
	CHECK(!s.unsure);
	CHECK(!dir_fold_may_have(&s, "foo.txt"));
	dir_fold_free(&s); /* twice is fine */
}

int main(void)
{
	RUN(test_check);
	RUN(test_set);
	RUN(test_drops);
	RUN(test_rate_limit);
	RUN(test_fold);
	return check_report();
}
