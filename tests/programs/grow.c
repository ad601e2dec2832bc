/* `grow MODE ROUNDS`, a program as written (no regions):
 *
 *   grow   each round builds a buffer by appending to it, doubling it with
 *          realloc from 128 KiB to 16 MiB (as a dynamic array or a string
 *          builder does), and frees it
 *   fixed  each round allocates a 16 MiB buffer whole, fills it and frees
 *          it: one size over and over, no growth
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

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int grow = !strcmp(argv[1], "grow"), rounds = atoi(argv[2]);
	unsigned sum = 0;
	for (int i = 0; i < rounds; i++)
		sum += grow ? grow_round() : fixed_round();
	printf("%u\n", sum);
	return 0;
}
