#include "own_purges.h"
#include "owned_lock.h"

/* The ranges purged last, replaced in turn: a program that resets a few
 * arenas of its own round after round purges each again within that
 * many purges. */
enum { RANGES = 64 };

static struct {
	uintptr_t lo, hi;
} ranges[RANGES];
static unsigned next_slot;
static mt_owned_lock lock;

uint64_t mt_own_purge_again(uintptr_t addr, uint64_t len)
{
	uintptr_t lo = addr, hi = addr + len;
	uint64_t again = 0;
	int slot = -1;
	/* (a signal handler's purge while this thread looks: not counted) */
	if (!len || !mt_lock_try(&lock))
		return 0;
	for (int i = 0; i < RANGES; i++) {
		uintptr_t a = ranges[i].lo > lo ? ranges[i].lo : lo;
		uintptr_t b = ranges[i].hi < hi ? ranges[i].hi : hi;
		if (a >= b)
			continue;
		again += b - a;
		/* (the range purged again takes the place of the one before) */
		if (slot < 0)
			slot = i;
	}
	if (slot < 0)
		slot = (int)(next_slot++ % RANGES);
	ranges[slot].lo = lo;
	ranges[slot].hi = hi;
	mt_lock_give(&lock);
	return again < len ? again : len;
}
