/* An index rebuilt per batch of input: each batch inserts 150,000 random
 * keys into an unbalanced binary search tree, one 48-byte node each, looks
 * a few up, then frees the whole tree node by node.  Nothing is given back
 * to the kernel between batches (the freed nodes serve the next batch), so
 * no churn: the allocator's own time per call is the cost, which differs
 * between allocators by their code, not by the kernel's work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *left, *right;
	uint64_t key;
	uint64_t count;
	char tag[16];
};

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static struct node *insert(struct node *root, uint64_t key)
{
	struct node **at = &root;
	while (*at) {
		if ((*at)->key == key) {
			(*at)->count++;
			return root;
		}
		at = key < (*at)->key ? &(*at)->left : &(*at)->right;
	}
	struct node *n = malloc(sizeof *n);
	if (!n)
		abort();
	*n = (struct node){.key = key, .count = 1};
	n->tag[0] = (char)key;
	*at = n;
	return root;
}

static uint64_t count_of(const struct node *n, uint64_t key)
{
	while (n && n->key != key)
		n = key < n->key ? n->left : n->right;
	return n ? n->count : 0;
}

static void free_tree(struct node *n)
{
	while (n) {
		free_tree(n->left);
		struct node *right = n->right;
		free(n);
		n = right;
	}
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 6;
	uint64_t x = 88172645463325252ull, found = 0;
	for (int b = 0; b < batches; b++) {
		struct node *root = NULL;
		for (int i = 0; i < 150000; i++)
			root = insert(root, next_random(&x) % 10000000);
		for (int i = 0; i < 1000; i++)
			found += count_of(root, next_random(&x) % 10000000);
		free_tree(root);
	}
	printf("batches %d, found %llu\n", batches, (unsigned long long)found);
	return 0;
}
