/* A control: a working set of about 50 MiB of small and medium nodes,
 * built once, walked many times, freed at the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	size_t len;
	unsigned char data[];
};

int main(void)
{
	struct node *head = NULL;
	size_t total = 0;
	for (unsigned i = 0; total < (50u << 20); i++) {
		size_t len = 64 + (i * 2654435761u) % 4000;
		struct node *n = malloc(sizeof *n + len);
		if (!n)
			return 1;
		n->len = len;
		memset(n->data, (int)i, len);
		n->next = head;
		head = n;
		total += len;
	}
	uint64_t sum = 0;
	for (int round = 0; round < 20; round++)
		for (struct node *n = head; n; n = n->next)
			sum += n->data[n->len / 2];
	while (head) {
		struct node *next = head->next;
		free(head);
		head = next;
	}
	return sum == 1; /* (never: keeps the walk) */
}
