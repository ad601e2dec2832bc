#include "glibc_heap.h"
#include "rawsys.h"

static const uintptr_t not_glibc;
const uintptr_t *mt_break_watch = &not_glibc;
uintptr_t mt_break_known;
/* glibc's first sbrk asks the kernel for the break (brk(0)) before moving
 * it, when it has never seen it. */
static bool first_move_queries;

void mt_glibc_heap_init(const uintptr_t *curbrk)
{
	if (!curbrk)
		return;
	uintptr_t now = *curbrk;
	if (!now) {
		now = mt_raw_brk_query();
		first_move_queries = true;
	}
	__atomic_store_n(&mt_break_known, now, __ATOMIC_RELAXED);
	mt_break_watch = curbrk;
}

void mt_glibc_break_moved(struct mt_thread *t)
{
	uintptr_t now = *mt_break_watch;
	uintptr_t old = __atomic_load_n(&mt_break_known, __ATOMIC_RELAXED);

	/* Threads that see the same move: the one that swaps it in counts. */
	while (old != now) {
		if (__atomic_compare_exchange_n(&mt_break_known, &old, now, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			if (first_move_queries) {
				first_move_queries = false;
				mt_add(&t->c.sys_inferred[MT_SYS_BRK], 1);
			}
			mt_add(&t->c.sys_inferred[MT_SYS_BRK], 1);
			mt_count_brk_move(&t->c, old, now);
			return;
		}
	}
}

void mt_glibc_break_set(uintptr_t to)
{
	if (mt_break_watch != &not_glibc)
		__atomic_store_n(&mt_break_known, to, __ATOMIC_RELAXED);
}

void mt_glibc_chunk_mapped(struct mt_thread *t, size_t head, bool allocated)
{
	enum mt_sys sys = allocated ? MT_SYS_MMAP : MT_SYS_MUNMAP;
	mt_add(&t->c.sys_inferred[sys], 1);
	mt_add(&t->c.sys_inferred_bytes[sys], mt_chunk_size(head));
}

void mt_glibc_chunk_moved(struct mt_thread *t, size_t old_head, const void *p)
{
	bool was_mapped = old_head & MT_CHUNK_MMAPPED;
	size_t head = p ? mt_chunk_head(p) : 0;
	bool is_mapped = head & MT_CHUNK_MMAPPED;

	if (was_mapped && is_mapped) {
		/* glibc mremaps a mapped chunk whose size changes. */
		if (mt_chunk_size(head) != mt_chunk_size(old_head)) {
			mt_add(&t->c.sys_inferred[MT_SYS_MREMAP], 1);
			mt_add(&t->c.sys_inferred_bytes[MT_SYS_MREMAP],
			       mt_chunk_size(head));
		}
	} else {
		if (was_mapped)
			mt_glibc_chunk_mapped(t, old_head, false);
		if (is_mapped)
			mt_glibc_chunk_mapped(t, head, true);
	}
}
