#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "diag.h"
#include "emit.h"
#include "glibc_heap.h"
#include "kcounters.h"
#include "ksamples.h"
#include "symbols.h"
#include "options.h"
#include "rawsys.h"
#include "regions.h"
#include "report.h"
#include "rss.h"
#include "sink.h"
#include "sites.h"
#include "summary.h"
#include "thread.h"
#include "mode.h"
#include "process_facts.h"

uint64_t mt_shim_syscalls[MT_SYS_COUNT];

static struct timespec started;
static double startup_cpu_s;
static uint64_t startup_faults;

void mt_report_startup_took(double cpu_s, uint64_t faults)
{
	startup_cpu_s = cpu_s;
	startup_faults = faults;
}

/* The memory system calls the shim saw reach the kernel before its
 * counters opened (an allocator's start-up, made while the shim itself
 * started), through its interposers or inferred (glibc's heap grown by a
 * malloc then): added to the kernel's counts, which then cover every call
 * since the shim loaded, as the interposed counts do (tcmalloc's first
 * two sbrk calls made its heap grow 10 times under 8 brk calls; glibc's
 * first grow made "0 brk ... 1 grow", new-user trial 48). */
static uint64_t sys_before_counters[MT_SYS_COUNT];

/* A relative MEMTRACE_SUMMARY names a file in the directory the program
 * started in, as the trace's does, not wherever it is at exit (after a
 * chdir, or inside a chroot). */
static void summary_path_absolute(void)
{
	static char absolute[4096];
	const char *path = mt_opt.summary_path;
	if (!path || path[0] == '/' || !getcwd(absolute, sizeof absolute))
		return;
	size_t at = strlen(absolute);
	if (snprintf(absolute + at, sizeof absolute - at, "/%s", path) <
	    (int)(sizeof absolute - at))
		mt_opt.summary_path = absolute;
}

static void report_progress(struct mt_thread *t);

void mt_report_start(bool announce)
{
	clock_gettime(CLOCK_MONOTONIC, &started);
	summary_path_absolute();
	mt_process_read_argv();
	struct mt_counters before;
	mt_threads_sum(&before);
	for (int i = 0; i < MT_SYS_COUNT; i++)
		sys_before_counters[i] = before.sys[i] + before.sys_inferred[i];
	if (mt_opt.perf)
		mt_kcounters_open(announce);
	mt_rss_write_progress_with(report_progress);
	mt_kcounters_mark_shim_syscalls();
}

/* The children this process forked (with the fork handlers: not vfork,
 * not a raw clone), for the summary: who reads the children's summaries
 * can tell one that left none. */
static unsigned forks;

void mt_report_forked(void)
{
	__atomic_fetch_add(&forks, 1, __ATOMIC_RELAXED);
}

void mt_report_restart_in_child(void)
{
	forks = 0; /* (its own children, from here) */
	mt_kcounters_forget();
	memset(mt_shim_syscalls, 0, sizeof mt_shim_syscalls);
	startup_cpu_s = 0; /* the parent's */
	startup_faults = 0;
	mt_report_start(false);
}

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The most this process image ever had resident: the kernel's high-water
 * mark of its address space (VmHWM), which starts anew at exec.
 * getrusage's ru_maxrss does not: it keeps the peak of the process that
 * forked this one, up to the exec (a launcher's, a Python parent's), and
 * is the answer only when /proc cannot be read. */
static uint64_t peak_rss_of_this_image(uint64_t maxrss_bytes)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return maxrss_bytes;
	buf[n] = '\0';
	const char *at = strstr(buf, "\nVmHWM:");
	return at ? strtoull(at + 8, NULL, 10) * 1024 : maxrss_bytes;
}

/* The process's figures the kernel keeps, as they are now: its memory
 * system calls (the counters, less the shim's own, plus those from before
 * they opened), its page faults since it was forked (the loader's
 * relocations and the allocator's start-up among them: a process on
 * tcmalloc, which pulls in libstdc++, said 72 faults where it took 1,875
 * when they were counted from the shim's start; new-user trial 25),
 * getrusage's CPU and peak, and the wall time since the shim started. */
static void kernel_now(struct mt_figures *f, double *wall_s,
		       uint64_t *maxrss_bytes)
{
	struct mt_ksnapshot k;
	struct rusage ru;
	struct timespec now;

	mt_kcounters_read(&k);
	for (int i = 0; i < MT_KERNEL_COUNT; i++) {
		uint64_t own = i < MT_SYS_COUNT ? mt_kcounters_shim_since_open(i) : 0;
		f->kernel_valid[i] = k.valid[i];
		f->kernel[i] = mt_less_own(k.value[i], own);
		if (i < MT_SYS_COUNT && k.valid[i])
			f->kernel[i] += sys_before_counters[i];
	}
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		f->rusage_minor_faults = (uint64_t)ru.ru_minflt;
		f->rusage_major_faults = (uint64_t)ru.ru_majflt;
		f->user_s = seconds(ru.ru_utime);
		f->system_s = seconds(ru.ru_stime);
		*maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	*wall_s = (double)(now.tv_sec - started.tv_sec) +
		  (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

/* A kernel counter as the progress event stores it: + 1, 0 when the
 * kernel does not count it. */
static uint64_t counted(const struct mt_figures *f, int i)
{
	return f->kernel_valid[i] ? f->kernel[i] + 1 : 0;
}

/* The process's figures as the closing record would have them now, into
 * the trace (a progress event), from the shim's sampling thread t. */
static void report_progress(struct mt_thread *t)
{
	/* (one sampling thread a process writes it: kept off its stack) */
	static struct mt_figures f;
	double wall_s = 0;
	uint64_t maxrss_bytes;
	kernel_now(&f, &wall_s, &maxrss_bytes);
	MT_EMIT_EVENT(t, progress, .wall_us = (uint64_t)(wall_s * 1e6),
		      .user_us = (uint64_t)(f.user_s * 1e6),
		      .system_us = (uint64_t)(f.system_s * 1e6),
		      .rusage_minor = f.rusage_minor_faults,
		      .rusage_major = f.rusage_major_faults,
		      .threads = mt_threads_seen(),
		      .brk = counted(&f, MT_SYS_BRK),
		      .mmap = counted(&f, MT_SYS_MMAP),
		      .munmap = counted(&f, MT_SYS_MUNMAP),
		      .mremap = counted(&f, MT_SYS_MREMAP),
		      .madvise = counted(&f, MT_SYS_MADVISE),
		      .mprotect = counted(&f, MT_SYS_MPROTECT),
		      .minor_faults = counted(&f, MT_KERNEL_MINOR_FAULTS),
		      .major_faults = counted(&f, MT_KERNEL_MAJOR_FAULTS));
}

/* What the shim cost, estimated: the calls at the measured cost per call
 * (common/shim_cost.c), its threads' CPU time, its start-up's, the
 * program's thread starts and regions at what each costs more. */
static void shim_cost(struct mt_summary *s)
{
	struct mt_shim_cost *k = &s->shim_cost;
	const struct mt_shim_cost_row *row = mt_shim_cost_row(s->backend_name, mt_tracing);
	bool counters = mt_kcounters_inherited();
	uint64_t regions = 0;
	for (size_t i = 0; i < s->region_count; i++)
		regions += s->regions[i].calls;

	k->known = true;
	k->tracing = mt_tracing;
	k->calls_s = mt_figures_shim_calls_s(s->backend_name, k->tracing, &s->f);
	k->threads_s = mt_shim_threads_cpu_s();
	k->start_s = startup_cpu_s;
	k->faults = startup_faults + mt_shim_threads_faults();
	if (counters)
		k->thread_starts_s = (double)mt_threads_started() * row->thread_ns / 1e9;
	k->regions_s = (double)regions *
		       (counters ? row->region_ns : row->region_alone_ns) / 1e9;
	mt_shim_cost_finish(k, s->f.user_s + s->f.system_s, s->wall_s);
}

static void gather(struct mt_summary *s)
{
	memset(s, 0, sizeof *s);
	s->fault_samples_on_sites = -1; /* a trace's reader works them out */
	s->pid = getpid();
	s->argv = mt_process_argv();
	s->backend_name = mt_backend_id.name;
	s->backend_library = mt_backend_id.library;
	s->backend_version = mt_backend_id.version;
	/* Samples still in the kernel's buffer go into the trace first, so
	 * the count below is what the trace holds. */
	mt_ksamples_finish(mt_self());
	s->fault_period = mt_tracing ? mt_opt.fault_period : 0;
	s->fault_samples = mt_ksamples_taken();
	s->fault_samples_lost = mt_ksamples_lost();
	mt_rss_figures(&s->resident);
	mt_threads_sum(&s->f.c);
	s->f.large_max_live = mt_threads_large_peak();
	s->regions = mt_regions_summarise(&s->region_count);
	s->peak_live = mt_peak_live();
	s->peak_sampled = mt_peak_is_sampled();
	s->threads = mt_threads_seen();
	s->forks = __atomic_load_n(&forks, __ATOMIC_RELAXED);
	s->f.glibc_inference = mt_glibc_chunks;
	s->glibc_heap = mt_glibc_chunks;
	s->thresholds_dynamic = mt_glibc_thresholds.dynamic;
	s->thresholds_by_mallopt = mt_glibc_thresholds.by_mallopt;
	s->mmap_threshold = mt_glibc_thresholds.mmap;
	s->trim_threshold = mt_glibc_thresholds.trim;
	s->threshold_raises = mt_glibc_thresholds.raises;
	struct mt_glibc_heaps_deleted gone = mt_glibc_heaps_deleted();
	s->heaps_deleted = gone.count;
	s->heaps_deleted_bytes = gone.bytes;
	uint64_t maxrss_bytes = 0;
	kernel_now(&s->f, &s->wall_s, &maxrss_bytes);
	s->peak_rss_bytes = peak_rss_of_this_image(maxrss_bytes);
	for (int i = 0; i < MT_SYS_COUNT; i++)
		s->shim_syscalls[i] =
			__atomic_load_n(&mt_shim_syscalls[i], __ATOMIC_RELAXED);
	shim_cost(s);
}


/* (RLIMIT_FSIZE: no SIGXFSZ from the shim's write, see mt_quiet_begin) */
static bool write_all(int fd, const char *buf, size_t len)
{
	struct mt_quiet q;
	long w = 0;
	mt_quiet_begin(&q);
	while (len) {
		w = mt_raw_write(fd, buf, len);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			break;
		buf += w;
		len -= (size_t)w;
	}
	mt_quiet_end(&q, w);
	if (len)
		errno = w < 0 ? (int)-w : ENOSPC;
	return len == 0;
}

/* A path that is not a regular file (/dev/null, /dev/stdout, a FIFO, a
 * link) is written into, never replaced: a rename over it put a regular
 * file in place of the device (as root, /dev/null itself).  Appended, so
 * that a link to the program's own output (/dev/stdout) does not write
 * over it; and a FIFO without a reader is not waited for (ENXIO). */
static void write_into(const char *path, const char *json, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY |
				    O_CLOEXEC);
	bool ok = fd >= 0 && write_all(fd, json, len);
	if (fd >= 0)
		mt_raw_close(fd);
	if (!ok)
		mt_warn("cannot write the summary to '%s': %m%s", path,
			errno == ENXIO ? " (a FIFO nobody reads)" : "");
}

/* Written to a temporary name and renamed, so a reader never sees half a
 * file, and a process that writes the same path later replaces it whole. */
static void write_file(const char *path, const char *json, size_t len)
{
	char tmp[4200];
	struct stat st;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode)) {
		write_into(path, json, len);
		return;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		      0644);
	if (fd < 0) {
		mt_warn("cannot write the summary to '%s': %m (choose a writable "
			"path with MEMTRACE_SUMMARY)",
			path);
		return;
	}
	bool ok = write_all(fd, json, len);
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		mt_warn("cannot write the summary to '%s': %m", path);
		unlink(tmp);
	}
}

/* The summary as JSON, to the MEMTRACE_SUMMARY file and into the trace's
 * closing record. */
static void write_json(struct mt_summary *s,
		       void (*closing)(const struct mt_closing *record))
{
	/* The heaviest sites, as many as fit in MT_SITES_JSON_BYTES, the
	 * same in the summary and in the trace's closing record (one event,
	 * in one chunk and one LTTng event). */
	size_t sites_size = MT_SITES_JSON_BYTES;
	char *sites = mt_raw_mmap(sites_size);
	size_t sites_len = sites ? mt_sites_json(sites, sites_size, true, NULL)
				 : 0;
	s->sites_json = sites_len ? sites : NULL;
	/* About 6 KiB per region, and 10 for the rest; doubled while it
	 * does not fit (the command line, which may be long, is in it). */
	size_t size = 16384 + (s->region_count + 1) * 8192 + sites_len;
	char *json = NULL;
	char path[4096];
	size_t len = 0;
	while (size <= ((size_t)64 << 20)) {
		if (!(json = mt_raw_mmap(size)))
			break;
		if ((len = mt_summary_json(s, json, size)))
			break;
		mt_raw_munmap(json, size);
		json = NULL;
		size *= 2;
	}

	if (!len)
		mt_warn("cannot make the summary: out of memory");
	if (len && mt_opt.summary_path) {
		if (mt_expand_path(mt_opt.summary_path, path, sizeof path))
			write_file(path, json, len);
		else
			mt_warn("cannot write the summary to '%s': path too long",
				mt_opt.summary_path);
	}
	if (mt_tracing && closing) {
		size_t record_size = 2 * 4096 + sites_len;
		char *record = mt_raw_mmap(record_size);
		struct mt_closing c = {record, record + 4096 + sites_len, 0, 0};
		if (record) {
			c.len = mt_summary_exit_json(s, record, 4096 + sites_len);
			s->sites_json = NULL;
			c.without_sites_len = mt_summary_exit_json(
				s, record + 4096 + sites_len, 4096);
		}
		closing(&c);
		if (record)
			mt_raw_munmap(record, record_size);
	}
	if (json)
		mt_raw_munmap(json, size);
	if (sites)
		mt_raw_munmap(sites, sites_size);
}

static void print_text(const struct mt_summary *s)
{
	const uint64_t *n = s->f.c.calls;
	uint64_t other_allocs = n[MT_CALL_REALLOCARRAY] +
				n[MT_CALL_POSIX_MEMALIGN] +
				n[MT_CALL_ALIGNED_ALLOC] + n[MT_CALL_MEMALIGN] +
				n[MT_CALL_VALLOC] + n[MT_CALL_PVALLOC];

	mt_say("pid %ld, backend %s %s (%s)", s->pid, s->backend_name,
	       s->backend_version, s->backend_library);
	mt_say("  calls: malloc %llu, free %llu, calloc %llu, realloc %llu, "
	       "aligned and other %llu",
	       (unsigned long long)n[MT_CALL_MALLOC],
	       (unsigned long long)n[MT_CALL_FREE],
	       (unsigned long long)n[MT_CALL_CALLOC],
	       (unsigned long long)n[MT_CALL_REALLOC],
	       (unsigned long long)other_allocs);
	mt_say("  bytes: %llu allocated, %llu freed, peak live %llu%s",
	       (unsigned long long)s->f.c.allocated,
	       (unsigned long long)s->f.c.freed,
	       (unsigned long long)s->peak_live,
	       s->peak_sampled ? " (sampled)" : "");
	struct mt_figure brk = mt_figures_syscall(&s->f, MT_SYS_BRK);
	mt_say("  syscalls (%s): brk %llu (%llu grow, %llu shrink), mmap %llu, "
	       "munmap %llu, mremap %llu, madvise %llu, mprotect %llu",
	       brk.source, (unsigned long long)brk.value,
	       (unsigned long long)s->f.c.brk_grow,
	       (unsigned long long)s->f.c.brk_shrink,
	       (unsigned long long)mt_figures_syscall(&s->f, MT_SYS_MMAP).value,
	       (unsigned long long)mt_figures_syscall(&s->f, MT_SYS_MUNMAP).value,
	       (unsigned long long)mt_figures_syscall(&s->f, MT_SYS_MREMAP).value,
	       (unsigned long long)mt_figures_syscall(&s->f, MT_SYS_MADVISE).value,
	       (unsigned long long)mt_figures_syscall(&s->f, MT_SYS_MPROTECT).value);
	struct mt_figure minor = mt_figures_faults(&s->f, false);
	mt_say("  page faults (%s) %llu minor, %llu major; cpu %.3f s user, "
	       "%.3f s system; wall %.3f s",
	       minor.source, (unsigned long long)minor.value,
	       (unsigned long long)mt_figures_faults(&s->f, true).value, s->f.user_s,
	       s->f.system_s, s->wall_s);
	const struct mt_shim_cost *k = &s->shim_cost;
	mt_say("  shim's own time (estimate from measured costs): %.3f s, %.1f%% "
	       "of the cpu (%.3f s in %s calls, %.3f s its threads, %.3f s "
	       "start-up, %.3f s the program's thread starts, %.3f s its "
	       "regions)",
	       k->estimated_s, 100 * k->share, k->calls_s,
	       k->tracing ? "traced" : "counted", k->threads_s, k->start_s,
	       k->thread_starts_s, k->regions_s);
}

void mt_report_at_exit(void (*closing)(const struct mt_closing *record))
{
	struct mt_summary s;

	gather(&s);
	if (!mt_opt.quiet)
		print_text(&s);
	if (mt_opt.summary_path || mt_tracing)
		write_json(&s, closing);
}
