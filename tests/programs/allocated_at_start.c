/* `allocated_at_start`: the bytes the allocator counts allocated when
 * main starts (glibc's mallinfo2, jemalloc's stats.allocated, tcmalloc's
 * generic.current_allocated_bytes): the same with and without the shim,
 * whose own blocks stay out of the program's heap.  One small block of the
 * shim's left live in mimalloc's heap (dlerror's message after a lookup
 * that failed) kept a segment that the program's large requests then
 * reused, where bare each made one anew: the shim sped up the allocator
 * it measures (new-user trial 47). */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	/* (the allocator's own entry points, looked up before anything is
	 * measured: a lookup that fails allocates, here as bare) */
	int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
		(int (*)(const char *, void *, size_t *, void *, size_t))dlsym(
			RTLD_DEFAULT, "mallctl");
	int (*tc_property)(const char *, size_t *) =
		(int (*)(const char *, size_t *))dlsym(
			RTLD_DEFAULT, "MallocExtension_GetNumericProperty");
	(void)dlerror(); /* (frees what a failed lookup left) */
	(void)dlerror();
	size_t allocated = 0;
	const char *how = "mallinfo2";
	if (mallctl) {
		uint64_t epoch = 1;
		size_t len = sizeof allocated;
		mallctl("epoch", NULL, NULL, &epoch, sizeof epoch);
		mallctl("stats.allocated", &allocated, &len, NULL, 0);
		how = "stats.allocated";
	} else if (tc_property) {
		tc_property("generic.current_allocated_bytes", &allocated);
		how = "generic.current_allocated_bytes";
	} else {
		allocated = mallinfo2().uordblks;
	}
	printf("%s at main: %zu bytes\n", how, allocated);
	/* (mimalloc counts none of that: where a block of each small size
	 * the shim's lookups left falls in its page tells whether one came
	 * before it) */
	for (size_t n = 8; n <= 128; n += 8) {
		void *p = malloc(n);
		printf("%zu at %#lx\n", n, (unsigned long)((uintptr_t)p & 0xffff));
	}
	return 0;
}
