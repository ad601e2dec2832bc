/* A trace replayed into the counting-mode summary: the same counters, fed
 * by the recorded events through the same counting rules as the shim, so
 * that `memtrace stat FILE` equals the live summary of that run. */
#ifndef MEMTRACE_REPLAY_H
#define MEMTRACE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "recording.h"
#include "summary.h"
#include "trace_read.h"

struct replay;

/* What a replay gives: the summary, and how completely the trace recorded
 * its process.  The summary's strings point into the trace's metadata
 * (valid while the trace is open) and into `state`. */
struct mt_replayed {
	struct mt_summary summary;
	const struct mt_recording *recording;
	struct replay *state;
};

/* Replay every event of t.  False with err on failure (nothing to free). */
bool mt_replay(struct mt_trace *t, bool salvage, struct mt_replayed *out,
	       char *err, size_t errlen);
void mt_replayed_free(struct mt_replayed *r);
/* A baseline event's counters and the peak of live bytes so far, in
 * today's layout (the fields a format lacked are 0); false for a layout
 * not read (before 1.9). */
bool mt_baseline_counters(const struct mt_event *e, struct mt_counters *c,
			  uint64_t *peak);

#endif
