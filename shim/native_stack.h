/* Native frames for the sites of large blocks allocated outside Python
 * code (sites.c).  When the allocator's caller only allocates on behalf of
 * another (C++'s operator new, the C library's strdup or getline), a site
 * there says nothing: the stack begins at the first frame outside such
 * runtime code, and goes on outward; so does a C++ new's (its caller is
 * often a std:: template compiled into the program).  Otherwise the
 * caller is the site. */
#ifndef MEMTRACE_NATIVE_STACK_H
#define MEMTRACE_NATIVE_STACK_H

/* Load the unwinder (at start-up). */
void mt_native_stack_init(void);
/* Up to max return addresses into out, innermost first, past the shim's
 * and the runtime libraries' frames when caller is runtime code; just
 * caller otherwise, or when the stack cannot be read (no unwinder, no
 * unwind tables).  Returns how many. */
unsigned mt_native_stack(const void *caller, const void **out, unsigned max);

#endif
