#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "diag.h"
#include "glibc_heap.h"
#include "loader_blocks.h"
#include "rawsys.h"
#include "allocator_imports.h"
#include "symbols.h"
#include "thread.h"
#include "objects.h"

/* ---- bootstrap arena ------------------------------------------------ */

_Alignas(64) unsigned char mt_boot_arena[MT_BOOT_ARENA_SIZE];
static size_t boot_used;

/* Each block is preceded by its size, for realloc and malloc_usable_size,
 * then by what a glibc chunk's head would be there: one marked mapped,
 * which glibc's free in the shim takes the general way, where the arena's
 * blocks are told apart (the common way need not test the address). */
struct boot_header {
	size_t size;
	size_t chunk_head;
};

static void *boot_alloc(size_t size, size_t align)
{
	if (align < sizeof(struct boot_header))
		align = sizeof(struct boot_header);
	size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
	for (;;) {
		size_t start = (used + sizeof(struct boot_header) + align - 1) &
			       ~(align - 1);
		size_t end = start + ((size + 15) & ~(size_t)15);
		if (size > MT_BOOT_ARENA_SIZE || end > MT_BOOT_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
		if (__atomic_compare_exchange_n(&boot_used, &used, end, true,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			struct boot_header *h =
				(void *)(mt_boot_arena + start - sizeof *h);
			h->size = size;
			h->chunk_head = MT_CHUNK_MMAPPED;
			return mt_boot_arena + start;
		}
	}
}

size_t mt_boot_usable_size(const void *p)
{
	return ((const struct boot_header *)p - 1)->size;
}

/* ---- the shim's own start-up ------------------------------------------ */

static struct mt_real allocator; /* the real entry points, meanwhile */

/* (the arena full: the allocator's, as any block made before) */
static void *own_malloc(size_t n)
{
	void *p = boot_alloc(n, 16);
	return p ? p : allocator.malloc(n);
}

static void *own_calloc(size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = boot_alloc(total, 16); /* (never reused: zero) */
	return p ? p : allocator.calloc(n, m);
}

static void own_free(void *p)
{
	if (!mt_in_boot_arena(p))
		allocator.free(p);
}

static void *own_realloc(void *p, size_t n)
{
	if (p && !mt_in_boot_arena(p))
		return allocator.realloc(p, n);
	void *q = boot_alloc(n, 16);
	if (!q)
		q = allocator.malloc(n);
	if (q && p)
		memcpy(q, p, mt_boot_usable_size(p) < n ? mt_boot_usable_size(p) : n);
	return q;
}

static void *own_memalign(size_t align, size_t n)
{
	void *p = boot_alloc(n, align);
	return p ? p : allocator.memalign(align, n);
}

static int own_posix_memalign(void **out, size_t align, size_t n)
{
	void *p = boot_alloc(n, align);
	if (!p)
		return allocator.posix_memalign(out, align, n);
	*out = p;
	return 0;
}

static void *own_aligned_alloc(size_t align, size_t n)
{
	void *p = boot_alloc(n, align);
	return p ? p : allocator.aligned_alloc(align, n);
}

static void *own_valloc(size_t n)
{
	void *p = boot_alloc(n, 4096);
	return p ? p : allocator.valloc(n);
}

static size_t own_malloc_usable_size(void *p)
{
	return p && mt_in_boot_arena(p) ? mt_boot_usable_size(p)
					: allocator.malloc_usable_size(p);
}

static bool own_heap_on;

void *mt_symbols_allocator_malloc(void)
{
	return (void *)(own_heap_on ? allocator.malloc : mt_real.malloc);
}

void mt_symbols_own_heap(bool on)
{
	own_heap_on = on;
	if (on) {
		allocator = mt_real;
		mt_real.malloc = own_malloc;
		mt_real.calloc = own_calloc;
		mt_real.free = own_free;
		mt_real.realloc = own_realloc;
		mt_real.memalign = own_memalign;
		mt_real.posix_memalign = own_posix_memalign;
		mt_real.aligned_alloc = own_aligned_alloc;
		mt_real.valloc = own_valloc;
		mt_real.malloc_usable_size = own_malloc_usable_size;
		return;
	}
	mt_real.malloc = allocator.malloc;
	mt_real.calloc = allocator.calloc;
	mt_real.free = allocator.free;
	mt_real.realloc = allocator.realloc;
	mt_real.memalign = allocator.memalign;
	mt_real.posix_memalign = allocator.posix_memalign;
	mt_real.aligned_alloc = allocator.aligned_alloc;
	mt_real.valloc = allocator.valloc;
	mt_real.malloc_usable_size = allocator.malloc_usable_size;
}

/* ---- bootstrap entry points ----------------------------------------- */

/* While this thread runs dlsym, allocations come from the arena; otherwise
 * the first call resolves everything and goes on to the real function. */
static bool serve_from_arena(void)
{
	if (mt_tls.resolving)
		return true;
	mt_symbols_resolve();
	return false;
}

static void *boot_malloc(size_t n)
{
	return serve_from_arena() ? boot_alloc(n, 16) : mt_real.malloc(n);
}

static void *boot_calloc(size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	/* The arena is static and never reused, so it is already zero. */
	return serve_from_arena() ? boot_alloc(total, 16)
				  : mt_real.calloc(n, m);
}

static void boot_free(void *p)
{
	if (!serve_from_arena())
		mt_real.free(p);
}

static void *boot_realloc(void *p, size_t n)
{
	if (!serve_from_arena())
		return mt_real.realloc(p, n);
	void *q = boot_alloc(n, 16);
	if (q && p)
		memcpy(q, p, mt_boot_usable_size(p) < n ? mt_boot_usable_size(p) : n);
	return q;
}

static void *boot_memalign(size_t align, size_t n)
{
	return serve_from_arena() ? boot_alloc(n, align)
				  : mt_real.memalign(align, n);
}

static size_t boot_malloc_usable_size(void *p)
{
	return serve_from_arena() ? (p ? mt_boot_usable_size(p) : 0)
				  : mt_real.malloc_usable_size(p);
}

/* Entry points dlsym itself never calls: resolve, then forward. */
#define BOOT_FORWARD(ret, name, params, args)                                \
	static ret boot_##name params                                        \
	{                                                                    \
		mt_symbols_resolve();                                        \
		return mt_real.name args;                                    \
	}

BOOT_FORWARD(int, posix_memalign, (void **r, size_t a, size_t n), (r, a, n))
BOOT_FORWARD(void *, aligned_alloc, (size_t a, size_t n), (a, n))
BOOT_FORWARD(void *, valloc, (size_t n), (n))
BOOT_FORWARD(void *, pvalloc, (size_t n), (n))
BOOT_FORWARD(int, mallopt, (int param, int value), (param, value))
BOOT_FORWARD(int, malloc_trim, (size_t pad), (pad))

/* The next definition of `name`, looked up alone.  The entry points below
 * are not the malloc API's, and may be called by an allocator preloaded
 * before the shim, in its own start-up (jemalloc, tcmalloc and mimalloc
 * map memory there): resolving them all then opens libc, whose dlopen
 * allocates, from that allocator, which waited on the lock it held
 * (jemalloc, tcmalloc) or called mmap again until the stack ran out
 * (mimalloc).  dlsym allocates nothing when it finds the symbol. */
static void *boot_next(const char *name)
{
	bool was = mt_tls.resolving;
	mt_tls.resolving = true;
	void *sym = dlsym(RTLD_NEXT, name);
	mt_tls.resolving = was;
	if (!sym)
		mt_fatal("cannot find the next definition of %s (dlsym: %s); "
			 "is libc loaded?", name, dlerror());
	return sym;
}

#define BOOT_NEXT(ret, name, params, args)                                   \
	static ret boot_##name params                                        \
	{                                                                    \
		ret(*next) params = boot_next(#name);                        \
		return next args;                                            \
	}

BOOT_NEXT(void *, mmap, (void *a, size_t l, int p, int f, int fd, off_t o),
	  (a, l, p, f, fd, o))
BOOT_NEXT(void *, mmap64, (void *a, size_t l, int p, int f, int fd, off_t o),
	  (a, l, p, f, fd, o))
BOOT_NEXT(int, munmap, (void *a, size_t l), (a, l))
BOOT_NEXT(int, brk, (void *a), (a))
BOOT_NEXT(void *, sbrk, (intptr_t d), (d))
BOOT_NEXT(int, madvise, (void *a, size_t l, int adv), (a, l, adv))
BOOT_NEXT(int, execve, (const char *p, char *const a[], char *const e[]),
	  (p, a, e))
BOOT_NEXT(int, execv, (const char *p, char *const a[]), (p, a))
BOOT_NEXT(int, execvp, (const char *p, char *const a[]), (p, a))
BOOT_NEXT(int, execvpe, (const char *p, char *const a[], char *const e[]),
	  (p, a, e))
BOOT_NEXT(int, pthread_create,
	  (pthread_t *t, const pthread_attr_t *at, void *(*fn)(void *),
	   void *arg),
	  (t, at, fn, arg))
BOOT_NEXT(pid_t, fork, (void), ())
BOOT_NEXT(int, posix_spawn,
	  (pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
	   const posix_spawnattr_t *at, char *const a[], char *const e[]),
	  (pid, path, fa, at, a, e))
BOOT_NEXT(int, posix_spawnp,
	  (pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
	   const posix_spawnattr_t *at, char *const a[], char *const e[]),
	  (pid, file, fa, at, a, e))
BOOT_NEXT(int, system, (const char *line), (line))
BOOT_NEXT(FILE *, popen, (const char *command, const char *type),
	  (command, type))
BOOT_NEXT(int, sigaction,
	  (int sig, const struct sigaction *act, struct sigaction *old),
	  (sig, act, old))
BOOT_NEXT(__sighandler_t, signal, (int sig, __sighandler_t h), (sig, h))
BOOT_NEXT(int, setuid, (uid_t u), (u))
BOOT_NEXT(int, setgid, (gid_t g), (g))
BOOT_NEXT(int, seteuid, (uid_t u), (u))
BOOT_NEXT(int, setegid, (gid_t g), (g))
BOOT_NEXT(int, setreuid, (uid_t r, uid_t e), (r, e))
BOOT_NEXT(int, setregid, (gid_t r, gid_t e), (r, e))
BOOT_NEXT(int, setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
BOOT_NEXT(int, setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
BOOT_NEXT(int, setgroups, (size_t n, const gid_t *g), (n, g))

/* (no return: the exits) */
#define BOOT_EXIT(name)                                                      \
	static void boot_##name(int status)                                  \
	{                                                                    \
		void (*next)(int) = boot_next(#name);                        \
		next(status);                                                \
		__builtin_unreachable();                                     \
	}

BOOT_EXIT(_exit)
BOOT_EXIT(_Exit)
BOOT_EXIT(quick_exit)

static void *boot_mremap(void *old, size_t old_len, size_t new_len, int flags,
			 ...)
{
	va_list ap;
	va_start(ap, flags);
	void *new_addr = va_arg(ap, void *);
	va_end(ap);
	void *(*next)(void *, size_t, size_t, int, ...) = boot_next("mremap");
	return next(old, old_len, new_len, flags, new_addr);
}

static long boot_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	long (*next)(long, ...) = boot_next("syscall");
	return next(nr, a, b, c, d, e, f);
}

struct mt_real mt_real = {
	.malloc = boot_malloc,
	.free = boot_free,
	.calloc = boot_calloc,
	.realloc = boot_realloc,
	.posix_memalign = boot_posix_memalign,
	.aligned_alloc = boot_aligned_alloc,
	.memalign = boot_memalign,
	.valloc = boot_valloc,
	.pvalloc = boot_pvalloc,
	.malloc_usable_size = boot_malloc_usable_size,
	.mallopt = boot_mallopt,
	.malloc_trim = boot_malloc_trim,
	.mmap = boot_mmap,
	.mmap64 = boot_mmap64,
	.munmap = boot_munmap,
	.mremap = boot_mremap,
	.brk = boot_brk,
	.sbrk = boot_sbrk,
	.madvise = boot_madvise,
	.syscall = boot_syscall,
	.execve = boot_execve,
	.execv = boot_execv,
	.execvp = boot_execvp,
	.execvpe = boot_execvpe,
	.pthread_create = boot_pthread_create,
	.fork = boot_fork,
	.posix_spawn = boot_posix_spawn,
	.posix_spawnp = boot_posix_spawnp,
	.system = boot_system,
	.popen = boot_popen,
	.sigaction = boot_sigaction,
	.signal = boot_signal,
	._exit = boot__exit,
	._Exit = boot__Exit,
	.quick_exit = boot_quick_exit,
	.setuid = boot_setuid,
	.setgid = boot_setgid,
	.seteuid = boot_seteuid,
	.setegid = boot_setegid,
	.setreuid = boot_setreuid,
	.setregid = boot_setregid,
	.setresuid = boot_setresuid,
	.setresgid = boot_setresgid,
	.setgroups = boot_setgroups,
};

/* ---- completing a backend ------------------------------------------- */

/* A backend may lack an entry point (RTLD_NEXT then finds libc's, which
 * would hand out glibc heap blocks the backend's free cannot take back).
 * These build the missing ones from the backend's own core functions. */
static int fill_posix_memalign(void **r, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = mt_real.memalign(align, n);
	if (!p)
		return ENOMEM;
	*r = p;
	return 0;
}

static void *fill_aligned_alloc(size_t align, size_t n)
{
	return mt_real.memalign(align, n);
}

static void *fill_valloc(size_t n)
{
	return mt_real.memalign(mt_page_size(), n);
}

static void *fill_pvalloc(size_t n)
{
	size_t ps = mt_page_size();
	/* Rounded up to whole pages, a size near SIZE_MAX wraps to 0: a
	 * block of no size for the largest request.  glibc's says ENOMEM. */
	if (n > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	return mt_real.memalign(ps, (n + ps - 1) & ~(ps - 1));
}

/* ---- resolution ----------------------------------------------------- */

static uintptr_t *libc_curbrk;
static bool libc_brk;
bool mt_allocator_nests;
uintptr_t mt_allocator_lo, mt_allocator_hi;

struct object_range {
	uintptr_t base, lo, hi;
};

static int find_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_range *r = arg;
	(void)size;
	if (info->dlpi_addr != r->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (!r->lo || lo < r->lo)
			r->lo = lo;
		if (hi > r->hi)
			r->hi = hi;
	}
	return 1;
}

/* The loaded range of the object at `base`. */
static void object_range(uintptr_t base, uintptr_t *lo, uintptr_t *hi)
{
	struct object_range r = {base, 0, 0};
	if (base)
		dl_iterate_phdr(find_range, &r);
	*lo = r.lo;
	*hi = r.hi;
}

/* The loaded range of the object that defines fn. */
static void allocator_range(void *fn)
{
	struct mt_object o;
	if (mt_object_of(fn, &o))
		object_range(o.base, &mt_allocator_lo, &mt_allocator_hi);
}

/* glibc's chunk header holds the size (minus flag bits): usable is that
 * less 8 bytes, or 16 for an mmapped chunk.  Trust the layout only if it
 * gives what glibc's malloc_usable_size says.
 * The check must leave glibc as it found it: freeing a mapped chunk raises
 * its mmap threshold, unless the chunk is above the threshold's 32 MiB
 * ceiling, so the mapped probe is 64 MiB (address space only: with
 * MALLOC_PERTURB_, which meson test sets, glibc fills every block it hands
 * out, so the fill is turned off around the probe and set back, or the
 * process would have 64 MiB more resident from its first moment). */
static int perturb_setting(void)
{
	const char *t = getenv("GLIBC_TUNABLES");
	const char *at = t ? strstr(t, "glibc.malloc.perturb=") : NULL;
	const char *v = at ? strchr(at, '=') + 1 : getenv("MALLOC_PERTURB_");
	return v ? atoi(v) : 0;
}

static bool glibc_chunks_readable(const struct mt_real *r)
{
	/* Only a mapped block: a block from the heap, freed, stays in glibc's
	 * per-thread cache, and the program's blocks would all sit 1 KiB
	 * further than without the shim.  The header's format is the same
	 * for both kinds.  And by memalign, with more than malloc's own
	 * alignment: malloc and calloc set up the thread's cache first, 656
	 * bytes from a heap then made for it, which the program's first
	 * malloc would have made with its own block; made apart, every later
	 * move of the break came elsewhere, and a program of aligned blocks
	 * grew and trimmed its heap 802 and 396 times where it did 488 and
	 * 238 without the shim (new-user trial 27).  glibc's memalign of a
	 * block it maps, and free of one, touch neither the cache nor the
	 * heap. */
	static const size_t sizes[] = {64 << 20};
	int perturb = perturb_setting();
	bool same = true;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		bool mapped = sizes[i] > (32 << 20);
		if (mapped && perturb)
			r->mallopt(M_PERTURB, 0);
		size_t *p = r->memalign(64, sizes[i]);
		if (mapped && perturb)
			r->mallopt(M_PERTURB, perturb);
		if (!p)
			return false;
		size_t head = p[-1];
		same &= r->malloc_usable_size(p) ==
			(head & ~(size_t)7) - (head & 2 ? 16 : 8);
		r->free(p);
	}
	return same;
}

static void *next_symbol(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static bool same_object(void *a, void *b)
{
	struct mt_object oa, ob;
	return mt_object_of(a, &oa) && mt_object_of(b, &ob) && oa.base == ob.base;
}

/* The optional entry point `name`, if the object serving malloc defines
 * it, else `fill`. */
static void *backend_symbol(const char *name, void *core, void *fill)
{
	void *sym = next_symbol(name);
	return sym && same_object(sym, core) ? sym : fill;
}

void mt_symbols_resolve(void)
{
	static int done;

	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return;
	/* Several threads may get here at once; each resolves the same
	 * values.  No lock: a thread waiting on one could hold the loader
	 * lock that dlsym in the other needs. */
	mt_tls.resolving = true;
	struct mt_real r;
	r.malloc = next_symbol("malloc");
	r.free = next_symbol("free");
	r.calloc = next_symbol("calloc");
	r.realloc = next_symbol("realloc");
	r.memalign = next_symbol("memalign");
	r.malloc_usable_size = next_symbol("malloc_usable_size");
	r.mallopt = next_symbol("mallopt");
	r.malloc_trim = next_symbol("malloc_trim");
	r.mmap = next_symbol("mmap");
	r.mmap64 = next_symbol("mmap64");
	r.munmap = next_symbol("munmap");
	r.mremap = next_symbol("mremap");
	r.brk = next_symbol("brk");
	r.sbrk = next_symbol("sbrk");
	r.madvise = next_symbol("madvise");
	r.syscall = next_symbol("syscall");
	r.execve = next_symbol("execve");
	r.execv = next_symbol("execv");
	r.execvp = next_symbol("execvp");
	r.execvpe = next_symbol("execvpe");
	r.pthread_create = next_symbol("pthread_create");
	r.fork = next_symbol("fork");
	r.posix_spawn = next_symbol("posix_spawn");
	r.posix_spawnp = next_symbol("posix_spawnp");
	r.system = next_symbol("system");
	r.popen = next_symbol("popen");
	r.sigaction = next_symbol("sigaction");
	r.signal = next_symbol("signal");
	r._exit = next_symbol("_exit");
	r._Exit = next_symbol("_Exit");
	r.quick_exit = next_symbol("quick_exit");
	r.setuid = next_symbol("setuid");
	r.setgid = next_symbol("setgid");
	r.seteuid = next_symbol("seteuid");
	r.setegid = next_symbol("setegid");
	r.setreuid = next_symbol("setreuid");
	r.setregid = next_symbol("setregid");
	r.setresuid = next_symbol("setresuid");
	r.setresgid = next_symbol("setresgid");
	r.setgroups = next_symbol("setgroups");
	if (!r.malloc || !r.free || !r.calloc || !r.realloc || !r.memalign ||
	    !r.malloc_usable_size || !r.mallopt || !r.mmap || !r.mmap64 || !r.munmap ||
	    !r.mremap || !r.brk || !r.sbrk || !r.madvise || !r.syscall ||
	    !r.execve || !r.execv || !r.execvp || !r.execvpe ||
	    !r.pthread_create || !r.fork || !r.posix_spawn || !r.posix_spawnp ||
	    !r.sigaction || !r.signal || !r._exit ||
	    !r._Exit || !r.quick_exit || !r.setuid || !r.setgid || !r.seteuid || !r.setegid ||
	    !r.setreuid || !r.setregid || !r.setresuid || !r.setresgid ||
	    !r.setgroups)
		mt_fatal("cannot find the next definition of a malloc or memory "
			 "function (dlsym: %s); is libc loaded?", dlerror());
	r.posix_memalign = backend_symbol("posix_memalign", r.malloc,
					  fill_posix_memalign);
	r.aligned_alloc = backend_symbol("aligned_alloc", r.malloc,
					 fill_aligned_alloc);
	r.valloc = backend_symbol("valloc", r.malloc, fill_valloc);
	r.pvalloc = backend_symbol("pvalloc", r.malloc, fill_pvalloc);

	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (libc) {
		libc_curbrk = dlsym(libc, "__curbrk");
		libc_brk = same_object(r.sbrk, dlsym(libc, "sbrk"));
		bool glibc = same_object(r.malloc, dlsym(libc, "malloc"));
		mt_glibc_chunks = glibc && glibc_chunks_readable(&r);
		mt_glibc_fills_blocks = mt_glibc_chunks && perturb_setting();
		mt_loader_blocks_kept = !mt_glibc_chunks;
		mt_allocator_nests = !glibc;
		if (mt_glibc_chunks)
			mt_glibc_heap_init(libc_curbrk);
		dlclose(libc);
	}
	allocator_range((void *)r.malloc);
	if (mt_allocator_nests)
		mt_allocator_imports_read((void *)r.malloc);
	object_range(getauxval(AT_BASE), &mt_loader_lo, &mt_loader_hi);
	mt_fast_update();
	mt_real = r;
	mt_tls.resolving = false;
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

uintptr_t mt_libc_curbrk(void)
{
	return libc_brk && libc_curbrk ? *libc_curbrk : 0;
}

bool mt_libc_owns_brk(void)
{
	return libc_brk;
}
