/* A buffer that fills up, then is emptied but kept, round after round, as
 * a stream reader's does (new-user trial 10: asyncio's readexactly of 4 MiB
 * messages).  Grown by realloc in 64 KiB steps past glibc's mmap threshold,
 * it becomes a mapped chunk that glibc grows with mremap; shrunk to 4 KiB by
 * realloc, glibc mremaps it down, giving its pages back to the kernel, and
 * the next round faults them in again.  Nothing is unmapped by munmap.
 *
 *   realloc_shrink [ROUNDS] [MIB]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	size_t top = (size_t)(argc > 2 ? atoi(argv[2]) : 4) << 20;
	size_t step = 64 << 10, len = 4096;
	char *buf = malloc(len);
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		for (size_t n = step; n <= top; n += step) {
			buf = realloc(buf, n);	/* the buffer grows */
			memset(buf + n - step, r, step);
		}
		sum += (unsigned char)buf[top / 2];
		buf = realloc(buf, len);	/* emptied, kept small */
	}
	free(buf);
	printf("%lu\n", sum);
	return 0;
}
