/* A chunk's checksum covers its header and its payload: damage to either
 * is caught. */
#ifndef MEMTRACE_CHUNK_HASH_H
#define MEMTRACE_CHUNK_HASH_H

#include <xxhash.h>

#include "memtrace/trace_format.h"

static inline uint64_t mt_chunk_hash(const struct mt_chunk_header *h,
				     const void *payload)
{
	struct mt_chunk_header copy = *h;
	copy.hash = 0;
	return XXH64(payload, h->payload_len, XXH64(&copy, sizeof copy, 0));
}

#endif
