/* client/msg_framer.h — reassembles Direct TCP framed SMB2 messages from a
 * byte stream that arrives in arbitrary pieces ([MS-SMB2] 2.1: a zero byte,
 * a 24-bit big-endian length, then the message).  Sans-I/O: the caller
 * feeds what its stream delivered; the framer hands out whole messages.
 *
 * Used by the QUIC transport (client/transport_quic.c), whose stream data
 * comes in callbacks, not from a socket read.  TCP assembles messages from
 * its own staging buffer but makes the same two checks, smb_frame_len() and
 * smb_frame_check_magic() below.
 *
 * Checks, as bytes come in: the framing byte, the length (4..SMB_FRAMER_MAX),
 * and the protocol id once 4 bytes of a message are in (0xFE/0xFD 'SMB'); a
 * failed check is fatal for the stream (nothing after it can be framed).
 *
 * Ownership: each delivered message is a talloc context (no parent) that the
 * deliver callback now owns.  The partial message belongs to the framer
 * until delivered or smb_framer_reset().  Threads: one thread at a time.
 */
#ifndef SMBRDMA_CLIENT_MSG_FRAMER_H
#define SMBRDMA_CLIENT_MSG_FRAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest message accepted: 8 MiB of READ data plus headers and slack. */
#define SMB_FRAMER_MAX (16u << 20)

/* The two checks of every stream transport, logging as "<name>: ...":
 * the length a 4-byte prefix announces (framing byte 0, 4..SMB_FRAMER_MAX),
 * and the protocol id in the first 4 bytes of a message of msg_len bytes
 * (0xFE or 0xFD 'SMB'; anything else - SMB1, a compressed message, HTTP -
 * is refused as soon as those 4 bytes are in, so a garbage length cannot
 * stall the caller).  0 or -EBADMSG. */
int smb_frame_len(const char *name, const uint8_t hdr[4], size_t *len);
int smb_frame_check_magic(const char *name, const uint8_t m[4], size_t msg_len);

typedef void (*smb_framer_deliver_fn)(void *arg, uint8_t *msg, size_t len);

struct smb_framer {
	const char *name; /* for log lines ("quic") */
	uint8_t hdr[4];
	size_t hdr_got;
	uint8_t *msg; /* message being assembled (talloc), or NULL */
	size_t msg_len, msg_got;
	bool checked; /* its protocol id was checked */
	bool broken;  /* a check failed: every later feed fails */
};

void smb_framer_init(struct smb_framer *f, const char *name);
/* Consume all n bytes: deliver every message they complete, in order, keep
 * a partial one.  Returns 0; -EBADMSG when the stream breaks the framing
 * (logged once, sticky); -ENOMEM. */
int smb_framer_feed(struct smb_framer *f, const uint8_t *p, size_t n, smb_framer_deliver_fn deliver,
                    void *arg);
/* Bytes of an unfinished message (or of its length prefix) are held. */
bool smb_framer_partial(const struct smb_framer *f);
/* Free the partial message. */
void smb_framer_reset(struct smb_framer *f);

#endif
