/* CPython 3.11's frames, from its internal headers (Py_BUILD_CORE): only
 * the layout is used, nothing is linked; the few functions needed are
 * looked up in the process (Debian's python3 exports its C API). */
#ifdef MT_HAVE_PYTHON
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "python_frames.h"

#if defined(MT_HAVE_PYTHON) && PY_VERSION_HEX >= 0x030B0000 && \
	PY_VERSION_HEX < 0x030C0000
#define FRAMES_KNOWN 1
#endif

#ifdef FRAMES_KNOWN
static struct {
	bool ready;
	PyThreadState *(*this_thread_state)(void);
	int (*holds_gil)(void);
	int (*is_initialized)(void);
	int (*addr2line)(PyCodeObject *, int);
	PyLockStatus (*lock_timed)(PyThread_type_lock, PY_TIMEOUT_T, int);
	void (*unlock)(PyThread_type_lock);
	const _PyRuntimeState *runtime;
} py;

/* The longest wait for the list's lock: some sites found and named by
 * the threads before, a few microseconds each, or its holder descheduled
 * on a loaded machine (2 ms lost one np.zeros in 1500 beside a CI run). */
enum { HEAD_WAIT_US = 20000 };

/* The interpreter's list of thread states, held by this thread (see
 * readable_thread_state) until mt_python_frames_done. */
static __thread bool holds_head;
#endif

void mt_python_frames_init(void)
{
#ifdef FRAMES_KNOWN
	/* The running interpreter must be the one these headers describe:
	 * Py_Version is its PY_VERSION_HEX (3.11 and later export it). */
	const unsigned long *version = dlsym(RTLD_DEFAULT, "Py_Version");
	if (!version || (*version >> 16) != (PY_VERSION_HEX >> 16))
		return;
	/* A build with Py_TRACE_REFS has two more pointers in every object
	 * header: not the layout compiled here. */
	if (dlsym(RTLD_DEFAULT, "_Py_PrintReferences"))
		return;
	py.this_thread_state = (PyThreadState * (*)(void))
		dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	py.holds_gil = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
	py.is_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	py.addr2line = (int (*)(PyCodeObject *, int))
		dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
	py.lock_timed = (PyLockStatus (*)(PyThread_type_lock, PY_TIMEOUT_T, int))
		dlsym(RTLD_DEFAULT, "PyThread_acquire_lock_timed");
	py.unlock = (void (*)(PyThread_type_lock))
		dlsym(RTLD_DEFAULT, "PyThread_release_lock");
	py.runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	py.ready = py.this_thread_state && py.holds_gil && py.is_initialized &&
		   py.addr2line && py.lock_timed && py.unlock && py.runtime;
#endif
}

#ifdef FRAMES_KNOWN
/* A frame still setting up (3.11's _PyFrame_IsIncomplete) has no line. */
static bool complete(const _PyInterpreterFrame *f)
{
	return f->owner == FRAME_OWNED_BY_GENERATOR ||
	       f->prev_instr >= _PyCode_CODE(f->f_code) + f->f_code->_co_firsttraceable;
}
#endif

#ifdef FRAMES_KNOWN
/* Whether ts is still on its interpreter's list of threads: looked up
 * from the runtime, never through ts, which may have been freed.  With the
 * list's lock (HEAD_LOCK) held. */
static bool listed(const PyThreadState *ts)
{
	for (const PyInterpreterState *i = py.runtime->interpreters.head; i;
	     i = i->next)
		for (const PyThreadState *t = i->threads.head; t; t = t->next)
			if (t == ts)
				return true;
	return false;
}

/* The calling thread's state, where its frames can be read: a thread that
 * holds the GIL, whose state is alive and whose frames are its own; or
 * the main thread without it (NumPy lets the GIL go around a large
 * calloc: np.zeros), whose state only it can delete, at finalization,
 * which has not begun while the interpreter is initialized.  Another
 * thread without the GIL may be a daemon thread still running C code
 * while the interpreter finalizes, which unlinks the other threads'
 * states under the list's lock and frees them after: its state is read
 * only while this thread holds that lock and finds it listed.  The lock
 * is waited for a while only (its holder may be in malloc, waiting for
 * ours, or be this thread): after HEAD_WAIT_US, the frames are not read
 * this time.  Tried alone, it was busy for one np.zeros in a hundred on
 * pool threads: another one's held it while finding its site. */
static PyThreadState *readable_thread_state(void)
{
	if (!py.ready || !py.is_initialized())
		return NULL;
	PyThreadState *ts = py.this_thread_state();
	if (!ts)
		return NULL;
	if (!py.holds_gil() &&
	    (unsigned long)pthread_self() != py.runtime->main_thread) {
		if (!holds_head) {
			if (py.lock_timed(py.runtime->interpreters.mutex,
					  HEAD_WAIT_US, 0) != PY_LOCK_ACQUIRED)
				return NULL;
			holds_head = true;
		}
		if (!listed(ts))
			return NULL;
	}
	return ts->cframe ? ts : NULL;
}
#endif

bool mt_python_frames_held(void)
{
#ifdef FRAMES_KNOWN
	return holds_head;
#else
	return false;
#endif
}

void mt_python_frames_done(void)
{
#ifdef FRAMES_KNOWN
	if (holds_head) {
		holds_head = false;
		py.unlock(py.runtime->interpreters.mutex);
	}
#endif
}

size_t mt_python_frames(struct mt_pyframe *out, size_t max)
{
	size_t n = 0;
#ifdef FRAMES_KNOWN
	PyThreadState *ts = readable_thread_state();
	if (!ts)
		return 0;
	for (const _PyInterpreterFrame *f = ts->cframe->current_frame;
	     f && n < max; f = f->previous) {
		if (!f->f_code || !complete(f))
			continue;
		out[n].code = f->f_code;
		out[n].offset = (int)((const char *)f->prev_instr -
				      (const char *)_PyCode_CODE(f->f_code));
		n++;
	}
#else
	(void)out;
	(void)max;
#endif
	return n;
}

size_t mt_python_groups(unsigned *sizes, size_t max_groups, size_t max_frames)
{
	size_t g = 0;
#ifdef FRAMES_KNOWN
	PyThreadState *ts = readable_thread_state();
	if (!ts)
		return 0;
	/* The same frames as mt_python_frames, in the same order; a group
	 * ends at the frame its C-level call of the eval loop began with
	 * (is_entry), the frames a frame still setting up skips included:
	 * its group may be empty. */
	size_t n = 0;
	unsigned here = 0;
	for (const _PyInterpreterFrame *f = ts->cframe->current_frame;
	     f && n < max_frames && g < max_groups; f = f->previous) {
		if (f->f_code && complete(f)) {
			here++;
			n++;
		}
		if (f->is_entry || n == max_frames) {
			sizes[g++] = here;
			here = 0;
		}
	}
	if (here && g < max_groups)
		sizes[g++] = here;
#else
	(void)sizes;
	(void)max_groups;
	(void)max_frames;
#endif
	return g;
}

#ifdef FRAMES_KNOWN
/* A str's UTF-8 without asking the interpreter (which may allocate). */
static const char *utf8(PyObject *s)
{
	if (!s || !PyUnicode_Check(s) || !PyUnicode_IS_READY(s))
		return "?";
	if (PyUnicode_IS_COMPACT_ASCII(s))
		return (const char *)(((PyASCIIObject *)s) + 1);
	const char *cached = ((PyCompactUnicodeObject *)s)->utf8;
	return cached ? cached : "?";
}
#endif

#ifdef FRAMES_KNOWN
/* The lines of the thread's last frames named.  PyCode_Addr2Line reads a
 * code's line table from its start, some thousands of instructions in a
 * module's code, and new sites share most of their frames (an import's
 * are the same few of importlib).  A code object freed and another made
 * at its address is told apart by its line table: a new bytes object, of
 * its own length and first line. */
enum { LINES_KEPT = 64 };
struct line_kept {
	const PyCodeObject *code;
	const PyObject *table;
	Py_ssize_t table_len;
	int offset, first, line;
};
struct mt_python_lines {
	struct line_kept at[LINES_KEPT];
};
const size_t mt_python_lines_bytes = sizeof(struct mt_python_lines);

static int line_of(struct mt_python_lines *kept, PyCodeObject *code,
		   int offset)
{
	const PyObject *table = code->co_linetable;
	Py_ssize_t len = table ? Py_SIZE(table) : 0;
	size_t h = ((uintptr_t)code ^ (uintptr_t)offset * 0x9e3779b97f4a7c15ull) *
		   0x9e3779b97f4a7c15ull >> 58;
	if (!kept)
		return py.addr2line(code, offset);
	struct line_kept *k = &kept->at[h % LINES_KEPT];
	if (k->code == code && k->table == table && k->table_len == len &&
	    k->offset == offset && k->first == code->co_firstlineno)
		return k->line;
	int line = py.addr2line(code, offset);
	*k = (struct line_kept){code, table, len, offset, code->co_firstlineno,
				line};
	return line;
}
#endif

void mt_python_frame_name(const struct mt_pyframe *f,
			  struct mt_python_lines *lines, const char **file,
			  const char **function, int *line)
{
#ifdef FRAMES_KNOWN
	PyCodeObject *code = (PyCodeObject *)f->code;
	*file = utf8(code->co_filename);
	*function = utf8(code->co_qualname ? code->co_qualname : code->co_name);
	*line = line_of(lines, code, f->offset);
#else
	(void)f;
	(void)lines;
	*file = *function = "?";
	*line = 0;
#endif
}
