#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sites.h"

/* Sites with the same Python frames are one place in the code: the
 * interpreter called the allocator from different C functions (NumPy's
 * allocation paths).  Without Python frames, the whole stack. */
static char *fold_key(json_t *stack)
{
	json_t *py = json_array();
	size_t i;
	json_t *f;
	json_array_foreach(stack, i, f) if (strcmp(json_string_value(json_object_get(
							f, "kind")) ?: "",
						"python") == 0)
		json_array_append(py, f);
	char *key = json_dumps(json_array_size(py) ? py : stack,
			       JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(py);
	return key;
}

static double caused(json_t *site, const char *const *keys)
{
	json_t *c = json_object_get(site, "caused");
	double v = 0;
	for (size_t k = 0; keys[k]; k++)
		v += json_number_value(json_object_get(c, keys[k]));
	return v;
}

static int by_value_desc(const void *a, const void *b)
{
	double x = json_number_value(json_object_get(*(json_t *const *)a, "value"));
	double y = json_number_value(json_object_get(*(json_t *const *)b, "value"));
	return (x < y) - (x > y);
}

/* Folded sites weighed by weigh(site), ranked, with their shares. */
static json_t *ranked(json_t *s, double (*weigh)(json_t *, const void *),
		      const void *arg, size_t max)
{
	json_t *folded = json_object(), *out = json_array();
	double total = 0;
	size_t i;
	json_t *site;
	json_array_foreach(json_object_get(s, "sites"), i, site) {
		double v = weigh(site, arg);
		char *key = fold_key(json_object_get(site, "stack"));
		if (!key)
			continue;
		json_t *e = json_object_get(folded, key);
		if (!e) {
			e = json_pack("{s:O, s:f, s:{s:I, s:I, s:I}}", "stack",
				      json_object_get(site, "stack"), "value", 0.0,
				      "large", "allocations", (json_int_t)0,
				      "frees", (json_int_t)0, "max_live_in_function",
				      (json_int_t)0);
			json_object_set_new(folded, key, e);
		}
		free(key);
		json_t *large = json_object_get(site, "large");
		json_t *sum = json_object_get(e, "large");
		json_object_set_new(e, "value",
				    json_real(json_number_value(json_object_get(e, "value")) + v));
		const char *add[] = {"allocations", "frees"};
		for (int k = 0; k < 2; k++)
			json_object_set_new(sum, add[k], json_integer(
				json_integer_value(json_object_get(sum, add[k])) +
				json_integer_value(json_object_get(large, add[k]))));
		json_int_t most = json_integer_value(json_object_get(large, "function_max_live"));
		if (most > json_integer_value(json_object_get(sum, "max_live_in_function")))
			json_object_set_new(sum, "max_live_in_function", json_integer(most));
		total += v;
	}
	size_t n = json_object_size(folded), k = 0;
	json_t **all = n ? calloc(n, sizeof *all) : NULL;
	const char *key;
	json_t *e;
	json_object_foreach(folded, key, e) if (all) all[k++] = e;
	if (all)
		qsort(all, k, sizeof *all, by_value_desc);
	for (size_t j = 0; j < k && json_array_size(out) < max && total > 0; j++) {
		double v = json_number_value(json_object_get(all[j], "value"));
		if (v < 0.01 * total)
			break;
		json_object_set_new(all[j], "share", json_real(v / total));
		json_array_append(out, all[j]);
	}
	free(all);
	json_decref(folded);
	return out;
}

static double weigh_caused(json_t *site, const void *keys)
{
	return caused(site, keys);
}

static double weigh_bytes(json_t *site, const void *unused)
{
	(void)unused;
	return json_number_value(json_object_get(json_object_get(site, "large"), "bytes"));
}

json_t *mt_sites_ranked(json_t *s, const char *const *keys, size_t max)
{
	return ranked(s, weigh_caused, keys, max);
}

json_t *mt_sites_by_bytes(json_t *s, size_t max)
{
	return ranked(s, weigh_bytes, NULL, max);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "?";
}

const char *mt_site_label(json_t *stack, char *buf, size_t len)
{
	return mt_frame_label(json_array_get(stack, 0), buf, len);
}

const char *mt_frame_label(json_t *f, char *buf, size_t len)
{
	const char *kind = json_string_value(json_object_get(f, "kind"));
	if (kind && strcmp(kind, "python") == 0) {
		snprintf(buf, len, "%s (%s:%lld)",
			 json_string_value(json_object_get(f, "function")),
			 base_name(json_string_value(json_object_get(f, "file"))),
			 (long long)json_integer_value(json_object_get(f, "line")));
	} else {
		const char *symbol = json_string_value(json_object_get(f, "symbol"));
		const char *object = base_name(json_string_value(json_object_get(f, "object")));
		long long offset = (long long)json_integer_value(json_object_get(f, "offset"));
		long long from_symbol = (long long)json_integer_value(
			json_object_get(f, "symbol_offset"));
		if (symbol)
			snprintf(buf, len, "%s+0x%llx (%s)", symbol, from_symbol, object);
		else
			snprintf(buf, len, "%s+0x%llx", object, offset);
	}
	return buf;
}
