/* fuse/inode.c — nodeid and (parent, name) maps, nlookup counts, attribute
 * cache.  See inode.h for the rules and the lock. */
#include "fuse/inode.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_BYTES (32 * 1024)

struct smb_inode {
	uint64_t nodeid;
	uint64_t nlookup;         /* entries handed to the kernel minus forgets */
	uint64_t nchildren;       /* inodes whose parent is this one */
	struct smb_inode *parent; /* NULL only for the root */
	char *name;               /* for the root: the prefix inside the share */
	bool hashed;              /* (parent, name) is in the name map */
	uint64_t name_hash;
	struct smb_inode *id_next;
	struct smb_inode *name_next;
	bool have_attr;
	uint64_t fresh_until_ns;
	struct smb_attr attr;
};

struct smb_inode_table {
	pthread_mutex_t lock; /* guards everything below and every inode */
	uint64_t attr_timeout_ns;
	uint64_t next_nodeid;
	uint64_t count;
	size_t nbuckets; /* power of two, same for both maps */
	struct smb_inode **by_id;
	struct smb_inode **by_name;
	struct smb_inode *root;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t name_hash(uint64_t parent, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return mix64(h ^ mix64(parent));
}

static struct smb_inode *find_id(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i = t->by_id[mix64(nodeid) & (t->nbuckets - 1)];

	while (i && i->nodeid != nodeid)
		i = i->id_next;
	return i;
}

static struct smb_inode *find_name(struct smb_inode_table *t, uint64_t parent, const char *name)
{
	uint64_t h = name_hash(parent, name);
	struct smb_inode *i = t->by_name[h & (t->nbuckets - 1)];

	for (; i; i = i->name_next)
		if (i->name_hash == h && i->parent->nodeid == parent && strcmp(i->name, name) == 0)
			return i;
	return NULL;
}

static void id_insert(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **b = &t->by_id[mix64(i->nodeid) & (t->nbuckets - 1)];

	i->id_next = *b;
	*b = i;
}

static void id_remove(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **pp = &t->by_id[mix64(i->nodeid) & (t->nbuckets - 1)];

	while (*pp != i)
		pp = &(*pp)->id_next;
	*pp = i->id_next;
}

static void name_insert(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **b;

	i->name_hash = name_hash(i->parent->nodeid, i->name);
	b = &t->by_name[i->name_hash & (t->nbuckets - 1)];
	i->name_next = *b;
	*b = i;
	i->hashed = true;
}

static void name_remove(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **pp;

	if (!i->hashed)
		return;
	pp = &t->by_name[i->name_hash & (t->nbuckets - 1)];
	while (*pp != i)
		pp = &(*pp)->name_next;
	*pp = i->name_next;
	i->name_next = NULL;
	i->hashed = false;
}

/* Double both maps; on allocation failure keep the old size (chains just
 * get longer). */
static void maybe_grow(struct smb_inode_table *t)
{
	size_t n = t->nbuckets * 2;
	struct smb_inode **by_id, **by_name;

	if (t->count <= t->nbuckets)
		return;
	by_id = calloc(n, sizeof(*by_id));
	by_name = calloc(n, sizeof(*by_name));
	if (!by_id || !by_name) {
		free(by_id);
		free(by_name);
		return;
	}
	for (size_t b = 0; b < t->nbuckets; b++) {
		struct smb_inode *i, *next;
		for (i = t->by_id[b]; i; i = next) {
			next = i->id_next;
			i->id_next = by_id[mix64(i->nodeid) & (n - 1)];
			by_id[mix64(i->nodeid) & (n - 1)] = i;
		}
		for (i = t->by_name[b]; i; i = next) {
			next = i->name_next;
			i->name_next = by_name[i->name_hash & (n - 1)];
			by_name[i->name_hash & (n - 1)] = i;
		}
	}
	free(t->by_id);
	free(t->by_name);
	t->by_id = by_id;
	t->by_name = by_name;
	t->nbuckets = n;
}

struct smb_inode_table *smb_inode_table_new(const char *root_prefix, uint64_t attr_timeout_ns)
{
	struct smb_inode_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nbuckets = 64;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_name = calloc(t->nbuckets, sizeof(*t->by_name));
	t->root = calloc(1, sizeof(*t->root));
	if (!t->by_id || !t->by_name || !t->root)
		goto fail;
	t->root->name = strdup(root_prefix ? root_prefix : "");
	if (!t->root->name)
		goto fail;
	pthread_mutex_init(&t->lock, NULL);
	t->attr_timeout_ns = attr_timeout_ns;
	t->root->nodeid = SMB_ROOT_NODEID;
	t->root->nlookup = 1;
	t->next_nodeid = SMB_ROOT_NODEID + 1;
	id_insert(t, t->root);
	t->count = 1;
	return t;
fail:
	if (t->root)
		free(t->root->name);
	free(t->root);
	free(t->by_id);
	free(t->by_name);
	free(t);
	return NULL;
}

void smb_inode_table_free(struct smb_inode_table *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < t->nbuckets; b++) {
		struct smb_inode *i, *next;
		for (i = t->by_id[b]; i; i = next) {
			next = i->id_next;
			free(i->name);
			free(i);
		}
	}
	free(t->by_id);
	free(t->by_name);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Free i, then each ancestor it was the last reason to keep. */
static void release_if_unused(struct smb_inode_table *t, struct smb_inode *i)
{
	while (i && i != t->root && i->nlookup == 0 && i->nchildren == 0) {
		struct smb_inode *parent = i->parent;
		name_remove(t, i);
		id_remove(t, i);
		free(i->name);
		free(i);
		t->count--;
		parent->nchildren--;
		i = parent;
	}
}

static bool same_file(const struct smb_inode *i, const struct smb_attr *attr)
{
	if (!i->have_attr)
		return true;
	if (i->attr.file_id && attr->file_id && i->attr.file_id != attr->file_id)
		return false;
	return ((i->attr.file_attributes ^ attr->file_attributes) & FILE_ATTRIBUTE_DIRECTORY) == 0;
}

static uint64_t st_ino_of(const struct smb_inode *i)
{
	return i->have_attr && i->attr.file_id ? i->attr.file_id : i->nodeid;
}

static void store_attr(struct smb_inode_table *t, struct smb_inode *i, const struct smb_attr *attr,
                       uint64_t now_ns)
{
	i->attr = *attr;
	i->have_attr = true;
	i->fresh_until_ns = now_ns + t->attr_timeout_ns;
}

int smb_inode_link(struct smb_inode_table *t, uint64_t parent, const char *name,
                   const struct smb_attr *attr, uint64_t now_ns, uint64_t *nodeid, uint64_t *st_ino)
{
	struct smb_inode *p, *i;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	p = find_id(t, parent);
	if (!p) {
		rc = -ENOENT;
		goto out;
	}
	i = find_name(t, parent, name);
	if (i && !same_file(i, attr)) {
		name_remove(t, i);
		i = NULL;
	}
	if (!i) {
		i = calloc(1, sizeof(*i));
		if (!i || !(i->name = strdup(name))) {
			free(i);
			rc = -ENOMEM;
			goto out;
		}
		i->nodeid = t->next_nodeid++;
		i->parent = p;
		p->nchildren++;
		id_insert(t, i);
		name_insert(t, i);
		t->count++;
		maybe_grow(t);
	}
	i->nlookup++;
	store_attr(t, i, attr, now_ns);
	*nodeid = i->nodeid;
	*st_ino = st_ino_of(i);
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void smb_inode_forget(struct smb_inode_table *t, uint64_t nodeid, uint64_t n)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root) {
		i->nlookup = n < i->nlookup ? i->nlookup - n : 0;
		release_if_unused(t, i);
	}
	pthread_mutex_unlock(&t->lock);
}

int smb_inode_path(struct smb_inode_table *t, uint64_t nodeid, const char *child, char **path)
{
	struct smb_inode *i, *start;
	size_t len = child ? strlen(child) + 1 : 0;
	char *buf, *end;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	start = find_id(t, nodeid);
	if (!start) {
		rc = -ENOENT;
		goto out;
	}
	/* Every component but an empty root prefix contributes "name/". */
	for (i = start; i; i = i->parent)
		len += i->name[0] ? strlen(i->name) + 1 : 0;
	if (len > PATH_MAX_BYTES) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	buf = malloc(len + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	end = buf + len;
	*end = '\0';
	if (child) {
		size_t n = strlen(child);
		end -= n;
		memcpy(end, child, n);
		*--end = '/';
	}
	for (i = start; i; i = i->parent) {
		size_t n = strlen(i->name);
		if (!n)
			continue;
		end -= n;
		memcpy(end, i->name, n);
		*--end = '/';
	}
	/* end == buf and buf[0] is the separator before the first component
	 * (or the string is empty): drop it. */
	if (len)
		memmove(buf, buf + 1, len);
	*path = buf;
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int smb_inode_get_attr(struct smb_inode_table *t, uint64_t nodeid, uint64_t now_ns,
                       struct smb_attr *attr, bool *fresh, uint64_t *st_ino)
{
	struct smb_inode *i;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (!i) {
		rc = -ENOENT;
	} else if (!i->have_attr) {
		rc = -ENODATA;
	} else {
		*attr = i->attr;
		*fresh = now_ns < i->fresh_until_ns;
		if (st_ino)
			*st_ino = st_ino_of(i);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void smb_inode_set_attr(struct smb_inode_table *t, uint64_t nodeid, const struct smb_attr *attr,
                        uint64_t now_ns)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i)
		store_attr(t, i, attr, now_ns);
	pthread_mutex_unlock(&t->lock);
}

void smb_inode_invalidate_attr(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i)
		i->fresh_until_ns = 0;
	pthread_mutex_unlock(&t->lock);
}

void smb_inode_dir_changed(struct smb_inode_table *t, uint64_t nodeid, uint64_t now_ns)
{
	struct smb_inode *i;
	/* NT time: 100 ns units since 1601. */
	uint64_t nt = now_ns / 100 + SMB_NT_EPOCH_DELTA * 10000000ULL;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i) {
		i->attr.last_write_time = nt;
		i->attr.change_time = nt;
	}
	pthread_mutex_unlock(&t->lock);
}

uint64_t smb_inode_st_ino(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;
	uint64_t ino = 0;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i)
		ino = st_ino_of(i);
	pthread_mutex_unlock(&t->lock);
	return ino;
}

void smb_inode_unlink(struct smb_inode_table *t, uint64_t parent, const char *name)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_name(t, parent, name);
	if (i)
		name_remove(t, i);
	pthread_mutex_unlock(&t->lock);
}

int smb_inode_rename(struct smb_inode_table *t, uint64_t oldparent, const char *oldname,
                     uint64_t newparent, const char *newname)
{
	struct smb_inode *src, *dst, *np, *op;
	char *name;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	src = find_name(t, oldparent, oldname);
	dst = find_name(t, newparent, newname);
	if (dst && dst != src)
		name_remove(t, dst);
	if (!src || src == dst)
		goto out;
	np = find_id(t, newparent);
	name = np ? strdup(newname) : NULL;
	name_remove(t, src);
	if (!name) {
		/* src keeps its old name, off the map: a later lookup makes a
		 * fresh inode for whichever name the server has. */
		rc = np ? -ENOMEM : 0;
		goto out;
	}
	op = src->parent;
	free(src->name);
	src->name = name;
	src->parent = np;
	np->nchildren++;
	op->nchildren--;
	name_insert(t, src);
	release_if_unused(t, op);
out:
	pthread_mutex_unlock(&t->lock);
	return rc;
}

uint64_t smb_inode_nlookup(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;
	uint64_t n = 0;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i)
		n = i->nlookup;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t smb_inode_find(struct smb_inode_table *t, uint64_t parent, const char *name)
{
	struct smb_inode *i;
	uint64_t nodeid = 0;

	pthread_mutex_lock(&t->lock);
	i = find_name(t, parent, name);
	if (i)
		nodeid = i->nodeid;
	pthread_mutex_unlock(&t->lock);
	return nodeid;
}

uint64_t smb_inode_count(struct smb_inode_table *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
