#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"

/* Can exec run path?  If not, errno says why. */
static bool runnable(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return false;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
		return false;
	}
	return access(path, X_OK) == 0;
}

bool mt_find_command(const char *name, char *path, size_t len)
{
	if (!*name)
		return false;
	if (strchr(name, '/')) {
		snprintf(path, len, "%s", name);
		return runnable(path);
	}
	/* execvp's default when PATH is unset */
	const char *dirs = getenv("PATH") ? getenv("PATH") : "/bin:/usr/bin";
	for (const char *d = dirs;; d++) {
		const char *end = strchrnul(d, ':');
		int n = (int)(end - d);
		snprintf(path, len, "%.*s%s%s", n, d, n ? "/" : "", name);
		if (runnable(path))
			return true;
		if (!*end)
			return false;
		d = end;
	}
}

/* The program headers of an ELF file of either class: is one PT_INTERP? */
static bool has_interpreter(int fd, const unsigned char *ident)
{
	bool wide = ident[EI_CLASS] == ELFCLASS64;
	uint64_t phoff;
	unsigned phnum, phentsize;
	if (wide) {
		Elf64_Ehdr e;
		if (pread(fd, &e, sizeof e, 0) != sizeof e)
			return true;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	} else {
		Elf32_Ehdr e;
		if (pread(fd, &e, sizeof e, 0) != sizeof e)
			return true;
		phoff = e.e_phoff, phnum = e.e_phnum, phentsize = e.e_phentsize;
	}
	if (phentsize < (wide ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return true; /* not a layout we know: say nothing */
	for (unsigned i = 0; i < phnum; i++) {
		uint32_t type;
		if (pread(fd, &type, sizeof type, (off_t)(phoff + (uint64_t)i * phentsize)) !=
		    sizeof type)
			return true;
		if (type == PT_INTERP)
			return true;
	}
	return false;
}

bool mt_is_static(const char *path)
{
	unsigned char ident[EI_NIDENT];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool elf = pread(fd, ident, sizeof ident, 0) == sizeof ident &&
		   memcmp(ident, ELFMAG, SELFMAG) == 0 &&
		   (ident[EI_CLASS] == ELFCLASS64 || ident[EI_CLASS] == ELFCLASS32) &&
		   ident[EI_DATA] == ELFDATA2LSB;
	bool yes = elf && !has_interpreter(fd, ident);
	close(fd);
	return yes;
}

bool mt_command_check(const char *verb, const char *name, int *status)
{
	char path[4096];
	errno = 0;
	if (!mt_find_command(name, path, sizeof path)) {
		fprintf(stderr, "memtrace: %s: cannot run '%s': %s\n", verb, name,
			strchr(name, '/') ? strerror(errno ? errno : ENOENT)
					  : "not found on PATH");
		*status = 127;
		return false;
	}
	if (mt_is_static(path)) {
		fprintf(stderr, "memtrace: %s: '%s' is statically linked: it loads no "
				"shared library, so libmemtrace.so (LD_PRELOAD) cannot "
				"interpose its malloc; memtrace measures dynamically "
				"linked programs only\n",
			verb, path);
		*status = 2;
		return false;
	}
	return true;
}

const char *mt_status_text(int status, bool signaled, char *buf, size_t len)
{
	int sig = status - 128;
	const char *name = signaled && sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
	if (signaled)
		snprintf(buf, len, "killed by signal %d%s%s%s", sig, name ? " (SIG" : "",
			 name ? name : "", name ? ")" : "");
	else
		snprintf(buf, len, "exit status %d", status);
	return buf;
}
