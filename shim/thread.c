#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rawsys.h"
#include "thread.h"
#include "emit.h"

__thread struct mt_tls mt_tls __attribute__((tls_model("initial-exec")));

static struct mt_thread *all_blocks;
static unsigned threads_seen;
static uint64_t peak_live;
static pthread_key_t exit_key;
static bool exit_key_ready;
static void (*on_thread_exit)(struct mt_thread *);
static mt_thread_create_fn *real_create = pthread_create;
/* glibc's count of the threads running (the shim's too), which ends the
 * process when it falls to 0; for its thread debugger, so exported, but
 * private: NULL where it is not. */
static int *nptl_nthreads;
/* glibc's own word for "this process has one thread" (libc's copy, not a
 * program's copy-relocated one): see start(). */
static char *libc_single_threaded;

static void thread_detach(void *arg)
{
	struct mt_thread *t = arg;

	/* A free in a later TLS destructor attaches again (and re-arms this
	 * destructor); until then the block is free for another thread. */
	if (on_thread_exit)
		on_thread_exit(t);
	mt_tls.thread = NULL;
	__atomic_store_n(&t->in_use, 0, __ATOMIC_RELEASE);
}

void mt_threads_init(void (*on_exit)(struct mt_thread *),
		     mt_thread_create_fn *create)
{
	on_thread_exit = on_exit;
	real_create = create;
	exit_key_ready = pthread_key_create(&exit_key, thread_detach) == 0;
	nptl_nthreads = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
	libc_single_threaded = dlvsym(RTLD_NEXT, "__libc_single_threaded",
				      "GLIBC_2.32");
}

static struct mt_thread *claim_free_block(void)
{
	for (struct mt_thread *t = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
	     t; t = t->next) {
		int expected = 0;
		if (__atomic_compare_exchange_n(&t->in_use, &expected, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return t;
	}
	return NULL;
}

static struct mt_thread *new_block(void)
{
	struct mt_thread *t = mt_raw_mmap(sizeof *t);

	if (!t)
		return NULL;
	t->in_use = 1;
	t->next = __atomic_load_n(&all_blocks, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&all_blocks, &t->next, t, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return t;
}

/* Fallback when mmap fails: counts go to one shared block rather than
 * nowhere (racy, but never a crash of the host program). */
static struct mt_thread overflow_block;

struct mt_thread *mt_thread_attach(void)
{
	int saved_errno = errno;
	struct mt_thread *t = claim_free_block();

	if (!t)
		t = new_block();
	if (!t)
		t = &overflow_block;
	t->owners++;
	t->live_mark = (int64_t)(t->c.allocated - t->c.freed);
	mt_tls.thread = t;
	MT_EMIT(thread_attach, t);
	/* The shim's own threads (the sample collector) are not the
	 * program's. */
	if (!mt_tls.shim_thread && !mt_tls.seen) {
		mt_tls.seen = true;
		__atomic_fetch_add(&threads_seen, 1, __ATOMIC_RELAXED);
	}
	if (exit_key_ready && t != &overflow_block)
		pthread_setspecific(exit_key, t);
	errno = saved_errno;
	return t;
}

static int64_t live_sum(void)
{
	int64_t sum = 0;

	for (struct mt_thread *t = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
	     t; t = t->next)
		sum += (int64_t)(__atomic_load_n(&t->c.allocated, __ATOMIC_RELAXED) -
				 __atomic_load_n(&t->c.freed, __ATOMIC_RELAXED));
	return sum;
}

static void peak_raise(uint64_t live)
{
	uint64_t seen = __atomic_load_n(&peak_live, __ATOMIC_RELAXED);

	while (live > seen &&
	       !__atomic_compare_exchange_n(&peak_live, &seen, live, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void mt_peak_check(struct mt_thread *t, int64_t live)
{
	if (!mt_peak_is_sampled()) {
		/* One thread: its live bytes are the process's, exactly. */
		t->live_mark = live;
		peak_raise((uint64_t)live);
		return;
	}
	/* Several threads: sum all blocks, but only each time this thread
	 * has grown by another 1/64 (at least 64 KiB), so a thread whose
	 * blocks are freed elsewhere does not sum on every malloc. */
	int64_t step = live / 64 > 65536 ? live / 64 : 65536;
	t->live_mark = live + step;
	int64_t sum = live_sum();
	if (sum > 0)
		peak_raise((uint64_t)sum);
}

void mt_threads_sum(struct mt_counters *out)
{
	memset(out, 0, sizeof *out);
	for (struct mt_thread *t = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
	     t; t = t->next)
		mt_counters_add(out, &t->c);
	mt_counters_add(out, &overflow_block.c);
}

uint64_t mt_threads_large_in_flight(void)
{
	uint64_t bytes = 0;
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* (mt_count_free_of's) */
	for (struct mt_thread *t = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
	     t; t = t->next)
		bytes += __atomic_load_n(&t->large_in_flight, __ATOMIC_RELAXED);
	return bytes;
}

uint64_t mt_threads_large_peak(void)
{
	int64_t peak = 0;
	for (struct mt_thread *t = __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
	     t; t = t->next)
		if (t->large_peak > peak)
			peak = t->large_peak;
	return (uint64_t)peak;
}

uint64_t mt_peak_live(void)
{
	int64_t now = live_sum();
	uint64_t peak = __atomic_load_n(&peak_live, __ATOMIC_RELAXED);
	return now > 0 && (uint64_t)now > peak ? (uint64_t)now : peak;
}

bool mt_peak_is_sampled(void)
{
	return __atomic_load_n(&threads_seen, __ATOMIC_RELAXED) > 1;
}

struct mt_thread *mt_threads_first(void)
{
	return __atomic_load_n(&all_blocks, __ATOMIC_ACQUIRE);
}

static uint64_t threads_started;

void mt_thread_started(void)
{
	__atomic_fetch_add(&threads_started, 1, __ATOMIC_RELAXED);
}

uint64_t mt_threads_started(void)
{
	return __atomic_load_n(&threads_started, __ATOMIC_RELAXED);
}

unsigned mt_threads_seen(void)
{
	return __atomic_load_n(&threads_seen, __ATOMIC_RELAXED);
}

void mt_threads_reset_after_fork(void)
{
	/* Only the forking thread lives on in the child. */
	for (struct mt_thread *t = all_blocks; t; t = t->next) {
		memset(&t->c, 0, sizeof t->c);
		t->live_mark = 0;
		t->sample_at = 0;
		t->samples_taken = 0;
		t->sample_shift = 0;
		t->rss_check_at = 0;
		t->rss_fall_from = 0;
		t->rss_look_ns = 0;
		t->rss_look_gap_ns = 0;
		t->rss_after_fall = false;
		t->rss_sampled_before = false;
		t->large_peak = 0;
		t->open_regions = 0;
		t->region_now = 0;
		t->region_name_now = NULL;
		if (t != mt_tls.thread)
			t->in_use = 0;
	}
	memset(&overflow_block.c, 0, sizeof overflow_block.c);
	threads_seen = mt_tls.thread ? 1 : 0;
	threads_started = 0;
	peak_live = 0;
}

/* The shim's threads, so that they can be stopped while the program does
 * what the kernel allows only a process of one thread (entering a new user
 * namespace), and started again. */
enum { MAX_SHIM_THREADS = 4 };
static struct shim_thread {
	pthread_t id;
	void *(*fn)(void *);
	bool running;  /* in its function */
	bool joinable; /* started, not joined yet */
	uint64_t ended_cpu_ns; /* CPU time of its runs that ended */
	uint64_t ended_faults; /* and their page faults */
} shim_threads[MAX_SHIM_THREADS];
static unsigned nshim_threads;
static bool shim_threads_paused;
/* Stopped for good, to leave their room to the program's (and in the
 * children forked after: the limit that made room short is theirs too). */
static bool shim_threads_retired;

/* A shim thread counts as running only while it runs its function: one
 * that returns on its own (its trace stopped, the program closed its
 * descriptors) must not be counted, nor one not started yet, or the
 * program's last thread would be taken for the shim's (a count too low
 * only puts the end off). */
static void *run_shim_thread(void *arg)
{
	struct shim_thread *s = arg;
	__atomic_store_n(&s->running, true, __ATOMIC_RELAXED);
	void *r = s->fn(NULL);
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		__atomic_add_fetch(&s->ended_cpu_ns,
				   (uint64_t)cpu.tv_sec * 1000000000u +
					   (uint64_t)cpu.tv_nsec,
				   __ATOMIC_RELAXED);
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) == 0)
		__atomic_add_fetch(&s->ended_faults,
				   (uint64_t)(ru.ru_minflt + ru.ru_majflt),
				   __ATOMIC_RELAXED);
	__atomic_store_n(&s->running, false, __ATOMIC_RELAXED);
	return r;
}

static bool start(struct shim_thread *s)
{
	pthread_attr_t attr;
	sigset_t all, old;

	pthread_attr_init(&attr);
	/* glibc maps the thread's stack and protects its guard page: the
	 * shim's own system calls, which the kernel counters see. */
	__atomic_fetch_add(&mt_shim_syscalls[MT_SYS_MMAP], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mt_shim_syscalls[MT_SYS_MPROTECT], 1, __ATOMIC_RELAXED);
	/* Every signal blocked in it (it inherits this mask): a signal sent
	 * to the process goes to one of the program's threads, as it would
	 * without the shim (a program may wait for signals in one thread). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* A program of one thread stays one to glibc, whose malloc then
	 * takes no lock, nor fork any of its own, so that a signal handler
	 * may fork (and its child allocate) wherever its thread was, in
	 * malloc or free: with the shim's threads counted, such a fork or
	 * its child's first malloc waited for ever for the arena's lock the
	 * interrupted malloc held.  The shim's threads never allocate; the
	 * program's first thread tells glibc otherwise, as without the shim;
	 * setuid and its kind reach the shim's threads too (mt_setxid_*). */
	bool single = libc_single_threaded &&
		      __atomic_load_n(libc_single_threaded, __ATOMIC_RELAXED);
	/* Not through the shim's own pthread_create, whose hidden start
	 * frees a block in the new thread: glibc's free there gave each of
	 * the shim's threads a malloc arena, 64 MiB of address space (under
	 * ulimit -v, the program's).  The thread hides itself
	 * (mt_become_shim_thread). */
	s->joinable = real_create(&s->id, &attr, run_shim_thread, s) == 0;
	if (single)
		__atomic_store_n(libc_single_threaded, 1, __ATOMIC_RELAXED);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return s->joinable;
}

bool mt_start_shim_thread(void *(*fn)(void *))
{
	if (nshim_threads == MAX_SHIM_THREADS ||
	    __atomic_load_n(&shim_threads_retired, __ATOMIC_RELAXED))
		return false;
	struct shim_thread *s = &shim_threads[nshim_threads++];
	s->fn = fn;
	s->ended_cpu_ns = 0; /* (after fork: the parent's thread's) */
	s->ended_faults = 0;
	return start(s);
}

static unsigned shim_threads_running(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nshim_threads; i++)
		n += __atomic_load_n(&shim_threads[i].running, __ATOMIC_RELAXED);
	return n;
}

/* Has the program's last thread ended?  Then its main thread has too:
 * /proc/self/exe, the thread group leader's, is gone (the leader stays a
 * zombie while other threads run); and every other thread is the shim's
 * (/proc/self/task's link count is 2 + threads, the zombie included).
 * Neither look opens a descriptor the program could see.  Without /proc
 * (a chroot, a sandbox), glibc's own count says it. */
static bool program_threads_gone(void)
{
	struct stat st;
	char exe[8];
	if (stat("/proc/self/task", &st) != 0)
		return nptl_nthreads &&
		       !__atomic_load_n(&shim_threads_paused, __ATOMIC_RELAXED) &&
		       (unsigned)__atomic_load_n(nptl_nthreads, __ATOMIC_ACQUIRE) ==
			       shim_threads_running();
	if (st.st_nlink != 2 + 1 + shim_threads_running())
		return false;
	return readlink("/proc/self/exe", exe, sizeof exe) < 0 && errno == ENOENT;
}

/* glibc's last thread calls exit(0) as it ends; with the shim's threads
 * still there the program's last one is never the last, so one of the
 * shim's takes its place, at most 50 ms later. */
static void end_for_the_program(void)
{
	static bool ending;
	if (__atomic_exchange_n(&ending, true, __ATOMIC_RELAXED))
		return;
	mt_tls.shim_thread = false;
	mt_tls.hidden--;
	exit(0);
}

bool mt_shim_threads_paused(void)
{
	static uint64_t next_look_ms;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	uint64_t due = __atomic_load_n(&next_look_ms, __ATOMIC_RELAXED);
	if (ms >= due &&
	    __atomic_compare_exchange_n(&next_look_ms, &due, ms + 50, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
	    program_threads_gone())
		end_for_the_program();
	return __atomic_load_n(&shim_threads_paused, __ATOMIC_RELAXED);
}

unsigned mt_shim_threads_pause(void)
{
	unsigned stopped = 0;
	__atomic_store_n(&shim_threads_paused, true, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < nshim_threads; i++)
		if (shim_threads[i].joinable) {
			pthread_join(shim_threads[i].id, NULL);
			shim_threads[i].joinable = false;
			stopped++;
		}
	return stopped;
}

void mt_shim_threads_resume(void)
{
	if (__atomic_load_n(&shim_threads_retired, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&shim_threads_paused, false, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < nshim_threads; i++)
		if (!shim_threads[i].joinable)
			start(&shim_threads[i]);
}

bool mt_shim_threads_retired(void)
{
	return __atomic_load_n(&shim_threads_retired, __ATOMIC_RELAXED);
}

unsigned mt_shim_threads_retire(void)
{
	bool any = false;
	for (unsigned i = 0; i < nshim_threads; i++)
		any |= shim_threads[i].joinable;
	if (!any)
		return 0;
	__atomic_store_n(&shim_threads_retired, true, __ATOMIC_RELAXED);
	return mt_shim_threads_pause();
}

double mt_shim_threads_cpu_s(void)
{
	uint64_t ns = 0;
	for (unsigned i = 0; i < nshim_threads; i++) {
		struct shim_thread *s = &shim_threads[i];
		clockid_t clock;
		struct timespec cpu;
		ns += __atomic_load_n(&s->ended_cpu_ns, __ATOMIC_RELAXED);
		/* (one that ends meanwhile has said its time, or its clock is
		 * gone: counted once either way, or not at all) */
		if (__atomic_load_n(&s->running, __ATOMIC_RELAXED) &&
		    s->joinable && pthread_getcpuclockid(s->id, &clock) == 0 &&
		    clock_gettime(clock, &cpu) == 0)
			ns += (uint64_t)cpu.tv_sec * 1000000000u +
			      (uint64_t)cpu.tv_nsec;
	}
	return (double)ns / 1e9;
}

uint64_t mt_shim_threads_faults(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < nshim_threads; i++)
		n += __atomic_load_n(&shim_threads[i].ended_faults, __ATOMIC_RELAXED);
	return n;
}

void mt_shim_threads_forget(void)
{
	nshim_threads = 0;
	shim_threads_paused = false;
	/* One thread here: glibc counts so itself after a fork of a process
	 * of several threads, not after one it was told has one (start()). */
	if (nptl_nthreads)
		__atomic_store_n(nptl_nthreads, 1, __ATOMIC_RELAXED);
}

/* setuid and its kind change the credentials of every thread only when
 * glibc knows there are several: the shim's threads must not keep the
 * ones the program gave up. */
bool mt_setxid_begin(void)
{
	bool told = libc_single_threaded &&
		    __atomic_load_n(libc_single_threaded, __ATOMIC_RELAXED);
	if (!told)
		return false;
	for (unsigned i = 0; i < nshim_threads; i++)
		if (shim_threads[i].joinable) {
			__atomic_store_n(libc_single_threaded, 0,
					 __ATOMIC_RELAXED);
			return true;
		}
	return false;
}

void mt_setxid_end(bool told)
{
	if (told)
		__atomic_store_n(libc_single_threaded, 1, __ATOMIC_RELAXED);
}
