#include <string.h>

#include "summary.h"

struct mt_figure mt_figures_syscall(const struct mt_figures *s, int sys)
{
	if (s->kernel_valid[sys])
		return (struct mt_figure){s->kernel[sys], "kernel", true};

	/* Without the kernel: what passed through the interposers, plus, on
	 * glibc, what its malloc did out of sight, inferred.  That is all of
	 * brk and mremap; mmap, munmap, madvise and mprotect are also made
	 * inside libc (thread stacks, the loader, arena trimming), unseen. */
	uint64_t n = s->c.sys[sys];
	const char *source = "interposed";
	if (s->glibc_inference) {
		n += s->c.sys_inferred[sys];
		source = "interposed+inferred";
	}
	bool complete = sys == MT_SYS_BRK || sys == MT_SYS_MREMAP;
	return (struct mt_figure){n, source, complete};
}

struct mt_figure mt_figures_faults(const struct mt_figures *s, bool major)
{
	int k = major ? MT_KERNEL_MAJOR_FAULTS : MT_KERNEL_MINOR_FAULTS;
	if (s->kernel_valid[k])
		return (struct mt_figure){s->kernel[k], "kernel", true};
	return (struct mt_figure){major ? s->rusage_major_faults
					: s->rusage_minor_faults,
				  "getrusage", true};
}

double mt_figures_shim_calls_s(const char *backend, bool tracing,
			       const struct mt_figures *f)
{
	const struct mt_counters *c = &f->c;
	const struct mt_shim_cost_row *r = mt_shim_cost_row(backend, tracing);
	double heap = 0, sys = 0, kernel = 0;
	for (int i = 0; i <= MT_CALL_MALLOC_USABLE_SIZE; i++)
		heap += (double)c->calls[i];
	/* The calls the shim interposed at what those cost; the rest the
	 * kernel counters alone saw (glibc's own mprotect growing a thread's
	 * heap: 619k of them were charged as interposed ones, 0.27 s where
	 * the run lost 0.012; new-user trial 28), at what counting or
	 * sampling one costs; none where the counters were not on. */
	for (int i = 0; i < MT_SYS_COUNT; i++) {
		struct mt_figure all = mt_figures_syscall(f, i);
		uint64_t seen = c->sys[i] < all.value ? c->sys[i] : all.value;
		sys += (double)seen;
		if (!strcmp(all.source, "kernel"))
			kernel += (double)(all.value - seen);
	}
	return mt_shim_cost_of(r, heap, (double)(c->large_allocs + c->large_frees),
			       sys, kernel);
}

