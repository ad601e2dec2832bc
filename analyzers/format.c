#include <stdio.h>

#include "format.h"

const char *mt_format_bytes(double bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double x = bytes;
	int u = 0;

	while (x >= 1024 && u < 4)
		x /= 1024, u++;
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", x, units[u]);
	return buf;
}

const char *mt_format_seconds(double s, char *buf, size_t len)
{
	if (s >= 1)
		snprintf(buf, len, "%.3f s", s);
	else if (s >= 1e-3)
		snprintf(buf, len, "%.3f ms", s * 1e3);
	else
		snprintf(buf, len, "%.1f us", s * 1e6);
	return buf;
}
