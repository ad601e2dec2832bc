#include "counters.h"

void mt_counters_add(struct mt_counters *dst, const struct mt_counters *src)
{
	/* The struct is nothing but uint64_t fields: sum it as an array. */
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	size_t n = sizeof *dst / sizeof(uint64_t);

	_Static_assert(sizeof(struct mt_counters) % sizeof(uint64_t) == 0,
		       "mt_counters holds only uint64_t fields");
	for (size_t i = 0; i < n; i++)
		d[i] += __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}
