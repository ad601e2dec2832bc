#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
/* `scratch_pool [TASKS]`: four threads take tasks from a shared counter;
 * each task mallocs two buffers of 1 to 4 MiB, writes a byte a page, and
 * frees them.  jemalloc and tcmalloc keep some 50 MiB of them resident
 * between tasks, which is their reuse: purging at once took 0.36 s to
 * 33 s of CPU (new-user trial 22). */
static int ntasks;
static int next_task;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long results[4];
static void *worker(void *arg) {
    long id = (long)arg;
    unsigned long acc = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        int t = next_task++;
        pthread_mutex_unlock(&mu);
        if (t >= ntasks) break;
        size_t sz = ((size_t)1 << 20) + (size_t)((t * 2654435761u) % (3u << 20));
        unsigned char *scratch = malloc(sz);            
        unsigned char *out = malloc(sz);                
        for (size_t i = 0; i < sz; i += 4096) scratch[i] = (unsigned char)(t + i);
        for (size_t i = 0; i < sz; i += 4096) out[i] = scratch[i] ^ 0x5a;
        for (size_t i = 0; i < sz; i += 8192) acc += out[i];
        free(scratch);
        free(out);
    }
    results[id] = acc;
    return NULL;
}
int main(int argc, char **argv) {
    ntasks = argc > 1 ? atoi(argv[1]) : 20000;
    pthread_t th[4];
    for (long i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    unsigned long s = 0;
    for (int i = 0; i < 4; i++) { pthread_join(th[i], NULL); s += results[i]; }
    printf("tasks=%d sum=%lu\n", ntasks, s);
    return 0;
}
