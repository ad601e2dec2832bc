#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>

#include "sandbox_env.h"

#define PRELOAD "LD_PRELOAD="

size_t mt_env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

/* LD_PRELOAD's value less memtrace's entries (as the loader reads it:
 * separated by colons or spaces) into out; false when it did not fit. */
static bool preload_without_shim(const char *value, char *out, size_t len,
				 bool *changed)
{
	size_t n = 0;
	*changed = false;
	while (*value) {
		size_t w = strcspn(value, ": ");
		const char *entry = value;
		value += w;
		value += strspn(value, ": ");
		if (!w)
			continue;
		/* (memmem: the entry is not terminated) */
		if (memmem(entry, w, "libmemtrace", 11)) {
			*changed = true;
			continue;
		}
		if (n + (n ? 1 : 0) + w + 1 > len)
			return false;
		if (n)
			out[n++] = ':';
		memcpy(out + n, entry, w);
		n += w;
	}
	out[n] = '\0';
	return true;
}

char *const *mt_env_without_shim(char *const envp[], char **copy,
				 char *preload, size_t len)
{
	size_t n = 0, at = strlen(PRELOAD);
	bool changed = false;
	if (len <= at)
		return envp;
	for (size_t i = 0; envp && envp[i]; i++) {
		if (strncmp(envp[i], PRELOAD, at) != 0) {
			copy[n++] = envp[i];
			continue;
		}
		bool here;
		memcpy(preload, PRELOAD, at);
		if (!preload_without_shim(envp[i] + at, preload + at, len - at,
					  &here))
			return envp;
		changed |= here;
		/* (nothing left: no LD_PRELOAD at all) */
		if (preload[at])
			copy[n++] = preload;
	}
	copy[n] = NULL;
	return changed ? copy : envp;
}
