/* smbd/smbd_proto.h — the [MS-SMBD] 1.0 wire codec: bytes <-> structs, no I/O.
 *
 * Encoders write into a caller's buffer and return the bytes written or
 * -errno (-ENOBUFS: buffer too small; -EINVAL: a field the spec forbids).
 * Decoders read a whole received message and return the bytes consumed or
 * -errno: -EBADMSG when the message is shorter than its fixed part, -EPROTO
 * when a field breaks a rule the receiver must check, -EPROTONOSUPPORT for a
 * version we do not speak, -ECONNREFUSED for a negotiate response carrying a
 * failure Status.  Every -errno from a decoder is fatal to the connection
 * ([MS-SMBD] 3.1.5.6-3.1.5.8 "MUST terminate the connection").
 *
 * The packed structs below document the layout (all fields little-endian on
 * the wire); the code reads and writes through byte offsets into them, so it
 * works on any host byte order and alignment.
 */
#ifndef SMBRDMA_SMBD_PROTO_H
#define SMBRDMA_SMBD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SMBD_VERSION_1 0x0100u

/* Floors the spec puts on the peer's sizes ([MS-SMBD] 3.1.5.6, 3.1.5.7). */
#define SMBD_MIN_RECEIVE_SIZE    128u
#define SMBD_MIN_FRAGMENTED_SIZE 131072u
/* The first receive must hold at least this ([MS-SMBD] 3.1.4.1). */
#define SMBD_MIN_NEGOTIATE_RECV 512u

#define SMBD_NEGOTIATE_REQ_SIZE  20u
#define SMBD_NEGOTIATE_RESP_SIZE 32u
/* A data transfer message without payload stops before Padding. */
#define SMBD_DATA_MIN_SIZE 20u
/* With payload we always put the data at offset 24 (8-aligned). */
#define SMBD_DATA_OFFSET             24u
#define SMBD_BUFFER_DESC_V1_SIZE     16u
#define SMBD_FLAG_RESPONSE_REQUESTED 0x0001u

/* STATUS_NOT_SUPPORTED, the only failure a peer sends in a negotiate response. */
#define SMBD_STATUS_NOT_SUPPORTED 0xC00000BBu

/* [MS-SMBD] 2.2.1 Negotiate Request */
struct smbd_negotiate_req_wire {
	uint16_t min_version;
	uint16_t max_version;
	uint16_t reserved;
	uint16_t credits_requested;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
} __attribute__((packed));
_Static_assert(sizeof(struct smbd_negotiate_req_wire) == SMBD_NEGOTIATE_REQ_SIZE,
               "[MS-SMBD] 2.2.1 is 20 bytes");

/* [MS-SMBD] 2.2.2 Negotiate Response */
struct smbd_negotiate_resp_wire {
	uint16_t min_version;
	uint16_t max_version;
	uint16_t negotiated_version;
	uint16_t reserved;
	uint16_t credits_requested;
	uint16_t credits_granted;
	uint32_t status;
	uint32_t max_read_write_size;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
} __attribute__((packed));
_Static_assert(sizeof(struct smbd_negotiate_resp_wire) == SMBD_NEGOTIATE_RESP_SIZE,
               "[MS-SMBD] 2.2.2 is 32 bytes");

/* [MS-SMBD] 2.2.3 Data Transfer message header (Padding included; it is
 * absent from a message without payload) */
struct smbd_data_hdr_wire {
	uint16_t credits_requested;
	uint16_t credits_granted;
	uint16_t flags;
	uint16_t reserved;
	uint32_t remaining_data_length;
	uint32_t data_offset;
	uint32_t data_length;
	uint32_t padding;
} __attribute__((packed));
_Static_assert(sizeof(struct smbd_data_hdr_wire) == SMBD_DATA_OFFSET,
               "[MS-SMBD] 2.2.3 header with padding is 24 bytes");

/* [MS-SMBD] 2.2.3.1 Buffer Descriptor V1 */
struct smbd_buffer_desc_v1_wire {
	uint64_t offset;
	uint32_t token;
	uint32_t length;
} __attribute__((packed));
_Static_assert(sizeof(struct smbd_buffer_desc_v1_wire) == SMBD_BUFFER_DESC_V1_SIZE,
               "[MS-SMBD] 2.2.3.1 is 16 bytes");

/* Host-order views of the messages. */
struct smbd_negotiate_req {
	uint16_t min_version, max_version;
	uint16_t credits_requested;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
};

struct smbd_negotiate_resp {
	uint16_t min_version, max_version, negotiated_version;
	uint16_t credits_requested, credits_granted;
	uint32_t status;
	uint32_t max_read_write_size;
	uint32_t preferred_send_size;
	uint32_t max_receive_size;
	uint32_t max_fragmented_size;
};

struct smbd_data_hdr {
	uint16_t credits_requested, credits_granted;
	uint16_t flags;
	uint32_t remaining_data_length;
	uint32_t data_offset; /* decoders fill it; encoders derive it */
	uint32_t data_length;
};

struct smbd_buffer_desc_v1 {
	uint64_t offset; /* the peer's view: here, our virtual address */
	uint32_t token;  /* rkey */
	uint32_t length;
};

/* [MS-SMBD] 2.2.1: 20 bytes.  Rejects min_version > max_version (-EINVAL). */
int smbd_negotiate_req_encode(const struct smbd_negotiate_req *req, uint8_t *buf, size_t cap);

/* [MS-SMBD] 2.2.1 with the listener's checks of 3.1.5.6 (for a test peer):
 * -EBADMSG (< 20 bytes), -EPROTONOSUPPORT (range excludes 1.0), -EPROTO
 * (CreditsRequested 0, MaxReceiveSize < 128, MaxFragmentedSize < 128 KiB). */
int smbd_negotiate_req_decode(const uint8_t *buf, size_t len, struct smbd_negotiate_req *out);

/* [MS-SMBD] 2.2.2: 32 bytes. */
int smbd_negotiate_resp_encode(const struct smbd_negotiate_resp *resp, uint8_t *buf, size_t cap);

/* [MS-SMBD] 2.2.2 with the initiator's checks of 3.1.5.7.  our_max_receive_size
 * is Connection.MaxReceiveSize (the peer's PreferredSendSize must fit it).
 * Returns 32 (extra trailing bytes are ignored) or -errno. */
int smbd_negotiate_resp_decode(const uint8_t *buf, size_t len, uint32_t our_max_receive_size,
                               struct smbd_negotiate_resp *out);

/* [MS-SMBD] 2.2.3 header for a message carrying hdr->data_length payload
 * bytes, which the caller places right after it (at offset 24).  With
 * data_length 0 this is the 20-byte empty message (DataOffset 0, no
 * padding).  Returns 24 or 20. */
int smbd_data_hdr_encode(const struct smbd_data_hdr *hdr, uint8_t *buf, size_t cap);

/* [MS-SMBD] 2.2.3 with the receiver's checks of 3.1.5.8, plus two of our own
 * that keep a hostile peer out of our header: payload never starts inside the
 * 20-byte fixed part, and an empty payload has no remainder.  On success
 * returns len and *out tells where the payload is. */
int smbd_data_decode(const uint8_t *buf, size_t len, uint32_t max_fragmented_size,
                     struct smbd_data_hdr *out);

/* [MS-SMBD] 2.2.3.1 arrays: 16 bytes each. */
int smbd_buffer_desc_v1_encode(const struct smbd_buffer_desc_v1 *descs, size_t n, uint8_t *buf,
                               size_t cap);

/* Decodes len / 16 descriptors (len must be a non-zero multiple of 16, and
 * at most max of them) into out; *n gets the count.  Returns bytes consumed. */
int smbd_buffer_desc_v1_decode(const uint8_t *buf, size_t len, struct smbd_buffer_desc_v1 *out,
                               size_t max, size_t *n);

#endif
