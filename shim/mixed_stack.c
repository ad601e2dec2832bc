/* Native and Python frames in one stack (see mixed_stack.h).  Costly (the
 * whole native stack unwound, a dladdr per frame of the interpreter
 * looked at): a site's first allocation alone pays it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

#include "mixed_stack.h"
#include "native_stack.h"
#include "python_frames.h"

enum {
	MAX_GROUPS = 32,
	WALK = 160, /* native frames walked: a few calls of the eval loop
		       deep, each some ten frames of the interpreter's */
};

/* The eval loop, and the code of the object that holds it (python3, or
 * libpython3.11.so). */
static uintptr_t eval_loop, interp_lo, interp_hi;

static int find_interp(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    eval_loop >= lo && eval_loop < lo + ph->p_memsz) {
			interp_lo = lo;
			interp_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void mt_mixed_stack_init(void)
{
	eval_loop = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	if (eval_loop)
		dl_iterate_phdr(find_interp, NULL);
	if (!interp_hi)
		eval_loop = 0;
}

static bool in_interp(uintptr_t ip)
{
	return ip >= interp_lo && ip < interp_hi;
}

/* A frame in one of the interpreter's exported functions: the ones that
 * call a callable (_PyFunction_Vectorcall, PyObject_Call...), not the
 * code that asked for the call.  Decided once per function (a dladdr in
 * python3 reads its thousands of symbols), kept as start << 1 | exported:
 * the same few call functions lie between most Python frames. */
static uintptr_t api_seen[256];

static bool interp_api(uintptr_t ip, uintptr_t start)
{
	if (!in_interp(ip) || !start)
		return false;
	size_t i = (start * 0x9e3779b97f4a7c15ull) >> 56;
	for (size_t probe = 0; probe < 8; probe++, i = (i + 1) & 255) {
		uintptr_t at = __atomic_load_n(&api_seen[i], __ATOMIC_RELAXED);
		if (at >> 1 == start)
			return at & 1;
		if (at)
			continue;
		Dl_info d;
		bool api = dladdr((void *)ip, &d) && d.dli_sname &&
			   (uintptr_t)d.dli_saddr == start;
		uintptr_t empty = 0;
		/* (another thread may have taken the slot: the answer holds) */
		__atomic_compare_exchange_n(&api_seen[i], &empty, start << 1 | api,
					    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return api;
	}
	Dl_info d;
	return dladdr((void *)ip, &d) && d.dli_sname &&
	       (uintptr_t)d.dli_saddr == start;
}

struct building {
	const void **native;
	unsigned nnative, max_native, norder;
	signed char *order;
};

static void put_native(struct building *b, uintptr_t ip)
{
	if (b->nnative == b->max_native)
		return;
	b->native[b->nnative] = (const void *)ip;
	b->order[b->norder++] = (signed char)(-1 - (int)b->nnative);
	b->nnative++;
}

/* The frames kept of those between two calls of the eval loop, [a, b) of
 * the walk (in the innermost gap, the caller's, kept already: only the
 * outermost of another object). */
static void gap(struct building *b, const uintptr_t *ip,
		const uintptr_t *start, unsigned a, unsigned e, bool innermost)
{
	unsigned inner = e, outer = e;
	if (!innermost)
		for (inner = a; inner < e && interp_api(ip[inner], start[inner]);)
			inner++;
	for (unsigned j = e; j-- > a;)
		if (!in_interp(ip[j])) {
			outer = j;
			break;
		}
	if (inner < e)
		put_native(b, ip[inner]);
	if (outer < e && outer != inner)
		put_native(b, ip[outer]);
}

unsigned mt_mixed_stack(const void *caller, unsigned npy,
			const void **native, unsigned max_native,
			signed char *order, unsigned *nnative)
{
	unsigned groups[MAX_GROUPS], ng = 0, sum = 0, py = 0;
	uintptr_t ip[WALK], start[WALK];
	struct building b = {native, 0, max_native, 0, order};
	unsigned nw = 0;
	put_native(&b, (uintptr_t)caller);
	if (eval_loop && npy) {
		ng = (unsigned)mt_python_groups(groups, MAX_GROUPS, npy);
		for (unsigned g = 0; g < ng; g++)
			sum += groups[g];
	}
	/* (the frames as read before, or they cannot be matched; to the
	 * eval loop's frame of the outermost group, no further) */
	if (ng && sum == npy)
		nw = mt_native_walk(caller, ip, start, WALK, eval_loop, ng);
	/* ip[0] is the caller's */
	for (unsigned i = 1, g = 0, from = 1; i < nw && g < ng; i++) {
		if (start[i] != eval_loop)
			continue;
		gap(&b, ip, start, from, i, g == 0);
		for (unsigned k = 0; k < groups[g]; k++)
			order[b.norder++] = (signed char)py++;
		g++;
		from = i + 1;
	}
	/* (not walked, or not to the outermost group: the rest as they are) */
	while (py < npy)
		order[b.norder++] = (signed char)py++;
	*nnative = b.nnative;
	return b.norder;
}
