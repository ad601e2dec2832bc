#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "options.h"
#include "stub_diag.h"

/* The environment a test hands the parser: NAME=VALUE pairs. */
static const char *const *env;

static const char *get(const char *name)
{
	for (size_t i = 0; env && env[i]; i += 2)
		if (strcmp(env[i], name) == 0)
			return env[i + 1];
	return NULL;
}

static int parse(const char *const *pairs, struct mt_options *opt)
{
	env = pairs;
	warnings = 0;
	last_warning[0] = '\0';
	return mt_options_parse(opt, get);
}

static void defaults_without_environment(void **state)
{
	struct mt_options o;
	(void)state;
	assert_int_equal(parse(NULL, &o), 0);
	assert_string_equal(o.backend, "glibc");
	assert_false(o.backend_explicit);
	assert_false(o.quiet);
	assert_null(o.summary_path);
	assert_int_equal(warnings, 0);
}

static void booleans_in_every_spelling(void **state)
{
	static const char *const on[] = {"1", "true", "YES", "On"};
	static const char *const off[] = {"0", "false", "no", "OFF"};
	(void)state;
	for (int i = 0; i < 4; i++) {
		struct mt_options o;
		const char *const yes[] = {"MEMTRACE_QUIET", on[i], NULL};
		const char *const no[] = {"MEMTRACE_QUIET", off[i], NULL};
		assert_int_equal(parse(yes, &o), 0);
		assert_true(o.quiet);
		assert_int_equal(parse(no, &o), 0);
		assert_false(o.quiet);
	}
}

static void bad_boolean_warns_and_keeps_default(void **state)
{
	struct mt_options o;
	const char *const e[] = {"MEMTRACE_QUIET", "maybe", NULL};
	(void)state;
	assert_int_equal(parse(e, &o), 1);
	assert_false(o.quiet);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "MEMTRACE_QUIET='maybe'"));
	assert_non_null(strstr(last_warning, "accepted"));
}

static void backends_by_name_and_path(void **state)
{
	struct mt_options o;
	const char *const name[] = {"MEMTRACE_BACKEND", "tcmalloc", NULL};
	const char *const path[] = {"MEMTRACE_BACKEND", "/opt/lib/libfoo.so", NULL};
	(void)state;
	assert_int_equal(parse(name, &o), 0);
	assert_string_equal(o.backend, "tcmalloc");
	assert_true(o.backend_explicit);
	assert_int_equal(parse(path, &o), 0);
	assert_string_equal(o.backend, "/opt/lib/libfoo.so");
}

static void unknown_backend_warns_and_uses_glibc(void **state)
{
	struct mt_options o;
	const char *const e[] = {"MEMTRACE_BACKEND", "hoard", NULL};
	const char *const rel[] = {"MEMTRACE_BACKEND", "lib/libfoo.so", NULL};
	const char *const empty[] = {"MEMTRACE_BACKEND", "", NULL};
	(void)state;
	assert_int_equal(parse(e, &o), 1);
	assert_string_equal(o.backend, "glibc");
	assert_false(o.backend_explicit);
	assert_non_null(strstr(last_warning, "MEMTRACE_BACKEND='hoard'"));
	assert_non_null(strstr(last_warning, "jemalloc"));
	assert_int_equal(parse(rel, &o), 1);
	assert_int_equal(parse(empty, &o), 1);
}

static void summary_templates(void **state)
{
	struct mt_options o;
	const char *const ok[] = {"MEMTRACE_SUMMARY", "/tmp/s.%p.json", NULL};
	const char *const pct[] = {"MEMTRACE_SUMMARY", "/tmp/100%%.json", NULL};
	const char *const bad[] = {"MEMTRACE_SUMMARY", "/tmp/%d.json", NULL};
	const char *const trail[] = {"MEMTRACE_SUMMARY", "/tmp/x%", NULL};
	const char *const empty[] = {"MEMTRACE_SUMMARY", "", NULL};
	(void)state;
	assert_int_equal(parse(ok, &o), 0);
	assert_string_equal(o.summary_path, "/tmp/s.%p.json");
	assert_int_equal(parse(pct, &o), 0);
	assert_int_equal(parse(bad, &o), 1);
	assert_null(o.summary_path);
	assert_non_null(strstr(last_warning, "MEMTRACE_SUMMARY='/tmp/%d.json'"));
	assert_int_equal(parse(trail, &o), 1);
	assert_int_equal(parse(empty, &o), 1);
}

static void resident_memory_period(void **state)
{
	struct mt_options o;
	const char *const ms[] = {"MEMTRACE_RSS", "100", NULL};
	const char *const off[] = {"MEMTRACE_RSS", "off", NULL};
	const char *const zero[] = {"MEMTRACE_RSS", "0", NULL};
	const char *const bad[] = {"MEMTRACE_RSS", "10ms", NULL};
	const char *const big[] = {"MEMTRACE_RSS", "60001", NULL};
	(void)state;
	assert_int_equal(parse(NULL, &o), 0);
	assert_int_equal(o.rss_period_ms, 20);
	assert_int_equal(parse(ms, &o), 0);
	assert_int_equal(o.rss_period_ms, 100);
	assert_int_equal(parse(off, &o), 0);
	assert_int_equal(o.rss_period_ms, 0);
	assert_int_equal(parse(zero, &o), 0);
	assert_int_equal(o.rss_period_ms, 0);
	assert_int_equal(parse(bad, &o), 1);
	assert_int_equal(o.rss_period_ms, 20);
	assert_non_null(strstr(last_warning, "MEMTRACE_RSS='10ms'"));
	assert_int_equal(parse(big, &o), 1);
}

static void sites_and_their_samples(void **state)
{
	static const struct {
		const char *value;
		bool sites;
		unsigned long sample; /* (1: left at the default) */
		bool fixed; /* that rate throughout, not stepped up */
		int bad;
	} cases[] = {
		{"1", true, MT_SMALL_SAMPLE_BYTES, false, 0},
		{"off", false, 0, false, 0},
		{"large", true, 0, false, 0},
		{"sample:1", true, 1, true, 0},
		{"sample:64K", true, 64 << 10, true, 0},
		{"sample:2M", true, 2 << 20, true, 0},
		{"sample:", true, MT_SMALL_SAMPLE_BYTES, false, 1},
		{"sample:0", true, MT_SMALL_SAMPLE_BYTES, false, 1},
		{"sample:64k", true, MT_SMALL_SAMPLE_BYTES, false, 1},
		{"sample:-5", true, MT_SMALL_SAMPLE_BYTES, false, 1},
		{"all", true, MT_SMALL_SAMPLE_BYTES, false, 1},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct mt_options o;
		const char *const e[] = {"MEMTRACE_SITES", cases[i].value, NULL};
		assert_int_equal(parse(e, &o), cases[i].bad);
		assert_int_equal(o.sites, cases[i].sites);
		assert_int_equal(o.small_sample_bytes, cases[i].sample);
		assert_int_equal(o.small_sample_fixed, cases[i].fixed);
		if (cases[i].bad)
			assert_non_null(strstr(last_warning, "MEMTRACE_SITES="));
	}
}

static void each_bad_value_counted(void **state)
{
	struct mt_options o;
	const char *const e[] = {"MEMTRACE_QUIET", "2", "MEMTRACE_BACKEND",
				 "x", "MEMTRACE_SUMMARY", "", NULL};
	(void)state;
	assert_int_equal(parse(e, &o), 3);
	assert_int_equal(warnings, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_without_environment),
		cmocka_unit_test(booleans_in_every_spelling),
		cmocka_unit_test(bad_boolean_warns_and_keeps_default),
		cmocka_unit_test(backends_by_name_and_path),
		cmocka_unit_test(unknown_backend_warns_and_uses_glibc),
		cmocka_unit_test(summary_templates),
		cmocka_unit_test(resident_memory_period),
		cmocka_unit_test(sites_and_their_samples),
		cmocka_unit_test(each_bad_value_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
