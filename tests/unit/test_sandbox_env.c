/* The environment an exec gets once a seccomp filter stopped memtrace
 * (shim/sandbox_env.c): memtrace's entries out of LD_PRELOAD, whatever
 * separates them, the rest as it was, and no LD_PRELOAD left empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox_env.h"

static char *const *without(char *const *envp, char **copy, char *preload,
			    size_t len)
{
	assert_true(mt_env_count(envp) < 8);
	return mt_env_without_shim(envp, copy, preload, len);
}

static void takes_memtrace_out(void **state)
{
	(void)state;
	char *copy[8], preload[256];
	char *const envp[] = {"A=1",
			      "LD_PRELOAD=/x/libmemtrace.so:/usr/lib/libjemalloc.so.2 /y/z.so",
			      "B=2", NULL};
	char *const *e = without(envp, copy, preload, sizeof preload);
	assert_string_equal(e[0], "A=1");
	assert_string_equal(e[1], "LD_PRELOAD=/usr/lib/libjemalloc.so.2:/y/z.so");
	assert_string_equal(e[2], "B=2");
	assert_null(e[3]);
}

static void drops_a_preload_left_empty(void **state)
{
	(void)state;
	char *copy[8], preload[256];
	char *const envp[] = {"LD_PRELOAD=/x/libmemtrace.so", "B=2", NULL};
	char *const *e = without(envp, copy, preload, sizeof preload);
	assert_string_equal(e[0], "B=2");
	assert_null(e[1]);
}

static void leaves_the_rest_as_it_was(void **state)
{
	(void)state;
	char *copy[8], preload[256];
	char *const plain[] = {"LD_PRELOAD=/y/z.so", "B=2", NULL};
	assert_ptr_equal(without(plain, copy, preload, sizeof preload), plain);
	char *const none[] = {"B=2", NULL};
	assert_ptr_equal(without(none, copy, preload, sizeof preload), none);
	/* (too long for the room given: as it was) */
	char *const shim[] = {"LD_PRELOAD=/x/libmemtrace.so:/a/very/long/path.so", NULL};
	assert_ptr_equal(without(shim, copy, preload, 20), shim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(takes_memtrace_out),
		cmocka_unit_test(drops_a_preload_left_empty),
		cmocka_unit_test(leaves_the_rest_as_it_was),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
