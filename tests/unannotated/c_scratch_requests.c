/* `c_scratch_requests [REQUESTS]`: a request handler that mallocs a scratch
 * buffer sized to each request (256 KiB to 8 MiB), writes 16-80 KiB of it
 * and frees it, 400,000 times by default (new-user trial 47's p5).
 * mimalloc makes each such block anew, some 500 ns a call: bare 0.49-0.51 s
 * of CPU against glibc's 0.30; the buffer kept across requests, 0.24 s on
 * any of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long requests = argc > 1 ? atol(argv[1]) : 400000;
	unsigned r = 99;
	unsigned long check = 0;
	for (long i = 0; i < requests; i++) {
		r = r * 1103515245u + 12345u;
		size_t size = (256u << 10) + (r >> 8) % ((8u << 20) - (256u << 10));
		unsigned char *buf = malloc(size); /* the request's scratch */
		if (!buf)
			return 1;
		size_t used = 16384 + r % 65536;
		memset(buf, (int)(i & 0xff), used);
		__asm__ volatile("" ::"r"(buf) : "memory");
		for (size_t j = 0; j < used; j += 64)
			check += buf[j] ^ (unsigned char)j;
		free(buf);
	}
	printf("check %lu\n", check);
	return 0;
}
