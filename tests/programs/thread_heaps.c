/* `thread_heaps MODE ROUNDS [advise]`: two threads, each allocating 64 blocks of
 * 100 KiB (below glibc's mmap threshold, so from the thread's own heap, a
 * thread arena), touching them, and freeing them, ROUNDS times.
 *
 *   churn   every block freed each round: glibc's free() shrinks the
 *           thread's heap with madvise(MADV_DONTNEED) as its top grows
 *           past the trim threshold, and the next round faults the pages
 *           back in
 *   steady  the blocks allocated once, then only written each round: no
 *           shrink, no fault after the first round
 *   trio    each round allocates three blocks of 3 MiB, at three lines
 *           (input, work, output), touches them and frees them in that
 *           order: the shrink the last free sets off gives back all
 *           three's memory
 *   ring    each thread keeps its last two blocks of 1 MiB, made at one
 *           line: the oldest freed before the next is made (two live on
 *           each thread, four at once at that line)
 *   mixed   each round allocates 2000 blocks of 16 B to 4 KB at random,
 *           then frees them: the free of a small one (which the tcache
 *           could take) shrinks the heap too, now and then
 *
 * `advise`: the program also madvises a mapping of its own, once (as
 * NumPy advises its arrays for huge pages). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { BLOCKS = 64, BLOCK = 100 * 1024, THREADS = 2 };

static int rounds;
static int churn;

static void *work(void *arg)
{
	char *p[BLOCKS];
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < BLOCKS; i++) {
			if (churn || r == 0)
				p[i] = malloc(BLOCK);
			if (!p[i])
				abort();
			memset(p[i], r, BLOCK);
			__asm__ volatile("" : : "r"(p[i]) : "memory");
		}
		for (int i = BLOCKS - 1; churn && i >= 0; i--)
			free(p[i]);
	}
	for (int i = BLOCKS - 1; !churn && rounds && i >= 0; i--)
		free(p[i]);
	return NULL;
}

enum { TRIO = 3 << 20 };

static void *touched(char *p, size_t size)
{
	if (!p)
		abort();
	memset(p, 1, size);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *trio(void *arg)
{
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		char *in = touched(malloc(TRIO), TRIO);
		char *work = touched(malloc(TRIO), TRIO);
		char *out = touched(malloc(TRIO), TRIO);
		free(in);
		free(work);
		free(out);
	}
	return NULL;
}

enum { RING = 1 << 20 };

static void *ring(void *arg)
{
	char *p[2] = {NULL, NULL};
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		free(p[r & 1]);
		p[r & 1] = touched(malloc(RING), RING);
	}
	free(p[0]);
	free(p[1]);
	return NULL;
}

enum { MIXED = 2000 };

static void *mixed(void *arg)
{
	void *p[MIXED];
	unsigned seed = 1;
	(void)arg;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < MIXED; i++) {
			seed = seed * 1103515245u + 12345u;
			p[i] = malloc(16 + (seed >> 8) % 4000);
			if (!p[i])
				abort();
			memset(p[i], i, 16);
		}
		for (int i = 0; i < MIXED; i++)
			free(p[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	churn = strcmp(argv[1], "churn") == 0;
	rounds = atoi(argv[2]);
	void *(*fn)(void *) = strcmp(argv[1], "trio") == 0    ? trio
			      : strcmp(argv[1], "ring") == 0  ? ring
			      : strcmp(argv[1], "mixed") == 0 ? mixed
							      : work;
	if (argc > 3 && !strcmp(argv[3], "advise")) {
		void *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED || madvise(m, 1 << 16, MADV_WILLNEED))
			return 1;
	}
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, fn, NULL) != 0)
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
