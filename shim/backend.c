#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "backend.h"
#include "backends.h"
#include "diag.h"
#include "options.h"
#include "rawsys.h"
#include "symbols.h"
#include "objects.h"

struct mt_backend_id mt_backend_id;

/* Set in the environment of the one re-execution, so it cannot loop. */
#define REEXEC_MARK "MEMTRACE_REEXEC"

/* (dladdr only for the main program, which the loader names "": it
 * scans the object's symbols too) */
static const char *object_of(void *fn)
{
	struct mt_object o;
	if (mt_object_of(fn, &o) && o.path[0])
		return o.path;
	Dl_info info;
	return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

static void read_version(const struct mt_backend *b, char *out, size_t len)
{
	out[0] = '\0';
	if (!b)
		return;
	if (strcmp(b->name, "glibc") == 0) {
		snprintf(out, len, "%s", gnu_get_libc_version());
	} else if (strcmp(b->name, "jemalloc") == 0) {
		int (*mallctl)(const char *, void *, size_t *, void *, size_t) =
			dlsym(RTLD_DEFAULT, "mallctl");
		const char *v = NULL;
		size_t sz = sizeof v;
		if (mallctl && mallctl("version", &v, &sz, NULL, 0) == 0 && v)
			snprintf(out, len, "%.*s", (int)strcspn(v, "-"), v);
	} else if (strcmp(b->name, "tcmalloc") == 0) {
		const char *(*tc_version)(int *, int *, const char **) =
			dlsym(RTLD_DEFAULT, "tc_version");
		int major, minor;
		const char *patch;
		if (tc_version) {
			tc_version(&major, &minor, &patch);
			snprintf(out, len, "%d.%d%s", major, minor, patch);
		}
	} else if (strcmp(b->name, "mimalloc") == 0) {
		int (*mi_version)(void) = dlsym(RTLD_DEFAULT, "mi_version");
		if (mi_version) {
			int v = mi_version();
			snprintf(out, len, "%d.%d.%d", v / 100, v / 10 % 10,
				 v % 10);
		}
	}
}

static void identify(void)
{
	const char *lib = object_of(mt_symbols_allocator_malloc());
	const struct mt_backend *b = mt_backend_by_object(lib);

	mt_backend_id.library = lib;
	mt_backend_id.name = b ? b->name : "custom";
	read_version(b, mt_backend_id.version, sizeof mt_backend_id.version);
}

/* Does the object serving malloc match what was asked for? */
static bool serves_requested(void)
{
	const char *want = mt_opt.backend;

	if (mt_backend_is_path(want)) {
		char a[4096], b[4096];
		return realpath(want, a) && realpath(mt_backend_id.library, b) &&
		       strcmp(a, b) == 0;
	}
	return strcmp(want, mt_backend_id.name) == 0;
}

/* The library file for the requested backend; fatal when not installed. */
static const char *requested_library(char *buf, size_t len)
{
	const char *want = mt_opt.backend;

	if (mt_backend_is_path(want)) {
		if (access(want, R_OK) != 0)
			mt_fatal("MEMTRACE_BACKEND=%s: no such library file "
				 "(give the path of an installed malloc library)",
				 want);
		return want;
	}
	const struct mt_backend *b = mt_backend_by_name(want);
	const char *path = mt_backend_locate(b, buf, len);
	if (!path)
		mt_fatal("backend %s is not installed: %s was not found "
			 "(install it with: apt-get install %s)",
			 b->name, b->soname, b->package);
	return path;
}

/* Memory of the shim's own for the restart's tables (never freed: the
 * process image is replaced). */
static void *room(size_t bytes)
{
	return mt_raw_mmap(bytes ? bytes : 1);
}

/* The command line as the kernel holds it (/proc/self/cmdline: with the
 * loader's own arguments when it was run by hand), every argument of it,
 * however many and long; or, without /proc, the argv glibc gave the
 * constructors.  NULL when neither can be had. */
static char **self_argv(char **init_argv)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 16, n = 0, argc = 0;
	char *buf = fd >= 0 ? room(cap) : NULL;

	if (!buf) {
		if (fd >= 0)
			close(fd);
		return init_argv;
	}
	for (ssize_t r; (r = read(fd, buf + n, cap - n)) > 0;) {
		n += (size_t)r;
		if (n == cap) { /* (grown by doubling) */
			char *more = room(2 * cap);
			if (!more) {
				close(fd);
				return NULL;
			}
			memcpy(more, buf, n);
			mt_raw_munmap(buf, cap);
			buf = more;
			cap *= 2;
		}
	}
	close(fd);
	for (size_t i = 0; i < n; i++)
		argc += buf[i] == '\0';
	char **argv = room((argc + 1) * sizeof *argv);
	if (!argv)
		return NULL;
	argc = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	/* (An empty file: the program was run with argc 0, or its
	 * process is a zombie; glibc's argv is as good.) */
	return argc ? argv : init_argv;
}

/* The file this process runs: /proc/self/exe, or without /proc the file
 * execve was given (AT_EXECFN), unless that was a script: then the
 * interpreter, which the kernel made argv[0]. */
static const char *self_image(char **argv, bool have_proc)
{
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	char head[2] = {0, 0};

	if (have_proc || !execfn)
		return "/proc/self/exe";
	int fd = open(execfn, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, head, sizeof head) < 0)
			head[0] = '\0';
		close(fd);
	}
	return head[0] == '#' && head[1] == '!' && argv[0] ? argv[0] : execfn;
}

/* LD_PRELOAD with this library first and the backend right after it, then
 * whatever else was there. */
static void build_preload(char *out, size_t len, const char *self,
			  const char *backend)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = (size_t)snprintf(out, len, "LD_PRELOAD=%s:%s", self, backend);
	char entry[4096];

	while (old && *old && n < len) {
		size_t w = strcspn(old, ": ");
		snprintf(entry, sizeof entry, "%.*s", (int)w, old);
		if (w && strcmp(entry, self) != 0 && strcmp(entry, backend) != 0 &&
		    !strstr(entry, "libmemtrace"))
			n += (size_t)snprintf(out + n, len - n, ":%s", entry);
		old += w;
		old += strspn(old, ": ");
	}
	if (n >= len)
		mt_fatal("LD_PRELOAD is too long to add the backend to");
}

static void __attribute__((noreturn)) reexec_with(const char *backend,
						 char **init_argv)
{
	static char preload[16384];
	extern char **environ;
	size_t n = 0, nenv = 0;
	bool have_proc = access("/proc/self/exe", F_OK) == 0;
	char **argv = self_argv(init_argv);

	if (!argv)
		mt_fatal("cannot read the command line to restart the program "
			 "with backend %s; use: memtrace run --backend %s -- CMD",
			 mt_opt.backend, mt_opt.backend);
	build_preload(preload, sizeof preload, object_of((void *)reexec_with),
		      backend);
	for (char **e = environ; e && *e; e++)
		nenv++;
	char **envp = room((nenv + 3) * sizeof *envp);
	if (!envp)
		mt_fatal("cannot restart the program with backend %s: out of "
			 "memory; use: memtrace run --backend %s -- CMD",
			 mt_opt.backend, mt_opt.backend);
	envp[n++] = preload;
	envp[n++] = REEXEC_MARK "=1";
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
		    strncmp(*e, REEXEC_MARK "=", sizeof REEXEC_MARK) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
	execve(self_image(argv, have_proc), argv, envp);
	mt_fatal("cannot restart the program with backend %s: execve failed; "
		 "use: memtrace run --backend %s -- CMD",
		 mt_opt.backend, mt_opt.backend);
}

/* The object preloaded before this library that defines malloc, which the
 * program's calls then reach instead of the shim; NULL when none does.
 * The loader's list of objects is in its search order: the program, the
 * preloaded ones, then their dependencies.  (Not dlsym(RTLD_DEFAULT):
 * it answers a program built without PIE with its own PLT entry.) */
static const char *malloc_ahead(void)
{
	struct mt_object mine;
	if (!mt_object_of((void *)malloc_ahead, &mine))
		return NULL;
	for (struct link_map *m = _r_debug.r_map ? _r_debug.r_map->l_next : NULL;
	     m; m = m->l_next) {
		void *h = m->l_name && m->l_name[0]
				  ? dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD)
				  : NULL;
		void *sym = h ? dlsym(h, "malloc") : NULL;
		if (h)
			dlclose(h);
		struct mt_object theirs;
		if (!sym || !mt_object_of(sym, &theirs))
			continue;
		if (theirs.base == mine.base)
			return NULL;
		if (strcmp(theirs.path, m->l_name) == 0)
			return m->l_name;
	}
	return NULL;
}

bool mt_backend_ensure(char **argv)
{
	char buf[4096];

	identify();
	/* (dlopen's blocks come from the shim's arena: mt_init) */
	const char *ahead = malloc_ahead();
	bool reexecuted = getenv(REEXEC_MARK) != NULL;
	if (reexecuted)
		unsetenv(REEXEC_MARK);
	/* (With MEMTRACE_BACKEND the restart below puts the shim first.) */
	if (ahead && !mt_opt.backend_explicit) {
		const struct mt_backend *b = mt_backend_by_object(ahead);
		mt_warn("%s defines malloc and comes before libmemtrace.so in "
			"LD_PRELOAD, so the program's malloc calls do not reach "
			"memtrace, which records nothing for this run: put "
			"libmemtrace.so first (LD_PRELOAD=libmemtrace.so:%s), or "
			"run memtrace run --backend %s -- CMD",
			ahead, ahead, b ? b->name : ahead);
		return false;
	}
	if (!mt_opt.backend_explicit || (serves_requested() && !ahead))
		return true;
	if (strcmp(mt_opt.backend, "glibc") == 0)
		mt_fatal("MEMTRACE_BACKEND=glibc, but malloc is served by %s: "
			 "remove it from LD_PRELOAD",
			 ahead ? ahead : mt_backend_id.library);
	const char *lib = requested_library(buf, sizeof buf);
	if (reexecuted)
		mt_fatal("backend %s (%s) was preloaded but malloc is served by "
			 "%s; is it a malloc library?",
			 mt_opt.backend, lib, ahead ? ahead : mt_backend_id.library);
	reexec_with(lib, argv);
}
