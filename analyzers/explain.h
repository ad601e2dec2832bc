/* Findings: what a rule concludes from the measured figures of one region
 * under one backend, with the evidence, the mechanism in plain words, and
 * fixes to try. */
#ifndef MEMTRACE_EXPLAIN_H
#define MEMTRACE_EXPLAIN_H

#include <jansson.h>
#include <stdbool.h>

#include "figures.h"
#include "format.h"

enum { MT_MAX_FIXES = 6, MT_TEXT = 1024 };

struct mt_fix {
	enum { MT_FIX_SETTING, MT_FIX_BACKEND, MT_FIX_CODE } kind;
	char setting[256];   /* NAME=VALUE for the environment */
	const char *backend; /* another allocator */
	char text[MT_TEXT];  /* what it changes, in words */
	json_t *verified;    /* --verify's before/after, or NULL */
	/* Measured to help some programs and hurt others: offered to try,
	 * not as a fix, until --verify measures it on this one. */
	bool to_try;
};

struct mt_finding {
	const char *id;
	const char *region, *backend;
	/* A process the command started, not the command's own: "child
	 * process 1234 (./prog)"; NULL for the command's own.  Owned by the
	 * finding. */
	char *process;
	/* Its figures are the command's and its child processes' together
	 * (allocator-time, timed without the shim: the CPU of the whole
	 * tree): how many processes, 0 where it is one process's. */
	unsigned processes;
	json_t *evidence; /* the measured figures the conclusion rests on */
	char explanation[3 * MT_TEXT];
	struct mt_fix fixes[MT_MAX_FIXES];
	int nfixes;
	/* The run's recording did not cover it all (a partial trace): why,
	 * or NULL.  Owned by the run's summary. */
	const char *caveat;
	/* The code whose blocks the finding is about (sites.h), or NULL;
	 * small_blocks: most of the memory went through blocks too small to
	 * have a site. */
	json_t *sites;
	bool small_blocks;
	/* With small_blocks: where the small blocks were allocated, from the
	 * sampled ones (mt_sites_by_small), or NULL. */
	json_t *small_sites;
	/* Its figures cannot show it (rules.h, hidden_by_huge_pages): kept
	 * only where a run with its first setting cuts the system time
	 * (cmd_explain.c, check_by_fixes). */
	bool check_by_fix;
	/* Said on account of such a churn of its run: kept only where that
	 * one is. */
	bool on_checked_churn;
};

/* Text added to the end of x's explanation, as printf writes it (cut
 * where it no longer fits). */
void mt_finding_append(struct mt_finding *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What a rule looks at. */
struct mt_rule_input {
	const char *backend;
	const struct mt_call_figures *f; /* per call, this region */
	json_t *sites; /* the whole run's call sites (sites.h), or NULL */
	/* A partial recording's sites, written before its figures were
	 * last measured: when, in seconds into the run (0: not so). */
	double sites_to_s;
	bool python;			 /* the command is a Python program */
	bool numpy;			 /* whose sites are NumPy's */
	long page_size;
	/* The most system time a page fault of this run can take (twice
	 * what one costs here, fault_cost.h), 0: not known. */
	double fault_cost_s;
	/* The same for a fault of one page (page_size), whatever pages the
	 * run took: what a byte count faulted in anew costs at most, a page
	 * at a time (a huge page's cost for each 4 KiB of them said 1.35 s
	 * for 37 MiB that takes 0.02; new-user trial 48). */
	double page_fault_most_s;
	/* The same for a fault of a 4 KiB page and of a 2 MiB transparent
	 * huge page, where the run measured the memory it unmapped (the
	 * summary's unmapped_touched); else 0. */
	double page_fault_cost_s, huge_fault_cost_s;
	/* the most a huge page's fault took there (fault_cost.h) */
	double huge_fault_most_s;
	/* A churn was found on this run by a rule before (the catalog's
	 * order): memory given back and faulted in again. */
	bool churns;
	/* ... or one its figures cannot show, to be checked by a run with
	 * its setting (check_by_fix). */
	bool churn_to_check;
};

/* A rule adds at most one finding; returns it, or NULL. */
typedef struct mt_finding *mt_rule(const struct mt_rule_input *in);

struct mt_finding *mt_finding_new(const char *id, const struct mt_rule_input *in);
void mt_finding_free(struct mt_finding *f);
struct mt_fix *mt_fix_add(struct mt_finding *f, int kind);
/* A whole run's finding: the sites credited with the summary's "caused"
 * figures named in keys (NULL-terminated), and the top one named in the
 * explanation. */
/* Where the small blocks were allocated, from the sites' samples (the
 * summary's `sites`): said in x's explanation, the top ones in
 * x->small_sites. */
void mt_finding_small_sites(struct mt_finding *x, json_t *sites);
/* The same sentence in out (size bytes, starting with a space), and the
 * top small sites in *top (owned by the caller, NULL where none); false
 * where it says they were not sampled, or too few. */
bool mt_small_sites_said(json_t *sites, char *out, size_t size, json_t **top);
void mt_finding_sites(struct mt_finding *x, const struct mt_rule_input *in,
		      const char *const *keys);
/* The share of a call's time that its system time accounts for. */
double mt_system_share(const struct mt_call_figures *f);
/* The smallest power of two >= n. */
unsigned long long mt_pow2_at_least(double n);

/* explain --json's findings about one summary (a trace's, replayed):
 * source names it in messages. */
json_t *mt_explain_summary(json_t *summary, const char *source);

#endif
