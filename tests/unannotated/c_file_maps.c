/* Scan a data file through mmap: write a 50 MB file once, then map it,
 * checksum it through the mapping, and unmap it, a few dozen times. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_SIZE (50u << 20)
#define PASSES 40

int main(void)
{
	char path[] = "/tmp/c_file_maps.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	unlink(path);

	char *chunk = malloc(1 << 16);
	if (!chunk)
		return 1;
	for (size_t off = 0; off < FILE_SIZE; off += 1 << 16) {
		for (size_t i = 0; i < 1 << 16; i++)
			chunk[i] = (char)((off + i) * 31 >> 3);
		if (write(fd, chunk, 1 << 16) != 1 << 16) {
			perror("write");
			return 1;
		}
	}
	free(chunk);

	uint64_t sum = 0;
	for (int pass = 0; pass < PASSES; pass++) {
		const uint64_t *p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		for (size_t i = 0; i < FILE_SIZE / 8; i += 8)
			sum += p[i] ^ (uint64_t)pass;
		munmap((void *)p, FILE_SIZE);
	}
	close(fd);
	printf("sum %llu\n", (unsigned long long)sum);
	return 0;
}
