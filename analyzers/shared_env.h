/* One environment for a command's processes: a setting proposed for the
 * command's own process and another for its child processes (a parent's
 * GLIBC_TUNABLES=...mmap_threshold=8994816 and its pool workers'
 * ...=16777216: new-user trial 26) cannot both be set, since the
 * children inherit the one the command is started with.  Where they
 * differ, the one that covers each: every threshold at the largest value
 * proposed, which keeps what each of them keeps. */
#ifndef MEMTRACE_SHARED_ENV_H
#define MEMTRACE_SHARED_ENV_H

#include <jansson.h>
#include <stdio.h>

#include "explain.h"

/* For each backend where the command's own process and a child process
 * were proposed different GLIBC_TUNABLES: {"backend", "setting", "of":
 * [the settings it covers]}; an empty array where none. */
json_t *mt_shared_settings(struct mt_finding *const *found, size_t n);
void mt_print_shared_settings(FILE *out, json_t *shared);

#endif
