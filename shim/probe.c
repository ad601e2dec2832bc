#include "probe.h"
#include "rawsys.h"

/* Inside a malloc-API call, a memory syscall is the allocator's doing. */
static bool by_allocator(void)
{
	return mt_tls.api_depth != 0;
}

void mt_probe_sys_entry(enum mt_call call)
{
	mt_count_sys_entry(&mt_self()->c, call, by_allocator());
}

void mt_probe_sys(enum mt_sys sys, uint64_t bytes)
{
	mt_tls.sys_seen++;
	mt_count_sys(&mt_self()->c, sys, bytes, by_allocator());
}

void mt_probe_madvise(int advice, uint64_t bytes)
{
	mt_tls.sys_seen++;
	mt_count_madvise(&mt_self()->c, advice, bytes, by_allocator());
}

void mt_probe_brk(uintptr_t from, uintptr_t to)
{
	mt_count_brk_move(&mt_self()->c, from, to);
}

uintptr_t mt_break_before(void)
{
	/* libc's record is right whenever libc's brk is the one in use;
	 * otherwise ask the kernel (a shim syscall, counted as such). */
	uintptr_t b = mt_libc_curbrk();
	return b ? b : mt_raw_brk_query();
}
