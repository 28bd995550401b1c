/* smbrdma.h — libsmbrdma: the smbrdma SMB2/3 client engine for applications.
 *
 * The same engine as the mount.smbrdma FUSE daemon (SMB 2.0.2-3.1.1 over TCP
 * and SMB Direct, multichannel, signing, encryption, reconnect), without
 * FUSE: an application connects to a share, opens files and reads and writes
 * them asynchronously.  A buffer given to smbrdma_register() once is used in
 * place: on an RDMA channel the server moves READ and WRITE payloads straight
 * into and out of it, and no byte of it is copied by the library.
 *
 * Link with `pkg-config --cflags --libs smbrdma`.
 *
 * Threads.  Each connection (struct smbrdma) runs one event-loop thread of its
 * own, created by smbrdma_connect() and joined by smbrdma_disconnect().
 * Completion callbacks run on that thread, one at a time; a callback must not
 * block, and must not call the synchronous functions below (they return
 * -EDEADLK there), but may start more asynchronous I/O.  Every function may
 * be called from any other thread, concurrently, except that a file must not
 * be closed while I/O on it is outstanding or another thread may still use
 * it, and a connection must not be disconnected while another thread uses
 * it.
 *
 * Errors are negative errno values: -ENOENT, -EACCES, -EIO (with a log line
 * naming the cause on stderr), -ETIMEDOUT (no answer within timeout_ms, or no
 * channel back within it after a lost connection), -ECONNABORTED (the
 * connection is going away), ...
 *
 * Memory.  The library owns struct smbrdma and struct smbrdma_file; the
 * caller owns every buffer and string it passes, and strings are copied
 * before the call returns.  Buffers of asynchronous I/O must stay valid until
 * their callback has run.
 */
#ifndef SMBRDMA_H
#define SMBRDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SMBRDMA_API_VERSION 1

struct smbrdma;      /* a session with one share (a "tree connect") */
struct smbrdma_file; /* an open file or directory on it */

enum smbrdma_sec {
	SMBRDMA_SEC_NTLMSSP = 0, /* user name and password (NTLMv2), the default */
	SMBRDMA_SEC_KRB5 = 1,    /* Kerberos: the caller's ccache, or keytab */
};

enum {
	SMBRDMA_F_RDMA = 1u << 0,         /* first channel over SMB Direct, not TCP, and
	                                     a second to the same address when the server
	                                     offers multichannel (two queue pairs) */
	SMBRDMA_F_MULTICHANNEL = 1u << 1, /* bind channels to every server interface */
	SMBRDMA_F_SIGN = 1u << 2,         /* require signing */
	SMBRDMA_F_SEAL = 1u << 3,         /* require encryption */
	SMBRDMA_F_GUEST = 1u << 4,        /* a guest session is acceptable; without it a
	                                     server that logs a user with a password on
	                                     as guest is refused (no key: unverifiable) */
};

/* Connection parameters.  Set with smbrdma_params_init(), then fill in what
 * applies; zero or NULL means the default.  Fields are only ever added at the
 * end, and the library reads no further than the caller's struct_size. */
struct smbrdma_params {
	size_t struct_size;      /* set by smbrdma_params_init() */
	const char *server;      /* host name or address; required */
	const char *share;       /* share name; required */
	unsigned port;           /* 0: 445 (TCP) */
	const char *user;        /* NULL: "" (anonymous) */
	const char *password;    /* NULL: "" */
	const char *domain;      /* NULL: "" */
	enum smbrdma_sec sec;    /* SMBRDMA_SEC_* */
	const char *keytab;      /* SMBRDMA_SEC_KRB5: a client keytab; NULL: the ccache */
	unsigned flags;          /* SMBRDMA_F_* */
	unsigned max_channels;   /* with SMBRDMA_F_MULTICHANNEL; 0: 2; at most 32 */
	unsigned rdma_threshold; /* bytes; READ/WRITE above go by RDMA; 0: 4096 */
	unsigned timeout_ms;     /* per request; 0: 60000 */
	uint16_t min_dialect;    /* e.g. 0x0210; 0: 0x0300 (2.x only when asked) */
	uint16_t max_dialect;    /* 0: 0x0311 */
	const char *interfaces;  /* "eth1:eth2": local interfaces for extra channels */
};

void smbrdma_params_init_(struct smbrdma_params *p, size_t size);
#define smbrdma_params_init(p) smbrdma_params_init_((p), sizeof(*(p)))

/* Connect, negotiate, authenticate and connect to the share; blocks.  On
 * failure returns -errno and writes a one-line reason into err (if errlen),
 * e.g. "logon failure (STATUS_LOGON_FAILURE): wrong user name or password for
 * HOST". */
int smbrdma_connect(const struct smbrdma_params *p, struct smbrdma **out, char *err, size_t errlen);

/* Close every file still open, log off, stop the thread, free s.  I/O still
 * outstanding is failed (-ECONNABORTED) and its callbacks have run when this
 * returns.  Not from a callback. */
void smbrdma_disconnect(struct smbrdma *s);

struct smbrdma_info {
	uint16_t dialect;  /* 0x0202 ... 0x0311 */
	bool signing;      /* messages are signed */
	bool encryption;   /* messages are encrypted */
	unsigned channels; /* live channels */
	unsigned rdma_channels;
	uint32_t max_read;  /* bytes per READ request */
	uint32_t max_write; /* bytes per WRITE request */
	/* Totals since connect: */
	uint64_t rdma_bytes;   /* payload moved by the server's RDMA Read/Write */
	uint64_t inline_bytes; /* bytes carried in messages (both ways) */
	uint64_t copied_bytes; /* payload bytes the library copied */
	uint64_t requests;     /* SMB2 messages sent */
};
void smbrdma_get_info(struct smbrdma *s, struct smbrdma_info *out);

/* Register [buf, buf+len) with every RDMA channel, once: reads into and writes
 * from it (smbrdma_read/smbrdma_write and the p* forms) then move by RDMA in
 * place.  0; -EOPNOTSUPP when no channel is RDMA or the session is encrypted
 * (the buffer may still be used, through a copy); -ENOSPC after 8 regions.
 * The memory must stay allocated until smbrdma_disconnect() returned. */
int smbrdma_register(struct smbrdma *s, void *buf, size_t len);

/* Open path (relative to the share root, '/' or '\\' separated; "" is the
 * root).  flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT, O_EXCL, O_TRUNC;
 * O_DIRECTORY opens a directory (for smbrdma_fstat).
 * New files get mode 0644 semantics (the server's defaults).  Blocks. */
int smbrdma_open(struct smbrdma *s, const char *path, int flags, struct smbrdma_file **out);
/* Close f and free it; blocks.  No I/O on f may be outstanding. */
int smbrdma_close(struct smbrdma_file *f);

/* Completion: result is the number of bytes moved (a read is short only at
 * end of file; 0 at or past it) or -errno.  Runs once, on the connection's
 * thread, possibly before the submitting call has returned. */
typedef void (*smbrdma_io_cb)(void *arg, ssize_t result);

/* Start a read of len bytes at offset into buf (any size: split as needed).
 * 0 when started (cb will run); -errno otherwise (cb will not run). */
int smbrdma_read(struct smbrdma_file *f, void *buf, size_t len, uint64_t offset, smbrdma_io_cb cb,
                 void *arg);
/* Start a write; buf must stay unchanged until cb. */
int smbrdma_write(struct smbrdma_file *f, const void *buf, size_t len, uint64_t offset,
                  smbrdma_io_cb cb, void *arg);

/* Synchronous forms; not from a callback. */
ssize_t smbrdma_pread(struct smbrdma_file *f, void *buf, size_t len, uint64_t offset);
ssize_t smbrdma_pwrite(struct smbrdma_file *f, const void *buf, size_t len, uint64_t offset);
int smbrdma_fsync(struct smbrdma_file *f);
int smbrdma_ftruncate(struct smbrdma_file *f, uint64_t size);

struct smbrdma_stat {
	uint64_t size;       /* end of file */
	uint64_t allocated;  /* allocation size */
	uint64_t file_id;    /* the server's file id (0 if it gives none) */
	uint32_t nlink;      /* 0 if the server does not say */
	uint32_t attributes; /* FILE_ATTRIBUTE_* of [MS-FSCC] 2.6 */
	bool is_dir;
	struct timespec btime, atime, mtime, ctime;
};
int smbrdma_stat(struct smbrdma *s, const char *path, struct smbrdma_stat *st);
int smbrdma_fstat(struct smbrdma_file *f, struct smbrdma_stat *st);

/* List directory path: fn is called for each entry ("." and ".." skipped), on
 * the calling thread; a non-zero return stops the listing and is returned. */
typedef int (*smbrdma_dirent_fn)(void *arg, const char *name, const struct smbrdma_stat *st);
int smbrdma_readdir(struct smbrdma *s, const char *path, smbrdma_dirent_fn fn, void *arg);

int smbrdma_mkdir(struct smbrdma *s, const char *path);
int smbrdma_rmdir(struct smbrdma *s, const char *path);
int smbrdma_unlink(struct smbrdma *s, const char *path);
int smbrdma_rename(struct smbrdma *s, const char *from, const char *to);

/* "0.1.0" */
const char *smbrdma_version(void);

#ifdef __cplusplus
}
#endif

#endif
