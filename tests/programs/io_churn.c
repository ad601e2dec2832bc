/* `io_churn [ROUNDS]`: each round writes 20,000 blocks of 64 KiB to
 * /dev/null (system time: the write calls), and maps a 40 MiB scratch
 * buffer of which it touches 64 pages before freeing it.  The mappings
 * churn, but their faults cost a few milliseconds: the run's system time
 * is its writes'. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	int fd = open("/dev/null", O_WRONLY);
	static char chunk[65536];
	long sum = 0;
	if (fd < 0)
		return 1;
	for (int r = 0; r < rounds; r++) {
		char *scratch = malloc(40u << 20);
		if (!scratch)
			return 1;
		for (int i = 0; i < 64; i++)
			scratch[i * 4096] = (char)r;
		sum += scratch[4096 * (r % 64)];
		free(scratch);
		for (int i = 0; i < 20000; i++)
			if (write(fd, chunk, sizeof chunk) < 0)
				return 1;
	}
	printf("%ld\n", sum);
	return 0;
}
