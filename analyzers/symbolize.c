/* Native frames named offline, from the object's symbol table and debug
 * information (elfutils' libdwfl), as addr2line would: the shim records
 * only the object and the offset from where it was loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites.h"
#include "symbolize.h"

/* A file of the compiler's or the system's headers (the C++ library's
 * templates), not the program's own source. */
static bool system_file(const char *file)
{
	return !strncmp(file, "/usr/include/", 13) ||
	       !strncmp(file, "/usr/lib/gcc/", 13);
}


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

/* Whether the '<' or '>' at name[at] is an operator's (operator<,
 * operator<<=, operator->, ...), not a template's bracket. */
static bool operator_sign(const char *name, size_t at)
{
	size_t i = at;
	while (i > 0 && strchr("<>=-", name[i - 1]))
		i--;
	return i >= 8 && strncmp(name + i - 8, "operator", 8) == 0;
}

/* A name longer than the room, its template arguments elided ("<...>"),
 * so that what follows them stays: the truncated
 * "std::_Hashtable<int, std::pair<int const, int>, ..." hid that the
 * frame was _M_rehash, a hash table's buckets grown (new-user trial 45);
 * "std::_Hashtable<...>::_M_rehash(...)" keeps it.  Cut where even that
 * does not fit. */
static void fit_name(const char *name, char *out, size_t len)
{
	if (strlen(name) < len) {
		snprintf(out, len, "%s", name);
		return;
	}
	size_t o = 0;
	int depth = 0;
	for (size_t i = 0; name[i] && o + 1 < len; i++) {
		char c = name[i];
		bool bracket = (c == '<' || c == '>') && !operator_sign(name, i);
		if (bracket && c == '<' && depth++ == 0) {
			for (const char *e = "<...>"; *e && o + 1 < len; e++)
				out[o++] = *e;
		} else if (bracket && c == '>' && depth > 0) {
			depth--;
		} else if (depth == 0) {
			out[o++] = c;
		}
	}
	out[o] = '\0';
}

static void function_name(const char *name, char *out, size_t len)
{
#ifdef MT_HAVE_CXA_DEMANGLE
	int status = -1;
	char *plain = name[0] == '_' && name[1] == 'Z'
			      ? __cxa_demangle(name, NULL, NULL, &status)
			      : NULL;
	if (plain && status == 0) {
		fit_name(plain, out, len);
		free(plain);
		return;
	}
	free(plain);
#endif
	fit_name(name, out, len);
}

/* A scope's function name, as written (demangled). */
static bool scope_name(Dwarf_Die *scope, char *out, size_t len)
{
	Dwarf_Attribute linkage;
	const char *mangled = dwarf_formstring(
		dwarf_attr_integrate(scope, DW_AT_linkage_name, &linkage));
	const char *name = dwarf_diename(scope);
	if (!mangled && !name)
		return false;
	function_name(mangled ? mangled : name, out, len);
	return true;
}

/* The functions at addr, innermost first, as eu-addr2line -i gives them:
 * each inlined call with the line it is at, then the function that holds
 * them, at the line of the call inlined into it.  out[0] has the line of
 * addr already; its function and the others' are filled here.  How many
 * (at least 1: out[0] without its line when no function's debug
 * information covers addr, as for _start: the line table's nearest row is
 * another function's). */
static unsigned inline_chain(Dwfl_Module *module, GElf_Addr addr,
			     struct mt_symbol *out, unsigned max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(module, addr, &bias);
	Dwarf_Die *scopes = NULL;
	Dwarf_Files *files;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
	if (n <= 0 || dwarf_getsrcfiles(cu, &files, NULL) != 0) {
		free(scopes);
		out[0].file[0] = '\0';
		out[0].line = 0;
		return 1;
	}
	/* The innermost scope's concrete chain (as eu-addr2line -i walks it). */
	Dwarf_Die innermost = scopes[0];
	free(scopes);
	scopes = NULL;
	if ((n = dwarf_getscopes_die(&innermost, &scopes)) <= 0) {
		free(scopes);
		return 1;
	}
	unsigned k = 0;
	bool covered = false;
	for (int i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		covered = true;
		scope_name(&scopes[i], out[k].function, sizeof out[k].function);
		if (tag == DW_TAG_subprogram)
			break;
		/* The function this call was inlined into, at the call. */
		Dwarf_Attribute a;
		Dwarf_Word file, line;
		const char *path = NULL;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &file) == 0 &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &line) == 0)
			path = dwarf_filesrc(files, file, NULL, NULL);
		if (!path || k + 1 == max)
			break;
		k++;
		snprintf(out[k].file, sizeof out[k].file, "%s", path);
		out[k].line = (int)line;
		snprintf(out[k].function, sizeof out[k].function, "?");
	}
	free(scopes);
	if (!covered) {
		out[0].file[0] = '\0';
		out[0].line = 0;
	}
	return k + 1;
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

bool mt_object_readable(const char *object)
{
	return object && object[0] == '/' && object_for(object);
}

unsigned mt_symbolize(const char *object, uint64_t offset,
		      struct mt_symbol *out, unsigned max)
{
	memset(out, 0, max * sizeof *out);
	struct object *o = object && object[0] == '/' ? object_for(object) : NULL;
	if (!o || offset == 0 || !max)
		return 0;
	/* A return address: the call is the instruction before it. */
	GElf_Addr addr = offset - 1 + o->load_base + o->bias;
	GElf_Off from_start = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(o->module, addr, &from_start, &sym,
						NULL, NULL, NULL);
	if (!name)
		return 0;
	function_name(name, out->function, sizeof out->function);
	out->offset = from_start + 1; /* (of the return address) */
	Dwfl_Line *l = dwfl_module_getsrc(o->module, addr);
	int line = 0;
	const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (!file)
		return 1;
	snprintf(out->file, sizeof out->file, "%s", file);
	out->line = line;
	return inline_chain(o->module, addr, out, max);
}
#else
bool mt_object_readable(const char *object)
{
	(void)object;
	return false;
}

unsigned mt_symbolize(const char *object, uint64_t offset,
		      struct mt_symbol *out, unsigned max)
{
	(void)object;
	(void)offset;
	(void)out;
	(void)max;
	return 0;
}
#endif

/* A native frame named: its function, file and line, and in front of it
 * the functions inlined into it at that address (innermost first), each
 * marked "inlined". */
static void symbolize_frame(json_t *stack, size_t *at)
{
	enum { MAX_INLINED = 64 };
	static struct mt_symbol s[MAX_INLINED];
	json_t *frame = json_array_get(stack, *at);
	unsigned n = mt_symbolize(json_string_value(json_object_get(frame, "object")),
				  (uint64_t)json_integer_value(json_object_get(frame, "offset")),
				  s, MAX_INLINED);
	/* The C++ library's templates inlined into each other (make_shared
	 * is a dozen deep): the innermost of each run is enough to say what
	 * allocated, and the method that grows a container, to say that it
	 * grew (push_back inlined into the program's loop: its blocks were
	 * said only to be "allocate less often", not reserve(); new-user
	 * trial 47's kind). */
	unsigned kept = 0;
	for (unsigned k = 0; k < n; k++)
		if (k == 0 || k + 1 == n || !system_file(s[k].file) ||
		    !system_file(s[k - 1].file) || mt_cxx_growth(s[k].function))
			s[kept++] = s[k];
	n = kept;
	/* (an object that is there, with no symbol at the address: stripped) */
	if (!n && mt_object_readable(json_string_value(json_object_get(frame, "object"))))
		json_object_set_new(frame, "no_symbol", json_true());
	for (unsigned k = 0; k < n; k++) {
		/* the outermost is the frame itself; the inner ones copies of it */
		json_t *f = k + 1 < n ? json_deep_copy(frame) : json_incref(frame);
		json_object_set_new(f, "function", json_string(s[k].function));
		if (s[k].file[0]) {
			json_object_set_new(f, "file", json_string(s[k].file));
			json_object_set_new(f, "line", json_integer(s[k].line));
		} else if (s[k].offset) {
			/* no line: where in the function, to tell calls apart */
			json_object_set_new(f, "function_offset",
					    json_integer((json_int_t)s[k].offset));
		}
		if (k + 1 < n) {
			json_object_set_new(f, "inlined", json_true());
			json_array_insert_new(stack, *at + k, f);
		} else {
			json_decref(f);
		}
	}
	*at += n ? n : 1;
}

static void symbolize_stack(json_t *stack)
{
	for (size_t k = 0; k < json_array_size(stack);) {
		const char *kind = json_string_value(
			json_object_get(json_array_get(stack, k), "kind"));
		if (kind && !strcmp(kind, "native") &&
		    !json_object_get(json_array_get(stack, k), "function"))
			symbolize_frame(stack, &k);
		else
			k++;
	}
}

void mt_sites_symbolize(json_t *summary)
{
	size_t i, j;
	json_t *site, *release;
	json_array_foreach(json_object_get(summary, "sites"), i, site) {
		json_t *stack = json_object_get(site, "stack");
		symbolize_stack(stack);
		/* (cut where only the C runtime's frames were left: main's
		 * callers, _start; nothing of the program's unrecorded) */
		json_t *outermost = json_array_get(stack, json_array_size(stack) - 1);
		const char *fn = json_string_value(json_object_get(outermost, "function"));
		if (outermost && (mt_frame_is_library(outermost) ||
				  (fn && !strcmp(fn, "main"))))
			json_object_del(site, "stack_cut");
		json_array_foreach(json_object_get(site, "released_at"), j, release)
			symbolize_stack(json_object_get(release, "stack"));
	}
}
