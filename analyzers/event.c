#include <stdarg.h>
#include <stdio.h>

#include "event.h"

const char *mt_event_name(int tag)
{
	return tag > 0 && tag < MT_EV_COUNT ? mt_event_kinds[tag].name : "?";
}

bool mt_read_fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return false;
}
