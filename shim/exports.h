/* The functions a loaded object exports, as a set of their addresses:
 * asking whether a function is one of them costs a probe or two, where
 * dladdr scans the object's every symbol for the nearest one (some 50,000
 * instructions in python3, for each function asked about). */
#ifndef MEMTRACE_EXPORTS_H
#define MEMTRACE_EXPORTS_H

#include <link.h> /* (struct dl_phdr_info: _GNU_SOURCE) */
#include <stdbool.h>
#include <stdint.h>

struct mt_exports;

/* The set of the object dl_iterate_phdr describes as info, in memory of
 * its own; NULL when the object has no GNU hash table (its
 * dynamic symbols cannot be counted) or the memory cannot be had. */
struct mt_exports *mt_exports_of(const struct dl_phdr_info *info);
void mt_exports_free(struct mt_exports *e);
/* Whether a function of the object begins at fn. */
bool mt_exports_has(const struct mt_exports *e, uintptr_t fn);

#endif
