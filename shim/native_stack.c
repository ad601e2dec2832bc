/* The unwinder is libgcc's (DWARF CFI: Debian's libraries and most
 * programs have no frame pointers), loaded at start-up rather than
 * linked; on glibc 2.35 and later it finds frames with _dl_find_object:
 * no lock, no allocation.  A walk costs about 3 microseconds (the CFI of
 * some ten frames, the shim's own among them), so each thread remembers
 * its last walks: a loop allocating from the same place has the same
 * return addresses stored at the same places on its stack, and reading
 * those few words back is enough to know the walk would give the same
 * frames (bench/sites_cost.py measures both).
 *
 * Which code is runtime (allocates for its caller) is decided once per
 * address, by the name of the object that holds it, and kept in a small
 * table: the few distinct return addresses of large allocations each pay
 * one look in the loader's (objects.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "native_stack.h"
#include "objects.h"
#include "rawsys.h"
#include "stack_room.h"
#include "thread.h"

enum kind { UNKNOWN, USER, RUNTIME, SHIM };

enum {
	SLOTS = 512,
	MAX_FRAMES = 48, /* walked, the shim's and the runtime's included */
	MAX_KEEP = 12,	 /* kept */
	WALKS = 32,	 /* remembered per thread */
	CHECKS = 32,	 /* return addresses read back to reuse a walk */
	STACK_SPAN = 1 << 20, /* a remembered walk stays within this much
				 of stack: one stack, no signal frame */
};

/* pc << 2 | kind, one word: a slot is claimed whole or not at all (user
 * addresses fit in 62 bits). */
static uintptr_t seen[SLOTS];

static bool starts(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0;
}

static enum kind classify(uintptr_t pc)
{
	/* (and the allocators, whose mmap and munmap wrap the program's own
	 * calls: tcmalloc's were taken for the program's code, "mmap+0x66
	 * (libtcmalloc_minimal.so.4)"; new-user trial 12) */
	static const char *const runtime[] = {"libstdc++.so", "libc.so",
					      "libgcc_s.so", "libc++.so",
					      "libc++abi.so", "libtcmalloc",
					      "libjemalloc.so", "libmimalloc.so"};
	struct mt_object shim, at;
	if (!mt_object_of((void *)pc, &at))
		return USER;
	if (mt_object_of((void *)mt_native_stack, &shim) && at.base == shim.base)
		return SHIM;
	const char *slash = strrchr(at.path, '/');
	const char *base = slash ? slash + 1 : at.path;
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
typedef uintptr_t (*get_fn)(struct _Unwind_Context *);

static struct {
	backtrace_fn backtrace;
	get_fn get_ip, get_cfa, get_region_start;
} unwinder;

/* A walk as remembered: the return addresses from the anchor (the
 * canonical frame address of mt_native_stack, which the same path through
 * the shim puts at the same place) outward, each with the stack word that
 * holds it, and what the walk gave. */
struct walk {
	uintptr_t anchor, caller; /* anchor 0: an empty entry */
	uintptr_t function;
	unsigned nchecks, nframes;
	struct {
		uintptr_t slot, ip;
	} check[CHECKS];
	const void *frames[MAX_KEEP];
};

struct mt_walk_cache {
	unsigned owner; /* the block's owner they were walked for */
	struct walk walks[WALKS];
};

/* A walk in progress. */
struct walking {
	uintptr_t ip[MAX_FRAMES], cfa[MAX_FRAMES];
	unsigned raw, kept, max, first_kept;
	uintptr_t function;
	const void **out;
};

/* Every frame, past the shim's and the runtime's own, innermost first. */
static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walking *w = arg;
	uintptr_t ip = unwinder.get_ip(ctx);
	if (!ip || w->raw == MAX_FRAMES || w->kept == w->max)
		return _URC_END_OF_STACK;
	w->ip[w->raw] = ip;
	w->cfa[w->raw] = unwinder.get_cfa(ctx);
	w->raw++;
	enum kind k = kind_of(ip);
	if (!w->kept && (k == SHIM || k == RUNTIME))
		return _URC_NO_REASON;
	if (!w->kept) {
		w->first_kept = w->raw - 1;
		w->function = unwinder.get_region_start(ctx);
	}
	w->out[w->kept++] = (const void *)ip;
	return _URC_NO_REASON;
}

void mt_native_stack_init(void)
{
	/* Loaded now (a constructor may), not in the middle of an
	 * allocation: what glibc itself loads for pthread_cancel. */
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
	if (gcc) {
		unwinder.backtrace = (backtrace_fn)dlsym(gcc, "_Unwind_Backtrace");
		unwinder.get_ip = (get_fn)dlsym(gcc, "_Unwind_GetIP");
		unwinder.get_cfa = (get_fn)dlsym(gcc, "_Unwind_GetCFA");
		unwinder.get_region_start =
			(get_fn)dlsym(gcc, "_Unwind_GetRegionStart");
	}
	if (!unwinder.backtrace || !unwinder.get_ip || !unwinder.get_cfa ||
	    !unwinder.get_region_start)
		unwinder.backtrace = NULL;
}

/* The thread's remembered walks: none while its block had another owner
 * (thread.c hands blocks on), whose walks were of another stack. */
static struct walk *entry_for(struct mt_thread *t, uintptr_t anchor,
			      uintptr_t caller)
{
	/* (not the block threads share when no other could be had) */
	if (!t || !__atomic_load_n(&t->in_use, __ATOMIC_RELAXED))
		return NULL;
	if (!t->walks)
		t->walks = mt_raw_mmap(sizeof *t->walks);
	if (!t->walks)
		return NULL;
	if (t->walks->owner != t->owners) {
		memset(t->walks, 0, sizeof *t->walks);
		t->walks->owner = t->owners;
	}
	uint64_t h = (anchor ^ caller * 0x9e3779b97f4a7c15ull) >> 7;
	return &t->walks->walks[h % WALKS];
}

/* The walk remembered for this anchor and caller, if the stack still holds
 * the same return addresses at the same places: innermost first, so that
 * a word is read only where the frames inside it were the same (and so
 * the frame that holds it is there). */
static const struct walk *remembered(const struct walk *e, uintptr_t anchor,
				     uintptr_t caller)
{
	if (!e || e->anchor != anchor || e->caller != caller)
		return NULL;
	for (unsigned i = 0; i < e->nchecks; i++)
		if (*(const volatile uintptr_t *)e->check[i].slot != e->check[i].ip)
			return NULL;
	return e;
}

/* Remember a walk, if every return address it went through is in one
 * stack, at or above the anchor (the unwinder's own frames are below it,
 * gone once it returns), where the unwinder found it: libgcc's context
 * for the frame at ip has the canonical frame address of the frame that
 * ip returns from, ip stored just below it. */
static void remember(struct walk *e, uintptr_t anchor, uintptr_t caller,
		     const struct walking *w)
{
	unsigned n = 0;
	if (!e)
		return;
	e->anchor = 0;
	for (unsigned k = 0; k < w->first_kept + w->kept; k++) {
		uintptr_t slot = w->cfa[k] - sizeof(uintptr_t);
		if (w->cfa[k] < anchor)
			continue;
		if (n == CHECKS || slot >= anchor + STACK_SPAN ||
		    (n && slot <= e->check[n - 1].slot) ||
		    *(const uintptr_t *)slot != w->ip[k])
			return;
		e->check[n].slot = slot;
		e->check[n].ip = w->ip[k];
		n++;
	}
	e->nchecks = n;
	e->nframes = w->kept;
	memcpy(e->frames, w->out, w->kept * sizeof *w->out);
	e->function = w->function;
	e->caller = caller;
	e->anchor = anchor;
}

__attribute__((noinline)) unsigned
mt_native_stack(const void *caller, const void **out, unsigned max,
		uintptr_t *function)
{
	if (!max)
		return 0;
	out[0] = caller;
	*function = (uintptr_t)caller;
	if (!unwinder.backtrace)
		return 1;
	if (max > MAX_KEEP)
		max = MAX_KEEP;
	uintptr_t anchor = (uintptr_t)__builtin_dwarf_cfa();
	struct walk *e = entry_for(mt_tls.thread, anchor, (uintptr_t)caller);
	const struct walk *known = remembered(e, anchor, (uintptr_t)caller);
	if (known && known->nframes <= max) {
		memcpy(out, known->frames, known->nframes * sizeof *out);
		*function = known->function;
		return known->nframes;
	}
	if (mt_stack_room(MT_STACK_WALK_BYTES) != MT_STACK_ROOM)
		return 1;
	struct walking w = {.max = max, .out = out};
	mt_tls.hidden++; /* whatever the unwinder allocates is not the program's */
	unwinder.backtrace(step, &w);
	mt_tls.hidden--;
	if (!w.kept) { /* no unwind tables where it began */
		out[0] = caller;
		return 1;
	}
	*function = w.function ? w.function : (uintptr_t)out[0];
	remember(e, anchor, (uintptr_t)caller, &w);
	return w.kept;
}

/* A whole walk from caller outward (mt_native_walk). */
struct full_walk {
	uintptr_t caller, *ip, *start, stop_at;
	unsigned n, max, skipped, stops;
};

static _Unwind_Reason_Code step_all(struct _Unwind_Context *ctx, void *arg)
{
	struct full_walk *w = arg;
	uintptr_t ip = unwinder.get_ip(ctx);
	if (!ip || w->n == w->max)
		return _URC_END_OF_STACK;
	if (!w->n && ip != w->caller)
		/* (the shim's frames, and the allocator's: a few) */
		return ++w->skipped < 16 ? _URC_NO_REASON : _URC_END_OF_STACK;
	uintptr_t start = unwinder.get_region_start(ctx);
	w->ip[w->n] = ip;
	w->start[w->n] = start;
	w->n++;
	/* (each frame costs the unwinder a few thousand instructions, and
	 * Python's stacks are a hundred deep in an import) */
	if (start && start == w->stop_at && !--w->stops)
		return _URC_END_OF_STACK;
	return _URC_NO_REASON;
}

unsigned mt_native_walk(const void *caller, uintptr_t *ip, uintptr_t *start,
			unsigned max, uintptr_t stop_at, unsigned stops)
{
	if (!unwinder.backtrace || !max || mt_stack_room(MT_STACK_WALK_BYTES) != MT_STACK_ROOM)
		return 0;
	struct full_walk w = {.caller = (uintptr_t)caller, .ip = ip,
			      .start = start, .stop_at = stop_at, .max = max,
			      .stops = stops ? stops : ~0u};
	mt_tls.hidden++; /* (as above) */
	unwinder.backtrace(step_all, &w);
	mt_tls.hidden--;
	return w.n;
}
