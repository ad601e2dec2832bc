/* `heap_layout`: whether glibc's heap was set up before main (the shim's
 * own first malloc would do it), where the program's first blocks sit in
 * its heap, how far the break went for them, and whether a realloc grows
 * one in place; the same with and without the shim, which keeps its own
 * allocations out of the program's heap. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uintptr_t heap_start(void)
{
	char line[512];
	uintptr_t lo = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof line, maps))
		if (strstr(line, "[heap]"))
			sscanf(line, "%lx-", &lo);
	if (maps)
		fclose(maps);
	return lo;
}

int main(void)
{
	static const size_t sizes[] = {24, 100, 1000, 4000, 70000, 65536};
	void *p[sizeof sizes / sizeof *sizes];
	struct mallinfo2 before = mallinfo2();
	printf("heap before main: %zu bytes, %zu in use\n", before.arena,
	       before.uordblks);
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		p[i] = malloc(sizes[i]);
	uintptr_t base = heap_start();
	printf("break at +%#lx\n", (unsigned long)((uintptr_t)sbrk(0) - base));
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		printf("%zu at +%#lx\n", sizes[i], (unsigned long)((uintptr_t)p[i] - base));
	void *last = p[5];
	void *grown = realloc(last, 131072);
	printf("realloc %s\n", grown == last ? "in place" : "moved");
	free(grown);
	for (size_t i = 0; i < 5; i++)
		free(p[i]);
	return 0;
}
