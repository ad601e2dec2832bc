/* The trace writer: every event into a per-thread buffer, written out in
 * whole, checksummed chunks (docs/trace-format.md).  On when MEMTRACE_OUT
 * names a file; the probes call it only then, behind one branch. */
#ifndef MEMTRACE_TRACE_H
#define MEMTRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "kcounters.h"
#include "thread.h"
#include "visibility.h"

extern MT_HIDDEN bool mt_tracing;

/* Open the trace file (at start-up, with the options read). */
void mt_trace_start(void);
/* In a child after fork: a file of its own. */
void mt_trace_restart_in_child(pid_t parent);
/* At exit: the closing record, then every thread's events written out. */
void mt_trace_finish(const char *exit_json, size_t len);
/* A thread takes a counter block (that may have served a thread now
 * gone): its events go under its own id. */
void mt_trace_thread_attach(struct mt_thread *t);
/* A thread ends: its events are written out. */
void mt_trace_thread_exit(struct mt_thread *t);
/* Before exec: this thread's events written out, and the exec noted. */
void mt_trace_exec(const char *path);
/* After an exec that failed: the image goes on recording. */
void mt_trace_exec_failed(void);
/* The process ends without exit() (_exit, _Exit) or dies of a fatal
 * signal: every thread's events written out, and how it ended.  Both are
 * safe in a signal handler, and do nothing in a vfork child. */
void mt_trace_exit_now(int status);
void mt_trace_crash(int sig);

void mt_trace_alloc(struct mt_thread *t, int entry, size_t align,
		    size_t size, const void *p, size_t usable);
void mt_trace_free(struct mt_thread *t, const void *p, size_t usable);
void mt_trace_realloc(struct mt_thread *t, int entry, const void *old,
		      size_t old_usable, bool old_freed, size_t size,
		      const void *p, size_t usable);
void mt_trace_usable(struct mt_thread *t, const void *p);
void mt_trace_syscall(struct mt_thread *t, int entry, bool by_allocator,
		      uint64_t addr, uint64_t len, uint64_t arg, int64_t result);
void mt_trace_sys_count(struct mt_thread *t, int sys, bool by_allocator,
			uint64_t bytes, int advice);
void mt_trace_heap_move(struct mt_thread *t, uintptr_t from, uintptr_t to,
			unsigned inferred_syscalls);
void mt_trace_chunk_map(struct mt_thread *t, int sys, uint64_t bytes);
void mt_trace_fault(struct mt_thread *t, uint32_t tid, uint64_t addr,
		    uint64_t ip, uint64_t time_ns);
void mt_trace_lost_samples(struct mt_thread *t, uint64_t count);
/* A memory syscall seen by the kernel: its arguments at entry, its result
 * (arg[0]) at exit. */
void mt_trace_kernel_call(struct mt_thread *t, uint32_t tid, int sys,
			  bool exit, uint64_t time_ns, const uint64_t arg[3]);
void mt_trace_region(struct mt_thread *t, int tag, int id, const char *name,
		     uint64_t wall_ns);
void mt_trace_counters(struct mt_thread *t, const struct mt_ksnapshot *k,
		       const uint64_t *shim, const struct rusage *ru);

#endif
