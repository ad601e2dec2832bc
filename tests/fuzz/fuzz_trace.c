/* libFuzzer target for the trace reader: any bytes must give events or a
 * clean error, never a crash, a leak or undefined behaviour (built with
 * ASan and UBSan).  Replays into a summary too, with and without salvage. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "replay_json.h"
#include "trace_read.h"

static bool count(const struct mt_event *e, void *arg)
{
	(void)e;
	++*(size_t *)arg;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	for (int salvage = 0; salvage < 2; salvage++) {
		struct mt_trace *t = mt_trace_from_memory(data, size, err, sizeof err);
		if (!t)
			return 0;
		size_t n = 0;
		mt_trace_each(t, salvage, count, &n, err, sizeof err);
		free(mt_replay_summary(t, salvage, err, sizeof err));
		mt_trace_close(t);
	}
	return 0;
}
