/* `writes_out [WRITES]`: fills a 16 MiB table once and keeps it (its
 * faults are first touches), then writes it out 4 KiB at a time, WRITES
 * times, to /dev/null: the run's system time is the write calls', not
 * memory's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TABLE = 16 << 20, CHUNK = 4096 };

int main(int argc, char **argv)
{
	long writes = argc > 1 ? atol(argv[1]) : 600000;
	int fd = open("/dev/null", O_WRONLY);
	char *table = malloc(TABLE);
	if (fd < 0 || !table)
		return 1;
	memset(table, 7, TABLE);
	for (long i = 0; i < writes; i++)
		if (write(fd, table + (i * CHUNK) % TABLE, CHUNK) < 0)
			return 1;
	printf("%ld writes of %d bytes\n", writes, CHUNK);
	free(table);
	close(fd);
	return 0;
}
