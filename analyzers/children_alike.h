/* The findings of the processes a command started (a fork's children,
 * a pool's workers): a finding at the same code in several is said once,
 * with the first one's figures, naming the others and the part of their
 * runs it took.  Grouped finding by finding, not process by process, so
 * that a finding near its bar in one worker only does not part the
 * findings they all share. */
#ifndef MEMTRACE_CHILDREN_ALIKE_H
#define MEMTRACE_CHILDREN_ALIKE_H

#include <stdbool.h>
#include <stddef.h>

#include "explain.h"
#include "explain_runs.h"

/* At most so many kinds of finding are said; the rest are counted. */
#define MT_CHILD_KINDS 12

struct mt_child_group {
	char *key;      /* the rule and the stack of its first site */
	size_t at;      /* the finding said, in out */
	char pids[160]; /* the others' */
	char shares[160];
	unsigned others;
	/* the others' churns' system time, where they said it */
	double system_s_explained;
};

struct mt_children_alike {
	struct mt_child_group groups[MT_CHILD_KINDS];
	size_t kinds, unsaid;
};

/* x, a finding of child process pid: kept in out where it is the first
 * of its kind, else added to the one alike, else counted.  Owns x; false
 * when there is no room. */
bool mt_children_alike_add(struct mt_children_alike *c, struct mt_finding *x,
			   long long pid, struct findings *out);

/* Each finding said for several says so (out NULL: none, after a
 * failure); frees what c holds. */
bool mt_children_alike_said(struct mt_children_alike *c, struct findings *out);

#endif
