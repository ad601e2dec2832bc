/* Which loaded object holds an address: its path and where it was loaded.
 * glibc 2.35 and later answer without the loader's lock, from a sorted
 * table (_dl_find_object, made for unwinders): some hundred instructions,
 * where dladdr also scans the object's symbols for the nearest one, 47,000
 * instructions in python3, paid for each new call site's frames when a
 * program starts.  The symbols are named offline by the readers
 * (analyzers/symbolize.c), from the path and the offset. */
#ifndef MEMTRACE_OBJECTS_H
#define MEMTRACE_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

struct mt_object {
	const char *path; /* as the loader has it: "" for the main program */
	uintptr_t base;	  /* where its first segment is mapped */
};

/* False when no loaded object holds pc. */
bool mt_object_of(const void *pc, struct mt_object *out);

#endif
