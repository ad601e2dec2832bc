#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

#include "allocator_imports.h"
#include "objects.h"

#if __ELF_NATIVE_CLASS == 64
#define RELA_SYM ELF64_R_SYM
#else
#define RELA_SYM ELF32_R_SYM
#endif

bool mt_allocator_calls_malloc = true, mt_allocator_calls_free = true;

struct dynamic {
	uintptr_t base;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Rela) *rela[2];
	size_t rela_bytes[2];
	bool plt_rela, seen;
};

/* glibc relocates the addresses in a loaded object's dynamic section;
 * other loaders may not. */
static uintptr_t address(const struct dynamic *d, uintptr_t ptr)
{
	return ptr < d->base ? d->base + ptr : ptr;
}

static int find_dynamic(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dynamic *d = arg;
	(void)size;
	if (info->dlpi_addr != d->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		const ElfW(Dyn) *dyn =
			(const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		for (; dyn->d_tag != DT_NULL; dyn++) {
			uintptr_t ptr = address(d, dyn->d_un.d_ptr);
			switch (dyn->d_tag) {
			case DT_SYMTAB: d->symtab = (const void *)ptr; break;
			case DT_STRTAB: d->strtab = (const void *)ptr; break;
			case DT_RELA: d->rela[0] = (const void *)ptr; break;
			case DT_RELASZ: d->rela_bytes[0] = dyn->d_un.d_val; break;
			case DT_JMPREL: d->rela[1] = (const void *)ptr; break;
			case DT_PLTRELSZ: d->rela_bytes[1] = dyn->d_un.d_val; break;
			case DT_PLTREL: d->plt_rela = dyn->d_un.d_val == DT_RELA; break;
			}
		}
		/* (relocations of the other kind, REL: not read, so not known) */
		d->seen = d->symtab && d->strtab && (d->rela[0] || d->rela[1]) &&
			  (!d->rela[1] || d->plt_rela);
	}
	return 1;
}

void mt_allocator_imports_read(void *fn)
{
	struct mt_object o;
	struct dynamic d = {0};
	if (!mt_object_of(fn, &o))
		return;
	d.base = o.base;
	dl_iterate_phdr(find_dynamic, &d);
	if (!d.seen)
		return;
	bool calls_malloc = false, calls_free = false;
	for (int r = 0; r < 2; r++) {
		size_t n = d.rela[r] ? d.rela_bytes[r] / sizeof(ElfW(Rela)) : 0;
		for (size_t i = 0; i < n; i++) {
			size_t sym = RELA_SYM(d.rela[r][i].r_info);
			if (!sym)
				continue;
			const char *name = d.strtab + d.symtab[sym].st_name;
			calls_malloc |= !strcmp(name, "malloc");
			calls_free |= !strcmp(name, "free");
		}
	}
	mt_allocator_calls_malloc = calls_malloc;
	mt_allocator_calls_free = calls_free;
}
