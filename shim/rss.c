/* Resident memory over the run.  A thread of the shim's own reads
 * /proc/self/statm every MEMTRACE_RSS ms (20) and emits an rss event: the
 * anonymous resident bytes (resident - shared), the file-backed ones
 * (shared), and the heap's live bytes summed over the threads' counters at
 * the same moment.  The program's threads pay nothing.
 *
 * The file stays open at a descriptor at the top of the range (opening it
 * at each look would take the lowest free number, the one the program's
 * next open() expects), read with pread, and checked first: a program
 * that closes descriptors it did not open, or puts a file of its own at
 * that number, stops the samples, and nothing is read from its file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "emit.h"
#include "kcounters.h"
#include "options.h"
#include "rss.h"

static int statm_fd = -1;
static dev_t statm_dev;
static ino_t statm_ino;
static long page_size;

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
	page_size = sysconf(_SC_PAGESIZE);
	__atomic_store_n(&statm_fd, fd, __ATOMIC_RELEASE);
}

static bool read_statm(uint64_t *anon, uint64_t *file)
{
	struct stat st;
	char buf[128];
	int fd = __atomic_load_n(&statm_fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != statm_dev ||
	    st.st_ino != statm_ino) {
		__atomic_store_n(&statm_fd, -1, __ATOMIC_RELAXED);
		return false;
	}
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	unsigned long long size, resident, shared;
	if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 ||
	    shared > resident)
		return false;
	*anon = (resident - shared) * (uint64_t)page_size;
	*file = shared * (uint64_t)page_size;
	return true;
}

void mt_rss_sample(struct mt_thread *t)
{
	uint64_t anon, file;
	if (!mt_tracing || !read_statm(&anon, &file))
		return;
	struct mt_counters c;
	mt_threads_sum(&c);
	MT_EMIT_EVENT(t, rss, .anon_bytes = anon, .file_bytes = file,
		      .live_bytes = c.allocated > c.freed ? c.allocated - c.freed
							 : 0);
}

static void *sample_periodically(void *arg)
{
	(void)arg;
	mt_become_shim_thread();
	for (;;) {
		poll(NULL, 0, (int)mt_opt.rss_period_ms);
		if (!mt_tracing || statm_fd < 0 || mt_shim_threads_paused())
			return NULL;
		mt_rss_sample(mt_self());
	}
}

void mt_rss_start(void)
{
	if (!mt_tracing || !mt_opt.rss_period_ms)
		return;
	open_statm();
	mt_rss_sample(mt_self()); /* the first, at start-up */
	if (statm_fd >= 0 && !mt_start_shim_thread(sample_periodically))
		mt_warn("no thread to sample resident memory: the trace has it "
			"at start and exit only");
}

void mt_rss_restart_in_child(void)
{
	/* The parent's file (its /proc/self): ours no more, not closed
	 * here either, since the program may have put its own there. */
	if (statm_fd >= 0 && fcntl(statm_fd, F_GETFD) >= 0) {
		struct stat st;
		if (fstat(statm_fd, &st) == 0 && st.st_dev == statm_dev &&
		    st.st_ino == statm_ino)
			close(statm_fd);
	}
	statm_fd = -1;
	mt_rss_start();
}
