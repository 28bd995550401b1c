/* fuse/dir_names.c — the rules on names from a server's listing (dir_names.h). */
#include "fuse/dir_names.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dir_name_verdict_str(enum dir_name_verdict v)
{
	switch (v) {
	case DIR_NAME_OK:
		return "ok";
	case DIR_NAME_EMPTY:
		return "empty";
	case DIR_NAME_SLASH:
		return "holding '/'";
	case DIR_NAME_BACKSLASH:
		return "holding '\\'";
	case DIR_NAME_TOO_LONG:
		return "longer than NAME_MAX";
	case DIR_NAME_DOT:
		return "a second . or ..";
	case DIR_NAME_DUPLICATE:
		return "listed twice";
	case DIR_NAME_VERDICTS:
		break;
	}
	return "?";
}

static enum dir_name_verdict name_check(const char *name, bool backslash_ok)
{
	size_t len = strlen(name);

	if (len == 0)
		return DIR_NAME_EMPTY;
	if (memchr(name, '/', len))
		return DIR_NAME_SLASH;
	if (!backslash_ok && memchr(name, '\\', len))
		return DIR_NAME_BACKSLASH;
	if (len > DIR_NAME_MAX)
		return DIR_NAME_TOO_LONG;
	return DIR_NAME_OK;
}

enum dir_name_verdict dir_name_check(const char *name)
{
	return name_check(name, false);
}

enum dir_name_verdict dir_name_check_posix(const char *name)
{
	return name_check(name, true);
}

/* ---- the set of a listing's names -------------------------------------------- */

static size_t name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3u;
	return (size_t)(h ^ (h >> 32));
}

bool dir_name_set_has(const struct dir_name_set *s, const char *name)
{
	if (!s->slots)
		return false;
	for (size_t i = name_hash(name) & s->mask; s->slots[i]; i = (i + 1) & s->mask)
		if (strcmp(s->slots[i], name) == 0)
			return true;
	return false;
}

static void slot_put(const char **slots, size_t mask, const char *name)
{
	size_t i = name_hash(name) & mask;
	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = name;
}

int dir_name_set_add(struct dir_name_set *s, const char *name)
{
	/* Keep at most half the slots used, so probes stay short. */
	if (!s->slots || (s->used + 1) * 2 > s->mask + 1) {
		size_t n = s->slots ? (s->mask + 1) * 2 : 64;
		const char **slots = calloc(n, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; s->slots && i <= s->mask; i++)
			if (s->slots[i])
				slot_put(slots, n - 1, s->slots[i]);
		free(s->slots);
		s->slots = slots;
		s->mask = n - 1;
	}
	slot_put(s->slots, s->mask, name);
	s->used++;
	return 0;
}

void dir_name_set_free(struct dir_name_set *s)
{
	free(s->slots);
	*s = (struct dir_name_set){0};
}

/* ---- what a listing dropped ------------------------------------------------- */

/* name as a C-like quoted string into out (always terminated), cut to fit. */
static void quote(const char *name, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	out[o++] = '"';
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		char esc[4];
		size_t n = 0;
		if (*p == '"' || *p == '\\') {
			esc[n++] = '\\';
			esc[n++] = (char)*p;
		} else if (*p >= 0x20 && *p < 0x7f) {
			esc[n++] = (char)*p;
		} else {
			esc[n++] = '\\';
			esc[n++] = 'x';
			esc[n++] = hex[*p >> 4];
			esc[n++] = hex[*p & 15];
		}
		/* room for this, and for `..."` and the NUL after it */
		if (o + n + 5 > cap) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o++] = '"';
	out[o] = '\0';
}

void dir_drops_note(struct dir_drops *d, const char *name, enum dir_name_verdict why)
{
	if (why <= DIR_NAME_OK || why >= DIR_NAME_VERDICTS)
		return;
	if (d->total < UINT_MAX)
		d->total++;
	if (d->shown < DIR_DROPS_SHOWN) {
		d->why[d->shown] = why;
		quote(name, d->names[d->shown++], sizeof(d->names[0]));
	} else if (d->more_by[why] < UINT_MAX) {
		d->more_by[why]++;
	}
}

int dir_drops_format(const struct dir_drops *d, char *buf, size_t cap)
{
	size_t o = 0;
	int total = 0;

	/* Appends as snprintf would, keeping buf terminated. */
#define PUT(...)                                                     \
	do {                                                         \
		int n_ = snprintf(buf + o, cap - o, __VA_ARGS__);    \
		if (n_ < 0)                                          \
			return n_;                                   \
		total += n_;                                         \
		o = (size_t)n_ < cap - o ? o + (size_t)n_ : cap - 1; \
	} while (0)
	buf[0] = '\0';
	PUT("%u %s", d->total, d->total == 1 ? "entry" : "entries");
	for (unsigned i = 0; i < d->shown; i++)
		PUT("%s%s (%s)", i ? ", " : ": ", d->names[i], dir_name_verdict_str(d->why[i]));
	if (d->total > d->shown) {
		const char *sep = " (";
		PUT(", and %u more", d->total - d->shown);
		for (int v = DIR_NAME_OK + 1; v < DIR_NAME_VERDICTS; v++) {
			if (!d->more_by[v])
				continue;
			PUT("%s%u %s", sep, d->more_by[v],
			    dir_name_verdict_str((enum dir_name_verdict)v));
			sep = ", ";
		}
		PUT(")");
	}
#undef PUT
	return total;
}

/* ---- rate limit ------------------------------------------------------------- */

bool dir_log_allow(struct dir_log_limit *l, uint64_t now_ns, uint64_t window_ns, unsigned burst,
                   unsigned *suppressed)
{
	if (l->in_window == 0 || now_ns - l->window_start_ns >= window_ns) {
		l->window_start_ns = now_ns;
		l->in_window = 0;
	}
	if (l->in_window >= burst) {
		if (l->suppressed < UINT_MAX)
			l->suppressed++;
		return false;
	}
	l->in_window++;
	*suppressed = l->suppressed;
	l->suppressed = 0;
	return true;
}

bool dir_fold_plain(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > DIR_NAME_MAX || name[n - 1] == '.' || name[n - 1] == ' ')
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p > 0x7e || *p < 0x20 || strchr("~:*?\"<>|\\/", *p))
			return false;
	return true;
}

/* name folded into buf (DIR_NAME_MAX + 1 bytes): false if it has a byte
 * over 0x7f (or is too long). */
static bool fold(const char *name, char *buf)
{
	size_t i = 0;
	for (; name[i]; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c > 0x7f || i == DIR_NAME_MAX)
			return false;
		buf[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	buf[i] = '\0';
	return true;
}

int dir_fold_add(struct dir_fold_set *s, const char *name)
{
	char buf[DIR_NAME_MAX + 1];
	if (s->unsure)
		return 0;
	if (!fold(name, buf)) {
		s->unsure = true;
		return 0;
	}
	if (dir_name_set_has(&s->set, buf))
		return 0;
	char *copy = strdup(buf);
	if (!copy || dir_name_set_add(&s->set, copy) < 0) {
		free(copy);
		s->unsure = true;
		return -ENOMEM;
	}
	return 0;
}

bool dir_fold_may_have(const struct dir_fold_set *s, const char *name)
{
	char buf[DIR_NAME_MAX + 1];
	return s->unsure || !fold(name, buf) || dir_name_set_has(&s->set, buf);
}

void dir_fold_free(struct dir_fold_set *s)
{
	for (size_t i = 0; s->set.slots && i <= s->set.mask; i++)
		free((char *)s->set.slots[i]);
	dir_name_set_free(&s->set);
	s->unsure = false;
}
