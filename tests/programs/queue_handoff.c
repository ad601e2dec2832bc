/* `queue_handoff`: 4 producer threads make buffers of 64 KiB to 4 MiB and
 * fill them, 4 consumer threads read and free them (a queue of 16): the
 * consumers free into the producers' thread arenas at once, and each such
 * free may trim the arena's heap (new-user trial 49's handoff.c: the
 * shim counted a shrink once for each free whose window held it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define NPROD 4
#define NCONS 4
#define TASKS 600
#define QCAP 16

typedef struct { unsigned char *buf; size_t len; } item;
static item q[QCAP]; static int qh, qt, qn, done_prod;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static uint64_t total;

static void *producer(void *arg) {
    uint64_t r = 0x1234567ull * ((intptr_t)arg + 3);
    for (int t = 0; t < TASKS; t++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        size_t len = 64*1024 + r % (4*1024*1024 - 64*1024);
        unsigned char *b = malloc(len);
        memset(b, (int)(t & 0xff), len);
        pthread_mutex_lock(&mu);
        while (qn == QCAP) pthread_cond_wait(&notfull, &mu);
        q[qt] = (item){b, len}; qt = (qt + 1) % QCAP; qn++;
        pthread_cond_signal(&notempty);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu); done_prod++; pthread_cond_broadcast(&notempty); pthread_mutex_unlock(&mu);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    uint64_t local = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (qn == 0 && done_prod < NPROD) pthread_cond_wait(&notempty, &mu);
        if (qn == 0) { pthread_mutex_unlock(&mu); break; }
        item it = q[qh]; qh = (qh + 1) % QCAP; qn--;
        pthread_cond_signal(&notfull);
        pthread_mutex_unlock(&mu);
        uint64_t s = 0;
        for (size_t i = 0; i < it.len; i += 4096) s += it.buf[i];
        local += s + it.len;
        free(it.buf);
    }
    pthread_mutex_lock(&mu); total += local; pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void) {
    pthread_t p[NPROD], c[NCONS];
    for (intptr_t i = 0; i < NPROD; i++) pthread_create(&p[i], NULL, producer, (void*)i);
    for (intptr_t i = 0; i < NCONS; i++) pthread_create(&c[i], NULL, consumer, (void*)i);
    for (int i = 0; i < NPROD; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < NCONS; i++) pthread_join(c[i], NULL);
    printf("total %llu\n", (unsigned long long)total);
    return 0;
}
