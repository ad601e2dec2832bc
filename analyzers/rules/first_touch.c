/* first-touch: page faults that a growing working set explains, not churn:
 * memory the process takes for the first time faults once per page. */
#include <stdbool.h>
#include <stdio.h>

#include "rules.h"

/* A whole run's faults are first touch when they are about as many as the
 * pages it ever had resident: memory that came and went a little (a heap
 * trimmed once, a buffer unmapped at a phase's end) may fault some more,
 * and so does a page read before it is first written. */
#define FIRST_TOUCH_SLACK 1.5
/* Memory system calls few enough that their time is not the run's
 * system time (an mmap or munmap of a few pages costs microseconds). */
#define MANY_MEMORY_CALLS 1000

double mt_other_system_time(char *buf, size_t len,
			    const struct mt_call_figures *f, double fault_cost_s)
{
	double cpu = f->user_s + f->system_s, memory_calls = 0;
	for (int s = 0; s < MT_SYS_COUNT; s++)
		memory_calls += f->syscalls[s];
	double by_faults = f->faults * fault_cost_s;
	if (fault_cost_s <= 0 || f->system_s < 0.05 || f->system_s < 0.2 * cpu ||
	    by_faults > 0.5 * f->system_s || memory_calls > MANY_MEMORY_CALLS)
		return -1;
	/* (with threads, waits on locks too: the program's own, and the
	 * allocator's, which another allocator does change; a producer and
	 * a consumer of small messages, said "files, pipes, sockets, which
	 * no allocator changes", ran 39% faster on the three others in
	 * wall time; new-user trial 40) (and on one thread, the kernel's
	 * copies for read() into a 1 MiB buffer glibc mapped, 16 bytes past
	 * a page, took 2.10 s of system time, 0.38-0.48 s on the three others
	 * (a page or cache line aligned): "no allocator changes" was false;
	 * new-user trial 44) */
	char threads[256] = "";
	if (f->threads > 1)
		snprintf(threads, sizeof threads,
			 "), and its %.0f threads' waits for one another (futex: "
			 "the program's locks, and the allocator's, which another "
			 "allocator's run tells",
			 f->threads);
	snprintf(buf, len,
		 "Its %.2f s of system time (%.0f%% of its CPU) is mostly not "
		 "memory's: its %.0f page faults take at most %.3f s on this "
		 "machine, and it made %.0f memory system call%s; the rest is "
		 "the kernel's work for its other system calls (files, pipes, "
		 "sockets%s)%s.",
		 f->system_s, 100 * f->system_s / cpu, f->faults, by_faults,
		 memory_calls, memory_calls == 1 ? "" : "s", threads,
		 f->threads > 1
			 ? ""
			 : ": not the allocator's calls, though the kernel's "
			   "copies into and out of the program's buffers can "
			   "depend on where the allocator put them (their "
			   "alignment), which only a run on another allocator "
			   "tells");
	return by_faults;
}

static void other_system_time(struct mt_finding *x, const struct mt_rule_input *in)
{
	char said[512];
	double by_faults = mt_other_system_time(said, sizeof said, in->f, in->fault_cost_s);
	if (by_faults < 0)
		return;
	json_object_set_new(x->evidence, "system_s_of_faults", json_real(by_faults));
	mt_finding_append(x, " %s", said);
}

/* The memory a whole run gave back before its end, in bytes: unmapped,
 * trimmed, purged, shrunk in place; less what its sites gave back after
 * the process last took memory (the shim's caused_at_end: arrays kept for
 * the run and freed at exit), which nothing faulted in again.  Only this
 * can be faulted in a second time after being given back. */
static double given_back_before_end(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double given = f->syscall_bytes[MT_SYS_MUNMAP] + f->brk_shrink_bytes +
		       f->purged_bytes + f->own_purged_bytes +
		       f->thread_heap_shrink_bytes + f->remap_shrink_bytes;
	static const char *const at_end[] = {"munmap_bytes", "brk_shrink_bytes",
					     "own_munmap_bytes"};
	size_t i;
	json_t *site;
	json_array_foreach(in->sites, i, site) {
		json_t *end = json_object_get(site, "caused_at_end");
		for (size_t k = 0; k < sizeof at_end / sizeof *at_end; k++)
			given -= json_number_value(json_object_get(end, at_end[k]));
	}
	return given > 0 ? given : 0;
}

/* What the faults past the pages ever resident come from, said after
 * "most come from memory touched for the first time": memory given back
 * and taken again where the run gave back enough before its end for
 * them, else not that (a grid from calloc read before it was written:
 * "came and went a little" of a run that gave nothing back; new-user
 * trial 50). */
static void said_of_the_rest(char *out, size_t size, const struct mt_rule_input *in,
			     double resident)
{
	double rest = in->f->faults - resident;
	double given = given_back_before_end(in) / (double)in->page_size;
	if (given >= rest) {
		snprintf(out, size, "the rest from memory that came and went a "
				    "little");
		return;
	}
	char before[96];
	if (given < 1)
		snprintf(before, sizeof before, "it gave no memory back before "
						"its end");
	else
		snprintf(before, sizeof before, "it gave back %.0f pages before "
						"its end",
			 given);
	snprintf(out, size,
		 "the other %.0f are pages faulted again without being given "
		 "back (%s), as a page read before it is first written is: "
		 "once to map the kernel's shared page of zeros, again to copy "
		 "it on the first write (memory from calloc, or a new array, "
		 "read first)",
		 rest, before);
}

struct mt_finding *mt_rule_first_touch(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double resident = f->peak_rss / (double)in->page_size;
	double grown = (f->brk_grow_bytes + f->syscall_bytes[MT_SYS_MMAP]) /
		       (double)in->page_size;
	/* Growth there must be, to explain the faults by. */
	if (f->faults < 1 || grown < 1)
		return NULL;
	if (f->whole ? f->faults > FIRST_TOUCH_SLACK * resident : mt_call_churns(f))
		return NULL;
	struct mt_finding *x = mt_finding_new("first-touch", in);
	if (!x)
		return NULL;
	json_t *e = x->evidence;
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "pages_grown_per_call", json_real(grown));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	/* The faults' part of the system time: no more than they can take
	 * (a program reading files spends its system time in read). */
	double share = mt_system_share(f);
	if (in->fault_cost_s > 0 && f->system_s > 0 &&
	    f->faults * in->fault_cost_s < f->system_s) {
		share *= f->faults * in->fault_cost_s / f->system_s;
		json_object_set_new(e, "system_s_capped_by_fault_cost", json_true());
	}
	json_object_set_new(e, "share_of_time", json_real(share));
	if (f->whole) {
		/* ("about as many as" said of 25% more: new-user trial 21;
		 * with its figure, where "fewer than" and "about as many as"
		 * told 0.80 from 0.81 of the pages in two runs: trial 50) */
		bool more = f->faults > 1.1 * resident;
		char how[64], rest[400];
		said_of_the_rest(rest, sizeof rest, in, resident);
		double ratio = f->faults / resident;
		if (more)
			snprintf(how, sizeof how, "%.0f%% more than", 100 * (ratio - 1));
		else if (ratio >= 0.9)
			snprintf(how, sizeof how, "about as many as (%.0f%% of)",
				 100 * ratio);
		else
			snprintf(how, sizeof how, "%.0f%% of", 100 * ratio);
		json_object_set_new(e, "peak_resident_pages", json_real(resident));
		snprintf(x->explanation, sizeof x->explanation,
			 "The run took %.0f page faults, %s the %.0f pages it "
			 "ever had resident at once: %s%s%s",
			 f->faults, how, resident,
			 more ? "most come from memory touched for the first "
				"time, which is the cost of its working set, and "
			      : "they come from memory touched for the first "
				"time, which is the cost of its working set, not "
				"churn (memory given back and faulted in again "
				"would take more).",
			 more ? rest : "",
			 more ? "; not churn (memory given back and faulted in "
				"again, over and over, would take many times more)."
			      : "");
		other_system_time(x, in);
	} else {
		snprintf(x->explanation, sizeof x->explanation,
			 "%s takes %.0f page faults per call without giving "
			 "memory back to the kernel in between (no trimming, "
			 "unmapping or purging): they come from memory touched "
			 "for the first time (%.0f pages of heap or mappings "
			 "grown per call), which is the cost of a working set, "
			 "not churn.",
			 f->region, f->faults, grown);
	}
	return x;
}
