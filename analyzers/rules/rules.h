/* The rules of the catalog, and fixes several of them propose. */
#ifndef MEMTRACE_RULES_H
#define MEMTRACE_RULES_H

#include "explain.h"

/* The catalog (catalog.c): every rule, NULL-terminated, in the order
 * findings are listed. */
extern mt_rule *const mt_rules[];

mt_rule mt_rule_heap_trim_churn, mt_rule_mmap_churn, mt_rule_purge_churn,
	mt_rule_temporaries, mt_rule_threshold, mt_rule_first_touch,
	mt_rule_thread_heap_churn, mt_rule_memory_kept;

/* What memory-kept says where it does not propose giving memory back
 * sooner for a churn of the same run (explain takes it back where
 * --verify refutes that churn). */
extern const char mt_kept_for_a_churn[];

/* glibc settings that keep large blocks on the heap, sized from f. */
void mt_glibc_threshold_fixes(struct mt_finding *x,
			      const struct mt_call_figures *f, long page_size);
/* Other backends to try (not `current`), those that keep blocks of the
 * size that churns in f. */
/* `block`: the size of the blocks that churn where the rule knows it (an
 * mmap churn's mappings), else 0: the run's large blocks stand for them. */
void mt_backend_fixes(struct mt_finding *x, const char *current, double block,
		      const struct mt_call_figures *f);
/* mimalloc's setting that reserves memory for its blocks above 16 MiB,
 * sized from f's peak, and its text: for the switch to mimalloc (a fix
 * of kind MT_FIX_BACKEND) or on it (glibc_fixes.c). */
void mt_mimalloc_reserve(struct mt_fix *fix, const struct mt_call_figures *f);
/* Reusing buffers; `in_place` when two were live where one would do. */
void mt_reuse_fix(struct mt_finding *x, const struct mt_rule_input *in,
		  bool in_place);

/* Churn: at least every other call does it. */
#define MT_CHURN_PER_CALL 0.5

/* A cycle of giving memory back to the kernel and taking it again, over a
 * whole run (a region's are per call; see repetition.c). */
struct mt_repetition {
	double cycles;
	double given_back_pages; /* whole runs only, from here on */
	double resident_pages;	 /* peak RSS */
	double refaults;	 /* faults beyond the peak resident pages */
	double explained;	 /* refaults the cycles account for */
	bool shared;		 /* with memory given back by other means */
	double all_given_back_pages; /* by every means */
	double system_s;	 /* the system time of those */
	/* system_s is the faults' at their cost here, less than the run's
	 * system time in proportion: the rest went to other work */
	bool capped;
	/* capped in 4 KiB pages: the least it may be, the faults at what
	 * one costs here, and its share (the cap is twice that) */
	double system_s_least, share_least;
	/* system_s shared out by what the faults cost (huge pages among
	 * them), not by their count */
	bool weighed_by_cost;
	double cpu_s;		 /* user and system time of the run */
	double share;		 /* of it */
	bool minor;		 /* a share below the bar, within its margin */
	bool huge_pages;	 /* advised: resident pages overstate first
				    touches, so the share is a lower bound
				    (not said where counted by touch) */
	/* Measured as the mappings were unmapped (0: not measured): the
	 * bytes given back that had been touched, those in huge pages, those
	 * beyond the peak resident, and the faults those took */
	double touched, touched_huge, touched_beyond, touched_faults;
	/* explained counts those faults (more than the count by resident
	 * pages), small_faults and huge ones */
	bool by_touch;
	double explained_small, explained_huge;
	/* Repeated, turned over and costing system time, but the faults
	 * cannot tell: the program advised transparent huge pages, where a
	 * fault brings in 2 MiB, and nothing measured what was given back.
	 * Not churn by the figures; a fix run can tell (cmd_explain.c). */
	bool hidden_by_huge_pages;
};

/* A churn of blocks from calloc, half the large bytes or more: keeping
 * them (a setting, another allocator) has calloc zero each whole where
 * the churn faulted only the pages touched.  Said in x where that zeroing,
 * at memset's speed, weighs half the churn's time r->system_s or more
 * (`said`: the calloc share said already; with code_fix, the fix that
 * clears only what was written, first of x's fixes); OUTWEIGHS
 * past all of it: then no fix that keeps the blocks is proposed, and
 * below that they are only to try (calloc_zeroing.c). */
enum mt_zeroing { MT_ZEROING_NONE, MT_ZEROING_WEIGHS, MT_ZEROING_OUTWEIGHS };
enum mt_zeroing mt_calloc_zeroing(struct mt_finding *x,
				  const struct mt_rule_input *in,
				  const struct mt_repetition *r, bool said,
				  bool code_fix);
/* How the text of a minor churn says so, from its start to its end
 * (removed where --verify measured more: cmd_explain.c). */
#define MT_MINOR_SAID " That is minor: "
#define MT_MINOR_SAID_END "same story)."
/* Whether `cycles` (per call, or in the whole run) that gave back
 * `bytes_given_back` (same unit) are churn; fills r. */
/* Do `live` large blocks at once in a call or function say that a result
 * could be written where an operand is (two or three where one would
 * do)?  More are kept past the call that makes them: a cache, a pool, a
 * queue (an LRU cache of 48 entries was told to write in place). */
static inline bool mt_in_place_fits(double live)
{
	return live >= 2 && live <= 3;
}

/* Do `live` large blocks at once in a function stay within what one call
 * of it makes and drops (an expression's temporaries with their operands:
 * 4 or 5 in a few lines of NumPy)?  More are held together: a batch, a
 * cache, a pool. */
static inline bool mt_call_holds(double live)
{
	return live >= 2 && live <= 8;
}

/* A whole run's system time that is mostly not memory's (its faults at
 * `fault_cost_s` each can take at most half of it, its memory calls are
 * few; a program reading and writing files spent 0.26 s of its 0.29 s of
 * CPU in the kernel, and only its faults were said: new-user trial 38),
 * said in buf; returns what its faults take, or -1 where it is not said. */
double mt_other_system_time(char *buf, size_t len,
			    const struct mt_call_figures *f, double fault_cost_s);

bool mt_repeats(const struct mt_rule_input *in, double cycles,
		double bytes_given_back, struct mt_repetition *r);
/* The same, where what the cycles gave back was measured: `touched` of
 * those bytes had been touched, `huge` of them in transparent huge pages
 * (the summary's unmapped_touched; 0: not measured). */
bool mt_repeats_touched(const struct mt_rule_input *in, double cycles,
			double bytes_given_back, double touched, double huge,
			struct mt_repetition *r);
/* Whether the allocator gives memory back and takes it again in a way
 * mt_repeats calls churn, by any of the means the churn rules look at:
 * what the findings that describe the allocator's state (temporaries,
 * threshold) of a whole run need before they are worth saying. */
bool mt_run_churns(const struct mt_rule_input *in);
/* A region's calls (per-call figures) give memory back and take it again,
 * one way or another, at least every other call. */
/* The bytes the allocator unmapped over a run: the unmapped bytes split
 * in proportion to the unmaps (the rest are the program's own: its files,
 * CPython's arenas, whose churn no setting of the allocator changes). */
double mt_allocator_unmapped_bytes(const struct mt_call_figures *f);
bool mt_call_churns(const struct mt_call_figures *f);
/* The sentence a whole run's finding ends with: the faults, those beyond
 * the resident pages, what `cause` ("the trims") gave back and the cost
 * it accounts for.  buf: 2 * MT_TEXT (its longest, memory touched, the
 * cost capped, with threads and huge pages, passes 950 bytes). */
const char *mt_repetition_cost(const struct mt_call_figures *f,
			       const struct mt_repetition *r, const char *cause,
			       char *buf, size_t len);
/* r's figures, for a whole run's evidence. */
void mt_repetition_evidence(json_t *e, const struct mt_repetition *r);

#endif
