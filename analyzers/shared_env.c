#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shared_env.h"

#define TUNABLES "GLIBC_TUNABLES="

/* Each tunable of `setting` (GLIBC_TUNABLES=name=value:name=value) into
 * most, at the largest value seen. */
static void take_largest(json_t *most, const char *setting)
{
	char copy[512];
	snprintf(copy, sizeof copy, "%s", setting + strlen(TUNABLES));
	for (char *save = NULL, *t = strtok_r(copy, ":", &save); t;
	     t = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(t, '=');
		if (!eq)
			continue;
		*eq = '\0';
		json_int_t v = strtoll(eq + 1, NULL, 10);
		json_t *had = json_object_get(most, t);
		if (!had || json_integer_value(had) < v)
			json_object_set_new(most, t, json_integer(v));
	}
}

json_t *mt_shared_settings(struct mt_finding *const *found, size_t n)
{
	json_t *out = json_array();
	for (size_t i = 0; i < n; i++) {
		const char *backend = found[i]->backend;
		bool done = false; /* (this backend's, made already) */
		for (size_t k = 0; k < i && !done; k++)
			done = !strcmp(found[k]->backend, backend);
		if (done)
			continue;
		json_t *own = json_object(), *children = json_object(),
		       *most = json_object();
		for (size_t k = i; k < n; k++) {
			const struct mt_finding *x = found[k];
			for (int f = 0; f < x->nfixes && !strcmp(x->backend, backend); f++) {
				const char *s = x->fixes[f].setting;
				if (x->fixes[f].kind != MT_FIX_SETTING ||
				    strncmp(s, TUNABLES, strlen(TUNABLES)))
					continue;
				json_object_set_new(x->process ? children : own, s, json_true());
				take_largest(most, s);
			}
		}
		/* (one setting said everywhere, or no child's: nothing to join) */
		bool differ = false;
		const char *s;
		json_t *v;
		json_object_foreach(children, s, v) differ |= !json_object_get(own, s);
		json_object_foreach(own, s, v) differ |= !json_object_get(children, s);
		if (json_object_size(own) && json_object_size(children) && differ) {
			char joined[512];
			size_t at = (size_t)snprintf(joined, sizeof joined, TUNABLES);
			json_object_foreach(most, s, v)
				at += (size_t)snprintf(joined + at, at < sizeof joined ? sizeof joined - at : 0,
						       "%s%s=%lld", at > strlen(TUNABLES) ? ":" : "",
						       s, (long long)json_integer_value(v));
			json_t *of = json_array();
			json_object_foreach(own, s, v) json_array_append_new(of, json_string(s));
			json_object_foreach(children, s, v) json_array_append_new(of, json_string(s));
			if (at < sizeof joined)
				json_array_append_new(out, json_pack("{s:s, s:s, s:o}",
								     "backend", backend,
								     "setting", joined, "of", of));
			else
				json_decref(of);
		}
		json_decref(own);
		json_decref(children);
		json_decref(most);
	}
	return out;
}

void mt_print_shared_settings(FILE *out, json_t *shared)
{
	size_t i;
	json_t *s;
	json_array_foreach(shared, i, s)
		fprintf(out, "\nOne setting for the whole command (backend %s): its "
			     "processes share the environment it starts with, and "
			     "the settings proposed for the command's own process "
			     "and for its child processes differ.  %s covers them "
			     "all (each threshold at the largest proposed, which "
			     "keeps what each of them keeps).\n",
			json_string_value(json_object_get(s, "backend")),
			json_string_value(json_object_get(s, "setting")));
}
