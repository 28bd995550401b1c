/* fuse/inode.c — nodeid and (parent, name) maps, nlookup counts, attribute
 * cache.  See inode.h for the rules and the lock. */
#include "fuse/inode.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_BYTES (32 * 1024)

struct smb_inode;

/* One name of an inode: (parent, name).  While hashed it is in the name
 * map; an inode whose every name is gone keeps its last one, unhashed, to
 * build paths from until it is forgotten. */
struct smb_link {
	struct smb_inode *inode;
	struct smb_inode *parent;
	char *name;
	bool hashed;
	uint64_t name_hash;
	struct smb_link *name_next; /* name map chain */
	struct smb_link *next;      /* the inode's names, the one paths use first */
};

struct smb_inode {
	uint64_t nodeid;
	uint64_t nlookup;       /* entries handed to the kernel minus forgets */
	uint64_t nchildren;     /* links whose parent is this inode */
	struct smb_link *links; /* NULL only for the root; all hashed, or one unhashed */
	bool in_fid_map;        /* attr.file_id != 0 and the inode is in by_fid */
	struct smb_inode *id_next;
	struct smb_inode *fid_next;
	bool have_attr;
	bool last_name_deleted; /* smb_inode_mark_last_name_deleted() */
	unsigned hidden_names;  /* smb_inode_name_hidden() */
	uint64_t fresh_until_ns;
	uint64_t stored_ns; /* when attr was stored */
	uint64_t lease_key; /* smb_inode_set_lease_key(); 0: none */
	struct smb_attr attr;
};

struct smb_inode_table {
	pthread_mutex_t lock; /* guards everything below and every inode */
	uint64_t attr_timeout_ns;
	uint64_t next_nodeid;
	uint64_t count;
	size_t nbuckets; /* power of two, same for the three maps */
	struct smb_inode **by_id;
	struct smb_link **by_name;
	struct smb_inode **by_fid; /* server file id -> inodes (stale ones too) */
	struct smb_inode *root;
	char *root_prefix;
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

static size_t bucket(const struct smb_inode_table *t, uint64_t h)
{
	return h & (t->nbuckets - 1);
}

static struct smb_inode *find_id(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i = t->by_id[bucket(t, mix64(nodeid))];

	while (i && i->nodeid != nodeid)
		i = i->id_next;
	return i;
}

static struct smb_link *find_name(struct smb_inode_table *t, uint64_t parent, const char *name)
{
	uint64_t h = name_hash(parent, name);
	struct smb_link *l = t->by_name[bucket(t, h)];

	for (; l; l = l->name_next)
		if (l->name_hash == h && l->parent->nodeid == parent && strcmp(l->name, name) == 0)
			return l;
	return NULL;
}

static bool is_dir(const struct smb_attr *a)
{
	return (a->file_attributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
}

/* The live inode of the server file attr describes: same file id, same
 * type, and still known under some name (an inode whose names are all
 * gone is a deleted file whose id the server may give to a new one). */
static struct smb_inode *find_fid(struct smb_inode_table *t, const struct smb_attr *attr)
{
	struct smb_inode *i;

	if (!attr->file_id)
		return NULL;
	for (i = t->by_fid[bucket(t, mix64(attr->file_id))]; i; i = i->fid_next)
		if (i->attr.file_id == attr->file_id && is_dir(&i->attr) == is_dir(attr) &&
		    i->links && i->links->hashed)
			return i;
	return NULL;
}

static void id_insert(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **b = &t->by_id[bucket(t, mix64(i->nodeid))];

	i->id_next = *b;
	*b = i;
}

static void id_remove(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **pp = &t->by_id[bucket(t, mix64(i->nodeid))];

	while (*pp != i)
		pp = &(*pp)->id_next;
	*pp = i->id_next;
}

static void fid_remove(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **pp;

	if (!i->in_fid_map)
		return;
	pp = &t->by_fid[bucket(t, mix64(i->attr.file_id))];
	while (*pp != i)
		pp = &(*pp)->fid_next;
	*pp = i->fid_next;
	i->in_fid_map = false;
}

static void fid_insert(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_inode **b;

	if (!i->have_attr || !i->attr.file_id)
		return;
	b = &t->by_fid[bucket(t, mix64(i->attr.file_id))];
	i->fid_next = *b;
	*b = i;
	i->in_fid_map = true;
}

static void name_insert(struct smb_inode_table *t, struct smb_link *l)
{
	struct smb_link **b;

	l->name_hash = name_hash(l->parent->nodeid, l->name);
	b = &t->by_name[bucket(t, l->name_hash)];
	l->name_next = *b;
	*b = l;
	l->hashed = true;
}

static void name_remove(struct smb_inode_table *t, struct smb_link *l)
{
	struct smb_link **pp;

	if (!l->hashed)
		return;
	pp = &t->by_name[bucket(t, l->name_hash)];
	while (*pp != l)
		pp = &(*pp)->name_next;
	*pp = l->name_next;
	l->name_next = NULL;
	l->hashed = false;
}

/* Take l off its inode's list of names (the caller frees or relinks it). */
static void unchain_link(struct smb_link *l)
{
	struct smb_link **pp = &l->inode->links;

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	l->next = NULL;
}

/* Free l, which is unhashed and off its inode's list; returns its parent,
 * whose nchildren it no longer counts. */
static struct smb_inode *free_link(struct smb_link *l)
{
	struct smb_inode *parent = l->parent;

	parent->nchildren--;
	free(l->name);
	free(l);
	return parent;
}

static void release_if_unused(struct smb_inode_table *t, struct smb_inode *i);

/* Free each unhashed name of i (once it has a hashed one). */
static void drop_unhashed(struct smb_inode_table *t, struct smb_inode *i)
{
	struct smb_link **pp = &i->links;

	while (*pp) {
		struct smb_link *l = *pp;
		if (l->hashed) {
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		release_if_unused(t, free_link(l));
	}
}

/* Double the maps; on allocation failure keep the old size (chains just
 * get longer). */
static void maybe_grow(struct smb_inode_table *t)
{
	size_t n = t->nbuckets * 2;
	struct smb_inode **by_id, **by_fid;
	struct smb_link **by_name;

	if (t->count <= t->nbuckets)
		return;
	by_id = calloc(n, sizeof(*by_id));
	by_fid = calloc(n, sizeof(*by_fid));
	by_name = calloc(n, sizeof(*by_name));
	if (!by_id || !by_name || !by_fid) {
		free(by_id);
		free(by_fid);
		free(by_name);
		return;
	}
	for (size_t b = 0; b < t->nbuckets; b++) {
		struct smb_inode *i, *next;
		struct smb_link *l, *lnext;
		for (i = t->by_id[b]; i; i = next) {
			next = i->id_next;
			i->id_next = by_id[mix64(i->nodeid) & (n - 1)];
			by_id[mix64(i->nodeid) & (n - 1)] = i;
		}
		for (i = t->by_fid[b]; i; i = next) {
			next = i->fid_next;
			i->fid_next = by_fid[mix64(i->attr.file_id) & (n - 1)];
			by_fid[mix64(i->attr.file_id) & (n - 1)] = i;
		}
		for (l = t->by_name[b]; l; l = lnext) {
			lnext = l->name_next;
			l->name_next = by_name[l->name_hash & (n - 1)];
			by_name[l->name_hash & (n - 1)] = l;
		}
	}
	free(t->by_id);
	free(t->by_fid);
	free(t->by_name);
	t->by_id = by_id;
	t->by_fid = by_fid;
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
	t->by_fid = calloc(t->nbuckets, sizeof(*t->by_fid));
	t->by_name = calloc(t->nbuckets, sizeof(*t->by_name));
	t->root = calloc(1, sizeof(*t->root));
	t->root_prefix = strdup(root_prefix ? root_prefix : "");
	if (!t->by_id || !t->by_fid || !t->by_name || !t->root || !t->root_prefix)
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
	free(t->root_prefix);
	free(t->root);
	free(t->by_id);
	free(t->by_fid);
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
			while (i->links) {
				struct smb_link *l = i->links;
				i->links = l->next;
				free(l->name);
				free(l);
			}
			free(i);
		}
	}
	free(t->by_id);
	free(t->by_fid);
	free(t->by_name);
	free(t->root_prefix);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static bool unused(const struct smb_inode_table *t, const struct smb_inode *i)
{
	return i != t->root && i->nlookup == 0 && i->nchildren == 0;
}

/* Free i if nothing needs it, then each ancestor it was the last reason to
 * keep.  Only a directory has children and a directory has one name, so
 * the walk up is a loop; a file's several parents recurse one level. */
static void release_if_unused(struct smb_inode_table *t, struct smb_inode *i)
{
	while (i && unused(t, i)) {
		struct smb_inode *up = NULL;
		while (i->links) {
			struct smb_link *l = i->links;
			i->links = l->next;
			name_remove(t, l);
			struct smb_inode *parent = free_link(l);
			if (!unused(t, parent))
				continue;
			if (!up)
				up = parent;
			else
				release_if_unused(t, parent);
		}
		fid_remove(t, i);
		id_remove(t, i);
		free(i);
		t->count--;
		i = up;
	}
}

static bool same_file(const struct smb_inode *i, const struct smb_attr *attr)
{
	if (!i->have_attr)
		return true;
	if (i->attr.file_id && attr->file_id && i->attr.file_id != attr->file_id)
		return false;
	return is_dir(&i->attr) == is_dir(attr);
}

static uint64_t st_ino_of(const struct smb_inode *i)
{
	return i->have_attr && i->attr.file_id ? i->attr.file_id : i->nodeid;
}

static void store_attr(struct smb_inode_table *t, struct smb_inode *i, const struct smb_attr *attr,
                       uint64_t now_ns)
{
	uint32_t nlink = i->attr.nlink;
	bool same_id = i->have_attr && i->attr.file_id == attr->file_id;

	if (!same_id)
		fid_remove(t, i);
	i->attr = *attr;
	/* A directory listing carries no link count: keep the one we knew. */
	if (!attr->nlink && same_id)
		i->attr.nlink = nlink;
	/* The server's count n may include up to hidden_names names that are
	 * gone for POSIX: the count is in [n - hidden_names, n], and the one
	 * we kept is the best guess within it. */
	if (same_id && i->hidden_names && attr->nlink && nlink && !is_dir(attr)) {
		uint32_t lo = attr->nlink > i->hidden_names ? attr->nlink - i->hidden_names : 1;
		i->attr.nlink = nlink < lo ? lo : nlink > attr->nlink ? attr->nlink : nlink;
	}
	i->have_attr = true;
	i->fresh_until_ns = now_ns + t->attr_timeout_ns;
	i->stored_ns = now_ns;
	if (!i->in_fid_map)
		fid_insert(t, i);
}

/* (parent, name) no longer names l's inode: drop l, or keep it unhashed
 * when it is the inode's last name.  A link count the cache holds is one
 * less now, and stale. */
static void detach_link(struct smb_inode_table *t, struct smb_link *l)
{
	struct smb_inode *i = l->inode;

	name_remove(t, l);
	if (!is_dir(&i->attr) && i->attr.nlink > 1)
		i->attr.nlink--;
	i->fresh_until_ns = 0;
	if (i->links == l && !l->next)
		return;
	unchain_link(l);
	release_if_unused(t, free_link(l));
}

/* Make l the name paths of its inode are built from. */
static void to_front(struct smb_link *l)
{
	if (l->inode->links != l) {
		unchain_link(l);
		l->next = l->inode->links;
		l->inode->links = l;
	}
}

int smb_inode_link(struct smb_inode_table *t, uint64_t parent, const char *name,
                   const struct smb_attr *attr, uint64_t now_ns, uint64_t *nodeid, uint64_t *st_ino)
{
	struct smb_inode *p, *i;
	struct smb_link *l;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	p = find_id(t, parent);
	if (!p) {
		rc = -ENOENT;
		goto out;
	}
	/* p counts one more child meanwhile, so that detaching names cannot
	 * free it. */
	p->nchildren++;
	l = find_name(t, parent, name);
	if (l && !same_file(l->inode, attr)) {
		detach_link(t, l);
		l = NULL;
	}
	if (l) {
		p->nchildren--; /* l counts for p */
		i = l->inode;
		to_front(l);
	} else {
		l = calloc(1, sizeof(*l));
		i = find_fid(t, attr);
		if (!l || !(l->name = strdup(name)) || (!i && !(i = calloc(1, sizeof(*i))))) {
			if (l)
				free(l->name);
			free(l);
			p->nchildren--;
			release_if_unused(t, p);
			rc = -ENOMEM;
			goto out;
		}
		if (!i->nodeid) {
			i->nodeid = t->next_nodeid++;
			id_insert(t, i);
			t->count++;
		}
		l->inode = i;
		l->parent = p;
		l->next = i->links;
		i->links = l;
		name_insert(t, l);
		/* A directory has one name: one the server no longer has
		 * (another client renamed it) goes. */
		while (is_dir(attr) && l->next)
			detach_link(t, l->next);
		drop_unhashed(t, i);
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

bool smb_inode_forget(struct smb_inode_table *t, uint64_t nodeid, uint64_t n)
{
	struct smb_inode *i;
	bool ok = true;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root) {
		ok = n <= i->nlookup;
		i->nlookup = ok ? i->nlookup - n : 0;
		release_if_unused(t, i);
	}
	pthread_mutex_unlock(&t->lock);
	return ok;
}

/* The component of i in a path: its first name, or the root's prefix. */
static const char *component(const struct smb_inode_table *t, const struct smb_inode *i)
{
	return i == t->root ? t->root_prefix : i->links->name;
}

static struct smb_inode *up(const struct smb_inode_table *t, const struct smb_inode *i)
{
	return i == t->root ? NULL : i->links->parent;
}

uint64_t smb_inode_lease_key(struct smb_inode_table *t, uint64_t nodeid)
{
	pthread_mutex_lock(&t->lock);
	const struct smb_inode *i = find_id(t, nodeid);
	uint64_t key = i ? i->lease_key : 0;
	pthread_mutex_unlock(&t->lock);
	return key;
}

void smb_inode_set_lease_key(struct smb_inode_table *t, uint64_t nodeid, uint64_t key)
{
	pthread_mutex_lock(&t->lock);
	struct smb_inode *i = find_id(t, nodeid);
	if (i)
		i->lease_key = key;
	pthread_mutex_unlock(&t->lock);
}

uint64_t smb_inode_parent(struct smb_inode_table *t, uint64_t nodeid)
{
	uint64_t parent = 0;
	pthread_mutex_lock(&t->lock);
	const struct smb_inode *i = find_id(t, nodeid);
	const struct smb_inode *p = i ? up(t, i) : NULL;
	if (p)
		parent = p->nodeid;
	pthread_mutex_unlock(&t->lock);
	return parent;
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
	for (i = start; i; i = up(t, i))
		len += component(t, i)[0] ? strlen(component(t, i)) + 1 : 0;
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
	for (i = start; i; i = up(t, i)) {
		size_t n = strlen(component(t, i));
		if (!n)
			continue;
		end -= n;
		memcpy(end, component(t, i), n);
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

bool smb_inode_attr_valid_since(struct smb_inode_table *t, uint64_t nodeid, uint64_t since_ns)
{
	struct smb_inode *i;
	bool valid;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	valid = i && i->have_attr && i->fresh_until_ns != 0 && i->stored_ns >= since_ns;
	pthread_mutex_unlock(&t->lock);
	return valid;
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
	struct smb_link *l;

	pthread_mutex_lock(&t->lock);
	l = find_name(t, parent, name);
	if (l)
		detach_link(t, l);
	pthread_mutex_unlock(&t->lock);
}

int smb_inode_rename(struct smb_inode_table *t, uint64_t oldparent, const char *oldname,
                     uint64_t newparent, const char *newname)
{
	struct smb_link *src, *dst;
	struct smb_inode *np, *op;
	char *name = NULL;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	np = find_id(t, newparent);
	src = find_name(t, oldparent, oldname);
	dst = find_name(t, newparent, newname);
	/* np counts one more child meanwhile, so that detaching dst cannot
	 * free it (src's parent counts src). */
	if (np)
		np->nchildren++;
	if (dst && dst != src)
		detach_link(t, dst);
	if (!src || src == dst)
		goto out;
	name = np ? strdup(newname) : NULL;
	if (!name) {
		/* the old name is gone either way: a later lookup finds
		 * the inode again by the server's file id */
		detach_link(t, src);
		rc = np ? -ENOMEM : 0;
		goto out;
	}
	name_remove(t, src);
	op = src->parent;
	free(src->name);
	src->name = name;
	src->parent = np;
	np->nchildren++;
	op->nchildren--;
	name_insert(t, src);
	to_front(src);
	src->inode->fresh_until_ns = 0; /* its ctime moved on the server */
	release_if_unused(t, op);
out:
	if (np) {
		np->nchildren--;
		release_if_unused(t, np);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* Every name of nodeid gone, and (with marked) its mark set. */
static bool names_gone(struct smb_inode_table *t, uint64_t nodeid, bool marked)
{
	struct smb_inode *i;
	bool gone = false;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root)
		gone = !i->links->hashed && (!marked || i->last_name_deleted);
	pthread_mutex_unlock(&t->lock);
	return gone;
}

bool smb_inode_unlinked(struct smb_inode_table *t, uint64_t nodeid)
{
	return names_gone(t, nodeid, false);
}

void smb_inode_mark_last_name_deleted(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root)
		i->last_name_deleted = true;
	pthread_mutex_unlock(&t->lock);
}

bool smb_inode_last_name_deleted(struct smb_inode_table *t, uint64_t nodeid)
{
	return names_gone(t, nodeid, true);
}

void smb_inode_name_hidden(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i != t->root)
		i->hidden_names++;
	pthread_mutex_unlock(&t->lock);
}

bool smb_inode_has_hidden_names(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;
	bool any;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	any = i && i->hidden_names;
	pthread_mutex_unlock(&t->lock);
	return any;
}

void smb_inode_handles_closed(struct smb_inode_table *t, uint64_t nodeid)
{
	struct smb_inode *i;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i)
		i->hidden_names = 0;
	pthread_mutex_unlock(&t->lock);
}

uint32_t smb_inode_nlink(struct smb_inode_table *t, uint64_t nodeid, uint32_t told)
{
	struct smb_inode *i;
	uint32_t n = told;

	pthread_mutex_lock(&t->lock);
	i = find_id(t, nodeid);
	if (i && i->hidden_names && i->have_attr && told && i->attr.nlink)
		n = i->attr.nlink;
	pthread_mutex_unlock(&t->lock);
	return n;
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

int smb_inode_lookup_kept(struct smb_inode_table *t, uint64_t parent, const char *name,
                          uint64_t since_ns, struct smb_attr *attr, uint64_t *nodeid,
                          uint64_t *st_ino)
{
	struct smb_link *l;
	int rc = -ESTALE;

	pthread_mutex_lock(&t->lock);
	l = find_name(t, parent, name);
	if (l && l->inode->have_attr && l->inode->fresh_until_ns &&
	    l->inode->stored_ns >= since_ns) {
		struct smb_inode *i = l->inode;
		i->nlookup++;
		*attr = i->attr;
		*nodeid = i->nodeid;
		*st_ino = st_ino_of(i);
		rc = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

uint64_t smb_inode_find(struct smb_inode_table *t, uint64_t parent, const char *name)
{
	struct smb_link *l;
	uint64_t nodeid = 0;

	pthread_mutex_lock(&t->lock);
	l = find_name(t, parent, name);
	if (l)
		nodeid = l->inode->nodeid;
	pthread_mutex_unlock(&t->lock);
	return nodeid;
}

void smb_inode_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int smb_inode_child_names(struct smb_inode_table *t, uint64_t parent, char ***names, size_t *n)
{
	struct smb_inode *p;
	char **out = NULL;
	size_t count = 0, cap = 0;
	int err = 0;

	pthread_mutex_lock(&t->lock);
	p = find_id(t, parent);
	/* A whole-map walk, for a directory that has children (breaks are
	 * rare; the map has no per-parent chain). */
	for (size_t b = 0; p && p->nchildren && b < t->nbuckets && !err; b++) {
		for (struct smb_link *l = t->by_name[b]; l && !err; l = l->name_next) {
			if (l->parent != p)
				continue;
			if (count == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				char **grown = realloc(out, ncap * sizeof(*out));
				if (!grown) {
					err = -ENOMEM;
					break;
				}
				out = grown;
				cap = ncap;
			}
			out[count] = strdup(l->name);
			if (!out[count])
				err = -ENOMEM;
			else
				count++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (err) {
		smb_inode_names_free(out, count);
		out = NULL;
		count = 0;
	}
	*names = out;
	*n = count;
	return err;
}

uint64_t smb_inode_count(struct smb_inode_table *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
