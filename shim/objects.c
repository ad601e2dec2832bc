#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>

#include "objects.h"

bool mt_object_of(const void *pc, struct mt_object *out)
{
#ifdef DLFO_EH_SEGMENT_TYPE
	struct dl_find_object found;
	if (_dl_find_object((void *)pc, &found) != 0 || !found.dlfo_link_map)
		return false;
	out->path = found.dlfo_link_map->l_name ? found.dlfo_link_map->l_name : "";
	out->base = (uintptr_t)found.dlfo_map_start;
	return true;
#else
	Dl_info at;
	if (!dladdr(pc, &at))
		return false;
	out->path = at.dli_fname ? at.dli_fname : "";
	out->base = (uintptr_t)at.dli_fbase;
	return true;
#endif
}
