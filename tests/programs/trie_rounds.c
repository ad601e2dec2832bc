/* `trie_rounds [ROUNDS [WORDS]]`: a trie of random words (calloc'd nodes
 * of 216 B), built, looked up and freed whole, ROUNDS (12) times of WORDS
 * (60,000) words: some 250,000 nodes a round.  On jemalloc the freed
 * slabs of one round wait out the decay beside the next round's nodes,
 * which pack into pages of their own: memory kept that no live block
 * pins (dirty_decay_ms:0 took the run from 168 MB to 60; new-user trial
 * 50, which was told fragmentation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct node { struct node *kid[26]; int count; } node;
static node *new_node(void) { node *n = calloc(1, sizeof *n); if (!n) abort(); return n; }
static void insert(node *root, const char *w) {
    node *n = root;
    for (; *w; w++) { int c = *w - 'a'; if (!n->kid[c]) n->kid[c] = new_node(); n = n->kid[c]; }
    n->count++;
}
static int lookup(node *root, const char *w) {
    node *n = root;
    for (; *w; w++) { n = n->kid[*w - 'a']; if (!n) return 0; }
    return n->count;
}
static void destroy(node *n) { for (int i = 0; i < 26; i++) if (n->kid[i]) destroy(n->kid[i]); free(n); }
static unsigned long long rng = 88172645463325252ULL;
static unsigned xr(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned)rng; }
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 12, words = argc > 2 ? atoi(argv[2]) : 60000;
    char w[16]; long total = 0, nodes_hint = 0;
    for (int r = 0; r < rounds; r++) {
        node *root = new_node();
        rng = 88172645463325252ULL + r;
        for (int i = 0; i < words; i++) {
            int len = 3 + xr() % 9;
            for (int j = 0; j < len; j++) w[j] = 'a' + xr() % 26;
            w[len] = 0; insert(root, w);
        }
        rng = 88172645463325252ULL + r;
        for (int i = 0; i < words; i++) {
            int len = 3 + xr() % 9;
            for (int j = 0; j < len; j++) w[j] = 'a' + xr() % 26;
            w[len] = 0; total += lookup(root, w);
        }
        destroy(root); nodes_hint += words;
    }
    printf("rounds=%d hits=%ld\n", rounds, total);
    return 0;
}
