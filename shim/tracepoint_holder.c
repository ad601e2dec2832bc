/* memtrace-hold: keeps the syscall tracepoints the shim counts with
 * registered while processes under the shim run, and MT_HOLD_LINGER_MS
 * after the last one left, so that none of them waits at its exit for
 * the kernel to unregister them (common/tracepoint_hold.h).
 *
 * Started by the first such process (or by the memtrace command) with
 * one connection as descriptor 3; others connect to its abstract socket.
 * It counts nothing: its events are its own, disabled. */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "memtrace/events.h"
#include "tracefs.h"
#include "tracepoint_hold.h"

enum { MOST_CLIENTS = 1024 };

static void open_tracepoints(void)
{
	for (int k = 0; k < MT_SYS_COUNT; k++) {
		char event[64];
		snprintf(event, sizeof event, "sys_enter_%s", mt_sys_names[k]);
		long id = mt_tracefs_id("syscalls", event, NULL);
		if (id < 0)
			continue;
		struct perf_event_attr a = {
			.size = sizeof a,
			.type = PERF_TYPE_TRACEPOINT,
			.config = (unsigned long long)id,
			.disabled = 1,
		};
		/* (open until this process exits) */
		syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
}

/* The socket others connect to, or -1 where another holder has it (two
 * processes started one each at the same moment): this one then holds
 * for its own client alone. */
static int listen_socket(void)
{
	struct sockaddr_un a;
	socklen_t len = mt_hold_address(&a);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, len) != 0 ||
			listen(fd, 128) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int main(void)
{
	/* Away from the process that started it (which made it init's child):
	 * not in its session (a ^C there is not for this one), nor in its
	 * directory. */
	setsid();
	if (chdir("/") != 0)
		_exit(1);
	sigset_t none;
	sigemptyset(&none);
	/* (what the program ignored, an exec keeps ignored) */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigprocmask(SIG_SETMASK, &none, NULL);

	static struct pollfd p[1 + MOST_CLIENTS];
	int clients = 0;
	p[0] = (struct pollfd){.fd = listen_socket(), .events = POLLIN};
	open_tracepoints();
	if (fcntl(3, F_GETFD) >= 0)
		p[1 + clients++] = (struct pollfd){.fd = 3, .events = POLLIN};
	for (;;) {
		/* (with every slot taken, new clients wait in the backlog) */
		p[0].events = clients < MOST_CLIENTS ? POLLIN : 0;
		int n = poll(p, 1 + (nfds_t)clients, clients ? -1 : MT_HOLD_LINGER_MS);
		if (n == 0)
			return 0; /* nobody for MT_HOLD_LINGER_MS */
		if (n < 0)
			continue;
		/* A client sends nothing: readable means it closed. */
		for (int i = clients; i >= 1; i--)
			if (p[i].revents) {
				close(p[i].fd);
				p[i] = p[clients--];
			}
		if (p[0].fd >= 0 && (p[0].revents & POLLIN))
			for (int fd; clients < MOST_CLIENTS &&
				     (fd = accept4(p[0].fd, NULL, NULL, SOCK_CLOEXEC)) >= 0;)
				p[1 + clients++] = (struct pollfd){.fd = fd, .events = POLLIN};
	}
}
