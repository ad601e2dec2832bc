/* Read a few "files" into one buffer each, grown by realloc as each 4 KiB
 * block arrives (the way a naive slurper does), checksum it, free it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FILES = 4, BLOCK = 4096 };

static unsigned long slurp(int file, size_t bytes)
{
	char block[BLOCK];
	char *text = NULL;
	size_t length = 0;

	while (length < bytes) {
		memset(block, 'a' + (int)(length / BLOCK + file) % 26, sizeof block);
		char *grown = realloc(text, length + sizeof block);
		if (!grown) {
			perror("realloc");
			exit(1);
		}
		text = grown;
		memcpy(text + length, block, sizeof block);
		length += sizeof block;
	}
	unsigned long sum = 0;
	for (size_t i = 0; i < length; i += 512)
		sum += (unsigned char)text[i];
	free(text);
	return sum;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	unsigned long sum = 0;
	for (int file = 0; file < FILES; file++)
		sum += slurp(file, mib << 20);
	printf("%lu\n", sum);
	return 0;
}
