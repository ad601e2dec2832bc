/* Whether the stack the calling thread runs on has room for the unwinder,
 * and is a stack the shim knows the bounds of.
 *
 * A walk (libgcc's _Unwind_Backtrace and the shim's frames) takes some
 * 4 KiB of stack; a signal handler that allocates on a small alternate
 * stack (MINSIGSTKSZ, SIGSTKSZ) has less than that left, and glibc's own
 * allocation path takes under 3 KiB: with the walk, the handler wrote
 * below its stack, into the block beneath it.  And a stack the program
 * made itself (a green thread, a coroutine) may end in a frame whose
 * unwind tables send the unwinder past its top, into a guard page. */
#ifndef MEMTRACE_STACK_ROOM_H
#define MEMTRACE_STACK_ROOM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* The main thread's stack and the threads' default size (at start-up, on
 * the main thread). */
void mt_stack_room_init(void);
/* A thread the program created (its pthread_t, the attributes it was
 * created with), from pthread_create. */
void mt_stack_room_thread_created(pthread_t thread,
				  const pthread_attr_t *attr);
enum mt_stack_room {
	MT_STACK_ROOM,	  /* `bytes` left below the stack pointer */
	MT_STACK_SHORT,	  /* less */
	MT_STACK_UNKNOWN, /* a stack of the program's own making: its
			     bounds not known */
};

/* What the stack the calling thread runs on has left: on an alternate
 * signal stack, or on the thread's own, below the stack pointer.  A thread
 * whose stack is not known (not created by pthread_create, or too many
 * threads to remember) is taken to have room on its own (a system call
 * tells whether it is on its alternate stack). */
enum mt_stack_room mt_stack_room(size_t bytes);

/* What an unwinder's walk takes (measured: some 4 KiB on x86_64, the
 * shim's frames from the allocation's entry point on), twice over. */
#define MT_STACK_WALK_BYTES (12u << 10)

#endif
