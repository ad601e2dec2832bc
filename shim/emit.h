/* Probe, then emit, then sinks: a probe that saw an event (and counted
 * it) hands it to every sink that is on.  One branch when none is.
 *
 *   MT_EMIT(heap_move, t, from, to, 0);
 *
 * (The commonest events on glibc with only the native trace on take a
 * faster way, inline into the trace buffer: probe.h.) */
#ifndef MEMTRACE_EMIT_H
#define MEMTRACE_EMIT_H

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

#endif
