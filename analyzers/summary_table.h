/* A counting-mode summary (the JSON the shim writes), printed for people. */
#ifndef MEMTRACE_SUMMARY_TABLE_H
#define MEMTRACE_SUMMARY_TABLE_H

#include <jansson.h>
#include <stdio.h>

void mt_summary_print_table(FILE *out, json_t *summary);

#endif
