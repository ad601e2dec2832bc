/* The shim's table of an object's exported functions (shim/exports.c)
 * against dladdr, which finds the nearest dynamic symbol by reading them
 * all: at addresses drawn at random in libc's code, a function dladdr
 * finds is in the table, and an address is in it exactly when a function
 * begins there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exports.h"
#include "memtrace/events.h"

uint64_t mt_shim_syscalls[MT_SYS_COUNT]; /* (rawsys.h counts its calls) */

struct found {
	struct mt_exports *exports;
	uintptr_t code_lo, code_hi;
};

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct found *f = arg;
	(void)size;
	if (!strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			f->code_lo = info->dlpi_addr + ph->p_vaddr;
			f->code_hi = f->code_lo + ph->p_memsz;
		}
	}
	f->exports = mt_exports_of(info);
	return 1;
}

static bool is_function(const ElfW(Sym) *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

static void agrees_with_dladdr(void **state)
{
	struct found f = {0};
	(void)state;
	dl_iterate_phdr(find_libc, &f);
	assert_non_null(f.exports);
	assert_true(f.code_hi > f.code_lo);
	srand(1);
	unsigned functions = 0;
	for (int i = 0; i < 3000; i++) {
		uintptr_t a = f.code_lo + (uintptr_t)rand() % (f.code_hi - f.code_lo);
		Dl_info d;
		const ElfW(Sym) *sym = NULL;
		if (!dladdr1((void *)a, &d, (void **)&sym, RTLD_DL_SYMENT) ||
		    !d.dli_saddr || !sym || !is_function(sym))
			continue;
		uintptr_t start = (uintptr_t)d.dli_saddr;
		assert_true(mt_exports_has(f.exports, start));
		assert_int_equal(mt_exports_has(f.exports, a), a == start);
		assert_false(mt_exports_has(f.exports, start + 1));
		functions++;
	}
	assert_true(functions > 500); /* (about a third: the rest is data) */
	/* (named ones, not ifuncs: dlsym gives their address; libc's own,
	 * not the sanitizer's that wrap them) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	assert_true(mt_exports_has(f.exports, (uintptr_t)dlsym(libc, "qsort")));
	assert_true(mt_exports_has(f.exports, (uintptr_t)dlsym(libc, "fopen")));
	dlclose(libc);
	mt_exports_free(f.exports);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(agrees_with_dladdr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
