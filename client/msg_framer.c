/* client/msg_framer.c — Direct TCP framing reassembly (see msg_framer.h). */
#include "client/msg_framer.h"
#include "common/log.h"

#include <errno.h>
#include <string.h>
#include <talloc.h>

void smb_framer_init(struct smb_framer *f, const char *name)
{
	memset(f, 0, sizeof(*f));
	f->name = name;
}

bool smb_framer_partial(const struct smb_framer *f)
{
	return f->msg != NULL || f->hdr_got > 0;
}

void smb_framer_reset(struct smb_framer *f)
{
	TALLOC_FREE(f->msg);
	f->hdr_got = 0;
}

int smb_frame_len(const char *name, const uint8_t hdr[4], size_t *len)
{
	if (hdr[0] != 0) {
		smb_err("%s: bad stream framing byte 0x%02x from server", name, hdr[0]);
		return -EBADMSG;
	}
	*len = ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
	if (*len < 4 || *len > SMB_FRAMER_MAX) {
		smb_err("%s: server sent a message of %zu bytes (allowed 4..%u)", name, *len,
		        SMB_FRAMER_MAX);
		return -EBADMSG;
	}
	return 0;
}

int smb_frame_check_magic(const char *name, const uint8_t m[4], size_t msg_len)
{
	if ((m[0] == 0xFE || m[0] == 0xFD) && m[1] == 'S' && m[2] == 'M' && m[3] == 'B')
		return 0;
	char shown[5];
	for (int i = 0; i < 4; i++)
		shown[i] = m[i] >= 0x20 && m[i] < 0x7F ? (char)m[i] : '.';
	shown[4] = '\0';
	const char *what = "";
	if (m[0] == 0xFF && m[1] == 'S' && m[2] == 'M' && m[3] == 'B')
		what = ": an SMB1 message (the server does not speak SMB2/3)";
	else if (m[0] == 0xFC && m[1] == 'S' && m[2] == 'M' && m[3] == 'B')
		what = ": a compressed message (compression was not negotiated)";
	smb_err("%s: server sent a %zu-byte message that is not SMB2 (starts %02x %02x %02x "
	        "%02x \"%s\")%s",
	        name, msg_len, m[0], m[1], m[2], m[3], shown, what);
	return -EBADMSG;
}

int smb_framer_feed(struct smb_framer *f, const uint8_t *p, size_t n, smb_framer_deliver_fn deliver,
                    void *arg)
{
	if (f->broken)
		return -EBADMSG;
	while (n) {
		if (!f->msg) {
			size_t take = 4 - f->hdr_got;
			if (take > n)
				take = n;
			memcpy(f->hdr + f->hdr_got, p, take);
			f->hdr_got += take;
			p += take;
			n -= take;
			if (f->hdr_got < 4)
				break;
			f->hdr_got = 0;
			size_t len;
			if (smb_frame_len(f->name, f->hdr, &len) < 0) {
				f->broken = true;
				return -EBADMSG;
			}
			f->msg = talloc_size(NULL, len);
			if (!f->msg)
				return -ENOMEM;
			talloc_set_name_const(f->msg, "smb rx message");
			f->msg_len = len;
			f->msg_got = 0;
			f->checked = false;
			continue;
		}
		size_t take = f->msg_len - f->msg_got;
		if (take > n)
			take = n;
		memcpy(f->msg + f->msg_got, p, take);
		f->msg_got += take;
		p += take;
		n -= take;
		if (!f->checked && f->msg_got >= 4) {
			f->checked = true;
			if (smb_frame_check_magic(f->name, f->msg, f->msg_len) < 0) {
				f->broken = true;
				TALLOC_FREE(f->msg);
				return -EBADMSG;
			}
		}
		if (f->msg_got == f->msg_len) {
			uint8_t *m = f->msg;
			f->msg = NULL;
			deliver(arg, m, f->msg_len);
		}
	}
	return 0;
}
