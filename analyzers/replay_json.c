#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "replay_json.h"

/* The summary as the shim writes it, then what the recording lacks. */
static char *as_json(const struct mt_replayed *r)
{
	const struct mt_summary *s = &r->summary;
	size_t argv_bytes = 0;
	for (size_t i = 0; s->argv[i]; i++)
		argv_bytes += strlen(s->argv[i]);
	/* Escaped, a byte of the command takes at most 6.  A first guess,
	 * doubled while the summary does not fit (a trace cut by a full
	 * disk, its partial figures said at length, read "out of memory"
	 * once the summary had grown by a few fields: CI, 2026-11-27). */
	size_t size = 16384 + 6 * argv_bytes + (s->region_count + 1) * 8192 +
		      (s->sites_json ? strlen(s->sites_json) : 0);
	char *out = NULL;
	for (;; size *= 2) {
		if (size > ((size_t)64 << 20) || !(out = malloc(size)))
			return NULL;
		if (mt_summary_json(s, out, size))
			break;
		free(out);
	}
	if (!mt_recording_noteworthy(r->recording))
		return out;

	/* (The summary's writer is the shim's, which writes text only.) */
	json_t *j = json_loads(out, 0, NULL);
	free(out);
	out = j && mt_recording_annotate(r->recording, j)
		      ? json_dumps(j, JSON_COMPACT)
		      : NULL;
	json_decref(j);
	return out;
}

char *mt_replay_summary(struct mt_trace *t, bool salvage, char *err,
			size_t errlen)
{
	struct mt_replayed r;
	if (!mt_replay(t, salvage, &r, err, errlen))
		return NULL;
	char *out = as_json(&r);
	if (!out)
		snprintf(err, errlen, "out of memory");
	mt_replayed_free(&r);
	return out;
}
