#include <stddef.h>

#include "block_sizes.h"
#include "mode.h"

const struct mt_sink *mt_sinks[MT_SINK_COUNT];
bool mt_tracing;
bool mt_glibc_chunks;
bool mt_glibc_fills_blocks;
unsigned char mt_fast;

void mt_fast_update(void)
{
	bool native = __atomic_load_n(&mt_sinks[MT_SINK_TRACE], __ATOMIC_RELAXED);
	bool lttng = __atomic_load_n(&mt_sinks[MT_SINK_LTTNG], __ATOMIC_RELAXED);
	unsigned char fast = mt_glibc_chunks ? MT_FAST_GLIBC : MT_FAST_OTHER;
	/* The tracing fast path writes native events inline; LTTng's go
	 * through the slow path. */
	if (native || lttng)
		fast = lttng		     ? MT_FAST_NONE
		       : mt_glibc_chunks    ? MT_FAST_GLIBC_TRACING
		       : mt_block_sizes_on ? MT_FAST_OTHER_TRACING
					    : MT_FAST_NONE;
	__atomic_store_n(&mt_tracing, native || lttng, __ATOMIC_RELAXED);
	__atomic_store_n(&mt_fast, fast, __ATOMIC_RELAXED);
}

void mt_sink_on(enum mt_sink_id id, const struct mt_sink *sink)
{
	__atomic_store_n(&mt_sinks[id], sink, __ATOMIC_RELAXED);
	mt_fast_update();
}

bool mt_sink_off(enum mt_sink_id id)
{
	if (!__atomic_exchange_n(&mt_sinks[id], NULL, __ATOMIC_RELAXED))
		return false;
	mt_fast_update();
	return true;
}
