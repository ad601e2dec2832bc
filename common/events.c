#include <stddef.h>
#include <sys/mman.h>

#include "memtrace/events.h"

const char *const mt_call_names[MT_CALL_COUNT] = {
#define MT_NAME(id, name) name,
	MT_CALLS(MT_NAME)
#undef MT_NAME
};

const char *const mt_sys_names[MT_SYS_COUNT] = {
#define MT_NAME(id, name) name,
	MT_SYSCALLS(MT_NAME)
#undef MT_NAME
};

/* Names from <linux/mman.h>; spelled out so the table does not depend on
 * which of them the build machine's headers define. */
static const char *const advice_names[MT_ADVICE_SLOTS] = {
	[0] = "MADV_NORMAL",	       [1] = "MADV_RANDOM",
	[2] = "MADV_SEQUENTIAL",       [3] = "MADV_WILLNEED",
	[4] = "MADV_DONTNEED",	       [8] = "MADV_FREE",
	[9] = "MADV_REMOVE",	       [10] = "MADV_DONTFORK",
	[11] = "MADV_DOFORK",	       [12] = "MADV_MERGEABLE",
	[13] = "MADV_UNMERGEABLE",     [14] = "MADV_HUGEPAGE",
	[15] = "MADV_NOHUGEPAGE",      [16] = "MADV_DONTDUMP",
	[17] = "MADV_DODUMP",	       [18] = "MADV_WIPEONFORK",
	[19] = "MADV_KEEPONFORK",      [20] = "MADV_COLD",
	[21] = "MADV_PAGEOUT",	       [22] = "MADV_POPULATE_READ",
	[23] = "MADV_POPULATE_WRITE",  [24] = "MADV_DONTNEED_LOCKED",
	[25] = "MADV_COLLAPSE",	       [MT_ADVICE_SLOTS - 1] = "MADV_OTHER",
};

const char *mt_advice_name(unsigned slot)
{
	return slot < MT_ADVICE_SLOTS ? advice_names[slot] : NULL;
}
