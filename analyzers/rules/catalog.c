/* The catalog: every rule, in the order its findings are listed. */
#include "rules.h"

mt_rule *const mt_rules[] = {
	mt_rule_heap_trim_churn, mt_rule_thread_heap_churn, mt_rule_mmap_churn,
	mt_rule_purge_churn,	 mt_rule_temporaries,	    mt_rule_threshold,
	mt_rule_first_touch,	 mt_rule_memory_kept,	    NULL,
};
