/* What is known of this process and its host, for the trace's header (or
 * LTTng's first event) and the summary: its command line, the allocator,
 * the kernel and CPU, the allocator settings in its environment. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backend.h"
#include "json_writer.h"
#include "memtrace/trace_format.h"
#include "process_facts.h"

static char cmdline[4096];
static const char *argv_view[64];

void mt_process_read_argv(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? 0 : read(fd, cmdline, sizeof cmdline - 1);
	size_t argc = 0;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	cmdline[n] = '\0';
	for (size_t i = 0; i < (size_t)n && argc < 63; i += strlen(cmdline + i) + 1)
		argv_view[argc++] = cmdline + i;
	argv_view[argc] = NULL;
}

const char *const *mt_process_argv(void)
{
	return argv_view;
}

/* "%p" -> pid, "%%" -> "%". */
bool mt_expand_path(const char *tmpl, char *out, size_t len)
{
	size_t n = 0;
	for (const char *p = tmpl; *p && n < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n += (size_t)snprintf(out + n, len - n, "%ld", (long)getpid());
			p++;
		} else {
			if (p[0] == '%' && p[1] == '%')
				p++;
			out[n++] = *p;
		}
	}
	if (n >= len)
		return false;
	out[n] = '\0';
	return true;
}

/* A small kernel file's text (its first size - 1 bytes), or false. */
static bool read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, size - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The transparent-huge-page mode: the bracketed word of the setting. */
static void thp_mode(char *out, size_t len)
{
	char buf[256];
	out[0] = '\0';
	if (!read_small_file("/sys/kernel/mm/transparent_hugepage/enabled", buf,
			     sizeof buf))
		return;
	char *open_b = strchr(buf, '['), *close_b = open_b ? strchr(open_b, ']') : NULL;
	if (close_b)
		snprintf(out, len, "%.*s", (int)(close_b - open_b - 1), open_b + 1);
}

static void cpu_model(char *out, size_t len)
{
	char buf[4096];
	out[0] = '\0';
	if (!read_small_file("/proc/cpuinfo", buf, sizeof buf))
		return;
	char *m = strstr(buf, "model name");
	char *colon = m ? strchr(m, ':') : NULL;
	if (colon)
		snprintf(out, len, "%.*s", (int)strcspn(colon + 2, "\n"), colon + 2);
}

/* The allocator-related environment: what changes an allocator's
 * behaviour without changing the program. */
static bool allocator_setting(const char *e)
{
	static const char *const prefixes[] = {"GLIBC_TUNABLES=", "MALLOC_",
					       "TCMALLOC_", "MIMALLOC_"};
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (strncmp(e, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

size_t mt_process_facts_json(char *buf, size_t len, pid_t parent)
{
	extern char **environ;
	struct mt_json_out o = {buf, len, 0, false};
	struct mt_json_obj top = mt_json_begin(&o, NULL);
	struct utsname u;
	char thp[64], cpu[256];

	mt_json_str(&top, "memtrace", MT_VERSION);
	mt_json_u64(&top, "format_major", MT_TRACE_MAJOR);
	mt_json_u64(&top, "format_minor", MT_TRACE_MINOR);
	mt_json_u64(&top, "pid", (uint64_t)getpid());
	mt_json_u64(&top, "parent_pid", (uint64_t)parent);
	/* (the process that started this one: a vfork's or posix_spawn's
	 * child has no parent_pid, its file is its parent's all the same) */
	mt_json_u64(&top, "ppid", (uint64_t)getppid());
	mt_json_key(&top, "command");
	mt_json_put(&o, "[");
	const char *const *argv = mt_process_argv();
	for (size_t i = 0; argv && argv[i]; i++) {
		mt_json_put(&o, i ? ", " : "");
		mt_json_string(&o, argv[i]);
	}
	mt_json_put(&o, "]");
	struct mt_json_obj be = mt_json_nested(&top, "backend");
	mt_json_str(&be, "name", mt_backend_id.name);
	mt_json_str(&be, "library", mt_backend_id.library);
	mt_json_str(&be, "version", mt_backend_id.version);
	mt_json_end(&be);
	mt_json_u64(&top, "page_size", (uint64_t)sysconf(_SC_PAGESIZE));
	thp_mode(thp, sizeof thp);
	mt_json_str(&top, "transparent_hugepages", thp);
	struct mt_json_obj env = mt_json_nested(&top, "environment");
	for (char **e = environ; e && *e; e++) {
		if (!allocator_setting(*e))
			continue;
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
		mt_json_str(&env, name, strchr(*e, '=') + 1);
	}
	mt_json_end(&env);
	if (uname(&u) == 0) {
		char kernel[200];
		snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release,
			 u.machine);
		mt_json_str(&top, "kernel", kernel);
	}
	cpu_model(cpu, sizeof cpu);
	mt_json_str(&top, "cpu", cpu);
	struct mt_json_obj clock = mt_json_nested(&top, "clock");
#if defined(__x86_64__)
	mt_json_str(&clock, "source", "tsc");
#else
	mt_json_str(&clock, "source", "monotonic");
#endif
	mt_json_u64(&clock, "tsc_shift", MT_TSC_SHIFT);
	mt_json_end(&clock);
	mt_json_end(&top);
	return o.overflow ? 0 : o.pos;
}
