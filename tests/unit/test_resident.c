/* The fold of resident-memory samples (common/resident.c): memory kept is
 * what the program never needed again, and for how long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "resident.h"

#define MiB (1024ull * 1024)

static struct mt_resident_series series;

static void sample_after_free(uint64_t ms, uint64_t anon, uint64_t live,
			      uint64_t freed)
{
	struct mt_ev_rss s = {.anon_bytes = anon, .live_bytes = live,
			      .time_ms = ms, .freed_bytes = freed};
	mt_resident_fold(&series, &s, false);
}

static void sample(uint64_t ms, uint64_t anon, uint64_t live, bool at_exit)
{
	struct mt_ev_rss s = {.anon_bytes = anon, .live_bytes = live,
			      .at_exit = at_exit, .time_ms = ms};
	mt_resident_fold(&series, &s, false);
}

static struct mt_resident figures(void)
{
	struct mt_resident r;
	mt_resident_figures(&series, &r);
	memset(&series, 0, sizeof series);
	return r;
}

/* A cache mostly evicted, then work for the rest of the run with what is
 * left: kept from the eviction to the end. */
static void freed_and_never_needed_again(void **state)
{
	(void)state;
	sample(0, 10 * MiB, 1 * MiB, false);
	sample(100, 210 * MiB, 200 * MiB, false);
	for (uint64_t ms = 200; ms <= 1000; ms += 20)
		sample(ms, 205 * MiB, 5 * MiB, false);
	sample(1010, 205 * MiB, 5 * MiB, true);
	struct mt_resident r = figures();
	assert_int_equal(r.kept_bytes_max, 200 * MiB);
	assert_int_equal(r.kept_bytes_sustained, 200 * MiB);
	assert_int_equal(r.live_bytes_later, 5 * MiB);
	assert_int_equal(r.kept_ms, 1010 - 200);
	assert_int_equal(r.sampled_ms, 1010);
}

/* Temporaries freed and allocated again all run long: the allocator's
 * cache is in use, nothing is kept. */
static void a_cache_in_use_is_not_kept(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms <= 1000; ms += 20)
		sample(ms, 150 * MiB, ms % 40 ? 20 * MiB : 140 * MiB, false);
	sample(1010, 150 * MiB, 20 * MiB, true);
	struct mt_resident r = figures();
	/* only the allocator's own overhead on the biggest set live */
	assert_int_equal(r.kept_bytes_max, 10 * MiB);
}

/* An interpreter's teardown frees everything just before exit: kept, for
 * a moment. */
static void teardown_is_a_moment(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms < 2000; ms += 20)
		sample(ms, 160 * MiB, 150 * MiB, false);
	sample(2000, 160 * MiB, 1 * MiB, false);
	sample(2030, 160 * MiB, 1 * MiB, true);
	struct mt_resident r = figures();
	/* kept 10 MiB all run (the allocator's own), 159 MiB for 30 ms;
	 * not while the live bytes fell (1980 to 2000 ms).  The worst point
	 * is in the run, not in the moment after the teardown. */
	assert_int_equal(r.kept_bytes_max, 10 * MiB);
	assert_int_equal(r.live_bytes_at_kept_max, 150 * MiB);
	assert_int_equal(r.kept_bytes_sustained, 10 * MiB);
	assert_int_equal(r.kept_ms, 2010);
	assert_int_equal(r.sampled_ms, 2030);
}

static void sample_fell(uint64_t ms, uint64_t anon, uint64_t live)
{
	struct mt_ev_rss s = {.anon_bytes = anon, .live_bytes = live,
			      .time_ms = ms};
	mt_resident_fold(&series, &s, true);
}

/* A working set that only grows, freed by destructors in the last fifth
 * of the run: the shim samples the burst at each sixteenth of the live
 * bytes; none of its stretches is memory kept, only the moment from its
 * last sample to the exit (a C++ map's teardown on tcmalloc was 'kept
 * 58 MiB for 20% of the run'). */
static void a_teardown_burst_is_not_kept(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms < 800; ms += 20)
		sample(ms, (ms / 4 + 10) * MiB, ms / 4 * MiB, false);
	uint64_t live = 200 * MiB, ms = 800;
	for (; live > 1 * MiB; live -= live / 16, ms += 4)
		sample_fell(ms, 210 * MiB, live);
	sample(ms + 2, 210 * MiB, 0, true);
	struct mt_resident r = figures();
	assert_true(r.kept_bytes_max > 200 * MiB);
	assert_true(r.kept_ms < r.sampled_ms / 20);
	assert_true(r.kept_bytes_sustained <= 10 * MiB);
}

/* The same burst early in the run, then the program works on what is
 * left with no call that samples: kept from the burst's last sample,
 * within a sixteenth of its end, to the exit. */
static void a_burst_then_a_hold_is_kept(void **state)
{
	(void)state;
	sample(0, 0, 0, false);
	uint64_t live = 200 * MiB, ms = 300;
	for (; live > 14 * MiB; live -= live / 16, ms += 4)
		sample_fell(ms, 210 * MiB, live);
	sample(ms + 500, 210 * MiB, 13 * MiB, true);
	struct mt_resident r = figures();
	assert_true(r.kept_bytes_sustained > 190 * MiB);
	assert_int_equal(r.kept_ms, 504);
}

/* A buffer rebuilt batch after batch (48 MiB at its most) in 68 MiB
 * resident: 20 MiB kept all along, 36 MiB only after the last batch. The
 * figure is what was kept for a fifth of the time at least. */
static void sustained_not_the_last_moment(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms < 1000; ms += 20)
		sample_after_free(ms, 68 * MiB, 32 * MiB, 16 * MiB);
	sample_after_free(1000, 68 * MiB, 0, 32 * MiB);
	sample(1030, 68 * MiB, 0, true);
	struct mt_resident r = figures();
	assert_int_equal(r.kept_bytes_max, 36 * MiB);
	assert_int_equal(r.kept_bytes_sustained, 20 * MiB);
	assert_int_equal(r.kept_ms, 1030);
}

/* A long run: the points are halved as they fill, each keeping the most
 * of its samples, so a long stretch kept is still seen whole. */
static void long_runs_keep_their_shape(void **state)
{
	(void)state;
	uint64_t n = 10 * MT_RESIDENT_POINTS;
	for (uint64_t i = 0; i < n; i++)
		sample(i * 20, 300 * MiB, i < n / 2 ? 290 * MiB : 10 * MiB, false);
	sample(n * 20, 300 * MiB, 10 * MiB, true);
	struct mt_resident r = figures();
	assert_true(series.n == 0);
	assert_int_equal(r.samples, n + 1);
	assert_int_equal(r.kept_bytes_max, 290 * MiB);
	assert_int_equal(r.kept_bytes_sustained, 290 * MiB);
	assert_int_equal(r.sampled_ms, n * 20);
	/* Half the run, give or take a merged point. */
	assert_true(r.kept_ms >= n * 10 - n * 20 / (MT_RESIDENT_POINTS / 2));
	assert_true(r.kept_ms <= n * 10);
}

/* Without a trace the samples are taken right after a large free, when
 * the heap is at its lowest: the block freed counts as live there, or a
 * buffer used and freed over and over would look kept. */
static void a_sample_after_a_free_counts_the_block(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms < 1000; ms += 20)
		sample_after_free(ms, 40 * MiB, 4096, 32 * MiB);
	sample(1000, 40 * MiB, 4096, true);
	struct mt_resident r = figures();
	assert_int_equal(r.kept_bytes_max, 8 * MiB - 4096);
	assert_int_equal(r.live_bytes_later, 32 * MiB + 4096);
}

/* Records expired, 2% of them kept live for a second of work, then all
 * freed at exit: the worst point is in the work, where 12 MiB of blocks
 * were live to pin the memory, not the teardown's moment that kept a
 * little more with none live (a pinning estimate read 0 B live there). */
static void the_worst_point_is_not_the_teardown(void **state)
{
	(void)state;
	for (uint64_t ms = 0; ms < 1000; ms += 20)
		sample(ms, 600 * MiB, 12 * MiB, false);
	sample_fell(1000, 610 * MiB, 0);
	sample(1010, 610 * MiB, 0, true);
	struct mt_resident r = figures();
	assert_int_equal(r.kept_bytes_sustained, 588 * MiB);
	assert_int_equal(r.kept_bytes_max, 588 * MiB);
	assert_int_equal(r.live_bytes_at_kept_max, 12 * MiB);
	assert_int_equal(r.anon_bytes_at_kept_max, 600 * MiB);
}

/* A killed program has no exit sample: its last sample ends the run. */
static void no_exit_sample(void **state)
{
	(void)state;
	sample(0, 100 * MiB, 100 * MiB, false);
	sample(500, 100 * MiB, 0, false);
	sample(900, 100 * MiB, 0, false);
	struct mt_resident r = figures();
	assert_int_equal(r.kept_bytes_max, 100 * MiB);
	assert_int_equal(r.kept_bytes_sustained, 100 * MiB);
	assert_int_equal(r.kept_ms, 400);
	assert_int_equal(r.sampled_ms, 900);
	assert_int_equal(r.anon_bytes_exit, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(freed_and_never_needed_again),
		cmocka_unit_test(a_cache_in_use_is_not_kept),
		cmocka_unit_test(teardown_is_a_moment),
		cmocka_unit_test(a_teardown_burst_is_not_kept),
		cmocka_unit_test(a_burst_then_a_hold_is_kept),
		cmocka_unit_test(sustained_not_the_last_moment),
		cmocka_unit_test(long_runs_keep_their_shape),
		cmocka_unit_test(a_sample_after_a_free_counts_the_block),
		cmocka_unit_test(the_worst_point_is_not_the_teardown),
		cmocka_unit_test(no_exit_sample),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
