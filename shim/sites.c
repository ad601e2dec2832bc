/* Call sites of large blocks (see sites.h).  Two tables in the shim's own
 * mappings, under one lock that large blocks alone take: the sites, found
 * by a hash of their raw frames, and the live large blocks, found by
 * address, each with its site.  Names (files, functions, objects) are
 * copied out when a site is first seen, while its code is certainly
 * alive. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
#include "json_writer.h"
#include "mixed_stack.h"
#include "mode.h"
#include "native_stack.h"
#include "objects.h"
#include "python_frames.h"
#include "rawsys.h"
#include "options.h"
#include "sites.h"
#include "stack_room.h"

enum {
	MAX_PY_FRAMES = 8,
	/* frames outside Python code (a debug build's std::vector is six
	 * frames of templates between the program's line and malloc) */
	MAX_NATIVE = 10,
	MAX_SITES = 4096,	  /* then new sites are not told apart */
	SITE_SLOTS = 2 * MAX_SITES,
	BLOCK_SLOTS = 1 << 16,	  /* live large blocks followed */
	BLOCK_SLOTS_FIRST = 1 << 9, /* of them in use at first */
	THREAD_SLOTS = 1 << 14,	  /* functions' live blocks, per thread */
	THREAD_ENTRIES = THREAD_SLOTS * 3 / 4,
	THREAD_SLOTS_FIRST = 1 << 8, /* of them in use at first */
	NAMES_BYTES = 2 << 20,
	NAME_SLOTS = 1 << 15,	  /* names kept once, by hash */
	MAX_NODES = 1 << 15,	  /* frames of the stack tree */
	NODE_SLOTS = 2 * MAX_NODES,
	ARENAS = 64,		  /* glibc thread arenas with a ledger */
	LEDGER = 16,		  /* sites in a ledger */
};

struct frame_name {
	const char *file, *function;
	int line;
};

/* (its function is named offline, from the object and the offset:
 * objects.h) */
struct native_name {
	const char *object;
	uintptr_t object_offset;
};

/* A node of the tree of the sites' stacks: a frame, and the node of the
 * frame that called it (0: the outermost).  Names are kept once, so their
 * addresses tell frames apart. */
struct node {
	unsigned parent;
	bool python;
	struct frame_name py;
	struct native_name native;
};

/* A site's key: its Python frames, then its native ones (the address that
 * called the allocator, or without Python frames the stack from there).
 * With Python frames, its stack as written has more native frames, found
 * when the site was new (mixed_stack.h): native[nnative, nall). */
/* Where code gave blocks of a site back (free, or realloc to less): the
 * address the call returns to, and how many.  The first RELEASES places
 * seen are kept; the rest are only counted (`released_elsewhere`).  Each
 * with a few frames from there outward, walked once, when it is new: the
 * free may be in code of a library's templates compiled into the
 * program (std::vector's deallocate at -O0), which names no line of its
 * own (new-user trial 33). */
enum { RELEASES = 2, RELEASE_FRAMES = 8 };
struct release {
	const void *pc;
	struct native_name names[RELEASE_FRAMES];
	unsigned nnames;
	uint64_t count;
};

struct site {
	uint64_t hash;
	const void *native[MAX_NATIVE];
	unsigned nnative, nall;
	bool cut; /* its native stack went on past them (struct pending) */
	/* the frames as written, innermost first: k >= 0 Python frame k,
	 * k < 0 native frame -1 - k */
	signed char order[MAX_PY_FRAMES + MAX_NATIVE];
	unsigned norder;
	struct mt_pyframe raw[MAX_PY_FRAMES];
	unsigned nframes;
	struct frame_name names[MAX_PY_FRAMES];
	struct native_name natives[MAX_NATIVE];
	unsigned function;	     /* the site of its innermost function */
	unsigned leaf;		     /* its innermost frame's node, 0: none */
	int region;		     /* the innermost region open, -1: none */
	const char *region_name;
	uint64_t allocs, bytes, frees, live, max_live;
	uint64_t requested; /* the bytes its blocks were asked for */
	/* A function's entry: the most of its blocks one thread had live at
	 * once.  A site: its blocks freed by another thread than the one
	 * that allocated them (a producer's, freed by a consumer). */
	uint64_t thread_max_live, freed_elsewhere;
	/* Its blocks' sizes: the least and the most (usable), the last
	 * asked for, how many were asked for a quarter or more above the one
	 * before (a buffer doubled, as realloc or a vector's push_back does),
	 * and how many for more or less at all (a buffer grown by a constant
	 * step is larger but when it starts again; sizes that merely vary are
	 * larger as often as smaller). */
	uint64_t min_bytes, max_bytes, last_bytes, grows, larger, smaller;
	/* and the least and the most asked for (the usable sizes round up
	 * to the allocator's classes, by up to a quarter) */
	uint64_t min_requested, max_requested;
	uint64_t reallocs; /* of its blocks, those realloc made */
	/* Its latest block, and what its blocks freed after a larger one
	 * was made here held: the same bytes as that one at the same
	 * places (a buffer copied into a larger one, grown), other bytes
	 * (a new array of a new size, no growth), or nothing to tell by
	 * (one byte over and over in both, or not readable).  See
	 * compare_with_latest. */
	uintptr_t latest;
	uint64_t copied, not_copied, looked;
	/* Its blocks freed while its latest, larger, was live: every step of
	 * a buffer grown (the old freed once copied into the new), none of
	 * sizes that change between rounds, each round's blocks freed before
	 * the next round's are made. */
	uint64_t freed_under_larger;
	uint64_t count[MT_SITE_CAUSES], caused_bytes[MT_SITE_CAUSES];
	/* Of what it unmapped, that since the process last took memory
	 * for a large block (tables.takes was end_epoch): at the summary,
	 * given back at the end, taken again by nothing (arrays kept for
	 * the run and freed at exit are no churn; new-user trial 34). */
	uint64_t end_epoch, end_count[MT_SITE_CAUSES], end_bytes[MT_SITE_CAUSES];
	/* Small blocks sampled here (small_sites.c): how many, their bytes,
	 * and the bytes they stand for; added to without the lock, each a
	 * whole 64-bit value to a reader. */
	uint64_t small_samples, small_sampled_bytes, small_estimate;
	struct release released[RELEASES];
	uint64_t released_elsewhere;
};

struct block {
	uintptr_t addr; /* 0: empty */
	uint64_t bytes;
	unsigned site;
	unsigned thread_live;  /* its slot in thread_live, 0: none */
	uintptr_t thread;      /* the thread that allocated it (its TLS) */
};

/* How many blocks of a function one thread has live: by function and
 * thread (the address of its TLS, which a later thread may take over, as
 * a thread id would be).  Kept in the order made, found by a hash of
 * their keys whose slots in use double as they fill (as the blocks'),
 * so that a forked child's reset clears the few pages used, not 100
 * (a child that exits at once took 671 faults under the shim, 17 bare:
 * tests/programs/fork_faults.c). */
struct thread_live {
	uintptr_t thread; /* 0: empty */
	unsigned function;
	uint64_t live;
};

/* The large blocks freed in a glibc thread arena since it last shrank,
 * by site: when free() shrinks the heap, the memory it gives back is
 * theirs together, not only the last one's (three 3 MiB blocks freed in
 * turn, the shrink set off by the third).  Other allocators have one
 * ledger (DEFERRED) of the bytes freed and not yet purged: they purge
 * later, inside whatever call comes (mimalloc 10-20 ms after the free). */
struct ledger {
	uintptr_t arena; /* 0: free */
	unsigned n, site[LEDGER];
	uint64_t bytes[LEDGER];
};

struct tables {
	struct site sites[MAX_SITES + 1]; /* [0] unused: index 0 is "none" */
	unsigned site_slots[SITE_SLOTS];  /* by hash: site index, 0 empty */
	unsigned nsites;
	/* Hashed into the first block_mask + 1 slots, doubled as more are
	 * live at once (blocks_grow). */
	struct block blocks[BLOCK_SLOTS];
	unsigned nblocks, block_mask;
	struct block block_scratch[BLOCK_SLOTS / 2]; /* (for blocks_grow) */
	struct thread_live thread_live[THREAD_ENTRIES];
	unsigned nthread_live;
	unsigned thread_live_slots[THREAD_SLOTS]; /* 1 + entry, 0: empty */
	unsigned thread_live_mask;
	bool thread_live_full; /* some blocks not counted per thread */
	uint64_t untracked; /* large blocks not followed: a table was full */
	char names[NAMES_BYTES];
	size_t names_used;
	uint32_t name_slots[NAME_SLOTS]; /* 1 + offset in names, 0: empty */
	struct node nodes[MAX_NODES + 1]; /* [0] unused: the root */
	unsigned node_slots[NODE_SLOTS];  /* by hash: node index, 0 empty */
	unsigned nnodes;
	struct ledger ledgers[ARENAS];
	/* Large blocks allocated and the program's own mappings made: the
	 * times the process took memory that a site's may have been. */
	uint64_t takes;
};

bool mt_sites_on;
/* The main program's path, absolute (the loader names it "", dladdr as
 * it was run: "build/tests/churn"), for whoever reads the sites elsewhere. */
static char exe_path[512];

static struct tables *tab;
static int lock;

static void take(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&lock, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

/* Changes to the tables (each lock given back follows one, or nearly),
 * for whoever writes them out now and then. */
static uint64_t changes;

static void give(void)
{
	__atomic_store_n(&changes, changes + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

uint64_t mt_sites_changes(void)
{
	return __atomic_load_n(&changes, __ATOMIC_RELAXED);
}

unsigned mt_sites_known(void)
{
	return tab ? __atomic_load_n(&tab->nsites, __ATOMIC_RELAXED) : 0;
}

void mt_sites_init(void)
{
	mt_python_frames_init();
	mt_native_stack_init();
	mt_mixed_stack_init();
	ssize_t got = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
	exe_path[got > 0 ? got : 0] = '\0';
	tab = mt_raw_mmap(sizeof *tab);
	mt_sites_on = tab != NULL;
	if (tab) {
		tab->block_mask = BLOCK_SLOTS_FIRST - 1;
		tab->thread_live_mask = THREAD_SLOTS_FIRST - 1;
	}
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_of(const void *const *native, unsigned nn,
			const struct mt_pyframe *f, unsigned n, int region)
{
	uint64_t h = mix(mix(n, nn), (uint64_t)(region + 1));
	for (unsigned i = 0; i < nn; i++)
		h = mix(h, (uintptr_t)native[i]);
	for (unsigned i = 0; i < n; i++)
		h = mix(mix(h, (uintptr_t)f[i].code), (uint64_t)f[i].offset);
	return h;
}

static bool same(const struct site *s, uint64_t hash,
		 const void *const *native, unsigned nn,
		 const struct mt_pyframe *f, unsigned n, int region)
{
	if (s->hash != hash || s->nnative != nn || s->nframes != n ||
	    s->region != region)
		return false;
	for (unsigned i = 0; i < nn; i++)
		if (s->native[i] != native[i])
			return false;
	for (unsigned i = 0; i < n; i++)
		if (s->raw[i].code != f[i].code || s->raw[i].offset != f[i].offset)
			return false;
	return true;
}

/* The slot of a site with this key, or the empty slot where it goes. */
static unsigned *slot_of(uint64_t hash, const void *const *native,
			 unsigned nn, const struct mt_pyframe *f, unsigned n,
			 int region)
{
	for (unsigned i = (unsigned)hash % SITE_SLOTS;; i = (i + 1) % SITE_SLOTS) {
		unsigned *slot = &tab->site_slots[i];
		if (!*slot || same(&tab->sites[*slot], hash, native, nn, f, n, region))
			return slot;
	}
}

/* A copy of s in the tables, one for each distinct name (a file's path
 * is shared by all the frames in it). */
static const char *keep_name(const char *s)
{
	size_t n = strlen(s) + 1;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	uint32_t *slot = NULL;
	for (size_t i = 0; i < NAME_SLOTS; i++) {
		uint32_t *at = &tab->name_slots[(h + i) & (NAME_SLOTS - 1)];
		if (!*at) {
			slot = at;
			break;
		}
		if (!strcmp(tab->names + *at - 1, s))
			return tab->names + *at - 1;
	}
	if (tab->names_used + n > NAMES_BYTES)
		return "?";
	char *at = tab->names + tab->names_used;
	memcpy(at, s, n);
	if (slot)
		*slot = (uint32_t)tab->names_used + 1;
	tab->names_used += n;
	return at;
}

static bool same_frame(const struct node *a, const struct node *b)
{
	if (a->parent != b->parent || a->python != b->python)
		return false;
	if (a->python)
		return a->py.file == b->py.file &&
		       a->py.function == b->py.function &&
		       a->py.line == b->py.line;
	return a->native.object == b->native.object &&
	       a->native.object_offset == b->native.object_offset;
}

/* The node of frame f called from its parent: found, or added while
 * there is room (0 when the tree is full). */
static unsigned node_of(const struct node *f)
{
	uint64_t h = mix(mix(mix(f->parent, f->python),
			     (uintptr_t)(f->python ? f->py.file : f->native.object)),
			 f->python ? (uint64_t)f->py.line ^
					     (uintptr_t)f->py.function
				   : f->native.object_offset);
	for (size_t i = 0; i < NODE_SLOTS; i++) {
		unsigned *slot = &tab->node_slots[(h + i) & (NODE_SLOTS - 1)];
		if (*slot && same_frame(&tab->nodes[*slot], f))
			return *slot;
		if (*slot)
			continue;
		if (tab->nnodes >= MAX_NODES)
			return 0;
		*slot = ++tab->nnodes;
		tab->nodes[*slot] = *f;
		return *slot;
	}
	return 0;
}

/* A site's stack in the tree, from its outermost frame in: its innermost
 * frame's node, 0 when the tree is full. */
static unsigned intern_stack(const struct site *s)
{
	unsigned parent = 0;
	for (unsigned j = s->norder; j-- > 0;) {
		struct node f = {.parent = parent, .python = s->order[j] >= 0};
		if (f.python)
			f.py = s->names[s->order[j]];
		else
			f.native = s->natives[-1 - s->order[j]];
		parent = node_of(&f);
		if (!parent)
			return 0;
	}
	return parent;
}

/* A new site's names, read before the lock is taken (where glibc has no
 * _dl_find_object, the loader's lock is taken, whose holder may be
 * waiting for ours). */
struct pending {
	const char *region_name; /* (the thread's: thread.h) */
	/* the site's native frames: the key's, then the mixed stack's */
	const void *all[MAX_NATIVE];
	unsigned nall, norder;
	bool cut; /* the native stack went on past MAX_NATIVE frames */
	signed char order[MAX_PY_FRAMES + MAX_NATIVE];
	struct frame_name names[MAX_PY_FRAMES];
	struct mt_object objects[MAX_NATIVE];
	bool have[MAX_NATIVE];
	const char *paths[MAX_NATIVE];
};

/* The thread's lines of frames named (python_frames.h), mapped at its
 * first Python site. */
static struct mt_python_lines *python_lines(void)
{
	struct mt_thread *t = mt_tls.thread;
	if (t && !t->python_lines)
		t->python_lines = mt_raw_mmap(mt_python_lines_bytes);
	return t ? t->python_lines : NULL;
}

static void name_python(struct pending *p, const struct mt_pyframe *f,
			unsigned n)
{
	struct mt_python_lines *lines = n ? python_lines() : NULL;
	for (unsigned i = 0; i < n; i++)
		mt_python_frame_name(&f[i], lines, &p->names[i].file,
				     &p->names[i].function, &p->names[i].line);
}

/* (python: the Python frames are named already) */
static void name_site(struct pending *p, const void *const *native,
		      unsigned nn, const struct mt_pyframe *f, unsigned n,
		      bool python)
{
	if (!python)
		name_python(p, f, n);
	for (unsigned k = 0; k < nn; k++) {
		p->have[k] = mt_object_of(native[k], &p->objects[k]);
		const char *name = p->have[k] ? p->objects[k].path : NULL;
		p->paths[k] = !name ? "?" : name[0] != '/' && exe_path[0] ? exe_path : name;
	}
}

/* A site's stack in the key's order: its native frames, then its Python
 * ones (innermost first all the same: a Python site's native frame is the
 * caller of the allocator). */
static void plain_order(struct site *s)
{
	s->norder = 0;
	for (unsigned k = 0; k < s->nall; k++)
		s->order[s->norder++] = (signed char)(-1 - (int)k);
	for (unsigned i = 0; i < s->nframes; i++)
		s->order[s->norder++] = (signed char)i;
}

/* (whole: p has the site's stack as written, p->all beginning with the
 * key's native frames; else the key alone, a function's entry) */
static unsigned add_site(unsigned *slot, uint64_t hash,
			 const void *const *native, unsigned nn,
			 const struct mt_pyframe *f, unsigned n, int region,
			 const struct pending *p, bool whole, unsigned limit)
{
	if (tab->nsites >= limit)
		return 0;
	unsigned key_nn = nn;
	if (whole) {
		native = p->all;
		nn = p->nall;
	}
	unsigned id = ++tab->nsites;
	struct site *s = &tab->sites[id];
	s->hash = hash;
	s->region = region;
	s->region_name = p->region_name;
	s->nframes = n;
	for (unsigned i = 0; i < n; i++) {
		s->raw[i] = f[i];
		s->names[i].file = keep_name(p->names[i].file);
		s->names[i].function = keep_name(p->names[i].function);
		s->names[i].line = p->names[i].line;
	}
	s->nnative = key_nn;
	s->nall = nn;
	s->cut = whole && p->cut;
	for (unsigned k = 0; k < nn; k++) {
		struct native_name *nm = &s->natives[k];
		s->native[k] = native[k];
		if (!p->have[k])
			continue;
		nm->object = keep_name(p->paths[k]);
		nm->object_offset = (uintptr_t)native[k] - p->objects[k].base;
	}
	plain_order(s);
	if (whole && p->norder) {
		memcpy(s->order, p->order, p->norder);
		s->norder = p->norder;
	}
	/* (published last: site_found reads the key without the lock) */
	__atomic_store_n(slot, id, __ATOMIC_RELEASE);
	return id;
}

static struct block *block_of(uintptr_t addr)
{
	unsigned mask = tab->block_mask;
	unsigned i = (unsigned)mix(0, addr) & mask;
	while (tab->blocks[i].addr && tab->blocks[i].addr != addr)
		i = (i + 1) & mask;
	return &tab->blocks[i];
}

/* The blocks' slots in use doubled, when half are taken.  Hashed over
 * all of them from the start, each new address of a large block faulted
 * in a page of the table (640 in all): on four threads of jemalloc, whose
 * large blocks come from ever new addresses, 1,000-1,500 faults more than
 * bare, 10-40% of the run's (new-user trial 50).  With the lock held. */
static void blocks_grow(void)
{
	unsigned slots = tab->block_mask + 1, n = 0;
	if (slots >= BLOCK_SLOTS)
		return;
	for (unsigned i = 0; i < slots; i++)
		if (tab->blocks[i].addr) {
			tab->block_scratch[n++] = tab->blocks[i];
			tab->blocks[i].addr = 0;
		}
	tab->block_mask = 2 * slots - 1;
	for (unsigned k = 0; k < n; k++)
		*block_of(tab->block_scratch[k].addr) = tab->block_scratch[k];
}

/* Linear probing's deletion: later entries of the run move back. */
static void block_remove(struct block *b)
{
	unsigned i = (unsigned)(b - tab->blocks), mask = tab->block_mask;
	for (unsigned j = (i + 1) & mask; tab->blocks[j].addr; j = (j + 1) & mask) {
		unsigned home = (unsigned)mix(0, tab->blocks[j].addr) & mask;
		/* j's entry may fill i when its home is not in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && home <= i && home > j)) {
			tab->blocks[i] = tab->blocks[j];
			i = j;
		}
	}
	tab->blocks[i].addr = 0;
	tab->nblocks--;
}

/* The hash's slots in use doubled, every entry hashed again. */
static void thread_live_slots_grow(void)
{
	unsigned slots = tab->thread_live_mask + 1;
	memset(tab->thread_live_slots, 0, slots * sizeof *tab->thread_live_slots);
	unsigned mask = tab->thread_live_mask = 2 * slots - 1;
	for (unsigned e = 1; e <= tab->nthread_live; e++) {
		const struct thread_live *t = &tab->thread_live[e - 1];
		unsigned i = (unsigned)mix(t->function, t->thread) & mask;
		while (tab->thread_live_slots[i])
			i = (i + 1) & mask;
		tab->thread_live_slots[i] = e;
	}
}

/* The entry (1 + its index) of key's blocks on this thread, made if new
 * (*made); 0 when the table is full. */
static unsigned thread_live_entry(unsigned key, uintptr_t thread, bool *made)
{
	unsigned mask = tab->thread_live_mask;
	unsigned i = (unsigned)mix(key, thread) & mask, e;
	*made = false;
	for (; (e = tab->thread_live_slots[i]); i = (i + 1) & mask) {
		const struct thread_live *t = &tab->thread_live[e - 1];
		if (t->thread == thread && t->function == key)
			return e;
	}
	if (tab->nthread_live >= THREAD_ENTRIES) {
		tab->thread_live_full = true;
		return 0;
	}
	e = ++tab->nthread_live;
	tab->thread_live[e - 1] = (struct thread_live){.thread = thread,
						       .function = key};
	*made = true;
	if (e > (mask + 1) / 2 && mask + 1 < THREAD_SLOTS)
		thread_live_slots_grow();
	else
		tab->thread_live_slots[i] = e;
	return e;
}

/* The entry of this function's blocks on this thread, made if new; 0
 * when the table is full. */
static unsigned thread_live_of(unsigned function, uintptr_t thread)
{
	bool made;
	return thread_live_entry(function, thread, &made);
}

/* Has this site made a block on this thread before?  Noted in the same
 * table, under a key no function has (the site's id, marked); a full
 * table says no (as thread_live_of counts none). */
static bool made_on_thread_before(unsigned site, uintptr_t thread)
{
	bool made;
	return thread_live_entry(site | 1u << 31, thread, &made) && !made;
}

static void live_up(struct site *s)
{
	s->live++;
	if (s->live > s->max_live)
		s->max_live = s->live;
}

/* The site with this key, found without the lock: a slot goes from
 * empty to its site once (add_site publishes it after writing the site's
 * key, which never changes after), and sites are never taken out.  0: not
 * there yet (or its slot is being filled: the caller takes the lock). */
static unsigned site_found(uint64_t hash, const void *const *native,
			   unsigned nn, const struct mt_pyframe *f, unsigned n,
			   int region)
{
	for (unsigned i = (unsigned)hash % SITE_SLOTS;; i = (i + 1) % SITE_SLOTS) {
		unsigned id = __atomic_load_n(&tab->site_slots[i], __ATOMIC_ACQUIRE);
		if (!id)
			return 0;
		if (same(&tab->sites[id], hash, native, nn, f, n, region))
			return id;
	}
}

/* A site found whose function's entry is known too: its id, and that
 * entry's in *fid; 0 otherwise. */
static unsigned site_and_function_found(uint64_t hash,
					const void *const *native, unsigned nn,
					const struct mt_pyframe *f, unsigned n,
					int region, unsigned *fid)
{
	unsigned id = site_found(hash, native, nn, f, n, region);
	*fid = id ? __atomic_load_n(&tab->sites[id].function, __ATOMIC_ACQUIRE)
		  : 0;
	return *fid ? id : 0;
}

/* The site of the calling thread's stack now, and its function's entry
 * (*fid), found or added while the table holds fewer than `limit`; 0 when
 * it is that full.  A site seen before (nearly every call) is found
 * without the lock and without naming a frame: small blocks' samples on
 * two threads came to some 300 ns each, most of it the lock's cache line
 * and the table's going from core to core. */
static __attribute__((noinline)) unsigned
site_of_stack(const void *caller, unsigned *fid, unsigned limit)
{
	struct mt_pyframe f[MAX_PY_FRAMES];
	struct pending names;
	names.cut = false;
	unsigned n = (unsigned)mt_python_frames(f, MAX_PY_FRAMES);
	struct mt_thread *t = mt_tls.thread;
	/* The same code in two regions is two sites: a region's findings
	 * name the code that ran in it. */
	int region = t ? (int)t->region_now - 1 : -1;
	names.region_name = t ? t->region_name_now : NULL;
	/* With Python frames, the address that called the allocator; without,
	 * the native stack from there. */
	const void *native[MAX_NATIVE] = {caller};
	uintptr_t function = (uintptr_t)caller;
	unsigned nn = 1, id = 0;
	uint64_t h = 0;
	/* Frames read under the interpreter's lock (python_frames.h): a new
	 * site's named and kept at once, and the lock given back before the
	 * native frames are walked and named (the unwinder and the
	 * loader's table may take the loader's lock, whose holder may be waiting for the
	 * interpreter's); such a site has no native frames between its
	 * Python ones. */
	bool named = false;
	if (n) {
		h = hash_of(native, nn, f, n, region);
		id = site_and_function_found(h, native, nn, f, n, region, fid);
		if (!id && mt_python_frames_held()) {
			named = true;
			name_python(&names, f, n);
			take();
			for (unsigned i = 0; i < n; i++) {
				names.names[i].file = keep_name(names.names[i].file);
				names.names[i].function =
					keep_name(names.names[i].function);
			}
			give();
		}
	}
	mt_python_frames_done();
	if (!n) {
		/* (a frame more, to tell a stack cut from one that ends
		 * there: a flame graph's outermost row was not the root, and
		 * nothing said so; new-user trial 32) */
		const void *walked[MAX_NATIVE + 1];
		nn = mt_native_stack(caller, walked, MAX_NATIVE + 1, &function);
		names.cut = nn > MAX_NATIVE;
		if (names.cut)
			nn = MAX_NATIVE;
		memcpy(native, walked, nn * sizeof *native);
		h = hash_of(native, nn, f, n, region);
		id = site_and_function_found(h, native, nn, f, n, region, fid);
	}
	if (id)
		return id;

	/* The innermost function's own entry: its code, at no line, and no
	 * native frame; without Python frames, where the innermost native
	 * function begins and where it was called from (a helper that
	 * allocates for several callers is one function for each). */
	struct mt_pyframe fn = {n ? f[0].code : NULL, 0};
	const void *fnative[2] = {(const void *)function, nn > 1 ? native[1] : NULL};
	unsigned nf = n ? 1 : 0, fnn = n ? 0 : nn > 1 ? 2 : 1;
	uint64_t hf = hash_of(fnative, fnn, &fn, nf, region);
	take();
	unsigned *slot = slot_of(h, native, nn, f, n, region);
	unsigned *fslot = slot_of(hf, fnative, fnn, &fn, nf, region);
	bool fresh = !*slot;
	/* (a full table adds none: nothing to name; a site is added only
	 * with its names) */
	bool adding = fresh ? tab->nsites < limit
			    : !*fslot && tab->nsites < MAX_SITES;
	if (adding) {
		/* A new site: named outside the lock (see name_site); in
		 * Python code, its native frames between the Python ones found
		 * now, once (the key stays the cheap one). */
		give();
		memcpy(names.all, native, nn * sizeof *native);
		names.nall = nn;
		names.norder = 0;
		if (fresh && n && !named)
			names.norder = mt_mixed_stack(caller, n, names.all,
						      MAX_NATIVE, names.order,
						      &names.nall);
		name_site(&names, names.all, names.nall, f, n, named);
		take();
		/* (another thread may have added either meanwhile) */
		slot = slot_of(h, native, nn, f, n, region);
	}
	id = *slot ? *slot
		   : adding ? add_site(slot, h, native, nn, f, n, region,
				       &names, true, limit)
			    : 0;
	*fid = 0;
	if (id) {
		if (adding) {
			/* (the whole stack's site may have taken the slot the
			 * function's was to go in) */
			fslot = slot_of(hf, fnative, fnn, &fn, nf, region);
			if (!*fslot)
				add_site(fslot, hf, fnative, fnn, &fn, nf,
					 region, &names, false, MAX_SITES);
		}
		*fid = *fslot;
		__atomic_store_n(&tab->sites[id].function, *fid,
				 __ATOMIC_RELEASE);
	}
	give();
	return id;
}

/* What site_of_stack takes of the stack without a walk (1.1 KiB and the
 * frames below it), twice over. */
#define SITE_STACK_BYTES (4u << 10)

/* No site (0) on a stack with too little room for it: a signal handler's
 * allocation on a small alternate stack, where the site's frames ran past
 * its end.  (On a coroutine's stack, whose bounds are not known, its
 * caller: native_stack.c walks no further.) */
static unsigned site_here(const void *caller, unsigned *fid, unsigned limit)
{
	if (mt_stack_room(SITE_STACK_BYTES) == MT_STACK_SHORT) {
		*fid = 0;
		return 0;
	}
	return site_of_stack(caller, fid, limit);
}

/* Memory given back that only a new mapping or the heap grown takes
 * again: not a purge, whose pages come back when touched (a program's
 * arena purged and written again makes no call), nor a thread heap's
 * shrink, which small blocks grow again. */
static bool unmaps(enum mt_site_cause c)
{
	return c == MT_SITE_BRK_SHRINK || c == MT_SITE_MUNMAP ||
	       c == MT_SITE_OWN_MUNMAP;
}

/* `count` times and `bytes` of `cause` credited to site s; memory
 * unmapped also to what it gave back since the process last took some.
 * With the lock held. */
static void credit(struct site *s, enum mt_site_cause cause, uint64_t count,
		   uint64_t bytes)
{
	s->count[cause] += count;
	s->caused_bytes[cause] += bytes;
	if (!unmaps(cause))
		return;
	if (s->end_epoch != tab->takes) {
		memset(s->end_count, 0, sizeof s->end_count);
		memset(s->end_bytes, 0, sizeof s->end_bytes);
		s->end_epoch = tab->takes;
	}
	s->end_count[cause] += count;
	s->end_bytes[cause] += bytes;
}

/* What the allocator did while the thread's site was pending, credited
 * to site id (0: none), with the lock held; the tallies emptied. */
static void credit_pending(unsigned id)
{
	for (int c = 0; c < MT_SITE_CAUSES; c++) {
		/* (nothing pending, nothing written: a site's lines are
		 * shared by the threads that allocate there) */
		if (!mt_tls.pending_count[c] && !mt_tls.pending_bytes[c])
			continue;
		/* (inside the allocation: none of it at the end) */
		if (id) {
			tab->sites[id].count[c] += mt_tls.pending_count[c];
			tab->sites[id].caused_bytes[c] += mt_tls.pending_bytes[c];
		}
		mt_tls.pending_count[c] = 0;
		mt_tls.pending_bytes[c] = 0;
	}
}

void mt_site_pending_drop_slow(void)
{
	for (int c = 0; c < MT_SITE_CAUSES; c++) {
		mt_tls.pending_count[c] = 0;
		mt_tls.pending_bytes[c] = 0;
	}
	mt_tls.site = 0;
}

/* A block of the site made, or resized where it was (realloc). */
static void note_size(struct site *s, size_t requested, size_t usable)
{
	s->bytes += usable;
	s->requested += requested;
	if (!s->min_bytes || usable < s->min_bytes)
		s->min_bytes = usable;
	if (usable > s->max_bytes)
		s->max_bytes = usable;
	if (!s->min_requested || requested < s->min_requested)
		s->min_requested = requested;
	if (requested > s->max_requested)
		s->max_requested = requested;
	/* (by the sizes asked for: the usable ones round up to the
	 * allocator's size classes, and an array grown by a row at a time
	 * was "larger" 992 times of 994 on glibc, 56 on jemalloc; new-user
	 * trial 12) */
	if (s->last_bytes && requested >= s->last_bytes + s->last_bytes / 4)
		s->grows++;
	if (s->last_bytes && requested > s->last_bytes)
		s->larger++;
	else if (requested < s->last_bytes)
		s->smaller++;
	s->last_bytes = requested;
}

/* A large block p followed at the site of the stack now: its id (0: not
 * followed, a table full), which becomes the thread's current site, with
 * what was pending credited to it.  Called with in_sites set. */
static unsigned site_alloc(const void *p, size_t requested, size_t usable,
			   const void *caller, bool resized)
{
	unsigned fid;
	unsigned id = site_here(caller, &fid, MAX_SITES);
	take();
	tab->takes++;
	if (tab->nblocks >= (tab->block_mask + 1) / 2)
		blocks_grow();
	struct block *b = block_of((uintptr_t)p);
	if (id && !b->addr && tab->nblocks < (tab->block_mask + 1) * 3 / 4) {
		struct site *s = &tab->sites[id];
		s->allocs++;
		s->reallocs += resized;
		note_size(s, requested, usable);
		s->latest = (uintptr_t)p;
		live_up(s);
		if (fid != id)
			live_up(&tab->sites[fid]);
		b->thread = (uintptr_t)&mt_tls;
		/* A site's first block on a thread is not counted in its
		 * function's: a block allocated once (an array kept for the
		 * run, at module level beside the loop; a thread's own, made
		 * before its loop) is no temporary: "5 live at once" counted
		 * two of them with three (new-user trial 12), and a worker's
		 * three input arrays with its two temporaries (trial 22). */
		b->thread_live = fid && made_on_thread_before(id, b->thread)
					 ? thread_live_of(fid, b->thread)
					 : 0;
		if (b->thread_live) {
			uint64_t n = ++tab->thread_live[b->thread_live - 1].live;
			if (n > tab->sites[fid].thread_max_live)
				tab->sites[fid].thread_max_live = n;
		}
		b->addr = (uintptr_t)p;
		b->bytes = usable;
		b->site = id;
		tab->nblocks++;
	} else {
		tab->untracked++;
		id = 0;
	}
	credit_pending(id);
	mt_tls.site = id;
	give();
	return id;
}

void mt_site_alloc(const void *p, size_t requested, size_t usable,
		   const void *caller, bool resized)
{
	if (!mt_sites_on || mt_tls.in_sites)
		return;
	if (!p) {
		mt_site_pending_drop();
		return;
	}
	mt_tls.in_sites = true;
	unsigned id = site_alloc(p, requested, usable, caller, resized);
	if (id)
		MT_EMIT_EVENT(mt_self(), block_site, .ptr = (uintptr_t)p,
			      .bytes = usable, .site = id);
	mt_tls.in_sites = false;
}

/* A tally's samples added to its site's (without the lock: whoever
 * writes the sites adds up under it). */
static void tally_to_site(const struct mt_small_tally *y)
{
	struct site *s = &tab->sites[y->site];
	__atomic_add_fetch(&s->small_samples, y->samples, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->small_sampled_bytes, y->bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->small_estimate, y->estimate, __ATOMIC_RELAXED);
}

/* A small block's sample, tallied on its thread first: two threads
 * sampling one site took turns at its cache line, some 100 ns a sample.
 * A tally goes to the table when another site needs its place;
 * mt_sites_json adds the ones still held. */
void mt_site_sample(const void *p, size_t usable, const void *caller,
		    double stands_for)
{
	unsigned fid;
	struct mt_thread *t = mt_tls.thread;
	if (!mt_sites_on || !p || !t || mt_tls.in_sites)
		return;
	mt_tls.in_sites = true;
	/* (half the table at most, as the program's own mappings) */
	unsigned id = site_here(caller, &fid, MAX_SITES / 2);
	if (id) {
		struct mt_small_tally *y =
			&t->small_tally[id % (sizeof t->small_tally /
					      sizeof *t->small_tally)];
		if (y->site != id) {
			if (y->site)
				tally_to_site(y);
			/* (site last: a reader takes a tally with a site as
			 * whole) */
			__atomic_store_n(&y->site, 0, __ATOMIC_RELEASE);
			y->samples = y->bytes = y->estimate = 0;
			__atomic_store_n(&y->site, id, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&y->samples, y->samples + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&y->bytes, y->bytes + usable, __ATOMIC_RELAXED);
		__atomic_store_n(&y->estimate,
				 y->estimate + (uint64_t)(stands_for + 0.5),
				 __ATOMIC_RELAXED);
	}
	mt_tls.in_sites = false;
}

/* The tallies the threads hold added to (sign 1) or taken back from (-1)
 * the sites, with the lock held, while they are written out.  A tally its
 * thread moves to the table meanwhile may count twice, or not at all, in
 * that one write. */
static void held_tallies(int sign)
{
	static struct mt_small_tally held[MAX_SITES + 1];
	if (sign > 0) {
		memset(held, 0, sizeof held);
		for (struct mt_thread *t = mt_threads_first(); t; t = t->next)
			for (size_t k = 0; k < sizeof t->small_tally /
						       sizeof *t->small_tally;
			     k++) {
				const struct mt_small_tally *y = &t->small_tally[k];
				unsigned id = __atomic_load_n(&y->site,
							      __ATOMIC_ACQUIRE);
				if (!id || id > tab->nsites)
					continue;
				held[id].site = id;
				held[id].samples += __atomic_load_n(&y->samples, __ATOMIC_RELAXED);
				held[id].bytes += __atomic_load_n(&y->bytes, __ATOMIC_RELAXED);
				held[id].estimate += __atomic_load_n(&y->estimate, __ATOMIC_RELAXED);
			}
	}
	for (unsigned id = 1; id <= MAX_SITES; id++) {
		struct mt_small_tally y = held[id];
		if (!y.site)
			continue;
		if (sign < 0) {
			y.samples = -y.samples;
			y.bytes = -y.bytes;
			y.estimate = -y.estimate;
		}
		tally_to_site(&y);
	}
}

void mt_site_own_mapping(enum mt_site_cause cause, uint64_t bytes,
			 const void *caller)
{
	unsigned fid;
	if (!mt_sites_on || mt_tls.in_sites || mt_tls.site)
		return;
	mt_tls.in_sites = true;
	/* (half the table at most: the sites of large blocks come first) */
	unsigned id = site_here(caller, &fid, MAX_SITES / 2);
	take();
	tab->takes += cause == MT_SITE_OWN_MMAP;
	if (id)
		credit(&tab->sites[id], cause, 1, bytes);
	give();
	mt_tls.in_sites = false;
}

/* `bytes` given back by `cause` credited to the sites of ledger l in
 * proportion to their bytes there.  With the lock held. */
static void share_out(const struct ledger *l, enum mt_site_cause cause,
		      uint64_t bytes)
{
	uint64_t all = 0, given = 0;
	for (unsigned k = 0; k < l->n; k++)
		all += l->bytes[k];
	for (unsigned k = 0; k < l->n && all; k++) {
		uint64_t part = k + 1 < l->n ? (uint64_t)((double)bytes * (double)l->bytes[k] / (double)all)
					     : bytes - given;
		credit(&tab->sites[l->site[k]], cause, 0, part);
		given += part;
	}
}

static struct ledger *ledger_of(uintptr_t arena)
{
	struct ledger *free_one = NULL;
	for (unsigned i = 0; i < ARENAS; i++) {
		if (tab->ledgers[i].arena == arena)
			return &tab->ledgers[i];
		if (!free_one && !tab->ledgers[i].arena)
			free_one = &tab->ledgers[i];
	}
	/* (more arenas than that: one shares with another, rather than
	 * none being kept) */
	struct ledger *l = free_one ? free_one : &tab->ledgers[arena / 4096 % ARENAS];
	if (l->arena != arena)
		*l = (struct ledger){.arena = arena};
	return l;
}

/* (the ledger of other allocators' deferred purges: no arena's address) */
#define DEFERRED ((uintptr_t)2)

static void ledger_add(struct ledger *l, unsigned site, uint64_t bytes)
{
	unsigned k = 0, least = 0;
	while (k < l->n && l->site[k] != site) {
		if (l->bytes[k] < l->bytes[least])
			least = k;
		k++;
	}
	if (k == l->n) {
		if (l->n == LEDGER)
			k = least; /* (full: the smallest share gives way) */
		else
			l->n++;
		l->site[k] = site;
		l->bytes[k] = 0;
	}
	l->bytes[k] += bytes;
}

/* The followed block b is given up: its site's figures, and its entry
 * removed.  With the lock held. */
static void block_freed(struct block *b)
{
	struct site *s = &tab->sites[b->site];
	s->frees++;
	s->live--;
	if (s->function && s->function != b->site)
		tab->sites[s->function].live--;
	if (b->thread_live)
		tab->thread_live[b->thread_live - 1].live--;
	if (b->thread != (uintptr_t)&mt_tls)
		s->freed_elsewhere++;
	block_remove(b);
}

/* Whether the followed block b, about to be freed, was copied into its
 * site's latest block, larger and live: a buffer grown by hand (a new
 * block, the old copied in, the old freed: np.append, a vector grown
 * without realloc) has the old bytes at the same places in the new, where
 * a new array of another size made each round has other bytes.  Three
 * windows inside the bytes b was asked for are compared; they are read
 * with process_vm_readv, which fails where a load would fault (pages the
 * program protected), and only so many times a site: a few tell it, and
 * a site of alternating sizes freed at a high rate would pay a call a
 * free.  With the lock held. */
enum { COPY_WINDOW = 32, COPY_WINDOWS = 3, COPY_LOOKS = 16 };

/* (a seccomp filter is on: no system call of the shim's own) */
static bool no_more_looks;

void mt_sites_sandboxed(void)
{
	__atomic_store_n(&no_more_looks, true, __ATOMIC_RELAXED);
}

static void compare_with_latest(struct site *s, const struct block *b)
{
	if (s->latest == b->addr)
		return;
	const struct block *l = block_of(s->latest);
	if (l->addr != s->latest || l->site != b->site || l->bytes <= b->bytes)
		return;
	s->freed_under_larger++;
	if (s->looked >= COPY_LOOKS ||
	    __atomic_load_n(&no_more_looks, __ATOMIC_RELAXED))
		return;
	s->looked++;
	unsigned char got[2 * COPY_WINDOWS * COPY_WINDOW];
	struct iovec local = {got, sizeof got}, remote[2 * COPY_WINDOWS];
	for (int k = 0; k < COPY_WINDOWS; k++) {
		/* (1/8, 3/8, 5/8 of the usable size: below the size asked for
		 * on every allocator, whose large classes are at most a
		 * quarter apart) */
		uintptr_t at = (b->bytes * (2 * k + 1) / 8) & ~(uintptr_t)7;
		remote[k] = (struct iovec){(void *)(b->addr + at), COPY_WINDOW};
		remote[COPY_WINDOWS + k] =
			(struct iovec){(void *)(l->addr + at), COPY_WINDOW};
	}
	long pid = mt_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long n = mt_raw6(SYS_process_vm_readv, pid, (long)&local, 1,
			 (long)remote, 2 * COPY_WINDOWS, 0);
	if (n != (long)sizeof got)
		return;
	const unsigned char *old = got, *now = got + COPY_WINDOWS * COPY_WINDOW;
	if (memcmp(old, now, COPY_WINDOWS * COPY_WINDOW) != 0) {
		s->not_copied++;
		return;
	}
	/* (one byte over and over tells nothing: pages never written, or
	 * filled by the allocator, as glibc's MALLOC_PERTURB_ does) */
	for (size_t i = 1; i < COPY_WINDOWS * COPY_WINDOW; i++)
		if (old[i] != old[0]) {
			s->copied++;
			return;
		}
}

/* The object and offset of pc, named offline as the stacks' frames are.
 * With the lock held. */
static void name_native(struct native_name *nm, const void *pc)
{
	struct mt_object o;
	if (mt_object_of(pc, &o)) {
		nm->object = keep_name(o.path[0] != '/' && exe_path[0] ? exe_path
								     : o.path);
		nm->object_offset = (uintptr_t)pc - o.base;
	}
}

/* A block of s given back by the call that returns to pc.  With the
 * lock held.  Returns the slot of a place new to s, for name_release, or
 * -1. */
static int note_release(struct site *s, const void *pc)
{
	for (unsigned i = 0; pc && i < RELEASES; i++) {
		struct release *r = &s->released[i];
		if (r->pc == pc) {
			r->count++;
			return -1;
		}
		if (r->pc)
			continue;
		r->pc = pc;
		r->count = 1;
		name_native(&r->names[0], pc);
		r->nnames = 1;
		return (int)i;
	}
	s->released_elsewhere++;
	return -1;
}

/* The frames outward of a new place of release `slot` of site id, walked
 * without the lock.  A site in Python code needs none: the interpreter
 * gives its blocks back wherever the last reference goes. */
static void name_release(unsigned id, int slot, const void *pc)
{
	if (slot < 0 || tab->sites[id].nframes)
		return;
	const void *walked[RELEASE_FRAMES];
	uintptr_t function;
	unsigned n = mt_native_stack(pc, walked, RELEASE_FRAMES, &function);
	take();
	struct release *r = &tab->sites[id].released[slot];
	if (r->pc == pc && n > 1 && walked[0] == pc) {
		for (unsigned k = 1; k < n; k++)
			name_native(&r->names[k], walked[k]);
		r->nnames = n;
	}
	give();
}

void mt_site_free(const void *p, const void *caller)
{
	if (!mt_sites_on || !p || mt_tls.in_sites)
		return;
	mt_tls.in_sites = true;
	take();
	struct block *b = block_of((uintptr_t)p);
	int fresh = -1;
	unsigned id = 0;
	if (b->addr) {
		id = b->site;
		fresh = note_release(&tab->sites[id], caller);
		mt_tls.site = b->site;
		mt_tls.site_bytes = b->bytes;
		if (!mt_glibc_chunks)
			ledger_add(ledger_of(DEFERRED), b->site, b->bytes);
		compare_with_latest(&tab->sites[b->site], b);
		block_freed(b);
	}
	give();
	name_release(id, fresh, caller);
	mt_tls.in_sites = false;
}

/* realloc left the followed block b no larger, at p of `usable` bytes: it
 * stays its site's, counted as a block given up and one made there (as
 * the process counts it) but for its sizes, which stay those the code
 * asked for.  With the lock held; returns the site. */
static unsigned block_kept(struct block *b, const void *p, size_t requested,
			   size_t usable)
{
	struct site *s = &tab->sites[b->site];
	s->allocs++;
	s->frees++;
	s->reallocs++;
	/* (its size asked for too: a buffer grown in place within its size
	 * class, as jemalloc's and mimalloc's large ones are, was "blocks of
	 * 116 KiB to 56 MiB" where it reached 60; new-user trial 42) */
	note_size(s, requested, usable);
	if ((uintptr_t)p != b->addr) {
		struct block moved = *b;
		block_remove(b);
		b = block_of((uintptr_t)p);
		/* (an entry there already is one whose free was not seen) */
		if (!b->addr)
			tab->nblocks++;
		*b = moved;
		b->addr = (uintptr_t)p;
	}
	b->bytes = usable;
	return b->site;
}

unsigned mt_site_realloc(const void *old, const void *p, size_t requested,
			 size_t usable, const void *caller)
{
	if (!mt_sites_on || mt_tls.in_sites)
		return 0;
	mt_tls.in_sites = true;
	bool large = p && usable >= MT_LARGE_BYTES;
	unsigned id = 0, kept = 0;
	int fresh = -1;
	take();
	struct block *b = block_of((uintptr_t)old);
	if (b->addr) {
		id = b->site;
		mt_tls.site_bytes = b->bytes;
		/* (given back: to a small block, or a large one of less; a
		 * block grown is the new one's making) */
		if (!large || usable < b->bytes)
			fresh = note_release(&tab->sites[id], caller);
		if (large && usable <= b->bytes)
			kept = block_kept(b, p, requested, usable);
		else
			block_freed(b);
	}
	if (kept || !large) {
		/* (old's site, or none: a block the tables had no room for) */
		credit_pending(id);
		mt_tls.site = id;
		give();
		name_release(id, fresh, caller);
	} else {
		name_release(id, fresh, caller);
		give();
		/* grown: the caller's, what was pending with it */
		kept = site_alloc(p, requested, usable, caller, true);
	}
	mt_tls.in_sites = false;
	return large ? kept : 0;
}

void mt_site_done(void)
{
	if (mt_tls.site == MT_SITE_PENDING)
		mt_site_pending_drop_slow();
	mt_tls.site = 0;
}

void mt_site_freed_in_arena(const void *arena)
{
	if (!mt_sites_on || !mt_tls.site || mt_tls.site == MT_SITE_PENDING ||
	    mt_tls.in_sites)
		return;
	mt_tls.in_sites = true;
	take();
	ledger_add(ledger_of((uintptr_t)arena), mt_tls.site, mt_tls.site_bytes);
	give();
	mt_tls.in_sites = false;
}

void mt_site_credit_heap_shrink(const void *arena, enum mt_site_cause cause,
				uint64_t bytes)
{
	if (!mt_sites_on || mt_tls.in_sites)
		return;
	mt_tls.in_sites = true;
	take();
	struct ledger *l = ledger_of((uintptr_t)arena);
	if (mt_tls.site && mt_tls.site != MT_SITE_PENDING) {
		/* the free that set it off: the shrink is counted on it */
		credit(&tab->sites[mt_tls.site], cause, 1, 0);
		ledger_add(l, mt_tls.site, mt_tls.site_bytes);
	}
	share_out(l, cause, bytes);
	l->n = 0;
	give();
	mt_tls.in_sites = false;
}

void mt_site_credit_purge(uint64_t bytes)
{
	if (!mt_sites_on || mt_tls.in_sites)
		return;
	if (mt_glibc_chunks) { /* (the program's malloc_trim) */
		mt_site_credit(MT_SITE_PURGE, bytes);
		return;
	}
	mt_tls.in_sites = true;
	take();
	/* The bytes freed and not yet purged, by site, share it; what is
	 * past them (pages of small blocks) is no site's.  The purge is
	 * counted on the largest share. */
	struct ledger *l = ledger_of(DEFERRED);
	uint64_t all = 0;
	unsigned top = 0;
	for (unsigned k = 0; k < l->n; k++) {
		all += l->bytes[k];
		if (l->bytes[k] > l->bytes[top])
			top = k;
	}
	if (all) {
		credit(&tab->sites[l->site[top]], MT_SITE_PURGE, 1, 0);
		uint64_t part = bytes < all ? bytes : all;
		share_out(l, MT_SITE_PURGE, part);
		/* (what each gave is off its bytes: shared in proportion, the
		 * same fraction of each) */
		unsigned kept = 0;
		for (unsigned k = 0; k < l->n; k++) {
			uint64_t left = l->bytes[k] - (uint64_t)((double)l->bytes[k] * (double)part / (double)all);
			if (left) {
				l->site[kept] = l->site[k];
				l->bytes[kept++] = left;
			}
		}
		l->n = kept;
	}
	give();
	mt_tls.in_sites = false;
}

void mt_site_credit_slow(enum mt_site_cause cause, uint64_t bytes)
{
	if (mt_tls.site == MT_SITE_PENDING) {
		/* (held for the block's site: no table touched) */
		mt_tls.pending_count[cause]++;
		mt_tls.pending_bytes[cause] += bytes;
		return;
	}
	if (mt_tls.in_sites)
		return;
	mt_tls.in_sites = true;
	take();
	credit(&tab->sites[mt_tls.site], cause, 1, bytes);
	give();
	mt_tls.in_sites = false;
}

static const char *const cause_names[MT_SITE_CAUSES] = {
	[MT_SITE_BRK_GROW] = "brk_grow",
	[MT_SITE_BRK_SHRINK] = "brk_shrink",
	[MT_SITE_MMAP] = "mmap",
	[MT_SITE_MUNMAP] = "munmap",
	[MT_SITE_PURGE] = "purge",
	[MT_SITE_THREAD_HEAP_SHRINK] = "thread_heap_shrink",
	[MT_SITE_OWN_MMAP] = "own_mmap",
	[MT_SITE_OWN_MUNMAP] = "own_munmap",
	[MT_SITE_OWN_PURGE] = "own_purge",
};

static void write_native(struct mt_json_obj *f, const struct native_name *nm)
{
	mt_json_str(f, "kind", "native");
	mt_json_str(f, "object", nm->object ? nm->object : "?");
	mt_json_u64(f, "offset", nm->object_offset);
}

static void write_python(struct mt_json_obj *f, const struct frame_name *py)
{
	mt_json_str(f, "kind", "python");
	mt_json_str(f, "function", py->function);
	mt_json_str(f, "file", py->file);
	/* (-1: the interpreter knows no line there) */
	mt_json_u64(f, "line", py->line > 0 ? (uint64_t)py->line : 0);
}

static void write_stack(struct mt_json_out *o, const struct site *s)
{
	mt_json_put(o, "[");
	for (unsigned j = 0; j < s->norder; j++) {
		mt_json_put(o, j ? ", " : "");
		struct mt_json_obj f = mt_json_begin(o, NULL);
		if (s->order[j] < 0)
			write_native(&f, &s->natives[-1 - s->order[j]]);
		else
			write_python(&f, &s->names[s->order[j]]);
		mt_json_end(&f);
	}
	mt_json_put(o, "]");
}

/* The nodes after *from, as many as fit in o's first `room` bytes; *from
 * becomes the last one written. */
static void write_nodes(struct mt_json_out *o, unsigned *from, size_t room)
{
	size_t len = o->len;
	o->len = o->pos + room < len ? o->pos + room : len;
	mt_json_put(o, "[");
	unsigned first = *from + 1;
	for (unsigned id = first; id <= tab->nnodes; id++) {
		const struct node *n = &tab->nodes[id];
		size_t before = o->pos;
		mt_json_put(o, id > first ? ", " : "");
		struct mt_json_obj f = mt_json_begin(o, NULL);
		mt_json_u64(&f, "id", id);
		mt_json_u64(&f, "parent", n->parent);
		if (n->python)
			write_python(&f, &n->py);
		else
			write_native(&f, &n->native);
		mt_json_end(&f);
		if (o->overflow) {
			o->pos = before;
			o->overflow = false;
			break;
		}
		*from = id;
	}
	o->len = len;
	mt_json_put(o, "]");
}

/* What a site weighs: the memory the allocator moved on its account, then
 * the bytes it allocated. */
static uint64_t weight(const struct site *s)
{
	uint64_t w = 0;
	for (int c = 0; c < MT_SITE_CAUSES; c++)
		w += s->caused_bytes[c];
	return w;
}

static uint64_t weight_at_end(const struct site *s)
{
	uint64_t w = 0;
	for (int c = 0; c < MT_SITE_CAUSES; c++)
		w += s->end_count[c] + s->end_bytes[c];
	return w;
}

/* A site to write: one with large blocks, memory moved, or small samples
 * (not a function's own entry). */
static bool written(const struct site *s)
{
	return s->allocs || weight(s) || s->small_samples;
}

/* What decides which sites are written when not all fit: the memory
 * moved on their account and the bytes of their blocks together (either
 * alone would leave out the sites of the other: a loop's large
 * temporaries, or the mappings of many small objects). */
static bool heavier(unsigned a, unsigned b)
{
	const struct site *x = &tab->sites[a], *y = &tab->sites[b];
	uint64_t wx = weight(x) + x->bytes, wy = weight(y) + y->bytes;
	return wx != wy ? wx > wy : x->bytes > y->bytes;
}

/* Heaviest first; Shell's sort, since libc's qsort may allocate. */
static void sort(unsigned *v, unsigned n)
{
	for (unsigned gap = n / 2; gap; gap /= 2)
		for (unsigned i = gap; i < n; i++)
			for (unsigned j = i; j >= gap && heavier(v[j], v[j - gap]);
			     j -= gap) {
				unsigned t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

/* The causes' counts and bytes as object `name`, each cause there was. */
static void write_causes(struct mt_json_obj *j, const char *name,
			 const uint64_t *count, const uint64_t *bytes)
{
	struct mt_json_obj o = mt_json_nested(j, name);
	for (int c = 0; c < MT_SITE_CAUSES; c++) {
		char key[48];
		if (!count[c] && !bytes[c])
			continue;
		mt_json_u64(&o, cause_names[c], count[c]);
		snprintf(key, sizeof key, "%s_bytes", cause_names[c]);
		mt_json_u64(&o, key, bytes[c]);
	}
	mt_json_end(&o);
}

/* One site's figures; causes that are 0 left out. */
static void write_figures(struct mt_json_obj *j, const struct site *s,
			  uint64_t function_max_live)
{
	struct mt_json_obj large = mt_json_nested(j, "large");
	mt_json_u64(&large, "allocations", s->allocs);
	mt_json_u64(&large, "bytes", s->bytes);
	mt_json_u64(&large, "requested_bytes", s->requested);
	mt_json_u64(&large, "frees", s->frees);
	mt_json_u64(&large, "max_live", s->max_live);
	mt_json_u64(&large, "min_bytes", s->min_bytes);
	mt_json_u64(&large, "max_bytes", s->max_bytes);
	mt_json_u64(&large, "min_requested_bytes", s->min_requested);
	mt_json_u64(&large, "max_requested_bytes", s->max_requested);
	mt_json_u64(&large, "grows", s->grows);
	/* (left out when 0, as the causes are: the sites that fit in the
	 * summary are fewer with every byte; a reader takes no "larger" as
	 * "grows", which is 0 then too) */
	if (s->larger)
		mt_json_u64(&large, "larger", s->larger);
	if (s->smaller)
		mt_json_u64(&large, "smaller", s->smaller);
	if (s->copied)
		mt_json_u64(&large, "copied_into_larger", s->copied);
	if (s->not_copied)
		mt_json_u64(&large, "not_copied_into_larger", s->not_copied);
	/* (0 too: a reader tells a recording without the count from one
	 * whose blocks no realloc made) */
	mt_json_u64(&large, "reallocs", s->reallocs);
	mt_json_u64(&large, "freed_under_larger", s->freed_under_larger);
	mt_json_u64(&large, "function_max_live", function_max_live);
	if (s->freed_elsewhere)
		mt_json_u64(&large, "freed_elsewhere", s->freed_elsewhere);
	mt_json_end(&large);
	write_causes(j, "caused", s->count, s->caused_bytes);
	if (s->end_epoch == tab->takes && weight_at_end(s))
		write_causes(j, "caused_at_end", s->end_count, s->end_bytes);
	if (s->released[0].count) {
		mt_json_key(j, "released_at");
		mt_json_put(j->o, "[");
		for (unsigned i = 0; i < RELEASES && s->released[i].count; i++) {
			mt_json_put(j->o, i ? ", " : "");
			struct mt_json_obj r = mt_json_begin(j->o, NULL);
			mt_json_u64(&r, "count", s->released[i].count);
			mt_json_key(&r, "stack");
			mt_json_put(j->o, "[");
			for (unsigned k = 0; k < s->released[i].nnames; k++) {
				mt_json_put(j->o, k ? ", " : "");
				struct mt_json_obj f = mt_json_begin(j->o, NULL);
				write_native(&f, &s->released[i].names[k]);
				mt_json_end(&f);
			}
			mt_json_put(j->o, "]");
			mt_json_end(&r);
		}
		mt_json_put(j->o, "]");
		if (s->released_elsewhere)
			mt_json_u64(j, "released_elsewhere", s->released_elsewhere);
	}
	if (s->small_samples) {
		struct mt_json_obj small = mt_json_nested(j, "small");
		mt_json_u64(&small, "samples", s->small_samples);
		mt_json_u64(&small, "sampled_bytes", s->small_sampled_bytes);
		mt_json_u64(&small, "bytes", s->small_estimate);
		mt_json_u64(&small, "rate", mt_opt.small_sample_bytes);
		if (mt_small_sites_rate_max() > mt_opt.small_sample_bytes)
			mt_json_u64(&small, "rate_max", mt_small_sites_rate_max());
		mt_json_end(&small);
	}
}

/* The most blocks of a site's function one thread had live at once; all
 * threads' together when some were not counted per thread (the table of
 * functions and threads was full). */
static uint64_t function_max_live(const struct site *s)
{
	if (!s->function)
		return s->max_live;
	const struct site *fn = &tab->sites[s->function];
	return tab->thread_live_full ? fn->max_live : fn->thread_max_live;
}

/* The sites that did not fit, summed into one. */
static void add_to_rest(struct site *rest, const struct site *s)
{
	rest->allocs += s->allocs;
	rest->bytes += s->bytes;
	rest->requested += s->requested;
	rest->frees += s->frees;
	rest->reallocs += s->reallocs;
	rest->freed_elsewhere += s->freed_elsewhere;
	if (s->max_live > rest->max_live)
		rest->max_live = s->max_live;
	if (s->min_bytes && (!rest->min_bytes || s->min_bytes < rest->min_bytes))
		rest->min_bytes = s->min_bytes;
	if (s->max_bytes > rest->max_bytes)
		rest->max_bytes = s->max_bytes;
	if (s->min_requested &&
	    (!rest->min_requested || s->min_requested < rest->min_requested))
		rest->min_requested = s->min_requested;
	if (s->max_requested > rest->max_requested)
		rest->max_requested = s->max_requested;
	rest->small_samples += s->small_samples;
	rest->small_sampled_bytes += s->small_sampled_bytes;
	rest->small_estimate += s->small_estimate;
	for (int c = 0; c < MT_SITE_CAUSES; c++) {
		rest->count[c] += s->count[c];
		rest->caused_bytes[c] += s->caused_bytes[c];
	}
	if (s->end_epoch == tab->takes) {
		rest->end_epoch = tab->takes;
		for (int c = 0; c < MT_SITE_CAUSES; c++) {
			rest->end_count[c] += s->end_count[c];
			rest->end_bytes[c] += s->end_bytes[c];
		}
	}
}

/* Room kept for the sum of the sites that do not fit, and the closing
 * bracket. */
#define SITES_JSON_END 1024

/* The sites in `order` as a JSON array, each with its whole stack or,
 * where its frames are among the nodes up to `nodes` (0: none), the node
 * of its innermost one; those that are not `fits` summed into a last one.
 * Deciding, `fits` is found: the sites whose entries fit. */
static void write_list(struct mt_json_out *o, const unsigned *order,
		       unsigned n, bool *fits, bool deciding, unsigned nodes)
{
	static struct site rest;
	unsigned rest_sites = 0;
	memset(&rest, 0, sizeof rest);
	o->len -= SITES_JSON_END;
	mt_json_put(o, "[");
	for (unsigned k = 0; k < n; k++) {
		const struct site *s = &tab->sites[order[k]];
		size_t before = o->pos;
		if (deciding ? !rest_sites : fits[k]) {
			mt_json_put(o, k ? ", " : "");
			struct mt_json_obj j = mt_json_begin(o, NULL);
			mt_json_u64(&j, "id", order[k]);
			if (s->leaf && s->leaf <= nodes) {
				mt_json_u64(&j, "node", s->leaf);
			} else {
				mt_json_key(&j, "stack");
				write_stack(o, s);
			}
			if (s->cut) {
				mt_json_key(&j, "stack_cut");
				mt_json_put(o, "true");
			}
			if (s->region >= 0)
				mt_json_str(&j, "region",
					    s->region_name ? s->region_name : "?");
			write_figures(&j, s, function_max_live(s));
			mt_json_end(&j);
			fits[k] = !o->overflow;
			if (!o->overflow)
				continue;
			o->pos = before;
			o->overflow = false;
		}
		fits[k] = false;
		add_to_rest(&rest, s);
		rest_sites++;
	}
	o->len += SITES_JSON_END;
	if (rest_sites) {
		mt_json_put(o, n > rest_sites ? ", " : "");
		struct mt_json_obj j = mt_json_begin(o, NULL);
		mt_json_key(&j, "stack");
		mt_json_put(o, "[]");
		mt_json_u64(&j, "rest", rest_sites);
		write_figures(&j, &rest, rest.max_live);
		mt_json_end(&j);
	}
	mt_json_put(o, "]");
}

size_t mt_sites_json(char *buf, size_t len, bool wait, unsigned *nodes)
{
	static unsigned order[MAX_SITES];
	static bool fits[MAX_SITES];
	/* A signal handler that called exit() while its thread was inside
	 * sites.c, holding the lock or about to take it: the lock never comes
	 * free, and the tables are half changed.  No sites, then. */
	size_t room = nodes ? MT_SITES_JSON_BYTES : len;
	if (!mt_sites_on || room < 2 * SITES_JSON_END || len < room ||
	    mt_tls.in_sites)
		return 0;
	if (wait)
		take();
	else if (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		return 0;
	held_tallies(1);
	unsigned n = 0;
	for (unsigned id = 1; id <= tab->nsites; id++)
		if (written(&tab->sites[id]))
			order[n++] = id;
	sort(order, n);
	if (nodes && !n) { /* (a trace has nothing to say: "[]" it had) */
		held_tallies(-1);
		__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
		return 0;
	}
	/* Sites are written while they fit, with their whole stacks, in
	 * `room`; those that do not are summed into a last one with no
	 * stack ("rest": how many), so that the sites add up to the
	 * process's figures.  The trace lists the same sites (the summary
	 * and its replay are one), after the tree's new nodes, in the room
	 * beyond; a site whose frames are not all written yet has its whole
	 * stack. */
	struct mt_json_out o = {buf, room, 0, false};
	write_list(&o, order, n, fits, true, 0);
	unsigned nodes_to = nodes ? *nodes : 0;
	if (nodes && !o.overflow) {
		/* (the tree has the stacks of the sites written only) */
		for (unsigned k = 0; k < n; k++)
			if (fits[k] && !tab->sites[order[k]].leaf)
				tab->sites[order[k]].leaf =
					intern_stack(&tab->sites[order[k]]);
		o = (struct mt_json_out){buf, len, 0, false};
		mt_json_put(&o, "{\"nodes\": ");
		write_nodes(&o, &nodes_to, len - room - 64);
		mt_json_put(&o, ", \"sites\": ");
		write_list(&o, order, n, fits, false, nodes_to);
		mt_json_put(&o, "}");
	}
	/* (read, not changed) */
	held_tallies(-1);
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	if (o.overflow)
		return 0;
	if (nodes)
		*nodes = nodes_to;
	return o.pos;
}

void mt_sites_reset_after_fork(void)
{
	lock = 0;
	if (!mt_sites_on)
		return;
	for (unsigned id = 1; id <= tab->nsites; id++) {
		struct site *s = &tab->sites[id];
		s->allocs = s->bytes = s->frees = s->live = s->max_live = 0;
		s->requested = 0;
		s->thread_max_live = s->freed_elsewhere = s->reallocs = 0;
		s->copied = s->not_copied = s->looked = 0;
		s->freed_under_larger = 0;
		memset(s->count, 0, sizeof s->count);
		memset(s->caused_bytes, 0, sizeof s->caused_bytes);
		memset(s->end_count, 0, sizeof s->end_count);
		memset(s->end_bytes, 0, sizeof s->end_bytes);
		s->end_epoch = 0;
		s->small_samples = s->small_sampled_bytes = 0;
		s->small_estimate = 0;
	}
	for (struct mt_thread *t = mt_threads_first(); t; t = t->next)
		memset(t->small_tally, 0, sizeof t->small_tally);
	/* (the slots in use only: the rest were never touched) */
	memset(tab->blocks, 0, (tab->block_mask + 1) * sizeof *tab->blocks);
	tab->nblocks = 0;
	memset(tab->thread_live, 0, tab->nthread_live * sizeof *tab->thread_live);
	memset(tab->thread_live_slots, 0,
	       (tab->thread_live_mask + 1) * sizeof *tab->thread_live_slots);
	memset(tab->ledgers, 0, sizeof tab->ledgers);
	tab->nthread_live = 0;
	tab->thread_live_full = false;
	tab->untracked = 0;
	tab->takes = 0;
}
