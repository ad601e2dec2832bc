/* How completely a trace recorded its process: how recording ended (the
 * status record of format 1.8, or inferred from the events of an older
 * file), what the file lacks (a chunk it ends inside, holes, damaged
 * chunks skipped), and what the shim could not record (lost events, kernel
 * samples dropped).  A replay fills it; it becomes the summary's "partial"
 * keys (docs/summary-json.md) and the sentences the verbs print. */
#ifndef MEMTRACE_RECORDING_H
#define MEMTRACE_RECORDING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "idmap.h"
#include "trace_read.h"

struct mt_recording {
	/* Filled while the events are read. */
	bool closed;		  /* the exit event: figures at exit known */
	bool exec;		  /* an exec event */
	char exec_path[256];
	uint64_t lost_events;	  /* as the lost events say */
	struct mt_idmap lost_by_thread; /* tid -> uint64_t * */
	uint64_t lost_samples;	  /* kernel samples dropped */
	uint64_t last_ns;	  /* the last event's time */
	bool fault_sampled;	  /* fault samples are a figure */
	/* Not closed: the wall time of the last progress event, whose
	 * figures stand for those at exit (0: none). */
	double measured_to_s;
	/* Not closed: when the call sites the trace has were written, on the
	 * same clock, where that was before measured_to_s (0: not so). */
	double sites_to_s;
	/* Filled from the trace by mt_recording_read. */
	int end;		  /* enum mt_trace_end */
	bool said;		  /* by the status record, not inferred */
	bool status_damaged;
	int32_t value;
	uint64_t at, status_lost;
	long pid;
	uint64_t truncated_at, unwritten, unwritten_at, skipped;
	const char *skipped_what;
};

/* A lost event of thread tid. */
void mt_recording_lost(struct mt_recording *r, uint32_t tid, uint64_t n);
/* After mt_trace_each: what the trace itself says (status, truncation,
 * holes, skipped chunks), and the end inferred when no status says it. */
void mt_recording_read(struct mt_recording *r, struct mt_trace *t);
/* Do the figures miss anything? */
bool mt_recording_partial(const struct mt_recording *r);
/* Is there anything to say: partial, or not a plain exit? */
bool mt_recording_noteworthy(const struct mt_recording *r);
/* Into the summary: "partial", "partial_reason", "incomplete", "lost_*"
 * and "recording" (only when something is missing or the process did not
 * exit), and null for the figures only known at exit when they are
 * missing.  False when out of memory. */
bool mt_recording_annotate(const struct mt_recording *r, json_t *summary);
void mt_recording_free(struct mt_recording *r);

#endif
