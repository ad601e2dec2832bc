/* Resident memory over the run, beside the heap's live bytes (rss.c): what
 * tells memory the allocator keeps from memory the program uses. */
#ifndef MEMTRACE_RSS_H
#define MEMTRACE_RSS_H

#include "thread.h"

/* With events recorded: start the sampler, every MEMTRACE_RSS ms (a look
 * costs about 6 us: 0.03% of a CPU at 20 ms), at start-up and in a child
 * after fork, which has a /proc/self of its own. */
void mt_rss_start(void);
void mt_rss_restart_in_child(void);
/* One sample now, on thread t (at exit: the last). */
void mt_rss_sample(struct mt_thread *t);

#endif
