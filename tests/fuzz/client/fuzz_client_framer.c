/* Fuzz: the Direct TCP framing reassembly of stream transports
 * (client/msg_framer.c), fed the server's bytes in pieces whose sizes the
 * input chooses.  Byte 0 seeds the piece sizes; the rest is the stream.
 * Checks: every delivered message is whole, starts with an SMB2 protocol
 * id, has the length its prefix said, and the messages plus the held
 * partial one account for every byte fed before a framing error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <talloc.h>

#include "client/msg_framer.h"

struct seen {
	size_t bytes; /* prefix + message bytes of delivered messages */
	size_t count;
};

static void deliver(void *arg, uint8_t *msg, size_t len)
{
	struct seen *s = arg;
	if (len < 4 || len > SMB_FRAMER_MAX || talloc_get_size(msg) != len)
		abort();
	if (!((msg[0] == 0xFE || msg[0] == 0xFD) && msg[1] == 'S' && msg[2] == 'M' &&
	      msg[3] == 'B'))
		abort();
	s->bytes += 4 + len;
	s->count++;
	talloc_free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned seed = data[0];
	data++;
	size--;
	uint8_t *buf = size ? malloc(size) : NULL;
	if (size && !buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	struct smb_framer f;
	struct seen s = {0};
	smb_framer_init(&f, "fuzz");
	size_t off = 0;
	int rc = 0;
	while (off < size) {
		size_t piece = 1 + (seed * 37u + off) % 97u;
		if (piece > size - off)
			piece = size - off;
		rc = smb_framer_feed(&f, buf + off, piece, deliver, &s);
		if (rc != 0 && rc != -EBADMSG && rc != -ENOMEM)
			abort();
		if (rc)
			break;
		off += piece;
	}
	if (!rc) {
		size_t held = f.msg ? 4 + f.msg_got : f.hdr_got;
		if (s.bytes + held != size)
			abort();
		if (smb_framer_partial(&f) != (held != 0))
			abort();
	} else if (smb_framer_feed(&f, buf, size, deliver, &s) != -EBADMSG && rc == -EBADMSG) {
		abort(); /* a broken stream stays broken */
	}
	smb_framer_reset(&f);
	free(buf);
	return 0;
}
