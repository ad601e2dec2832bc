/* Large blocks allocated on stacks that come and go: coroutines' stacks
 * (makecontext) mapped and unmapped in turn, at varying sizes, and a signal
 * handler on an alternate stack, itself mapped and unmapped.  The shim
 * unwinds these stacks, and remembers walks by where return addresses lay
 * on them: none may be read where a stack no longer is. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
static ucontext_t main_ctx, co_ctx;
static volatile long sum;
static void body(void) {
	for (int i = 0; i < 3; i++) {
		char *p = malloc(1 << 20);
		p[5] = (char)i; sum += p[5];
		free(p);
		swapcontext(&co_ctx, &main_ctx);
	}
}
static void handler(int sig) {
	(void)sig;
	char *p = malloc(1 << 20);
	p[7] = 1; sum += p[7];
	free(p);
}
/* One coroutine on a stack of its own, run to its end, its stack gone. */
static __attribute__((noinline)) void run_coroutine(size_t sz)
{
	char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		abort();
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = sz;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, body, 0);
	for (int k = 0; k < 4; k++)
		swapcontext(&main_ctx, &co_ctx);
	munmap(stack, sz);
}

int main(void) {
	/* coroutines on stacks mapped and unmapped in turn, at varying sizes */
	for (int round = 0; round < 200; round++)
		run_coroutine((size_t)(16 + round % 7 * 8) << 10);
	/* a handler on an alternate stack, itself mapped and unmapped */
	for (int round = 0; round < 100; round++) {
		size_t sz = 64 << 10;
		stack_t ss = {.ss_sp = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), .ss_size = sz};
		sigaltstack(&ss, NULL);
		struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_ONSTACK};
		sigaction(SIGUSR1, &sa, NULL);
		raise(SIGUSR1);
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
		munmap(ss.ss_sp, sz);
	}
	printf("sum %ld\n", sum);
	return 0;
}
