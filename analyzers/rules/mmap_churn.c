/* mmap-churn: blocks of the same size are mapped and unmapped, call after
 * call, each use faulting its pages anew. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

struct mt_finding *mt_rule_mmap_churn(const struct mt_rule_input *in)
{
	const struct mt_call_figures *f = in->f;
	double maps = f->syscalls[MT_SYS_MMAP], unmaps = f->syscalls[MT_SYS_MUNMAP];
	char b1[32];

	if (maps < MT_CHURN_PER_CALL || unmaps < MT_CHURN_PER_CALL)
		return NULL;
	/* Mapped and unmapped alike: the same number, the same bytes. */
	double mapped = f->syscall_bytes[MT_SYS_MMAP];
	double unmapped = f->syscall_bytes[MT_SYS_MUNMAP];
	if (fabs(maps - unmaps) > 0.25 * maps ||
	    (mapped > 0 && fabs(mapped - unmapped) > 0.25 * mapped))
		return NULL;
	struct mt_finding *x = mt_finding_new("mmap-churn", in);
	if (!x)
		return NULL;
	double allocator = f->syscalls_by_allocator[MT_SYS_MMAP] +
			   f->syscalls_inferred[MT_SYS_MMAP];
	double per_map = maps > 0 ? mapped / maps : 0;
	double pages = mapped / (double)in->page_size;
	double share = mt_system_share(f);

	json_t *e = x->evidence;
	json_object_set_new(e, "mmap_per_call", json_real(maps));
	json_object_set_new(e, "munmap_per_call", json_real(unmaps));
	json_object_set_new(e, "mmap_by_allocator_per_call", json_real(allocator));
	json_object_set_new(e, "bytes_per_mapping", json_real(per_map));
	json_object_set_new(e, "pages_mapped_per_call", json_real(pages));
	json_object_set_new(e, "page_faults_per_call", json_real(f->faults));
	json_object_set_new(e, "system_s_per_call", json_real(f->system_s));
	json_object_set_new(e, "share_of_time", json_real(share));

	snprintf(x->explanation, sizeof x->explanation,
		 "Each call of %s maps %.2f blocks of memory and unmaps %.2f "
		 "(%s each; %.2f of the mappings per call are the allocator's). "
		 "Unmapped memory goes back to the kernel, and the next mapping "
		 "starts from fresh pages that fault on first touch: %.0f pages "
		 "mapped and %.0f page faults per call, %.2f ms of system time, "
		 "%.0f%% of the call.",
		 f->region, maps, unmaps, mt_bytes_text(per_map, b1, sizeof b1),
		 allocator, pages, f->faults, f->system_s * 1e3, share * 100);
	if (allocator >= MT_CHURN_PER_CALL) {
		if (strcmp(in->backend, "glibc") == 0)
			mt_glibc_threshold_fixes(x, f, in->page_size);
		mt_backend_fixes(x, in->backend);
	}
	mt_reuse_fix(x, in, false);
	return x;
}
