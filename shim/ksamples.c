#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "kcounters.h"
#include "owned_lock.h"
#include "ksamples.h"
#include "rawsys.h"
#include "thread.h"
#include "tracefs.h"
#include "emit.h"

/* 256 KiB of ring per CPU.  Events per CPU, as perf record does: the
 * kernel does not map the buffer of a per-task event that is inherited by
 * new threads.  On each CPU the first event owns the ring and the others
 * write into it (PERF_EVENT_IOC_SET_OUTPUT); a sample's identifier says
 * which event it is. */
enum { RING_PAGES = 64, MAX_CPUS = 64, MAX_EVENTS = MAX_CPUS * (1 + 2 * MT_SYS_COUNT) };

/* What an event samples: a page fault, or a syscall's entry or exit. */
enum { SOURCE_FAULT = -1, SOURCE_RAW = -2 };
struct source {
	uint64_t id;
	int sys;    /* enum mt_sys; SOURCE_FAULT; SOURCE_RAW: any memory
		       syscall, its number in the record */
	bool exit;
};

/* The memory syscalls' numbers, in enum mt_sys order. */
static const long sys_numbers[MT_SYS_COUNT] = {
	SYS_brk, SYS_mmap, SYS_munmap, SYS_mremap, SYS_madvise, SYS_mprotect,
};

_Static_assert(MT_SYS_COUNT == 6, "a number for each memory syscall");

static int sys_of_number(long nr)
{
	for (int sys = 0; sys < MT_SYS_COUNT; sys++)
		if (sys_numbers[sys] == nr)
			return sys;
	return -1;
}

static int fds[MAX_CPUS];
static uint64_t fd_ids[MAX_CPUS], other_ids[MAX_EVENTS]; /* (kcounters.h) */
static struct perf_event_mmap_page *rings[MAX_CPUS];
static int ncpus;
static int others[MAX_EVENTS]; /* descriptors writing into a ring */
static struct source sources[MAX_EVENTS];
static int nothers, nsources;
static size_t ring_bytes, page_size;
static mt_owned_lock lock; /* the thread draining */
/* The process whose memory holds the rings.  A child made without the
 * fork handlers (a raw clone or clone3 system call) does not have them
 * (VM_DONTCOPY: holes where they were), and must not read them. */
static pid_t rings_pid;
static bool finished; /* the summary has counted them: no more */
static uint64_t taken, lost;

/* Open one sampling event on cpu for this process and its threads. */
static int open_sampler(int cpu, uint32_t type, uint64_t config,
			uint64_t period, uint64_t sample_type)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | sample_type;
	a.inherit = 1;
	a.inherit_thread = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC; /* the trace's own clock */
	a.watermark = 1;	     /* wake the collector half way full */
	a.wakeup_watermark = (uint32_t)(ring_bytes / 2);
	if (type == PERF_TYPE_SOFTWARE)
		a.exclude_kernel = 1; /* the program's faults, with its ip */
	long fd = mt_raw(-1, SYS_perf_event_open, (long)&a, 0, cpu, -1,
			 PERF_FLAG_FD_CLOEXEC, 0);
	if (fd < 0) {
		errno = (int)-fd;
		return -1;
	}
	return mt_fd_out_of_the_way((int)fd);
}

static bool add_source(int fd, int sys, bool exit)
{
	if (nsources == MAX_EVENTS ||
	    ioctl(fd, PERF_EVENT_IOC_ID, &sources[nsources].id) != 0)
		return false;
	sources[nsources].sys = sys;
	sources[nsources++].exit = exit;
	return true;
}

/* The ring of this cpu, owned by fd. */
static bool map_ring(int fd)
{
	long m = mt_raw(MT_SYS_MMAP, SYS_mmap, 0, (long)(ring_bytes + page_size),
			PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m < 0 && m > -4096) {
		errno = (int)-m;
		return false;
	}
	fd_ids[ncpus] = mt_perf_id(fd);
	fds[ncpus] = fd;
	rings[ncpus++] = (void *)m;
	return true;
}

/* Another event of the same cpu, writing into its ring. */
static bool join_ring(int fd)
{
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, fds[ncpus - 1]) != 0 ||
	    nothers == MAX_EVENTS)
		return false;
	other_ids[nothers] = mt_perf_id(fd);
	others[nothers++] = fd;
	return true;
}

enum { SYSCALL_SAMPLE = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW };
enum { RAW_OPENED, RAW_UNAVAILABLE, RAW_FAILED };

/* The memory syscalls as two events of this cpu, raw_syscalls:sys_enter
 * and sys_exit, filtered in the kernel to those syscalls' numbers: two
 * descriptors where one event per syscall and direction takes twelve.
 * Their records have the syscall's number where the per-syscall ones
 * have it, and the arguments (or result) at the same offset.
 * RAW_UNAVAILABLE (nothing opened) where the kernel has no such events or
 * takes no filter. */
static int open_raw_syscalls(int cpu, bool owner)
{
	char filter[160];
	size_t n = 0;
	int fd[2] = {-1, -1};
	for (int sys = 0; sys < MT_SYS_COUNT; sys++)
		n += (size_t)snprintf(filter + n, sizeof filter - n, "%sid == %ld",
				      sys ? " || " : "", sys_numbers[sys]);
	for (int exit = 0; exit < 2; exit++) {
		long id = mt_tracefs_id("raw_syscalls",
					exit ? "sys_exit" : "sys_enter", NULL);
		fd[exit] = id < 0 ? -1
				  : open_sampler(cpu, PERF_TYPE_TRACEPOINT,
						 (uint64_t)id, 1, SYSCALL_SAMPLE);
		if (fd[exit] < 0 ||
		    ioctl(fd[exit], PERF_EVENT_IOC_SET_FILTER, filter) != 0) {
			for (int i = 0; i <= exit; i++)
				if (fd[i] >= 0)
					close(fd[i]);
			return RAW_UNAVAILABLE;
		}
	}
	for (int exit = 0; exit < 2; exit++) {
		if ((owner ? !map_ring(fd[exit]) : !join_ring(fd[exit])) ||
		    !add_source(fd[exit], SOURCE_RAW, exit))
			return RAW_FAILED;
		owner = false;
	}
	return RAW_OPENED;
}

static bool open_cpu(int cpu, unsigned fault_period)
{
	bool owner = true;
	int fd;

	if (fault_period) {
		fd = open_sampler(cpu, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
				  fault_period,
				  PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					  PERF_SAMPLE_ADDR);
		if (fd < 0 || !map_ring(fd) || !add_source(fd, SOURCE_FAULT, false))
			return false;
		owner = false;
	}
	/* Every memory syscall's entry (its arguments) and exit (its
	 * result), whoever makes it: glibc's malloc included. */
	int raw = open_raw_syscalls(cpu, owner);
	if (raw == RAW_OPENED)
		return true;
	if (raw == RAW_FAILED)
		return false;
	for (int sys = 0; sys < MT_SYS_COUNT; sys++)
		for (int exit = 0; exit < 2; exit++) {
			char event[64];
			snprintf(event, sizeof event, "sys_%s_%s",
				 exit ? "exit" : "enter", mt_sys_names[sys]);
			long id = mt_tracefs_id("syscalls", event, NULL);
			if (id < 0)
				continue;
			fd = open_sampler(cpu, PERF_TYPE_TRACEPOINT, (uint64_t)id, 1,
					  SYSCALL_SAMPLE);
			if (fd < 0)
				return fault_period != 0; /* faults alone, then */
			if (owner ? !map_ring(fd) : !join_ring(fd))
				return false;
			owner = false;
			if (!add_source(fd, sys, exit))
				return false;
		}
	return !owner;
}

/* The collector: a thread of the shim's own that moves samples into the
 * trace whenever a ring is half full (or every 100 ms), so that the
 * kernel's buffer does not overflow between the program's events. */
static void *collect(void *arg)
{
	struct pollfd p[MAX_CPUS];
	(void)arg;
	mt_become_shim_thread();
	for (int i = 0; i < ncpus; i++)
		p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
	while (__atomic_load_n(&ncpus, __ATOMIC_RELAXED) && mt_tracing &&
	       !mt_shim_threads_paused()) {
		poll(p, (nfds_t)ncpus, 100);
		/* The program closed our descriptors (closefrom): poll would
		 * return at once, for ever. */
		if (p[0].revents & POLLNVAL)
			return NULL;
		mt_ksamples_drain(mt_self());
	}
	return NULL;
}

static void release(bool unmap);

void mt_ksamples_start(unsigned period)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	ring_bytes = RING_PAGES * page_size;
	rings_pid = getpid();
	for (int cpu = 0; cpu < cpus && cpu < MAX_CPUS; cpu++)
		if (!open_cpu(cpu, period)) {
			if (period)
				mt_warn("no page-fault samples (perf_event_open or its "
					"buffer: %s); MEMTRACE_FAULTS is ignored",
					strerror(errno));
			release(true);
			return;
		}
	if (!mt_start_shim_thread(collect) && !mt_shim_threads_retired())
		mt_warn("no collector thread for page-fault samples: they are "
			"collected at region boundaries and exit only, and "
			"samples beyond the kernel's buffer are counted as lost");
}

static const struct source *source_of(uint64_t id)
{
	for (int i = 0; i < nsources; i++)
		if (sources[i].id == id)
			return &sources[i];
	return NULL;
}

/* Copy len bytes at ring offset `at` (which may wrap). */
static void copy_out(const struct perf_event_mmap_page *ring, void *dst,
		     uint64_t at, size_t len)
{
	const unsigned char *data = (const unsigned char *)ring + page_size;
	size_t off = (size_t)(at % ring_bytes), first = ring_bytes - off;
	if (first > len)
		first = len;
	memcpy(dst, data + off, first);
	memcpy((unsigned char *)dst + first, data, len - first);
}

static void drain_ring(struct perf_event_mmap_page *ring, struct mt_thread *t)
{
	uint64_t head = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = ring->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		unsigned char rec[256];
		copy_out(ring, &h, tail, sizeof h);
		if (h.size < sizeof h || h.size > sizeof rec)
			break;
		copy_out(ring, rec, tail, h.size);
		const uint64_t *f = (const uint64_t *)(rec + sizeof h);
		const struct source *from =
			h.type == PERF_RECORD_SAMPLE ? source_of(f[0]) : NULL;
		if (from && from->sys == SOURCE_FAULT && h.size >= sizeof h + 40) {
			/* id, ip, pid|tid, time, addr (sample_type order) */
			MT_EMIT(fault, t, (uint32_t)(f[2] >> 32), f[4], f[1], f[3]);
			taken++;
		} else if (from && h.size >= sizeof h + 24 + 4 + 16) {
			/* id, pid|tid, time, raw size, raw: the tracepoint's
			 * record, its arguments (or result) from offset 16 */
			uint32_t raw_size;
			memcpy(&raw_size, rec + sizeof h + 24, 4);
			const unsigned char *raw = rec + sizeof h + 28;
			uint64_t arg[3] = {0, 0, 0};
			size_t n = raw_size > 16 ? (raw_size - 16) / 8 : 0;
			if (n > 3)
				n = 3;
			if (28 + 16 + n * 8 <= (size_t)(h.size - sizeof h))
				memcpy(arg, raw + 16, n * 8);
			int sys = from->sys;
			if (sys == SOURCE_RAW) {
				int64_t nr;
				memcpy(&nr, raw + 8, sizeof nr);
				sys = sys_of_number((long)nr);
			}
			if (sys >= 0) /* (a raw event's record from before its
					 filter was set: another syscall) */
				MT_EMIT(kernel_call, t, (uint32_t)(f[1] >> 32),
					sys, from->exit, f[2], arg);
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
			lost += f[1];
			MT_EMIT(lost_samples, t, f[1]);
		}
		tail += h.size;
	}
	__atomic_store_n(&ring->data_tail, tail, __ATOMIC_RELEASE);
}

static void drain_rings(struct mt_thread *t)
{
	if (!ncpus || !mt_tracing || finished)
		return;
	for (int i = 0; i < ncpus; i++)
		drain_ring(rings[i], t);
}

void mt_ksamples_drain(struct mt_thread *t)
{
	/* (no rings, no system call: a region's ends come here, counting or
	 * not, and getpid was two of their twelve) */
	if (!ncpus || !mt_tracing)
		return;
	if (getpid() != rings_pid || !mt_lock_try(&lock))
		return;
	drain_rings(t);
	mt_lock_give(&lock);
}

/* Close the descriptors and, where they are ours, unmap the rings. */
static void release(bool unmap)
{
	for (int i = 0; i < nothers; i++)
		mt_perf_close(others[i], other_ids[i]);
	nothers = nsources = 0;
	for (int i = 0; i < ncpus; i++) {
		if (unmap)
			mt_raw(MT_SYS_MUNMAP, SYS_munmap, (long)rings[i],
			       (long)(ring_bytes + page_size), 0, 0, 0, 0);
		mt_perf_close(fds[i], fd_ids[i]);
	}
	ncpus = 0;
	lock = 0;
	finished = false;
	taken = lost = 0;
}

/* The kernel does not copy perf rings into a child (VM_DONTCOPY): their
 * addresses are holes there, which the child may already have filled
 * (lttng-ust's fork handling maps memory before this runs), so they are
 * not unmapped. */
void mt_ksamples_forget(void)
{
	release(false);
}

void mt_ksamples_finish(struct mt_thread *t)
{
	/* Wait for a drain under way in the collector, then take the rest;
	 * not for one of this very thread, which exit() from a signal
	 * handler interrupted: it never ends. */
	if (getpid() != rings_pid) { /* (its collector is not in this one) */
		finished = true;
		return;
	}
	if (mt_lock_take_unless_mine(&lock)) {
		drain_rings(t);
		mt_lock_give(&lock);
	}
	finished = true;
}

uint64_t mt_ksamples_taken(void)
{
	return taken;
}

uint64_t mt_ksamples_lost(void)
{
	return lost;
}
