#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "memory_peak.h"

/* How far apart, to be said: twice the other backend's peak, 64 MiB more,
 * and three times the live bytes' peak (8 threads of small records:
 * jemalloc 772 MiB resident for 122 MiB live, glibc 160 MiB; nothing was
 * said, the memory held for less than memory-kept weighs; new-user trial
 * 31). */
#define OVER_OTHER 2.0
#define OVER_OTHER_BYTES (64.0 * 1024 * 1024)
#define OVER_LIVE 3.0

/* A backend's peak resident memory: the least of its runs', each the
 * command's own process (VmHWM, under the shim: its own few MiB on every
 * backend alike).  Not the runs without the shim, whose ru_maxrss is the
 * largest of the process and its children: a forked child's 605 MiB was
 * said of a parent of 3.6 MB, and of `sh -c` (new-user trial 33). */
static double peak_rss(const struct measured *m)
{
	double least = 0;
	for (size_t i = 0; i < m->runs.n; i++) {
		json_t *v = json_object_get(m->runs.summaries[i], "peak_rss_bytes");
		double rss = json_number_value(v);
		if (json_is_number(v) && rss > 0 && (least == 0 || rss < least))
			least = rss;
	}
	return least;
}

/* The most the program had live at once, over the backend's runs. */
static double peak_live(const struct measured *m)
{
	double most = 0;
	for (size_t i = 0; i < m->runs.n; i++)
		most = fmax(most, json_number_value(json_object_get(
			json_object_get(m->runs.summaries[i], "bytes"), "peak_live")));
	return most;
}

/* A finding of memory kept on that backend says it already. */
static bool kept_said(const struct findings *all, const char *backend)
{
	for (size_t i = 0; i < all->n; i++)
		if (!strcmp(all->at[i]->id, "memory-kept") &&
		    !strcmp(all->at[i]->backend, backend) && !all->at[i]->process)
			return true;
	return false;
}

bool mt_memory_peak(struct findings *all, const struct measured *m,
		    const struct mt_bare_times *bare, int nm, long page_size)
{
	double rss[16], live[16];
	int n = 0, least = -1;
	for (int j = 0; j < nm && j < 16; j++, n++) {
		if (m[j].source || !m[j].runs.n)
			return true; /* read from files: no runs of the same command */
		rss[j] = peak_rss(&m[j]);
		live[j] = peak_live(&m[j]);
		if (rss[j] > 0 && (least < 0 || rss[j] < rss[least]))
			least = j;
	}
	if (n < 2 || least < 0)
		return true;
	for (int j = 0; j < n; j++) {
		if (j == least || rss[j] < OVER_OTHER * rss[least] ||
		    rss[j] - rss[least] < OVER_OTHER_BYTES || live[j] <= 0 ||
		    rss[j] < OVER_LIVE * live[j] || kept_said(all, m[j].runs.backend))
			continue;
		struct mt_call_figures f;
		if (!mt_figures_of(m[j].runs.summaries[0], MT_WHOLE_PROGRAM, &f))
			continue;
		struct mt_rule_input in = {.backend = m[j].runs.backend, .f = &f,
					   .page_size = page_size};
		struct mt_finding *x = mt_finding_new("memory-peak", &in);
		if (!x)
			return false;
		const char *other = m[least].runs.backend;
		json_t *e = x->evidence;
		json_object_set_new(e, "peak_rss_bytes", json_real(rss[j]));
		json_object_set_new(e, "peak_live_bytes", json_real(live[j]));
		json_object_set_new(e, "other_backend", json_string(other));
		json_object_set_new(e, "other_peak_rss_bytes", json_real(rss[least]));
		json_object_set_new(e, "rss_source",
				    json_string("the command's own process, under the shim"));
		char b1[32], b2[32], b3[32];
		snprintf(x->explanation, sizeof x->explanation,
			 "On %s the process held %s resident at its peak, %.1f "
			 "times the %s it ever had live at once; on %s the same "
			 "command peaked at %s (the least of each backend's "
			 "runs, the command's own process). The rest is the "
			 "allocator's own keeping: memory the program freed that "
			 "it holds for reuse or has not given back yet, its "
			 "caches and the free room in its arenas. However long "
			 "it holds it, it is the peak a machine must have room "
			 "for, and what a process is killed for when memory "
			 "runs out.",
			 m[j].runs.backend, mt_format_bytes(rss[j], b1, sizeof b1),
			 rss[j] / live[j], mt_format_bytes(live[j], b2, sizeof b2),
			 other, mt_format_bytes(rss[least], b3, sizeof b3));
		/* (and its time: the backend of less memory took twice the
		 * CPU in new-user trial 33) */
		double t_here = 0, t_other = 0;
		char times[160] = "";
		if (mt_measured_on(m, bare, nm, m[j].runs.backend, &t_here) &&
		    mt_measured_on(m, bare, nm, other, &t_other) && t_here > 0)
			snprintf(times, sizeof times, "; its CPU time %.3f s against "
						      "%.3f s here",
				 t_other, t_here);
		struct mt_fix *fix = mt_fix_add(x, MT_FIX_BACKEND);
		if (fix) {
			fix->backend = other;
			snprintf(fix->text, sizeof fix->text,
				 "run on %s, measured here: %s at its peak against "
				 "%s%s (memtrace run --backend %s)",
				 other, b3, b1, times, other);
		}
		if (!mt_findings_keep(all, x)) {
			mt_finding_free(x);
			return false;
		}
	}
	return true;
}
