#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "diag.h"
#include "kcounters.h"
#include "rawsys.h"
#include "tracefs.h"
#include "tracepoint_hold.h"
#include "objects.h"

/* One group of the syscall tracepoints, read with one read(2).  Each
 * event's id is kept, so a descriptor the program closed (and perhaps
 * reused) is noticed instead of read.
 *
 * Page faults are not perf events: the kernel counts every fault in the
 * task that takes it anyway (min_flt, maj_flt), and getrusage(RUSAGE_SELF)
 * sums them over the process's threads, live and ended, at each reading.
 * An inherited software counter costs each fault its own accounting on
 * top (the NumPy reference work ran 7% slower under `perf stat -e
 * page-faults`, as under the shim that opened one). */
static int fds[MT_SYS_COUNT] = {-1, -1, -1, -1, -1, -1};
static uint64_t ids[MT_SYS_COUNT];
static int leader = -1;

_Static_assert(MT_SYS_COUNT == 6, "fds[] initialiser");

/* Why events could not be opened, for the one line that says so. */
struct failure {
	int tracefs_errno; /* reading a tracepoint id */
	int perf_errno;	   /* perf_event_open */
};

static long tracepoint_id(const char *event, struct failure *why)
{
	return mt_tracefs_id("syscalls", event, &why->tracefs_errno);
}

/* Out of the way of the program: at the top of its descriptor range, where
 * "the lowest free number" never lands, and closed on exec.  The first
 * free number of the top 32, else of the top 64, 128, ...  Under a limit
 * too low for such a window (below 96) the shim takes none of the
 * program's few descriptors (a number it would take is one the program
 * can see, and may expect closed): fd is closed, and -1 returned
 * (EMFILE). */
int mt_fd_out_of_the_way(int fd)
{
	struct rlimit rl;
	long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			   ? (long)rl.rlim_cur
			   : 1024;
	if (top > 65536)
		top = 65536;
	for (long room = 32; top - room >= 64 && room <= 1024; room *= 2) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - room));
		if (high >= 0) {
			mt_raw_close(fd);
			return high;
		}
	}
	mt_raw_close(fd);
	errno = EMFILE;
	return -1;
}

static int open_event(uint32_t type, uint64_t config, int group)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config;
	a.inherit = 1;	      /* threads created later */
	a.inherit_thread = 1; /* but not forked children: they count alone */
	a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	long fd = mt_raw(-1, SYS_perf_event_open, (long)&a, 0, -1, group,
			 PERF_FLAG_FD_CLOEXEC, 0);
	if (fd < 0) {
		errno = (int)-fd;
		return -1;
	}
	return mt_fd_out_of_the_way((int)fd);
}

static int open_one(int k, struct failure *why)
{
	char event[64];
	snprintf(event, sizeof event, "sys_enter_%s", mt_sys_names[k]);
	long id = tracepoint_id(event, why);
	if (id < 0)
		return -1;
	int fd = open_event(PERF_TYPE_TRACEPOINT, (uint64_t)id, leader);
	if (fd < 0)
		why->perf_errno = errno;
	return fd;
}

static const char *perf_hint(int err)
{
	return err == EACCES || err == EPERM
		       ? ", see /proc/sys/kernel/perf_event_paranoid"
	       : err == EMFILE ? " (the descriptor limit, ulimit -n, leaves the "
				 "shim no room above the program's: 96 or more "
				 "is needed)"
			       : "";
}

/* One line: which counters are missing, why, and what stands in. */
static void explain_missing(const struct failure *why)
{
	char syscalls[128] = "", reason[256] = "";
	size_t n = 0;

	for (int k = 0; k < MT_SYS_COUNT; k++)
		if (fds[k] < 0)
			n += (size_t)snprintf(syscalls + n, sizeof syscalls - n,
					      "%s%s", n ? ", " : "", mt_sys_names[k]);
	if (why->tracefs_errno && n)
		snprintf(reason, sizeof reason,
			 "syscall tracepoints: cannot read /sys/kernel/tracing: %s%s",
			 strerror(why->tracefs_errno),
			 why->tracefs_errno == ENOENT
				 ? " (mount it: mount -t tracefs nodev "
				   "/sys/kernel/tracing)"
				 : " (run as root)");
	else if (why->perf_errno)
		snprintf(reason, sizeof reason, "perf_event_open: %s%s",
			 strerror(why->perf_errno), perf_hint(why->perf_errno));

	mt_warn("no kernel counters for %s (%s); those syscalls are counted by "
		"interposition and inference",
		syscalls, reason);
}

/* So that this process's exit does not wait for the kernel to unregister
 * the tracepoints (tracepoint_hold.h): a connection to memtrace-hold, next
 * to the shim, for the life of the process image.  A forked child shares
 * its parent's. */
static void hold_tracepoints(void)
{
	static bool held;
	struct mt_object shim;
	char holder[4096];
	if (held)
		return;
	held = true;
	/* Not where the holder, started orphaned, would become this
	 * process's child: a subreaper's or an init's (PID 1 of a
	 * namespace), whose wait for all its children then never ended (the
	 * holder waits for it to end).  Its exit may wait for the kernel. */
	int subreaper = 0;
	if (getpid() == 1 ||
	    (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) == 0 && subreaper))
		return;
	if (!mt_object_of((void *)mt_kcounters_open, &shim) ||
	    !mt_holder_beside(shim.path, holder, sizeof holder))
		return;
	int fd = mt_tracepoints_hold(holder);
	if (fd >= 0)
		mt_fd_out_of_the_way(fd);
}

void mt_kcounters_open(bool announce)
{
	struct failure why = {0, 0};
	int opened = 0;

	for (int k = 0; k < MT_SYS_COUNT; k++) {
		fds[k] = open_one(k, &why);
		if (fds[k] < 0)
			continue;
		if (ioctl(fds[k], PERF_EVENT_IOC_ID, &ids[k]) != 0) {
			close(fds[k]);
			fds[k] = -1;
			continue;
		}
		if (leader < 0)
			leader = fds[k];
		opened++;
	}
	if (announce && opened < MT_SYS_COUNT)
		explain_missing(&why);
	if (opened)
		hold_tracepoints();
}

uint64_t mt_perf_id(int fd)
{
	uint64_t id;
	return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

void mt_perf_close(int fd, uint64_t id)
{
	if (id && mt_perf_id(fd) == id)
		close(fd);
}

bool mt_kcounters_inherited(void)
{
	return leader >= 0;
}

void mt_kcounters_forget(void)
{
	for (int k = 0; k < MT_SYS_COUNT; k++) {
		mt_perf_close(fds[k], ids[k]);
		fds[k] = -1;
	}
	leader = -1;
}

/* Is the group's leader still ours?  The program may have closed it and
 * reused the number (daemons close every descriptor): reading it would then
 * consume the program's data.  An event's id answers without reading (an
 * unknown ioctl on anything else fails). */
static bool still_ours(int fd, int k)
{
	uint64_t id;
	return ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && id == ids[k];
}

void mt_kcounters_read(struct mt_ksnapshot *out)
{
	memset(out, 0, sizeof *out);
	int k0 = -1;
	for (int k = 0; k < MT_SYS_COUNT && k0 < 0; k++)
		if (fds[k] == leader && leader >= 0)
			k0 = k;
	/* PERF_FORMAT_GROUP | PERF_FORMAT_ID: nr, {value, id}... */
	uint64_t buf[1 + 2 * MT_SYS_COUNT];
	long n = k0 >= 0 && still_ours(leader, k0)
			 ? mt_raw_read(leader, buf, sizeof buf)
			 : -1;
	if (n >= (ssize_t)sizeof(uint64_t) && buf[0] <= MT_SYS_COUNT &&
	    (size_t)n >= (1 + 2 * buf[0]) * sizeof(uint64_t))
		for (uint64_t i = 0; i < buf[0]; i++)
			for (int k = 0; k < MT_SYS_COUNT; k++)
				if (fds[k] >= 0 && ids[k] == buf[2 + 2 * i]) {
					out->value[k] = buf[1 + 2 * i];
					out->valid[k] = true;
				}

	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		out->value[MT_KERNEL_MINOR_FAULTS] = (uint64_t)ru.ru_minflt;
		out->value[MT_KERNEL_MAJOR_FAULTS] = (uint64_t)ru.ru_majflt;
		out->valid[MT_KERNEL_MINOR_FAULTS] = true;
		out->valid[MT_KERNEL_MAJOR_FAULTS] = true;
	}
}

/* The shim's own memory syscalls when the kernel counters opened: those
 * made later are in the kernel's counts and are taken out again. */
static uint64_t shim_at_open[MT_SYS_COUNT];

void mt_kcounters_mark_shim_syscalls(void)
{
	for (int i = 0; i < MT_SYS_COUNT; i++)
		shim_at_open[i] =
			__atomic_load_n(&mt_shim_syscalls[i], __ATOMIC_RELAXED);
}

uint64_t mt_kcounters_shim_since_open(int sys)
{
	return __atomic_load_n(&mt_shim_syscalls[sys], __ATOMIC_RELAXED) -
	       shim_at_open[sys];
}
