/* A hot set kept out of many small records: 1,000,000 records of 192 B
 * are loaded, every 64th is kept and the rest freed, then the program
 * works on what is left for half a second.  One live record in every
 * 12 KiB: on jemalloc each of its slabs (3 pages for 192 B) keeps one,
 * so no purge gives the freed records back (fragmentation of small
 * blocks, not a cache); on glibc a live record pins one page in three. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rec {
	struct rec *next;
	int id;
	char payload[180];
};

int main(void)
{
	enum { N = 1000000, KEEP_EVERY = 64 };
	struct rec **all = malloc(sizeof *all * N), *hot = NULL;
	if (!all)
		return 1;
	for (int i = 0; i < N; i++) {
		if (!(all[i] = malloc(sizeof(struct rec))))
			return 1;
		all[i]->id = i;
		memset(all[i]->payload, i, sizeof all[i]->payload);
	}
	for (int i = 0; i < N; i++) {
		if (i % KEEP_EVERY == 0) {
			all[i]->next = hot;
			hot = all[i];
		} else {
			free(all[i]);
		}
	}
	free(all);
	unsigned long sum = 0;
	for (int step = 0; step < 50; step++) {
		for (struct rec *p = hot; p; p = p->next)
			sum += (unsigned char)p->payload[step % 180] + (unsigned)p->id;
		struct timespec pause = {0, 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	printf("%lu\n", sum);
	return 0;
}
