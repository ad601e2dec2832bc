/* The shim's globals are its own (the library is linked with hidden
 * visibility), but -fvisibility=hidden only marks definitions: a plain
 * extern declaration is compiled as if it could live in another object,
 * through the GOT, one more load on every hot-path access.  Declarations
 * marked MT_HIDDEN are addressed directly. */
#ifndef MEMTRACE_VISIBILITY_H
#define MEMTRACE_VISIBILITY_H

#define MT_HIDDEN __attribute__((visibility("hidden")))
/* What the shim exports: the interposed functions and its public API
 * (memtrace.h). */
#define MT_EXPORT __attribute__((visibility("default")))

#endif
