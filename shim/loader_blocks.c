#include "loader_blocks.h"
#include "rawsys.h"

uintptr_t mt_loader_lo, mt_loader_hi;
bool mt_loader_blocks_kept = true;

/* Open addressing with linear probing, in memory of the shim's own.  The
 * loader makes a few blocks per thread and module, so a lock is cheap. */
struct slot {
	uintptr_t p; /* 0: empty; TOMBSTONE: freed */
	size_t usable;
};
#define TOMBSTONE ((uintptr_t)1)

static struct slot *slots;
static size_t capacity, used; /* used counts tombstones too */
static int lock;

static void acquire(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void release(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static size_t hash(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ull);
}

static struct slot *find(struct slot *table, size_t cap, uintptr_t p,
			 bool for_insert)
{
	for (size_t i = hash(p) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (table[i].p == p || !table[i].p)
			return table[i].p == p || for_insert ? &table[i] : NULL;
		if (for_insert && table[i].p == TOMBSTONE)
			return &table[i];
	}
}

/* Room for one more, at most half full: a new table of the live blocks. */
static bool make_room(void)
{
	if (slots && (used + 1) * 2 <= capacity)
		return true;
	size_t live = 0;
	for (size_t i = 0; i < capacity; i++)
		live += slots[i].p > TOMBSTONE;
	size_t cap = 256;
	while (cap < (live + 1) * 4)
		cap *= 2;
	struct slot *table = mt_raw_mmap(cap * sizeof *table);
	if (!table)
		return false;
	for (size_t i = 0; i < capacity; i++)
		if (slots[i].p > TOMBSTONE)
			*find(table, cap, slots[i].p, true) = slots[i];
	if (slots)
		mt_raw_munmap(slots, capacity * sizeof *slots);
	slots = table;
	capacity = cap;
	used = live;
	return true;
}

void mt_loader_block_add(const void *p, size_t usable)
{
	if (!p)
		return;
	acquire();
	if (make_room()) {
		struct slot *s = find(slots, capacity, (uintptr_t)p, true);
		used += !s->p;
		*s = (struct slot){(uintptr_t)p, usable};
	}
	release();
}

size_t mt_loader_block_take(const void *p)
{
	size_t usable = 0;
	acquire();
	struct slot *s = slots ? find(slots, capacity, (uintptr_t)p, false) : NULL;
	if (s) {
		usable = s->usable;
		s->p = TOMBSTONE;
	}
	release();
	return usable;
}

void mt_loader_blocks_after_fork(void)
{
	lock = 0;
}
