/* `touch_again`: 64 MiB allocated, written and freed, then 24 MiB the
 * same: glibc maps and unmaps each, so the process faults some 88 MiB of
 * pages though it never held more than 64 MiB at once.  First touch, a
 * little more than the pages ever resident (new-user trial 21: 25% more
 * was said to be "about as many"). */
#include <stdlib.h>
#include <string.h>

static void touch(size_t bytes)
{
	char *p = malloc(bytes);
	if (!p)
		exit(1);
	memset(p, 1, bytes);
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

int main(void)
{
	touch((size_t)64 << 20);
	touch((size_t)24 << 20);
	return 0;
}
