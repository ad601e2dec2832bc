/* Native and Python frames in one stack (see mixed_stack.h).  Costly (the
 * native stack unwound to the outermost Python frame kept, a few
 * thousand instructions a frame): a site's first allocation alone pays
 * it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

#include "exports.h"
#include "mixed_stack.h"
#include "native_stack.h"
#include "python_frames.h"

enum {
	MAX_GROUPS = 32,
	WALK = 160, /* native frames walked: a few calls of the eval loop
		       deep, each some ten frames of the interpreter's */
};

/* The eval loop, and the code of the object that holds it (python3, or
 * libpython3.11.so); that object as the loader describes it, and its
 * exported functions once a stack needed them. */
static uintptr_t eval_loop, interp_lo, interp_hi;
static struct dl_phdr_info interp;
static struct mt_exports *interp_exports;

static int find_interp(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    eval_loop >= lo && eval_loop < lo + ph->p_memsz) {
			interp = *info;
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

/* The interpreter's exported functions, made at the first stack that
 * needs them (a thread that loses the race to make them frees its own);
 * NULL when they cannot be read. */
static const struct mt_exports *exports(void)
{
	static bool unreadable;
	struct mt_exports *e = __atomic_load_n(&interp_exports, __ATOMIC_ACQUIRE);
	if (e || __atomic_load_n(&unreadable, __ATOMIC_RELAXED))
		return e;
	struct mt_exports *made = mt_exports_of(&interp);
	if (!made) {
		__atomic_store_n(&unreadable, true, __ATOMIC_RELAXED);
		return NULL;
	}
	if (__atomic_compare_exchange_n(&interp_exports, &e, made, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return made;
	mt_exports_free(made);
	return e;
}

/* A frame in one of the interpreter's exported functions: the ones that
 * call a callable (_PyFunction_Vectorcall, PyObject_Call...), not the
 * code that asked for the call.  Without the exports' table, dladdr. */
static bool interp_api(uintptr_t ip, uintptr_t start)
{
	if (!in_interp(ip) || !start)
		return false;
	const struct mt_exports *e = exports();
	if (e)
		return mt_exports_has(e, start);
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
