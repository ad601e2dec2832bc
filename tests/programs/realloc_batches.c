/* Records built by appending to arrays grown by realloc (1.5x a step),
 * and a text grown by a few bytes a step, then all freed, batch after
 * batch (new-user trial 37): on jemalloc 1.4-1.6x the CPU of mimalloc
 * bare, 221 MB copied by realloc.
 *
 *   realloc_batches [BATCHES]   (default 60) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vec {
	double *v;
	size_t n, cap;
};

static void push(struct vec *a, double x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap + a->cap / 2 + 1 : 4;
		a->v = realloc(a->v, a->cap * sizeof(double));
		if (!a->v)
			exit(1);
	}
	a->v[a->n++] = x;
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 60;
	unsigned seed = 7;
	double sum = 0;
	for (int b = 0; b < batches; b++) {
		struct vec recs[16] = {0};
		for (int r = 0; r < 16; r++) {
			/* 160-640 KB each */
			seed = seed * 1664525u + 1013904223u;
			size_t len = 20000 + seed % 60000;
			for (size_t i = 0; i < len; i++)
				push(&recs[r], (double)(i ^ (size_t)b));
		}
		char *text = NULL;
		size_t tl = 0;
		for (int k = 0; k < 20000; k++) {
			char buf[64];
			int m = snprintf(buf, sizeof buf, "%d,%d;", b, k);
			text = realloc(text, tl + (size_t)m + 1);
			if (!text)
				return 1;
			memcpy(text + tl, buf, (size_t)m + 1);
			tl += (size_t)m;
		}
		for (int r = 0; r < 16; r++) {
			for (size_t i = 0; i < recs[r].n; i += 97)
				sum += recs[r].v[i];
			free(recs[r].v);
		}
		sum += (double)tl;
		free(text);
	}
	printf("%.1f\n", sum);
	return 0;
}
