/* A word-count style hash table: about 50 MB of nodes with keys and values
 * of mixed sizes (mostly small, a few KiB now and then), built once, then
 * looked up and updated for a while, then freed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	char *key;
	char *val;
	size_t vlen;
	uint64_t hits;
};

#define NBUCKETS (1u << 17)
#define NKEYS 170000

static struct node *table[NBUCKETS];
static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t value_size(void)
{
	uint64_t r = next_rand();
	if (r % 50 == 0)
		return 1024 + r % 7168; /* a few medium ones */
	return 16 + r % 400;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		perror("malloc");
		exit(1);
	}
	return p;
}

static struct node *lookup(const char *key)
{
	for (struct node *n = table[hash(key) % NBUCKETS]; n; n = n->next)
		if (strcmp(n->key, key) == 0)
			return n;
	return NULL;
}

static void insert(const char *key)
{
	struct node *n = xmalloc(sizeof *n);
	size_t b = hash(key) % NBUCKETS;
	n->key = strdup(key);
	n->vlen = value_size();
	n->val = xmalloc(n->vlen);
	memset(n->val, (int)n->vlen, n->vlen);
	n->hits = 0;
	n->next = table[b];
	table[b] = n;
}

int main(void)
{
	char key[64];
	size_t total = 0;

	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof key, "key-%d-%llu", i,
			 (unsigned long long)(next_rand() % 100000));
		if (!lookup(key))
			insert(key);
	}

	/* work on it: look keys up, sometimes replace a value */
	uint64_t sum = 0;
	for (int round = 0; round < 1200000; round++) {
		int i = (int)(next_rand() % NKEYS);
		snprintf(key, sizeof key, "key-%d", i);
		struct node *b = table[hash(key) % NBUCKETS];
		for (; b; b = b->next) {
			b->hits++;
			sum += (unsigned char)b->val[b->vlen / 2];
		}
		struct node *n = table[next_rand() % NBUCKETS];
		if (n && round % 4 == 0) {
			free(n->val);
			n->vlen = value_size();
			n->val = xmalloc(n->vlen);
			memset(n->val, round & 0xff, n->vlen);
		}
	}

	for (size_t b = 0; b < NBUCKETS; b++) {
		struct node *n = table[b];
		while (n) {
			struct node *next = n->next;
			total += n->vlen;
			free(n->val);
			free(n->key);
			free(n);
			n = next;
		}
		table[b] = NULL;
	}
	printf("values %zu bytes, checksum %llu\n", total,
	       (unsigned long long)sum);
	return 0;
}
