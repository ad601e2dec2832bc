/* Which code is runtime (allocates for its caller) is decided once per
 * address, by the name of the object that holds it, and kept in a small
 * table: the few distinct return addresses of large allocations each pay
 * one dladdr.  The unwinder is libgcc's (DWARF CFI: Debian's libraries
 * have no frame pointers), loaded at start-up rather than linked; on
 * glibc 2.35 and later it finds frames with _dl_find_object: no lock, no
 * allocation.  A walk costs about 3 microseconds (bench/sites_cost.py:
 * the FDE lookups and CFI of some ten frames, the shim's own among them),
 * paid only for large blocks that runtime code or C++ new allocated
 * outside Python code; a program's own call is its site. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "native_stack.h"
#include "thread.h"

enum kind { UNKNOWN, USER, RUNTIME, SHIM };

enum { SLOTS = 512, MAX_FRAMES = 48 };
/* pc << 2 | kind, one word: a slot is claimed whole or not at all (user
 * addresses fit in 62 bits). */
static uintptr_t seen[SLOTS];

static bool starts(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

static enum kind classify(uintptr_t pc)
{
	static const char *const runtime[] = {"libstdc++.so", "libc.so",
					      "libgcc_s.so", "libc++.so",
					      "libc++abi.so"};
	Dl_info shim, at;
	if (!dladdr((void *)pc, &at) || !at.dli_fname)
		return USER;
	if (dladdr((void *)mt_native_stack, &shim) &&
	    at.dli_fbase == shim.dli_fbase)
		return SHIM;
	const char *slash = strrchr(at.dli_fname, '/');
	const char *base = slash ? slash + 1 : at.dli_fname;
	for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
		if (starts(base, runtime[i]))
			return RUNTIME;
	return USER;
}

static enum kind kind_of(uintptr_t pc)
{
	size_t i = (pc * 0x9e3779b97f4a7c15ull) >> 55 & (SLOTS - 1);
	for (size_t probe = 0; probe < 8; probe++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t at = __atomic_load_n(&seen[i], __ATOMIC_RELAXED);
		if (at >> 2 == pc)
			return (enum kind)(at & 3);
		if (!at) {
			enum kind k = classify(pc);
			uintptr_t empty = 0;
			/* (Another thread may have taken the slot meanwhile:
			 * the answer holds all the same.) */
			__atomic_compare_exchange_n(&seen[i], &empty, pc << 2 | k,
						    false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
			return k;
		}
	}
	return classify(pc);
}

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef uintptr_t (*get_ip_fn)(struct _Unwind_Context *);

static struct {
	backtrace_fn backtrace;
	get_ip_fn get_ip;
} unwinder;

struct walk {
	const void **out;
	unsigned n, max;
	int frames;
};

/* The frames past the shim's and the runtime's own, innermost first. */
static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = unwinder.get_ip(ctx);
	if (!ip || ++w->frames > MAX_FRAMES || w->n == w->max)
		return _URC_END_OF_STACK;
	enum kind k = kind_of(ip);
	if (!w->n && (k == SHIM || k == RUNTIME))
		return _URC_NO_REASON;
	w->out[w->n++] = (const void *)ip;
	return _URC_NO_REASON;
}

void mt_native_stack_init(void)
{
	/* Loaded now (a constructor may), not in the middle of an
	 * allocation: what glibc itself loads for pthread_cancel. */
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (gcc) {
		unwinder.backtrace = (backtrace_fn)dlsym(gcc, "_Unwind_Backtrace");
		unwinder.get_ip = (get_ip_fn)dlsym(gcc, "_Unwind_GetIP");
	}
	if (!unwinder.backtrace || !unwinder.get_ip)
		unwinder.backtrace = NULL;
}

unsigned mt_native_stack(const void *caller, const void **out, unsigned max)
{
	if (!max)
		return 0;
	out[0] = caller;
	/* A program's own call to the allocator names itself: unwinding
	 * costs microseconds, paid only past runtime code. */
	if (!unwinder.backtrace ||
	    (kind_of((uintptr_t)caller) != RUNTIME && !mt_tls.in_cxx_new))
		return 1;
	struct walk w = {out, 0, max, 0};
	mt_tls.hidden++; /* whatever the unwinder allocates is not the program's */
	unwinder.backtrace(step, &w);
	mt_tls.hidden--;
	if (!w.n) { /* no unwind tables where it began */
		out[0] = caller;
		return 1;
	}
	return w.n;
}
