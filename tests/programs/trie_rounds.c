/* `trie_rounds [ROUNDS [WORDS]]`: a trie of random words (calloc'd nodes
 * of 216 B), built, looked up and freed whole, ROUNDS (12) times of WORDS
 * (60,000) words: some 250,000 nodes a round.  On jemalloc the freed
 * slabs of one round wait out the decay beside the next round's nodes,
 * which pack into pages of their own: memory kept that no live block
 * pins (dirty_decay_ms:0 took the run from 168 MB to 60; new-user trial
 * 51, which was told fragmentation). */
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *kid[26];
	int count;
};

static struct node *new_node(void)
{
	struct node *n = calloc(1, sizeof *n);
	if (!n)
		abort();
	return n;
}

static void insert(struct node *root, const char *w)
{
	struct node *n = root;
	for (; *w; w++) {
		int c = *w - 'a';
		if (!n->kid[c])
			n->kid[c] = new_node();
		n = n->kid[c];
	}
	n->count++;
}

static int lookup(const struct node *root, const char *w)
{
	const struct node *n = root;
	for (; *w && n; w++)
		n = n->kid[*w - 'a'];
	return n ? n->count : 0;
}

static void destroy(struct node *n)
{
	for (int i = 0; i < 26; i++)
		if (n->kid[i])
			destroy(n->kid[i]);
	free(n);
}

/* xorshift64, seeded per round: the lookups draw the same words. */
static unsigned long long rng;

static void next_word(char *w)
{
	for (int len = 3 + (int)(rng % 9), j = 0; j <= len; j++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		w[j] = j < len ? (char)('a' + (unsigned)rng % 26) : '\0';
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 12;
	int words = argc > 2 ? atoi(argv[2]) : 60000;
	char w[16];
	long hits = 0;
	for (int r = 0; r < rounds; r++) {
		struct node *root = new_node();
		rng = 88172645463325252ULL + (unsigned)r;
		for (int i = 0; i < words; i++) {
			next_word(w);
			insert(root, w);
		}
		rng = 88172645463325252ULL + (unsigned)r;
		for (int i = 0; i < words; i++) {
			next_word(w);
			hits += lookup(root, w);
		}
		destroy(root);
	}
	printf("rounds=%d hits=%ld\n", rounds, hits);
	return 0;
}
