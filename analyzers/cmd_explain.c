#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "explain.h"
#include "fault_cost.h"
#include "measure.h"
#include "replay_json.h"
#include "rules/rules.h"
#include "allocator_time.h"
#include "allocator_waits.h"
#include "memory_peak.h"
#include "bare_times.h"
#include "children_alike.h"
#include "explain_runs.h"
#include "runs.h"
#include "shared_env.h"
#include "shim_cost.h"
#include "sites.h"
#include "symbolize.h"
#include "trace_family.h"

static const char usage[] =
	"usage: memtrace explain [--backend B[,B...]] [--repeat N] [--verify] "
	"[--json] [-o FILE]\n"
	"                        [--pid PID[.N]] [--salvage] (TRACE|SUMMARY.json... | -- CMD ARGS...)\n"
	"\n"
	"Finds what the allocator and the kernel cost a program, region by\n"
	"region, and says why, with the measured figures: heap-trim-churn,\n"
	"thread-heap-churn, mmap-churn, purge-churn, memory-kept, temporaries,\n"
	"threshold, first-touch, and with several backends allocator-time.\n"
	"The command's runs write their output to /dev/null (memtrace run\n"
	"shows it); where CMD exits with a status other than 0, measured all\n"
	"the same, that is explain's exit status too.  Each\n"
	"finding lists fixes; --verify runs CMD again with each one and reports\n"
	"what it changed.  Reads traces (MEMTRACE_OUT, or the directory of an\n"
	"LTTng trace) or summaries (MEMTRACE_SUMMARY), or runs CMD under each\n"
	"backend.\n"
	"\n"
	"  -b, --backend LIST  backends to run CMD on (default: glibc; also\n"
	"                      --backends, as compare spells it)\n"
	"  -r, --repeat N      runs per backend and per fix (default 3)\n"
	"  -v, --verify        try each fix (needs CMD)\n"
	"  -j, --json          {\"findings\": [...]} instead of text\n"
	"  -o, --output FILE   write there instead of stdout\n"
	"  -p, --pid PID[.N]   the process of an LTTng trace to read (default:\n"
	"                      the first one started); .N: its image after N\n"
	"                      execs\n"
	"  -s, --salvage       with a TRACE: skip damaged chunks and read the\n"
	"                      rest (the figures then say they are partial)\n"
	"  -h, --help          this text\n";

enum { MAX_RUNS = 32 };

struct context {
	char **argv; /* CMD, or NULL when reading summaries */
	long repeat;
	int devnull;
	bool python;
};


/* The shim's CPU on a backend measured: its fastest run's CPU less the
 * fastest run's without it, where explain made those (several backends),
 * and *spread, how far either side's median run is from its fastest; a
 * negative value where it did not.  The estimate (calls times a tight
 * loop's cost a call) misses what a program whose blocks are cold in the
 * cache feels: two threads replacing 12M records at random, estimated
 * 0.041 s, measured 0.21 s (new-user trial 20). */
static double shim_measured_s(const struct measured *m,
			      const struct mt_bare_times *bare, double *spread,
			      double *bare_cpu_s)
{
	struct mt_call_figures fastest; /* (under the shim) */
	struct mt_cpu_view under, without;
	*spread = 0;
	*bare_cpu_s = 0;
	if (!bare || !bare->n || !mt_cpu_view_of(m, NULL, &fastest, &under) ||
	    !mt_cpu_view_of(m, bare, &fastest, &without))
		return -1;
	/* (one run a side: no spread to tell, not one of 0.000 s) */
	*spread = m->runs.n < 2 && bare->n < 2
			  ? -1
			  : fmax(without.median - without.least,
				 under.median - under.least);
	*bare_cpu_s = without.least;
	return fmax(0, fastest.user_s + fastest.system_s - without.least);
}

/* A backend's runs whose system time differed twice over, by a tenth of
 * the CPU or more (and 50 ms), where the faults did not: the kernel's work
 * is what moved (huge pages compacted or not, the machine's other work),
 * and the time figures of one run can be off by as much (a NumPy program
 * of 64 MB temporaries: 0.26 to 1.01 s of system time with the same
 * 19,985 faults, bare; new-user trial 34).  Said, or (list) added. */
static void system_time_differs(FILE *out, json_t *list, const struct measured *m)
{
	double lo = -1, hi = -1, cpu = 0, flo = -1, fhi = -1;
	for (size_t k = 0; k < m->runs.n; k++) {
		json_t *c = json_object_get(m->runs.summaries[k], "cpu_s");
		json_t *pf = json_object_get(m->runs.summaries[k], "page_faults");
		if (!c || !pf)
			return;
		double sys = json_number_value(json_object_get(c, "system"));
		double f = json_number_value(json_object_get(pf, "minor")) +
			   json_number_value(json_object_get(pf, "major"));
		lo = lo < 0 || sys < lo ? sys : lo;
		hi = sys > hi ? sys : hi;
		flo = flo < 0 || f < flo ? f : flo;
		fhi = f > fhi ? f : fhi;
		cpu = fmax(cpu, sys + json_number_value(json_object_get(c, "user")));
	}
	if (m->runs.n < 2 || hi < 2 * lo || hi - lo < fmax(0.1 * cpu, 0.05) ||
	    fhi > 1.25 * flo)
		return;
	if (list) {
		json_array_append_new(list, json_pack(
			"{s:s, s:f, s:f, s:f, s:f, s:I}", "backend", m->runs.backend,
			"system_s_min", lo, "system_s_max", hi, "page_faults_min", flo,
			"page_faults_max", fhi, "runs", (json_int_t)m->runs.n));
		return;
	}
	fprintf(out, "the runs on %s differed in system time, %.2f to %.2f s, "
		     "with about the same page faults (%.0f to %.0f): the "
		     "kernel's work for the same run varied (huge pages "
		     "compacted or not, the machine's other work), and a time "
		     "figure below, the median run's, may be off by as much "
		     "(more runs, --repeat, tell how often)\n",
		m->runs.backend, lo, hi, flo, fhi);
}

/* Runs of one backend whose page faults differ threefold and by 10,000 or
 * more: the program does not do its work the same way each time (threads
 * racing, its input, chance), and the findings are those of the median
 * run.  A producer and a consumer thread passing 1 MiB blocks churned in
 * four runs of six, and in one read "first-touch only, nothing to fix"
 * (6k faults against 284k; new-user trial 28).  A line each, or (json)
 * an array. */
static json_t *runs_differ(FILE *out, const struct measured *m, int nm)
{
	json_t *list = out ? NULL : json_array();
	for (int i = 0; i < nm; i++) {
		double lo = -1, hi = -1;
		for (size_t k = 0; k < m[i].runs.n; k++) {
			json_t *pf = json_object_get(m[i].runs.summaries[k], "page_faults");
			if (!pf)
				continue;
			double f = json_number_value(json_object_get(pf, "minor")) +
				   json_number_value(json_object_get(pf, "major"));
			lo = lo < 0 || f < lo ? f : lo;
			hi = f > hi ? f : hi;
		}
		system_time_differs(out, list, &m[i]);
		if (m[i].runs.n < 2 || lo < 0 || hi < 3 * lo || hi - lo < 10000)
			continue;
		if (list) {
			json_array_append_new(list, json_pack(
				"{s:s, s:f, s:f, s:I}", "backend", m[i].runs.backend,
				"page_faults_min", lo, "page_faults_max", hi, "runs",
				(json_int_t)m[i].runs.n));
			continue;
		}
		fprintf(out, "the runs on %s differed: %.0f to %.0f page faults in "
			     "%zu runs; the program does not do its work the same way "
			     "each time (threads racing, its input, chance), and the "
			     "findings are the median run's: explain again, or with "
			     "more runs (--repeat), to see how often each holds\n",
			m[i].runs.backend, lo, hi, m[i].runs.n);
	}
	return list;
}

/* Were the whole run's time, CPU and faults measured (at exit, or to a
 * killed process's last progress record)? */
static bool whole_program_measured(const struct measured *m)
{
	return m->runs.n &&
	       !json_is_null(json_object_get(m->runs.summaries[0], "wall_s"));
}

static bool huge_pages(const struct mt_call_figures *f);

/* The backends no finding is about (the command's own process; one
 * --verify refuted is about it too, and says so below): each
 * said, with what its runs measured, so that a reader of four backends
 * sees the one with nothing to say was looked at (new-user trial 34: a
 * backend with 3.5x the faults of another, below every rule's bar, had
 * no line at all).  A line each after the findings, or (json) an array. */
static json_t *quiet_backends(FILE *out, const struct measured *m, int nm,
			      struct mt_finding *const *found, size_t n)
{
	json_t *list = out ? NULL : json_array();
	double page = (double)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < nm; i++) {
		const char *backend = m[i].runs.backend;
		bool said = false;
		for (size_t k = 0; k < n && !said; k++)
			said = !found[k]->process && !strcmp(found[k]->backend, backend);
		struct mt_call_figures f;
		/* (a recording killed with no figures of its run: nothing
		 * measured to say, not "0 page faults") */
		if (said || !whole_program_measured(&m[i]) ||
		    !mt_runs_figures(&m[i].runs, MT_WHOLE_PROGRAM, &f))
			continue;
		double cpu = f.user_s + f.system_s, resident = f.peak_rss / page;
		if (list) {
			json_array_append_new(list, json_pack(
				"{s:s, s:f, s:f, s:f, s:f}", "backend", backend,
				"page_faults", f.faults, "peak_resident_pages", resident,
				"system_s", f.system_s, "cpu_s", cpu));
			continue;
		}
		/* (the kernel's time that is not memory's, said as
		 * first-touch says it: a run writing files, 0.57 s of its
		 * 0.63 s of CPU in the kernel) */
		char other[512] = "";
		mt_other_system_time(other + 1, sizeof other - 1, &f,
				     2 * mt_fault_cost_s(huge_pages(&f)));
		if (other[1])
			other[0] = ' ';
		fprintf(out, "\n[no finding] backend %s\n  The run took %.0f page "
			     "faults (the most pages it had resident at once: %.0f) "
			     "and %.2f s of system time in %.2f s of CPU; no rule "
			     "found a cost of the allocator in it worth a change.%s\n",
			backend, f.faults, resident, f.system_s, cpu, other);
	}
	return list;
}

/* "N findings", and how many of them are minor churns: findings the text
 * says are below the bar ("2 findings" read as two things to fix where
 * one was "minor"; new-user trial 47). */
static void count_findings(char *out, size_t size, size_t real, size_t minor)
{
	int at = snprintf(out, size, "%zu finding%s", real, real == 1 ? "" : "s");
	if (!minor || at < 0 || (size_t)at >= size)
		return;
	if (real == 1)
		snprintf(out + at, size - (size_t)at, ", minor");
	else if (minor == real)
		snprintf(out + at, size - (size_t)at, ", all minor");
	else
		snprintf(out + at, size - (size_t)at, ", %zu of them minor", minor);
}

/* Whether the shim's cost measured moved a backend's figures, where
 * explain measured it (common/shim_cost.h). */
static bool measured_moved(const struct measured *m, double measured,
			   double spread, double bare_cpu_s)
{
	return measured >= 0 &&
	       mt_shim_cost_measured_moved(measured, spread, (unsigned)m->runs.n,
					   bare_cpu_s);
}

/* The shim's estimated time in the processes the command started (of its
 * first run), and their CPU time: a fork's workers may do all the work,
 * and the parent's line alone said 0.001 s of 0.002 (new-user trial
 * 49).  False where none has an estimate. */
static bool children_shim_cost(const struct measured *m, double *shim_s,
			       double *cpu_s)
{
	size_t i;
	json_t *c;
	*shim_s = *cpu_s = 0;
	bool any = false;
	json_array_foreach(m->runs.children, i, c) {
		struct mt_call_figures cf;
		if (!mt_figures_of(c, MT_WHOLE_PROGRAM, &cf) || !cf.shim_known)
			continue;
		*shim_s += cf.shim_s;
		*cpu_s += cf.user_s + cf.system_s;
		any = true;
	}
	return any;
}

/* One run's line of the shim's cost, or (`row`) its row of the table
 * several backends make: a line of 400 characters a backend, each saying
 * the same words again, read as a wall (new-user trial 38). */
static void shim_cost_text(FILE *out, const struct measured *m,
			   const struct mt_call_figures *f, double measured,
			   double spread, double bare_cpu_s, bool row)
{
	bool children = json_array_size(m->runs.children) > 0;
	double cpu = f->user_s + f->system_s, their_shim_s, their_cpu_s;
	char theirs[128] = "";
	if (children_shim_cost(m, &their_shim_s, &their_cpu_s))
		snprintf(theirs, sizeof theirs,
			 " (the %zu process%s it started: %.3f s, %.1f%% of "
			 "%s %.3f s)",
			 json_array_size(m->runs.children),
			 json_array_size(m->runs.children) > 1 ? "es" : "",
			 their_shim_s,
			 their_cpu_s > 0 ? 100 * their_shim_s / their_cpu_s : 0,
			 json_array_size(m->runs.children) > 1 ? "their" : "its",
			 their_cpu_s);
	const char *moved =
		mt_shim_cost_moved(f->shim_share, f->shim_s)
			? ": it may have moved the figures measured under it "
			  "(time, faults)"
		: measured_moved(m, measured, spread, bare_cpu_s)
			? ": as measured, it may have moved the times measured "
			  "under it, past its estimate (its work on blocks cold "
			  "in the cache, or a machine busy with other work: "
			  "rerun to tell)"
			: "";
	if (row) {
		fprintf(out, "  %-9s %.3f s, %.1f%% of %s%.3f s of cpu%s", m->runs.backend,
			f->shim_s, 100 * f->shim_share,
			children ? "its own process's " : "", cpu, theirs);
		if (measured >= 0 && spread >= 0)
			fprintf(out, "; measured %.3f s, where the runs vary by %.3f s",
				measured, spread);
		else if (measured >= 0)
			fprintf(out, "; measured %.3f s, from one run each (how "
				     "much runs vary is not known)",
				measured);
		fprintf(out, "%s\n", moved);
		return;
	}
	fprintf(out, "shim's own time on %s (estimate from measured "
		     "costs): %.3f s, %.1f%% of the %s %.3f s of cpu%s",
		m->runs.backend, f->shim_s, 100 * f->shim_share,
		children ? "command's own process's" : "run's", cpu,
		theirs[0] ? theirs
		: children ? " (the processes it started are measured apart)" : "");
	/* (what the two figures mean for the findings: an estimate of
	 * 0.039 s beside 0.226 s measured, and "it may have moved the
	 * figures", left a reader unsure which to trust; new-user trial 37) */
	if (measured >= 0) {
		fprintf(out, "; measured against the runs without "
			     "it (the fastest of each), %.3f s, ",
			measured);
		if (spread >= 0)
			fprintf(out, "where the runs vary by %.3f s", spread);
		else
			fprintf(out, "from one run each (how much runs vary is "
				     "not known)");
		fprintf(out, "; backends are compared, and fixes judged, on "
			     "the runs without it");
	}
	fprintf(out, "%s\n", moved);
}

/* What the shim cost each run read or made, estimated (figures.h), and
 * measured where explain ran the command without it, beside the run's
 * CPU time: a line, a table of several backends, or (json) an array. */
static json_t *shim_costs(FILE *out, const struct measured *m,
			  const struct mt_bare_times *bare, int nm)
{
	json_t *list = out ? NULL : json_array();
	int rows = 0;
	bool any_measured = false, children = false;
	for (int i = 0; i < nm; i++) {
		struct mt_call_figures f;
		if (!mt_runs_figures(&m[i].runs, MT_WHOLE_PROGRAM, &f) || !f.shim_known)
			continue;
		double spread, bare_cpu;
		rows++;
		any_measured |= shim_measured_s(&m[i], bare ? &bare[i] : NULL,
						&spread, &bare_cpu) >= 0;
		children |= json_array_size(m[i].runs.children) > 0;
	}
	if (out && rows > 1)
		fprintf(out, "shim's own time (estimate from measured costs%s)%s:\n",
			any_measured ? "; measured: its fastest run's CPU less "
				       "the fastest run's without it; backends "
				       "are compared, and fixes judged, on the "
				       "runs without it"
				     : "",
			children ? ", the processes the command started "
				   "measured apart"
				 : "");
	for (int i = 0; i < nm; i++) {
		struct mt_call_figures f;
		if (!mt_runs_figures(&m[i].runs, MT_WHOLE_PROGRAM, &f) ||
		    !f.shim_known)
			continue;
		double spread, bare_cpu;
		double measured = shim_measured_s(&m[i], bare ? &bare[i] : NULL,
						  &spread, &bare_cpu);
		if (!list) {
			shim_cost_text(out, &m[i], &f, measured, spread, bare_cpu,
				       rows > 1);
			continue;
		}
		json_t *o = json_pack("{s:s, s:f, s:f, s:f}", "backend",
				      m[i].runs.backend, "estimated_s", f.shim_s,
				      "cpu_s", f.user_s + f.system_s,
				      "share_of_run", f.shim_share);
		if (measured >= 0) {
			json_object_set_new(o, "measured_s", json_real(measured));
			json_object_set_new(o, "runs_spread_s",
					    spread >= 0 ? json_real(spread) : json_null());
		}
		double their_shim_s, their_cpu_s;
		if (children_shim_cost(&m[i], &their_shim_s, &their_cpu_s)) {
			json_object_set_new(o, "children_estimated_s", json_real(their_shim_s));
			json_object_set_new(o, "children_cpu_s", json_real(their_cpu_s));
		}
		json_object_set_new(o, "moved_figures",
				    json_boolean(mt_shim_cost_moved(f.shim_share, f.shim_s) ||
						 measured_moved(&m[i], measured, spread,
								bare_cpu)));
		json_array_append_new(list, o);
	}
	return list;
}

/* The runs without the shim that allocator-time compared: each run's
 * CPU and user time per backend, so a reader sees what it weighed. */
static json_t *bare_runs_json(const struct mt_bare_times *bare, int nm)
{
	json_t *list = json_array();
	for (int i = 0; i < nm; i++) {
		json_t *cpu = json_array(), *user = json_array(), *wall = json_array();
		for (size_t k = 0; k < bare[i].n; k++) {
			json_array_append_new(cpu, json_real(bare[i].cpu_s[k]));
			json_array_append_new(user, json_real(bare[i].user_s[k]));
			json_array_append_new(wall, json_real(bare[i].wall_s[k]));
		}
		json_array_append_new(list, json_pack("{s:s, s:o, s:o, s:o}", "backend",
						      bare[i].backend, "cpu_s",
						      cpu, "user_s", user, "wall_s", wall));
	}
	return list;
}

/* The findings, as many as the rules make. */
static bool is_python(char **argv)
{
	return argv && strstr(argv[0], "python") != NULL;
}

/* The sites of m's runs, and of their children's, named. */
static void symbolize_runs(struct measured *m)
{
	for (size_t i = 0; i < m->runs.n; i++)
		mt_sites_symbolize(m->runs.summaries[i]);
	size_t i;
	json_t *child;
	json_array_foreach(m->runs.children, i, child)
		mt_sites_symbolize(child);
}

/* Run CMD `repeat` times under backend with an extra setting. */
static bool measure_runs(const struct context *cx, const char *backend,
			 const char *setting, struct measured *out)
{
	out->runs = (struct mt_runs){.backend = backend};
	mt_runs_repeat(&out->runs, 1, cx->repeat, cx->argv, setting, cx->devnull,
		       "explain", false);
	symbolize_runs(out);
	return out->runs.n > 0;
}

/* The n backends' runs under the shim and, with several, without it
 * (what allocator-time compares, and the shim's cost measured: *bare),
 * interleaved run by run, each backend's bare run right after its run
 * under the shim: a slow spell of the machine falls on every backend and
 * on both sides alike (in two phases, the shim's cost measured drifted
 * from 0 to 0.85 s against an estimate of 0.02 s; new-user trial 40).
 * The backends none of whose runs succeeded are left out.  Returns how
 * many are left. */
static int measure_interleaved(const struct context *cx, struct measured *m,
			       int n, struct mt_bare_times **bare)
{
	*bare = n > 1 ? calloc((size_t)n, sizeof **bare) : NULL;
	for (int i = 0; i < n && *bare; i++)
		(*bare)[i].backend = m[i].runs.backend;
	for (long r = 0; r < cx->repeat; r++)
		for (int i = 0; i < n; i++) {
			mt_runs_repeat(&m[i].runs, 1, 1, cx->argv, NULL,
				       cx->devnull, "explain", false);
			if (*bare)
				mt_bare_repeat(&(*bare)[i], 1, 1, cx->argv,
					       mt_runs_command_ending(),
					       cx->devnull);
		}
	int kept = 0;
	for (int i = 0; i < n; i++) {
		if (!m[i].runs.n)
			continue;
		symbolize_runs(&m[i]);
		m[kept] = m[i];
		if (*bare)
			(*bare)[kept] = (*bare)[i];
		kept++;
	}
	return kept;
}

/* A partial trace's whole-program figures (time, CPU, faults) are only
 * known at exit: no finding rests on figures that are not there. */
static bool whole_program_recorded(const struct measured *m, const char *region)
{
	if (strcmp(region, MT_WHOLE_PROGRAM) != 0 || whole_program_measured(m))
		return true;
	fprintf(stderr, "memtrace: explain: %s: the whole program is not analyzed: "
			"its time, CPU and page faults are only known at exit, which "
			"this recording lacks (%s); regions (memtrace_begin/end) are "
			"measured call by call\n",
		m->source ? m->source : m->runs.backend, m->partial ? m->partial : "");
	return false;
}

static bool is_churn(const char *id)
{
	size_t len = strlen(id);
	return len > 6 && !strcmp(id + len - 6, "-churn");
}

static const char *const glibc_prefix = "GLIBC_TUNABLES=";

/* The GLIBC_TUNABLES fix of x, or NULL. */
static const char *glibc_setting(const struct mt_finding *x)
{
	for (int k = 0; k < x->nfixes; k++)
		if (x->fixes[k].kind == MT_FIX_SETTING &&
		    !strncmp(x->fixes[k].setting, glibc_prefix, strlen(glibc_prefix)))
			return x->fixes[k].setting;
	return NULL;
}

/* One glibc setting for a process: the one a churn finding proposes
 * (sized for what churns), or else the first; other findings that would
 * size the same tunables otherwise (threshold, another region's) point to
 * it instead of contradicting it, since the environment holds one.  (A
 * fix's setting lives as long as its finding.) */
static void one_glibc_setting(struct mt_finding **x, size_t n)
{
	const char *prefix = glibc_prefix;
	const struct mt_finding *chosen = NULL;
	const char *setting = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *s = glibc_setting(x[i]);
		if (s && (!chosen || (is_churn(x[i]->id) && !is_churn(chosen->id)))) {
			chosen = x[i];
			setting = s;
		}
	}
	if (!chosen)
		return;
	char where[160];
	if (strcmp(chosen->region, MT_WHOLE_PROGRAM))
		snprintf(where, sizeof where, "[%s] of region %s", chosen->id,
			 chosen->region);
	else
		snprintf(where, sizeof where, "[%s]", chosen->id);
	for (size_t i = 0; i < n; i++) {
		if (x[i] == chosen)
			continue;
		for (int k = 0; k < x[i]->nfixes;) {
			struct mt_fix *fix = &x[i]->fixes[k];
			if (fix->kind != MT_FIX_SETTING ||
			    strncmp(fix->setting, prefix, strlen(prefix)) ||
			    !strcmp(fix->setting, setting)) {
				k++;
				continue;
			}
			/* said once, the fix dropped */
			if (!strstr(x[i]->explanation, "The glibc setting of ["))
				mt_finding_append(x[i], " The glibc setting of %s is the one to "
					 "try: GLIBC_TUNABLES holds one value for "
					 "the whole process, and that one sets "
					 "these tunables too.",
					 where);
			memmove(fix, fix + 1,
				(size_t)(x[i]->nfixes - k - 1) * sizeof *fix);
			x[i]->nfixes--;
		}
	}
}

/* Every rule on the figures f of summary s, its findings kept in out;
 * `process` names a child process's (NULL: the command's own), and only
 * what it churns or keeps is said of it. */
/* Could the run's faults have been of transparent huge pages (each a
 * fault of 2 MiB): it advised them (NumPy does for its arrays), or the
 * kernel gives them to every mapping. */
static bool huge_pages(const struct mt_call_figures *f)
{
	char mode[64] = "";
	FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (thp) {
		if (!fgets(mode, sizeof mode, thp))
			mode[0] = '\0';
		fclose(thp);
	}
	return f->hugepage_advice > 0 || strstr(mode, "[always]");
}

/* Is the process of summary s a Python program: its command's, or one of
 * its sites in Python code.  A child the command started is judged by
 * its own (a C program's Python children were given C++'s code fixes:
 * new-user trial 22); the command's own, by the command line given too. */
static bool python_process(const struct context *cx, json_t *s, bool child)
{
	const char *argv0 = json_string_value(
		json_array_get(json_object_get(s, "command"), 0));
	if ((!child && cx->python) || (argv0 && strstr(argv0, "python")))
		return true;
	size_t i;
	json_t *site;
	json_array_foreach(json_object_get(s, "sites"), i, site)
		if (mt_stack_has_python(json_object_get(site, "stack")))
			return true;
	return false;
}

static bool rules_on(const struct context *cx, const struct measured *m,
		     json_t *s, const struct mt_call_figures *f,
		     const char *process, struct findings *out)
{
	/* A region's findings name the code that ran in it (the shim keys
	 * sites by the region open, sites.h); the whole run's, all of it. */
	json_t *sites = f->whole ? json_incref(json_object_get(s, "sites"))
				 : mt_sites_of_region(json_object_get(s, "sites"),
						      f->region);
	if (!f->whole && !json_array_size(sites)) { /* (none in it) */
		json_decref(sites);
		sites = NULL;
	}
	struct mt_rule_input in = {
		.backend = m->runs.backend,
		.f = f,
		.sites = sites,
		.sites_to_s = json_number_value(json_object_get(
			json_object_get(s, "recording"), "sites_to_s")),
		.python = python_process(cx, s, process != NULL),
		.numpy = mt_sites_in_numpy(json_object_get(s, "sites")),
		.page_size = sysconf(_SC_PAGESIZE),
		.fault_cost_s = 2 * mt_fault_cost_s(huge_pages(f)),
		.page_fault_most_s = 2 * mt_fault_cost_s(false),
	};
	/* (measured here only for runs that need them: a few tenths of a
	 * second) */
	if (f->whole && (f->unmapped_touched > 0 || f->purged_touched > 0)) {
		in.page_fault_cost_s = 2 * mt_fault_cost_s(false);
		in.huge_fault_cost_s = 2 * mt_fault_cost_s(true);
		in.huge_fault_most_s = mt_fault_cost_most_s(true);
	}
	size_t first = out->n;
	bool ok = true, churns = false, to_check = false;
	for (mt_rule *const *rule = mt_rules; ok && *rule; rule++) {
		in.churns = churns;
		in.churn_to_check = to_check;
		struct mt_finding *x = (*rule)(&in);
		if (!x)
			continue;
		/* (first touch is "not churn": never beside a churn, which the
		 * catalog lists before it) */
		if (!strcmp(x->id, "first-touch") && (process || churns)) {
			mt_finding_free(x);
			continue;
		}
		/* (one to be checked by a run may yet be dropped:
		 * check_by_fixes drops first-touch if it is kept) */
		churns |= strstr(x->id, "-churn") != NULL && !x->check_by_fix;
		to_check |= strstr(x->id, "-churn") != NULL && x->check_by_fix;
		x->caveat = m->partial;
		if (process && !(x->process = strdup(process))) {
			mt_finding_free(x);
			return false;
		}
		if (!(ok = mt_findings_keep(out, x)))
			mt_finding_free(x);
	}
	if (ok && process)
		one_glibc_setting(out->at + first, out->n - first);
	json_decref(sites);
	return ok;
}

/* The processes the command started (a fork's children, a pool's
 * workers), from its first run: whole runs each, where the work may be;
 * a finding alike in several is said once (children_alike.h). */
static bool rules_on_children(const struct context *cx,
			      const struct measured *m, struct findings *out)
{
	struct mt_children_alike alike = {0};
	size_t i;
	json_t *s;
	bool ok = true;
	json_array_foreach(m->runs.children, i, s) {
		struct mt_call_figures f;
		if (json_is_null(json_object_get(s, "wall_s")) ||
		    !mt_figures_of(s, MT_WHOLE_PROGRAM, &f))
			continue; /* (left by _exit or exec: no whole figures) */
		char process[160];
		json_t *argv = json_object_get(s, "command");
		long long pid = (long long)json_integer_value(json_object_get(s, "pid"));
		snprintf(process, sizeof process, "child process %lld (%s)", pid,
			 json_string_value(json_array_get(argv, 0)) ?: "?");
		struct findings mine = {0};
		ok = rules_on(cx, m, s, &f, process, &mine);
		for (size_t k = 0; k < mine.n; k++) /* (each owned by out, or freed) */
			if (ok)
				ok = mt_children_alike_add(&alike, mine.at[k], pid, out);
			else
				mt_finding_free(mine.at[k]);
		free(mine.at);
		if (!ok)
			break;
	}
	ok = mt_children_alike_said(&alike, ok ? out : NULL) && ok;
	/* Each process counts the children it forked: those that left no
	 * summary were killed before they could (a pool's workers sent
	 * SIGTERM), or exec'd what the shim cannot follow. */
	json_int_t forked = json_integer_value(json_object_get(m->runs.summaries[0], "forks"));
	json_array_foreach(m->runs.children, i, s)
		forked += json_integer_value(json_object_get(s, "forks"));
	json_int_t found = (json_int_t)json_array_size(m->runs.children);
	if (forked > found)
		fprintf(stderr, "memtrace: explain: the command forked %lld "
				"processes on %s and %lld of them left no summary "
				"(killed by a signal before they exited, or exec'd "
				"a program the shim cannot follow): their figures "
				"are not here (a trace, memtrace run -o, keeps what "
				"they recorded)\n",
			(long long)forked, m->runs.backend,
			(long long)(forked - found));
	return ok;
}

/* Every rule, on every region of m, and on the processes it started. */
static bool apply_rules(const struct context *cx, const struct measured *m,
			struct findings *out)
{
	size_t max = json_array_size(json_object_get(m->runs.summaries[0], "regions")) + 1;
	const char **regions = calloc(max, sizeof *regions);
	size_t nr = regions ? mt_region_names(m->runs.summaries[0], regions, max) : 0;
	bool ok = regions != NULL;
	size_t own = out->n; /* (the findings of this backend's runs) */

	/* A region's figures are per call, each the median over the runs;
	 * the whole program's are one run's, the median one, so that its
	 * totals and its sites (which say how much of each total is whose)
	 * come from the same run. */
	json_t *median = m->runs.summaries[mt_runs_median(&m->runs)];
	for (size_t r = 0; ok && r < nr; r++) {
		struct mt_call_figures f;
		bool whole = !strcmp(regions[r], MT_WHOLE_PROGRAM);
		if (!whole_program_recorded(m, regions[r]) ||
		    !(whole ? mt_figures_of(median, regions[r], &f)
			    : mt_runs_figures(&m->runs, regions[r], &f)))
			continue;
		ok = rules_on(cx, m, median, &f, NULL, out);
	}
	if (ok)
		one_glibc_setting(out->at + own, out->n - own);
	free(regions);
	ok = ok && rules_on_children(cx, m, out);
	return ok;
}

/* The command's own finding on backend b that is `id` or a churn, if
 * any: what rules b out as a fix for `id`. */
static const struct mt_finding *finding_on(const struct findings *all,
					   const char *b, const char *id)
{
	for (size_t i = 0; i < all->n; i++)
		if (!all->at[i]->process && !strcmp(all->at[i]->backend, b) &&
		    (!strcmp(all->at[i]->id, id) || mt_churn_finding(all->at[i]->id)))
			return all->at[i];
	return NULL;
}

/* The backends proposed as they are, each measured here, in the slots
 * they hold, the fastest first (a churn's fixes: "run on mimalloc", 0.49
 * s, before "run on glibc", 0.30 s, which came last as the one found
 * fastest; new-user trial 47). */
static void fastest_backends_first(struct mt_finding *x, const struct measured *m,
				   const struct mt_bare_times *bare, int nm)
{
	int slot[MT_MAX_FIXES], n = 0;
	double cpu[MT_MAX_FIXES];
	for (int k = 0; k < x->nfixes; k++)
		if (x->fixes[k].kind == MT_FIX_BACKEND && !x->fixes[k].setting[0] &&
		    mt_measured_on(m, bare, nm, x->fixes[k].backend, &cpu[n]))
			slot[n++] = k;
	/* (a few: an insertion sort of the fixes in those slots) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && cpu[j] < cpu[j - 1]; j--) {
			struct mt_fix t = x->fixes[slot[j]];
			x->fixes[slot[j]] = x->fixes[slot[j - 1]];
			x->fixes[slot[j - 1]] = t;
			double c = cpu[j];
			cpu[j] = cpu[j - 1];
			cpu[j - 1] = c;
		}
}

/* What was measured on the backends explain ran overrides what is known
 * of them in general: a backend a finding proposes is dropped when its own
 * runs here have the same problem, or (a churn) took longer; and where
 * another backend measured here ran the command faster without that
 * churn, it is proposed with its times. */
static void weigh_backend_fixes(struct findings *all, const struct measured *m,
				const struct mt_bare_times *bare, int nm)
{
	for (size_t i = 0; i < all->n; i++) {
		struct mt_finding *x = all->at[i];
		double here, there;
		if (x->process || !mt_measured_on(m, bare, nm, x->backend, &here))
			continue;
		bool churn = mt_churn_finding(x->id);
		/* (each said once) */
		for (int k = 0; k < x->nfixes;) {
			struct mt_fix *fix = &x->fixes[k];
			/* A delay proposed for a backend whose runs here had
			 * no churn, without it: the setting is the pace of
			 * another backend's blocks, and needless (np.zeros each
			 * batch: MIMALLOC_DECOMMIT_DELAY=128 proposed with
			 * mimalloc, which did not churn, and changed nothing;
			 * new-user trial 35). */
			double alone;
			if (fix->kind == MT_FIX_BACKEND && fix->setting[0] &&
			    !strncmp(fix->setting, "MIMALLOC_DECOMMIT_DELAY=", 24) &&
			    mt_measured_on(m, bare, nm, fix->backend, &alone) &&
			    !finding_on(all, fix->backend, "")) {
				fix->setting[0] = '\0';
				snprintf(fix->text, sizeof fix->text,
					 "run on %s, which kept its freed memory for "
					 "reuse in its runs here, as it is (memtrace run "
					 "--backend %s)",
					 fix->backend, fix->backend);
			}
			/* (a backend with a setting is not what its runs here
			 * measured: mimalloc with PYTHONMALLOC=malloc was
			 * dropped for the CPython arenas' churn that the
			 * setting ends; new-user trial 29) */
			const char *b = fix->kind == MT_FIX_BACKEND && !fix->setting[0]
						? fix->backend
						: NULL;
			/* (allocator-time's backend was measured faster, its
			 * own churn and all: 3000 zeroed tables, glibc 0.9 s
			 * against jemalloc's 0.03 s with a purge-churn, was
			 * "jemalloc is not proposed"; new-user trial 14) */
			const struct mt_finding *same =
				b && strcmp(x->id, "allocator-time")
					? finding_on(all, b, x->id)
					: NULL;
			/* Slower by a tenth or more, as the backend proposed
			 * below must be faster; within that, not told apart
			 * from the runs' noise: kept, to try, with the times
			 * (tcmalloc was dropped for 1.939 s against 1.933 s,
			 * where --verify found it helped; new-user trial 46).
			 * A faster one's times said beside it. */
			bool timed = b && churn && mt_measured_on(m, bare, nm, b, &there);
			bool slower = timed && there > 1.1 * here;
			if (!same && !slower) {
				if (timed && !strstr(fix->text, "measured here")) {
					/* (before the command that runs it) */
					char *how = strstr(fix->text, " (memtrace run");
					char tail[MT_TEXT];
					snprintf(tail, sizeof tail, "%s", how ? how : "");
					size_t at = how ? (size_t)(how - fix->text)
							: strlen(fix->text);
					snprintf(fix->text + at, sizeof fix->text - at,
						 "; its runs here: %.3f s of CPU against "
						 "%.3f s%s%s%s",
						 there, here,
						 bare ? ", without the shim" : "",
						 there > 0.95 * here
							 ? ", not told apart from "
							   "the runs' noise"
							 : "",
						 tail);
					fix->to_try |= there > 0.95 * here;
				}
				k++;
				continue;
			}
			if (same)
				mt_finding_append(x, " %s is not proposed: its runs here have "
					 "a %s finding.", b, same->id);
			else
				mt_finding_append(x, " %s is not proposed: its runs here took "
					 "more CPU (%.3f s against %.3f s%s).",
					 b, there, here,
					 bare ? ", without the shim" : "");
			memmove(fix, fix + 1, (size_t)(x->nfixes - k - 1) * sizeof *fix);
			x->nfixes--;
		}
		if (!churn)
			continue;
		/* Every backend measured here without a churn finding,
		 * clearly faster (10%), if not proposed already (jemalloc,
		 * no keeper of freed memory by default, ran a thread heaps'
		 * churn in 0.039 s against glibc's 1.0, and was left out
		 * without a word where mimalloc's 0.035 was proposed; new-user
		 * trial 50); the fastest first, below. */
		for (int j = 0; j < nm; j++) {
			const char *b = m[j].runs.backend;
			bool churns = false, proposed = false;
			for (size_t c = 0; c < all->n; c++)
				churns |= !all->at[c]->process &&
					  !strcmp(all->at[c]->backend, b) &&
					  mt_churn_finding(all->at[c]->id);
			for (int k = 0; k < x->nfixes; k++)
				proposed |= x->fixes[k].kind == MT_FIX_BACKEND &&
					    !strcmp(x->fixes[k].backend, b);
			if (churns || proposed || !mt_measured_on(m, bare, nm, b, &there) ||
			    there >= 0.9 * here)
				continue;
			struct mt_fix *fix = mt_fix_add(x, MT_FIX_BACKEND);
			if (!fix)
				break;
			fix->backend = b;
			snprintf(fix->text, sizeof fix->text,
				 "run on %s, which ran it without this churn in "
				 "%.3f s of CPU against %.3f s, measured here%s "
				 "(memtrace run --backend %s)",
				 b, there, here, bare ? " without the shim" : "", b);
		}
		fastest_backends_first(x, m, bare, nm);
	}
}


/* A recording without its figures at exit (killed) analyses no whole
 * run, so nothing is found there; what it recorded is still said where it
 * shows a churn's pattern, with what the exit would have told (a trace of
 * 6,536 heap grows and 3,251 trims of 6.3 GiB had "0 findings": new-user
 * trial 17). */
static json_t *recorded_only(const struct measured *m, int nm)
{
	json_t *list = json_array();
	for (int i = 0; list && i < nm; i++) {
		json_t *s = m[i].runs.n ? m[i].runs.summaries[0] : NULL;
		if (!m[i].partial || !s || whole_program_measured(&m[i]))
			continue;
		json_t *brk = json_object_get(s, "brk");
		double grow = json_number_value(json_object_get(brk, "grow")),
		       trims = json_number_value(json_object_get(brk, "shrink")),
		       trimmed = json_number_value(json_object_get(brk, "shrink_bytes")),
		       unmaps = json_number_value(json_object_get(
			       json_object_get(s, "syscalls"), "munmap")) +
				json_number_value(json_object_get(
					json_object_get(s, "syscalls_inferred"), "munmap")),
		       purges = json_number_value(json_object_get(
			       json_object_get(s, "madvise_by_advice"), "MADV_DONTNEED")) +
				json_number_value(json_object_get(
					json_object_get(s, "madvise_by_advice"), "MADV_FREE")),
		       recorded = json_number_value(json_object_get(
			       json_object_get(s, "recording"), "recorded_s"));
		/* (ten of them at least: a pattern, not a moment) */
		if (trims < 10 && unmaps < 10 && purges < 10)
			continue;
		json_array_append_new(list, json_pack(
			"{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f}",
			"source", m[i].source ? m[i].source : m[i].runs.backend,
			"partial", m[i].partial, "recorded_s", recorded,
			"brk_grow", grow, "brk_shrink", trims,
			"brk_shrink_bytes", trimmed, "munmap", unmaps,
			"purges", purges));
	}
	return list;
}

static void print_recorded_only(FILE *out, const json_t *recorded)
{
	size_t i;
	const json_t *r;
	json_array_foreach(recorded, i, r) {
		double grow = json_number_value(json_object_get(r, "brk_grow")),
		       trims = json_number_value(json_object_get(r, "brk_shrink")),
		       unmaps = json_number_value(json_object_get(r, "munmap")),
		       purges = json_number_value(json_object_get(r, "purges"));
		char b[32], what[512];
		size_t at = 0;
		what[0] = '\0';
		if (trims >= 10)
			at += (size_t)snprintf(what + at, sizeof what - at,
				"the heap grew %.0f times and was trimmed back "
				"%.0f times (%s given back)", grow, trims,
				mt_format_bytes(json_number_value(json_object_get(
							r, "brk_shrink_bytes")),
						b, sizeof b));
		if (unmaps >= 10 && at < sizeof what)
			at += (size_t)snprintf(what + at, sizeof what - at,
					       "%s%.0f mappings were unmapped",
					       at ? ", " : "", unmaps);
		if (purges >= 10 && at < sizeof what)
			snprintf(what + at, sizeof what - at,
				 "%s%.0f purges (madvise) gave pages back",
				 at ? ", " : "", purges);
		fprintf(out, "\n[recorded, not measured] %s\n  The recording ended "
			     "before the program did (%s), so its time, CPU and page "
			     "faults, measured at exit, are not in it, and no finding "
			     "about the whole run can be made.  In the %.1f s it "
			     "recorded, %s: memory given back to the kernel over and "
			     "over, the pattern of a churn.  Whether it cost time, a "
			     "run to the end tells (or regions, "
			     "memtrace_begin/end, each measured as it ends).\n",
			json_string_value(json_object_get(r, "source")),
			json_string_value(json_object_get(r, "partial")),
			json_number_value(json_object_get(r, "recorded_s")), what);
	}
}


/* Runs made for --verify, kept: several findings propose the same fix. */
struct trial {
	char backend[64], setting[256];
	struct measured runs;
};
static struct trial trials[64];
static size_t ntrials;

static struct measured *trial_runs(const struct context *cx,
				   const char *backend, const char *setting)
{
	for (size_t i = 0; i < ntrials; i++)
		if (strcmp(trials[i].backend, backend) == 0 &&
		    strcmp(trials[i].setting, setting ? setting : "") == 0)
			return trials[i].runs.runs.n ? &trials[i].runs : NULL;
	if (ntrials == sizeof trials / sizeof *trials)
		return NULL;
	struct trial *t = &trials[ntrials++];
	snprintf(t->backend, sizeof t->backend, "%s", backend);
	snprintf(t->setting, sizeof t->setting, "%s", setting ? setting : "");
	return measure_runs(cx, backend, setting, &t->runs) ? &t->runs : NULL;
}

/* The CPU of a fix's runs without the shim, against the same command's
 * without the fix, interleaved: the shim costs more on one backend than on
 * another, and on a run whose fix sends more calls through it
 * (PYTHONMALLOC=malloc on tcmalloc: "hurts", 682 -> 798 ms under the
 * shim, where bare it took 671-695 ms before and 650-693 after; its own
 * estimate was a third of what it added; new-user trial 29).  Kept:
 * several findings propose the same fix. */
struct bare_trial {
	char backend[64], setting[256];
	char *env[2];
	struct mt_bare_times before, after;
};
static struct bare_trial bare_trials[64];
static size_t nbare_trials;

static const struct bare_trial *bare_trial_runs(const struct context *cx,
						const char *base,
						const char *backend,
						const char *setting)
{
	char key[64];
	/* (the fix's backend, after the base's: one per pair) */
	snprintf(key, sizeof key, "%s>%s", base, backend);
	for (size_t i = 0; i < nbare_trials; i++)
		if (!strcmp(bare_trials[i].backend, key) &&
		    !strcmp(bare_trials[i].setting, setting ? setting : ""))
			return bare_trials[i].after.n && bare_trials[i].before.n
				       ? &bare_trials[i]
				       : NULL;
	if (nbare_trials == sizeof bare_trials / sizeof *bare_trials)
		return NULL;
	struct bare_trial *t = &bare_trials[nbare_trials++];
	snprintf(t->backend, sizeof t->backend, "%s", key);
	snprintf(t->setting, sizeof t->setting, "%s", setting ? setting : "");
	t->env[0] = setting ? t->setting : NULL;
	struct mt_bare_times runs[2] = {
		{.backend = base},
		{.backend = backend, .env = t->env},
	};
	mt_bare_repeat(runs, 2, cx->repeat < 2 ? 2 : cx->repeat, cx->argv,
		       mt_runs_command_ending(), cx->devnull);
	t->before = runs[0];
	t->after = runs[1];
	return t->after.n && t->before.n ? t : NULL;
}

/* How many times the allocator gave memory back to the kernel: the
 * churns' first half. */
static double given_back(const struct mt_call_figures *f)
{
	/* (glibc's munmaps of its mapped chunks are made inside libc, out of
	 * the interposers' sight: inferred, counted apart) */
	return f->dontneed + f->free_advice + f->brk_shrink +
	       f->thread_heap_shrinks + f->syscalls_by_allocator[MT_SYS_MUNMAP] +
	       f->syscalls_inferred[MT_SYS_MUNMAP];
}

/* The share of the CPU a churn must take to be worth a change (the rules'
 * bar: rules/repetition.c). */
#define WORTH_SHARE 0.05

static bool gave_back_no_more(json_t *v);

/* A backend fix that carries a setting of its own: the backend alone is
 * measured too, so that a "helps" is not the setting's where the switch
 * did it all (MIMALLOC_DECOMMIT_DELAY=64 with mimalloc against jemalloc:
 * "helps", where mimalloc alone took as many faults, 46,087 against
 * 46,082, and as much CPU; new-user trial 34).  The setting adds nothing
 * where its runs took at least nine tenths of the faults of the backend's
 * alone and, without the shim, at least 95% of their CPU. */
static void verify_setting_apart(const struct context *cx,
				 const struct mt_finding *x,
				 const struct mt_fix *fix, json_t *v,
				 const struct mt_call_figures *with_setting,
				 double cpu_after)
{
	struct measured *alone = trial_runs(cx, fix->backend, NULL);
	struct mt_call_figures f;
	if (!alone || !mt_runs_figures(&alone->runs, x->region, &f))
		return;
	double cpu_alone = f.user_s + f.system_s - fmax(0, f.shim_s),
	       cpu_with = with_setting->user_s + with_setting->system_s -
			  fmax(0, with_setting->shim_s);
	const struct bare_trial *bt =
		cx->argv && !strcmp(x->region, MT_WHOLE_PROGRAM)
			? bare_trial_runs(cx, fix->backend, fix->backend,
					  fix->setting)
			: NULL;
	if (bt) {
		cpu_alone = bt->before.cpu_s[mt_bare_fastest(&bt->before)];
		cpu_with = bt->after.cpu_s[mt_bare_fastest(&bt->after)];
	}
	json_t *apart = json_object();
	json_object_set_new(apart, "page_faults_per_call_without",
			    json_real(f.faults));
	json_object_set_new(apart, "page_faults_per_call_with",
			    json_real(with_setting->faults));
	json_object_set_new(apart, "cpu_s_per_call_without", json_real(cpu_alone));
	json_object_set_new(apart, "cpu_s_per_call_with", json_real(cpu_with));
	json_object_set_new(apart, "cpu_source",
			    json_string(bt ? "without the shim, the fastest run"
					   : "under the shim, less its estimate"));
	/* The same runs' CPU measured in two trials (these and the fix's
	 * own) that differ by more than a fifth and 0.1 s: the machine's
	 * noise, which then judges nothing (mimalloc with PYTHONMALLOC=malloc, 1943 ms
	 * here and 2989 ms in the fix's trial, "helps beyond the switch",
	 * where bare it was slower than mimalloc alone, 2.52 against 2.15 s;
	 * new-user trial 42).  Nor do fewer faults help where the CPU rose. */
	bool disagree = cpu_after > 0 && fabs(cpu_with - cpu_after) > 0.1 &&
			fabs(cpu_with / cpu_after - 1) > 0.2;
	bool adds = !disagree &&
		    ((with_setting->faults < 0.9 * f.faults &&
		      cpu_with <= 1.05 * cpu_alone) ||
		     cpu_with < 0.95 * cpu_alone);
	/* (and where it took more CPU than the switch alone, it costs: "adds
	 * nothing, the switch alone does as much" was said of 1733 ms with
	 * it against 1534 without; new-user trial 43) */
	bool costs = !disagree && !adds && cpu_with > 1.05 * cpu_alone;
	if (disagree)
		json_object_set_new(apart, "trials_disagree_cpu_s",
				    json_real(cpu_after));
	json_object_set_new(apart, "adds", json_boolean(adds));
	json_object_set_new(apart, "costs", json_boolean(costs));
	json_object_set_new(v, "setting_apart", apart);
}

/* --verify: the region's figures with the fix, against without. */
static void verify(const struct context *cx, const struct measured *base,
		   struct mt_finding *x, struct mt_fix *fix)
{
	struct mt_call_figures before, after;
	const char *backend = fix->kind == MT_FIX_BACKEND ? fix->backend : base->runs.backend;
	/* (A backend may come with a setting of its own.) */
	const char *setting = fix->setting[0] ? fix->setting : NULL;

	if (fix->kind == MT_FIX_CODE)
		return;
	struct measured *with = trial_runs(cx, backend, setting);
	if (!with)
		return;
	if (mt_runs_figures(&base->runs, x->region, &before) &&
	    mt_runs_figures(&with->runs, x->region, &after)) {
		double ratio = after.time_min_s / before.time_min_s;
		json_t *v = json_object();
		json_object_set_new(v, "time_s_per_call_before", json_real(before.time_min_s));
		json_object_set_new(v, "time_s_per_call_after", json_real(after.time_min_s));
		json_object_set_new(v, "page_faults_per_call_before", json_real(before.faults));
		json_object_set_new(v, "page_faults_per_call_after", json_real(after.faults));
		json_object_set_new(v, "runs", json_integer((json_int_t)with->runs.n));
		/* (less the shim's own estimated time: a fix that sends more
		 * calls through the allocator, PYTHONMALLOC=malloc, pays the
		 * shim for each, which a run without it does not; new-user
		 * trial 27) */
		double cpu_before = before.user_s + before.system_s -
				    fmax(0, before.shim_s),
		       cpu_after = after.user_s + after.system_s -
				   fmax(0, after.shim_s);
		const struct bare_trial *bt =
			cx->argv && !strcmp(x->region, MT_WHOLE_PROGRAM)
				? bare_trial_runs(cx, base->runs.backend, backend,
						  setting)
				: NULL;
		if (bt) {
			cpu_before = bt->before.cpu_s[mt_bare_fastest(&bt->before)];
			cpu_after = bt->after.cpu_s[mt_bare_fastest(&bt->after)];
		}
		json_object_set_new(v, "cpu_source",
				    json_string(bt ? "without the shim, the fastest run"
						   : "under the shim, less its estimate"));
		json_object_set_new(v, "shim_s_per_call_before", json_real(before.shim_s));
		json_object_set_new(v, "shim_s_per_call_after", json_real(after.shim_s));
		json_object_set_new(v, "cpu_s_per_call_before", json_real(cpu_before));
		json_object_set_new(v, "cpu_s_per_call_after", json_real(cpu_after));
		json_object_set_new(v, "system_s_per_call_before", json_real(before.system_s));
		json_object_set_new(v, "system_s_per_call_after", json_real(after.system_s));
		json_object_set_new(v, "given_back_per_call_before", json_real(given_back(&before)));
		json_object_set_new(v, "given_back_per_call_after", json_real(given_back(&after)));
		json_object_set_new(v, "own_munmap_per_call_before",
				    json_real(before.syscalls_own[MT_SYS_MUNMAP]));
		json_object_set_new(v, "own_munmap_per_call_after",
				    json_real(after.syscalls_own[MT_SYS_MUNMAP]));
		/* On a busy machine the wall time of a few runs moves by more
		 * than a fix gains; the CPU time the runs took does not count
		 * the time the machine ran something else.  So the two must
		 * agree: a fix helps when one fell by a tenth and the other
		 * did not rise (wall 0.76x with CPU 0.91x and the faults as
		 * they were was a busier first run, not a fix; CPU 0.76x at
		 * the same wall time is one), and hurts when both rose. */
		double cpu_ratio = cpu_before > 0 ? cpu_after / cpu_before : 1;
		/* (the time under the shim is not the program's alone: with
		 * runs without it, their CPU judges, both ways) */
		if (bt)
			ratio = cpu_ratio;
		/* (threads waiting are off the CPU: allocator-waits is
		 * judged by the wall time of the runs without the shim) */
		bool by_wall = bt && !strcmp(x->id, "allocator-waits") &&
			       mt_bare_wall_least(&bt->before) > 0;
		if (by_wall) {
			double w0 = mt_bare_wall_least(&bt->before),
			       w1 = mt_bare_wall_least(&bt->after);
			ratio = w1 / w0;
			json_object_set_new(v, "judged_by_wall", json_true());
			json_object_set_new(v, "wall_s_before", json_real(w0));
			json_object_set_new(v, "wall_s_after", json_real(w1));
		}
		bool helps = by_wall ? ratio < 0.9
				     : (ratio < 0.9 && cpu_ratio < 0.95) ||
					       (cpu_ratio < 0.9 && ratio <= 1.0);
		bool hurts = by_wall ? ratio > 1.1 : ratio > 1.1 && cpu_ratio > 1.05;
		/* A fix that took a fifth of the CPU away and half the faults
		 * helps though the wall time rose, where all of the rise was
		 * time off the CPU (the machine ran something else: new-user
		 * trial 9, tcmalloc on vector temporaries, wall 5.46 -> 6.07 s
		 * with CPU 5.43 -> 3.14 s and faults 626k -> 14k, was "no clear
		 * effect"). */
		double off_before = before.time_min_s - cpu_before,
		       off_after = after.time_min_s - cpu_after;
		if (!by_wall && !helps && cpu_ratio < 0.8 && after.faults < 0.5 * before.faults &&
		    off_after - off_before >= after.time_min_s - before.time_min_s) {
			helps = true;
			hurts = false;
			json_object_set_new(v, "judged_by_cpu", json_true());
		}
		/* A run that stopped the giving back and took half the faults
		 * away undid the churn: a CPU saving past the bar, the run no
		 * slower, is its doing, though below the tenth asked of a run
		 * alone (CPU 2.985 -> 2.756 s, faults 32,922 -> 9,513: "no
		 * clear effect" beside the finding's "worth the change";
		 * new-user trial 27). */
		/* (the time may rise as the machine runs something else: then
		 * all of the rise is time off the CPU; glibc's setting on a
		 * NumPy Monte Carlo, CPU 727 -> 654 ms and faults 43.5k -> 8.1k,
		 * with the time 717 -> 914 ms, "no clear effect", where bare it
		 * saved as the estimate said; new-user trial 28) */
		if (!by_wall && !helps && !hurts && gave_back_no_more(v) &&
		    after.faults <= 0.5 * before.faults &&
		    cpu_ratio <= 1 - WORTH_SHARE &&
		    (ratio <= 1.0 || off_after - off_before >=
					     after.time_min_s - before.time_min_s)) {
			helps = true;
			json_object_set_new(v, "judged_by_mechanism", json_true());
		}
		/* A churn is memory given back and faulted in again: a fix
		 * that leaves the faults as they were did not undo it, whatever
		 * the time did (a setting that left a program's own
		 * malloc_trim(0) trimming, faults 375378 -> 375325, "helped"
		 * on a busy machine: new-user trial 13). */
		if (helps && (is_churn(x->id) || !strcmp(x->id, "threshold")) &&
		    !x->check_by_fix &&
		    after.faults > 0.9 * before.faults) {
			helps = false;
			json_object_set_new(v, "faults_unchanged", json_true());
		}
		bool memory = strcmp(x->id, "memory-kept") == 0, trade = false;
		if (memory) {
			/* what the finding rests on: kept for a fifth of the run */
			json_object_set_new(v, "kept_bytes_before",
					    json_real(before.kept_sustained));
			json_object_set_new(v, "kept_bytes_after",
					    json_real(after.kept_sustained));
			json_object_set_new(v, "anon_resident_bytes_max_before",
					    json_real(before.anon_max));
			json_object_set_new(v, "anon_resident_bytes_max_after",
					    json_real(after.anon_max));
			json_object_set_new(v, "anon_resident_bytes_exit_before",
					    json_real(before.anon_exit));
			json_object_set_new(v, "anon_resident_bytes_exit_after",
					    json_real(after.anon_exit));
			/* Memory kept is what this finding is about. */
			ratio = (after.kept_sustained + 1) / (before.kept_sustained + 1);
			/* less memory for much more time is a trade, not a
			 * help (purging at once on a pool of 1-8 MiB tasks:
			 * 39.8 MiB kept -> 0, system time 9.1 -> 52.3 s;
			 * new-user trial 12) */
			bool slower = cpu_ratio > 1.1 && after.time_min_s > 1.05 * before.time_min_s;
			trade = ratio < 0.5 && slower;
			helps = ratio < 0.5 && !slower;
			hurts = ratio > 1.1;
		}
		/* A fix that leaves the process in much more memory (its
		 * peak resident twice as much, and 64 MiB more) is not taken
		 * on time alone, and hurts where it gains none
		 * (MALLOC_CONF=dirty_decay_ms:-1 on a run that churned by
		 * purges: faults as they were, 134 MB -> 1.32 GB resident, "no
		 * clear effect"; new-user trial 14). */
		json_object_set_new(v, "peak_rss_bytes_before", json_real(before.peak_rss));
		json_object_set_new(v, "peak_rss_bytes_after", json_real(after.peak_rss));
		bool more_memory = !memory && after.peak_rss > 2 * before.peak_rss &&
				   after.peak_rss - before.peak_rss > 64.0 * (1 << 20);
		if (more_memory && !helps)
			hurts = true;
		/* A change inside the machine's noise is no evidence. */
		json_object_set_new(v, "verdict",
				    json_string(more_memory ? helps ? "more memory, less time"
								    : "hurts: more memory"
						: helps	    ? "helps"
						: trade	    ? "less memory, more time"
						: hurts	    ? "hurts"
							    : "no clear effect"));
		if (fix->kind == MT_FIX_BACKEND && setting)
			verify_setting_apart(cx, x, fix, v, &after, cpu_after);
		fix->verified = v;
	}
}

/* Two findings on the same process, backend and region. */
static bool same_run(const struct mt_finding *a, const struct mt_finding *b)
{
	return !strcmp(a->backend, b->backend) && !strcmp(a->region, b->region) &&
	       !a->process == !b->process &&
	       (!a->process || !strcmp(a->process, b->process));
}

/* A finding about the system time churn takes: with the fix, at most
 * half of it left, the cut at least a twentieth of the CPU, and the CPU
 * not risen (verify's "helps" asks a tenth of all of it, which a program
 * whose churn is a fifth of its CPU misses on a busy machine). */
static bool fix_cut_system_time(json_t *v)
{
	double sys0 = json_number_value(json_object_get(v, "system_s_per_call_before")),
	       sys1 = json_number_value(json_object_get(v, "system_s_per_call_after")),
	       cpu0 = json_number_value(json_object_get(v, "cpu_s_per_call_before")),
	       cpu1 = json_number_value(json_object_get(v, "cpu_s_per_call_after"));
	/* (the system time only, which the finding is about: a "helps" by
	 * the run's time, 0.93x the CPU on a busy machine, kept a trim churn
	 * whose system time fell 27% (NumPy arrays allocated and barely
	 * touched; gone in the next explain: new-user trial 14) */
	return v && sys1 <= 0.5 * sys0 && sys0 - sys1 >= 0.05 * cpu0 &&
	       cpu1 <= cpu0;
}

/* The findings whose figures cannot show them (check_by_fix): each kept
 * only where the command, run with its first setting, cut the system
 * time (fix_cut_system_time), and then says what that run took; dropped
 * where it did not, or where there is no command to run (summaries
 * read).  A first-touch finding beside one kept is dropped. */
static void check_by_fixes(const struct context *cx, struct findings *all,
			   const struct measured *m, int nm, bool with_cmd)
{
	size_t kept = 0;
	for (size_t i = 0; i < all->n; i++) {
		struct mt_finding *x = all->at[i];
		struct mt_fix *fix = NULL;
		const struct measured *base = NULL;
		for (int k = 0; k < x->nfixes && !fix; k++)
			if (x->fixes[k].kind == MT_FIX_SETTING)
				fix = &x->fixes[k];
		for (int j = 0; j < nm && !x->process; j++)
			if (!strcmp(m[j].runs.backend, x->backend))
				base = &m[j];
		if (x->check_by_fix && with_cmd && fix && base)
			verify(cx, base, x, fix);
		if (x->check_by_fix && !(fix && fix_cut_system_time(fix->verified))) {
			mt_finding_free(x);
			continue;
		}
		if (x->check_by_fix) {
			json_t *v = fix->verified;
			mt_finding_append(x, " With the setting the command took %.3f s of "
				 "system time instead of %.3f s, %.3f s of CPU "
				 "instead of %.3f s (page faults %.0f instead of "
				 "%.0f; over %lld runs): the memory given back was "
				 "faulted in again.",
				 json_number_value(json_object_get(v, "system_s_per_call_after")),
				 json_number_value(json_object_get(v, "system_s_per_call_before")),
				 json_number_value(json_object_get(v, "cpu_s_per_call_after")),
				 json_number_value(json_object_get(v, "cpu_s_per_call_before")),
				 json_number_value(json_object_get(v, "page_faults_per_call_after")),
				 json_number_value(json_object_get(v, "page_faults_per_call_before")),
				 (long long)json_integer_value(json_object_get(v, "runs")));
		}
		all->at[kept++] = x;
	}
	all->n = kept;
	/* (first touch is "not churn": never beside one, checked; and what
	 * was said on account of one goes with it) */
	kept = 0;
	for (size_t i = 0; i < all->n; i++) {
		struct mt_finding *x = all->at[i];
		bool beside = false;
		for (size_t k = 0; k < all->n; k++)
			beside |= all->at[k]->check_by_fix && same_run(x, all->at[k]);
		if (!strcmp(x->id, "first-touch") ? beside
						   : x->on_checked_churn && !beside)
			mt_finding_free(x);
		else
			all->at[kept++] = x;
	}
	all->n = kept;
}

/* A churn whose own setting, measured, stopped the allocator giving
 * memory back (a quarter of the times left, or fewer) and left the page
 * faults as they were (a quarter of those it was said to explain gone, at
 * most): the faults are not the churn's doing, and the finding does not
 * hold (jemalloc's purges off on a program of fragments: 91 purges -> 2,
 * faults 212739 -> 216572, the memory 97 -> 850 MiB; the purges had been
 * said to account for 188k faults: new-user trial 21).  Said so at the
 * end of its text; true when x is refuted. */
/* Did the run with the setting stop the allocator giving memory back (a
 * quarter of the times or fewer)? */
static bool gave_back_no_more(json_t *v)
{
	double back0 = json_number_value(json_object_get(v, "given_back_per_call_before")),
	       back1 = json_number_value(json_object_get(v, "given_back_per_call_after"));
	return back0 > 0 && back1 <= 0.25 * back0;
}

/* A churn of the program's own mappings (CPython's arenas), not the
 * allocator's. */
static bool own_mappings_churn(const struct mt_finding *x)
{
	json_t *e = x->evidence;
	return !strcmp(x->id, "mmap-churn") &&
	       json_number_value(json_object_get(e, "mmap_by_allocator_per_call")) <
		       0.5 * json_number_value(json_object_get(e, "mmap_per_call"));
}

/* A memory-kept finding of the same run as the churn `refuted` (its
 * backend, region and process) said giving memory back sooner was not
 * proposed for that churn: the churn did not hold, and it says so instead
 * (jemalloc on vectors of vectors: "this run also churns (the finding
 * above ...)", the finding refuted below it; new-user trial 36). */
static void churn_gone_from_kept(struct mt_finding **found, size_t n,
				 const struct mt_finding *refuted)
{
	const char *said = mt_kept_for_a_churn;
	for (size_t i = 0; i < n; i++) {
		struct mt_finding *x = found[i];
		char *at = strstr(x->explanation, said);
		if (strcmp(x->id, "memory-kept") || !at ||
		    strcmp(x->backend, refuted->backend) ||
		    strcmp(x->region, refuted->region) ||
		    (x->process == NULL) != (refuted->process == NULL) ||
		    (x->process && strcmp(x->process, refuted->process)))
			continue;
		memmove(at, at + strlen(said), strlen(at + strlen(said)) + 1);
		mt_finding_append(x, " Giving it back sooner is not proposed here: "
				     "it was held back for the %s found on this "
				     "run, which --verify refuted (below), and "
				     "was not measured.", refuted->id);
	}
}

/* A churn whose setting stopped the giving back and not the faults, but
 * whose fix with another backend, one that keeps freed memory for reuse,
 * took the faults away (a quarter of those it was said to explain, and
 * verified as helping): the faults were the allocator's doing after all,
 * its way of using freed memory again, and the setting is no fix for it.
 * Said so, and the finding holds.  jemalloc on a grid of vectors rebuilt
 * each step: 193k faults, 145k pages purged and only 61k ever mapped, so
 * most faults were pages purged and taken again; never purging, it took
 * fresh memory instead of reusing what it kept (219 -> 956 MiB, 244k
 * faults), and tcmalloc took 9.6k and half the time; refuted as "not its
 * doing", jemalloc's 2x was left unexplained (new-user trial 36). */
static bool holds_on_another_backend(struct mt_finding *x, const struct mt_fix *setting,
				     double said)
{
	json_t *v = setting->verified;
	double f0 = json_number_value(json_object_get(v, "page_faults_per_call_before")),
	       f1 = json_number_value(json_object_get(v, "page_faults_per_call_after")),
	       rss0 = json_number_value(json_object_get(v, "peak_rss_bytes_before")),
	       rss1 = json_number_value(json_object_get(v, "peak_rss_bytes_after"));
	const struct mt_fix *best = NULL;
	double best_faults = 0;
	for (int k = 0; k < x->nfixes; k++) {
		const struct mt_fix *b = &x->fixes[k];
		json_t *bv = b->verified;
		const char *verdict = json_string_value(json_object_get(bv, "verdict"));
		double before = json_number_value(json_object_get(bv, "page_faults_per_call_before")),
		       after = json_number_value(json_object_get(bv, "page_faults_per_call_after"));
		if (b->kind != MT_FIX_BACKEND || b->setting[0] || !bv || !verdict ||
		    strcmp(verdict, "helps") || before - after < 0.25 * said ||
		    (best && after >= best_faults))
			continue;
		best = b;
		best_faults = after;
	}
	if (!best)
		return false;
	char grew[256] = "", r0[32], r1[32];
	if (rss0 > 0 && rss1 >= 1.5 * rss0)
		snprintf(grew, sizeof grew,
			 ", and the most memory resident went from %s to %s: "
			 "keeping its freed pages, it took fresh ones instead of "
			 "using those again",
			 mt_format_bytes(rss0, r0, sizeof r0),
			 mt_format_bytes(rss1, r1, sizeof r1));
	mt_finding_append(x, " Measured with %s: the allocator gave memory back "
			     "%.0f times instead of %.0f, and the page faults did "
			     "not fall (%.0f, against %.0f)%s; that setting is no "
			     "fix. On %s the faults fell to %.0f: they are %s's "
			     "way of using freed memory again for these blocks "
			     "(handing it back, then taking it again), and "
			     "another allocator is the fix.",
			  setting->setting,
			  json_number_value(json_object_get(v, "given_back_per_call_after")),
			  json_number_value(json_object_get(v, "given_back_per_call_before")),
			  f1, f0, grew, best->backend, best_faults, x->backend);
	json_object_set_new(x->evidence, "no_fix_setting", json_string(setting->setting));
	json_object_set_new(x->evidence, "faults_fell_on", json_string(best->backend));
	return true;
}

static bool refuted_by_its_setting(struct mt_finding *x)
{
	/* A churn of the program's own mappings is tested by its first fix
	 * with a setting, a backend's too (PYTHONMALLOC=malloc on
	 * mimalloc), and by the program's own unmappings: CPython's arenas
	 * gone, the faults as they were (72,737 -> 71,596, "no clear
	 * effect", on all four backends; new-user trial 36). */
	bool own = own_mappings_churn(x);
	const struct mt_fix *fix = NULL;
	for (int k = 0; k < x->nfixes && !fix; k++)
		if (x->fixes[k].kind == MT_FIX_SETTING ||
		    (own && x->fixes[k].kind == MT_FIX_BACKEND &&
		     x->fixes[k].setting[0]))
			fix = &x->fixes[k];
	/* (one its figures cannot show was kept by that run already, its
	 * system time cut: in huge pages, faults are few either way) */
	if (!is_churn(x->id) || x->check_by_fix || !fix || !fix->verified)
		return false;
	json_t *v = fix->verified;
	const char *before = own ? "own_munmap_per_call_before" : "given_back_per_call_before",
		   *after = own ? "own_munmap_per_call_after" : "given_back_per_call_after";
	double back0 = json_number_value(json_object_get(v, before)),
	       back1 = json_number_value(json_object_get(v, after)),
	       f0 = json_number_value(json_object_get(v, "page_faults_per_call_before")),
	       f1 = json_number_value(json_object_get(v, "page_faults_per_call_after"));
	json_t *claimed = json_object_get(x->evidence, "faults_explained");
	double said = json_is_number(claimed) ? json_number_value(claimed) : f0;
	if (!(back0 > 0 && back1 <= 0.25 * back0) || f0 - f1 >= 0.25 * said)
		return false;
	if (!own && holds_on_another_backend(x, fix, said))
		return false;
	char with[MT_TEXT];
	if (fix->kind == MT_FIX_BACKEND)
		snprintf(with, sizeof with, "%s on %s", fix->setting, fix->backend);
	else
		snprintf(with, sizeof with, "%s", fix->setting);
	mt_finding_append(x, " Measured with %s: %s memory back "
			     "%.0f times instead of %.0f, and the page faults did "
			     "not fall (%.0f, against %.0f): they are not its "
			     "doing, and this finding does not hold.",
			  with, own ? "the program itself gave" : "the allocator gave",
			  back1, back0, f1, f0);
	json_object_set_new(x->evidence, "refuted_by", json_string(fix->setting));
	return true;
}

/* A churn whose own setting, measured, stopped the allocator giving
 * memory back (gave_back_no_more) and took the page faults down: what
 * that run saved, the churn's cost, is said beside the estimate where the
 * two differ by half again or more.  The estimate counts the faults
 * alone, at no more than twice what one costs here: faults cost more
 * where several threads fault and give back at once (a thread heap's
 * churn on 4 threads, "minor" at 5%, its setting saving 13%: new-user
 * trial 25), and the run's other system calls share the system time it
 * divides among them (np.fromfile's reads: 40% said, 16% saved; new-user
 * trial 26).  A minor one that saved past the bar is worth the change
 * after all: its minor sentence goes.  (Where the faults stayed, the
 * finding is refuted instead: refuted_by_its_setting.) */
static void measured_by_its_setting(struct mt_finding *x)
{
	const struct mt_fix *fix = NULL;
	for (int k = 0; k < x->nfixes && !fix; k++)
		if (x->fixes[k].kind == MT_FIX_SETTING)
			fix = &x->fixes[k];
	json_t *said = json_object_get(x->evidence, "share_of_run");
	if (!is_churn(x->id) || x->check_by_fix || !json_is_number(said) || !fix ||
	    !fix->verified || !gave_back_no_more(fix->verified))
		return;
	json_t *v = fix->verified;
	json_t *claimed = json_object_get(x->evidence, "faults_explained");
	double f0 = json_number_value(json_object_get(v, "page_faults_per_call_before")),
	       f1 = json_number_value(json_object_get(v, "page_faults_per_call_after"));
	if (!json_is_number(claimed) || f0 - f1 < 0.5 * json_number_value(claimed))
		return;
	double cpu0 = json_number_value(json_object_get(v, "cpu_s_per_call_before")),
	       cpu1 = json_number_value(json_object_get(v, "cpu_s_per_call_after"));
	double saved = cpu0 > 0 ? 1 - cpu1 / cpu0 : 0, estimate = json_number_value(said);
	/* Worth the change: past the bar, and the fix's own verdict says it
	 * helps (the two disagreed: new-user trial 27, verify()). */
	const char *verdict = json_string_value(json_object_get(v, "verdict"));
	bool worth = saved >= WORTH_SHARE && verdict && !strcmp(verdict, "helps");
	/* (a minor one: only where the run saved past the bar) */
	bool minor = json_is_true(json_object_get(x->evidence, "minor")) && worth;
	if (saved < 1.5 * estimate && estimate < 1.5 * saved && !minor)
		return;
	char *sentence = minor ? strstr(x->explanation, MT_MINOR_SAID) : NULL;
	char *end = sentence ? strstr(sentence, MT_MINOR_SAID_END) : NULL;
	if (end)
		memmove(sentence, end + strlen(MT_MINOR_SAID_END),
			strlen(end + strlen(MT_MINOR_SAID_END)) + 1);
	const char *source = json_string_value(json_object_get(v, "cpu_source"));
	bool bare = source && !strncmp(source, "without", 7);
	mt_finding_append(x, " Measured with %s, the run took %.3f s of CPU%s "
			     "instead of %.3f s (%.0f%% %s, against the %.0f%% "
			     "less estimated), %.3f s of system time instead of %.3f s%s",
			  fix->setting, cpu1, bare ? " (without the shim)" : "",
			  cpu0, 100 * fabs(saved),
			  saved >= 0 ? "less" : "more", 100 * estimate,
			  json_number_value(json_object_get(v, "system_s_per_call_after")),
			  json_number_value(json_object_get(v, "system_s_per_call_before")),
			  worth ? ": worth the change." : ".");
	json_object_set_new(x->evidence, "measured_share", json_real(saved));
	if (minor) {
		json_object_set_new(x->evidence, "minor", json_false());
		json_object_set_new(x->evidence, "confirmed_by", json_string(fix->setting));
	}
}

/* Where a fix goes once verified: the ones that help first, then the code
 * changes (not run), then those that did nothing clear, then those that
 * hurt; in the rule's order otherwise. */
static int rank_verified(const struct mt_fix *fix)
{
	const char *v = json_string_value(json_object_get(fix->verified, "verdict"));
	if (!v) /* (one to try after the others) */
		return fix->kind == MT_FIX_CODE ? 1 : fix->to_try ? 3 : 2;
	return !strcmp(v, "helps") ? 0 : !strncmp(v, "hurts", 5) ? 3 : 2;
}

/* A fix as listed: one measured to do no good is "tried" (a backend
 * that made the run slower was still a "fix (backend)" under its verdict
 * "hurts": new-user trial 43), one offered to try unmeasured "try". */
static const char *fix_label(const struct mt_fix *fix)
{
	if (!fix->verified)
		return fix->to_try ? "try" : "fix";
	const char *v = json_string_value(json_object_get(fix->verified, "verdict"));
	return v && (!strncmp(v, "hurts", 5) || !strcmp(v, "no clear effect"))
		       ? "tried"
		       : "fix";
}

/* Without --verify: the fixes to try after the others. */
static int rank_unverified(const struct mt_fix *fix)
{
	return fix->to_try;
}

/* By rank, stably: the rule's order within one. */
static void order_fixes(struct mt_finding *x, int (*rank)(const struct mt_fix *))
{
	for (int i = 1; i < x->nfixes; i++) {
		struct mt_fix fix = x->fixes[i];
		int j = i;
		for (; j > 0 && rank(&x->fixes[j - 1]) > rank(&fix); j--)
			x->fixes[j] = x->fixes[j - 1];
		x->fixes[j] = fix;
	}
}

static const char *kind_name(int kind)
{
	return kind == MT_FIX_SETTING ? "setting"
	       : kind == MT_FIX_BACKEND ? "backend"
					: "code";
}

static json_t *finding_json(const struct mt_finding *x)
{
	json_t *o = json_object(), *fixes = json_array();
	json_object_set_new(o, "id", json_string(x->id));
	json_object_set_new(o, "region", json_string(x->region));
	if (x->process)
		json_object_set_new(o, "process", json_string(x->process));
	if (x->processes)
		json_object_set_new(o, "processes", json_integer(x->processes));
	json_object_set_new(o, "backend", json_string(x->backend));
	json_object_set(o, "evidence", x->evidence);
	json_object_set_new(o, "explanation", json_string(x->explanation));
	for (int i = 0; i < x->nfixes; i++) {
		const struct mt_fix *fix = &x->fixes[i];
		json_t *j = json_object();
		json_object_set_new(j, "kind", json_string(kind_name(fix->kind)));
		json_object_set_new(j, "label", json_string(fix_label(fix)));
		if (fix->setting[0])
			json_object_set_new(j, "setting", json_string(fix->setting));
		if (fix->kind == MT_FIX_BACKEND)
			json_object_set_new(j, "backend", json_string(fix->backend));
		json_object_set_new(j, "description", json_string(fix->text));
		if (fix->to_try)
			json_object_set_new(j, "to_try", json_true());
		json_object_set(j, "verified", fix->verified ? fix->verified : json_null());
		json_array_append_new(fixes, j);
	}
	json_object_set_new(o, "fixes", fixes);
	/* (each named as the text names it, for readers without the
	 * symbolizer: the report's page) */
	size_t k;
	json_t *site;
	json_array_foreach(x->sites, k, site) {
		char label[512];
		json_object_set_new(site, "label",
				    json_string(mt_site_label(json_object_get(site, "stack"),
							      label, sizeof label)));
	}
	json_object_set(o, "sites", x->sites ? x->sites : json_array());
	if (x->small_sites)
		json_object_set(o, "small_sites", x->small_sites);
	if (x->caveat)
		json_object_set_new(o, "incomplete_data", json_string(x->caveat));
	return o;
}

/* A site's object whose code memtrace cannot name (see print_finding). */
struct unnamed {
	const char *object;
	bool no_symbols;
};

/* A finding's sites, a line each, the first headed `head`. */
static void print_sites(FILE *out, const char *head, json_t *sites,
			struct unnamed *unnamed)
{
	size_t k;
	json_t *site;
	double listed = 0;
	json_array_foreach(sites, k, site) {
		char label[512];
		json_t *stack = json_object_get(site, "stack");
		double share = json_number_value(json_object_get(site, "share"));
		listed += share;
		fprintf(out, "  %*s %3.0f%%  %s", (int)strlen(head), k ? "" : head,
			share * 100, mt_site_label(stack, label, sizeof label));
		mt_site_print_callers(out, site, 2);
		fputc('\n', out);
		if (!unnamed->object)
			unnamed->object =
				mt_site_object_unnamed(stack, &unnamed->no_symbols);
	}
	/* (the shares said add up to all of it: a fifth at sites not
	 * listed read as none; new-user trial 37) */
	if (json_array_size(sites) && listed < 0.995)
		fprintf(out, "  %*s %3.0f%%  elsewhere (other sites)\n",
			(int)strlen(head), "", (1 - listed) * 100);
}

/* `with_children`: findings of processes the command started are among
 * them, and "the whole run" of the command's own would read as all of
 * them together (a parent's 506 faults beside children's churns of 73k
 * each; new-user trial 27). */
static void print_finding(FILE *out, const struct mt_finding *x,
			  bool with_children)
{
	if (x->process)
		fprintf(out, "\n[%s] the whole run of %s, backend %s\n  %s\n",
			x->id, x->process, x->backend, x->explanation);
	else if (x->processes)
		/* (its figures the whole tree's: "the command's own process"
		 * read of a parent whose four workers did all of it; new-user
		 * trial 49) */
		fprintf(out, "\n[%s] the whole run of the command, its %u "
			     "processes together, backend %s\n  %s\n",
			x->id, x->processes, x->backend, x->explanation);
	else if (strcmp(x->region, MT_WHOLE_PROGRAM) == 0)
		/* (a killed run's: not "the whole run"; new-user trial 40) */
		fprintf(out, "\n[%s] the %s %s, backend %s\n"
			     "  %s\n",
			x->id, x->caveat ? "run as far as it was recorded" : "whole run",
			with_children ? "of the command's own process (no regions "
					"marked)"
				      : "(no regions marked)",
			x->backend, x->explanation);
	else
		fprintf(out, "\n[%s] region %s, backend %s\n  %s\n", x->id,
			x->region, x->backend, x->explanation);
	if (x->caveat)
		fprintf(out, "  note: based on incomplete data: %s\n", x->caveat);
	const char *key;
	json_t *v;
	fputs("  evidence:", out);
	json_object_foreach(x->evidence, key, v) {
		if (json_is_real(v))
			fprintf(out, " %s=%.6g", key, json_real_value(v));
		else if (json_is_integer(v))
			fprintf(out, " %s=%lld", key, (long long)json_integer_value(v));
		else if (json_is_boolean(v))
			fprintf(out, " %s=%s", key, json_is_true(v) ? "true" : "false");
		else if (json_is_string(v))
			fprintf(out, " %s=%s", key, json_string_value(v));
	}
	fputc('\n', out);
	struct unnamed unnamed = {0};
	print_sites(out, "site", x->sites, &unnamed);
	print_sites(out, "small site", x->small_sites, &unnamed);
	/* "main+0x2ff (app)" is all a reader gets from a program built
	 * without -g, "app+0x140f" from a stripped one: say how to get the
	 * line (C++ built -O2 as users do).  An installed one (the Python
	 * interpreter's own code) is not the reader's to build again:
	 * "rebuild python3.11 with -g" was noise to a Python user (new-user
	 * trial 27); its distribution's debug symbols name its lines. */
	const char *path = unnamed.object;
	/* (by the distribution: /usr/local is the user's own) */
	bool installed = path && ((!strncmp(path, "/usr/", 5) &&
				   strncmp(path, "/usr/local/", 11)) ||
				  !strncmp(path, "/lib", 4) ||
				  !strncmp(path, "/bin/", 5) ||
				  !strncmp(path, "/sbin/", 6));
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *name = slash ? slash + 1 : path;
	if (path && installed)
		fprintf(out, "  (no file and line for %s, installed without its "
			     "debug information: the code is its own, not the "
			     "program's; its distribution's debug symbols (on "
			     "Debian, its -dbgsym package) name its lines)\n",
			name);
	else if (path)
		fprintf(out, "  (no file and line for %s: it was %s; built "
			     "again with -g, at the same optimization%s, its "
			     "lines are named)\n",
			name,
			unnamed.no_symbols ? "stripped of its symbols"
					   : "built without debug information",
			unnamed.no_symbols ? " and not stripped" : "");
	for (int i = 0; i < x->nfixes; i++) {
		const struct mt_fix *fix = &x->fixes[i];
		fprintf(out, "  %s (%s): ", fix_label(fix), kind_name(fix->kind));
		if (fix->kind == MT_FIX_SETTING)
			fprintf(out, "%s\n      ", fix->setting);
		fprintf(out, "%s\n", fix->text);
		if (fix->verified &&
		    json_object_get(fix->verified, "kept_bytes_before")) {
			json_t *v = fix->verified;
			char b[4][32];
			fprintf(out, "      verified: memory kept %s -> %s, most "
				     "anonymous memory resident %s -> %s, CPU "
				     "%.3f s -> %.3f s: %s\n",
				mt_format_bytes(json_real_value(json_object_get(v, "kept_bytes_before")), b[0], 32),
				mt_format_bytes(json_real_value(json_object_get(v, "kept_bytes_after")), b[1], 32),
				mt_format_bytes(json_real_value(json_object_get(v, "anon_resident_bytes_max_before")), b[2], 32),
				mt_format_bytes(json_real_value(json_object_get(v, "anon_resident_bytes_max_after")), b[3], 32),
				json_real_value(json_object_get(v, "cpu_s_per_call_before")),
				json_real_value(json_object_get(v, "cpu_s_per_call_after")),
				json_string_value(json_object_get(v, "verdict")));
		} else if (fix->verified) {
			json_t *v = fix->verified;
			const char *source = json_string_value(json_object_get(v, "cpu_source"));
			double t0 = json_real_value(json_object_get(v, "time_s_per_call_before")) * 1e3,
			       t1 = json_real_value(json_object_get(v, "time_s_per_call_after")) * 1e3,
			       c0 = json_real_value(json_object_get(v, "cpu_s_per_call_before")) * 1e3,
			       c1 = json_real_value(json_object_get(v, "cpu_s_per_call_after")) * 1e3;
			const char *unit = strcmp(x->region, MT_WHOLE_PROGRAM) == 0 ? "for the run"
										     : "per call";
			/* Timed without the shim, that is the figure judged, and
			 * said first: "932 ms -> 609 ms for the run" under the
			 * shim led a line whose verdict rested on 663 -> 595 ms
			 * bare (new-user trial 37). */
			if (source && !strncmp(source, "without", 7))
				fprintf(out, "      verified: CPU without the shim %.3f ms "
					     "-> %.3f ms %s (each timed beside the "
					     "other; wall time under memtrace %.3f ms "
					     "-> %.3f ms)",
					c0, c1, unit, t0, t1);
			else
				fprintf(out, "      verified: %.3f ms -> %.3f ms %s "
					     "(CPU %.3f ms -> %.3f ms)",
					t0, t1, unit, c0, c1);
			fprintf(out, ", %.0f -> %.0f page faults: %s\n",
				json_real_value(json_object_get(v, "page_faults_per_call_before")),
				json_real_value(json_object_get(v, "page_faults_per_call_after")),
				json_string_value(json_object_get(v, "verdict")));
			if (json_is_true(json_object_get(v, "judged_by_wall")))
				fprintf(out, "      (judged by the wall time without the "
					     "shim, the fastest run: %.3f s -> %.3f s; "
					     "waiting takes no CPU)\n",
					json_real_value(json_object_get(v, "wall_s_before")),
					json_real_value(json_object_get(v, "wall_s_after")));
			/* (a setting's description says what it may keep
			 * resident, "--verify measures the most resident":
			 * said in the text too, not only in --json; new-user
			 * trial 50) */
			const char *verdict = json_string_value(json_object_get(v, "verdict"));
			if (strstr(verdict, "more memory") ||
			    (fix->kind == MT_FIX_SETTING &&
			     json_object_get(v, "peak_rss_bytes_after"))) {
				char b[2][32];
				fprintf(out, "      (the most memory resident: %s -> %s)\n",
					mt_format_bytes(json_real_value(json_object_get(v, "peak_rss_bytes_before")), b[0], 32),
					mt_format_bytes(json_real_value(json_object_get(v, "peak_rss_bytes_after")), b[1], 32));
			}
			json_t *apart = json_object_get(v, "setting_apart");
			if (apart) {
				const char *name = fix->setting;
				const char *eq = strchr(name, '=');
				fprintf(out, "      (the setting apart: %s with %.*s took "
					     "%.0f page faults and %.3f ms of CPU%s, %s "
					     "alone %.0f and %.3f ms: %s)\n",
					fix->backend,
					eq ? (int)(eq - name) : (int)strlen(name), name,
					json_real_value(json_object_get(apart, "page_faults_per_call_with")),
					json_real_value(json_object_get(apart, "cpu_s_per_call_with")) * 1e3,
					!strncmp(json_string_value(json_object_get(apart, "cpu_source")),
						 "without", 7)
						? " without the shim"
						: "",
					fix->backend,
					json_real_value(json_object_get(apart, "page_faults_per_call_without")),
					json_real_value(json_object_get(apart, "cpu_s_per_call_without")) * 1e3,
					json_is_true(json_object_get(apart, "adds"))
						? "the setting helps beyond the switch"
					: json_object_get(apart, "trials_disagree_cpu_s")
						? "not told apart: the same runs took "
						  "more than a fifth more or less CPU "
						  "in the trial above, the machine's "
						  "noise"
					: json_is_true(json_object_get(apart, "costs"))
						? "the setting costs CPU beyond the "
						  "switch, whatever faults it saves"
						: "the setting adds nothing here, the switch "
						  "alone does as much");
			}
			/* (a setting sized too small: it helps, and the churn
			 * goes on; new-user trial 21) */
			double back0 = json_number_value(json_object_get(v, "given_back_per_call_before")),
			       back1 = json_number_value(json_object_get(v, "given_back_per_call_after"));
			if (fix->kind == MT_FIX_SETTING && is_churn(x->id) &&
			    back0 > 0 && back1 > 0.25 * back0)
				fprintf(out, "      (the allocator still gave memory "
					     "back %.0f times, against %.0f)\n",
					back1, back0);
		} else if (fix->kind != MT_FIX_CODE && x->process) {
			fputs("      not verified (--verify measures the command's "
			      "own process, not the ones it starts)\n", out);
		} else if (fix->to_try) {
			fputs("      not a sure fix: it made some programs faster and "
			      "others slower; measure it on this one (memtrace "
			      "explain --verify -- CMD)\n", out);
		} else if (fix->kind != MT_FIX_CODE) {
			fputs("      not verified (memtrace explain --verify -- CMD)\n", out);
		}
	}
}

/* A recorded trace, replayed into its summary. */
static json_t *load_trace(const char *path, struct mt_pick pick,
			  json_error_t *jerr)
{
	char err[512];
	struct mt_trace *t = mt_trace_open_process(path, pick.pid, pick.image, err, sizeof err);
	if (t && pick.salvage)
		mt_trace_salvage(t);
	char *json = t ? mt_replay_summary(t, false, err, sizeof err) : NULL;
	const char *note = t && json ? mt_trace_note(t) : NULL;
	if (note)
		fprintf(stderr, "memtrace: explain: %s\n", note);
	mt_trace_close(t);
	if (!json) {
		snprintf(jerr->text, sizeof jerr->text, "%.150s", err);
		return NULL;
	}
	json_t *s = json_loads(json, 0, jerr);
	free(json);
	const char *why = json_string_value(json_object_get(s, "partial_reason"));
	json_t *status = json_object_get(json_object_get(s, "recording"), "exit_status");
	if (why && json_is_true(json_object_get(s, "partial")))
		fprintf(stderr, "memtrace: explain: %s: partial recording: %s; the "
				"findings rest on what was recorded\n",
			path, why);
	else if (json_integer_value(status) > 0)
		fprintf(stderr, "memtrace: explain: %s: the program exited with status "
				"%lld; the findings are of that run\n",
			path, (long long)json_integer_value(status));
	return s;
}

/* A stored summary; a file that is neither is said to be so, without
 * the JSON parser's view of it. */
static json_t *load_summary(const char *path, json_error_t *jerr)
{
	json_t *s = json_load_file(path, 0, jerr);
	if (!s)
		snprintf(jerr->text, sizeof jerr->text, "%s",
			 access(path, F_OK) != 0 ? "no such file"
			 : access(path, R_OK) != 0 ? "cannot be read"
			 : "not a memtrace trace (no \"MEMTRACE\" header) nor a "
			   "summary (not JSON)");
	return s;
}

/* What the rest of a native trace's command recorded beside it (its
 * children, its later images), as the processes of a run explain makes;
 * not the files also named on the command line, read as runs of their
 * own. */
static json_t *family_of(const char *path, char **files, int n)
{
	char **family = mt_trace_family(path);
	json_t *out = family ? json_array() : NULL;
	for (size_t i = 0; family && family[i]; i++) {
		bool named = false;
		for (int j = 0; j < n && !named; j++)
			named = !strcmp(files[j], family[i]);
		json_error_t err;
		json_t *s = named ? NULL
			    : load_trace(family[i], (struct mt_pick){0}, &err);
		if (s) {
			mt_sites_symbolize(s);
			json_array_append_new(out, s);
		} else if (!named)
			fprintf(stderr, "memtrace: explain: %s: %s (left out)\n",
				family[i], err.text);
	}
	mt_trace_family_free(family);
	return out;
}

/* Stored runs (summaries, or traces): one "run" each, its backend its own. */
static bool load_summaries(char **files, int n, struct mt_pick pick,
			   struct measured *m,
			   int *count)
{
	*count = 0;
	for (int i = 0; i < n; i++) {
		json_error_t err;
		json_t *s = mt_is_recording(files[i]) ? load_trace(files[i], pick, &err)
						    : load_summary(files[i], &err);
		if (!s || !json_object_get(s, "schema")) {
			/* (a trace that does not read whole is one all the
			 * same: its reader's words say what is wrong) */
			fprintf(stderr, "memtrace: explain: %s: %s%s\n", files[i],
				s ? "not a memtrace summary" : err.text,
				mt_is_recording(files[i])
					? ""
					: " (expected a memtrace trace or summary, as "
					  "MEMTRACE_OUT and MEMTRACE_SUMMARY write)");
			json_decref(s);
			return false;
		}
		m[*count].runs.backend = json_string_value(
			json_object_get(json_object_get(s, "backend"), "name"));
		m[*count].runs.children = family_of(files[i], files, n);
		mt_sites_symbolize(s);
		m[*count].runs.summaries[0] = s;
		m[*count].runs.n = 1;
		m[*count].source = files[i];
		m[*count].partial = json_is_true(json_object_get(s, "partial"))
			? json_string_value(json_object_get(s, "partial_reason")) : NULL;
		(*count)++;
	}
	return true;
}

json_t *mt_explain_summary(json_t *summary, const char *source)
{
	json_t *command = json_array_get(json_object_get(summary, "command"), 0);
	char *argv0[2] = {(char *)(json_string_value(command) ?: ""), NULL};
	struct context cx = {.argv = NULL, .python = is_python(argv0), .devnull = -1};
	struct measured m = {
		.runs = {.backend = json_string_value(json_object_get(
				 json_object_get(summary, "backend"), "name")),
			 .summaries = {summary},
			 .n = 1},
		.source = source,
		.partial = json_is_true(json_object_get(summary, "partial"))
				   ? json_string_value(json_object_get(summary,
								     "partial_reason"))
				   : NULL,
	};
	struct findings all = {0};
	json_t *list = json_array();
	mt_sites_symbolize(summary);
	if (m.runs.backend && apply_rules(&cx, &m, &all))
		for (size_t i = 0; i < all.n; i++)
			json_array_append_new(list, finding_json(all.at[i]));
	for (size_t i = 0; i < all.n; i++)
		mt_finding_free(all.at[i]);
	free(all.at);
	return list;
}

int mt_cmd_explain(int argc, char **argv)
{
	static const struct option options[] = {
		{"backend", required_argument, NULL, 'b'},
		/* (compare's spelling, for a list) */
		{"backends", required_argument, NULL, 'b'},
		{"repeat", required_argument, NULL, 'r'},
		{"verify", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, 'j'},
		{"output", required_argument, NULL, 'o'},
		{"pid", required_argument, NULL, 'p'},
		{"salvage", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	char default_list[] = "glibc";
	struct mt_pick pick = {0};
	char *list = default_list;
	const char *output = NULL;
	bool json = false, do_verify = false;
	struct context cx = {.repeat = 3, .devnull = -1};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+b:r:vjo:p:sh", options, NULL)) != -1) {
		char *end;
		switch (opt) {
		case 'b':
			list = optarg;
			break;
		case 'r':
			cx.repeat = strtol(optarg, &end, 10);
			if (*end || cx.repeat < 1 || cx.repeat > MAX_RUNS)
				return mt_usage_error(usage, "explain: --repeat needs a "
							     "number from 1 to %d",
						      MAX_RUNS);
			break;
		case 'v':
			do_verify = true;
			break;
		case 'j':
			json = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'p':
			if (mt_parse_pick("explain", usage, optarg, &pick))
				return MT_EXIT_USAGE;
			break;
		case 's':
			pick.salvage = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return mt_usage_error(usage, "explain: unknown or incomplete "
						     "option '%s'",
					      argv[optind - 1]);
		}
	}
	bool with_cmd = optind > 0 && strcmp(argv[optind - 1], "--") == 0;
	if (optind >= argc)
		return mt_usage_error(usage, "explain: give summary files or -- CMD");
	if (do_verify && !with_cmd)
		return mt_usage_error(usage, "explain: --verify needs -- CMD");
	int misplaced = with_cmd ? 0 : mt_options_after_files("explain", usage, argc,
							       argv, optind);
	if (misplaced)
		return misplaced;

	int nm = 0, status;
	struct mt_bare_times *bare = NULL;
	if (with_cmd && !mt_command_check("explain", argv[optind], &status))
		return status;
	/* One per backend, or per file read. */
	size_t most = (size_t)(argc - optind) + 1;
	for (const char *c = list; *c; c++)
		most += *c == ',';
	struct measured *m = calloc(most, sizeof *m);
	if (!m) {
		fprintf(stderr, "memtrace: explain: out of memory\n");
		return 1;
	}
	if (with_cmd) {
		cx.argv = argv + optind;
		cx.python = is_python(cx.argv);
		cx.devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		for (char *b = strtok(list, ","); b; b = strtok(NULL, ",")) {
			struct mt_launch l = {.backend = b, .stdout_fd = -1,
					      .stderr_fd = -1};
			if (!mt_launch_check(&l))
				return MT_EXIT_USAGE;
			m[nm++].runs = (struct mt_runs){.backend = b};
		}
		nm = measure_interleaved(&cx, m, nm, &bare);
		if (!nm) {
			fprintf(stderr, "memtrace: explain: no run succeeded\n");
			return 1;
		}
	} else if (!load_summaries(argv + optind, argc - optind, pick, m, &nm)) {
		return 1;
	}

	FILE *out = stdout;
	if (output && !(out = fopen(output, "we"))) {
		fprintf(stderr, "memtrace: explain: cannot write %s: %m (choose a "
				"writable path for -o)\n",
			output);
		return MT_EXIT_USAGE;
	}
	struct findings all = {0};
	for (int i = 0; i < nm; i++)
		if (!apply_rules(&cx, &m[i], &all)) {
			fprintf(stderr, "memtrace: explain: out of memory\n");
			return 1;
		}
	check_by_fixes(&cx, &all, m, nm, with_cmd);
	/* (allocator-time compares the backends' own times, measured bare
	 * with the runs under the shim) */
	if (nm < 2) {
		free(bare);
		bare = NULL;
	}
	json_t *undecided = json_array();
	if (with_cmd && !mt_allocator_time(&all, undecided, m, bare, nm,
					sysconf(_SC_PAGESIZE))) {
		fprintf(stderr, "memtrace: explain: out of memory\n");
		return 1;
	}
	if (with_cmd && !mt_allocator_waits(&all, undecided, m, bare, nm, sysconf(_SC_PAGESIZE))) {
		fprintf(stderr, "memtrace: explain: out of memory\n");
		return 1;
	}
	if (with_cmd && !mt_memory_peak(&all, m, bare, nm, sysconf(_SC_PAGESIZE))) {
		fprintf(stderr, "memtrace: explain: out of memory\n");
		return 1;
	}
	if (with_cmd)
		weigh_backend_fixes(&all, m, bare, nm);
	struct mt_finding **found = all.at;
	size_t n = all.n;
	if (do_verify)
		for (size_t i = 0; i < n; i++) {
			for (int k = 0; k < found[i]->nfixes && !found[i]->process; k++) {
				const struct measured *base = NULL;
				for (int j = 0; j < nm; j++)
					if (strcmp(m[j].runs.backend, found[i]->backend) == 0)
						base = &m[j];
				/* (check_by_fixes ran some already) */
				if (base && !found[i]->fixes[k].verified)
					verify(&cx, base, found[i], &found[i]->fixes[k]);
			}
			order_fixes(found[i], rank_verified);
		}
	else
		for (size_t i = 0; i < n; i++)
			order_fixes(found[i], rank_unverified);

	if (do_verify)
		for (size_t i = 0; i < n; i++)
			measured_by_its_setting(found[i]);
	/* (the refuted ones last, apart) */
	size_t held = 0;
	for (size_t i = 0; i < n; i++)
		if (!do_verify || !refuted_by_its_setting(found[i])) {
			struct mt_finding *x = found[i];
			memmove(&found[held + 1], &found[held], (i - held) * sizeof *found);
			found[held++] = x;
		}
	for (size_t i = held; i < n; i++)
		churn_gone_from_kept(found, held, found[i]);

	json_t *recorded = recorded_only(m, nm);
	json_t *shared = mt_shared_settings(found, held);
	if (json) {
		json_t *list_json = json_array(), *refuted_json = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(i < held ? list_json : refuted_json,
					      finding_json(found[i]));
		json_t *top = json_object();
		json_object_set_new(top, "findings", list_json);
		if (json_array_size(refuted_json))
			json_object_set(top, "refuted", refuted_json);
		json_decref(refuted_json);
		for (int i = 0; i < nm; i++)
			if (m[i].partial) {
				json_object_set_new(top, "partial", json_true());
				break;
			}
		if (bare)
			json_object_set_new(top, "bare_runs", bare_runs_json(bare, nm));
		if (json_array_size(undecided))
			json_object_set(top, "undecided", undecided);
		json_t *costs = shim_costs(NULL, m, bare, nm);
		if (json_array_size(costs))
			json_object_set_new(top, "shim_cost", costs);
		else
			json_decref(costs);
		json_t *differ = runs_differ(NULL, m, nm);
		if (json_array_size(differ))
			json_object_set_new(top, "runs_differ", differ);
		else
			json_decref(differ);
		if (json_array_size(recorded))
			json_object_set(top, "recorded_not_measured", recorded);
		if (json_array_size(shared))
			json_object_set(top, "one_setting", shared);
		json_t *quiet = quiet_backends(NULL, m, nm, found, n);
		if (json_array_size(quiet))
			json_object_set_new(top, "no_finding", quiet);
		else
			json_decref(quiet);
		json_dumpf(top, out, JSON_INDENT(2));
		fputc('\n', out);
		json_decref(top);
	} else {
		/* first-touch says what the faults were, not a problem; but
		 * with one backend, a note below may say what is not compared */
		size_t notes = 0, i;
		for (i = 0; i < held; i++)
			notes += !strcmp(found[i]->id, "first-touch");
		bool compared = true, faster = false, calls_most = false;
		json_t *u;
		json_array_foreach(undecided, i, u) {
			compared &= !json_is_true(json_object_get(u, "one_backend"));
			faster |= json_is_true(json_object_get(u, "beyond_calls"));
			/* (an allocator-bound run read "no finding (...; the
			 * allocator's own time is not compared)" where its
			 * calls took some 70% of the CPU; new-user trial 47) */
			calls_most |= json_is_true(json_object_get(u, "call_rate")) &&
				      json_number_value(json_object_get(
					      u, "share_at_least")) >= 1;
		}
		const char *then = faster ? "; another allocator ran it faster, "
					    "see below"
				   : compared ? ", nothing to fix"
				   : calls_most
					   ? "; the allocator's calls may be most "
					     "of its time, which only a run on "
					     "another allocator measures: see below"
					   : "; the allocator's own time is not "
					     "compared, see below";
		/* (first-touch is a note, not a finding: "3 findings
		 * (first-touch only...)" read as three things found on a
		 * program with none; new-user trial 35) */
		size_t minor = 0;
		for (i = 0; i < held; i++)
			minor += json_is_true(json_object_get(found[i]->evidence, "minor"));
		char count[96];
		count_findings(count, sizeof count, held - notes, minor);
		if (notes && notes == held)
			fprintf(out, "memtrace explain: %s (first-touch only: "
				     "the faults of the working set%s)",
				faster || !compared ? "no finding" : "nothing to fix",
				faster || !compared ? then : "");
		else if (notes)
			fprintf(out, "memtrace explain: %s (and %zu "
				     "first-touch note%s: the faults of the working "
				     "set%s)",
				count, notes, notes == 1 ? "" : "s",
				faster || !compared ? then : "");
		else if (held)
			fprintf(out, "memtrace explain: %s", count);
		/* (as where first-touch is all: "0 findings" above a "[no
		 * finding]" block; new-user trial 39) */
		else
			fprintf(out, "memtrace explain: %s%s",
				faster || !compared ? "no finding" : "nothing to fix",
				faster || !compared ? then : "");
		fputc('\n', out);
		shim_costs(out, m, bare, nm);
		runs_differ(out, m, nm);
		bool children = false;
		for (i = 0; i < n; i++)
			children |= found[i]->process != NULL;
		for (i = 0; i < held; i++)
			print_finding(out, found[i], children);
		quiet_backends(out, m, nm, found, n);
		if (held < n)
			fprintf(out, "\nRefuted by --verify (not counted above):\n");
		for (; i < n; i++)
			print_finding(out, found[i], children);
		mt_print_shared_settings(out, shared);
		mt_print_undecided(out, undecided);
		print_recorded_only(out, recorded);
	}
	json_decref(recorded);
	json_decref(shared);
	json_decref(undecided);
	for (size_t i = 0; i < n; i++)
		mt_finding_free(found[i]);
	free(found);
	for (int i = 0; i < nm; i++)
		mt_runs_release(&m[i].runs);
	free(m);
	free(bare);
	for (size_t i = 0; i < ntrials; i++)
		mt_runs_release(&trials[i].runs.runs);
	if (cx.devnull >= 0)
		close(cx.devnull);
	if (out != stdout && fclose(out) != 0) {
		fprintf(stderr, "memtrace: explain: writing %s failed: %m\n", output);
		return 1;
	}
	/* (measured all the same, and said: the status is the command's, as
	 * report's is, so a script sees it failed; new-user trial 35) */
	struct mt_ending ending = mt_runs_command_ending();
	return with_cmd && !ending.signaled && ending.status > 0 ? ending.status : 0;
}
