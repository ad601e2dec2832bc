/* Reading an LTTng trace (CTF, through libbabeltrace2) of the memtrace
 * tracepoint provider as the native trace's events: the same tags and
 * fields as trace_read.h gives, so every verb reads both alike. */
#ifndef MEMTRACE_CTF_READ_H
#define MEMTRACE_CTF_READ_H

#include "trace_read.h"

struct mt_ctf;

/* Open the LTTng trace in dir (a session's output directory, or any
 * directory holding CTF traces).  A trace can hold several processes, and
 * a process several images (exec starts one): pid 0 takes the first one
 * that started, else the process with that pid, in its image after
 * `image` execs.  NULL with err on failure. */
struct mt_ctf *mt_ctf_open(const char *dir, long pid, unsigned image,
			   char *err, size_t errlen);
void mt_ctf_close(struct mt_ctf *c);
json_t *mt_ctf_metadata(struct mt_ctf *c);
uint64_t mt_ctf_start_ns(const struct mt_ctf *c);
/* As mt_trace_each.  Events LTTng discarded (its buffers were full) stop
 * it with an error unless salvage; then they are counted as skipped. */
bool mt_ctf_each(struct mt_ctf *c, bool salvage,
		 bool (*fn)(const struct mt_event *, void *), void *arg,
		 char *err, size_t errlen);
uint64_t mt_ctf_skipped(const struct mt_ctf *c);
/* After mt_ctf_each: which other processes and images the trace holds,
 * or NULL. */
const char *mt_ctf_note(struct mt_ctf *c);

#endif
