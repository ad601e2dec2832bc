/* `small_tree ROUNDS`: each round builds a structure of 200,000 small
 * nodes (64 bytes each, 12 MiB in all) with one index of them (a 1.6 MiB
 * array), uses it, and frees the nodes, then the index.  On glibc the
 * index's free is the one that finds the top of the heap free and trims
 * it: the memory given back is the nodes', not the index's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NODES = 200000, NODE = 64 };

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++) {
		char **index = malloc(NODES * sizeof *index);
		if (!index)
			return 1;
		for (int i = 0; i < NODES; i++) {
			if (!(index[i] = malloc(NODE)))
				return 1;
			memset(index[i], i + r, NODE);
		}
		for (int i = 0; i < NODES; i += 7)
			sum += (unsigned char)index[i][i % NODE];
		for (int i = 0; i < NODES; i++)
			free(index[i]);
		free(index);
	}
	printf("%lu\n", sum);
	return 0;
}
