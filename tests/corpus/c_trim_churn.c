/* Churn on glibc's main heap: two 8 MiB buffers made, filled and dropped,
 * 150 times.  After the first free of a mapped block glibc raises its mmap
 * threshold past 8 MiB, so the buffers come from the top of the heap, and
 * each round's frees trim it. */
#include <stdlib.h>
#include <string.h>

static void *filled(size_t n)
{
	char *p = malloc(n);
	if (!p)
		exit(1);
	memset(p, 1, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(void)
{
	const size_t mib8 = 8u << 20;
	for (int i = 0; i < 150; i++) {
		char *a = filled(mib8), *b = filled(mib8);
		free(b);
		free(a);
	}
	return 0;
}
