/* fuse/dir_names.h — which names of a server's directory listing may reach
 * the kernel, and what a listing keeps to log the others once.
 *
 * Pure: no FUSE, no engine; ops_dir.c applies it to every entry before the
 * entry is buffered, so a dropped entry is never handed to the kernel and
 * never linked (its nlookup is never bumped).
 *
 * Why each rule: the kernel fails a whole getdents with EIO on an entry
 * whose name is empty or holds '/' (fs/readdir.c verify_dirent_name; FUSE's
 * own parse_dirfile too), and a readdirplus reply it fails part-way has
 * still linked entries into the dcache, a '/' in a dentry name included.
 * "." and ".." are made up by ops_dir.c; the server's own first pair is
 * expected and dropped silently, a second one is hostile.  A name LOOKUP
 * refuses (over NAME_MAX bytes, or holding '\\' where it separates names:
 * not in the POSIX pathnames of the SMB3 POSIX extensions;
 * smbfs_check_name()) would list a file nobody can open.  A name listed twice would make two
 * dirents. A NUL inside a name or UTF-16 that does not decode never gets here: the engine drops
 * those entries (client/ops.c dirent_name()).
 *
 * Threads: none; the caller serialises every use of one object.
 */
#ifndef SMBRDMA_FUSE_DIR_NAMES_H
#define SMBRDMA_FUSE_DIR_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest name in bytes, as lookups allow (SMBFS_NAME_MAX, the NAME_MAX
 * statfs reports). */
#define DIR_NAME_MAX 255

/* A listing fails with EFBIG once the server has sent more entries than
 * this (dropped ones count too, so that a server sending only bad names
 * ends as well).  ops_dir.c keeps a whole listing in memory while its
 * handle is open, about 150 bytes an entry: ~160 MiB at the cap (up to
 * ~400 MiB with 255-byte names).  cifs.ko and Samba's client stream a
 * listing and need no count; we buffer it, and a directory of more than a
 * million entries is rare enough that failing it clearly beats a daemon
 * that grows until the OOM killer ends it, and every mount with it. */
#define DIR_LISTING_MAX_ENTRIES (1u << 20)

enum dir_name_verdict {
	DIR_NAME_OK = 0,
	DIR_NAME_EMPTY,
	DIR_NAME_SLASH,     /* holds '/' */
	DIR_NAME_BACKSLASH, /* holds '\\', the SMB path separator */
	DIR_NAME_TOO_LONG,  /* over DIR_NAME_MAX bytes */
	DIR_NAME_DOT,       /* "." or "..", a second time in one listing */
	DIR_NAME_DUPLICATE, /* listed before in this listing */
	DIR_NAME_VERDICTS
};
/* For log lines: "empty", "holding '/'", ... */
const char *dir_name_verdict_str(enum dir_name_verdict v);

/* The verdict on a name by itself (never DIR_NAME_DOT or _DUPLICATE: "."
 * and ".." are DIR_NAME_OK here; the listing decides on those). */
enum dir_name_verdict dir_name_check(const char *name);
/* The same for the POSIX pathnames of the SMB3 POSIX extensions: a '\\'
 * is a character of a name there, not the separator. */
enum dir_name_verdict dir_name_check_posix(const char *name);

/* The names of one listing, to find a second entry of a name.  Holds
 * pointers, not copies: every name added must live until the set is
 * emptied with dir_name_set_free().  Zero-initialised is empty. */
struct dir_name_set {
	const char **slots; /* open addressing, linear probing; NULL: free */
	size_t mask;        /* slots - 1, a power of two minus one; 0 before the first add */
	size_t used;
};
bool dir_name_set_has(const struct dir_name_set *s, const char *name);
/* 0, or -ENOMEM (the set is unchanged).  name must not be in the set. */
int dir_name_set_add(struct dir_name_set *s, const char *name);
/* Empty the set and give its memory back (a rewound listing refills it). */
void dir_name_set_free(struct dir_name_set *s);

/* The names of a directory known whole (listed to its end, or made empty
 * by us, under a lease nothing broke since), folded, to answer a LOOKUP of
 * a name it lacks without asking the server.  SMB servers match names
 * without regard to case (Samba's and Windows' upper-casing tables); a
 * lookup answered "missing" here must be missing there too, so:
 *  - names are folded ASCII-wise, and a set holding a name with any byte
 *    over 0x7f is `unsure` (Unicode folding may map such a name onto an
 *    ASCII one: U+017F to 's') and answers nothing;
 *  - only a plain name is answered (dir_fold_plain()): ASCII, without what
 *    a server reads in a name (8.3 short names' '~', streams' ':',
 *    wildcards, the trailing dot or space Windows strips).
 * With the SMB3 POSIX extensions names are matched exactly; folding then
 * only answers less.  Owns copies of its names.  Zero-initialised is
 * empty.  Threads: none; the caller serialises. */
struct dir_fold_set {
	struct dir_name_set set; /* folded copies, owned */
	bool unsure;
};
/* May a lookup of name be answered from a set at all? */
bool dir_fold_plain(const char *name);
/* 0, or -ENOMEM (the set is then unsure: it answers nothing). */
int dir_fold_add(struct dir_fold_set *s, const char *name);
/* Might the directory hold name (a plain one)?  true when unsure. */
bool dir_fold_may_have(const struct dir_fold_set *s, const char *name);
void dir_fold_free(struct dir_fold_set *s);

/* What one listing dropped, for the one log line it gets. */
#define DIR_DROPS_SHOWN 6 /* names quoted in the line; the rest are counted */
struct dir_drops {
	unsigned total;
	unsigned shown; /* the first ones, quoted with their reason */
	enum dir_name_verdict why[DIR_DROPS_SHOWN];
	char names[DIR_DROPS_SHOWN][48];     /* quoted and escaped, maybe cut */
	unsigned more_by[DIR_NAME_VERDICTS]; /* the others, counted by reason */
};
void dir_drops_note(struct dir_drops *d, const char *name, enum dir_name_verdict why);
/* `2 entries: "a/b" (holding '/'), "" (empty)`, then `, and 5 more (...)`
 * if some were not shown, into buf (cap > 0; always terminated, cut to
 * fit); returns what snprintf would. */
int dir_drops_format(const struct dir_drops *d, char *buf, size_t cap);

/* At most `burst` lines in any `window_ns`; the caller keeps one per kind of
 * line, under its own lock.  Returns true to log, with *suppressed the
 * lines not logged since the last one that was. */
struct dir_log_limit {
	uint64_t window_start_ns;
	unsigned in_window, suppressed;
};
bool dir_log_allow(struct dir_log_limit *l, uint64_t now_ns, uint64_t window_ns, unsigned burst,
                   unsigned *suppressed);

#endif
