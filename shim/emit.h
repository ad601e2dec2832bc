/* Probe, then emit, then sinks: a probe that saw an event (and counted
 * it) hands it to every sink that is on.  One branch when none is.
 *
 *   MT_EMIT(heap_move, t, from, to, 0);
 *
 * (The commonest events on glibc with only the native trace on take a
 * faster way, inline into the trace buffer: probe.h.) */
#ifndef MEMTRACE_EMIT_H
#define MEMTRACE_EMIT_H

#include "memtrace/trace_events.h"
#include "mode.h"
#include "sink.h"

#define MT_EMIT(event, ...)                                                  \
	do {                                                                 \
		if (__builtin_expect(!mt_tracing, 1))                        \
			break;                                               \
		for (int i_ = 0; i_ < MT_SINK_COUNT; i_++) {                 \
			const struct mt_sink *s_ = __atomic_load_n(          \
				&mt_sinks[i_], __ATOMIC_RELAXED);            \
			if (s_ && s_->event)                                 \
				s_->event(__VA_ARGS__);                      \
		}                                                            \
	} while (0)

/* An event of the table by name, its fields by name:
 *
 *   MT_EMIT_EVENT(t, rss, .anon_bytes = a, .file_bytes = f);
 *
 * (fields left out are 0; the compiler checks the names). */
#define MT_EMIT_EVENT(t, name, ...)                                          \
	do {                                                                 \
		_Static_assert(MT_WIRE_OF_##name ==                          \
				       sizeof(struct mt_ev_##name) / 8,      \
			       "an event of varints");                       \
		const struct mt_ev_##name f_ = {__VA_ARGS__};                \
		MT_EMIT(event, t, MT_TAG_##name, (const uint64_t *)&f_,      \
			sizeof f_ / sizeof(uint64_t));                       \
	} while (0)

#endif
