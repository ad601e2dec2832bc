/* The front of the readers: which source a path is, and each question
 * passed to it (source.h). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "native_read.h"
#include "trace_read.h"
#ifdef MT_HAVE_BABELTRACE2
#include "ctf_read.h"
#endif

static bool is_directory(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* An LTTng session's output: a directory of CTF traces. */
static struct mt_trace *open_ctf(const char *dir, long pid, unsigned image,
				 char *err, size_t errlen)
{
#ifdef MT_HAVE_BABELTRACE2
	return mt_ctf_open(dir, pid, image, err, errlen);
#else
	(void)pid;
	(void)image;
	mt_read_fail(err, errlen,
		     "%s is a directory, and this memtrace was built without "
		     "libbabeltrace2, which reads LTTng traces (Debian: "
		     "libbabeltrace2-dev, then rebuild)",
		     dir);
	return NULL;
#endif
}

struct mt_trace *mt_trace_open_process(const char *path, long pid,
				       unsigned image, char *err, size_t errlen)
{
	if (is_directory(path))
		return open_ctf(path, pid, image, err, errlen);
	return mt_native_open(path, pid, err, errlen);
}

struct mt_trace *mt_trace_open(const char *path, char *err, size_t errlen)
{
	return mt_trace_open_process(path, 0, 0, err, errlen);
}

struct mt_trace *mt_trace_from_memory(const void *data, size_t len, char *err,
				      size_t errlen)
{
	return mt_native_from_memory(data, len, err, errlen);
}

bool mt_is_recording(const char *path)
{
	char magic[8];
	if (is_directory(path))
		return true;
	FILE *f = fopen(path, "rbe");
	bool yes = f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, MT_TRACE_MAGIC, 8);
	if (f)
		fclose(f);
	return yes;
}

void mt_trace_close(struct mt_trace *t)
{
	if (t)
		t->ops->close(t);
}

json_t *mt_trace_metadata(struct mt_trace *t)
{
	return t->ops->metadata(t);
}

bool mt_trace_each(struct mt_trace *t, bool salvage,
		   bool (*fn)(const struct mt_event *, void *), void *arg,
		   char *err, size_t errlen)
{
	return t->ops->each(t, salvage || t->salvage, fn, arg, err, errlen);
}

void mt_trace_salvage(struct mt_trace *t)
{
	t->salvage = true;
}

uint64_t mt_trace_start_ns(const struct mt_trace *t)
{
	return t->ops->start_ns(t);
}

uint64_t mt_trace_skipped(const struct mt_trace *t)
{
	return t->ops->skipped(t);
}

const char *mt_trace_skipped_what(const struct mt_trace *t)
{
	return t->ops->skipped(t) == 1 ? t->ops->skipped_one
				       : t->ops->skipped_what;
}

const char *mt_trace_note(struct mt_trace *t)
{
	return t->ops->note ? t->ops->note(t) : NULL;
}

bool mt_trace_status(const struct mt_trace *t, struct mt_trace_status *out,
		     bool *damaged)
{
	*damaged = false;
	return t->ops->status && t->ops->status(t, out, damaged);
}

uint64_t mt_trace_truncated(const struct mt_trace *t)
{
	return t->ops->truncated ? t->ops->truncated(t) : 0;
}

uint64_t mt_trace_unwritten(const struct mt_trace *t, uint64_t *first)
{
	*first = 0;
	return t->ops->unwritten ? t->ops->unwritten(t, first) : 0;
}
