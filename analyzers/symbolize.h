/* Native frames named offline: function, and file and line where the
 * object has debug information. */
#ifndef MEMTRACE_SYMBOLIZE_H
#define MEMTRACE_SYMBOLIZE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct mt_symbol {
	char function[256];
	char file[512]; /* "" without line information */
	int line;
	uint64_t offset; /* of the address from the function's start */
};

/* The code at `offset` from where `object` (an absolute path) was loaded,
 * a return address: the functions there, innermost first, those the
 * compiler inlined and then the one that holds them, each at its line.
 * At most max; 0 when the object cannot be read or has no symbol there. */
/* Can the object be read (it is there, an ELF file)? */
bool mt_object_readable(const char *object);
unsigned mt_symbolize(const char *object, uint64_t offset,
		      struct mt_symbol *out, unsigned max);

/* Each native frame of the summary's sites gets "function", and "file"
 * and "line" where known; the functions inlined there come before it,
 * each a frame of its own marked "inlined". */
void mt_sites_symbolize(json_t *summary);

#endif
