/* Where the calling thread's stack lies, and how much of it is left
 * (stack_room.h).
 *
 * glibc puts a thread's descriptor (pthread_self()) at the top of its
 * stack block, the stack just beneath it, so a thread's stack is known by
 * its descriptor and size: pthread_create records the size asked for (the
 * default when none), keyed by the descriptor, in one word a thread, so
 * that a signal handler reads an entry whole without a lock.  The main
 * thread's stack ends at __libc_stack_end and may grow to RLIMIT_STACK.
 * A thread's alternate signal stack is known by the program's call of
 * sigaltstack, made here; one set up by a raw system call is a stack not
 * known, as a coroutine's is (MT_STACK_UNKNOWN).  The main thread's
 * stack is short too where it would have to grow and cannot. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/resource.h>

#include "rawsys.h"
#include "stack_room.h"
#include "thread.h"
#include "visibility.h"

extern void *__libc_stack_end;

enum {
	SLOTS = 4096,
	/* the size's bits in an entry: 4 KiB pages up to 32 GiB */
	SIZE_BITS = 23,
	/* a descriptor is aligned to 64 bytes at least (the static TLS's
	 * alignment): its address to bit 47 fits in the other 41 */
	TCB_SHIFT = 6,
};

/* descriptor >> TCB_SHIFT << SIZE_BITS | stack pages; 0: empty */
static uint64_t threads[SLOTS];
static uintptr_t main_tcb, main_low, main_high;
static size_t default_size;

void mt_stack_room_init(void)
{
	struct rlimit limit;
	pthread_attr_t attr;

	main_tcb = (uintptr_t)pthread_self();
	/* (argv and the environment lie above __libc_stack_end: the stack's
	 * frames all below it) */
	main_high = (uintptr_t)__libc_stack_end;
	main_low = 0;
	if (getrlimit(RLIMIT_STACK, &limit) == 0 &&
	    limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < main_high)
		main_low = main_high - limit.rlim_cur;
	/* (pthread_attr_getstacksize of a fresh attribute answers glibc's
	 * default; nothing allocated) */
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_getstacksize(&attr, &default_size);
		pthread_attr_destroy(&attr);
	}
}

static size_t slot_of(uintptr_t tcb)
{
	return (size_t)((tcb * 0x9e3779b97f4a7c15ull) >> 52) & (SLOTS - 1);
}

void mt_stack_room_thread_created(pthread_t thread, const pthread_attr_t *attr)
{
	uintptr_t tcb = (uintptr_t)thread;
	size_t size = default_size;
	if (attr)
		pthread_attr_getstacksize(attr, &size);
	uint64_t pages = size >> 12;
	if (!pages || tcb >> 47 || tcb & ((1u << TCB_SHIFT) - 1))
		return;
	if (pages >= 1ull << SIZE_BITS)
		pages = (1ull << SIZE_BITS) - 1;
	/* (another thread whose descriptor takes the same slot makes this one
	 * unknown again: walked as before this was known) */
	__atomic_store_n(&threads[slot_of(tcb)],
			 (uint64_t)tcb >> TCB_SHIFT << SIZE_BITS | pages,
			 __ATOMIC_RELAXED);
}

/* The calling thread's stack [*low, *high); false when not known. */
static bool own_stack(uintptr_t *low, uintptr_t *high)
{
	uintptr_t tcb = (uintptr_t)pthread_self();
	if (tcb == main_tcb) {
		*low = main_low;
		*high = main_high;
		return main_high != 0;
	}
	uint64_t e = __atomic_load_n(&threads[slot_of(tcb)], __ATOMIC_RELAXED);
	if (!e || e >> SIZE_BITS != (uint64_t)tcb >> TCB_SHIFT)
		return false;
	/* (the stack's lowest bytes are the guard page's, and the estimate
	 * is some 2 KiB low of it: within what a walk is asked to leave) */
	size_t size = (size_t)(e & ((1ull << SIZE_BITS) - 1)) << 12;
	*low = size < tcb ? tcb - size : 0;
	*high = tcb;
	return true;
}

static enum mt_stack_room room_in(uintptr_t sp, uintptr_t low,
				  uintptr_t high, size_t bytes)
{
	if (sp >= high || sp < low)
		return MT_STACK_UNKNOWN;
	return sp - low >= bytes ? MT_STACK_ROOM : MT_STACK_SHORT;
}

/* The lowest page of the main thread's stack seen mapped. */
static uintptr_t main_mapped_low = UINTPTR_MAX;

/* Whether the main thread's stack reaches down to `addr`, or can grow to
 * it.  The kernel maps that stack as it is touched, and where the address
 * space is limited (RLIMIT_AS) and used up, growing it fails with SIGSEGV:
 * the shim's frames below the program's deepest would kill a process that
 * runs bare (a frame of 800 KB in main, the limit reached, a large block's
 * site walked: 1 run in 40 on tcmalloc, nearly 1 in 2 on every allocator
 * with `hostile as_limit`).  Below the lowest page seen, mincore tells
 * whether the page is mapped (a system call at each new depth, not each
 * walk); a page not mapped yet is taken only where the address space has
 * no limit, as the program's own frames would take it. */
static bool main_stack_reaches(uintptr_t addr)
{
	uintptr_t page = addr & ~(uintptr_t)4095;
	if (page >= __atomic_load_n(&main_mapped_low, __ATOMIC_RELAXED))
		return true;
	unsigned char resident;
	if (mt_raw6(SYS_mincore, (long)page, 1, (long)&resident, 0, 0, 0) == 0) {
		/* (a handler that interrupted this may have stored a lower
		 * one: a page lost is a system call more, no more) */
		__atomic_store_n(&main_mapped_low, page, __ATOMIC_RELAXED);
		return true;
	}
	struct rlimit limit;
	return mt_raw6(SYS_prlimit64, 0, RLIMIT_AS, 0, (long)&limit, 0, 0) == 0 &&
	       limit.rlim_cur == RLIM_INFINITY;
}

/* The system call itself, as glibc's is (nothing more than it). */
MT_EXPORT int sigaltstack(const stack_t *restrict ss, stack_t *restrict old)
{
	long r = mt_raw6(SYS_sigaltstack, (long)ss, (long)old, 0, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	if (ss && ss->ss_flags & SS_DISABLE) {
		mt_tls.alt_stack_low = mt_tls.alt_stack_high = 0;
	} else if (ss) {
		mt_tls.alt_stack_low = (uintptr_t)ss->ss_sp;
		mt_tls.alt_stack_high = (uintptr_t)ss->ss_sp + ss->ss_size;
	}
	return 0;
}

enum mt_stack_room mt_stack_room(size_t bytes)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (sp >= mt_tls.alt_stack_low && sp < mt_tls.alt_stack_high)
		return room_in(sp, mt_tls.alt_stack_low, mt_tls.alt_stack_high,
			       bytes);
	uintptr_t low, high;
	if (own_stack(&low, &high)) {
		enum mt_stack_room room = room_in(sp, low, high, bytes);
		if (room == MT_STACK_ROOM && high == main_high &&
		    !main_stack_reaches(sp - bytes))
			return MT_STACK_SHORT;
		return room;
	}
	/* A thread not known: its alternate stack asked of the kernel (which
	 * says SS_ONSTACK by the stack pointer), its own taken to have room. */
	stack_t alt;
	if (mt_raw6(SYS_sigaltstack, 0, (long)&alt, 0, 0, 0, 0) == 0 &&
	    (alt.ss_flags & SS_ONSTACK))
		return room_in(sp, (uintptr_t)alt.ss_sp,
			       (uintptr_t)alt.ss_sp + alt.ss_size, bytes);
	return MT_STACK_ROOM;
}
