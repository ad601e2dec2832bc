/* The call sites of a summary ("sites", written by the shim's sites.c),
 * ranked by what the allocator did on their account, and named the way a
 * reader of the code names them. */
#ifndef MEMTRACE_SITES_H
#define MEMTRACE_SITES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A summary's sites (its "sites" array) ranked by the sum of their
 * "caused" figures named in `keys` (NULL-terminated), sites with the same
 * Python frames counted as one (their native callers differ), at most
 * `max`, each at least 1% of the total:
 * [{"share": 0.82, "value": N, "stack": [...]}].  An empty array when
 * sites is NULL or none caused any. */
json_t *mt_sites_ranked(json_t *sites, const char *const *keys, size_t max);

/* The same, ranked by their large blocks' bytes. */
json_t *mt_sites_by_bytes(json_t *sites, size_t max);
/* The sites of region `name` (the shim keys a site by the innermost
 * region open when its blocks were allocated: "region"), a new array;
 * empty for a recording made before sites knew their regions. */
json_t *mt_sites_of_region(json_t *sites, const char *name);

/* The same, ranked by the bytes of the small blocks sampled at them
 * ("small", MEMTRACE_SITES's samples): the shares are of those bytes. */
json_t *mt_sites_by_small(json_t *sites, size_t max);
/* How many small blocks were sampled in all; `rate`: "512.0 KiB", one in
 * so many bytes allocated, or "512.0 KiB to 4.0 MiB" where threads
 * sampled sparser as their samples grew (the shim's default). */
double mt_sites_small_samples(json_t *sites, char *rate, size_t size);

/* "func2 (x.py:6)", or "memcpy+0x10 (libc.so.6)" for a site without
 * Python frames: its innermost frame of the program's own code (not the
 * interpreter's or a library's: "<module> (frames.py:18), calling pad", pad being the function it called; "xmalloc (wrap.c:4) inlined into frame (wrap.c:6)"). */
const char *mt_site_label(json_t *stack, char *buf, size_t len);
/* Where the site's blocks are given back (free, realloc to less), as
 * mt_site_label says it, when one place in native code not a library's
 * gives back half of them or more, another than the site's own; else
 * NULL (and for a site with Python frames). */
const char *mt_site_release_label(json_t *site, char *buf, size_t len);
/* The library's Python function the site's own frame called, which
 * allocated or called what did ("irfft"); NULL when the program's frame
 * allocated itself (np.zeros, a C function, has no frame) or is native. */
const char *mt_site_called(json_t *stack);
/* Its frame, or NULL. */
json_t *mt_site_called_frame(json_t *stack);
/* The function the compiler inlined the site's own function into (whose
 * blocks its figures per function count), or NULL. */
const char *mt_site_holder(json_t *stack);
/* Is the function libstdc++'s code that grows a container (a vector's
 * storage, a hash table's buckets), by its full or its inlined name? */
bool mt_cxx_growth(const char *function);
/* Does a ranked site's code grow a buffer step by step (realloc, a
 * vector's doubling, an array concatenated to)?  At least two of its
 * large blocks were larger than the one before, twice as many as were
 * smaller, and the largest is four times the smallest or more: growth,
 * not one size over and over, nor sizes that merely vary.  (A summary
 * without "larger": two, and a third of them, a quarter or more
 * larger.)  Or its stack has libstdc++'s code that grows a vector. */
bool mt_site_grows(json_t *site);
/* Were the heap's trims shared by the blocks freed before them when these
 * sites were recorded (a shim that writes `large.reallocs`, which came
 * with the sharing)?  Before, a trim was the one free's that set it off. */
bool mt_sites_share_shrinks(json_t *sites);
/* The most of a ranked site's blocks live at once in its function, on one
 * thread: its function's count, or for a function inlined into another
 * (whose count is of all the other's blocks) the least of that and the
 * site's own. */
long long mt_site_live_in_function(json_t *site);
/* A site's blocks' mean size as the program asked for them (the usable
 * sizes round up to the allocator's size classes: the same NumPy array
 * was 7.6 MiB on glibc and 8.0 on jemalloc); `usable` over its count
 * where a recording has no such figure. */
double mt_site_block_bytes(json_t *site, double usable);
/* How many of its blocks were larger than the one before ("larger", or
 * in a summary without it "grows"). */
double mt_site_larger(json_t *site);
/* The index of that frame in stack: in Python code, the innermost Python
 * frame of the program's own code (or the innermost Python frame),
 * whatever native frames the stack has inside it. */
size_t mt_site_own_frame(json_t *stack);
/* The path of the program's object a site's own frame is in when that
 * frame has no file and line: the object was built without debug
 * information, or (*no_symbols) is stripped; NULL otherwise. */
const char *mt_site_object_unnamed(json_t *stack, bool *no_symbols);
/* Does the stack list its Python frames first, the allocator's caller
 * after them (recordings made before stacks were interleaved)?  A stack
 * recorded since is innermost first throughout, the caller first. */
bool mt_stack_python_first(json_t *stack);
/* Has it a Python frame at all? */
bool mt_stack_has_python(json_t *stack);
/* Code that is an interpreter's, a library's or the C/C++ runtime's (its
 * templates inlined from system headers too), not the program's. */
bool mt_frame_is_library(json_t *frame);
/* " < caller" for the first max callers of a site's own frame, the
 * program's (a Python frame's callers, the interpreter's too); where the
 * shim cut the stack before its outermost frame (`stack_cut`) and fewer
 * than max were shown, " < [deeper frames not recorded]". */
void mt_site_print_callers(FILE *out, json_t *site, size_t max);
/* The sum of the "caused" figures named in keys over every site (the
 * sites not written out, summed by the shim, included). */
double mt_sites_total(json_t *sites, const char *const *keys);
/* Does any site's code lie in NumPy (a Python file or a native object
 * under a numpy/ directory)? */
bool mt_sites_in_numpy(json_t *sites);
/* The same of one site (the code that called the allocator there). */
bool mt_site_in_numpy(json_t *site);
/* A table of the sites of summary s, heaviest first, on out: `depth`
 * frames of each (its own and callers), the sites that read the same at
 * that depth in one row. */
void mt_sites_print(FILE *out, json_t *s, unsigned depth);
/* The same for one frame. */
const char *mt_frame_label(json_t *frame, char *buf, size_t len);

#endif
