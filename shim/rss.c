/* Resident memory over the run.  Each sample reads /proc/self/statm: the
 * anonymous resident bytes (resident - shared), the file-backed ones
 * (shared); and sums the threads' counters at the same moment: the heap's
 * live bytes, and what the program mapped itself (its mmaps less its
 * munmaps, the allocator's apart: files, an interpreter's arenas).  What
 * is resident and anonymous but neither live nor the program's own is what
 * the allocator keeps (explain's memory-kept).
 *
 * With events recorded, a thread of the shim's own samples every
 * MEMTRACE_RSS ms into an rss event, so the program's threads pay nothing.
 * Without (counting mode has no thread of the shim's), the program's
 * threads sample after freeing a large block (or moving one by realloc)
 * or another MiB of small ones, at most that often, or sooner at a new
 * high and at each sixteenth their live bytes fall: that is when memory
 * is given back, or kept.  The last sample is taken at exit.
 *
 * The file stays open at a descriptor at the top of the range (opening it
 * at each look would take the lowest free number, the one the program's
 * next open() expects), read with pread, and checked first: a program
 * that closes descriptors it did not open, or puts a file of its own at
 * that number, stops the samples, and nothing is read from its file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "emit.h"
#include "kcounters.h"
#include "mode.h"
#include "options.h"
#include "rawsys.h"
#include "rss.h"
#include "stack_room.h"

uint64_t mt_rss_due_ns = UINT64_MAX;

static int statm_fd = -1;
static dev_t statm_dev;
static ino_t statm_ino;

/* The samples' figures, under a lock; and after the exit sample, no more.
 * A sample is skipped rather than waited for: the lock's holder may be
 * the thread a signal handler interrupted, on this very thread. */
static uintptr_t lock;
static struct mt_resident_series series;
static uint64_t start_ns; /* of the samples' time_ms */
static bool finished;

static bool try_lock(void)
{
	return !__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE);
}

static void unlock(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

/* At exit the last sample must close the samples (none after it, so that
 * the summary and the trace hold the same ones): a sampler that holds the
 * lock finishes within a sample's time; after a bounded wait, go on. */
static bool lock_at_exit(void)
{
	for (int i = 0; i < 1000000; i++)
		if (try_lock())
			return true;
	return false;
}

static uint64_t coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void open_statm(void)
{
	struct stat st;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		fd = mt_fd_out_of_the_way(fd);
	if (fd < 0 || fstat(fd, &st) != 0) {
		statm_fd = -1;
		return;
	}
	statm_dev = st.st_dev;
	statm_ino = st.st_ino;
	__atomic_store_n(&statm_fd, fd, __ATOMIC_RELEASE);
}

/* ---- what a mapping held when it was unmapped ----------------------------
 *
 * A mapping given back and made again faults its memory in anew; with
 * transparent huge pages one fault brings 2 MiB, so faults are far fewer
 * than pages, and a churn of such mappings takes fewer faults than the
 * process has pages resident (new-user trial 5: np.fromfile of 64 MiB, 30
 * times, 20,900 faults against 24,200 pages resident).  So the memory is
 * counted instead: just before an anonymous mapping of MT_LARGE_BYTES or
 * more is unmapped, the bytes resident in it (touched since it was
 * mapped: each came by a fault), and those in huge pages.  The
 * PAGEMAP_SCAN ioctl of /proc/self/pagemap (Linux 6.7) tells both in one
 * walk of the range's page tables: 10-20 us for 64 MiB of huge pages, some
 * 0.3-0.5 ms for 64 MiB of 4 KiB pages (about 25 ns a page, 1% of the
 * 3 us the fault of each took).  The descriptor is kept like statm's. */
#ifndef PAGEMAP_SCAN
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages,
		category_inverted, category_mask, category_anyof_mask,
		return_mask;
};
struct page_region {
	uint64_t start, end, categories;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_HUGE (1 << 6)
#endif

static int pagemap_fd = -1;
static dev_t pagemap_dev;
static ino_t pagemap_ino;

/* Where 4 KiB pages back all memory, the faults count a churn (each
 * refault is one), and the look is not made: THP "never", or "madvise"
 * before the process advised any memory MADV_HUGEPAGE.  A look costs some
 * 3 syscalls, 1.5 us or more: on a churn of 128 KiB mappings (32 faults
 * each) that would be several percent of what it measures. */
bool mt_rss_huge_possible;
static bool huge_when_advised, advised;

void mt_rss_huge_advised(void)
{
	advised = true;
	if (huge_when_advised && pagemap_fd >= 0)
		__atomic_store_n(&mt_rss_huge_possible, true, __ATOMIC_RELAXED);
}

/* The bracketed word of the THP setting: always, madvise or never. */
static void read_thp_mode(void)
{
	char buf[128];
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled",
		      O_RDONLY | O_CLOEXEC);
	long n = fd < 0 ? -1 : mt_raw_pread(fd, buf, sizeof buf - 1, 0);
	if (fd >= 0)
		mt_raw_close(fd);
	buf[n > 0 ? n : 0] = '\0';
	bool always = strstr(buf, "[always]") != NULL;
	huge_when_advised = always || strstr(buf, "[madvise]") != NULL;
	/* (a forked child's memory is advised as its parent's was) */
	__atomic_store_n(&mt_rss_huge_possible,
			 (always || (huge_when_advised && advised)) &&
				 pagemap_fd >= 0,
			 __ATOMIC_RELAXED);
}

/* The pages of [start, end) present that have any of `want`, and those
 * of them in huge pages (first: the first one's address); false when the
 * walk fails. */
static bool scan(uint64_t start, uint64_t end, uint64_t want, uint64_t *bytes,
		 uint64_t *huge, uint64_t *first)
{
	struct page_region v[16];
	*bytes = *huge = 0;
	*first = end;
	while (start < end) {
		struct pm_scan_arg a = {
			.size = sizeof a,
			.start = start,
			.end = end,
			.vec = (uint64_t)(uintptr_t)v,
			.vec_len = sizeof v / sizeof *v,
			.category_mask = want,
			.return_mask = PAGE_IS_HUGE,
		};
		long n = mt_raw(-1, SYS_ioctl, pagemap_fd, (long)PAGEMAP_SCAN,
				(long)&a, 0, 0, 0);
		if (n < 0)
			return false;
		for (long i = 0; i < n; i++) {
			if (v[i].start < *first)
				*first = v[i].start;
			*bytes += v[i].end - v[i].start;
			if (v[i].categories & PAGE_IS_HUGE)
				*huge += v[i].end - v[i].start;
		}
		if (a.walk_end <= start)
			return false;
		start = a.walk_end;
	}
	return true;
}

static void open_pagemap(void)
{
	struct stat st;
	uint64_t anon, huge, first,
		here = (uint64_t)(uintptr_t)&pagemap_fd & ~4095ull;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		fd = mt_fd_out_of_the_way(fd);
	if (fd < 0)
		return;
	pagemap_fd = fd;
	/* (a kernel without the ioctl: no descriptor kept for nothing) */
	if (fstat(fd, &st) != 0 ||
	    !scan(here, here + 4096, PAGE_IS_PRESENT, &anon, &huge, &first)) {
		mt_raw_close(fd);
		pagemap_fd = -1;
		return;
	}
	pagemap_dev = st.st_dev;
	pagemap_ino = st.st_ino;
	read_thp_mode();
	/* (no huge pages ever: no descriptor kept for nothing) */
	if (!huge_when_advised) {
		mt_raw_close(fd);
		pagemap_fd = -1;
	}
}

void mt_rss_giving_back_slow(void *addr, size_t len, bool by_allocator,
			     bool purge)
{
	struct mt_thread *t = mt_self();
	struct stat st;
	uint64_t anon, huge, first, file, ignored,
		start = (uint64_t)(uintptr_t)addr;
	int fd = __atomic_load_n(&pagemap_fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || !t || __atomic_load_n(&finished, __ATOMIC_RELAXED))
		return;
	/* (checked as statm is: a program that closed it, or put its own
	 * file there, is read no more) */
	if (fstat(fd, &st) != 0 || st.st_dev != pagemap_dev ||
	    st.st_ino != pagemap_ino) {
		__atomic_store_n(&pagemap_fd, -1, __ATOMIC_RELAXED);
		return;
	}
	if (!scan(start & ~4095ull, start + len, PAGE_IS_PRESENT, &anon, &huge,
		  &first) ||
	    !anon)
		return;
	/* A file's mapping (the program's own) holds pages of the page
	 * cache, not memory zeroed for it: told by its first page, as asking
	 * it of every page costs ten times the walk (a look at each page's
	 * struct page: 3.6-6.9 ms for 64 MiB of 4 KiB pages). */
	if (!scan(first, first + 4096, PAGE_IS_PRESENT | PAGE_IS_FILE, &file,
		  &ignored, &ignored) ||
	    file)
		return;
	if (purge) {
		mt_count_purge_touched(&t->c, anon, huge, by_allocator);
		MT_EMIT_EVENT(t, purge_touched, .by_allocator = by_allocator,
			      .bytes = anon, .huge_bytes = huge);
		return;
	}
	mt_count_unmap_touched(&t->c, anon, huge, by_allocator);
	MT_EMIT_EVENT(t, unmap_touched, .by_allocator = by_allocator,
		      .bytes = anon, .huge_bytes = huge);
}

/* The next decimal number in *at, after spaces (not sscanf, whose stack
 * is some 2 KiB: a sample may be taken in a signal handler on a small
 * alternate stack). */
static bool next_number(const char **at, uint64_t *n)
{
	const char *p = *at;
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	for (*n = 0; *p >= '0' && *p <= '9'; p++)
		*n = *n * 10 + (uint64_t)(*p - '0');
	*at = p;
	return true;
}

static bool read_statm(uint64_t *anon, uint64_t *file)
{
	struct stat st;
	char buf[128];
	int fd = __atomic_load_n(&statm_fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != statm_dev ||
	    st.st_ino != statm_ino) {
		__atomic_store_n(&statm_fd, -1, __ATOMIC_RELAXED);
		__atomic_store_n(&mt_rss_due_ns, UINT64_MAX, __ATOMIC_RELAXED);
		return false;
	}
	long n = mt_raw_pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *at = buf;
	uint64_t size, resident, shared;
	if (!next_number(&at, &size) || !next_number(&at, &resident) ||
	    !next_number(&at, &shared) || shared > resident)
		return false;
	*anon = (resident - shared) * mt_page_size();
	*file = shared * mt_page_size();
	return true;
}

bool mt_rss_anon_now(uint64_t *anon)
{
	uint64_t file;
	return read_statm(anon, &file);
}

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The time of the last sample, which the next never goes back before. */
static uint64_t last_time_ms;

/* fell: taken because the thread's live bytes fell (rss.h); at_ns: the
 * time it stands for (0: now). */
static bool sample_stamped(struct mt_thread *t, bool at_exit, uint64_t freed,
			   bool fell, uint64_t at_ns)
{
	/* The counters first, then the large blocks being freed, then the
	 * pages: a block the sum saw freed is live here until its pages
	 * went (mt_count_free_of). */
	struct mt_counters c;
	mt_threads_sum(&c);
	uint64_t freeing = mt_threads_large_in_flight(), anon, file;
	if (!read_statm(&anon, &file))
		return false;
	int64_t mapped = 0;
	for (int sys = MT_SYS_MMAP; sys <= MT_SYS_MUNMAP; sys++) {
		int64_t own = (int64_t)(c.sys_bytes[sys] - c.sys_bytes_by_allocator[sys]);
		mapped += sys == MT_SYS_MMAP ? own : -own;
	}
	struct mt_ev_rss s = {
		.anon_bytes = anon,
		.file_bytes = file,
		.live_bytes = minus(c.allocated, c.freed) + freeing,
		.program_mapped_bytes = mapped > 0 ? (uint64_t)mapped : 0,
		.at_exit = at_exit,
		.freed_bytes = freed,
		.large_live_bytes = minus(c.large_bytes, c.large_freed_bytes) + freeing,
	};
	bool locked = at_exit ? lock_at_exit() : try_lock();
	if (!locked)
		return false;
	bool taken = !finished;
	if (taken) {
		/* Taken in the lock: the fold's times never go back. */
		s.time_ms = ((at_ns ? at_ns : coarse_ns()) - start_ns) / 1000000;
		if (s.time_ms < last_time_ms)
			s.time_ms = last_time_ms;
		last_time_ms = s.time_ms;
		finished = at_exit;
		mt_resident_fold(&series, &s, fell);
		MT_EMIT(event, t, MT_TAG_rss, (const uint64_t *)&s,
			sizeof s / sizeof(uint64_t));
	}
	unlock();
	return taken;
}

/* What a sample takes of the stack (some 3 KiB), twice over. */
#define SAMPLE_STACK_BYTES (8u << 10)

static bool sample(struct mt_thread *t, bool at_exit, uint64_t freed, bool fell)
{
	/* (not taken: the next free or malloc tries again) */
	if (!at_exit && mt_stack_room(SAMPLE_STACK_BYTES) == MT_STACK_SHORT)
		return false;
	return sample_stamped(t, at_exit, freed, fell, 0);
}

/* The most live bytes (with the block just freed) a sample after a free
 * has seen: a free that finds this thread's own live bytes an eighth above
 * it is sampled before its time, so that a burst (a buffer doubled several
 * times within one period) has its peak sampled, at a cost of at most one
 * sample per eighth of growth. */
static uint64_t sampled_high;

/* A free that finds the thread's own live bytes a sixteenth below its
 * last sample's (and that above 1 MiB) is sampled before its time too,
 * and the sample says so: a burst of frees (a table mostly freed, a
 * teardown) is sampled down to its last sixteenth, so that the sample
 * after its end is near that end, and the fold does not count the
 * stretches that end in such a sample as memory kept (common/resident.h):
 * the memory was still being freed.  At most one sample per sixteenth of
 * fall, each after a large free or a MiB of small ones: some 40 for a
 * table freed from 200 MiB down to 2. */
#define FALL_FLOOR (1u << 20)

/* A look after a pause in the thread's frees, twice the period or more
 * and eight times the gap before the last look, is not a fall's sample
 * though the live bytes fell a sixteenth since the last: a burst ended
 * below its last sixteenth, the thread ran on (the memory kept while it
 * did is what the program paid for), and then freed again (a MiB at most
 * before this look).  The sample shows the stretch held (a fall of at most
 * a sixteenth and 2 MiB); the next burst's are samples of its falls.  A
 * teardown that frees at a steady pace, however slow, has no such pause:
 * without it a records table expired, worked on for a second and then
 * freed was never seen to keep its memory. */
static bool paused_before(struct mt_thread *t, uint64_t now)
{
	uint64_t gap = now - t->rss_look_ns,
		 period = mt_opt.rss_period_ms * 1000000ull;
	bool paused = t->rss_look_ns && gap >= 2 * period &&
		      gap / 8 >= t->rss_look_gap_ns;
	t->rss_look_gap_ns = gap;
	t->rss_look_ns = now;
	return paused;
}

void mt_rss_sample_after_free(struct mt_thread *t, size_t freed)
{
	uint64_t now = coarse_ns(), due = __atomic_load_n(&mt_rss_due_ns,
							  __ATOMIC_RELAXED);
	int64_t own = (int64_t)(t->c.allocated - t->c.freed);
	uint64_t after = own > 0 ? (uint64_t)own : 0, before = after + freed,
		 high = __atomic_load_n(&sampled_high, __ATOMIC_RELAXED),
		 from = t->rss_fall_from;
	bool higher = before > high + high / 8;
	bool paused = paused_before(t, now);
	bool fell = !paused && from > FALL_FLOOR && after < from - from / 16;
	if (!higher && !fell && !paused &&
	    (now < due || !__atomic_compare_exchange_n(
				   &mt_rss_due_ns, &due,
				   now + mt_opt.rss_period_ms * 1000000ull, false,
				   __ATOMIC_RELAXED, __ATOMIC_RELAXED)))
		return;
	if (higher)
		__atomic_store_n(&sampled_high, before, __ATOMIC_RELAXED);
	mt_tls.hidden++;
	/* (not taken, another thread sampling: the fall is tried again) */
	if (sample(t, false, freed, fell)) {
		t->rss_fall_from = after;
		if (fell && mt_glibc_chunks && !t->rss_after_fall) {
			/* the next malloc takes the slow way, and looks */
			__atomic_fetch_add(&mt_rss_falls_armed, 1,
					   __ATOMIC_RELAXED);
			t->rss_after_fall = true;
			t->rss_sampled_before = false;
			t->rss_fall_ns = coarse_ns();
			t->rss_fall_cpu_ns = thread_cpu_ns();
			t->sample_at = 0;
		}
	}
	mt_tls.hidden--;
}

/* glibc sorts the chunks a burst of small frees left in its fast bins on
 * the next malloc of 1 KiB or more (malloc_consolidate): 180 ms after 1.5
 * million frees, for the buffer of the printf before exit, while the
 * memory is still held.  That is the burst's end, not memory kept while
 * the program runs on.  So the thread's first such malloc after a fall's
 * sample is sampled before its call (the stretch since: held, the thread
 * ran on) and after it (the call's: part of the burst).  Only the first
 * malloc after the fall looks. */
int mt_rss_falls_armed;

static void disarm(struct mt_thread *t)
{
	if (!t->rss_after_fall)
		return;
	t->rss_after_fall = false;
	__atomic_fetch_sub(&mt_rss_falls_armed, 1, __ATOMIC_RELAXED);
}

void mt_rss_before_malloc(size_t n)
{
	struct mt_thread *t = mt_tls.thread;
	/* (the program's: the shim's own blocks are never counted, and
	 * nothing would clear the mark) */
	if (t && mt_glibc_fills_blocks && n >= MT_LARGE_BYTES && !mt_tls.hidden)
		mt_rss_large_request(t, n);
	/* (a smaller one is served from the bins, unsorted: not judged) */
	if (!t || !t->rss_after_fall || t->rss_sampled_before || n < 1024 ||
	    __atomic_load_n(&mt_rss_due_ns, __ATOMIC_RELAXED) == UINT64_MAX)
		return;
	mt_tls.hidden++;
	t->rss_sampled_before = sample(t, false, 0, false);
	mt_tls.hidden--;
}

/* calloc, realloc and the aligned ones are not sampled before their call:
 * their look judges by the thread's CPU time since the fall's sample
 * (sorting, or computing: not told apart) */
void mt_rss_after_fall(struct mt_thread *t, size_t usable)
{
	bool before = t->rss_sampled_before;
	disarm(t);
	if (usable < 1024 ||
	    __atomic_load_n(&mt_rss_due_ns, __ATOMIC_RELAXED) == UINT64_MAX)
		return;
	uint64_t wall = coarse_ns() - t->rss_fall_ns,
		 cpu = thread_cpu_ns() - t->rss_fall_cpu_ns;
	int64_t own = (int64_t)(t->c.allocated - t->c.freed);
	mt_tls.hidden++;
	/* (an eighth: a thread sorting on a busy machine runs a part of
	 * the time; one that slept, much less) */
	/* The fall goes on from where it got to, not from the live bytes
	 * with this block: a string rebuilt each step (s = s + x, a block
	 * the size of s made, then the old one freed) would otherwise fall
	 * by half at every free, and take three samples a step (36,000 a
	 * second, a second of system time in six: new-user trial 8). */
	if (sample(t, false, 0, before || cpu >= wall / 8) && own >= 0 &&
	    (uint64_t)own < t->rss_fall_from)
		t->rss_fall_from = (uint64_t)own;
	mt_tls.hidden--;
}

void mt_rss_thread_exit(struct mt_thread *t)
{
	disarm(t);
}

void mt_rss_after_small_frees(struct mt_thread *t)
{
	t->rss_check_at = t->c.freed + (1u << 20);
	mt_rss_after_large_free(t, 0);
}

/* How often the process's figures go into the trace (rss.h): a
 * process killed then is measured to within this of its end. */
#define PROGRESS_MS 100

static void (*write_progress)(struct mt_thread *t);

void mt_rss_write_progress_with(void (*write)(struct mt_thread *t))
{
	__atomic_store_n(&write_progress, write, __ATOMIC_RELEASE);
}

static void *sample_periodically(void *arg)
{
	(void)arg;
	mt_become_shim_thread();
	unsigned every = mt_opt.rss_period_ms < PROGRESS_MS
				 ? PROGRESS_MS / mt_opt.rss_period_ms
				 : 1;
	for (unsigned n = 0;; n++) {
		poll(NULL, 0, (int)mt_opt.rss_period_ms);
		if (!mt_tracing || statm_fd < 0 || mt_shim_threads_paused())
			return NULL;
		sample(mt_self(), false, 0, false);
		void (*write)(struct mt_thread *) =
			__atomic_load_n(&write_progress, __ATOMIC_ACQUIRE);
		if (write && n % every == 0)
			write(mt_self());
	}
}

void mt_rss_start(void)
{
	if (!mt_opt.rss_period_ms)
		return;
	open_statm();
	if (statm_fd < 0)
		return;
	open_pagemap();
	if (mt_glibc_fills_blocks)
		__atomic_fetch_add(&mt_rss_falls_armed, 1, __ATOMIC_RELAXED);
	start_ns = coarse_ns();
	sample(mt_self(), false, 0, false); /* the first, at start-up */
	if (!mt_tracing)
		__atomic_store_n(&mt_rss_due_ns, coarse_ns(), __ATOMIC_RELAXED);
	else if (!mt_start_shim_thread(sample_periodically) &&
		 !mt_shim_threads_retired())
		mt_warn("no thread to sample resident memory: the trace has it "
			"at start and exit only");
}

void mt_rss_restart_in_child(void)
{
	/* The parent's file (its /proc/self): ours no more, not closed
	 * here either, since the program may have put its own there. */
	struct stat st;
	if (statm_fd >= 0 && fstat(statm_fd, &st) == 0 &&
	    st.st_dev == statm_dev && st.st_ino == statm_ino)
		close(statm_fd);
	statm_fd = -1;
	/* (the parent's /proc/self/pagemap walks the parent's memory) */
	if (pagemap_fd >= 0 && fstat(pagemap_fd, &st) == 0 &&
	    st.st_dev == pagemap_dev && st.st_ino == pagemap_ino)
		close(pagemap_fd);
	pagemap_fd = -1;
	mt_rss_huge_possible = false; /* (until the child's is open) */
	mt_rss_due_ns = UINT64_MAX;
	mt_rss_falls_armed = 0; /* (the threads' flags are cleared too) */
	sampled_high = 0;
	last_time_ms = 0;
	memset(&series, 0, sizeof series);
	finished = false;
	lock = 0;
	mt_rss_start();
}

/* Without a trace, samples are taken where the program frees, so a program
 * that frees what it held and then works on has its last one inside that
 * burst of frees, and the stretch from there to the exit was not counted
 * as held (the live bytes fell: common/resident.h).  The memory the
 * allocator kept while the program worked on went unseen: 259 MB for 1.5
 * s after 4 threads freed 256 MiB of small blocks on tcmalloc (new-user
 * trial 16).  Each thread looks after each MiB of small frees and each
 * large one (rss_look_ns), so when the last look of every thread came two
 * periods or more before the exit, nothing was freed since but less than a
 * MiB a thread, and what the exit finds was held from then: a sample there,
 * with the exit's figures, says so.  (A teardown's frees just before the
 * exit take their own samples, after a pause: paused_before.) */
static void sample_frees_end(struct mt_thread *self)
{
	if (__atomic_load_n(&mt_rss_due_ns, __ATOMIC_RELAXED) == UINT64_MAX)
		return;
	uint64_t end = 0, now = coarse_ns(),
		 period = mt_opt.rss_period_ms * 1000000ull;
	for (struct mt_thread *t = mt_threads_first(); t; t = t->next) {
		uint64_t look = __atomic_load_n(&t->rss_look_ns, __ATOMIC_RELAXED);
		if (look > end)
			end = look;
	}
	if (end >= start_ns && end && now > end + 2 * period)
		sample_stamped(self, false, 0, false, end);
}

void mt_rss_at_exit(struct mt_thread *t)
{
	sample_frees_end(t);
	sample(t, true, 0, false);
	__atomic_store_n(&mt_rss_due_ns, UINT64_MAX, __ATOMIC_RELAXED);
}

void mt_rss_figures(struct mt_resident *out)
{
	bool locked = lock_at_exit();
	mt_resident_figures(&series, out);
	if (locked)
		unlock();
}
