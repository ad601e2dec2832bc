/* The event vocabulary shared by the shim (which counts and records events)
 * and the analyzers (which read them back).  One list, used everywhere, so a
 * counter, a trace record and a JSON key for the same thing share one name. */
#ifndef MEMTRACE_EVENTS_H
#define MEMTRACE_EVENTS_H

/* Every interposed entry point, in the order the summary lists them. */
#define MT_CALLS(X)                                                          \
	X(MALLOC, "malloc")                                                  \
	X(FREE, "free")                                                      \
	X(CALLOC, "calloc")                                                  \
	X(REALLOC, "realloc")                                                \
	X(REALLOCARRAY, "reallocarray")                                      \
	X(POSIX_MEMALIGN, "posix_memalign")                                  \
	X(ALIGNED_ALLOC, "aligned_alloc")                                    \
	X(MEMALIGN, "memalign")                                              \
	X(VALLOC, "valloc")                                                  \
	X(PVALLOC, "pvalloc")                                                \
	X(MALLOC_USABLE_SIZE, "malloc_usable_size")                          \
	X(MMAP, "mmap")                                                      \
	X(MMAP64, "mmap64")                                                  \
	X(MUNMAP, "munmap")                                                  \
	X(MREMAP, "mremap")                                                  \
	X(BRK, "brk")                                                        \
	X(SBRK, "sbrk")                                                      \
	X(MADVISE, "madvise")                                                \
	X(SYSCALL, "syscall")

enum mt_call {
#define MT_ENUM(id, name) MT_CALL_##id,
	MT_CALLS(MT_ENUM)
#undef MT_ENUM
	MT_CALL_COUNT
};

/* The memory system calls, however they were reached (libc wrapper,
 * syscall(2), or seen by the kernel).  mprotect is counted by the kernel
 * counters only (it is not interposed). */
#define MT_SYSCALLS(X)                                                       \
	X(BRK, "brk")                                                        \
	X(MMAP, "mmap")                                                      \
	X(MUNMAP, "munmap")                                                  \
	X(MREMAP, "mremap")                                                  \
	X(MADVISE, "madvise")                                                \
	X(MPROTECT, "mprotect")

enum mt_sys {
#define MT_ENUM(id, name) MT_SYS_##id,
	MT_SYSCALLS(MT_ENUM)
#undef MT_ENUM
	MT_SYS_COUNT
};

/* What the kernel counters count: each memory syscall (in enum mt_sys
 * order), then page faults. */
enum mt_kernel_event {
	MT_KERNEL_MINOR_FAULTS = MT_SYS_COUNT,
	MT_KERNEL_MAJOR_FAULTS,
	MT_KERNEL_COUNT
};

/* madvise advice values are small integers (<linux/mman.h>); larger ones
 * (MADV_HWPOISON = 100, ...) share the last slot. */
#define MT_ADVICE_SLOTS 32

/* Power-of-two size classes: bucket 0 holds size 0, bucket k holds sizes
 * in [2^(k-1), 2^k). */
#define MT_SIZE_BUCKETS 65

extern const char *const mt_call_names[MT_CALL_COUNT];
extern const char *const mt_sys_names[MT_SYS_COUNT];

/* "MADV_DONTNEED" for 4, NULL for a value with no name. */
const char *mt_advice_name(unsigned slot);

#endif
