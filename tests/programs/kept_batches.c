/* `kept_batches [BATCHES]`: each batch loads 1,600 records of 64 KiB (100
 * MiB, written whole), keeps every 16th and frees the rest and the batch
 * before's, then works on what it kept for 0.2 s (the last batch for 1 s).
 * glibc keeps the freed records' pages between the kept ones, for the next
 * batch to reuse, and after the last for nobody: memory kept.  Giving it
 * back after each batch costs its pages faulted in anew by the next
 * (new-user trial 44's frag.c: 5.6x the faults, +0.7 s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RECORDS = 1600, RECORD = 64 << 10, KEEP_EVERY = 16 };

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static unsigned long work(char **kept, int n, double seconds)
{
	unsigned long sum = 0;
	double end = now_s() + seconds;
	while (now_s() < end)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < RECORD; j += 4096)
				sum += (unsigned char)kept[i][j];
	return sum;
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 4;
	static char *all[RECORDS], *kept[RECORDS / KEEP_EVERY];
	static char *before[RECORDS / KEEP_EVERY];
	int nkept = 0, nbefore = 0;
	unsigned long sum = 0;
	for (int b = 0; b < batches; b++) {
		for (int i = 0; i < RECORDS; i++) {
			all[i] = malloc(RECORD);
			if (!all[i])
				return 1;
			memset(all[i], (b + i) & 0xff, RECORD);
		}
		memcpy(before, kept, sizeof kept);
		nbefore = nkept;
		nkept = 0;
		for (int i = 0; i < RECORDS; i++) {
			if (i % KEEP_EVERY == 0)
				kept[nkept++] = all[i];
			else
				free(all[i]);
		}
		for (int i = 0; i < nbefore; i++)
			free(before[i]);
		sum += work(kept, nkept, b == batches - 1 ? 1.0 : 0.2);
	}
	printf("%lu\n", sum);
	return 0;
}
