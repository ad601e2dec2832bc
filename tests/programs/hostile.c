/* `hostile MODE [N]`: what programs do that a shim must survive.  Each
 * mode prints what it did, so a test compares with a bare run and with the
 * trace.
 *
 *   detached N       N rounds of 50 detached threads, half of them
 *                    allocating, half never calling the allocator (their
 *                    teardown is its first call); main returns 3 while
 *                    the last ones are still ending
 *   main_exits       the main thread calls pthread_exit; a worker
 *                    allocates 1000 blocks, then ends the process by
 *                    ending (status 0)
 *   fork_in_thread   a thread forks; the child's only thread allocates 10
 *                    blocks and ends by returning from its function
 *   signal_malloc N  a profiling timer's handler mallocs and frees while
 *                    main does N malloc+free pairs
 *   fork_threads N   a parent with two busy threads forks N children from
 *                    one of them; each child's 4 threads malloc 100 blocks
 *   crash N          N malloc+free pairs, then a segmentation fault
 *   exit_in_handler MS  main mallocs and frees, 10 blocks to a region,
 *                    until, MS ms in, a timer's handler calls exit(4)
 *                    (wherever main is: in the allocator, or in the shim)
 *   cancel N         N rounds of 4 threads that malloc and free until main
 *                    cancels them (deferred: at their pthread_testcancel)
 *   cancel_free      a thread cancels itself, then mallocs and frees a
 *                    large block 50 times, with a cancellation point
 *                    (usleep) after each: only the first pair runs
 *   fork_in_handler N  a single-threaded program whose profiling timer's
 *                    handler forks N times while main mallocs and frees
 *                    (wherever main is: inside malloc or free, holding
 *                    the arena's lock); each child allocates and exits 3
 *   small_stack_term  a thread of PTHREAD_STACK_MIN goes 8 KiB deep into
 *                    its stack and waits; the process is sent SIGTERM,
 *                    which that thread takes, and dies of it
 *   altstack_term    main, on a stack of its own for signals (SIGSTKSZ,
 *                    as language runtimes set one up), raises SIGTERM
 *   altstack_malloc BYTES  a handler on an alternate stack of BYTES,
 *                    above a guard page, mallocs 1 MiB and 100 bytes,
 *                    reallocs those to 300000, frees both; 100 times (on
 *                    x86-64, the least for glibc is 3 KiB, 5 for mimalloc)
 *   altstack_exit    a handler on a stack of SIGSTKSZ mallocs 1 MiB and
 *                    calls exit(5)
 *   green_stack N    (x86-64) a function run N times on a stack the
 *                    program mapped, under a guard page, whose outermost
 *                    return address is into ordinary code (no end of
 *                    stack in the unwind tables, as hand-written context
 *                    switches leave it), mallocs and frees 1 MiB
 *   forks N          N children forked at once, each living 100 ms; main
 *                    allocates before each fork and waits for them all
 *                    (a fork that fails: exit 1, once those made ended)
 *   shells N         N shells started at once by popen, each living
 *                    100 ms, then one by system() exiting 3
 *   as_limit N       main goes 512 KiB deep into its stack, limits the
 *                    address space (RLIMIT_AS) to what the process has,
 *                    and there frees and mallocs 2 MiB N times: the
 *                    stack has no page to grow by
 *
 * A third argument sets the size of the blocks the program's threads make
 * (default 100 bytes; 300000 is large: followed by the shim's sites).
 * (signal_malloc with large blocks crashes or deadlocks glibc and jemalloc
 * without the shim: the handler's malloc interrupts one that holds their
 * locks.) */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memtrace.h>

/* gcc removes a malloc/free pair whose pointer never escapes. */
static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

static size_t block = 100;

static void *alloc_and_free(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		void *p = malloc(block);
		keep(p);
		free(p);
	}
	return NULL;
}

static int detached(long rounds)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < 50; i++) {
			pthread_t t;
			pthread_create(&t, &attr, alloc_and_free,
				       (void *)(i % 2 * 10));
		}
		usleep(2000);
	}
	printf("created %ld detached threads\n", rounds * 50);
	return 3;
}

static void *worker_then_end(void *arg)
{
	(void)arg;
	usleep(100000); /* main has called pthread_exit */
	alloc_and_free((void *)1000L);
	printf("worker done\n");
	fflush(stdout);
	return NULL;
}

static int main_exits(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker_then_end, NULL);
	pthread_exit(NULL);
}

static void *fork_here(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	if (pid == 0) {
		/* The child's only thread: it ends by returning. */
		alloc_and_free((void *)10L);
		return NULL;
	}
	int status;
	waitpid(pid, &status, 0);
	printf("child status %d\n", status);
	return NULL;
}

static int fork_in_thread(void)
{
	pthread_t t;
	pthread_create(&t, NULL, fork_here, NULL);
	pthread_join(t, NULL);
	return 0;
}

static atomic_long handled;

static void on_prof(int sig)
{
	(void)sig;
	void *p = malloc(64);
	keep(p);
	free(p);
	atomic_fetch_add(&handled, 1);
}

static int signal_malloc(long n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval every = {{0, 200}, {0, 200}};
	setitimer(ITIMER_PROF, &every, NULL);
	alloc_and_free((void *)n);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	/* The count goes to stderr: it differs from run to run. */
	fprintf(stderr, "handler calls %ld\n", atomic_load(&handled));
	printf("pairs %ld\n", n);
	return 0;
}

static atomic_bool stop;

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		alloc_and_free((void *)10L);
	return NULL;
}

static void *forker(void *arg)
{
	long children = (long)arg, failed = 0;
	for (long c = 0; c < children; c++) {
		pid_t pid = fork();
		if (pid == 0) {
			pthread_t t[4];
			for (int i = 0; i < 4; i++)
				pthread_create(&t[i], NULL, alloc_and_free,
					       (void *)100L);
			for (int i = 0; i < 4; i++)
				pthread_join(t[i], NULL);
			exit(0);
		}
		int status;
		waitpid(pid, &status, 0);
		failed += status != 0;
	}
	printf("children %ld, failed %ld\n", children, failed);
	return NULL;
}

static int fork_threads(long children)
{
	pthread_t b[2], f;
	for (int i = 0; i < 2; i++)
		pthread_create(&b[i], NULL, busy, NULL);
	pthread_create(&f, NULL, forker, (void *)children);
	pthread_join(f, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(b[i], NULL);
	return 0;
}

static int forks(long n)
{
	pid_t kids[64];
	if (n > 64)
		n = 64;
	for (long i = 0; i < n; i++) {
		char *volatile block = malloc(1000); /* (kept: not elided) */
		free(block);
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("fork");
			while (i--) /* (none left running for the next) */
				waitpid(kids[i], NULL, 0);
			return 1;
		}
		if (kids[i] == 0) {
			usleep(100000);
			_exit(0);
		}
	}
	for (long i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	printf("forked %ld\n", n);
	return 0;
}

static int shells(long n)
{
	FILE *pipes[64];
	if (n > 64)
		n = 64;
	for (long i = 0; i < n; i++) {
		pipes[i] = popen("sleep 0.1", "r");
		if (!pipes[i]) {
			perror("popen");
			while (i--)
				pclose(pipes[i]);
			return 1;
		}
	}
	for (long i = 0; i < n; i++)
		pclose(pipes[i]);
	/* (one child at a time: the least limit the popens need is room) */
	int status = system("exit 3");
	printf("opened %ld, then system: %d\n", n,
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

static int crash(long n)
{
	alloc_and_free((void *)n);
	printf("pairs %ld, then a fault\n", n);
	volatile int *nowhere = NULL;
	__asm__ volatile("" : "+r"(nowhere)); /* a fault the compiler keeps */
	*nowhere = 0;
	return 0;
}

static void exit_now(int sig)
{
	(void)sig;
	write(STDOUT_FILENO, "stopping\n", 9);
	exit(4);
}

static __attribute__((noreturn)) int exit_in_handler(long ms)
{
	signal(SIGALRM, exit_now);
	struct itimerval once = {{0, 0}, {ms / 1000, ms % 1000 * 1000}};
	setitimer(ITIMER_REAL, &once, NULL);
	for (;;) {
		memtrace_begin("loop");
		alloc_and_free((void *)10L);
		memtrace_end("loop");
	}
}

static void *until_cancelled(void *arg)
{
	(void)arg;
	for (;;) {
		alloc_and_free((void *)1000L);
		pthread_testcancel();
	}
	return NULL;
}

static int cancel(long rounds)
{
	for (long r = 0; r < rounds; r++) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++) {
			int err = pthread_create(&t[i], NULL, until_cancelled,
						 NULL);
			if (err) {
				printf("pthread_create: %s\n", strerror(err));
				return 1;
			}
		}
		usleep(1000);
		for (int i = 0; i < 4; i++)
			pthread_cancel(t[i]);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	printf("cancelled %ld rounds of 4 threads\n", rounds);
	return 0;
}

static atomic_int pairs_before_cancel;

static void *cancel_self(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	for (int i = 0; i < 50; i++) {
		void *p = malloc(1 << 20);
		keep(p);
		free(p); /* not a cancellation point */
		atomic_fetch_add(&pairs_before_cancel, 1);
		usleep(0); /* one */
	}
	return NULL;
}

static atomic_long forks_left, forks_bad;
static volatile sig_atomic_t in_child;

/* glibc takes no lock of its own in a single-threaded process's fork, so
 * that a signal handler may fork wherever its thread was. */
static void fork_here_now(int sig)
{
	(void)sig;
	if (in_child || atomic_load(&forks_left) <= 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		in_child = 1;
		for (int i = 0; i < 10; i++) {
			void *p = malloc(i % 2 ? 200000 : 50);
			keep(p);
			free(p);
		}
		exit(3);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 3)
		atomic_fetch_add(&forks_bad, 1);
	atomic_fetch_sub(&forks_left, 1);
}

static int fork_in_handler(long n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fork_here_now;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	atomic_store(&forks_left, n);
	struct itimerval every = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_PROF, &every, NULL);
	for (unsigned long i = 0; atomic_load(&forks_left) > 0; i++) {
		void *p = malloc(i % 8 ? block : block * 3000);
		keep(p);
		free(p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	printf("forked %ld children, %ld failed\n", n, atomic_load(&forks_bad));
	return 0;
}

static int cancel_free(void)
{
	pthread_t t;
	void *result;
	pthread_create(&t, NULL, cancel_self, NULL);
	pthread_join(t, &result);
	printf("%d pairs, then %s\n", atomic_load(&pairs_before_cancel),
	       result == PTHREAD_CANCELED ? "cancelled" : "returned");
	return 0;
}

static volatile sig_atomic_t deep_enough;

static void go_deep(int kib)
{
	volatile char frame[1024];
	memset((char *)frame, kib, sizeof frame);
	if (kib > 1) {
		go_deep(kib - 1);
		return;
	}
	deep_enough = 1;
	while (deep_enough) /* (until the signal ends the process) */
		pause();
}

static void *deep_then_wait(void *arg)
{
	go_deep((int)(long)arg);
	return NULL;
}

static int small_stack_term(void)
{
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN);
	if (pthread_create(&t, &attr, deep_then_wait, (void *)8L) != 0) {
		puts("no thread");
		return 1;
	}
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	while (!deep_enough)
		usleep(1000);
	keep(malloc(block));
	puts("sending SIGTERM");
	kill(getpid(), SIGTERM);
	sleep(10);
	puts("not ended");
	return 0;
}

static int altstack_term(void)
{
	stack_t ss = {.ss_sp = malloc(SIGSTKSZ), .ss_size = SIGSTKSZ};
	if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) {
		puts("no alternate stack");
		return 1;
	}
	for (int i = 0; i < 10; i++)
		keep(malloc(block));
	puts("raising SIGTERM");
	raise(SIGTERM);
	puts("not ended");
	return 0;
}

static atomic_long handled_on_alt;

static void malloc_on_alt(int sig)
{
	(void)sig;
	void *large = malloc(1 << 20), *small = malloc(100);
	keep(large);
	void *grown = realloc(small, 300000);
	keep(grown);
	free(large);
	free(grown ? grown : small);
	handled_on_alt++;
}

/* Above a guard page: a handler that runs past its end dies of SIGSEGV,
 * whatever the allocator has below. */
static bool on_alt_stack(size_t bytes, void (*handler)(int))
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, page + bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t ss = {.ss_sp = m + page, .ss_size = bytes};
	struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_ONSTACK};
	if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0 ||
	    sigaltstack(&ss, NULL) != 0 ||
	    sigaction(SIGUSR1, &sa, NULL) != 0) {
		puts("no alternate stack");
		return false;
	}
	return true;
}

static int altstack_malloc(long bytes)
{
	if (!on_alt_stack((size_t)bytes, malloc_on_alt))
		return 1;
	for (int i = 0; i < 100; i++)
		raise(SIGUSR1);
	printf("handled %ld\n", (long)handled_on_alt);
	return 0;
}

static void exit_on_alt(int sig)
{
	(void)sig;
	keep(malloc(1 << 20));
	exit(5);
}

static int altstack_exit(void)
{
	if (!on_alt_stack(SIGSTKSZ, exit_on_alt))
		return 1;
	puts("raising SIGUSR1");
	raise(SIGUSR1);
	puts("not ended");
	return 0;
}

#if defined(__x86_64__)
#include <setjmp.h>

static jmp_buf left_green;
static int green_runs;

static __attribute__((noinline, noreturn)) void on_green_stack(void)
{
	void *p = malloc(1 << 20);
	keep(p);
	free(p);
	green_runs++;
	longjmp(left_green, 1);
}

static int green_stack(long n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 64 << 10;
	char *m = mmap(NULL, bytes + page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + bytes, page, PROT_NONE) != 0) {
		puts("no stack");
		return 1;
	}
	void **top = (void **)(m + bytes);
	for (long i = 0; i < n; i++) {
		if (setjmp(left_green) == 0) {
			/* (an address inside puts: unwind tables that send
			 * the unwinder on, past the top) */
			top[-1] = (char *)puts + 4;
			__asm__ volatile("mov %0, %%rsp\n\tjmp *%1"
					 :
					 : "r"(&top[-1]), "r"(on_green_stack)
					 : "memory");
		}
	}
	printf("ran %d times\n", green_runs);
	return 0;
}
#else
static int green_stack(long n)
{
	(void)n;
	puts("ran on x86-64 only");
	return 0;
}
#endif

/* The process's address space in bytes (statm's first field), read
 * without allocating. */
static long address_space(void)
{
	char text[64];
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	return atol(text) * sysconf(_SC_PAGESIZE);
}

/* Maps the stack 1 KiB below the caller's frame, room for the calls
 * as_limit_at makes bare (open, read, setrlimit, free, malloc), and no
 * more. */
static __attribute__((noinline)) void touch_below(void)
{
	volatile char room[1 << 10];
	room[0] = 1;
	(void)room[0];
}

static __attribute__((noinline)) int as_limit_at(long n, void **big)
{
	volatile char deep[512 << 10];
	deep[0] = 1;
	touch_below();
	long have = address_space();
	struct rlimit was, limit;
	if (have < 0 || getrlimit(RLIMIT_AS, &was) != 0)
		return 1;
	limit = was;
	limit.rlim_cur = (rlim_t)have;
	if (setrlimit(RLIMIT_AS, &limit) != 0)
		return 1;
	long made = 0;
	for (long i = 0; i < n; i++) {
		free(*big);
		*big = malloc(2 << 20);
		made += *big != NULL;
	}
	setrlimit(RLIMIT_AS, &was);
	printf("allocated %ld of %ld at the limit\n", made, n);
	return deep[0] - 1;
}

/* (glibc's mapped blocks stay mapped, the threshold not moved by a free:
 * each free gives back what the next malloc takes) */
static int as_limit(long n)
{
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	void *big = malloc(2 << 20);
	keep(big);
	int status = as_limit_at(n, &big);
	free(big);
	return status;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 1;
	if (argc > 3)
		block = (size_t)atol(argv[3]);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "detached") == 0)
		return detached(n);
	if (strcmp(mode, "main_exits") == 0)
		return main_exits();
	if (strcmp(mode, "fork_in_thread") == 0)
		return fork_in_thread();
	if (strcmp(mode, "signal_malloc") == 0)
		return signal_malloc(n);
	if (strcmp(mode, "fork_threads") == 0)
		return fork_threads(n);
	if (strcmp(mode, "forks") == 0)
		return forks(n);
	if (strcmp(mode, "crash") == 0)
		return crash(n);
	if (strcmp(mode, "exit_in_handler") == 0)
		return exit_in_handler(n);
	if (strcmp(mode, "cancel") == 0)
		return cancel(n);
	if (strcmp(mode, "cancel_free") == 0)
		return cancel_free();
	if (strcmp(mode, "fork_in_handler") == 0)
		return fork_in_handler(n);
	if (strcmp(mode, "small_stack_term") == 0)
		return small_stack_term();
	if (strcmp(mode, "altstack_term") == 0)
		return altstack_term();
	if (strcmp(mode, "altstack_malloc") == 0)
		return altstack_malloc(n);
	if (strcmp(mode, "altstack_exit") == 0)
		return altstack_exit();
	if (strcmp(mode, "shells") == 0)
		return shells(n);
	if (strcmp(mode, "as_limit") == 0)
		return as_limit(n);
	if (strcmp(mode, "green_stack") == 0)
		return green_stack(n);
	fprintf(stderr, "usage: hostile detached|main_exits|fork_in_thread|"
			"signal_malloc|fork_threads|forks|crash|exit_in_handler|"
			"cancel|cancel_free|fork_in_handler|small_stack_term|"
			"altstack_term|altstack_malloc|altstack_exit|"
			"green_stack [N]\n");
	return 2;
}
