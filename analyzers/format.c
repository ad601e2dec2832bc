#include <inttypes.h>
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

const char *mt_format_count(uint64_t n, char *buf, size_t len)
{
	char digits[32];
	int nd = snprintf(digits, sizeof digits, "%" PRIu64, n);
	size_t o = 0;

	for (int i = 0; i < nd && o < len - 1; i++) {
		if (i && (nd - i) % 3 == 0 && o < len - 2)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

const char *mt_format_per_call(double n, char *buf, size_t len)
{
	snprintf(buf, len, n == (long long)n ? "%.0f" : "%.2f", n);
	return buf;
}
