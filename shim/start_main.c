/* The program's start, wrapped for one thing: the status a normal exit
 * gives (a return from main, exit(n), Python's sys.exit), which only
 * exit's handlers are told and the shim's destructor is not.
 *
 * A handler the shim's constructor registered would run last, after the
 * dynamic linker's destructors (the shim's own among them): the loader
 * runs preloaded constructors before _start, and __libc_start_main
 * registers its rtld_fini after.  So the wrapper registers rtld_fini
 * itself, then the status handler, and hands the real one no rtld_fini:
 * at exit the program's handlers run, then the status handler, then the
 * destructors, which write the status.  main is passed on as it is, so
 * no frame of the shim's lies under it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "lifecycle.h"
#include "thread.h"
#include "visibility.h"

typedef int main_fn(int, char **, char **);
typedef int start_main_fn(main_fn *main, int argc, char **argv,
			  void (*init)(void), void (*fini)(void),
			  void (*rtld_fini)(void), void *stack_end);

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void exiting_with(int status, void *unused)
{
	(void)unused;
	mt_lifecycle_exit_status(status);
}

MT_EXPORT int __libc_start_main(main_fn *main, int argc, char **argv,
				void (*init)(void), void (*fini)(void),
				void (*rtld_fini)(void), void *stack_end)
{
	mt_tls.hidden++; /* (dlsym's allocations are the shim's) */
	start_main_fn *real = (start_main_fn *)dlsym(RTLD_NEXT, "__libc_start_main");
	mt_tls.hidden--;
	if (!real) {
		static const char why[] = "memtrace: no __libc_start_main after "
					  "the shim's; is libc loaded?\n";
		(void)!write(2, why, sizeof why - 1);
		_exit(127);
	}
	/* (as glibc registers it: no DSO, so no dlclose runs it early) */
	if (rtld_fini)
		__cxa_atexit((void (*)(void *))rtld_fini, NULL, NULL);
	on_exit(exiting_with, NULL);
	return real(main, argc, argv, init, fini, NULL, stack_end);
}
