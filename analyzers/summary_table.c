#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "memtrace/events.h"
#include "format.h"
#include "summary_table.h"

static uint64_t u64(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}


static void row(FILE *out, uint64_t count, const char *name, const char *note)
{
	char num[40];
	if (note && *note)
		fprintf(out, "  %18s  %-30s  # %s\n",
			mt_format_count(count, num, sizeof num), name, note);
	else
		fprintf(out, "  %18s  %s\n",
			mt_format_count(count, num, sizeof num), name);
}

/* A figure the trace did not record (null): said, not shown as 0. */
static void unknown_row(FILE *out, const char *name)
{
	fprintf(out, "  %18s  %s\n", "not recorded", name);
}

static void seconds_row(FILE *out, json_t *v, const char *name)
{
	if (json_is_null(v))
		unknown_row(out, name);
	else
		fprintf(out, "  %16.3f s  %s\n", json_number_value(v), name);
}

static void heading(FILE *out, const char *title)
{
	fprintf(out, "\n %s\n", title);
}

static void print_command(FILE *out, json_t *s)
{
	json_t *cmd = json_object_get(s, "command");
	size_t i;
	json_t *arg;

	fputs(" memtrace stat of '", out);
	json_array_foreach(cmd, i, arg) fprintf(out, "%s%s", i ? " " : "",
						json_string_value(arg));
	fputs("'", out);
}

static void print_calls(FILE *out, json_t *s)
{
	json_t *calls = json_object_get(s, "calls");
	json_t *req = json_object_get(s, "bytes_requested");
	char note[64];

	heading(out, "allocator calls");
	for (int i = 0; i < MT_CALL_COUNT; i++) {
		const char *name = mt_call_names[i];
		uint64_t n = u64(calls, name);
		bool always = i == MT_CALL_MALLOC || i == MT_CALL_FREE;
		if (i >= MT_CALL_MMAP)
			break; /* the memory syscalls have their own section */
		if (!n && !always)
			continue;
		json_t *bytes = json_object_get(req, name);
		note[0] = '\0';
		if (bytes) {
			char b[32];
			snprintf(note, sizeof note, "%s requested",
				 mt_format_bytes((double)(uint64_t)json_integer_value(bytes),
					     b, sizeof b));
		}
		row(out, n, name, note);
	}
}

static void print_bytes(FILE *out, json_t *s)
{
	json_t *b = json_object_get(s, "bytes");
	char h[32];

	heading(out, "heap bytes (usable sizes)");
	/* (a buffer grown by realloc 4 KiB at a time to 300 MiB was "43.9
	 * TiB allocated": said how, where realloc's are most of them) */
	char allocated[64];
	uint64_t by_realloc = u64(json_object_get(s, "bytes_requested"), "realloc");
	snprintf(allocated, sizeof allocated, "%s%s",
		 mt_format_bytes((double)u64(b, "allocated"), h, sizeof h),
		 by_realloc >= u64(b, "allocated") / 2 && by_realloc
			 ? ", each realloc counting its whole new size"
			 : "");
	row(out, u64(b, "allocated"), "allocated", allocated);
	row(out, u64(b, "freed"), "freed", mt_format_bytes((double)u64(b, "freed"), h, sizeof h));
	/* (a recording that ended before the process did: killed) */
	bool ended = !json_is_true(json_object_get(s, "partial"));
	row(out, u64(b, "live"), ended ? "live at exit" : "live when recording ended",
	    mt_format_bytes((double)u64(b, "live"), h, sizeof h));
	char note[64];
	snprintf(note, sizeof note, "%s%s",
		 mt_format_bytes((double)u64(b, "peak_live"), h, sizeof h),
		 json_is_false(json_object_get(b, "peak_live_exact"))
			 ? ", sampled across threads"
			 : "");
	if (json_is_false(json_object_get(b, "peak_live_known")))
		fprintf(out, "  %18s  %-30s  # the frees outnumber the allocations: "
			     "each thread's last events were lost in the kill\n",
			"not known", "peak live");
	else
		row(out, u64(b, "peak_live"), "peak live", note);
	json_t *moves = json_object_get(s, "realloc_moves");
	if (u64(moves, "count")) {
		snprintf(note, sizeof note, "%s copied by the allocator",
			 mt_format_bytes((double)u64(moves, "copied_bytes"), h,
					 sizeof h));
		row(out, u64(moves, "count"), "moved by realloc", note);
	}
}

static bool listed(json_t *array, const char *value)
{
	size_t i;
	json_t *v;
	json_array_foreach(array, i, v) if (strcmp(json_string_value(v), value) == 0)
		return true;
	return false;
}

static void print_syscalls(FILE *out, json_t *s)
{
	json_t *sys = json_object_get(s, "syscalls");
	json_t *bytes = json_object_get(s, "syscall_bytes");
	json_t *brk = json_object_get(s, "brk");
	json_t *adv = json_object_get(s, "madvise_by_advice");
	json_t *inferred = json_object_get(s, "syscall_bytes_inferred");
	json_t *inferred_calls = json_object_get(s, "syscalls_inferred");
	char note[160], h1[32], h2[32], h3[40];

	json_t *sources = json_object_get(s, "sources");
	json_t *from = json_object_get(sources, "syscalls");

	heading(out, "memory system calls");
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		const char *name = mt_sys_names[i];
		char label[64], flag[64];
		snprintf(flag, sizeof flag, "syscalls.%s", name);
		snprintf(label, sizeof label, "%-9s (%s%s)", name,
			 json_string_value(json_object_get(from, name)),
			 listed(json_object_get(sources, "incomplete"), flag)
				 ? ", incomplete"
				 : "");
		note[0] = '\0';
		if (i == MT_SYS_BRK)
			snprintf(note, sizeof note,
				 "%" PRIu64 " grow by %s, %" PRIu64 " shrink by %s",
				 u64(brk, "grow"),
				 mt_format_bytes((double)u64(brk, "grow_bytes"), h1, sizeof h1),
				 u64(brk, "shrink"),
				 mt_format_bytes((double)u64(brk, "shrink_bytes"), h2, sizeof h2));
		else if (i != MT_SYS_MPROTECT && u64(inferred, name))
			snprintf(note, sizeof note,
				 "%s by interposed calls; glibc's own, inferred: %s "
				 "of %s",
				 mt_format_bytes((double)u64(bytes, name), h1, sizeof h1),
				 mt_format_count(u64(inferred_calls, name), h3, sizeof h3),
				 mt_format_bytes((double)u64(inferred, name), h2, sizeof h2));
		else if (i != MT_SYS_MPROTECT)
			snprintf(note, sizeof note, "%s by interposed calls",
				 mt_format_bytes((double)u64(bytes, name), h1, sizeof h1));
		row(out, u64(sys, name), label, note);
	}
	const char *key;
	json_t *v;
	json_object_foreach(adv, key, v) {
		char label[40];
		snprintf(label, sizeof label, "  %s (seen by the shim)", key);
		row(out, (uint64_t)json_integer_value(v), label, "");
	}
	/* The program's own malloc_trim calls, whose purges are glibc's
	 * madvise calls above (1,900 of them went unexplained in the table,
	 * said only by explain; new-user trial 49). */
	json_t *trim = json_object_get(s, "malloc_trim");
	if (u64(trim, "calls")) {
		snprintf(note, sizeof note,
			 "%" PRIu64 " of them purged free pages inside the heaps "
			 "(%s), %" PRIu64 " moved the break back (%s)",
			 u64(trim, "purges"),
			 mt_format_bytes((double)u64(trim, "purged_bytes"), h1, sizeof h1),
			 u64(trim, "shrinks"),
			 mt_format_bytes((double)u64(trim, "shrink_bytes"), h2, sizeof h2));
		row(out, u64(trim, "calls"), "malloc_trim calls", note);
	}
}

/* What the shim cost the run, estimated (common/shim_cost.c), beside the
 * program's time. */
static void print_shim_cost(FILE *out, json_t *s)
{
	json_t *k = json_object_get(s, "shim_cost");
	if (!json_is_object(k))
		return;
	double share = json_number_value(json_object_get(k, "share_of_run"));
	double estimated = json_number_value(json_object_get(k, "estimated_s"));
	/* (in microseconds where it is less than a millisecond: "0.000 s,
	 * 24.1% of the cpu time" of a parent that only waits; new-user
	 * trial 51) */
	int digits = estimated > 0 && estimated < 1e-3 ? 6 : 3;
	fprintf(out, "  %16.*f s  %-30s  # %.1f%% of the cpu time: %.*f s in %s "
		     "calls, %.*f s its threads, %.*f s start-up, %.*f s the "
		     "program's thread starts, %.*f s its regions\n",
		digits, estimated, "shim's own (estimate)", 100 * share, digits,
		json_number_value(json_object_get(k, "calls_s")),
		json_is_string(json_object_get(k, "mode")) &&
				strcmp(json_string_value(json_object_get(k, "mode")),
				       "trace") == 0
			? "traced"
			: "counted",
		digits, json_number_value(json_object_get(k, "threads_s")),
		digits, json_number_value(json_object_get(k, "start_s")),
		digits, json_number_value(json_object_get(k, "thread_starts_s")),
		digits, json_number_value(json_object_get(k, "regions_s")));
	fputs("  (the shim's own: calls x ns per call measured on one machine "
	      "(bench/shim_cost.py), plus its threads' cpu time, plus the "
	      "program's threads x what a start costs more with the kernel "
	      "counters, plus its regions x what one costs; included in the "
	      "times above)\n", out);
}

static void print_time(FILE *out, json_t *s)
{
	json_t *pf = json_object_get(s, "page_faults");
	json_t *cpu = json_object_get(s, "cpu_s");

	char title[64];
	snprintf(title, sizeof title, "page faults (%s) and time (getrusage)",
		 json_string_value(json_object_get(json_object_get(s, "sources"),
						   "page_faults")));
	heading(out, json_is_null(json_object_get(pf, "minor"))
			     ? "page faults and time (known at exit only)"
			     : title);
	if (json_is_null(json_object_get(pf, "minor"))) {
		unknown_row(out, "minor faults");
		unknown_row(out, "major faults");
	} else {
		/* (the shim's part that it measured: a bare run takes fewer,
		 * by that and by what it cannot tell apart; new-user trial
		 * 50 compared with perf stat of the bare program) */
		json_t *own = json_object_get(json_object_get(s, "shim_cost"), "faults");
		char note[96] = "";
		if (json_is_integer(own))
			snprintf(note, sizeof note,
				 "%" PRIu64 " of them the shim's start-up and "
				 "threads'",
				 (uint64_t)json_integer_value(own));
		row(out, u64(pf, "minor"), "minor faults", note);
		row(out, u64(pf, "major"), "major faults", "");
	}
	seconds_row(out, json_object_get(cpu, "user"), "user");
	seconds_row(out, json_object_get(cpu, "system"), "system");
	seconds_row(out, json_object_get(s, "wall_s"), "wall");
	print_shim_cost(out, s);
}

/* Beside strace -f: the kernel's count from the exec on (when memtrace ran
 * the command), and what of it came before the shim's counters. */
static void print_from_exec(FILE *out, json_t *s)
{
	json_t *exec = json_object_get(s, "syscalls_from_exec");
	json_t *counted = json_object_get(s, "syscalls");
	json_t *shim = json_object_get(s, "shim_syscalls");
	if (!json_is_object(exec))
		return;
	heading(out, "memory system calls from the exec on, as strace -f counts "
		     "them (kernel)");
	for (int k = 0; k < MT_SYS_COUNT; k++) {
		const char *name = mt_sys_names[k];
		uint64_t all = u64(exec, name), seen = u64(counted, name) +
						      u64(shim, name);
		char note[96];
		snprintf(note, sizeof note,
			 "%" PRIu64 " before the counters started",
			 all > seen ? all - seen : 0);
		row(out, all, name, note);
	}
	fputs("  (before: the loader mapping the libraries, memtrace's and the "
	      "two it uses among them, start-up, and the shim's own calls; the "
	      "rest as above, and the shim's own calls after: strace -f of "
	      "the command without memtrace counts fewer)\n", out);
}

/* Resident memory, where it was sampled (common/resident.h). */
static void print_resident(FILE *out, json_t *s)
{
	json_t *r = json_object_get(s, "resident");
	if (!u64(r, "samples"))
		return;
	char title[96], note[96], b[32];
	snprintf(title, sizeof title,
		 "resident memory (%" PRIu64 " samples of /proc/self/statm)",
		 u64(r, "samples"));
	heading(out, title);
	/* (anon_bytes_max is of the samples before exit, those the kept
	 * memory is weighed against; the most is the exit's when larger) */
	uint64_t most = u64(r, "anon_bytes_max");
	if (u64(r, "anon_bytes_exit") > most)
		most = u64(r, "anon_bytes_exit");
	/* (the samples follow the frees: one program's single 1 GiB block,
	 * sampled only once unmapped, showed "most 264 KiB"; the kernel's
	 * own peak is beside it; new-user trial 15) */
	row(out, most, "anonymous, most sampled",
	    mt_format_bytes((double)most, b, sizeof b));
	uint64_t peak = u64(s, "peak_rss_bytes");
	/* (a killed process's: the samples', up to its last progress) */
	bool sampled = json_object_get(json_object_get(s, "recording"),
				       "measured_to_s") != NULL;
	if (peak)
		row(out, peak, sampled ? "peak resident, most sampled"
				       : "peak resident (getrusage)",
		    mt_format_bytes((double)peak, b, sizeof b));
	if (json_is_true(json_object_get(s, "partial")))
		unknown_row(out, "anonymous at exit"); /* (killed) */
	else
		row(out, u64(r, "anon_bytes_exit"), "anonymous at exit",
		    mt_format_bytes((double)u64(r, "anon_bytes_exit"), b, sizeof b));
	row(out, u64(r, "kept_bytes_max"), "kept, worst point",
	    mt_format_bytes((double)u64(r, "kept_bytes_max"), b, sizeof b));
	snprintf(note, sizeof note, "%s, for %.2f s of %.2f s",
		 mt_format_bytes((double)u64(r, "kept_bytes_sustained"), b, sizeof b),
		 u64(r, "kept_ms") / 1e3, u64(r, "sampled_ms") / 1e3);
	row(out, u64(r, "kept_bytes_sustained"), "kept, a fifth of the time",
	    note);
	fputs("  (kept: anonymous memory neither mapped by the program nor "
	      "live again later)\n", out);
}

/* A trace that does not cover the whole run says so first. */
static void print_partial(FILE *out, json_t *s)
{
	json_t *incomplete = json_object_get(s, "incomplete"), *v;
	size_t i;
	if (!json_is_true(json_object_get(s, "partial")))
		return;
	fprintf(out, " PARTIAL: %s\n",
		json_string_value(json_object_get(s, "partial_reason")));
	fputs(" incomplete figures:", out);
	json_array_foreach(incomplete, i, v) fprintf(out, "%s %s", i ? "," : "",
						     json_string_value(v));
	fputc('\n', out);
}

void mt_summary_print_table(FILE *out, json_t *s)
{
	json_t *be = json_object_get(s, "backend");
	const char *version = json_string_value(json_object_get(be, "version"));

	print_command(out, s);
	fprintf(out, " (pid %" PRIu64 "), backend %s%s%s (%s):\n", u64(s, "pid"),
		json_string_value(json_object_get(be, "name")),
		version ? " " : "", version ? version : "",
		json_string_value(json_object_get(be, "library")));
	print_partial(out, s);
	print_calls(out, s);
	print_bytes(out, s);
	print_syscalls(out, s);
	print_from_exec(out, s);
	print_time(out, s);
	print_resident(out, s);
	fputc('\n', out);
}
