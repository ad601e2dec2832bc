/*
 * records [trim|print]: a table of 1.5M records, each of four 80 B
 * blocks allocated one after another, of which 2% stay when the rest
 * expire; then the program works on for a while, and frees the rest (with
 * "print", prints its sum instead and leaves them: stdout's buffer is the
 * first malloc after the expiry, of 1 KiB or more, which glibc's sorting
 * of the freed blocks is inside).  On glibc a live record's four
 * blocks share a page, so the 2% pin far fewer pages than the same
 * blocks spread one to a page would: malloc_trim(0) gives most of the
 * freed memory back.  With "trim" it calls it after the expiry and
 * prints the anonymous resident memory before and after (/proc/self/
 * statm: resident - shared), in KiB.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RECORDS 1500000
#define PARTS 4

static long anon_kib(void)
{
	long size, resident, shared;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f || fscanf(f, "%ld %ld %ld", &size, &resident, &shared) != 3)
		return -1;
	fclose(f);
	return (resident - shared) * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
	int trim = argc > 1 && !strcmp(argv[1], "trim");
	int print = argc > 1 && !strcmp(argv[1], "print");
	char *(*table)[PARTS] = malloc(sizeof *table * RECORDS);
	if (!table)
		return 1;
	for (int i = 0; i < RECORDS; i++)
		for (int j = 0; j < PARTS; j++) {
			table[i][j] = malloc(80);
			if (!table[i][j])
				return 1;
			memset(table[i][j], i + j, 80);
		}
	/* expiry: every 50th record stays */
	for (int i = 0; i < RECORDS; i++)
		if (i % 50 != 0)
			for (int j = 0; j < PARTS; j++)
				free(table[i][j]);
	if (trim) {
		long before = anon_kib();
		malloc_trim(0);
		printf("anon_kib_before=%ld anon_kib_after=%ld\n", before, anon_kib());
	}
	/* work on the survivors for a while (~1 s) */
	unsigned long sum = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < RECORDS; i += 50)
			for (int j = 0; j < PARTS; j++)
				sum += (unsigned char)table[i][j][j];
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
		 1000000000L);
	if (print) {
		printf("sum=%lu\n", sum);
		return 0;
	}
	for (int i = 0; i < RECORDS; i += 50)
		for (int j = 0; j < PARTS; j++)
			free(table[i][j]);
	free(table);
	return sum == 1 ? 2 : 0;
}
