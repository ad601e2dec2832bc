/* Regions: named stretches of a program (memtrace_region_begin/end, from C
 * or Python), each call of which is measured on its own. */
#ifndef MEMTRACE_REGIONS_H
#define MEMTRACE_REGIONS_H

#include <stddef.h>

#include "summary.h"

/* The regions measured so far, summed per name, for the exit summary.
 * Valid until the next call. */
const struct mt_region_summary *mt_regions_summarise(size_t *count);
/* In a child after fork: regions start over. */
void mt_regions_reset_after_fork(void);

#endif
