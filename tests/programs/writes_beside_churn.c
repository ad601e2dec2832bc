/* `writes_beside_churn [ROUNDS]`: each round writes 40,000 blocks of
 * 4 KiB to /dev/null (system time: the write calls), and allocates a
 * 48 MiB scratch buffer (a mapping of its own on glibc, past its largest
 * mmap threshold) of which it touches one page in 16 before freeing it.
 * The mappings churn, and their faults are a part of the run's system
 * time, the writes the rest: an estimate that shares the system time
 * among the faults says too much, which a run with the churn stopped
 * measures (explain --verify). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { WRITES = 40000, SCRATCH = 48 << 20, STRIDE = 16 * 4096 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	int fd = open("/dev/null", O_WRONLY);
	static char chunk[4096];
	long sum = 0;
	if (fd < 0)
		return 1;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < WRITES; i++)
			if (write(fd, chunk, sizeof chunk) != sizeof chunk)
				return 1;
		char *scratch = malloc(SCRATCH);
		if (!scratch)
			return 1;
		for (size_t at = 0; at < SCRATCH; at += STRIDE)
			scratch[at] = (char)r;
		sum += scratch[(size_t)r * STRIDE % SCRATCH];
		free(scratch);
	}
	printf("%ld\n", sum);
	return 0;
}
