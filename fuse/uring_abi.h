/* fuse/uring_abi.h — the kernel's FUSE-over-io_uring interface, for headers
 * that predate it.
 *
 * Where it comes from: include/uapi/linux/fuse.h of Linux 6.14 and later
 * (FUSE protocol 7.42, "add FUSE_OVER_IO_URING and all the fuse-io-uring
 * structures"), and Documentation/filesystems/fuse-io-uring.rst.  Debian 12's
 * linux-libc-dev (6.1, protocol 7.38) has none of it; where the system
 * header does, its definitions are used and these are not.  Only what
 * fuse/ring.c needs is here.
 *
 * The exchange: the daemon registers ring entries with IORING_OP_URING_CMD
 * on the /dev/fuse descriptor (an SQE128, struct fuse_uring_cmd_req in its
 * 80-byte command area, cmd_op FUSE_IO_URING_CMD_REGISTER, addr/len an
 * iovec pair: the entry's header buffer, at least sizeof(struct
 * fuse_uring_req_header), then its payload buffer, at least the
 * connection's largest request).  The kernel completes an entry's command
 * (res 0) once it has copied a request into it: the fuse_in_header to
 * in_out, the request's first argument (its fixed per-opcode struct, when it
 * has one) to op_in, the rest to the payload buffer, and the payload's
 * length and the request's unique (commit_id) to ring_ent_in_out.  The
 * daemon answers with FUSE_IO_URING_CMD_COMMIT_AND_FETCH (commit_id = that
 * unique): fuse_out_header in in_out, the reply's arguments in the payload
 * buffer, their length in ring_ent_in_out.payload_sz; the same command
 * offers the entry for the next request.  Requests reach the ring only
 * once every queue (one per possible CPU) holds a registered entry;
 * FORGET, INTERRUPT and notifications keep to /dev/fuse.
 */
#ifndef SMBRDMA_FUSE_URING_ABI_H
#define SMBRDMA_FUSE_URING_ABI_H

#include <linux/fuse.h>
#include <stdint.h>

#ifndef FUSE_OVER_IO_URING
/* INIT flag (in flags2, so with FUSE_INIT_EXT): the kernel offers the ring
 * (its enable_uring parameter is set); the daemon, answering with it, says
 * it will register. */
#define FUSE_OVER_IO_URING (1ULL << 41)

#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ     128

struct fuse_uring_ent_in_out {
	uint64_t flags;
	/* the request's unique, to be given back in fuse_uring_cmd_req */
	uint64_t commit_id;
	/* bytes used in the payload buffer, each way */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ]; /* fuse_in_header / fuse_out_header */
	char op_in[FUSE_URING_OP_IN_OUT_SZ];      /* the per-opcode struct */
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* In the SQE's 80-byte command area. */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

#ifndef FUSE_INIT_EXT
#define FUSE_INIT_EXT (1 << 30)
#endif
#ifndef FUSE_MAX_PAGES
#define FUSE_MAX_PAGES (1 << 22)
#endif

_Static_assert(sizeof(struct fuse_uring_req_header) == 288, "fuse_uring_req_header is 288 bytes");
_Static_assert(sizeof(struct fuse_uring_cmd_req) == 24, "fuse_uring_cmd_req is 24 bytes");

#endif
