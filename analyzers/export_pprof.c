/* pprof's profile.proto (perftools.profiles.Profile), gzipped: the call
 * sites of large blocks as samples, each with its stack (the leaf first)
 * and three values: the blocks, their bytes, and the bytes the allocator
 * gave back to or took from the kernel on their account.  Written by hand
 * like the Perfetto trace; a profile holds the sites only (at most a few
 * hundred), so it is built in memory and compressed with zlib. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export_pprof.h"
#include "sites.h"

/* A growing protobuf message. */
struct msg {
	unsigned char *p;
	size_t n, cap;
	bool failed;
};

static void put(struct msg *m, const void *p, size_t len)
{
	if (m->n + len > m->cap) {
		size_t cap = (m->cap ? 2 * m->cap : 256) + len;
		unsigned char *q = realloc(m->p, cap);
		if (!q) {
			m->failed = true;
			return;
		}
		m->p = q;
		m->cap = cap;
	}
	memcpy(m->p + m->n, p, len);
	m->n += len;
}

static void varint(struct msg *m, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;
	do {
		b[n++] = (unsigned char)((v & 127) | (v > 127 ? 128 : 0));
		v >>= 7;
	} while (v);
	put(m, b, n);
}

static void uint_field(struct msg *m, unsigned field, uint64_t v)
{
	varint(m, (uint64_t)field << 3);
	varint(m, v);
}

static void bytes_field(struct msg *m, unsigned field, const void *p, size_t len)
{
	varint(m, (uint64_t)field << 3 | 2);
	varint(m, len);
	put(m, p, len);
}

static void message_field(struct msg *m, unsigned field, struct msg *sub)
{
	bytes_field(m, field, sub->p, sub->n);
	m->failed |= sub->failed;
	free(sub->p);
	*sub = (struct msg){0};
}

/* The string table: index 0 is "". */
struct strings {
	char **s;
	size_t n;
};

static uint64_t intern(struct strings *t, const char *s)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->s[i], s))
			return i;
	char **more = realloc(t->s, (t->n + 1) * sizeof *more);
	char *copy = strdup(s);
	if (!more || !copy) {
		free(copy);
		if (more)
			t->s = more;
		return 0;
	}
	t->s = more;
	t->s[t->n] = copy;
	return t->n++;
}

enum { PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_LOCATION = 4,
       PROFILE_FUNCTION = 5, PROFILE_STRINGS = 6, PROFILE_DEFAULT_TYPE = 14 };

static void value_type(struct msg *profile, struct strings *t, const char *type,
		       const char *unit)
{
	struct msg v = {0};
	uint_field(&v, 1, intern(t, type));
	uint_field(&v, 2, intern(t, unit));
	message_field(profile, PROFILE_SAMPLE_TYPE, &v);
}

/* A frame as a function and a location of their own (one each per frame:
 * pprof merges equal names itself); its location id. */
static uint64_t location(struct msg *profile, struct strings *t, json_t *frame,
			 uint64_t id)
{
	char label[512];
	const char *function = json_string_value(json_object_get(frame, "function"));
	const char *file = json_string_value(json_object_get(frame, "file"));
	if (!function)
		function = mt_frame_label(frame, label, sizeof label);
	struct msg f = {0}, l = {0}, line = {0};
	uint_field(&f, 1, id);
	uint_field(&f, 2, intern(t, function));
	uint_field(&f, 4, intern(t, file ? file : ""));
	message_field(profile, PROFILE_FUNCTION, &f);
	uint_field(&line, 1, id);
	uint_field(&line, 2, (uint64_t)json_integer_value(json_object_get(frame, "line")));
	uint_field(&l, 1, id);
	message_field(&l, 4, &line);
	message_field(profile, PROFILE_LOCATION, &l);
	return id;
}

static double caused_bytes(json_t *site)
{
	double v = 0;
	const char *k;
	json_t *x;
	json_object_foreach(json_object_get(site, "caused"), k, x) {
		size_t n = strlen(k);
		if (n > 6 && !strcmp(k + n - 6, "_bytes"))
			v += json_number_value(x);
	}
	return v;
}

/* The stack's frames, the leaf first: the stack's order, but in a stack
 * that lists its Python frames first (recorded before stacks were
 * interleaved), where the native caller under them is the leaf. */
static void order(json_t *stack, size_t *frames, size_t *n)
{
	size_t len = json_array_size(stack), py = 0;
	while (py < len && !strcmp(json_string_value(json_object_get(
					   json_array_get(stack, py), "kind")) ?: "",
				   "python"))
		py++;
	*n = 0;
	for (size_t d = py; d < len; d++)
		frames[(*n)++] = d;
	for (size_t d = 0; d < py; d++)
		frames[(*n)++] = d;
}

bool mt_export_pprof(const char *path, json_t *summary, char *err, size_t errlen)
{
	struct msg profile = {0};
	struct strings t = {0};
	uint64_t next_id = 1;
	size_t i;
	json_t *site;

	intern(&t, "");
	value_type(&profile, &t, "large blocks", "count");
	value_type(&profile, &t, "large bytes", "bytes");
	value_type(&profile, &t, "bytes moved by the allocator", "bytes");
	json_array_foreach(json_object_get(summary, "sites"), i, site) {
		json_t *stack = json_object_get(site, "stack"), *large =
			json_object_get(site, "large");
		size_t frames[64], n;
		if (json_array_size(stack) > 64)
			continue;
		order(stack, frames, &n);
		struct msg sample = {0}, ids = {0}, values = {0};
		for (size_t k = 0; k < n; k++)
			varint(&ids, location(&profile, &t, json_array_get(stack, frames[k]),
					      next_id++));
		message_field(&sample, 1, &ids); /* packed */
		varint(&values, (uint64_t)json_integer_value(json_object_get(large, "allocations")));
		varint(&values, (uint64_t)json_integer_value(json_object_get(large, "bytes")));
		varint(&values, (uint64_t)caused_bytes(site));
		message_field(&sample, 2, &values);
		message_field(&profile, PROFILE_SAMPLE, &sample);
	}
	for (size_t k = 0; k < t.n; k++)
		bytes_field(&profile, PROFILE_STRINGS, t.s[k], strlen(t.s[k]));
	uint_field(&profile, PROFILE_DEFAULT_TYPE, intern(&t, "large bytes"));

	bool ok = !profile.failed;
	gzFile gz = ok ? gzopen(path, "wbe") : NULL;
	if (!ok) {
		snprintf(err, errlen, "out of memory");
	} else if (!gz) {
		snprintf(err, errlen, "cannot write %s: %m (choose a writable "
				      "path for -o)", path);
		ok = false;
	} else {
		ok = gzwrite(gz, profile.p, (unsigned)profile.n) == (int)profile.n;
		ok = gzclose(gz) == Z_OK && ok;
		if (!ok)
			snprintf(err, errlen, "writing %s failed", path);
	}
	for (size_t k = 0; k < t.n; k++)
		free(t.s[k]);
	free(t.s);
	free(profile.p);
	return ok;
}
