/* Faults on sites (fault_sites.h).  The events arrive thread by thread,
 * not in time order, so they are kept (a large block's start and end, a
 * fault sample) and swept in time order at the end, with the blocks live
 * at each moment sorted by address: live blocks never overlap, so the one
 * a fault falls in is the last that starts at or below its address. */
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "fault_sites.h"
#include "idmap.h"

/* 32 bytes each: 128 MiB at most. */
enum { MAX_RECORDS = 1 << 22 };

/* At one instant: a block starts before a fault in it, which comes before
 * the block's free (the shim stamps the free before making it). */
enum kind { START, FAULT, END };

struct record {
	uint64_t ns, addr, bytes;
	uint32_t site;
	uint32_t kind;
};

struct live {
	uint64_t addr, end;
	uint32_t site;
};

/* A thread's last event that is not a record of an allocation call (those
 * are written when the call returns): the call that made a block began
 * after it, and the allocator may have touched the block already, a
 * calloc zeroing it, a realloc copying into it, glibc filling it
 * (MALLOC_PERTURB_). */
struct thread_mark {
	uint64_t before_call_ns;
	bool known;
};

struct mt_fault_sites {
	struct mt_idmap threads; /* tid -> struct thread_mark */
	bool failed;		 /* out of memory for them */
	uint64_t start_ns; /* of the trace: the samples' times are absolute */
	struct record *r;
	size_t n, cap;
	bool overflow;
	bool blocks; /* any block_site event (a trace from before 1.12 has none) */
	struct live *live; /* the sweep's, by address */
	size_t nlive, live_cap;
};

struct mt_fault_sites *mt_fault_sites_new(uint64_t start_ns)
{
	struct mt_fault_sites *f = calloc(1, sizeof *f);
	if (f)
		f->start_ns = start_ns;
	return f;
}

static void keep(struct mt_fault_sites *f, struct record r)
{
	if (f->overflow)
		return;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4096;
		struct record *g = f->n < MAX_RECORDS
					   ? realloc(f->r, cap * sizeof *g)
					   : NULL;
		if (!g) {
			f->overflow = true;
			free(f->r);
			f->r = NULL;
			f->n = f->cap = 0;
			return;
		}
		f->r = g;
		f->cap = cap;
	}
	f->r[f->n++] = r;
}

static struct thread_mark *mark_of(struct mt_fault_sites *f, uint32_t tid)
{
	struct thread_mark *m = mt_idmap_get(&f->threads, tid);
	if (!m && !f->failed) {
		m = calloc(1, sizeof *m);
		if (!m || !mt_idmap_put(&f->threads, tid, m)) {
			free(m);
			f->failed = true;
			return NULL;
		}
	}
	return m;
}

/* The moment the call that allocated a block began, about: just after
 * the thread's last event that is not a record of an allocation call. */
static uint64_t call_began(struct mt_fault_sites *f, const struct mt_event *e)
{
	struct thread_mark *m = mark_of(f, e->tid);
	return m && m->known && m->before_call_ns + 1 < e->ns ? m->before_call_ns + 1
							      : e->ns;
}

static void note_event(struct mt_fault_sites *f, const struct mt_event *e)
{
	switch (e->tag) {
	case MT_EV_ALLOC: /* written as their calls return */
	case MT_EV_MALLOC:
	case MT_EV_REALLOC:
	case MT_EV_BLOCK_SITE:
	case MT_EV_FAULT: /* (a sample: another thread's moment) */
	case MT_EV_KCALL:
		return;
	default: {
		struct thread_mark *m = mark_of(f, e->tid);
		if (m) {
			m->before_call_ns = e->ns;
			m->known = true;
		}
	}
	}
}

void mt_fault_sites_event(struct mt_fault_sites *f, const struct mt_event *e)
{
	note_event(f, e);
	switch (e->tag) {
	case MT_EV_BLOCK_SITE:
		f->blocks = true;
		keep(f, (struct record){call_began(f, e), e->block_site.ptr,
					e->block_site.bytes,
					(uint32_t)e->block_site.site, START});
		break;
	case MT_EV_FREE:
		if (e->free.usable >= MT_LARGE_BYTES)
			keep(f, (struct record){e->ns, e->free.ptr, 0, 0, END});
		break;
	case MT_EV_REALLOC:
		if (e->realloc.old_freed && e->realloc.old_usable >= MT_LARGE_BYTES)
			keep(f, (struct record){e->ns, e->realloc.old_ptr, 0, 0, END});
		break;
	case MT_EV_FAULT: {
		uint64_t t = e->page_fault.time_ns;
		keep(f, (struct record){t > f->start_ns ? t - f->start_ns : 0,
					e->page_fault.addr, 0, 0, FAULT});
		break;
	}
	default:
		break;
	}
}

static int by_time(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

/* The index of the last live block starting at or below addr, or -1. */
static long at_or_below(const struct mt_fault_sites *f, uint64_t addr)
{
	long lo = 0, hi = (long)f->nlive - 1, found = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (f->live[mid].addr <= addr) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static void drop(struct mt_fault_sites *f, size_t i)
{
	memmove(&f->live[i], &f->live[i + 1], (f->nlive - i - 1) * sizeof *f->live);
	f->nlive--;
}

/* A block starts: blocks it overlaps are gone (their frees were not
 * recorded: a trace that lost events, a free below the large size). */
static bool start(struct mt_fault_sites *f, const struct record *r)
{
	struct live b = {r->addr, r->addr + r->bytes, r->site};
	long i = at_or_below(f, b.addr);
	if (i >= 0 && f->live[i].end > b.addr)
		drop(f, (size_t)i--);
	while ((size_t)(i + 1) < f->nlive && f->live[i + 1].addr < b.end)
		drop(f, (size_t)(i + 1));
	if (f->nlive == f->live_cap) {
		size_t cap = f->live_cap ? 2 * f->live_cap : 256;
		struct live *g = realloc(f->live, cap * sizeof *g);
		if (!g)
			return false;
		f->live = g;
		f->live_cap = cap;
	}
	size_t at = (size_t)(i + 1);
	memmove(&f->live[at + 1], &f->live[at], (f->nlive - at) * sizeof *f->live);
	f->live[at] = b;
	f->nlive++;
	return true;
}

static void end(struct mt_fault_sites *f, uint64_t addr)
{
	long i = at_or_below(f, addr);
	if (i >= 0 && f->live[i].addr == addr)
		drop(f, (size_t)i);
}

/* The site a fault at addr falls in now, 0 if none. */
static uint32_t site_of(const struct mt_fault_sites *f, uint64_t addr)
{
	long i = at_or_below(f, addr);
	return i >= 0 && addr < f->live[i].end ? f->live[i].site : 0;
}

/* The site entry of `sites` with that id, else the rest's (the sites the
 * shim summed), else NULL. */
static json_t *entry_of(json_t *sites, uint32_t id)
{
	json_t *s, *rest = NULL;
	size_t i;
	json_array_foreach(sites, i, s) {
		json_t *sid = json_object_get(s, "id");
		if (sid && json_integer_value(sid) == (json_int_t)id)
			return s;
		if (json_object_get(s, "rest"))
			rest = s;
	}
	return rest;
}

bool mt_fault_sites_apply(struct mt_fault_sites *f, json_t *sites,
			  uint64_t period, uint64_t *on_sites)
{
	*on_sites = 0;
	if (f->overflow || !f->blocks)
		return false;
	qsort(f->r, f->n, sizeof *f->r, by_time);
	uint32_t max_site = 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->r[i].site > max_site)
			max_site = f->r[i].site;
	uint64_t *count = calloc((size_t)max_site + 1, sizeof *count);
	if (!count)
		return false;
	bool ok = true;
	for (size_t i = 0; i < f->n && ok; i++) {
		const struct record *r = &f->r[i];
		if (r->kind == START)
			ok = start(f, r);
		else if (r->kind == END)
			end(f, r->addr);
		else
			count[site_of(f, r->addr)]++;
	}
	for (uint32_t id = 1; ok && id <= max_site; id++) {
		json_t *s = count[id] ? entry_of(sites, id) : NULL;
		if (!s)
			continue;
		json_t *had = json_object_get(s, "faults");
		uint64_t n = count[id] * (period ? period : 1) +
			     (had ? (uint64_t)json_integer_value(had) : 0);
		json_object_set_new(s, "faults", json_integer((json_int_t)n));
		*on_sites += count[id];
	}
	free(count);
	return ok;
}

void mt_fault_sites_free(struct mt_fault_sites *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->threads.cap; i++)
		free(mt_idmap_at(&f->threads, i));
	mt_idmap_free(&f->threads);
	free(f->r);
	free(f->live);
	free(f);
}
