/* The Python frames of the calling thread, read from the interpreter's own
 * structures: no GIL taken, nothing allocated, no profiler hook.  A
 * thread's frames change only when that thread runs Python code, so inside
 * malloc they stand still, whether or not the thread holds the GIL.
 * CPython 3.11 (the layout is compiled from its headers); other versions
 * are recognised and left alone. */
#ifndef MEMTRACE_PYTHON_FRAMES_H
#define MEMTRACE_PYTHON_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One frame: its code object and where in it the thread is.  The code is
 * alive as long as the frame runs; name it (mt_python_frame_name) before
 * returning to the program. */
struct mt_pyframe {
	const void *code;
	int offset; /* bytes into the code's instructions */
};

/* Find the interpreter in this process (at start-up, outside malloc). */
void mt_python_frames_init(void);
/* The innermost frames of the calling thread, at most max; 0 when it runs
 * no Python code (or the interpreter is not one we can read).  The frames
 * and their names may be read until mt_python_frames_done, which the
 * caller must call, whatever this returned: a thread without the GIL
 * holds a lock of the interpreter's meanwhile. */
size_t mt_python_frames(struct mt_pyframe *out, size_t max);
void mt_python_frames_done(void);
/* Whether the calling thread holds that lock now. */
bool mt_python_frames_held(void);
/* How those frames (the innermost max_frames) split among the C-level
 * calls of the interpreter's eval loop, innermost first: sizes[g] frames
 * run by the g-th call (CPython 3.11 runs the Python functions one calls
 * in the same C-level call; a C function that calls back into Python
 * starts another, its first frame marked is_entry).  Returns how many
 * groups, at most max_groups. */
size_t mt_python_groups(unsigned *sizes, size_t max_groups, size_t max_frames);
/* The lines of a thread's last frames named (the line table is read from
 * its start for each), kept by the caller with the thread's block: not in
 * TLS, whose static block every thread's stack gives room to (2.5 KiB of
 * a thread of PTHREAD_STACK_MIN, whose program then ran past its stack). */
struct mt_python_lines;
extern const size_t mt_python_lines_bytes;
/* A frame's file, function (UTF-8, as the interpreter holds them: "?"
 * where that is not ASCII or cached UTF-8) and line; lines: NULL, or
 * zeroed memory of mt_python_lines_bytes for the thread's. */
void mt_python_frame_name(const struct mt_pyframe *f,
			  struct mt_python_lines *lines, const char **file,
			  const char **function, int *line);

#endif
