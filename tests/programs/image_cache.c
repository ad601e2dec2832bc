/* `image_cache [GETS]`: an LRU cache of 48 "images" of 96 KiB to 1.1 MiB,
 * 400 keys, 70% of the gets on 40 of them; a miss evicts the least
 * recently used image (its block freed) and loads another (a block
 * allocated).  48 blocks are live at once because the cache keeps them,
 * not because a call needs two where one would do. */
#include <stdio.h>
#include <stdlib.h>

enum { CAP = 48, KEYS = 400 };

struct entry {
	int key;
	size_t size;
	unsigned char *data;
	struct entry *prev, *next;
};

static struct entry *head, *tail, *table[KEYS];
static int count;
static unsigned seed = 12345;

static unsigned next_random(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static void unlink_entry(struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		tail = e->prev;
}

static void push_front(struct entry *e)
{
	e->prev = NULL;
	e->next = head;
	if (head)
		head->prev = e;
	head = e;
	if (!tail)
		tail = e;
}

static unsigned char *load_image(int key, size_t *size)
{
	*size = 96 * 1024 + (size_t)(key * 2654435761u % 1024) * 1024;
	unsigned char *p = malloc(*size);
	if (!p)
		abort();
	for (size_t i = 0; i < *size; i += 64)
		p[i] = (unsigned char)(key + i);
	return p;
}

static void evict(void)
{
	struct entry *e = tail;
	unlink_entry(e);
	table[e->key] = NULL;
	free(e->data);
	free(e);
	count--;
}

static unsigned long get(int key)
{
	struct entry *e = table[key];
	if (!e) {
		if (count == CAP)
			evict();
		if (!(e = calloc(1, sizeof *e)))
			abort();
		e->key = key;
		e->data = load_image(key, &e->size);
		table[key] = e;
		count++;
	} else
		unlink_entry(e);
	push_front(e);
	return e->data[e->size / 2];
}

int main(int argc, char **argv)
{
	int gets = argc > 1 ? atoi(argv[1]) : 30000;
	unsigned long sum = 0;
	for (int i = 0; i < gets; i++)
		sum += get(next_random() % 100 < 70 ? (int)(next_random() % 40)
						    : (int)(next_random() % KEYS));
	printf("%lu\n", sum);
	return 0;
}
