/* Keeping the syscall tracepoints registered between the processes that
 * count with them.
 *
 * When the last perf event on a tracepoint closes, the kernel unregisters
 * it and waits for an RCU grace period, once per tracepoint: six of them
 * took a process under the shim about 0.21 s longer to exit (/bin/true:
 * 0.212 s; 0.003 s while another process held them).  A small process,
 * memtrace-hold (shim/tracepoint_holder.c), holds them while any process
 * is connected to it and a few seconds after, and pays that wait itself,
 * when nobody waits for it. */
#ifndef MEMTRACE_TRACEPOINT_HOLD_H
#define MEMTRACE_TRACEPOINT_HOLD_H

#include <sys/socket.h>
#include <sys/un.h>

/* The abstract socket the holder listens on, per user. */
#define MT_HOLD_SOCKET "memtrace-hold-%u"
socklen_t mt_hold_address(struct sockaddr_un *a);

/* How long the holder keeps the tracepoints after its last client left:
 * runs in a row (a benchmark, explain's runs, with bare runs between)
 * pay nothing. */
#define MT_HOLD_LINGER_MS 5000

/* A descriptor connected to the holder, or -1.  Where none runs, starts
 * HOLDER (the path of memtrace-hold; NULL: none is started), detached,
 * unless this process is being traced (strace -f would wait for it).
 * Keep the descriptor open for as long as this process should hold them;
 * it closes on exec. */
int mt_tracepoints_hold(const char *holder);

/* HOLDER next to the library or program at PATH: its directory and
 * "memtrace-hold".  False where it does not fit or is not there. */
_Bool mt_holder_beside(const char *path, char *out, unsigned long size);

#endif
