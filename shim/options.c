#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "diag.h"
#include "options.h"

#define DEFAULTS                                                             \
	{.backend = "glibc", .perf = true, .sites = true,            \
	 .small_sample_bytes = MT_SMALL_SAMPLE_BYTES, .rss_period_ms = 20}

struct mt_options mt_opt = DEFAULTS;

bool mt_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *out = true, true;
		if (strcasecmp(s, no[i]) == 0)
			return *out = false, true;
	}
	return false;
}

static int parse_switch(const char *name, const char *v, bool *out)
{
	bool fallback = *out;
	if (mt_parse_bool(v, out))
		return 0;
	mt_warn("%s='%s' is not a boolean (accepted: 1, true, yes, on, 0, "
		"false, no, off); using %d",
		name, v, fallback);
	return 1;
}

static int parse_quiet(struct mt_options *opt, const char *v)
{
	return parse_switch("MEMTRACE_QUIET", v, &opt->quiet);
}

static int parse_perf(struct mt_options *opt, const char *v)
{
	return parse_switch("MEMTRACE_PERF", v, &opt->perf);
}

static int parse_backend(struct mt_options *opt, const char *v)
{
	if (mt_backend_by_name(v) || (mt_backend_is_path(v) && v[0] == '/')) {
		opt->backend = v;
		opt->backend_explicit = true;
		return 0;
	}
	mt_warn("MEMTRACE_BACKEND='%s' is not a backend (accepted: %s, or an "
		"absolute path to a malloc library); using glibc",
		v, mt_backend_names());
	return 1;
}

/* A path with "%p" (the pid) and "%%" as its only escapes. */
static bool valid_template(const char *v)
{
	if (!*v)
		return false;
	for (const char *p = strchr(v, '%'); p; p = strchr(p + 2, '%'))
		if (p[1] != 'p' && p[1] != '%')
			return false;
	return true;
}

static int parse_path(const char *name, const char *v, const char **out,
		      const char *instead)
{
	if (valid_template(v)) {
		*out = v;
		return 0;
	}
	mt_warn("%s='%s' is not a file path (non-empty; '%%p' stands for the "
		"pid, '%%%%' for '%%'); %s",
		name, v, instead);
	return 1;
}

static int parse_summary(struct mt_options *opt, const char *v)
{
	return parse_path("MEMTRACE_SUMMARY", v, &opt->summary_path,
			  "writing no JSON summary");
}

static int parse_out(struct mt_options *opt, const char *v)
{
	return parse_path("MEMTRACE_OUT", v, &opt->trace_path, "recording nothing");
}

static int parse_force(struct mt_options *opt, const char *v)
{
	return parse_switch("MEMTRACE_FORCE", v, &opt->force);
}

/* "sample" (every fault), "sample:N" (1 in N), or off. */
static int parse_faults(struct mt_options *opt, const char *v)
{
	bool on;
	if (mt_parse_bool(v, &on) && !on) {
		opt->fault_period = 0;
		return 0;
	}
	if (strcmp(v, "sample") == 0) {
		opt->fault_period = 1;
		return 0;
	}
	char *end;
	if (strncmp(v, "sample:", 7) == 0) {
		unsigned long n = strtoul(v + 7, &end, 10);
		if (!*end && v[7] && n >= 1 && n <= 1000000000) {
			opt->fault_period = (unsigned)n;
			return 0;
		}
	}
	mt_warn("MEMTRACE_FAULTS='%s' is not a setting (accepted: sample, "
		"sample:N with N from 1, or 0/off); not sampling faults",
		v);
	return 1;
}

static int parse_compress(struct mt_options *opt, const char *v)
{
	return parse_switch("MEMTRACE_COMPRESS", v, &opt->compress);
}

/* on (large blocks, and small ones sampled every 512 KiB, then sparser:
 * small_sites.c), large (large blocks only), sample:BYTES (small ones
 * every BYTES on average throughout, K or M for KiB or MiB; 1: every
 * one), or off. */
static int parse_sites(struct mt_options *opt, const char *v)
{
	bool on;
	if (mt_parse_bool(v, &on)) {
		opt->sites = on;
		opt->small_sample_bytes = on ? MT_SMALL_SAMPLE_BYTES : 0;
		opt->small_sample_fixed = false;
		return 0;
	}
	if (strcmp(v, "large") == 0) {
		opt->sites = true;
		opt->small_sample_bytes = 0;
		return 0;
	}
	if (strncmp(v, "sample:", 7) == 0 && v[7] >= '0' && v[7] <= '9') {
		char *end;
		unsigned long n = strtoul(v + 7, &end, 10);
		unsigned long unit = !strcmp(end, "K") ? 1024
				     : !strcmp(end, "M") ? 1024 * 1024
				     : !*end	      ? 1
							      : 0;
		if (unit && n >= 1 && n <= (1ul << 40) / unit) {
			opt->sites = true;
			opt->small_sample_bytes = n * unit;
			opt->small_sample_fixed = true;
			return 0;
		}
	}
	mt_warn("MEMTRACE_SITES='%s' is not a setting (accepted: 1/on, large, "
		"sample:BYTES with BYTES from 1, K or M after it, or 0/off); "
		"following large blocks and sampling small ones every %lu bytes",
		v, opt->small_sample_bytes);
	return 1;
}

/* A period in milliseconds, or off. */
static int parse_rss(struct mt_options *opt, const char *v)
{
	bool on;
	if (mt_parse_bool(v, &on) && !on) {
		opt->rss_period_ms = 0;
		return 0;
	}
	char *end;
	unsigned long ms = strtoul(v, &end, 10);
	if (*v && !*end && ms >= 1 && ms <= 60000) {
		opt->rss_period_ms = (unsigned)ms;
		return 0;
	}
	mt_warn("MEMTRACE_RSS='%s' is not a setting (accepted: a period in "
		"milliseconds from 1 to 60000, or 0/off); sampling every %u ms",
		v, opt->rss_period_ms);
	return 1;
}

static int parse_lttng(struct mt_options *opt, const char *v)
{
	return parse_switch("MEMTRACE_LTTNG", v, &opt->lttng);
}

static const struct {
	const char *name;
	int (*parse)(struct mt_options *, const char *);
} table[] = {
	{"MEMTRACE_BACKEND", parse_backend},
	{"MEMTRACE_COMPRESS", parse_compress},
	{"MEMTRACE_FAULTS", parse_faults},
	{"MEMTRACE_FORCE", parse_force},
	{"MEMTRACE_LTTNG", parse_lttng},
	{"MEMTRACE_OUT", parse_out},
	{"MEMTRACE_PERF", parse_perf},
	{"MEMTRACE_QUIET", parse_quiet},
	{"MEMTRACE_RSS", parse_rss},
	{"MEMTRACE_SITES", parse_sites},
	{"MEMTRACE_SUMMARY", parse_summary},
};

int mt_options_parse(struct mt_options *opt,
		     const char *(*get)(const char *name))
{
	int bad = 0;

	*opt = (struct mt_options)DEFAULTS;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		const char *v = get(table[i].name);
		if (v)
			bad += table[i].parse(opt, v);
	}
	return bad;
}
