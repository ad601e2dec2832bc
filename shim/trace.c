#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#ifdef MT_HAVE_ZSTD
/* A context in memory of our own (ZSTD_initStaticCCtx), so compressing
 * never allocates from the heap being traced. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#endif

#include "diag.h"
#include "json_writer.h"
#include "kcounters.h"
#include "memtrace/trace_format.h"
#include "mode.h"
#include "options.h"
#include "process_facts.h"
#include "sink.h"
#include "sites.h"
#include "rawsys.h"
#include "trace.h"
#include "trace_buf.h"
#include "chunk_hash.h"
#include "varint.h"

static int trace_fd = -1;
static uint64_t file_end; /* where the next chunk goes */
static uint64_t lost;
static char trace_path[4096];
#ifdef MT_HAVE_ZSTD
static pthread_mutex_t zstd_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_CCtx *cctx;
static unsigned char *zbuf;
static size_t zbuf_len;
#endif

/* Is the native trace on?  (Another thread may stop it: a write that
 * failed.) */
static bool native_on(void)
{
	return __atomic_load_n(&mt_sinks[MT_SINK_TRACE], __ATOMIC_RELAXED) != NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- writing chunks -------------------------------------------------- */

static bool write_at(const struct iovec *iov, int n, size_t total, uint64_t at);

/* The status chunk (docs/trace-format.md): where it is, and the process
 * whose file this is (a vfork child shares the parent's memory, and must
 * not write the parent's file). */
static uint64_t status_at;
static pid_t trace_pid;
/* The process ends, maybe in a signal handler (exit() from one, _exit, a
 * crash): no more waiting for the compressor, which the interrupted code
 * may hold, nor for a thread that waits for it while holding a buffer the
 * end writes out. */
static bool ending_now;

static bool writing_own_file(void)
{
	return trace_fd >= 0 && getpid() == trace_pid;
}

/* How recording ended, over the status written at the start: its blocks
 * are on disk already, so this needs no free space.  Safe in a signal
 * handler. */
static void write_status(enum mt_trace_end end, int32_t value, uint64_t at)
{
	struct mt_trace_status st = {
		.end = end,
		.value = value,
		.at = at,
		.lost = __atomic_load_n(&lost, __ATOMIC_RELAXED),
	};
	struct mt_chunk_header h = {
		.magic = MT_CHUNK_MAGIC,
		.flags = MT_CHUNK_STATUS,
		.payload_len = sizeof st,
		.raw_len = sizeof st,
	};
	h.hash = mt_chunk_hash(&h, &st);
	struct iovec iov[2] = {{&h, sizeof h}, {&st, sizeof st}};
	int saved = errno;
	write_at(iov, 2, sizeof h + sizeof st, status_at);
	errno = saved;
}

/* Set when the program took the trace's descriptor and the file could
 * not be opened again: no status can be written either. */
static bool descriptor_lost;

static void stop_tracing(const char *why, int err, uint64_t at)
{
	if (!mt_sink_off(MT_SINK_TRACE))
		return;
	if (!descriptor_lost)
		write_status(MT_END_WRITE_FAILED, err, at);
	mt_warn("trace %s: %s: %s; recording stops, the program runs on",
		trace_path, why, strerror(err));
}

/* The trace's file, as opened: a program that closes descriptors it did
 * not open (closefrom, dup2 over a number) must not get our chunks in its
 * own files. */
static dev_t trace_dev;
static ino_t trace_ino;

static bool is_the_trace(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_dev == trace_dev &&
	       st.st_ino == trace_ino;
}

/* The program closed the trace's descriptor (Python's subprocess closes
 * every descriptor between fork and exec; daemons call closefrom) or put
 * another file at its number: the file is opened again by its name, if
 * it is still the same file, and recording goes on.  The old number is
 * the program's now, never closed here. */
static bool trace_fd_is_ours(void)
{
	static mt_owned_lock reopening;
	int fd = __atomic_load_n(&trace_fd, __ATOMIC_RELAXED);
	if (is_the_trace(fd))
		return true;
	if (!mt_lock_take_unless_mine(&reopening))
		return false; /* a signal handler, in the middle of it */
	fd = __atomic_load_n(&trace_fd, __ATOMIC_RELAXED);
	bool ours = is_the_trace(fd);
	int err = 0;
	if (!ours) {
		fd = (int)mt_raw_openat(trace_path,
					O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd < 0) {
			err = -fd;
		} else if (!is_the_trace(fd)) {
			err = ENOENT; /* another file has the name now */
			mt_raw_close(fd);
		} else if ((fd = mt_fd_out_of_the_way(fd)) < 0) {
			err = EMFILE;
		} else {
			__atomic_store_n(&trace_fd, fd, __ATOMIC_RELAXED);
			ours = true;
		}
	}
	mt_lock_give(&reopening);
	errno = err;
	return ours;
}

/* Where `total` bytes go: over the space [over, over + over_len) when it
 * is still the end of the file and they cover it all (a chunk's new copy
 * over its provisional one), else at the end. */
static uint64_t reserve(size_t total, uint64_t over, uint64_t over_len)
{
	uint64_t end = over + over_len;
	if (over_len && total >= over_len &&
	    __atomic_compare_exchange_n(&file_end, &end, over + total, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return over;
	return __atomic_fetch_add(&file_end, total, __ATOMIC_RELAXED);
}

static bool write_at(const struct iovec *iov, int n, size_t total, uint64_t at)
{
	if (!trace_fd_is_ours()) {
		descriptor_lost = true; /* errno: why it cannot be opened again */
		return false;
	}
	/* Past RLIMIT_FSIZE the write raises SIGXFSZ, which would kill the
	 * program: the limit is taken as a full disk. */
	struct mt_quiet q;
	long w;
	mt_quiet_begin(&q);
	do
		w = mt_raw_pwritev(trace_fd, iov, n, at);
	while (w == -EINTR);
	mt_quiet_end(&q, w);
	if (w > 0 && (size_t)w == total)
		return true;
	/* A short write (a full disk, or the size limit): the rest is lost. */
	errno = w < 0 ? (int)-w : ENOSPC;
	return false;
}

#ifdef MT_HAVE_ZSTD
/* The compressor, waited for in slices until the process ends. */
static bool take_compressor(bool wait)
{
	if (!wait)
		return pthread_mutex_trylock(&zstd_lock) == 0;
	for (;;) {
		if (__atomic_load_n(&ending_now, __ATOMIC_RELAXED))
			return pthread_mutex_trylock(&zstd_lock) == 0;
		struct timespec at;
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += 10 * 1000 * 1000;
		if (at.tv_nsec >= 1000 * 1000 * 1000) {
			at.tv_sec++;
			at.tv_nsec -= 1000 * 1000 * 1000;
		}
		int r = pthread_mutex_clocklock(&zstd_lock, CLOCK_MONOTONIC, &at);
		if (r != ETIMEDOUT)
			return r == 0;
	}
}
#endif

/* Write out the committed events of b as one chunk, or as a provisional
 * copy of the chunk being filled (docs/trace-format.md).  Returns what of
 * the buffer was written (its committed word then). */
static uint64_t write_chunk(struct mt_trace_buf *b, bool provisional)
{
	uint64_t c = __atomic_load_n(&b->committed, __ATOMIC_ACQUIRE) & ~MT_BUSY;
	uint32_t len = (uint32_t)c, events = (uint32_t)(c >> 32);
	struct mt_chunk_header h = {
		.magic = MT_CHUNK_MAGIC,
		.flags = provisional ? MT_CHUNK_PROVISIONAL : 0,
		.tid = b->tid,
		/* A provisional copy takes the number of the chunk that will
		 * supersede it. */
		.seq = provisional ? b->seq : b->seq++,
		.payload_len = len,
		.raw_len = len,
		.events = events,
		.first_tsc = b->first_tsc,
		.first_ns = b->first_ns,
	};
	const void *payload = b->data;

	if (!len || trace_fd < 0)
		return 0;
#ifdef MT_HAVE_ZSTD
	/* A signal handler's buffer may be written out while its thread,
	 * interrupted, holds the compressor: then it is written as it is. */
	bool locked = cctx && take_compressor(!b->in_signal);
	if (locked) {
		size_t z = ZSTD_compressCCtx(cctx, zbuf, zbuf_len, b->data, len, 1);
		if (!ZSTD_isError(z) && z < len) {
			h.flags |= MT_CHUNK_ZSTD;
			h.payload_len = (uint32_t)z;
			payload = zbuf;
		}
	}
#endif
	h.hash = mt_chunk_hash(&h, payload);
	struct iovec iov[2] = {{&h, sizeof h}, {(void *)payload, h.payload_len}};
	size_t total = sizeof h + h.payload_len;
	/* A provisional copy still at the end of the file is overwritten
	 * rather than superseded further on: an idle thread costs no space. */
	uint64_t at = reserve(total, b->provisional_at, b->provisional_len);
	b->provisional_at = at;
	b->provisional_len = provisional ? total : 0;
	if (!write_at(iov, 2, total, at))
		stop_tracing(descriptor_lost ? "the program closed or replaced "
					       "its descriptor, and the file "
					       "cannot be opened again"
			     : errno == ENOSPC ? "the disk is full"
			     : errno == EFBIG  ? "the file size limit (ulimit -f) "
						 "is reached"
					       : "cannot write",
			     errno, at);
#ifdef MT_HAVE_ZSTD
	if (locked)
		pthread_mutex_unlock(&zstd_lock);
#endif
	return c;
}

/* Write out the events of a buffer its owner has claimed; it stays
 * claimed, and empty.  (Its lock is not this thread's: only a claimed
 * buffer is written out, and claim() takes none that is busy.) */
static void write_out(struct mt_trace_buf *b)
{
	mt_lock_take(&b->lock);
	if (!b->closed)
		write_chunk(b, false);
	b->on_disk = 0;
	mt_lock_give(&b->lock);
	__atomic_store_n(&b->committed, MT_BUSY, __ATOMIC_RELEASE);
}

__attribute__((noinline)) void mt_trace_flush(struct mt_trace_buf *b)
{
	/* Busy while it is written: a signal handler's events meanwhile go
	 * to the other buffer.  (Called after an event's commit, or on a
	 * buffer its owner claimed already.) */
	mt_buf_claim(b);
	write_out(b);
	__atomic_store_n(&b->committed, 0, __ATOMIC_RELEASE);
}

/* ---- events ---------------------------------------------------------- */

/* An event's time; the first event of a chunk sets the chunk's time base
 * (and the bases of its deltas). */
static inline __attribute__((always_inline)) uint64_t
event_time(struct mt_trace_buf *b)
{
	uint64_t now = mt_ticks();

	if (__builtin_expect((b->committed & ~MT_BUSY) == 0, 0)) {
		b->first_tsc = now;
		b->last_units = now >> MT_TSC_SHIFT;
		b->due_units = b->last_units + MT_AGE_UNITS;
		b->first_ns = mono_ns();
		b->last_addr = 0;
		memset(b->last_counters, 0, sizeof b->last_counters);
		b->last_sample_ns = b->first_ns;
	}
	return now;
}

/* Start an event: its tag and time; the fields follow. */
static inline __attribute__((always_inline)) unsigned char *
begin_event(struct mt_trace_buf *b, int tag)
{
	return mt_event_begin(b, tag, event_time(b));
}

static struct mt_trace_buf *new_buffer(bool in_signal)
{
	struct mt_trace_buf *b = mt_raw_mmap(sizeof *b);
	if (!b)
		return NULL;
	b->tid = (uint32_t)mt_raw(-1, SYS_gettid, 0, 0, 0, 0, 0, 0);
	b->in_signal = in_signal;
	b->seq = in_signal ? MT_SEQ_SIGNAL : 0;
	return b;
}

/* A thread_start event's tid: the shim's own threads told apart (a
 * program's timeline had a thread that was memtrace's collector; new-user
 * trial 32). */
static uint64_t thread_start_tid(uint32_t tid)
{
	return mt_tls.shim_thread ? tid | MT_SHIM_THREAD : tid;
}

/* t's buffer, made at its first event (or NULL: not recording). */
static struct mt_trace_buf *buffer(struct mt_thread *t)
{
	struct mt_trace_buf *b = t->trace;
	if (__builtin_expect(b != NULL, 1))
		return b->closed ? NULL : b;
	if (trace_fd < 0 || !(b = new_buffer(false))) /* LTTng's events only */
		return NULL;
	t->trace = b;
	mt_buf_claim(b);
	unsigned char *p = begin_event(b, MT_EV_THREAD_START);
	mt_event_end(b, mt_put_varint(p, thread_start_tid(b->tid)));
	return b;
}

/* Where t's next event goes, claimed: its buffer, or when that is busy (a
 * signal handler interrupted t writing into it) its second one; NULL when
 * neither can take it (then the event is lost, and counted). */
static struct mt_trace_buf *claim(struct mt_thread *t)
{
	struct mt_trace_buf *b = buffer(t);
	if (!b || mt_buf_claim(b) != MT_BUSY)
		return b;
	if (!t->signal_trace)
		t->signal_trace = new_buffer(true);
	b = t->signal_trace;
	if (b && !b->closed && mt_buf_claim(b) != MT_BUSY)
		return b;
	__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* A buffer goes on under another thread's id: what it holds written out
 * first, under its old one. */
static void rename_buffer(struct mt_trace_buf *b, uint32_t tid)
{
	if (!b || b->tid == tid)
		return;
	mt_trace_flush(b);
	mt_lock_take(&b->lock); /* the idle flusher reads the id */
	b->tid = tid;
	mt_lock_give(&b->lock);
}

static void trace_thread_attach(struct mt_thread *t)
{
	struct mt_trace_buf *b = t->trace;
	uint32_t tid = (uint32_t)mt_raw(-1, SYS_gettid, 0, 0, 0, 0, 0, 0);

	/* A block that served a thread now gone: its buffers (written out
	 * when that thread ended) go on under this thread's id. */
	if (!b || b->tid == tid)
		return;
	rename_buffer(b, tid);
	rename_buffer(t->signal_trace, tid);
	if (native_on() && !b->closed && mt_buf_claim(b) != MT_BUSY) {
		unsigned char *p = begin_event(b, MT_EV_THREAD_START);
		mt_event_end(b, mt_put_varint(p, thread_start_tid(tid)));
	}
}

/* claim(t) for an event larger than one event's room: a chunk of its own,
 * what the buffer holds written out first. */
static struct mt_trace_buf *claim_empty(struct mt_thread *t)
{
	struct mt_trace_buf *b = claim(t);
	if (b)
		write_out(b);
	return b;
}

/* At exit: b's committed events written, and no more.  Not when this
 * thread holds its lock: exit() was called by a signal handler that
 * interrupted the thread writing b out, a write that cannot finish. */
static void close_buffer(struct mt_trace_buf *b)
{
	if (!b || b->closed || mt_lock_is_mine(&b->lock))
		return;
	mt_lock_take(&b->lock);
	write_chunk(b, false);
	b->closed = true;
	/* Empty, so the inline events go to the slow path, which sees it
	 * closed (trace_buf.h). */
	__atomic_store_n(&b->committed, 0, __ATOMIC_RELEASE);
	mt_lock_give(&b->lock);
}

/* claim(t), the event counted as lost once recording stopped. */
static struct mt_trace_buf *recording(struct mt_thread *t)
{
	struct mt_trace_buf *b = claim(t);
	if (!b && t->trace && t->trace->closed)
		__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
	return b;
}

/* An event stored as its fields in order, each a varint: those of
 * struct mt_ev_NAME (trace_events.h), given by name, e.g.
 * EVENT(t, heap_move, .from = a, .to = b).  The compiler checks the names
 * against the table; a field left out is 0. */
#define EVENT(t, name, ...)                                                  \
	do {                                                                 \
		_Static_assert(MT_WIRE_OF_##name ==                          \
				       sizeof(struct mt_ev_##name) / 8,      \
			       "a varint event");                            \
		struct mt_trace_buf *b_ = recording(t);                      \
		if (!b_)                                                     \
			break;                                               \
		unsigned char *p_ = begin_event(b_, MT_TAG_##name);          \
		const struct mt_ev_##name f_ = {__VA_ARGS__};                \
		const uint64_t *v_ = (const uint64_t *)&f_;                  \
		for (size_t i_ = 0; i_ < sizeof f_ / sizeof *v_; i_++)       \
			p_ = mt_put_varint(p_, v_[i_]);                      \
		mt_event_end(b_, p_);                                        \
	} while (0)

void mt_trace_alloc(struct mt_thread *t, int entry, size_t align, size_t size,
		    const void *p, size_t usable)
{
	struct mt_trace_buf *b = recording(t);
	if (!b)
		return;
	uint64_t now = event_time(b);
	if (mt_alloc_event(b, b->committed & ~MT_BUSY, now,
			   mt_entry_align(entry, align), size, p, usable))
		mt_trace_flush(b);
}

void mt_trace_free(struct mt_thread *t, const void *p, size_t usable)
{
	struct mt_trace_buf *b = recording(t);
	if (!b)
		return;
	uint64_t now = event_time(b);
	if (mt_free_event(b, b->committed & ~MT_BUSY, now, p, usable))
		mt_trace_flush(b);
}

static void trace_realloc(struct mt_thread *t, int entry, const void *old,
		      size_t old_usable, bool old_freed, size_t size,
		      const void *p, size_t usable)
{
	struct mt_trace_buf *b = recording(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_REALLOC);
	q = mt_put_varint(q, (uint64_t)entry);
	q = mt_put_varint(q, old_freed);
	q = mt_put_addr(b, q, old);
	q = mt_put_varint(q, old_usable);
	q = mt_put_varint(q, size);
	q = mt_put_addr(b, q, p);
	q = mt_put_varint(q, mt_zigzag((int64_t)(usable - size)));
	mt_event_end(b, q);
}

static void trace_usable(struct mt_thread *t, const void *p)
{
	struct mt_trace_buf *b = claim(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_USABLE_SIZE);
	mt_event_end(b, mt_put_addr(b, q, p));
}

static void trace_syscall(struct mt_thread *t, int entry, bool by_allocator,
		      uint64_t addr, uint64_t len, uint64_t arg, int64_t result)
{
	EVENT(t, syscall, .entry = (uint64_t)entry, .by_allocator = by_allocator,
	      .addr = addr, .len = len, .arg = arg, .result = mt_zigzag(result));
}

static void trace_sys_count(struct mt_thread *t, int sys, bool by_allocator,
			uint64_t bytes, int advice)
{
	EVENT(t, sys, .sys = (uint64_t)sys, .by_allocator = by_allocator,
	      .bytes = bytes, .advice = (uint64_t)(unsigned)advice);
}

static void trace_heap_move(struct mt_thread *t, uintptr_t from, uintptr_t to,
			unsigned inferred_syscalls)
{
	EVENT(t, heap_move, .from = from, .to = to,
	      .inferred_syscalls = inferred_syscalls);
}

/* A kernel sample's thread (as a change from the chunk's own) and time
 * (as a change from the chunk's previous sample). */
static unsigned char *put_sample_head(struct mt_trace_buf *b, unsigned char *q,
				      uint32_t tid, uint64_t time_ns)
{
	q = mt_put_varint(q, mt_zigzag((int64_t)tid - (int64_t)b->tid));
	q = mt_put_varint(q, mt_zigzag((int64_t)(time_ns - b->last_sample_ns)));
	b->last_sample_ns = time_ns;
	return q;
}

static void trace_fault(struct mt_thread *t, uint32_t tid, uint64_t addr,
		    uint64_t ip, uint64_t time_ns)
{
	struct mt_trace_buf *b = claim(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_FAULT);
	q = put_sample_head(b, q, tid, time_ns);
	q = mt_put_varint(q, addr);
	q = mt_put_varint(q, ip);
	mt_event_end(b, q);
}

static void trace_kernel_call(struct mt_thread *t, uint32_t tid, int sys,
			  bool exit, uint64_t time_ns, const uint64_t arg[3])
{
	struct mt_trace_buf *b = claim(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_KCALL);
	q = put_sample_head(b, q, tid, time_ns);
	q = mt_put_varint(q, (uint64_t)sys | (uint64_t)exit << 4);
	if (exit) {
		q = mt_put_varint(q, mt_zigzag((int64_t)arg[0]));
	} else {
		for (int i = 0; i < 3; i++)
			q = mt_put_varint(q, arg[i]);
	}
	mt_event_end(b, q);
}

static void trace_lost_samples(struct mt_thread *t, uint64_t count)
{
	EVENT(t, samples_lost, .count = count);
}

static void trace_chunk_map(struct mt_thread *t, int sys, uint64_t bytes)
{
	EVENT(t, chunk_map, .sys = (uint64_t)sys, .bytes = bytes);
}

static void put_text_event(struct mt_thread *t, int tag, const uint64_t *pre,
			   size_t npre, const char *text, size_t max)
{
	struct mt_trace_buf *b = claim(t);
	if (!b)
		return;
	size_t n = strnlen(text, max);
	unsigned char *q = begin_event(b, tag);
	for (size_t i = 0; i < npre; i++)
		q = mt_put_varint(q, pre[i]);
	q = mt_put_varint(q, n);
	memcpy(q, text, n);
	mt_event_end(b, q + n);
}

static void trace_region(struct mt_thread *t, int tag, int id, const char *name,
		     uint64_t wall_ns)
{
	if (tag == MT_EV_REGION_NAME) {
		uint64_t pre[] = {(uint64_t)id};
		put_text_event(t, tag, pre, 1, name, 63);
	} else if (tag == MT_EV_REGION_END) {
		EVENT(t, region_end, .id = (uint64_t)id, .wall_ns = wall_ns);
	} else {
		EVENT(t, region_begin, .id = (uint64_t)id);
	}
}

static void trace_counters(struct mt_thread *t, const uint64_t *v, size_t n)
{
	struct mt_trace_buf *b = claim(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_COUNTERS);
	q = mt_put_varint(q, n);
	for (size_t i = 0; i < n; i++) {
		q = mt_put_varint(q, mt_zigzag((int64_t)(v[i] - b->last_counters[i])));
		b->last_counters[i] = v[i];
	}
	mt_event_end(b, q);
}

/* ---- the file -------------------------------------------------------- */


/* Does the file at path hold a trace of process pid? */
static bool trace_of(const char *path, pid_t pid)
{
	char buf[512], want[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= (ssize_t)sizeof(struct mt_file_header))
		return false;
	buf[n] = '\0';
	snprintf(want, sizeof want, "\"pid\": %ld,", (long)pid);
	return memcmp(buf, MT_TRACE_MAGIC, 8) == 0 &&
	       memmem(buf, (size_t)n, want, strlen(want)) != NULL;
}

/* An earlier image of this very process, before an exec. */
static bool earlier_image(const char *path)
{
	return trace_of(path, getpid());
}

/* May --force remove what is at path?  Only a trace (or an empty regular
 * file): never a device, FIFO, socket or link, nor another file that
 * happens to have the name. */
static bool replaceable(const char *path)
{
	char magic[8];
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  (st.st_size == 0 ||
		   (read(fd, magic, sizeof magic) == sizeof magic &&
		    memcmp(magic, MT_TRACE_MAGIC, sizeof magic) == 0));
	close(fd);
	return ok;
}

static bool refused_to_replace;

/* Always a new file of mode 0600: with --force an old trace is removed
 * first, never written through (nor a link followed). */
static int create(const char *path)
{
	if (mt_opt.force) {
		if (replaceable(path))
			unlink(path);
		else
			refused_to_replace = true;
	}
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
}

/* Open the file for this process; a name taken by an earlier image of it
 * gets a suffix (.1, .2, ...), any other existing file is left alone. */
static bool open_trace(pid_t parent)
{
	char base[4096];
	static char header[16384];

	if (!mt_expand_path(mt_opt.trace_path, base, sizeof base))
		return false;
	/* A forked child writes a file of its own, and so do its images
	 * after exec (which know it from that file), and a child that execs
	 * without the fork handlers having run (vfork, posix_spawn: its
	 * parent's trace has the name). */
	if (!strstr(mt_opt.trace_path, "%p")) {
		size_t len = strlen(base);
		snprintf(base + len, sizeof base - len, ".%ld", (long)getpid());
		if (!parent && !earlier_image(base)) {
			base[len] = '\0';
			if (trace_of(base, getppid()))
				snprintf(base + len, sizeof base - len, ".%ld",
					 (long)getpid());
		}
	}
	snprintf(trace_path, sizeof trace_path, "%s", base);
	int fd = create(trace_path);
	for (int i = 1; fd < 0 && errno == EEXIST && earlier_image(trace_path) &&
			i < 100;
	     i++) {
		snprintf(trace_path, sizeof trace_path, "%s.%d", base, i);
		fd = create(trace_path);
	}
	if (fd < 0) {
		bool exists = errno == EEXIST;
		mt_warn("cannot create the trace '%s': %s%s; recording nothing",
			trace_path, strerror(errno),
			!exists ? ""
			: refused_to_replace
				? " (and it is not a memtrace trace: --force "
				  "replaces only a trace, never a device, FIFO, "
				  "socket, link or other file; choose another "
				  "path)"
				: " (memtrace never overwrites a file: remove it, "
				  "or use --force)");
		return false;
	}
	/* Out of the way of the program's own descriptors. */
	fd = mt_fd_out_of_the_way(fd);
	if (fd < 0) {
		mt_warn("cannot keep the trace '%s' open: the descriptor limit "
			"(ulimit -n) leaves the shim no room above the program's "
			"descriptors (96 or more is needed); recording nothing",
			trace_path);
		unlink(trace_path);
		return false;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		trace_dev = st.st_dev;
		trace_ino = st.st_ino;
	}
	size_t mlen = mt_process_facts_json(header + sizeof(struct mt_file_header),
			       sizeof header - sizeof(struct mt_file_header), parent);
	struct mt_file_header *h = (struct mt_file_header *)header;
	memcpy(h->magic, MT_TRACE_MAGIC, 8);
	h->major = MT_TRACE_MAJOR;
	h->minor = MT_TRACE_MINOR;
	h->metadata_len = (uint32_t)mlen;
	h->metadata_hash = XXH64(header + sizeof *h, mlen, 0);
	trace_fd = fd;
	file_end = 0;
	struct iovec iov = {header, sizeof *h + mlen};
	if (!mlen || !write_at(&iov, 1, sizeof *h + mlen,
			       reserve(sizeof *h + mlen, 0, 0))) {
		mt_warn("cannot write the trace '%s': %s; recording nothing",
			trace_path, strerror(errno ? errno : ENOSPC));
		close(fd);
		trace_fd = -1;
		return false;
	}
	trace_pid = getpid();
	status_at = reserve(sizeof(struct mt_chunk_header) +
				    sizeof(struct mt_trace_status),
			    0, 0);
	write_status(MT_END_RECORDING, 0, 0);
	return true;
}

/* The counters as they stood when recording began. */
static void trace_baseline(struct mt_thread *t, const uint64_t *v, size_t n)
{
	/* Larger than one event's room: a chunk of its own. */
	struct mt_trace_buf *b = claim_empty(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, MT_EV_BASELINE);
	q = mt_put_varint(q, n);
	for (size_t i = 0; i < n; i++)
		q = mt_put_varint(q, v[i]);
	mt_event_end(b, q);
}

/* ---- the idle flusher ------------------------------------------------ */

/* A thread that records nothing for a while would keep its last events in
 * memory, where a kill loses them.  Every FLUSH_PERIOD_MS a thread of the
 * shim's own writes a provisional copy of each chunk that got events but
 * none for the last period; a busy thread writes its own chunks (every
 * MT_AGE_UNITS).  Either way an event is on disk within about 100 ms. */
/* The sites are written again after a new one appears (its stack is what
 * a process killed by SIGKILL would lose): within a quarter of the run's
 * time so far, from 100 ms to 1 s, so that a run killed early keeps the
 * sites of what it did (a NumPy script killed at 0.85 s had only those of
 * its imports, written at 0.05 s: its churn was credited to no line).
 * Where only their counts changed, at twice the last wait, up to a
 * minute: at once a second the 22 KiB of their JSON were 38% of a NumPy
 * program's 12 s trace, and would be 80 MB an hour of a long run; a
 * process that ends any other way than SIGKILL writes them as it ends. */
enum {
	FLUSH_PERIOD_MS = 50,
	SITES_PERIOD_MIN_MS = 100,
	SITES_PERIOD_MS = 1000,
	SITES_PERIOD_MAX_MS = 64000
};

/* The wait before new sites are written, `ran_ms` into the run. */
static uint64_t new_sites_wait_ms(uint64_t ran_ms)
{
	uint64_t quarter = ran_ms / 4;
	return quarter < SITES_PERIOD_MIN_MS ? SITES_PERIOD_MIN_MS
	       : quarter > SITES_PERIOD_MS   ? SITES_PERIOD_MS
					     : quarter;
}

static void write_idle(struct mt_trace_buf *b, uint64_t now, uint64_t idle_ticks)
{
	if (!b)
		return;
	uint64_t c = __atomic_load_n(&b->committed, __ATOMIC_ACQUIRE) & ~MT_BUSY;
	/* Read while the owner may write them: a hint, checked again under
	 * the lock for what matters. */
	uint64_t last = b->last_units << MT_TSC_SHIFT;
	if (!c || c == b->on_disk || b->closed || now - last < idle_ticks ||
	    mt_lock_is_mine(&b->lock))
		return;
	mt_lock_take(&b->lock);
	c = __atomic_load_n(&b->committed, __ATOMIC_ACQUIRE) & ~MT_BUSY;
	if (c && c != b->on_disk && !b->closed)
		b->on_disk = write_chunk(b, true);
	mt_lock_give(&b->lock);
}

static void flush_unless_busy(struct mt_trace_buf *b);

/* For the sites written as the process ends some other way than exit
 * (the flusher's own buffer may be in use). */
static char *ending_sites;
/* The flusher's, mapped with the trace's other buffers before the program
 * runs: mapped when the thread first ran, it could take the address space
 * a program had limited itself to (RLIMIT_AS) from its next malloc. */
static char *flusher_sites;


/* The nodes of the sites' stacks this file has (each is written once:
 * a sites event has those that are new, and refers to the others). */
static unsigned nodes_written;

/* The call sites as they are now, an event in a chunk of its own, if they
 * changed since `*written` (a count of changes): what a process that
 * never reaches exit leaves of them.  `wait` for the tables: not in a
 * fatal signal's handler. */
static bool write_sites(char *buf, uint64_t *written, bool wait)
{
	uint64_t now = mt_sites_changes();
	if (!buf || now == *written)
		return false;
	unsigned nodes = __atomic_load_n(&nodes_written, __ATOMIC_RELAXED);
	size_t len = mt_sites_json(buf, MT_SITES_TRACE_BYTES, wait, &nodes);
	/* (none yet: nothing to say; a forked child's tables start empty,
	 * though its parent's changes were counted) */
	struct mt_trace_buf *b = len > 2 ? claim_empty(mt_self()) : NULL;
	if (!b)
		return false;
	unsigned char *q = begin_event(b, MT_EV_SITES);
	q = mt_put_varint(q, len);
	memcpy(q, buf, len);
	mt_event_end(b, q + len);
	flush_unless_busy(b);
	*written = now;
	/* (two writers at once write some nodes twice: the same nodes) */
	__atomic_store_n(&nodes_written, nodes, __ATOMIC_RELAXED);
	return true;
}

static void *flush_idle(void *arg)
{
	(void)arg;
	mt_become_shim_thread();
	/* The TSC's rate, measured over the thread's life. */
	uint64_t t0 = mt_ticks(), ns0 = mono_ns();
	/* (its own buffer: a fatal signal's handler may write the sites too) */
	char *sites = flusher_sites;
	static uint64_t sites_written;
	uint64_t sites_at_ns = 0, sites_wait_ms = SITES_PERIOD_MS;
	unsigned sites_known = 0;
	for (;;) {
		poll(NULL, 0, FLUSH_PERIOD_MS);
		if (!native_on() || trace_fd < 0 || mt_shim_threads_paused())
			return NULL;
		unsigned known = mt_sites_known();
		uint64_t wait_ms = known != sites_known
					   ? new_sites_wait_ms((mono_ns() - ns0) / 1000000)
					   : sites_wait_ms;
		if (mono_ns() >= sites_at_ns + wait_ms * 1000000ull &&
		    mt_sites_changes() != sites_written) {
			write_sites(sites, &sites_written, true);
			sites_at_ns = mono_ns();
			sites_known = known;
			sites_wait_ms = wait_ms * 2 < SITES_PERIOD_MAX_MS
						? wait_ms * 2
						: SITES_PERIOD_MAX_MS;
		}
		uint64_t now = mt_ticks(), ns = mono_ns() - ns0;
		uint64_t idle = (uint64_t)((double)(now - t0) / (double)ns *
					   FLUSH_PERIOD_MS * 1e6);
		for (struct mt_thread *t = mt_threads_first(); t; t = t->next) {
			write_idle(t->trace, now, idle);
			write_idle(t->signal_trace, now, idle);
		}
	}
}

static void start_flusher(void)
{
	if (!mt_start_shim_thread(flush_idle) && !mt_shim_threads_retired())
		mt_warn("no thread to write out idle threads' events: a killed "
			"process loses what they recorded since their last chunk");
}

/* The native trace file, when MEMTRACE_OUT names one. */
static bool start_native(void)
{
	if (!mt_opt.trace_path)
		return false;
#ifdef MT_HAVE_ZSTD
	if (mt_opt.compress) {
		size_t need = ZSTD_estimateCCtxSize(1);
		void *work = mt_raw_mmap(need);
		zbuf_len = ZSTD_compressBound(MT_CHUNK_BYTES + MT_EVENT_MAX);
		zbuf = mt_raw_mmap(zbuf_len);
		cctx = work && zbuf ? ZSTD_initStaticCCtx(work, need) : NULL;
	}
#endif
	if (!open_trace(0))
		return false;
	ending_sites = mt_raw_mmap(MT_SITES_TRACE_BYTES);
	if (!flusher_sites)
		flusher_sites = mt_raw_mmap(MT_SITES_TRACE_BYTES);
	start_flusher();
	return true;
}

bool mt_trace_start(void)
{
	return start_native();
}

static void reset_in_child(struct mt_trace_buf *b, uint32_t tid)
{
	if (!b)
		return;
	b->committed = b->on_disk = 0;
	b->provisional_len = 0;
	b->lock = 0;
	b->closed = false;
	b->seq = b->in_signal ? MT_SEQ_SIGNAL : 0;
	b->tid = tid;
}

bool mt_trace_restart_in_child(pid_t parent)
{
	if (is_the_trace(trace_fd)) /* the parent's file (if still ours) */
		close(trace_fd);
	trace_fd = -1;
	nodes_written = 0; /* (its file has none yet) */
	/* The events in the buffers are the parent's, and it writes them.
	 * The blocks of threads the child does not have are free for the
	 * threads it makes (which rename them at their first event). */
	uint32_t tid = (uint32_t)mt_raw(-1, SYS_gettid, 0, 0, 0, 0, 0, 0);
	for (struct mt_thread *t = mt_threads_first(); t; t = t->next) {
		reset_in_child(t->trace, tid);
		reset_in_child(t->signal_trace, tid);
	}
#ifdef MT_HAVE_ZSTD
	pthread_mutex_init(&zstd_lock, NULL);
#endif
	if (!open_trace(parent))
		return false;
	start_flusher();
	return true;
}

static void trace_event(struct mt_thread *t, int tag, const uint64_t *fields,
			size_t n)
{
	struct mt_trace_buf *b = recording(t);
	if (!b)
		return;
	unsigned char *q = begin_event(b, tag);
	for (size_t i = 0; i < n; i++)
		q = mt_put_varint(q, fields[i]);
	mt_event_end(b, q);
}

static void trace_forked(struct mt_thread *t, pid_t parent)
{
	EVENT(t, forked, .parent = (uint64_t)parent);
}

/* b written out, unless its thread is writing into it (this call is then
 * a signal handler's, which claim() sent elsewhere). */
static void flush_unless_busy(struct mt_trace_buf *b)
{
	if (b && !(__atomic_load_n(&b->committed, __ATOMIC_RELAXED) & MT_BUSY))
		mt_trace_flush(b);
}

static void trace_thread_exit(struct mt_thread *t)
{
	struct mt_trace_buf *b = t->trace;
	if (!native_on() || !b || b->closed)
		return;
	EVENT(t, thread_exit, .tid = b->tid);
	flush_unless_busy(t->signal_trace);
	flush_unless_busy(b);
}

static void trace_exec(const char *path)
{
	struct mt_thread *t = mt_tls.thread;
	if (!native_on() || !t || !writing_own_file())
		return;
	uint64_t none = 0;
	write_sites(ending_sites, &none, true);
	put_text_event(t, MT_EV_EXEC, NULL, 0, path, 1024);
	flush_unless_busy(t->signal_trace);
	flush_unless_busy(t->trace);
	if (trace_fd >= 0)
		write_status(MT_END_EXEC, 0, 0);
}

static void trace_exec_failed(void)
{
	if (native_on() && writing_own_file())
		write_status(MT_END_RECORDING, 0, 0);
}

/* Every thread's committed events, as the idle flusher writes them (a
 * thread still recording loses only the event it is writing). */
static void write_out_all(void)
{
	__atomic_store_n(&ending_now, true, __ATOMIC_RELAXED);
	uint64_t now = mt_ticks();
	for (struct mt_thread *t = mt_threads_first(); t; t = t->next) {
		write_idle(t->trace, now, 0);
		write_idle(t->signal_trace, now, 0);
	}
}

static void trace_exit_now(int status)
{
	if (!native_on() || !writing_own_file())
		return;
	write_out_all();
	write_status(MT_END_EXIT_NOW, status, 0);
}

static void trace_crash(int sig)
{
	if (!native_on() || !writing_own_file())
		return;
	uint64_t none = 0;
	write_sites(ending_sites, &none, false);
	write_out_all();
	write_status(MT_END_SIGNAL, sig, 0);
}

static int ending_signal;
/* _exit's status where it ended the process (ending_now_by_exit). */
static bool ending_by_exit_now;
static int exit_now_status;
/* exit's, once its handlers said it (-1: not said). */
static int exit_status = -1;

void mt_trace_exit_status(int status)
{
	exit_status = status;
}

void mt_trace_ended_by(int sig)
{
	ending_signal = sig;
}

void mt_trace_ended_by_exit_now(int status)
{
	exit_now_status = status;
	ending_by_exit_now = true;
}

static void trace_finish(const struct mt_closing *record)
{
	struct mt_thread *self = mt_self();

	if (!native_on())
		return;
	/* The sites as a last sites event, their new nodes with them, and
	 * the closing record without them (with them if there was none). */
	uint64_t none = 0;
	bool apart = write_sites(ending_sites, &none, true);
	const char *exit_json = apart ? record->without_sites : record->json;
	size_t len = apart ? record->without_sites_len : record->len;
	/* exit() may come from a signal handler whose thread held the
	 * compressor when interrupted. */
	__atomic_store_n(&ending_now, true, __ATOMIC_RELAXED);
	uint64_t n = __atomic_load_n(&lost, __ATOMIC_RELAXED);
	if (n)
		EVENT(self, lost, .count = n);
	/* Written alone, as the last chunk of this thread. */
	struct mt_trace_buf *b = len < MT_CHUNK_BYTES ? claim_empty(self) : NULL;
	if (b) {
		unsigned char *q = begin_event(b, MT_EV_EXIT);
		q = mt_put_varint(q, len);
		memcpy(q, exit_json, len);
		mt_event_end(b, q + len);
	}
	/* Every thread's committed events; those still running lose what
	 * they record from now on. */
	for (struct mt_thread *t = mt_threads_first(); t; t = t->next) {
		close_buffer(t->trace);
		close_buffer(t->signal_trace);
	}
	/* (a signal that ends the process wrote the summary on its way:
	 * mt_trace_ended_by; exit's status is -1 where the program did not
	 * start by __libc_start_main, start_main.c) */
	if (writing_own_file())
		write_status(ending_signal	  ? MT_END_SIGNAL
			     : ending_by_exit_now ? MT_END_EXIT_NOW
						  : MT_END_EXIT,
			     ending_signal	  ? ending_signal
			     : ending_by_exit_now ? exit_now_status
						  : exit_status,
			     0);
	mt_sink_off(MT_SINK_TRACE); /* the hot paths stop recording too */
	if (trace_fd >= 0 && is_the_trace(trace_fd))
		close(trace_fd);
	trace_fd = -1;
}

const struct mt_sink mt_trace_sink = {
	.alloc = mt_trace_alloc,
	.free = mt_trace_free,
	.realloc = trace_realloc,
	.usable = trace_usable,
	.syscall = trace_syscall,
	.sys_count = trace_sys_count,
	.heap_move = trace_heap_move,
	.chunk_map = trace_chunk_map,
	.fault = trace_fault,
	.kernel_call = trace_kernel_call,
	.lost_samples = trace_lost_samples,
	.region = trace_region,
	.counters = trace_counters,
	.baseline = trace_baseline,
	.forked = trace_forked,
	.event = trace_event,
	.thread_attach = trace_thread_attach,
	.thread_exit = trace_thread_exit,
	.exec = trace_exec,
	.exec_failed = trace_exec_failed,
	.exit_now = trace_exit_now,
	.crash = trace_crash,
	.finish = trace_finish,
};
