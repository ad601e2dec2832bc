/* Page faults sampled in a trace (MEMTRACE_FAULTS=sample[:N]) put on the
 * code that allocated the memory they fell in: each sample is looked up
 * among the large blocks live at its moment (the shim's block_site
 * events: where each block lies and its site), and counted for that
 * block's site.  Faults outside such blocks (small objects, stacks, the
 * interpreter's own memory, files) are counted as elsewhere. */
#ifndef MEMTRACE_FAULT_SITES_H
#define MEMTRACE_FAULT_SITES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "event.h"

struct mt_fault_sites;

struct mt_fault_sites *mt_fault_sites_new(uint64_t start_ns);
/* Every event of the trace, in the order read (not time order). */
void mt_fault_sites_event(struct mt_fault_sites *f, const struct mt_event *e);
/* Adds "faults" (samples x period: the faults estimated) to each site of
 * `sites` (the summary's array, its "rest" included) that took any, and
 * returns the samples that fell in a followed block.  False, the sites
 * given none, when the trace followed no block to its site (one from
 * before format 1.12) or had more blocks and samples than are held in
 * memory (4 million). */
bool mt_fault_sites_apply(struct mt_fault_sites *f, json_t *sites,
			  uint64_t period, uint64_t *on_sites);
void mt_fault_sites_free(struct mt_fault_sites *f);

#endif
