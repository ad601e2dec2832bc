/* The shim's own system calls, made with the syscall instruction itself.
 *
 * Calls through libc would land in our own interposers (we export mmap and
 * syscall), or in a backend's (tcmalloc defines mmap), and be counted as the
 * program's.  Raw calls are invisible to every interposer; they are counted
 * apart, in mt_shim_syscalls, so a comparison with strace can subtract them. */
#ifndef MEMTRACE_RAWSYS_H
#define MEMTRACE_RAWSYS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memtrace/events.h"
#include "visibility.h"

static inline size_t mt_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* How many memory system calls the shim made for itself, per kind. */
extern MT_HIDDEN uint64_t mt_shim_syscalls[MT_SYS_COUNT];

#if defined(__x86_64__)
static inline long mt_raw6(long n, long a, long b, long c, long d, long e,
			   long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long mt_raw6(long n, long a, long b, long c, long d, long e,
			   long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
#error "memtrace: raw system calls are written for x86_64 and aarch64 only"
#endif

static inline void mt_shim_count(int sys)
{
	if (sys >= 0)
		__atomic_fetch_add(&mt_shim_syscalls[sys], 1, __ATOMIC_RELAXED);
}

/* Returns the kernel's result: -errno on failure, errno untouched. */
static inline long mt_raw(int sys, long n, long a, long b, long c, long d,
			  long e, long f)
{
	mt_shim_count(sys);
	return mt_raw6(n, a, b, c, d, e, f);
}

static inline void *mt_raw_mmap(size_t len)
{
	long r = mt_raw(MT_SYS_MMAP, SYS_mmap, 0, (long)len,
			PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			0);
	return r < 0 && r > -4096 ? (void *)0 : (void *)r;
}

/* Memory for a stack, its pages committed as they are touched. */
static inline void *mt_raw_mmap_stack(size_t len)
{
	long r = mt_raw(MT_SYS_MMAP, SYS_mmap, 0, (long)len,
			PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
			-1, 0);
	return r < 0 && r > -4096 ? (void *)0 : (void *)r;
}

static inline void mt_raw_munmap(void *p, size_t len)
{
	mt_raw(MT_SYS_MUNMAP, SYS_munmap, (long)p, (long)len, 0, 0, 0, 0);
}

static inline uintptr_t mt_raw_brk_query(void)
{
	return (uintptr_t)mt_raw(MT_SYS_BRK, SYS_brk, 0, 0, 0, 0, 0, 0);
}

static inline long mt_raw_write(int fd, const void *buf, size_t len)
{
	return mt_raw(-1, SYS_write, fd, (long)buf, (long)len, 0, 0, 0);
}

/* The shim's own I/O from the program's threads (inside malloc and free,
 * under the shim's locks).  glibc's read, pread, pwritev, open and close
 * are cancellation points: a thread the program cancels would be
 * cancelled inside free, or end holding a buffer's lock that every other
 * thread then waits for.  A raw call never is. */
static inline long mt_raw_openat(const char *path, int flags, int mode)
{
	return mt_raw(-1, SYS_openat, AT_FDCWD, (long)path, flags, mode, 0, 0);
}

static inline long mt_raw_close(int fd)
{
	return mt_raw(-1, SYS_close, fd, 0, 0, 0, 0, 0);
}

static inline long mt_raw_read(int fd, void *buf, size_t len)
{
	return mt_raw(-1, SYS_read, fd, (long)buf, (long)len, 0, 0, 0);
}

static inline long mt_raw_pread(int fd, void *buf, size_t len, uint64_t at)
{
	return mt_raw(-1, SYS_pread64, fd, (long)buf, (long)len, (long)at, 0, 0);
}

/* (the offset in one register: the high word is for 32-bit systems) */
static inline long mt_raw_pwritev(int fd, const struct iovec *iov, int n,
				  uint64_t at)
{
	return mt_raw(-1, SYS_pwritev, fd, (long)iov, n, (long)at, 0, 0);
}

/* Signals a write of the shim's own may raise, whose default action kills
 * the program: SIGPIPE (a pipe whose reader has gone) and SIGXFSZ (a file
 * past RLIMIT_FSIZE).  They are blocked in this thread while the shim
 * writes, and the one its write raised is taken back before the mask is
 * restored (one pending already is left for the program).  Raw calls: the
 * kernel's sigset is one word. */
struct mt_quiet {
	uint64_t old, pending;
};

#define MT_SIGBIT(sig) (1ull << ((sig) - 1))

static inline void mt_quiet_begin(struct mt_quiet *q)
{
	const uint64_t block = MT_SIGBIT(SIGPIPE) | MT_SIGBIT(SIGXFSZ);
	q->old = q->pending = 0;
	mt_raw(-1, SYS_rt_sigprocmask, SIG_BLOCK, (long)&block, (long)&q->old, 8,
	       0, 0);
	mt_raw(-1, SYS_rt_sigpending, (long)&q->pending, 8, 0, 0, 0, 0);
}

/* w: the last write's result (-EPIPE and -EFBIG raised a signal). */
static inline void mt_quiet_end(struct mt_quiet *q, long w)
{
	uint64_t raised = w == -EPIPE   ? MT_SIGBIT(SIGPIPE)
			  : w == -EFBIG ? MT_SIGBIT(SIGXFSZ)
					: 0;
	struct timespec now = {0, 0};
	if (raised && !(q->pending & raised))
		mt_raw(-1, SYS_rt_sigtimedwait, (long)&raised, 0, (long)&now, 8,
		       0, 0);
	mt_raw(-1, SYS_rt_sigprocmask, SIG_SETMASK, (long)&q->old, 0, 8, 0, 0);
}

#endif
