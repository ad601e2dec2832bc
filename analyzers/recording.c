#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recording.h"

void mt_recording_lost(struct mt_recording *r, uint32_t tid, uint64_t n)
{
	uint64_t *count = mt_idmap_get(&r->lost_by_thread, tid);
	if (!count && (count = calloc(1, sizeof *count)) &&
	    !mt_idmap_put(&r->lost_by_thread, tid, count)) {
		free(count);
		count = NULL;
	}
	if (count)
		*count += n;
	r->lost_events += n;
}

void mt_recording_read(struct mt_recording *r, struct mt_trace *t)
{
	struct mt_trace_status st;
	r->said = mt_trace_status(t, &st, &r->status_damaged);
	if (r->said) {
		r->end = st.end < MT_END_COUNT ? (int)st.end : MT_END_RECORDING;
		r->value = st.value;
		r->at = st.at;
		r->status_lost = st.lost;
		/* The closing record is there: the process exited, and was
		 * stopped before the status said so. */
		if (r->closed && r->end == MT_END_RECORDING)
			r->end = MT_END_EXIT;
	} else {
		/* A file without one (before 1.8): the events tell exit and
		 * exec; anything else ended without a word. */
		r->end = r->closed ? MT_END_EXIT
			 : r->exec ? MT_END_EXEC
				   : MT_END_RECORDING;
	}
	r->pid = (long)json_integer_value(json_object_get(mt_trace_metadata(t), "pid"));
	r->truncated_at = mt_trace_truncated(t);
	r->unwritten = mt_trace_unwritten(t, &r->unwritten_at);
	r->skipped = mt_trace_skipped(t);
	r->skipped_what = mt_trace_skipped_what(t);
}

/* Events the shim could not record: the status counts every one, the
 * lost events those the threads could say. */
static uint64_t lost_events(const struct mt_recording *r)
{
	return r->status_lost > r->lost_events ? r->status_lost : r->lost_events;
}

/* Were events of the run not read: the last ones (a kill, a full disk),
 * holes, damaged chunks, lost ones? */
static bool events_missing(const struct mt_recording *r)
{
	return (!r->closed && (r->end == MT_END_RECORDING ||
			       r->end == MT_END_WRITE_FAILED)) ||
	       r->truncated_at || r->unwritten || r->skipped || lost_events(r);
}

bool mt_recording_partial(const struct mt_recording *r)
{
	return !r->closed || events_missing(r) || r->lost_samples;
}

/* A run that exited with a status other than 0 (said by format 1.18's
 * shims; older ones said -1 for every exit): whole figures, of a run
 * that may have failed. */
static bool exited_failing(const struct mt_recording *r)
{
	return r->said && r->closed && r->end == MT_END_EXIT && r->value > 0;
}

bool mt_recording_noteworthy(const struct mt_recording *r)
{
	return mt_recording_partial(r) || r->end != MT_END_EXIT || r->status_damaged ||
	       exited_failing(r);
}

static const char *const end_names[MT_END_COUNT] = {
	[MT_END_RECORDING] = "killed",	 [MT_END_EXIT] = "exit",
	[MT_END_EXEC] = "exec",		 [MT_END_EXIT_NOW] = "_exit",
	[MT_END_SIGNAL] = "signal",	 [MT_END_WRITE_FAILED] = "write_failed",
};

/* How recording ended, in words. */
static void say_end(const struct mt_recording *r, char *out, size_t len)
{
	const char *sig;
	switch (r->end) {
	case MT_END_RECORDING:
		snprintf(out, len, "killed (no closing record: SIGKILL, the OOM killer, "
				   "or still running%s)",
			 r->said ? "" : "; without a status record (format 1.8), "
					"_exit looks the same");
		break;
	case MT_END_EXIT:
		snprintf(out, len, "exited, but its closing record is not in the file");
		break;
	case MT_END_EXEC:
		snprintf(out, len, "ended in exec%s%s (not killed: the image was "
				   "replaced, and the new one records into a file of "
				   "its own, this name with .1, .2, ...)",
			 r->exec_path[0] ? " of " : "", r->exec_path);
		break;
	case MT_END_EXIT_NOW:
		/* (the shim writes its closing record on _exit as on exit,
		 * but in a vfork child, whose memory is its parent's) */
		snprintf(out, len, "left by _exit(%d)%s", r->value,
			 r->closed ? "" : ", which wrote no closing record");
		break;
	case MT_END_SIGNAL:
		sig = r->value > 0 && r->value < 65 ? sigabbrev_np(r->value) : NULL;
		snprintf(out, len, "ended by fatal signal %d%s%s%s", r->value,
			 sig ? " (SIG" : "", sig ? sig : "", sig ? ")" : "");
		break;
	case MT_END_WRITE_FAILED:
		if (r->value == ENOSPC)
			snprintf(out, len, "the disk was full at offset %llu: recording "
					   "stopped there",
				 (unsigned long long)r->at);
		else
			snprintf(out, len, "a write failed at offset %llu (%s): recording "
					   "stopped there",
				 (unsigned long long)r->at, strerrordesc_np(r->value)
				 ? strerrordesc_np(r->value) : "unknown error");
		break;
	}
}

/* "thread 4242 says 17, thread 4243 says 2": the threads whose lost
 * records count events (the shim writes the process's count at exit,
 * from the thread that exits). */
static void say_threads(const struct mt_recording *r, char *out, size_t len)
{
	size_t n = 0, shown = 0;
	out[0] = '\0';
	for (size_t i = 0; i < r->lost_by_thread.cap; i++) {
		const uint64_t *count = mt_idmap_at(&r->lost_by_thread, i);
		if (!count)
			continue;
		if (shown++ < 8 && n < len)
			n += (size_t)snprintf(out + n, len - n, "%sthread %llu says %llu",
					      n ? ", " : "",
					      (unsigned long long)r->lost_by_thread.slots[i].id,
					      (unsigned long long)*count);
	}
	if (shown > 8 && n < len)
		snprintf(out + n, len - n, ", %zu threads more", shown - 8);
}

static void add(char *out, size_t len, const char *text)
{
	size_t n = strlen(out);
	if (n < len)
		snprintf(out + n, len - n, "%s%s", n ? "; " : "", text);
}

static void reasons(const struct mt_recording *r, char *out, size_t len)
{
	char one[768], threads[512];
	out[0] = '\0';
	if (r->end != MT_END_EXIT || !r->closed) {
		say_end(r, one, sizeof one);
		add(out, len, one);
	}
	if (!r->closed && r->measured_to_s > 0) {
		snprintf(one, sizeof one, "its time, CPU, page faults and system "
					  "calls are those its last progress record "
					  "had, %.2f s into the run",
			 r->measured_to_s);
		add(out, len, one);
	}
	if (!r->closed && r->sites_to_s > 0) {
		snprintf(one, sizeof one, "its call sites those last written, "
					  "%.2f s into it",
			 r->sites_to_s);
		add(out, len, one);
	}
	if (exited_failing(r)) {
		snprintf(one, sizeof one, "exited with status %d", r->value);
		add(out, len, one);
	}
	if (r->status_damaged)
		add(out, len, "its status record does not read whole (how recording "
			      "ended was inferred from the events)");
	if (r->truncated_at) {
		snprintf(one, sizeof one, "the file ends inside a chunk at offset %llu "
					  "(the writer was stopped: disk full or killed)",
			 (unsigned long long)r->truncated_at);
		add(out, len, one);
	}
	if (r->unwritten) {
		snprintf(one, sizeof one, "%llu bytes from offset %llu were never written "
					  "(places in the file reserved by threads that "
					  "were stopped before writing their chunks)",
			 (unsigned long long)r->unwritten,
			 (unsigned long long)r->unwritten_at);
		add(out, len, one);
	}
	if (r->skipped) {
		snprintf(one, sizeof one, "%llu %s skipped (--salvage)",
			 (unsigned long long)r->skipped, r->skipped_what);
		add(out, len, one);
	}
	if (lost_events(r)) {
		say_threads(r, threads, sizeof threads);
		uint64_t unsaid = lost_events(r) - r->lost_events;
		char process[96] = "";
		if (unsaid)
			snprintf(process, sizeof process, "%sprocess %ld, by its status "
							  "record: %llu%s",
				 threads[0] ? "; " : "", r->pid, (unsigned long long)unsaid,
				 threads[0] ? " more" : "");
		snprintf(one, sizeof one, "%llu events were not recorded (%s%s)",
			 (unsigned long long)lost_events(r), threads, process);
		add(out, len, one);
	}
	if (r->lost_samples) {
		snprintf(one, sizeof one, "%llu kernel samples were dropped (the "
					  "kernel's buffer was full)",
			 (unsigned long long)r->lost_samples);
		add(out, len, one);
	}
}

/* The figures only the closing record carries, and those the events make. */
static const char *const at_exit[] = {
	"syscalls", "page_faults", "cpu_s", "wall_s", "threads",
	"peak_rss_bytes", "shim_syscalls",
};
static const char *const from_events[] = {
	"calls", "calls_by_allocator", "bytes_requested", "bytes", "large",
	"size_histogram", "syscalls_interposed", "syscalls_inferred",
	"syscalls_by_allocator", "syscall_bytes", "syscall_bytes_inferred",
	"brk", "madvise_by_advice", "madvise_bytes_by_advice", "regions",
};

/* A figure not recorded is null, not a zero that looks measured. */
static void unknown(json_t *s, const char *key)
{
	json_t *v = json_object_get(s, key);
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) json_object_set_new(v, k, json_null());
	} else if (v) {
		json_object_set_new(s, key, json_null());
	}
}

static json_t *recording_json(const struct mt_recording *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "end", json_string(end_names[r->end]));
	json_object_set_new(o, "said_by", json_string(r->said ? "status record"
								: "inferred from the events"));
	/* (exit's value is -1 when the shim could not know it) */
	if (r->said && (r->end == MT_END_EXIT_NOW ||
			(r->end == MT_END_EXIT && r->value >= 0)))
		json_object_set_new(o, "exit_status", json_integer(r->value));
	if (r->end == MT_END_SIGNAL)
		json_object_set_new(o, "signal", json_integer(r->value));
	if (r->end == MT_END_WRITE_FAILED) {
		json_object_set_new(o, "errno", json_integer(r->value));
		json_object_set_new(o, "offset", json_integer((json_int_t)r->at));
	}
	if (r->exec_path[0])
		json_object_set_new(o, "exec", json_string(r->exec_path));
	if (r->truncated_at)
		json_object_set_new(o, "truncated_at",
				    json_integer((json_int_t)r->truncated_at));
	if (r->unwritten) {
		json_object_set_new(o, "unwritten_bytes",
				    json_integer((json_int_t)r->unwritten));
		json_object_set_new(o, "unwritten_at",
				    json_integer((json_int_t)r->unwritten_at));
	}
	if (r->skipped)
		json_object_set_new(o, "skipped", json_integer((json_int_t)r->skipped));
	json_object_set_new(o, "recorded_s", json_real((double)r->last_ns / 1e9));
	if (!r->closed && r->measured_to_s > 0)
		json_object_set_new(o, "measured_to_s", json_real(r->measured_to_s));
	if (!r->closed && r->sites_to_s > 0)
		json_object_set_new(o, "sites_to_s", json_real(r->sites_to_s));
	return o;
}

static json_t *lost_json(const struct mt_recording *r)
{
	json_t *o = json_object();
	for (size_t i = 0; i < r->lost_by_thread.cap; i++) {
		const uint64_t *count = mt_idmap_at(&r->lost_by_thread, i);
		char tid[24];
		if (!count)
			continue;
		snprintf(tid, sizeof tid, "%llu",
			 (unsigned long long)r->lost_by_thread.slots[i].id);
		json_object_set_new(o, tid, json_integer((json_int_t)*count));
	}
	return o;
}

bool mt_recording_annotate(const struct mt_recording *r, json_t *s)
{
	bool partial = mt_recording_partial(r);
	if (!mt_recording_noteworthy(r))
		return true; /* nothing to add: the live summary's keys alone */
	char why[2048];
	json_t *incomplete = json_array();
	reasons(r, why, sizeof why);
	if (!r->closed) {
		/* (measured to the last progress event: the kernel's figures
		 * as they were then, but not the shim's own calls) */
		for (size_t i = 0; i < sizeof at_exit / sizeof *at_exit; i++) {
			if (r->measured_to_s > 0 && strcmp(at_exit[i], "shim_syscalls") != 0)
				continue;
			json_array_append_new(incomplete, json_string(at_exit[i]));
			if (strcmp(at_exit[i], "syscalls") != 0)
				unknown(s, at_exit[i]);
		}
		/* glibc's thresholds as they ended up: the shim's at exit */
		const char *backend = json_string_value(
			json_object_get(json_object_get(s, "backend"), "name"));
		if (backend && strcmp(backend, "glibc") == 0)
			json_array_append_new(incomplete, json_string("glibc_thresholds"));
	}
	if (events_missing(r))
		for (size_t i = 0; i < sizeof from_events / sizeof *from_events; i++)
			json_array_append_new(incomplete, json_string(from_events[i]));
	if (r->lost_samples && r->fault_sampled)
		json_array_append_new(incomplete, json_string("fault_samples"));
	bool ok = !json_object_set_new(s, "partial", json_boolean(partial)) &&
		  !json_object_set_new(s, "partial_reason", json_string(why)) &&
		  !json_object_set_new(s, "incomplete", incomplete) &&
		  !json_object_set_new(s, "recording", recording_json(r));
	if (lost_events(r)) {
		ok = ok && !json_object_set_new(s, "lost_events",
						json_integer((json_int_t)lost_events(r)));
		ok = ok && !json_object_set_new(s, "lost_events_by_thread", lost_json(r));
	}
	if (r->lost_samples)
		ok = ok && !json_object_set_new(s, "lost_samples",
						json_integer((json_int_t)r->lost_samples));
	return ok;
}

void mt_recording_free(struct mt_recording *r)
{
	for (size_t i = 0; i < r->lost_by_thread.cap; i++)
		free(mt_idmap_at(&r->lost_by_thread, i));
	mt_idmap_free(&r->lost_by_thread);
}
