/* Perfetto's trace format is protobuf: a Trace is a stream of packets
 * (field 1), each a TracePacket with a timestamp and either a track's
 * description or an event on a track.  The few messages needed are
 * written here by hand (protos/perfetto/trace/: trace_packet.proto,
 * track_event/track_descriptor.proto, track_event.proto,
 * debug_annotation.proto), one packet at a time: memory stays bounded
 * whatever the recording's size.  Times are CLOCK_MONOTONIC ns, Perfetto's
 * default clock (BOOTTIME) differing from it only by a constant. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_perfetto.h"
#include "idmap.h"

/* The field numbers used. */
enum {
	TRACE_PACKET = 1,
	PACKET_TIMESTAMP = 8,
	PACKET_SEQUENCE_ID = 10,
	PACKET_TRACK_EVENT = 11,
	PACKET_TRACK_DESCRIPTOR = 60,
	TRACK_UUID = 1,
	TRACK_NAME = 2,
	TRACK_PROCESS = 3,
	TRACK_THREAD = 4,
	TRACK_PARENT = 5,
	TRACK_COUNTER = 8,
	PROCESS_PID = 1,
	PROCESS_NAME = 6,
	THREAD_PID = 1,
	THREAD_TID = 2,
	THREAD_NAME = 5,
	EVENT_ANNOTATIONS = 4,
	EVENT_TYPE = 9,
	EVENT_TRACK = 11,
	EVENT_NAME = 23,
	EVENT_COUNTER = 30,
	ANNOTATION_UINT = 3,
	ANNOTATION_INT = 4,
	ANNOTATION_NAME = 10,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { VARINT = 0, LENGTH = 2 };

/* The tracks: the process, its counters, then one per thread. */
enum { PROCESS = 1, HEAP = 2, ANON = 3, FILE_BACKED = 4, LIVE = 5, FAULTS = 6 };
#define THREAD_TRACK(tid) (0x100000000ull + (tid))
#define SEQUENCE 1

struct pb {
	unsigned char buf[1024];
	size_t n;
};

static void varint(struct pb *b, uint64_t v)
{
	do {
		if (b->n < sizeof b->buf)
			b->buf[b->n++] = (unsigned char)((v & 127) | (v > 127 ? 128 : 0));
		v >>= 7;
	} while (v);
}

static void uint_field(struct pb *b, unsigned field, uint64_t v)
{
	varint(b, (uint64_t)field << 3 | VARINT);
	varint(b, v);
}

static void bytes_field(struct pb *b, unsigned field, const void *p, size_t len)
{
	varint(b, (uint64_t)field << 3 | LENGTH);
	varint(b, len);
	if (b->n + len <= sizeof b->buf) {
		memcpy(b->buf + b->n, p, len);
		b->n += len;
	} else {
		b->n = sizeof b->buf; /* (cut: too long for one packet) */
	}
}

static void string_field(struct pb *b, unsigned field, const char *s)
{
	bytes_field(b, field, s, strlen(s));
}

static void message_field(struct pb *b, unsigned field, const struct pb *m)
{
	bytes_field(b, field, m->buf, m->n);
}

struct writer {
	FILE *out;
	uint64_t start_ns; /* the recording's first event, CLOCK_MONOTONIC */
	uintptr_t heap_base;
	bool have_base, kernel_calls;
	long pid;
	uint64_t faults;
	struct mt_idmap threads; /* tids described */
	struct mt_idmap shim;	 /* the shim's own threads' tids */
	struct mt_idmap names;	 /* region id + 1 -> its name */
	uint64_t packets[8];	 /* per kind, for the closing line */
};

static void packet(struct writer *w, uint64_t ns, unsigned field,
		   const struct pb *body)
{
	struct pb p = {.n = 0};
	if (ns)
		uint_field(&p, PACKET_TIMESTAMP, ns);
	uint_field(&p, PACKET_SEQUENCE_ID, SEQUENCE);
	message_field(&p, field, body);
	struct pb frame = {.n = 0};
	varint(&frame, TRACE_PACKET << 3 | LENGTH);
	varint(&frame, p.n);
	fwrite(frame.buf, 1, frame.n, w->out);
	fwrite(p.buf, 1, p.n, w->out);
}

static void counter_track(struct writer *w, uint64_t uuid, const char *name)
{
	struct pb t = {.n = 0}, c = {.n = 0};
	uint_field(&t, TRACK_UUID, uuid);
	uint_field(&t, TRACK_PARENT, PROCESS);
	string_field(&t, TRACK_NAME, name);
	message_field(&t, TRACK_COUNTER, &c);
	packet(w, 0, PACKET_TRACK_DESCRIPTOR, &t);
}

static void process_track(struct writer *w, const char *name)
{
	struct pb t = {.n = 0}, p = {.n = 0};
	uint_field(&p, PROCESS_PID, (uint64_t)w->pid);
	string_field(&p, PROCESS_NAME, name);
	uint_field(&t, TRACK_UUID, PROCESS);
	message_field(&t, TRACK_PROCESS, &p);
	packet(w, 0, PACKET_TRACK_DESCRIPTOR, &t);
}

/* A thread's track, described before its first event. */
static uint64_t thread_track(struct writer *w, uint32_t tid)
{
	if (!mt_idmap_get(&w->threads, tid + 1ull)) {
		struct pb t = {.n = 0}, th = {.n = 0};
		char name[32];
		snprintf(name, sizeof name, "thread %u", tid);
		uint_field(&th, THREAD_PID, (uint64_t)w->pid);
		uint_field(&th, THREAD_TID, tid);
		string_field(&th, THREAD_NAME, name);
		uint_field(&t, TRACK_UUID, THREAD_TRACK(tid));
		uint_field(&t, TRACK_PARENT, PROCESS);
		message_field(&t, TRACK_THREAD, &th);
		packet(w, 0, PACKET_TRACK_DESCRIPTOR, &t);
		mt_idmap_put(&w->threads, tid + 1ull, (void *)1);
	}
	return THREAD_TRACK(tid);
}

static void counter(struct writer *w, uint64_t ns, uint64_t track, int64_t value)
{
	struct pb e = {.n = 0};
	uint_field(&e, EVENT_TYPE, COUNTER);
	uint_field(&e, EVENT_TRACK, track);
	uint_field(&e, EVENT_COUNTER, (uint64_t)value);
	packet(w, ns, PACKET_TRACK_EVENT, &e);
	w->packets[COUNTER]++;
}

static void annotation(struct pb *e, const char *name, uint64_t v)
{
	struct pb a = {.n = 0};
	string_field(&a, ANNOTATION_NAME, name);
	uint_field(&a, ANNOTATION_UINT, v);
	message_field(e, EVENT_ANNOTATIONS, &a);
}

/* A memory syscall on its thread's track, with its arguments. */
static void syscall_event(struct writer *w, uint64_t ns, uint32_t tid,
			  const char *name, const char *const *arg_names,
			  const uint64_t *args, int nargs)
{
	struct pb e = {.n = 0};
	uint_field(&e, EVENT_TYPE, INSTANT);
	uint_field(&e, EVENT_TRACK, thread_track(w, tid));
	string_field(&e, EVENT_NAME, name);
	for (int i = 0; i < nargs; i++)
		annotation(&e, arg_names[i], args[i]);
	packet(w, ns, PACKET_TRACK_EVENT, &e);
	w->packets[INSTANT]++;
}

static void slice(struct writer *w, uint64_t ns, uint32_t tid, int type,
		  const char *name)
{
	struct pb e = {.n = 0};
	uint_field(&e, EVENT_TYPE, (uint64_t)type);
	uint_field(&e, EVENT_TRACK, thread_track(w, tid));
	if (name)
		string_field(&e, EVENT_NAME, name);
	packet(w, ns, PACKET_TRACK_EVENT, &e);
	w->packets[type]++;
}

/* A first pass: are the kernel's calls there, and which threads are the
 * shim's (their shim_thread events may come after the calls sampled on
 * them, which another thread of it wrote). */
static bool survey(const struct mt_event *e, void *arg)
{
	struct writer *w = arg;
	if (e->tag == MT_EV_KCALL)
		w->kernel_calls = true;
	if (e->tag == MT_EV_THREAD_START && (e->thread_start.tid & MT_SHIM_THREAD) &&
	    !mt_idmap_put(&w->shim, (uint32_t)e->thread_start.tid, (void *)1))
		return false;
	return true;
}

static bool write_event(const struct mt_event *e, void *arg)
{
	struct writer *w = arg;
	uint64_t ns = w->start_ns + e->ns;
	static const char *const kernel_args[] = {"arg0", "arg1", "arg2"};
	static const char *const shim_args[] = {"addr", "len", "arg"};

	switch (e->tag) {
	case MT_EV_HEAP_MOVE:
		if (e->heap_move.from == e->heap_move.to)
			break;
		if (!w->have_base) {
			w->heap_base = e->heap_move.from;
			w->have_base = true;
		}
		counter(w, ns, HEAP, (int64_t)(e->heap_move.to - w->heap_base));
		break;
	case MT_EV_RSS:
		counter(w, ns, ANON, (int64_t)e->rss.anon_bytes);
		counter(w, ns, FILE_BACKED, (int64_t)e->rss.file_bytes);
		counter(w, ns, LIVE, (int64_t)e->rss.live_bytes);
		break;
	case MT_EV_FAULT:
		counter(w, e->page_fault.time_ns, FAULTS, (int64_t)++w->faults);
		break;
	case MT_EV_KCALL: {
		unsigned sys = (unsigned)(e->kernel_call.which & 15);
		if ((e->kernel_call.which >> 4) & 1 || sys >= MT_SYS_COUNT)
			break; /* (the entry has the arguments) */
		if (mt_idmap_get(&w->shim, e->kernel_call.tid))
			break; /* (the shim's own) */
		syscall_event(w, e->kernel_call.time_ns, (uint32_t)e->kernel_call.tid,
			      mt_sys_names[sys], kernel_args, &e->kernel_call.arg0,
			      e->nv - 3);
		break;
	}
	case MT_EV_SYSCALL:
		/* the interposed calls, when the kernel's view is not there */
		if (!w->kernel_calls && e->syscall.entry < MT_CALL_COUNT)
			syscall_event(w, ns, e->tid, mt_call_names[e->syscall.entry],
				      shim_args, &e->syscall.addr, 3);
		break;
	case MT_EV_REGION_NAME: {
		char *name = strndup(e->text, e->text_len);
		void *old = mt_idmap_get(&w->names, e->region_name.id + 1);
		if (name && mt_idmap_put(&w->names, e->region_name.id + 1, name))
			free(old);
		else
			free(name);
		break;
	}
	case MT_EV_REGION_BEGIN: {
		const char *name = mt_idmap_get(&w->names, e->region_begin.id + 1);
		slice(w, ns, e->tid, SLICE_BEGIN, name ? name : "region");
		break;
	}
	case MT_EV_REGION_END:
		slice(w, ns, e->tid, SLICE_END, NULL);
		break;
	}
	return !ferror(w->out);
}

bool mt_export_perfetto(FILE *out, struct mt_trace *t, json_t *summary,
			char *err, size_t errlen)
{
	struct writer w = {.out = out, .start_ns = mt_trace_start_ns(t)};
	w.pid = (long)json_integer_value(json_object_get(summary, "pid"));
	if (!mt_trace_each(t, false, survey, &w, err, errlen)) {
		mt_idmap_free(&w.shim);
		return false;
	}
	json_t *cmd = json_array_get(json_object_get(summary, "command"), 0);
	process_track(&w, json_string_value(cmd) ?: "?");
	counter_track(&w, HEAP, "heap: the program break above its start (bytes)");
	counter_track(&w, ANON, "anonymous resident memory (bytes)");
	counter_track(&w, FILE_BACKED, "file-backed resident memory (bytes)");
	counter_track(&w, LIVE, "live in the heap (bytes)");
	counter_track(&w, FAULTS, "page faults sampled (count)");
	bool ok = mt_trace_each(t, false, write_event, &w, err, errlen);
	for (size_t i = 0; i < w.names.cap; i++)
		free(mt_idmap_at(&w.names, i));
	mt_idmap_free(&w.names);
	mt_idmap_free(&w.threads);
	mt_idmap_free(&w.shim);
	fprintf(stderr, "memtrace: export: %llu counter values, %llu syscalls (%s), "
			"%llu region calls\n",
		(unsigned long long)w.packets[COUNTER],
		(unsigned long long)w.packets[INSTANT],
		w.kernel_calls ? "the kernel's view" : "interposed",
		(unsigned long long)w.packets[SLICE_BEGIN]);
	if (ok && ferror(out))
		ok = mt_read_fail(err, errlen, "writing failed");
	return ok;
}
