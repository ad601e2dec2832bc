/* What a page fault costs on this machine: the most system time a churn's
 * faults can account for.  A run's system time goes to its own system
 * calls too (writes, reads), and taking it all for the faults made a
 * program that wrote to a file and mapped a scratch buffer "churn" for
 * half its CPU, its 1,400 faults costing some 5 ms. */
#ifndef MEMTRACE_FAULT_COST_H
#define MEMTRACE_FAULT_COST_H

#include <stdbool.h>

/* Seconds a fault of fresh anonymous memory costs, measured once in this
 * process (touching a fresh mapping, the least of three), of a
 * transparent huge page when `huge` and the kernel gives them; or
 * MEMTRACE_FAULT_COST_US, microseconds, when set (a stored trace's tests,
 * which must read the same anywhere).  0 when not known. */
double mt_fault_cost_s(bool huge);
/* The most of the same tries: a huge page's first touch may wait for the
 * kernel to compact memory into one (defrag "madvise": memory advised for
 * huge pages, as NumPy's arrays are), 3.3 ms where the least was 0.23. */
double mt_fault_cost_most_s(bool huge);

#endif
