#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "shim_cost.h"

/* From the estimate: past 2% of the run, and 5 ms (a process that only
 * forks is not marked for its start-up). */
static void estimate_marks_past_its_share_and_time(void **state)
{
	(void)state;
	assert_true(mt_shim_cost_moved(0.03, 0.010));
	assert_false(mt_shim_cost_moved(0.02, 0.010));
	assert_false(mt_shim_cost_moved(0.29, 0.003));
}

/* From the measurement: past twice the runs' spread, with three runs or
 * more, and past the same share (of the runs without the shim) and time. */
static void measurement_marks_past_twice_the_spread(void **state)
{
	(void)state;
	/* a producer/consumer on tcmalloc: 0.2 s more than 1.6 s bare */
	assert_true(mt_shim_cost_measured_moved(0.2, 0.05, 3, 1.6));
	assert_false(mt_shim_cost_measured_moved(0.2, 0.1, 3, 1.6));
	/* two runs: a spread of one difference */
	assert_false(mt_shim_cost_measured_moved(0.2, 0.05, 2, 1.6));
	/* one run a side: no spread known */
	assert_false(mt_shim_cost_measured_moved(0.2, -1, 3, 1.6));
	/* 1.9% of the run */
	assert_false(mt_shim_cost_measured_moved(0.019, 0.001, 5, 1.0));
	assert_true(mt_shim_cost_measured_moved(0.021, 0.001, 5, 1.0));
	/* 4 ms of a 40 ms run */
	assert_false(mt_shim_cost_measured_moved(0.004, 0.0001, 5, 0.04));
	assert_false(mt_shim_cost_measured_moved(0.1, 0.01, 3, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(estimate_marks_past_its_share_and_time),
		cmocka_unit_test(measurement_marks_past_twice_the_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
