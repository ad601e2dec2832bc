#include <math.h>
#include <stdio.h>
#include <string.h>

#include "allocator_time.h"
#include "copy_cost.h"
#include "fault_cost.h"
#include "format.h"
#include "sites.h"

/* The most CPU the allocator's calls can take in themselves: 2 us each (a
 * call and the cache misses of its block), and the bytes it writes inside
 * them, at 0.5 ns each (2 GB/s, slower than any memset or memcpy here):
 * calloc's, which an allocator that takes the block from memory it used
 * before must zero (glibc, from its heap: 3000 callocs of 16 MiB took 1.1
 * s more than on jemalloc, whose fresh pages are zero already; new-user
 * trial 14), and realloc's copies.  With threads, a call can also wait
 * for one of each other thread's, spinning on the lock that guards the
 * allocator's heap (tcmalloc's page heap, for blocks past 256 KiB: 8
 * threads of 200-600 KiB blocks took 1.2 s of CPU on it against 0.75 s
 * on glibc, 5 us more a call; new-user trial 18): as many as the threads,
 * up to 8. */
static double allocator_calls_bound_s(const struct mt_call_figures *x)
{
	double waits = fmin(fmax(x->threads, 1), 8);
	return 2e-6 * waits * x->allocations +
	       0.5e-9 * (x->calloc_bytes + x->realloc_copied_bytes);
}

/* x with what the command's child processes did added (their summaries,
 * of its first run): what the whole command's CPU is weighed against. */
static struct mt_call_figures with_children(const struct mt_call_figures *x,
					    json_t *children)
{
	struct mt_call_figures t = *x;
	size_t i;
	json_t *c;
	json_array_foreach(children, i, c) {
		struct mt_call_figures cf;
		if (!mt_figures_of(c, MT_WHOLE_PROGRAM, &cf))
			continue;
		t.allocations += cf.allocations;
		t.large_allocs += cf.large_allocs;
		t.calloc_bytes += cf.calloc_bytes;
		t.realloc_copied_bytes += cf.realloc_copied_bytes;
		t.faults += cf.faults;
		t.threads = fmax(t.threads, cf.threads);
	}
	return t;
}

/* Of the command's first run and (tree) the processes it started, the
 * summary of the one that made the most allocations; NULL where that is
 * the command's own. */
static json_t *busiest_process(const struct mt_runs *r, bool tree)
{
	struct mt_call_figures f;
	json_t *busiest = NULL, *c;
	size_t i;
	if (!tree || !json_array_size(r->children))
		return NULL;
	double most = r->n && mt_figures_of(r->summaries[0], MT_WHOLE_PROGRAM, &f)
			      ? f.allocations
			      : 0;
	json_array_foreach(r->children, i, c)
		if (mt_figures_of(c, MT_WHOLE_PROGRAM, &f) && f.allocations > most) {
			most = f.allocations;
			busiest = c;
		}
	return busiest;
}

/* The bytes x's calls wrote, those of each kind there were: calloc's,
 * which an allocator that takes a block from memory it used before must
 * zero, and realloc's copies, beside the other backend's (glibc moves a
 * mapped block with mremap, which copies nothing: a buffer grown by
 * realloc to 200 MiB copied 2.8 GiB on tcmalloc, none on glibc, and that
 * was the whole of the difference; new-user trial 27). */
static void say_bytes_written(struct mt_finding *a,
			      const struct mt_call_figures *x,
			      const struct mt_call_figures *y, const char *other)
{
	char b1[32], b2[32];
	if (x->calloc_bytes > 0)
		mt_finding_append(a, " calloc asked for %s in all, which an allocator "
			 "must zero when it takes the block from memory it used "
			 "before (glibc does, from its heap, where fresh pages "
			 "from the kernel are zero already)%s",
			 mt_format_bytes(x->calloc_bytes, b1, sizeof b1),
			 x->realloc_copied_bytes > 0 ? ";" : ".");
	if (x->realloc_copied_bytes > 0)
		mt_finding_append(a, " realloc copied %s (%s on %s%s).",
			 mt_format_bytes(x->realloc_copied_bytes, b1, sizeof b1),
			 mt_format_bytes(y->realloc_copied_bytes, b2, sizeof b2),
			 other,
			 !strcmp(other, "glibc") &&
					 y->realloc_copied_bytes <
						 0.1 * x->realloc_copied_bytes
				 ? ", which moves a mapped block with mremap, "
				   "copying nothing"
				 : "");
}

/* An undecided difference between a backend's CPU and the fastest's:
 * what every kind of it says. */
static json_t *undecided_of(const char *backend, const char *other, double cpu,
			    double other_cpu, double churn_s)
{
	return json_pack("{s:s, s:s, s:s, s:f, s:f, s:f}", "id", "allocator-time",
			 "backend", backend, "other_backend", other, "cpu_s", cpu,
			 "other_cpu_s", other_cpu, "churn_s", churn_s);
}

/* o, with key set to value. */
static json_t *with(json_t *o, const char *key, json_t *value)
{
	json_object_set_new(o, key, value);
	return o;
}

/* (in mt_allocator_time: backend j against the fastest) */
#define UNDECIDED                                                          \
	undecided_of(m[j].runs.backend, m[fastest].runs.backend, vx->least, \
		     vy->least, churn_s)

/* Where the top site of the small blocks is a C++ container's growth
 * (push_back without reserve: 58% of the bytes of a message pipeline's
 * small blocks, told only "reuse buffers"; new-user trial 47's kind). */
#define GROWN_THERE                                                           \
	"the container made there grows step by step (a vector's storage, a " \
	"hash table's buckets, allocated anew as it fills): reserve() its "   \
	"size up front, or keep it across iterations and clear() it, so it "  \
	"is grown once; or "

/* A code fix at the finding's top site, of small blocks or large: fewer
 * allocations there help on any allocator; `how` then `then`, the change
 * there. */
static void fix_at_top_site(struct mt_finding *a, json_t *top, const char *how,
			    const char *then)
{
	char label[512];
	struct mt_fix *fix = top ? mt_fix_add(a, MT_FIX_CODE) : NULL;
	if (!fix)
		return;
	mt_site_label(json_object_get(top, "stack"), label, sizeof label);
	snprintf(fix->text, sizeof fix->text,
		 "allocate less often at %s, which holds on any allocator: %s%s",
		 label, how, then);
}

/* The calls' cost is what differs: fewer of them, where the small blocks
 * sampled were made, help on any allocator (a trie's nodes made and freed
 * per batch: "run on mimalloc" alone, where a pool per batch ran faster
 * than any allocator; new-user trial 44). */
static void fewer_calls_fix(struct mt_finding *a)
{
	json_t *top = json_array_get(a->small_sites, 0);
	fix_at_top_site(a, top, top && mt_site_grows(top) ? GROWN_THERE : "",
			"reuse buffers and strings across iterations, or take a "
			"batch's many small blocks from one pool or arena and "
			"free it whole (C++: std::pmr containers on a "
			"monotonic_buffer_resource); in Python, fewer temporary "
			"objects");
}

/* The same where the allocations are mostly large blocks: the buffer at
 * the top site kept and reused (a request handler's scratch buffer of 256
 * KiB-8 MiB a request: mimalloc was told only "run on glibc", 0.30 s,
 * where the buffer kept took 0.24 s on mimalloc; new-user trial 47). */
static void reuse_large_fix(struct mt_finding *a)
{
	json_t *top = json_array_get(a->sites, 0);
	fix_at_top_site(a, top, "",
			top && mt_site_grows(top)
				? "give the buffer its final size once instead "
				  "of growing it step by step, and keep it across "
				  "uses"
				: "keep the buffer made there and reuse it across "
				  "iterations (allocated once at the largest size "
				  "needed, or grown only when a use needs more) "
				  "instead of allocating it anew each time");
}

/* Where the large blocks of a run that allocates mostly those are made,
 * by their bytes. */
static void large_sites(struct mt_finding *a, json_t *sites,
			const struct mt_call_figures *x)
{
	a->sites = mt_sites_by_bytes(sites, 5);
	json_t *top = json_array_get(a->sites, 0);
	if (!top)
		return;
	char label[512];
	mt_finding_append(a, " Most of the allocations are of large blocks (%.0f of "
			     "%.0f): %.0f%% of their bytes were allocated at %s.",
			  x->large_allocs, x->allocations,
			  json_number_value(json_object_get(top, "share")) * 100,
			  mt_site_label(json_object_get(top, "stack"), label, sizeof label));
}

/* With one backend run, what allocator-time cannot tell: system time
 * that the page faults do not account for, with threads, may be waiting
 * for the allocator's locks, which only another backend's run shows
 * (small messages passed between two threads: glibc 0.57 s of system
 * time, 175k futex calls, "0 findings"; new-user trial 19). */
static void one_backend_kernel_time(json_t *undecided, const char *backend,
				    const struct mt_call_figures *f,
				    const struct mt_cpu_view *v)
{
	double faults_s = f->faults * 2 * mt_fault_cost_s(false);
	double kernel_s = f->system_s - faults_s;
	/* (and as much as the allocator's calls can take: two threads
	 * reading a file, six allocations in all, were said to wait) */
	if (f->threads < 2 || kernel_s < 0.1 || kernel_s < 0.2 * v->least ||
	    kernel_s > allocator_calls_bound_s(f))
		return;
	json_array_append_new(undecided, json_pack(
		"{s:s, s:s, s:b, s:f, s:f, s:f, s:f}", "id", "allocator-time",
		"backend", backend, "one_backend", 1, "cpu_s", v->least,
		"system_s", f->system_s, "faults_s", faults_s, "threads",
		f->threads));
}

/* The least difference measured between allocators, a malloc and free,
 * on programs made of small blocks (new-user trial 20, bare, min of 3: a
 * linked list of 15M nodes, glibc 0.49 s of CPU against mimalloc's 0.21,
 * 19 ns a pair; two threads replacing 12M records, 0.43 s against
 * tcmalloc's 0.15, 23 ns; a hash map of 3M nodes, 136 ns). */
#define PAIR_DIFFERENCE_LEAST_S 20e-9

/* With one backend run, a program that allocates so often that at that
 * least difference the allocator's speed is a twentieth of its CPU or
 * more: its own speed, which only another backend's run measures (each
 * of those programs, explained on glibc alone: "first-touch only, nothing
 * to fix"). */
static void one_backend_call_rate(json_t *undecided, const struct measured *m,
				  const struct mt_call_figures *f,
				  const struct mt_cpu_view *v)
{
	double share = f->allocations * PAIR_DIFFERENCE_LEAST_S / v->least;
	if (v->least < 0.1 || share < 0.05)
		return;
	json_t *u = json_pack(
		"{s:s, s:s, s:b, s:b, s:f, s:f, s:f}", "id", "allocator-time",
		"backend", m->runs.backend, "one_backend", 1, "call_rate", 1,
		"cpu_s", v->least, "allocations", f->allocations,
		"share_at_least", fmin(share, 1));
	/* Where they are made, from the small blocks' samples: the code to
	 * change, whatever the allocator (29M allocations of a request's
	 * map and strings, 42% of the cycles in malloc and free, 5x faster
	 * with the containers reused; new-user trial 43). */
	for (size_t i = 0; u && i < m->runs.n; i++) {
		json_t *sites = json_object_get(m->runs.summaries[i], "sites"), *top;
		char said[1400];
		if (!sites)
			continue;
		if (mt_small_sites_said(sites, said, sizeof said, &top)) {
			json_object_set_new(u, "small_sites_said", json_string(said));
			json_object_set_new(u, "small_site_grows",
					    json_boolean(mt_site_grows(
						    json_array_get(top, 0))));
		}
		json_decref(top);
		break;
	}
	json_array_append_new(undecided, u);
}

/* allocator-time: where explain ran several backends, one that took the
 * command's whole run clearly less CPU (a quarter less, and 50 ms) than
 * another, the difference mostly user time, at most what its allocator
 * calls can take (allocator_calls_bound_s), and no churn on the slower
 * one to explain it: the allocator's own
 * work, in the program's process, is the cause (its code on every call,
 * and where it puts the blocks, which the program's accesses feel).
 * A difference that meets all that but not the runs' spread goes to
 * `undecided`. */
bool mt_allocator_time(struct findings *all, json_t *undecided,
			   const struct measured *m,
			   const struct mt_bare_times *bare, int nm,
			   long page_size)
{
	struct mt_call_figures f[16];
	struct mt_cpu_view v[16];
	int n = 0, fastest = -1;
	for (int j = 0; j < nm && n < 16; j++) {
		if (m[j].source ||
		    !mt_cpu_view_of(&m[j], bare ? &bare[j] : NULL, &f[j], &v[j]))
			return true; /* read from files, or no whole run */
		n++;
		if (fastest < 0 || v[j].least < v[fastest].least)
			fastest = j;
	}
	if (n == 1) {
		one_backend_kernel_time(undecided, m[0].runs.backend, &f[0], &v[0]);
		one_backend_call_rate(undecided, &m[0], &f[0], &v[0]);
	}
	if (n < 2)
		return true;
	/* Timed bare, the CPU is the whole command's, its child processes'
	 * too: so are the figures and the churns weighed against it (a
	 * pool's workers purging on mimalloc were "0.78 s of system time no
	 * churn explains", spread over the parent's allocations alone;
	 * new-user trial 26). */
	bool tree = bare != NULL;
	struct mt_call_figures ty = tree ? with_children(&f[fastest], m[fastest].runs.children)
					 : f[fastest];
	const struct mt_call_figures *y = &ty;
	const struct mt_cpu_view *vy = &v[fastest];
	for (int j = 0; j < n; j++) {
		struct mt_call_figures tx = tree ? with_children(&f[j], m[j].runs.children)
						 : f[j];
		const struct mt_call_figures *x = &tx;
		const struct mt_cpu_view *vx = &v[j];
		/* how much the runs vary by chance: the largest ratio of a
		 * backend's median run to its fastest, over the other
		 * backends timed (the machine's and the program's variation
		 * shows on each, the runs interleaved; a backend's own beyond
		 * that is its doing: tcmalloc's threads spinning on its lock
		 * took 1.2 s to 1.7 s, every run past glibc's 0.75 s, which
		 * its own spread had made undecided; new-user trial 18) */
		double noise = 1;
		for (int k = 0; k < n; k++)
			if (k != j && v[k].least > 0)
				noise = fmax(noise, v[k].median / v[k].least);
		/* A churn found on this backend takes its share of the
		 * system time; what is left of the difference beyond it is
		 * weighed as a whole one would be (4 threads of small blocks:
		 * glibc 1.07 s, tcmalloc 0.18 s, the heaps' shrinks 0.33 s of
		 * it, and 0.56 s of user time said nowhere; new-user trial
		 * 21).  A churn whose time is not known leaves nothing. */
		double churn_s = 0;
		bool churn_unknown = false;
		for (size_t c = 0; c < all->n; c++) {
			const struct mt_finding *w = all->at[c];
			if ((w->process && !tree) ||
			    strcmp(w->backend, m[j].runs.backend) ||
			    !mt_churn_finding(w->id))
				continue;
			json_t *s_exp = json_object_get(w->evidence, "system_s_explained");
			churn_unknown |= !json_is_number(s_exp);
			/* (and the same churn's in the processes alike, said
			 * once: each pool worker's is the command's) */
			churn_s += json_number_value(s_exp) +
				   json_number_value(json_object_get(
					   w->evidence, "system_s_explained_alike"));
		}
		double sys_x = vx->least - vx->user, sys_y = vy->least - vy->user;
		churn_s = fmin(churn_s, fmax(0, sys_x - sys_y));
		double least_x = vx->least - churn_s;
		double gap = least_x - vy->least;
		/* and the allocations many enough to have taken it: at most
		 * 2 us each (a call and the cache misses of its block; a
		 * compute loop that allocates a few buffers and runs slower on
		 * one backend for another reason is not the allocator's) */
		/* and the faster backend's median run faster than every run
		 * here, and the ratio of the two fastest runs past the square
		 * of the largest ratio of any backend's median to its fastest
		 * run: a program whose time varies by 40% from run to run (a
		 * Python program's hashes are seeded anew each run; a loaded
		 * machine) differs that much between backends by chance ("31%
		 * less on mimalloc", then nothing, then "25% less on
		 * jemalloc", in three explains: new-user trial 6; glibc 1.75 s
		 * to 2.47 s, tcmalloc 2.49 s to 2.73 s in one explain, and
		 * 1.34 s to 1.82 s against 1.55 s to 2.23 s in the next),
		 * while one run slowed by the machine (mimalloc's 0.07 s to
		 * 0.58 s beside CI) moves no median */
		/* Where the kernel took a part of the difference the faults do
		 * not account for, it is not said to be in the process alone
		 * (two threads, one allocating and one freeing: glibc 1.06 s
		 * against mimalloc 0.35 s, a third of the gap system time, 144k
		 * futex calls from glibc's arena lock; new-user trial 11); with
		 * threads, that is waiting for the allocator's locks, and the
		 * difference need not be mostly user time (small messages
		 * passed between threads: glibc's system time 0.36-0.57 s of
		 * its 1.4 s, 175k futex calls, and the finding made in two
		 * explains of four; new-user trial 19). */
		/* (past what its calls can take, the rest of it is where the
		 * allocator put the blocks, or not the allocator's: said
		 * apart, not left out; NumPy with out= and buffers allocated
		 * once, tcmalloc 0.87 s against glibc's 0.68 s bare, 14k
		 * calls, "nothing to fix"; new-user trial 30) */
		double bound_s = allocator_calls_bound_s(x);
		bool beyond_calls = gap > bound_s;
		if (j == fastest || churn_unknown || vy->least >= 0.85 * least_x ||
		    gap < 0.05)
			continue;
		/* What is left beyond a churn found here, and less than the
		 * churn's own estimate, is within what the churn costs past
		 * its faults' system time (fresh pages written cost user time
		 * too): not the allocator's code (bytes += in a loop, its
		 * blocks mapped anew each time on glibc: 0.094 s "in the
		 * allocator's own work" left beyond 0.573 s of churn, and with
		 * the churn's fix glibc ran as fast as mimalloc; new-user
		 * trial 35). */
		if (churn_s > 0 && gap < churn_s)
			continue;
		double sys_gap = gap - (vx->user - vy->user);
		/* (a churn's faults are its time, taken off already) */
		double faults_s = churn_s > 0 ? 0
					      : fmax(0, x->faults - y->faults) * 2 *
							mt_fault_cost_s(false);
		bool kernel_work = sys_gap - faults_s > 0.2 * gap;
		bool lock_waits = kernel_work && x->threads > 1;
		/* (nor on one thread, where the allocations are too few for the
		 * calls: the kernel's copies for the program's system calls
		 * feel where the blocks are; read() into a 1 MiB buffer glibc
		 * mapped 16 bytes past a page, 2.10 s of system time against
		 * 0.38-0.48 s on the others, was "nothing to fix, which no
		 * allocator changes"; new-user trial 44) */
		bool kernel_copies = kernel_work && beyond_calls;
		if (vx->user - vy->user < 0.5 * gap && !lock_waits && !kernel_copies)
			continue;
		/* Between 15% and a quarter less, past the runs' spread: said
		 * as below the bar, not left out (mimalloc 25-28% less in four
		 * explains of a program and nothing in the fifth; new-user
		 * trial 18).  Three runs a backend at least: two make a
		 * spread of one difference, and a median of their mean
		 * (windows copied in NumPy, "16% less on jemalloc, past the
		 * runs' spread" with --repeat 2, where bare runs, min of 5,
		 * differ by 2%; new-user trial 36). */
		if (vy->least >= 0.75 * least_x) {
			if (vy->median < least_x && least_x >= vy->least * noise * noise &&
			    vx->runs >= 3 && vy->runs >= 3)
				json_array_append_new(undecided, with(
					UNDECIDED, "below_bar", json_true()));
			continue;
		}
		if (vy->median >= least_x || least_x < vy->least * noise * noise) {
			/* a difference the runs' spread leaves open: said as
			 * such, so a reader knows to rerun, not that there
			 * is none */
			json_t *u = with(UNDECIDED, "other_median_cpu_s",
					 json_real(vy->median));
			json_object_set_new(u, "spread", json_real(noise));
			json_object_set_new(u, "ratio_needed", json_real(noise * noise));
			json_array_append_new(undecided, u);
			continue;
		}
		/* (with two runs a backend and no kernel part, a clear
		 * difference past the calls is one difference read as a
		 * spread: a CPU-bound program with out= and buffers made once,
		 * "another allocator ran it faster" in one explain of four
		 * with --repeat 2; new-user trial 43) */
		if (beyond_calls && !kernel_work && (vx->runs < 3 || vy->runs < 3)) {
			json_t *u = with(UNDECIDED, "few_runs", json_true());
			json_object_set_new(u, "runs", json_integer((json_int_t)(
				vx->runs < vy->runs ? vx->runs : vy->runs)));
			json_array_append_new(undecided, u);
			continue;
		}
		if (beyond_calls) {
			json_t *u = with(UNDECIDED, "beyond_calls", json_true());
			json_object_set_new(u, "allocations", json_real(x->allocations));
			json_object_set_new(u, "calls_bound_s", json_real(bound_s));
			json_object_set_new(u, "kernel_s", json_real(
				kernel_work ? sys_gap - faults_s : 0.0));
			json_array_append_new(undecided, u);
			continue;
		}
		struct mt_rule_input in = {.backend = m[j].runs.backend, .f = x,
					   .page_size = page_size};
		struct mt_finding *a = mt_finding_new("allocator-time", &in);
		if (!a)
			return false;
		json_t *e = a->evidence;
		json_object_set_new(e, "cpu_s", json_real(vx->least));
		json_object_set_new(e, "user_s", json_real(vx->user));
		json_object_set_new(e, "other_backend", json_string(m[fastest].runs.backend));
		json_object_set_new(e, "other_cpu_s", json_real(vy->least));
		json_object_set_new(e, "other_user_s", json_real(vy->user));
		json_object_set_new(e, "cpu_source",
				    json_string(bare ? "runs without the shim"
						     : "runs under the shim, less its estimated time"));
		json_object_set_new(e, "page_faults", json_real(x->faults));
		json_object_set_new(e, "other_page_faults", json_real(y->faults));
		json_object_set_new(e, "allocations", json_real(x->allocations));
		json_object_set_new(e, "ns_per_allocation", json_real(gap / x->allocations * 1e9));
		json_object_set_new(e, "calloc_bytes", json_real(x->calloc_bytes));
		json_object_set_new(e, "realloc_copied_bytes",
				    json_real(x->realloc_copied_bytes));
		char where[512], user_part[64];
		/* (none where this one's user time was the less: "-0.037 s
		 * of the difference is user time", and then spinning on a lock
		 * in user time; new-user trial 28) */
		double user_gap = vx->user - vy->user;
		if (user_gap > 0)
			snprintf(user_part, sizeof user_part,
				 "%.3f s of the difference is user time and",
				 user_gap);
		else
			snprintf(user_part, sizeof user_part,
				 "none of the difference is user time, and it is");
		if (kernel_work)
			snprintf(where, sizeof where,
				 "%s %.3f s "
				 "system time that the page faults (%.0f here, %.0f "
				 "there) do not account for: the allocator's own "
				 "work, in the process and in the kernel on its "
				 "behalf%s",
				 user_part, sys_gap, x->faults, y->faults,
				 x->threads > 1
					 ? " (with threads: waiting for the locks that "
					   "guard its heaps, which a thread freeing "
					   "blocks another allocated takes too)"
					 : "");
		else if (sys_gap > 0.2 * gap)
			snprintf(where, sizeof where,
				 "%.3f s of the difference is user time and %.3f s "
				 "system time, which the more page faults here may "
				 "account for (%.0f, against %.0f there): the "
				 "allocator's own work, and the fresh memory it "
				 "touches",
				 vx->user - vy->user, sys_gap, x->faults, y->faults);
		else
			snprintf(where, sizeof where,
				 "%.3f s of the difference is user time: the time "
				 "is in the allocator's own work in the %s, "
				 "not in the kernel (page faults %.0f here, %.0f "
				 "there)",
				 vx->user - vy->user,
				 tree && json_array_size(m[j].runs.children)
					 ? "processes"
					 : "process",
				 x->faults, y->faults);
		char churned[256] = "and no churn explains it";
		if (churn_s > 0)
			snprintf(churned, sizeof churned,
				 "beyond the %.3f s of system time the churn found "
				 "here takes (%.3f s of CPU without it)",
				 churn_s, least_x);
		snprintf(a->explanation, sizeof a->explanation,
			 "On %s the same command took %.3f s of CPU, against %.3f s "
			 "here (%.0f%% less; %s), and %s, %s.",
			 m[fastest].runs.backend, vy->least, vx->least,
			 100 * (vx->least - vy->least) / vx->least,
			 bare ? "the fastest of each backend's runs without the shim"
			      : "each less the shim's own estimated time",
			 where, churned);
		/* The bytes the calls wrote, at this machine's copy speed:
		 * where they take half the difference or more, that is what
		 * it is, not "4,611,812 ns an allocation" of 64 allocations
		 * (new-user trial 27). */
		double copy_s = mt_copy_cost_s() *
				(x->calloc_bytes + x->realloc_copied_bytes);
		/* (no more than the user time they are part of: the speed is
		 * measured on 64 MiB copies, and smaller blocks copy faster
		 * in the caches; 0.341 s was said of a run of 0.236 s user
		 * time, blocks of 0.6 MiB; new-user trial 31) */
		bool capped = vx->user > 0 && copy_s > vx->user;
		if (capped)
			copy_s = vx->user;
		json_object_set_new(e, "bytes_written_s", json_real(copy_s));
		bool by_bytes = copy_s >= 0.5 * gap;
		if (by_bytes) {
			char part[48] = "as much as the whole difference";
			if (copy_s < gap)
				snprintf(part, sizeof part, "%.0f%% of the difference",
					 100 * copy_s / gap);
			mt_finding_append(a, " Most of it is the bytes the calls wrote, "
				 "not the calls themselves, about %.3f s at this "
				 "machine's copy speed (%.2f ns a byte, measured%s), "
				 "%s:", copy_s, mt_copy_cost_s() * 1e9,
				 capped ? "; at most the run's user time, which "
					  "the copies are part of"
					: "",
				 part);
			say_bytes_written(a, x, y, m[fastest].runs.backend);
		} else
			mt_finding_append(a, " Spread over %s %.0f allocations that is "
				 "%.0f ns each (with their frees): the allocator's "
				 "code on each call, and where it puts the blocks, "
				 "which the program's reads and writes of them feel.",
				 tree && json_array_size(m[j].runs.children)
					 ? "the command's processes'"
					 : "its",
				 x->allocations, gap / x->allocations * 1e9);
		json_object_set_new(e, "churn_system_s", json_real(churn_s));
		/* (beyond 2 us a call: the calls' waits for each other's, with
		 * threads, and the bytes they wrote) */
		double written_s = 0.5e-9 * (x->calloc_bytes + x->realloc_copied_bytes);
		if (gap > 2e-6 * x->allocations + written_s && x->threads > 1 &&
		    user_gap > 0.25 * gap)
			mt_finding_append(a, " That is more than a call takes alone (2 us "
				 "at most): with %.0f threads, a call can also wait "
				 "for the others', spinning on the lock that guards "
				 "the allocator's heap (user time).", x->threads);
		/* (a part of it, a fifth or more, said too: 221 MB copied by
		 * realloc, 0.038 s of a 0.133 s difference, went unsaid,
		 * where the calls' bound left room for it; new-user trial
		 * 37) */
		if (!by_bytes && ((gap > 2e-6 * x->allocations && written_s >= 0.1 * gap) ||
				  copy_s >= 0.2 * gap)) {
			mt_finding_append(a, " Its calls also wrote bytes, about %.3f s "
				 "of it at this machine's copy speed:", copy_s);
			say_bytes_written(a, x, y, m[fastest].runs.backend);
		}
		if (tree && json_array_size(m[j].runs.children))
			a->processes = 1 + (unsigned)json_array_size(m[j].runs.children);
		/* (where the allocations are: the large blocks' sites, where
		 * most are large, else the small blocks' samples; of the
		 * process that made the most of them, a child's where the
		 * command's workers did: "not sampled" was said of a parent
		 * that made one; new-user trial 49) */
		json_t *busiest = busiest_process(&m[j].runs, tree);
		for (size_t i = 0; i < m[j].runs.n; i++) {
			json_t *sites = json_object_get(
				busiest ? busiest : m[j].runs.summaries[i], "sites");
			if (!sites)
				continue;
			if (x->large_allocs >= 0.5 * x->allocations) {
				large_sites(a, sites, x);
				if (!by_bytes)
					reuse_large_fix(a);
			} else {
				mt_finding_small_sites(a, sites);
				if (!by_bytes)
					fewer_calls_fix(a);
			}
			break;
		}
		struct mt_fix *fix = mt_fix_add(a, MT_FIX_BACKEND);
		if (fix) {
			fix->backend = m[fastest].runs.backend;
			snprintf(fix->text, sizeof fix->text,
				 "run on %s, measured here: %.3f s of CPU against "
				 "%.3f s (memtrace run --backend %s)",
				 m[fastest].runs.backend, vy->least, vx->least,
				 m[fastest].runs.backend);
		}
		if (!mt_findings_keep(all, a)) {
			mt_finding_free(a);
			return false;
		}
	}
	return true;
}

static double real_of(const json_t *u, const char *key)
{
	return json_real_value(json_object_get(u, key));
}

static const char *text_of(const json_t *u, const char *key)
{
	return json_string_value(json_object_get(u, key));
}

/* One backend run: its kernel time that page faults do not account for
 * (not the allocator's by default: a queue's mutex and condition
 * variables made 100k futex calls of a producer and consumer's; new-user
 * trial 43). */
static void print_not_compared(FILE *out, const json_t *u)
{
	double sys = real_of(u, "system_s");
	fprintf(out,
		"\nNot compared (allocator-time): on %s the run took %.3f s of "
		"system time of its %.3f s of CPU, %.3f s more than its page "
		"faults can account for, with %.0f threads: their waiting on "
		"locks, the program's own (a queue's, a mutex's) or the "
		"allocator's, or other system calls; whether the allocator's "
		"are any of it, only a run on another allocator tells "
		"(explain --backend %s,mimalloc, or memtrace compare).\n",
		text_of(u, "backend"), sys, real_of(u, "cpu_s"),
		sys - real_of(u, "faults_s"), real_of(u, "threads"),
		text_of(u, "backend"));
}

/* One backend run: so many allocations that the allocator's speed
 * matters. */
static void print_call_rate(FILE *out, const json_t *u)
{
	double allocations = real_of(u, "allocations"), cpu = real_of(u, "cpu_s");
	fprintf(out,
		"\nNot compared (allocator-time): on %s the run made %.0f "
		"allocations in %.3f s of CPU, one every %.0f ns. On programs "
		"made of many small blocks, allocators have differed by 19 to "
		"136 ns a malloc and free (measured on three); ",
		text_of(u, "backend"), allocations, cpu, cpu / allocations * 1e9);
	double share = real_of(u, "share_at_least");
	if (share < 1)
		fprintf(out, "%.0f ns here would be %.0f%% of the CPU.",
			PAIR_DIFFERENCE_LEAST_S * 1e9, share * 100);
	else
		fprintf(out, "here the allocator's calls are most of the run.");
	/* (this backend first, then the others: none twice) */
	static const char *const all[] = {"glibc", "jemalloc", "tcmalloc",
					  "mimalloc"};
	const char *backend = text_of(u, "backend");
	fprintf(out, " Only a run on another allocator measures it (explain "
		     "--backend %s", backend);
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (strcmp(all[i], backend) != 0)
			fprintf(out, ",%s", all[i]);
	fprintf(out, ", or memtrace compare).");
	/* (fewer calls is the change that holds on any allocator) */
	const char *where = text_of(u, "small_sites_said");
	if (where)
		fprintf(out, "%s Fewer allocations there make the allocator's "
			     "speed matter less, whichever it is: %sreuse buffers "
			     "and strings across iterations (clear() keeps a "
			     "vector's or string's capacity, not a map's nodes), "
			     "or give each request's containers an arena (C++: "
			     "std::pmr containers on a monotonic_buffer_resource); "
			     "in Python, fewer temporary objects.",
			where,
			json_is_true(json_object_get(u, "small_site_grows"))
				? GROWN_THERE
				: "");
	fputc('\n', out);
}

/* "" or the CPU time beyond what a churn found on the backend took,
 * which these notes weigh. */
static const char *beyond_churn(const json_t *u, char *buf, size_t size)
{
	double churn = real_of(u, "churn_s");
	buf[0] = 0;
	if (churn > 0)
		snprintf(buf, size, ", %.3f s beyond the %.3f s of system time "
				    "of the churn found there",
			 real_of(u, "cpu_s") - churn, churn);
	return buf;
}

/* A difference past the runs' spread, but short of a quarter. */
static void print_below_bar(FILE *out, const json_t *u)
{
	double cpu = real_of(u, "cpu_s") - real_of(u, "churn_s"),
	       other = real_of(u, "other_cpu_s");
	char churn[160];
	fprintf(out,
		"\nBelow the bar (allocator-time): on %s the command took %.3f s "
		"of CPU at best, against %.3f s on %s%s (%.0f%% less, past the "
		"runs' spread): a finding needs a quarter less; compare them "
		"with memtrace compare, or rerun with a larger --repeat.\n",
		text_of(u, "other_backend"), other, real_of(u, "cpu_s"),
		text_of(u, "backend"), beyond_churn(u, churn, sizeof churn),
		/* (rounded down: 24.8% said as 25% read as a quarter, short
		 * of the quarter asked; new-user trial 22) */
		floor(100 * (1 - other / cpu)));
}

/* A difference the runs' spread could have made by chance, with what it
 * would take to decide. */
static void print_open(FILE *out, const json_t *u)
{
	char churn[160];
	fprintf(out,
		"\nUndecided (allocator-time): %s took %.3f s of CPU at best%s, "
		"against %.3f s on %s, but each backend's runs varied by up to "
		"%.0f%% (median to fastest): a ratio below %.2f, or a median on "
		"%s (%.3f s) not below every run here, may be chance on this "
		"machine. Rerun with a larger --repeat when the machine is "
		"quieter.\n",
		text_of(u, "backend"), real_of(u, "cpu_s"),
		beyond_churn(u, churn, sizeof churn), real_of(u, "other_cpu_s"),
		text_of(u, "other_backend"), 100 * (real_of(u, "spread") - 1),
		real_of(u, "ratio_needed"),
		text_of(u, "other_backend"), real_of(u, "other_median_cpu_s"));
}

/* "B took X s of CPU at best, against Y s on O (N% less there)". */
static const char *took_against(const json_t *u, char *buf, size_t size)
{
	char churn[160];
	double cpu = real_of(u, "cpu_s"), other = real_of(u, "other_cpu_s");
	snprintf(buf, size,
		 "%s took %.3f s of CPU at best%s, against %.3f s on %s (%.0f%% "
		 "less there)",
		 text_of(u, "backend"), cpu, beyond_churn(u, churn, sizeof churn),
		 other, text_of(u, "other_backend"), floor(100 * (1 - other / cpu)));
	return buf;
}

/* A difference past the runs' spread, from too few runs to read it. */
static void print_few_runs(FILE *out, const json_t *u)
{
	char took[512];
	long runs = json_integer_value(json_object_get(u, "runs"));
	fprintf(out,
		"\nUndecided (allocator-time): %s, but with %ld run%s a backend "
		"the runs' spread is one difference, not a measure of chance: "
		"rerun with --repeat 3 or more to tell whether it holds.\n",
		took_against(u, took, sizeof took), runs, runs == 1 ? "" : "s");
}

/* A clear difference past what the allocator's calls can take. */
static void print_beyond_calls(FILE *out, const json_t *u)
{
	char took[512];
	fprintf(out,
		"\nNot the calls alone (allocator-time): %s, past the runs' "
		"spread; but its %.0f allocations can take %.3f s at most (2 us "
		"each with their frees): the rest of the difference is where "
		"the allocator put the blocks (their alignment, huge pages), "
		"which the program's reads and writes feel, or not the "
		"allocator's doing at all.",
		took_against(u, took, sizeof took), real_of(u, "allocations"),
		real_of(u, "calls_bound_s"));
	/* (system time: the kernel's copies, read() into a buffer say) */
	double kernel = real_of(u, "kernel_s");
	if (kernel > 0)
		fprintf(out,
			" %.3f s of it is system time the page faults do not "
			"account for: the kernel's work on the program's system "
			"calls, whose copies into and out of its buffers can be "
			"slower where a buffer is not aligned to a cache line or "
			"a page (%saligned_alloc(4096, n) gives one on a page).",
			kernel,
			strcmp(text_of(u, "backend"), "glibc") == 0
				? "glibc puts a block it maps 16 bytes past a "
				  "page; "
				: "");
	fprintf(out, " %s is worth a try: memtrace compare measures it.\n",
		text_of(u, "other_backend"));
}

void mt_print_undecided(FILE *out, const json_t *undecided)
{
	size_t i;
	const json_t *u;
	json_array_foreach(undecided, i, u) {
		if (json_is_true(json_object_get(u, "call_rate")))
			print_call_rate(out, u);
		else if (json_is_true(json_object_get(u, "one_backend")))
			print_not_compared(out, u);
		else if (json_is_true(json_object_get(u, "few_runs")))
			print_few_runs(out, u);
		else if (json_is_true(json_object_get(u, "below_bar")))
			print_below_bar(out, u);
		else if (json_is_true(json_object_get(u, "beyond_calls")))
			print_beyond_calls(out, u);
		else
			print_open(out, u);
	}
}
