/* Page-fault samples from the kernel (MEMTRACE_FAULTS=sample[:N]): each
 * sampled fault's data address, instruction pointer, thread and time, into
 * the trace, so that an analysis can tell which buffer took the faults. */
#ifndef MEMTRACE_KSAMPLES_H
#define MEMTRACE_KSAMPLES_H

#include <stdbool.h>
#include <stdint.h>

struct mt_thread;

/* Start sampling 1 fault in `period` (at start-up, with the trace open). */
void mt_ksamples_start(unsigned period);
/* Move the samples the kernel has gathered into t's trace buffer.  Called
 * at region boundaries, when a buffer is written out, and at exit. */
void mt_ksamples_drain(struct mt_thread *t);
/* At exit: the last samples in, and no more after (the summary counts
 * them). */
void mt_ksamples_finish(struct mt_thread *t);
/* In a child after fork: the parent's sampler is not ours. */
void mt_ksamples_forget(void);
/* Samples recorded, and lost (the kernel's buffer was full). */
uint64_t mt_ksamples_taken(void);
uint64_t mt_ksamples_lost(void);

#endif
