/* The trace's events, each named once: its tag, the name dump prints and
 * the LTTng provider uses (memtrace:NAME; the malloc-API and syscall
 * events are one LTTng event per entry point instead), how it is stored,
 * and its fields as the readers give them back.  From this list come the
 * tags, the readers' field counts and typed events (struct mt_ev_NAME),
 * dump's names, the LTTng reader's field names, and the check of
 * docs/trace-format.md's table (tests/traces/check_schema.py).
 *
 *   X(ID, name, wire, fields...)
 *
 *   ID      MT_EV_ID, the tag, numbered from 1 in this order (the
 *           file format: a new event goes at the end)
 *   wire    what follows the tag and dt: that many varints, or
 *           MT_WIRE_TEXT (the fields, then a length and that many bytes),
 *           MT_WIRE_ARRAY (a count, then that many values), MT_WIRE_SAMPLE
 *           (a kernel sample, whose argument count depends on its kind)
 *   fields  as decoded (struct mt_ev_name, in this order); the wire may
 *           pack them (trace_format.h says how), the readers unpack them
 *
 * Adding an event of varints: a line here, the probe that emits it
 * (MT_EMIT_EVENT, shim/emit.h: every sink records it, LTTng as
 * memtrace:event), and the analyses that use it.  Nothing else. */
#ifndef MEMTRACE_TRACE_EVENTS_H
#define MEMTRACE_TRACE_EVENTS_H

#include <stdint.h>

#define MT_WIRE_TEXT (-1)
#define MT_WIRE_ARRAY (-2)
#define MT_WIRE_SAMPLE (-3)

/* The most values an array event (counters, baseline) can carry. */
#define MT_ARRAY_MAX 512

#define MT_TRACE_EVENTS(X)                                                   \
	/* an allocation; wire: entry | (log2(align) + 1) << 5, size, ptr,    \
	 * usable - size (zigzag) */                                          \
	X(ALLOC, alloc, 4, entry, align, size, ptr, usable)                  \
	/* ptr 0: free(NULL) or a bootstrap block */                          \
	X(FREE, free, 2, ptr, usable)                                        \
	/* wire: usable - size (zigzag) */                                    \
	X(REALLOC, realloc, 7, entry, old_freed, old_ptr, old_usable, size,  \
	  ptr, usable)                                                        \
	X(USABLE_SIZE, malloc_usable_size, 1, ptr)                           \
	/* an interposed memory-syscall wrapper; result zigzag */             \
	X(SYSCALL, syscall, 6, entry, by_allocator, addr, len, arg, result)  \
	/* a memory syscall reached the kernel (counted by the innermost      \
	 * interposer) */                                                     \
	X(SYS_COUNT, sys, 4, sys, by_allocator, bytes, advice)               \
	X(HEAP_MOVE, heap_move, 3, from, to, inferred_syscalls)              \
	X(CHUNK_MAP, chunk_map, 2, sys, bytes)                               \
	X(REGION_NAME, region_name, MT_WIRE_TEXT, id)                        \
	X(REGION_BEGIN, region_begin, 1, id)                                 \
	X(REGION_END, region_end, 2, id, wall_ns)                            \
	X(COUNTERS, counters, MT_WIRE_ARRAY, values[MT_ARRAY_MAX])           \
	/* tid | MT_SHIM_THREAD for a thread of the shim's own */          \
	X(THREAD_START, thread_start, 1, tid)                                 \
	X(THREAD_EXIT, thread_exit, 1, tid)                                  \
	X(FORKED, forked, 1, parent)                                         \
	X(EXEC, exec, MT_WIRE_TEXT)                                          \
	X(LOST, lost, 1, count)                                              \
	X(EXIT, exit, MT_WIRE_TEXT)                                          \
	X(BASELINE, baseline, MT_WIRE_ARRAY, values[MT_ARRAY_MAX])           \
	/* wire: tid and time as changes, then addr, ip */                    \
	X(FAULT, page_fault, MT_WIRE_SAMPLE, tid, addr, ip, time_ns)         \
	X(SAMPLES_LOST, samples_lost, 1, count)                              \
	/* a memory syscall as the kernel saw it; which: sys | exit << 4;     \
	 * at exit, arg0 is the result (zigzag) */                            \
	X(KCALL, kernel_call, MT_WIRE_SAMPLE, tid, which, time_ns, arg0,     \
	  arg1, arg2)                                                         \
	/* an allocation by malloc, the commonest, stored without its entry  \
	 * (size, ptr, usable - size): read back as an alloc event */         \
	X(MALLOC, malloc, 3, size, ptr, slack)                               \
	/* resident memory (1.9): anonymous (resident - shared of             \
	 * /proc/self/statm) and file-backed bytes, and at the same moment    \
	 * the heap's live bytes and the bytes the program mapped itself (its \
	 * mmaps less its munmaps, the allocator's apart); at_exit: the last  \
	 * sample, taken at exit (every MEMTRACE_RSS ms before it); time_ms  \
	 * (1.10): since the shim started, on the clock the shim's own fold  \
	 * of the samples used (a 1.9 file: read from the event's time);      \
	 * freed_bytes (1.10): the large block whose free took this sample,  \
	 * live until just before it (0: a periodic sample);                 \
	 * large_live_bytes (1.12): the large blocks' share of live_bytes */ \
	X(RSS, rss, 8, anon_bytes, file_bytes, live_bytes,                   \
	  program_mapped_bytes, at_exit, time_ms, freed_bytes,               \
	  large_live_bytes)                                                  \
	/* the call sites so far (1.11), the summary's "sites" JSON: written  \
	 * now and then while they change, and before a crash, _exit or      \
	 * exec, for a process that never reaches exit (the closing record's \
	 * replace them) */                                                   \
	X(SITES, sites, MT_WIRE_TEXT)                                        \
	/* a large block followed to its call site (1.12): the site's "id"   \
	 * in the sites JSON, so that a fault sampled inside the block while \
	 * it lives is put on the code that allocated it */                  \
	X(BLOCK_SITE, block_site, 3, ptr, bytes, site)                     \
	/* an anonymous mapping of 128 KiB or more about to be unmapped      \
	 * (1.13): its bytes resident (touched), and those in transparent    \
	 * huge pages; by_allocator: the allocator's unmapping */             \
	X(UNMAP_TOUCHED, unmap_touched, 3, by_allocator, bytes, huge_bytes) \
	/* glibc's realloc resized a mapped chunk in place, with mremap      \
	 * (1.15): its size before and after (the chunk_map event of the    \
	 * same mremap has the size after only) */                           \
	X(CHUNK_REMAP, chunk_remap, 2, from_bytes, to_bytes)               \
	/* the program called malloc_trim (1.16): the bytes the program     \
	 * break shrank by in the call (glibc's main heap; its heap_move    \
	 * event follows), and the other resident bytes it gave back (free  \
	 * pages inside the heaps, madvised away) */                         \
	X(MALLOC_TRIM, malloc_trim, 2, shrink_bytes, purged_bytes)         \
	/* anonymous memory of 128 KiB or more about to be purged with      \
	 * madvise (MADV_DONTNEED, MADV_FREE) (1.18): as unmap_touched */     \
	X(PURGE_TOUCHED, purge_touched, 3, by_allocator, bytes, huge_bytes) \
	/* a purge of the program's own that fell on `bytes` it had purged  \
	 * before (1.18: shim/own_purges.h) */                                \
	X(OWN_PURGE_AGAIN, own_purge_again, 1, bytes)                      \
	/* the process's figures the closing record would carry, as they    \
	 * are now (1.19), written now and then by the shim's own thread, so \
	 * that a process killed before exit is measured up to its last one: \
	 * wall time since the shim started, CPU and page faults from        \
	 * getrusage, the threads seen, then the kernel counters' memory     \
	 * system calls (less the shim's own) and page faults, each + 1 (0:  \
	 * not counted by the kernel) */                                     \
	X(PROGRESS, progress, 14, wall_us, user_us, system_us, rusage_minor, \
	  rusage_major, threads, brk, mmap, munmap, mremap, madvise,         \
	  mprotect, minor_faults, major_faults)

/* In a thread_start event's tid: a thread of the shim's own (its events
 * the shim's, the kernel calls sampled on it not the program's); the
 * bit above any tid, which readers before it took for a thread they
 * never met. */
#define MT_SHIM_THREAD ((uint64_t)1 << 32)

enum mt_tag {
#define MT_TAG_OF(id, name, wire, ...) MT_EV_##id,
	MT_EV_NONE,
	MT_TRACE_EVENTS(MT_TAG_OF)
#undef MT_TAG_OF
	MT_EV_COUNT
};

/* The tag and the wire of an event by its name: MT_TAG_heap_move,
 * MT_WIRE_OF_heap_move. */
enum {
#define MT_BY_NAME(id, name, wire, ...)                                      \
	MT_TAG_##name = MT_EV_##id, MT_WIRE_OF_##name = (wire),
	MT_TRACE_EVENTS(MT_BY_NAME)
#undef MT_BY_NAME
};

/* Each event's fields as a struct: the decoded values in order, so a
 * reader's uint64_t array of them can be read as one. */
#define MT_EV_STRUCT(id, name, wire, ...)                                    \
	struct mt_ev_##name {                                                \
		__VA_OPT__(uint64_t __VA_ARGS__;)                            \
	};
MT_TRACE_EVENTS(MT_EV_STRUCT)
#undef MT_EV_STRUCT

struct mt_event_kind {
	const char *name;
	int wire;	    /* varints stored, or MT_WIRE_* */
	unsigned fields;    /* decoded (an array's capacity) */
	const char *field_names; /* "entry, align, ..." */
};

/* Indexed by tag. */
extern const struct mt_event_kind mt_event_kinds[MT_EV_COUNT];

#endif
