#include <math.h>
#include <string.h>

#include "allocator_waits.h"

/* A quarter less wall time, and 50 ms, as allocator-time asks of CPU. */
#define LESS_BY 0.75
#define LEAST_GAP_S 0.05

/* Has x a finding already on backend b (allocator-time: the CPU said it;
 * a churn: the kernel's work said it)? */
static bool said_on(const struct findings *all, const char *b)
{
	for (size_t i = 0; i < all->n; i++) {
		const struct mt_finding *w = all->at[i];
		if (!w->process && !strcmp(w->backend, b) &&
		    (!strcmp(w->id, "allocator-time") || mt_churn_finding(w->id)))
			return true;
	}
	return false;
}

/* The largest ratio of a backend's median wall time to its least, over
 * the backends but x: how much runs vary by chance, the runs interleaved
 * (x's own spread beyond it is its doing). */
static double wall_noise(const struct mt_bare_times *bare, int nm, int x)
{
	double noise = 1;
	for (int k = 0; k < nm; k++) {
		double least = mt_bare_wall_least(&bare[k]);
		if (k != x && least > 0)
			noise = fmax(noise, mt_bare_wall_median(&bare[k]) / least);
	}
	return noise;
}

/* The most the allocator's calls can keep the threads waiting: each can
 * wait for one of every other thread's, 2 us at most (allocator_time.c's
 * bound), up to 8 threads. */
static double calls_can_wait_s(const struct mt_call_figures *x)
{
	return 2e-6 * fmin(x->threads, 8) * x->allocations;
}

static double cpu_least(const struct mt_bare_times *b)
{
	int i = mt_bare_fastest(b);
	return i < 0 ? 0 : b->cpu_s[i];
}

static bool waits_finding(struct findings *all, const struct measured *mx,
			  const struct mt_call_figures *x,
			  const struct mt_bare_times *bx,
			  const struct mt_bare_times *by, long page_size)
{
	double wall_x = mt_bare_wall_least(bx), wall_y = mt_bare_wall_least(by);
	double cpu_x = cpu_least(bx), cpu_y = cpu_least(by);
	double gap = wall_x - wall_y;
	struct mt_rule_input in = {.backend = bx->backend, .f = x,
				   .page_size = page_size};
	struct mt_finding *a = mt_finding_new("allocator-waits", &in);
	if (!a)
		return false;
	json_t *e = a->evidence;
	json_object_set_new(e, "wall_s", json_real(wall_x));
	json_object_set_new(e, "other_backend", json_string(by->backend));
	json_object_set_new(e, "other_wall_s", json_real(wall_y));
	json_object_set_new(e, "cpu_s", json_real(cpu_x));
	json_object_set_new(e, "other_cpu_s", json_real(cpu_y));
	json_object_set_new(e, "threads", json_real(x->threads));
	json_object_set_new(e, "allocations", json_real(x->allocations));
	json_object_set_new(e, "wall_source", json_string("runs without the shim"));
	snprintf(a->explanation, sizeof a->explanation,
		 "On %s the same command ran in %.3f s, against %.3f s here "
		 "(%.0f%% less wall time; the fastest of each backend's runs "
		 "without the shim, interleaved), with %.3f s of CPU there and "
		 "%.3f s here. Only the allocator changed between the runs: with "
		 "its %.0f threads, the difference is the allocator's doing, its "
		 "code on each of the %.0f allocations and the locks that guard "
		 "its heaps, which a thread allocating takes and one freeing "
		 "blocks another thread allocated takes too, and which the "
		 "threads wait on, asleep in the kernel (futex), where no CPU "
		 "shows it.",
		 by->backend, wall_y, wall_x, 100 * gap / wall_x, cpu_y, cpu_x,
		 x->threads, x->allocations);
	/* (the part no CPU saved can account for: waiting, for sure) */
	double waited = gap - fmax(0, cpu_x - cpu_y);
	json_object_set_new(e, "waited_at_least_s", json_real(fmax(0, waited)));
	if (waited >= 0.25 * gap)
		mt_finding_append(a, " At least %.3f s of the difference is waiting: "
				     "more than the CPU %s saved.",
				  waited, by->backend);
	for (size_t i = 0; i < mx->runs.n; i++) {
		json_t *sites = json_object_get(mx->runs.summaries[i], "sites");
		if (sites) {
			mt_finding_small_sites(a, sites);
			break;
		}
	}
	struct mt_fix *fix = mt_fix_add(a, MT_FIX_BACKEND);
	if (fix) {
		fix->backend = by->backend;
		snprintf(fix->text, sizeof fix->text,
			 "run on %s, measured here: %.3f s of wall time against "
			 "%.3f s (memtrace run --backend %s)",
			 by->backend, wall_y, wall_x, by->backend);
	}
	if (!mt_findings_keep(all, a)) {
		mt_finding_free(a);
		return false;
	}
	return true;
}

bool mt_allocator_waits(struct findings *all, json_t *undecided,
			const struct measured *m, const struct mt_bare_times *bare,
			int nm, long page_size)
{
	if (!bare || nm < 2)
		return true;
	int fastest = -1;
	for (int j = 0; j < nm; j++) {
		/* (two runs a backend at least: one has no spread to weigh) */
		if (m[j].source || bare[j].n < 2)
			return true;
		if (fastest < 0 || mt_bare_wall_least(&bare[j]) <
					   mt_bare_wall_least(&bare[fastest]))
			fastest = j;
	}
	const struct mt_bare_times *by = &bare[fastest];
	double wall_y = mt_bare_wall_least(by), median_y = mt_bare_wall_median(by);
	for (int j = 0; j < nm; j++) {
		struct mt_call_figures x;
		struct mt_cpu_view v;
		double wall_x = mt_bare_wall_least(&bare[j]);
		double noise = wall_noise(bare, nm, j);
		/* a quarter less and 50 ms, the faster backend's median run
		 * faster than every run here, and the ratio of the fastest
		 * runs past the square of the spread (allocator_time.c) */
		if (j == fastest || wall_y > LESS_BY * wall_x ||
		    wall_x - wall_y < LEAST_GAP_S || median_y >= wall_x ||
		    wall_x < wall_y * noise * noise ||
		    said_on(all, m[j].runs.backend) ||
		    !mt_cpu_view_of(&m[j], &bare[j], &x, &v) || x.threads < 2 ||
		    wall_x - wall_y > calls_can_wait_s(&x))
			continue;
		if (!waits_finding(all, &m[j], &x, &bare[j], by, page_size))
			return false;
		/* (its CPU left open by allocator-time is said beside it) */
		for (size_t i = json_array_size(undecided); i-- > 0;) {
			json_t *u = json_array_get(undecided, i);
			if (!strcmp(json_string_value(json_object_get(u, "backend")),
				    m[j].runs.backend))
				json_array_remove(undecided, i);
		}
	}
	return true;
}
