/* client/proto/unicode.c — UTF-8 <-> UTF-16LE for names on the wire.
 *
 * Strict in both directions: overlong forms, encoded surrogates, code points
 * past U+10FFFF and unpaired UTF-16 surrogates are errors rather than being
 * replaced, so a name never silently changes on its way through.
 */
#include <errno.h>

#include "client/proto/smb2.h"

ssize_t smb_utf8_to_utf16le(const char *in, size_t inlen, uint8_t *out, size_t cap, bool path)
{
	const uint8_t *s = (const uint8_t *)in;
	size_t i = 0, o = 0;

	if ((!in && inlen) || (!out && cap))
		return -EINVAL;
	while (i < inlen) {
		uint32_t c = s[i], min;
		size_t n;

		if (c < 0x80) {
			n = 1;
			min = 0;
		} else if ((c & 0xE0) == 0xC0) {
			n = 2;
			c &= 0x1F;
			min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			n = 3;
			c &= 0x0F;
			min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			n = 4;
			c &= 0x07;
			min = 0x10000;
		} else {
			return -EINVAL;
		}
		if (n > inlen - i)
			return -EINVAL;
		for (size_t k = 1; k < n; k++) {
			uint8_t b = s[i + k];
			if ((b & 0xC0) != 0x80)
				return -EINVAL;
			c = (c << 6) | (b & 0x3F);
		}
		if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			return -EINVAL;
		i += n;
		if (path && c == '/')
			c = '\\';
		if (c >= 0x10000) {
			if (cap - o < 4)
				return -ENOSPC;
			c -= 0x10000;
			smb_put_le16(out + o, (uint16_t)(0xD800 | (c >> 10)));
			smb_put_le16(out + o + 2, (uint16_t)(0xDC00 | (c & 0x3FF)));
			o += 4;
		} else {
			if (cap - o < 2)
				return -ENOSPC;
			smb_put_le16(out + o, (uint16_t)c);
			o += 2;
		}
	}
	return (ssize_t)o;
}

/* The code point at in[*i] (*i < inlen, both even): a pair of surrogates
 * takes two units, and *i is left on the last unit taken.  -EILSEQ for an
 * unpaired surrogate. */
static int utf16_next(const uint8_t *in, size_t inlen, size_t *i, uint32_t *cp)
{
	uint32_t c = smb_le16(in + *i);
	if (c >= 0xD800 && c <= 0xDBFF) {
		if (inlen - *i < 4)
			return -EILSEQ;
		uint32_t lo = smb_le16(in + *i + 2);
		if (lo < 0xDC00 || lo > 0xDFFF)
			return -EILSEQ;
		c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
		*i += 2;
	} else if (c >= 0xDC00 && c <= 0xDFFF) {
		return -EILSEQ;
	}
	*cp = c;
	return 0;
}

ssize_t smb_utf16le_utf8_len(const uint8_t *in, size_t inlen)
{
	size_t o = 0;

	if (inlen % 2 || (!in && inlen))
		return -EINVAL;
	for (size_t i = 0; i < inlen; i += 2) {
		uint32_t c;
		if (utf16_next(in, inlen, &i, &c))
			return -EILSEQ;
		if (c == 0)
			break;
		o += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
	}
	return (ssize_t)o;
}

ssize_t smb_utf16le_to_utf8(const uint8_t *in, size_t inlen, char *out, size_t cap)
{
	uint8_t *d = (uint8_t *)out;
	size_t o = 0;

	if (inlen % 2 || (!in && inlen))
		return -EINVAL;
	if (!out || cap == 0)
		return -ENOSPC;
	for (size_t i = 0; i < inlen; i += 2) {
		uint32_t c;
		if (utf16_next(in, inlen, &i, &c))
			return -EILSEQ;
		if (c == 0) {
			/* Trailing NUL padding ends the string; a NUL inside a
			 * name would truncate it on our side, so refuse that. */
			for (size_t k = i; k < inlen; k++)
				if (in[k])
					return -EILSEQ;
			break;
		}

		size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
		if (cap - o < n + 1)
			return -ENOSPC;
		switch (n) {
		case 1:
			d[o] = (uint8_t)c;
			break;
		case 2:
			d[o] = (uint8_t)(0xC0 | (c >> 6));
			d[o + 1] = (uint8_t)(0x80 | (c & 0x3F));
			break;
		case 3:
			d[o] = (uint8_t)(0xE0 | (c >> 12));
			d[o + 1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
			d[o + 2] = (uint8_t)(0x80 | (c & 0x3F));
			break;
		default:
			d[o] = (uint8_t)(0xF0 | (c >> 18));
			d[o + 1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
			d[o + 2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
			d[o + 3] = (uint8_t)(0x80 | (c & 0x3F));
			break;
		}
		o += n;
	}
	d[o] = 0;
	return (ssize_t)o;
}
