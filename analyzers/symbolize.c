/* Native frames named offline, from the object's symbol table and debug
 * information (elfutils' libdwfl), as addr2line would: the shim records
 * only the object and the offset from where it was loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

#ifdef MT_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#include <gelf.h>

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
	snprintf(out->function, sizeof out->function, "%s", name);
	Dwfl_Line *l = dwfl_module_getsrc(o->module, addr);
	int line = 0;
	const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (file) {
		snprintf(out->file, sizeof out->file, "%s", file);
		out->line = line;
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
