/* `exits HOW [CODE]`: leaves by a chosen path, printing first, so tests can
 * check the output and the status are the same with and without the shim.
 * `exits sigwait` first waits for a signal it sends itself. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int code;

static void *exit_from_thread(void *arg)
{
	(void)arg;
	char *p = malloc(1000);
	__asm__ volatile("" : : "r"(p) : "memory");
	exit(code);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "return";
	code = argc > 2 ? atoi(argv[2]) : 0;
	char *p = strdup("output before exit");

	printf("%s via %s\n", p, how);
	fflush(stdout);
	if (strcmp(how, "exit") == 0)
		exit(code);
	if (strcmp(how, "_exit") == 0)
		_exit(code);
	if (strcmp(how, "quick_exit") == 0)
		quick_exit(code);
	if (strcmp(how, "abort") == 0)
		abort();
	if (strcmp(how, "signal") == 0)
		raise(SIGTERM);
	if (strcmp(how, "sigwait") == 0) {
		/* A signal sent to the process while every thread of the
		 * program blocks it waits for sigwait; a thread that did not
		 * block it would take it, and SIGUSR1 would kill. */
		sigset_t set;
		int sig = 0;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
		usleep(100000); /* the shim's threads are up */
		kill(getpid(), SIGUSR1);
		sigwait(&set, &sig);
		printf("got signal %d\n", sig);
	}
	if (strcmp(how, "thread") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exit_from_thread, NULL);
		pthread_join(t, NULL);
	}
	free(p);
	return code;
}
