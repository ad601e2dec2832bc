#include "probe.h"
#include "rawsys.h"

void mt_probe_sys(enum mt_sys sys, uint64_t bytes)
{
	mt_tls.sys_seen++;
	mt_count_sys(&mt_self()->c, sys, bytes);
}

void mt_probe_madvise(int advice, uint64_t bytes)
{
	mt_tls.sys_seen++;
	mt_count_madvise(&mt_self()->c, advice, bytes);
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
