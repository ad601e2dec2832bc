/* The next definition of every interposed function (the backend's, or
 * libc's), resolved once, in one place. */
#ifndef MEMTRACE_SYMBOLS_H
#define MEMTRACE_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/types.h>
#include "mode.h"
#include "visibility.h"

struct mt_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	int (*mallopt)(int, int);
	int (*malloc_trim)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	void *(*mmap64)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
	int (*brk)(void *);
	void *(*sbrk)(intptr_t);
	int (*madvise)(void *, size_t, int);
	long (*syscall)(long, ...);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *,
			      void *(*)(void *), void *);
	pid_t (*fork)(void);
	int (*posix_spawn)(pid_t *, const char *,
			   const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *,
			    const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	__sighandler_t (*signal)(int, __sighandler_t);
	void (*_exit)(int);
	void (*_Exit)(int);
	void (*quick_exit)(int);
	int (*setuid)(uid_t);
	int (*setgid)(gid_t);
	int (*seteuid)(uid_t);
	int (*setegid)(gid_t);
	int (*setreuid)(uid_t, uid_t);
	int (*setregid)(gid_t, gid_t);
	int (*setresuid)(uid_t, uid_t, uid_t);
	int (*setresgid)(gid_t, gid_t, gid_t);
	int (*setgroups)(size_t, const gid_t *);
};

/* Starts out pointing at bootstrap functions that resolve everything on
 * first use, so the wrappers never test whether resolution happened. */
extern MT_HIDDEN struct mt_real mt_real;

/* The address range of the allocator's code (the object defining malloc):
 * a memory syscall called from there is the allocator's own. */
extern MT_HIDDEN uintptr_t mt_allocator_lo, mt_allocator_hi;
static inline bool mt_is_allocator_code(const void *pc)
{
	return (uintptr_t)pc - mt_allocator_lo < mt_allocator_hi - mt_allocator_lo;
}

/* True when the allocator is not libc's: its own calls of malloc-API
 * entry points through the PLT are then nested calls, not the program's. */
extern MT_HIDDEN bool mt_allocator_nests;

/* Resolve all symbols now (idempotent). */
void mt_symbols_resolve(void);

/* libc's own program break (glibc's __curbrk), NULL when unknown or when
 * the next sbrk/brk is not libc's. */
uintptr_t mt_libc_curbrk(void);
/* True when the next brk/sbrk are libc's. */
bool mt_libc_owns_brk(void);

/* Allocations served while dlsym runs come from a static arena; free and
 * realloc must recognise them. */
extern MT_HIDDEN unsigned char mt_boot_arena[];
#define MT_BOOT_ARENA_SIZE (256 * 1024)
static inline bool mt_in_boot_arena(const void *p)
{
	return (uintptr_t)p - (uintptr_t)mt_boot_arena < MT_BOOT_ARENA_SIZE;
}
size_t mt_boot_usable_size(const void *p);

/* While on (the shim's own start-up, on its one thread), every allocation
 * comes from that arena too: what the shim allocates as it starts (the
 * unwinder's dlopen, its threads, its fork handlers) stays out of the
 * program's heap, which then starts as it would without the shim (1.2 KiB
 * of them moved every block of the program's, and a realloc that grew in
 * place bare moved under the shim).  Blocks allocated before it are freed
 * and resized as usual. */
void mt_symbols_own_heap(bool on);
/* The allocator's own malloc, the arena on or not (which object serves
 * the program's allocations). */
void *mt_symbols_allocator_malloc(void);

#endif
