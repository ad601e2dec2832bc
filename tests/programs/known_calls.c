/* Makes a known number of each interposed call: `known_calls N` runs N
 * rounds; each round's calls are listed in tests/integration/test_known_calls.py
 * (ROUND).  Every pointer escapes, so the compiler keeps every call. */
#undef _FILE_OFFSET_BITS /* keep mmap and mmap64 two distinct calls */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void escape(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static void check(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

static void malloc_api_round(void)
{
	void *p;

	p = malloc(100);
	escape(p);
	free(p);

	p = calloc(4, 25);
	escape(p);
	free(p);

	p = malloc(50);
	p = realloc(p, 200);
	escape(p);
	free(p);

	p = reallocarray(NULL, 10, 10);
	escape(p);
	free(p);

	check(posix_memalign(&p, 64, 100) == 0, "posix_memalign");
	escape(p);
	free(p);

	p = aligned_alloc(64, 128);
	escape(p);
	free(p);

	p = memalign(64, 100);
	escape(p);
	free(p);

	p = valloc(100);
	escape(p);
	free(p);

	p = pvalloc(100);
	escape(p);
	free(p);

	p = malloc(30);
	check(malloc_usable_size(p) >= 30, "malloc_usable_size");
	free(p);

	/* gcc drops a literal free(NULL); this one it cannot see through. */
	void *volatile null = NULL;
	free(null);
}

static void syscall_round(void)
{
	const size_t len = 64 * 1024;
	char *m;

	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	check(m != MAP_FAILED, "mmap");
	m[0] = 1;
	check(madvise(m, len, MADV_DONTNEED) == 0, "madvise");
	check(madvise(m, len, MADV_FREE) == 0, "madvise");
	m = mremap(m, len, 2 * len, MREMAP_MAYMOVE);
	check(m != MAP_FAILED, "mremap");
	check(munmap(m, 2 * len) == 0, "munmap");

	m = mmap64(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check(m != MAP_FAILED, "mmap64");
	check(munmap(m, len) == 0, "munmap");

	/* The same through syscall(2), the way tcmalloc reaches the kernel. */
	long r = syscall(SYS_mmap, 0, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check(r != -1, "syscall mmap");
	check(syscall(SYS_madvise, r, len, MADV_WILLNEED) == 0, "syscall madvise");
	check(syscall(SYS_munmap, r, len) == 0, "syscall munmap");

	/* The program break: two grows and two shrinks of 8 KiB. */
	char *top = sbrk(0);
	check(sbrk(8192) == top, "sbrk grow");
	check(sbrk(-8192) != (void *)-1, "sbrk shrink");
	check(brk(top + 8192) == 0, "brk grow");
	check(brk(top) == 0, "brk shrink");
	check(syscall(SYS_brk, 0) != -1, "syscall brk");
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1;

	for (long i = 0; i < rounds; i++) {
		malloc_api_round();
		syscall_round();
	}
	return 0;
}
