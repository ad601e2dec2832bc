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

#include "memtrace/events.h"
#include "memtrace/trace_events.h"

#define MT_TRACE_MAGIC "MEMTRACE"
#define MT_TRACE_MAJOR 1
#define MT_TRACE_MINOR 19
#define MT_CHUNK_MAGIC 0x4b43544du /* "MTCK" */

struct mt_file_header {
	char magic[8];		/* "MEMTRACE" */
	uint16_t major, minor;
	uint32_t metadata_len;	/* JSON that follows */
	uint64_t metadata_hash; /* XXH64 of the metadata, seed 0 */
};

#define MT_CHUNK_ZSTD 1u
/* A copy of a chunk still being filled, written while its thread is idle
 * so that a killed process loses little; the later chunk of the same tid
 * and seq (the whole one, or a longer copy) supersedes it. */
#define MT_CHUNK_PROVISIONAL 2u
/* The trace's status (1.8): the first chunk after the metadata, tid 0,
 * seq 0, no events, a struct mt_trace_status as its raw payload.  Written
 * when the file is created and overwritten in place when recording ends,
 * so the file says how its process ended even when the disk filled up or
 * the process was killed (then it still says "recording"). */
#define MT_CHUNK_STATUS 4u
/* A chunk's seq with this bit set belongs to its thread's second stream:
 * events recorded by a signal handler that interrupted the thread while it
 * was writing an event of its own (1.8).  Same tid, numbered from
 * MT_SEQ_SIGNAL; the order between the two streams is their times. */
#define MT_SEQ_SIGNAL 0x80000000u

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
	uint64_t hash;	      /* XXH64 of the payload, seeded with XXH64 of
				 this header with hash 0 (common/chunk_hash.h) */
};

/* How recording ended. */
enum mt_trace_end {
	MT_END_RECORDING, /* never closed: killed (SIGKILL, the OOM killer),
			     or still running */
	MT_END_EXIT,	  /* exit(): the exit event follows; value: status,
			     when known (else -1) */
	MT_END_EXEC,	  /* the image was replaced (execve): the exec event
			     says by what; the next image writes a file of
			     its own */
	MT_END_EXIT_NOW,  /* _exit()/_Exit(): no atexit work, no exit event;
			     value: the status */
	MT_END_SIGNAL,	  /* a fatal signal (SIGSEGV, SIGABRT, ...); value: the
			     signal; every buffer was written out first */
	MT_END_WRITE_FAILED, /* a write failed; value: errno (ENOSPC: the disk
				is full), at: where in the file */
	MT_END_COUNT
};

struct mt_trace_status {
	uint32_t end;	/* enum mt_trace_end */
	int32_t value;	/* as the end says */
	uint64_t at;	/* MT_END_WRITE_FAILED: the file offset */
	uint64_t lost;	/* events the shim could not record */
	uint64_t reserved;
};

_Static_assert(sizeof(struct mt_trace_status) == 32, "status layout");
_Static_assert(sizeof(struct mt_file_header) == 24, "file header layout");
_Static_assert(sizeof(struct mt_chunk_header) == 56, "chunk header layout");

/* Time deltas are in units of 2^MT_TSC_SHIFT TSC ticks (about 20 ns). */
#define MT_TSC_SHIFT 6

/* The values of a COUNTERS event. */
#define MT_COUNTERS_VALUES (MT_KERNEL_COUNT + MT_SYS_COUNT + 4)

/* An allocation's entry point and alignment in one varint: the entry in
 * the low 5 bits, log2(alignment) + 1 above them (0: no alignment). */
static inline uint64_t mt_entry_align(int entry, uint64_t align)
{
	unsigned log = 0;
	while (align && (1ull << log) < align)
		log++;
	return (uint64_t)entry | (uint64_t)(align ? log + 1 : 0) << 5;
}

/* A tag byte: the tag in the low 5 bits; above them, dt + 1 for a dt
 * below MT_DT_INLINE, or 0 with dt as the first varint after it. */
#define MT_TAG_BITS 5
#define MT_DT_INLINE 7
/* A tag the low bits cannot hold (1.19): they are 0, and the tag is the
 * byte after the tag byte (before dt, when dt follows). */
#define MT_TAG_EXTENDED (1 << MT_TAG_BITS)

/* Every event starts with its tag and "dt", the time since the thread's
 * previous event (units of 2^MT_TSC_SHIFT TSC ticks); the tags and fields
 * are listed in memtrace/trace_events.h.  On the wire, "ptr" fields are
 * zigzag deltas from the thread's previous address, an allocation's
 * usable size is stored as its slack over the size (zigzag), its entry
 * and alignment share one varint (mt_entry_align), and a kernel sample's
 * tid and time are changes from its chunk's tid and previous sample.
 * The events mirror the shim's probes one to one, so a reader that
 * applies the same counting rules gets the same figures as the live
 * summary. */
_Static_assert(MT_EV_COUNT <= 128, "an extended tag is a varint of one byte");
_Static_assert(MT_EV_ALLOC == 1 && MT_EV_COUNTERS == 12 && MT_EV_KCALL == 22 &&
		       MT_EV_MALLOC == 23,
	       "tags as in format 1.8");

#endif
