/* An in-memory cache that is mostly dropped: 200,000 records of 1 KiB are
 * loaded (about 200 MiB), then all but every 64th is evicted, and the
 * program goes on working for half a second with what is left (a 1 MiB
 * scratch buffer per step).  The survivors are spread over the whole heap,
 * so the freed records stay resident: memory the allocator keeps, not
 * time.  Prints its own view at the end of the work: the anonymous
 * resident memory (/proc/self/status) and the bytes it still holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RECORDS = 200000, RECORD = 1024, KEEP_EVERY = 64, STEPS = 50 };

static void work(char **cache, int step)
{
	char *scratch = malloc(1 << 20);
	if (!scratch)
		exit(1);
	memset(scratch, step, 1 << 20);
	for (int i = 0; i < RECORDS; i += KEEP_EVERY)
		scratch[i % (1 << 20)] ^= cache[i][step % RECORD];
	free(scratch);
	struct timespec pause = {0, 10 * 1000 * 1000};
	nanosleep(&pause, NULL);
}

int main(void)
{
	char **cache = malloc(RECORDS * sizeof *cache);
	if (!cache)
		return 1;
	for (int i = 0; i < RECORDS; i++) {
		if (!(cache[i] = malloc(RECORD)))
			return 1;
		memset(cache[i], i, RECORD);
	}
	for (int i = 0; i < RECORDS; i++)
		if (i % KEEP_EVERY) {
			free(cache[i]);
			cache[i] = NULL;
		}
	for (int step = 0; step < STEPS; step++)
		work(cache, step);

	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "RssAnon:", 8))
			printf("rss_anon_kb=%ld held_bytes=%ld\n", atol(line + 8),
			       (long)(RECORDS / KEEP_EVERY) * RECORD);
	if (f)
		fclose(f);
	return 0;
}
