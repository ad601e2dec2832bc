/* The rules of the catalog, and fixes several of them propose. */
#ifndef MEMTRACE_RULES_H
#define MEMTRACE_RULES_H

#include "explain.h"

mt_rule mt_rule_heap_trim_churn, mt_rule_mmap_churn, mt_rule_purge_churn,
	mt_rule_temporaries, mt_rule_threshold, mt_rule_first_touch;

/* glibc settings that keep large blocks on the heap, sized from f. */
void mt_glibc_threshold_fixes(struct mt_finding *x,
			      const struct mt_call_figures *f, long page_size);
/* Other backends to try (not `current`). */
void mt_backend_fixes(struct mt_finding *x, const char *current);
/* Reusing buffers; `in_place` when two were live where one would do. */
void mt_reuse_fix(struct mt_finding *x, const struct mt_rule_input *in,
		  bool in_place);

/* Churn: at least every other call does it. */
#define MT_CHURN_PER_CALL 0.5

#endif
