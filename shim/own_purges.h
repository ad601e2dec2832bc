/* The program's own purges (madvise MADV_DONTNEED or MADV_FREE on memory
 * it manages itself) that fall on memory it purged before: the same
 * addresses handed back again, so written again meanwhile or purged for
 * nothing.  A purge of new memory each time (a stream whose chunks are
 * handed back behind the cursor, never touched again) gives back memory
 * that no later fault takes again: its faults are first touches, not a
 * churn (new-user trial 30: 4,096 purges of 256 KiB over 1 GiB, called a
 * churn of 90% of the CPU, where without the purges the faults were the
 * same and the memory 700 times more). */
#ifndef MEMTRACE_OWN_PURGES_H
#define MEMTRACE_OWN_PURGES_H

#include <stdint.h>

/* [addr, addr + len) is being purged by the program: the bytes of it
 * that a purge of the last few ranges it purged covered (0 if none, or
 * when another purge is being looked at this instant). */
uint64_t mt_own_purge_again(uintptr_t addr, uint64_t len);

#endif
