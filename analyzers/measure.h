/* Running a command under the shim and collecting what its processes
 * reported: the building block of stat, compare and explain. */
#ifndef MEMTRACE_MEASURE_H
#define MEMTRACE_MEASURE_H

#include <jansson.h>
#include <stdbool.h>

#include "launch.h"

struct mt_measured {
	int status;	     /* the command's exit status */
	bool signaled;	     /* status is 128 + the signal that killed it */
	json_t *processes; /* array of summaries, the command's own first */
};

/* Run argv once as l says (its summary setting is replaced).  Returns
 * false, with a message, when nothing could be run or no summary came
 * back; free the result with mt_measured_free. */
bool mt_measure(const struct mt_launch *l, char *const argv[],
		struct mt_measured *out);
void mt_measured_free(struct mt_measured *m);

/* The command's own summary (the first), or NULL. */
json_t *mt_measured_root(const struct mt_measured *m);

#endif
