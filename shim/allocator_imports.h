/* Which of malloc and free the allocator's own code calls through its
 * dynamic symbols (a relocation names them: an import, or its own
 * definition called through the PLT, which the shim's preempts): only
 * then can a call of the shim's malloc or free come from the allocator
 * itself, and need its caller's address tested (mt_program_call).
 * tcmalloc (gperftools 2.10) calls neither so, mimalloc 2.0 calls free
 * (in mi_realpath), jemalloc 5.3 malloc. */
#ifndef MEMTRACE_ALLOCATOR_IMPORTS_H
#define MEMTRACE_ALLOCATOR_IMPORTS_H

#include <stdbool.h>

#include "visibility.h"

extern MT_HIDDEN bool mt_allocator_calls_malloc, mt_allocator_calls_free;

/* Reads the relocations of the object defining fn (the allocator's
 * malloc); when they cannot be read, both are taken as called. */
void mt_allocator_imports_read(void *fn);

#endif
