/* Native frames for the sites of large blocks allocated outside Python
 * code (sites.c): the stack from the code that called the allocator
 * outward.  When that code only allocates on behalf of another (C++'s
 * operator new, the C library's strdup or getline), a site there says
 * nothing: the stack begins at the first frame outside such runtime code. */
#ifndef MEMTRACE_NATIVE_STACK_H
#define MEMTRACE_NATIVE_STACK_H

#include <stdint.h>

/* Load the unwinder (at start-up). */
void mt_native_stack_init(void);
/* Up to max return addresses into out, innermost first, past the shim's
 * and the runtime libraries' frames; just caller when the stack cannot be
 * read (no unwinder, no unwind tables).  *function: where the function of
 * the first one begins (its caller's address when not known), the same
 * for every line of one function, inlined callees' included.  Returns how
 * many. */
unsigned mt_native_stack(const void *caller, const void **out, unsigned max,
			 uintptr_t *function);
/* Every frame from the one that returns to caller outward, at most max,
 * unlike mt_native_stack nothing skipped nor remembered (a site's first
 * allocation: sites.c's mixed stacks): each return address, and where its
 * function begins (0: not known).  The walk ends after the `stops`-th
 * frame of the function that begins at stop_at (0: none), when what lies
 * outward of it is not needed.  Returns how many; 0 when the walk did not
 * reach caller (no unwinder, no unwind tables). */
unsigned mt_native_walk(const void *caller, uintptr_t *ip, uintptr_t *start,
			unsigned max, uintptr_t stop_at, unsigned stops);

#endif
