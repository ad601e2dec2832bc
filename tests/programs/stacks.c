/* Large blocks from one helper, reached from two callers whose frames are
 * alike (the same size, so the helper's stack pointer is the same from
 * either), in turn: `stacks ROUNDS` makes ROUNDS blocks from first() and
 * ROUNDS / 2 from second(), each through make(); then ROUNDS from a
 * recursion whose depth changes each time (a new stack each time).  One
 * block from make(), for keep(), stays live all along. */
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) char *make(size_t n)
{
	char *p = malloc(n);
	if (!p)
		abort();
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) void first(size_t n)
{
	char *p = make(n);
	memset(p, 1, 4096);
	free(p);
}

__attribute__((noinline)) void second(size_t n)
{
	char *p = make(n);
	memset(p, 2, 4096);
	free(p);
}

__attribute__((noinline)) void deep(size_t n, unsigned depth)
{
	if (depth) {
		deep(n, depth - 1);
		__asm__ volatile("" ::: "memory");
		return;
	}
	char *p = make(n);
	memset(p, 3, 4096);
	free(p);
}

__attribute__((noinline)) char *keep(size_t n)
{
	char *p = make(n);
	memset(p, 4, 4096);
	return p;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	char *kept = keep(1 << 20);
	for (int i = 0; i < rounds; i++) {
		first(1 << 20);
		if (i % 2 == 0)
			second(1 << 20);
	}
	for (int i = 0; i < rounds; i++)
		deep(1 << 20, (unsigned)i % 37);
	free(kept);
	return 0;
}
