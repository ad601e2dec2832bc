#include "resident.h"

#include <string.h>

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static uint64_t max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Two neighbouring stretches as one: when it began, and the most of each
 * figure in it. */
static void merge(struct mt_resident_point *into,
		  const struct mt_resident_point *a,
		  const struct mt_resident_point *b)
{
	into->time_ms = a->time_ms;
	into->anon_bytes = max(a->anon_bytes, b->anon_bytes);
	into->live_bytes = max(a->live_bytes, b->live_bytes);
	into->program_mapped_bytes =
		max(a->program_mapped_bytes, b->program_mapped_bytes);
	into->live_now = max(a->live_now, b->live_now);
	/* (the most: of the live bytes, the small ones said at least) */
	into->large_live = max(a->large_live, b->large_live);
	into->held = a->held && b->held;
}

/* Did the live bytes hold from the last sample (live_now, without the
 * block whose free took it) to one with `live` (with it)? */
static bool held(const struct mt_resident_series *series, uint64_t live,
		 bool fell)
{
	uint64_t from = series->last_live_now;
	return !fell && live + from / 8 + (2u << 20) >= from;
}

void mt_resident_fold(struct mt_resident_series *series,
		      const struct mt_ev_rss *s, bool fell)
{
	series->samples++;
	/* the stretch from the last sample to this one */
	if (series->n)
		series->p[series->n - 1].held &=
			held(series, s->live_bytes + s->freed_bytes, fell);
	series->last_live_now = s->live_bytes;
	if (s->at_exit) {
		series->ended = true;
		series->exit = *s;
		return;
	}
	series->anon_bytes_max = max(series->anon_bytes_max, s->anon_bytes);
	if (s->large_live_bytes == MT_RESIDENT_UNKNOWN || series->small_live_max == MT_RESIDENT_UNKNOWN)
		series->small_live_max = MT_RESIDENT_UNKNOWN;
	else
		series->small_live_max = max(series->small_live_max,
					     minus(s->live_bytes, s->large_live_bytes));
	/* A sample right after a large free sees the live bytes at a low:
	 * the block was live until then, and counts as live at the sample. */
	struct mt_resident_point point = {s->time_ms, s->anon_bytes,
					  s->live_bytes + s->freed_bytes,
					  s->program_mapped_bytes, s->live_bytes,
					  s->large_live_bytes, true};
	if (!series->per_point)
		series->per_point = 1;
	if (series->n && series->in_last < series->per_point) {
		struct mt_resident_point *last = &series->p[series->n - 1];
		merge(last, last, &point);
		series->in_last++;
		return;
	}
	if (series->n == MT_RESIDENT_POINTS) {
		for (uint32_t i = 0; i < MT_RESIDENT_POINTS / 2; i++)
			merge(&series->p[i], &series->p[2 * i],
			      &series->p[2 * i + 1]);
		series->n = MT_RESIDENT_POINTS / 2;
		series->per_point *= 2;
	}
	series->p[series->n++] = point;
	series->in_last = 1;
}

/* Memory kept at point i, given the most live from it to the end. */
static uint64_t kept_at(const struct mt_resident_point *p, uint64_t later)
{
	return minus(minus(p->anon_bytes, p->program_mapped_bytes), later);
}

/* For how long at least `level` bytes were kept. */
static uint64_t time_kept(const struct mt_resident_series *series,
			 uint64_t end_ms, uint64_t level)
{
	const struct mt_resident_point *p = series->p;
	uint64_t later = series->ended ? series->exit.live_bytes : 0, ms = 0;
	for (uint32_t i = series->n; i-- > 0;) {
		later = max(later, p[i].live_bytes);
		uint64_t until = i + 1 < series->n ? p[i + 1].time_ms : end_ms;
		if (p[i].held && kept_at(&p[i], later) >= level)
			ms += until - p[i].time_ms;
	}
	return ms;
}

/* The most live from point i to the end. */
static uint64_t later_from(const struct mt_resident_series *series, uint32_t i)
{
	uint64_t later = series->ended ? series->exit.live_bytes : 0;
	for (uint32_t j = i; j < series->n; j++)
		later = max(later, series->p[j].live_bytes);
	return later;
}

/* The point that kept the most in the longest stretch of held points
 * that kept `level` or more (level 0: in the whole run).  Not simply the
 * point that kept the most: a teardown keeps the most, for a moment, with
 * no block left live to tell what pinned the memory while it was paid
 * for. */
static uint32_t worst_point(const struct mt_resident_series *series,
			    uint64_t end_ms, uint64_t level)
{
	const struct mt_resident_point *p = series->p;
	uint64_t later = series->ended ? series->exit.live_bytes : 0;
	uint64_t run_ms = 0, best_ms = 0, run_kept = 0, most = 0;
	uint32_t run_worst = series->n - 1, worst = series->n - 1;
	for (uint32_t i = series->n; i-- > 0;) {
		later = max(later, p[i].live_bytes);
		uint64_t kept = kept_at(&p[i], later);
		uint64_t until = i + 1 < series->n ? p[i + 1].time_ms : end_ms;
		if (!level) {
			if (kept > most || i == series->n - 1)
				most = kept, worst = i;
			continue;
		}
		if (!p[i].held || kept < level) {
			run_ms = 0;
			continue;
		}
		if (!run_ms || kept > run_kept)
			run_kept = kept, run_worst = i;
		run_ms += max(until - p[i].time_ms, 1);
		if (run_ms > best_ms)
			best_ms = run_ms, worst = run_worst;
	}
	return worst;
}

void mt_resident_figures(const struct mt_resident_series *series,
			 struct mt_resident *out)
{
	memset(out, 0, sizeof *out);
	out->samples = series->samples;
	out->anon_bytes_max = series->anon_bytes_max;
	out->small_live_bytes_max = series->samples ? series->small_live_max
						    : MT_RESIDENT_UNKNOWN;
	if (series->ended) {
		out->anon_bytes_exit = series->exit.anon_bytes;
		out->live_bytes_exit = series->exit.live_bytes;
	}
	uint32_t n = series->n;
	if (!n)
		return;
	const struct mt_resident_point *p = series->p;
	uint64_t end_ms = series->ended ? max(series->exit.time_ms,
					      p[n - 1].time_ms)
					: p[n - 1].time_ms;
	out->sampled_ms = end_ms - p[0].time_ms;

	/* The most kept at any point bounds the search below. */
	uint64_t later = series->ended ? series->exit.live_bytes : 0, most = 0;
	for (uint32_t i = n; i-- > 0;) {
		later = max(later, p[i].live_bytes);
		most = max(most, kept_at(&p[i], later));
	}
	/* The most memory kept for a fifth of the time: the time kept at or
	 * above a level falls as the level rises, so a bisection finds it,
	 * without memory of its own (this runs at exit, on any stack). */
	uint64_t lo = 0, hi = most;
	uint64_t need = (uint64_t)(MT_KEPT_SUSTAINED_SHARE * (double)out->sampled_ms);
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (time_kept(series, end_ms, mid) >= need && need > 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	/* For how long, and where, about that much was kept: within a 64th
	 * of it (a page the program or the shim touches mid-way steps the
	 * memory kept up by 4 KiB, and a record table kept for a second was
	 * "kept for 0.36 s" at the step's level: a test that failed 2 runs
	 * in 4 on a busy machine, 2026-11-27) */
	uint64_t about = lo - lo / 64;
	uint32_t worst = worst_point(series, end_ms, about);
	later = later_from(series, worst);
	out->kept_bytes_max = kept_at(&p[worst], later);
	out->anon_bytes_at_kept_max = p[worst].anon_bytes;
	out->live_bytes_later = later;
	out->program_mapped_at_kept_max = p[worst].program_mapped_bytes;
	out->live_bytes_at_kept_max = p[worst].live_now;
	out->large_live_bytes_at_kept_max = p[worst].large_live;
	out->kept_bytes_sustained = lo;
	out->kept_ms = lo ? time_kept(series, end_ms, about) : 0;
}
