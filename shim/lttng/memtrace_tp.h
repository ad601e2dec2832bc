/* The memtrace tracepoint provider: one LTTng-UST event per native trace
 * event (docs/trace-format.md), with the same fields.  The malloc API and
 * the libc memory calls are events named after the call (memtrace:malloc,
 * memtrace:mmap, ...), instances of one class per shape. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER memtrace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "memtrace_tp.h"

#if !defined(MEMTRACE_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define MEMTRACE_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT_CLASS(memtrace, alloc_class,
	LTTNG_UST_TP_ARGS(uint64_t, align, uint64_t, size, uint64_t, ptr,
			  uint64_t, usable),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, align, align)
		lttng_ust_field_integer(uint64_t, size, size)
		lttng_ust_field_integer_hex(uint64_t, ptr, ptr)
		lttng_ust_field_integer(uint64_t, usable, usable)))

#define MT_TP_ALLOC(name)                                                    \
	LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(memtrace, alloc_class, memtrace,  \
		name, LTTNG_UST_TP_ARGS(uint64_t, align, uint64_t, size,      \
					uint64_t, ptr, uint64_t, usable))
MT_TP_ALLOC(malloc)
MT_TP_ALLOC(calloc)
MT_TP_ALLOC(posix_memalign)
MT_TP_ALLOC(aligned_alloc)
MT_TP_ALLOC(memalign)
MT_TP_ALLOC(valloc)
MT_TP_ALLOC(pvalloc)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(memtrace, realloc_class,
	LTTNG_UST_TP_ARGS(uint64_t, old_ptr, uint64_t, old_usable, int,
			  old_freed, uint64_t, size, uint64_t, ptr, uint64_t,
			  usable),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, old_ptr, old_ptr)
		lttng_ust_field_integer(uint64_t, old_usable, old_usable)
		lttng_ust_field_integer(uint8_t, old_freed, old_freed)
		lttng_ust_field_integer(uint64_t, size, size)
		lttng_ust_field_integer_hex(uint64_t, ptr, ptr)
		lttng_ust_field_integer(uint64_t, usable, usable)))

#define MT_TP_REALLOC(name)                                                  \
	LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(memtrace, realloc_class,          \
		memtrace, name,                                               \
		LTTNG_UST_TP_ARGS(uint64_t, old_ptr, uint64_t, old_usable,    \
				  int, old_freed, uint64_t, size, uint64_t,   \
				  ptr, uint64_t, usable))
MT_TP_REALLOC(realloc)
MT_TP_REALLOC(reallocarray)

LTTNG_UST_TRACEPOINT_EVENT(memtrace, free,
	LTTNG_UST_TP_ARGS(uint64_t, ptr, uint64_t, usable),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ptr, ptr)
		lttng_ust_field_integer(uint64_t, usable, usable)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, malloc_usable_size,
	LTTNG_UST_TP_ARGS(uint64_t, ptr),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer_hex(uint64_t, ptr, ptr)))

/* A libc memory call as the program (or its allocator) made it. */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(memtrace, call_class,
	LTTNG_UST_TP_ARGS(int, by_allocator, uint64_t, addr, uint64_t, len,
			  uint64_t, arg, int64_t, result),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, by_allocator, by_allocator)
		lttng_ust_field_integer_hex(uint64_t, addr, addr)
		lttng_ust_field_integer(uint64_t, len, len)
		lttng_ust_field_integer(uint64_t, arg, arg)
		lttng_ust_field_integer(int64_t, result, result)))

#define MT_TP_CALL(name)                                                     \
	LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(memtrace, call_class, memtrace,   \
		name, LTTNG_UST_TP_ARGS(int, by_allocator, uint64_t, addr,    \
					uint64_t, len, uint64_t, arg,         \
					int64_t, result))
MT_TP_CALL(mmap)
MT_TP_CALL(mmap64)
MT_TP_CALL(munmap)
MT_TP_CALL(mremap)
MT_TP_CALL(brk)
MT_TP_CALL(sbrk)
MT_TP_CALL(madvise)
MT_TP_CALL(syscall)

/* A memory system call made (whatever the path to it), with its bytes. */
LTTNG_UST_TRACEPOINT_EVENT(memtrace, sys,
	LTTNG_UST_TP_ARGS(int, sys, int, by_allocator, uint64_t, bytes, int,
			  advice),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, sys, sys)
		lttng_ust_field_integer(uint8_t, by_allocator, by_allocator)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer(int32_t, advice, advice)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, heap_move,
	LTTNG_UST_TP_ARGS(uint64_t, from, uint64_t, to, unsigned,
			  inferred_syscalls),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, from, from)
		lttng_ust_field_integer_hex(uint64_t, to, to)
		lttng_ust_field_integer(uint32_t, inferred_syscalls,
					inferred_syscalls)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, chunk_map,
	LTTNG_UST_TP_ARGS(int, sys, uint64_t, bytes),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, sys, sys)
		lttng_ust_field_integer(uint64_t, bytes, bytes)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, page_fault,
	LTTNG_UST_TP_ARGS(uint32_t, tid, uint64_t, addr, uint64_t, ip,
			  uint64_t, time_ns),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, tid, tid)
		lttng_ust_field_integer_hex(uint64_t, addr, addr)
		lttng_ust_field_integer_hex(uint64_t, ip, ip)
		lttng_ust_field_integer(uint64_t, time_ns, time_ns)))

/* The kernel's view of a memory syscall: arguments at entry, the result
 * (arg0) at exit. */
LTTNG_UST_TRACEPOINT_EVENT(memtrace, kernel_call,
	LTTNG_UST_TP_ARGS(uint32_t, tid, int, sys, int, exit, uint64_t,
			  time_ns, const uint64_t *, arg),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, tid, tid)
		lttng_ust_field_integer(uint8_t, sys, sys)
		lttng_ust_field_integer(uint8_t, exit, exit)
		lttng_ust_field_integer(uint64_t, time_ns, time_ns)
		lttng_ust_field_array(uint64_t, arg, arg, 3)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, samples_lost,
	LTTNG_UST_TP_ARGS(uint64_t, count),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, count, count)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, region_name,
	LTTNG_UST_TP_ARGS(int, id, const char *, name),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int32_t, id, id)
		lttng_ust_field_string(name, name)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, region_begin,
	LTTNG_UST_TP_ARGS(int, id),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int32_t, id, id)))

LTTNG_UST_TRACEPOINT_EVENT(memtrace, region_end,
	LTTNG_UST_TP_ARGS(int, id, uint64_t, wall_ns),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int32_t, id, id)
		lttng_ust_field_integer(uint64_t, wall_ns, wall_ns)))

/* Counter snapshots (docs/trace-format.md gives the order), whole values. */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(memtrace, values_class,
	LTTNG_UST_TP_ARGS(const uint64_t *, values, size_t, n),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_sequence(uint64_t, values, values, uint32_t,
					 n)))

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(memtrace, values_class, memtrace,
	counters, LTTNG_UST_TP_ARGS(const uint64_t *, values, size_t, n))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(memtrace, values_class, memtrace,
	baseline, LTTNG_UST_TP_ARGS(const uint64_t *, values, size_t, n))

/* Any other event of the native trace whose fields are all integers
 * (include/memtrace/trace_events.h): its name, and its fields in order. */
LTTNG_UST_TRACEPOINT_EVENT(memtrace, event,
	LTTNG_UST_TP_ARGS(const char *, name, const uint64_t *, values, size_t,
			  n),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(name, name)
		lttng_ust_field_sequence(uint64_t, values, values, uint32_t,
					 n)))

/* The process's metadata (docs/trace-format.md): what a native trace
 * holds in its file header. */
LTTNG_UST_TRACEPOINT_EVENT(memtrace, metadata,
	LTTNG_UST_TP_ARGS(const char *, json, size_t, len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_sequence_text(char, json, json, uint32_t,
					      len)))

/* The process's summary at exit (docs/summary-json.md). */
LTTNG_UST_TRACEPOINT_EVENT(memtrace, exit,
	LTTNG_UST_TP_ARGS(const char *, json, size_t, len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_sequence_text(char, json, json, uint32_t,
					      len)))

#endif

#include <lttng/tracepoint-event.h>
