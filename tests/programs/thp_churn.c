/* `thp_churn MODE [ROUNDS] [huge|default] [small]`: a 64 MiB buffer touched a page
 * at a time, ROUNDS times (30), in transparent huge pages where the
 * kernel gives them (with `huge`, advised by madvise(MADV_HUGEPAGE), as
 * NumPy does for its arrays; needed where THP is in madvise mode):
 *
 *   malloc  malloc'd and freed each round: glibc maps and unmaps it, and
 *           each round faults it in anew (mmap churn, the allocator's)
 *   mmap    the program's own mapping, made and unmapped each round
 *   reuse   malloc'd once and used each round: the same work, no churn
 *   once    mapped once, touched once, unmapped at the end: first touch
 *
 * `small`: first, 256 MiB of the program's own in 4 KiB pages, touched
 * once and kept (65,536 faults of a working set, no churn): the most of
 * the faults are those, the most of the system time the churn's.
 *
 * With huge pages each round is 32 faults of 2 MiB, not 16,384 of 4 KiB:
 * fewer faults than the pages the process has resident.  Prints one JSON
 * line: its page faults and CPU time (the ground truth the test compares
 * against). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#define BYTES ((size_t)64 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

static int huge;

/* The 2 MiB-aligned interior of [p, p + n) advised for huge pages. */
static void advise(char *p, size_t n)
{
	uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t b = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
	if (huge && b > a)
		madvise((void *)a, b - a, MADV_HUGEPAGE);
}

static long touch(char *p, int round)
{
	for (size_t i = 0; i < BYTES; i += 4096)
		p[i] = (char)(round + 1);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p[(size_t)round * 4096 % BYTES];
}

static char *mapped(void)
{
	char *p = mmap(NULL, BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	advise(p, BYTES);
	return p;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "malloc";
	int rounds = argc > 2 ? atoi(argv[2]) : 30;
	huge = argc > 3 && strcmp(argv[3], "huge") == 0;
	long sum = 0;
	char *kept = NULL;

	if (argc > 4 && !strcmp(argv[4], "small")) {
		size_t n = 4 * BYTES;
		char *s = mmap(NULL, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED || madvise(s, n, MADV_NOHUGEPAGE))
			return 1;
		for (size_t i = 0; i < n; i += 4096)
			s[i] = 1;
		__asm__ volatile("" : : "r"(s) : "memory");
	}

	for (int r = 0; r < rounds; r++) {
		if (!strcmp(mode, "malloc")) {
			char *p = malloc(BYTES);
			if (!p)
				return 1;
			advise(p, BYTES);
			sum += touch(p, r);
			free(p);
		} else if (!strcmp(mode, "mmap")) {
			char *p = mapped();
			sum += touch(p, r);
			munmap(p, BYTES);
		} else if (!strcmp(mode, "reuse")) {
			if (!kept && !(kept = malloc(BYTES)))
				return 1;
			if (!r)
				advise(kept, BYTES);
			sum += touch(kept, r);
		} else if (!strcmp(mode, "once")) {
			if (!kept)
				kept = mapped();
			if (!r)
				sum += touch(kept, r);
			else
				sum += kept[(size_t)r * 4096];
		} else {
			fprintf(stderr, "thp_churn: no mode %s\n", mode);
			return 2;
		}
	}
	if (!strcmp(mode, "once") && kept)
		munmap(kept, BYTES);
	free(!strcmp(mode, "reuse") ? kept : NULL);

	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	printf("{\"faults\": %ld, \"cpu_s\": %.6f, \"sum\": %ld}\n", u.ru_minflt,
	       (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
		       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6,
	       sum);
	return 0;
}
