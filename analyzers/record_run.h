/* A command recorded into a trace in a directory of its own, for the
 * commands that draw one (report, compare --html). */
#ifndef MEMTRACE_RECORD_RUN_H
#define MEMTRACE_RECORD_RUN_H

/* CMD recorded on `backend` (NULL: glibc) into dir/trace.mt; its path
 * (free it), or NULL with a message that names `who`.  *status: CMD's exit
 * status (128 + the signal that ended it), for the caller to pass on. */
char *mt_record_run(const char *who, const char *backend, char *const argv[],
		    const char *dir, int *status);
/* dir and the traces in it (a forked child's too). */
void mt_remove_run_dir(const char *dir);

#endif
