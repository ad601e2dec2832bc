/* A small JSON writer into a caller's buffer: no allocation, so the shim
 * can use it inside the traced process.  Once the buffer is full it stops
 * and says so (overflow). */
#ifndef MEMTRACE_JSON_WRITER_H
#define MEMTRACE_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_json_out {
	char *buf;
	size_t len, pos;
	bool overflow;
};

/* "name": value pairs inside one object, with the commas between them. */
struct mt_json_obj {
	struct mt_json_out *o;
	bool first;
};

void mt_json_put(struct mt_json_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mt_json_string(struct mt_json_out *o, const char *s);
struct mt_json_obj mt_json_begin(struct mt_json_out *o, const char *key);
void mt_json_key(struct mt_json_obj *j, const char *k);
void mt_json_u64(struct mt_json_obj *j, const char *k, uint64_t v);
void mt_json_double(struct mt_json_obj *j, const char *k, double v);
void mt_json_str(struct mt_json_obj *j, const char *k, const char *v);
void mt_json_end(struct mt_json_obj *j);
struct mt_json_obj mt_json_nested(struct mt_json_obj *j, const char *k);

#endif
