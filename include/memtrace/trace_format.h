/* The memtrace trace file, version 1 (docs/trace-format.md).
 *
 *   file   = file_header, metadata (JSON, metadata_len bytes), chunk*
 *   chunk  = chunk_header, payload (payload_len bytes, zstd when
 *            MT_CHUNK_ZSTD), decoding to raw_len bytes of events
 *   event  = tag byte, then unsigned LEB128 varints as the tag says
 *
 * A chunk holds the events of one thread and decodes on its own: its
 * first event's time is relative to the chunk's first_tsc and its first
 * address to zero, so a damaged chunk is skipped without losing the rest.
 * All integers are little-endian. */
#ifndef MEMTRACE_TRACE_FORMAT_H
#define MEMTRACE_TRACE_FORMAT_H

#include <stdint.h>

#define MT_TRACE_MAGIC "MEMTRACE"
#define MT_TRACE_MAJOR 1
#define MT_TRACE_MINOR 0
#define MT_CHUNK_MAGIC 0x4b43544du /* "MTCK" */

struct mt_file_header {
	char magic[8];		/* "MEMTRACE" */
	uint16_t major, minor;
	uint32_t metadata_len;	/* JSON that follows */
	uint64_t metadata_hash; /* XXH64 of the metadata, seed 0 */
};

#define MT_CHUNK_ZSTD 1u

struct mt_chunk_header {
	uint32_t magic;	      /* MT_CHUNK_MAGIC */
	uint32_t flags;
	uint32_t tid;
	uint32_t seq;	      /* per thread, from 0 */
	uint32_t payload_len; /* bytes stored after this header */
	uint32_t raw_len;     /* bytes of events once decoded */
	uint32_t events;
	uint32_t reserved;
	uint64_t first_tsc;   /* time base of the chunk's first event */
	uint64_t first_ns;    /* CLOCK_MONOTONIC at first_tsc */
	uint64_t hash;	      /* XXH64 of the stored payload, seed 0 */
};

_Static_assert(sizeof(struct mt_file_header) == 24, "file header layout");
_Static_assert(sizeof(struct mt_chunk_header) == 56, "chunk header layout");

/* Time deltas are in units of 2^MT_TSC_SHIFT TSC ticks (about 5 ns). */
#define MT_TSC_SHIFT 4

/* Event tags.  "addr" is a zigzag delta from the thread's previous
 * address; "dt" the time since its previous event. */
enum mt_tag {
	/* dt, size, addr, usable - size */
	MT_EV_MALLOC = 1,
	/* dt, addr, usable (0: free(NULL)) */
	MT_EV_FREE,
	/* dt, n*size, addr, usable - size */
	MT_EV_CALLOC,
	/* dt, old addr, old usable, size, addr, usable */
	MT_EV_REALLOC,
	/* dt, entry (enum mt_call), alignment, size, addr, usable */
	MT_EV_ALIGNED,
	/* dt, addr */
	MT_EV_USABLE_SIZE,
	/* dt, entry (enum mt_call), sys (enum mt_sys), by_allocator,
	 * arg0 (address, zigzag delta), arg1 (length), arg2 (prot, flags or
	 * advice), result (zigzag, absolute) */
	MT_EV_SYSCALL,
	/* dt, from, to: glibc moved the program break out of sight */
	MT_EV_HEAP_MOVE,
	/* dt, sys (mmap, munmap, mremap), bytes: glibc mapped a chunk */
	MT_EV_CHUNK_MAP,
	/* dt, id, length, name bytes: a region name's first use */
	MT_EV_REGION_NAME,
	/* dt, id */
	MT_EV_REGION_BEGIN,
	MT_EV_REGION_END,
	/* dt, count, then count values: kernel counters (MT_KERNEL_COUNT,
	 * each + 1, 0 meaning not available), then user and system CPU in
	 * microseconds, minor and major faults (getrusage, thread) */
	MT_EV_COUNTERS,
	/* dt, parent tid: the thread's first event */
	MT_EV_THREAD_START,
	/* dt */
	MT_EV_THREAD_EXIT,
	/* dt, child pid */
	MT_EV_FORK,
	/* dt, length, path bytes: the process replaces its image */
	MT_EV_EXEC,
	/* dt, count: events that could not be recorded */
	MT_EV_LOST,
	/* dt, then the process totals at exit as MT_EV_COUNTERS, for the
	 * whole process (getrusage RUSAGE_SELF) */
	MT_EV_EXIT,
	MT_EV_COUNT
};

#endif
