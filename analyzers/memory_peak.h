/* memory-peak: with several backends run, one on which the command held
 * far more memory resident at its peak than on another, and many times
 * what it had live: the allocator's own keeping (free pages it holds for
 * reuse or has not given back yet), which a machine must have room for
 * even where it lasts too little for memory-kept. */
#ifndef MEMTRACE_MEMORY_PEAK_H
#define MEMTRACE_MEMORY_PEAK_H

#include <stdbool.h>

#include "explain_runs.h"

/* Its findings kept in all; false when there is no room. */
bool mt_memory_peak(struct findings *all, const struct measured *m,
		    const struct mt_bare_times *bare, int nm, long page_size);

#endif
