// Sort batches of records (new-user trial 10; tests/traces/qsort-batches.mt is its trace):
// then searched with bsearch, then dropped. Records per batch vary a bit.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { long key; double score; int id; char tag[12]; } rec_t;

static int cmp_rec(const void *a, const void *b) {
    long ka = ((const rec_t *)a)->key, kb = ((const rec_t *)b)->key;
    return (ka > kb) - (ka < kb);
}

static rec_t *load_batch(size_t n, unsigned *seed) {
    rec_t *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        r[i].key = *seed % 1000003; r[i].score = i * 0.5; r[i].id = (int)i;
        memcpy(r[i].tag, "batchrecord", 12);
    }
    return r;
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 40;
    unsigned seed = 7; long hits = 0;
    for (int b = 0; b < batches; b++) {
        size_t n = 200000 + (b % 5) * 20000;   // ~7-9 MiB of records
        rec_t *r = load_batch(n, &seed);
        qsort(r, n, sizeof *r, cmp_rec);
        for (long q = 0; q < 200000; q++) {
            rec_t key = { .key = q * 5 };
            if (bsearch(&key, r, n, sizeof *r, cmp_rec)) hits++;
        }
        free(r);
    }
    printf("hits %ld\n", hits);
    return 0;
}
