/* The program's own mappings: a 16 MiB file mapped, read through and
 * unmapped, 40 times.  Malloc barely used: no allocator is involved. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	char path[] = "/tmp/memtrace-file-maps-XXXXXX";
	int fd = mkstemp(path);
	const size_t size = 16u << 20;
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
		return 1;
	unlink(path);
	uint64_t sum = 0;
	for (int i = 0; i < 40; i++) {
		unsigned char *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return 1;
		for (size_t at = 0; at < size; at += 4096)
			sum += p[at];
		munmap(p, size);
	}
	close(fd);
	return sum != 0;
}
