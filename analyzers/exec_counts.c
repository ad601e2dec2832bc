#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec_counts.h"
#include "tracefs.h"

void mt_exec_counts_open(struct mt_exec_counts *c, pid_t child)
{
	c->valid = false;
	for (int k = 0; k < MT_SYS_COUNT; k++) {
		c->fd[k] = -1;
		c->n[k] = 0;
		char event[64];
		snprintf(event, sizeof event, "sys_enter_%s", mt_sys_names[k]);
		long id = mt_tracefs_id("syscalls", event, NULL);
		if (id < 0)
			continue;
		struct perf_event_attr a = {
			.size = sizeof a,
			.type = PERF_TYPE_TRACEPOINT,
			.config = (uint64_t)id,
			.disabled = 1,
			.enable_on_exec = 1, /* from the exec on, as strace */
			.inherit = 1,	     /* its threads and children too */
		};
		c->fd[k] = (int)syscall(SYS_perf_event_open, &a, child, -1, -1,
					PERF_FLAG_FD_CLOEXEC);
	}
}

void mt_exec_counts_read(struct mt_exec_counts *c)
{
	bool all = true;
	for (int k = 0; k < MT_SYS_COUNT; k++) {
		uint64_t v;
		if (c->fd[k] < 0 || read(c->fd[k], &v, sizeof v) != sizeof v)
			all = false;
		else
			c->n[k] = v;
		if (c->fd[k] >= 0)
			close(c->fd[k]);
		c->fd[k] = -1;
	}
	c->valid = all;
}
