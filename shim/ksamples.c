#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "ksamples.h"
#include "rawsys.h"
#include "thread.h"
#include "trace.h"

/* 256 KiB of ring per CPU: about 6,500 samples between two drains.  One
 * event per CPU, as perf record does: the kernel does not map the buffer
 * of a per-task event that is inherited by new threads. */
enum { RING_PAGES = 64, MAX_CPUS = 64 };

static int fds[MAX_CPUS];
static struct perf_event_mmap_page *rings[MAX_CPUS];
static int ncpus;
static size_t ring_bytes, page_size;
static int lock;
static bool finished; /* the summary has counted them: no more */
static uint64_t taken, lost;

static bool open_cpu(int cpu, unsigned period)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_ADDR;
	a.inherit = 1;
	a.inherit_thread = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC; /* the trace's own clock */
	a.exclude_kernel = 1;	     /* the program's faults, with its ip */
	a.watermark = 1;	     /* wake the collector half way full */
	a.wakeup_watermark = (uint32_t)(ring_bytes / 2);
	long fd = mt_raw(-1, SYS_perf_event_open, (long)&a, 0, cpu, -1,
			 PERF_FLAG_FD_CLOEXEC, 0);
	if (fd < 0) {
		mt_warn("no page-fault samples (perf_event_open: %s); "
			"MEMTRACE_FAULTS is ignored",
			strerror((int)-fd));
		return false;
	}
	long m = mt_raw(MT_SYS_MMAP, SYS_mmap, 0, (long)(ring_bytes + page_size),
			PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m < 0 && m > -4096) {
		mt_warn("no page-fault samples (mmap of the sample buffer: %s)",
			strerror((int)-m));
		close((int)fd);
		return false;
	}
	fds[ncpus] = (int)fd;
	rings[ncpus++] = (void *)m;
	return true;
}

/* The collector: a thread of the shim's own that moves samples into the
 * trace whenever a ring is half full (or every 100 ms), so that the
 * kernel's buffer does not overflow between the program's events. */
static void *collect(void *arg)
{
	struct pollfd p[MAX_CPUS];
	(void)arg;
	mt_tls.hidden++;
	for (int i = 0; i < ncpus; i++)
		p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
	while (__atomic_load_n(&ncpus, __ATOMIC_RELAXED) && mt_tracing) {
		poll(p, (nfds_t)ncpus, 100);
		mt_ksamples_drain(mt_self());
	}
	return NULL;
}

void mt_ksamples_start(unsigned period)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	pthread_attr_t attr;
	pthread_t collector;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	ring_bytes = RING_PAGES * page_size;
	for (int cpu = 0; cpu < cpus && cpu < MAX_CPUS; cpu++)
		if (!open_cpu(cpu, period)) {
			mt_ksamples_forget();
			return;
		}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* glibc maps the thread's stack and protects its guard page: the
	 * shim's own system calls, which the kernel counters see. */
	__atomic_fetch_add(&mt_shim_syscalls[MT_SYS_MMAP], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mt_shim_syscalls[MT_SYS_MPROTECT], 1, __ATOMIC_RELAXED);
	if (pthread_create(&collector, &attr, collect, NULL) != 0)
		mt_warn("no collector thread for page-fault samples: they are "
			"collected at region boundaries and exit only, and "
			"samples beyond the kernel's buffer are counted as lost");
	pthread_attr_destroy(&attr);
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
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 32) {
			/* ip, pid|tid, time, addr (sample_type order) */
			uint32_t tid = (uint32_t)(f[1] >> 32);
			mt_trace_fault(t, tid, f[3], f[0], f[2]);
			taken++;
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
			lost += f[1];
			mt_trace_lost_samples(t, f[1]);
		}
		tail += h.size;
	}
	__atomic_store_n(&ring->data_tail, tail, __ATOMIC_RELEASE);
}

void mt_ksamples_drain(struct mt_thread *t)
{
	if (!ncpus || !mt_tracing || finished ||
	    __atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < ncpus; i++)
		drain_ring(rings[i], t);
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

void mt_ksamples_forget(void)
{
	for (int i = 0; i < ncpus; i++) {
		mt_raw(MT_SYS_MUNMAP, SYS_munmap, (long)rings[i],
		       (long)(ring_bytes + page_size), 0, 0, 0, 0);
		close(fds[i]);
	}
	ncpus = 0;
	lock = 0;
	finished = false;
	taken = lost = 0;
}

void mt_ksamples_finish(struct mt_thread *t)
{
	/* Wait for a drain under way in the collector, then take the rest. */
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		;
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	mt_ksamples_drain(t);
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
