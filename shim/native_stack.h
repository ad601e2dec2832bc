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

#endif
