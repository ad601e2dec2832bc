/* The readers' id map (analyzers/idmap.c) against a plain array: ids put,
 * replaced and removed at random, so that removal's moves back into the
 * gap are exercised with every kind of collision run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../analyzers/idmap.h"

enum { IDS = 5000, STEPS = 200000 };

static void agrees_with_an_array(void **state)
{
	static uintptr_t truth[IDS]; /* 0: absent */
	struct mt_idmap m = {0};
	size_t len = 0;
	(void)state;
	srand(1);
	for (int step = 0; step < STEPS; step++) {
		/* Ids spread out and clustered alike: thread ids, pointers. */
		size_t i = (size_t)rand() % IDS;
		uint64_t id = i % 2 ? (uint64_t)i : (uint64_t)i << 40;
		if (rand() % 3) {
			uintptr_t v = (uintptr_t)step + 1;
			assert_true(mt_idmap_put(&m, id, (void *)v));
			len += !truth[i];
			truth[i] = v;
		} else {
			mt_idmap_del(&m, id);
			len -= truth[i] != 0;
			truth[i] = 0;
		}
		if (step % 1000 == 0)
			for (size_t k = 0; k < IDS; k++) {
				uint64_t key = k % 2 ? (uint64_t)k : (uint64_t)k << 40;
				assert_ptr_equal(mt_idmap_get(&m, key), (void *)truth[k]);
			}
	}
	assert_int_equal(m.len, len);
	size_t seen = 0;
	for (size_t i = 0; i < m.cap; i++)
		seen += mt_idmap_at(&m, i) != NULL;
	assert_int_equal(seen, len);
	mt_idmap_free(&m);
	assert_null(mt_idmap_get(&m, 1));
	mt_idmap_del(&m, 1); /* an empty map: nothing to do */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(agrees_with_an_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
