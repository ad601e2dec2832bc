/* allocator-time: with several backends run, one that took the command
 * clearly less CPU, without a churn to say why: the allocator's own work.
 * And what it leaves open, said apart (undecided). */
#ifndef MEMTRACE_ALLOCATOR_TIME_H
#define MEMTRACE_ALLOCATOR_TIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "explain_runs.h"

/* Its findings kept in all; what the runs' spread or its bar leave open,
 * or a single backend cannot tell, appended to undecided.  False when
 * there is no room. */
bool mt_allocator_time(struct findings *all, json_t *undecided,
		       const struct measured *m,
		       const struct mt_bare_times *bare, int nm,
		       long page_size);

/* Those left open, a paragraph each. */
void mt_print_undecided(FILE *out, const json_t *undecided);

#endif
