/* `grow MODE ROUNDS`, a program as written (no regions):
 *
 *   grow   each round builds a buffer by appending to it, doubling it with
 *          realloc from 128 KiB to 16 MiB (as a dynamic array or a string
 *          builder does), and frees it
 *   fixed  each round allocates a 16 MiB buffer whole, fills it and frees
 *          it: one size over and over, no growth
 *   linear each round grows a buffer by a constant 256 KiB step to 8 MiB,
 *          each step a new block the old one is copied into (as an array
 *          concatenated to in a loop does), the old one freed
 *   varied each round allocates, fills and frees 32 blocks of sizes drawn
 *          at random between 128 KiB and 16 MiB: sizes that vary, no
 *          growth
 *   renewed each round makes 6 blocks of rising sizes, 33 to 38 MiB (above
 *          glibc's highest mmap threshold), each written anew and the
 *          one before freed only then (a new array
 *          of another size each step, the last one live until the next
 *          is made): sizes that rise, no growth
 *
 * Every byte is written, as a program would use it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FIRST = 128 << 10, LAST = 16 << 20 };

static char *append(char *buf, size_t *cap, size_t used, size_t n)
{
	if (used + n > *cap) {
		*cap *= 2;
		buf = realloc(buf, *cap);
		if (!buf)
			exit(1);
	}
	memset(buf + used, (int)used, n);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return buf;
}

static unsigned grow_round(void)
{
	size_t cap = FIRST, used = 0;
	char *buf = malloc(cap);
	if (!buf)
		return 1;
	while (used < LAST) {
		buf = append(buf, &cap, used, 4096);
		used += 4096;
	}
	unsigned sum = (unsigned char)buf[used / 2];
	free(buf);
	return sum;
}

static unsigned fixed_round(void)
{
	char *buf = malloc(LAST);
	if (!buf)
		exit(1);
	memset(buf, 3, LAST);
	__asm__ volatile("" : : "r"(buf) : "memory"); /* not optimised away */
	unsigned sum = (unsigned char)buf[LAST / 2];
	free(buf);
	return sum;
}

enum { STEP = 256 << 10, STEPS = 32 };

static unsigned linear_round(void)
{
	char *buf = NULL;
	size_t size = 0;
	for (int i = 0; i < STEPS; i++) {
		char *bigger = malloc(size + STEP);
		if (!bigger)
			exit(1);
		if (buf)
			memcpy(bigger, buf, size);
		memset(bigger + size, i, STEP);
		free(buf);
		buf = bigger;
		size += STEP;
	}
	__asm__ volatile("" : : "r"(buf) : "memory");
	unsigned sum = (unsigned char)buf[size / 2];
	free(buf);
	return sum;
}

static unsigned varied_round(void)
{
	static unsigned long seed = 12345;
	unsigned sum = 0;
	for (int i = 0; i < STEPS; i++) {
		seed = seed * 6364136223846793005ul + 1442695040888963407ul;
		size_t size = FIRST + (seed >> 33) % (LAST - FIRST);
		char *buf = malloc(size);
		if (!buf)
			exit(1);
		memset(buf, i, size);
		__asm__ volatile("" : : "r"(buf) : "memory");
		sum += (unsigned char)buf[size / 2];
		free(buf);
	}
	return sum;
}

static unsigned renewed_round(void)
{
	static unsigned char fill = 1;
	char *now = NULL;
	for (size_t mib = 33; mib <= 38; mib++) {
		char *next = malloc(mib << 20);
		if (!next)
			exit(1);
		fill += 2; /* (odd, never the last one's) */
		memset(next, fill, mib << 20);
		free(now);
		now = next;
	}
	__asm__ volatile("" : : "r"(now) : "memory");
	unsigned sum = (unsigned char)now[1 << 20];
	free(now);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	unsigned (*round)(void) = !strcmp(argv[1], "grow")     ? grow_round
				  : !strcmp(argv[1], "linear") ? linear_round
				  : !strcmp(argv[1], "varied") ? varied_round
				  : !strcmp(argv[1], "renewed") ? renewed_round
							       : fixed_round;
	int rounds = atoi(argv[2]);
	unsigned sum = 0;
	for (int i = 0; i < rounds; i++)
		sum += round();
	printf("%u\n", sum);
	return 0;
}
