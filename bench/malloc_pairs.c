/*
 * malloc_pairs: time malloc(size)+free() pairs, optionally in several threads.
 *
 *   malloc_pairs [--threads N] [--iterations N] [--clock] [--mmap]
 *                [--mprotect] [--thread-starts] [--regions]
 *                [--depth N] [--new-stacks] [--mixed] SIZE...
 *
 * For each size, N threads (started together behind a barrier) each run a
 * tight loop of malloc, one byte written, free.  One line per size:
 *
 *   size=16 threads=1 ns_per_pair=12.34
 *
 * ns_per_pair is the wall time of the whole parallel run divided by the
 * iterations per thread.  Without --iterations the count is calibrated per
 * size (a short trial run) so one measurement takes roughly 75 ms.
 *
 * --depth N runs the loop N calls deep (the stack a profiler that unwinds
 * it walks through).  --new-stacks makes each pair's stack differ from the
 * last 63 (its depth goes round N to N+63), so that one that remembers the
 * stacks it walked walks them all the same.
 *
 * --mmap makes each pair an anonymous mmap(size) of the program's own, one
 * byte written, munmap: two memory system calls that the shim interposes
 * (bench/shim_cost.py measures what it adds to each).
 *
 * --mixed draws each pair's size at random from 16 to 15 + SIZE (SIZE
 * rounded down to a power of two), as a program's blocks of mixed sizes
 * are: a branch on the size, which a loop of one size always predicts,
 * then goes the wrong way as often as it would there.
 *
 * --mprotect makes each pair two mprotect calls on a page of the program's
 * own (SIZE is not used): memory system calls the shim does not interpose,
 * which its kernel counters count (or, with a trace, sample), as they do
 * glibc's own inside malloc and free (bench/shim_cost.py takes the
 * counters' part: the run under the shim less the one with
 * MEMTRACE_PERF=0).
 *
 * --thread-starts makes each pair a thread started and joined, one that
 * does nothing (SIZE is not used): what starting a thread costs, which the
 * shim's kernel counters add to (each is inherited by every new thread;
 * bench/shim_cost.py measures it).
 *
 * --regions makes each pair a region begun and ended (memtrace.h; SIZE is
 * not used): at each mark the shim reads the kernel counters and the
 * thread's and the process's CPU time and faults (bench/shim_cost.py
 * measures what a region costs; without the shim the calls do nothing).
 *
 * --clock reads the TSC before each malloc and each free, as a trace
 * writer that timestamps every event must: no shim, just what the clock
 * costs per event on this machine (bench/trace_cost.py prints it).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "memtrace.h"

static const size_t default_sizes[] = {16, 256, 4096, 65536, 1048576};

struct run {
	size_t size;
	uint64_t iterations;
	pthread_barrier_t start;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool with_clock;
static bool with_mmap;
static bool with_threads;
static bool with_mprotect;
static bool with_regions;
static bool mixed;

/* A timestamp, kept (so that it is really read). */
static inline __attribute__((always_inline)) void stamp(void)
{
#if defined(__x86_64__)
	uint64_t t = __rdtsc();
#else
	uint64_t t = now_ns();
#endif
	__asm__ volatile("" : : "r"(t));
}

static inline __attribute__((always_inline)) void
pairs_loop(size_t size, uint64_t n, bool clock)
{
	/* (a mask, not a modulo: a division would weigh on the bare run) */
	size_t mask = mixed ? ((size_t)1 << (63 - __builtin_clzll(size))) - 1 : 0;
	uint64_t x = 88172645463325252ull;
	for (uint64_t i = 0; i < n; i++) {
		if (clock)
			stamp();
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		char *p = malloc(mixed ? 16 + (x & mask) : size);

		/* The pointer escapes, so -O2 cannot drop the pair. */
		__asm__ volatile("" : : "r"(p) : "memory");
		if (!p)
			abort();
		*(volatile char *)p = (char)i;
		if (clock)
			stamp();
		free(p);
	}
}

/* The program's own mappings, made and given back. */
static void mmap_loop(size_t size, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			abort();
		*(volatile char *)p = (char)i;
		munmap(p, size);
	}
}

static void *nothing(void *arg)
{
	return arg;
}

/* Threads started and joined, one at a time. */
static void thread_loop(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) ||
		    pthread_join(t, NULL))
			abort();
	}
}

/* A page made read-only and writable again, n times. */
static void mprotect_loop(uint64_t n)
{
	static char *page;
	if (!page) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			abort();
	}
	for (uint64_t i = 0; i < n; i++)
		if (mprotect(page, 4096, PROT_READ) ||
		    mprotect(page, 4096, PROT_READ | PROT_WRITE))
			abort();
}

/* A region begun and ended, n times. */
static void region_loop(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		memtrace_begin("pairs");
		__asm__ volatile("" ::: "memory");
		memtrace_end("pairs");
	}
}

static void pairs(size_t size, uint64_t n)
{
	if (with_regions)
		region_loop(n);
	else if (with_threads)
		thread_loop(n);
	else if (with_mprotect)
		mprotect_loop(n);
	else if (with_mmap)
		mmap_loop(size, n);
	else if (with_clock)
		pairs_loop(size, n, true);
	else
		pairs_loop(size, n, false);
}

static uint64_t depth;
static bool new_stacks;

/* pairs(), `frames` calls down (not inlined, not a tail call). */
static __attribute__((noinline)) void pairs_at(size_t size, uint64_t n,
					       uint64_t frames)
{
	if (frames)
		pairs_at(size, n, frames - 1);
	else
		pairs(size, n);
	__asm__ volatile("" ::: "memory");
}

static void run_pairs(size_t size, uint64_t n)
{
	if (!new_stacks) {
		pairs_at(size, n, depth);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		pairs_at(size, 1, depth + i % 64);
}

static void *worker(void *arg)
{
	struct run *r = arg;

	run_pairs(r->size, r->iterations / 64 + 1); /* warm up */
	pthread_barrier_wait(&r->start);
	run_pairs(r->size, r->iterations);
	return NULL;
}

static double measure(size_t size, uint64_t iterations, int nthreads)
{
	struct run r = {.size = size, .iterations = iterations};
	pthread_t tid[nthreads];
	uint64_t t0, t1;
	int err;

	if ((err = pthread_barrier_init(&r.start, NULL, (unsigned)nthreads + 1))) {
		fprintf(stderr, "malloc_pairs: pthread_barrier_init: %s\n",
			strerror(err));
		exit(1);
	}
	for (int i = 0; i < nthreads; i++) {
		if ((err = pthread_create(&tid[i], NULL, worker, &r))) {
			fprintf(stderr, "malloc_pairs: pthread_create: %s\n",
				strerror(err));
			exit(1);
		}
	}
	pthread_barrier_wait(&r.start);
	t0 = now_ns();
	for (int i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	t1 = now_ns();
	pthread_barrier_destroy(&r.start);
	return (double)(t1 - t0) / (double)iterations;
}

/* Default iteration count: per size, as the cost of a pair ranges from a few
 * ns (thread cache hit) to microseconds (mmap+munmap and a page fault).  Grow
 * a trial run until it takes >= 10 ms, then aim at ~75 ms. */
static uint64_t calibrate(size_t size, int nthreads)
{
	const double trial_ns = 10e6, target_ns = 75e6;
	uint64_t n = 1000;
	double ns;

	for (;;) {
		ns = measure(size, n, nthreads);
		if (ns * (double)n >= trial_ns || n >= UINT64_MAX / 8)
			break;
		n *= 8;
	}
	n = (uint64_t)(target_ns / ns);
	return n ? n : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: malloc_pairs [--threads N] [--iterations N] "
			"[--clock] [--mmap] [--mprotect] [--thread-starts] [--regions] [--depth N] "
			"[--new-stacks] [--mixed] "
			"SIZE...\n");
	return 2;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t threads = 1, iterations = 0, v;
	size_t sizes[64];
	int nsizes = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--depth")) {
			/* (0: none, which parse_u64 refuses) */
			if (i + 1 >= argc ||
			    (strcmp(argv[++i], "0") && parse_u64(argv[i], 1000, &depth))) {
				fprintf(stderr, "malloc_pairs: bad value for %s\n", a);
				return usage();
			}
		} else if (!strcmp(a, "--threads") || !strcmp(a, "--iterations")) {
			bool is_threads = a[2] == 't';

			if (i + 1 >= argc ||
			    parse_u64(argv[++i], is_threads ? 1024 : UINT64_MAX,
				      is_threads ? &threads : &iterations)) {
				fprintf(stderr, "malloc_pairs: bad value for %s\n",
					a);
				return usage();
			}
		} else if (!strcmp(a, "--clock")) {
			with_clock = true;
		} else if (!strcmp(a, "--mprotect")) {
			with_mprotect = true;
		} else if (!strcmp(a, "--thread-starts")) {
			with_threads = true;
		} else if (!strcmp(a, "--regions")) {
			with_regions = true;
		} else if (!strcmp(a, "--mmap")) {
			with_mmap = true;
		} else if (!strcmp(a, "--mixed")) {
			mixed = true;
		} else if (!strcmp(a, "--new-stacks")) {
			new_stacks = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			return 0;
		} else if (!parse_u64(a, SIZE_MAX, &v) &&
			   nsizes < (int)(sizeof sizes / sizeof sizes[0])) {
			sizes[nsizes++] = (size_t)v;
		} else {
			fprintf(stderr, "malloc_pairs: bad size '%s'\n", a);
			return usage();
		}
	}
	if (nsizes == 0) {
		nsizes = sizeof default_sizes / sizeof default_sizes[0];
		memcpy(sizes, default_sizes, sizeof default_sizes);
	}

	for (int i = 0; i < nsizes; i++) {
		uint64_t n = iterations ? iterations
					: calibrate(sizes[i], (int)threads);
		double ns = measure(sizes[i], n, (int)threads);

		printf("size=%zu threads=%" PRIu64 " ns_per_pair=%.2f\n",
		       sizes[i], threads, ns);
		fflush(stdout);
	}
	return 0;
}
