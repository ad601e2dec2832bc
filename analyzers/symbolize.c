/* Native frames named offline, from the object's symbol table and debug
 * information (elfutils' libdwfl), as addr2line would: the shim records
 * only the object and the offset from where it was loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

#ifdef MT_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

/* C++ names as written (the C++ runtime's demangler, linked when there
 * is one). */
#ifdef MT_HAVE_CXA_DEMANGLE
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);
#endif
static void function_name(const char *name, char *out, size_t len)
{
#ifdef MT_HAVE_CXA_DEMANGLE
	int status = -1;
	char *plain = name[0] == '_' && name[1] == 'Z'
			      ? __cxa_demangle(name, NULL, NULL, &status)
			      : NULL;
	if (plain && status == 0) {
		snprintf(out, len, "%s", plain);
		free(plain);
		return;
	}
	free(plain);
#endif
	snprintf(out, len, "%s", name);
}

/* A file of the compiler's or the system's headers (the C++ library's
 * templates), not the program's own source. */
static bool system_file(const char *file)
{
	return !strncmp(file, "/usr/include/", 13) ||
	       !strncmp(file, "/usr/lib/gcc/", 13);
}

/* Where code inlined from system headers (std::vector::push_back) was
 * called from: the innermost call site, walking out through the inlined
 * scopes at addr, that is in the program's own source; with the function
 * it is in.  False when there is none (the code is all the library's). */
static bool own_call_site(Dwfl_Module *module, GElf_Addr addr,
			  struct mt_symbol *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(module, addr, &bias);
	Dwarf_Die *scopes = NULL;
	Dwarf_Files *files;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	bool found = false;
	if (n <= 0 || dwarf_getsrcfiles(cu, &files, NULL) != 0) {
		free(scopes);
		return false;
	}
	/* The innermost scope's concrete chain: each inlined call, then the
	 * function that holds them (as eu-addr2line -i walks it). */
	Dwarf_Die innermost = scopes[0];
	free(scopes);
	scopes = NULL;
	if ((n = dwarf_getscopes_die(&innermost, &scopes)) <= 0) {
		free(scopes);
		return false;
	}
	for (int i = 0; i < n - 1 && !found; i++) {
		Dwarf_Attribute a;
		Dwarf_Word file, line;
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a),
				    &file) != 0 ||
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a),
				    &line) != 0)
			continue;
		const char *path = dwarf_filesrc(files, file, NULL, NULL);
		if (!path || system_file(path))
			continue;
		/* the function the call is in: the next scope that is one */
		for (int k = i + 1; k < n; k++) {
			int tag = dwarf_tag(&scopes[k]);
			if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
				continue;
			const char *name = dwarf_diename(&scopes[k]);
			Dwarf_Attribute linkage;
			const char *mangled = dwarf_formstring(dwarf_attr_integrate(
				&scopes[k], DW_AT_linkage_name, &linkage));
			if (mangled || name)
				function_name(mangled ? mangled : name, out->function,
					      sizeof out->function);
			break;
		}
		snprintf(out->file, sizeof out->file, "%s", path);
		out->line = (int)line;
		found = true;
	}
	free(scopes);
	return found;
}

/* The function the line at addr is in, when the compiler inlined it into
 * its caller (the symbol table names only the caller): the innermost
 * inlined scope's name. */
static void inlined_function(Dwfl_Module *module, GElf_Addr addr,
			     struct mt_symbol *out)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(module, addr, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		Dwarf_Attribute linkage;
		const char *mangled = dwarf_formstring(dwarf_attr_integrate(
			&scopes[i], DW_AT_linkage_name, &linkage));
		const char *name = dwarf_diename(&scopes[i]);
		if (mangled || name)
			function_name(mangled ? mangled : name, out->function,
				      sizeof out->function);
		break;
	}
	free(scopes);
}

/* One session per object, kept for the run of the command. */
struct object {
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *module;
	GElf_Addr bias, load_base; /* ELF address = offset + load_base */
	struct object *next;
};
static struct object *objects;

static const Dwfl_Callbacks offline = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Where the object's first PT_LOAD lies: 0 for a shared object or a PIE
 * (their offsets from the load address are ELF addresses), the fixed
 * address of a position-dependent executable. */
static GElf_Addr first_load(Elf *elf)
{
	GElf_Ehdr eh;
	size_t n;
	if (!gelf_getehdr(elf, &eh) || eh.e_type != ET_EXEC ||
	    elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr & ~(GElf_Addr)0xfff;
	}
	return 0;
}

static struct object *object_for(const char *path)
{
	for (struct object *o = objects; o; o = o->next)
		if (strcmp(o->path, path) == 0)
			return o->module ? o : NULL;
	struct object *o = calloc(1, sizeof *o);
	if (!o)
		return NULL;
	o->path = strdup(path);
	o->next = objects;
	objects = o;
	o->dwfl = dwfl_begin(&offline);
	if (!o->dwfl || !o->path)
		return NULL;
	o->module = dwfl_report_offline(o->dwfl, path, path, -1);
	dwfl_report_end(o->dwfl, NULL, NULL);
	Elf *elf = o->module ? dwfl_module_getelf(o->module, &o->bias) : NULL;
	if (!elf) {
		o->module = NULL;
		return NULL;
	}
	o->load_base = first_load(elf);
	return o;
}

bool mt_symbolize(const char *object, uint64_t offset, struct mt_symbol *out)
{
	memset(out, 0, sizeof *out);
	struct object *o = object && object[0] == '/' ? object_for(object) : NULL;
	if (!o || offset == 0)
		return false;
	/* A return address: the call is the instruction before it. */
	GElf_Addr addr = offset - 1 + o->load_base + o->bias;
	const char *name = dwfl_module_addrname(o->module, addr);
	if (!name)
		return false;
	function_name(name, out->function, sizeof out->function);
	Dwfl_Line *l = dwfl_module_getsrc(o->module, addr);
	int line = 0;
	const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (file) {
		snprintf(out->file, sizeof out->file, "%s", file);
		out->line = line;
		if (system_file(file))
			own_call_site(o->module, addr, out);
		else
			inlined_function(o->module, addr, out);
	}
	return true;
}
#else
bool mt_symbolize(const char *object, uint64_t offset, struct mt_symbol *out)
{
	(void)object;
	(void)offset;
	memset(out, 0, sizeof *out);
	return false;
}
#endif

void mt_sites_symbolize(json_t *summary)
{
	size_t i, k;
	json_t *site, *frame;
	json_array_foreach(json_object_get(summary, "sites"), i, site)
		json_array_foreach(json_object_get(site, "stack"), k, frame) {
		const char *kind = json_string_value(json_object_get(frame, "kind"));
		struct mt_symbol s;
		if (!kind || strcmp(kind, "native") != 0 ||
		    !mt_symbolize(json_string_value(json_object_get(frame, "object")),
				  (uint64_t)json_integer_value(
					  json_object_get(frame, "offset")),
				  &s))
			continue;
		json_object_set_new(frame, "function", json_string(s.function));
		if (s.file[0]) {
			json_object_set_new(frame, "file", json_string(s.file));
			json_object_set_new(frame, "line", json_integer(s.line));
		}
	}
}
