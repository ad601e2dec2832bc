/* `fork_workers`: 4 forked workers, each 1.5 M mallocs of mixed sizes (16
 * B to 1 MiB) into 256 slots, freed as they are replaced; the parent
 * makes almost none and waits (new-user trial 49's forkmix.c: explain's
 * allocator-time weighed the whole tree's CPU and named it "the command's
 * own process", whose sites, none, it said were not sampled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <stdint.h>

static uint64_t work(int id) {
    uint64_t r = 0x9E3779B97F4A7C15ull * (id + 1), sum = 0;
    enum { SLOTS = 256 };
    void *slots[SLOTS] = {0};
    size_t sizes[SLOTS] = {0};
    for (int i = 0; i < 1500000; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        int k = r % SLOTS;
        if (slots[k]) { sum += ((unsigned char*)slots[k])[sizes[k]-1]; free(slots[k]); }
        size_t sz;
        unsigned cls = (r >> 20) % 100;
        if (cls < 80) sz = 16 + (r >> 32) % 512;
        else if (cls < 97) sz = 1024 + (r >> 32) % (64*1024);
        else sz = 128*1024 + (r >> 32) % (896*1024);
        slots[k] = malloc(sz);
        memset(slots[k], (int)(i & 0xff), sz < 4096 ? sz : 4096);
        ((unsigned char*)slots[k])[sz-1] = (unsigned char)i;
        sizes[k] = sz;
    }
    for (int k = 0; k < SLOTS; k++) free(slots[k]);
    return sum;
}

int main(void) {
    pid_t pids[4];
    for (int w = 0; w < 4; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            uint64_t s = work(w);
            printf("worker %d sum %llu\n", w, (unsigned long long)s);
            fflush(stdout);
            _exit(0);
        }
    }
    int ok = 0;
    for (int w = 0; w < 4; w++) { int st; waitpid(pids[w], &st, 0); if (WIFEXITED(st) && WEXITSTATUS(st) == 0) ok++; }
    printf("workers ok %d\n", ok);
    return ok == 4 ? 0 : 1;
}
