/* An object's exported functions (exports.h), read from its dynamic
 * symbol table in memory: the GNU hash table gives how many symbols there
 * are, which the table itself does not say. */
#define _GNU_SOURCE
#include <elf.h>
#include <stddef.h>

#include "exports.h"
#include "rawsys.h"

struct mt_exports {
	size_t bytes, mask; /* mask: slots - 1 */
	uintptr_t slot[];   /* addresses, 0: empty */
};

/* A pointer of the dynamic section: the loader makes most of them
 * absolute, but not in every object (nor on every architecture). */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* How many symbols the table of this GNU hash table has: past the last
 * bucket's chain, whose last entry has its low bit set. */
static size_t gnu_hash_symbols(const uint32_t *h)
{
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2];
	const uint32_t *buckets =
		(const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom_words);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	for (uint32_t b = 0; b < nbuckets; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return (size_t)last + 1;
}

static size_t slot_of(const struct mt_exports *e, uintptr_t fn)
{
	return (size_t)((fn * 0x9e3779b97f4a7c15ull) >> 32) & e->mask;
}

static bool is_export(const ElfW(Sym) *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	return s->st_shndx != SHN_UNDEF && s->st_value &&
	       (type == STT_FUNC || type == STT_GNU_IFUNC);
}

struct mt_exports *mt_exports_of(const struct dl_phdr_info *info)
{
	const ElfW(Dyn) *dyn = NULL;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
						   info->dlpi_phdr[i].p_vaddr);
	const ElfW(Sym) *syms = NULL;
	const uint32_t *gnu_hash = NULL;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_SYMTAB)
			syms = (const ElfW(Sym) *)dyn_ptr(info, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu_hash = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr);
	}
	if (!syms || !gnu_hash)
		return NULL;
	size_t n = gnu_hash_symbols(gnu_hash), slots = 64;
	while (slots < 2 * n)
		slots *= 2;
	size_t bytes = sizeof(struct mt_exports) + slots * sizeof(uintptr_t);
	struct mt_exports *e = mt_raw_mmap(bytes);
	if (!e)
		return NULL;
	e->bytes = bytes;
	e->mask = slots - 1;
	for (size_t i = 0; i < n; i++) {
		if (!is_export(&syms[i]))
			continue;
		uintptr_t fn = info->dlpi_addr + syms[i].st_value;
		size_t k = slot_of(e, fn);
		while (e->slot[k] && e->slot[k] != fn)
			k = (k + 1) & e->mask;
		e->slot[k] = fn;
	}
	return e;
}

void mt_exports_free(struct mt_exports *e)
{
	mt_raw_munmap(e, e->bytes);
}

bool mt_exports_has(const struct mt_exports *e, uintptr_t fn)
{
	for (size_t k = slot_of(e, fn); e->slot[k]; k = (k + 1) & e->mask)
		if (e->slot[k] == fn)
			return true;
	return false;
}
