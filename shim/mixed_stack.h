/* The stack of a site in Python code with the native frames between its
 * Python ones (sites.c, once per new site): innermost first, the code that
 * called the allocator, then the Python frames of the innermost C-level
 * call of the interpreter's eval loop, then the native code between it
 * and the next call outward (a C builtin such as map or sorted's key, a
 * NumPy ufunc that calls back into Python), that call's Python frames,
 * and so on.
 *
 * Of the native frames between two calls of the eval loop (many, most of
 * them the interpreter's call machinery), at most two are kept: the
 * innermost one that is not an exported function of the interpreter (its
 * calling functions: _PyFunction_Vectorcall, PyObject_Call...; the code
 * that called back into Python, map's or sorted's, static in the
 * interpreter, or an extension's) and the outermost one of another object
 * than the interpreter (an extension's function that Python called:
 * NumPy's ufunc).  Between the allocator's caller and the first call of
 * the eval loop, the caller and that outermost one of another object.
 * The eval loop's frames themselves stand for their Python frames. */
#ifndef MEMTRACE_MIXED_STACK_H
#define MEMTRACE_MIXED_STACK_H

#include <stdint.h>

/* Find the interpreter's eval loop (at start-up). */
void mt_mixed_stack_init(void);
/* The stack of the calling thread, whose npy innermost Python frames
 * (python_frames.h) a site has, called the allocator from caller: into
 * order, innermost first, each k >= 0 the Python frame k, each k < 0 the
 * native frame native[-1 - k] (native[0] is caller); at most max_native
 * native frames.  Returns how many entries (npy + the native frames).
 * When the native stack cannot be walked, caller then the Python frames. */
unsigned mt_mixed_stack(const void *caller, unsigned npy,
			const void **native, unsigned max_native,
			signed char *order, unsigned *nnative);

#endif
