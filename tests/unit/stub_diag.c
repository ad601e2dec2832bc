/* The shim's diagnostics, recorded instead of written, so a test can check
 * what a bad value said. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "diag.h"
#include "stub_diag.h"

char last_warning[1024];
int warnings;

void mt_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_warning, sizeof last_warning, fmt, ap);
	va_end(ap);
	warnings++;
}

void mt_say(const char *fmt, ...)
{
	(void)fmt;
}

void mt_fatal(const char *fmt, ...)
{
	(void)fmt;
	abort();
}
