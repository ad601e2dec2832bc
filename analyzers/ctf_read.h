/* Reading an LTTng trace (CTF, through libbabeltrace2) of the memtrace
 * tracepoint provider as the native trace's events: the same tags and
 * fields as the native reader gives (event.h), so every verb reads both alike. */
#ifndef MEMTRACE_CTF_READ_H
#define MEMTRACE_CTF_READ_H

#include "source.h"

/* Open the LTTng trace in dir (a session's output directory, or any
 * directory holding CTF traces) as a source (source.h).  A trace can hold
 * several processes, and a process several images (exec starts one): pid
 * 0 takes the first one that started, else the process with that pid, in
 * its image after `image` execs.  NULL with err on failure. */
struct mt_trace *mt_ctf_open(const char *dir, long pid, unsigned image,
			     char *err, size_t errlen);

#endif
