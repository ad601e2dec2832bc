#define _GNU_SOURCE
#include <stdint.h>
#include <ucontext.h>

#include "own_stack.h"
#include "rawsys.h"

#define OWN_STACK_BYTES (1u << 20)

static void *stack;
static ucontext_t on_own, left;
/* what runs on it now (makecontext passes ints only) */
static void (*running_fn)(void *);
static void *running_arg;

void mt_own_stack_start(void)
{
	stack = mt_raw_mmap_stack(OWN_STACK_BYTES);
}

static void run(void)
{
	running_fn(running_arg);
}

bool mt_own_stack_run(void (*fn)(void *), void *arg)
{
	static int busy;
	if (!stack || __atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return false;
	bool ran = false;
	if (getcontext(&on_own) == 0) {
		on_own.uc_stack.ss_sp = stack;
		on_own.uc_stack.ss_size = OWN_STACK_BYTES;
		on_own.uc_link = &left;
		running_fn = fn;
		running_arg = arg;
		makecontext(&on_own, run, 0);
		ran = swapcontext(&left, &on_own) == 0;
	}
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	return ran;
}
