/* The events the trace readers give back (native_read.c, ctf_read.c),
 * and what they share. */
#ifndef MEMTRACE_EVENT_H
#define MEMTRACE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtrace/events.h"
#include "memtrace/trace_events.h"

/* One decoded event: its fields as memtrace/trace_events.h lists them,
 * by name (e->alloc.size) or in order (e->v[i], nv of them).  Addresses
 * are absolute, usable sizes whole; `ns` is the time since the first event
 * of the trace. */
struct mt_event {
	int tag;
	uint32_t tid;
	uint64_t ns;
	int nv;
	union {
		uint64_t v[MT_ARRAY_MAX];
#define MT_EV_MEMBER(id, name, wire, ...) struct mt_ev_##name name;
		MT_TRACE_EVENTS(MT_EV_MEMBER)
#undef MT_EV_MEMBER
	};
	const char *text; /* region name, exec path, exit JSON */
	size_t text_len;
};

const char *mt_event_name(int tag);

/* A reader's error into err (errlen bytes); returns false, for `return
 * mt_read_fail(...)`. */
bool mt_read_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A result field as recorded (zigzag). */
static inline int64_t mt_unzigzag_value(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
