/* The JSON writer's output, parsed back with jansson. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>
#include <jansson.h>

#include "summary.h"

static const char *const argv_[] = {"python3", "-c", "print(\"a\\tb\")", NULL};

static struct mt_summary example(void)
{
	struct mt_summary s;
	memset(&s, 0, sizeof s);
	s.pid = 4242;
	s.argv = argv_;
	s.backend_name = "jemalloc";
	s.backend_library = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
	s.backend_version = "5.3.0";
	s.f.c.calls[MT_CALL_MALLOC] = 10;
	s.f.c.calls[MT_CALL_SYSCALL] = 3;
	s.f.c.requested[MT_CALL_MALLOC] = 1000;
	s.f.c.size_hist[mt_size_bucket(100)] = 10;
	s.f.c.allocated = 1120;
	s.f.c.freed = 1000;
	s.f.c.sys[MT_SYS_MADVISE] = 2;
	s.f.c.madvise_by_advice[MADV_DONTNEED] = 1;
	s.f.c.madvise_by_advice[5] = 1;
	s.f.c.brk_grow = 1;
	s.f.c.brk_grow_bytes = 4096;
	s.peak_live = 560;
	s.f.rusage_minor_faults = 77;
	s.f.user_s = 0.25;
	s.wall_s = 1.5;
	s.threads = 1;
	return s;
}

static json_t *parsed(const struct mt_summary *s)
{
	static char buf[64 * 1024];
	json_error_t err;
	size_t n = mt_summary_json(s, buf, sizeof buf);
	assert_true(n > 0);
	json_t *j = json_loadb(buf, n, 0, &err);
	if (!j)
		fail_msg("invalid JSON: %s at %d:\n%s", err.text, err.position, buf);
	return j;
}

static json_int_t at(json_t *j, const char *obj, const char *key)
{
	json_t *o = obj ? json_object_get(j, obj) : j;
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		fail_msg("%s.%s is not an integer", obj ? obj : "", key);
	return json_integer_value(v);
}

static void has_every_documented_key(void **state)
{
	struct mt_summary s = example();
	json_t *j = parsed(&s);
	static const char *const top[] = {
		"version", "schema", "pid", "command", "backend", "calls",
		"bytes_requested", "bytes", "size_histogram", "syscalls",
		"syscalls_by_allocator", "calls_by_allocator", "syscall_bytes", "brk",
		"syscalls_interposed", "syscalls_inferred", "sources", "madvise_by_advice",
		"madvise_bytes_by_advice", "shim_syscalls",
		"page_faults", "cpu_s", "wall_s", "threads"};
	(void)state;
	for (size_t i = 0; i < sizeof top / sizeof *top; i++)
		if (!json_object_get(j, top[i]))
			fail_msg("key %s missing", top[i]);
	for (int i = 0; i < MT_CALL_COUNT; i++)
		at(j, "calls", mt_call_names[i]);
	for (int i = 0; i < MT_SYS_COUNT; i++)
		at(j, "syscalls", mt_sys_names[i]);
	json_decref(j);
}

static void values_round_trip(void **state)
{
	struct mt_summary s = example();
	json_t *j = parsed(&s);
	(void)state;
	assert_int_equal(at(j, NULL, "pid"), 4242);
	assert_int_equal(at(j, "calls", "malloc"), 10);
	assert_int_equal(at(j, "calls", "syscall"), 3);
	assert_int_equal(at(j, "bytes_requested", "malloc"), 1000);
	assert_int_equal(at(j, "bytes", "allocated"), 1120);
	assert_int_equal(at(j, "bytes", "freed"), 1000);
	assert_int_equal(at(j, "bytes", "live"), 120);
	assert_int_equal(at(j, "bytes", "peak_live"), 560);
	assert_true(json_is_true(json_object_get(json_object_get(j, "bytes"),
						  "peak_live_exact")));
	assert_int_equal(at(j, "madvise_by_advice", "MADV_DONTNEED"), 1);
	assert_int_equal(at(j, "madvise_by_advice", "MADV_5"), 1);
	assert_int_equal(at(j, "brk", "grow_bytes"), 4096);
	assert_int_equal(at(j, "page_faults", "minor"), 77);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(j, "backend"), "version")),
			    "5.3.0");
	/* The command survives quoting. */
	json_t *cmd = json_object_get(j, "command");
	assert_int_equal(json_array_size(cmd), 3);
	assert_string_equal(json_string_value(json_array_get(cmd, 2)),
			    "print(\"a\\tb\")");
	json_t *hist = json_object_get(j, "size_histogram");
	assert_int_equal(json_array_size(hist), 1);
	assert_int_equal(at(json_array_get(hist, 0), NULL, "min"), 64);
	assert_int_equal(at(json_array_get(hist, 0), NULL, "max"), 127);
	assert_int_equal(at(json_array_get(hist, 0), NULL, "count"), 10);
	json_decref(j);
}

static const char *source_of(json_t *j, const char *sys)
{
	return json_string_value(json_object_get(
		json_object_get(json_object_get(j, "sources"), "syscalls"), sys));
}

static bool listed_incomplete(json_t *j, const char *key)
{
	json_t *list = json_object_get(json_object_get(j, "sources"), "incomplete");
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) if (strcmp(json_string_value(v), key) == 0)
		return true;
	return false;
}

static void kernel_counts_win_and_say_so(void **state)
{
	struct mt_summary s = example();
	(void)state;
	s.f.c.sys[MT_SYS_BRK] = 3;
	s.f.kernel_valid[MT_SYS_BRK] = true;
	s.f.kernel[MT_SYS_BRK] = 40;
	s.f.kernel_valid[MT_KERNEL_MINOR_FAULTS] = true;
	s.f.kernel[MT_KERNEL_MINOR_FAULTS] = 500;
	json_t *j = parsed(&s);
	assert_int_equal(at(j, "syscalls", "brk"), 40);
	assert_int_equal(at(j, "syscalls_interposed", "brk"), 3);
	assert_string_equal(source_of(j, "brk"), "kernel");
	assert_string_equal(source_of(j, "mmap"), "interposed");
	assert_int_equal(at(j, "page_faults", "minor"), 500);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(j, "sources"), "page_faults")),
			    "kernel");
	assert_false(listed_incomplete(j, "syscalls.brk"));
	assert_true(listed_incomplete(j, "syscalls.mmap"));
	json_decref(j);
}

static void fallback_marks_what_it_cannot_see(void **state)
{
	struct mt_summary s = example();
	(void)state;
	s.f.glibc_inference = true;
	s.f.c.sys[MT_SYS_BRK] = 2;
	s.f.c.sys_inferred[MT_SYS_BRK] = 30;
	s.f.c.sys_inferred[MT_SYS_MMAP] = 5;
	json_t *j = parsed(&s);
	assert_int_equal(at(j, "syscalls", "brk"), 32);
	assert_int_equal(at(j, "syscalls", "mmap"), 5);
	assert_int_equal(at(j, "syscalls_inferred", "brk"), 30);
	assert_string_equal(source_of(j, "brk"), "interposed+inferred");
	assert_false(listed_incomplete(j, "syscalls.brk"));
	assert_false(listed_incomplete(j, "syscalls.mremap"));
	assert_true(listed_incomplete(j, "syscalls.mmap"));
	assert_true(listed_incomplete(j, "syscalls.mprotect"));
	assert_int_equal(at(j, "page_faults", "minor"), 77);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(j, "sources"), "page_faults")),
			    "getrusage");
	json_decref(j);
}

static void too_small_a_buffer_is_refused(void **state)
{
	struct mt_summary s = example();
	char small[100];
	(void)state;
	assert_int_equal(mt_summary_json(&s, small, sizeof small), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(has_every_documented_key),
		cmocka_unit_test(values_round_trip),
		cmocka_unit_test(kernel_counts_win_and_say_so),
		cmocka_unit_test(fallback_marks_what_it_cannot_see),
		cmocka_unit_test(too_small_a_buffer_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
