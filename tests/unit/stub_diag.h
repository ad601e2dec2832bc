#ifndef STUB_DIAG_H
#define STUB_DIAG_H
extern char last_warning[1024];
extern int warnings;
#endif
