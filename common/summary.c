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

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void mt_resident_fold(struct mt_resident *figures, const struct mt_ev_rss *s)
{
	figures->samples++;
	if (s->at_exit) {
		figures->anon_bytes_exit = s->anon_bytes;
		figures->live_bytes_exit = s->live_bytes;
		return;
	}
	if (s->anon_bytes > figures->anon_bytes_max)
		figures->anon_bytes_max = s->anon_bytes;
	uint64_t kept = minus(minus(s->anon_bytes, s->live_bytes),
			      s->program_mapped_bytes);
	if (kept > figures->kept_bytes_max || figures->samples == 1) {
		figures->kept_bytes_max = kept;
		figures->anon_bytes_at_kept_max = s->anon_bytes;
		figures->live_bytes_at_kept_max = s->live_bytes;
		figures->program_mapped_at_kept_max = s->program_mapped_bytes;
	}
}
