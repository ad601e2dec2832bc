/* The table of trace events (memtrace/trace_events.h), as data. */
#include "memtrace/trace_events.h"

const struct mt_event_kind mt_event_kinds[MT_EV_COUNT] = {
#define MT_KIND(id, nm, w, ...)                                              \
	[MT_EV_##id] = {.name = #nm,                                          \
			.wire = (w),                                          \
			.fields = sizeof(struct mt_ev_##nm) / sizeof(uint64_t),  \
			.field_names = #__VA_ARGS__},
	MT_TRACE_EVENTS(MT_KIND)
#undef MT_KIND
};
