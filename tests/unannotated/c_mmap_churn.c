/* Read records of growing size: each record gets a freshly allocated buffer
 * sized for the worst case (40 MB and up, growing by 64 KiB a record), of
 * which the record fills the first quarter; the record is summed and the
 * buffer freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORDS 300

int main(void)
{
	unsigned long sum = 0;

	for (int r = 0; r < RECORDS; r++) {
		size_t cap = (40u << 20) + (size_t)r * 64 * 1024;
		size_t len = cap / 4;
		unsigned char *buf = malloc(cap);
		if (!buf)
			return 1;
		memset(buf, r & 0xff, len);
		for (size_t i = 0; i < len; i += 4096)
			sum += buf[i];
		__asm__ volatile("" : : "r"(buf) : "memory");
		free(buf);
	}
	printf("sum %lu\n", sum);
	return 0;
}
