/* Regions: named stretches of a program (memtrace_region_begin/end, from C
 * or Python), each call of which is measured on its own. */
#ifndef MEMTRACE_REGIONS_H
#define MEMTRACE_REGIONS_H

#include <stddef.h>

#include "summary.h"

/* The regions measured so far, summed per name, for the exit summary.
 * Valid until the next call. */
const struct mt_region_summary *mt_regions_summarise(size_t *count);
/* The innermost region open on thread t that is measured (an index),
 * -1: none; and a region's name by that index. */
struct mt_thread;
int mt_region_innermost(const struct mt_thread *t);
const char *mt_region_name(int region);
/* In a child after fork: regions start over. */
void mt_regions_reset_after_fork(void);

#endif
