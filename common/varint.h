/* Unsigned LEB128 varints and zigzag signed deltas: the trace's encoding. */
#ifndef MEMTRACE_VARINT_H
#define MEMTRACE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* At most 10 bytes; returns the end. */
static inline unsigned char *mt_put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static inline uint64_t mt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t mt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reads a varint from [*p, end); false (and *p unchanged) when it runs off
 * the end or is longer than 10 bytes. */
static inline int mt_get_varint(const unsigned char **p,
				const unsigned char *end, uint64_t *out)
{
	uint64_t v = 0;
	const unsigned char *q = *p;
	for (unsigned shift = 0; q < end && shift < 70; shift += 7) {
		unsigned char b = *q++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 1;
		}
	}
	return 0;
}

#endif
