#include <string.h>

#include "shim_cost.h"

/* ns the shim adds per call, measured, not guessed:
 *
 *   bench/shim_cost.py --repeats 5
 *   (2026-11-25, this project's Debian 12 VM: AMD EPYC, 2 vCPUs shared
 *   with other jobs; glibc 2.36, jemalloc 5.3.0, tcmalloc (gperftools
 *   2.10), mimalloc 2.0.9; the build of commit e2dc030)
 *
 * malloc_pairs bare, under the shim counting, and tracing (MEMTRACE_OUT),
 * interleaved, one thread, the minimum of 5 runs each; half of what a
 * pair adds is one call's:
 *   small:   malloc(16) + free
 *   large:   malloc(1 MiB) + free (the block's call site followed)
 *   syscall: the program's own mmap(1 MiB) + munmap, one byte written
 *            (--mmap): the shim interposes it and follows its site, and
 *            the kernel counts it (counting) or samples its entry and exit
 *            into the trace (tracing: most of the 2.4 us).  That path does
 *            not depend on the allocator, and a pair takes 6.5 us bare, so
 *            the per-backend figures (counting 237, 498, 442, 416 ns;
 *            tracing 2230, 2235, 2469, 2574 ns) differ by noise: each row
 *            has their median.
 * Another machine, another build, or other options (MEMTRACE_SITES=0,
 * MEMTRACE_PERF=0) cost otherwise: the figures are an estimate, and the
 * output says so.  Re-measure with the command above and paste its last
 * lines here.  How well the estimate matches what a program loses: see
 * README.md, "What the shim costs". */
static const struct mt_shim_cost_row rows[] = {
	/* backend, tracing, small, large, syscall, kernel (ns per call),
	 * thread, region, region_alone
	 * (thread: ns per thread the program starts, bench/shim_cost.py
	 * --kinds thread --repeats 3, 2026-11-29, the median of the
	 * backends, the kernel's work the same on each: 1,500 threads that
	 * do nothing took 0.02 s bare, 0.13 s under the shim, all of it the
	 * inherited counters, none with MEMTRACE_PERF=0; new-user trial 27.
	 * 49 and 88 us a thread with the page-fault counters too,
	 * 2026-11-27)
	 * (region, region_alone: ns per region begun and ended, with the
	 * kernel counters and without them (MEMTRACE_PERF=0),
	 * bench/shim_cost.py --kinds region --repeats 3, 2026-11-29, the
	 * median of the backends; the NumPy benchmark's 1,000 regions took 5
	 * ms more on tcmalloc, 2% of its work, and the estimate had none of
	 * it) */
	{"glibc", false, 1.6, 28.6, 429.3, 38.8, 34861, 4769, 1746},
	{"glibc", true, 10.8, 42.0, 2351.7, 508.8, 73684, 8512, 1831},
	/* (jemalloc's small and large re-measured with --backends jemalloc
	 * after its usable sizes came from its own counters: 4.7 -> 3.6) */
	/* (the small counting figures of jemalloc, tcmalloc and mimalloc then
	 * less half of what the leaner paths of 2026-11-26 took off a pair,
	 * measured against the old build in the same rounds on a loaded
	 * machine: bench/malloc_overhead.py --threads 1 --baseline-shim OLD,
	 * 16 B to 4 KiB: -0.9, -3.7, -3.0 ns) */
	/* (and their small tracing figures glibc's scaled by the instructions
	 * a traced 16 B pair takes under callgrind once their events were
	 * written inline: 429, 368, 420 against glibc's 401; were 19.5,
	 * 18.1, 19.0 through the general path.  A loaded machine's timings
	 * of tracing are the trace writer's waits: re-measure quiet) */
	/* (jemalloc's small figures then less what its sizes from the map
	 * of pages took off (2026-11-27): counting, half of the 1.3-2.2 ns a
	 * 16 B-4 KiB pair measured against the old build in the same rounds
	 * (bench/malloc_overhead.py --backends jemalloc --baseline-shim OLD);
	 * tracing, scaled by a traced 16 B pair's instructions, 352 -> 310
	 * (bench/exact_cost.py)) */
	{"jemalloc", false, 2.3, 47.0, 429.3, 38.8, 34861, 4769, 1746},
	{"jemalloc", true, 10.2, 67.5, 2351.7, 508.8, 73684, 8512, 1831},
	{"tcmalloc", false, 3.4, 37.1, 429.3, 38.8, 34861, 4769, 1746},
	{"tcmalloc", true, 9.9, 45.6, 2351.7, 508.8, 73684, 8512, 1831},
	{"mimalloc", false, 3.2, 34.4, 429.3, 38.8, 34861, 4769, 1746},
	{"mimalloc", true, 11.3, 52.5, 2351.7, 508.8, 73684, 8512, 1831},
};

const struct mt_shim_cost_row *mt_shim_cost_row(const char *backend,
						bool tracing)
{
	const struct mt_shim_cost_row *worst = NULL;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct mt_shim_cost_row *r = &rows[i];
		if (r->tracing != tracing)
			continue;
		if (backend && strcmp(r->backend, backend) == 0)
			return r;
		if (!worst || r->small_ns > worst->small_ns)
			worst = r;
	}
	return worst;
}

double mt_shim_cost_of(const struct mt_shim_cost_row *r, double heap_calls,
		       double large_calls, double syscalls,
		       double kernel_syscalls)
{
	if (large_calls > heap_calls)
		large_calls = heap_calls;
	return ((heap_calls - large_calls) * r->small_ns +
		large_calls * r->large_ns + syscalls * r->syscall_ns +
		kernel_syscalls * r->kernel_ns) / 1e9;
}

void mt_shim_cost_finish(struct mt_shim_cost *k, double cpu_s, double wall_s)
{
	double of = cpu_s > 0 ? cpu_s : wall_s;
	k->estimated_s = k->calls_s + k->threads_s + k->start_s +
			 k->thread_starts_s + k->regions_s;
	k->share = of > 0 ? k->estimated_s / of : 0;
}
