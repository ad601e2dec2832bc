/* Churn of mappings: a 40 MiB buffer (above glibc's 32 MiB mmap threshold
 * ceiling, so always mapped) made, filled and dropped, 60 times. */
#include <stdlib.h>
#include <string.h>

int main(void)
{
	for (int i = 0; i < 60; i++) {
		char *p = malloc(40u << 20);
		if (!p)
			return 1;
		memset(p, i, 40u << 20);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return 0;
}
