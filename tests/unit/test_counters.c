#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "counters.h"

static void size_buckets_are_powers_of_two(void **state)
{
	(void)state;
	assert_int_equal(mt_size_bucket(0), 0);
	assert_int_equal(mt_size_bucket(1), 1);
	assert_int_equal(mt_size_bucket(2), 2);
	assert_int_equal(mt_size_bucket(3), 2);
	assert_int_equal(mt_size_bucket(4), 3);
	assert_int_equal(mt_size_bucket(4095), 12);
	assert_int_equal(mt_size_bucket(4096), 13);
	assert_int_equal(mt_size_bucket((size_t)-1), 64);
}

static void advice_slots(void **state)
{
	(void)state;
	assert_int_equal(mt_advice_slot(MADV_DONTNEED), MADV_DONTNEED);
	assert_int_equal(mt_advice_slot(MADV_FREE), MADV_FREE);
	assert_int_equal(mt_advice_slot(MADV_HWPOISON), MT_ADVICE_SLOTS - 1);
	assert_int_equal(mt_advice_slot(-3), MT_ADVICE_SLOTS - 1);
	assert_string_equal(mt_advice_name(MADV_DONTNEED), "MADV_DONTNEED");
	assert_string_equal(mt_advice_name(MADV_FREE), "MADV_FREE");
	assert_null(mt_advice_name(5));
	assert_null(mt_advice_name(MT_ADVICE_SLOTS));
}

static void allocations_and_frees(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	mt_count_alloc(&c, MT_CALL_MALLOC, 100, 104);
	mt_count_alloc(&c, MT_CALL_MALLOC, 24, 24);
	mt_count_alloc(&c, MT_CALL_CALLOC, 0, 16);
	mt_count_call(&c, MT_CALL_FREE);
	mt_count_free(&c, 104);
	assert_int_equal(c.calls[MT_CALL_MALLOC], 2);
	assert_int_equal(c.calls[MT_CALL_CALLOC], 1);
	assert_int_equal(c.calls[MT_CALL_FREE], 1);
	assert_int_equal(c.requested[MT_CALL_MALLOC], 124);
	assert_int_equal(c.size_hist[mt_size_bucket(100)], 1);
	assert_int_equal(c.size_hist[mt_size_bucket(24)], 1);
	assert_int_equal(c.size_hist[0], 1);
	assert_int_equal(c.allocated, 144);
	assert_int_equal(c.freed, 104);
}

static void syscalls_and_the_break(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	mt_count_sys(&c, MT_SYS_MMAP, 4096, false);
	mt_count_sys(&c, MT_SYS_MMAP, 8192, true);
	mt_count_madvise(&c, MADV_DONTNEED, 4096, false);
	mt_count_madvise(&c, MADV_HWPOISON, 4096, true);
	mt_count_brk_move(&c, 0x1000, 0x3000);
	mt_count_brk_move(&c, 0x3000, 0x2000);
	mt_count_brk_move(&c, 0x2000, 0x2000);
	assert_int_equal(c.sys[MT_SYS_MMAP], 2);
	assert_int_equal(c.sys_bytes[MT_SYS_MMAP], 12288);
	assert_int_equal(c.sys_by_allocator[MT_SYS_MMAP], 1);
	assert_int_equal(c.sys[MT_SYS_MADVISE], 2);
	assert_int_equal(c.sys_by_allocator[MT_SYS_MADVISE], 1);
	assert_int_equal(c.madvise_by_advice[MADV_DONTNEED], 1);
	assert_int_equal(c.madvise_by_advice[MT_ADVICE_SLOTS - 1], 1);
	assert_int_equal(c.madvise_bytes_by_advice[MADV_DONTNEED], 4096);
	assert_int_equal(c.brk_grow, 1);
	assert_int_equal(c.brk_grow_bytes, 0x2000);
	assert_int_equal(c.brk_shrink, 1);
	assert_int_equal(c.brk_shrink_bytes, 0x1000);
}

static void unmapped_memory_touched(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	/* the allocator's mapping, 62 MiB of its 64 in huge pages; then the
	 * program's own, in 4 KiB pages */
	mt_count_unmap_touched(&c, 64 << 20, 62 << 20, true);
	mt_count_unmap_touched(&c, 1 << 20, 0, false);
	assert_int_equal(c.unmapped_touched, (64 << 20) + (1 << 20));
	assert_int_equal(c.unmapped_touched_huge, 62 << 20);
	assert_int_equal(c.unmapped_touched_by_allocator, 64 << 20);
	assert_int_equal(c.unmapped_touched_huge_by_allocator, 62 << 20);
	/* the last fields, after 1.12's layout (a baseline's prefix) */
	assert_true(offsetof(struct mt_counters, unmapped_touched) >
		    offsetof(struct mt_counters, large_freed_bytes));
	assert_true(offsetof(struct mt_counters,
			     unmapped_touched_huge_by_allocator) <
		    offsetof(struct mt_counters, remap_grow));
}

static void counts_remaps(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	/* a mapped chunk grown 4 MiB -> 8 MiB, shrunk to 64 KiB, resized to
	 * its own size (no change) */
	mt_count_remap(&c, 4 << 20, 8 << 20);
	mt_count_remap(&c, 8 << 20, 64 << 10);
	mt_count_remap(&c, 64 << 10, 64 << 10);
	assert_int_equal(c.remap_grow, 1);
	assert_int_equal(c.remap_grow_bytes, 4 << 20);
	assert_int_equal(c.remap_shrink, 1);
	assert_int_equal(c.remap_shrink_bytes, (8 << 20) - (64 << 10));
	/* after 1.14's layout (a baseline's prefix) */
	assert_true(offsetof(struct mt_counters, remap_grow) >
		    offsetof(struct mt_counters, unmapped_touched_huge_by_allocator));
}

static void counts_malloc_trims(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	/* two calls, one of which moved the break back 1 MiB */
	mt_count_malloc_trim(&c, 1 << 20, 0);
	mt_count_malloc_trim(&c, 0, 8192);
	mt_count_malloc_trim(&c, 0, 0);
	assert_int_equal(c.trim_calls, 3);
	assert_int_equal(c.trim_shrinks, 1);
	assert_int_equal(c.trim_shrink_bytes, 1 << 20);
	assert_int_equal(c.trim_purges, 1);
	assert_int_equal(c.trim_purged_bytes, 8192);
	/* the last fields, after 1.15's layout (a baseline's prefix) */
	assert_true(offsetof(struct mt_counters, trim_calls) >
		    offsetof(struct mt_counters, remap_shrink_bytes));
	assert_true(offsetof(struct mt_counters, trim_purged_bytes) <
		    offsetof(struct mt_counters, calloc_purges));
}

static void counts_purges_inside_calloc(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	mt_count_calloc_purges(&c, 2, 3 << 20);
	mt_count_calloc_purges(&c, 1, 1 << 20);
	assert_int_equal(c.calloc_purges, 3);
	assert_int_equal(c.calloc_purged_bytes, 4 << 20);
	/* after 1.16's layout (a baseline's prefix), and before 1.18's */
	assert_int_equal(offsetof(struct mt_counters, calloc_purged_bytes) +
				 sizeof(uint64_t),
			 offsetof(struct mt_counters, purged_touched));
}

static void counts_purged_memory_touched(void **state)
{
	struct mt_counters c;
	(void)state;
	memset(&c, 0, sizeof c);
	mt_count_purge_touched(&c, 48 << 20, 46 << 20, true);
	mt_count_purge_touched(&c, 1 << 20, 0, false);
	assert_int_equal(c.purged_touched, 49 << 20);
	assert_int_equal(c.purged_touched_huge, 46 << 20);
	assert_int_equal(c.purged_touched_by_allocator, 48 << 20);
	assert_int_equal(c.purged_touched_huge_by_allocator, 46 << 20);
	assert_int_equal(c.unmapped_touched, 0);
	mt_count_own_purge_again(&c, 32 << 20);
	assert_int_equal(c.own_purges_again, 1);
	assert_int_equal(c.own_purged_again_bytes, 32 << 20);
	/* the last fields, after 1.17's layout (a baseline's prefix) */
	assert_int_equal(offsetof(struct mt_counters, purged_touched),
			 offsetof(struct mt_counters, calloc_purged_bytes) +
				 sizeof(uint64_t));
	assert_int_equal(offsetof(struct mt_counters, own_purged_again_bytes) +
				 sizeof(uint64_t),
			 sizeof c);
}

static void sums_add_every_field(void **state)
{
	struct mt_counters a, b;
	(void)state;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	/* Fill b with distinct values in every slot, then add it twice. */
	uint64_t *w = (uint64_t *)&b;
	for (size_t i = 0; i < sizeof b / sizeof *w; i++)
		w[i] = i + 1;
	mt_counters_add(&a, &b);
	mt_counters_add(&a, &b);
	uint64_t *r = (uint64_t *)&a;
	for (size_t i = 0; i < sizeof a / sizeof *r; i++)
		assert_int_equal(r[i], 2 * (i + 1));
	assert_int_equal(a.brk_shrink_bytes, 2 * b.brk_shrink_bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_buckets_are_powers_of_two),
		cmocka_unit_test(advice_slots),
		cmocka_unit_test(allocations_and_frees),
		cmocka_unit_test(syscalls_and_the_break),
		cmocka_unit_test(unmapped_memory_touched),
		cmocka_unit_test(counts_remaps),
		cmocka_unit_test(counts_malloc_trims),
		cmocka_unit_test(counts_purges_inside_calloc),
		cmocka_unit_test(counts_purged_memory_touched),
		cmocka_unit_test(sums_add_every_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
