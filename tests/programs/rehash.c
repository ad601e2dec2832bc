/* An open-addressing hash table of 64-bit keys, filled and dropped each
 * round, doubled when half full: a table twice the size, every key
 * placed in it anew (its bytes laid out again, not copied as they were),
 * then the old one freed (new-user trial 35).
 *
 *   rehash ROUNDS KEYS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX

struct table {
	uint64_t *slots; /* EMPTY: no key */
	size_t cap, used;
};

static void place(struct table *t, uint64_t key)
{
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (t->cap - 1);
	while (t->slots[i] != EMPTY)
		i = (i + 1) & (t->cap - 1);
	t->slots[i] = key;
	t->used++;
}

static uint64_t *empty_slots(size_t cap)
{
	uint64_t *slots = malloc(cap * sizeof *slots);
	if (!slots)
		exit(1);
	memset(slots, 0xff, cap * sizeof *slots);
	return slots;
}

static __attribute__((noinline)) void grow(struct table *t)
{
	struct table bigger = {empty_slots(t->cap * 2), t->cap * 2, 0};
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i] != EMPTY)
			place(&bigger, t->slots[i]);
	free(t->slots);
	*t = bigger;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	size_t keys = argc > 2 ? (size_t)atol(argv[2]) : 1000000;
	uint64_t sum = 0;
	for (int r = 0; r < rounds; r++) {
		struct table t = {empty_slots(16), 16, 0};
		for (uint64_t k = 1; k <= keys; k++) {
			if (2 * (t.used + 1) > t.cap)
				grow(&t);
			place(&t, k * 7 + (uint64_t)r);
		}
		sum += t.used + t.slots[t.cap / 3];
		free(t.slots);
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
