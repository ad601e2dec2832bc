/* Kernel counters: process-wide counts of the memory system calls (the
 * syscalls:sys_enter_* tracepoints, from perf_event_open) and of page
 * faults (the kernel's own per-task counts, getrusage(RUSAGE_SELF)).  They
 * see every thread and every caller, glibc's malloc included, and cost
 * nothing per allocator call. */
#ifndef MEMTRACE_KCOUNTERS_H
#define MEMTRACE_KCOUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include "memtrace/events.h"

struct mt_ksnapshot {
	bool valid[MT_KERNEL_COUNT];
	uint64_t value[MT_KERNEL_COUNT];
};

/* Open the counters for this process (all its threads, present and
 * future; not its children, which open their own).  When `announce`, says
 * on stderr what is not available and what falls back. */
void mt_kcounters_open(bool announce);
/* Whether some counter is open, which every new thread inherits. */
bool mt_kcounters_inherited(void);
/* The shim's own memory syscalls (rawsys.h) are in the kernel's counts
 * from the moment the counters open: mark that moment, and take them out
 * since then. */
void mt_kcounters_mark_shim_syscalls(void);
uint64_t mt_kcounters_shim_since_open(int sys);
/* In a child after fork: the inherited descriptors count the parent. */
void mt_kcounters_forget(void);
/* Current values; events that could not be opened, or whose descriptor the
 * program has since closed, are not valid.  The page faults are always
 * there, the process's since it was forked (across exec). */
void mt_kcounters_read(struct mt_ksnapshot *out);

/* Move a descriptor of the shim's to the top of the range (closed on
 * exec); returns the new number, or -1 (EMFILE, fd closed) under a limit
 * that leaves no room up there (kcounters.c). */
int mt_fd_out_of_the_way(int fd);

/* A perf event's id (0: fd is no perf event).  The program may close the
 * shim's descriptors (closefrom, close_range) and get their numbers for
 * its own files: the shim closes a number only while it is still the
 * event it opened (perf events share one inode: the id tells them
 * apart). */
uint64_t mt_perf_id(int fd);
void mt_perf_close(int fd, uint64_t id);

#endif
