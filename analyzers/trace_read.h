/* Reading a recording: a native trace file (native_read.c: streaming,
 * chunk by chunk, with memory bounded by one chunk, plus 16 bytes per
 * chunk when the file holds provisional chunks; docs/trace-format.md) or
 * an LTTng trace directory (ctf_read.c).  Both are sources (source.h) of
 * the same events (event.h); what reads them never asks which. */
#ifndef MEMTRACE_TRACE_READ_H
#define MEMTRACE_TRACE_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "memtrace/trace_format.h"

struct mt_trace;

/* Open and check the file header.  On failure returns NULL with a message
 * in err naming the file offset and what was expected.  A directory is
 * read as an LTTng trace (ctf_read.h). */
struct mt_trace *mt_trace_open(const char *path, char *err, size_t errlen);
/* The same, for one process of an LTTng trace (pid 0: the first), in its
 * image after `image` execs; a native trace must be of that process (its
 * images are files of their own). */
struct mt_trace *mt_trace_open_process(const char *path, long pid,
				       unsigned image, char *err, size_t errlen);
/* Is path a recording: an LTTng trace directory, or a file that starts
 * as a memtrace trace? */
bool mt_is_recording(const char *path);
/* After mt_trace_each: a note for the user (other processes in an LTTng
 * trace), or NULL. */
const char *mt_trace_note(struct mt_trace *t);
void mt_trace_close(struct mt_trace *t);
/* The header's metadata (owned by the trace). */
json_t *mt_trace_metadata(struct mt_trace *t);

/* Calls fn for every event, in file order (each thread's stream in time
 * order; a thread's signal-handler stream, format 1.8, interleaves with
 * its main one by time, not by file order).  Damage stops it with an
 * error in err (offset, what was expected), unless `salvage`: then damaged
 * chunks are skipped and counted.  What a stopped writer leaves is not
 * damage: a file that ends inside a chunk ends there (mt_trace_truncated),
 * and zero-filled holes are skipped (mt_trace_unwritten).  fn returns
 * false to stop.  Returns true when the whole file was read. */
bool mt_trace_each(struct mt_trace *t, bool salvage,
		   bool (*fn)(const struct mt_event *, void *), void *arg,
		   char *err, size_t errlen);
/* Every mt_trace_each of t from now on salvages (--salvage of a verb
 * whose readers do not take the flag themselves). */
void mt_trace_salvage(struct mt_trace *t);
/* After mt_trace_each with salvage: chunks skipped as damaged. */
uint64_t mt_trace_skipped(const struct mt_trace *t);
/* What that counts: "damaged chunks", or in an LTTng trace "events LTTng
 * discarded" (each in the singular for one). */
const char *mt_trace_skipped_what(const struct mt_trace *t);
/* The status record (format 1.8): how recording ended, as the writer
 * last said.  False when the file has none (older formats, an LTTng
 * trace), or when it does not read whole (then *damaged). */
bool mt_trace_status(const struct mt_trace *t, struct mt_trace_status *out,
		     bool *damaged);
/* After mt_trace_each: the offset of the chunk the file ends inside (its
 * writer was stopped part way: a kill, a full disk), or 0. */
uint64_t mt_trace_truncated(const struct mt_trace *t);
/* After mt_trace_each: bytes never written (zero-filled: a place a thread
 * reserved in the file and was stopped before filling), the first at
 * *first. */
uint64_t mt_trace_unwritten(const struct mt_trace *t, uint64_t *first);
/* CLOCK_MONOTONIC ns of the first event: event times are counted from it. */
uint64_t mt_trace_start_ns(const struct mt_trace *t);

/* A reader of a trace in memory (the fuzz target's entry point). */
struct mt_trace *mt_trace_from_memory(const void *data, size_t len, char *err,
				      size_t errlen);

#endif
