#include <stdarg.h>
#include <stdio.h>

#include "json_writer.h"

void mt_json_put(struct mt_json_out *o, const char *fmt, ...)
{
	va_list ap;
	if (o->overflow)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->pos)
		o->overflow = true;
	else
		o->pos += (size_t)n;
}

void mt_json_string(struct mt_json_out *o, const char *s)
{
	mt_json_put(o, "\"");
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			mt_json_put(o, "\\%c", ch);
		else if (ch < 0x20)
			mt_json_put(o, "\\u%04x", ch);
		else
			mt_json_put(o, "%c", ch);
	}
	mt_json_put(o, "\"");
}


struct mt_json_obj mt_json_begin(struct mt_json_out *o, const char *key)
{
	if (key) {
		mt_json_string(o, key);
		mt_json_put(o, ": ");
	}
	mt_json_put(o, "{");
	return (struct mt_json_obj){o, true};
}

void mt_json_key(struct mt_json_obj *j, const char *k)
{
	mt_json_put(j->o, j->first ? "" : ", ");
	j->first = false;
	mt_json_string(j->o, k);
	mt_json_put(j->o, ": ");
}

void mt_json_u64(struct mt_json_obj *j, const char *k, uint64_t v)
{
	mt_json_key(j, k);
	mt_json_put(j->o, "%llu", (unsigned long long)v);
}

void mt_json_double(struct mt_json_obj *j, const char *k, double v)
{
	mt_json_key(j, k);
	mt_json_put(j->o, "%.6f", v);
}

void mt_json_str(struct mt_json_obj *j, const char *k, const char *v)
{
	mt_json_key(j, k);
	if (v && *v)
		mt_json_string(j->o, v);
	else
		mt_json_put(j->o, "null");
}

void mt_json_end(struct mt_json_obj *j)
{
	mt_json_put(j->o, "}");
}

struct mt_json_obj mt_json_nested(struct mt_json_obj *j, const char *k)
{
	mt_json_key(j, k);
	return mt_json_begin(j->o, NULL);
}

