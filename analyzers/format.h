/* How every verb writes quantities for people: one way each. */
#ifndef MEMTRACE_FORMAT_H
#define MEMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* "7.6 MiB", "512 B": binary units up to TiB. */
const char *mt_format_bytes(double bytes, char *buf, size_t len);
/* "2.547 ms", "1.2 us", "3.100 s". */
const char *mt_format_seconds(double s, char *buf, size_t len);
/* "1,234,567": a count, its thousands grouped. */
const char *mt_format_count(uint64_t n, char *buf, size_t len);
/* "3", "0.25": a count per call, whole numbers bare. */
const char *mt_format_per_call(double n, char *buf, size_t len);

#endif
