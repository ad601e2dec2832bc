/* allocator-waits: with several backends run, a program of threads that
 * another allocator ran clearly faster in wall time, without as much less
 * CPU: its threads waited, and the allocator is what changed. */
#ifndef MEMTRACE_ALLOCATOR_WAITS_H
#define MEMTRACE_ALLOCATOR_WAITS_H

#include <jansson.h>
#include <stdbool.h>

#include "explain_runs.h"

/* Its findings kept in all (none on a backend allocator-time found
 * already), and what allocator-time left open of their backends taken
 * out of undecided.  False when there is no room. */
bool mt_allocator_waits(struct findings *all, json_t *undecided,
			const struct measured *m, const struct mt_bare_times *bare,
			int nm, long page_size);

#endif
