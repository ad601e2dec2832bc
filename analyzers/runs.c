#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "measure.h"
#include "runs.h"

/* How the command itself ends, from its first run without a setting: a
 * program that exits 3 (a failing test, grep finding nothing) or that
 * sends itself SIGTERM is measured all the same (its summary is written
 * at such a signal), and a run that ends otherwise failed. */
static struct mt_ending own = {.status = -1};

/* A signal that asks a program to end, as a program or its user sends
 * one: not a crash (SIGSEGV, SIGABRT, ...), which fails a run, nor
 * SIGKILL, after which no summary is written. */
static bool ends_on_request(int status)
{
	switch (status - 128) {
	case SIGHUP: case SIGINT: case SIGPIPE: case SIGALRM: case SIGTERM:
	case SIGUSR1: case SIGUSR2:
		return true;
	default:
		return false;
	}
}

/* The command's stderr is shown for its first run; each other run's is
 * kept aside and shown only if the run fails (explain and compare run a
 * command a dozen times or more, and its messages came as many times). */
static bool stderr_shown;

static void show_kept(int fd)
{
	char buf[4096];
	ssize_t n;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return;
	fflush(stderr);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) != n)
			break;
}

bool mt_runs_add(struct mt_runs *r, char *const argv[], const char *setting,
		 int stdout_fd, char *failure, size_t len)
{
	char *env[2] = {(char *)setting, NULL};
	int kept = stderr_shown ? memfd_create("memtrace-stderr", MFD_CLOEXEC) : -1;
	struct mt_launch l = {.backend = r->backend, .quiet = true,
			      .env = setting ? env : NULL,
			      .stdout_fd = stdout_fd, .stderr_fd = kept};
	stderr_shown = true;
	if (r->n == MT_MAX_RUNS) {
		snprintf(failure, len, "more than %d runs", MT_MAX_RUNS);
		return false;
	}
	struct mt_measured m;
	bool ok = mt_measure(&l, argv, &m) &&
		  (!m.signaled || ends_on_request(m.status));
	char how[64];
	if (ok && own.status < 0 && !setting) {
		own = (struct mt_ending){m.status, m.signaled};
		if (m.signaled)
			fprintf(stderr, "memtrace: '%s' was %s: measured all "
					"the same\n",
				argv[0], mt_status_text(m.status, true, how,
							sizeof how));
		else if (m.status)
			fprintf(stderr, "memtrace: '%s' exited with status %d: "
					"measured all the same\n",
				argv[0], m.status);
	}
	ok = ok && m.status == (own.status < 0 ? 0 : own.status) &&
	     m.signaled == own.signaled;
	if (ok) {
		if (!r->n && !setting && json_array_size(m.processes) > 1) {
			r->children = json_array();
			for (size_t i = 1; i < json_array_size(m.processes); i++)
				json_array_append(r->children,
						  json_array_get(m.processes, i));
		}
		r->summaries[r->n++] = json_incref(mt_measured_root(&m));
	} else {
		if (kept >= 0)
			show_kept(kept);
		snprintf(failure, len, "'%s' failed under %s%s%s (%s)", argv[0],
			 r->backend, setting ? " with " : "", setting ? setting : "",
			 mt_status_text(m.status, m.signaled, how, sizeof how));
	}
	if (kept >= 0)
		close(kept);
	mt_measured_free(&m);
	return ok;
}

struct mt_ending mt_runs_command_ending(void)
{
	return own.status < 0 ? (struct mt_ending){0, false} : own;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Interleaved, so that a slow spell of the machine hits every backend
 * alike. */
int mt_runs_repeat(struct mt_runs *b, size_t nb, long repeat,
		   char *const argv[], const char *setting, int stdout_fd,
		   const char *verb, bool progress)
{
	double started = now_s();
	size_t done = 0, total = (size_t)repeat * nb;
	int failures = 0;
	for (long r = 0; r < repeat; r++)
		for (size_t i = 0; i < nb; i++) {
			if (progress) {
				double per = done ? (now_s() - started) / (double)done : 0;
				fprintf(stderr, "\rmemtrace: %s: %s, run %ld of %ld, "
						"about %.0f s left   ",
					verb, b[i].backend, r + 1, repeat,
					per * (double)(total - done));
			}
			char failure[512];
			if (!mt_runs_add(&b[i], argv, setting, stdout_fd, failure,
					 sizeof failure)) {
				fprintf(stderr, "%smemtrace: %s: %s\n",
					progress ? "\n" : "", verb, failure);
				failures++;
			}
			done++;
		}
	if (progress)
		fputs("\r\033[K", stderr);
	return failures;
}

bool mt_runs_figures(const struct mt_runs *r, const char *region,
		     struct mt_call_figures *out)
{
	struct mt_call_figures each[MT_MAX_RUNS];
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (mt_figures_of(r->summaries[i], region, &each[n]))
			n++;
	if (!n)
		return false;
	mt_figures_combine(each, n, out);
	return true;
}

static double cpu_of(json_t *summary)
{
	json_t *cpu = json_object_get(summary, "cpu_s");
	return json_number_value(json_object_get(cpu, "user")) +
	       json_number_value(json_object_get(cpu, "system"));
}

double mt_runs_least_cpu(const struct mt_runs *r)
{
	double least = 0;
	for (size_t i = 0; i < r->n; i++)
		if (!i || cpu_of(r->summaries[i]) < least)
			least = cpu_of(r->summaries[i]);
	return least;
}

size_t mt_runs_median(const struct mt_runs *r)
{
	for (size_t i = 0; i < r->n; i++) {
		/* its rank, ties broken by order */
		size_t below = 0;
		double c = cpu_of(r->summaries[i]);
		for (size_t j = 0; j < r->n; j++) {
			double d = cpu_of(r->summaries[j]);
			below += d < c || (d == c && j < i);
		}
		if (below == (r->n - 1) / 2)
			return i;
	}
	return 0;
}

void mt_runs_release(struct mt_runs *r)
{
	for (size_t i = 0; i < r->n; i++)
		json_decref(r->summaries[i]);
	r->n = 0;
	json_decref(r->children);
	r->children = NULL;
}
